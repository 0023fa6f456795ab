// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package kube

import (
	"sigs.k8s.io/controller-runtime/pkg/cache"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// The apiserver caches every live WebhookDelivery for the console's delivery list
// (docs/console.md, Webhook deliveries; docs/performance.md, List indexes). It reads them and
// never writes them, and the pages show neither a delivery's payload, its conditions nor its owner:
// its cache keeps the rest. The manager's cache is not this one: the delivery controller sends the
// payload and writes the conditions.

// APIServerCacheOptions are CacheOptions with the apiserver's delivery transform
// (CompactWebhookDeliveryForLists).
func APIServerCacheOptions() cache.Options {
	o := CacheOptions()
	o.ByObject[&paygatev1.WebhookDelivery{}] = cache.ByObject{Transform: CompactWebhookDeliveryForLists}
	return o
}

// CompactWebhookDeliveryForLists is the apiserver's cache transform of WebhookDeliveries: it drops
// what the console never shows (managed fields, owner references, spec.payload,
// status.conditions), so a cached delivery is what its list and detail pages read and nothing
// more, and interns the strings that repeat from one delivery to the next (namespace, labels,
// merchant, environment, event type, source kind, URL, phases, errors). A reader that needs the
// payload reads the delivery from the Kubernetes API (or the archive), never from this cache.
func CompactWebhookDeliveryForLists(in any) (any, error) {
	d, ok := in.(*paygatev1.WebhookDelivery)
	if !ok {
		return compactObject(in) // a tombstone: nothing to share
	}
	d.ManagedFields, d.OwnerReferences = nil, nil
	d.APIVersion, d.Kind = intern(d.APIVersion), intern(d.Kind)
	compactMeta(&d.ObjectMeta)
	s := &d.Spec
	s.Payload = ""
	s.EventType = intern(s.EventType)
	s.MerchantRef.Name = intern(s.MerchantRef.Name)
	s.Environment = internAs(s.Environment)
	s.Source.Kind = intern(s.Source.Kind)
	s.URL = intern(s.URL)
	s.Format = internAs(s.Format)
	s.LegacySigningKey = internAs(s.LegacySigningKey)
	if a := s.FirstAttempt; a != nil {
		a.Result = internAs(a.Result)
		a.Error = intern(a.Error)
	}
	st := &d.Status
	st.Phase = internAs(st.Phase)
	st.Conditions = nil
	for i := range st.Attempts {
		st.Attempts[i].Error = intern(st.Attempts[i].Error)
	}
	return d, nil
}
