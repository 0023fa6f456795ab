// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
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
}

type payoutScope struct {
	payout *paygatev1.Payout
	patch  *statusPatch[*paygatev1.Payout]
	now    time.Time
	// resolvedByOperator: this pass ended the payout as the resolve annotation says.
	resolvedByOperator bool
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
	if p.Terminal() {
		// Terminal payouts never change, except that Ready says how they ended: the balance
		// controller fails a payout it cannot cover without summarizing it. Their event is born
		// from the stored terminal state.
		patch := newStatusPatch(r.Client, p, payoutStatus)
		summarizePayout(p, nil)
		if err := patch.Patch(ctx, p); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("patching payout status: %w", err))
		}
		return ctrl.Result{}, r.emitEvent(ctx, p)
	}
	patch := newStatusPatch(r.Client, p, payoutStatus)
	s := &payoutScope{payout: p, patch: patch, now: r.Clock.Now()}
	defer func() {
		summarizePayout(p, retErr)
		if patch.Changed(p) {
			p.Status.UpdatedAt = ptrTime(s.now)
		}
		if err := patch.Patch(ctx, p); err != nil {
			retErr = errors.Join(retErr, client.IgnoreNotFound(fmt.Errorf("patching payout status: %w", err)))
		}
	}()
	return runSteps(ctx, s,
		// An operator's resolution applies, and an unresolved disbursement is flagged to them,
		// even when the provider cannot be asked: that is when operators step in.
		independent(r.resolveAttempt, r.applyResolution, r.watchAmbiguity),
		r.disburse,
	)
}

// summarizePayout sets the Ready condition and observedGeneration from what the pass did.
func summarizePayout(p *paygatev1.Payout, reconcileErr error) {
	if p.Status.Phase == "" {
		p.Status.Phase = paygatev1.PayoutPending
	}
	status, reason, msg := metav1.ConditionFalse, ReasonAwaitingReservation, "Waiting for the balance to reserve the amount"
	switch a := p.Status.Attempt; {
	case p.Status.Phase == paygatev1.PayoutSuccess:
		status, reason, msg = metav1.ConditionTrue, ReasonPayoutSucceeded, "Payout disbursed"
	case p.Status.Phase == paygatev1.PayoutFailed:
		reason, msg = ReasonPayoutFailed, "Payout failed: "+p.Status.Reason
	case a != nil && a.Phase == paygatev1.AttemptAmbiguous:
		status, reason, msg = metav1.ConditionUnknown, ReasonAttemptAmbiguous, "The provider cannot tell yet whether money moved; asking again"
	case a != nil:
		reason, msg = ReasonDisbursing, "Waiting for the provider to complete the disbursement"
	}
	if reconcileErr != nil && !p.Terminal() {
		reason, msg = failureReason(reconcileErr)
	}
	setReady(&p.Status.Conditions, p.Generation, status, reason, msg)
	if reconcileErr == nil {
		p.Status.ObservedGeneration = p.Generation
	}
}

