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
}

// emitOnce creates an occurrence's WebhookDelivery, owned by its source object, unless it exists
// under one of its names. An event is born once whatever passes repeat: its name derives from the
// source's UID and the event type (and occurrence), and the API server refuses a second create.
// It reports whether this call created it.
//
// live, when set, is read before the create: a source the API server no longer holds (the
// archiver deleted it after archiving it and its deliveries, owner first) gets no event again,
// whatever the cache still shows.
func emitOnce(ctx context.Context, c client.Client, live client.Reader, now time.Time, e webhookEvent) (bool, error) {
	obj := e.source.Object.(client.Object)
	for _, name := range e.names {
		existing := &paygatev1.WebhookDelivery{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, existing); err == nil || !apierrors.IsNotFound(err) {
			return false, client.IgnoreNotFound(err)
		}
	}
	if live != nil {
		current := obj.DeepCopyObject().(client.Object)
		switch err := live.Get(ctx, client.ObjectKeyFromObject(obj), current); {
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("reading %s before its %s event: %w", obj.GetName(), e.eventType, err)
		case current.GetUID() != obj.GetUID():
			return false, nil
		}
	}
	target, err := e.target()
	if err != nil {
		return false, fmt.Errorf("finding where the %s event of %s goes: %w", e.eventType, obj.GetName(), err)
	}
	e.source.TargetURL = target
	if err := legacyFormat(ctx, c, obj.GetNamespace(), &e.source); err != nil {
		return false, fmt.Errorf("reading the webhook format of the %s event of %s: %w", e.eventType, obj.GetName(), err)
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
		return false, fmt.Errorf("building the %s event of %s: %w", e.eventType, obj.GetName(), err)
	}
	d, err := webhookevents.NewDelivery(e.source, e.eventType, data, now)
	if err != nil {
		return false, err
	}
	if err := controllerutil.SetOwnerReference(obj, d, c.Scheme()); err != nil {
		return false, err
	}
	if err := c.Create(ctx, d); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return false, nil
		}
		return false, fmt.Errorf("creating the %s event of %s: %w", e.eventType, obj.GetName(), err)
	}
	return true, nil
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
