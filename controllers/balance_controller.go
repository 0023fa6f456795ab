// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/metrics"
)

// Balance condition reasons (docs/ledger.md, Conditions). A pass that failed otherwise sets
// Ready's reason from failureReason.
const (
	ReasonBalanceComputed  = "BalanceComputed"
	ReasonLedgerUnreadable = "LedgerUnreadable"
	// ReasonArchiveUnreachable: the archive holds part of the ledger and cannot be read; the
	// balance keeps its last value and decides no payout until it can.
	ReasonArchiveUnreachable = "ArchiveUnreachable"
	// ReasonLedgerDrift: a full recount found the incremental sums wrong (an event on the Balance).
	ReasonLedgerDrift = "LedgerDrift"
)

// LedgerArchive is the archive's part of the ledgers (internal/archive's Store).
type LedgerArchive interface {
	LedgerView(ctx context.Context, namespace, merchant string, env paygatev1.Environment, q archive.LedgerQuery) (archive.LedgerView, error)
}

// DefaultMoneyBatch and DefaultObservedBatch are how long a change to a merchant's ledger waits
// before the pass that writes it: a change of its money (a payment settled) DefaultMoneyBatch, a
// change of the number of payments only (a new pending payment) DefaultObservedBatch. The changes
// that arrive meanwhile join the same pass, so a merchant's Balance is written at most about ten
// times a second however many payments settle, and a new payment rarely costs a write of its own:
// its settlement, or the next one, carries the count (docs/ledger.md, Cost).
const (
	DefaultMoneyBatch    = 100 * time.Millisecond
	DefaultObservedBatch = time.Second
)

// DefaultLedgerRecount is how often a merchant's balance is recounted from every live payment
// to check the incremental sums.
const DefaultLedgerRecount = 10 * time.Minute

// BalanceReconciler keeps each merchant's Balance objects, one per environment, and is the single
// writer of its ledger: it derives the balance from the merchant's payments, payouts and refunds
// on every pass (nothing is ever added to a stored number, so a payment is credited exactly once
// whatever reconciles repeat or crash) and decides, in one creation order, which pending payouts
// and refunds the balance covers (docs/ledger.md). A reservation is written into the Balance with
// an optimistic lock before the payout may be disbursed or the refund sent, so two passes, or two
// managers, can never both spend the same money.
type BalanceReconciler struct {
	client.Client
	// Clock stamps reservations.
	Clock clock.PassiveClock
	// Archive, when the archive is on, holds the archived payments' and payouts' carried-forward
	// sums (docs/archive.md); nil counts the live objects only.
	Archive LedgerArchive
	// Gate orders the archiver's commits against the passes' reads of the archive and the live
	// objects (it is held for reading across a pass's reads): an object is counted live or
	// carried forward, never both or neither. Nil without an archive.
	Gate *sync.RWMutex
	// RecountEvery is how often a merchant's payments are recounted in full to check the
	// incremental sums (default DefaultLedgerRecount); a difference is drift: reported (a
	// LedgerDrift Warning event and paygate_ledger_drift_total) and corrected.
	RecountEvery time.Duration
	// MoneyBatch and ObservedBatch are how long a ledger change waits for others to join its pass
	// (defaults DefaultMoneyBatch and DefaultObservedBatch; negative: none).
	MoneyBatch, ObservedBatch time.Duration
	Recorder                  events.EventRecorder

	payments *paymentLedger
	mu       sync.Mutex
	lastFull map[types.NamespacedName]time.Time
}

// +kubebuilder:rbac:groups=paygate.dev,resources=balances,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=balances/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=payouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=payouts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=refunds,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=refunds/status,verbs=get;update;patch

// balanceScope is what one reconcile pass of a merchant's balances works on.
type balanceScope struct {
	merchant *paygatev1.Merchant
	// full: this pass recounts every live payment and checks the incremental sums against it.
	full bool
}

