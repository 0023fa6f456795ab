// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/billing"
	webhookevents "github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/money"
)

// Subscription and invoice condition reasons (docs/billing.md, Conditions). A pass that failed
// sets Ready's reason from failureReason.
const (
	ReasonSubscriptionActive    = "Active"
	ReasonAwaitingFirstPayment  = "AwaitingFirstPayment"
	ReasonPastDue               = "PastDue"
	ReasonSubscriptionSuspended = "Suspended"
	ReasonSubscriptionCancelled = "Cancelled"
	ReasonPlanNotFound          = "PlanNotFound"
	ReasonConsentInvalid        = "ConsentInvalid"
	ReasonPlanPriceChanged      = "PlanPriceChanged"
	ReasonMerchantNotFound      = "MerchantNotFound"
	ReasonInvoiceMissing        = "InvoiceMissing"
	ReasonNoPaymentMethod       = "NoPaymentMethod"

	ReasonInvoicePaid    = "InvoicePaid"
	ReasonInvoiceVoid    = "InvoiceVoid"
	ReasonAwaitingCharge = "AwaitingCharge"
	ReasonChargeInFlight = "ChargeInFlight"
	ReasonChargeFailed   = "ChargeFailed"
)

// Reasons of the Kubernetes events the billing controller records on a subscription.
const (
	ReasonInvoiceOpened         = "InvoiceOpened"
	ReasonChargeStarted         = "ChargeStarted"
	ReasonChargeDeferred        = "ChargeDeferred"
	ReasonInvoiceVoided         = "InvoiceVoided"
	ReasonSubscriptionResumed   = "Resumed"
	ReasonResumeIgnored         = "ResumeIgnored"
	ReasonSubscriptionConfirmed = "Confirmed"
)

// AnnotationDunningSince on an Invoice is the number of charge attempts the invoice had when its
// suspended subscription was resumed: only the charges after it count toward the dunning policy
// (docs/billing.md, Resuming a suspended subscription). Absent means 0: every charge counts.
const AnnotationDunningSince = "paygate.dev/dunning-since-attempt"

// DefaultChargeLifetime is how long a charge's USSD prompt waits for the customer when the
// merchant sets no checkout lifetime: the apiserver's default checkout session.
const DefaultChargeLifetime = 30 * time.Minute

// maxInvoiceAttempts is the most charges one invoice records (the CRD's bound on attemptCount).
const maxInvoiceAttempts = 1000

// SubscriptionReconciler bills subscriptions (docs/billing.md): it opens each period's Invoice at
// the period's start on the subscription's clock, charges it with a push Payment owned by the
// invoice (recorded in the invoice's status before the Payment exists: written ahead), reads the
// charges' outcomes into the invoice and the subscription (billing.State.Next), retries on the
// plan's dunning schedule inside its charging window, suspends, cancels and resumes, and sends the
// subscription.* and invoice.* events. It is the only writer of subscription and invoice status.
type SubscriptionReconciler struct {
	client.Client
	// APIReader reads past the cache: an invoice or a charge the cache does not show yet is read
	// from the API server before the controller acts on its absence.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Clock is the controller's time source; a subscription's clock is this plus its test
	// clock's offset.
	Clock clock.PassiveClock
	// ChargeLifetime is how long a charge waits for the customer's PIN when the merchant sets no
	// checkoutLifetimeMinutes (default DefaultChargeLifetime).
	ChargeLifetime time.Duration
	// RetryAfter is how soon a subscription that cannot be billed for want of its merchant or a
	// payment method is looked at again (default 1 minute).
	RetryAfter time.Duration
}

type subscriptionScope struct {
	sub   *paygatev1.Subscription
	patch *statusPatch[*paygatev1.Subscription]
	// now is real time; subNow the subscription's clock (now plus the test clock's offset).
	now, subNow time.Time

	plan     *paygatev1.BillingPlan
	merchant *paygatev1.Merchant
	schedule billing.Schedule
	anchor   time.Time
	// blocked is the Ready reason why the subscription cannot be billed now, with a message.
	// While it is set nothing is opened or charged; cancellation is still answered.
	blocked, blockedMessage string
	retry                   bool // blocked by something no watch reports: look again after RetryAfter

	// invoice is the latest invoice (the highest period), nil before the first.
	invoice  *paygatev1.Invoice
	invPatch *statusPatch[*paygatev1.Invoice]
	// firstInvoice: no invoice of an earlier period exists, so the invoice's first charge is the
	// subscription's first and goes out at once, whatever the hour.
	firstInvoice bool
	// charges are the payments invoice.status.payments names, oldest first (nil: not found).
	charges []*paygatev1.Payment
	// latest is the newest charge; latestMissing says it is recorded but its Payment does not
	// exist (a manager stopped between the two writes).
	latest        *paygatev1.Payment
	latestMissing bool

	// wake is the earliest time, on the subscription's clock, something is due.
	wake time.Time
}

