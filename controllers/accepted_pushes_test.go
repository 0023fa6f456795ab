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
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	webhookevents "github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/internal/kube"
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

// TestAnAcceptedPushIsWrittenByTheFirstStatusQuery: the write-ahead record is the only write
// before the first status query; that query's pass writes Pending (docs/payments.md, Push
// attempts: written ahead).
func TestAnAcceptedPushIsWrittenByTheFirstStatusQuery(t *testing.T) {
	p := rulesPayment(func(p *paygatev1.Payment) { p.Spec.PushRequest.Phone = "+255711000004" }) // never answers
	r, c, writes, _ := countedReconciler(p, rulesGateway())
	got, res, err := reconcilePayment(t, r, c, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	a := got.LatestAttempt()
	if *writes != 1 || a == nil || a.Phase != paygatev1.AttemptInitiating {
		t.Fatalf("after the push: %d status writes, attempt %+v; want 1 write, the record Initiating", *writes, a)
	}
	if ready := meta.FindStatusCondition(got.Status.Conditions, paygatev1.ConditionReady); ready == nil || ready.Reason != ReasonAwaitingCustomer {
		t.Errorf("the record's Ready = %+v, want AwaitingCustomer", ready)
	}
	if res.RequeueAfter != r.PollInterval || r.accepted.size() != 1 || sandboxOf(r).Pushes(a.Reference) != 1 {
		t.Fatalf("requeue %s, %d remembered, %d pushes; want the poll interval, 1, 1", res.RequeueAfter, r.accepted.size(), sandboxOf(r).Pushes(a.Reference))
	}

	got, _, err = reconcilePayment(t, r, c, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if a := got.LatestAttempt(); *writes != 2 || a.Phase != paygatev1.AttemptPending {
		t.Fatalf("after the first status query: %d writes, attempt %s; want 2, Pending", *writes, a.Phase)
	}
	if r.accepted.size() != 0 {
		t.Errorf("%d pushes still remembered after their write", r.accepted.size())
	}
	if _, _, err = reconcilePayment(t, r, c, p, 2); err != nil || *writes != 2 {
		t.Errorf("queries that change nothing wrote status: %d writes (%v)", *writes, err)
	}
}

// TestAQuickCustomerCostsTwoStatusWrites: a push whose customer approved by the first status
// query is written twice (the record, the outcome), and the outcome's webhook event is created
// by the pass that stored it, without reading the payment again.
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
	if r.accepted.size() != 0 {
		t.Errorf("%d pushes still remembered after the outcome", r.accepted.size())
	}
	// A later pass (a restart, the delivery's watch event) finds the event and creates nothing.
	if _, _, err := reconcilePayment(t, r, c, p, 1); err != nil || *writes != 2 {
		t.Fatalf("a pass over the terminal payment: %d writes, %v", *writes, err)
	}
}

// recallingProvider knows the pushes it received, and only those (a provider that lost its
// records is a new one).
type recallingProvider struct {
	stubProvider
	mu     sync.Mutex
	pushed map[string]int
}

func (p *recallingProvider) Push(_ context.Context, req provider.PushRequest) (provider.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pushed == nil {
		p.pushed = map[string]int{}
	}
	p.pushed[req.Reference]++
	return provider.Result{Status: provider.StatusPending}, nil
}

func (p *recallingProvider) PushStatus(_ context.Context, req provider.PushRequest) (provider.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pushed[req.Reference] == 0 {
		return provider.Result{}, provider.ErrNotFound
	}
	return provider.Result{Status: provider.StatusPending}, nil
}

// TestTheMemoryTellsAForgottenPushFromALostOne: while this process remembers the provider
// accepting a push, a provider that knows nothing of it forgot it (flagged, never pushed again);
// a process without the memory (restarted) treats the Initiating record as a push whose answer
// was lost and pushes it, with the same reference.
func TestTheMemoryTellsAForgottenPushFromALostOne(t *testing.T) {
	pushOnce := func(t *testing.T) (*PaymentReconciler, client.Client, *paygatev1.Payment) {
		p := rulesPayment()
		r, c, _, _ := countedReconciler(p, rulesGateway())
		r.Providers = stubProviders{&recallingProvider{}}
		got, _, err := reconcilePayment(t, r, c, p, 1)
		if err != nil || got.LatestAttempt().Phase != paygatev1.AttemptInitiating {
			t.Fatalf("the push: %v, attempt %+v", err, got.LatestAttempt())
		}
		return r, c, p
	}

	t.Run("remembered: forgotten", func(t *testing.T) {
		r, c, p := pushOnce(t)
		forgetful := &recallingProvider{}
		r.Providers = stubProviders{forgetful}
		got, _, err := reconcilePayment(t, r, c, p, 1)
		if err != nil {
			t.Fatal(err)
		}
		a := got.LatestAttempt()
		if !meta.IsStatusConditionTrue(got.Status.Conditions, paygatev1.ConditionProviderForgotAttempt) || a.Phase != paygatev1.AttemptPending {
			t.Fatalf("attempt %s, conditions %+v; want Pending and ProviderForgotAttempt", a.Phase, got.Status.Conditions)
		}
		if n := forgetful.pushed[a.Reference]; n != 0 {
			t.Fatalf("a forgotten push was pushed again (%d)", n)
		}
	})

	t.Run("restarted: pushed again", func(t *testing.T) {
		first, c, p := pushOnce(t)
		fresh := &recallingProvider{}
		restarted := &PaymentReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(32), Providers: stubProviders{fresh},
			Clock: first.Clock, PollInterval: first.PollInterval}
		got, _, err := reconcilePayment(t, restarted, c, p, 1)
		if err != nil {
			t.Fatal(err)
		}
		a := got.LatestAttempt()
		if n := fresh.pushed[a.Reference]; n != 1 || a.Phase != paygatev1.AttemptPending || len(got.Status.Attempts) != 1 {
			t.Fatalf("%d pushes, attempt %s, %d attempts; want the one attempt pushed once more, Pending", n, a.Phase, len(got.Status.Attempts))
		}
		if meta.IsStatusConditionTrue(got.Status.Conditions, paygatev1.ConditionProviderForgotAttempt) {
			t.Error("a push whose answer was lost was flagged as forgotten")
		}
	})
}