// Reconcile recomputes a merchant's balances; the request names the Merchant.
func (r *BalanceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	m := &paygatev1.Merchant{}
	if err := r.Get(ctx, req.NamespacedName, m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !m.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	r.defaults()
	if !r.payments.Synced() {
		return ctrl.Result{RequeueAfter: 200 * time.Millisecond}, nil // the ledger has not seen every payment yet
	}
	now := r.Clock.Now()
	s := &balanceScope{merchant: m, full: r.fullRecountDue(req.NamespacedName, now)}
	// Each environment's balance is its own object: one that cannot be written or summed does
	// not hold back the other.
	envSteps := make([]step[*balanceScope], 0, len(paygatev1.Environments))
	for _, env := range paygatev1.Environments {
		envSteps = append(envSteps, r.keepBalance(env))
	}
	res, err := runSteps(ctx, s, independent(envSteps...))
	if err == nil && s.full {
		r.mu.Lock()
		r.lastFull[req.NamespacedName] = now
		r.mu.Unlock()
	}
	// Come back for the next full recount even when nothing changes.
	return lowestRequeue(res, ctrl.Result{RequeueAfter: r.RecountEvery}), err
}

// defaults fills what SetupWithManager would have.
func (r *BalanceReconciler) defaults() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.RecountEvery <= 0 {
		r.RecountEvery = DefaultLedgerRecount
	}
	if r.lastFull == nil {
		r.lastFull = map[types.NamespacedName]time.Time{}
	}
	if r.payments == nil {
		r.payments = newPaymentLedger(func(string, string, bool) {})
	}
}

// fullRecountDue reports whether the merchant's last full recount is older than RecountEvery.
func (r *BalanceReconciler) fullRecountDue(m types.NamespacedName, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.lastFull[m]
	return !ok || now.Sub(last) >= r.RecountEvery
}

// keepBalance is the step that derives and writes the merchant's Balance in env, then marks the
// payouts and refunds it decided.
func (r *BalanceReconciler) keepBalance(env paygatev1.Environment) step[*balanceScope] {
	return func(ctx context.Context, s *balanceScope) (ctrl.Result, error) {
		b, err := r.getOrCreateBalance(ctx, s.merchant, env)
		if err != nil || b == nil {
			return ctrl.Result{}, err
		}
		led, objs, ledErr := r.ledger(ctx, s, b, env)
		patch := newStatusPatch(r.Client, b, func(b *paygatev1.Balance) any { return &b.Status })
		var unreachable *archiveError
		switch {
		case ledErr == nil:
			b.Status.Currencies, b.Status.ObservedPayments = led.Status.Currencies, led.Status.ObservedPayments
			b.Status.PayoutReservations, b.Status.RefundReservations = led.Status.PayoutReservations, led.Status.RefundReservations
			setReady(&b.Status.Conditions, b.Generation, metav1.ConditionTrue, ReasonBalanceComputed, "Derived from the merchant's payments, payouts and refunds")
		case errors.As(ledErr, &unreachable):
			setReady(&b.Status.Conditions, b.Generation, metav1.ConditionFalse, ReasonArchiveUnreachable,
				"The archive cannot be read; the balance keeps its last value and decides no payout or refund")
		default:
			setReady(&b.Status.Conditions, b.Generation, metav1.ConditionFalse, ReasonLedgerUnreadable,
				"A payment, payout or refund cannot be counted; the balance keeps its last value and decides no payout or refund")
		}
		b.Status.ObservedGeneration = b.Generation
		// The reservations are decided by this write: with the optimistic lock, a pass that read
		// an older Balance gets a conflict and starts again from this one.
		if err := patch.Patch(ctx, b); err != nil {
			return ctrl.Result{}, errors.Join(ledErr, fmt.Errorf("patching balance %s: %w", b.Name, err))
		}
		if ledErr != nil {
			return ctrl.Result{}, ledErr
		}
		return ctrl.Result{}, errors.Join(r.markPayouts(ctx, objs.payouts, led), r.markRefunds(ctx, objs.refunds, led))
	}
}

