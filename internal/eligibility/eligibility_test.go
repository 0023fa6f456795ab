// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package eligibility

import (
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
)

// gwOpt tweaks a test gateway.
type gwOpt func(*paygatev1.Gateway)

func inactive(g *paygatev1.Gateway) { f := false; g.Spec.Active = &f }
func explicitlyActive(g *paygatev1.Gateway) {
	t := true
	g.Spec.Active = &t
}
func manual(g *paygatev1.Gateway) { g.Spec.Type = paygatev1.GatewayTypeManual }
func deleting(g *paygatev1.Gateway) {
	now := metav1.Now()
	g.DeletionTimestamp = &now
	g.Finalizers = []string{"test.paygate.dev/hold"}
}
func displayName(n string) gwOpt { return func(g *paygatev1.Gateway) { g.Spec.DisplayName = n } }

// gw builds an active automatic gateway (Active left nil: the default is true).
func gw(code string, cur paygatev1.CurrencyCode, opts ...gwOpt) paygatev1.Gateway {
	g := paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: code},
		Spec: paygatev1.GatewaySpec{
			DisplayName: code + " display",
			Currency:    cur,
			Type:        paygatev1.GatewayTypeAutomatic,
		},
	}
	for _, o := range opts {
		o(&g)
	}
	return g
}

func boolp(b bool) *bool { return &b }

// merchant builds a merchant enabled for currencies with an active wallet (Active nil) in each.
func merchant(currencies ...paygatev1.CurrencyCode) *paygatev1.Merchant {
	m := &paygatev1.Merchant{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"},
		Spec:       paygatev1.MerchantSpec{DisplayName: "Shop", Owner: "owner@example.com", Currencies: currencies},
	}
	for _, c := range currencies {
		m.Spec.Wallets = append(m.Spec.Wallets, paygatev1.Wallet{Currency: c})
	}
	return m
}

func codes(gs []paygatev1.Gateway) []paygatev1.GatewayCode {
	out := []paygatev1.GatewayCode{}
	for i := range gs {
		out = append(out, gs[i].Code())
	}
	return out
}

