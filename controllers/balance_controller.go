// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
)

// Balance condition reasons (docs/ledger.md, Conditions). A pass that failed otherwise sets
// Ready's reason from failureReason.
const (
	ReasonBalanceComputed  = "BalanceComputed"
	ReasonLedgerUnreadable = "LedgerUnreadable"
	// ReasonArchiveUnreachable: the archive holds part of the ledger and cannot be read; the
	// balance keeps its last value and decides no payout until it can.
	ReasonArchiveUnreachable = "ArchiveUnreachable"
)

// LedgerArchive is the archive's part of the ledgers (internal/archive's Store).
type LedgerArchive interface {
	LedgerView(ctx context.Context, namespace, merchant string, env paygatev1.Environment, paymentUIDs, payoutUIDs, payoutNames []string) (archive.LedgerView, error)
}

// BalanceReconciler keeps each merchant's Balance objects, one per environment, and is the single
// writer of its ledger: it derives the balance from the merchant's payments and payouts on every
// pass (nothing is ever added to a stored number, so a payment is credited exactly once whatever
// reconciles repeat or crash) and decides, in creation order, which pending payouts the balance
// covers (docs/ledger.md). A reservation is written into the Balance with an optimistic lock
// before the payout may be disbursed, so two passes, or two managers, can never both spend the
// same money.
type BalanceReconciler struct {
	client.Client
	// Clock stamps reservations.
	Clock clock.PassiveClock
	// Archive, when the archive is on, holds the archived payments' and payouts' carried-forward
	// sums (docs/archive.md); nil counts the live objects only.
	Archive LedgerArchive
}

// +kubebuilder:rbac:groups=paygate.dev,resources=balances,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=balances/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=payouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=payouts/status,verbs=get;update;patch

