// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package controllers holds Paygate's reconcilers, one per kind. Each Reconcile is a short list of
// named sub-steps; status is patched once per pass.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// step is one named sub-step of a reconcile pass.
type step[S any] func(ctx context.Context, s S) (ctrl.Result, error)

// runSteps runs steps in order and stops at the first error: a step may rely on the ones before
// it. Steps that do not depend on each other are grouped with independent. Results merge as
// "lowest non-zero requeue wins"; the merged result is returned with the error too, for
// quietConflicts (controller-runtime ignores a result that comes with an error).
func runSteps[S any](ctx context.Context, s S, steps ...step[S]) (ctrl.Result, error) {
	var result ctrl.Result
	for _, st := range steps {
		r, err := st(ctx, s)
		result = lowestRequeue(result, r)
		if err != nil {
			return result, err
		}
	}
	return result, nil
}

// independent groups steps that do not depend on each other into one step: every one of them
// runs even when an earlier one failed (a merchant whose webhook secret cannot be written still
// gets its credentials), their errors are joined, and their results merge as "lowest non-zero
// requeue wins". The group fails, stopping runSteps, when any of them failed.
func independent[S any](steps ...step[S]) step[S] {
	return func(ctx context.Context, s S) (ctrl.Result, error) {
		var (
			result ctrl.Result
			errs   []error
		)
		for _, st := range steps {
			r, err := st(ctx, s)
			result = lowestRequeue(result, r)
			if err != nil {
				errs = append(errs, err)
			}
		}
		return result, errors.Join(errs...)
	}
}

func lowestRequeue(a, b ctrl.Result) ctrl.Result {
	switch {
	case a.RequeueAfter == 0:
		return b
	case b.RequeueAfter == 0:
		return a
	case b.RequeueAfter < a.RequeueAfter:
		return b
	}
	return a
}

// conflictRetry is how soon a pass that lost a write race runs again.
const conflictRetry = 250 * time.Millisecond

// staleRead reports whether obj, as this pass read it from the cache, is older than what the API
// server holds (live; nil: nothing to compare with, not stale). A pass about to act on the
// provider on the strength of an old record (pushing again an attempt recorded as Initiating)
// asks first, and runs again on fresher data instead, as a pass whose write conflicts does.
func staleRead(ctx context.Context, live client.Reader, obj client.Object) (bool, error) {
	if live == nil {
		return false, nil
	}
	cur := obj.DeepCopyObject().(client.Object)
	if err := live.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		return false, fmt.Errorf("reading %s live before acting on its record: %w", obj.GetName(), err)
	}
	return cur.GetResourceVersion() != obj.GetResourceVersion(), nil
}

// quietConflicts wraps a reconciler so that a pass whose write lost an optimistic-lock race (the
// object changed after the pass read it: a push request, a callback, another replica) runs again
// shortly instead of being reported as a reconcile error with a stack trace. Such a race is
// expected and harmless; an SRE reading the logs should only see errors worth acting on.
func quietConflicts(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
		res, err := r.Reconcile(ctx, req)
		if err != nil && onlyConflicts(err) {
			log.FromContext(ctx).V(1).Info("Object changed during the pass; reconciling again", "reason", err.Error())
			return lowestRequeue(res, ctrl.Result{RequeueAfter: conflictRetry}), nil
		}
		if err != nil {
			// controller-runtime ignores a result that comes with an error (and warns about it).
			return ctrl.Result{}, err
		}
		return res, nil
	})
}

// onlyConflicts tells whether err is a write conflict and nothing else: every error joined or
// wrapped in it ends in an API conflict.
func onlyConflicts(err error) bool {
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		for _, inner := range errs {
			if !onlyConflicts(inner) {
				return false
			}
		}
		return len(errs) > 0
	case apierrors.APIStatus:
		return apierrors.IsConflict(err)
	case interface{ Unwrap() error }:
		inner := e.Unwrap()
		return inner != nil && onlyConflicts(inner)
	}
	return false
}
