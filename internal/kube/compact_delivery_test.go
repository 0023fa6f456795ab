// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package kube

import (
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// storedDelivery decodes a webhook delivery as an informer does (every string its own copy): a
// payment.completed event delivered at the second attempt, with its managed fields, payload and
// conditions as kube-apiserver stores them. i makes its name, UIDs and ids its own.
func storedDelivery(tb testing.TB, i int) *paygatev1.WebhookDelivery {
	tb.Helper()
	id := fmt.Sprintf("%024d", i)
	payload := `{"id":"evt_` + id + `","type":"payment.completed","api_version":"2026-11-01","created_at":"2026-11-24T07:00:01.000000+00:00",` +
		`"data":{"trx_id":"trx-` + id + `","merchant_ref":"order-` + id + `","status":"success","amount":{"value":"1500.00","currency":"TZS"},` +
		`"fee":{"value":"37.50","currency":"TZS"},"net_amount":{"value":"1462.50","currency":"TZS"},"customer":{"name":"Asha Mushi",` +
		`"phone":"+255712400100","email":"asha@example.com"},"description":"Order","gateway":"tzs-sandbox","created_at":"2026-11-24T07:00:00.000000Z",` +
		`"updated_at":"2026-11-24T07:00:01.000000Z","environment":"sandbox"}}`
	pj, _ := json.Marshal(payload)
	raw := `{"apiVersion":"paygate.dev/v1alpha1","kind":"WebhookDelivery","metadata":{"name":"whd-` + id + `","namespace":"shop",
	"uid":"` + id + `-0000-4000-8000-000000000000","resourceVersion":"12345","generation":1,"creationTimestamp":"2026-11-24T07:00:01Z",
	"labels":{"paygate.dev/merchant":"duka","paygate.dev/environment":"sandbox"},
	"ownerReferences":[{"apiVersion":"paygate.dev/v1alpha1","kind":"Payment","name":"trx-` + id + `","uid":"src-` + id + `","controller":true,"blockOwnerDeletion":true}],
	"managedFields":[{"manager":"paygate","operation":"Update","apiVersion":"paygate.dev/v1alpha1","time":"2026-11-24T07:00:01Z","fieldsType":"FieldsV1",
	"fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:paygate.dev/environment":{},"f:paygate.dev/merchant":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"src\"}":{}}},
	"f:spec":{".":{},"f:environment":{},"f:eventID":{},"f:eventType":{},"f:merchantRef":{".":{},"f:name":{}},"f:payload":{},"f:source":{".":{},"f:kind":{},"f:name":{},"f:uid":{}},"f:url":{}}}},
	{"manager":"paygate","operation":"Update","apiVersion":"paygate.dev/v1alpha1","time":"2026-11-24T07:00:02Z","fieldsType":"FieldsV1","subresource":"status",
	"fieldsV1":{"f:status":{".":{},"f:attempts":{},"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},
	"f:deliveredAt":{},"f:observedGeneration":{},"f:phase":{},"f:totalAttempts":{}}}}]},
	"spec":{"eventID":"evt_` + id + `","eventType":"payment.completed","merchantRef":{"name":"duka"},"environment":"sandbox",
	"source":{"kind":"Payment","name":"trx-` + id + `","uid":"src-` + id + `"},"url":"https://duka.example/hooks/paygate","payload":` + string(pj) + `},
	"status":{"observedGeneration":1,"phase":"Delivered","totalAttempts":2,"deliveredAt":"2026-11-24T07:00:02Z",
	"attempts":[{"number":1,"at":"2026-11-24T07:00:01Z","statusCode":500,"error":"HTTP 500","durationMillis":12},{"number":2,"at":"2026-11-24T07:00:02Z","statusCode":200,"durationMillis":9}],
	"conditions":[{"type":"Ready","status":"True","observedGeneration":1,"lastTransitionTime":"2026-11-24T07:00:02Z","reason":"WebhookDelivered","message":"A receiver accepted the event"}]}}`
	d := &paygatev1.WebhookDelivery{}
	if err := json.Unmarshal([]byte(raw), d); err != nil {
		tb.Fatal(err)
	}
	return d
}

func TestCompactWebhookDeliveryForLists(t *testing.T) {
	a, b := storedDelivery(t, 1), storedDelivery(t, 2)
	if a.Spec.Payload == "" || len(a.ManagedFields) != 2 || len(a.OwnerReferences) != 1 || len(a.Status.Conditions) != 1 {
		t.Fatalf("the fixture lacks what the transform drops: %+v", a)
	}
	want := a.DeepCopy()
	want.ManagedFields, want.OwnerReferences, want.Spec.Payload, want.Status.Conditions = nil, nil, "", nil
	for _, d := range []*paygatev1.WebhookDelivery{a, b} {
		if _, err := CompactWebhookDeliveryForLists(d); err != nil {
			t.Fatal(err)
		}
	}
	if !equality.Semantic.DeepEqual(a, want) {
		t.Fatalf("the transform changed what the console shows:\n got %+v\nwant %+v", a, want)
	}
	same := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are not one string in memory", what, x, y)
		}
	}
	same("namespace", a.Namespace, b.Namespace)
	same("merchant", a.Spec.MerchantRef.Name, b.Spec.MerchantRef.Name)
	same("event type", a.Spec.EventType, b.Spec.EventType)
	same("url", a.Spec.URL, b.Spec.URL)
	same("source kind", a.Spec.Source.Kind, b.Spec.Source.Kind)
	same("phase", string(a.Status.Phase), string(b.Status.Phase))
	same("attempt error", a.Status.Attempts[0].Error, b.Status.Attempts[0].Error)

	tomb := toolscache.DeletedFinalStateUnknown{Key: "shop/whd-1", Obj: a}
	if out, err := CompactWebhookDeliveryForLists(tomb); err != nil || out.(toolscache.DeletedFinalStateUnknown).Key != "shop/whd-1" {
		t.Fatalf("tombstone: %v, %v", out, err)
	}
	if deliveryTransform(APIServerCacheOptions()) == nil {
		t.Error("the apiserver's cache options have no delivery transform")
	}
	if deliveryTransform(CacheOptions()) != nil {
		t.Error("the manager's cache would drop the payload its delivery controller sends")
	}
}

func deliveryTransform(o cache.Options) toolscache.TransformFunc {
	for obj, by := range o.ByObject {
		if _, ok := obj.(*paygatev1.WebhookDelivery); ok {
			return by.Transform
		}
	}
	return nil
}

// TestCompactedDeliveriesHeap: the heap a cached delivery takes, as decoded and after the
// apiserver's transform (docs/performance.md, List indexes). The transform keeps at most half.
func TestCompactedDeliveriesHeap(t *testing.T) {
	const n = 5000
	raw, compacted := deliveryHeap(t, n, false), deliveryHeap(t, n, true)
	t.Logf("heap per cached delivery: %.0f B as decoded, %.0f B after the apiserver's transform", raw, compacted)
	if compacted > raw/2 {
		t.Errorf("a compacted delivery takes %.0f B, more than half of %.0f B", compacted, raw)
	}
}

// deliveryHeap is the heap n decoded deliveries hold, per delivery, compacted or not.
func deliveryHeap(t testing.TB, n int, compact bool) float64 {
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	held := make([]*paygatev1.WebhookDelivery, n)
	for i := range held {
		d := storedDelivery(t, i)
		if compact {
			if _, err := CompactWebhookDeliveryForLists(d); err != nil {
				t.Fatal(err)
			}
		}
		held[i] = d
	}
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
	goruntime.KeepAlive(held)
	return per
}
