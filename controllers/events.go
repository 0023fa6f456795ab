// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	webhookevents "github.com/paygate/paygate/internal/events"
)

// webhookEvent is one occurrence to announce: its source, its type, and the names its
// WebhookDelivery may already have (the first is the one it is created under; see
// events.DeliveryNames for why there can be more).
type webhookEvent struct {
	source    webhookevents.Source
	eventType string
	names     []string
	// target and data give the URL and build the payload; they are called only when the event
	// does not exist yet.
	target func() (string, error)
	data   func() (any, error)
	// legacy builds the body in the older gateway's IPN shape, for merchants whose webhookFormat
	// is LegacyIPN (payment events only: the older gateway had no other); nil for other events.
	legacy func(now time.Time) (string, error)
	// born, when set, runs once the event's WebhookDelivery is created (the source's counters):
	// once per occurrence, by the create the API server accepted.
	born func()
}

// emitOnce announces an occurrence: its WebhookDelivery, owned by its source object, unless it
// exists under one of its names. An event is born once whatever passes repeat: its name derives
// from the source's UID and the event type (and occurrence), and the API server refuses a second
// create.
//
// With first (the manager's WebhookFirstAttempts) the built event is handed over and emitOnce
// returns at once: the webhook delivery controller makes its first attempt, then creates the
// delivery with that attempt's result (docs/webhooks.md, One write per delivered event). An event
// already handed over, or created a moment ago by this process, is not handed over again. Without
// first (tests of one reconciler) the delivery is created here and the delivery controller makes
// every attempt.
//
// live, when set, is read before the event is built: a source the API server no longer holds (the
// archiver deleted it after archiving it and its deliveries, owner first) gets no event again,
// whatever the cache still shows.
func emitOnce(ctx context.Context, c client.Client, live client.Reader, first *WebhookFirstAttempts, now time.Time, e webhookEvent) error {
	obj := e.source.Object.(client.Object)
	for _, name := range e.names {
		existing := &paygatev1.WebhookDelivery{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, existing); err == nil || !apierrors.IsNotFound(err) {
			return client.IgnoreNotFound(err)
		}
	}
	if first.has(client.ObjectKey{Namespace: obj.GetNamespace(), Name: e.names[0]}) {
		return nil
	}
	if live != nil {
		current := obj.DeepCopyObject().(client.Object)
		switch err := live.Get(ctx, client.ObjectKeyFromObject(obj), current); {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("reading %s before its %s event: %w", obj.GetName(), e.eventType, err)
		case current.GetUID() != obj.GetUID():
			return nil
		}
	}
	target, err := e.target()
	if err != nil {
		return fmt.Errorf("finding where the %s event of %s goes: %w", e.eventType, obj.GetName(), err)
	}
	e.source.TargetURL = target
	if err := legacyFormat(ctx, c, obj.GetNamespace(), &e.source); err != nil {
		return fmt.Errorf("reading the webhook format of the %s event of %s: %w", e.eventType, obj.GetName(), err)
	}
	build := e.data
	if e.source.Format == paygatev1.WebhookFormatLegacyIPN && e.legacy != nil {
		build = func() (any, error) {
			body, err := e.legacy(now)
			return webhookevents.RawPayload(body), err
		}
	}
	data, err := build()
	if err != nil {
		// Never an event with a wrong amount: the error is logged and retried with backoff.
		return fmt.Errorf("building the %s event of %s: %w", e.eventType, obj.GetName(), err)
	}
	d, err := webhookevents.NewDelivery(e.source, e.eventType, data, now)
	if err != nil {
		return err
	}
	if err := controllerutil.SetOwnerReference(obj, d, c.Scheme()); err != nil {
		return err
	}
	if first != nil {
		first.offer(d, e.born)
		return nil
	}
	if err := c.Create(ctx, d); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("creating the %s event of %s: %w", e.eventType, obj.GetName(), err)
	}
	if e.born != nil {
		e.born()
	}
	return nil
}

// legacyFormat sets src's webhook format and legacy signing key from its merchant as it is now,
// so a change of format applies to the events born after it. A merchant that is gone gets the
// standard format.
func legacyFormat(ctx context.Context, c client.Reader, namespace string, src *webhookevents.Source) error {
	m := &paygatev1.Merchant{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: src.Merchant}, m); err != nil {
		return client.IgnoreNotFound(err)
	}
	src.Format, src.SigningKey = m.Spec.Format(), m.Spec.LegacyIPNSigningKey
	return nil
}

// merchantWebhookURL is the merchant's default webhook URL of env, for an event whose source names
// none; "" when the merchant is gone or has none.
func merchantWebhookURL(ctx context.Context, c client.Reader, namespace, merchant string, env paygatev1.Environment) (string, error) {
	m := &paygatev1.Merchant{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: merchant}, m); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	return m.Spec.WebhookURLs.For(env), nil
}