func (s *subscriptionScope) block(reason, message string) {
	if s.blocked == "" {
		s.blocked, s.blockedMessage = reason, message
	}
}

func (s *subscriptionScope) wakeAt(t time.Time) {
	if s.wake.IsZero() || t.Before(s.wake) {
		s.wake = t
	}
}

// chargeInFlight reports whether the newest charge may still move money or is about to be sent.
func (s *subscriptionScope) chargeInFlight() bool {
	return s.latestMissing || (s.latest != nil && !s.latest.Terminal())
}

// location is the plan's time zone, for the times of events; UTC when the plan cannot say.
func (s *subscriptionScope) location() *time.Location {
	if loc := s.schedule.Window.Location(); loc != nil {
		return loc
	}
	if s.plan != nil {
		if loc, err := billing.LoadTimeZone(s.plan.Spec.ChargingWindow.TimeZone); err == nil {
			return loc
		}
	}
	return time.UTC
}

func subscriptionStatus(s *paygatev1.Subscription) any { return &s.Status }
func invoiceStatus(i *paygatev1.Invoice) any           { return &i.Status }

// secondTime is t as the status's metav1.Time stores it: to the second.
func secondTime(t time.Time) *metav1.Time { mt := metav1.NewTime(t.Truncate(time.Second)); return &mt }

// +kubebuilder:rbac:groups=paygate.dev,resources=subscriptions,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=subscriptions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=subscriptions/finalizers,verbs=update
// +kubebuilder:rbac:groups=paygate.dev,resources=invoices,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=invoices/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=invoices/finalizers,verbs=update
// +kubebuilder:rbac:groups=paygate.dev,resources=billingplans,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=payments,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=paygate.dev,resources=merchants,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=gateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=gatewayselections,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=webhookdeliveries,verbs=get;list;watch;create

// Reconcile moves one subscription forward.
func (r *SubscriptionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	sub := &paygatev1.Subscription{}
	if err := r.Get(ctx, req.NamespacedName, sub); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !sub.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	now := r.Clock.Now()
	s := &subscriptionScope{sub: sub, patch: newStatusPatch(r.Client, sub, subscriptionStatus),
		now: now, subNow: billing.SubscriptionTime(now, sub.ClockOffsetSeconds())}
	defer func() {
		r.summarize(s, retErr)
		if err := s.patch.Patch(ctx, sub); err != nil {
			retErr = errors.Join(retErr, client.IgnoreNotFound(fmt.Errorf("patching subscription status: %w", err)))
		}
	}()
	res, err := runSteps(ctx, s,
		r.loadPlan,
		r.loadInvoice,
		r.settleCharges,
		r.cancel,
		r.resume,
		r.announce,
		r.openInvoice,
		r.charge,
	)
	return lowestRequeue(res, r.wakeResult(s)), err
}

// loadPlan reads the merchant and the plan, and checks the consent still covers the plan's price.
func (r *SubscriptionReconciler) loadPlan(ctx context.Context, s *subscriptionScope) (ctrl.Result, error) {
	sub := s.sub
	m := &paygatev1.Merchant{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: sub.Spec.MerchantRef.Name}, m); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("reading the merchant of subscription %s: %w", sub.Name, err)
		}
		s.block(ReasonMerchantNotFound, "Merchant "+sub.Spec.MerchantRef.Name+" does not exist; nothing is charged until it does")
		s.retry = true
	} else {
		s.merchant = m
	}
	plan := &paygatev1.BillingPlan{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: sub.Spec.PlanRef.Name}, plan); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("reading the plan of subscription %s: %w", sub.Name, err)
		}
		s.block(ReasonPlanNotFound, "BillingPlan "+sub.Spec.PlanRef.Name+" does not exist; nothing is charged until it does")
		return ctrl.Result{}, nil
	}
	s.plan = plan
	schedule, err := billing.PlanSchedule(&plan.Spec)
	if err != nil {
		s.block(ReasonConfigInvalid, "BillingPlan "+plan.Name+" cannot be used: "+err.Error())
		return ctrl.Result{}, nil
	}
	s.schedule, s.anchor = schedule, billing.Anchor(sub.Spec.Consent.RecordedAt.Time)
	if err := billing.VerifyConsent(&sub.Spec.Consent); err != nil {
		s.block(ReasonConsentInvalid, "The consent record does not verify ("+err.Error()+"); nothing is charged")
	}
	if !billing.ConsentCovers(&sub.Spec.Consent, &plan.Spec) {
		s.block(ReasonPlanPriceChanged, "BillingPlan "+plan.Name+" no longer has the price the customer consented to; nothing is charged")
	}
	return ctrl.Result{}, nil
}

