// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"context"
	"errors"
	"testing"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

func TestPayoutMagic(t *testing.T) {
	tests := []struct {
		amount string
		want   string
	}{
		{"1001.00", MagicInvalidAccount},
		{"1001", MagicInvalidAccount},
		{"25001.50", MagicInvalidAccount},
		{"1002.00", MagicDeclined},
		{"1004.00", MagicNoAnswer},
		{"1005.00", MagicSlowSuccess},
		{"1009.00", MagicAmbiguous},
		{"1009.99", MagicAmbiguous}, // the whole part chooses
		{"1003.00", ""},             // cancelling is a customer's answer to a push, not a payout outcome
		{"1006.00", ""},
		{"1000.01", ""},
		{"1010.00", ""},
		{"1091.00", ""}, // the last three digits, not the last one
		{"11.00", ""},   // too short to carry three digits
		{"9", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := PayoutMagic(tt.amount); got != tt.want {
			t.Errorf("PayoutMagic(%q) = %q, want %q", tt.amount, got, tt.want)
		}
	}
}

func TestSandboxDisbursement(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	sb := NewSandbox(SandboxOptions{Clock: func() time.Time { return now }, SlowAfter: 20 * time.Second, AmbiguousQueries: 2})
	tests := []struct {
		amount string
		// answers are the statuses of the first three status queries.
		answers [3]Status
		code    paygatev1.FailureCode
	}{
		{"5000.00", [3]Status{StatusSuccess, StatusSuccess, StatusSuccess}, ""},
		{"1001.00", [3]Status{StatusFailed, StatusFailed, StatusFailed}, paygatev1.FailureInvalidAccount},
		{"1002.00", [3]Status{StatusFailed, StatusFailed, StatusFailed}, paygatev1.FailurePaymentDeclined},
		{"1004.00", [3]Status{StatusPending, StatusPending, StatusPending}, ""},
		{"1005.00", [3]Status{StatusPending, StatusPending, StatusPending}, ""},
		{"1009.00", [3]Status{StatusAmbiguous, StatusAmbiguous, StatusSuccess}, ""},
	}
	for _, tt := range tests {
		ref := "ns.payout-" + tt.amount
		if _, err := sb.DisbursementStatus(ctx, ref); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: status before the disbursement = %v, want ErrNotFound", tt.amount, err)
		}
		// The payable amount (after the payout fee) does not choose; the requested amount does.
		res, err := sb.Disburse(ctx, DisbursementRequest{Reference: ref, Phone: "+255712345678", Amount: "4950.00", RequestedAmount: tt.amount, Currency: "TZS"})
		if err != nil || res.Status != StatusPending || res.Remark != SandboxRemark {
			t.Fatalf("%s: Disburse = %+v, %v", tt.amount, res, err)
		}
		for i, want := range tt.answers {
			res, err := sb.DisbursementStatus(ctx, ref)
			if err != nil || res.Status != want || res.Remark != SandboxRemark {
				t.Errorf("%s: status query %d = %+v, %v; want %s", tt.amount, i+1, res, err, want)
			}
			if want == StatusFailed && res.Code != tt.code {
				t.Errorf("%s: code = %s, want %s", tt.amount, res.Code, tt.code)
			}
		}
		// A repeat with the same reference is the same disbursement.
		if _, err := sb.Disburse(ctx, DisbursementRequest{Reference: ref, RequestedAmount: "5000.00"}); err != nil {
			t.Fatal(err)
		}
		if n := sb.Disbursements(ref); n != 2 {
			t.Errorf("%s: Disbursements = %d, want 2 calls", tt.amount, n)
		}
	}
	// The slow one succeeds once SlowAfter has passed.
	now = now.Add(21 * time.Second)
	if res, _ := sb.DisbursementStatus(ctx, "ns.payout-1005.00"); res.Status != StatusSuccess {
		t.Errorf("slow payout after SlowAfter: %s, want SUCCESS", res.Status)
	}
	// A repeated disbursement kept the outcome of the first.
	if res, _ := sb.DisbursementStatus(ctx, "ns.payout-1001.00"); res.Status != StatusFailed {
		t.Errorf("repeated disbursement changed the outcome to %s", res.Status)
	}
	if sb.Pushes("ns.payout-5000.00") != 0 {
		t.Error("a disbursement counted as a push")
	}
}
