// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/attempt"
	webhookevents "github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/internal/failpoint"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/payouts"
	"github.com/paygate/paygate/internal/provider"
)

// Payout event and condition reasons, in pairs.
const (
	ReasonAwaitingReservation = "AwaitingReservation"
	ReasonDisbursing          = "Disbursing"
	ReasonDisbursementStarted = "DisbursementStarted"
	ReasonDisbursementUnknown = "DisbursementOutcomeUnknown"
	ReasonPayoutSucceeded     = "PayoutSucceeded"
	ReasonPayoutFailed        = "PayoutFailed"
	ReasonPayoutAmbiguous     = "PayoutAmbiguous"
	ReasonPayoutResolved      = "PayoutResolved"
	ReasonAnsweredInTime      = "AnsweredInTime"
	// ReasonFailedAfterSuccess: the provider failed a disbursement after an operator resolved its
	// payout as paid.
	ReasonFailedAfterSuccess = "FailedAfterSuccess"
	// ReasonSentAgain: AmbiguousTooLong turned False because the disbursement was sent again.
	ReasonSentAgain = "SentAgain"
)

// DefaultPayoutAmbiguousAfter is how long a disbursement may stay ambiguous or in progress
// before an operator is asked to resolve it.
const DefaultPayoutAmbiguousAfter = 30 * time.Minute

// PayoutReconciler disburses reserved payouts. The balance controller reserves a payout's amount
// (docs/payouts.md, Funds and the single writer); this reconciler then records the disbursement
// attempt in status (written ahead) and only then calls the provider. An attempt whose outcome is
// unknown is resolved by status queries, never by a second disbursement.
type PayoutReconciler struct {
	client.Client
	// APIReader reads live (a payout the archiver deleted gets no event again); nil skips it.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Providers Providers
	// Clock is the controller's time source.
	Clock clock.PassiveClock
	// PollInterval is how often a disbursement in flight is queried (default 2 s).
	PollInterval time.Duration
	// AmbiguousAfter is how long a disbursement may stay unresolved before the payout asks an
	// operator (default DefaultPayoutAmbiguousAfter).
	AmbiguousAfter time.Duration
	// CallbackURL is where the upstream provider posts results.
	CallbackURL string
	// AttemptWatch is how long a disbursement an operator resolved without the provider's final
	// answer is still asked about (default attempt.DefaultWatch; --attempt-watch).
	AttemptWatch time.Duration
	// FirstAttempts, when set, takes the payout's webhook events for their first attempt before their
	// deliveries are created (the webhook delivery controller's; emitOnce). Nil creates each
	// delivery at once.
	FirstAttempts *WebhookFirstAttempts
}

// payoutKind gives the steps payouts share with refunds (outgoing.go) the words, reasons and
// status fields of payouts.
var payoutKind = outgoingKind[*paygatev1.Payout]{
	name: "payout", operation: "disbursement", action: "Disburse",
	resolveAnnotation: paygatev1.AnnotationResolvePayout,
	reasonAmbiguous:   ReasonPayoutAmbiguous, reasonResolved: ReasonPayoutResolved,
	readySucceeded: readyWords{ReasonPayoutSucceeded, "Payout disbursed"},
	readyFailed:    readyWords{ReasonPayoutFailed, "Payout failed: "},
	readyInFlight:  readyWords{ReasonDisbursing, "Waiting for the provider to complete the disbursement"},
	status:         payoutStatus,
	fields: func(p *paygatev1.Payout) outgoingStatus {
		st := &p.Status
		return outgoingStatus{attempt: &st.Attempt, reason: &st.Reason, remark: &st.Remark, updatedAt: &st.UpdatedAt,
			conditions: &st.Conditions, observedGeneration: &st.ObservedGeneration}
	},
	setPending: func(p *paygatev1.Payout) {
		if p.Status.Phase == "" {
			p.Status.Phase = paygatev1.PayoutPending
		}
	},
	succeeded: func(p *paygatev1.Payout) bool { return p.Status.Phase == paygatev1.PayoutSuccess },
}

func payoutStatus(p *paygatev1.Payout) any { return &p.Status }

// +kubebuilder:rbac:groups=paygate.dev,resources=payouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=payouts/status,verbs=get;update;patch

