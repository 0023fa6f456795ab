// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package fakepawapay

import (
	"math/big"
	"regexp"
	"strings"
)

// amountPattern is the documented amount format: between zero and two decimal places, no leading
// zeroes except a single one before the point for values below one, no sign, at most 18 integer
// digits (valid: 5, 5.0, 5.00, 5.5, 5.55, 5555555, 0.5; not valid: 5., 5.555,
// 5555555555555555555, .5, -5.5, 00.5, 00.00, 00001.32).
// https://docs.pawapay.io/v2/api-reference/deposits/initiate-deposit
var amountPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,17})(\.[0-9]{1,2})?$`)

// cents parses a documented amount into hundredths. ok is false when it does not follow the
// format.
func cents(amount string) (c *big.Int, ok bool) {
	if !amountPattern.MatchString(amount) {
		return nil, false
	}
	whole, frac, _ := strings.Cut(amount, ".")
	for len(frac) < 2 {
		frac += "0"
	}
	c, ok = new(big.Int).SetString(whole+frac, 10)
	return c, ok
}

// mustCents parses a limit or balance the fake was configured with; a malformed one counts as
// zero.
func mustCents(amount string) *big.Int {
	c, ok := cents(amount)
	if !ok {
		return new(big.Int)
	}
	return c
}

// hasDecimals reports whether the amount carries a decimal part at all.
func hasDecimals(amount string) bool { return strings.Contains(amount, ".") }

// formatCents renders hundredths as an amount: whole units when there is no fraction, else two
// decimals.
func formatCents(c *big.Int) string {
	neg := c.Sign() < 0
	abs := new(big.Int).Abs(c)
	q, r := new(big.Int).QuoRem(abs, big.NewInt(100), new(big.Int))
	s := q.String()
	if r.Sign() != 0 {
		frac := r.String()
		if len(frac) < 2 {
			frac = "0" + frac
		}
		s += "." + frac
	}
	if neg {
		s = "-" + s
	}
	return s
}
