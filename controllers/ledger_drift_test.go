// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/metrics"
)

// seedLedger gives a reconciler built without a manager its payment ledger, holding payments as
// the informer would have delivered them.
func seedLedger(r *BalanceReconciler, payments ...*paygatev1.Payment) {
	r.defaults()
	r.payments.setSynced(func() bool { return true })
	h := r.payments.handler()
	for _, p := range payments {
		h.OnAdd(p, true)
	}
}

// TestFullRecountCorrectsDrift corrupts the incremental ledger (as a lost or misapplied event
// would) and checks that the periodic full recount reports the drift and writes the recounted
// balance; between full recounts the incremental sums are what the balance shows.
func TestFullRecountCorrectsDrift(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	m := &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "duka", UID: "m-uid"}}
	paid := indexPayment("a", paygatev1.PaymentSuccess, "975.00")
	paid.Labels = map[string]string{paygatev1.LabelMerchant: "duka"}
	c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(m, paid).
		WithStatusSubresource(&paygatev1.Balance{}, &paygatev1.Payout{}).Build()
	clk := testingclock.NewFakeClock(now)
	rec := events.NewFakeRecorder(16)
	r := &BalanceReconciler{Client: c, Clock: clk, RecountEvery: 10 * time.Minute, Recorder: rec}
	lost := paid.DeepCopy()
	lost.Status.NetAmount = "1.00" // the ledger missed the real amount
	seedLedger(r, lost)

	pass := func() paygatev1.CurrencyBalance {
		t.Helper()
		req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "duka"}}
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		var b paygatev1.Balance
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: paygatev1.BalanceName("duka", paygatev1.EnvironmentSandbox)}, &b); err != nil {
			t.Fatal(err)
		}
		return b.Status.Currencies[0]
	}
	before := testutil.ToFloat64(metrics.LedgerDrift.WithLabelValues("sandbox"))
	if got := pass(); got.Settled != "975.00" {
		t.Fatalf("the first pass is a full recount: settled %s, want 975.00", got.Settled)
	}
	if n := testutil.ToFloat64(metrics.LedgerDrift.WithLabelValues("sandbox")) - before; n < 1 {
		t.Fatal("the drift was not counted")
	}
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, ReasonLedgerDrift) {
			t.Fatalf("event %q, want a %s", e, ReasonLedgerDrift)
		}
	default:
		t.Fatal("no LedgerDrift event")
	}

	// Between full recounts, the incremental sums are used: here still wrong.
	clk.Step(time.Minute)
	if got := pass(); got.Settled != "1.00" {
		t.Fatalf("an incremental pass: settled %s, want the ledger's 1.00", got.Settled)
	}
	// The next full recount corrects it again.
	clk.Step(10 * time.Minute)
	if got := pass(); got.Settled != "975.00" {
		t.Fatalf("the next full recount: settled %s, want 975.00", got.Settled)
	}
}
