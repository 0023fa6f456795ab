// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/webhook"
)

// firstAttemptWorld is a webhook delivery controller on a fake API server that counts writes,
// with a receiver that answers status.
type firstAttemptWorld struct {
	c                     client.Client
	r                     *WebhookDeliveryReconciler
	requests              atomic.Int32
	creates, statusWrites int
	failCreates           int // creates refused before one is accepted
	now                   time.Time
}

func newFirstAttemptWorld(t *testing.T, status int, schedule ...time.Duration) (*firstAttemptWorld, string) {
	t.Helper()
	w := &firstAttemptWorld{now: time.Date(2026, 11, 22, 10, 0, 0, 500_000_000, time.UTC)}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		w.requests.Add(1)
		rw.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: credentials.WebhookSecretName("duka")},
		Data:       map[string][]byte{credentials.KeySigningSecret: []byte("whsec-test")},
	}
	w.c = fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(secret).WithStatusSubresource(&paygatev1.WebhookDelivery{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if w.failCreates > 0 {
					w.failCreates--
					return errors.New("the API server is away")
				}
				w.creates++
				return c.Create(ctx, obj, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				w.statusWrites++
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	sender := webhook.NewSender(webhook.Options{Timeout: 5 * time.Second, Guard: webhook.Guard{AllowPrivate: true}})
	w.r = &WebhookDeliveryReconciler{Client: w.c, Recorder: events.NewFakeRecorder(16), Sandbox: sender, Production: sender,
		Clock: testingclock.NewFakePassiveClock(w.now), Schedule: schedule}
	return w, srv.URL
}

func firstAttemptEvent(url string) *paygatev1.WebhookDelivery {
	return &paygatev1.WebhookDelivery{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "whd-a"},
		Spec: paygatev1.WebhookDeliverySpec{EventID: "evt_0123456789abcdef", EventType: "payment.completed",
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Source: paygatev1.EventSource{Kind: "Payment", Name: "trx-a", UID: "uid-a"},
			URL:    url, Payload: `{"id":"evt_0123456789abcdef"}`},
	}
}

// run hands the event over and works the first-attempt queue and the delivery controller as
// the manager would, until both have nothing left to do.
func (w *firstAttemptWorld) run(t *testing.T, d *paygatev1.WebhookDelivery, born func()) *paygatev1.WebhookDelivery {
	t.Helper()
	f := w.r.FirstAttempts()
	f.offer(d, born)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(d)}
	for i := 0; ; i++ {
		_, err := f.Reconcile(context.Background(), req)
		if err == nil {
			break
		}
		if i == 3 {
			t.Fatalf("first attempt: %v", err)
		}
	}
	if _, err := w.r.Reconcile(context.Background(), req); err != nil {
		t.Fatalf("delivery controller: %v", err)
	}
	got := &paygatev1.WebhookDelivery{}
	if err := w.c.Get(context.Background(), req.NamespacedName, got); err != nil {
		t.Fatalf("the delivery was not created: %v", err)
	}
	return got
}

// TestFirstAttemptBornDelivered: an event whose receiver accepts its first attempt costs one write,
// the create that carries the attempt; the delivery controller writes nothing, and the event is
// neither sent nor handed over again.
func TestFirstAttemptBornDelivered(t *testing.T) {
	w, url := newFirstAttemptWorld(t, http.StatusNoContent)
	var born int
	got := w.run(t, firstAttemptEvent(url), func() { born++ })
	if w.requests.Load() != 1 || w.creates != 1 || w.statusWrites != 0 || born != 1 {
		t.Fatalf("%d requests, %d creates, %d status writes, born %d times; want 1, 1, 0, 1", w.requests.Load(), w.creates, w.statusWrites, born)
	}
	a := got.Spec.FirstAttempt
	if !a.Delivered() || a.StatusCode != http.StatusNoContent || !a.At.Time.Equal(w.now) {
		t.Fatalf("spec.firstAttempt %+v, want Delivered with 204 at %s", a, w.now)
	}
	st := got.EffectiveStatus()
	if st.Phase != paygatev1.DeliveryDelivered || st.TotalAttempts != 1 || len(st.Attempts) != 1 || st.DeliveredAt == nil || got.Status.Phase != "" {
		t.Fatalf("effective status %+v (stored %+v), want Delivered after 1 attempt with nothing stored", st, got.Status)
	}

	f := w.r.FirstAttempts()
	if !f.has(client.ObjectKeyFromObject(got)) {
		t.Fatal("a created event is forgotten at once: a pass on a stale cache would hand it over again")
	}
	f.offer(firstAttemptEvent(url), nil)
	if _, err := f.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(got)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(got)}); err != nil {
		t.Fatal(err)
	}
	if w.requests.Load() != 1 || w.creates != 1 || w.statusWrites != 0 {
		t.Fatalf("handed over again: %d requests, %d creates, %d status writes; want 1, 1, 0", w.requests.Load(), w.creates, w.statusWrites)
	}
}

