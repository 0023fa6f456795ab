// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

func TestSubscriptions(t *testing.T) {
	sub := func(name string, env paygatev1.Environment, phase paygatev1.SubscriptionPhase) *paygatev1.Subscription {
		return &paygatev1.Subscription{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec:       paygatev1.SubscriptionSpec{Environment: env},
			Status:     paygatev1.SubscriptionStatus{Phase: phase},
		}
	}
	scheme := runtime.NewScheme()
	if err := paygatev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		sub("paying", paygatev1.EnvironmentProduction, paygatev1.SubscriptionActive),
		sub("paying-too", paygatev1.EnvironmentProduction, paygatev1.SubscriptionActive),
		sub("dunning", paygatev1.EnvironmentProduction, paygatev1.SubscriptionPastDue),
		sub("gave-up", paygatev1.EnvironmentProduction, paygatev1.SubscriptionSuspended),
		sub("new", paygatev1.EnvironmentSandbox, ""), // not reconciled yet: pending
		sub("first-charge", paygatev1.EnvironmentSandbox, paygatev1.SubscriptionPending),
		sub("left", paygatev1.EnvironmentSandbox, paygatev1.SubscriptionCancelled),
	).Build()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(subscriptions{reader: c})
	want := `
# HELP paygate_subscriptions Subscriptions by environment and phase (pending, active, past_due, suspended, cancelled).
# TYPE paygate_subscriptions gauge
paygate_subscriptions{environment="production",phase="active"} 2
paygate_subscriptions{environment="production",phase="cancelled"} 0
paygate_subscriptions{environment="production",phase="past_due"} 1
paygate_subscriptions{environment="production",phase="pending"} 0
paygate_subscriptions{environment="production",phase="suspended"} 1
paygate_subscriptions{environment="sandbox",phase="active"} 0
paygate_subscriptions{environment="sandbox",phase="cancelled"} 1
paygate_subscriptions{environment="sandbox",phase="past_due"} 0
paygate_subscriptions{environment="sandbox",phase="pending"} 2
paygate_subscriptions{environment="sandbox",phase="suspended"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "paygate_subscriptions"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(subscriptions{reader: c}); n != 10 {
		t.Errorf("%d series, want one per environment and phase (10)", n)
	}
}

// TestBillingCounters: the invoice and dunning counters are registered with controller-runtime's
// registry (what the manager's /metrics serves), with their help and labels.
func TestBillingCounters(t *testing.T) {
	reset := func() { InvoiceCharges.Reset(); Invoices.Reset(); DunningRetries.Reset() }
	reset()
	t.Cleanup(reset)
	InvoiceCharges.WithLabelValues("production", "success", "").Inc()
	InvoiceCharges.WithLabelValues("production", "failed", "INSUFFICIENT_FUNDS").Add(2)
	Invoices.WithLabelValues("production", "paid").Inc()
	Invoices.WithLabelValues("sandbox", "void").Inc()
	DunningRetries.WithLabelValues("production").Add(2)
	want := `
# HELP paygate_dunning_retries_scheduled_total Retries of a failed invoice charge scheduled by the plan's dunning policy, by environment.
# TYPE paygate_dunning_retries_scheduled_total counter
paygate_dunning_retries_scheduled_total{environment="production"} 2
# HELP paygate_invoice_charges_total Invoice charges whose outcome their invoice recorded, by environment, outcome (success, failed) and failure reason.
# TYPE paygate_invoice_charges_total counter
paygate_invoice_charges_total{environment="production",outcome="failed",reason="INSUFFICIENT_FUNDS"} 2
paygate_invoice_charges_total{environment="production",outcome="success",reason=""} 1
# HELP paygate_invoices_total Invoices that reached a terminal phase (paid, void), by environment and phase.
# TYPE paygate_invoices_total counter
paygate_invoices_total{environment="production",phase="paid"} 1
paygate_invoices_total{environment="sandbox",phase="void"} 1
`
	if err := testutil.GatherAndCompare(crmetrics.Registry, strings.NewReader(want),
		"paygate_invoice_charges_total", "paygate_invoices_total", "paygate_dunning_retries_scheduled_total"); err != nil {
		t.Fatal(err)
	}
}
