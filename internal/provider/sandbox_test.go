// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"context"
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

// TestSandboxAnswersFromTheRecord: every answer is a function of the recorded request and the
// clock, so a second simulator (a restarted manager, a new leader) that never saw the push or
// the disbursement answers exactly as the first.
func TestSandboxAnswersFromTheRecord(t *testing.T) {
	ctx := context.Background()
	started := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	now := started
	clock := func() time.Time { return now }
	opts := SandboxOptions{Clock: clock, SlowAfter: 20 * time.Second, AmbiguousFor: 5 * time.Second}
	first, restarted := NewSandbox(opts), NewSandbox(opts)
	type answer struct {
		status Status
		code   paygatev1.FailureCode
	}
	tests := []struct {
		name   string
		push   *PushRequest
		payout *DisbursementRequest
		// at start, 6 s later (past AmbiguousFor), 21 s later (past SlowAfter)
		want [3]answer
	}{
		{"ordinary number", &PushRequest{Phone: "+255712345678"}, nil, [3]answer{{StatusSuccess, ""}, {StatusSuccess, ""}, {StatusSuccess, ""}}},
		{"insufficient funds", &PushRequest{Phone: "+255711000001"}, nil, [3]answer{{StatusFailed, paygatev1.FailureInsufficientFunds}, {StatusFailed, paygatev1.FailureInsufficientFunds}, {StatusFailed, paygatev1.FailureInsufficientFunds}}},
		{"declined", &PushRequest{Phone: "+255711000002"}, nil, [3]answer{{StatusFailed, paygatev1.FailurePaymentDeclined}, {StatusFailed, paygatev1.FailurePaymentDeclined}, {StatusFailed, paygatev1.FailurePaymentDeclined}}},
		{"cancelled", &PushRequest{Phone: "+254711000003"}, nil, [3]answer{{StatusFailed, paygatev1.FailureCustomerCancelled}, {StatusFailed, paygatev1.FailureCustomerCancelled}, {StatusFailed, paygatev1.FailureCustomerCancelled}}},
		{"no answer", &PushRequest{Phone: "+255711000004"}, nil, [3]answer{{StatusPending, ""}, {StatusPending, ""}, {StatusPending, ""}}},
		{"slow", &PushRequest{Phone: "+255711000005"}, nil, [3]answer{{StatusPending, ""}, {StatusPending, ""}, {StatusSuccess, ""}}},
		{"ambiguous", &PushRequest{Phone: "+255711000009"}, nil, [3]answer{{StatusAmbiguous, ""}, {StatusSuccess, ""}, {StatusSuccess, ""}}},
		// The payable amount (after the payout fee) does not choose; the requested amount does.
		{"payout", nil, &DisbursementRequest{Amount: "4950.00", RequestedAmount: "5000.00"}, [3]answer{{StatusSuccess, ""}, {StatusSuccess, ""}, {StatusSuccess, ""}}},
		{"payout to an invalid account", nil, &DisbursementRequest{Amount: "4950.00", RequestedAmount: "1001.00"}, [3]answer{{StatusFailed, paygatev1.FailureInvalidAccount}, {StatusFailed, paygatev1.FailureInvalidAccount}, {StatusFailed, paygatev1.FailureInvalidAccount}}},
		{"payout declined", nil, &DisbursementRequest{RequestedAmount: "1002.00"}, [3]answer{{StatusFailed, paygatev1.FailurePaymentDeclined}, {StatusFailed, paygatev1.FailurePaymentDeclined}, {StatusFailed, paygatev1.FailurePaymentDeclined}}},
		{"payout never answered", nil, &DisbursementRequest{RequestedAmount: "1004.00"}, [3]answer{{StatusPending, ""}, {StatusPending, ""}, {StatusPending, ""}}},
		{"slow payout", nil, &DisbursementRequest{RequestedAmount: "1005.00"}, [3]answer{{StatusPending, ""}, {StatusPending, ""}, {StatusSuccess, ""}}},
		{"ambiguous payout", nil, &DisbursementRequest{RequestedAmount: "1009.00"}, [3]answer{{StatusAmbiguous, ""}, {StatusSuccess, ""}, {StatusSuccess, ""}}},
	}
	for _, tt := range tests {
		ref := "ns." + tt.name + ".1"
		ask := func(sb *Sandbox) (Result, error) {
			if tt.push != nil {
				req := *tt.push
				req.Reference, req.StartedAt = ref, started
				return sb.PushStatus(ctx, req)
			}
			req := *tt.payout
			req.Reference, req.StartedAt = ref, started
			return sb.DisbursementStatus(ctx, req)
		}
		// The first simulator receives the operation; the restarted one never does.
		var res Result
		var err error
		if tt.push != nil {
			res, err = first.Push(ctx, PushRequest{Reference: ref, Phone: tt.push.Phone})
		} else {
			res, err = first.Disburse(ctx, DisbursementRequest{Reference: ref, RequestedAmount: tt.payout.RequestedAmount})
		}
		if err != nil || res.Status != StatusPending || res.Remark != SandboxRemark || res.ProviderReference != "sbx-"+ref {
			t.Fatalf("%s: accepted as %+v, %v", tt.name, res, err)
		}
		for i, at := range []time.Duration{0, 6 * time.Second, 21 * time.Second} {
			now = started.Add(at)
			for _, sb := range []*Sandbox{first, restarted} {
				res, err := ask(sb)
				if err != nil || res.Status != tt.want[i].status || res.Code != tt.want[i].code || res.Remark != SandboxRemark {
					t.Errorf("%s at +%s: %+v, %v; want %s %s", tt.name, at, res, err, tt.want[i].status, tt.want[i].code)
				}
			}
		}
		now = started
	}
	if first.Pushes("ns.ordinary number.1") != 1 || restarted.Pushes("ns.ordinary number.1") != 0 || first.Disbursements("ns.payout.1") != 1 {
		t.Error("the simulator counts the calls it received, per process")
	}
	if first.Pushes("ns.payout.1") != 0 {
		t.Error("a disbursement counted as a push")
	}
}

func TestSandboxApproveAfter(t *testing.T) {
	started := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	now := started.Add(9 * time.Second)
	sb := NewSandbox(SandboxOptions{Clock: func() time.Time { return now }, ApproveAfter: 10 * time.Second})
	req := PushRequest{Reference: "ns.trx.1", Phone: "+255712345678", StartedAt: started}
	if res, _ := sb.PushStatus(context.Background(), req); res.Status != StatusPending {
		t.Errorf("before ApproveAfter: %s, want PENDING", res.Status)
	}
	now = started.Add(10 * time.Second)
	if res, _ := sb.PushStatus(context.Background(), req); res.Status != StatusSuccess {
		t.Errorf("at ApproveAfter: %s, want SUCCESS", res.Status)
	}
}
