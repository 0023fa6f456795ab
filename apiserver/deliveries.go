// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/console"
	"github.com/paygate/paygate/internal/archive"
)

// +kubebuilder:rbac:groups=paygate.dev,resources=webhookdeliveries,verbs=get;list;watch

// A merchant's webhook deliveries, for the console (docs/console.md, Webhook deliveries): the
// list is a merged list like the API's (docs/archive.md, Merged lists), its live side a list
// index (docs/performance.md, List indexes) over the apiserver's informer of WebhookDeliveries,
// whose cache holds each delivery without its payload, conditions and managed fields
// (kube.CompactWebhookDeliveryForLists). The list is newest first (archive.DeliveryOrder) and
// filters by phase (the delivery's effective phase: WebhookDelivery.Phase) and event type.

// deliveryIndex: facets all, status (the effective phase), event type, and both.
var deliveryIndex = indexSpec[paygatev1.WebhookDelivery]{
	object: func() client.Object { return &paygatev1.WebhookDelivery{} },
	bucket: func(d *paygatev1.WebhookDelivery) bucketKey {
		return bucketKey{d.Namespace, d.Spec.MerchantRef.Name, d.Spec.Environment}
	},
	uid:      func(d *paygatev1.WebhookDelivery) types.UID { return d.UID },
	terminal: (*paygatev1.WebhookDelivery).Finished,
	compare:  compareDeliveries,
	facets: fourFacets(func(d *paygatev1.WebhookDelivery) string { return string(d.Phase()) },
		func(d *paygatev1.WebhookDelivery) string { return d.Spec.EventType },
		deliveryListed, deliveryListed),
}

func deliveryListed(d *paygatev1.WebhookDelivery) bool {
	return labelled(d.Labels, d.Spec.MerchantRef.Name, d.Spec.Environment)
}

func (l *listIndexes) deliveryIndex() *listIndex[paygatev1.WebhookDelivery] {
	if l == nil {
		return nil
	}
	return l.deliveries
}

// compareDeliveries is the delivery list's order (archive.DeliveryOrder): newest first, then by
// name, then by UID.
func compareDeliveries(a, b *paygatev1.WebhookDelivery) int {
	if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(string(a.UID), string(b.UID))
}

// deliveriesPage is the page [offset, offset+limit) of the caller's webhook deliveries in the
// phase and of the event type asked ("" for any), live and archived merged, and how many there
// are. The items may be the cache's own objects: the caller copies what it keeps.
func (s *Server) deliveriesPage(ctx context.Context, c *caller, phase paygatev1.DeliveryPhase, eventType string,
	limit, offset int) ([]paygatev1.WebhookDelivery, int, error) {
	filter := archive.DeliveryFilter{Namespace: c.merchant.Namespace, Merchant: c.merchant.Name, Environment: c.env}
	k := listKind[paygatev1.WebhookDelivery]{
		kind:     archive.KindWebhookDelivery,
		uid:      func(d *paygatev1.WebhookDelivery) string { return string(d.UID) },
		terminal: (*paygatev1.WebhookDelivery).Finished,
		compare:  compareDeliveries,
	}
	if phase != paygatev1.DeliveryPending { // archived deliveries are finished
		k.archived = func(ctx context.Context, limit, offset int) (archive.Page[paygatev1.WebhookDelivery], error) {
			f := filter
			f.Phase, f.EventType = phase, eventType
			return s.opts.Archive.ListWebhookDeliveries(ctx, f, limit, offset)
		}
	}
	var live liveItems[paygatev1.WebhookDelivery]
	if x := s.lists.deliveryIndex(); x.ready() { // docs/performance.md, List indexes
		facet, key := facetOf(string(phase), eventType)
		live = x.live(callerBucket(c), facet, key, func(ctx context.Context) (archive.Page[paygatev1.WebhookDelivery], error) {
			return s.opts.Archive.ListWebhookDeliveries(ctx, filter, 1, 0)
		})
	} else {
		var list paygatev1.WebhookDeliveryList
		if err := s.listOwn(ctx, c, &list); err != nil {
			return nil, 0, err
		}
		items := list.Items[:0]
		for _, d := range list.Items {
			if d.Spec.MerchantRef.Name != c.merchant.Name || d.Spec.Environment != c.env ||
				(phase != "" && d.Phase() != phase) || (eventType != "" && d.Spec.EventType != eventType) {
				continue
			}
			items = append(items, d)
		}
		live = newSliceLive(k, items, len(list.Items))
	}
	page, total, err := mergedPage(ctx, s, k, live, limit, offset)
	s.observeList("webhook_deliveries", live.stats())
	return page, total, err
}

// deliveryNamePattern: a delivery's name is "whd-" and lower-case letters and digits
// (events.DeliveryName, and the hex names of earlier versions); any other is nobody's.
var deliveryNamePattern = regexp.MustCompile(`^whd-[a-z0-9]{1,64}$`)

// webhookDelivery reads one of the caller's webhook deliveries: from the cache (without its
// payload), then the archive, then live; live first when asked (the payload: the cache has
// none). A delivery of another merchant or environment is not found, as a missing one.
func (s *Server) webhookDelivery(ctx context.Context, c *caller, name string, live bool) (*paygatev1.WebhookDelivery, error) {
	if !deliveryNamePattern.MatchString(name) {
		return nil, nil
	}
	return readArchivable[paygatev1.WebhookDelivery](ctx, s, c, name, live, "get_webhook_delivery", s.archiveGetWebhookDelivery)
}

// archiveGetWebhookDelivery is Archive.GetWebhookDelivery (the archive is set when it is called).
func (s *Server) archiveGetWebhookDelivery(ctx context.Context, namespace, name string) (*paygatev1.WebhookDelivery, error) {
	return s.opts.Archive.GetWebhookDelivery(ctx, namespace, name)
}

// ListWebhookDeliveries is a page of m's webhook deliveries in env, newest first, and how many
// match (console.DeliveryRecords). Each is a copy.
func (r consoleRecords) ListWebhookDeliveries(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment,
	f console.DeliveryFilter, limit, offset int) ([]paygatev1.WebhookDelivery, int, error) {
	page, total, err := r.s.deliveriesPage(ctx, &caller{merchant: m, env: env}, f.Phase, f.EventType, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	out := make([]paygatev1.WebhookDelivery, len(page))
	for i := range page {
		page[i].DeepCopyInto(&out[i])
	}
	return out, total, nil
}

// GetWebhookDelivery is one of m's webhook deliveries in env (console.DeliveryRecords); with its
// payload when asked (read live or from the archive: the cache keeps none).
func (r consoleRecords) GetWebhookDelivery(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment,
	name string, payload bool) (*paygatev1.WebhookDelivery, bool, error) {
	d, err := r.s.webhookDelivery(ctx, &caller{merchant: m, env: env}, name, payload)
	if err != nil || d == nil {
		return nil, false, err
	}
	return d, true, nil
}
