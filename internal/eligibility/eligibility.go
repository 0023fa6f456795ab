// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package eligibility decides which gateways may serve a merchant's payment: the checkout layers
// (currency enabled, active wallet, the merchant's gateway selection; docs/decisions.md, Gateway
// selection) and the request's optional allow_payment_methods filter. The merchant controller
// uses it to report what hosted checkout can show; the apiserver uses it to accept or refuse a
// payment; the payment controller and the hosted checkout page use Serves to tell whether a
// gateway the payment recorded still serves it. One implementation serves all of them, so they
// can never disagree.
package eligibility

import (
	"cmp"
	"errors"
	"slices"
	"strings"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
)

// Decision errors, in the order a payment request is checked (docs/api.md, Creating payments).
var (
	// ErrCurrencyNotEnabled: the currency is not among the merchant's supported currencies.
	ErrCurrencyNotEnabled = errors.New("Currency is not enabled for this merchant.")
	// ErrWalletUnavailable: the merchant owner has no active wallet in the currency.
	ErrWalletUnavailable = errors.New("Receiver wallet for this currency is not available.")
)

// Reasons why a currency has no checkout gateway; they appear in Merchant status.
const (
	ReasonCurrencyNotEnabled = "CurrencyNotEnabled"
	ReasonWalletMissing      = "WalletMissing"
	ReasonWalletInactive     = "WalletInactive"
	ReasonNoActiveGateway    = "NoActiveGateway"
	ReasonNoneSelected       = "NoneSelected"
)

// Selection is the merchant's gateway selection. A nil or empty Selection means "no selection":
// every active automatic gateway of the currency is allowed.
type Selection []paygatev1.GatewayCode

// Restricted reports whether the merchant chose specific gateways.
func (s Selection) Restricted() bool { return len(s) > 0 }

// Request is what the rules need to know about a payment, requested or recorded, to decide
// whether a gateway may serve it.
type Request struct {
	// Currency of the payment: a gateway serves exactly one currency.
	Currency paygatev1.CurrencyCode
	// Environment of the payment. Empty when no one payment is meant (the merchant's status
	// reports what checkout can show in any environment).
	Environment paygatev1.Environment
}

// RequestOf is the Request of a recorded payment.
func RequestOf(p *paygatev1.Payment) Request {
	return Request{Currency: p.Spec.Currency, Environment: p.Spec.Environment}
}

// Result is the outcome of resolving gateways for one currency.
type Result struct {
	// Gateways allowed, in checkout order (see Order).
	Gateways []paygatev1.Gateway
	// Reason is set when Gateways is empty: why none can serve.
	Reason string
}

// CheckCurrency applies layers 1 and 2: the currency must be enabled for the merchant and the
// owner must hold an active wallet in it. It returns ErrCurrencyNotEnabled or
// ErrWalletUnavailable.
func CheckCurrency(m *paygatev1.Merchant, currency paygatev1.CurrencyCode) error {
	if _, reason := walletState(m, currency); reason != "" {
		if reason == ReasonCurrencyNotEnabled {
			return ErrCurrencyNotEnabled
		}
		return ErrWalletUnavailable
	}
	return nil
}

func walletState(m *paygatev1.Merchant, currency paygatev1.CurrencyCode) (bool, string) {
	if !slices.Contains(m.Spec.Currencies, currency) {
		return false, ReasonCurrencyNotEnabled
	}
	for _, w := range m.Spec.Wallets {
		if w.Currency == currency {
			if w.IsActive() {
				return true, ""
			}
			return false, ReasonWalletInactive
		}
	}
	return false, ReasonWalletMissing
}

// ResolveGateways applies the gateway rules for one payment request: a gateway serves only if
// the currency is enabled, an active wallet exists, the gateway serves the request (Serves), and
// (when a selection exists) it is selected. The gateways come in checkout order (Order).
func ResolveGateways(m *paygatev1.Merchant, sel Selection, all []paygatev1.Gateway, req Request) Result {
	if _, reason := walletState(m, req.Currency); reason != "" {
		return Result{Reason: reason}
	}
	var out []paygatev1.Gateway
	anyActive := false
	for _, g := range all {
		if !Serves(&g, req) {
			continue
		}
		anyActive = true
		if sel.Restricted() && !slices.Contains(sel, g.Code()) {
			continue
		}
		out = append(out, g)
	}
	Order(out, sel)
	switch {
	case len(out) > 0:
		return Result{Gateways: out}
	case anyActive:
		return Result{Reason: ReasonNoneSelected}
	default:
		return Result{Reason: ReasonNoActiveGateway}
	}
}

