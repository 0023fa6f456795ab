// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package payouts

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nyaruka/phonenumbers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

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
	kenyan := func(m *paygatev1.Merchant) {
		m.Spec.SettlementNumbers = []paygatev1.CurrencySettlementNumber{{Currency: "KES", Number: "+254712345678"}}
	}
	tests := []struct {
		name     string
		merchant *paygatev1.Merchant
		currency paygatev1.CurrencyCode // "" before the payout's currency is known
		gate     string                 // "" for open
		message  string
	}{
		{"every gate open", approved(), "", "", ""},
		{"every gate open for the single number's currency", approved(), "TZS", "", ""},
		{"KYB first, even when every gate is closed", approved(func(m *paygatev1.Merchant) {
			m.Spec.KYBStatus, m.Spec.BusinessStatus, m.Spec.SettlementNumber = "", "", ""
		}), "TZS", GateKYBApproved, "Payouts need an approved KYB review; this business's KYB status is pending."},
		{"KYB rejected is named", approved(func(m *paygatev1.Merchant) { m.Spec.KYBStatus = paygatev1.KYBRejected }), "",
			GateKYBApproved, "Payouts need an approved KYB review; this business's KYB status is rejected."},
		{"business second", approved(func(m *paygatev1.Merchant) { m.Spec.BusinessStatus, m.Spec.SettlementNumber = "", "" }), "",
			GateBusinessApproved, "Payouts need an approved business; this business is pending."},
		{"settlement number last", approved(func(m *paygatev1.Merchant) { m.Spec.SettlementNumber = "" }), "",
			GateSettlementNumber, "Payouts need a settlement number on file; ask the platform team to add one."},
		{"no settlement number at all keeps its message with a currency", approved(func(m *paygatev1.Merchant) { m.Spec.SettlementNumber = "" }), "KES",
			GateSettlementNumber, "Payouts need a settlement number on file; ask the platform team to add one."},
		{"a Tanzanian number is no settlement number for KES", approved(), "KES",
			GateSettlementNumber, "Payouts in KES need a settlement number for KES on file; ask the platform team to add one."},
		{"a per-currency number opens its currency", approved(kenyan), "KES", "", ""},
		{"a per-currency number alone is a settlement number on file", approved(kenyan, func(m *paygatev1.Merchant) { m.Spec.SettlementNumber = "" }), "", "", ""},
		{"a per-currency number alone opens no other currency", approved(kenyan, func(m *paygatev1.Merchant) { m.Spec.SettlementNumber = "" }), "TZS",
			GateSettlementNumber, "Payouts in TZS need a settlement number for TZS on file; ask the platform team to add one."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckGates(tt.merchant, tt.currency)
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

// entries is a settlementNumbers list: currency, number, currency, number, ...
func entries(pairs ...string) []paygatev1.CurrencySettlementNumber {
	var out []paygatev1.CurrencySettlementNumber
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, paygatev1.CurrencySettlementNumber{Currency: paygatev1.CurrencyCode(pairs[i]), Number: paygatev1.MobileNumber(pairs[i+1])})
	}
	return out
}

func TestSettlementNumber(t *testing.T) {
	tests := []struct {
		name     string
		single   paygatev1.MobileNumber
		entries  []paygatev1.CurrencySettlementNumber
		currency paygatev1.CurrencyCode
		want     paygatev1.MobileNumber
	}{
		{"the single number in its own currency", "+255712345678", nil, "TZS", "+255712345678"},
		{"the single number is not a number of another currency", "+255712345678", nil, "KES", ""},
		{"a per-currency number", "+255712345678", entries("KES", "+254712345678"), "KES", "+254712345678"},
		{"the single number still serves the currencies not listed", "+255712345678", entries("KES", "+254712345678"), "TZS", "+255712345678"},
		{"a per-currency number comes before the single number", "+255712345678", entries("TZS", "+255754000111"), "TZS", "+255754000111"},
		{"per-currency numbers without a single number", "", entries("KES", "+254712345678", "TZS", "+255754000111"), "TZS", "+255754000111"},
		{"no number at all", "", nil, "TZS", ""},
		{"an entry of the wrong country is none, with no fallback to the single number", "+254712345678", entries("KES", "+255712345678"), "KES", ""},
		{"a currency without a phone region has none", "+255712345678", entries("BIF", "+25779123456"), "BIF", ""},
		{"an unknown currency has none", "+255712345678", nil, "XYZ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := approved(func(m *paygatev1.Merchant) { m.Spec.SettlementNumber, m.Spec.SettlementNumbers = tt.single, tt.entries })
			if got := SettlementNumber(m, tt.currency); got != tt.want {
				t.Errorf("SettlementNumber(%s) = %q, want %q", tt.currency, got, tt.want)
			}
		})
	}
}

