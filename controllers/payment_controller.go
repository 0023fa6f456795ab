// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/eligibility"
	webhookevents "github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/internal/failpoint"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/provider"
)

// Payment condition and event reasons (docs/payments.md, Conditions). A pass that failed sets
// Ready's reason from failureReason: ProviderUnreachable, KubernetesAPIError or
// RetryingAfterError.
const (
	ReasonPushFailed          = "PushFailed"
	ReasonPaymentSucceeded    = "PaymentSucceeded"
	ReasonPaymentFailed       = "PaymentFailed"
	ReasonPaymentExpired      = "PaymentExpired"
	ReasonAwaitingPush        = "AwaitingPush"
	ReasonAwaitingCustomer    = "AwaitingCustomer"
	ReasonAttemptAmbiguous    = "AttemptAmbiguous"
	ReasonFeeNotComputed      = "FeeNotComputed"
	ReasonNotSettled          = "NotSettled"
	ReasonSettledAfterFailure = "SettledAfterFailure"
)

// Providers resolves which provider carries a payment's money.
type Providers interface {
	// For returns the provider for a gateway in an environment. Sandbox payments always use the
	// simulator; production uses the gateway's provider.
	For(ctx context.Context, gw *paygatev1.Gateway, env paygatev1.Environment) (provider.Provider, error)
}

// PaymentReconciler drives a Payment from pending to success or failed through the mobile-money
// provider. Money movement is written ahead: an attempt is recorded in status before the
// provider is called, and an attempt whose outcome is unknown is resolved by status queries,
// never by a second push (docs/payments.md, Push attempts: written ahead).
type PaymentReconciler struct {
	client.Client
	// APIReader reads past the cache: before a payment is declined for want of a gateway, the
	// API server confirms what the cache says (the apiserver, another process with its own cache,
	// may have accepted the payment with a gateway this cache has not seen yet).
	APIReader client.Reader
	Recorder  events.EventRecorder
	Providers Providers
	// Clock is the controller's time source.
	Clock clock.PassiveClock
	// PollInterval is how often an attempt in flight is queried (default 2 s).
	PollInterval time.Duration
	// CallbackURL is where the upstream provider posts results (the apiserver's internal route).
	CallbackURL string

	// accepted holds the pushes the provider accepted whose Pending phase is not written yet.
	accepted acceptedPushes
}

type paymentScope struct {
	payment *paygatev1.Payment
	// patch holds what the API server has: the start of the pass, then the write-ahead record.
	patch *statusPatch[*paygatev1.Payment]
	now   time.Time
}

func paymentStatus(p *paygatev1.Payment) any { return &p.Status }

// +kubebuilder:rbac:groups=paygate.dev,resources=payments,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=payments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=webhookdeliveries,verbs=get;list;watch;create

