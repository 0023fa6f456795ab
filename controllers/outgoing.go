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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/attempt"
	webhookevents "github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/provider"
)

// Payouts and refunds move money out the same way: once the balance controller reserved the
// amount, one DisbursementAttempt per object is recorded in status (written ahead) before the
// provider hears of it, resolved by status queries or an operator's verdict (never by a second
// send), watched after an operator resolved it without the provider's final answer, and flagged
// to an operator (AmbiguousTooLong) when it stays without a final answer too long. This file holds
// the steps the payout and refund reconcilers share; each hands them what differs: an
// outgoingKind (its words, reasons and status fields), its provider calls and its outcomes.

// outgoingObject is a payout or a refund.
type outgoingObject interface {
	client.Object
	// Terminal reports whether the object succeeded or failed, which never change.
	Terminal() bool
	Owner() (merchant string, env paygatev1.Environment)
}

// outgoingStatus points into the status fields payouts and refunds share (their phases differ in
// type only, and each kind sets its own).
type outgoingStatus struct {
	attempt            **paygatev1.DisbursementAttempt
	reason, remark     *string
	updatedAt          **metav1.MicroTime
	conditions         *[]metav1.Condition
	observedGeneration *int64
}

// readyWords are the reason and message of a Ready condition.
type readyWords struct{ reason, message string }

// outgoingKind is what the shared steps need to know of payouts, or of refunds.
type outgoingKind[T outgoingObject] struct {
	// name is the kind in messages and errors (payout or refund); operation is what the provider
	// is asked to do, in messages, events and the metrics' operation label (disbursement or
	// refund); action is the action of its Kubernetes Events (Disburse or Refund).
	name, operation, action string
	// resolveAnnotation carries an operator's verdict (ParsePayoutVerdict).
	resolveAnnotation string
	// reasonAmbiguous is the reason of what asks an operator (AmbiguousTooLong, and the Warning
	// about a verdict that cannot be read); reasonResolved of an operator's resolution.
	reasonAmbiguous, reasonResolved string
	// Ready of an object that succeeded, failed (the message is followed by status.reason), and of
	// one whose attempt waits for the provider.
	readySucceeded, readyFailed, readyInFlight readyWords
	// status is the object's status, for statusPatch; fields the parts of it the steps share.
	status func(T) any
	fields func(T) outgoingStatus
	// setPending gives an object no controller has touched yet its phase; succeeded tells whether
	// the object succeeded.
	setPending func(T)
	succeeded  func(T) bool
}

// summarize sets the Ready condition and observedGeneration from what the pass did (reconcileErr
// is its error).
func (k *outgoingKind[T]) summarize(obj T, reconcileErr error) {
	k.setPending(obj)
	f := k.fields(obj)
	status, reason, msg := metav1.ConditionFalse, ReasonAwaitingReservation, "Waiting for the balance to reserve the amount"
	switch a := *f.attempt; {
	case k.succeeded(obj):
		status, reason, msg = metav1.ConditionTrue, k.readySucceeded.reason, k.readySucceeded.message
	case obj.Terminal():
		reason, msg = k.readyFailed.reason, k.readyFailed.message+*f.reason
	case a != nil && a.Phase == paygatev1.AttemptAmbiguous:
		status, reason, msg = metav1.ConditionUnknown, ReasonAttemptAmbiguous, "The provider cannot tell yet whether money moved; asking again"
	case a != nil:
		reason, msg = k.readyInFlight.reason, k.readyInFlight.message
	}
	if reconcileErr != nil && !obj.Terminal() {
		reason, msg = failureReason(reconcileErr)
	}
	setReady(f.conditions, obj.GetGeneration(), status, reason, msg)
	if reconcileErr == nil {
		*f.observedGeneration = obj.GetGeneration()
	}
}

// outgoingScope is one pass over a payout or a refund.
type outgoingScope[T outgoingObject] struct {
	kind  *outgoingKind[T]
	obj   T
	patch *statusPatch[T]
	now   time.Time
	rec   events.EventRecorder
	// resolvedByOperator: this pass ended the object as the resolve annotation says.
	resolvedByOperator bool
	// sent: this pass wrote an attempt ahead and sent it.
	sent bool
}

type (
	payoutScope = outgoingScope[*paygatev1.Payout]
	refundScope = outgoingScope[*paygatev1.Refund]
)