// loadInvoice finds the latest invoice (the highest period among the subscription's invoices and
// status.currentPeriod) and its charges.
func (r *SubscriptionReconciler) loadInvoice(ctx context.Context, s *subscriptionScope) (ctrl.Result, error) {
	sub := s.sub
	var list paygatev1.InvoiceList
	if err := r.List(ctx, &list, client.InNamespace(sub.Namespace), client.MatchingLabels{paygatev1.LabelSubscription: sub.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the invoices of subscription %s: %w", sub.Name, err)
	}
	latest, lowest := sub.Status.CurrentPeriod, int32(0)
	for i := range list.Items {
		if inv := &list.Items[i]; inv.Spec.SubscriptionRef.Name == sub.Name {
			latest = max(latest, inv.Spec.Period)
			if lowest == 0 || inv.Spec.Period < lowest {
				lowest = inv.Spec.Period
			}
		}
	}
	if latest == 0 {
		s.firstInvoice = true
		return ctrl.Result{}, nil
	}
	name := paygatev1.InvoiceName(sub.Name, latest)
	inv, err := r.readInvoice(ctx, sub.Namespace, name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if inv == nil {
		// Invoices are named by period so that a period is billed once: one that was deleted
		// cannot be made again without billing its period twice.
		s.block(ReasonInvoiceMissing, fmt.Sprintf("Invoice %s (period %d) was deleted; nothing more is billed", name, latest))
		return ctrl.Result{}, nil
	}
	s.setInvoice(r.Client, inv)
	s.firstInvoice = lowest == 0 || lowest >= inv.Spec.Period
	return ctrl.Result{}, r.loadCharges(ctx, s)
}

// readInvoice reads an invoice from the cache, else from the API server; nil when it does not exist.
func (r *SubscriptionReconciler) readInvoice(ctx context.Context, ns, name string) (*paygatev1.Invoice, error) {
	inv := &paygatev1.Invoice{}
	err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, inv)
	if apierrors.IsNotFound(err) && r.APIReader != nil {
		err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, inv)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading invoice %s: %w", name, err)
	}
	return inv, nil
}

func (s *subscriptionScope) setInvoice(c client.StatusClient, inv *paygatev1.Invoice) {
	s.invoice, s.invPatch = inv, newStatusPatch(c, inv, invoiceStatus)
	s.charges, s.latest, s.latestMissing = nil, nil, false
	st := &s.sub.Status
	st.CurrentPeriod, st.LatestInvoice = inv.Spec.Period, inv.Name
	st.CurrentPeriodStart, st.CurrentPeriodEnd = secondTime(inv.Spec.PeriodStart.Time), secondTime(inv.Spec.PeriodEnd.Time)
}

// loadCharges reads the invoice's charges. The newest one is read from the API server when the
// cache does not have it: only a Payment that truly does not exist is created again.
func (r *SubscriptionReconciler) loadCharges(ctx context.Context, s *subscriptionScope) error {
	inv := s.invoice
	s.charges = make([]*paygatev1.Payment, len(inv.Status.Payments))
	for i, name := range inv.Status.Payments {
		newest := i == len(inv.Status.Payments)-1
		key := client.ObjectKey{Namespace: inv.Namespace, Name: name}
		p := &paygatev1.Payment{}
		err := r.Get(ctx, key, p)
		if apierrors.IsNotFound(err) && newest && r.APIReader != nil {
			err = r.APIReader.Get(ctx, key, p)
		}
		switch {
		case apierrors.IsNotFound(err):
			s.latestMissing = newest
			continue
		case err != nil:
			return fmt.Errorf("reading charge %s of invoice %s: %w", name, inv.Name, err)
		}
		s.charges[i] = p
		if newest {
			s.latest = p
		}
	}
	return nil
}

// dunningFailures counts the invoice's failed charges that count toward the dunning policy: all
// of them, or those after the resume the invoice's AnnotationDunningSince records. Charges of an
// invoice fail in a row (a paid charge ends the invoice), so this is the subscription's
// consecutive failures, derived from what is stored: a failure is never counted twice.
func dunningFailures(inv *paygatev1.Invoice, charges []*paygatev1.Payment) int32 {
	since, _ := strconv.ParseInt(inv.Annotations[AnnotationDunningSince], 10, 32)
	first := inv.Status.AttemptCount - int32(len(charges)) + 1 // the attempt number of charges[0]
	var n int32
	for i, p := range charges {
		if p != nil && int64(first)+int64(i) > since && p.Status.Phase == paygatev1.PaymentFailed {
			n++
		}
	}
	return n
}

// transition moves the subscription's phase and failure count by ev (billing.State.Next).
func (r *SubscriptionReconciler) transition(ctx context.Context, s *subscriptionScope, ev billing.Event) {
	st := &s.sub.Status
	next, err := billing.State{Phase: s.sub.Phase(), ConsecutiveFailures: st.ConsecutiveFailures, Confirmed: st.ConfirmedAt != nil}.
		Next(ev, s.schedule.Dunning)
	if err != nil {
		log.FromContext(ctx).V(1).Info("Subscription transition ignored", "event", ev, "reason", err.Error())
		return
	}
	st.Phase, st.ConsecutiveFailures = next.Phase, next.ConsecutiveFailures
}

