// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
)

// Balance condition reasons (docs/ledger.md, Conditions). A pass that failed otherwise sets
// Ready's reason from failureReason.
const (
	ReasonBalanceComputed   = "BalanceComputed"
	ReasonPaymentUnreadable = "PaymentUnreadable"
)

// BalanceReconciler keeps each merchant's Balance objects, one per environment. A balance is
// derived: the sum of the net amounts of the merchant's successful payments in that environment,
// recomputed from the payments on every pass. Nothing is ever added to a stored number, so a
// payment is credited exactly once whatever reconciles repeat or crash (docs/ledger.md).
type BalanceReconciler struct {
	client.Client
}

// +kubebuilder:rbac:groups=paygate.dev,resources=balances,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=balances/status,verbs=get;update;patch

// balanceScope is what one reconcile pass of a merchant's balances works on.
type balanceScope struct {
	merchant *paygatev1.Merchant
	payments []paygatev1.Payment
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
	// Each environment's balance is its own object: one that cannot be written or summed does
	// not hold back the other.
	envSteps := make([]step[*balanceScope], 0, len(paygatev1.Environments))
	for _, env := range paygatev1.Environments {
		envSteps = append(envSteps, r.keepBalance(env))
	}
	return runSteps(ctx, &balanceScope{merchant: m, payments: payments.Items}, independent(envSteps...))
}

// keepBalance is the step that derives and writes the merchant's Balance in env.
func (r *BalanceReconciler) keepBalance(env paygatev1.Environment) step[*balanceScope] {
	return func(ctx context.Context, s *balanceScope) (ctrl.Result, error) {
		sums, sumErr := SumBalances(s.payments, s.merchant.Name, env)
		b, err := r.getOrCreateBalance(ctx, s.merchant, env)
		if err != nil || b == nil {
			return ctrl.Result{}, errors.Join(sumErr, err)
		}
		patch := newStatusPatch(r.Client, b, func(b *paygatev1.Balance) any { return &b.Status })
		if sumErr == nil {
			b.Status.Currencies, b.Status.ObservedPayments = sums.Currencies, sums.ObservedPayments
			setReady(&b.Status.Conditions, b.Generation, metav1.ConditionTrue, ReasonBalanceComputed, "Derived from the merchant's payments")
		} else {
			setReady(&b.Status.Conditions, b.Generation, metav1.ConditionFalse, ReasonPaymentUnreadable,
				"A payment's net amount cannot be read; the balance keeps its last value")
		}
		b.Status.ObservedGeneration = b.Generation
		if err := patch.Patch(ctx, b); err != nil {
			return ctrl.Result{}, errors.Join(sumErr, fmt.Errorf("patching balance %s: %w", b.Name, err))
		}
		return ctrl.Result{}, sumErr
	}
}

// SumBalances derives a merchant's balances in env from its payments.
func SumBalances(payments []paygatev1.Payment, merchant string, env paygatev1.Environment) (paygatev1.BalanceStatus, error) {
	sums := map[paygatev1.CurrencyCode]money.Amount{}
	counts := map[paygatev1.CurrencyCode]int64{}
	var observed int64
	for _, p := range payments {
		if p.Spec.MerchantRef.Name != merchant || p.Spec.Environment != env {
			continue
		}
		observed++
		if p.Status.Phase != paygatev1.PaymentSuccess {
			continue
		}
		net, err := money.ParseAmount(string(p.Status.NetAmount))
		if err != nil {
			return paygatev1.BalanceStatus{}, fmt.Errorf("payment %s has an unreadable net amount %q: %w", p.Name, p.Status.NetAmount, err)
		}
		sums[p.Spec.Currency] = sums[p.Spec.Currency].Add(net)
		counts[p.Spec.Currency]++
	}
	status := paygatev1.BalanceStatus{ObservedPayments: observed}
	for cur, sum := range sums {
		c, _ := money.LookupCurrency(string(cur))
		status.Currencies = append(status.Currencies, paygatev1.CurrencyBalance{
			Currency: cur, Available: paygatev1.Decimal(sum.StringFixed(c.Scale)), SettledPayments: counts[cur],
		})
	}
	slices.SortFunc(status.Currencies, func(a, b paygatev1.CurrencyBalance) int {
		return strings.Compare(string(a.Currency), string(b.Currency))
	})
	return status, nil
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

// SetupWithManager watches Merchants, their Balances and their Payments.
func (r *BalanceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.Merchant{}).
		Owns(&paygatev1.Balance{}).
		Watches(&paygatev1.Payment{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			p := o.(*paygatev1.Payment)
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Spec.MerchantRef.Name}}}
		}), builder.WithPredicates(balanceChanges)).
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
