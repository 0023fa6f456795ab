// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/attempt"
	"github.com/paygate/paygate/internal/failpoint"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/provider"
)

// Refund event and condition reasons.
const (
	ReasonRefunding       = "Refunding"
	ReasonRefundStarted   = "RefundStarted"
	ReasonRefundUnknown   = "RefundOutcomeUnknown"
	ReasonRefundSucceeded = "RefundSucceeded"
	ReasonRefundFailed    = "RefundFailed"
	ReasonRefundResolved  = "RefundResolved"
	ReasonRefundAmbiguous = "RefundAmbiguous"
)

// RefundReconciler returns the money of reserved refunds to their customers (docs/refunds.md).
// The balance controller reserves a refund's amount, against the balance and against its payment
// (the single writer); this reconciler then records the refund's attempt in status (written ahead)
// and only then asks the payment's provider to refund. An attempt whose outcome is unknown is
// resolved by status queries, never by a second refund (the attempt engine's rules, as for
// payouts).
type RefundReconciler struct {
	client.Client
	// APIReader reads live (a refund the archiver deleted gets no event again); nil skips it.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Providers Providers
	Clock     clock.PassiveClock
	// PollInterval is how often a refund in flight is queried (default 2 s).
	PollInterval time.Duration
	// AmbiguousAfter is how long a refund may stay without a final answer before it asks an
	// operator (default DefaultPayoutAmbiguousAfter).
	AmbiguousAfter time.Duration
	// CallbackURL is where the upstream provider posts results.
	CallbackURL string
	// AttemptWatch is how long an attempt an operator resolved is still asked about.
	AttemptWatch time.Duration
	// FirstAttempts, when set, takes the refund's webhook events for their first attempt before their
	// deliveries are created (the webhook delivery controller's; emitOnce). Nil creates each
	// delivery at once.
	FirstAttempts *WebhookFirstAttempts
}

// refundKind gives the steps refunds share with payouts (outgoing.go) the words, reasons and
// status fields of refunds.
var refundKind = outgoingKind[*paygatev1.Refund]{
	name: "refund", operation: "refund", action: "Refund",
	resolveAnnotation: paygatev1.AnnotationResolveRefund,
	reasonAmbiguous:   ReasonRefundAmbiguous, reasonResolved: ReasonRefundResolved,
	readySucceeded: readyWords{ReasonRefundSucceeded, "Refunded"},
	readyFailed:    readyWords{ReasonRefundFailed, "Refund failed: "},
	readyInFlight:  readyWords{ReasonRefunding, "Waiting for the provider to complete the refund"},
	status:         refundStatus,
	fields: func(rf *paygatev1.Refund) outgoingStatus {
		st := &rf.Status
		return outgoingStatus{attempt: &st.Attempt, reason: &st.Reason, remark: &st.Remark, updatedAt: &st.UpdatedAt,
			conditions: &st.Conditions, observedGeneration: &st.ObservedGeneration}
	},
	setPending: func(rf *paygatev1.Refund) {
		if rf.Status.Phase == "" {
			rf.Status.Phase = paygatev1.RefundPending
		}
	},
	succeeded: func(rf *paygatev1.Refund) bool { return rf.Status.Phase == paygatev1.RefundSuccess },
}

func refundStatus(r *paygatev1.Refund) any { return &r.Status }

// +kubebuilder:rbac:groups=paygate.dev,resources=refunds,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=refunds/status,verbs=get;update;patch

// Reconcile moves one refund forward.
func (r *RefundReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	rf := &paygatev1.Refund{}
	if err := r.Get(ctx, req.NamespacedName, rf); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := newOutgoingScope(&refundKind, r.Client, r.Recorder, rf, r.Clock.Now())
	if rf.Terminal() {
		// Only Ready, the event and the watch of an attempt an operator resolved (endedPass).
		return s.endedPass(ctx, r.emitEvent, r.watchAttempt)
	}
	defer s.finish(ctx, &retErr)
	return runSteps(ctx, s, independent(r.driveAttempt, r.flagAmbiguity))
}

