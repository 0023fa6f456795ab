// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	webhookevents "github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/provider"
)

// countedReconciler runs the payment controller on a fake API server holding objs, counting its
// status writes and its live reads of payments (rulesReconciler without the counts).
func countedReconciler(objs ...client.Object) (r *PaymentReconciler, c client.Client, writes, liveReads *int) {
	writes, liveReads = new(int), new(int)
	c = fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(objs...).WithStatusSubresource(&paygatev1.Payment{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			*writes++
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	live := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*paygatev1.Payment); ok {
			*liveReads++
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	r = &PaymentReconciler{
		Client: c, APIReader: live, Recorder: events.NewFakeRecorder(32),
		Providers:    &provider.Registry{Sandbox: provider.NewSandbox(provider.SandboxOptions{Clock: func() time.Time { return rulesNow }})},
		Clock:        testingclock.NewFakePassiveClock(rulesNow),
		PollInterval: 2 * time.Second,
	}
	return r, c, writes, liveReads
}

func sandboxOf(r *PaymentReconciler) *provider.Sandbox {
	return r.Providers.(*provider.Registry).Sandbox
}

// scriptedProvider counts the pushes it receives per reference. It de-duplicates by reference or
// not (dedup), hides an accepted push from status queries for its first hiddenQueries queries
// (real providers answer NOT_FOUND for a while after accepting), and answers status queries with
// status once a push is visible.
type scriptedProvider struct {
	stubProvider
	dedup         bool
	hiddenQueries int
	status        provider.Status
	mu            sync.Mutex
	pushed        map[string]int
	queried       map[string]int
}

func (p *scriptedProvider) Capabilities() provider.Capabilities {
	return provider.Capabilities{Deduplicates: p.dedup}
}

func (p *scriptedProvider) Push(_ context.Context, req provider.PushRequest) (provider.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pushed == nil {
		p.pushed = map[string]int{}
	}
	p.pushed[req.Reference]++
	return provider.Result{Status: provider.StatusPending}, nil
}

func (p *scriptedProvider) PushStatus(_ context.Context, req provider.PushRequest) (provider.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.queried == nil {
		p.queried = map[string]int{}
	}
	p.queried[req.Reference]++
	if p.pushed[req.Reference] == 0 || p.queried[req.Reference] <= p.hiddenQueries {
		return provider.Result{}, provider.ErrNotFound
	}
	status := p.status
	if status == "" {
		status = provider.StatusPending
	}
	return provider.Result{Status: status}, nil
}

func (p *scriptedProvider) pushes(ref string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pushed[ref]
}

// initiatingPayment is a payment whose attempt was recorded (written ahead) and whose answer was
// lost: the manager stopped, or the provider's answer never came back.
func initiatingPayment(opts ...func(*paygatev1.Payment)) *paygatev1.Payment {
	return rulesPayment(append([]func(*paygatev1.Payment){func(p *paygatev1.Payment) {
		p.Status = paygatev1.PaymentStatus{Phase: paygatev1.PaymentPending, Gateway: "mpesa-tz", Attempts: []paygatev1.PushAttempt{{
			Sequence: 1, Reference: "shop.trx-a.1", Gateway: "mpesa-tz", Phase: paygatev1.AttemptInitiating,
			StartedAt: metav1.NewMicroTime(rulesNow), Sends: 1, LastSentAt: ptrTime(rulesNow),
		}}}
	}}, opts...)...)
}

// TestAnAcceptedPushIsWrittenAtOnceWhereTheProviderDoesNotDeduplicate: the provider's acceptance
// is stored by the pass that pushed (the record, then Pending: two writes) where the provider does
// not de-duplicate by our reference, so no restart, leader change or stale cache can take the
// attempt for one whose answer was lost. Where it does (the simulator, pawaPay), the attempt stays
// as written ahead, one write, and the next pass that hears Pending stores it (docs/payments.md,
// The attempt protocol).
func TestAnAcceptedPushIsWrittenAtOnceWhereTheProviderDoesNotDeduplicate(t *testing.T) {
	for _, tc := range []struct {
		dedup      bool
		wantWrites int
		wantPhase  paygatev1.AttemptPhase
	}{
		{dedup: false, wantWrites: 2, wantPhase: paygatev1.AttemptPending},
		{dedup: true, wantWrites: 1, wantPhase: paygatev1.AttemptInitiating},
	} {
		p := rulesPayment()
		r, c, writes, _ := countedReconciler(p, rulesGateway())
		prov := &scriptedProvider{dedup: tc.dedup}
		r.Providers = stubProviders{prov}
		got, res, err := reconcilePayment(t, r, c, p, 1)
		if err != nil {
			t.Fatal(err)
		}
		a := got.LatestAttempt()
		if *writes != tc.wantWrites || a == nil || a.Phase != tc.wantPhase || a.Sends != 1 || a.LastSentAt == nil {
			t.Fatalf("dedup=%v, after the push: %d status writes, attempt %+v; want %d writes, %s, one send", tc.dedup, *writes, a, tc.wantWrites, tc.wantPhase)
		}
		if ready := meta.FindStatusCondition(got.Status.Conditions, paygatev1.ConditionReady); ready == nil || ready.Reason != ReasonAwaitingCustomer {
			t.Errorf("dedup=%v: Ready = %+v, want AwaitingCustomer", tc.dedup, ready)
		}
		if res.RequeueAfter != r.PollInterval || prov.pushes(a.Reference) != 1 {
			t.Fatalf("dedup=%v: requeue %s, %d pushes; want the poll interval, 1", tc.dedup, res.RequeueAfter, prov.pushes(a.Reference))
		}
		// The next pass asks; Pending is stored once (where it was not yet), and queries that
		// change nothing write nothing.
		got, _, err = reconcilePayment(t, r, c, p, 3)
		if err != nil || *writes != 2 || got.LatestAttempt().Phase != paygatev1.AttemptPending || prov.pushes(a.Reference) != 1 {
			t.Errorf("dedup=%v, three passes later: %d writes, phase %s, %d pushes (%v); want 2, Pending, 1",
				tc.dedup, *writes, got.LatestAttempt().Phase, prov.pushes(a.Reference), err)
		}
	}
}

// TestAQuickCustomerCostsTwoStatusWrites: the record and the outcome (the simulator de-duplicates,
// so its acceptance is not stored); the outcome's webhook event is created by the pass that stored
// it, without reading the payment again.
func TestAQuickCustomerCostsTwoStatusWrites(t *testing.T) {
	p := rulesPayment()
	r, c, writes, liveReads := countedReconciler(p, rulesGateway())
	got, _, err := reconcilePayment(t, r, c, p, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != paygatev1.PaymentSuccess || *writes != 2 {
		t.Fatalf("phase %q after %d status writes; want success after 2", got.Status.Phase, *writes)
	}
	d := &paygatev1.WebhookDelivery{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: p.Namespace, Name: webhookevents.DeliveryName(string(p.UID), webhookevents.PaymentCompleted)}, d); err != nil {
		t.Fatalf("the pass that stored the outcome created no payment.completed: %v", err)
	}
	if *liveReads != 0 {
		t.Errorf("%d live reads of the payment; its own successful write confirmed it", *liveReads)
	}
	if _, _, err := reconcilePayment(t, r, c, p, 1); err != nil || *writes != 2 {
		t.Fatalf("a pass over the terminal payment: %d writes, %v", *writes, err)
	}
}

// TestALostAnswerIsPushedAgainOnlyWhereTheProviderDeduplicates (issue hole 3): an attempt recorded
// and pushed whose answer was lost, asked about while the provider still answers "not found" (it
// accepted the push a moment ago): a provider that de-duplicates by reference gets the same
// reference again; one that does not (M-Pesa's STK push) never gets a second push, and the
// attempt stays unknown until the provider answers.
func TestALostAnswerIsPushedAgainOnlyWhereTheProviderDeduplicates(t *testing.T) {
	for _, dedup := range []bool{true, false} {
		p := initiatingPayment()
		r, c, _, _ := countedReconciler(p, rulesGateway())
		prov := &scriptedProvider{dedup: dedup, hiddenQueries: 2, pushed: map[string]int{"shop.trx-a.1": 1}}
		r.Providers = stubProviders{prov}
		got, _, err := reconcilePayment(t, r, c, p, 1)
		if err != nil {
			t.Fatal(err)
		}
		a := got.LatestAttempt()
		want, wantSends, wantPhase := 1, int32(1), paygatev1.AttemptInitiating
		if dedup {
			want, wantSends, wantPhase = 2, 2, paygatev1.AttemptPending
		}
		if n := prov.pushes("shop.trx-a.1"); n != want || a.Sends != wantSends || a.Phase != wantPhase {
			t.Fatalf("dedup=%v: the provider received %d pushes, the attempt records %d sends, phase %s; want %d, %d, %s",
				dedup, n, a.Sends, a.Phase, want, wantSends, wantPhase)
		}
		// Later the provider shows the push: it is adopted, never pushed again.
		got, _, err = reconcilePayment(t, r, c, p, 3)
		if err != nil {
			t.Fatal(err)
		}
		if n := prov.pushes("shop.trx-a.1"); n != want || got.LatestAttempt().Phase != paygatev1.AttemptPending {
			t.Fatalf("dedup=%v: %d pushes, attempt %s after the provider showed it; want %d, Pending", dedup, n, got.LatestAttempt().Phase, want)
		}
	}
}

// TestAStaleCacheNeverPushesAgain: a pass whose cache still shows the attempt Initiating, while
// the API server holds it Pending, decides a re-send (the provider forgot the push) and records it
// ahead: the write conflicts, and nothing reaches the provider.
func TestAStaleCacheNeverPushesAgain(t *testing.T) {
	p := initiatingPayment()
	p.ResourceVersion = ""
	api := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(p.DeepCopy(), rulesGateway()).WithStatusSubresource(&paygatev1.Payment{}).Build()
	stale := &paygatev1.Payment{}
	if err := api.Get(context.Background(), client.ObjectKeyFromObject(p), stale); err != nil {
		t.Fatal(err)
	}
	newer := stale.DeepCopy()
	newer.Status.Attempts[0].Phase = paygatev1.AttemptPending
	if err := api.Status().Update(context.Background(), newer); err != nil {
		t.Fatal(err)
	}
	cache := interceptor.NewClient(api.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if pay, ok := obj.(*paygatev1.Payment); ok {
			stale.DeepCopyInto(pay)
			return nil
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	prov := &scriptedProvider{dedup: true} // knows nothing of the push: forgot it
	r := &PaymentReconciler{Client: cache, APIReader: api, Recorder: events.NewFakeRecorder(8), Providers: stubProviders{prov},
		Clock: testingclock.NewFakePassiveClock(rulesNow), PollInterval: 2 * time.Second}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)})
	if err == nil || !onlyConflicts(err) {
		t.Fatalf("the pass ended with %v; want a conflict", err)
	}
	if n := prov.pushes("shop.trx-a.1"); n != 0 {
		t.Fatalf("a stale record pushed again (%d pushes)", n)
	}
}

// TestNothingIsPushedAfterTheDeadline (issue hole 2): an attempt whose answer was lost, asked
// about after the checkout expired, while the provider says "not found": nothing is pushed, the
// payment fails with EXPIRED_SESSION, and the attempt is watched.
func TestNothingIsPushedAfterTheDeadline(t *testing.T) {
	p := initiatingPayment(func(p *paygatev1.Payment) { p.Spec.ExpiresAt = metav1.NewTime(rulesNow.Add(-time.Hour)) })
	r, c, _, _ := countedReconciler(p, rulesGateway())
	prov := &scriptedProvider{dedup: true}
	r.Providers = stubProviders{prov}
	got, _, err := reconcilePayment(t, r, c, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	a := got.LatestAttempt()
	if prov.pushes(a.Reference) != 0 || got.Status.Phase != paygatev1.PaymentFailed || got.Status.Reason != string(paygatev1.FailureExpiredSession) {
		t.Fatalf("%d pushes, payment %s/%s; want none, failed EXPIRED_SESSION", prov.pushes(a.Reference), got.Status.Phase, got.Status.Reason)
	}
	if !got.Watched(rulesNow) || a.WatchUntil.Time.Sub(rulesNow) != 72*time.Hour {
		t.Fatalf("attempt %+v not watched for 72 hours", a)
	}
}

// TestAWatchedAttemptFindsALateSettlement (issue hole 5): a payment that expired while its
// provider was unreachable is asked about again without any callback; when the provider reports
// it settled, the payment (still failed) gets LateSettlement=True, once.
func TestAWatchedAttemptFindsALateSettlement(t *testing.T) {
	p := initiatingPayment(func(p *paygatev1.Payment) {
		a := &p.Status.Attempts[0]
		a.Phase, a.WatchUntil = paygatev1.AttemptPending, ptrTime(rulesNow.Add(time.Hour))
		p.Status.Phase, p.Status.Reason = paygatev1.PaymentFailed, string(paygatev1.FailureExpiredSession)
	})
	r, c, writes, _ := countedReconciler(p, rulesGateway())
	prov := &scriptedProvider{dedup: true, pushed: map[string]int{"shop.trx-a.1": 1}}
	r.Providers = stubProviders{prov}
	got, res, err := reconcilePayment(t, r, c, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter <= 0 || meta.FindStatusCondition(got.Status.Conditions, paygatev1.ConditionLateSettlement) != nil {
		t.Fatalf("still pending at the provider: requeue %s, conditions %+v; want a next question, no late settlement", res.RequeueAfter, got.Status.Conditions)
	}
	prov.status = provider.StatusSuccess
	got, _, err = reconcilePayment(t, r, c, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, paygatev1.ConditionLateSettlement) || got.Status.Phase != paygatev1.PaymentFailed ||
		got.LatestAttempt().Phase != paygatev1.AttemptSucceeded || got.Watched(rulesNow) {
		t.Fatalf("payment %s, attempt %s, conditions %+v; want failed, the attempt Succeeded and no longer watched, LateSettlement", got.Status.Phase, got.LatestAttempt().Phase, got.Status.Conditions)
	}
	before := *writes
	if _, _, err := reconcilePayment(t, r, c, p, 2); err != nil || *writes != before || prov.queried["shop.trx-a.1"] != 2 {
		t.Fatalf("passes after the late settlement: %d more writes, %d queries (%v); want none more", *writes-before, prov.queried["shop.trx-a.1"], err)
	}
}

func TestPaymentPassNeeded(t *testing.T) {
	base := rulesPayment()
	base.ResourceVersion, base.Generation = "10", 1
	for _, tt := range []struct {
		name   string
		change func(p *paygatev1.Payment)
		want   bool
	}{
		{"status only (the controller's own write)", func(p *paygatev1.Payment) {
			p.Status.Phase = paygatev1.PaymentSuccess
		}, false},
		{"a resync (same resourceVersion)", func(p *paygatev1.Payment) { p.ResourceVersion = "10" }, true},
		{"a push request (spec)", func(p *paygatev1.Payment) { p.Generation = 2 }, true},
		{"a provider callback (annotation)", func(p *paygatev1.Payment) {
			p.Annotations = map[string]string{paygatev1.AnnotationProviderCallback: "cb-1"}
		}, true},
		{"labels", func(p *paygatev1.Payment) { p.Labels = map[string]string{"x": "y"} }, true},
		{"deletion", func(p *paygatev1.Payment) { p.DeletionTimestamp = &metav1.Time{Time: rulesNow} }, true},
		{"finalizers", func(p *paygatev1.Payment) { p.Finalizers = []string{"test.paygate.dev/hold"} }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cur := base.DeepCopy()
			cur.ResourceVersion = "11"
			tt.change(cur)
			if got := paymentPassNeeded.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: cur}); got != tt.want {
				t.Fatalf("pass needed = %v, want %v", got, tt.want)
			}
		})
	}
	if !paymentPassNeeded.Create(event.CreateEvent{Object: base}) || !paymentPassNeeded.Delete(event.DeleteEvent{Object: base}) {
		t.Error("creates and deletes must reach the controller")
	}
}