func TestAcceptedPushesMemory(t *testing.T) {
	var m acceptedPushes
	started := metav1.NewMicroTime(rulesNow)
	a := &paygatev1.PushAttempt{Reference: "shop.trx-a.1", Phase: paygatev1.AttemptInitiating, StartedAt: started}
	if _, ok := m.lookup(a); ok {
		t.Fatal("an empty memory remembers")
	}
	if !m.remember(a, provider.Result{Status: provider.StatusPending, ProviderReference: "sbx-1"}) {
		t.Fatal("remember refused with room")
	}
	if res, ok := m.lookup(a); !ok || res.ProviderReference != "sbx-1" {
		t.Fatalf("lookup = %+v, %v", res, ok)
	}
	again := *a
	again.StartedAt = metav1.NewMicroTime(rulesNow.Add(time.Minute)) // the name created again
	if _, ok := m.lookup(&again); ok {
		t.Error("another attempt under the same reference is remembered")
	}
	written := *a
	written.Phase = paygatev1.AttemptPending
	if _, ok := m.lookup(&written); ok {
		t.Error("an attempt written past Initiating still reads the memory")
	}
	m.forget(a)
	m.forget(nil)
	if m.size() != 0 {
		t.Fatalf("size %d after forget", m.size())
	}
	for i := range maxAcceptedPushes {
		m.remember(&paygatev1.PushAttempt{Reference: "r", StartedAt: metav1.NewMicroTime(rulesNow.Add(time.Duration(i) * time.Microsecond))}, provider.Result{})
	}
	if m.remember(a, provider.Result{}) || m.size() != maxAcceptedPushes {
		t.Fatalf("a full memory took one more (size %d)", m.size())
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

// TestNoPushAgainOnAStaleRecord: a pass whose cache still shows the attempt Initiating, while the
// API server holds a newer record, does not push again when the provider knows nothing of the
// attempt: it runs again on fresher data (the provider may have accepted it and forgotten).
func TestNoPushAgainOnAStaleRecord(t *testing.T) {
	p := rulesPayment()
	p.Status = paygatev1.PaymentStatus{Phase: paygatev1.PaymentPending, Gateway: "mpesa-tz", Attempts: []paygatev1.PushAttempt{{
		Sequence: 1, Reference: "shop.trx-a.1", Gateway: "mpesa-tz", Phase: paygatev1.AttemptInitiating, StartedAt: metav1.NewMicroTime(rulesNow),
	}}}
	build := func() client.Client {
		return fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(p.DeepCopy(), rulesGateway()).WithStatusSubresource(&paygatev1.Payment{}).Build()
	}
	cache, live := build(), build()
	newer := &paygatev1.Payment{}
	if err := live.Get(context.Background(), client.ObjectKeyFromObject(p), newer); err != nil {
		t.Fatal(err)
	}
	newer.Status.Attempts[0].Phase = paygatev1.AttemptPending
	if err := live.Status().Update(context.Background(), newer); err != nil {
		t.Fatal(err)
	}
	forgetful := &recallingProvider{}
	r := &PaymentReconciler{Client: cache, APIReader: live, Recorder: events.NewFakeRecorder(8), Providers: stubProviders{forgetful},
		Clock: testingclock.NewFakePassiveClock(rulesNow), PollInterval: 2 * time.Second}
	_, res, err := reconcilePayment(t, r, cache, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := forgetful.pushed["shop.trx-a.1"]; n != 0 || res.RequeueAfter != conflictRetry {
		t.Fatalf("%d pushes, requeue %s; want none, a retry after %s", n, res.RequeueAfter, conflictRetry)
	}

	// The same record, current: the push never arrived, so it is pushed (once, same reference).
	r.APIReader = cache
	if _, _, err := reconcilePayment(t, r, cache, p, 1); err != nil {
		t.Fatal(err)
	}
	if n := forgetful.pushed["shop.trx-a.1"]; n != 1 {
		t.Fatalf("%d pushes of an Initiating attempt the provider never received, want 1", n)
	}
}

// TestADeletedPaymentLeavesTheMemory: a payment deleted while its push was in flight takes its
// remembered attempts with it, and no other payment's.
func TestADeletedPaymentLeavesTheMemory(t *testing.T) {
	p := rulesPayment(func(p *paygatev1.Payment) { p.Spec.PushRequest.Phone = "+255711000004" }) // never answers
	r, c, _, _ := countedReconciler(p, rulesGateway())
	if _, _, err := reconcilePayment(t, r, c, p, 1); err != nil || r.accepted.size() != 1 {
		t.Fatalf("the push: %v, %d remembered", err, r.accepted.size())
	}
	other := &paygatev1.PushAttempt{Reference: "shop.trx-ab.1", Phase: paygatev1.AttemptInitiating, StartedAt: metav1.NewMicroTime(rulesNow)}
	r.accepted.remember(other, provider.Result{Status: provider.StatusPending})
	if err := c.Delete(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.accepted.lookup(other); !ok || r.accepted.size() != 1 {
		t.Fatalf("%d remembered after the delete (the other payment's kept: %v); want only the other payment's", r.accepted.size(), ok)
	}
}
