// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package paygate_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/webhook"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/pkg/paygate/signing"
)

var (
	whSecret = []byte("whsec_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ")
	whNow    = time.Unix(1793613600, 0)
	whBody   = []byte(`{"id":"evt_3f2a9c0d1e8b47a6b5c4d3e2f1a0b9c8","type":"payment.completed","api_version":"2026-11-01","created_at":"2026-11-02T10:00:00.000000+00:00","data":{"trx_id":"trx-7hq2m","merchant_ref":"order-1001","status":"completed","amount":{"value":1500.00,"currency":"TZS"},"settlement":{"gross":{"value":1500.00,"currency":"TZS"},"fees":{"value":45.00,"currency":"TZS"},"net":{"value":1455.00,"currency":"TZS"}},"customer":{"name":"Asha Mushi","email":"asha@example.com","phone":"+255712345678"},"environment":"sandbox"}}`)
)

func hexMAC(secret []byte, ts string, body []byte) string {
	return signing.SignWebhook(secret, ts, body)
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
	// The test vector of docs/webhooks-receiver.md.
	const vector = "5501a0f23debb8b3e94630431f4ad9e1ed0eeb6ade5a3a89cd53b448ac19aa35"
	if got := hexMAC([]byte("whsec_test"), "1793613600", []byte(`{"id":"evt_test"}`)); got != vector {
		t.Fatalf("signature of the documented test vector = %s, want %s", got, vector)
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

// TestWebhookVerifyMessages pins the messages of Verify's errors: they name the header at fault.
func TestWebhookVerifyMessages(t *testing.T) {
	valid := func() http.Header { return signedHeader(whSecret, whNow, "payment.completed", whBody) }
	with := func(k, v string) http.Header { h := valid(); h.Set(k, v); return h }
	without := func(k string) http.Header { h := valid(); h.Del(k); return h }
	cases := []struct {
		name   string
		v      paygate.WebhookVerifier
		header http.Header
		want   string
	}{
		{"no secret", paygate.WebhookVerifier{}, valid(), "paygate: invalid webhook signature: no webhook signing secret is configured"},
		{"missing timestamp", verifier(), without("X-Paygate-Timestamp"), "paygate: invalid webhook timestamp: X-Paygate-Timestamp is missing"},
		{"malformed timestamp", verifier(), with("X-Paygate-Timestamp", "17e8"), "paygate: invalid webhook timestamp: X-Paygate-Timestamp is not a Unix time in seconds"},
		{"old", verifier(), signedHeader(whSecret, whNow.Add(-time.Hour), "payment.completed", whBody), "paygate: invalid webhook timestamp: X-Paygate-Timestamp is older than 5m0s"},
		{"future", verifier(), signedHeader(whSecret, whNow.Add(time.Hour), "payment.completed", whBody), "paygate: invalid webhook timestamp: X-Paygate-Timestamp is more than 5m0s in the future"},
		{"missing signature", verifier(), without("X-Paygate-Signature"), "paygate: invalid webhook signature: X-Paygate-Signature is missing"},
		{"malformed signature", verifier(), with("X-Paygate-Signature", "abcd"), "paygate: invalid webhook signature: X-Paygate-Signature is not 64 hexadecimal characters"},
		{"mismatch", verifier(), with("X-Paygate-Signature", hexMAC([]byte("whsec_other"), strconv.FormatInt(whNow.Unix(), 10), whBody)), "paygate: invalid webhook signature: X-Paygate-Signature does not match the body"},
	}
	for _, c := range cases {
		if _, err := c.v.Verify(c.header, whBody); err == nil || err.Error() != c.want {
			t.Errorf("%s: Verify = %v, want %q", c.name, err, c.want)
		}
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

	// Another brand word: the sender's header names are the verifier's.
	v.Brand = "acmepay"
	branded := httptest.NewServer(v.Handler(func(_ context.Context, e *paygate.WebhookEvent) error { return nil }))
	defer branded.Close()
	s = webhook.NewSender(webhook.Options{Timeout: 5 * time.Second, Guard: webhook.Guard{AllowPrivate: true}, BrandWord: "acmepay"})
	d.URL, d.Secret = branded.URL+"/hooks", whSecret
	if o := s.Send(context.Background(), d, whNow); !o.Delivered || o.StatusCode != 200 {
		t.Errorf("brand acmepay outcome = %+v", o)
	}
}
