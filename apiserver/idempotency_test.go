// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// heldWriter pauses the first Refund create until release is closed (created is closed when it is
// reached), and fails the Refund creates it is told to with a server error.
type heldWriter struct {
	client.Writer
	held             atomic.Bool
	created, release chan struct{}
	mu               sync.Mutex
	fail             int
}

func (w *heldWriter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, ok := obj.(*paygatev1.Refund); ok {
		w.mu.Lock()
		failing := w.fail > 0
		if failing {
			w.fail--
		}
		w.mu.Unlock()
		if failing {
			return errors.New("etcdserver: request timed out")
		}
		if w.held.CompareAndSwap(false, true) {
			close(w.created)
			<-w.release
		}
	}
	return w.Writer.Create(ctx, obj, opts...)
}

// keyReads signals polled once a request has read an IdempotencyKey twice since it was armed:
// a request that found its key claimed looked again instead of running.
type keyReads struct {
	client.Reader
	mu     sync.Mutex
	armed  bool
	n      int
	polled chan struct{}
}

func (r *keyReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*paygatev1.IdempotencyKey); ok {
		r.mu.Lock()
		if r.armed {
			if r.n++; r.n == 2 {
				close(r.polled)
			}
		}
		r.mu.Unlock()
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestRetryWaitsForTheRequestHoldingItsKey: a retry that arrives while the first try with its key
// is still creating waits for that try's answer instead of deciding from a view the first try is
// changing. Here the first try's refund (all of a payment) is paused before it is created, another
// refund takes all of the payment meanwhile, and the retry, run alone, would refuse "nothing is
// left" and keep that refusal for a refund that exists. It answers the first try's refund, as
// every later replay does.
func TestRetryWaitsForTheRequestHoldingItsKey(t *testing.T) {
	w := &heldWriter{created: make(chan struct{}), release: make(chan struct{})}
	r := &keyReads{polled: make(chan struct{})}
	f := newRefundFixture(t, func(o *Options) { w.Writer, o.Writer = o.Writer, w; r.Reader, o.APIReader = o.APIReader, r })
	ctx := t.Context()
	c := f.as(t, f.duka, true)
	target := "/api/v1/payments/" + f.settledTrxID + "/refunds"
	refund := func(key string) (*paygate.Response, error) {
		return c.Do(ctx, http.MethodPost, target, []byte(`{}`), http.Header{"Idempotency-Key": {key}})
	}
	type answer struct {
		resp *paygate.Response
		err  error
	}
	first := make(chan answer, 1)
	go func() { resp, err := refund("first"); first <- answer{resp, err} }()
	<-w.created
	if other, err := refund("other"); err != nil || other.StatusCode != http.StatusOK {
		t.Fatalf("another refund of it all: %v %+v", err, other)
	}
	r.mu.Lock()
	r.armed = true
	r.mu.Unlock()
	retry := make(chan answer, 1)
	go func() { resp, err := refund("first"); retry <- answer{resp, err} }()
	select {
	case a := <-retry:
		close(w.release)
		t.Fatalf("the retry answered while the first try was creating: %v %+v", a.err, a.resp)
	case <-r.polled:
	}
	close(w.release)
	a, b := <-first, <-retry
	if a.err != nil || a.resp.StatusCode != http.StatusOK {
		t.Fatalf("first try: %v %+v", a.err, a.resp)
	}
	if b.err != nil || b.resp.StatusCode != http.StatusOK || string(b.resp.Body) != string(a.resp.Body) || b.resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %v %+v\nfirst try %s", b.err, b.resp, a.resp.Body)
	}
	if again, err := refund("first"); err != nil || string(again.Body) != string(a.resp.Body) {
		t.Fatalf("replay: %v %+v\nfirst try %s", err, again, a.resp.Body)
	}
}

// TestKeyReleasedOrStale: a try that ends with a server error releases its key, and the next
// request runs at once; a key whose holder died (claimed, never answered nor released) makes a
// retry wait, and answer 409 when its wait runs out, until the claim is createTimeout old by the
// server's clock: the retry then holds the key and creates the refund the claim names.
func TestKeyReleasedOrStale(t *testing.T) {
	w := &heldWriter{created: make(chan struct{}), release: make(chan struct{}), fail: 1}
	close(w.release)
	f := newRefundFixture(t, func(o *Options) { w.Writer, o.Writer = o.Writer, w })
	f.api.claimWaitLimit = 300 * time.Millisecond
	ctx := t.Context()
	c := f.as(t, f.duka, true)
	target := "/api/v1/payments/" + f.settledTrxID + "/refunds"
	refund := func(key, body string) (*paygate.Response, error) {
		return c.Do(ctx, http.MethodPost, target, []byte(body), http.Header{"Idempotency-Key": {key}})
	}

	failed, err := refund("released", `{"amount":100}`)
	if err != nil || failed.StatusCode != http.StatusInternalServerError {
		t.Fatalf("the failing try: %v %+v", err, failed)
	}
	if again, err := refund("released", `{"amount":100}`); err != nil || again.StatusCode != http.StatusOK || again.Header.Get("Idempotent-Replayed") == "true" {
		t.Fatalf("the retry after a released key: %v %+v", err, again)
	}

	// A holder that died after claiming: the record, and nothing else.
	body := `{"amount":200}`
	sum := sha256.Sum256([]byte(http.MethodPost + " " + target + "\n" + body))
	var m paygatev1.Merchant
	if err := f.k8s.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "duka"}, &m); err != nil {
		t.Fatal(err)
	}
	name := idempotencyName(&caller{merchant: &m, env: paygatev1.EnvironmentSandbox}, "died")
	rec := &paygatev1.IdempotencyKey{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: paygatev1.IdempotencyKeySpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			RequestHash: hex.EncodeToString(sum[:]), ExpiresAt: metav1.NewTime(f.clock.Now().Add(idempotencyRetention))},
	}
	if err := f.k8s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	busy, err := refund("died", body)
	if err != nil || busy.StatusCode != http.StatusConflict || !strings.Contains(string(busy.Body), "still running") {
		t.Fatalf("a retry while the claim is fresh: %v %+v", err, busy)
	}
	f.clock.Step(createTimeout)
	took, err := refund("died", body)
	if err != nil || took.StatusCode != http.StatusOK {
		t.Fatalf("a retry once the claim is stale: %v %+v", err, took)
	}
	if err := f.k8s.Get(ctx, client.ObjectKeyFromObject(rec), rec); err != nil {
		t.Fatal(err)
	}
	if want := refundIDForKey(name, rec); !strings.Contains(string(took.Body), want) {
		t.Errorf("the retry created %s, want the claim's refund %s", took.Body, want)
	}
	if again, err := refund("died", body); err != nil || string(again.Body) != string(took.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %v %+v", err, again)
	}
}
