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
	// AmbiguousQueries is how many status queries the ambiguous number answers AMBIGUOUS
	// (default 2).
	AmbiguousQueries int
}

// Sandbox simulates the provider in process: no money moves. It remembers operations in memory,
// so after a restart it has none and status queries answer ErrNotFound (the caller then pushes
// again with the same reference, which is safe: the first push never reached it).
type Sandbox struct {
	opts SandboxOptions
	mu   sync.Mutex
	ops  map[string]*sandboxOp
	// pushes counts Push and Disburse calls by kind and reference, for tests.
	pushes map[string]int
}

type sandboxOp struct {
	at      time.Time
	magic   string // a Magic* value, or "" for the ordinary outcome
	queries int
}

// NewSandbox returns a simulator.
func NewSandbox(opts SandboxOptions) *Sandbox {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.SlowAfter == 0 {
		opts.SlowAfter = 20 * time.Second
	}
	if opts.AmbiguousQueries == 0 {
		opts.AmbiguousQueries = 2
	}
	return &Sandbox{opts: opts, ops: map[string]*sandboxOp{}, pushes: map[string]int{}}
}

// start records an operation; magicKey (a Magic* value or "") chooses its outcome.
func (s *Sandbox) start(kind, reference, magicKey string) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := kind + "/" + reference
	s.pushes[key]++
	if _, ok := s.ops[key]; !ok {
		s.ops[key] = &sandboxOp{at: s.opts.Clock(), magic: magicKey}
	}
	return Result{Status: StatusPending, ProviderReference: "sbx-" + reference, Remark: SandboxRemark}
}

func (s *Sandbox) status(kind, reference string) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	op, ok := s.ops[kind+"/"+reference]
	if !ok {
		return Result{}, ErrNotFound
	}
	op.queries++
	res := Result{Status: StatusSuccess, ProviderReference: "sbx-" + reference, Remark: SandboxRemark}
	elapsed := s.opts.Clock().Sub(op.at)
	switch op.magic {
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
		if op.queries <= s.opts.AmbiguousQueries {
			res.Status = StatusAmbiguous
		}
	default:
		if elapsed < s.opts.ApproveAfter {
			res.Status = StatusPending
		}
	}
	return res, nil
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
func (s *Sandbox) Push(_ context.Context, req PushRequest) (Result, error) {
	return s.start("push", req.Reference, magic(strings.TrimSpace(req.Phone))), nil
}

// PushStatus reports a simulated push.
func (s *Sandbox) PushStatus(_ context.Context, reference string) (Result, error) {
	return s.status("push", reference)
}

// Disburse simulates a payout.
func (s *Sandbox) Disburse(_ context.Context, req DisbursementRequest) (Result, error) {
	return s.start("disburse", req.Reference, PayoutMagic(req.RequestedAmount)), nil
}

// DisbursementStatus reports a simulated payout.
func (s *Sandbox) DisbursementStatus(_ context.Context, reference string) (Result, error) {
	return s.status("disburse", reference)
}

// Pushes is how many Push calls the simulator received for reference.
func (s *Sandbox) Pushes(reference string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushes["push/"+reference]
}

// Disbursements is how many Disburse calls the simulator received for reference.
func (s *Sandbox) Disbursements(reference string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushes["disburse/"+reference]
}

// Forget drops every operation, as a restart of the simulator would.
func (s *Sandbox) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = map[string]*sandboxOp{}
}