// TestAChargeIsReleasedFromItsInvoice: a charge an earlier version created with its invoice as
// owner loses that owner reference (deleting billing objects never takes money with it); other
// owners and other payments are left alone.
func TestAChargeIsReleasedFromItsInvoice(t *testing.T) {
	invoiceOwner := metav1.OwnerReference{APIVersion: paygatev1.GroupVersion.String(), Kind: "Invoice", Name: "inv-1", UID: "uid-inv"}
	otherOwner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keep", UID: "uid-cm"}
	for _, tt := range []struct {
		name   string
		labels map[string]string
		owners []metav1.OwnerReference
		want   int
	}{
		{"a charge owned by its invoice", map[string]string{paygatev1.LabelInvoice: "inv-1"}, []metav1.OwnerReference{invoiceOwner, otherOwner}, 1},
		{"a charge without owners", map[string]string{paygatev1.LabelInvoice: "inv-1"}, nil, 0},
		{"a payment that is no charge", nil, []metav1.OwnerReference{otherOwner}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := rulesPayment(func(p *paygatev1.Payment) { p.Labels, p.OwnerReferences = tt.labels, tt.owners })
			r, c := rulesReconciler(p, rulesGateway())
			got, _, err := reconcilePayment(t, r, c, p, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.OwnerReferences) != tt.want || slices.ContainsFunc(got.OwnerReferences, isInvoiceOwner) {
				t.Fatalf("owner references %+v; want %d, none an invoice", got.OwnerReferences, tt.want)
			}
		})
	}
}