// settleCharges reads the newest charge's outcome into the invoice and the subscription: a paid
// charge pays the invoice and confirms the subscription; a failed one moves the subscription
// (pending, past_due or suspended) and schedules the retry. Everything is derived from the stored
// charges, so a pass that repeats after a crash changes nothing more.
func (r *SubscriptionReconciler) settleCharges(ctx context.Context, s *subscriptionScope) (ctrl.Result, error) {
	inv, p, sub := s.invoice, s.latest, s.sub
	if inv == nil || inv.Status.Phase == paygatev1.InvoiceVoid {
		return ctrl.Result{}, nil
	}
	if inv.Status.Phase == paygatev1.InvoicePaid || (p != nil && p.Status.Phase == paygatev1.PaymentSuccess) {
		if inv.Status.Phase != paygatev1.InvoicePaid {
			settled := s.now
			if p.Status.SettledAt != nil {
				settled = p.Status.SettledAt.Time
			}
			inv.Status.Phase, inv.Status.PaidPayment, inv.Status.NextAttemptAt = paygatev1.InvoicePaid, p.Name, nil
			inv.Status.PaidAt = ptrTime(billing.SubscriptionTime(settled, sub.ClockOffsetSeconds()))
			countInvoice(s, paygatev1.InvoicePaid)
			if err := r.saveInvoice(ctx, s); err != nil {
				return ctrl.Result{}, err
			}
			r.Recorder.Eventf(sub, nil, corev1.EventTypeNormal, ReasonInvoicePaid, "Charge", "Invoice %s (period %d) paid by %s", inv.Name, inv.Spec.Period, p.Name)
		}
		r.transition(ctx, s, billing.ChargePaid)
		if sub.Status.ConfirmedAt == nil {
			// The first charge the customer approved with their PIN confirms the consent.
			sub.Status.ConfirmedAt = inv.Status.PaidAt
			sub.Status.ConfirmedInvoice, sub.Status.ConfirmedPayment = inv.Name, inv.Status.PaidPayment
			r.Recorder.Eventf(sub, nil, corev1.EventTypeNormal, ReasonSubscriptionConfirmed, "Charge", "The customer confirmed the subscription by approving %s", inv.Status.PaidPayment)
		}
		return ctrl.Result{}, nil
	}
	if s.blocked != "" || p == nil || p.Status.Phase != paygatev1.PaymentFailed {
		return ctrl.Result{}, nil
	}
	failures := dunningFailures(inv, s.charges)
	if phase := sub.Phase(); phase != paygatev1.SubscriptionSuspended && phase != paygatev1.SubscriptionCancelled {
		for sub.Status.ConsecutiveFailures < failures && sub.Phase() != paygatev1.SubscriptionSuspended {
			r.transition(ctx, s, billing.ChargeFailed)
		}
		if sub.Phase() == paygatev1.SubscriptionSuspended {
			sub.Status.SuspendedAt, sub.Status.NextChargeAt = secondTime(s.subNow), nil
			r.Recorder.Eventf(sub, nil, corev1.EventTypeWarning, ReasonSubscriptionSuspended, "Charge",
				"Suspended after %d failed charges of invoice %s; raise spec.resumeSequence to resume", sub.Status.ConsecutiveFailures, inv.Name)
		}
	}
	recorded := inv.Status.Phase == paygatev1.InvoicePaymentFailed && inv.Status.LastFailureReason == p.Status.Reason
	retry := false
	inv.Status.Phase, inv.Status.LastFailureReason = paygatev1.InvoicePaymentFailed, p.Status.Reason
	if inv.Status.NextAttemptAt == nil && sub.Phase() != paygatev1.SubscriptionSuspended &&
		sub.Phase() != paygatev1.SubscriptionCancelled && sub.Spec.Cancel != paygatev1.CancelImmediately {
		failedAt := s.now
		if p.Status.SettledAt != nil {
			failedAt = p.Status.SettledAt.Time
		}
		retryAt, suspend := s.schedule.AfterFailure(max(sub.Status.ConsecutiveFailures, 1), billing.SubscriptionTime(failedAt, sub.ClockOffsetSeconds()))
		if !suspend {
			inv.Status.NextAttemptAt = secondTime(retryAt)
			recorded = false
			retry = true
		}
	}
	// Summarized before the comparison: a last failure with the reason of the one before changes
	// nothing but Ready (no longer ChargeInFlight), and that is still stored, and counted, once.
	summarizeInvoice(inv, s.chargeInFlight())
	if s.invPatch.Changed(inv) {
		if retry {
			// Scheduled once per failed charge: a stored nextAttemptAt is not scheduled again.
			env := string(inv.Spec.Environment)
			s.invPatch.OnWrite(func() { metrics.DunningRetries.WithLabelValues(env).Inc() })
		}
		if err := r.saveInvoice(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		if !recorded {
			r.Recorder.Eventf(sub, nil, corev1.EventTypeWarning, ReasonChargeFailed, "Charge", "Charge %s of invoice %s failed with %s (failure %d of %d)",
				p.Name, inv.Name, p.Status.Reason, sub.Status.ConsecutiveFailures, s.schedule.Dunning.MaxFailures())
		}
	}
	return ctrl.Result{}, nil
}

// cancel answers spec.cancel: immediately now, atPeriodEnd once the current period has ended.
// A cancelled subscription's open invoice is voided as soon as no charge of it is on the phone.
func (r *SubscriptionReconciler) cancel(ctx context.Context, s *subscriptionScope) (ctrl.Result, error) {
	sub := s.sub
	if sub.Phase() != paygatev1.SubscriptionCancelled {
		switch sub.Spec.Cancel {
		case paygatev1.CancelImmediately:
		case paygatev1.CancelAtPeriodEnd:
			end := sub.Status.CurrentPeriodEnd
			if end == nil || s.subNow.Before(end.Time) {
				if end != nil {
					s.wakeAt(end.Time)
				}
				return ctrl.Result{}, nil
			}
		default:
			return ctrl.Result{}, nil
		}
		r.transition(ctx, s, billing.Cancel)
		sub.Status.CancelledAt, sub.Status.NextChargeAt = secondTime(s.subNow), nil
		r.Recorder.Eventf(sub, nil, corev1.EventTypeNormal, ReasonSubscriptionCancelled, "Cancel", "Cancelled (%s)", sub.Spec.Cancel)
	}
	return ctrl.Result{}, r.voidIfIdle(ctx, s, "the subscription is cancelled")
}

// voidIfIdle voids the open invoice when no charge of it is on the customer's phone. A charge
// that is decides: paid, the invoice is paid; failed, the next pass voids it.
func (r *SubscriptionReconciler) voidIfIdle(ctx context.Context, s *subscriptionScope, why string) error {
	inv := s.invoice
	if inv == nil || inv.Terminal() || (s.latest != nil && !s.latest.Terminal()) ||
		(s.latest != nil && s.latest.Status.Phase == paygatev1.PaymentSuccess) {
		return nil
	}
	return r.void(ctx, s, why)
}

func (r *SubscriptionReconciler) void(ctx context.Context, s *subscriptionScope, why string) error {
	inv := s.invoice
	inv.Status.Phase, inv.Status.VoidedAt, inv.Status.NextAttemptAt = paygatev1.InvoiceVoid, secondTime(s.subNow), nil
	s.latestMissing = false // a charge written ahead but never sent is not sent any more
	countInvoice(s, paygatev1.InvoiceVoid)
	if err := r.saveInvoice(ctx, s); err != nil {
		return err
	}
	r.Recorder.Eventf(s.sub, nil, corev1.EventTypeNormal, ReasonInvoiceVoided, "Void", "Invoice %s (period %d) voided: %s", inv.Name, inv.Spec.Period, why)
	return nil
}

// resume answers a raised spec.resumeSequence. A suspended subscription resumes with no failures
// and the invoice of the current period is charged at the next opening of the charging window:
// the failed invoice itself while its period lasts, else (it is voided) a new invoice for the
// period that contains the current time. Anything but a suspended subscription is not changed,
// but the value is answered all the same, so a later suspension is not resumed by it.
func (r *SubscriptionReconciler) resume(ctx context.Context, s *subscriptionScope) (ctrl.Result, error) {
	sub := s.sub
	if sub.Spec.ResumeSequence <= sub.Status.ResumedSequence {
		return ctrl.Result{}, nil
	}
	if sub.Phase() != paygatev1.SubscriptionSuspended {
		sub.Status.ResumedSequence = sub.Spec.ResumeSequence
		r.Recorder.Eventf(sub, nil, corev1.EventTypeNormal, ReasonResumeIgnored, "Resume", "resumeSequence %d ignored: the subscription is %s, not suspended", sub.Spec.ResumeSequence, sub.Phase())
		return ctrl.Result{}, nil
	}
	if s.blocked != "" {
		return ctrl.Result{}, nil // answered once the subscription can be billed again
	}
	if inv := s.invoice; inv != nil && !inv.Terminal() {
		if s.subNow.Before(inv.Spec.PeriodEnd.Time) {
			if err := r.markDunningSince(ctx, s); err != nil {
				return ctrl.Result{}, err
			}
			inv.Status.NextAttemptAt = secondTime(s.schedule.Window.Next(s.subNow))
			if err := r.saveInvoice(ctx, s); err != nil {
				return ctrl.Result{}, err
			}
		} else if err := r.void(ctx, s, "resumed after its period ended"); err != nil {
			return ctrl.Result{}, err
		}
	}
	r.transition(ctx, s, billing.Resume)
	sub.Status.ResumedSequence = sub.Spec.ResumeSequence
	r.Recorder.Eventf(sub, nil, corev1.EventTypeNormal, ReasonSubscriptionResumed, "Resume", "Resumed (resumeSequence %d)", sub.Spec.ResumeSequence)
	return ctrl.Result{}, nil
}

// markDunningSince records on the invoice, under the optimistic lock, that its charges so far no
// longer count toward dunning. Repeating it before a new charge changes nothing.
func (r *SubscriptionReconciler) markDunningSince(ctx context.Context, s *subscriptionScope) error {
	inv := s.invoice
	value := strconv.FormatInt(int64(inv.Status.AttemptCount), 10)
	if inv.Annotations[AnnotationDunningSince] == value {
		return nil
	}
	before := inv.DeepCopy()
	if inv.Annotations == nil {
		inv.Annotations = map[string]string{}
	}
	inv.Annotations[AnnotationDunningSince] = value
	if err := r.Patch(ctx, inv, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("recording the resume on invoice %s: %w", inv.Name, err)
	}
	s.invPatch = newStatusPatch(r.Client, inv, invoiceStatus)
	return nil
}

// openInvoice opens the next invoice when its period has started: the first as soon as the
// subscription exists, the next once the latest is paid (the period after it, or the period that
// contains the current time when that one has ended already: no back-billing), or, after a resume
// voided the latest, the period that contains the current time.
func (r *SubscriptionReconciler) openInvoice(ctx context.Context, s *subscriptionScope) (ctrl.Result, error) {
	sub, latest := s.sub, s.invoice
	if s.blocked != "" || sub.Phase() == paygatev1.SubscriptionCancelled || sub.Spec.Cancel == paygatev1.CancelImmediately {
		return ctrl.Result{}, nil
	}
	periods := s.schedule.Periods
	var next billing.Period
	switch {
	case latest == nil:
		next = periods.At(s.anchor, s.subNow)
	case latest.Status.Phase == paygatev1.InvoicePaid:
		if sub.Spec.Cancel == paygatev1.CancelAtPeriodEnd {
			return ctrl.Result{}, nil // cancel wakes at the period's end
		}
		next = periods.Next(s.anchor, latest.Spec.Period, s.subNow)
	case latest.Status.Phase == paygatev1.InvoiceVoid:
		next = periods.At(s.anchor, s.subNow)
		if next.Number <= latest.Spec.Period {
			next = periods.Period(s.anchor, latest.Spec.Period+1)
		}
	default:
		return ctrl.Result{}, nil // the latest invoice is still being charged
	}
	if latest != nil && next.Number <= latest.Spec.Period {
		return ctrl.Result{}, nil // the last period an invoice can have is billed
	}
	if s.subNow.Before(next.Start) {
		s.wakeAt(next.Start)
		return ctrl.Result{}, nil
	}
	inv, err := r.createInvoice(ctx, s, next)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.setInvoice(r.Client, inv)
	s.firstInvoice = latest == nil
	if inv.Status.Phase == "" {
		inv.Status.Phase = paygatev1.InvoiceOpen
		due := s.schedule.RenewalChargeAt(next)
		if s.firstInvoice {
			due = s.subNow // at once
		}
		inv.Status.NextAttemptAt = secondTime(due)
		if err := r.saveInvoice(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	// Stored at once: a later pass bills after this period, whatever its cache shows.
	if err := r.saveSubscription(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(sub, nil, corev1.EventTypeNormal, ReasonInvoiceOpened, "Invoice", "Opened invoice %s for period %d (%s to %s)",
		inv.Name, next.Number, next.Start.Format(time.RFC3339), next.End.Format(time.RFC3339))
	return ctrl.Result{}, r.invoiceEvent(ctx, s, webhookevents.InvoiceCreated, nil)
}

// createInvoice creates the invoice of period p, owned by the subscription; when it exists
// already (a pass repeated after a crash), it is that invoice.
func (r *SubscriptionReconciler) createInvoice(ctx context.Context, s *subscriptionScope, p billing.Period) (*paygatev1.Invoice, error) {
	sub := s.sub
	c := sub.Spec.Consent
	cur, ok := money.LookupCurrency(string(c.PlanCurrency))
	amount, err := money.ParseAmount(string(c.PlanAmount))
	if !ok || err != nil {
		return nil, fmt.Errorf("the consented price %s %s of subscription %s cannot be billed", c.PlanAmount, c.PlanCurrency, sub.Name)
	}
	inv := &paygatev1.Invoice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: sub.Namespace, Name: paygatev1.InvoiceName(sub.Name, p.Number),
			Labels: map[string]string{paygatev1.LabelMerchant: sub.Spec.MerchantRef.Name, paygatev1.LabelEnvironment: string(sub.Spec.Environment),
				paygatev1.LabelSubscription: sub.Name, paygatev1.LabelPlanCode: sub.Spec.PlanCode},
		},
		Spec: paygatev1.InvoiceSpec{
			MerchantRef: sub.Spec.MerchantRef, Environment: sub.Spec.Environment,
			SubscriptionRef: paygatev1.SubscriptionReference{Name: sub.Name}, PlanCode: sub.Spec.PlanCode, Period: p.Number,
			PeriodStart: metav1.NewTime(p.Start), PeriodEnd: metav1.NewTime(p.End),
			Amount: paygatev1.Decimal(amount.StringFixed(cur.Scale)), Currency: c.PlanCurrency,
		},
	}
	if err := controllerutil.SetControllerReference(sub, inv, r.Scheme()); err != nil {
		return nil, err
	}
	if err := r.Create(ctx, inv); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("opening invoice %s: %w", inv.Name, err)
		}
		existing, err := r.readInvoice(ctx, sub.Namespace, inv.Name)
		if err != nil {
			return nil, err
		}
		if existing == nil {
			return nil, fmt.Errorf("opening invoice %s: it exists and cannot be read", inv.Name)
		}
		return existing, nil
	}
	return inv, nil
}

