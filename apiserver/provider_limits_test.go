// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"net/http"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// withKES enables KES, with an active wallet, for the fixture's duka merchant, and adds a Daraja
// gateway, M-Pesa Kenya, whose own limits are 1 to 100000 KES and whose provider, as cached in
// its status, takes whole shillings from 10 to 150000.
func withKES(t *testing.T, f *exchangeFixture) {
	t.Helper()
	m := &paygatev1.Merchant{}
	if err := f.k8s.Get(t.Context(), types.NamespacedName{Namespace: "shop", Name: "duka"}, m); err != nil {
		t.Fatal(err)
	}
	m.Spec.Currencies = append(m.Spec.Currencies, "KES")
	m.Spec.Wallets = append(m.Spec.Wallets, paygatev1.Wallet{Currency: "KES"})
	if err := f.k8s.Update(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	dec := func(s string) *paygatev1.Decimal { d := paygatev1.Decimal(s); return &d }
	gw := &paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "ke-mpesa"},
		Spec: paygatev1.GatewaySpec{DisplayName: "M-Pesa Kenya", Currency: "KES", Type: paygatev1.GatewayTypeAutomatic,
			Provider: paygatev1.ProviderSandbox, MinAmount: dec("1"), MaxAmount: dec("100000")},
		Status: paygatev1.GatewayStatus{ID: 8,
			ProviderLimits: &paygatev1.ProviderLimits{MinAmount: dec("10"), MaxAmount: dec("150000"), Decimals: 0}},
	}
	if err := f.k8s.Create(t.Context(), gw); err != nil {
		t.Fatal(err)
	}
	got := &paygatev1.Gateway{}
	if err := f.k8s.Get(t.Context(), types.NamespacedName{Name: gw.Name}, got); err != nil || got.Status.ProviderLimits == nil {
		t.Fatalf("the fixture's gateway lost its provider limits: %v", err)
	}
}

func (f *exchangeFixture) paymentCount(t *testing.T) int {
	t.Helper()
	var l paygatev1.PaymentList
	if err := f.k8s.List(t.Context(), &l); err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// TestProviderLimitsAtCreate: a gateway whose provider refuses the amount (status.providerLimits:
// below its minimum, above its maximum, more decimal places than it takes) does not serve it; when
// that leaves no gateway, the create answers 422 naming payment_amount and why, and records
// nothing. A gateway without provider limits (tz-mpesa) behaves as before.
func TestProviderLimitsAtCreate(t *testing.T) {
	f := newExchangeFixture(t)
	withKES(t, f)
	for _, tc := range []struct {
		name    string
		body    string
		status  int
		label   string
		message string
	}{
		{"KES with cents through Daraja", `{"payment_amount":1500.50,"currency_code":"KES","ref_trx":"ke-cents"}`,
			422, LabelValidationFailed, "M-Pesa Kenya takes whole shillings: the payment_amount must have no decimals."},
		{"KES below the provider's minimum", `{"payment_amount":5,"currency_code":"KES","ref_trx":"ke-low"}`,
			422, LabelInvalidAmount, "The payment_amount is below the minimum of 10.00 KES for M-Pesa Kenya."},
		{"KES below the provider's minimum, with cents", `{"payment_amount":5.50,"currency_code":"KES","ref_trx":"ke-low-cents"}`,
			422, LabelValidationFailed, "M-Pesa Kenya takes whole shillings: the payment_amount must have no decimals."},
		{"KES above the gateway's own maximum: as before", `{"payment_amount":120000,"currency_code":"KES","ref_trx":"ke-high"}`,
			422, LabelInvalidAmount, "The amount is outside the limits of every available payment method."},
		{"KES within", `{"payment_amount":1500,"currency_code":"KES","ref_trx":"ke-ok"}`, 200, "", ""},
		{"KES within, written with zero cents", `{"payment_amount":1500.00,"currency_code":"KES","ref_trx":"ke-ok-2"}`, 200, "", ""},
		{"legacy route, KES with cents", `{"payment_amount":"99.90","currency_code":"KES","ref_trx":"ke-legacy",` +
			`"success_redirect":"https://duka.example/ok","cancel_redirect":"https://duka.example/cancel","ipn_url":"https://duka.example/ipn"}`,
			422, LabelValidationFailed, "M-Pesa Kenya takes whole shillings: the payment_amount must have no decimals."},
		{"TZS with cents, gateway without provider limits", `{"payment_amount":1500.50,"currency_code":"TZS","ref_trx":"tz-cents"}`, 200, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/api/v1/payments"
			if tc.name[:6] == "legacy" {
				path = "/api/v1/initiate-payment"
			}
			before := f.paymentCount(t)
			status, body := f.signedExchange(t, f.duka, http.MethodPost, path, tc.body, "application/json", nil)
			if status != tc.status {
				t.Fatalf("got %d %v, want %d", status, body, tc.status)
			}
			if tc.status == 200 {
				if f.paymentCount(t) != before+1 {
					t.Errorf("no payment recorded")
				}
				return
			}
			if body["error"] != tc.label || body["message"] != tc.message {
				t.Errorf("got %v %q, want %s %q", body["error"], body["message"], tc.label, tc.message)
			}
			if got := errorFields(body); !slices.Equal(got, []string{"payment_amount"}) {
				t.Errorf("errors name %v, want [payment_amount]", got)
			}
			if n := f.paymentCount(t); n != before {
				t.Errorf("%d payments recorded by a refused request", n-before)
			}
		})
	}
}

