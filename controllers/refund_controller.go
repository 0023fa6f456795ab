// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

type refundScope struct {
	refund *paygatev1.Refund
	patch  *statusPatch[*paygatev1.Refund]
	now    time.Time
	sent   bool
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
	patch := newStatusPatch(r.Client, rf, refundStatus)
	s := &refundScope{refund: rf, patch: patch, now: r.Clock.Now()}
	if rf.Terminal() {
		summarizeRefund(rf, nil)
		if err := patch.Patch(ctx, rf); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("patching refund status: %w", err))
		}
		if err := r.emitEvent(ctx, rf); err != nil {
			return ctrl.Result{}, err
		}
		return r.watchAttempt(ctx, s)
	}
	defer func() {
		summarizeRefund(rf, retErr)
		if patch.Changed(rf) {
			rf.Status.UpdatedAt = ptrTime(s.now)
		}
		if err := patch.Patch(ctx, rf); err != nil {
			retErr = errors.Join(retErr, client.IgnoreNotFound(fmt.Errorf("patching refund status: %w", err)))
		}
	}()
	return runSteps(ctx, s, independent(r.driveAttempt, r.flagAmbiguity))
}

// summarizeRefund sets Ready and observedGeneration from what the pass did.
func summarizeRefund(rf *paygatev1.Refund, reconcileErr error) {
	if rf.Status.Phase == "" {
		rf.Status.Phase = paygatev1.RefundPending
	}
	status, reason, msg := metav1.ConditionFalse, ReasonAwaitingReservation, "Waiting for the balance to reserve the amount"
	switch a := rf.Status.Attempt; {
	case rf.Status.Phase == paygatev1.RefundSuccess:
		status, reason, msg = metav1.ConditionTrue, ReasonRefundSucceeded, "Refunded"
	case rf.Status.Phase == paygatev1.RefundFailed:
		reason, msg = ReasonRefundFailed, "Refund failed: "+rf.Status.Reason
	case a != nil && a.Phase == paygatev1.AttemptAmbiguous:
		status, reason, msg = metav1.ConditionUnknown, ReasonAttemptAmbiguous, "The provider cannot tell yet whether money moved; asking again"
	case a != nil:
		reason, msg = ReasonRefunding, "Waiting for the provider to complete the refund"
	}
	if reconcileErr != nil && !rf.Terminal() {
		reason, msg = failureReason(reconcileErr)
	}
	setReady(&rf.Status.Conditions, rf.Generation, status, reason, msg)
	if reconcileErr == nil {
		rf.Status.ObservedGeneration = rf.Generation
	}
}

// driveAttempt runs the attempt engine on the refund: it refunds a reserved refund (written
// ahead), asks the provider about a refund in flight, and applies an operator's verdict
// (annotation paygate.dev/resolve-refund, read like the payouts' resolve-payout).
func (r *RefundReconciler) driveAttempt(ctx context.Context, s *refundScope) (ctrl.Result, error) {
	rf := s.refund
	a := rf.Status.Attempt
	in := attempt.Input{Now: s.now, Poll: r.pollInterval(), Watch: r.AttemptWatch,
		OperatorAsked: meta.IsStatusConditionTrue(rf.Status.Conditions, paygatev1.ConditionAmbiguousTooLong)}
	if raw := rf.Annotations[paygatev1.AnnotationResolveRefund]; raw != "" {
		if v, ok := ParsePayoutVerdict(raw); ok {
			in.Verdict = &v
		} else if a != nil && attemptInFlight(a.Phase) {
			r.Recorder.Eventf(rf, nil, corev1.EventTypeWarning, ReasonRefundAmbiguous, "Resolve",
				"Ignoring %s=%q: use success or failed, followed by /<send> once the refund was sent more than once", paygatev1.AnnotationResolveRefund, raw)
		}
	}
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
	st, err := runAttempt(ctx, in, calls)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.applyDecision(s, st)
	if st.providerErr != nil {
		provErr = errors.Join(provErr, asProviderError(fmt.Errorf("asking the provider about refund %s: %w", rf.Status.Attempt.Reference, st.providerErr)))
	}
	if rf.Terminal() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: st.decision.RetryAfter}, provErr
}