// wakeResult is the requeue of the pass: the earliest due time, converted back to real time
// (billing.RealTime), or RetryAfter for a subscription waiting on something no watch reports.
func (r *SubscriptionReconciler) wakeResult(s *subscriptionScope) ctrl.Result {
	var res ctrl.Result
	if !s.wake.IsZero() {
		res.RequeueAfter = max(billing.RealTime(s.wake, s.sub.ClockOffsetSeconds()).Sub(s.now), time.Second)
	}
	if s.retry {
		retry := r.RetryAfter
		if retry <= 0 {
			retry = time.Minute
		}
		res = lowestRequeue(res, ctrl.Result{RequeueAfter: retry})
	}
	return res
}

// saveSubscription summarizes the subscription and patches its status in the middle of a pass,
// under the optimistic lock: readers never see a phase without the nextChargeAt and Ready that go
// with it.
func (r *SubscriptionReconciler) saveSubscription(ctx context.Context, s *subscriptionScope) error {
	r.summarize(s, nil)
	if err := s.patch.Patch(ctx, s.sub); err != nil {
		return fmt.Errorf("saving the status of subscription %s: %w", s.sub.Name, err)
	}
	return nil
}

// saveInvoice summarizes the invoice and patches its status under the optimistic lock. The write
// that reads the newest charge's outcome into the invoice counts the charge
// (paygate_invoice_charges_total), once: see countCharge.
func (r *SubscriptionReconciler) saveInvoice(ctx context.Context, s *subscriptionScope) error {
	inv := s.invoice
	summarizeInvoice(inv, s.chargeInFlight())
	countCharge(s)
	if err := s.invPatch.Patch(ctx, inv); err != nil {
		return fmt.Errorf("patching the status of invoice %s: %w", inv.Name, err)
	}
	return nil
}

