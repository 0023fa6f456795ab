// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// IdempotencyKeyReconciler deletes merchants' Idempotency-Key records once their 24 hours are
// over, so etcd holds only live keys.
type IdempotencyKeyReconciler struct {
	client.Client
	Clock clock.PassiveClock
}

// +kubebuilder:rbac:groups=paygate.dev,resources=idempotencykeys,verbs=get;list;watch;delete

// Reconcile deletes an expired key, or comes back when it expires.
func (r *IdempotencyKeyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := &paygatev1.IdempotencyKey{}
	if err := r.Get(ctx, req.NamespacedName, key); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if left := key.Spec.ExpiresAt.Sub(r.Clock.Now()); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	// The UID precondition leaves alone a key that was re-claimed under the same name meanwhile.
	uid := key.UID
	if err := r.Delete(ctx, key, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("deleting expired idempotency key %s: %w", key.Name, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Expired idempotency key deleted", "expiredAt", key.Spec.ExpiresAt.Format(time.RFC3339))
	return ctrl.Result{}, nil
}

// SetupWithManager watches IdempotencyKeys.
func (r *IdempotencyKeyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&paygatev1.IdempotencyKey{}).Named("idempotencykey").Complete(quietConflicts(r))
}