// ledgerObjects are the payouts and refunds a pass read from the cache, without copies: the few
// it decides are copied before they are written.
type ledgerObjects struct {
	payouts []paygatev1.Payout
	refunds []paygatev1.Refund
}

// archiveError is an archive that cannot be read.
type archiveError struct{ err error }

func (e *archiveError) Error() string { return "reading the archived ledger: " + e.err.Error() }
func (e *archiveError) Unwrap() error { return e.err }

// ledger reads what the balance in env derives from, and derives it: the archive's part, the
// live payments' sums (incremental, or a full recount that checks them), the payouts and the
// refunds, all inside the gate, so that the archiver commits before or after these reads, never
// between them.
func (r *BalanceReconciler) ledger(ctx context.Context, s *balanceScope, b *paygatev1.Balance, env paygatev1.Environment) (Ledger, ledgerObjects, error) {
	if r.Gate != nil {
		r.Gate.RLock()
		defer r.Gate.RUnlock()
	}
	m := s.merchant
	// Payouts and refunds are read without copies; the few a pass decides are copied before it
	// writes them.
	var payoutList paygatev1.PayoutList
	if err := r.List(ctx, &payoutList, client.InNamespace(m.Namespace), client.MatchingLabels{paygatev1.LabelMerchant: m.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return Ledger{}, ledgerObjects{}, fmt.Errorf("listing payouts: %w", err)
	}
	var refundList paygatev1.RefundList
	if err := r.List(ctx, &refundList, client.InNamespace(m.Namespace), client.MatchingLabels{paygatev1.LabelMerchant: m.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return Ledger{}, ledgerObjects{}, fmt.Errorf("listing refunds: %w", err)
	}
	var arch *archive.LedgerView
	var skip map[string]bool
	if r.Archive != nil {
		v, err := r.Archive.LedgerView(ctx, m.Namespace, m.Name, env, ArchiveQuery(b, refundList.Items, m.Name, env))
		if err != nil {
			return Ledger{}, ledgerObjects{}, &archiveError{err}
		}
		arch, skip = &v, v.Payments
	}
	sums, err := r.payments.Sums(m.Namespace, m.Name, env, skip)
	if err != nil {
		return Ledger{}, ledgerObjects{}, err
	}
	if s.full {
		// Read-only: the sums never modify a payment, so the cache's objects are read without copies.
		var payments paygatev1.PaymentList
		if err := r.List(ctx, &payments, client.InNamespace(m.Namespace), client.MatchingLabels{paygatev1.LabelMerchant: m.Name},
			client.UnsafeDisableDeepCopy); err != nil {
			return Ledger{}, ledgerObjects{}, fmt.Errorf("listing payments: %w", err)
		}
		recount, err := SumPayments(m.Name, env, payments.Items, skip)
		if err != nil {
			return Ledger{}, ledgerObjects{}, err
		}
		if diff := sumsDiffer(sums, recount); diff != "" {
			metrics.LedgerDrift.WithLabelValues(string(env)).Inc()
			if r.Recorder != nil {
				r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, ReasonLedgerDrift, "Recount",
					"The incremental sums differed from a full recount (%s); the recount is kept", diff)
			}
			sums = recount
		}
	}
	objs := ledgerObjects{payouts: payoutList.Items, refunds: refundList.Items}
	led, err := computeLedger(m.Name, env, sums, ledgerSources{
		payouts: objs.payouts, heldPayouts: b.Status.PayoutReservations,
		refunds: objs.refunds, heldRefunds: b.Status.RefundReservations,
		arch: arch,
	})
	return led, objs, err
}

// sumsDiffer describes how two payment sums differ ("" when they agree).
func sumsDiffer(a, b PaymentSums) string {
	if a.Observed != b.Observed {
		return fmt.Sprintf("%d payments observed, %d recounted", a.Observed, b.Observed)
	}
	for _, m := range []struct{ x, y PaymentSums }{{a, b}, {b, a}} {
		for c, n := range m.x.Counts {
			if m.y.Counts[c] != n || m.x.Settled[c].Cmp(m.y.Settled[c]) != 0 {
				return fmt.Sprintf("%s: %s in %d payments, recounted %s in %d", c, a.Settled[c], a.Counts[c], b.Settled[c], b.Counts[c])
			}
		}
	}
	return ""
}

// markPayouts writes, on each payout the pass decided, what the Balance now holds: reservedAt
// for a reserved one (the payout controller disburses only those), failed INSUFFICIENT_BALANCE for
// a rejected one.
func (r *BalanceReconciler) markPayouts(ctx context.Context, payouts []paygatev1.Payout, led Ledger) error {
	if len(led.Reserve)+len(led.Mirror)+len(led.Reject) == 0 {
		return nil
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	now := metav1.NewMicroTime(r.Clock.Now())
	byName := map[string]*paygatev1.Payout{}
	for i := range payouts {
		byName[payouts[i].Name] = &payouts[i]
	}
	var errs []error
	mark := func(name string, change func(p *paygatev1.Payout)) {
		cached, ok := byName[name]
		if !ok {
			return
		}
		p := cached.DeepCopy()
		patch := newStatusPatch(r.Client, p, payoutStatus)
		change(p)
		p.Status.UpdatedAt = &now
		if err := patch.Patch(ctx, p); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("marking payout %s: %w", name, err))
		}
	}
	for _, name := range append(led.Reserve, led.Mirror...) {
		mark(name, func(p *paygatev1.Payout) {
			p.Status.ReservedAt = &now
			if p.Status.Phase == "" {
				p.Status.Phase = paygatev1.PayoutPending
			}
		})
	}
	for _, name := range led.Reject {
		mark(name, func(p *paygatev1.Payout) {
			p.Status.Phase, p.Status.Reason = paygatev1.PayoutFailed, string(paygatev1.PayoutInsufficientBalance)
		})
	}
	return errors.Join(errs...)
}