// newOutgoingScope starts a pass over obj, as read, at now.
func newOutgoingScope[T outgoingObject](k *outgoingKind[T], c client.StatusClient, rec events.EventRecorder, obj T, now time.Time) *outgoingScope[T] {
	return &outgoingScope[T]{kind: k, obj: obj, patch: newStatusPatch(c, obj, k.status), now: now, rec: rec}
}

func (s *outgoingScope[T]) fields() outgoingStatus { return s.kind.fields(s.obj) }

// endedPass is the pass over an ended object. It never changes, except that Ready says how it
// ended: the balance controller fails an object it cannot cover without summarizing it. Its event
// (emit) is born from the stored state; then watch asks about an attempt an operator resolved.
func (s *outgoingScope[T]) endedPass(ctx context.Context, emit func(context.Context, T) error, watch step[*outgoingScope[T]]) (ctrl.Result, error) {
	s.kind.summarize(s.obj, nil)
	if err := s.patch.Patch(ctx, s.obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("patching %s status: %w", s.kind.name, err))
	}
	if err := emit(ctx, s.obj); err != nil {
		return ctrl.Result{}, err
	}
	return watch(ctx, s)
}

// finish, deferred by an open object's pass, summarizes the object from the pass's error
// (*retErr), stamps updatedAt when the pass changed its status, and writes the status once; a
// failed write joins *retErr.
func (s *outgoingScope[T]) finish(ctx context.Context, retErr *error) {
	s.kind.summarize(s.obj, *retErr)
	if s.patch.Changed(s.obj) {
		*s.fields().updatedAt = ptrTime(s.now)
	}
	if err := s.patch.Patch(ctx, s.obj); err != nil {
		*retErr = errors.Join(*retErr, client.IgnoreNotFound(fmt.Errorf("patching %s status: %w", s.kind.name, err)))
	}
}

// attemptInput is the engine's input for a pass over an open object: whether an operator was
// asked (AmbiguousTooLong), and their verdict, from the resolve annotation. A verdict that cannot
// be read is ignored, with a Warning event while the attempt is in flight.
func (s *outgoingScope[T]) attemptInput(poll, watch time.Duration) attempt.Input {
	f := s.fields()
	in := attempt.Input{Now: s.now, Poll: poll, Watch: watch,
		OperatorAsked: meta.IsStatusConditionTrue(*f.conditions, paygatev1.ConditionAmbiguousTooLong)}
	raw := s.obj.GetAnnotations()[s.kind.resolveAnnotation]
	if raw == "" {
		return in
	}
	if v, ok := ParsePayoutVerdict(raw); ok {
		in.Verdict = &v
	} else if a := *f.attempt; a != nil && attemptInFlight(a.Phase) {
		s.rec.Eventf(s.obj, nil, corev1.EventTypeWarning, s.kind.reasonAmbiguous, "Resolve",
			"Ignoring %s=%q: use success or failed, followed by /<send> once the %s was sent more than once", s.kind.resolveAnnotation, raw, s.kind.operation)
	}
	return in
}

// decide runs the engine's shell on the attempt (runAttempt) and applies what it decided (apply).
// provErr, the provider's that could not be resolved, and a query the provider did not answer
// fail the pass, unless it ended the object; else the pass comes back when the engine says.
func (s *outgoingScope[T]) decide(ctx context.Context, in attempt.Input, calls attemptCalls, provErr error, apply func(*outgoingScope[T], attemptStep)) (ctrl.Result, error) {
	st, err := runAttempt(ctx, in, calls)
	if err != nil {
		return ctrl.Result{}, err
	}
	apply(s, st)
	if st.providerErr != nil {
		provErr = errors.Join(provErr, asProviderError(fmt.Errorf("asking the provider about %s %s: %w", s.kind.operation, (*s.fields().attempt).Reference, st.providerErr)))
	}
	if s.obj.Terminal() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: st.decision.RetryAfter}, provErr
}