// TestAnnouncementsWaitForTheWrite (issue hole 6): a pass whose status write loses the race
// announces nothing: the late settlement's event and metric, the forgotten attempt's event and
// metric, and the disbursement latency wait for the write that stores them.
func TestAnnouncementsWaitForTheWrite(t *testing.T) {
	conflicting := func(objs ...client.Object) client.Client {
		return fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(objs...).WithStatusSubresource(objs[0]).
			WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				return apierrors.NewConflict(schema.GroupResource{Group: paygatev1.GroupVersion.Group, Resource: "payments"}, obj.GetName(), errors.New("changed"))
			}}).Build()
	}
	announced := func(rec *events.FakeRecorder) []string {
		var out []string
		for {
			select {
			case e := <-rec.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}

	t.Run("a late settlement", func(t *testing.T) {
		p := initiatingPayment(func(p *paygatev1.Payment) {
			a := &p.Status.Attempts[0]
			a.Phase, a.WatchUntil = paygatev1.AttemptPending, ptrTime(rulesNow.Add(time.Hour))
			p.Status.Phase, p.Status.Reason = paygatev1.PaymentFailed, string(paygatev1.FailureExpiredSession)
		})
		c := conflicting(p, rulesGateway())
		rec := events.NewFakeRecorder(8)
		before := testutil.ToFloat64(metrics.LateSettlements.WithLabelValues("sandbox"))
		r := &PaymentReconciler{Client: c, APIReader: c, Recorder: rec, Clock: testingclock.NewFakePassiveClock(rulesNow), PollInterval: 2 * time.Second,
			Providers: stubProviders{&scriptedProvider{dedup: true, status: provider.StatusSuccess, pushed: map[string]int{"shop.trx-a.1": 1}}}}
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)})
		if !onlyConflicts(err) {
			t.Fatalf("the pass ended with %v, want the conflict", err)
		}
		if got := announced(rec); len(got) != 0 || testutil.ToFloat64(metrics.LateSettlements.WithLabelValues("sandbox")) != before {
			t.Fatalf("a pass whose write lost announced %q and moved the metric", got)
		}
	})

	t.Run("a forgotten push", func(t *testing.T) {
		p := initiatingPayment(func(p *paygatev1.Payment) { p.Status.Attempts[0].Phase = paygatev1.AttemptPending })
		c := conflicting(p, rulesGateway())
		rec := events.NewFakeRecorder(8)
		before := testutil.ToFloat64(metrics.ForgottenAttempts.WithLabelValues("push", "sandbox"))
		r := &PaymentReconciler{Client: c, APIReader: c, Recorder: rec, Clock: testingclock.NewFakePassiveClock(rulesNow), PollInterval: 2 * time.Second,
			Providers: stubProviders{&scriptedProvider{dedup: true}}} // knows nothing of the accepted push
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)})
		if !onlyConflicts(err) {
			t.Fatalf("the pass ended with %v, want the conflict", err)
		}
		if got := announced(rec); len(got) != 0 || testutil.ToFloat64(metrics.ForgottenAttempts.WithLabelValues("push", "sandbox")) != before {
			t.Fatalf("a pass whose write lost announced %q and moved the metric", got)
		}
	})

	t.Run("a disbursement's latency", func(t *testing.T) {
		po := unansweredPayout(1, nil, "")
		po.Status.Attempt.Phase = paygatev1.AttemptPending
		c := conflicting(po)
		sampleBefore := histogramCount(t, "sandbox")
		r := &PayoutReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(8), Clock: testingclock.NewFakePassiveClock(rulesNow),
			PollInterval: 2 * time.Second, Providers: stubProviders{&disbursingProvider{known: true, status: provider.StatusSuccess}}}
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(po)})
		if !onlyConflicts(err) {
			t.Fatalf("the pass ended with %v, want the conflict", err)
		}
		if histogramCount(t, "sandbox") != sampleBefore {
			t.Fatal("a pass whose write lost observed the disbursement's latency")
		}
	})
}

// histogramCount is how many observations paygate_disbursement_duration_seconds holds for env.
func histogramCount(t *testing.T, env string) uint64 {
	t.Helper()
	m := &dto.Metric{}
	if err := metrics.DisbursementLatency.WithLabelValues(env).(prometheus.Histogram).Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