// countCharge counts the newest charge in paygate_invoice_charges_total when the invoice's next
// write is the first to store its outcome: the stored invoice still says the charge is out (Ready
// ChargeInFlight, written with the attempt, ahead of its Payment; or no Ready at all) and the
// charge has ended, so the write moves Ready off ChargeInFlight (paid, void, a retry scheduled or
// none). Later writes find it stored and count nothing; a pass that loses the optimistic lock
// counts nothing either (statusPatch.OnWrite), and the pass after it counts the charge.
func countCharge(s *subscriptionScope) {
	p := s.latest
	if p == nil || !p.Terminal() {
		return
	}
	ready := meta.FindStatusCondition(s.invPatch.Stored().Status.Conditions, paygatev1.ConditionReady)
	if ready != nil && ready.Reason != ReasonChargeInFlight {
		return
	}
	env, outcome, reason := string(p.Spec.Environment), string(p.Status.Phase), p.Status.Reason
	s.invPatch.OnWrite(func() { metrics.InvoiceCharges.WithLabelValues(env, outcome, reason).Inc() })
}

// countInvoice counts the invoice in paygate_invoices_total as reaching phase (paid, void) once its
// next write stores it: the callers set a terminal phase only on an invoice that is not terminal,
// so the transition is stored, and counted, once.
func countInvoice(s *subscriptionScope, phase paygatev1.InvoicePhase) {
	env := string(s.invoice.Spec.Environment)
	s.invPatch.OnWrite(func() { metrics.Invoices.WithLabelValues(env, string(phase)).Inc() })
}

