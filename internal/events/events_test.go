// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package events

import (
	"encoding/json"
	"errors"
	"regexp"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/pkg/paygate"
)

func TestNames(t *testing.T) {
	name, id := DeliveryName("uid-1", PaymentCompleted), EventID("uid-1", PaymentCompleted)
	if !regexp.MustCompile(`^whd-[a-z2-7]{24}$`).MatchString(name) {
		t.Errorf("DeliveryName = %q, want whd- and 24 characters of lower-case base32", name)
	}
	// The WebhookDelivery CRD admits ^evt_[a-z0-9]{16,64}$.
	if !regexp.MustCompile(`^evt_[a-z2-7]{24}$`).MatchString(id) {
		t.Errorf("EventID = %q, want evt_ and 24 characters of lower-case base32", id)
	}
	if name[len("whd-"):] != id[len("evt_"):] {
		t.Errorf("DeliveryName %q and EventID %q derive different values", name, id)
	}
	for what, other := range map[string]string{
		"other event type": DeliveryName("uid-1", PaymentFailed),
		"other source":     DeliveryName("uid-2", PaymentCompleted),
	} {
		if other == name {
			t.Errorf("%s: the same DeliveryName %q", what, name)
		}
	}
}

func TestDeliveryNames(t *testing.T) {
	got := DeliveryNames("uid-1", PaymentCompleted)
	want := []string{
		DeliveryName("uid-1", PaymentCompleted),
		// The name an earlier version gave this occurrence's event: pinned, since deliveries
		// created under it exist.
		"whd-9f639d96db92bc9084febe9981470131",
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("DeliveryNames = %q, want %q", got, want)
	}
}

func TestNewPaymentData(t *testing.T) {
	payment := func(amount, fee, net paygatev1.Decimal, phase paygatev1.PaymentPhase, currency paygatev1.CurrencyCode) *paygatev1.Payment {
		p := &paygatev1.Payment{
			ObjectMeta: metav1.ObjectMeta{Name: "trx-a"},
			Spec: paygatev1.PaymentSpec{MerchantReference: "order-1", Environment: paygatev1.EnvironmentSandbox,
				Amount: amount, Currency: currency, Customer: paygatev1.Customer{Phone: "+255712345678"}},
			Status: paygatev1.PaymentStatus{Phase: phase, Fee: fee, NetAmount: net},
		}
		if phase == paygatev1.PaymentFailed {
			p.Status.Reason = string(paygatev1.FailureInsufficientFunds)
		}
		return p
	}
	tests := []struct {
		name                   string
		p                      *paygatev1.Payment
		amount, fees, net, why string
		wantErr                error
	}{
		{"settled", payment("1500", "45", "1455", paygatev1.PaymentSuccess, "TZS"), "1500.00", "45.00", "1455.00", "", nil},
		{"settled, scale 0", payment("15000", "450", "14550", paygatev1.PaymentSuccess, "UGX"), "15000", "450", "14550", "", nil},
		{"failed: fees and net 0", payment("1500", "", "", paygatev1.PaymentFailed, "KWD"), "1500.000", "0.000", "0.000", "INSUFFICIENT_FUNDS", nil},
		{"a bad stored amount is an error, not 0", payment("15 00", "", "", paygatev1.PaymentFailed, "TZS"), "", "", "", "", money.ErrSyntax},
		{"a bad stored fee is an error, not 0", payment("1500", "x", "1455", paygatev1.PaymentSuccess, "TZS"), "", "", "", "", money.ErrSyntax},
		{"an amount that would be rounded is an error", payment("1500.555", "", "", paygatev1.PaymentFailed, "TZS"), "", "", "", "", money.ErrTooPrecise},
		{"an unknown currency is an error", payment("1500", "", "", paygatev1.PaymentFailed, "XXX"), "", "", "", "", money.ErrInvalidCurrency},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewPaymentData(tt.p)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("NewPaymentData error = %v, want %v", err, tt.wantErr)
				}
				if d != (PaymentData{}) {
					t.Errorf("NewPaymentData returned data with an error: %+v", d)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewPaymentData: %v", err)
			}
			for what, got := range map[string]json.Number{
				"amount": d.Amount.Value, "gross": d.Settlement.Gross.Value, "fees": d.Settlement.Fees.Value, "net": d.Settlement.Net.Value,
			} {
				want := map[string]string{"amount": tt.amount, "gross": tt.amount, "fees": tt.fees, "net": tt.net}[what]
				if string(got) != want {
					t.Errorf("%s = %s, want %s", what, got, want)
				}
			}
			if d.Reason != tt.why || d.TrxID != "trx-a" || d.Amount.Currency != string(tt.p.Spec.Currency) {
				t.Errorf("data = %+v", d)
			}
		})
	}
}