func TestResolveGateways(t *testing.T) {
	const tzs, kes, ugx paygatev1.CurrencyCode = "TZS", "KES", "UGX"

	// A mixed catalogue, deliberately not in code order.
	catalogue := []paygatev1.Gateway{
		gw("tigo-tz", tzs),
		gw("airtel-tz", tzs, explicitlyActive),
		gw("mpesa-ke", kes),
		gw("mpesa-tz", tzs),
		gw("bank-tz", tzs, manual),
		gw("halo-tz", tzs, inactive),
		gw("old-tz", tzs, deleting),
		gw("mtn-ug", ugx),
	}

	walletMissing := merchant(tzs)
	walletMissing.Spec.Wallets = nil

	walletInactive := merchant(tzs)
	walletInactive.Spec.Wallets[0].Active = boolp(false)

	// Wallet in another currency only: the TZS wallet is missing.
	walletOtherCurrency := merchant(tzs, kes)
	walletOtherCurrency.Spec.Wallets = []paygatev1.Wallet{{Currency: kes}}

	walletExplicitActive := merchant(tzs)
	walletExplicitActive.Spec.Wallets[0].Active = boolp(true)

	tests := []struct {
		name     string
		merchant *paygatev1.Merchant
		sel      Selection
		all      []paygatev1.Gateway
		currency paygatev1.CurrencyCode
		want     []paygatev1.GatewayCode
		reason   string
	}{
		{
			name:     "currency not enabled",
			merchant: merchant(kes),
			all:      catalogue,
			currency: tzs,
			reason:   ReasonCurrencyNotEnabled,
		},
		{
			name:     "currency not enabled wins over wallet and selection",
			merchant: merchant(kes),
			sel:      Selection{"mpesa-tz"},
			all:      catalogue,
			currency: tzs,
			reason:   ReasonCurrencyNotEnabled,
		},
		{
			name:     "wallet missing",
			merchant: walletMissing,
			all:      catalogue,
			currency: tzs,
			reason:   ReasonWalletMissing,
		},
		{
			name:     "only a wallet in another currency",
			merchant: walletOtherCurrency,
			all:      catalogue,
			currency: tzs,
			reason:   ReasonWalletMissing,
		},
		{
			name:     "wallet inactive",
			merchant: walletInactive,
			all:      catalogue,
			currency: tzs,
			reason:   ReasonWalletInactive,
		},
		{
			name:     "no selection: active automatic gateways of exactly the currency, by display name",
			merchant: merchant(tzs, kes, ugx),
			all:      catalogue,
			currency: tzs,
			// bank-tz is manual, halo-tz inactive, old-tz being deleted; mpesa-ke and mtn-ug
			// are other currencies.
			want: []paygatev1.GatewayCode{"airtel-tz", "mpesa-tz", "tigo-tz"},
		},
		{
			name:     "explicitly active wallet",
			merchant: walletExplicitActive,
			all:      catalogue,
			currency: tzs,
			want:     []paygatev1.GatewayCode{"airtel-tz", "mpesa-tz", "tigo-tz"},
		},
		{
			name:     "empty selection is no selection",
			merchant: merchant(tzs),
			sel:      Selection{},
			all:      catalogue,
			currency: tzs,
			want:     []paygatev1.GatewayCode{"airtel-tz", "mpesa-tz", "tigo-tz"},
		},
		{
			name:     "other currency",
			merchant: merchant(tzs, kes),
			all:      catalogue,
			currency: kes,
			want:     []paygatev1.GatewayCode{"mpesa-ke"},
		},
		{
			name:     "no selection: by display name, then by code",
			merchant: merchant(tzs),
			all: []paygatev1.Gateway{
				gw("a-tigo", tzs, displayName("Tigo Pesa")), gw("z-mpesa", tzs, displayName("M-Pesa")),
				gw("b-mpesa", tzs, displayName("M-Pesa")), gw("airtel", tzs, displayName("Airtel Money")),
			},
			currency: tzs,
			want:     []paygatev1.GatewayCode{"airtel", "b-mpesa", "z-mpesa", "a-tigo"},
		},
		{
			name:     "selection restricts, in the selection's order",
			merchant: merchant(tzs, kes),
			sel:      Selection{"tigo-tz", "mpesa-tz", "mpesa-ke"},
			all:      catalogue,
			currency: tzs,
			want:     []paygatev1.GatewayCode{"tigo-tz", "mpesa-tz"},
		},
		{
			name:     "selection cannot add a manual, inactive or deleting gateway",
			merchant: merchant(tzs),
			sel:      Selection{"bank-tz", "halo-tz", "old-tz", "airtel-tz"},
			all:      catalogue,
			currency: tzs,
			want:     []paygatev1.GatewayCode{"airtel-tz"},
		},
		{
			name:     "selection of only other-currency gateways",
			merchant: merchant(tzs, kes),
			sel:      Selection{"mpesa-ke"},
			all:      catalogue,
			currency: tzs,
			reason:   ReasonNoneSelected,
		},
		{
			name:     "selection of only unusable gateways",
			merchant: merchant(tzs),
			sel:      Selection{"bank-tz", "halo-tz", "old-tz", "no-such"},
			all:      catalogue,
			currency: tzs,
			reason:   ReasonNoneSelected,
		},
		{
			name:     "no gateway at all",
			merchant: merchant(tzs),
			all:      nil,
			currency: tzs,
			reason:   ReasonNoActiveGateway,
		},
		{
			name:     "only manual, inactive, deleting and other-currency gateways",
			merchant: merchant(tzs),
			all: []paygatev1.Gateway{
				gw("bank-tz", tzs, manual), gw("halo-tz", tzs, inactive),
				gw("old-tz", tzs, deleting), gw("mpesa-ke", kes),
			},
			currency: tzs,
			reason:   ReasonNoActiveGateway,
		},
		{
			name:     "no active gateway wins over selection",
			merchant: merchant(tzs),
			sel:      Selection{"mpesa-ke"},
			all:      []paygatev1.Gateway{gw("halo-tz", tzs, inactive), gw("mpesa-ke", kes)},
			currency: tzs,
			reason:   ReasonNoActiveGateway,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(codes(tt.all))
			got := ResolveGateways(tt.merchant, tt.sel, tt.all, Request{Currency: tt.currency, Environment: paygatev1.EnvironmentSandbox})
			if tt.reason != "" {
				if len(got.Gateways) != 0 {
					t.Errorf("Gateways = %v, want none", codes(got.Gateways))
				}
				if got.Reason != tt.reason {
					t.Errorf("Reason = %q, want %q", got.Reason, tt.reason)
				}
			} else {
				if got.Reason != "" {
					t.Errorf("Reason = %q, want empty when gateways are allowed", got.Reason)
				}
				if gotCodes := codes(got.Gateways); !slices.Equal(gotCodes, tt.want) {
					t.Errorf("Gateways = %v, want %v", gotCodes, tt.want)
				}
				for _, g := range got.Gateways {
					if g.Spec.Currency != tt.currency {
						t.Errorf("gateway %s has currency %s, want %s", g.Name, g.Spec.Currency, tt.currency)
					}
				}
			}
			if after := codes(tt.all); !slices.Equal(before, after) {
				t.Errorf("ResolveGateways reordered its input: %v, was %v", after, before)
			}
		})
	}
}