// writingAhead completes calls (the provider's send and query, the failpoints) with the object's
// write-ahead and its recorded callback. The write-ahead records a new attempt with start (the
// first send), stores the send's record and updatedAt, and writes the status under the
// optimistic lock.
func (s *outgoingScope[T]) writingAhead(calls attemptCalls, start func(startedAt time.Time)) attemptCalls {
	calls.writeAhead = func(ctx context.Context, rec attempt.Record) error {
		f := s.fields()
		if *f.attempt == nil {
			start(rec.StartedAt)
		}
		a := *f.attempt
		storeRecord(rec, s.now, &a.Phase, &a.Code, &a.Sends, &a.LastSentAt, &a.WatchUntil, &a.FinishedAt)
		*f.updatedAt = ptrTime(s.now)
		if err := s.patch.Patch(ctx, s.obj); err != nil {
			return fmt.Errorf("recording %s %s: %w", s.kind.operation, a.Reference, err)
		}
		s.sent = true
		return nil
	}
	calls.recorded = func() (provider.Result, bool) {
		if a := *s.fields().attempt; a != nil {
			return recordedCallback(s.obj.GetAnnotations(), a.Reference)
		}
		return provider.Result{}, false
	}
	return calls
}

// storeDecision stores the engine's record in the object's attempt, with the provider's reference
// and remark, and when the attempt first went without a final answer. It returns the attempt; nil
// when there is none (nothing was sent).
func (s *outgoingScope[T]) storeDecision(st attemptStep) *paygatev1.DisbursementAttempt {
	f := s.fields()
	a := *f.attempt
	if a == nil {
		return nil
	}
	storeRecord(st.decision.Record, s.now, &a.Phase, &a.Code, &a.Sends, &a.LastSentAt, &a.WatchUntil, &a.FinishedAt)
	if st.hasResult {
		if st.result.ProviderReference != "" {
			a.ProviderReference = st.result.ProviderReference
		}
		if st.result.Remark != "" {
			*f.remark = st.result.Remark
		}
	}
	if (a.Phase == paygatev1.AttemptPending || a.Phase == paygatev1.AttemptAmbiguous) && a.AmbiguousSince == nil {
		a.AmbiguousSince = ptrTime(s.now)
	}
	return a
}

// applyOutcome ends the object as the engine decided: the provider's final answer succeeds it or
// fails it with the provider's code; an operator's verdict does the same, failing it with
// resolvedFailed, and announces the resolution and the start of the attempt's watch after the
// write.
func (s *outgoingScope[T]) applyOutcome(d attempt.Decision, succeed func(*outgoingScope[T]), fail func(s *outgoingScope[T], code, why string), resolvedFailed string) {
	switch d.Outcome {
	case attempt.OutcomeSucceeded:
		succeed(s)
	case attempt.OutcomeFailed:
		fail(s, d.Code, "the provider reported "+d.Code)
	case attempt.OutcomeResolvedSuccess, attempt.OutcomeResolvedFailed:
		// Set first: succeed and fail read it (an operator's verdict is no disbursement latency).
		s.resolvedByOperator = true
		verdict := "success"
		if d.Outcome == attempt.OutcomeResolvedSuccess {
			succeed(s)
		} else {
			verdict = "failed"
			fail(s, resolvedFailed, "an operator resolved the "+s.kind.operation+" as not paid")
		}
		_, env := s.obj.Owner()
		s.patch.OnWrite(func() {
			s.rec.Eventf(s.obj, nil, corev1.EventTypeNormal, s.kind.reasonResolved, "Resolve", "An operator resolved the %s as %s", s.kind.name, verdict)
			metrics.AttemptWatches.WithLabelValues(s.kind.operation, string(env), "started").Inc()
		})
	}
}

// watch keeps asking the provider about the attempt of an object an operator resolved without the
// provider's final answer (status.attempt.watchUntil), through calls (the provider from resolve;
// never a send). A final answer that contradicts the verdict raises LateSettlement (late says
// what it means of the attempt reference), a Warning event and the metric, for an operator to
// reconcile.
func (s *outgoingScope[T]) watch(ctx context.Context, poll, window time.Duration, calls attemptCalls, resolve func() provider.Provider,
	late func(o attempt.Outcome, reference string) string) (ctrl.Result, error) {
	f := s.fields()
	a := *f.attempt
	if a == nil || a.WatchUntil == nil {
		return ctrl.Result{}, nil
	}
	ended := attempt.EndedFailed
	if s.kind.succeeded(s.obj) {
		ended = attempt.EndedSucceeded
	}
	in := attempt.Input{Record: disbursementRecord(a), Ended: ended, Now: s.now, Poll: poll, Watch: window}
	st, acted, err := watchEnded(ctx, in, calls, resolve)
	if err != nil || !acted {
		return ctrl.Result{RequeueAfter: st.decision.RetryAfter}, err
	}
	d := st.decision
	storeRecord(d.Record, s.now, &a.Phase, &a.Code, &a.Sends, &a.LastSentAt, &a.WatchUntil, &a.FinishedAt)
	_, env := s.obj.Owner()
	watchNews{obj: s.obj, conditions: f.conditions, generation: s.obj.GetGeneration(), announce: s.patch.OnWrite, recorder: s.rec,
		operation: s.kind.operation, env: env, reference: a.Reference,
		late: func(o attempt.Outcome) string { return late(o, a.Reference) },
	}.tell(d, in.Record.Watched(s.now))
	if err := s.patch.Patch(ctx, s.obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("recording what the provider says of watched %s %s: %w", s.kind.operation, a.Reference, err))
	}
	return ctrl.Result{RequeueAfter: d.RetryAfter}, nil
}

