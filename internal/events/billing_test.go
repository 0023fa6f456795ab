// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package events

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

var dar = func() *time.Location {
	loc, err := time.LoadLocation("Africa/Dar_es_Salaam")
	if err != nil {
		panic(err)
	}
	return loc
}()

func TestOccurrenceNames(t *testing.T) {
	name, id := OccurrenceDeliveryName("uid-1", SubscriptionSuspended, "0"), OccurrenceEventID("uid-1", SubscriptionSuspended, "0")
	if name[len("whd-"):] != id[len("evt_"):] || len(name) != len("whd-")+24 {
		t.Errorf("OccurrenceDeliveryName %q and OccurrenceEventID %q", name, id)
	}
	for what, other := range map[string]string{
		"the event without an occurrence": DeliveryName("uid-1", SubscriptionSuspended),
		"another occurrence":              OccurrenceDeliveryName("uid-1", SubscriptionSuspended, "1"),
		"another event type":              OccurrenceDeliveryName("uid-1", SubscriptionCancelled, "0"),
		"another object":                  OccurrenceDeliveryName("uid-2", SubscriptionSuspended, "0"),
		"the parts run together":          DeliveryName("uid-1", SubscriptionSuspended+"0"),
	} {
		if other == name {
			t.Errorf("%s has the same name %q", what, name)
		}
	}

	s := billingSubscription()
	d, err := NewDelivery(Source{Kind: "Subscription", Object: s, Merchant: "duka", Env: paygatev1.EnvironmentSandbox, Occurrence: "2"},
		SubscriptionSuspended, map[string]string{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != OccurrenceDeliveryName("sub-uid", SubscriptionSuspended, "2") || d.Spec.EventID != OccurrenceEventID("sub-uid", SubscriptionSuspended, "2") {
		t.Errorf("NewDelivery with an occurrence: name %q, id %q", d.Name, d.Spec.EventID)
	}
	if d.Spec.Source.UID != "sub-uid" {
		t.Errorf("source uid %q, want the object's", d.Spec.Source.UID)
	}
}

func billingSubscription() *paygatev1.Subscription {
	recorded := time.Date(2026, 3, 1, 18, 0, 0, 123456000, time.UTC) // 21:00 in Dar es Salaam
	return &paygatev1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: "sub-qj33hpibayoahnbujh4loofg", Namespace: "shop", UID: "sub-uid"},
		Spec: paygatev1.SubscriptionSpec{
			Environment: paygatev1.EnvironmentSandbox, PlanCode: "gold", CustomerPhone: "+255712345678",
			Consent: paygatev1.SubscriptionConsent{TermsSHA256: strings.Repeat("ab", 32), RecordedAt: metav1.NewMicroTime(recorded),
				PlanAmount: "15000.00", PlanCurrency: "TZS", PlanInterval: paygatev1.IntervalMonth, PlanIntervalCount: 1},
		},
		Status: paygatev1.SubscriptionStatus{
			Phase: paygatev1.SubscriptionSuspended, CurrentPeriod: 1,
			CurrentPeriodStart: &metav1.Time{Time: recorded.Truncate(time.Second)}, CurrentPeriodEnd: &metav1.Time{Time: time.Date(2026, 4, 1, 18, 0, 0, 0, time.UTC)},
			LatestInvoice: "inv-qj33hpibayoahnbujh4loofg-1", ConsecutiveFailures: 4,
			SuspendedAt: &metav1.Time{Time: time.Date(2026, 3, 11, 5, 0, 0, 0, time.UTC)},
			CancelledAt: &metav1.Time{Time: time.Date(2026, 3, 12, 5, 0, 0, 0, time.UTC)},
		},
	}
}

func billingInvoice() *paygatev1.Invoice {
	return &paygatev1.Invoice{
		ObjectMeta: metav1.ObjectMeta{Name: "inv-qj33hpibayoahnbujh4loofg-1", Namespace: "shop", UID: "inv-uid"},
		Spec: paygatev1.InvoiceSpec{
			Environment: paygatev1.EnvironmentSandbox, SubscriptionRef: paygatev1.SubscriptionReference{Name: "sub-qj33hpibayoahnbujh4loofg"},
			PlanCode: "gold", Period: 1, Amount: "15000.00", Currency: "TZS",
			PeriodStart: metav1.NewTime(time.Date(2026, 3, 1, 18, 0, 0, 0, time.UTC)), PeriodEnd: metav1.NewTime(time.Date(2026, 4, 1, 18, 0, 0, 0, time.UTC)),
		},
		Status: paygatev1.InvoiceStatus{Phase: paygatev1.InvoicePaymentFailed, AttemptCount: 2, LastFailureReason: "INSUFFICIENT_FUNDS"},
	}
}

