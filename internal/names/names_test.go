// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package names

import (
	"strings"
	"testing"
)

func TestDerive(t *testing.T) {
	tests := []struct {
		name    string
		purpose string
		parts   []string
		want    string
	}{
		// The trx_id and business ID derived before this package existed: pinned so that existing
		// payments keep their names and merchants keep their business IDs.
		{"trx_id", PurposeTrx, []string{"uid-1", "sandbox", "order-1"}, "qj33hpibayoahnbujh4loofg"},
		{"business ID", PurposeBusinessID, []string{"uid-1", "production"}, "wtpu6ifhnygzouzteeab4gxm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Derive(tt.purpose, tt.parts...); got != tt.want {
				t.Errorf("Derive(%q, %q) = %q, want %q", tt.purpose, tt.parts, got, tt.want)
			}
		})
	}
}

func TestDeriveSeparatesInputs(t *testing.T) {
	base := Derive(PurposeEvent, "uid-1", "payment.completed")
	for name, other := range map[string]string{
		"other purpose":        Derive(PurposeTrx, "uid-1", "payment.completed"),
		"other part":           Derive(PurposeEvent, "uid-1", "payment.failed"),
		"parts moved across":   Derive(PurposeEvent, "uid-1payment", ".completed"),
		"parts joined":         Derive(PurposeEvent, "uid-1payment.completed"),
		"one more empty part":  Derive(PurposeEvent, "uid-1", "payment.completed", ""),
		"purpose as a part":    Derive("", PurposeEvent, "uid-1", "payment.completed"),
		"parts in other order": Derive(PurposeEvent, "payment.completed", "uid-1"),
	} {
		if other == base {
			t.Errorf("%s: derives %q, the same as the base", name, other)
		}
	}
	if again := Derive(PurposeEvent, "uid-1", "payment.completed"); again != base {
		t.Errorf("Derive is not deterministic: %q then %q", base, again)
	}
}

func TestDeriveShape(t *testing.T) {
	for _, parts := range [][]string{nil, {""}, {"a"}, {strings.Repeat("x", 10000)}, {"ünïcode", "\t"}} {
		got := Derive(PurposeIdempotency, parts...)
		if !Valid(got) {
			t.Errorf("Derive(%q) = %q: not %d characters of %q", parts, got, Length, Alphabet)
		}
	}
}

func TestValid(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"qj33hpibayoahnbujh4loofg", true},
		{"qj33hpibayoahnbujh4loof", false},   // short
		{"qj33hpibayoahnbujh4loofgg", false}, // long
		{"QJ33HPIBAYOAHNBUJH4LOOFG", false},  // upper case
		{"qj33hpibayoahnbujh4loof1", false},  // 1 is not base32
		{"qj33hpibayoahnbujh4loof-", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := Valid(tt.in); got != tt.want {
			t.Errorf("Valid(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