// TestFirstAttemptFailedIsFolded: a failed first attempt is created with its result, and the
// delivery controller folds it into status with the next attempt due the schedule's second delay
// after it (two writes, as a failed first attempt always cost); a one-attempt schedule abandons.
func TestFirstAttemptFailedIsFolded(t *testing.T) {
	w, url := newFirstAttemptWorld(t, http.StatusInternalServerError)
	got := w.run(t, firstAttemptEvent(url), nil)
	if w.requests.Load() != 1 || w.creates != 1 || w.statusWrites != 1 {
		t.Fatalf("%d requests, %d creates, %d status writes; want 1, 1, 1", w.requests.Load(), w.creates, w.statusWrites)
	}
	st := got.Status
	if got.Spec.FirstAttempt.Result != paygatev1.FirstAttemptFailed || st.Phase != paygatev1.DeliveryPending || st.TotalAttempts != 1 ||
		len(st.Attempts) != 1 || st.Attempts[0].StatusCode != 500 || st.Attempts[0].Number != 1 {
		t.Fatalf("status %+v (first attempt %+v), want Pending with the failed first attempt", st, got.Spec.FirstAttempt)
	}
	if want := w.now.Add(DefaultWebhookSchedule[1]).Truncate(time.Second); st.NextAttemptAt == nil || !st.NextAttemptAt.Time.Truncate(time.Second).Equal(want) {
		t.Fatalf("nextAttemptAt %v, want %s", st.NextAttemptAt, want)
	}
	wantReady(t, "folded", st.Conditions, st.ObservedGeneration, got.Generation, metav1.ConditionFalse, ReasonRetryScheduled)

	w, url = newFirstAttemptWorld(t, http.StatusInternalServerError, 0)
	got = w.run(t, firstAttemptEvent(url), nil)
	if got.Status.Phase != paygatev1.DeliveryAbandoned || w.requests.Load() != 1 {
		t.Fatalf("one-attempt schedule: phase %s after %d requests, want Abandoned after 1", got.Status.Phase, w.requests.Load())
	}
	wantReady(t, "abandoned", got.Status.Conditions, got.Status.ObservedGeneration, got.Generation, metav1.ConditionFalse, ReasonWebhookAbandoned)
}

// TestFirstAttemptCreateRetried: a create the API server refuses is retried without a second
// attempt.
func TestFirstAttemptCreateRetried(t *testing.T) {
	w, url := newFirstAttemptWorld(t, http.StatusOK)
	w.failCreates = 2
	got := w.run(t, firstAttemptEvent(url), nil)
	if w.requests.Load() != 1 || w.creates != 1 || !got.Spec.FirstAttempt.Delivered() {
		t.Fatalf("%d requests, %d creates, first attempt %+v; want 1 request, 1 create, Delivered", w.requests.Load(), w.creates, got.Spec.FirstAttempt)
	}
}