// resolveAttempt asks the provider about the disbursement while it may still move money.
func (r *PayoutReconciler) resolveAttempt(ctx context.Context, s *payoutScope) (ctrl.Result, error) {
	p := s.payout
	a := p.Status.Attempt
	if p.Terminal() || a == nil || !attemptInFlight(a.Phase) {
		return ctrl.Result{}, nil
	}
	prov, err := r.providerFor(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	res, err := prov.DisbursementStatus(ctx, r.disbursementRequest(p))
	recall := attemptRecall{recorder: r.Recorder, operation: "disbursement"}
	switch {
	case errors.Is(err, provider.ErrNotFound) && a.Phase == paygatev1.AttemptInitiating:
		// Recorded but never received (a crash or a lost request): disbursing now, with the same
		// reference, is the first disbursement the provider sees. Only on the record as the API
		// server holds it: a cache that has not caught up with "Pending" would otherwise disburse
		// again what a provider accepted and then forgot.
		if stale, serr := staleRead(ctx, r.APIReader, p); serr != nil || stale {
			return ctrl.Result{RequeueAfter: conflictRetry}, serr
		}
		res, err = prov.Disburse(ctx, r.disbursementRequest(p))
	case errors.Is(err, provider.ErrNotFound):
		// Accepted, then forgotten: flag it and keep asking; AmbiguousTooLong brings an operator.
		recall.forgot(p, p.Spec.Environment, &p.Status.Conditions, p.Generation, a.Reference)
		return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
	}
	if err != nil {
		return ctrl.Result{}, asProviderError(fmt.Errorf("asking the provider about disbursement %s: %w", a.Reference, err))
	}
	recall.knows(&p.Status.Conditions, p.Generation)
	r.applyResult(s, res)
	return r.pollIfInFlight(p), nil
}

// disburse answers a reserved payout: it checks the gates again, records the attempt (written
// ahead), then disburses.
func (r *PayoutReconciler) disburse(ctx context.Context, s *payoutScope) (ctrl.Result, error) {
	p := s.payout
	if p.Terminal() || p.Status.Attempt != nil || p.Status.ReservedAt == nil {
		return ctrl.Result{}, nil
	}
	m := &paygatev1.Merchant{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.MerchantRef.Name}, m); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("reading the merchant of payout %s: %w", p.Name, err)
		}
		r.fail(s, string(paygatev1.PayoutRejected), "the merchant no longer exists")
		return ctrl.Result{}, nil
	}
	if err := payouts.CheckGates(m); err != nil {
		r.fail(s, string(paygatev1.PayoutRejected), err.Error())
		return ctrl.Result{}, nil
	}
	if m.Spec.SettlementNumber != p.Spec.Destination {
		r.fail(s, string(paygatev1.PayoutRejected), "the settlement number changed after the payout was requested")
		return ctrl.Result{}, nil
	}
	// Write ahead: the attempt is stored before the provider hears of it. A conflict here means
	// another pass got there first; nothing was sent.
	p.Status.Phase = paygatev1.PayoutProcessing
	p.Status.Attempt = &paygatev1.DisbursementAttempt{
		Reference: p.DisbursementReference(), Phase: paygatev1.AttemptInitiating, StartedAt: metav1.NewMicroTime(s.now),
	}
	p.Status.UpdatedAt = ptrTime(s.now)
	if err := s.patch.Patch(ctx, p); err != nil {
		return ctrl.Result{}, fmt.Errorf("recording disbursement %s: %w", p.Status.Attempt.Reference, err)
	}
	failpoint.Hit(failpoint.PayoutAttemptRecorded)
	prov, err := r.providerFor(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	res, err := prov.Disburse(ctx, r.disbursementRequest(p))
	failpoint.Hit(failpoint.PayoutProviderAnswered)
	if err != nil {
		// Unknown outcome: the attempt stays Initiating and the next pass asks the provider.
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonDisbursementUnknown, "Disburse",
			"Disbursement %s: outcome unknown, will ask the provider", p.Status.Attempt.Reference)
		return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
	}
	r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, ReasonDisbursementStarted, "Disburse",
		"Disbursing %s %s through %s", p.Spec.PayableAmount, p.Spec.Currency, p.Spec.Gateway)
	r.applyResult(s, res)
	return r.pollIfInFlight(p), nil
}