// attemptCalls are the refund's provider calls and its write-ahead, for the engine's shell.
func (r *RefundReconciler) attemptCalls(s *refundScope) attemptCalls {
	rf := s.refund
	refunder := func(p provider.Provider) provider.Refunder { return p.(provider.Refunder) }
	return attemptCalls{
		send: func(ctx context.Context, p provider.Provider) (provider.Result, error) {
			return refunder(p).Refund(ctx, r.refundRequest(rf))
		},
		query: func(ctx context.Context, p provider.Provider) (provider.Result, error) {
			return refunder(p).RefundStatus(ctx, r.refundRequest(rf))
		},
		writeAhead: func(ctx context.Context, rec attempt.Record) error {
			if rf.Status.Attempt == nil {
				rf.Status.Phase = paygatev1.RefundProcessing
				rf.Status.Attempt = &paygatev1.DisbursementAttempt{Reference: rf.RefundReference(), StartedAt: *ptrTime(rec.StartedAt)}
			}
			a := rf.Status.Attempt
			storeRecord(rec, s.now, &a.Phase, &a.Code, &a.Sends, &a.LastSentAt, &a.WatchUntil, &a.FinishedAt)
			rf.Status.UpdatedAt = ptrTime(s.now)
			if err := s.patch.Patch(ctx, rf); err != nil {
				return fmt.Errorf("recording refund %s: %w", a.Reference, err)
			}
			s.sent = true
			return nil
		},
		recorded: func() (provider.Result, bool) {
			if a := rf.Status.Attempt; a != nil {
				return recordedCallback(rf.Annotations, a.Reference)
			}
			return provider.Result{}, false
		},
		sent:     func() { hitFailpoint(failpoint.RefundAttemptRecorded) },
		answered: func() { hitFailpoint(failpoint.RefundProviderAnswered) },
	}
}

// applyDecision stores what the engine decided in the refund's status; what it announces waits
// for the write.
func (r *RefundReconciler) applyDecision(s *refundScope, st attemptStep) {
	rf, d := s.refund, st.decision
	a := rf.Status.Attempt
	if a == nil {
		return
	}
	storeRecord(d.Record, s.now, &a.Phase, &a.Code, &a.Sends, &a.LastSentAt, &a.WatchUntil, &a.FinishedAt)
	if st.hasResult {
		if st.result.ProviderReference != "" {
			a.ProviderReference = st.result.ProviderReference
		}
		if st.result.Remark != "" {
			rf.Status.Remark = st.result.Remark
		}
	}
	if (a.Phase == paygatev1.AttemptPending || a.Phase == paygatev1.AttemptAmbiguous) && a.AmbiguousSince == nil {
		a.AmbiguousSince = ptrTime(s.now)
	}
	if st.sendErr != nil {
		r.Recorder.Eventf(rf, nil, corev1.EventTypeWarning, ReasonRefundUnknown, "Refund", "Refund %s", describeSendError(a.Reference, st.sendErr))
	} else if s.sent {
		r.Recorder.Eventf(rf, nil, corev1.EventTypeNormal, ReasonRefundStarted, "Refund",
			"Refunding %s %s of payment %s through %s", rf.Spec.Amount, rf.Spec.Currency, rf.Spec.Payment.TrxID, rf.Spec.Gateway)
	}
	switch d.Outcome {
	case attempt.OutcomeSucceeded:
		r.succeed(s)
	case attempt.OutcomeFailed:
		r.fail(s, d.Code, "the provider reported "+d.Code)
	case attempt.OutcomeResolvedSuccess, attempt.OutcomeResolvedFailed:
		verdict := "success"
		if d.Outcome == attempt.OutcomeResolvedSuccess {
			r.succeed(s)
		} else {
			verdict = "failed"
			r.fail(s, string(paygatev1.RefundResolvedFailed), "an operator resolved the refund as not paid")
		}
		s.patch.OnWrite(func() {
			r.Recorder.Eventf(rf, nil, corev1.EventTypeNormal, ReasonRefundResolved, "Resolve", "An operator resolved the refund as %s", verdict)
			metrics.AttemptWatches.WithLabelValues("refund", string(rf.Spec.Environment), "started").Inc()
		})
	}
}