// Reconcile moves one payment forward.
func (r *PaymentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	p := &paygatev1.Payment{}
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			r.accepted.forgetPayment(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patch := newStatusPatch(r.Client, p, paymentStatus)
	if p.Terminal() {
		// Terminal states never change. The event is emitted from the stored terminal state, so a
		// pass whose status write lost a race can never announce an outcome that did not stick.
		r.accepted.forget(p.LatestAttempt())
		if err := r.emitEvent(ctx, p, r.APIReader); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.checkLateSettlement(ctx, patch, p)
	}
	s := &paymentScope{payment: p, patch: patch, now: r.Clock.Now()}
	defer func() {
		summarizePayment(p, retErr)
		// The optimistic lock turns a pass that read a stale cache into a conflict and a retry,
		// never into a lost attempt.
		if err := patch.Patch(ctx, p); err != nil {
			retErr = errors.Join(retErr, client.IgnoreNotFound(fmt.Errorf("patching payment status: %w", err)))
			return
		}
		if a := p.LatestAttempt(); a != nil && a.Phase != paygatev1.AttemptInitiating {
			r.accepted.forget(a) // what the memory held is stored now
		}
		if p.Terminal() {
			// This pass stored the outcome (the write above succeeded under the optimistic lock,
			// so the payment exists as read): its event is born now, not on the watch event of
			// the write, which the payment's own status changes do not trigger (paymentPassNeeded).
			retErr = errors.Join(retErr, r.emitEvent(ctx, p, nil))
		}
	}()
	return runSteps(ctx, s,
		// A provider that cannot be asked does not keep a payment from expiring: expiry needs no
		// answer from it (an attempt of unknown outcome holds the payment open by itself).
		independent(r.resolveAttempt, r.expire),
		r.startPush,
	)
}

// summarizePayment sets the payment's Ready condition and observedGeneration from what the pass
// did; reconcileErr is the pass's error.
func summarizePayment(p *paygatev1.Payment, reconcileErr error) {
	if p.Status.Phase == "" {
		p.Status.Phase = paygatev1.PaymentPending
	}
	ready := metav1.Condition{Type: paygatev1.ConditionReady, ObservedGeneration: p.Generation}
	switch a := p.LatestAttempt(); {
	case p.Status.Phase == paygatev1.PaymentSuccess:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, ReasonPaymentSucceeded, "Payment settled"
	case p.Status.Phase == paygatev1.PaymentFailed:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonPaymentFailed, "Payment failed: "+p.Status.Reason
	case a == nil:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonAwaitingPush, "Waiting for a push request"
	case a.Phase == paygatev1.AttemptAmbiguous:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionUnknown, ReasonAttemptAmbiguous, "The provider cannot tell yet whether money moved; asking again"
	default:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonAwaitingCustomer, "Waiting for the customer to approve the prompt"
	}
	if reconcileErr != nil && !p.Terminal() {
		ready.Reason, ready.Message = failureReason(reconcileErr)
	}
	meta.SetStatusCondition(&p.Status.Conditions, ready)
	if reconcileErr == nil {
		p.Status.ObservedGeneration = p.Generation
	}
}

// resolveAttempt asks the provider about the newest attempt while it may still move money.
func (r *PaymentReconciler) resolveAttempt(ctx context.Context, s *paymentScope) (ctrl.Result, error) {
	p := s.payment
	a := p.LatestAttempt()
	if !a.InFlight() {
		return ctrl.Result{}, nil
	}
	prov, err := r.providerFor(ctx, p, a.Gateway)
	if err != nil {
		return ctrl.Result{}, err
	}
	if res, ok := r.accepted.lookup(a); ok {
		// This process saw the provider accept the push: the attempt is Pending, though its
		// record still says Initiating (startPush left that write to this pass).
		r.applyResult(s, a, res)
	}
	res, err := prov.PushStatus(ctx, r.pushRequest(p, a))
	switch {
	case errors.Is(err, provider.ErrNotFound) && a.Phase == paygatev1.AttemptInitiating:
		// The push was recorded but never reached the provider (a crash or a lost request):
		// pushing now, with the same reference, is the first push it will see. Only on the record
		// as the API server holds it: a cache that has not caught up with "Pending" would
		// otherwise push again what a provider accepted and then forgot.
		if stale, serr := staleRead(ctx, r.APIReader, p); serr != nil || stale {
			return ctrl.Result{RequeueAfter: conflictRetry}, serr
		}
		res, err = prov.Push(ctx, r.pushRequest(p, a))
	case errors.Is(err, provider.ErrNotFound):
		// Accepted, then forgotten: flag it and keep polling; expiry still ends the payment.
		pushRecall(r.Recorder).forgot(p, p.Spec.Environment, &p.Status.Conditions, p.Generation, a.Reference)
		return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("asking the provider about attempt %s: %w", a.Reference, asProviderError(err))
	}
	pushRecall(r.Recorder).knows(&p.Status.Conditions, p.Generation)
	r.applyResult(s, a, res)
	return r.pollIfInFlight(p), nil
}

func pushRecall(rec events.EventRecorder) attemptRecall {
	return attemptRecall{recorder: rec, operation: "push"}
}

// startPush answers a new push request: it records the attempt (written ahead), then pushes.
func (r *PaymentReconciler) startPush(ctx context.Context, s *paymentScope) (ctrl.Result, error) {
	p := s.payment
	pr := p.Spec.PushRequest
	if p.Terminal() || !p.PushUnanswered() || p.LatestAttempt().InFlight() ||
		p.Expired(s.now) || len(p.Status.Attempts) >= 20 {
		return ctrl.Result{}, nil
	}
	gw, err := r.chooseGateway(ctx, r.Client, p, pr.Gateway)
	if gw == nil && err == nil && r.APIReader != nil {
		gw, err = r.chooseGateway(ctx, r.APIReader, p, pr.Gateway)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if gw == nil {
		r.fail(s, paygatev1.FailurePaymentDeclined, "no eligible gateway is in service any more")
		return ctrl.Result{}, nil
	}
	attempt := paygatev1.PushAttempt{
		Sequence:  pr.Sequence,
		Reference: fmt.Sprintf("%s.%s.%d", p.Namespace, p.Name, pr.Sequence),
		Gateway:   gw.Code(),
		Phase:     paygatev1.AttemptInitiating,
		Fees:      gw.Spec.Fees,
		StartedAt: *ptrTime(s.now),
	}
	// Write ahead: the attempt is stored, under the optimistic lock, before the provider hears of
	// it. A pass that read a stale payment conflicts here and never pushes. The record carries the
	// summary the pass ends with when the provider accepts the push (Ready: AwaitingCustomer), so
	// that an accepted push needs no second write.
	p.Status.Phase = paygatev1.PaymentPending
	p.Status.Gateway = gw.Code()
	p.Status.Attempts = append(p.Status.Attempts, attempt)
	summarizePayment(p, nil)
	if err := s.patch.Patch(ctx, p); err != nil {
		return ctrl.Result{}, fmt.Errorf("recording push attempt %s: %w", attempt.Reference, err)
	}
	failpoint.Hit(failpoint.PaymentAttemptRecorded)
	prov, err := r.providerFor(ctx, p, gw.Code())
	if err != nil {
		return ctrl.Result{}, err
	}
	a := p.LatestAttempt()
	res, err := prov.Push(ctx, r.pushRequest(p, a))
	failpoint.Hit(failpoint.PaymentProviderAnswered)
	if err != nil {
		// Unknown outcome: the attempt stays Initiating and the next pass asks the provider.
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonPushFailed, "Push", "Push %s through %s: outcome unknown, will ask the provider: %v", a.Reference, gw.Name, err)
		return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
	}
	// A push the provider accepted is routine: no Event is written for it (docs/payments.md,
	// Events), and its Pending phase waits for the next write, which the first status query makes
	// (with the outcome, when the customer was quick): the write-ahead record already says what
	// the payment waits for. Should this process stop first, the next one finds the attempt
	// Initiating and asks the provider, as after any push whose answer was lost.
	if res.Status == provider.StatusPending && r.accepted.remember(a, res) {
		return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
	}
	r.applyResult(s, a, res)
	return r.pollIfInFlight(p), nil
}

// expire fails a pending payment that has expired (Payment.Expired, which hosted checkout asks
// too). An attempt of unknown outcome holds it open: money may have moved, so only a status
// answer may end it.
func (r *PaymentReconciler) expire(_ context.Context, s *paymentScope) (ctrl.Result, error) {
	p := s.payment
	if p.Terminal() {
		return ctrl.Result{}, nil
	}
	if !p.Expired(s.now) {
		if left := p.TimeLeft(s.now); left > 0 {
			return ctrl.Result{RequeueAfter: left}, nil
		}
		return ctrl.Result{RequeueAfter: r.pollInterval()}, nil // held open: ask the provider again
	}
	if a := p.LatestAttempt(); a.InFlight() {
		a.Phase, a.Code, a.FinishedAt = paygatev1.AttemptFailed, string(paygatev1.FailureExpiredSession), ptrTime(s.now)
	}
	r.fail(s, paygatev1.FailureExpiredSession, "the checkout session expired")
	return ctrl.Result{}, nil
}

// applyResult records what the provider said about attempt a and settles the payment when the
// attempt is final.
func (r *PaymentReconciler) applyResult(s *paymentScope, a *paygatev1.PushAttempt, res provider.Result) {
	p := s.payment
	if res.ProviderReference != "" {
		a.ProviderReference = res.ProviderReference
	}
	if res.Remark != "" {
		p.Status.Remark = res.Remark
	}
	switch res.Status {
	case provider.StatusPending:
		a.Phase = paygatev1.AttemptPending
	case provider.StatusAmbiguous:
		a.Phase = paygatev1.AttemptAmbiguous
	case provider.StatusSuccess:
		a.Phase, a.FinishedAt = paygatev1.AttemptSucceeded, ptrTime(s.now)
		r.succeed(s, a)
	case provider.StatusFailed:
		code := res.Code
		if code == "" {
			code = paygatev1.FailurePaymentDeclined
		}
		a.Phase, a.Code, a.FinishedAt = paygatev1.AttemptFailed, string(code), ptrTime(s.now)
		r.fail(s, code, "the provider reported "+string(code))
	}
}

// succeed settles the payment: fee from the attempt's fee schedule, half-up to the currency's
// scale, and net = amount - fee exactly.
func (r *PaymentReconciler) succeed(s *paymentScope, a *paygatev1.PushAttempt) {
	p := s.payment
	fee, net, err := paymentFee(p, a.Fees)
	if err != nil {
		// The amount was validated at creation and the fees at apply time; should they still not
		// compute, the customer has paid: settle with no fee and say so.
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonFeeNotComputed, "Settle", "Fee could not be computed (%v); settled without a fee", err)
		fee, net = money.Amount{}, money.MustParseAmount(string(p.Spec.Amount))
	}
	cur, _ := money.LookupCurrency(string(p.Spec.Currency))
	p.Status.Phase, p.Status.Reason = paygatev1.PaymentSuccess, ""
	p.Status.Gateway = a.Gateway
	p.Status.Fee = paygatev1.Decimal(fee.StringFixed(cur.Scale))
	p.Status.NetAmount = paygatev1.Decimal(net.StringFixed(cur.Scale))
	p.Status.SettledAt = ptrTime(s.now)
	msg := fmt.Sprintf("Settled %s %s (fee %s, net %s) through %s", p.Spec.Amount, p.Spec.Currency, p.Status.Fee, p.Status.NetAmount, a.Gateway)
	s.patch.OnWrite(func() { r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, ReasonPaymentSucceeded, "Settle", "%s", msg) })
}