// Reconcile moves one payout forward.
func (r *PayoutReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	p := &paygatev1.Payout{}
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := newOutgoingScope(&payoutKind, r.Client, r.Recorder, p, r.Clock.Now())
	if p.Terminal() {
		// Only Ready, the event and the watch of an attempt an operator resolved (endedPass).
		return s.endedPass(ctx, r.emitEvent, r.watchAttempt)
	}
	defer s.finish(ctx, &retErr)
	// An operator's resolution applies, and an unresolved disbursement is flagged to them, even
	// when the provider cannot be asked: that is when operators step in.
	return runSteps(ctx, s, independent(r.driveAttempt, r.watchAmbiguity))
}

// driveAttempt runs the attempt engine (internal/attempt) on the payout's disbursement: it checks
// the gates of a reserved payout and disburses (written ahead), asks the provider about a
// disbursement in flight, and applies an operator's verdict (annotation paygate.dev/resolve-payout)
// on the send it names, never in a pass that sends (docs/payouts.md).
func (r *PayoutReconciler) driveAttempt(ctx context.Context, s *payoutScope) (ctrl.Result, error) {
	p := s.obj
	a := p.Status.Attempt
	in := s.attemptInput(r.pollInterval(), r.AttemptWatch)
	var provErr error
	calls := r.attemptCalls(s)
	switch {
	case p.Terminal():
		return ctrl.Result{}, nil
	case a != nil && attemptInFlight(a.Phase):
		in.Record = disbursementRecord(a)
		calls.prov, provErr = r.providerFor(ctx, p)
	case a == nil && p.Status.ReservedAt != nil:
		if ok, err := r.gatesPass(ctx, s); !ok || err != nil {
			return ctrl.Result{}, err
		}
		in.Start = true
		calls.prov, provErr = r.providerFor(ctx, p)
	default:
		return ctrl.Result{}, nil
	}
	return s.decide(ctx, in, calls, provErr, r.applyDecision)
}

// ParsePayoutVerdict reads the resolve annotation: success or failed, optionally followed by
// /<send> naming the send it resolves (required once the disbursement was sent more than once).
func ParsePayoutVerdict(raw string) (attempt.Verdict, bool) {
	outcome, send, hasSend := strings.Cut(strings.TrimSpace(raw), "/")
	var v attempt.Verdict
	switch outcome {
	case "success":
		v.Succeeded = true
	case "failed":
	default:
		return v, false
	}
	if hasSend {
		n, err := strconv.ParseInt(send, 10, 32)
		if err != nil || n < 1 {
			return v, false
		}
		v.Send = int32(n)
	}
	return v, true
}

// gatesPass checks the gates of a reserved payout again before its disbursement, failing it when
// one no longer holds.
func (r *PayoutReconciler) gatesPass(ctx context.Context, s *payoutScope) (bool, error) {
	p := s.obj
	m := &paygatev1.Merchant{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.MerchantRef.Name}, m); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("reading the merchant of payout %s: %w", p.Name, err)
		}
		r.fail(s, string(paygatev1.PayoutRejected), "the merchant no longer exists")
		return false, nil
	}
	if err := payouts.CheckGates(m, p.Spec.Currency); err != nil {
		r.fail(s, string(paygatev1.PayoutRejected), err.Error())
		return false, nil
	}
	// The destination must still be the settlement number of the payout's currency (its
	// settlementNumbers entry, else the single settlementNumber).
	if !payouts.IsSettlementNumber(m, p.Spec.Currency, p.Spec.Destination) {
		r.fail(s, string(paygatev1.PayoutRejected), "the settlement number changed after the payout was requested")
		return false, nil
	}
	return true, nil
}

// attemptCalls are the payout's provider calls and its write-ahead, for the engine's shell.
func (r *PayoutReconciler) attemptCalls(s *payoutScope) attemptCalls {
	p := s.obj
	return s.writingAhead(attemptCalls{
		send: func(ctx context.Context, prov provider.Provider) (provider.Result, error) {
			return prov.Disburse(ctx, r.disbursementRequest(p))
		},
		query: func(ctx context.Context, prov provider.Provider) (provider.Result, error) {
			return prov.DisbursementStatus(ctx, r.disbursementRequest(p))
		},
		sent:     func() { hitFailpoint(failpoint.PayoutAttemptRecorded) },
		answered: func() { hitFailpoint(failpoint.PayoutProviderAnswered) },
	}, func(startedAt time.Time) {
		p.Status.Phase = paygatev1.PayoutProcessing
		p.Status.Attempt = &paygatev1.DisbursementAttempt{Reference: p.DisbursementReference(), StartedAt: *ptrTime(startedAt)}
	})
}

