// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package money

import (
	"errors"
	"slices"
	"testing"
)

func TestLookupCurrencyISO4217Scales(t *testing.T) {
	// Expected minor units from ISO 4217 list one, written out independently
	// of the table in currency.go.
	tests := []struct {
		code  string
		scale int32
	}{
		{"TZS", 2}, {"KES", 2}, {"UGX", 0}, {"RWF", 0}, {"BIF", 0},
		{"CDF", 2}, {"ETB", 2}, {"MWK", 2}, {"ZMW", 2}, {"MZN", 2},
		{"ZAR", 2}, {"NGN", 2}, {"GHS", 2}, {"XOF", 0}, {"XAF", 0},
		{"EGP", 2}, {"MAD", 2}, {"USD", 2}, {"EUR", 2}, {"GBP", 2},
		{"JPY", 0}, {"CNY", 2}, {"INR", 2}, {"AED", 2}, {"SAR", 2},
		{"KWD", 3}, {"BHD", 3}, {"OMR", 3}, {"JOD", 3}, {"TND", 3},
		{"CHF", 2}, {"CAD", 2}, {"AUD", 2}, {"SOS", 2}, {"SSP", 2},
		{"DJF", 0}, {"KMF", 0}, {"BWP", 2}, {"MUR", 2}, {"GNF", 0},
		{"LYD", 3}, {"QAR", 2}, {"IQD", 3}, {"KRW", 0}, {"HKD", 2},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			c, ok := LookupCurrency(tt.code)
			if !ok {
				t.Fatalf("LookupCurrency(%q) not found", tt.code)
			}
			if c.Code != tt.code || c.Scale != tt.scale || c.Name == "" {
				t.Errorf("LookupCurrency(%q) = %+v, want code %s scale %d and a name", tt.code, c, tt.code, tt.scale)
			}
		})
	}
	if got := len(CurrencyCodes()); got != len(tests) {
		t.Errorf("table has %d currencies, test expects %d; update the test", got, len(tests))
	}
}

func TestLookupCurrencyNotFound(t *testing.T) {
	for _, code := range []string{"", "tzs", "Tzs", " TZS", "TZS ", "TZSS", "XXX", "ABC", "834"} {
		if c, ok := LookupCurrency(code); ok {
			t.Errorf("LookupCurrency(%q) = %+v, true; want not found", code, c)
		}
	}
}

func TestCurrencyCodes(t *testing.T) {
	codes := CurrencyCodes()
	if len(codes) < 40 {
		t.Errorf("len(CurrencyCodes()) = %d, want at least 40", len(codes))
	}
	if !slices.IsSorted(codes) {
		t.Errorf("CurrencyCodes() not sorted: %v", codes)
	}
	if len(slices.Compact(slices.Clone(codes))) != len(codes) {
		t.Errorf("CurrencyCodes() has duplicates: %v", codes)
	}
	for _, code := range codes {
		if len(code) != 3 || code[0] < 'A' || code[0] > 'Z' || code[1] < 'A' || code[1] > 'Z' || code[2] < 'A' || code[2] > 'Z' {
			t.Errorf("code %q is not three upper-case letters", code)
		}
		c, ok := LookupCurrency(code)
		if !ok || c.Code != code {
			t.Errorf("LookupCurrency(%q) = %+v, %v", code, c, ok)
		}
		if c.Scale < 0 || c.Scale > 3 {
			t.Errorf("%s scale %d outside 0..3", code, c.Scale)
		}
	}
	// The caller owns the slice.
	codes[0] = "ZZZ"
	if CurrencyCodes()[0] == "ZZZ" {
		t.Error("CurrencyCodes() returned shared storage")
	}
}

func TestValidateForCurrency(t *testing.T) {
	tzs, _ := LookupCurrency("TZS")
	ugx, _ := LookupCurrency("UGX")
	kwd, _ := LookupCurrency("KWD")
	tests := []struct {
		amount  string
		c       Currency
		wantErr string // "" means valid
	}{
		{"1500", tzs, ""},
		{"1500.5", tzs, ""},
		{"1500.50", tzs, ""},
		{"1500.505", tzs, "TZS allows at most 2 decimal places"},
		{"1500.500", tzs, ""}, // trailing zeros are not significant
		{"1500", ugx, ""},
		{"1500.00", ugx, ""},
		{"1500.5", ugx, "UGX allows at most 0 decimal places"},
		{"0.001", kwd, ""},
		{"0.0015", kwd, "KWD allows at most 3 decimal places"},
		{"0", ugx, ""},
	}
	for _, tt := range tests {
		t.Run(tt.c.Code+"/"+tt.amount, func(t *testing.T) {
			err := ValidateForCurrency(MustParseAmount(tt.amount), tt.c)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateForCurrency() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("ValidateForCurrency() = %v, want %q", err, tt.wantErr)
			}
			if !errors.Is(err, ErrTooPrecise) {
				t.Errorf("error %v does not wrap ErrTooPrecise", err)
			}
			var se *ScaleError
			if !errors.As(err, &se) || se.Currency != tt.c.Code || se.MaxScale != tt.c.Scale {
				t.Errorf("error %#v is not the expected *ScaleError", err)
			}
		})
	}
}

func TestValidateForCurrencyInvalidCurrency(t *testing.T) {
	for _, c := range []Currency{{}, {Code: "XXX", Scale: -1}, {Code: "XXX", Scale: MaxCurrencyScale + 1}} {
		if err := ValidateForCurrency(MustParseAmount("1"), c); !errors.Is(err, ErrInvalidCurrency) {
			t.Errorf("ValidateForCurrency(1, %+v) = %v, want ErrInvalidCurrency", c, err)
		}
	}
	if err := ValidateForCurrency(MustParseAmount("1.55"), Currency{Code: "XTS", Scale: 1}); err == nil ||
		err.Error() != "XTS allows at most 1 decimal place" {
		t.Errorf("custom currency: got %v", err)
	}
}
