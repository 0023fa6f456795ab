// Package controllers holds Paygate's reconcilers, one per kind. Each Reconcile is a short list of
// named sub-steps; status is patched once per pass.
package controllers

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
)

// step is one named sub-step of a reconcile pass.
type step[S any] func(ctx context.Context, s S) (ctrl.Result, error)

// runSteps runs steps in order and stops at the first error. Results merge as "lowest non-zero
// requeue wins".
func runSteps[S any](ctx context.Context, s S, steps ...step[S]) (ctrl.Result, error) {
	var result ctrl.Result
	for _, st := range steps {
		r, err := st(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		result = lowestRequeue(result, r)
	}
	return result, nil
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