// watchAttempt keeps asking the provider about a refund an operator resolved without the
// provider's final answer (status.attempt.watchUntil), as payouts do: a final answer that
// contradicts the verdict raises LateSettlement, a Warning event and the metric, for an operator
// to reconcile.
func (r *RefundReconciler) watchAttempt(ctx context.Context, s *refundScope) (ctrl.Result, error) {
	rf := s.refund
	a := rf.Status.Attempt
	if a == nil || a.WatchUntil == nil {
		return ctrl.Result{}, nil
	}
	ended := attempt.EndedFailed
	if rf.Status.Phase == paygatev1.RefundSuccess {
		ended = attempt.EndedSucceeded
	}
	in := attempt.Input{Record: disbursementRecord(a), Ended: ended, Now: s.now, Poll: r.pollInterval(), Watch: r.AttemptWatch}
	st, acted, err := watchEnded(ctx, in, r.attemptCalls(s), func() provider.Provider { prov, _ := r.refunderFor(ctx, rf); return prov })
	if err != nil || !acted {
		return ctrl.Result{RequeueAfter: st.decision.RetryAfter}, err
	}
	d := st.decision
	storeRecord(d.Record, s.now, &a.Phase, &a.Code, &a.Sends, &a.LastSentAt, &a.WatchUntil, &a.FinishedAt)
	watchNews{obj: rf, conditions: &rf.Status.Conditions, generation: rf.Generation, announce: s.patch.OnWrite, recorder: r.Recorder,
		operation: "refund", env: rf.Spec.Environment, reference: a.Reference,
		late: func(o attempt.Outcome) string {
			if o == attempt.OutcomeLateFailure {
				return fmt.Sprintf("The provider failed refund %s after an operator resolved it as refunded: the customer never got the money back; reconcile it", a.Reference)
			}
			return fmt.Sprintf("The provider paid refund %s after an operator resolved it as failed: the money went back to the customer but counts as available again; reconcile it", a.Reference)
		},
	}.tell(d, in.Record.Watched(s.now))
	if err := s.patch.Patch(ctx, rf); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("recording what the provider says of watched refund %s: %w", a.Reference, err))
	}
	return ctrl.Result{RequeueAfter: d.RetryAfter}, nil
}

// flagAmbiguity raises AmbiguousTooLong when the provider has not answered finally within
// AmbiguousAfter of the send, and clears it once the refund has a final answer.
func (r *RefundReconciler) flagAmbiguity(_ context.Context, s *refundScope) (ctrl.Result, error) {
	rf := s.refund
	a := rf.Status.Attempt
	if a == nil || rf.Terminal() || !attemptInFlight(a.Phase) {
		if meta.FindStatusCondition(rf.Status.Conditions, paygatev1.ConditionAmbiguousTooLong) != nil {
			meta.SetStatusCondition(&rf.Status.Conditions, metav1.Condition{Type: paygatev1.ConditionAmbiguousTooLong,
				Status: metav1.ConditionFalse, Reason: ReasonAnsweredInTime, Message: "The refund has a final answer", ObservedGeneration: rf.Generation})
		}
		return ctrl.Result{}, nil
	}
	since := a.StartedAt
	if a.LastSentAt != nil && a.LastSentAt.After(since.Time) {
		since = *a.LastSentAt
	}
	if left := since.Add(r.ambiguousAfter()).Sub(s.now); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	if !meta.IsStatusConditionTrue(rf.Status.Conditions, paygatev1.ConditionAmbiguousTooLong) {
		msg := fmt.Sprintf("The provider has not confirmed refund %s for %s; check with the provider, then annotate %s=success or failed",
			a.Reference, r.ambiguousAfter(), paygatev1.AnnotationResolveRefund)
		meta.SetStatusCondition(&rf.Status.Conditions, metav1.Condition{Type: paygatev1.ConditionAmbiguousTooLong,
			Status: metav1.ConditionTrue, Reason: ReasonRefundAmbiguous, Message: msg, ObservedGeneration: rf.Generation})
		s.patch.OnWrite(func() {
			r.Recorder.Eventf(rf, nil, corev1.EventTypeWarning, ReasonRefundAmbiguous, "Refund", "%s", msg)
		})
	}
	return ctrl.Result{}, nil
}

func (r *RefundReconciler) succeed(s *refundScope) {
	rf := s.refund
	rf.Status.Phase, rf.Status.Reason = paygatev1.RefundSuccess, ""
	s.patch.OnWrite(func() {
		r.Recorder.Eventf(rf, nil, corev1.EventTypeNormal, ReasonRefundSucceeded, "Refund", "Refunded %s %s of payment %s",
			rf.Spec.Amount, rf.Spec.Currency, rf.Spec.Payment.TrxID)
	})
}

// fail ends the refund with code; its reservation stops counting, which releases it.
func (r *RefundReconciler) fail(s *refundScope, code, why string) {
	rf := s.refund
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
	if r.PollInterval > 0 {
		return r.PollInterval
	}
	return 2 * time.Second
}

func (r *RefundReconciler) ambiguousAfter() time.Duration {
	if r.AmbiguousAfter > 0 {
		return r.AmbiguousAfter
	}
	return DefaultPayoutAmbiguousAfter
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
