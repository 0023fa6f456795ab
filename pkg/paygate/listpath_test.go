// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package paygate

import "testing"

func TestListPath(t *testing.T) {
	for _, tc := range []struct {
		name          string
		limit, offset int
		filters       []string
		want          string
	}{
		{"no paging, no filter", 0, 0, nil, "/api/v1/payouts"},
		{"paging", 5, 10, nil, "/api/v1/payouts?limit=5&offset=10"},
		{"empty filters are left out", 0, 0, []string{"status", "", "merchant_ref", "order 1/2"}, "/api/v1/payouts?merchant_ref=order+1%2F2"},
		{"filters and paging, sorted", 20, 0, []string{"subscription", "sub_x", "status", "paid"}, "/api/v1/payouts?limit=20&status=paid&subscription=sub_x"},
	} {
		if got := listPath("/api/v1/payouts", tc.limit, tc.offset, tc.filters...); got != tc.want {
			t.Errorf("%s: listPath = %q, want %q", tc.name, got, tc.want)
		}
	}
}
