// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/billing"
	"github.com/paygate/paygate/internal/money"
)

// ReasonPlanReady: the plan can take subscriptions.
const ReasonPlanReady = "PlanReady"

// BillingPlanReconciler reports whether a plan can be used (Ready; ConfigInvalid for what its CEL
// rules cannot check: an amount its currency cannot hold, an unknown time zone) and how many of
// its subscriptions are not cancelled (docs/billing.md, Plans).
type BillingPlanReconciler struct {
	client.Client
}

type planScope struct {
	plan  *paygatev1.BillingPlan
	patch *statusPatch[*paygatev1.BillingPlan]
}

// +kubebuilder:rbac:groups=paygate.dev,resources=billingplans,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=billingplans/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=subscriptions,verbs=get;list;watch

// Reconcile reports on one plan.
func (r *BillingPlanReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	plan := &paygatev1.BillingPlan{}
	if err := r.Get(ctx, req.NamespacedName, plan); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &planScope{plan: plan, patch: newStatusPatch(r.Client, plan, func(p *paygatev1.BillingPlan) any { return &p.Status })}
	defer func() {
		if retErr != nil {
			reason, msg := failureReason(retErr)
			setReady(&plan.Status.Conditions, plan.Generation, metav1.ConditionFalse, reason, msg)
		} else {
			plan.Status.ObservedGeneration = plan.Generation
		}
		if err := s.patch.Patch(ctx, plan); err != nil {
			retErr = errors.Join(retErr, client.IgnoreNotFound(fmt.Errorf("patching billing plan status: %w", err)))
		}
	}()
	return runSteps(ctx, s, independent(r.checkPlan, r.countSubscriptions))
}

// checkPlan sets Ready: the plan's schedule can be built (billing.PlanSchedule) and its amount
// fits its currency (billing.CheckPlanAmount).
func (r *BillingPlanReconciler) checkPlan(_ context.Context, s *planScope) (ctrl.Result, error) {
	p := s.plan
	problem := planProblem(&p.Spec)
	if problem != "" {
		setReady(&p.Status.Conditions, p.Generation, metav1.ConditionFalse, ReasonConfigInvalid, problem)
		return ctrl.Result{}, nil
	}
	setReady(&p.Status.Conditions, p.Generation, metav1.ConditionTrue, ReasonPlanReady, "The plan can take subscriptions")
	return ctrl.Result{}, nil
}

// planProblem says what makes a plan unusable, or "".
func planProblem(spec *paygatev1.BillingPlanSpec) string {
	if _, err := billing.PlanSchedule(spec); err != nil {
		return err.Error()
	}
	cur, ok := money.LookupCurrency(string(spec.Currency))
	if !ok {
		return "Currency " + string(spec.Currency) + " is not one Paygate knows"
	}
	amount, err := money.ParseAmount(string(spec.Amount))
	if err != nil {
		return "The amount is not a decimal number"
	}
	if err := billing.CheckPlanAmount(amount, cur); err != nil {
		return err.Error()
	}
	return ""
}

// countSubscriptions sets status.subscriptions: the plan's subscriptions that are not cancelled.
func (r *BillingPlanReconciler) countSubscriptions(ctx context.Context, s *planScope) (ctrl.Result, error) {
	var list paygatev1.SubscriptionList
	if err := r.List(ctx, &list, client.InNamespace(s.plan.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the subscriptions of plan %s: %w", s.plan.Name, err)
	}
	var n int32
	for i := range list.Items {
		if sub := &list.Items[i]; sub.Spec.PlanRef.Name == s.plan.Name && sub.Phase() != paygatev1.SubscriptionCancelled {
			n++
		}
	}
	s.plan.Status.Subscriptions = n
	return ctrl.Result{}, nil
}

// countChanges lets through the subscription changes that can change a plan's count: creations,
// deletions, and a subscription becoming cancelled.
var countChanges = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	before, ok1 := e.ObjectOld.(*paygatev1.Subscription)
	after, ok2 := e.ObjectNew.(*paygatev1.Subscription)
	return !ok1 || !ok2 || (before.Phase() == paygatev1.SubscriptionCancelled) != (after.Phase() == paygatev1.SubscriptionCancelled)
}}

// SetupWithManager watches BillingPlans and the subscriptions that count toward them.
func (r *BillingPlanReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.BillingPlan{}).
		Watches(&paygatev1.Subscription{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			sub, ok := o.(*paygatev1.Subscription)
			if !ok {
				return nil
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: sub.Namespace, Name: sub.Spec.PlanRef.Name}}}
		}), builder.WithPredicates(countChanges)).
		WithOptions(controllerOptions(2)).
		Named("billingplan").
		Complete(quietConflicts(r))
}
