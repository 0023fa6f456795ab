// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// WebhookFirstAttempts makes the first attempt of every new webhook event before the event's
// WebhookDelivery exists, then creates the delivery with that attempt's result in
// spec.firstAttempt: an event its receiver accepts at once costs one Kubernetes API write, the
// create (docs/webhooks.md, One write per delivered event).
//
// It is the webhook delivery controller's first-attempt half: workers of their own (controller
// "webhookfirstattempt", --webhook-concurrency of them), the delivery controller's senders,
// timeout, signing and schedule. The controller that stored an occurrence (payment, payout,
// refund, billing) builds the event as it always did and hands it over in memory (emitOnce): its
// worker goes on at once and never waits for a receiver.
//
// The handover is not written anywhere. A crash between it and the create loses it, and the
// source's controller, which announces from the source's stored terminal state on every pass
// (after a restart, every source is passed again), hands the event over again: a receiver that got
// the first attempt gets the event again, with the same id (at least once, as a crash between an
// attempt and the status write that recorded it always did).
type WebhookFirstAttempts struct {
	r *WebhookDeliveryReconciler

	mu sync.Mutex
	// queue is the controller's work queue, nil until it starts (events handed over before wait
	// in waiting).
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
	// waiting holds the events handed over and not created yet.
	waiting map[types.NamespacedName]*handover
	// created remembers, for createdMemory, the events this process created: a pass of their
	// source whose cache does not show the delivery yet must not hand them over again.
	created map[types.NamespacedName]time.Time
	swept   time.Time
}

// createdMemory is how long a created event is remembered (wall-clock time): far longer than the
// cache takes to show a create.
const createdMemory = 5 * time.Minute

type handover struct {
	delivery *paygatev1.WebhookDelivery
	// born runs once the create succeeded (the source's counters).
	born func()
	// tried: the first attempt was made, or judged not to be this controller's to make; a create
	// retried after an error never sends again.
	tried bool
}

func newWebhookFirstAttempts(r *WebhookDeliveryReconciler) *WebhookFirstAttempts {
	return &WebhookFirstAttempts{r: r, waiting: map[types.NamespacedName]*handover{}, created: map[types.NamespacedName]time.Time{}}
}

// has reports whether the event named key was handed over and is not created yet, or was
// created by this process a moment ago. False on a nil receiver.
func (f *WebhookFirstAttempts) has(key types.NamespacedName) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.known(key)
}

// known reports whether the event named key waits, or was created a moment ago. f.mu is held.
func (f *WebhookFirstAttempts) known(key types.NamespacedName) bool {
	at, ok := f.created[key]
	return f.waiting[key] != nil || (ok && time.Since(at) < createdMemory)
}

// offer hands over a built event (owner reference set, no firstAttempt yet). It never blocks. An
// event already waiting, or created a moment ago, is not handed over twice.
func (f *WebhookFirstAttempts) offer(d *paygatev1.WebhookDelivery, born func()) {
	key := client.ObjectKeyFromObject(d)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweep()
	if f.known(key) {
		return
	}
	f.waiting[key] = &handover{delivery: d, born: born}
	if f.queue != nil {
		f.queue.Add(reconcile.Request{NamespacedName: key})
	}
}

// sweep forgets created events older than createdMemory, at most once a minute. f.mu is held.
func (f *WebhookFirstAttempts) sweep() {
	if time.Since(f.swept) < time.Minute {
		return
	}
	f.swept = time.Now()
	for key, at := range f.created {
		if time.Since(at) >= createdMemory {
			delete(f.created, key)
		}
	}
}

func (f *WebhookFirstAttempts) done(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.waiting, key)
	f.created[key] = time.Now()
}

// start is the controller's source: it keeps the queue, and queues what was handed over before.
func (f *WebhookFirstAttempts) start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = q
	for key := range f.waiting {
		q.Add(reconcile.Request{NamespacedName: key})
	}
	return nil
}

// Reconcile makes a handed-over event's first attempt and creates its delivery. An error (the
// create failed) retries the create with backoff, without a second attempt.
func (f *WebhookFirstAttempts) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	key := req.NamespacedName
	f.mu.Lock()
	h := f.waiting[key]
	f.mu.Unlock()
	if h == nil {
		return ctrl.Result{}, nil
	}
	r := f.r
	// Born already: by an earlier manager, or by a create of ours whose answer was lost.
	switch err := r.Get(ctx, key, &paygatev1.WebhookDelivery{}); {
	case err == nil:
		f.done(key)
		return ctrl.Result{}, nil
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("looking for webhook delivery %s before its first attempt: %w", key, err)
	}
	d := h.delivery
	if !h.tried {
		h.tried = true
		d.Spec.FirstAttempt = r.firstAttempt(ctx, d)
	}
	switch err := r.Create(ctx, d.DeepCopy()); {
	case err == nil:
		if h.born != nil {
			h.born()
		}
	case apierrors.IsAlreadyExists(err):
	default:
		return ctrl.Result{}, fmt.Errorf("creating the %s event of %s %s: %w", d.Spec.EventType, d.Spec.Source.Kind, d.Spec.Source.Name, err)
	}
	f.done(key)
	return ctrl.Result{}, nil
}

// firstAttempt makes the first attempt of a delivery that does not exist yet, exactly as the
// delivery controller would (docs/webhooks.md, Delivery), and returns it for spec.firstAttempt.
// Nil when the first attempt is the delivery controller's to make, after the create: no URL
// (NoEndpoint), no signing secret (SigningSecretMissing, retried), or a schedule whose first
// attempt is not immediate.
func (r *WebhookDeliveryReconciler) firstAttempt(ctx context.Context, d *paygatev1.WebhookDelivery) *paygatev1.FirstDeliveryAttempt {
	if d.Spec.URL == "" || r.schedule()[0] > 0 {
		return nil
	}
	secret, err := r.signingSecret(ctx, d)
	if err != nil {
		return nil
	}
	legacySecret, err := r.legacySecret(ctx, d, secret)
	if err != nil {
		return nil
	}
	now := r.Clock.Now()
	out := r.send(ctx, d, secret, legacySecret, now)
	a := &paygatev1.FirstDeliveryAttempt{
		Result: paygatev1.FirstAttemptFailed, At: metav1.NewMicroTime(now),
		StatusCode: int32(out.StatusCode), Error: out.Error, DurationMillis: out.Duration.Milliseconds(),
	}
	if out.Delivered {
		a.Result = paygatev1.FirstAttemptDelivered
	}
	return a
}

// setup registers the first-attempt controller: no watch, only what emitOnce hands over.
func (f *WebhookFirstAttempts) setup(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("webhookfirstattempt").
		WatchesRawSource(source.Func(f.start)).
		WithOptions(controllerOptions(concurrency)).
		Complete(f)
}
