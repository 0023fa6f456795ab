// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package money

import (
	"encoding/json"
	"fmt"
	"strings"
)

// NumberFormat is how amounts are written for people: the separator between groups of integer
// digits and the decimal mark. The zero value is the English form ("1,500,000.50").
type NumberFormat struct {
	// Group separates groups of integer digits; empty means ",".
	Group string
	// Decimal separates the integer digits from the fraction; empty means ".".
	Decimal string
	// Indian groups the integer digits as people in India do: the last three, then by two
	// ("15,00,000").
	Indian bool
}

// The number formats of the currency table.
var (
	// spaceComma: "1 500 000,50" with a no-break space (South Africa, Mozambique).
	spaceComma = NumberFormat{Group: "\u00a0", Decimal: ","}
	// narrowSpaceComma: "1 500 000,50" with a narrow no-break space (French-speaking countries).
	narrowSpaceComma = NumberFormat{Group: "\u202f", Decimal: ","}
	// dotComma: "1.500.000,50" (Morocco).
	dotComma = NumberFormat{Group: ".", Decimal: ","}
	// apostropheDot: "1’500’000.50" (Switzerland).
	apostropheDot = NumberFormat{Group: "\u2019", Decimal: "."}
	// indian: "15,00,000.50" (India).
	indian = NumberFormat{Indian: true}
)

// FormatAmount writes a for people in c's country: the currency code, a space, the integer
// digits grouped in thousands (c.Format), and the fraction at the currency's scale when there
// is one: "TZS 1,500,000", "KES 1,500.50", "XOF 15 000", "ZAR 1 500,50". A whole amount is
// written without minor units ("TZS 1,500,000", not "TZS 1,500,000.00"), as prices are read in
// the countries of shillings and francs. Nothing is rounded: an amount with more decimal places
// than the currency allows (which validation never lets through) is written with all of them.
func FormatAmount(a Amount, c Currency) string {
	scale := int32(0)
	if a.Scale() > 0 {
		scale = max(c.Scale, a.Scale())
	}
	digits := a.StringFixed(scale)
	intPart, frac, _ := strings.Cut(digits, ".")
	group, decimal := c.Format.Group, c.Format.Decimal
	if group == "" {
		group = ","
	}
	if decimal == "" {
		decimal = "."
	}
	var b strings.Builder
	b.WriteString(c.Code)
	if c.Code != "" {
		b.WriteByte(' ')
	}
	for i := range len(intPart) {
		if i > 0 && groupBefore(len(intPart)-i, c.Format.Indian) {
			b.WriteString(group)
		}
		b.WriteByte(intPart[i])
	}
	if frac != "" {
		b.WriteString(decimal)
		b.WriteString(frac)
	}
	return b.String()
}

// groupBefore reports whether a group separator goes before the digit that has rest digits,
// itself included, up to the decimal mark.
func groupBefore(rest int, indian bool) bool {
	if indian && rest > 3 {
		return (rest-3)%2 == 0
	}
	return rest%3 == 0
}

// JSONAmount renders a stored amount (a decimal string such as a Payment's spec.amount or
// status.fee) in currency (an ISO 4217 code) as a JSON number with exactly the currency's scale:
// "1500" in TZS is 1500.00.
//
// It never writes an amount other than the one stored. An amount that does not parse, a
// currency this package does not know, and an amount with more decimal places than the currency
// allows (rendering it would round it) are errors, and the caller shows no amount at all: the
// apiserver logs the error and answers SERVER_ERROR in the API's error shape, and the payment
// controller retries the webhook event instead of sending it (docs/api.md, Errors).
func JSONAmount(amount, currency string) (json.Number, error) {
	c, ok := LookupCurrency(currency)
	if !ok {
		return "", fmt.Errorf("money: rendering amount %q: %w: unknown currency %q", amount, ErrInvalidCurrency, currency)
	}
	if canonicalAt(amount, c.Scale) {
		// What the slow path would print: stored amounts are almost always already at the
		// currency's scale, and every verify and record renders three of them.
		return json.Number(amount), nil
	}
	a, err := ParseAmount(amount)
	if err != nil {
		return "", fmt.Errorf("money: rendering a stored %s amount: %w", currency, err)
	}
	if err := ValidateForCurrency(a, c); err != nil {
		return "", fmt.Errorf("money: rendering amount %q: %w", amount, err)
	}
	return a.JSONNumber(c.Scale), nil
}

// canonicalAt reports whether s is a plain non-negative decimal written exactly as StringFixed
// writes it at scale: no leading zero (but "0"), exactly scale fraction digits (none and no point
// at scale 0), within MaxIntegerDigits.
func canonicalAt(s string, scale int32) bool {
	intPart, frac := s, ""
	if scale > 0 {
		if len(s) < int(scale)+2 || s[len(s)-int(scale)-1] != '.' {
			return false
		}
		intPart, frac = s[:len(s)-int(scale)-1], s[len(s)-int(scale):]
	}
	if intPart == "" || len(intPart) > MaxIntegerDigits || (len(intPart) > 1 && intPart[0] == '0') {
		return false
	}
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return false
			}
		}
	}
	return true
}