// Serves reports whether a gateway may serve a payment: it is not being deleted, it is an active
// automatic deposit method of exactly the payment's currency, and it serves the payment's
// environment (a simulator-backed gateway serves production only when it opted in to simulating
// it: Gateway.ServesEnvironment; an empty Environment asks about no one environment). It is the
// one answer to "does this gateway (still) serve this payment?": the apiserver when it accepts a
// payment, the payment controller before it pushes, and the hosted checkout page when it lists
// the payment's gateways all ask it.
func Serves(g *paygatev1.Gateway, req Request) bool {
	return g.DeletionTimestamp.IsZero() && g.IsActive() &&
		g.Spec.Type == paygatev1.GatewayTypeAutomatic && g.Spec.Currency == req.Currency &&
		(req.Environment == "" || g.ServesEnvironment(req.Environment))
}

// Order sorts gateways into checkout order, in place: with a selection, the selection's order
// (the merchant's GatewaySelection lists them as the merchant wants customers to see them);
// without one, by display name, then by code. Gateways the selection does not name come last, in
// the order without a selection. A payment records its gateways in this order and hosted
// checkout shows them so (docs/checkout.md).
func Order(gateways []paygatev1.Gateway, sel Selection) {
	slices.SortStableFunc(gateways, func(a, b paygatev1.Gateway) int {
		if sel.Restricted() {
			ia, ib := selectionIndex(sel, a.Code()), selectionIndex(sel, b.Code())
			if c := cmp.Compare(ia, ib); c != 0 {
				return c
			}
		}
		if c := strings.Compare(a.Spec.DisplayName, b.Spec.DisplayName); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// selectionIndex is the place of code in sel, len(sel) when sel does not name it.
func selectionIndex(sel Selection, code paygatev1.GatewayCode) int {
	if i := slices.Index(sel, code); i >= 0 {
		return i
	}
	return len(sel)
}

// FilterAllowedMethods narrows gateways to those whose code or display name contains one of the
// keywords, case-insensitively. No keywords means no filter. It never adds a gateway.
func FilterAllowedMethods(gateways []paygatev1.Gateway, keywords []string) []paygatev1.Gateway {
	var kws []string
	for _, k := range keywords {
		if k = strings.ToLower(strings.TrimSpace(k)); k != "" {
			kws = append(kws, k)
		}
	}
	if len(kws) == 0 {
		return gateways
	}
	var out []paygatev1.Gateway
	for _, g := range gateways {
		code, name := strings.ToLower(g.Name), strings.ToLower(g.Spec.DisplayName)
		if slices.ContainsFunc(kws, func(k string) bool { return strings.Contains(code, k) || strings.Contains(name, k) }) {
			out = append(out, g)
		}
	}
	return out
}

// SelectionProblem is a selected gateway code that cannot serve the merchant.
type SelectionProblem struct {
	Code   paygatev1.GatewayCode
	Reason string // UnknownGateway, GatewayInactive, GatewayManual, CurrencyNotEnabled
}

// Problem reasons for a selection entry.
const (
	ProblemUnknownGateway     = "UnknownGateway"
	ProblemGatewayInactive    = "GatewayInactive"
	ProblemGatewayManual      = "GatewayManual"
	ProblemCurrencyNotEnabled = "CurrencyNotEnabled"
)

// CheckSelection lists the selected codes that name an unknown, inactive or manual gateway, or a
// gateway of a currency the merchant is not enabled for.
func CheckSelection(m *paygatev1.Merchant, sel Selection, all []paygatev1.Gateway) []SelectionProblem {
	byCode := make(map[paygatev1.GatewayCode]*paygatev1.Gateway, len(all))
	for i := range all {
		byCode[all[i].Code()] = &all[i]
	}
	var problems []SelectionProblem
	for _, code := range sel {
		g, ok := byCode[code]
		switch {
		case !ok || !g.DeletionTimestamp.IsZero():
			problems = append(problems, SelectionProblem{code, ProblemUnknownGateway})
		case !g.IsActive():
			problems = append(problems, SelectionProblem{code, ProblemGatewayInactive})
		case g.Spec.Type != paygatev1.GatewayTypeAutomatic:
			problems = append(problems, SelectionProblem{code, ProblemGatewayManual})
		case !slices.Contains(m.Spec.Currencies, g.Spec.Currency):
			problems = append(problems, SelectionProblem{code, ProblemCurrencyNotEnabled})
		}
	}
	return problems
}

// EffectiveSelection picks a merchant's selection from its GatewaySelections: the oldest (then
// the first by name) applies; the others are returned as ignored. A merchant has one selection.
func EffectiveSelection(selections []paygatev1.GatewaySelection) (Selection, []paygatev1.GatewaySelection) {
	if len(selections) == 0 {
		return nil, nil
	}
	sorted := OrderSelections(selections)
	return Selection(sorted[0].Spec.Gateways), sorted[1:]
}

// OrderSelections is a merchant's GatewaySelections, the one that applies first: oldest, then by
// name (a copy; selections is not reordered).
func OrderSelections(selections []paygatev1.GatewaySelection) []paygatev1.GatewaySelection {
	sorted := slices.Clone(selections)
	slices.SortFunc(sorted, func(a, b paygatev1.GatewaySelection) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return sorted
}

// WithinLimits keeps the gateways that admit amount, in their order: the gateway's own minimum
// and maximum (spec) and, when the gateway controller cached them, its provider's
// (status.providerLimits: minimum, maximum and decimal places). Limits that do not parse are
// treated as absent (the gateway controller reports them). CheckLimits says why gateways were
// dropped.
func WithinLimits(gateways []paygatev1.Gateway, amount money.Amount) []paygatev1.Gateway {
	fit, _ := CheckLimits(gateways, amount)
	return fit
}

// Refusal reasons of a provider (ProviderRefusal.Reason).
const (
	RefusalBelowMinimum    = "BelowMinimum"
	RefusalAboveMaximum    = "AboveMaximum"
	RefusalTooManyDecimals = "TooManyDecimals"
)

// ProviderRefusal is why a gateway's provider refuses an amount its gateway's own limits admit.
type ProviderRefusal struct {
	// Gateway is the refusing gateway.
	Gateway *paygatev1.Gateway
	// Reason is RefusalBelowMinimum, RefusalAboveMaximum or RefusalTooManyDecimals.
	Reason string
	// Limit is the provider's minimum or maximum the amount is outside (Below/AboveMaximum).
	Limit money.Amount
	// Decimals is how many decimal places the provider takes (RefusalTooManyDecimals).
	Decimals int32
}

// CheckLimits keeps the gateways that admit amount (WithinLimits) and lists, for the gateways
// whose own limits admit it but whose provider refuses it, why (in the gateways' order). When fit
// is empty and refusals is not, the amount is refused only because of the providers' limits.
func CheckLimits(gateways []paygatev1.Gateway, amount money.Amount) (fit []paygatev1.Gateway, refusals []ProviderRefusal) {
	for i := range gateways {
		g := &gateways[i]
		if !specAdmits(g, amount) {
			continue
		}
		if r, ok := providerRefuses(g, amount); ok {
			refusals = append(refusals, r)
			continue
		}
		fit = append(fit, *g)
	}
	return fit, refusals
}

// specAdmits reports whether the gateway's own minimum and maximum admit amount.
func specAdmits(g *paygatev1.Gateway, amount money.Amount) bool {
	if g.Spec.MinAmount != nil {
		if lo, err := money.ParseAmount(string(*g.Spec.MinAmount)); err == nil && amount.Cmp(lo) < 0 {
			return false
		}
	}
	if g.Spec.MaxAmount != nil {
		if hi, err := money.ParseAmount(string(*g.Spec.MaxAmount)); err == nil && amount.Cmp(hi) > 0 {
			return false
		}
	}
	return true
}

// providerRefuses reports whether the gateway's provider, as its cached status.providerLimits
// say, refuses amount, and why. A gateway without cached limits refuses nothing. Decimal places
// are checked first: an amount the provider cannot even carry is refused for that.
func providerRefuses(g *paygatev1.Gateway, amount money.Amount) (ProviderRefusal, bool) {
	pl := g.Status.ProviderLimits
	if pl == nil {
		return ProviderRefusal{}, false
	}
	if pl.Decimals >= 0 && amount.Scale() > pl.Decimals {
		return ProviderRefusal{Gateway: g, Reason: RefusalTooManyDecimals, Decimals: pl.Decimals}, true
	}
	if pl.MinAmount != nil {
		if lo, err := money.ParseAmount(string(*pl.MinAmount)); err == nil && amount.Cmp(lo) < 0 {
			return ProviderRefusal{Gateway: g, Reason: RefusalBelowMinimum, Limit: lo, Decimals: pl.Decimals}, true
		}
	}
	if pl.MaxAmount != nil {
		if hi, err := money.ParseAmount(string(*pl.MaxAmount)); err == nil && amount.Cmp(hi) > 0 {
			return ProviderRefusal{Gateway: g, Reason: RefusalAboveMaximum, Limit: hi, Decimals: pl.Decimals}, true
		}
	}
	return ProviderRefusal{}, false
}
