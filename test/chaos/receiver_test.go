// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package chaos

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/paygate/paygate/pkg/paygate"
)

// receiver is the merchants' webhook endpoint: a real HTTP server on a fixed loopback port that
// verifies every delivery with the merchant's signing secret and records it (duplicates
// included; a real receiver would de-duplicate on the event id). down takes it off the network
// (the port refuses connections) and up brings it back on the same port.
type receiver struct {
	addr string

	mu         sync.Mutex
	srv        *http.Server
	verifiers  []paygate.WebhookVerifier
	byID       map[string]int // event id -> deliveries received
	types      map[string]string
	badSig     int
	signatures map[string]bool // X-Paygate-Signature values seen (grepped for in logs)
	total      int
	outages    int
	downFor    time.Duration
}

func newReceiver() (*receiver, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{addr: l.Addr().String(), byID: map[string]int{}, types: map[string]string{}, signatures: map[string]bool{}}
	r.serve(l)
	return r, nil
}

func (r *receiver) url() string { return "http://" + r.addr + "/hooks/paygate" }

// trust adds a merchant's webhook signing secret.
func (r *receiver) trust(secret []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.verifiers = append(r.verifiers, paygate.WebhookVerifier{Secret: secret})
}

func (r *receiver) serve(l net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(r.handle), ReadHeaderTimeout: 5 * time.Second}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(l) }()
}

func (r *receiver) handle(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, paygate.MaxWebhookBody))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	_, _, sigHeader := paygate.WebhookHeaderNames("")
	if sig := req.Header.Get(sigHeader); sig != "" {
		r.signatures[sig] = true
	}
	var ev *paygate.WebhookEvent
	for _, v := range r.verifiers {
		if ev, err = v.Verify(req.Header, body); err == nil {
			break
		}
	}
	if ev == nil {
		r.badSig++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	r.byID[ev.ID]++
	r.types[ev.ID] = ev.Type
	w.WriteHeader(http.StatusOK)
}

// down closes the listener and every connection: deliveries get "connection refused".
func (r *receiver) down() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.outages++
	r.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// up listens on the same port again.
func (r *receiver) up() error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := net.Listen("tcp", r.addr)
		if err == nil {
			r.serve(l)
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the receiver's port stayed busy: " + err.Error())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (r *receiver) isUp() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.srv != nil
}

type receiverView struct {
	byID       map[string]int
	types      map[string]string
	badSig     int
	total      int
	signatures []string
}

func (r *receiver) view() receiverView {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := receiverView{byID: map[string]int{}, types: map[string]string{}, badSig: r.badSig, total: r.total}
	for k, n := range r.byID {
		v.byID[k] = n
	}
	for k, t := range r.types {
		v.types[k] = t
	}
	for s := range r.signatures {
		v.signatures = append(v.signatures, s)
	}
	return v
}
