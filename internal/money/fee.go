// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package money

import (
	"errors"
	"fmt"
	"math/big"
)

// MaxPercentScale is the maximum number of decimal places of
// FeeSchedule.Percent, e.g. 0.0125 (%).
const MaxPercentScale = 4

var (
	// ErrFeeExceedsAmount is wrapped by ComputeFee when the fee would be
	// greater than the amount it is charged on.
	ErrFeeExceedsAmount = errors.New("fee would exceed the amount")
	// ErrInvalidFeeSchedule is wrapped by ComputeFee when the FeeSchedule
	// cannot be applied.
	ErrInvalidFeeSchedule = errors.New("invalid fee schedule")
)

var hundred = Amount{unscaled: big.NewInt(100)}

// FeeSchedule describes the fee charged on an amount: Percent percent of the
// amount plus a Fixed fee. The zero value charges no fee.
type FeeSchedule struct {
	// Percent is a percentage of the amount between 0 and 100 with at most
	// MaxPercentScale decimal places; 2.5 means 2.5 %.
	Percent Amount
	// Fixed is a flat fee in units of the currency; it must be valid for the
	// currency (see ValidateForCurrency).
	Fixed Amount
}

// ComputeFee returns the fee charged on amount in currency c and the net
// amount left after deducting it.
//
// The fee is amount*Percent/100 + Fixed, computed exactly and then rounded
// once, half-up (0.5 rounds to 1), to c.Scale decimal places. The net amount
// is amount - fee exactly, so fee + net == amount always holds.
//
// ComputeFee returns an error if c is invalid (ErrInvalidCurrency), if amount
// has more decimals than c allows (*ScaleError, ErrTooPrecise), if fees is
// invalid (ErrInvalidFeeSchedule) or if the fee would be greater than amount
// (ErrFeeExceedsAmount). A fee equal to the amount is allowed (net is 0).
func ComputeFee(amount Amount, fees FeeSchedule, c Currency) (fee, net Amount, err error) {
	if err := checkCurrency(c); err != nil {
		return Amount{}, Amount{}, err
	}
	if err := ValidateForCurrency(amount, c); err != nil {
		return Amount{}, Amount{}, fmt.Errorf("money: amount %s: %w", amount, err)
	}
	if s := fees.Percent.Scale(); s > MaxPercentScale {
		return Amount{}, Amount{}, fmt.Errorf("money: %w: percent %s has more than %d decimal places",
			ErrInvalidFeeSchedule, fees.Percent, MaxPercentScale)
	}
	if fees.Percent.Cmp(hundred) > 0 {
		return Amount{}, Amount{}, fmt.Errorf("money: %w: percent %s is greater than 100",
			ErrInvalidFeeSchedule, fees.Percent)
	}
	if err := ValidateForCurrency(fees.Fixed, c); err != nil {
		return Amount{}, Amount{}, fmt.Errorf("money: %w: fixed fee %s: %w",
			ErrInvalidFeeSchedule, fees.Fixed, err)
	}

	// percentPart = amount*percent/100 = (A*P) * 10^-(sa+sp+2), exact.
	percentPart := Amount{
		unscaled: new(big.Int).Mul(amount.int(), fees.Percent.int()),
		scale:    amount.scale + fees.Percent.scale + 2,
	}
	x, y, scale := align(percentPart, fees.Fixed)
	exact := new(big.Int).Add(x, y)
	fee = roundHalfUp(exact, scale, c.Scale)

	if fee.Cmp(amount) > 0 {
		return Amount{}, Amount{}, fmt.Errorf("money: %w: fee %s %s, amount %s %s",
			ErrFeeExceedsAmount, fee.StringFixed(c.Scale), c.Code, amount.StringFixed(c.Scale), c.Code)
	}
	net, err = amount.Sub(fee)
	if err != nil { // unreachable: fee <= amount
		return Amount{}, Amount{}, err
	}
	return fee, net, nil
}

// ParseFeeSchedule reads a fee schedule written as decimal text (a Gateway's fees): percent and
// fixed may be empty, meaning zero.
func ParseFeeSchedule(percent, fixed string) (FeeSchedule, error) {
	var s FeeSchedule
	var err error
	if percent != "" {
		if s.Percent, err = ParseAmount(percent); err != nil {
			return FeeSchedule{}, fmt.Errorf("money: %w: percent: %w", ErrInvalidFeeSchedule, err)
		}
	}
	if fixed != "" {
		if s.Fixed, err = ParseAmount(fixed); err != nil {
			return FeeSchedule{}, fmt.Errorf("money: %w: fixed fee: %w", ErrInvalidFeeSchedule, err)
		}
	}
	return s, nil
}
