// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package payouts

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
)

// approved is a merchant that passes every gate, with a Tanzanian settlement number; mods adjust
// it.
func approved(mods ...func(*paygatev1.Merchant)) *paygatev1.Merchant {
	m := &paygatev1.Merchant{Spec: paygatev1.MerchantSpec{
		KYBStatus: paygatev1.KYBApproved, BusinessStatus: paygatev1.BusinessApproved,
		SettlementNumber: "+255712345678", Currencies: []paygatev1.CurrencyCode{"KES", "TZS"},
	}}
	for _, mod := range mods {
		mod(m)
	}
	return m
}

func TestCheckGates(t *testing.T) {
	tests := []struct {
		name     string
		merchant *paygatev1.Merchant
		gate     string // "" for open
		message  string
	}{
		{"every gate open", approved(), "", ""},
		{"KYB first, even when every gate is closed", approved(func(m *paygatev1.Merchant) {
			m.Spec.KYBStatus, m.Spec.BusinessStatus, m.Spec.SettlementNumber = "", "", ""
		}), GateKYBApproved, "Payouts need an approved KYB review; this business's KYB status is pending."},
		{"KYB rejected is named", approved(func(m *paygatev1.Merchant) { m.Spec.KYBStatus = paygatev1.KYBRejected }),
			GateKYBApproved, "Payouts need an approved KYB review; this business's KYB status is rejected."},
		{"business second", approved(func(m *paygatev1.Merchant) { m.Spec.BusinessStatus, m.Spec.SettlementNumber = "", "" }),
			GateBusinessApproved, "Payouts need an approved business; this business is pending."},
		{"settlement number last", approved(func(m *paygatev1.Merchant) { m.Spec.SettlementNumber = "" }),
			GateSettlementNumber, "Payouts need a settlement number on file; ask the platform team to add one."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckGates(tt.merchant)
			if tt.gate == "" {
				if err != nil {
					t.Fatalf("CheckGates = %v, want nil", err)
				}
				return
			}
			var ge *GateError
			if !errors.As(err, &ge) {
				t.Fatalf("CheckGates = %v, want a *GateError", err)
			}
			if ge.Gate != tt.gate || ge.Error() != tt.message {
				t.Errorf("CheckGates = %s %q, want %s %q", ge.Gate, ge.Error(), tt.gate, tt.message)
			}
		})
	}
}

func TestSettlementCurrency(t *testing.T) {
	tests := []struct {
		name       string
		number     paygatev1.MobileNumber
		currencies []paygatev1.CurrencyCode
		want       string // "" for ErrNoSettlementCurrency
	}{
		{"a Tanzanian number settles in TZS", "+255712345678", []paygatev1.CurrencyCode{"KES", "TZS"}, "TZS"},
		{"a Kenyan number settles in KES", "+254712345678", []paygatev1.CurrencyCode{"TZS", "KES"}, "KES"},
		{"a Ugandan number settles in UGX", "+256772123456", []paygatev1.CurrencyCode{"UGX"}, "UGX"},
		{"the country's currency must be enabled", "+255712345678", []paygatev1.CurrencyCode{"KES"}, ""},
		{"no settlement number", "", []paygatev1.CurrencyCode{"TZS"}, ""},
		{"a currency without a country does not match an unknown region", "+80012345678", []paygatev1.CurrencyCode{"BIF"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := SettlementCurrency(approved(func(m *paygatev1.Merchant) {
				m.Spec.SettlementNumber, m.Spec.Currencies = tt.number, tt.currencies
			}))
			if tt.want == "" {
				if !errors.Is(err, ErrNoSettlementCurrency) {
					t.Fatalf("SettlementCurrency = %v, %v; want ErrNoSettlementCurrency", c.Code, err)
				}
				return
			}
			if err != nil || c.Code != tt.want {
				t.Fatalf("SettlementCurrency = %q, %v; want %s", c.Code, err, tt.want)
			}
		})
	}
}

func TestSameDestination(t *testing.T) {
	tests := []struct {
		number paygatev1.MobileNumber
		raw    string
		want   bool
	}{
		{"+255712345678", "+255712345678", true},
		{"+255712345678", "0712 345 678", true},
		{"+255712345678", "0712-345-678", true},
		{"+255712345678", "255712345678", true},
		{"+255712345678", "00255712345678", true},
		{"+255712345678", "+255 (712) 345.678", true},
		{"+254712345678", "0712345678", true}, // read in the settlement number's country
		{"+255712345678", "0712345679", false},
		{"+255712345678", "+254712345678", false},
		{"+255712345678", "", false},
		{"+255712345678", "not a number", false},
		{"", "0712345678", false},
		{"", "", false},
	}
	for _, tt := range tests {
		m := approved(func(m *paygatev1.Merchant) { m.Spec.SettlementNumber = tt.number })
		if got := SameDestination(m, tt.raw); got != tt.want {
			t.Errorf("SameDestination(%q, %q) = %v, want %v", tt.number, tt.raw, got, tt.want)
		}
	}
}

func payoutGateway(name string, currency paygatev1.CurrencyCode, mods ...func(*paygatev1.Gateway)) paygatev1.Gateway {
	g := paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: paygatev1.GatewaySpec{Currency: currency, Provider: paygatev1.ProviderUpstream,
			Payouts: &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: "1", Fixed: "0"}}},
	}
	for _, m := range mods {
		m(&g)
	}
	return g
}