// driveAttempt runs the attempt engine on the refund: it refunds a reserved refund (written
// ahead), asks the provider about a refund in flight, and applies an operator's verdict
// (annotation paygate.dev/resolve-refund, read like the payouts' resolve-payout).
func (r *RefundReconciler) driveAttempt(ctx context.Context, s *refundScope) (ctrl.Result, error) {
	rf := s.obj
	a := rf.Status.Attempt
	in := s.attemptInput(r.pollInterval(), r.AttemptWatch)
	calls := r.attemptCalls(s)
	var provErr error
	switch {
	case a != nil && attemptInFlight(a.Phase):
		in.Record = disbursementRecord(a)
	case a == nil && rf.Reserved():
		in.Start = true
	default:
		return ctrl.Result{}, nil
	}
	prov, err := r.refunderFor(ctx, rf)
	switch {
	case errors.Is(err, errCannotRefund) && a == nil:
		r.fail(s, string(paygatev1.RefundNotSupported), err.Error())
		return ctrl.Result{}, nil
	case err != nil:
		provErr = err
	default:
		calls.prov = prov
	}
	return s.decide(ctx, in, calls, provErr, r.applyDecision)
}

// attemptCalls are the refund's provider calls and its write-ahead, for the engine's shell.
func (r *RefundReconciler) attemptCalls(s *refundScope) attemptCalls {
	rf := s.obj
	refunder := func(p provider.Provider) provider.Refunder { return p.(provider.Refunder) }
	return s.writingAhead(attemptCalls{
		send: func(ctx context.Context, p provider.Provider) (provider.Result, error) {
			return refunder(p).Refund(ctx, r.refundRequest(rf))
		},
		query: func(ctx context.Context, p provider.Provider) (provider.Result, error) {
			return refunder(p).RefundStatus(ctx, r.refundRequest(rf))
		},
		sent:     func() { hitFailpoint(failpoint.RefundAttemptRecorded) },
		answered: func() { hitFailpoint(failpoint.RefundProviderAnswered) },
	}, func(startedAt time.Time) {
		rf.Status.Phase = paygatev1.RefundProcessing
		rf.Status.Attempt = &paygatev1.DisbursementAttempt{Reference: rf.RefundReference(), StartedAt: *ptrTime(startedAt)}
	})
}

// applyDecision stores what the engine decided in the refund's status; what it announces waits
// for the write.
func (r *RefundReconciler) applyDecision(s *refundScope, st attemptStep) {
	rf := s.obj
	a := s.storeDecision(st)
	if a == nil {
		return
	}
	if st.sendErr != nil {
		r.Recorder.Eventf(rf, nil, corev1.EventTypeWarning, ReasonRefundUnknown, "Refund", "Refund %s", describeSendError(a.Reference, st.sendErr))
	} else if s.sent {
		r.Recorder.Eventf(rf, nil, corev1.EventTypeNormal, ReasonRefundStarted, "Refund",
			"Refunding %s %s of payment %s through %s", rf.Spec.Amount, rf.Spec.Currency, rf.Spec.Payment.TrxID, rf.Spec.Gateway)
	}
	s.applyOutcome(st.decision, r.succeed, r.fail, string(paygatev1.RefundResolvedFailed))
}

// watchAttempt keeps asking the provider about a refund an operator resolved without the
// provider's final answer (status.attempt.watchUntil), as payouts do: a final answer that
// contradicts the verdict raises LateSettlement, a Warning event and the metric, for an operator
// to reconcile.
func (r *RefundReconciler) watchAttempt(ctx context.Context, s *refundScope) (ctrl.Result, error) {
	rf := s.obj
	return s.watch(ctx, r.pollInterval(), r.AttemptWatch, r.attemptCalls(s),
		func() provider.Provider { prov, _ := r.refunderFor(ctx, rf); return prov },
		func(o attempt.Outcome, ref string) string {
			if o == attempt.OutcomeLateFailure {
				return fmt.Sprintf("The provider failed refund %s after an operator resolved it as refunded: the customer never got the money back; reconcile it", ref)
			}
			return fmt.Sprintf("The provider paid refund %s after an operator resolved it as failed: the money went back to the customer but counts as available again; reconcile it", ref)
		})
}

