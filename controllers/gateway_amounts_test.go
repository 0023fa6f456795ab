// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"strings"
	"testing"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

func testDecimal(s string) *paygatev1.Decimal { d := paygatev1.Decimal(s); return &d }

func TestCheckGatewayAmounts(t *testing.T) {
	tests := []struct {
		name     string
		currency paygatev1.CurrencyCode
		fixed    paygatev1.Decimal
		min, max *paygatev1.Decimal
		// want lists, per expected problem in order, substrings the problem must contain.
		want [][]string
	}{
		{name: "TZS nothing set", currency: "TZS"},
		{name: "TZS fixed 0", currency: "TZS", fixed: "0"},
		{name: "TZS fixed 100.5", currency: "TZS", fixed: "100.5"},
		{name: "TZS fixed 100.55", currency: "TZS", fixed: "100.55"},
		{name: "TZS fixed with insignificant trailing zeros", currency: "TZS", fixed: "100.5000"},
		{
			name: "TZS fixed 100.555", currency: "TZS", fixed: "100.555",
			want: [][]string{{"fees.fixed", "100.555", "TZS allows at most 2 decimal places"}},
		},
		{name: "UGX fixed 1500", currency: "UGX", fixed: "1500"},
		{name: "UGX fixed 1500.00", currency: "UGX", fixed: "1500.00"},
		{
			name: "UGX fixed 1.5", currency: "UGX", fixed: "1.5",
			want: [][]string{{"fees.fixed", "1.5", "UGX allows at most 0 decimal places"}},
		},
		{name: "KWD fixed 1.125", currency: "KWD", fixed: "1.125"},
		{name: "KWD min and max with 3 decimals", currency: "KWD", min: testDecimal("0.125"), max: testDecimal("999.999")},
		{
			name: "KWD fixed 1.1255", currency: "KWD", fixed: "1.1255",
			want: [][]string{{"fees.fixed", "KWD allows at most 3 decimal places"}},
		},
		{name: "TZS valid min and max", currency: "TZS", fixed: "100", min: testDecimal("1000"), max: testDecimal("5000000.50")},
		{name: "empty min and max are unset", currency: "TZS", min: testDecimal(""), max: testDecimal("")},
		{
			name: "TZS minAmount too precise", currency: "TZS", min: testDecimal("0.001"),
			want: [][]string{{"minAmount", "0.001", "TZS allows at most 2 decimal places"}},
		},
		{
			name: "TZS maxAmount too precise", currency: "TZS", max: testDecimal("100.999"),
			want: [][]string{{"maxAmount", "100.999", "TZS allows at most 2 decimal places"}},
		},
		{
			name: "UGX all three reported in field order", currency: "UGX",
			fixed: "0.5", min: testDecimal("1.5"), max: testDecimal("2.5"),
			want: [][]string{{"fees.fixed", "0.5"}, {"minAmount", "1.5"}, {"maxAmount", "2.5"}},
		},
		{
			name: "not a decimal", currency: "TZS", fixed: "abc",
			want: [][]string{{"fees.fixed", "abc"}},
		},
		{
			name: "unknown currency", currency: "XYZ", fixed: "1.5",
			want: [][]string{{`currency "XYZ" is not supported`}},
		},
		{
			name: "lower-case currency is unknown", currency: "tzs",
			want: [][]string{{`currency "tzs" is not supported`}},
		},
		{
			name: "empty currency is unknown", currency: "",
			want: [][]string{{`currency "" is not supported`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &paygatev1.GatewaySpec{
				DisplayName: "Test",
				Currency:    tt.currency,
				Fees:        paygatev1.GatewayFees{Fixed: tt.fixed},
				MinAmount:   tt.min,
				MaxAmount:   tt.max,
			}
			before := *spec
			got := CheckGatewayAmounts(spec)
			if len(got) != len(tt.want) {
				t.Fatalf("CheckGatewayAmounts = %q, want %d problem(s) containing %q", got, len(tt.want), tt.want)
			}
			for i, subs := range tt.want {
				for _, s := range subs {
					if !strings.Contains(got[i], s) {
						t.Errorf("problem %d = %q, want it to contain %q", i, got[i], s)
					}
				}
			}
			if spec.Fees != before.Fees || spec.MinAmount != before.MinAmount || spec.MaxAmount != before.MaxAmount {
				t.Errorf("CheckGatewayAmounts changed the spec: %+v, was %+v", *spec, before)
			}
		})
	}
}