func TestDisbursingGateway(t *testing.T) {
	inactive := false
	deleted := metav1.Now()
	sandboxOnly := func(g *paygatev1.Gateway) { g.Spec.Provider = paygatev1.ProviderSandbox }
	gateways := []paygatev1.Gateway{
		payoutGateway("a-off", "TZS", func(g *paygatev1.Gateway) { g.Spec.Active = &inactive }),
		payoutGateway("b-no-schedule", "TZS", func(g *paygatev1.Gateway) { g.Spec.Payouts = nil }),
		payoutGateway("c-kes", "KES"),
		payoutGateway("d-deleting", "TZS", func(g *paygatev1.Gateway) { g.DeletionTimestamp = &deleted }),
		payoutGateway("f-upstream", "TZS"),
		payoutGateway("e-sandbox", "TZS", sandboxOnly),
		payoutGateway("g-upstream", "TZS"),
	}
	tests := []struct {
		currency paygatev1.CurrencyCode
		env      paygatev1.Environment
		want     string
	}{
		{"TZS", paygatev1.EnvironmentSandbox, "e-sandbox"},
		{"TZS", paygatev1.EnvironmentProduction, "f-upstream"}, // e-sandbox does not serve production
		{"KES", paygatev1.EnvironmentProduction, "c-kes"},
		{"UGX", paygatev1.EnvironmentSandbox, ""},
	}
	for _, tt := range tests {
		g := DisbursingGateway(gateways, tt.currency, tt.env)
		got := ""
		if g != nil {
			got = g.Name
		}
		if got != tt.want {
			t.Errorf("DisbursingGateway(%s, %s) = %q, want %q", tt.currency, tt.env, got, tt.want)
		}
	}
	if g := DisbursingGateway(nil, "TZS", paygatev1.EnvironmentSandbox); g != nil {
		t.Errorf("DisbursingGateway(no gateways) = %s, want nil", g.Name)
	}
}

func TestNewQuote(t *testing.T) {
	dec := func(s string) *paygatev1.Decimal { d := paygatev1.Decimal(s); return &d }
	tests := []struct {
		name            string
		amount          string
		currency        string
		percent, fixed  string
		min, max        *paygatev1.Decimal
		fee, payable    string
		wantErr         error
		wantErrContains string
	}{
		{name: "percent and fixed", amount: "10000", currency: "TZS", percent: "1.5", fixed: "100", fee: "250.00", payable: "9750.00"},
		{name: "half up at the currency's scale", amount: "1000.50", currency: "TZS", percent: "1.5", fee: "15.01", payable: "985.49"},
		{name: "an exact half rounds up", amount: "1", currency: "TZS", percent: "0.5", fee: "0.01", payable: "0.99"},
		{name: "scale 0: an exact half rounds up, not to even", amount: "1000", currency: "UGX", percent: "1.25", fee: "13", payable: "987"},
		{name: "no fee", amount: "500", currency: "KES", fee: "0.00", payable: "500.00"},
		{name: "the minimum itself is allowed", amount: "1000", currency: "TZS", percent: "1", min: dec("1000"), max: dec("5000"), fee: "10.00", payable: "990.00"},
		{name: "the maximum itself is allowed", amount: "5000", currency: "TZS", percent: "1", min: dec("1000"), max: dec("5000"), fee: "50.00", payable: "4950.00"},
		{name: "below the minimum", amount: "999.99", currency: "TZS", percent: "1", min: dec("1000"), wantErr: ErrBelowMinimum, wantErrContains: "below the minimum payout of 1000.00 TZS"},
		{name: "above the maximum", amount: "5000.01", currency: "TZS", percent: "1", max: dec("5000"), wantErr: ErrAboveMaximum, wantErrContains: "above the maximum payout of 5000.00 TZS"},
		{name: "a fee above the amount", amount: "400", currency: "TZS", fixed: "500", wantErr: ErrBelowMinimum, wantErrContains: "the fee would exceed the amount"},
		{name: "a fee that takes the whole amount pays nothing out", amount: "500", currency: "TZS", fixed: "500", wantErr: ErrBelowMinimum, wantErrContains: "the fee would take the whole amount"},
		{name: "a schedule that does not compute", amount: "500", currency: "TZS", percent: "150", wantErr: ErrFeeSchedule},
		{name: "an unreadable schedule", amount: "500", currency: "TZS", percent: "one", wantErr: ErrFeeSchedule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := money.LookupCurrency(tt.currency)
			if !ok {
				t.Fatalf("unknown currency %s", tt.currency)
			}
			g := payoutGateway("gw", paygatev1.CurrencyCode(tt.currency), func(g *paygatev1.Gateway) {
				g.Spec.Payouts = &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: tt.percent, Fixed: paygatev1.Decimal(tt.fixed)},
					MinAmount: tt.min, MaxAmount: tt.max}
			})
			q, err := NewQuote(money.MustParseAmount(tt.amount), c, &g)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(errString(err), tt.wantErrContains) {
					t.Fatalf("NewQuote = %+v, %v; want %v containing %q", q, err, tt.wantErr, tt.wantErrContains)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewQuote: %v", err)
			}
			if got := q.Fee.StringFixed(c.Scale); got != tt.fee {
				t.Errorf("fee = %s, want %s", got, tt.fee)
			}
			if got := q.Payable.StringFixed(c.Scale); got != tt.payable {
				t.Errorf("payable = %s, want %s", got, tt.payable)
			}
			if !q.Fee.Add(q.Payable).Equal(q.Amount) || !q.Amount.Equal(money.MustParseAmount(tt.amount)) || q.Currency.Code != tt.currency {
				t.Errorf("quote %+v: fee + payable is not the amount", q)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
