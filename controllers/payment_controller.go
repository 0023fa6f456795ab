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
	"github.com/paygate/paygate/internal/attempt"
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
	ReasonPushFailed = "PushFailed"
	// ReasonPaymentSucceeded is Ready's reason for a settled payment (no Kubernetes Event carries
	// it).
	ReasonPaymentSucceeded    = "PaymentSucceeded"
	ReasonPaymentFailed       = "PaymentFailed"
	ReasonPaymentExpired      = "PaymentExpired"
	ReasonAwaitingPush        = "AwaitingPush"
	ReasonAwaitingCustomer    = "AwaitingCustomer"
	ReasonAttemptAmbiguous    = "AttemptAmbiguous"
	ReasonFeeNotComputed      = "FeeNotComputed"
	ReasonNotSettled          = "NotSettled"
	ReasonSettledAfterFailure = "SettledAfterFailure"
	// ReasonAttemptWatchEnded: an attempt watched after its object ended got no final answer
	// within the watch window.
	ReasonAttemptWatchEnded = "AttemptWatchEnded"
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
// never by a push the attempt engine does not allow (docs/payments.md, The attempt protocol).
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
	// AttemptWatch is how long an attempt whose payment ended without the provider's final answer
	// is still asked about (default attempt.DefaultWatch; --attempt-watch).
	AttemptWatch time.Duration
	// FirstAttempts, when set, takes the payment's webhook event for its first attempt before its
	// delivery is created (the webhook delivery controller's; emitOnce). Nil creates the delivery
	// at once.
	FirstAttempts *WebhookFirstAttempts
}

type paymentScope struct {
	payment *paygatev1.Payment
	// patch holds what the API server has: the start of the pass, then the write-ahead record.
	patch *statusPatch[*paygatev1.Payment]
	now   time.Time
	// gateway is the gateway a new attempt goes through.
	gateway *paygatev1.Gateway
}

func paymentStatus(p *paygatev1.Payment) any { return &p.Status }

// +kubebuilder:rbac:groups=paygate.dev,resources=payments,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=payments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=webhookdeliveries,verbs=get;list;watch;create

// Reconcile moves one payment forward.
func (r *PaymentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	p := &paygatev1.Payment{}
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.releaseFromInvoice(ctx, p); err != nil {
		return ctrl.Result{}, err
	}
	s := &paymentScope{payment: p, patch: newStatusPatch(r.Client, p, paymentStatus), now: r.Clock.Now()}
	if p.Terminal() {
		// Terminal states never change. The event is emitted from the stored terminal state, so a
		// pass whose status write lost a race can never announce an outcome that did not stick.
		if err := r.emitEvent(ctx, p, r.APIReader); err != nil {
			return ctrl.Result{}, err
		}
		return r.watchAttempt(ctx, s)
	}
	defer func() {
		summarizePayment(p, retErr)
		// The optimistic lock turns a pass that read a stale cache into a conflict and a retry,
		// never into a lost attempt.
		if err := s.patch.Patch(ctx, p); err != nil {
			retErr = errors.Join(retErr, client.IgnoreNotFound(fmt.Errorf("patching payment status: %w", err)))
			return
		}
		if p.Terminal() {
			// This pass stored the outcome (the write above succeeded under the optimistic lock,
			// so the payment exists as read): its event is born now, not on the watch event of
			// the write, which the payment's own status changes do not trigger (paymentPassNeeded).
			retErr = errors.Join(retErr, r.emitEvent(ctx, p, nil))
		}
	}()
	return runSteps(ctx, s, r.driveAttempt)
}

// releaseFromInvoice drops the invoice owner reference a charge created by an earlier version
// carries, so that deleting its subscription or invoice cannot garbage-collect money that moved
// (docs/billing.md, Deleting billing objects). Charges created now have none.
func (r *PaymentReconciler) releaseFromInvoice(ctx context.Context, p *paygatev1.Payment) error {
	if p.Labels[paygatev1.LabelInvoice] == "" || !slices.ContainsFunc(p.OwnerReferences, isInvoiceOwner) {
		return nil
	}
	base := p.DeepCopy()
	p.OwnerReferences = slices.DeleteFunc(p.OwnerReferences, isInvoiceOwner)
	if err := r.Patch(ctx, p, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("releasing charge %s from its invoice: %w", p.Name, err))
	}
	return nil
}

