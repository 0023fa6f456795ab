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

// disbursingProvider counts disbursements per reference and answers status queries "not found"
// (it never received the disbursement, or forgot it) until known is set, then status.
type disbursingProvider struct {
	stubProvider
	mu        sync.Mutex
	disbursed map[string]int
	known     bool
	status    provider.Status
}

func (p *disbursingProvider) Disburse(_ context.Context, req provider.DisbursementRequest) (provider.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.disbursed == nil {
		p.disbursed = map[string]int{}
	}
	p.disbursed[req.Reference]++
	return provider.Result{Status: provider.StatusPending}, nil
}

func (p *disbursingProvider) DisbursementStatus(_ context.Context, req provider.DisbursementRequest) (provider.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.known {
		return provider.Result{}, provider.ErrNotFound
	}
	return provider.Result{Status: p.status}, nil
}

func (p *disbursingProvider) count(ref string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.disbursed[ref]
}

// unansweredPayout is a reserved payout whose disbursement was recorded (Initiating) and never
// answered, sent sends times, with AmbiguousTooLong raised at asked (nil: not raised) and the
// operator's verdict annotation (empty: none).
func unansweredPayout(sends int32, asked *time.Time, verdict string) *paygatev1.Payout {
	p := &paygatev1.Payout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "po-1", Generation: 1},
		Spec: paygatev1.PayoutSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Amount: "1000.00", Fee: "10.00", PayableAmount: "990.00", Currency: "TZS", Destination: "+255712345678", Gateway: "mpesa-tz",
			CreatedAt: metav1.NewMicroTime(rulesNow.Add(-2 * time.Hour))},
		Status: paygatev1.PayoutStatus{Phase: paygatev1.PayoutProcessing, ReservedAt: ptrTime(rulesNow.Add(-2 * time.Hour)),
			Attempt: &paygatev1.DisbursementAttempt{Reference: "shop.po-1", Phase: paygatev1.AttemptInitiating, Sends: sends,
				StartedAt: metav1.NewMicroTime(rulesNow.Add(-2 * time.Hour)), LastSentAt: ptrTime(rulesNow.Add(-time.Hour))}},
	}
	if asked != nil {
		p.Status.Conditions = []metav1.Condition{{Type: paygatev1.ConditionAmbiguousTooLong, Status: metav1.ConditionTrue,
			Reason: ReasonPayoutAmbiguous, Message: "asked", LastTransitionTime: metav1.NewTime(*asked)}}
	}
	if verdict != "" {
		p.Annotations = map[string]string{paygatev1.AnnotationResolvePayout: verdict}
	}
	return p
}