// summarizeInvoice sets an invoice's Ready condition and observedGeneration.
func summarizeInvoice(inv *paygatev1.Invoice, inFlight bool) {
	status, reason, msg := metav1.ConditionFalse, ReasonAwaitingCharge, "Waiting for the time of the next charge"
	switch {
	case inv.Status.Phase == paygatev1.InvoicePaid:
		status, reason, msg = metav1.ConditionTrue, ReasonInvoicePaid, "Paid by "+inv.Status.PaidPayment
	case inv.Status.Phase == paygatev1.InvoiceVoid:
		reason, msg = ReasonInvoiceVoid, "Voided: the invoice will not be charged"
	case inFlight:
		reason, msg = ReasonChargeInFlight, "A charge is waiting for the customer's approval"
	case inv.Status.Phase == paygatev1.InvoicePaymentFailed && inv.Status.NextAttemptAt == nil:
		reason, msg = ReasonChargeFailed, "The latest charge failed with "+inv.Status.LastFailureReason+"; no retry is scheduled"
	case inv.Status.Phase == paygatev1.InvoicePaymentFailed:
		reason, msg = ReasonChargeFailed, "The latest charge failed with "+inv.Status.LastFailureReason+"; a retry is scheduled"
	}
	setReady(&inv.Status.Conditions, inv.Generation, status, reason, msg)
	inv.Status.ObservedGeneration = inv.Generation
}