// TestSubscriptionPhoneOfThePlansCurrency: a subscription's customer_phone is read in the country
// of the plan's currency and must belong to it.
func TestSubscriptionPhoneOfThePlansCurrency(t *testing.T) {
	f := newExchangeFixture(t, func(o *Options) { o.Writer = uidWriter{o.Writer} })
	withKES(t, f)
	for _, plan := range []string{goldPlan, `{"code":"kes-monthly","name":"Gold","amount":1500,"currency_code":"KES","interval":"month"}`} {
		if status, body := f.signedExchange(t, f.duka, http.MethodPost, "/api/v1/billing/plans", plan, "application/json", nil); status != http.StatusOK {
			t.Fatalf("plan: %d %v", status, body)
		}
	}
	for _, tc := range []struct {
		name, plan, phone string
		want              string // E.164 when accepted
		message           string // when refused
	}{
		{"KES plan, Kenyan national number", "kes-monthly", "0712 345 678", "+254712345678", ""},
		{"KES plan, Kenyan international number", "kes-monthly", "+254 110 123 456", "+254110123456", ""},
		{"TZS plan, Tanzanian national number", "gold-monthly", "0712345678", "+255712345678", ""},
		{"TZS plan, Kenyan number", "gold-monthly", "+254712345678", "",
			"The customer_phone must be a Tanzanian mobile number (+255): subscriptions are charged to Tanzanian mobile-money accounts."},
		{"KES plan, Tanzanian number", "kes-monthly", "+255712345678", "",
			"The customer_phone must be a Kenyan mobile number (+254): subscriptions in KES are charged to Kenyan mobile-money accounts."},
		{"KES plan, Kenyan fixed line", "kes-monthly", "+254202123456", "",
			"The customer_phone must be a mobile number that can receive a USSD prompt, not a fixed line or a service number."},
		{"KES plan, not a number", "kes-monthly", "call me", "",
			"The customer_phone must be a Kenyan mobile number, such as +254712123456 or 0712123456."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, before := f.billingObjects(t)
			body := `{"plan_code":"` + tc.plan + `","customer_phone":"` + tc.phone + `","terms_shown":"1,500 a month."}`
			status, out := f.signedExchange(t, f.duka, http.MethodPost, "/api/v1/billing/subscriptions", body, "application/json", nil)
			if tc.want == "" {
				if status != 422 || out["error"] != LabelValidationFailed || out["message"] != tc.message {
					t.Fatalf("got %d %v, want 422 %q", status, out, tc.message)
				}
				if got := errorFields(out); !slices.Equal(got, []string{"customer_phone"}) {
					t.Errorf("errors name %v, want [customer_phone]", got)
				}
				if _, subs := f.billingObjects(t); subs != before {
					t.Errorf("a refused request recorded a subscription")
				}
				return
			}
			if status != http.StatusOK {
				t.Fatalf("got %d %v, want 200", status, out)
			}
			sub := &paygatev1.Subscription{}
			id, _ := out["id"].(string)
			name, _ := paygatev1.SubscriptionNameFromAPIID(id)
			if err := f.k8s.Get(t.Context(), types.NamespacedName{Namespace: "shop", Name: name}, sub); err != nil {
				t.Fatal(err)
			}
			if string(sub.Spec.CustomerPhone) != tc.want {
				t.Errorf("customerPhone %q, want %q", sub.Spec.CustomerPhone, tc.want)
			}
		})
	}
}
