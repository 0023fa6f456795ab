// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// stepRecord is the state the test steps share: which steps ran, in order.
type stepRecord struct{ ran []string }

// fakeStep returns a step that records its name and returns the given result and error.
func fakeStep(name string, after time.Duration, err error) step[*stepRecord] {
	return func(_ context.Context, s *stepRecord) (ctrl.Result, error) {
		s.ran = append(s.ran, name)
		return ctrl.Result{RequeueAfter: after}, err
	}
}

func TestRunSteps(t *testing.T) {
	errBoom := errors.New("boom")
	errLater := errors.New("later")
	type steps = []step[*stepRecord]
	group := independent[*stepRecord]

	tests := []struct {
		name      string
		steps     steps
		wantRan   []string
		wantAfter time.Duration
		wantErrs  []error // each must be in the returned error
	}{
		{
			name:    "no steps",
			wantRan: nil,
		},
		{
			name:    "all zero results merge to zero",
			steps:   steps{fakeStep("a", 0, nil), fakeStep("b", 0, nil), fakeStep("c", 0, nil)},
			wantRan: []string{"a", "b", "c"},
		},
		{
			name:      "single requeue kept",
			steps:     steps{fakeStep("a", 0, nil), fakeStep("b", 5*time.Second, nil), fakeStep("c", 0, nil)},
			wantRan:   []string{"a", "b", "c"},
			wantAfter: 5 * time.Second,
		},
		{
			name:      "lowest non-zero wins, lower one last",
			steps:     steps{fakeStep("a", time.Minute, nil), fakeStep("b", 0, nil), fakeStep("c", 2*time.Second, nil)},
			wantRan:   []string{"a", "b", "c"},
			wantAfter: 2 * time.Second,
		},
		{
			name:      "lowest non-zero wins, lower one first",
			steps:     steps{fakeStep("a", 2*time.Second, nil), fakeStep("b", time.Minute, nil), fakeStep("c", 0, nil)},
			wantRan:   []string{"a", "b", "c"},
			wantAfter: 2 * time.Second,
		},
		{
			name:      "lowest non-zero wins, lower one in the middle",
			steps:     steps{fakeStep("a", 30*time.Second, nil), fakeStep("b", time.Second, nil), fakeStep("c", time.Minute, nil)},
			wantRan:   []string{"a", "b", "c"},
			wantAfter: time.Second,
		},
		{
			name:     "stops at the first error",
			steps:    steps{fakeStep("a", 0, nil), fakeStep("b", 0, errBoom), fakeStep("c", 0, errLater), fakeStep("d", 0, nil)},
			wantRan:  []string{"a", "b"},
			wantErrs: []error{errBoom},
		},
		{
			name:      "error in the first step runs nothing else, and keeps its requeue",
			steps:     steps{fakeStep("a", time.Second, errBoom), fakeStep("b", 0, nil)},
			wantRan:   []string{"a"},
			wantAfter: time.Second,
			wantErrs:  []error{errBoom},
		},
		{
			name:      "error in the last step keeps the earlier requeue",
			steps:     steps{fakeStep("a", time.Second, nil), fakeStep("b", 0, errBoom)},
			wantRan:   []string{"a", "b"},
			wantAfter: time.Second,
			wantErrs:  []error{errBoom},
		},
		{
			name:      "independent steps all run",
			steps:     steps{group(fakeStep("a", time.Minute, nil), fakeStep("b", 0, nil), fakeStep("c", 3*time.Second, nil))},
			wantRan:   []string{"a", "b", "c"},
			wantAfter: 3 * time.Second,
		},
		{
			name:      "independent steps run after an earlier one failed, errors joined",
			steps:     steps{group(fakeStep("a", 0, nil), fakeStep("b", 0, errBoom), fakeStep("c", time.Minute, errLater), fakeStep("d", 2*time.Second, nil))},
			wantRan:   []string{"a", "b", "c", "d"},
			wantAfter: 2 * time.Second,
			wantErrs:  []error{errBoom, errLater},
		},
		{
			name:     "a failed group stops the steps that depend on it",
			steps:    steps{group(fakeStep("a", 0, errBoom), fakeStep("b", 0, nil)), fakeStep("c", 0, nil)},
			wantRan:  []string{"a", "b"},
			wantErrs: []error{errBoom},
		},
		{
			name:      "a group after dependent steps, lowest requeue over both",
			steps:     steps{fakeStep("a", 10*time.Second, nil), group(fakeStep("b", 0, nil), fakeStep("c", 4*time.Second, nil)), fakeStep("d", time.Minute, nil)},
			wantRan:   []string{"a", "b", "c", "d"},
			wantAfter: 4 * time.Second,
		},
		{
			name:    "an empty group is no step",
			steps:   steps{group(), fakeStep("a", 0, nil)},
			wantRan: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &stepRecord{}
			res, err := runSteps(context.Background(), rec, tt.steps...)
			if !slices.Equal(rec.ran, tt.wantRan) {
				t.Errorf("steps ran %v, want %v", rec.ran, tt.wantRan)
			}
			for _, want := range tt.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("err = %v, want it to hold %v", err, want)
				}
			}
			if len(tt.wantErrs) == 0 && err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			// With an error the result is only read by quietConflicts (a lost race retries at the
			// lowest requeue); controller-runtime never sees both.
			if want := (ctrl.Result{RequeueAfter: tt.wantAfter}); res != want {
				t.Errorf("result = %+v, want %+v", res, want)
			}
		})
	}
}