// inFlight is the attempt of an open object while it waits for the provider's final answer; nil
// when there is none (nothing sent yet, or the answer came).
func (s *outgoingScope[T]) inFlight() *paygatev1.DisbursementAttempt {
	if a := *s.fields().attempt; a != nil && !s.obj.Terminal() && attemptInFlight(a.Phase) {
		return a
	}
	return nil
}

// clearAmbiguity turns AmbiguousTooLong False, when the object has it, once its attempt has a
// final answer (reason and msg say whose).
func (s *outgoingScope[T]) clearAmbiguity(reason, msg string) {
	conditions := s.fields().conditions
	if meta.FindStatusCondition(*conditions, paygatev1.ConditionAmbiguousTooLong) != nil {
		meta.SetStatusCondition(conditions, metav1.Condition{Type: paygatev1.ConditionAmbiguousTooLong,
			Status: metav1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: s.obj.GetGeneration()})
	}
}

// askOperator raises AmbiguousTooLong once the attempt has gone without a final answer for after
// since since, with the message msg gives, announced as a Warning event after the write; until
// then the pass comes back when it falls due.
func (s *outgoingScope[T]) askOperator(since time.Time, after time.Duration, msg func() string) ctrl.Result {
	if left := since.Add(after).Sub(s.now); left > 0 {
		return ctrl.Result{RequeueAfter: left}
	}
	conditions := s.fields().conditions
	if !meta.IsStatusConditionTrue(*conditions, paygatev1.ConditionAmbiguousTooLong) {
		m := msg()
		meta.SetStatusCondition(conditions, metav1.Condition{Type: paygatev1.ConditionAmbiguousTooLong,
			Status: metav1.ConditionTrue, Reason: s.kind.reasonAmbiguous, Message: m, ObservedGeneration: s.obj.GetGeneration()})
		s.patch.OnWrite(func() {
			s.rec.Eventf(s.obj, nil, corev1.EventTypeWarning, s.kind.reasonAmbiguous, s.kind.action, "%s", m)
		})
	}
	return ctrl.Result{}
}

// outgoingEvent is the webhook event of an ended payout or refund (kind: Payout or Refund), for
// emitOnce: its name derives from the object's UID and the event type, and it goes to the
// merchant's webhook URL for the object's environment. data builds its payload; born runs once it
// is created.
func outgoingEvent(ctx context.Context, c client.Reader, kind string, obj outgoingObject, eventType string, data func() (any, error), born func()) webhookEvent {
	merchant, env := obj.Owner()
	return webhookEvent{
		source:    webhookevents.Source{Kind: kind, Object: obj, Merchant: merchant, Env: env},
		eventType: eventType,
		names:     []string{webhookevents.DeliveryName(string(obj.GetUID()), eventType)},
		target: func() (string, error) {
			return merchantWebhookURL(ctx, c, obj.GetNamespace(), merchant, env)
		},
		data: data,
		born: born,
	}
}

// attemptInFlight reports whether an attempt in phase still waits for the provider's final answer.
func attemptInFlight(phase paygatev1.AttemptPhase) bool {
	return phase != paygatev1.AttemptSucceeded && phase != paygatev1.AttemptFailed
}

// disbursementRecord is the engine's view of a disbursement attempt (a payout's or a refund's).
func disbursementRecord(a *paygatev1.DisbursementAttempt) attempt.Record {
	return recordOf(a.Phase, a.Code, a.StartedAt, a.Sends, a.LastSentAt, a.WatchUntil)
}