// applyDecision stores what the engine decided in the payout's status; what it announces waits for
// the write (statusPatch.OnWrite).
func (r *PayoutReconciler) applyDecision(s *payoutScope, st attemptStep) {
	p, d := s.obj, st.decision
	a := s.storeDecision(st)
	if a == nil {
		return // nothing was sent: a payout has no deadline, so only a send creates its attempt
	}
	if st.sendErr != nil {
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonDisbursementUnknown, "Disburse", "Disbursement %s", describeSendError(a.Reference, st.sendErr))
	} else if s.sent {
		r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, ReasonDisbursementStarted, "Disburse",
			"Disbursing %s %s through %s", p.Spec.PayableAmount, p.Spec.Currency, p.Spec.Gateway)
	}
	recall := attemptRecall{recorder: r.Recorder, operation: "disbursement", announce: s.patch.OnWrite}
	switch d.Recall {
	case attempt.RecallForgot:
		recall.forgot(p, p.Spec.Environment, &p.Status.Conditions, p.Generation, a.Reference)
	case attempt.RecallKnows:
		recall.knows(&p.Status.Conditions, p.Generation)
	}
	s.applyOutcome(d, r.succeed, r.fail, string(paygatev1.PayoutResolvedFailed))
}

// watchAttempt keeps asking the provider about the disbursement of a payout an operator resolved
// without the provider's final answer (status.attempt.watchUntil). A final answer that contradicts
// the verdict raises LateSettlement (SettledAfterFailure: the money left although the reservation
// was released; FailedAfterSuccess: the money never left although it counts as paid out), a
// Warning event and the metric, for an operator to reconcile.
func (r *PayoutReconciler) watchAttempt(ctx context.Context, s *payoutScope) (ctrl.Result, error) {
	p := s.obj
	return s.watch(ctx, r.pollInterval(), r.AttemptWatch, r.attemptCalls(s),
		func() provider.Provider { prov, _ := r.providerFor(ctx, p); return prov },
		func(o attempt.Outcome, ref string) string {
			if o == attempt.OutcomeLateFailure {
				return fmt.Sprintf("The provider failed disbursement %s after an operator resolved the payout as paid: the money never reached the settlement number; reconcile it", ref)
			}
			return fmt.Sprintf("The provider paid disbursement %s after an operator resolved the payout as failed: the amount left the float but counts as available again; reconcile it", ref)
		})
}

// watchAmbiguity raises AmbiguousTooLong when the provider has not answered finally within
// AmbiguousAfter (whether or not it could be asked in this pass), and clears it once the payout
// has a final answer, the provider's or an operator's.
func (r *PayoutReconciler) watchAmbiguity(_ context.Context, s *payoutScope) (ctrl.Result, error) {
	p := s.obj
	a := s.inFlight()
	if a == nil {
		reason, msg := ReasonAnsweredInTime, "The provider gave a final answer"
		if s.resolvedByOperator {
			reason, msg = ReasonPayoutResolved, "An operator resolved the payout"
		}
		s.clearAmbiguity(reason, msg)
		return ctrl.Result{}, nil
	}
	// Unresolved since the provider first left it open, or, for an attempt it never answered (it
	// is down, or the gateway is gone), since the attempt was recorded; a send again (with the same
	// reference, to a provider that de-duplicates) starts the clock again, and an operator asked
	// about the earlier send is asked again.
	since := a.StartedAt
	if a.AmbiguousSince != nil {
		since = *a.AmbiguousSince
	}
	if a.LastSentAt != nil && a.LastSentAt.After(since.Time) {
		since = *a.LastSentAt
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, paygatev1.ConditionAmbiguousTooLong); c != nil && c.Status == metav1.ConditionTrue &&
		c.LastTransitionTime.Time.Before(since.Time.Truncate(time.Second)) {
		meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: paygatev1.ConditionAmbiguousTooLong,
			Status: metav1.ConditionFalse, Reason: ReasonSentAgain, Message: "The disbursement was sent again; waiting for the provider", ObservedGeneration: p.Generation})
	}
	return s.askOperator(since.Time, r.ambiguousAfter(), func() string {
		verdict := "success or failed"
		if n := disbursementRecord(a).SendCount(); n > 1 {
			verdict = fmt.Sprintf("success/%d or failed/%d (send %d)", n, n, n)
		}
		return fmt.Sprintf("The provider has not confirmed disbursement %s for %s; check with the provider, then annotate %s=%s",
			a.Reference, r.ambiguousAfter(), paygatev1.AnnotationResolvePayout, verdict)
	}), nil
}