func TestRunStepsLowestRequeue(t *testing.T) {
	r := func(d time.Duration) ctrl.Result { return ctrl.Result{RequeueAfter: d} }
	tests := []struct {
		a, b, want ctrl.Result
	}{
		{r(0), r(0), r(0)},
		{r(0), r(time.Second), r(time.Second)},
		{r(time.Second), r(0), r(time.Second)},
		{r(time.Second), r(time.Minute), r(time.Second)},
		{r(time.Minute), r(time.Second), r(time.Second)},
		{r(time.Second), r(time.Second), r(time.Second)},
	}
	for _, tt := range tests {
		if got := lowestRequeue(tt.a, tt.b); got != tt.want {
			t.Errorf("lowestRequeue(%v, %v) = %v, want %v", tt.a.RequeueAfter, tt.b.RequeueAfter, got.RequeueAfter, tt.want.RequeueAfter)
		}
	}
}

func TestQuietConflicts(t *testing.T) {
	payments := schema.GroupResource{Group: "paygate.dev", Resource: "payments"}
	conflict := apierrors.NewConflict(payments, "trx-a", errors.New("the object has been modified"))
	provider := errors.New("provider unreachable")
	tests := []struct {
		name      string
		result    ctrl.Result
		err       error
		wantAfter time.Duration
		wantErr   bool
	}{
		{name: "success passes through", result: ctrl.Result{RequeueAfter: time.Minute}, wantAfter: time.Minute},
		{name: "a conflict runs again soon, quietly", err: conflict, wantAfter: conflictRetry},
		{name: "a wrapped conflict too", err: fmt.Errorf("patching payment status: %w", conflict), wantAfter: conflictRetry},
		{name: "an earlier requeue wins", result: ctrl.Result{RequeueAfter: time.Millisecond}, err: conflict, wantAfter: time.Millisecond},
		{name: "joined conflicts", err: errors.Join(conflict, fmt.Errorf("again: %w", conflict)), wantAfter: conflictRetry},
		{name: "a provider error is reported", err: provider, wantErr: true},
		{name: "a provider error joined with a conflict is reported", err: errors.Join(provider, conflict), wantErr: true},
		{name: "a provider error and a conflict wrapped together are reported", err: fmt.Errorf("%w: %w", provider, conflict), wantErr: true},
		{name: "another API error is reported", err: apierrors.NewNotFound(payments, "trx-a"), wantErr: true},
		{name: "a reported error drops the result", result: ctrl.Result{RequeueAfter: time.Second}, err: provider, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := quietConflicts(reconcile.Func(func(context.Context, reconcile.Request) (ctrl.Result, error) {
				return tt.result, tt.err
			}))
			res, err := r.Reconcile(context.Background(), reconcile.Request{})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tt.wantErr)
			}
			if tt.wantErr && !res.IsZero() {
				t.Fatalf("result %+v with an error: controller-runtime ignores it and warns", res)
			}
			if !tt.wantErr && res.RequeueAfter != tt.wantAfter {
				t.Fatalf("RequeueAfter = %v, want %v", res.RequeueAfter, tt.wantAfter)
			}
		})
	}
}
