// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package payouts holds the payout rules the apiserver and the payout controller both apply
// (docs/payouts.md): the gates a merchant must pass, the payout currency and the settlement number
// of each currency, the disbursing gateway of a currency, and the quote (fee and payable amount) of an amount. The
// apiserver applies them when it accepts a payout; the controller applies them again before it
// disburses, so a gate that closed in between stops the money.
package payouts

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/phone"
)

// MaxOpenReservations bounds the reservations open at once per merchant and environment; more
// payouts wait in pending until earlier ones finish (docs/payouts.md).
const MaxOpenReservations = 100

// GateError is a closed payout gate. Its message names the gate and is safe to show the merchant.
type GateError struct {
	// Gate is KYBApproved, BusinessApproved or SettlementNumber.
	Gate    string
	Message string
}

func (e *GateError) Error() string { return e.Message }

// Gate names.
const (
	GateKYBApproved      = "KYBApproved"
	GateBusinessApproved = "BusinessApproved"
	GateSettlementNumber = "SettlementNumber"
)

// CheckGates applies the payout gates in order: KYB approved, business approved, a settlement
// number on file for currency (SettlementNumber). With currency "" the last gate asks for any
// settlement number, for a caller that does not know the payout's currency yet. They hold in both
// environments.
func CheckGates(m *paygatev1.Merchant, currency paygatev1.CurrencyCode) error {
	if m.Spec.KYBStatus != paygatev1.KYBApproved {
		return &GateError{Gate: GateKYBApproved, Message: fmt.Sprintf("Payouts need an approved KYB review; this business's KYB status is %s.", orPending(string(m.Spec.KYBStatus)))}
	}
	if m.Spec.BusinessStatus != paygatev1.BusinessApproved {
		return &GateError{Gate: GateBusinessApproved, Message: fmt.Sprintf("Payouts need an approved business; this business is %s.", orPending(string(m.Spec.BusinessStatus)))}
	}
	if m.Spec.SettlementNumber == "" && len(m.Spec.SettlementNumbers) == 0 {
		return &GateError{Gate: GateSettlementNumber, Message: "Payouts need a settlement number on file; ask the platform team to add one."}
	}
	if currency != "" && SettlementNumber(m, currency) == "" {
		return &GateError{Gate: GateSettlementNumber, Message: fmt.Sprintf("Payouts in %s need a settlement number for %s on file; ask the platform team to add one.", currency, currency)}
	}
	return nil
}

func orPending(s string) string {
	if s == "" {
		return "pending"
	}
	return s
}

// SettlementNumber is the number payouts in currency go to: the merchant's settlementNumbers
// entry of that currency, else the single settlementNumber when its country is the currency's
// (money.Currency.PhoneRegion). It is "" when the merchant has none for currency, and for an
// entry whose number is not of the currency's country (the CRD refuses one): an entry is never
// passed over for the single number. Whether the merchant is enabled for currency is not asked.
func SettlementNumber(m *paygatev1.Merchant, currency paygatev1.CurrencyCode) paygatev1.MobileNumber {
	c, ok := money.LookupCurrency(string(currency))
	if !ok || c.PhoneRegion == "" {
		return ""
	}
	for _, e := range m.Spec.SettlementNumbers {
		if e.Currency == currency {
			if phone.RegionOf(string(e.Number)) == c.PhoneRegion {
				return e.Number
			}
			return ""
		}
	}
	if n := m.Spec.SettlementNumber; n != "" && phone.RegionOf(string(n)) == c.PhoneRegion {
		return n
	}
	return ""
}

// IsSettlementNumber reports whether dest, a payout's recorded destination, is still where
// payouts in currency go: the payout controller refuses a payout for which it no longer is.
func IsSettlementNumber(m *paygatev1.Merchant, currency paygatev1.CurrencyCode, dest paygatev1.MobileNumber) bool {
	n := SettlementNumber(m, currency)
	return n != "" && n == dest
}

// Errors of SettlementCurrency and PayoutCurrency, for the caller to map to API answers.
var (
	// ErrNoSettlementCurrency: the merchant has no settlement number in a currency it is
	// enabled for.
	ErrNoSettlementCurrency = errors.New("the settlement number's currency is not enabled for this merchant")
	// ErrCurrencyRequired: the merchant has settlement numbers in several currencies and no
	// single settlement number of an enabled currency to default to.
	ErrCurrencyRequired = errors.New("the merchant has settlement numbers in several currencies; the payout must name one")
	// ErrCurrencyNotEnabled: the requested currency is unknown or not one of the merchant's.
	ErrCurrencyNotEnabled = errors.New("the currency is not one of the merchant's currencies")
)

// SettlementCurrency is the currency of a payout that names none: the currency of the single
// settlement number's country when the merchant is enabled for it (as before settlementNumbers
// existed); else the one enabled currency with a settlement number. ErrCurrencyRequired when
// there are several, ErrNoSettlementCurrency when there is none.
func SettlementCurrency(m *paygatev1.Merchant) (money.Currency, error) {
	if region := phone.RegionOf(string(m.Spec.SettlementNumber)); region != "" {
		for _, code := range m.Spec.Currencies {
			if c, ok := money.LookupCurrency(string(code)); ok && c.PhoneRegion == region {
				return c, nil
			}
		}
	}
	switch cs := SettlementCurrencies(m); len(cs) {
	case 0:
		return money.Currency{}, ErrNoSettlementCurrency
	case 1:
		c, _ := money.LookupCurrency(string(cs[0]))
		return c, nil
	default:
		return money.Currency{}, ErrCurrencyRequired
	}
}