func paymentFee(p *paygatev1.Payment, fees paygatev1.GatewayFees) (money.Amount, money.Amount, error) {
	cur, ok := money.LookupCurrency(string(p.Spec.Currency))
	if !ok {
		return money.Amount{}, money.Amount{}, fmt.Errorf("unknown currency %s", p.Spec.Currency)
	}
	amount, err := money.ParseAmount(string(p.Spec.Amount))
	if err != nil {
		return money.Amount{}, money.Amount{}, err
	}
	sched := money.FeeSchedule{}
	if fees.Percent != "" {
		if sched.Percent, err = money.ParseAmount(fees.Percent); err != nil {
			return money.Amount{}, money.Amount{}, err
		}
	}
	if fees.Fixed != "" {
		if sched.Fixed, err = money.ParseAmount(string(fees.Fixed)); err != nil {
			return money.Amount{}, money.Amount{}, err
		}
	}
	return money.ComputeFee(amount, sched, cur)
}

func (r *PaymentReconciler) fail(s *paymentScope, code paygatev1.FailureCode, why string) {
	p := s.payment
	p.Status.Phase, p.Status.Reason, p.Status.SettledAt = paygatev1.PaymentFailed, string(code), ptrTime(s.now)
	reason := ReasonPaymentFailed
	if code == paygatev1.FailureExpiredSession {
		reason = ReasonPaymentExpired
	}
	s.patch.OnWrite(func() {
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, reason, "Settle", "Payment failed with %s: %s", code, why)
	})
}

