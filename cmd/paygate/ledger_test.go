// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"

	"github.com/paygate/paygate/controllers"
)

// TestPrintLedgerCheck: the check's report names what it read, lists every difference (refunds'
// included) and exits 1 on one, 0 without.
func TestPrintLedgerCheck(t *testing.T) {
	refunded := controllers.LedgerDifference{Namespace: "shop", Merchant: "duka", Environment: "sandbox", Currency: "TZS",
		Field: "refunded", Stored: "100.00", Computed: "250.00"}
	tests := []struct {
		name     string
		res      controllers.LedgerCheck
		archived bool
		wantCode int
		want     []string
	}{
		{
			name:     "no difference, live objects only",
			res:      controllers.LedgerCheck{Balances: 2},
			wantCode: 0,
			want:     []string{"Checked 2 balances against the live payments, payouts and refunds only", "No difference."},
		},
		{
			name:     "a refunded amount differs, with the archive",
			res:      controllers.LedgerCheck{Balances: 1, CarriedForward: 3, Differences: []controllers.LedgerDifference{refunded}},
			archived: true,
			wantCode: 1,
			want: []string{"the archive (3 carried-forward entries) and the live payments, payouts and refunds",
				"shop", "duka", "refunded", "100.00", "250.00", "1 differences."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			if code := printLedgerCheck(&out, tt.res, tt.archived); code != tt.wantCode {
				t.Errorf("exit status %d, want %d", code, tt.wantCode)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output does not contain %q:\n%s", w, out.String())
				}
			}
		})
	}
}