// SettlementCurrencies are the merchant's currencies that have a settlement number, in the order
// of spec.currencies.
func SettlementCurrencies(m *paygatev1.Merchant) []paygatev1.CurrencyCode {
	var out []paygatev1.CurrencyCode
	for _, code := range m.Spec.Currencies {
		if SettlementNumber(m, code) != "" {
			out = append(out, code)
		}
	}
	return out
}

// PayoutCurrency is the currency of a payout request: requested (currency_code) when it is one of
// the merchant's currencies, else ErrCurrencyNotEnabled; SettlementCurrency when requested is "".
// Whether the currency has a settlement number is the gate's question (CheckGates).
func PayoutCurrency(m *paygatev1.Merchant, requested string) (money.Currency, error) {
	if requested == "" {
		return SettlementCurrency(m)
	}
	c, ok := money.LookupCurrency(requested)
	if !ok || !slices.Contains(m.Spec.Currencies, paygatev1.CurrencyCode(requested)) {
		return money.Currency{}, ErrCurrencyNotEnabled
	}
	return c, nil
}

// SameDestination reports whether raw (as a merchant typed it) is the settlement number of
// currency; a number in national form is read in that number's country.
func SameDestination(m *paygatev1.Merchant, currency paygatev1.CurrencyCode, raw string) bool {
	want := string(SettlementNumber(m, currency))
	if want == "" {
		return false
	}
	e164, err := phone.NormalizeMobile(raw, phone.RegionOf(want))
	return err == nil && e164 == want
}

// DisbursingGateway is the gateway that pays out currency in env: the first by code that is
// active, of that currency, carries a payout schedule and serves env. Nil when none does.
func DisbursingGateway(gateways []paygatev1.Gateway, currency paygatev1.CurrencyCode, env paygatev1.Environment) *paygatev1.Gateway {
	var out []*paygatev1.Gateway
	for i := range gateways {
		g := &gateways[i]
		if g.DeletionTimestamp.IsZero() && g.IsActive() && g.Spec.Currency == currency && g.Spec.Payouts != nil && g.ServesEnvironment(env) {
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.SortFunc(out, func(a, b *paygatev1.Gateway) int { return strings.Compare(a.Name, b.Name) })
	return out[0]
}

// Quote is what a payout of an amount costs.
type Quote struct {
	Amount, Fee, Payable money.Amount
	Currency             money.Currency
}

// Errors of NewQuote, for the caller to map to API labels.
var (
	// ErrBelowMinimum and ErrAboveMaximum: the amount is outside the gateway's payout limits.
	ErrBelowMinimum = errors.New("below the minimum payout")
	ErrAboveMaximum = errors.New("above the maximum payout")
	// ErrFeeSchedule: the gateway's payout schedule does not compute (reported on the Gateway).
	ErrFeeSchedule = errors.New("the payout fee schedule cannot be applied")
)

// NewQuote computes the fee and the payable amount of amount through gateway g: the payout fee
// schedule, half up at the currency's scale, payable = amount - fee, which must be more than zero.
// amount must already be valid for the currency (money.ValidateForCurrency).
func NewQuote(amount money.Amount, c money.Currency, g *paygatev1.Gateway) (Quote, error) {
	sched := g.Spec.Payouts
	if sched.MinAmount != nil {
		if lo, err := money.ParseAmount(string(*sched.MinAmount)); err == nil && amount.Cmp(lo) < 0 {
			return Quote{}, fmt.Errorf("%w of %s %s", ErrBelowMinimum, lo.StringFixed(c.Scale), c.Code)
		}
	}
	if sched.MaxAmount != nil {
		if hi, err := money.ParseAmount(string(*sched.MaxAmount)); err == nil && amount.Cmp(hi) > 0 {
			return Quote{}, fmt.Errorf("%w of %s %s", ErrAboveMaximum, hi.StringFixed(c.Scale), c.Code)
		}
	}
	fees, err := money.ParseFeeSchedule(sched.Fees.Percent, string(sched.Fees.Fixed))
	if err != nil {
		return Quote{}, fmt.Errorf("%w: %w", ErrFeeSchedule, err)
	}
	fee, payable, err := money.ComputeFee(amount, fees, c)
	if err != nil {
		if errors.Is(err, money.ErrFeeExceedsAmount) {
			return Quote{}, fmt.Errorf("%w: the fee would exceed the amount", ErrBelowMinimum)
		}
		return Quote{}, fmt.Errorf("%w: %w", ErrFeeSchedule, err)
	}
	if payable.IsZero() {
		// Nothing would reach the settlement number, and providers refuse a zero disbursement.
		return Quote{}, fmt.Errorf("%w: the fee would take the whole amount", ErrBelowMinimum)
	}
	return Quote{Amount: amount, Fee: fee, Payable: payable, Currency: c}, nil
}