func (r *PaymentReconciler) pushRequest(p *paygatev1.Payment, a *paygatev1.PushAttempt) provider.PushRequest {
	phone := string(p.Spec.Customer.Phone)
	if p.Spec.PushRequest != nil && p.Spec.PushRequest.Sequence == a.Sequence {
		phone = string(p.Spec.PushRequest.Phone)
	}
	return provider.PushRequest{
		Reference: a.Reference, Phone: phone, Amount: string(p.Spec.Amount), Currency: string(p.Spec.Currency),
		Gateway: string(a.Gateway), Description: p.Spec.Description, CallbackURL: r.CallbackURL,
		StartedAt: a.StartedAt.Time,
	}
}

// chooseGateway picks the requested gateway when it is one of the payment's eligible gateways,
// else the first eligible gateway still in service (eligibility.Serves, which hosted checkout and
// the apiserver ask too).
func (r *PaymentReconciler) chooseGateway(ctx context.Context, reader client.Reader, p *paygatev1.Payment, requested paygatev1.GatewayCode) (*paygatev1.Gateway, error) {
	candidates := p.Spec.Gateways
	if requested != "" && slices.Contains(candidates, requested) {
		candidates = append([]paygatev1.GatewayCode{requested}, candidates...)
	}
	for _, code := range candidates {
		gw := &paygatev1.Gateway{}
		if err := reader.Get(ctx, client.ObjectKey{Name: string(code)}, gw); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("reading gateway %s: %w", code, err)
			}
			continue
		}
		if eligibility.Serves(gw, eligibility.RequestOf(p)) {
			return gw, nil
		}
	}
	return nil, nil
}

