// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package paygate_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/signature"
	"github.com/paygate/paygate/internal/webhook"
	"github.com/paygate/paygate/pkg/paygate"
)

var (
	whSecret = []byte("whsec_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ")
	whNow    = time.Unix(1793613600, 0)
	whBody   = []byte(`{"id":"evt_3f2a9c0d1e8b47a6b5c4d3e2f1a0b9c8","type":"payment.completed","api_version":"2026-11-01","created_at":"2026-11-02T10:00:00.000000+00:00","data":{"trx_id":"trx-7hq2m","merchant_ref":"order-1001","status":"completed","amount":{"value":1500.00,"currency":"TZS"},"settlement":{"gross":{"value":1500.00,"currency":"TZS"},"fees":{"value":45.00,"currency":"TZS"},"net":{"value":1455.00,"currency":"TZS"}},"customer":{"name":"Asha Mushi","email":"asha@example.com","phone":"+255712345678"},"environment":"sandbox"}}`)
)

func hexMAC(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func signedHeader(secret []byte, at time.Time, eventType string, body []byte) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	h := http.Header{}
	h.Set("X-Paygate-Event", eventType)
	h.Set("X-Paygate-Timestamp", ts)
	h.Set("X-Paygate-Signature", hexMAC(secret, ts, body))
	h.Set("X-Paygate-Event-Id", "evt_3f2a9c0d1e8b47a6b5c4d3e2f1a0b9c8")
	h.Set("X-Environment", "sandbox")
	return h
}

func verifier() paygate.WebhookVerifier {
	return paygate.WebhookVerifier{Secret: whSecret, Now: func() time.Time { return whNow }}
}

func TestWebhookVerifyValid(t *testing.T) {
	h := signedHeader(whSecret, whNow, "payment.completed", whBody)
	// Paygate's own signer produces the same header value.
	if want := signature.SignWebhook(whSecret, h.Get("X-Paygate-Timestamp"), whBody); h.Get("X-Paygate-Signature") != want {
		t.Fatalf("test signer differs from internal/signature")
	}
	e, err := verifier().Verify(h, whBody)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if e.ID != "evt_3f2a9c0d1e8b47a6b5c4d3e2f1a0b9c8" || e.Type != paygate.EventPaymentCompleted || e.APIVersion != "2026-11-01" || e.CreatedAt == "" {
		t.Errorf("event = %+v", e)
	}
	d, err := e.PaymentData()
	if err != nil {
		t.Fatal(err)
	}
	if d.TrxID != "trx-7hq2m" || d.MerchantRef != "order-1001" || d.Status != "completed" || d.Reason != "" ||
		d.Amount.Value != "1500.00" || d.Amount.Currency != "TZS" || d.Settlement.Fees.Value != "45.00" ||
		d.Settlement.Net.Value != "1455.00" || d.Settlement.Gross.Value != "1500.00" ||
		d.Customer.Phone != "+255712345678" || d.Customer.Email != "asha@example.com" || d.Environment != "sandbox" {
		t.Errorf("data = %+v", d)
	}

	// Upper-case hex, the edge of the window in both directions, and a custom brand.
	h.Set("X-Paygate-Signature", strings.ToUpper(h.Get("X-Paygate-Signature")))
	if _, err := verifier().Verify(h, whBody); err != nil {
		t.Errorf("upper-case hex: %v", err)
	}
	for _, at := range []time.Time{whNow.Add(-5 * time.Minute), whNow.Add(5 * time.Minute)} {
		if _, err := verifier().Verify(signedHeader(whSecret, at, "payment.completed", whBody), whBody); err != nil {
			t.Errorf("timestamp %v from now: %v", at.Sub(whNow), err)
		}
	}
	b := http.Header{}
	ts := strconv.FormatInt(whNow.Unix(), 10)
	b.Set("X-Acme-Event", "payment.completed")
	b.Set("X-Acme-Timestamp", ts)
	b.Set("X-Acme-Signature", hexMAC(whSecret, ts, whBody))
	v := verifier()
	v.Brand = "Acme"
	if _, err := v.Verify(b, whBody); err != nil {
		t.Errorf("brand Acme: %v", err)
	}
}