// asJSON renders data as the payload would carry it.
func asJSON(t *testing.T, data any) string {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewSubscriptionData(t *testing.T) {
	consent := `"consent":{"terms_sha256":"` + strings.Repeat("ab", 32) + `","recorded_at":"2026-03-01T21:00:00.123456+03:00"}`
	common := `"subscription_id":"sub_qj33hpibayoahnbujh4loofg","plan_code":"gold",%s"customer_phone":"+255712345678",` +
		`"amount":{"value":15000.00,"currency":"TZS"},"interval":"month","interval_count":1,` + consent
	period := `"current_period":{"number":1,"start":"2026-03-01T21:00:00.000000+03:00","end":"2026-04-01T21:00:00.000000+03:00"},`
	for _, tt := range []struct {
		eventType string
		confirmed bool
		want      string
	}{
		{SubscriptionCreated, true, `{` + strings.Replace(common, "%s", `"status":"pending",`, 1) +
			`,"confirmed_at":null,"consecutive_failures":0,"environment":"sandbox"}`},
		{SubscriptionSuspended, false, `{` + strings.Replace(common, "%s", `"status":"suspended",`, 1) + `,` + period +
			`"confirmed_at":null,"consecutive_failures":4,"suspended_at":"2026-03-11T08:00:00.000000+03:00",` +
			`"latest_invoice_id":"inv-qj33hpibayoahnbujh4loofg-1","reason":"INSUFFICIENT_FUNDS","environment":"sandbox"}`},
		{SubscriptionCancelled, true, `{` + strings.Replace(common, "%s", `"status":"cancelled",`, 1) + `,` + period +
			`"confirmed_at":"2026-03-01T21:00:05.000001+03:00","consecutive_failures":4,"cancelled_at":"2026-03-12T08:00:00.000000+03:00","environment":"sandbox"}`},
	} {
		t.Run(tt.eventType, func(t *testing.T) {
			s := billingSubscription()
			if tt.confirmed {
				s.Status.ConfirmedAt = &metav1.MicroTime{Time: time.Date(2026, 3, 1, 18, 0, 5, 1000, time.UTC)}
			}
			d, err := NewSubscriptionData(SubscriptionEvent{Type: tt.eventType, Subscription: s, Location: dar, Reason: "INSUFFICIENT_FUNDS"})
			if err != nil {
				t.Fatal(err)
			}
			if got := asJSON(t, d); got != tt.want {
				t.Errorf("data\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	if _, err := NewSubscriptionData(SubscriptionEvent{Type: InvoicePaid, Subscription: billingSubscription()}); err == nil {
		t.Error("an invoice event type built subscription data")
	}
	bad := billingSubscription()
	bad.Spec.Consent.PlanAmount = "15000.001"
	if _, err := NewSubscriptionData(SubscriptionEvent{Type: SubscriptionCreated, Subscription: bad}); err == nil {
		t.Error("an amount TZS cannot hold built data")
	}
}

func TestNewInvoiceData(t *testing.T) {
	charge := &paygatev1.Payment{ObjectMeta: metav1.ObjectMeta{Name: "trx-aaaaaaaaaaaaaaaaaaaaaaaa"},
		Spec:   paygatev1.PaymentSpec{Amount: "15000.00", Currency: "TZS"},
		Status: paygatev1.PaymentStatus{Phase: paygatev1.PaymentFailed, Reason: "INSUFFICIENT_FUNDS"}}
	paid := charge.DeepCopy()
	paid.Status = paygatev1.PaymentStatus{Phase: paygatev1.PaymentSuccess, Fee: "375.00", NetAmount: "14625.00"}
	head := `{"invoice_id":"inv-qj33hpibayoahnbujh4loofg-1","subscription_id":"sub_qj33hpibayoahnbujh4loofg","plan_code":"gold",` +
		`"period":{"number":1,"start":"2026-03-01T21:00:00.000000+03:00","end":"2026-04-01T21:00:00.000000+03:00"},` +
		`"amount":{"value":15000.00,"currency":"TZS"},`
	retry := &metav1.Time{Time: time.Date(2026, 3, 3, 5, 0, 0, 0, time.UTC)}
	for _, tt := range []struct {
		name      string
		eventType string
		charge    *paygatev1.Payment
		status    func(*paygatev1.InvoiceStatus)
		want      string
	}{
		{"created", InvoiceCreated, nil, func(s *paygatev1.InvoiceStatus) { *s = paygatev1.InvoiceStatus{} },
			head + `"status":"open","attempt_count":0,"environment":"sandbox"}`},
		{"paid", InvoicePaid, paid, func(s *paygatev1.InvoiceStatus) {
			*s = paygatev1.InvoiceStatus{Phase: paygatev1.InvoicePaid, AttemptCount: 3, PaidPayment: paid.Name,
				PaidAt: &metav1.MicroTime{Time: time.Date(2026, 3, 6, 5, 0, 1, 500, time.UTC)}}
		}, head + `"status":"paid","attempt_count":3,"trx_id":"trx-aaaaaaaaaaaaaaaaaaaaaaaa","paid_at":"2026-03-06T08:00:01.000000+03:00",` +
			`"settlement":{"gross":{"value":15000.00,"currency":"TZS"},"fees":{"value":375.00,"currency":"TZS"},"net":{"value":14625.00,"currency":"TZS"}},"environment":"sandbox"}`},
		{"failed with a retry", InvoicePaymentFailed, charge, func(s *paygatev1.InvoiceStatus) { s.NextAttemptAt = retry },
			head + `"status":"payment_failed","attempt_count":2,"trx_id":"trx-aaaaaaaaaaaaaaaaaaaaaaaa","reason":"INSUFFICIENT_FUNDS",` +
				`"next_attempt_at":"2026-03-03T08:00:00.000000+03:00","environment":"sandbox"}`},
		{"failed, suspended", InvoicePaymentFailed, charge, func(*paygatev1.InvoiceStatus) {},
			head + `"status":"payment_failed","attempt_count":2,"trx_id":"trx-aaaaaaaaaaaaaaaaaaaaaaaa","reason":"INSUFFICIENT_FUNDS",` +
				`"next_attempt_at":null,"environment":"sandbox"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inv := billingInvoice()
			tt.status(&inv.Status)
			d, err := NewInvoiceData(InvoiceEvent{Type: tt.eventType, Invoice: inv, Charge: tt.charge, Location: dar})
			if err != nil {
				t.Fatal(err)
			}
			if got := asJSON(t, d); got != tt.want {
				t.Errorf("data\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	if _, err := NewInvoiceData(InvoiceEvent{Type: InvoicePaid, Invoice: billingInvoice()}); err == nil {
		t.Error("invoice.paid without its charge built data")
	}
}