func (r *PaymentReconciler) providerFor(ctx context.Context, p *paygatev1.Payment, code paygatev1.GatewayCode) (provider.Provider, error) {
	gw := &paygatev1.Gateway{}
	if err := r.Get(ctx, client.ObjectKey{Name: string(code)}, gw); err != nil {
		if client.IgnoreNotFound(err) != nil || p.Spec.Environment == paygatev1.EnvironmentProduction {
			return nil, fmt.Errorf("reading gateway %s: %w", code, err)
		}
		gw.Name = string(code) // sandbox needs nothing from the gateway
	}
	prov, err := r.Providers.For(ctx, gw, p.Spec.Environment)
	if err != nil {
		return nil, fmt.Errorf("resolving the provider of gateway %s: %w", code, asProviderError(err))
	}
	return prov, nil
}

func (r *PaymentReconciler) pollIfInFlight(p *paygatev1.Payment) ctrl.Result {
	if p.LatestAttempt().InFlight() && !p.Terminal() {
		return ctrl.Result{RequeueAfter: r.pollInterval()}
	}
	return ctrl.Result{}
}

func (r *PaymentReconciler) pollInterval() time.Duration {
	if r.PollInterval > 0 {
		return r.PollInterval
	}
	return 2 * time.Second
}

// ptrTime is t as a payment records it: to the microsecond (docs/payments.md, Timestamps).
func ptrTime(t time.Time) *metav1.MicroTime { mt := metav1.NewMicroTime(t); return &mt }

// checkLateSettlement asks the provider about a failed payment's last attempt when a callback
// claims success after the fact (most often: the customer approved after the session expired).
// The phase stays failed, as terminal phases do; the condition, an event and the metric
// paygate_late_settlements_total tell operators to refund or reconcile the money.
func (r *PaymentReconciler) checkLateSettlement(ctx context.Context, patch *statusPatch[*paygatev1.Payment], p *paygatev1.Payment) error {
	hint := p.Annotations[paygatev1.AnnotationProviderCallback]
	a := p.LatestAttempt()
	if p.Status.Phase != paygatev1.PaymentFailed || hint == "" || a == nil {
		return nil
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, paygatev1.ConditionLateSettlement); c != nil && strings.Contains(c.Message, hint) {
		return nil // this callback was checked already
	}
	prov, err := r.providerFor(ctx, p, a.Gateway)
	if err != nil {
		return err
	}
	res, err := prov.PushStatus(ctx, r.pushRequest(p, a))
	if err != nil && !errors.Is(err, provider.ErrNotFound) {
		return fmt.Errorf("asking the provider about attempt %s after a late callback: %w", a.Reference, asProviderError(err))
	}
	cond := metav1.Condition{Type: paygatev1.ConditionLateSettlement, Status: metav1.ConditionFalse, Reason: ReasonNotSettled,
		Message: "The provider does not report this attempt settled (callback " + hint + ")", ObservedGeneration: p.Generation}
	if err == nil && res.Status == provider.StatusSuccess {
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonSettledAfterFailure
		cond.Message = fmt.Sprintf("The provider settled attempt %s after the payment failed with %s: refund or reconcile it (callback %s)", a.Reference, p.Status.Reason, hint)
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonSettledAfterFailure, "CheckLateSettlement", "%s", cond.Message)
		metrics.LateSettlements.WithLabelValues(string(p.Spec.Environment)).Inc()
	}
	meta.SetStatusCondition(&p.Status.Conditions, cond)
	if err := patch.Patch(ctx, p); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("recording a late settlement check: %w", err))
	}
	return nil
}

