// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/provider"
)

// refundingProvider refunds and answers refund status queries as told; it counts refunds.
type refundingProvider struct {
	stubProvider
	mu       sync.Mutex
	refunded map[string]int
	known    bool
	status   provider.Status
}

func (p *refundingProvider) RefundScope() provider.RefundScope { return provider.RefundsPartial }

func (p *refundingProvider) Refund(_ context.Context, req provider.RefundRequest) (provider.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refunded == nil {
		p.refunded = map[string]int{}
	}
	p.refunded[req.Reference]++
	return provider.Result{Status: provider.StatusPending}, nil
}

func (p *refundingProvider) RefundStatus(context.Context, provider.RefundRequest) (provider.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.known {
		return provider.Result{}, provider.ErrNotFound
	}
	return provider.Result{Status: p.status}, nil
}

func (p *refundingProvider) count(ref string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refunded[ref]
}

// reservedRefund is a refund the balance reserved, not yet sent.
func reservedRefund() *paygatev1.Refund {
	return &paygatev1.Refund{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "rf-1", Generation: 1},
		Spec: paygatev1.RefundSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Payment: paygatev1.RefundedPayment{TrxID: "trx-aaaaaaaaaaaaaaaaaaaaaaaa", Amount: "1500.00", AttemptReference: "shop.trx-aaaaaaaaaaaaaaaaaaaaaaaa.1"},
			Amount:  "500.00", Currency: "TZS", Destination: "+255712345678", Gateway: "mpesa-tz", CreatedAt: metav1.NewMicroTime(rulesNow.Add(-time.Hour))},
		Status: paygatev1.RefundStatus{Phase: paygatev1.RefundPending, ReservedAt: ptrTime(rulesNow.Add(-time.Hour))},
	}
}

func reconcileRefund(t *testing.T, rf *paygatev1.Refund, prov provider.Provider, passes int) *paygatev1.Refund {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(rf).WithStatusSubresource(rf).Build()
	r := &RefundReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(64), Providers: stubProviders{prov},
		Clock: testingclock.NewFakePassiveClock(rulesNow), PollInterval: 2 * time.Second, AmbiguousAfter: 30 * time.Minute}
	for range passes {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rf)}); err != nil {
			t.Fatal(err)
		}
	}
	got := &paygatev1.Refund{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(rf), got); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestRefundController(t *testing.T) {
	ref := "shop.rf-1.r"
	t.Run("a reserved refund is sent once and settles", func(t *testing.T) {
		prov := &refundingProvider{known: true, status: provider.StatusSuccess}
		got := reconcileRefund(t, reservedRefund(), prov, 3)
		if got.Status.Phase != paygatev1.RefundSuccess || prov.count(ref) != 1 || got.Status.Attempt.Reference != ref {
			t.Fatalf("phase %s, %d refunds, attempt %+v; want success after one refund under %s", got.Status.Phase, prov.count(ref), got.Status.Attempt, ref)
		}
	})
	t.Run("a refund the balance has not reserved is not sent", func(t *testing.T) {
		rf := reservedRefund()
		rf.Status.ReservedAt = nil
		prov := &refundingProvider{known: true, status: provider.StatusSuccess}
		got := reconcileRefund(t, rf, prov, 2)
		if got.Status.Phase != paygatev1.RefundPending || prov.count(ref) != 0 {
			t.Fatalf("phase %s, %d refunds; want pending, none", got.Status.Phase, prov.count(ref))
		}
	})
	t.Run("a refund the provider cannot make fails without a call", func(t *testing.T) {
		got := reconcileRefund(t, reservedRefund(), &stubProvider{}, 1)
		if got.Status.Phase != paygatev1.RefundFailed || got.Status.Reason != string(paygatev1.RefundNotSupported) {
			t.Fatalf("phase %s reason %q; want failed REFUND_NOT_SUPPORTED", got.Status.Phase, got.Status.Reason)
		}
	})
	t.Run("an operator's verdict ends an unanswered refund, which stays watched and reports a late answer", func(t *testing.T) {
		rf := reservedRefund()
		rf.Status.Phase = paygatev1.RefundProcessing
		rf.Status.Attempt = &paygatev1.DisbursementAttempt{Reference: ref, Phase: paygatev1.AttemptAmbiguous, Sends: 1,
			StartedAt: metav1.NewMicroTime(rulesNow.Add(-2 * time.Hour)), LastSentAt: ptrTime(rulesNow.Add(-2 * time.Hour))}
		rf.Status.Conditions = []metav1.Condition{{Type: paygatev1.ConditionAmbiguousTooLong, Status: metav1.ConditionTrue,
			Reason: ReasonRefundAmbiguous, Message: "asked", LastTransitionTime: metav1.NewTime(rulesNow.Add(-time.Hour))}}
		rf.Annotations = map[string]string{paygatev1.AnnotationResolveRefund: "failed"}
		prov := &refundingProvider{known: true, status: provider.StatusAmbiguous}
		got := reconcileRefund(t, rf, prov, 1)
		if got.Status.Phase != paygatev1.RefundFailed || got.Status.Reason != string(paygatev1.RefundResolvedFailed) || !got.Watched(rulesNow) || prov.count(ref) != 0 {
			t.Fatalf("phase %s reason %q watched %v refunds %d; want failed RESOLVED_FAILED, watched, none sent", got.Status.Phase, got.Status.Reason, got.Watched(rulesNow), prov.count(ref))
		}
		prov.status = provider.StatusSuccess
		later := reconcileRefund(t, got, prov, 1)
		c := meta.FindStatusCondition(later.Status.Conditions, paygatev1.ConditionLateSettlement)
		if c == nil || c.Status != metav1.ConditionTrue || later.Watched(rulesNow) || later.Status.Phase != paygatev1.RefundFailed {
			t.Fatalf("LateSettlement %+v, watched %v, phase %s; want True, no longer watched, still failed", c, later.Watched(rulesNow), later.Status.Phase)
		}
	})
}