func TestWebhookVerifyRejects(t *testing.T) {
	valid := func() http.Header { return signedHeader(whSecret, whNow, "payment.completed", whBody) }
	tampered := bytes.Replace(whBody, []byte("1455.00"), []byte("1555.00"), 1)
	cases := []struct {
		name   string
		header http.Header
		body   []byte
		want   error
	}{
		{"tampered body", valid(), tampered, paygate.ErrWebhookSignature},
		{"trailing newline", valid(), append(append([]byte{}, whBody...), '\n'), paygate.ErrWebhookSignature},
		{"wrong secret", signedHeader([]byte("whsec_someoneelse"), whNow, "payment.completed", whBody), whBody, paygate.ErrWebhookSignature},
		{"old timestamp", signedHeader(whSecret, whNow.Add(-5*time.Minute-time.Second), "payment.completed", whBody), whBody, paygate.ErrWebhookTimestamp},
		{"future timestamp", signedHeader(whSecret, whNow.Add(5*time.Minute+time.Second), "payment.completed", whBody), whBody, paygate.ErrWebhookTimestamp},
		{"type mismatch", signedHeader(whSecret, whNow, "payment.failed", whBody), whBody, paygate.ErrWebhookPayload},
		{"missing event header", func() http.Header { h := valid(); h.Del("X-Paygate-Event"); return h }(), whBody, paygate.ErrWebhookPayload},
		{"missing timestamp", func() http.Header { h := valid(); h.Del("X-Paygate-Timestamp"); return h }(), whBody, paygate.ErrWebhookTimestamp},
		{"missing signature", func() http.Header { h := valid(); h.Del("X-Paygate-Signature"); return h }(), whBody, paygate.ErrWebhookSignature},
		{"no headers", http.Header{}, whBody, paygate.ErrWebhookTimestamp},
		{"timestamp not digits", func() http.Header { h := valid(); h.Set("X-Paygate-Timestamp", "-1"); return h }(), whBody, paygate.ErrWebhookTimestamp},
		{"signature prefixed", func() http.Header {
			h := valid()
			h.Set("X-Paygate-Signature", "sha256="+h.Get("X-Paygate-Signature"))
			return h
		}(), whBody, paygate.ErrWebhookSignature},
		{"signature short", func() http.Header { h := valid(); h.Set("X-Paygate-Signature", "abcd"); return h }(), whBody, paygate.ErrWebhookSignature},
		{"timestamp changed", func() http.Header {
			h := valid()
			h.Set("X-Paygate-Timestamp", strconv.FormatInt(whNow.Unix()+1, 10))
			return h
		}(), whBody, paygate.ErrWebhookSignature},
		{"not JSON", signedHeader(whSecret, whNow, "payment.completed", []byte("hello")), []byte("hello"), paygate.ErrWebhookPayload},
		{"no id", signedHeader(whSecret, whNow, "payment.completed", []byte(`{"type":"payment.completed"}`)), []byte(`{"type":"payment.completed"}`), paygate.ErrWebhookPayload},
	}
	for _, c := range cases {
		e, err := verifier().Verify(c.header, c.body)
		if !errors.Is(err, c.want) || e != nil {
			t.Errorf("%s: Verify = %v, %v; want %v", c.name, e, err, c.want)
			continue
		}
		sig := hexMAC(whSecret, c.header.Get("X-Paygate-Timestamp"), c.body)
		if strings.Contains(err.Error(), string(whSecret)) || strings.Contains(err.Error(), sig) {
			t.Errorf("%s: error leaks the secret or the expected signature: %v", c.name, err)
		}
	}
	if _, err := (paygate.WebhookVerifier{}).Verify(valid(), whBody); !errors.Is(err, paygate.ErrWebhookSignature) {
		t.Errorf("no secret: %v", err)
	}
}