func upstream(g *paygatev1.Gateway)   { g.Spec.Provider = paygatev1.ProviderUpstream }
func simulating(g *paygatev1.Gateway) { g.Spec.Simulation = paygatev1.SimulationSandboxAndProduction }

func TestServes(t *testing.T) {
	type byEnv struct{ sandbox, production, none bool }
	all, never, notProduction := byEnv{true, true, true}, byEnv{}, byEnv{true, false, true}
	tests := []struct {
		name string
		g    paygatev1.Gateway
		cur  paygatev1.CurrencyCode
		want byEnv
	}{
		{"upstream, active by default", gw("a", "TZS", upstream), "TZS", all},
		{"upstream, explicitly active", gw("a", "TZS", upstream, explicitlyActive), "TZS", all},
		{"simulator: sandbox only", gw("a", "TZS"), "TZS", notProduction},
		{"simulator opted in to simulating production", gw("a", "TZS", simulating), "TZS", all},
		{"other currency", gw("a", "KES", upstream), "TZS", never},
		{"currency match is exact", gw("a", "TZS", upstream), "tzs", never},
		{"inactive", gw("a", "TZS", upstream, inactive), "TZS", never},
		{"manual", gw("a", "TZS", upstream, manual), "TZS", never},
		{"being deleted", gw("a", "TZS", upstream, deleting), "TZS", never},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for env, want := range map[paygatev1.Environment]bool{
				paygatev1.EnvironmentSandbox: tt.want.sandbox, paygatev1.EnvironmentProduction: tt.want.production, "": tt.want.none,
			} {
				if got := Serves(&tt.g, Request{Currency: tt.cur, Environment: env}); got != want {
					t.Errorf("Serves in %q = %v, want %v", env, got, want)
				}
			}
		})
	}
}

func TestRequestOf(t *testing.T) {
	p := &paygatev1.Payment{Spec: paygatev1.PaymentSpec{Currency: "KES", Environment: paygatev1.EnvironmentProduction}}
	if got, want := RequestOf(p), (Request{Currency: "KES", Environment: paygatev1.EnvironmentProduction}); got != want {
		t.Errorf("RequestOf = %+v, want %+v", got, want)
	}
}

func TestOrder(t *testing.T) {
	gateways := []paygatev1.Gateway{
		gw("tigo-tz", "TZS", displayName("Tigo Pesa")),
		gw("mpesa-tz", "TZS", displayName("M-Pesa")),
		gw("airtel-tz", "TZS", displayName("Airtel Money")),
		gw("mpesa-b", "TZS", displayName("M-Pesa")),
		gw("halo-tz", "TZS", displayName("Halo Pesa")),
	}
	tests := []struct {
		name string
		sel  Selection
		want []paygatev1.GatewayCode
	}{
		{"no selection: display name, then code", nil, []paygatev1.GatewayCode{"airtel-tz", "halo-tz", "mpesa-b", "mpesa-tz", "tigo-tz"}},
		{"empty selection is no selection", Selection{}, []paygatev1.GatewayCode{"airtel-tz", "halo-tz", "mpesa-b", "mpesa-tz", "tigo-tz"}},
		{"selection order", Selection{"tigo-tz", "mpesa-tz", "airtel-tz", "mpesa-b", "halo-tz"}, []paygatev1.GatewayCode{"tigo-tz", "mpesa-tz", "airtel-tz", "mpesa-b", "halo-tz"}},
		{"unselected last, by display name", Selection{"tigo-tz", "no-such"}, []paygatev1.GatewayCode{"tigo-tz", "airtel-tz", "halo-tz", "mpesa-b", "mpesa-tz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every starting order ends in the same order.
			for _, start := range [][]paygatev1.Gateway{slices.Clone(gateways), reversed(gateways)} {
				Order(start, tt.sel)
				if got := codes(start); !slices.Equal(got, tt.want) {
					t.Errorf("Order(%v) = %v, want %v", tt.sel, got, tt.want)
				}
			}
		})
	}
}

