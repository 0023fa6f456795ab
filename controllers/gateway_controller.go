// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
)

// Gateway condition reasons (docs/configuration.md, Gateway). A pass that failed otherwise sets
// Ready's reason from failureReason.
const (
	ReasonGatewayReady         = "GatewayReady"
	ReasonConfigInvalid        = "ConfigInvalid"
	ReasonProductionSimulated  = "ProductionSimulated"
	messageProductionSimulated = "Production payments through this gateway are simulated: they settle and no money moves (spec.simulation is SandboxAndProduction). For demos only."
)

// GatewayReconciler assigns each Gateway its integer id, checks what the schema cannot (that its
// amounts fit its currency's decimal places), and warns while it simulates production.
type GatewayReconciler struct {
	client.Client
	Recorder events.EventRecorder
	IDs      *IDAllocator
}

// +kubebuilder:rbac:groups=paygate.dev,resources=gateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=gateways/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=idclaims,verbs=get;list;watch;create

// Reconcile assigns the gateway's id and reports whether its configuration can work.
func (r *GatewayReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	gw := &paygatev1.Gateway{}
	if err := r.Get(ctx, req.NamespacedName, gw); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patch := newStatusPatch(r.Client, gw, func(gw *paygatev1.Gateway) any { return &gw.Status })
	defer func() {
		r.summarizeGateway(gw, retErr)
		if err := patch.Patch(ctx, gw); err != nil {
			retErr = errors.Join(retErr, client.IgnoreNotFound(fmt.Errorf("patching gateway status: %w", err)))
		}
	}()
	id, err := r.IDs.Ensure(ctx, paygatev1.IDClaimGateway, gw)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("assigning gateway id: %w", err)
	}
	gw.Status.ID = id
	return ctrl.Result{}, nil
}

// summarizeGateway sets Ready: False while the configuration cannot work or the pass failed, and
// records an event when Ready flips.
func (r *GatewayReconciler) summarizeGateway(gw *paygatev1.Gateway, reconcileErr error) {
	ready := metav1.Condition{Type: paygatev1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonGatewayReady,
		Message: "Gateway configuration is valid", ObservedGeneration: gw.Generation}
	if problems := CheckGatewayAmounts(&gw.Spec); len(problems) > 0 {
		// Derived from the spec alone: the message changes only when the spec does.
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonConfigInvalid, strings.Join(problems, "; ")
	} else if reconcileErr != nil {
		ready.Status = metav1.ConditionFalse
		ready.Reason, ready.Message = failureReason(reconcileErr)
	}
	var was metav1.ConditionStatus // copied: SetStatusCondition edits the slice in place
	if c := meta.FindStatusCondition(gw.Status.Conditions, paygatev1.ConditionReady); c != nil {
		was = c.Status
	}
	meta.SetStatusCondition(&gw.Status.Conditions, ready)
	r.reportSimulation(gw)
	if reconcileErr == nil {
		gw.Status.ObservedGeneration = gw.Generation
	}
	if was != ready.Status {
		eventType := corev1.EventTypeNormal
		if ready.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(gw, nil, eventType, ready.Reason, "ValidateGateway", "%s", ready.Message)
	}
}

// reportSimulation sets the warning condition SimulatingProduction while the gateway simulates
// production payments, with a Warning event when it turns on, and removes it otherwise.
func (r *GatewayReconciler) reportSimulation(gw *paygatev1.Gateway) {
	if !gw.SimulatesProduction() {
		meta.RemoveStatusCondition(&gw.Status.Conditions, paygatev1.ConditionSimulatingProduction)
		return
	}
	if !meta.IsStatusConditionTrue(gw.Status.Conditions, paygatev1.ConditionSimulatingProduction) {
		r.Recorder.Eventf(gw, nil, corev1.EventTypeWarning, ReasonProductionSimulated, "ValidateGateway", "%s", messageProductionSimulated)
	}
	meta.SetStatusCondition(&gw.Status.Conditions, metav1.Condition{Type: paygatev1.ConditionSimulatingProduction,
		Status: metav1.ConditionTrue, Reason: ReasonProductionSimulated, Message: messageProductionSimulated, ObservedGeneration: gw.Generation})
}

// CheckGatewayAmounts lists the amounts of a gateway spec that its currency cannot express.
func CheckGatewayAmounts(spec *paygatev1.GatewaySpec) []string {
	cur, ok := money.LookupCurrency(string(spec.Currency))
	if !ok {
		return []string{fmt.Sprintf("currency %q is not supported", spec.Currency)}
	}
	var problems []string
	check := func(field string, v *paygatev1.Decimal) {
		if v == nil || *v == "" {
			return
		}
		a, err := money.ParseAmount(string(*v))
		if err == nil {
			err = money.ValidateForCurrency(a, cur)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %s: %v", field, *v, err))
		}
	}
	fixed := spec.Fees.Fixed
	check("fees.fixed", &fixed)
	check("minAmount", spec.MinAmount)
	check("maxAmount", spec.MaxAmount)
	return problems
}

// SetupWithManager watches Gateways.
func (r *GatewayReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.Gateway{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("gateway").
		Complete(quietConflicts(r))
}