func isInvoiceOwner(o metav1.OwnerReference) bool {
	return o.Kind == "Invoice" && strings.HasPrefix(o.APIVersion, paygatev1.GroupVersion.Group+"/")
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

// driveAttempt runs the attempt engine (internal/attempt) on the payment's newest attempt: it
// starts the attempt a new push request asks for (written ahead), asks the provider about one in
// flight, sends again only where the engine allows it, and ends the payment at its deadline
// (docs/payments.md, The attempt protocol).
func (r *PaymentReconciler) driveAttempt(ctx context.Context, s *paymentScope) (ctrl.Result, error) {
	p := s.payment
	a := p.LatestAttempt()
	in := attempt.Input{Now: s.now, Deadline: p.Spec.ExpiresAt.Time, Poll: r.pollInterval(), Watch: r.AttemptWatch}
	var (
		gw      *paygatev1.Gateway
		provErr error
		calls   = r.attemptCalls(s)
	)
	switch {
	case a.InFlight():
		in.Record = pushRecord(a)
		calls.prov, provErr = r.providerFor(ctx, p, a.Gateway)
	case p.PushUnanswered() && len(p.Status.Attempts) < paygatev1.MaxPushAttempts:
		in.Start = true
		if !p.Expired(s.now) {
			var err error
			if gw, err = r.chooseGateway(ctx, r.Client, p, p.Spec.PushRequest.Gateway); gw == nil && err == nil && r.APIReader != nil {
				gw, err = r.chooseGateway(ctx, r.APIReader, p, p.Spec.PushRequest.Gateway)
			}
			if err != nil {
				return ctrl.Result{}, err
			}
			if gw == nil {
				r.fail(s, paygatev1.FailurePaymentDeclined, "no eligible gateway is in service any more")
				return ctrl.Result{}, nil
			}
			calls.prov, provErr = r.providerFor(ctx, p, gw.Code())
			s.gateway = gw
		}
	}
	st, err := runAttempt(ctx, in, calls)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.applyDecision(s, st)
	if st.sendErr != nil {
		// Unknown outcome: the attempt stays Initiating and the next pass asks the provider.
		ref := p.LatestAttempt().Reference
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonPushFailed, "Push", "Push %s", describeSendError(ref, st.sendErr))
	}
	res := ctrl.Result{RequeueAfter: st.decision.RetryAfter}
	if !p.Terminal() && !p.LatestAttempt().InFlight() {
		res.RequeueAfter = p.TimeLeft(s.now) // the deadline, which ends the payment
	}
	if p.Terminal() {
		return res, nil
	}
	if st.providerErr != nil {
		provErr = errors.Join(provErr, asProviderError(fmt.Errorf("asking the provider about payment %s: %w", p.Name, st.providerErr)))
	}
	if provErr != nil {
		return res, provErr
	}
	return res, nil
}

