// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package load

import (
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/paygate/paygate/pkg/paygate"
)

// Receiver is a merchant's webhook endpoint: a real HTTP server on a loopback port that verifies
// every delivery's signature with the merchant's signing secret (pkg/paygate's WebhookVerifier)
// and records, for payment events, when the first delivery of each payment's event arrived.
type Receiver struct {
	URL string

	srv       *http.Server
	verifiers []paygate.WebhookVerifier

	mu         sync.Mutex
	deliveries int64
	redelivery int64
	badSig     int64
	seen       map[string]bool            // event ids
	ids        map[string]map[string]bool // "<source id> <type>" -> event ids
	byType     map[string]int64
	completed  map[string]time.Time // trx_id -> first payment.completed
	failed     map[string]time.Time // trx_id -> first payment.failed
}

// NewReceiver listens on a free loopback port; secrets are the signing secrets it trusts.
func NewReceiver(secrets ...[]byte) (*Receiver, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{URL: "http://" + l.Addr().String() + "/hooks/paygate", seen: map[string]bool{},
		ids: map[string]map[string]bool{}, byType: map[string]int64{}, completed: map[string]time.Time{}, failed: map[string]time.Time{}}
	for _, s := range secrets {
		r.verifiers = append(r.verifiers, paygate.WebhookVerifier{Secret: s})
	}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.handle), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(l) }()
	return r, nil
}

// Trust adds a signing secret.
func (r *Receiver) Trust(secret []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.verifiers = append(r.verifiers, paygate.WebhookVerifier{Secret: secret})
}

// Close stops the server.
func (r *Receiver) Close() { _ = r.srv.Close() }

func (r *Receiver) handle(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, paygate.MaxWebhookBody))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	verifiers := r.verifiers
	r.mu.Unlock()
	var ev *paygate.WebhookEvent
	for _, v := range verifiers {
		if ev, err = v.Verify(req.Header, body); err == nil {
			break
		}
	}
	if ev == nil {
		r.mu.Lock()
		r.badSig++
		r.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	source := ""
	if d, err := ev.PaymentData(); err == nil {
		source = d.TrxID
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deliveries++
	if r.seen[ev.ID] {
		r.redelivery++
		w.WriteHeader(http.StatusOK)
		return
	}
	r.seen[ev.ID] = true
	r.byType[ev.Type]++
	if source != "" {
		k := source + " " + ev.Type
		if r.ids[k] == nil {
			r.ids[k] = map[string]bool{}
		}
		r.ids[k][ev.ID] = true
		switch ev.Type {
		case paygate.EventPaymentCompleted:
			if _, ok := r.completed[source]; !ok {
				r.completed[source] = now
			}
		case paygate.EventPaymentFailed:
			if _, ok := r.failed[source]; !ok {
				r.failed[source] = now
			}
		}
	}
	w.WriteHeader(http.StatusOK)
}

// Completed is when the first payment.completed of trxID arrived.
func (r *Receiver) Completed(trxID string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.completed[trxID]
	return t, ok
}

// FailedEvent reports whether a payment.failed of trxID arrived.
func (r *Receiver) FailedEvent(trxID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.failed[trxID]
	return ok
}

// ReceiverCounts are what a receiver saw.
type ReceiverCounts struct {
	Deliveries   int64            `json:"deliveries"`
	Redeliveries int64            `json:"redeliveries"`
	BadSigs      int64            `json:"bad_signatures"`
	EmittedTwice int64            `json:"emitted_twice"` // payment events with two ids for one payment and type
	ByType       map[string]int64 `json:"by_type"`
}

// Counts returns what the receiver saw so far.
func (r *Receiver) Counts() ReceiverCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := ReceiverCounts{Deliveries: r.deliveries, Redeliveries: r.redelivery, BadSigs: r.badSig, ByType: map[string]int64{}}
	for k, v := range r.byType {
		c.ByType[k] = v
	}
	for _, ids := range r.ids {
		if len(ids) > 1 {
			c.EmittedTwice++
		}
	}
	return c
}