func reversed(gs []paygatev1.Gateway) []paygatev1.Gateway {
	out := slices.Clone(gs)
	slices.Reverse(out)
	return out
}

func TestWithinLimits(t *testing.T) {
	limits := func(lo, hi string) gwOpt {
		return func(g *paygatev1.Gateway) {
			if lo != "" {
				d := paygatev1.Decimal(lo)
				g.Spec.MinAmount = &d
			}
			if hi != "" {
				d := paygatev1.Decimal(hi)
				g.Spec.MaxAmount = &d
			}
		}
	}
	gateways := []paygatev1.Gateway{
		gw("none", "TZS"),
		gw("min-1000", "TZS", limits("1000", "")),
		gw("max-5000.50", "TZS", limits("", "5000.50")),
		gw("1000-5000", "TZS", limits("1000.00", "5000")),
		gw("bad-limits", "TZS", limits("lots", "1e3")),
	}
	tests := []struct {
		amount string
		want   []paygatev1.GatewayCode
	}{
		{"1", []paygatev1.GatewayCode{"none", "max-5000.50", "bad-limits"}},
		{"999.99", []paygatev1.GatewayCode{"none", "max-5000.50", "bad-limits"}},
		{"1000", []paygatev1.GatewayCode{"none", "min-1000", "max-5000.50", "1000-5000", "bad-limits"}},
		{"5000.00", []paygatev1.GatewayCode{"none", "min-1000", "max-5000.50", "1000-5000", "bad-limits"}},
		{"5000.01", []paygatev1.GatewayCode{"none", "min-1000", "max-5000.50", "bad-limits"}},
		{"5000.50", []paygatev1.GatewayCode{"none", "min-1000", "max-5000.50", "bad-limits"}},
		{"5000.51", []paygatev1.GatewayCode{"none", "min-1000", "bad-limits"}},
		{"123456789012345678.123456789", []paygatev1.GatewayCode{"none", "min-1000", "bad-limits"}},
	}
	for _, tt := range tests {
		t.Run(tt.amount, func(t *testing.T) {
			got := codes(WithinLimits(gateways, money.MustParseAmount(tt.amount)))
			if !slices.Equal(got, tt.want) {
				t.Errorf("WithinLimits(%s) = %v, want %v", tt.amount, got, tt.want)
			}
		})
	}
}

func TestCheckCurrency(t *testing.T) {
	const tzs paygatev1.CurrencyCode = "TZS"

	noWallet := merchant(tzs)
	noWallet.Spec.Wallets = nil
	inactiveWallet := merchant(tzs)
	inactiveWallet.Spec.Wallets[0].Active = boolp(false)
	activeWallet := merchant(tzs)
	activeWallet.Spec.Wallets[0].Active = boolp(true)

	tests := []struct {
		name     string
		merchant *paygatev1.Merchant
		currency paygatev1.CurrencyCode
		want     error
		wantMsg  string
	}{
		{"enabled with default-active wallet", merchant(tzs), tzs, nil, ""},
		{"enabled with explicitly active wallet", activeWallet, tzs, nil, ""},
		{"not enabled", merchant("KES"), tzs, ErrCurrencyNotEnabled, "Currency is not enabled for this merchant."},
		{"not enabled, lower case", merchant(tzs), "tzs", ErrCurrencyNotEnabled, "Currency is not enabled for this merchant."},
		{"wallet missing", noWallet, tzs, ErrWalletUnavailable, "Receiver wallet for this currency is not available."},
		{"wallet inactive", inactiveWallet, tzs, ErrWalletUnavailable, "Receiver wallet for this currency is not available."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckCurrency(tt.merchant, tt.currency)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckCurrency = %v, want nil", err)
				}
				return
			}
			if err != tt.want || !errors.Is(err, tt.want) {
				t.Fatalf("CheckCurrency = %v, want exactly %v", err, tt.want)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("message = %q, want %q", err.Error(), tt.wantMsg)
			}
		})
	}
}