// markRefunds is markPayouts for the refunds: reservedAt for a reserved one (the refund
// controller sends only those to the provider), failed with the reason (REFUND_EXCEEDS_PAYMENT or
// INSUFFICIENT_BALANCE) for a rejected one.
func (r *BalanceReconciler) markRefunds(ctx context.Context, refunds []paygatev1.Refund, led Ledger) error {
	if len(led.ReserveRefunds)+len(led.MirrorRefunds)+len(led.RejectRefunds) == 0 {
		return nil
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	now := metav1.NewMicroTime(r.Clock.Now())
	byName := map[string]*paygatev1.Refund{}
	for i := range refunds {
		byName[refunds[i].Name] = &refunds[i]
	}
	var errs []error
	mark := func(name string, change func(f *paygatev1.Refund)) {
		cached, ok := byName[name]
		if !ok {
			return
		}
		f := cached.DeepCopy()
		patch := newStatusPatch(r.Client, f, func(f *paygatev1.Refund) any { return &f.Status })
		change(f)
		f.Status.UpdatedAt = &now
		if err := patch.Patch(ctx, f); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("marking refund %s: %w", name, err))
		}
	}
	for _, name := range append(slices.Clone(led.ReserveRefunds), led.MirrorRefunds...) {
		mark(name, func(f *paygatev1.Refund) {
			f.Status.ReservedAt = &now
			if f.Status.Phase == "" {
				f.Status.Phase = paygatev1.RefundPending
			}
		})
	}
	for _, rej := range led.RejectRefunds {
		mark(rej.Name, func(f *paygatev1.Refund) {
			f.Status.Phase, f.Status.Reason = paygatev1.RefundFailed, string(rej.Reason)
		})
	}
	return errors.Join(errs...)
}

