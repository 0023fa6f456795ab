// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1_test

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
)

// currencyEnumMarker returns the values of the +kubebuilder:validation:Enum marker in the comment
// block directly above "type CurrencyCode string" in common_types.go.
func currencyEnumMarker(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("common_types.go")
	if err != nil {
		t.Fatalf("reading common_types.go: %v", err)
	}
	const marker = "// +kubebuilder:validation:Enum="
	var values []string
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, marker):
			values = strings.Split(strings.TrimPrefix(line, marker), ";")
		case strings.HasPrefix(line, "//"):
			// Still in a comment block.
		case line == "type CurrencyCode string":
			if values == nil {
				t.Fatalf("no %q marker directly above type CurrencyCode", marker)
			}
			return values
		default:
			values = nil // The marker belongs to another declaration.
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scanning common_types.go: %v", err)
	}
	t.Fatalf("type CurrencyCode string not found in common_types.go")
	return nil
}

// TestCurrencyCodeEnumMatchesMoneyTable keeps the CRD enum of CurrencyCode and the money
// package's currency table in step: a currency the CRD accepts must have a known scale, and a
// currency the money package knows should be accepted.
func TestCurrencyCodeEnumMatchesMoneyTable(t *testing.T) {
	enum := currencyEnumMarker(t)
	want := money.CurrencyCodes()

	for i, v := range enum {
		if v == "" || strings.TrimSpace(v) != v {
			t.Errorf("enum value %d is %q: empty or padded with whitespace", i, v)
		}
	}
	if !slices.IsSorted(enum) {
		t.Errorf("enum values are not sorted: %v", enum)
	}
	if len(slices.Compact(slices.Clone(enum))) != len(enum) {
		t.Errorf("enum values repeat: %v", enum)
	}
	for _, v := range enum {
		if _, ok := money.LookupCurrency(v); !ok {
			t.Errorf("enum has %q, which internal/money does not know", v)
		}
	}
	for _, v := range want {
		if !slices.Contains(enum, v) {
			t.Errorf("internal/money knows %q, which the CurrencyCode enum lacks", v)
		}
	}
	if !slices.Equal(enum, want) {
		t.Errorf("CurrencyCode enum = %v\nmoney.CurrencyCodes() = %v", enum, want)
	}
}

func TestIDClaimName(t *testing.T) {
	tests := []struct {
		kind paygatev1.IDClaimKind
		n    int64
		want string
	}{
		{paygatev1.IDClaimMerchant, 1, "merchant-1"},
		{paygatev1.IDClaimMerchant, 12, "merchant-12"},
		{paygatev1.IDClaimGateway, 1, "gateway-1"},
		{paygatev1.IDClaimGateway, 9007199254740993, "gateway-9007199254740993"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := paygatev1.IDClaimName(tt.kind, tt.n); got != tt.want {
				t.Errorf("IDClaimName(%q, %d) = %q, want %q", tt.kind, tt.n, got, tt.want)
			}
		})
	}

	t.Run("kinds do not collide", func(t *testing.T) {
		if paygatev1.IDClaimName(paygatev1.IDClaimGateway, 7) == paygatev1.IDClaimName(paygatev1.IDClaimMerchant, 7) {
			t.Errorf("gateway and merchant id 7 share a claim name")
		}
	})
}