func reconcilePayout(t *testing.T, p *paygatev1.Payout, prov provider.Provider) *paygatev1.Payout {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(p).WithStatusSubresource(p).Build()
	r := &PayoutReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(32), Providers: stubProviders{prov},
		Clock: testingclock.NewFakePassiveClock(rulesNow), PollInterval: 2 * time.Second, AmbiguousAfter: 30 * time.Minute}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}); err != nil {
		t.Fatal(err)
	}
	got := &paygatev1.Payout{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestAVerdictNeverRidesOnASend (issue hole 1): an operator resolved an unanswered disbursement
// as failed; the provider, back, says it never received it. The pass that applies the verdict
// disburses nothing: the payout fails RESOLVED_FAILED, and the attempt stays watched.
func TestAVerdictNeverRidesOnASend(t *testing.T) {
	asked := rulesNow.Add(-10 * time.Minute)
	prov := &disbursingProvider{}
	got := reconcilePayout(t, unansweredPayout(1, &asked, "failed"), prov)
	if n := prov.count("shop.po-1"); n != 0 {
		t.Fatalf("the verdict's pass disbursed %d times", n)
	}
	if got.Status.Phase != paygatev1.PayoutFailed || got.Status.Reason != string(paygatev1.PayoutResolvedFailed) || !got.Watched(rulesNow) {
		t.Fatalf("payout %s/%s, watched %v; want failed RESOLVED_FAILED, watched", got.Status.Phase, got.Status.Reason, got.Watched(rulesNow))
	}

	// Without a verdict, the same payout is disbursed again with the same reference (the provider
	// de-duplicates), and the operator's question starts over.
	prov = &disbursingProvider{}
	got = reconcilePayout(t, unansweredPayout(1, &asked, ""), prov)
	if n := prov.count("shop.po-1"); n != 1 || got.Status.Attempt.Sends != 2 {
		t.Fatalf("%d disbursements, %d sends recorded; want 1, 2", n, got.Status.Attempt.Sends)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, paygatev1.ConditionAmbiguousTooLong); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonSentAgain {
		t.Fatalf("AmbiguousTooLong %+v; want False, SentAgain", c)
	}
}

// TestAVerdictNamesItsSend: a verdict without a send number resolves only a disbursement sent
// once; after a second send it must name send 2 (the operator checked the first).
func TestAVerdictNamesItsSend(t *testing.T) {
	asked := rulesNow.Add(-10 * time.Minute)
	for _, tt := range []struct {
		verdict string
		want    paygatev1.PayoutPhase
	}{
		{"failed", paygatev1.PayoutProcessing},
		{"failed/1", paygatev1.PayoutProcessing},
		{"failed/2", paygatev1.PayoutFailed},
		{"success/2", paygatev1.PayoutSuccess},
		{"maybe", paygatev1.PayoutProcessing},
	} {
		prov := &disbursingProvider{known: true, status: provider.StatusAmbiguous}
		got := reconcilePayout(t, unansweredPayout(2, &asked, tt.verdict), prov)
		if got.Status.Phase != tt.want || prov.count("shop.po-1") != 0 {
			t.Errorf("verdict %q: payout %s after %d disbursements; want %s and none", tt.verdict, got.Status.Phase, prov.count("shop.po-1"), tt.want)
		}
	}
}

// TestAWatchedPayoutReportsALateOutcome: a payout an operator resolved as failed whose provider
// later pays it raises LateSettlement (the reservation was released while the money left).
func TestAWatchedPayoutReportsALateOutcome(t *testing.T) {
	p := unansweredPayout(1, nil, "failed")
	p.Status.Phase, p.Status.Reason = paygatev1.PayoutFailed, string(paygatev1.PayoutResolvedFailed)
	p.Status.Attempt.Phase, p.Status.Attempt.WatchUntil = paygatev1.AttemptAmbiguous, ptrTime(rulesNow.Add(time.Hour))
	got := reconcilePayout(t, p, &disbursingProvider{known: true, status: provider.StatusSuccess})
	c := meta.FindStatusCondition(got.Status.Conditions, paygatev1.ConditionLateSettlement)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonSettledAfterFailure || got.Watched(rulesNow) ||
		got.Status.Phase != paygatev1.PayoutFailed {
		t.Fatalf("LateSettlement %+v, watched %v, phase %s; want True SettledAfterFailure, no longer watched, still failed", c, got.Watched(rulesNow), got.Status.Phase)
	}
}

// callbackOnlyProvider accepts disbursements and has no status query: results arrive only by
// callback (Daraja's B2C).
type callbackOnlyProvider struct{ disbursingProvider }

func (p *callbackOnlyProvider) Capabilities() provider.Capabilities {
	return provider.Capabilities{ResultsByCallback: true}
}

func (p *callbackOnlyProvider) DisbursementStatus(context.Context, provider.DisbursementRequest) (provider.Result, error) {
	return provider.Result{}, provider.ErrAnswersByCallback
}

// TestAResultByCallbackOnly: a provider that answers only at a result URL leaves the payout
// waiting (no provider failure, nothing sent again) until the apiserver records the verified
// callback's result for the attempt; a result recorded for another reference is ignored.
func TestAResultByCallbackOnly(t *testing.T) {
	for _, tt := range []struct {
		recorded string
		want     paygatev1.PayoutPhase
	}{
		{"", paygatev1.PayoutProcessing},
		{"shop.po-other SUCCESS", paygatev1.PayoutProcessing},
		{"shop.po-1 SUCCESS", paygatev1.PayoutSuccess},
		{"shop.po-1 FAILED INVALID_ACCOUNT", paygatev1.PayoutFailed},
	} {
		p := unansweredPayout(1, nil, "")
		p.Status.Attempt.Phase = paygatev1.AttemptPending
		if tt.recorded != "" {
			p.Annotations = map[string]string{paygatev1.AnnotationProviderResult: tt.recorded}
		}
		prov := &callbackOnlyProvider{}
		got := reconcilePayout(t, p, prov)
		ready := meta.FindStatusCondition(got.Status.Conditions, paygatev1.ConditionReady)
		if got.Status.Phase != tt.want || prov.count("shop.po-1") != 0 || (ready != nil && ready.Reason == ReasonProviderUnreachable) {
			t.Errorf("recorded %q: payout %s, %d disbursements, Ready %+v; want %s, none, not ProviderUnreachable", tt.recorded, got.Status.Phase, prov.count("shop.po-1"), ready, tt.want)
		}
		if tt.want == paygatev1.PayoutFailed && got.Status.Reason != "INVALID_ACCOUNT" {
			t.Errorf("reason %q, want the callback's code", got.Status.Reason)
		}
	}
}

// TestDisbursementLatencyIsTheProvidersOnly: a payout the provider paid observes its
// disbursement's latency; one an operator resolved as paid does not (the time an operator took
// is no disbursement's).
func TestDisbursementLatencyIsTheProvidersOnly(t *testing.T) {
	asked := rulesNow.Add(-10 * time.Minute)
	for _, tc := range []struct {
		name      string
		payout    *paygatev1.Payout
		prov      *disbursingProvider
		wantCount uint64
	}{
		{"paid, the provider says", unansweredPayout(1, nil, ""), &disbursingProvider{known: true, status: provider.StatusSuccess}, 1},
		{"resolved paid by an operator", unansweredPayout(1, &asked, "success"), &disbursingProvider{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.payout.Status.Attempt.Phase = paygatev1.AttemptPending
			before := histogramCount(t, "sandbox")
			got := reconcilePayout(t, tc.payout, tc.prov)
			if got.Status.Phase != paygatev1.PayoutSuccess {
				t.Fatalf("payout %s/%s, want success", got.Status.Phase, got.Status.Reason)
			}
			if n := histogramCount(t, "sandbox") - before; n != tc.wantCount {
				t.Errorf("%d latencies observed, want %d", n, tc.wantCount)
			}
		})
	}
}
