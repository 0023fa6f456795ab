// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package eligibility decides which gateways may serve a merchant's payment: the checkout layers
// of the spec's section 1 (currency enabled, active wallet, the merchant's gateway selection) and
// the request's optional allow_payment_methods filter. The merchant controller uses it to report
// what hosted checkout can show; the apiserver uses it to accept or refuse a payment. One
// implementation serves both, so the two can never disagree.
package eligibility

import (
	"errors"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Decision errors, in the spec's runtime decision order.
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

// Result is the outcome of resolving gateways for one currency.
type Result struct {
	// Gateways allowed, sorted by code.
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

// ResolveGateways applies the gateway rules for one currency: a gateway serves only if the
// currency is enabled, an active wallet exists, the gateway is an active automatic deposit
// method of exactly that currency, and (when a selection exists) it is selected.
func ResolveGateways(m *paygatev1.Merchant, sel Selection, all []paygatev1.Gateway, currency paygatev1.CurrencyCode) Result {
	if _, reason := walletState(m, currency); reason != "" {
		return Result{Reason: reason}
	}
	var out []paygatev1.Gateway
	anyActive := false
	for _, g := range all {
		if !Serves(&g, currency) {
			continue
		}
		anyActive = true
		if sel.Restricted() && !slices.Contains(sel, g.Code()) {
			continue
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b paygatev1.Gateway) int { return strings.Compare(a.Name, b.Name) })
	switch {
	case len(out) > 0:
		return Result{Gateways: out}
	case anyActive:
		return Result{Reason: ReasonNoneSelected}
	default:
		return Result{Reason: ReasonNoActiveGateway}
	}
}

// Serves reports whether a gateway is an active automatic deposit method of exactly currency.
func Serves(g *paygatev1.Gateway, currency paygatev1.CurrencyCode) bool {
	return g.DeletionTimestamp.IsZero() && g.IsActive() &&
		g.Spec.Type == paygatev1.GatewayTypeAutomatic && g.Spec.Currency == currency
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
	sorted := slices.Clone(selections)
	slices.SortFunc(sorted, func(a, b paygatev1.GatewaySelection) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return Selection(sorted[0].Spec.Gateways), sorted[1:]
}

// WithinLimits keeps the gateways whose minimum and maximum amounts admit amount (a decimal
// string). Limits that do not parse are treated as absent (the gateway controller reports them).
func WithinLimits(gateways []paygatev1.Gateway, amount string) []paygatev1.Gateway {
	a, err := resource.ParseQuantity(amount)
	if err != nil {
		return nil
	}
	var out []paygatev1.Gateway
	for _, g := range gateways {
		if g.Spec.MinAmount != nil {
			if lo, err := resource.ParseQuantity(string(*g.Spec.MinAmount)); err == nil && a.Cmp(lo) < 0 {
				continue
			}
		}
		if g.Spec.MaxAmount != nil {
			if hi, err := resource.ParseQuantity(string(*g.Spec.MaxAmount)); err == nil && a.Cmp(hi) > 0 {
				continue
			}
		}
		out = append(out, g)
	}
	return out
}