func TestNewPayoutData(t *testing.T) {
	created := time.Date(2026, 11, 2, 9, 0, 0, 123456000, time.UTC)
	payout := func(env paygatev1.Environment, phase paygatev1.PayoutPhase, mods ...func(*paygatev1.Payout)) *paygatev1.Payout {
		p := &paygatev1.Payout{
			ObjectMeta: metav1.ObjectMeta{Name: "0b6f3c1e-9d7a-4c55-8d0e-2f1a3b4c5d6e"},
			Spec: paygatev1.PayoutSpec{Environment: env, Amount: "10000.00", Fee: "150.00", PayableAmount: "9850.00",
				Currency: "TZS", Destination: "+255712345678", CreatedAt: metav1.NewMicroTime(created)},
			Status: paygatev1.PayoutStatus{Phase: phase},
		}
		for _, m := range mods {
			m(p)
		}
		return p
	}
	later := func(p *paygatev1.Payout) {
		t := metav1.NewMicroTime(created.Add(90 * time.Second))
		p.Status.UpdatedAt = &t
	}
	earlier := func(p *paygatev1.Payout) {
		t := metav1.NewMicroTime(created.Add(-time.Second))
		p.Status.UpdatedAt = &t
	}
	tests := []struct {
		name      string
		p         *paygatev1.Payout
		eventType string
		want      paygate.Payout
		wantErr   error
	}{
		{
			name: "sandbox success", p: payout(paygatev1.EnvironmentSandbox, paygatev1.PayoutSuccess, later,
				func(p *paygatev1.Payout) { p.Status.Remark = "SANDBOX_TRANSACTION" }),
			eventType: PayoutCompleted,
			want: paygate.Payout{ID: "0b6f3c1e-9d7a-4c55-8d0e-2f1a3b4c5d6e", Status: "success", Remark: "SANDBOX_TRANSACTION",
				Amount: "10000.00", Fee: "150.00", PayableAmount: "9850.00", Currency: "TZS", Destination: "+255*******78",
				Environment: "sandbox", CreatedAt: "2026-11-02T09:00:00.123456Z", UpdatedAt: "2026-11-02T09:01:30.123456Z"},
		},
		{
			name: "production failure: the reason, and no provider remark", p: payout(paygatev1.EnvironmentProduction, paygatev1.PayoutFailed,
				func(p *paygatev1.Payout) { p.Status.Reason, p.Status.Remark = "INSUFFICIENT_BALANCE", "provider text" }),
			eventType: PayoutFailed,
			want: paygate.Payout{ID: "0b6f3c1e-9d7a-4c55-8d0e-2f1a3b4c5d6e", Status: "failed", Reason: "INSUFFICIENT_BALANCE",
				Amount: "10000.00", Fee: "150.00", PayableAmount: "9850.00", Currency: "TZS", Destination: "+255*******78",
				Environment: "production", CreatedAt: "2026-11-02T09:00:00.123456Z", UpdatedAt: "2026-11-02T09:00:00.123456Z"},
		},
		{
			name: "simulated production keeps its remark; updated_at is never before created_at",
			p: payout(paygatev1.EnvironmentProduction, paygatev1.PayoutSuccess, earlier,
				func(p *paygatev1.Payout) { p.Status.Remark = paygatev1.RemarkSimulatedProduction }),
			eventType: PayoutCompleted,
			want: paygate.Payout{ID: "0b6f3c1e-9d7a-4c55-8d0e-2f1a3b4c5d6e", Status: "success", Remark: paygatev1.RemarkSimulatedProduction,
				Amount: "10000.00", Fee: "150.00", PayableAmount: "9850.00", Currency: "TZS", Destination: "+255*******78",
				Environment: "production", CreatedAt: "2026-11-02T09:00:00.123456Z", UpdatedAt: "2026-11-02T09:00:00.123456Z"},
		},
		{
			name: "scale 0", p: payout(paygatev1.EnvironmentSandbox, paygatev1.PayoutSuccess, func(p *paygatev1.Payout) {
				p.Spec.Currency, p.Spec.Amount, p.Spec.Fee, p.Spec.PayableAmount, p.Spec.Destination = "UGX", "10000", "150", "9850", "+256772123456"
			}),
			eventType: PayoutCompleted,
			want: paygate.Payout{ID: "0b6f3c1e-9d7a-4c55-8d0e-2f1a3b4c5d6e", Status: "success", Remark: "SANDBOX_TRANSACTION",
				Amount: "10000", Fee: "150", PayableAmount: "9850", Currency: "UGX", Destination: "+256*******56",
				Environment: "sandbox", CreatedAt: "2026-11-02T09:00:00.123456Z", UpdatedAt: "2026-11-02T09:00:00.123456Z"},
		},
		{
			name:      "an unreadable amount is an error, not 0",
			p:         payout(paygatev1.EnvironmentSandbox, paygatev1.PayoutFailed, func(p *paygatev1.Payout) { p.Spec.Fee = "1,50" }),
			eventType: PayoutFailed, wantErr: money.ErrSyntax,
		},
		{
			name:      "an amount that would be rounded is an error",
			p:         payout(paygatev1.EnvironmentSandbox, paygatev1.PayoutSuccess, func(p *paygatev1.Payout) { p.Spec.PayableAmount = "9850.001" }),
			eventType: PayoutCompleted, wantErr: money.ErrTooPrecise,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PayoutEventType(tt.p); got != tt.eventType {
				t.Errorf("PayoutEventType = %s, want %s", got, tt.eventType)
			}
			d, err := NewPayoutData(tt.p)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || d != (paygate.Payout{}) {
					t.Fatalf("NewPayoutData = %+v, %v; want no data and %v", d, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewPayoutData: %v", err)
			}
			if d != tt.want {
				t.Errorf("NewPayoutData =\n%+v, want\n%+v", d, tt.want)
			}
			// On the wire: amounts are JSON numbers at the currency's scale, reason only on failure.
			raw, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(raw, &fields); err != nil {
				t.Fatal(err)
			}
			if string(fields["amount"]) != string(tt.want.Amount) {
				t.Errorf("amount on the wire = %s, want the number %s", fields["amount"], tt.want.Amount)
			}
			if _, has := fields["reason"]; has != (tt.want.Reason != "") {
				t.Errorf("reason on the wire: %s", raw)
			}
		})
	}
}