// applyResolution ends an unresolved disbursement the way an operator who checked with the
// provider says (annotation paygate.dev/resolve-payout). A final provider answer always wins: it
// is applied first, and a terminal payout ignores the annotation.
func (r *PayoutReconciler) applyResolution(_ context.Context, s *payoutScope) (ctrl.Result, error) {
	p := s.payout
	a := p.Status.Attempt
	verdict := p.Annotations[paygatev1.AnnotationResolvePayout]
	// An attempt the provider has answered (Pending, Ambiguous) may be resolved; one it never
	// answered (Initiating: it may be down) only once the payout asked an operator to check.
	resolvable := a != nil && (a.Phase == paygatev1.AttemptPending || a.Phase == paygatev1.AttemptAmbiguous ||
		(a.Phase == paygatev1.AttemptInitiating && meta.IsStatusConditionTrue(p.Status.Conditions, paygatev1.ConditionAmbiguousTooLong)))
	if p.Terminal() || !resolvable || verdict == "" {
		return ctrl.Result{}, nil
	}
	switch verdict {
	case "success":
		a.Phase, a.FinishedAt = paygatev1.AttemptSucceeded, ptrTime(s.now)
		r.succeed(s)
	case "failed":
		a.Phase, a.Code, a.FinishedAt = paygatev1.AttemptFailed, string(paygatev1.PayoutResolvedFailed), ptrTime(s.now)
		r.fail(s, string(paygatev1.PayoutResolvedFailed), "an operator resolved the disbursement as not paid")
	default:
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonPayoutAmbiguous, "Resolve",
			"Ignoring %s=%q: use success or failed", paygatev1.AnnotationResolvePayout, verdict)
		return ctrl.Result{}, nil
	}
	s.resolvedByOperator = true
	r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, ReasonPayoutResolved, "Resolve", "An operator resolved the payout as %s", verdict)
	return ctrl.Result{}, nil
}

// watchAmbiguity raises AmbiguousTooLong when the provider has not answered finally within
// AmbiguousAfter (whether or not it could be asked in this pass), and clears it once the payout
// has a final answer, the provider's or an operator's.
func (r *PayoutReconciler) watchAmbiguity(_ context.Context, s *payoutScope) (ctrl.Result, error) {
	p := s.payout
	a := p.Status.Attempt
	if a == nil || p.Terminal() || !attemptInFlight(a.Phase) {
		if meta.FindStatusCondition(p.Status.Conditions, paygatev1.ConditionAmbiguousTooLong) != nil {
			reason, msg := ReasonAnsweredInTime, "The provider gave a final answer"
			if s.resolvedByOperator {
				reason, msg = ReasonPayoutResolved, "An operator resolved the payout"
			}
			meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: paygatev1.ConditionAmbiguousTooLong,
				Status: metav1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: p.Generation})
		}
		return ctrl.Result{}, nil
	}
	// Unresolved since the provider first left it open, or, for an attempt it never answered (it
	// is down, or the gateway is gone), since the attempt was recorded.
	since := a.StartedAt
	if a.AmbiguousSince != nil {
		since = *a.AmbiguousSince
	}
	left := since.Add(r.ambiguousAfter()).Sub(s.now)
	if left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	if !meta.IsStatusConditionTrue(p.Status.Conditions, paygatev1.ConditionAmbiguousTooLong) {
		msg := fmt.Sprintf("The provider has not confirmed disbursement %s for %s; check with the provider, then annotate %s=success or failed",
			a.Reference, r.ambiguousAfter(), paygatev1.AnnotationResolvePayout)
		meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: paygatev1.ConditionAmbiguousTooLong,
			Status: metav1.ConditionTrue, Reason: ReasonPayoutAmbiguous, Message: msg, ObservedGeneration: p.Generation})
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonPayoutAmbiguous, "Disburse", "%s", msg)
	}
	return ctrl.Result{}, nil
}

// applyResult records what the provider said about the disbursement.
func (r *PayoutReconciler) applyResult(s *payoutScope, res provider.Result) {
	p := s.payout
	a := p.Status.Attempt
	if res.ProviderReference != "" {
		a.ProviderReference = res.ProviderReference
	}
	if res.Remark != "" {
		p.Status.Remark = res.Remark
	}
	switch res.Status {
	case provider.StatusPending, provider.StatusAmbiguous:
		a.Phase = paygatev1.AttemptPending
		if res.Status == provider.StatusAmbiguous {
			a.Phase = paygatev1.AttemptAmbiguous
		}
		if a.AmbiguousSince == nil {
			a.AmbiguousSince = ptrTime(s.now)
		}
	case provider.StatusSuccess:
		a.Phase, a.FinishedAt = paygatev1.AttemptSucceeded, ptrTime(s.now)
		r.succeed(s)
	case provider.StatusFailed:
		code := string(res.Code)
		if code == "" {
			code = string(paygatev1.FailurePaymentDeclined)
		}
		a.Phase, a.Code, a.FinishedAt = paygatev1.AttemptFailed, code, ptrTime(s.now)
		r.fail(s, code, "the provider reported "+code)
	}
}