// TestIsSettlementNumber is the payout controller's destination check: a payout recorded to the
// settlement number of its currency passes until that number changes.
func TestIsSettlementNumber(t *testing.T) {
	both := func(m *paygatev1.Merchant) { m.Spec.SettlementNumbers = entries("KES", "+254712345678") }
	tests := []struct {
		name     string
		merchant *paygatev1.Merchant
		currency paygatev1.CurrencyCode
		dest     paygatev1.MobileNumber
		want     bool
	}{
		{"a TZS payout to the single number", approved(both), "TZS", "+255712345678", true},
		{"a KES payout to the Kenyan number", approved(both), "KES", "+254712345678", true},
		{"a KES payout to the single number is refused", approved(both), "KES", "+255712345678", false},
		{"a KES payout whose number changed", approved(func(m *paygatev1.Merchant) { m.Spec.SettlementNumbers = entries("KES", "+254722000111") }),
			"KES", "+254712345678", false},
		{"a KES payout whose number was removed", approved(), "KES", "+254712345678", false},
		{"a TZS payout whose single number changed", approved(both, func(m *paygatev1.Merchant) { m.Spec.SettlementNumber = "+255713999999" }),
			"TZS", "+255712345678", false},
		{"a TZS payout whose currency got its own number", approved(func(m *paygatev1.Merchant) { m.Spec.SettlementNumbers = entries("TZS", "+255754000111") }),
			"TZS", "+255712345678", false},
		{"no destination", approved(func(m *paygatev1.Merchant) { m.Spec.SettlementNumber = "" }), "TZS", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsSettlementNumber(tt.merchant, tt.currency, tt.dest); got != tt.want {
				t.Errorf("IsSettlementNumber(%s, %s) = %v, want %v", tt.currency, tt.dest, got, tt.want)
			}
		})
	}
}

