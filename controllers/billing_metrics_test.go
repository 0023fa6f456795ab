// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/billing"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/metrics"
)

// billingCounts are the invoice and dunning counters of the production environment.
type billingCounts struct {
	succeeded, failed, paid, void, retries float64
}

func readBillingCounts() billingCounts {
	return billingCounts{
		succeeded: testutil.ToFloat64(metrics.InvoiceCharges.WithLabelValues("production", "success", "")),
		failed:    testutil.ToFloat64(metrics.InvoiceCharges.WithLabelValues("production", "failed", "INSUFFICIENT_FUNDS")),
		paid:      testutil.ToFloat64(metrics.Invoices.WithLabelValues("production", "paid")),
		void:      testutil.ToFloat64(metrics.Invoices.WithLabelValues("production", "void")),
		retries:   testutil.ToFloat64(metrics.DunningRetries.WithLabelValues("production")),
	}
}

func (a billingCounts) minus(b billingCounts) billingCounts {
	return billingCounts{a.succeeded - b.succeeded, a.failed - b.failed, a.paid - b.paid, a.void - b.void, a.retries - b.retries}
}

// TestBillingCountedOnce: the invoice and dunning counters move once per transition. Two passes
// read the same state and compute the same transition: the one whose status write stuck counts
// it, the other loses the optimistic lock and counts nothing, and a pass that reads the stored
// transition counts nothing either.
func TestBillingCountedOnce(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC) // 10:00 in Dar es Salaam: inside the window
	inFlight := []metav1.Condition{{Type: paygatev1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonChargeInFlight,
		Message: "A charge is waiting for the customer's approval", LastTransitionTime: metav1.NewTime(now)}}
	failedOnce := []metav1.Condition{{Type: paygatev1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonChargeFailed,
		Message: "The latest charge failed with INSUFFICIENT_FUNDS; a retry is scheduled", LastTransitionTime: metav1.NewTime(now)}}
	failed := paygatev1.PaymentStatus{Phase: paygatev1.PaymentFailed, Reason: string(paygatev1.FailureInsufficientFunds), SettledAt: ptrTime(now)}

	settle := func(r *SubscriptionReconciler, s *subscriptionScope) error {
		_, err := r.settleCharges(ctx, s)
		return err
	}
	cancel := func(r *SubscriptionReconciler, s *subscriptionScope) error {
		return r.void(ctx, s, "the subscription is cancelled")
	}

	for _, tt := range []struct {
		name    string
		invoice paygatev1.InvoiceStatus
		charge  paygatev1.PaymentStatus
		step    func(r *SubscriptionReconciler, s *subscriptionScope) error
		want    billingCounts
		// maxFailures is the plan's (default 4); resumedAfter the invoice's AnnotationDunningSince.
		maxFailures  int32
		resumedAfter string
	}{{
		name:    "a failed charge: a retry scheduled",
		invoice: paygatev1.InvoiceStatus{Phase: paygatev1.InvoiceOpen, AttemptCount: 1, Conditions: inFlight},
		charge:  failed,
		step:    settle,
		want:    billingCounts{failed: 1, retries: 1},
	}, {
		name:    "a paid charge: the invoice paid",
		invoice: paygatev1.InvoiceStatus{Phase: paygatev1.InvoicePaymentFailed, AttemptCount: 1, Conditions: inFlight},
		charge:  paygatev1.PaymentStatus{Phase: paygatev1.PaymentSuccess, SettledAt: ptrTime(now)},
		step:    settle,
		want:    billingCounts{succeeded: 1, paid: 1},
	}, {
		// The invoice's status changes only in Ready: it is written, and the charge counted, all the same.
		name: "the last failure, with the reason of the one before: suspended, no retry",
		invoice: paygatev1.InvoiceStatus{Phase: paygatev1.InvoicePaymentFailed, AttemptCount: 2, LastFailureReason: failed.Reason,
			Conditions: inFlight},
		charge:       failed,
		step:         settle,
		want:         billingCounts{failed: 1},
		maxFailures:  1,
		resumedAfter: "1",
	}, {
		name: "a void invoice whose failed charge was counted before",
		invoice: paygatev1.InvoiceStatus{Phase: paygatev1.InvoicePaymentFailed, AttemptCount: 1, LastFailureReason: failed.Reason,
			NextAttemptAt: secondTime(now.Add(24 * time.Hour)), Conditions: failedOnce},
		charge: failed,
		step:   cancel,
		want:   billingCounts{void: 1},
	}, {
		name:    "a void invoice whose failed charge the void reads",
		invoice: paygatev1.InvoiceStatus{Phase: paygatev1.InvoiceOpen, AttemptCount: 1, Conditions: inFlight},
		charge:  failed,
		step:    cancel,
		want:    billingCounts{failed: 1, void: 1},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			sub := &paygatev1.Subscription{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "sub-a"},
				Spec:       paygatev1.SubscriptionSpec{Environment: paygatev1.EnvironmentProduction},
				Status:     paygatev1.SubscriptionStatus{Phase: paygatev1.SubscriptionPending},
			}
			schedule, err := billing.PlanSchedule(&paygatev1.BillingPlanSpec{Interval: paygatev1.IntervalMonth,
				Dunning: paygatev1.DunningPolicy{MaxFailures: tt.maxFailures}})
			if err != nil {
				t.Fatal(err)
			}
			inv := &paygatev1.Invoice{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: paygatev1.InvoiceName("sub-a", 1), UID: "inv-uid"},
				Spec: paygatev1.InvoiceSpec{Environment: paygatev1.EnvironmentProduction, Period: 1,
					PeriodStart: metav1.NewTime(now), PeriodEnd: metav1.NewTime(now.AddDate(0, 1, 0))},
				Status: tt.invoice,
			}
			if tt.resumedAfter != "" {
				inv.Annotations = map[string]string{AnnotationDunningSince: tt.resumedAfter}
			}
			trx := billing.InvoicePaymentName(string(inv.UID), inv.Status.AttemptCount)
			inv.Status.Payments = []string{trx}
			charge := &paygatev1.Payment{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: trx},
				Spec:       paygatev1.PaymentSpec{Environment: paygatev1.EnvironmentProduction},
				Status:     tt.charge,
			}
			c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(sub, inv, charge).
				WithStatusSubresource(sub, inv, charge).Build()
			r := &SubscriptionReconciler{Client: c, Recorder: events.NewFakeRecorder(100), Clock: clocktesting.NewFakePassiveClock(now)}
			read := func() *subscriptionScope {
				t.Helper()
				sub, inv, p := &paygatev1.Subscription{}, &paygatev1.Invoice{}, &paygatev1.Payment{}
				for _, o := range []client.Object{sub, inv, p} {
					name := map[client.Object]string{sub: "sub-a", inv: paygatev1.InvoiceName("sub-a", 1), p: trx}[o]
					if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, o); err != nil {
						t.Fatal(err)
					}
				}
				s := &subscriptionScope{sub: sub, patch: newStatusPatch(c, sub, subscriptionStatus), now: now, subNow: now, schedule: schedule}
				s.setInvoice(c, inv)
				s.charges, s.latest = []*paygatev1.Payment{p}, p
				return s
			}

			before := readBillingCounts()
			first, second := read(), read() // the second pass's cache is stale once the first writes
			if err := tt.step(r, first); err != nil {
				t.Fatalf("the first pass: %v", err)
			}
			if err := tt.step(r, second); !apierrors.IsConflict(err) {
				t.Fatalf("the stale pass: err %v, want a conflict", err)
			}
			if got := readBillingCounts().minus(before); got != tt.want {
				t.Fatalf("counted %+v, want %+v", got, tt.want)
			}
			// The retry of the stale pass reads what the first one stored.
			if err := tt.step(r, read()); err != nil {
				t.Fatalf("the retry: %v", err)
			}
			if got := readBillingCounts().minus(before); got != tt.want {
				t.Fatalf("after a pass that read the stored transition: counted %+v, want %+v", got, tt.want)
			}
		})
	}
}