func (r *PayoutReconciler) succeed(s *payoutScope) {
	p := s.payout
	p.Status.Phase, p.Status.Reason = paygatev1.PayoutSuccess, ""
	if a := p.Status.Attempt; a != nil {
		metrics.DisbursementLatency.WithLabelValues(string(p.Spec.Environment)).Observe(s.now.Sub(a.StartedAt.Time).Seconds())
	}
	s.patch.OnWrite(func() {
		r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, ReasonPayoutSucceeded, "Disburse", "Paid out %s %s (fee %s, %s to the settlement number)",
			p.Spec.Amount, p.Spec.Currency, p.Spec.Fee, p.Spec.PayableAmount)
	})
}

// fail ends the payout with code; its reservation stops counting, which releases it.
func (r *PayoutReconciler) fail(s *payoutScope, code, why string) {
	p := s.payout
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
	}
}

func (r *PayoutReconciler) providerFor(ctx context.Context, p *paygatev1.Payout) (provider.Provider, error) {
	gw := &paygatev1.Gateway{}
	if err := r.Get(ctx, client.ObjectKey{Name: string(p.Spec.Gateway)}, gw); err != nil {
		if client.IgnoreNotFound(err) != nil || p.Spec.Environment == paygatev1.EnvironmentProduction {
			return nil, fmt.Errorf("reading gateway %s: %w", p.Spec.Gateway, err)
		}
		gw.Name = string(p.Spec.Gateway) // sandbox needs nothing from the gateway
	}
	prov, err := r.Providers.For(ctx, gw, p.Spec.Environment)
	if err != nil {
		return nil, asProviderError(fmt.Errorf("resolving the provider of gateway %s: %w", p.Spec.Gateway, err))
	}
	return prov, nil
}

func (r *PayoutReconciler) pollIfInFlight(p *paygatev1.Payout) ctrl.Result {
	if a := p.Status.Attempt; a != nil && attemptInFlight(a.Phase) && !p.Terminal() {
		return ctrl.Result{RequeueAfter: r.pollInterval()}
	}
	return ctrl.Result{}
}

func (r *PayoutReconciler) pollInterval() time.Duration {
	if r.PollInterval > 0 {
		return r.PollInterval
	}
	return 2 * time.Second
}

func (r *PayoutReconciler) ambiguousAfter() time.Duration {
	if r.AmbiguousAfter > 0 {
		return r.AmbiguousAfter
	}
	return DefaultPayoutAmbiguousAfter
}

func attemptInFlight(phase paygatev1.AttemptPhase) bool {
	return phase != paygatev1.AttemptSucceeded && phase != paygatev1.AttemptFailed
}

// emitEvent creates the payout's webhook event, once: its name derives from the payout's UID and
// the event type. It also counts the payout in paygate_payouts_total, once, where the event is born.
func (r *PayoutReconciler) emitEvent(ctx context.Context, p *paygatev1.Payout) error {
	eventType := webhookevents.PayoutEventType(p)
	created, err := emitOnce(ctx, r.Client, r.APIReader, r.Clock.Now(), webhookEvent{
		source:    webhookevents.Source{Kind: "Payout", Object: p, Merchant: p.Spec.MerchantRef.Name, Env: p.Spec.Environment},
		eventType: eventType,
		names:     []string{webhookevents.DeliveryName(string(p.UID), eventType)},
		target: func() (string, error) {
			return merchantWebhookURL(ctx, r.Client, p.Namespace, p.Spec.MerchantRef.Name, p.Spec.Environment)
		},
		data: func() (any, error) { return webhookevents.NewPayoutData(p) },
	})
	if err != nil || !created {
		return err
	}
	metrics.Payouts.WithLabelValues(string(p.Spec.Environment), string(p.Status.Phase), p.Status.Reason).Inc()
	return nil
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