func (r *PayoutReconciler) succeed(s *payoutScope) {
	p := s.obj
	p.Status.Phase, p.Status.Reason = paygatev1.PayoutSuccess, ""
	latency := -1.0
	if a := p.Status.Attempt; a != nil && !s.resolvedByOperator {
		latency = s.now.Sub(a.StartedAt.Time).Seconds()
	}
	s.patch.OnWrite(func() {
		if latency >= 0 {
			metrics.DisbursementLatency.WithLabelValues(string(p.Spec.Environment)).Observe(latency)
		}
		r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, ReasonPayoutSucceeded, "Disburse", "Paid out %s %s (fee %s, %s to the settlement number)",
			p.Spec.Amount, p.Spec.Currency, p.Spec.Fee, p.Spec.PayableAmount)
	})
}

// fail ends the payout with code; its reservation stops counting, which releases it.
func (r *PayoutReconciler) fail(s *payoutScope, code, why string) {
	p := s.obj
	p.Status.Phase, p.Status.Reason = paygatev1.PayoutFailed, code
	s.patch.OnWrite(func() {
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonPayoutFailed, "Disburse", "Payout failed with %s: %s", code, why)
	})
}

func (r *PayoutReconciler) disbursementRequest(p *paygatev1.Payout) provider.DisbursementRequest {
	return provider.DisbursementRequest{
		Reference: p.Status.Attempt.Reference, Phone: string(p.Spec.Destination),
		Amount: string(p.Spec.PayableAmount), RequestedAmount: string(p.Spec.Amount), Currency: string(p.Spec.Currency),
		Gateway: string(p.Spec.Gateway), CallbackURL: r.CallbackURL, StartedAt: p.Status.Attempt.StartedAt.Time,
		ProviderReference: p.Status.Attempt.ProviderReference,
	}
}

func (r *PayoutReconciler) providerFor(ctx context.Context, p *paygatev1.Payout) (provider.Provider, error) {
	return gatewayProvider(ctx, r.Client, r.Providers, p.Spec.Gateway, p.Spec.Environment)
}

func (r *PayoutReconciler) pollInterval() time.Duration {
	return orDefault(r.PollInterval, defaultPollInterval)
}

func (r *PayoutReconciler) ambiguousAfter() time.Duration {
	return orDefault(r.AmbiguousAfter, DefaultPayoutAmbiguousAfter)
}

// emitEvent creates the payout's webhook event, once: its name derives from the payout's UID and
// the event type. It also counts the payout in paygate_payouts_total, once, where the event is born.
func (r *PayoutReconciler) emitEvent(ctx context.Context, p *paygatev1.Payout) error {
	env, phase, reason := string(p.Spec.Environment), string(p.Status.Phase), p.Status.Reason
	return emitOnce(ctx, r.Client, r.APIReader, r.FirstAttempts, r.Clock.Now(), outgoingEvent(ctx, r.Client, "Payout", p, webhookevents.PayoutEventType(p),
		func() (any, error) { return webhookevents.NewPayoutData(p) },
		func() { metrics.Payouts.WithLabelValues(env, phase, reason).Inc() }))
}

// SetupWithManager watches Payouts and their events.
func (r *PayoutReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.Payout{}).
		Owns(&paygatev1.WebhookDelivery{}).
		WithOptions(controllerOptions(4)).
		Named("payout").
		Complete(quietConflicts(r))
}