// balanceScope is what one reconcile pass of a merchant's balances works on.
type balanceScope struct {
	merchant *paygatev1.Merchant
	payments []paygatev1.Payment
	payouts  []paygatev1.Payout
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
	// Read-only: the sums never modify a payment, so the cache's objects are read without copies
	// (the recount is O(payments) and runs once per settled payment).
	var payments paygatev1.PaymentList
	if err := r.List(ctx, &payments, client.InNamespace(m.Namespace), client.MatchingLabels{paygatev1.LabelMerchant: m.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing payments: %w", err)
	}
	// Payouts too are read without copies; the few a pass decides are copied before it writes them.
	var payoutList paygatev1.PayoutList
	if err := r.List(ctx, &payoutList, client.InNamespace(m.Namespace), client.MatchingLabels{paygatev1.LabelMerchant: m.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing payouts: %w", err)
	}
	// Each environment's balance is its own object: one that cannot be written or summed does
	// not hold back the other.
	envSteps := make([]step[*balanceScope], 0, len(paygatev1.Environments))
	for _, env := range paygatev1.Environments {
		envSteps = append(envSteps, r.keepBalance(env))
	}
	return runSteps(ctx, &balanceScope{merchant: m, payments: payments.Items, payouts: payoutList.Items}, independent(envSteps...))
}

// keepBalance is the step that derives and writes the merchant's Balance in env, then marks the
// payouts it decided.
func (r *BalanceReconciler) keepBalance(env paygatev1.Environment) step[*balanceScope] {
	return func(ctx context.Context, s *balanceScope) (ctrl.Result, error) {
		b, err := r.getOrCreateBalance(ctx, s.merchant, env)
		if err != nil || b == nil {
			return ctrl.Result{}, err
		}
		arch, archErr := r.archivedLedger(ctx, s, env, b.Status.PayoutReservations)
		var led Ledger
		ledErr := archErr
		if archErr == nil {
			led, ledErr = ComputeLedger(s.merchant.Name, env, s.payments, s.payouts, b.Status.PayoutReservations, arch)
		}
		patch := newStatusPatch(r.Client, b, func(b *paygatev1.Balance) any { return &b.Status })
		switch {
		case ledErr == nil:
			b.Status.Currencies, b.Status.ObservedPayments = led.Status.Currencies, led.Status.ObservedPayments
			b.Status.PayoutReservations = led.Status.PayoutReservations
			setReady(&b.Status.Conditions, b.Generation, metav1.ConditionTrue, ReasonBalanceComputed, "Derived from the merchant's payments and payouts")
		case archErr != nil:
			setReady(&b.Status.Conditions, b.Generation, metav1.ConditionFalse, ReasonArchiveUnreachable,
				"The archive cannot be read; the balance keeps its last value and decides no payout")
		default:
			setReady(&b.Status.Conditions, b.Generation, metav1.ConditionFalse, ReasonLedgerUnreadable,
				"A payment or payout cannot be counted; the balance keeps its last value and decides no payout")
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
		return ctrl.Result{}, r.markPayouts(ctx, s, led)
	}
}

// archivedLedger reads the archive's part of the merchant's ledger in env, asking about the live
// terminal payments and payouts (the only ones the archive may already hold) and the reserved
// payouts; nil when the archive is off.
func (r *BalanceReconciler) archivedLedger(ctx context.Context, s *balanceScope, env paygatev1.Environment, held []paygatev1.PayoutReservation) (*archive.LedgerView, error) {
	if r.Archive == nil {
		return nil, nil
	}
	var paymentUIDs, payoutUIDs, payoutNames []string
	for i := range s.payments {
		if p := &s.payments[i]; p.Spec.Environment == env && p.Terminal() {
			paymentUIDs = append(paymentUIDs, string(p.UID))
		}
	}
	for i := range s.payouts {
		if p := &s.payouts[i]; p.Spec.Environment == env && p.Terminal() {
			payoutUIDs = append(payoutUIDs, string(p.UID))
		}
	}
	for _, h := range held {
		payoutNames = append(payoutNames, h.Payout)
	}
	v, err := r.Archive.LedgerView(ctx, s.merchant.Namespace, s.merchant.Name, env, paymentUIDs, payoutUIDs, payoutNames)
	if err != nil {
		return nil, fmt.Errorf("reading the archived ledger: %w", err)
	}
	return &v, nil
}

// markPayouts writes, on each payout the pass decided, what the Balance now holds: reservedAt
// for a reserved one (the payout controller disburses only those), failed INSUFFICIENT_BALANCE for
// a rejected one.
func (r *BalanceReconciler) markPayouts(ctx context.Context, s *balanceScope, led Ledger) error {
	if len(led.Reserve)+len(led.Mirror)+len(led.Reject) == 0 {
		return nil
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	now := metav1.NewMicroTime(r.Clock.Now())
	byName := map[string]*paygatev1.Payout{}
	for i := range s.payouts {
		byName[s.payouts[i].Name] = &s.payouts[i]
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

// SetupWithManager watches Merchants, their Balances, Payments and Payouts.
func (r *BalanceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.Merchant{}).
		Owns(&paygatev1.Balance{}).
		Watches(&paygatev1.Payment{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			p := o.(*paygatev1.Payment)
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Spec.MerchantRef.Name}}}
		}), builder.WithPredicates(balanceChanges)).
		Watches(&paygatev1.Payout{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			p := o.(*paygatev1.Payout)
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Spec.MerchantRef.Name}}}
		}), builder.WithPredicates(payoutLedgerChanges)).
		Named("balance").
		Complete(quietConflicts(r))
}

// balanceChanges lets through the payment events that can change a balance: a payment created or
// deleted (the observed count), or one whose phase or net amount changed. Attempts, conditions
// and push requests do not touch balances and cause no recount.
var balanceChanges = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*paygatev1.Payment)
		cur, okNew := e.ObjectNew.(*paygatev1.Payment)
		if !okOld || !okNew {
			return true
		}
		return old.Status.Phase != cur.Status.Phase || old.Status.NetAmount != cur.Status.NetAmount ||
			old.Spec.Environment != cur.Spec.Environment || old.Spec.Currency != cur.Spec.Currency
	},
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