// attemptCalls are the payment's provider calls and its write-ahead, for the engine's shell.
func (r *PaymentReconciler) attemptCalls(s *paymentScope) attemptCalls {
	p := s.payment
	return attemptCalls{
		send: func(ctx context.Context, prov provider.Provider) (provider.Result, error) {
			return prov.Push(ctx, r.pushRequest(p, p.LatestAttempt()))
		},
		query: func(ctx context.Context, prov provider.Provider) (provider.Result, error) {
			return prov.PushStatus(ctx, r.pushRequest(p, p.LatestAttempt()))
		},
		writeAhead: func(ctx context.Context, rec attempt.Record) error {
			a := p.LatestAttempt()
			if !a.InFlight() {
				// A new attempt. Its record carries the summary the pass ends with when the
				// provider accepts the push (Ready: AwaitingCustomer).
				gw := s.gateway
				pr := p.Spec.PushRequest
				p.Status.Phase = paygatev1.PaymentPending
				p.Status.Gateway = gw.Code()
				p.Status.Attempts = append(p.Status.Attempts, paygatev1.PushAttempt{
					Sequence: pr.Sequence, Reference: fmt.Sprintf("%s.%s.%d", p.Namespace, p.Name, pr.Sequence),
					Gateway: gw.Code(), Phase: paygatev1.AttemptInitiating, Fees: gw.Spec.Fees, StartedAt: *ptrTime(rec.StartedAt),
				})
				a = p.LatestAttempt()
				summarizePayment(p, nil)
			}
			storeRecord(rec, s.now, &a.Phase, &a.Code, &a.Sends, &a.LastSentAt, &a.WatchUntil, &a.FinishedAt)
			if err := s.patch.Patch(ctx, p); err != nil {
				return fmt.Errorf("recording push attempt %s: %w", a.Reference, err)
			}
			return nil
		},
		recorded: func() (provider.Result, bool) {
			if a := p.LatestAttempt(); a != nil {
				return recordedCallback(p.Annotations, a.Reference)
			}
			return provider.Result{}, false
		},
		sent:     func() { hitFailpoint(failpoint.PaymentAttemptRecorded) },
		answered: func() { hitFailpoint(failpoint.PaymentProviderAnswered) },
	}
}

// pushRecord is the engine's view of a push attempt.
func pushRecord(a *paygatev1.PushAttempt) attempt.Record {
	return recordOf(a.Phase, a.Code, a.StartedAt, a.Sends, a.LastSentAt, a.WatchUntil)
}

// applyDecision stores what the engine decided in the payment's status; what it announces waits
// for the write (statusPatch.OnWrite).
func (r *PaymentReconciler) applyDecision(s *paymentScope, st attemptStep) {
	p, d := s.payment, st.decision
	a := p.LatestAttempt()
	switch {
	case a == nil || d.Record.Phase == "": // the engine did not rule on the newest attempt
	case d.Deferrable:
		// The provider accepted the push and de-duplicates by our reference: the attempt stays as
		// written ahead (its Ready condition already says the customer is being asked), and the
		// pass writes nothing; the provider's reference and remark come again with its next
		// answer. One status write fewer per payment (docs/performance.md, Writes per payment).
	default:
		storeRecord(d.Record, s.now, &a.Phase, &a.Code, &a.Sends, &a.LastSentAt, &a.WatchUntil, &a.FinishedAt)
		if st.hasResult {
			if st.result.ProviderReference != "" {
				a.ProviderReference = st.result.ProviderReference
			}
			if st.result.Remark != "" {
				p.Status.Remark = st.result.Remark
			}
		}
	}
	switch d.Recall {
	case attempt.RecallForgot:
		pushRecall(r.Recorder, s.patch).forgot(p, p.Spec.Environment, &p.Status.Conditions, p.Generation, a.Reference)
	case attempt.RecallKnows:
		pushRecall(r.Recorder, s.patch).knows(&p.Status.Conditions, p.Generation)
	}
	switch d.Outcome {
	case attempt.OutcomeSucceeded:
		r.succeed(s, a)
	case attempt.OutcomeFailed:
		r.fail(s, paygatev1.FailureCode(d.Code), "the provider reported "+d.Code)
	case attempt.OutcomeExpired:
		r.fail(s, paygatev1.FailureExpiredSession, "the checkout session expired")
		if a.InFlight() && d.Record.Watched(s.now) {
			env := string(p.Spec.Environment)
			s.patch.OnWrite(func() { metrics.AttemptWatches.WithLabelValues("push", env, "started").Inc() })
		}
	}
}

func pushRecall(rec events.EventRecorder, patch interface{ OnWrite(func()) }) attemptRecall {
	return attemptRecall{recorder: rec, operation: "push", announce: patch.OnWrite}
}

