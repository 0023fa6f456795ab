// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
)

// What the apiserver's heap holds per live webhook delivery since it caches them for the
// console (docs/performance.md, List indexes): the cached object after its transform, in an
// informer store, and the list index's share.

// storedDeliveryJSON is a delivery as kube-apiserver sends it to an informer: managed fields of
// its create and of its status writes, its owner, a payload of a payment.completed event, two
// attempts and the Ready condition.
func storedDeliveryJSON(tb testing.TB, i int, phase paygatev1.DeliveryPhase) []byte {
	tb.Helper()
	id := fmt.Sprintf("%024d", i)
	created := costStart.Add(time.Duration(i/3) * time.Second)
	payload, _ := json.Marshal(map[string]any{"id": "evt_" + id, "type": "payment.completed", "api_version": "2026-11-01",
		"created_at": created.Format(time.RFC3339Nano), "data": map[string]any{"trx_id": "trx-" + id, "merchant_ref": "order-" + id,
			"status": "success", "amount": map[string]string{"value": "1500.00", "currency": "TZS"},
			"fee": map[string]string{"value": "37.50", "currency": "TZS"}, "net_amount": map[string]string{"value": "1462.50", "currency": "TZS"},
			"customer":    map[string]string{"name": "Asha Mushi", "phone": "+255712400100", "email": "asha@example.com"},
			"description": "Order", "gateway": "tzs-sandbox", "environment": "sandbox"}})
	fields := func(f string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: "paygate", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "paygate.dev/v1alpha1",
			Time: &metav1.Time{Time: created}, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(f)}}
	}
	at := metav1.NewTime(created.Add(time.Second))
	d := paygatev1.WebhookDelivery{
		TypeMeta: metav1.TypeMeta{APIVersion: "paygate.dev/v1alpha1", Kind: "WebhookDelivery"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "whd-" + id, UID: types.UID("whd-0000-4000-8000-" + id[12:]), ResourceVersion: "1234567",
			Generation: 1, CreationTimestamp: metav1.NewTime(created),
			Labels:          map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "paygate.dev/v1alpha1", Kind: "Payment", Name: "trx-" + id, UID: types.UID("src-0000-4000-8000-" + id[12:])}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				fields(`{"f:metadata":{"f:labels":{".":{},"f:paygate.dev/environment":{},"f:paygate.dev/merchant":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"src\"}":{}}},"f:spec":{".":{},"f:environment":{},"f:eventID":{},"f:eventType":{},"f:merchantRef":{".":{},"f:name":{}},"f:payload":{},"f:source":{".":{},"f:kind":{},"f:name":{},"f:uid":{}},"f:url":{}}}`),
				fields(`{"f:status":{".":{},"f:attempts":{},"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:deliveredAt":{},"f:observedGeneration":{},"f:phase":{},"f:totalAttempts":{}}}`),
			}},
		Spec: paygatev1.WebhookDeliverySpec{EventID: "evt_" + id, EventType: "payment.completed", MerchantRef: paygatev1.MerchantReference{Name: "duka"},
			Environment: paygatev1.EnvironmentSandbox, Source: paygatev1.EventSource{Kind: "Payment", Name: "trx-" + id, UID: "src-" + id},
			URL: "https://duka.example/hooks/paygate", Payload: string(payload)},
		Status: paygatev1.WebhookDeliveryStatus{ObservedGeneration: 1, Phase: phase, TotalAttempts: 2,
			Attempts: []paygatev1.DeliveryAttempt{{Number: 1, At: metav1.NewTime(created), StatusCode: 500, Error: "HTTP 500", DurationMillis: 12},
				{Number: 2, At: at, StatusCode: 200, DurationMillis: 9}},
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: at,
				Reason: "WebhookDelivered", Message: "A receiver accepted the event"}}},
	}
	if phase == paygatev1.DeliveryDelivered {
		d.Status.DeliveredAt = &at
	}
	b, err := json.Marshal(&d)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func heapNow() uint64 {
	var m goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkDeliveryCache: the heap per live delivery of 20,000 (decoded as an informer decodes
// them; after the apiserver's transform, in an informer store; the list index's share), and
// what the index's handler pays per event (a pending delivery delivered, and back).
//
//	go test ./apiserver/ -run '^$' -bench BenchmarkDeliveryCache -benchmem
func BenchmarkDeliveryCache(b *testing.B) {
	const n = 20000
	raw := make([][]byte, n)
	for i := range raw {
		raw[i] = storedDeliveryJSON(b, i, []paygatev1.DeliveryPhase{paygatev1.DeliveryPending, paygatev1.DeliveryDelivered}[i%2])
	}
	decode := func(transform bool) []*paygatev1.WebhookDelivery {
		out := make([]*paygatev1.WebhookDelivery, n)
		for i := range out {
			d := &paygatev1.WebhookDelivery{}
			if err := json.Unmarshal(raw[i], d); err != nil {
				b.Fatal(err)
			}
			if transform {
				if _, err := kube.CompactWebhookDeliveryForLists(d); err != nil {
					b.Fatal(err)
				}
			}
			out[i] = d
		}
		return out
	}

	base := heapNow()
	decoded := decode(false)
	perDecoded := float64(heapNow()-base) / n
	goruntime.KeepAlive(decoded)

	base = heapNow()
	store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	cached := decode(true)
	for _, d := range cached {
		if err := store.Add(d); err != nil {
			b.Fatal(err)
		}
	}
	cached = nil // the store holds them
	perCached := float64(heapNow()-base) / n

	base = heapNow()
	x := newListIndex(&deliveryIndex)
	for _, o := range store.List() {
		x.OnAdd(o, false)
	}
	perIndexed := float64(heapNow()-base) / n

	var pending, delivered []*paygatev1.WebhookDelivery
	for _, o := range store.List() {
		if d := o.(*paygatev1.WebhookDelivery); d.Phase() == paygatev1.DeliveryPending {
			done := d.DeepCopy()
			now := metav1.Now()
			done.Status.Phase, done.Status.DeliveredAt = paygatev1.DeliveryDelivered, &now
			pending, delivered = append(pending, d), append(delivered, done)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		j := i % len(pending)
		if (i/len(pending))%2 == 0 {
			x.OnUpdate(pending[j], delivered[j])
		} else {
			x.OnUpdate(delivered[j], pending[j])
		}
		i++
	}
	b.ReportMetric(perDecoded, "decoded-B/delivery")
	b.ReportMetric(perCached, "cached-B/delivery")
	b.ReportMetric(perIndexed, "index-B/delivery")
	goruntime.KeepAlive(store)
	goruntime.KeepAlive(raw) // live through every measure
}