func TestWebhookHandler(t *testing.T) {
	var (
		mu  sync.Mutex
		got []*paygate.WebhookEvent
	)
	h := verifier().Handler(func(ctx context.Context, e *paygate.WebhookEvent) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, e)
		return nil
	})
	do := func(method string, header http.Header, body []byte) int {
		r := httptest.NewRequest(method, "/hooks", bytes.NewReader(body))
		for k, vs := range header {
			r.Header[k] = vs
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if c := do(http.MethodPost, signedHeader(whSecret, whNow, "payment.completed", whBody), whBody); c != http.StatusOK {
		t.Errorf("valid: %d", c)
	}
	if len(got) != 1 || got[0].ID != "evt_3f2a9c0d1e8b47a6b5c4d3e2f1a0b9c8" {
		t.Errorf("handled %v", got)
	}
	if c := do(http.MethodPost, signedHeader([]byte("whsec_wrong"), whNow, "payment.completed", whBody), whBody); c != http.StatusUnauthorized {
		t.Errorf("wrong secret: %d", c)
	}
	if c := do(http.MethodPost, signedHeader(whSecret, whNow.Add(-time.Hour), "payment.completed", whBody), whBody); c != http.StatusUnauthorized {
		t.Errorf("old: %d", c)
	}
	if c := do(http.MethodPost, signedHeader(whSecret, whNow, "payment.failed", whBody), whBody); c != http.StatusBadRequest {
		t.Errorf("type mismatch: %d", c)
	}
	if c := do(http.MethodGet, nil, nil); c != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", c)
	}
	big := bytes.Repeat([]byte("a"), paygate.MaxWebhookBody+1)
	if c := do(http.MethodPost, signedHeader(whSecret, whNow, "payment.completed", big), big); c != http.StatusRequestEntityTooLarge {
		t.Errorf("too large: %d", c)
	}
	if len(got) != 1 {
		t.Errorf("handle called %d times", len(got))
	}

	failing := verifier().Handler(func(context.Context, *paygate.WebhookEvent) error { return errors.New("db down") })
	r := httptest.NewRequest(http.MethodPost, "/hooks", bytes.NewReader(whBody))
	r.Header = signedHeader(whSecret, whNow, "payment.completed", whBody)
	w := httptest.NewRecorder()
	failing.ServeHTTP(w, r)
	if w.Code != http.StatusInternalServerError || strings.Contains(w.Body.String(), "db down") {
		t.Errorf("failing handle: %d %q", w.Code, w.Body.String())
	}
}

// TestWebhookSenderToVerifier sends with Paygate's sender to a receiver built on the verifier.
func TestWebhookSenderToVerifier(t *testing.T) {
	var ids []string
	v := paygate.WebhookVerifier{Secret: whSecret, Now: func() time.Time { return whNow.Add(30 * time.Second) }}
	srv := httptest.NewServer(v.Handler(func(_ context.Context, e *paygate.WebhookEvent) error {
		ids = append(ids, e.ID)
		return nil
	}))
	defer srv.Close()
	s := webhook.NewSender(webhook.Options{Timeout: 5 * time.Second, Guard: webhook.Guard{AllowPrivate: true}})
	d := webhook.Delivery{URL: srv.URL + "/hooks", EventID: "evt_3f2a9c0d1e8b47a6b5c4d3e2f1a0b9c8",
		EventType: "payment.completed", Environment: "sandbox", Body: whBody, Secret: whSecret}
	if o := s.Send(context.Background(), d, whNow); !o.Delivered || o.StatusCode != 200 {
		t.Fatalf("outcome = %+v", o)
	}
	d.Secret = []byte("whsec_rotated")
	if o := s.Send(context.Background(), d, whNow); o.Delivered || o.StatusCode != 401 || o.Error != "HTTP 401" {
		t.Errorf("wrong secret outcome = %+v", o)
	}
	if len(ids) != 1 {
		t.Errorf("ids = %v", ids)
	}
	ev, ts, sig := webhook.HeaderNames("")
	pev, pts, psig := paygate.WebhookHeaderNames("")
	if ev != pev || ts != pts || sig != psig {
		t.Errorf("header names differ: %s %s %s / %s %s %s", ev, ts, sig, pev, pts, psig)
	}
}