// watchAttempt keeps asking the provider about the last attempt of a payment that ended without
// the provider's final answer (status.attempts[].watchUntil), and about any attempt a provider
// callback claims settled after the payment failed. The phase stays as it is (terminal phases
// never change); a late settlement gets the condition LateSettlement=True (SettledAfterFailure),
// a Warning event and paygate_late_settlements_total, so that operators refund or reconcile the
// money.
func (r *PaymentReconciler) watchAttempt(ctx context.Context, s *paymentScope) (ctrl.Result, error) {
	p := s.payment
	a := p.LatestAttempt()
	if a == nil {
		return ctrl.Result{}, nil
	}
	hint := p.Annotations[paygatev1.AnnotationProviderCallback]
	if c := meta.FindStatusCondition(p.Status.Conditions, paygatev1.ConditionLateSettlement); hint != "" && c != nil && strings.Contains(c.Message, hint) {
		hint = "" // this callback was checked already
	}
	ended := attempt.EndedFailed
	if p.Status.Phase == paygatev1.PaymentSuccess {
		ended = attempt.EndedSucceeded
	}
	in := attempt.Input{Record: pushRecord(a), Ended: ended, Now: s.now, Hint: hint != "", Poll: r.pollInterval(), Watch: r.AttemptWatch}
	st, acted, err := watchEnded(ctx, in, r.attemptCalls(s), func() provider.Provider { prov, _ := r.providerFor(ctx, p, a.Gateway); return prov })
	if err != nil || !acted {
		return ctrl.Result{RequeueAfter: st.decision.RetryAfter}, err
	}
	d := st.decision
	// A late settlement is what the merchant's policy makes of it (late_settlement.go), decided
	// before anything is written: a pass that cannot read the policy or create the refund writes
	// nothing, and the next asks the provider again.
	outcome := "refund or reconcile it"
	if d.Outcome == attempt.OutcomeLateSuccess && !p.SettledLate() {
		policy, err := r.lateSettlementPolicy(ctx, p)
		if err != nil {
			return ctrl.Result{}, err
		}
		if outcome, err = r.settleLate(ctx, s, a, policy); err != nil {
			return ctrl.Result{}, err
		}
	}
	storeRecord(d.Record, s.now, &a.Phase, &a.Code, &a.Sends, &a.LastSentAt, &a.WatchUntil, &a.FinishedAt)
	env := p.Spec.Environment
	watchNews{obj: p, conditions: &p.Status.Conditions, generation: p.Generation, announce: s.patch.OnWrite, recorder: r.Recorder,
		operation: "push", env: env, reference: a.Reference,
		late: func(attempt.Outcome) string {
			msg := fmt.Sprintf("The provider settled attempt %s after the payment failed with %s: %s", a.Reference, p.Status.Reason, outcome)
			if hint != "" {
				msg += " (callback " + hint + ")"
			}
			return msg
		},
		also: func(attempt.Outcome) { metrics.LateSettlements.WithLabelValues(string(env)).Inc() },
	}.tell(d, in.Record.Watched(s.now))
	if hint != "" && st.asked && d.Outcome != attempt.OutcomeLateSuccess && !p.SettledLate() { // a late settlement stays settled (and counted)
		meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: paygatev1.ConditionLateSettlement, Status: metav1.ConditionFalse,
			Reason: ReasonNotSettled, Message: "The provider does not report this attempt settled (callback " + hint + ")", ObservedGeneration: p.Generation})
	}
	if err := s.patch.Patch(ctx, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("recording what the provider says of watched attempt %s: %w", a.Reference, err))
	}
	if hint != "" && st.providerErr != nil {
		return ctrl.Result{}, asProviderError(fmt.Errorf("asking the provider about attempt %s after a late callback: %w", a.Reference, st.providerErr))
	}
	return ctrl.Result{RequeueAfter: d.RetryAfter}, nil
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
	// No Kubernetes Event: a settled payment is the routine case, and its status (phase, Ready
	// PaymentSucceeded, fee and net), its webhook event and paygate_payments_settled_total say
	// so. An Event for each would be a write per payment for nothing an operator acts on;
	// failures, expiries, late settlements and anomalies keep theirs (docs/payments.md,
	// Conditions and events).
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
		StartedAt: a.StartedAt.Time, ProviderReference: p.AttemptProviderReference(a),
	}
}