func TestFilterAllowedMethods(t *testing.T) {
	gateways := []paygatev1.Gateway{
		gw("mpesa-tz", "TZS", displayName("M-Pesa Tanzania")),
		gw("tigo-tz", "TZS", displayName("Tigo Pesa")),
		gw("airtel-tz", "TZS", displayName("Airtel Money")),
	}
	tests := []struct {
		name     string
		keywords []string
		want     []paygatev1.GatewayCode
	}{
		{"nil keywords: unchanged", nil, []paygatev1.GatewayCode{"mpesa-tz", "tigo-tz", "airtel-tz"}},
		{"empty keywords: unchanged", []string{}, []paygatev1.GatewayCode{"mpesa-tz", "tigo-tz", "airtel-tz"}},
		{"only blank keywords: unchanged", []string{"", "  ", "\t\n"}, []paygatev1.GatewayCode{"mpesa-tz", "tigo-tz", "airtel-tz"}},
		{"code substring", []string{"mpesa"}, []paygatev1.GatewayCode{"mpesa-tz"}},
		{"code, upper case keyword", []string{"TIGO"}, []paygatev1.GatewayCode{"tigo-tz"}},
		{"display name, mixed case", []string{"m-PESA tanzania"}, []paygatev1.GatewayCode{"mpesa-tz"}},
		{"display name substring matches two", []string{"pesa"}, []paygatev1.GatewayCode{"mpesa-tz", "tigo-tz"}},
		{"display name only (not in code)", []string{"money"}, []paygatev1.GatewayCode{"airtel-tz"}},
		{"surrounding whitespace trimmed", []string{"  airtel \t"}, []paygatev1.GatewayCode{"airtel-tz"}},
		{"blank keywords ignored among real ones", []string{"", "tigo", " "}, []paygatev1.GatewayCode{"tigo-tz"}},
		{"several keywords: union in input order", []string{"airtel", "mpesa"}, []paygatev1.GatewayCode{"mpesa-tz", "airtel-tz"}},
		{"shared substring keeps all", []string{"-tz"}, []paygatev1.GatewayCode{"mpesa-tz", "tigo-tz", "airtel-tz"}},
		{"no match: empty", []string{"paypal"}, []paygatev1.GatewayCode{}},
		{"unknown keyword alongside a match", []string{"paypal", "TIGO"}, []paygatev1.GatewayCode{"tigo-tz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(gateways)
			got := FilterAllowedMethods(in, tt.keywords)
			if gotCodes := codes(got); !slices.Equal(gotCodes, tt.want) {
				t.Errorf("FilterAllowedMethods(%q) = %v, want %v", tt.keywords, gotCodes, tt.want)
			}
			if len(got) > len(in) {
				t.Errorf("filter added gateways: %d > %d", len(got), len(in))
			}
			for _, g := range got {
				if !slices.ContainsFunc(in, func(o paygatev1.Gateway) bool { return o.Name == g.Name }) {
					t.Errorf("filter returned %s, which was not in its input", g.Name)
				}
			}
		})
	}

	t.Run("never adds a gateway to an empty input", func(t *testing.T) {
		for _, kws := range [][]string{nil, {"mpesa"}, {""}} {
			if got := FilterAllowedMethods(nil, kws); len(got) != 0 {
				t.Errorf("FilterAllowedMethods(nil, %q) = %v, want none", kws, codes(got))
			}
		}
	})
}