// TestFirstAttemptLeftToTheDeliveryController: without a URL or a signing secret, or with a first
// attempt scheduled later, the event is created without one, and the delivery controller does as
// it always did.
func TestFirstAttemptLeftToTheDeliveryController(t *testing.T) {
	w, _ := newFirstAttemptWorld(t, http.StatusOK)
	got := w.run(t, firstAttemptEvent(""), nil)
	if got.Spec.FirstAttempt != nil || got.Status.Phase != paygatev1.DeliveryNoEndpoint {
		t.Fatalf("no URL: first attempt %+v, phase %s; want none and NoEndpoint", got.Spec.FirstAttempt, got.Status.Phase)
	}

	w, url := newFirstAttemptWorld(t, http.StatusOK)
	d := firstAttemptEvent(url)
	d.Spec.MerchantRef.Name = "secretless"
	f := w.r.FirstAttempts()
	f.offer(d, nil)
	if _, err := f.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(d)}); err != nil {
		t.Fatal(err)
	}
	if got := w.get(t, d); got.Spec.FirstAttempt != nil || w.requests.Load() != 0 {
		t.Fatalf("no signing secret: first attempt %+v after %d requests; want none sent", got.Spec.FirstAttempt, w.requests.Load())
	}

	w, url = newFirstAttemptWorld(t, http.StatusOK, time.Minute, time.Minute)
	d = firstAttemptEvent(url)
	d.CreationTimestamp = metav1.NewTime(w.now) // the API server's; the fake client sets none
	got = w.run(t, d, nil)
	if got.Spec.FirstAttempt != nil || w.requests.Load() != 0 || got.Status.Phase != paygatev1.DeliveryPending {
		t.Fatalf("first attempt a minute later: %+v, %d requests, phase %s; want none yet, Pending", got.Spec.FirstAttempt, w.requests.Load(), got.Status.Phase)
	}
}

func (w *firstAttemptWorld) get(t *testing.T, d *paygatev1.WebhookDelivery) *paygatev1.WebhookDelivery {
	t.Helper()
	got := &paygatev1.WebhookDelivery{}
	if err := w.c.Get(context.Background(), client.ObjectKeyFromObject(d), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestDeliveredEventRedelivered: an event its receiver accepted at its first attempt (nothing in
// status) is sent again when the redeliver annotation asks, once per value: the events API's
// redelivery (docs/api.md, Events), which a receiver that lost an accepted event needs.
func TestDeliveredEventRedelivered(t *testing.T) {
	w, url := newFirstAttemptWorld(t, http.StatusOK)
	got := w.run(t, firstAttemptEvent(url), nil)
	if w.requests.Load() != 1 || got.Status.Phase != "" {
		t.Fatalf("%d requests, stored phase %q; want 1 and none", w.requests.Load(), got.Status.Phase)
	}
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(got)}
	redeliver := func(value string) *paygatev1.WebhookDelivery {
		t.Helper()
		d := &paygatev1.WebhookDelivery{}
		if err := w.c.Get(ctx, req.NamespacedName, d); err != nil {
			t.Fatal(err)
		}
		d.Annotations = map[string]string{paygatev1.AnnotationRedeliver: value}
		if err := w.c.Update(ctx, d); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the round's pass, and one more that must do nothing
			if _, err := w.r.Reconcile(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.c.Get(ctx, req.NamespacedName, d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := redeliver("api-1")
	st := d.Status
	if w.requests.Load() != 2 || st.Phase != paygatev1.DeliveryDelivered || st.TotalAttempts != 2 || st.Redelivery != "api-1" || len(st.Attempts) != 1 {
		t.Fatalf("after a redelivery: %d requests, status %+v; want 2 requests, Delivered after 2 attempts in all", w.requests.Load(), st)
	}
	d = redeliver("api-1")
	if w.requests.Load() != 2 {
		t.Fatalf("the same value sent the event again: %d requests", w.requests.Load())
	}
	d = redeliver("api-2")
	if w.requests.Load() != 3 || d.Status.TotalAttempts != 3 {
		t.Fatalf("a new value: %d requests, %d attempts; want 3, 3", w.requests.Load(), d.Status.TotalAttempts)
	}
}
