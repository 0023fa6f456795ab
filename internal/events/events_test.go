// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package events

import (
	"encoding/json"
	"errors"
	"regexp"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
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
