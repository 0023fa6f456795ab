// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"context"
	"strings"
	"sync"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// SandboxRemark marks every sandbox transaction (docs/sandbox.md).
const SandboxRemark = "SANDBOX_TRANSACTION"

// Magic customer numbers: a sandbox push to a mobile number whose last six digits are one of these
// gets the outcome listed (docs/sandbox.md). Every other number succeeds. Payouts choose these
// outcomes by amount instead (PayoutMagic).
const (
	MagicInsufficientFunds = "000001"
	MagicDeclined          = "000002"
	MagicCustomerCancelled = "000003"
	MagicNoAnswer          = "000004" // stays pending: the payment expires
	MagicInvalidAccount    = "000006" // fails: the wallet cannot receive (INVALID_ACCOUNT)
	MagicSlowSuccess       = "000005" // succeeds after SandboxOptions.SlowAfter
	MagicAmbiguous         = "000009" // AMBIGUOUS for the first AmbiguousQueries status queries, then success
)

// SandboxOptions tune the simulator.
type SandboxOptions struct {
	// Clock is the simulator's time source.
	Clock func() time.Time
	// ApproveAfter is how long an ordinary customer takes to approve (default 0: at the first
	// status query).
	ApproveAfter time.Duration
	// SlowAfter is how long the slow-success number takes (default 20 s).
	SlowAfter time.Duration
	// AmbiguousFor is how long the ambiguous number answers AMBIGUOUS after the attempt started
	// (default 5 s), then SUCCESS.
	AmbiguousFor time.Duration
}

// Sandbox simulates the provider in process: no money moves. It keeps no state that matters:
// every answer is a function of what the caller recorded about the operation (its reference,
// the customer's number or the payout amount, and when the attempt started) and of the clock, so
// any process, a restarted manager or a new leader, answers the same about the same attempt
// (docs/sandbox.md, Restarts). It treats every recorded attempt as received. It counts the calls
// it receives, per process, for tests.
type Sandbox struct {
	opts SandboxOptions
	mu   sync.Mutex
	// calls counts Push and Disburse calls by kind and reference, for tests.
	calls map[string]int
}

// NewSandbox returns a simulator.
func NewSandbox(opts SandboxOptions) *Sandbox {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.SlowAfter == 0 {
		opts.SlowAfter = 20 * time.Second
	}
	if opts.AmbiguousFor == 0 {
		opts.AmbiguousFor = 5 * time.Second
	}
	return &Sandbox{opts: opts, calls: map[string]int{}}
}

// start counts an operation; it is accepted, as the simulator's customers always get the prompt.
func (s *Sandbox) start(kind, reference string) Result {
	s.mu.Lock()
	s.calls[kind+"/"+reference]++
	s.mu.Unlock()
	return Result{Status: StatusPending, ProviderReference: "sbx-" + reference, Remark: SandboxRemark}
}

// outcome is the simulator's answer about an operation that started at startedAt and whose
// outcome magicKey (a Magic* value or "") chooses.
func (s *Sandbox) outcome(reference, magicKey string, startedAt time.Time) Result {
	res := Result{Status: StatusSuccess, ProviderReference: "sbx-" + reference, Remark: SandboxRemark}
	elapsed := s.opts.Clock().Sub(startedAt)
	switch magicKey {
	case MagicInsufficientFunds:
		res.Status, res.Code = StatusFailed, paygatev1.FailureInsufficientFunds
	case MagicDeclined:
		res.Status, res.Code = StatusFailed, paygatev1.FailurePaymentDeclined
	case MagicCustomerCancelled:
		res.Status, res.Code = StatusFailed, paygatev1.FailureCustomerCancelled
	case MagicInvalidAccount:
		res.Status, res.Code = StatusFailed, paygatev1.FailureInvalidAccount
	case MagicNoAnswer:
		res.Status = StatusPending
	case MagicSlowSuccess:
		if elapsed < s.opts.SlowAfter {
			res.Status = StatusPending
		}
	case MagicAmbiguous:
		if elapsed < s.opts.AmbiguousFor {
			res.Status = StatusAmbiguous
		}
	default:
		if elapsed < s.opts.ApproveAfter {
			res.Status = StatusPending
		}
	}
	return res
}

func magic(phone string) string {
	if len(phone) < 6 {
		return ""
	}
	return phone[len(phone)-6:]
}

// Magic payout amounts: a sandbox payout whose amount's whole part ends in one of these three
// digits gets the outcome of the magic number listed (the settlement number is fixed, so the
// amount chooses; docs/payouts.md). Every other amount succeeds.
var payoutMagic = map[string]string{
	"001": MagicInvalidAccount,
	"002": MagicDeclined,
	"004": MagicNoAnswer,
	"005": MagicSlowSuccess,
	"009": MagicAmbiguous,
}

// PayoutMagic is the outcome a sandbox disbursement of amount (a decimal string) gets: a Magic*
// value, or "" for success.
func PayoutMagic(amount string) string {
	whole, _, _ := strings.Cut(amount, ".")
	if len(whole) < 3 {
		return ""
	}
	return payoutMagic[whole[len(whole)-3:]]
}

// Push simulates a USSD push.
// Capabilities: the simulator performs one operation per reference.
func (s *Sandbox) Capabilities() Capabilities { return Capabilities{Deduplicates: true} }

func (s *Sandbox) Push(_ context.Context, req PushRequest) (Result, error) {
	return s.start("push", req.Reference), nil
}

// PushStatus reports a simulated push from the request the attempt recorded.
func (s *Sandbox) PushStatus(_ context.Context, req PushRequest) (Result, error) {
	return s.outcome(req.Reference, magic(strings.TrimSpace(req.Phone)), req.StartedAt), nil
}

// Disburse simulates a payout.
func (s *Sandbox) Disburse(_ context.Context, req DisbursementRequest) (Result, error) {
	return s.start("disburse", req.Reference), nil
}

// DisbursementStatus reports a simulated payout from the request the attempt recorded.
func (s *Sandbox) DisbursementStatus(_ context.Context, req DisbursementRequest) (Result, error) {
	return s.outcome(req.Reference, PayoutMagic(req.RequestedAmount), req.StartedAt), nil
}

// RefundScope: the simulator refunds any amount, in several refunds (docs/sandbox.md).
func (s *Sandbox) RefundScope() RefundScope { return RefundsPartial }

// Refund simulates a refund. Its outcome is chosen by the refund's amount, with the payout
// amounts' table (PayoutMagic): the whole part ending in 001 or 002 fails, 004 never answers, 005
// is slow, 009 is ambiguous for a while; every other amount succeeds.
func (s *Sandbox) Refund(_ context.Context, req RefundRequest) (Result, error) {
	return s.start("refund", req.Reference), nil
}

// RefundStatus reports a simulated refund from the request the attempt recorded.
func (s *Sandbox) RefundStatus(_ context.Context, req RefundRequest) (Result, error) {
	return s.outcome(req.Reference, PayoutMagic(req.Amount), req.StartedAt), nil
}

// Refunds is how many Refund calls this simulator received for reference.
func (s *Sandbox) Refunds(reference string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls["refund/"+reference]
}

// Pushes is how many Push calls this simulator received for reference.
func (s *Sandbox) Pushes(reference string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls["push/"+reference]
}

// Disbursements is how many Disburse calls this simulator received for reference.
func (s *Sandbox) Disbursements(reference string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls["disburse/"+reference]
}