// summarize sets the subscription's phase (pending until something moved it), nextChargeAt, the
// Ready condition and observedGeneration from what the pass did; reconcileErr is the pass's error.
func (r *SubscriptionReconciler) summarize(s *subscriptionScope, reconcileErr error) {
	sub := s.sub
	if sub.Status.Phase == "" {
		sub.Status.Phase = paygatev1.SubscriptionPending
	}
	sub.Status.NextChargeAt = r.nextCharge(s)
	status, reason, msg := metav1.ConditionFalse, ReasonAwaitingFirstPayment, "Waiting for the customer to approve the first charge"
	switch sub.Phase() {
	case paygatev1.SubscriptionActive:
		status, reason, msg = metav1.ConditionTrue, ReasonSubscriptionActive, "The latest invoice is paid"
	case paygatev1.SubscriptionPastDue:
		reason, msg = ReasonPastDue, "A renewal charge failed and is being retried"
	case paygatev1.SubscriptionSuspended:
		reason, msg = ReasonSubscriptionSuspended, "Suspended after the dunning policy's last failure; raise spec.resumeSequence to resume"
	case paygatev1.SubscriptionCancelled:
		reason, msg = ReasonSubscriptionCancelled, "Cancelled"
	}
	if s.blocked != "" && sub.Phase() != paygatev1.SubscriptionCancelled {
		status, reason, msg = metav1.ConditionFalse, s.blocked, s.blockedMessage
	}
	if reconcileErr != nil {
		reason, msg = failureReason(reconcileErr)
	}
	setReady(&sub.Status.Conditions, sub.Generation, status, reason, msg)
	if reconcileErr == nil {
		sub.Status.ObservedGeneration = sub.Generation
	}
}

// nextCharge is when the customer will next be prompted, as far as the pass knows: empty while a
// charge is out, when suspended, cancelled or blocked.
func (r *SubscriptionReconciler) nextCharge(s *subscriptionScope) *metav1.Time {
	sub, inv := s.sub, s.invoice
	switch phase := sub.Phase(); {
	case s.blocked != "", inv == nil, phase == paygatev1.SubscriptionSuspended, phase == paygatev1.SubscriptionCancelled,
		sub.Spec.Cancel == paygatev1.CancelImmediately, s.chargeInFlight(), inv.Status.Phase == paygatev1.InvoiceVoid:
		return nil
	case inv.Status.Phase == paygatev1.InvoicePaid:
		if sub.Spec.Cancel == paygatev1.CancelAtPeriodEnd {
			return nil
		}
		return secondTime(s.schedule.RenewalChargeAt(s.schedule.Periods.Next(s.anchor, inv.Spec.Period, s.subNow)))
	}
	return inv.Status.NextAttemptAt
}

// SetupWithManager watches Subscriptions, their Invoices, their charge Payments and their plans.
func (r *SubscriptionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.Subscription{}).
		Owns(&paygatev1.Invoice{}).
		Watches(&paygatev1.Payment{}, handler.EnqueueRequestsFromMapFunc(subscriptionOfCharge)).
		// A plan's spec matters (its window and dunning policy), not its status.
		Watches(&paygatev1.BillingPlan{}, handler.EnqueueRequestsFromMapFunc(r.subscriptionsOfPlan),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controllerOptions(4)).
		Named("subscription").
		Complete(quietConflicts(r))
}

// subscriptionOfCharge maps a charge payment (labelled paygate.dev/subscription) to its
// subscription.
func subscriptionOfCharge(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[paygatev1.LabelSubscription]
	if name == "" || o.GetLabels()[paygatev1.LabelInvoice] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

func (r *SubscriptionReconciler) subscriptionsOfPlan(ctx context.Context, o client.Object) []reconcile.Request {
	var list paygatev1.SubscriptionList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "Listing the subscriptions of a plan", "plan", o.GetName())
		return nil
	}
	var out []reconcile.Request
	for _, s := range list.Items {
		if s.Spec.PlanRef.Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
		}
	}
	return out
}