// flagAmbiguity raises AmbiguousTooLong when the provider has not answered finally within
// AmbiguousAfter of the send, and clears it once the refund has a final answer.
func (r *RefundReconciler) flagAmbiguity(_ context.Context, s *refundScope) (ctrl.Result, error) {
	a := s.inFlight()
	if a == nil {
		s.clearAmbiguity(ReasonAnsweredInTime, "The refund has a final answer")
		return ctrl.Result{}, nil
	}
	since := a.StartedAt
	if a.LastSentAt != nil && a.LastSentAt.After(since.Time) {
		since = *a.LastSentAt
	}
	return s.askOperator(since.Time, r.ambiguousAfter(), func() string {
		return fmt.Sprintf("The provider has not confirmed refund %s for %s; check with the provider, then annotate %s=success or failed",
			a.Reference, r.ambiguousAfter(), paygatev1.AnnotationResolveRefund)
	}), nil
}

func (r *RefundReconciler) succeed(s *refundScope) {
	rf := s.obj
	rf.Status.Phase, rf.Status.Reason = paygatev1.RefundSuccess, ""
	s.patch.OnWrite(func() {
		r.Recorder.Eventf(rf, nil, corev1.EventTypeNormal, ReasonRefundSucceeded, "Refund", "Refunded %s %s of payment %s",
			rf.Spec.Amount, rf.Spec.Currency, rf.Spec.Payment.TrxID)
	})
}

// fail ends the refund with code; its reservation stops counting, which releases it.
func (r *RefundReconciler) fail(s *refundScope, code, why string) {
	rf := s.obj
	rf.Status.Phase, rf.Status.Reason = paygatev1.RefundFailed, code
	s.patch.OnWrite(func() {
		r.Recorder.Eventf(rf, nil, corev1.EventTypeWarning, ReasonRefundFailed, "Refund", "Refund failed with %s: %s", code, why)
	})
}

func (r *RefundReconciler) refundRequest(rf *paygatev1.Refund) provider.RefundRequest {
	a := rf.Status.Attempt
	return provider.RefundRequest{
		Reference: a.Reference, Payment: rf.Spec.Payment.AttemptReference, PaymentProvider: rf.Spec.Payment.ProviderReference,
		PaymentReceipt: rf.Spec.Payment.Receipt, PaymentAmount: string(rf.Spec.Payment.Amount),
		Full:  sameAmount(rf.Spec.Amount, rf.Spec.Payment.Amount),
		Phone: string(rf.Spec.Destination), Amount: string(rf.Spec.Amount), Currency: string(rf.Spec.Currency),
		Gateway: string(rf.Spec.Gateway), CallbackURL: r.CallbackURL, StartedAt: a.StartedAt.Time, ProviderReference: a.ProviderReference,
	}
}

// errCannotRefund: the refund's gateway no longer has a provider that refunds.
var errCannotRefund = errors.New("the payment's provider cannot refund")

// refunderFor is the provider of the refund's gateway, which must refund.
func (r *RefundReconciler) refunderFor(ctx context.Context, rf *paygatev1.Refund) (provider.Provider, error) {
	prov, err := gatewayProvider(ctx, r.Client, r.Providers, rf.Spec.Gateway, rf.Spec.Environment)
	if err != nil {
		return nil, err
	}
	if _, ok := prov.(provider.Refunder); !ok {
		return nil, fmt.Errorf("gateway %s: %w", rf.Spec.Gateway, errCannotRefund)
	}
	return prov, nil
}

func (r *RefundReconciler) pollInterval() time.Duration {
	return orDefault(r.PollInterval, defaultPollInterval)
}

func (r *RefundReconciler) ambiguousAfter() time.Duration {
	return orDefault(r.AmbiguousAfter, DefaultPayoutAmbiguousAfter)
}

// emitEvent counts the ended refund once (paygate_refunds_total), where its outcome is first
// stored; its webhook event is born here too (refundWebhook).
func (r *RefundReconciler) emitEvent(ctx context.Context, rf *paygatev1.Refund) error {
	env, phase, reason := string(rf.Spec.Environment), string(rf.Status.Phase), rf.Status.Reason
	return r.refundWebhook(ctx, rf, func() { metrics.Refunds.WithLabelValues(env, phase, reason).Inc() })
}

// SetupWithManager watches Refunds and their events.
func (r *RefundReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.Refund{}).
		Owns(&paygatev1.WebhookDelivery{}).
		WithOptions(controllerOptions(4)).
		Named("refund").
		Complete(quietConflicts(r))
}