func TestSettlementCurrency(t *testing.T) {
	tests := []struct {
		name       string
		number     paygatev1.MobileNumber
		entries    []paygatev1.CurrencySettlementNumber
		currencies []paygatev1.CurrencyCode
		want       string // a currency code, or the error's text
	}{
		{"a Tanzanian number settles in TZS", "+255712345678", nil, []paygatev1.CurrencyCode{"KES", "TZS"}, "TZS"},
		{"a Kenyan number settles in KES", "+254712345678", nil, []paygatev1.CurrencyCode{"TZS", "KES"}, "KES"},
		{"a Ugandan number settles in UGX", "+256772123456", nil, []paygatev1.CurrencyCode{"UGX"}, "UGX"},
		{"the country's currency must be enabled", "+255712345678", nil, []paygatev1.CurrencyCode{"KES"}, ErrNoSettlementCurrency.Error()},
		{"no settlement number", "", nil, []paygatev1.CurrencyCode{"TZS"}, ErrNoSettlementCurrency.Error()},
		{"a currency without a country does not match an unknown region", "+80012345678", nil, []paygatev1.CurrencyCode{"BIF"}, ErrNoSettlementCurrency.Error()},
		{"the single number stays the default beside per-currency numbers", "+255712345678", entries("KES", "+254712345678"),
			[]paygatev1.CurrencyCode{"KES", "TZS"}, "TZS"},
		{"the one per-currency number without a single number", "", entries("KES", "+254712345678"), []paygatev1.CurrencyCode{"KES", "TZS"}, "KES"},
		{"the one per-currency number when the single number's currency is not enabled", "+255712345678", entries("KES", "+254712345678"),
			[]paygatev1.CurrencyCode{"KES"}, "KES"},
		{"several per-currency numbers and no single number", "", entries("KES", "+254712345678", "TZS", "+255712345678"),
			[]paygatev1.CurrencyCode{"KES", "TZS"}, ErrCurrencyRequired.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := SettlementCurrency(approved(func(m *paygatev1.Merchant) {
				m.Spec.SettlementNumber, m.Spec.SettlementNumbers, m.Spec.Currencies = tt.number, tt.entries, tt.currencies
			}))
			got := c.Code
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("SettlementCurrency = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPayoutCurrency(t *testing.T) {
	kenyan := approved(func(m *paygatev1.Merchant) { m.Spec.SettlementNumbers = entries("KES", "+254712345678") })
	tests := []struct {
		name      string
		merchant  *paygatev1.Merchant
		requested string
		want      string // a currency code, or the error's text
	}{
		{"none requested: the single number's currency, as before", kenyan, "", "TZS"},
		{"KES requested", kenyan, "KES", "KES"},
		{"TZS requested", kenyan, "TZS", "TZS"},
		{"an enabled currency without a number is the gate's to refuse", approved(), "KES", "KES"},
		{"a currency the merchant is not enabled for", kenyan, "UGX", ErrCurrencyNotEnabled.Error()},
		{"an unknown code", kenyan, "XYZ", ErrCurrencyNotEnabled.Error()},
		{"codes are upper case", kenyan, "kes", ErrCurrencyNotEnabled.Error()},
		{"none requested among several numbers", approved(func(m *paygatev1.Merchant) {
			m.Spec.SettlementNumber, m.Spec.SettlementNumbers = "", entries("KES", "+254712345678", "TZS", "+255712345678")
		}), "", ErrCurrencyRequired.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := PayoutCurrency(tt.merchant, tt.requested)
			got := c.Code
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("PayoutCurrency(%q) = %q, want %q", tt.requested, got, tt.want)
			}
		})
	}
}

func TestSameDestination(t *testing.T) {
	tests := []struct {
		number   paygatev1.MobileNumber
		currency paygatev1.CurrencyCode
		raw      string
		want     bool
	}{
		{"+255712345678", "TZS", "+255712345678", true},
		{"+255712345678", "TZS", "0712 345 678", true},
		{"+255712345678", "TZS", "0712-345-678", true},
		{"+255712345678", "TZS", "255712345678", true},
		{"+255712345678", "TZS", "00255712345678", true},
		{"+255712345678", "TZS", "+255 (712) 345.678", true},
		{"+254712345678", "KES", "0712345678", true}, // read in the settlement number's country
		{"+255712345678", "TZS", "0712345679", false},
		{"+255712345678", "TZS", "+254712345678", false},
		{"+255712345678", "TZS", "", false},
		{"+255712345678", "TZS", "not a number", false},
		{"+255712345678", "KES", "+255712345678", false}, // not a KES number
		{"", "TZS", "0712345678", false},
		{"", "TZS", "", false},
	}
	for _, tt := range tests {
		m := approved(func(m *paygatev1.Merchant) { m.Spec.SettlementNumber = tt.number })
		if got := SameDestination(m, tt.currency, tt.raw); got != tt.want {
			t.Errorf("SameDestination(%q, %s, %q) = %v, want %v", tt.number, tt.currency, tt.raw, got, tt.want)
		}
	}

	// With a Kenyan number beside the Tanzanian one, each currency has its own destination, and
	// a national-form number is read in that destination's country.
	m := approved(func(m *paygatev1.Merchant) { m.Spec.SettlementNumbers = entries("KES", "+254722000111") })
	for _, tt := range []struct {
		currency paygatev1.CurrencyCode
		raw      string
		want     bool
	}{
		{"KES", "0722 000 111", true},
		{"KES", "+254722000111", true},
		{"KES", "+255712345678", false},
		{"TZS", "0712 345 678", true},
		{"TZS", "+254722000111", false},
	} {
		if got := SameDestination(m, tt.currency, tt.raw); got != tt.want {
			t.Errorf("with per-currency numbers: SameDestination(%s, %q) = %v, want %v", tt.currency, tt.raw, got, tt.want)
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

// TestSettlementNumberRulesMatchPhoneRegions keeps the CEL rules of a settlementNumbers entry (the
// Merchant CRD) in step with the currency table SettlementNumber reads: every list of currencies
// in them is the currencies that have a phone region, and each currency is paired with its
// country's calling code, which must have 3 digits (the rule compares the number's first 4
// characters).
func TestSettlementNumberRulesMatchPhoneRegions(t *testing.T) {
	raw, err := os.ReadFile("../../config/crd/bases/paygate.dev_merchants.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	items := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["settlementNumbers"].Items
	if items == nil || items.Schema == nil || len(items.Schema.XValidations) == 0 {
		t.Fatal("spec.settlementNumbers has no item rules")
	}

	var want, wantPairs []string
	for _, code := range money.CurrencyCodes() {
		c, _ := money.LookupCurrency(code)
		if c.PhoneRegion == "" {
			continue
		}
		cc := phonenumbers.GetCountryCodeForRegion(c.PhoneRegion)
		if cc < 100 || cc > 999 {
			t.Errorf("%s: the calling code of %s is %d, not 3 digits: the rule's substring(0, 4) must change", code, c.PhoneRegion, cc)
		}
		want = append(want, code)
		wantPairs = append(wantPairs, fmt.Sprintf("%s+%d", code, cc))
	}

	codeList := regexp.MustCompile(`\[('[A-Z]{3}'(, )?)+\]`)
	code := regexp.MustCompile(`'([A-Z]{3})'`)
	pair := regexp.MustCompile(`'([A-Z]{3}\+[0-9]+)'`)
	var lists, pairs int
	for _, r := range items.Schema.XValidations {
		for _, list := range codeList.FindAllString(r.Rule, -1) {
			lists++
			var got []string
			for _, m := range code.FindAllStringSubmatch(list, -1) {
				got = append(got, m[1])
			}
			if !slices.Equal(got, want) {
				t.Errorf("rule %q lists %v; the currencies with a phone region are %v", r.Rule, got, want)
			}
		}
		if ms := pair.FindAllStringSubmatch(r.Rule, -1); ms != nil {
			pairs++
			var got []string
			for _, m := range ms {
				got = append(got, m[1])
			}
			if !slices.Equal(got, wantPairs) {
				t.Errorf("rule %q pairs %v; the currencies' calling codes are %v", r.Rule, got, wantPairs)
			}
		}
	}
	if lists == 0 || pairs == 0 {
		t.Errorf("found %d currency lists and %d currency and calling code lists in the rules, want both", lists, pairs)
	}
}