// chooseGateway picks the requested gateway when it is one of the payment's eligible gateways,
// else the first eligible gateway still in service (eligibility.Serves, which hosted checkout and
// the apiserver ask too). Without a requested gateway (the customer chose no network), pawaPay's
// prediction of the customer's network may prefer a later pawapay gateway (predictedGateway).
func (r *PaymentReconciler) chooseGateway(ctx context.Context, reader client.Reader, p *paygatev1.Payment, requested paygatev1.GatewayCode) (*paygatev1.Gateway, error) {
	candidates := p.Spec.Gateways
	if requested != "" && slices.Contains(candidates, requested) {
		candidates = append([]paygatev1.GatewayCode{requested}, candidates...)
	}
	var inService []*paygatev1.Gateway
	for _, code := range candidates {
		gw := &paygatev1.Gateway{}
		if err := reader.Get(ctx, client.ObjectKey{Name: string(code)}, gw); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("reading gateway %s: %w", code, err)
			}
			continue
		}
		if eligibility.Serves(gw, eligibility.RequestOf(p)) {
			if requested != "" {
				return gw, nil
			}
			inService = append(inService, gw)
		}
	}
	return r.predictedGateway(ctx, p, inService), nil
}

func (r *PaymentReconciler) providerFor(ctx context.Context, p *paygatev1.Payment, code paygatev1.GatewayCode) (provider.Provider, error) {
	return gatewayProvider(ctx, r.Client, r.Providers, code, p.Spec.Environment)
}

func (r *PaymentReconciler) pollInterval() time.Duration {
	return orDefault(r.PollInterval, defaultPollInterval)
}

// ptrTime is t as a payment records it: to the microsecond (docs/payments.md, Timestamps).
func ptrTime(t time.Time) *metav1.MicroTime { mt := metav1.NewMicroTime(t); return &mt }

// emitEvent announces the payment's outcome to the merchant, once (emitOnce): its webhook event's
// name derives from the payment's UID and the event type (an event an earlier version created
// keeps its own name), and its first attempt is the webhook delivery controller's, never this
// worker's. live, when not nil, confirms first that the payment still exists (a pass that read it
// from the cache); nil when the pass has just written it.
func (r *PaymentReconciler) emitEvent(ctx context.Context, p *paygatev1.Payment, live client.Reader) error {
	eventType, ok := webhookevents.PaymentEventType(p)
	if !ok || p.Labels[paygatev1.LabelInvoice] != "" {
		// An invoice's charge sends no payment.* event: the merchant hears of it through
		// invoice.paid or invoice.payment_failed, which carry its trx_id (docs/billing.md, Events).
		return nil
	}
	env, phase, reason := string(p.Spec.Environment), string(p.Status.Phase), p.Status.Reason
	return emitOnce(ctx, r.Client, live, r.FirstAttempts, r.Clock.Now(), webhookEvent{
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
		// Counted where the event is born: once per payment.
		born: func() { metrics.PaymentsSettled.WithLabelValues(env, phase, reason).Inc() },
	})
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

// deliveryGone lets through only the deletion of a payment's webhook event: the pass it wakes
// finds the payment without its event and, if the payment still exists, announces it again. A new
// event or a delivery's progress needs no pass of its payment; answering the create (made by the
// webhook delivery controller after the first attempt, a moment after the outcome was stored)
// would be a pass on a payment cache that may not show the outcome yet, which asks the provider
// again and loses the optimistic lock.
var deliveryGone = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// SetupWithManager watches Payments, and the deletion of their webhook events.
func (r *PaymentReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.Payment{}, builder.WithPredicates(paymentPassNeeded)).
		Owns(&paygatev1.WebhookDelivery{}, builder.WithPredicates(deliveryGone)).
		WithOptions(controllerOptions(concurrency)).
		Named("payment").
		Complete(quietConflicts(r))
}
