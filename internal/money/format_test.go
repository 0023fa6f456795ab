// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package money

import (
	"errors"
	"strings"
	"testing"
)

func TestFormatAmount(t *testing.T) {
	tests := []struct {
		amount, currency string
		want             string
	}{
		{"1500000", "TZS", "TZS 1,500,000"},
		{"1500000.00", "TZS", "TZS 1,500,000"},
		{"1500.5", "KES", "KES 1,500.50"},
		{"1500.50", "KES", "KES 1,500.50"},
		{"0.05", "KES", "KES 0.05"},
		{"0", "TZS", "TZS 0"},
		{"1", "UGX", "UGX 1"},
		{"12", "UGX", "UGX 12"},
		{"123", "UGX", "UGX 123"},
		{"1234", "UGX", "UGX 1,234"},
		{"123456", "UGX", "UGX 123,456"},
		{"1234567", "UGX", "UGX 1,234,567"},
		{"999999999999999999", "UGX", "UGX 999,999,999,999,999,999"},
		{"1500.125", "KWD", "KWD 1,500.125"},
		{"1500.1", "KWD", "KWD 1,500.100"},
		{"15000", "XOF", "XOF 15\u202f000"},
		{"1500.5", "ZAR", "ZAR 1\u00a0500,50"},
		{"1500000.75", "MAD", "MAD 1.500.000,75"},
		{"1500000.75", "CHF", "CHF 1\u2019500\u2019000.75"},
		{"1500000", "INR", "INR 15,00,000"},
		{"123456789.5", "INR", "INR 12,34,56,789.50"},
		{"1000", "INR", "INR 1,000"},
		{"100", "INR", "INR 100"},
		// Never rounded: more decimals than the currency allows are all written.
		{"1500.505", "KES", "KES 1,500.505"},
		{"1500.5", "UGX", "UGX 1,500.5"},
	}
	for _, tt := range tests {
		t.Run(tt.amount+" "+tt.currency, func(t *testing.T) {
			c, ok := LookupCurrency(tt.currency)
			if !ok {
				t.Fatalf("unknown currency %s", tt.currency)
			}
			if got := FormatAmount(MustParseAmount(tt.amount), c); got != tt.want {
				t.Errorf("FormatAmount(%s, %s) = %q, want %q", tt.amount, tt.currency, got, tt.want)
			}
		})
	}
}

func TestJSONAmount(t *testing.T) {
	tests := []struct {
		name, amount, currency string
		want                   string
		wantErr                error
	}{
		{"whole amount at the currency's scale", "1500", "TZS", "1500.00", nil},
		{"fraction padded", "1500.5", "KES", "1500.50", nil},
		{"scale 0", "15000", "UGX", "15000", nil},
		{"trailing zeros beyond the scale are not money", "15000.00", "UGX", "15000", nil},
		{"scale 3", "2.5", "KWD", "2.500", nil},
		{"zero", "0", "TZS", "0.00", nil},
		{"canonical already", "1500.00", "TZS", "1500.00", nil},
		{"canonical zero", "0.00", "TZS", "0.00", nil},
		{"leading zeros go", "001500.00", "TZS", "1500.00", nil},
		{"leading zero at scale 0", "015000", "UGX", "15000", nil},
		{"canonical at scale 3", "2.500", "KWD", "2.500", nil},
		{"too many integer digits at the scale", strings.Repeat("9", MaxIntegerDigits+1) + ".00", "TZS", "", ErrTooLarge},
		{"a point with no integer digits", ".50", "TZS", "", ErrSyntax},
		{"a sign", "-1.00", "TZS", "", ErrNegative},
		{"a space at the scale's length", "1 .00", "TZS", "", ErrSyntax},
		{"garbage", "abc", "TZS", "", ErrSyntax},
		{"empty", "", "TZS", "", ErrSyntax},
		{"negative", "-5", "TZS", "", ErrNegative},
		{"exponent", "1e3", "TZS", "", ErrSyntax},
		{"more decimals than the currency allows would be rounded", "1500.555", "TZS", "", ErrTooPrecise},
		{"fraction of a currency without minor units", "1500.5", "UGX", "", ErrTooPrecise},
		{"unknown currency", "1500", "XXX", "", ErrInvalidCurrency},
		{"no currency", "1500", "", "", ErrInvalidCurrency},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := JSONAmount(tt.amount, tt.currency)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("JSONAmount(%q, %q) error = %v, want %v", tt.amount, tt.currency, err, tt.wantErr)
				}
				if got != "" {
					t.Errorf("JSONAmount(%q, %q) = %q with an error, want no amount", tt.amount, tt.currency, got)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("JSONAmount(%q, %q) = %q, %v; want %s", tt.amount, tt.currency, got, err, tt.want)
			}
		})
	}
}

func TestCurrencyPhoneRegions(t *testing.T) {
	want := map[string]string{"TZS": "TZ", "KES": "KE", "UGX": "UG", "RWF": "RW", "MWK": "MW", "ZMW": "ZM", "GHS": "GH", "NGN": "NG"}
	for _, code := range CurrencyCodes() {
		c, _ := LookupCurrency(code)
		if c.PhoneRegion != want[code] {
			t.Errorf("%s: PhoneRegion = %q, want %q", code, c.PhoneRegion, want[code])
		}
	}
}
