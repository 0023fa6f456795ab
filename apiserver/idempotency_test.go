// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// countingWriter counts the writes that reach the Kubernetes API, by verb and kind.
type countingWriter struct {
	client.Writer
	mu     sync.Mutex
	writes map[string]int
}

func (w *countingWriter) count(verb string, obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes[fmt.Sprintf("%s %T", verb, obj)]++
}

// Create and Update count the writes made: a create refused as AlreadyExists writes nothing.
func (w *countingWriter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	err := w.Writer.Create(ctx, obj, opts...)
	if err == nil {
		w.count("create", obj)
	}
	return err
}

func (w *countingWriter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	err := w.Writer.Update(ctx, obj, opts...)
	if err == nil {
		w.count("update", obj)
	}
	return err
}

func (w *countingWriter) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, v := range w.writes {
		n += v
	}
	return n
}

// TestKeyedCreatesKeepTheirAnswerOnTheObject: a payout or refund created under an Idempotency-Key
// costs two writes (the key's record, the object carrying its answer), not three; a retry replays
// that answer byte for byte, marked replayed, writing nothing; a refusal is still kept in the
// record and replayed; an object created before answers were kept there is answered from its
// record as before.
func TestKeyedCreatesKeepTheirAnswerOnTheObject(t *testing.T) {
	w := &countingWriter{writes: map[string]int{}}
	f := newRefundFixture(t, func(o *Options) { w.Writer = o.Writer; o.Writer = w })
	ctx := t.Context()
	c := f.as(t, f.duka, true)
	do := func(target, body, key string) (*paygate.Response, error) {
		return c.Do(ctx, http.MethodPost, target, []byte(body), http.Header{"Idempotency-Key": {key}})
	}

	for _, tc := range []struct{ name, target, body string }{
		{"payout", "/api/v1/payouts", `{"amount":2003}`},
		{"refund", "/api/v1/payments/" + f.settledTrxID + "/refunds", `{"amount":100}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := w.total()
			first, err := do(tc.target, tc.body, "keep-"+tc.name)
			if err != nil || first.StatusCode != http.StatusOK {
				t.Fatalf("create: %v %+v", err, first)
			}
			if n := w.total() - before; n != 2 {
				t.Errorf("%d writes for the create (%v), want 2: the record and the object", n, w.writes)
			}
			var rec paygatev1.IdempotencyKeyList
			if err := f.k8s.List(ctx, &rec); err != nil {
				t.Fatal(err)
			}
			for _, r := range rec.Items {
				if r.Spec.Response != nil && r.Spec.Response.StatusCode == http.StatusOK && string(r.Spec.Response.Body) == string(first.Body) {
					t.Errorf("record %s stores the answer the object keeps", r.Name)
				}
			}
			before = w.total()
			again, err := do(tc.target, tc.body, "keep-"+tc.name)
			if err != nil || again.StatusCode != http.StatusOK || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
				t.Fatalf("replay: %v %+v\nfirst %s", err, again, first.Body)
			}
			if n := w.total() - before; n != 0 {
				t.Errorf("the replay wrote %d times", n)
			}
			if other, err := do(tc.target, `{"amount":7}`, "keep-"+tc.name); err != nil || other.StatusCode != http.StatusConflict {
				t.Errorf("another body under the key: %v %+v", err, other)
			}
		})
	}

	// A refusal is kept in the record: replayed, byte for byte.
	refused, err := do("/api/v1/payouts", `{"amount":999999999}`, "keep-refused")
	if err != nil || refused.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("refusal: %v %+v", err, refused)
	}
	again, err := do("/api/v1/payouts", `{"amount":999999999}`, "keep-refused")
	if err != nil || again.StatusCode != refused.StatusCode || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(refused.Body) {
		t.Fatalf("refusal replayed: %v %+v", err, again)
	}

	// An object without a kept answer (created by an earlier version): its record's answer, or the
	// object's record when the record has none.
	legacy, err := do("/api/v1/payouts", `{"amount":2004}`, "keep-legacy")
	if err != nil || legacy.StatusCode != http.StatusOK {
		t.Fatalf("create: %v %+v", err, legacy)
	}
	var pos paygatev1.PayoutList
	if err := f.k8s.List(ctx, &pos); err != nil {
		t.Fatal(err)
	}
	for i := range pos.Items {
		if p := &pos.Items[i]; p.Spec.Amount == "2004.00" {
			delete(p.Annotations, annotationIdempotentResponse)
			if err := f.k8s.Update(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	again, err = do("/api/v1/payouts", `{"amount":2004}`, "keep-legacy")
	if err != nil || again.StatusCode != http.StatusOK || string(again.Body) != string(legacy.Body) {
		t.Fatalf("legacy replay: %v %+v\nfirst %s", err, again, legacy.Body)
	}
}