// getOrCreateBalance returns the merchant's Balance in env, creating it when missing; nil when an
// earlier pass created it and the cache has not shown it yet (its watch event brings us back).
func (r *BalanceReconciler) getOrCreateBalance(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment) (*paygatev1.Balance, error) {
	b := &paygatev1.Balance{}
	key := client.ObjectKey{Namespace: m.Namespace, Name: paygatev1.BalanceName(m.Name, env)}
	err := r.Get(ctx, key, b)
	if err == nil {
		return b, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading balance %s: %w", key.Name, err)
	}
	b = &paygatev1.Balance{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{paygatev1.LabelMerchant: m.Name, paygatev1.LabelEnvironment: string(env)}},
		Spec: paygatev1.BalanceSpec{MerchantRef: paygatev1.MerchantReference{Name: m.Name}, Environment: env},
	}
	if err := controllerutil.SetControllerReference(m, b, r.Scheme()); err != nil {
		return nil, err
	}
	if err := r.Create(ctx, b); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("creating balance %s: %w", key.Name, err)
	}
	return b, nil
}

// SetupWithManager watches Merchants, their Balances, Payouts and Refunds, and the payment ledger,
// which the Payment informer's events keep and which enqueues the merchant whose sums changed.
func (r *BalanceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.RecountEvery <= 0 {
		r.RecountEvery = DefaultLedgerRecount
	}
	r.lastFull = map[types.NamespacedName]time.Time{}
	var queue atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
	if r.MoneyBatch == 0 {
		r.MoneyBatch = DefaultMoneyBatch
	}
	if r.ObservedBatch == 0 {
		r.ObservedBatch = DefaultObservedBatch
	}
	r.payments = newPaymentLedger(func(namespace, merchant string, money bool) {
		q := queue.Load()
		if q == nil {
			return
		}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: merchant}}
		wait := r.ObservedBatch
		if money {
			wait = r.MoneyBatch
		}
		if wait <= 0 {
			(*q).Add(req)
			return
		}
		// A request already waiting keeps the earlier of its two times: the first change of a
		// batch sets when its pass runs.
		(*q).AddAfter(req, wait)
	})
	ledgerSource := source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		queue.Store(&q)
		informer, err := mgr.GetCache().GetInformer(ctx, &paygatev1.Payment{})
		if err != nil {
			return fmt.Errorf("getting the payment informer: %w", err)
		}
		reg, err := informer.AddEventHandler(r.payments.handler())
		if err != nil {
			return fmt.Errorf("watching payments for the ledger: %w", err)
		}
		r.payments.setSynced(reg.HasSynced)
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.Merchant{}).
		Owns(&paygatev1.Balance{}).
		WatchesRawSource(ledgerSource).
		Watches(&paygatev1.Payout{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			p := o.(*paygatev1.Payout)
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Spec.MerchantRef.Name}}}
		}), builder.WithPredicates(payoutLedgerChanges)).
		Watches(&paygatev1.Refund{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			f := o.(*paygatev1.Refund)
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: f.Namespace, Name: f.Spec.MerchantRef.Name}}}
		}), builder.WithPredicates(refundLedgerChanges)).
		Named("balance").
		Complete(quietConflicts(r))
}

// payoutLedgerChanges lets through the payout events that can change a ledger: a payout created
// or deleted, or one whose phase or reservation changed.
var payoutLedgerChanges = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*paygatev1.Payout)
		cur, okNew := e.ObjectNew.(*paygatev1.Payout)
		if !okOld || !okNew {
			return true
		}
		return old.Status.Phase != cur.Status.Phase || (old.Status.ReservedAt == nil) != (cur.Status.ReservedAt == nil)
	},
}

// refundLedgerChanges is payoutLedgerChanges for the refunds: a refund created or deleted, or one
// whose phase or reservation changed.
var refundLedgerChanges = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*paygatev1.Refund)
		cur, okNew := e.ObjectNew.(*paygatev1.Refund)
		if !okOld || !okNew {
			return true
		}
		return old.Status.Phase != cur.Status.Phase || (old.Status.ReservedAt == nil) != (cur.Status.ReservedAt == nil)
	},
}
