// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// storeReader reads an informer store as controller-runtime's cache reader does for the lists:
// the namespace index, the label selector, the store's own objects (UnsafeDisableDeepCopy) set
// into the typed list (a shallow copy of each). A field selector (the refunds of a payment)
// finds nothing; Get finds nothing.
type storeReader struct{ store toolscache.Indexer }

func (r storeReader) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Group: "paygate.dev", Resource: "objects"}, key.Name)
}

func (r storeReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := client.ListOptions{}
	o.ApplyOptions(opts)
	if _, payments := list.(*paygatev1.PaymentList); !payments || o.FieldSelector != nil {
		return apimeta.SetList(list, nil)
	}
	items, err := r.store.ByIndex(toolscache.NamespaceIndex, o.Namespace)
	if err != nil {
		return err
	}
	out := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		obj := item.(runtime.Object)
		m, err := apimeta.Accessor(obj)
		if err != nil {
			return err
		}
		if o.LabelSelector != nil && !o.LabelSelector.Matches(labels.Set(m.GetLabels())) {
			continue
		}
		out = append(out, obj)
	}
	return apimeta.SetList(list, out)
}

// BenchmarkListPayments: GET /api/v1/payments (the handler, rendering included; no archive) of
// a merchant with 1,000 and 100,000 live payments, read from the cache as before the indexes
// ("cache": list by label, filter, sort, slice) and from the list index ("index"): the first
// page of 100, the page at half the list, the first page of successful payments, the second page
// of a span of creation times (a third of the list) and the first of a customer's successful
// payments.
//
//	go test ./apiserver/ -run '^$' -bench BenchmarkListPayments -benchmem
func BenchmarkListPayments(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		ps := costPayments(n, costStart)
		store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
		for i := range ps {
			if err := store.Add(&ps[i]); err != nil {
				b.Fatal(err)
			}
		}
		for _, mode := range []string{"cache", "index"} {
			s := New(Options{Cache: storeReader{store}, CheckoutKey: []byte("checkout-key")})
			if mode == "index" {
				s.lists = syncedIndexSet()
				for i := range ps {
					s.lists.payments.OnAdd(&ps[i], false)
				}
			}
			ctx := context.WithValue(context.Background(), callerKey{}, &caller{merchant: costMerchant, env: paygatev1.EnvironmentSandbox})
			for _, q := range []struct{ name, query string }{
				{"first", "limit=100"},
				{"half", fmt.Sprintf("limit=100&offset=%d", n/2)},
				{"success", "limit=100&status=success"},
				{"span", "limit=100&offset=100&" + costFilters(n)[8]},
				{"phone", "limit=100&customer_phone=%2B255712345678&status=success"},
			} {
				b.Run(fmt.Sprintf("%s/payments=%d/%s", mode, n, q.name), func(b *testing.B) {
					req := httptest.NewRequest(http.MethodGet, "/api/v1/payments?"+q.query, nil).WithContext(ctx)
					b.ReportAllocs()
					for b.Loop() {
						rec := httptest.NewRecorder()
						s.listPayments(rec, req)
						if rec.Code != http.StatusOK {
							b.Fatalf("%d %s", rec.Code, rec.Body)
						}
					}
				})
			}
		}
	}
}

// BenchmarkListIndexEvents: what the informer's handler pays per event with 100,000 payments
// indexed: an update that settles a pending payment (it moves between the status lists; sort
// key unchanged) and back. Reports the index's heap per payment as well.
//
//	go test ./apiserver/ -run '^$' -bench BenchmarkListIndexEvents -benchmem
func BenchmarkListIndexEvents(b *testing.B) {
	const n = 100000
	ps := costPayments(n, costStart)
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	x := newListIndex(&paymentIndex)
	for i := range ps {
		x.OnAdd(&ps[i], false)
	}
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	perPayment := float64(after.HeapAlloc-before.HeapAlloc) / n
	pending := make([]*paygatev1.Payment, 0, n/3)
	for i := range ps {
		if ps[i].Status.Phase == "" {
			pending = append(pending, &ps[i])
		}
	}
	settled := make([]*paygatev1.Payment, len(pending))
	for i, p := range pending {
		settled[i] = p.DeepCopy()
		settled[i].Status.Phase, settled[i].Status.Fee, settled[i].Status.NetAmount = paygatev1.PaymentSuccess, "37.50", "1462.50"
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		j := i % len(pending)
		if (i/len(pending))%2 == 0 {
			x.OnUpdate(pending[j], settled[j])
		} else {
			x.OnUpdate(settled[j], pending[j])
		}
		i++
	}
	b.ReportMetric(perPayment, "index-B/payment")
}