// emitEvent creates the payment's webhook event, once: its name derives from the payment's UID
// and the event type (an event an earlier version created keeps its own name). live, when not nil,
// confirms first that the payment still exists (a pass that read it from the cache); nil when the
// pass has just written it.
func (r *PaymentReconciler) emitEvent(ctx context.Context, p *paygatev1.Payment, live client.Reader) error {
	eventType, ok := webhookevents.PaymentEventType(p)
	if !ok || p.Labels[paygatev1.LabelInvoice] != "" {
		// An invoice's charge sends no payment.* event: the merchant hears of it through
		// invoice.paid or invoice.payment_failed, which carry its trx_id (docs/billing.md, Events).
		return nil
	}
	created, err := emitOnce(ctx, r.Client, live, r.Clock.Now(), webhookEvent{
		source:    webhookevents.Source{Kind: "Payment", Object: p, Merchant: p.Spec.MerchantRef.Name, Env: p.Spec.Environment},
		eventType: eventType,
		names:     webhookevents.DeliveryNames(string(p.UID), eventType),
		target: func() (string, error) {
			if p.Spec.WebhookURL != "" {
				return p.Spec.WebhookURL, nil
			}
			return merchantWebhookURL(ctx, r.Client, p.Namespace, p.Spec.MerchantRef.Name, p.Spec.Environment)
		},
		data:   func() (any, error) { return webhookevents.NewPaymentData(p) },
		legacy: func(now time.Time) (string, error) { return webhookevents.LegacyPaymentPayload(p, now) },
	})
	if err != nil || !created {
		return err
	}
	// Counted where the event is born: once per payment.
	metrics.PaymentsSettled.WithLabelValues(string(p.Spec.Environment), string(p.Status.Phase), p.Status.Reason).Inc()
	return nil
}

// paymentPassNeeded lets through the payment updates a pass must answer: a new push request (a
// spec change), a provider callback (an annotation), labels, deletion, and resyncs. A change of
// status alone is the controller's own write (it is the only writer of payment status), and the
// pass that wrote it has already scheduled what follows (the next status query, expiry) and
// emitted the outcome's event: answering it would be a pass that reads what it just wrote, on a
// cache that may not show it yet.
var paymentPassNeeded = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, cur := e.ObjectOld, e.ObjectNew
		if old == nil || cur == nil || old.GetResourceVersion() == cur.GetResourceVersion() {
			return true
		}
		return old.GetGeneration() != cur.GetGeneration() ||
			!maps.Equal(old.GetAnnotations(), cur.GetAnnotations()) ||
			!maps.Equal(old.GetLabels(), cur.GetLabels()) ||
			!slices.Equal(old.GetFinalizers(), cur.GetFinalizers()) ||
			!old.GetDeletionTimestamp().Equal(cur.GetDeletionTimestamp())
	},
}

// SetupWithManager watches Payments.
func (r *PaymentReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.Payment{}, builder.WithPredicates(paymentPassNeeded)).
		Owns(&paygatev1.WebhookDelivery{}).
		WithOptions(controllerOptions(concurrency)).
		Named("payment").
		Complete(quietConflicts(r))
}