func TestCheckSelection(t *testing.T) {
	all := []paygatev1.Gateway{
		gw("mpesa-tz", "TZS"),
		gw("mpesa-ke", "KES"),
		gw("halo-tz", "TZS", inactive),
		gw("bank-tz", "TZS", manual),
		gw("old-tz", "TZS", deleting),
		gw("mtn-ug", "UGX"),
		// Inactive and manual and other currency: inactive is reported first.
		gw("legacy-ug", "UGX", inactive, manual),
	}
	m := merchant("TZS", "KES")
	// A wallet is not a selection matter: an enabled currency without a wallet is no problem.
	m.Spec.Wallets = nil

	tests := []struct {
		name string
		sel  Selection
		want []SelectionProblem
	}{
		{"no selection", nil, nil},
		{"valid", Selection{"mpesa-tz", "mpesa-ke"}, nil},
		{"unknown", Selection{"nope"}, []SelectionProblem{{"nope", ProblemUnknownGateway}}},
		{"deleting gateway is unknown", Selection{"old-tz"}, []SelectionProblem{{"old-tz", ProblemUnknownGateway}}},
		{"inactive", Selection{"halo-tz"}, []SelectionProblem{{"halo-tz", ProblemGatewayInactive}}},
		{"manual", Selection{"bank-tz"}, []SelectionProblem{{"bank-tz", ProblemGatewayManual}}},
		{"currency not enabled", Selection{"mtn-ug"}, []SelectionProblem{{"mtn-ug", ProblemCurrencyNotEnabled}}},
		{"inactive reported before manual and currency", Selection{"legacy-ug"}, []SelectionProblem{{"legacy-ug", ProblemGatewayInactive}}},
		{
			"several, in selection order, valid ones skipped",
			Selection{"nope", "mpesa-tz", "bank-tz", "halo-tz", "mtn-ug", "old-tz"},
			[]SelectionProblem{
				{"nope", ProblemUnknownGateway},
				{"bank-tz", ProblemGatewayManual},
				{"halo-tz", ProblemGatewayInactive},
				{"mtn-ug", ProblemCurrencyNotEnabled},
				{"old-tz", ProblemUnknownGateway},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckSelection(m, tt.sel, all)
			if !slices.Equal(got, tt.want) {
				t.Errorf("CheckSelection(%v) = %v, want %v", tt.sel, got, tt.want)
			}
		})
	}

	t.Run("no gateways at all: every code unknown", func(t *testing.T) {
		got := CheckSelection(m, Selection{"mpesa-tz"}, nil)
		want := []SelectionProblem{{"mpesa-tz", ProblemUnknownGateway}}
		if !slices.Equal(got, want) {
			t.Errorf("CheckSelection = %v, want %v", got, want)
		}
	})
}

// TestProviderLimits: a gateway's cached provider limits count in WithinLimits; CheckLimits says
// why each gateway whose own limits admit the amount was refused by its provider.
func TestProviderLimits(t *testing.T) {
	dec := func(s string) *paygatev1.Decimal { d := paygatev1.Decimal(s); return &d }
	daraja := func(g *paygatev1.Gateway) {
		g.Status.ProviderLimits = &paygatev1.ProviderLimits{MinAmount: dec("10"), MaxAmount: dec("150000"), Decimals: 0}
	}
	specMax := func(g *paygatev1.Gateway) { g.Spec.MaxAmount = dec("100") }
	gws := []paygatev1.Gateway{gw("ke-daraja", "KES", daraja), gw("ke-plain", "KES"), gw("ke-small", "KES", daraja, specMax)}
	for _, tc := range []struct {
		amount   string
		fit      []paygatev1.GatewayCode
		refusals []string
	}{
		{"1500", []paygatev1.GatewayCode{"ke-daraja", "ke-plain"}, nil},
		{"50", []paygatev1.GatewayCode{"ke-daraja", "ke-plain", "ke-small"}, nil},
		{"1500.50", []paygatev1.GatewayCode{"ke-plain"}, []string{RefusalTooManyDecimals}},
		{"50.5", []paygatev1.GatewayCode{"ke-plain"}, []string{RefusalTooManyDecimals, RefusalTooManyDecimals}},
		{"5", []paygatev1.GatewayCode{"ke-plain"}, []string{RefusalBelowMinimum, RefusalBelowMinimum}},
		{"200000", []paygatev1.GatewayCode{"ke-plain"}, []string{RefusalAboveMaximum}},
	} {
		amount := money.MustParseAmount(tc.amount)
		fit, refusals := CheckLimits(gws, amount)
		var reasons []string
		for _, r := range refusals {
			reasons = append(reasons, r.Reason)
		}
		if !slices.Equal(codes(fit), tc.fit) || !slices.Equal(reasons, tc.refusals) {
			t.Errorf("%s: fit %v refusals %v, want %v %v", tc.amount, codes(fit), reasons, tc.fit, tc.refusals)
		}
		if got := codes(WithinLimits(gws, amount)); !slices.Equal(got, tc.fit) {
			t.Errorf("%s: WithinLimits %v, want %v", tc.amount, got, tc.fit)
		}
	}
}
