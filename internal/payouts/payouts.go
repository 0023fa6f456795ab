// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package payouts holds the payout rules the apiserver and the payout controller both apply
// (docs/payouts.md): the gates a merchant must pass, the settlement currency and destination, the
// disbursing gateway of a currency, and the quote (fee and payable amount) of an amount. The
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
// number on file. They hold in both environments.
func CheckGates(m *paygatev1.Merchant) error {
	if m.Spec.KYBStatus != paygatev1.KYBApproved {
		return &GateError{Gate: GateKYBApproved, Message: fmt.Sprintf("Payouts need an approved KYB review; this business's KYB status is %s.", orPending(string(m.Spec.KYBStatus)))}
	}
	if m.Spec.BusinessStatus != paygatev1.BusinessApproved {
		return &GateError{Gate: GateBusinessApproved, Message: fmt.Sprintf("Payouts need an approved business; this business is %s.", orPending(string(m.Spec.BusinessStatus)))}
	}
	if m.Spec.SettlementNumber == "" {
		return &GateError{Gate: GateSettlementNumber, Message: "Payouts need a settlement number on file; ask the platform team to add one."}
	}
	return nil
}

func orPending(s string) string {
	if s == "" {
		return "pending"
	}
	return s
}

// ErrNoSettlementCurrency: the settlement number's country has no currency the merchant is
// enabled for.
var ErrNoSettlementCurrency = errors.New("the settlement number's currency is not enabled for this merchant")

// SettlementCurrency is the currency payouts are made in: the currency of the settlement number's
// country, which must be one of the merchant's currencies.
func SettlementCurrency(m *paygatev1.Merchant) (money.Currency, error) {
	region := phone.RegionOf(string(m.Spec.SettlementNumber))
	for _, code := range m.Spec.Currencies {
		if c, ok := money.LookupCurrency(string(code)); ok && region != "" && c.PhoneRegion == region {
			return c, nil
		}
	}
	return money.Currency{}, ErrNoSettlementCurrency
}

// SameDestination reports whether raw (as a merchant typed it) is the settlement number.
func SameDestination(m *paygatev1.Merchant, raw string) bool {
	want := string(m.Spec.SettlementNumber)
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
