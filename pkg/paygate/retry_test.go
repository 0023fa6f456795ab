// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package paygate

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/pkg/paygate/signing"
)

var retryCreds = Credentials{Environment: "sandbox", MerchantKey: "biz_1", APIKey: "pk_1", APISecret: "sk_test_51Hx"}

// answer is what the scripted server does with one attempt.
type answer struct {
	status     int
	retryAfter string // the Retry-After header, when not empty
	body       string
	hangUp     bool // close the connection without an answer
}

func unavailable(msg string) answer {
	return answer{status: 503, body: `{"error":"SERVICE_UNAVAILABLE","message":"` + msg + `"}`}
}

func rateLimited(retryAfter string) answer {
	return answer{status: 429, retryAfter: retryAfter, body: `{"error":"RATE_LIMIT_EXCEEDED","message":"Too many requests."}`}
}

var paymentOK = answer{status: 200, body: `{"status":"success","data":{"trx_id":"trx-1","merchant_ref":"order-1","amount":1500.00},` +
	`"payment_url":"https://pay.example/checkout/trx-1","trx_id":"trx-1"}`}

// attempt is what the server received in one attempt.
type attempt struct {
	method, target, timestamp, signature, idempotencyKey string
	body                                                 []byte
	sigErr                                               error
}

// scriptedServer answers its attempts in turn with script (the last answer repeats) and records
// each. Its client counts time from 1700000000 and steps its clock one second per attempt, so
// every attempt has a timestamp of its own; its sleeps are recorded, never slept.
type scriptedServer struct {
	mu       sync.Mutex
	attempts []attempt
	sleeps   []time.Duration
	client   *Client
}

func newScriptedServer(t *testing.T, script ...answer) *scriptedServer {
	t.Helper()
	s := &scriptedServer{}
	base := time.Unix(1700000000, 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		target := r.RequestURI // the client sends the absolute form, to keep the path as signed
		if u, err := url.Parse(target); err == nil && u.IsAbs() {
			target = u.RequestURI()
		}
		a := attempt{method: r.Method, target: target, timestamp: r.Header.Get(signing.TimestampHeader),
			signature: r.Header.Get(signing.SignatureHeader), idempotencyKey: r.Header.Get("Idempotency-Key"), body: raw}
		a.sigErr = signing.VerifyRequest([]byte(retryCreds.APISecret), a.signature, a.timestamp, r.Method, target, raw,
			base, signing.DefaultTolerance)
		s.mu.Lock()
		n := len(s.attempts)
		s.attempts = append(s.attempts, a)
		s.mu.Unlock()
		ans := script[min(n, len(script)-1)]
		if ans.hangUp {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		if ans.retryAfter != "" {
			w.Header().Set("Retry-After", ans.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ans.status)
		_, _ = io.WriteString(w, ans.body)
	}))
	t.Cleanup(srv.Close)
	c := New(srv.URL, retryCreds)
	// A new connection per attempt: http.Transport itself resends a replayable request whose
	// kept-alive connection fails, which would hide what the client does.
	c.HTTP = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	tick := 0
	c.Now = func() time.Time { tick++; return base.Add(time.Duration(tick) * time.Second) }
	c.sleep = func(ctx context.Context, d time.Duration) error {
		s.mu.Lock()
		s.sleeps = append(s.sleeps, d)
		s.mu.Unlock()
		return ctx.Err()
	}
	s.client = c
	return s
}

func (s *scriptedServer) received() ([]attempt, []time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]attempt(nil), s.attempts...), append([]time.Duration(nil), s.sleeps...)
}

var (
	getPayment = func(ctx context.Context, c *Client) error {
		_, err := c.GetPayment(ctx, "trx-1")
		return err
	}
	createPayment = func(key string) func(context.Context, *Client) error {
		return func(ctx context.Context, c *Client) error {
			_, err := c.CreatePayment(ctx, CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: "order-1"}, key)
			return err
		}
	}
	doGet = func(ctx context.Context, c *Client) error {
		resp, err := c.Do(ctx, http.MethodGet, "/api/v1/payments/trx-1", nil, nil)
		if err == nil && resp.StatusCode != 200 {
			return responseError(resp)
		}
		return err
	}
)

// between is a check that every sleep lies in [lo, hi], one per retry.
func between(lo, hi time.Duration) func([]time.Duration) bool {
	return func(sleeps []time.Duration) bool {
		for _, d := range sleeps {
			if d < lo || d > hi {
				return false
			}
		}
		return true
	}
}

func exactly(want ...time.Duration) func([]time.Duration) bool {
	return func(sleeps []time.Duration) bool {
		if len(sleeps) != len(want) {
			return false
		}
		for i := range want {
			if sleeps[i] != want[i] {
				return false
			}
		}
		return true
	}
}

func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name       string
		script     []answer
		maxRetries int
		call       func(context.Context, *Client) error
		attempts   int                        // what the server must receive
		sleeps     func([]time.Duration) bool // the waits between them
		status     int                        // the *Error's status; 0: success
		label, msg string                     // the *Error's label and message
		transport  bool                       // the error is no answer (not an *Error)
	}{
		{name: "GET retried on 503, then succeeds", script: []answer{unavailable("cache not ready"), paymentOK},
			call: getPayment, attempts: 2, sleeps: between(backoffBase/2, backoffBase)},
		{name: "POST without Idempotency-Key not retried on 503", script: []answer{unavailable("archive down"), paymentOK},
			call: createPayment(""), attempts: 1, sleeps: exactly(), status: 503, label: "SERVICE_UNAVAILABLE", msg: "archive down"},
		{name: "POST with Idempotency-Key retried on 503", script: []answer{unavailable("a"), unavailable("b"), paymentOK},
			call: createPayment("order-1"), attempts: 3, sleeps: func(s []time.Duration) bool {
				return len(s) == 2 && between(backoffBase/2, backoffBase)(s[:1]) && between(backoffBase, 2*backoffBase)(s[1:])
			}},
		{name: "429 waits Retry-After", script: []answer{rateLimited("7"), paymentOK},
			call: getPayment, attempts: 2, sleeps: exactly(7 * time.Second)},
		{name: "429 on a keyed POST waits Retry-After", script: []answer{rateLimited("1"), rateLimited("2"), paymentOK},
			call: createPayment("order-1"), attempts: 3, sleeps: exactly(time.Second, 2*time.Second)},
		{name: "Retry-After at the cap is waited for", script: []answer{rateLimited("30"), paymentOK},
			call: getPayment, attempts: 2, sleeps: exactly(MaxRetryAfter)},
		{name: "Retry-After above the cap is not waited for", script: []answer{rateLimited("31"), paymentOK},
			call: getPayment, attempts: 1, sleeps: exactly(), status: 429, label: "RATE_LIMIT_EXCEEDED"},
		{name: "a malformed Retry-After backs off", script: []answer{{status: 503, retryAfter: "soon", body: `{"error":"SERVICE_UNAVAILABLE"}`}, paymentOK},
			call: getPayment, attempts: 2, sleeps: between(backoffBase/2, backoffBase)},
		{name: "retries exhausted return the last error", script: []answer{unavailable("first"), unavailable("second"), unavailable("third"), paymentOK},
			call: getPayment, attempts: 3, sleeps: between(backoffBase/2, 2*backoffBase), status: 503, label: "SERVICE_UNAVAILABLE", msg: "third"},
		{name: "MaxRetries above the default", script: []answer{unavailable("1"), unavailable("2"), unavailable("3"), unavailable("4"), paymentOK},
			maxRetries: 5, call: getPayment, attempts: 5, sleeps: between(backoffBase/2, 8*backoffBase)},
		{name: "MaxRetries negative turns retries off", script: []answer{unavailable("off"), paymentOK},
			maxRetries: -1, call: getPayment, attempts: 1, sleeps: exactly(), status: 503, label: "SERVICE_UNAVAILABLE", msg: "off"},
		{name: "500 is not retried", script: []answer{{status: 500, body: `{"error":"SERVER_ERROR","message":"x"}`}, paymentOK},
			call: getPayment, attempts: 1, sleeps: exactly(), status: 500, label: "SERVER_ERROR"},
		{name: "a refusal is not retried", script: []answer{{status: 409, body: `{"error":"IDEMPOTENCY_KEY_REUSED","message":"x"}`}, paymentOK},
			call: createPayment("order-1"), attempts: 1, sleeps: exactly(), status: 409, label: "IDEMPOTENCY_KEY_REUSED"},
		{name: "GET retried after no answer", script: []answer{{hangUp: true}, paymentOK},
			call: getPayment, attempts: 2, sleeps: between(backoffBase/2, backoffBase)},
		{name: "POST with Idempotency-Key retried after no answer", script: []answer{{hangUp: true}, paymentOK},
			call: createPayment("order-1"), attempts: 2, sleeps: between(backoffBase/2, backoffBase)},
		{name: "POST without Idempotency-Key not retried after no answer", script: []answer{{hangUp: true}, paymentOK},
			call: createPayment(""), attempts: 1, sleeps: exactly(), transport: true},
		{name: "Do never retries", script: []answer{unavailable("raw"), paymentOK},
			call: doGet, attempts: 1, sleeps: exactly(), status: 503, label: "SERVICE_UNAVAILABLE", msg: "raw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScriptedServer(t, tc.script...)
			s.client.MaxRetries = tc.maxRetries
			err := tc.call(context.Background(), s.client)
			attempts, sleeps := s.received()
			if len(attempts) != tc.attempts {
				t.Errorf("the server received %d attempts, want %d", len(attempts), tc.attempts)
			}
			if !tc.sleeps(sleeps) {
				t.Errorf("waits %v", sleeps)
			}
			var apiErr *Error
			switch {
			case tc.status == 0 && !tc.transport:
				if err != nil {
					t.Errorf("error %v, want success", err)
				}
			case tc.transport:
				if err == nil || errors.As(err, &apiErr) {
					t.Errorf("error %v, want a transport error", err)
				}
			case !errors.As(err, &apiErr):
				t.Errorf("error %v (%T), want an *Error", err, err)
			case apiErr.StatusCode != tc.status || apiErr.Label != tc.label || (tc.msg != "" && apiErr.Message != tc.msg):
				t.Errorf("error %+v, want %d %s %q", apiErr, tc.status, tc.label, tc.msg)
			}
			checkAttempts(t, attempts)
		})
	}
}

// checkAttempts checks that every attempt of one call was signed afresh (its own timestamp, later
// than the one before), that each signature verifies, and that all carried the same request.
func checkAttempts(t *testing.T, attempts []attempt) {
	t.Helper()
	for i, a := range attempts {
		if a.sigErr != nil {
			t.Errorf("attempt %d: signature rejected: %v", i+1, a.sigErr)
		}
		if i == 0 {
			continue
		}
		prev := attempts[i-1]
		ts, _ := strconv.ParseInt(a.timestamp, 10, 64)
		prevTS, _ := strconv.ParseInt(prev.timestamp, 10, 64)
		if ts <= prevTS || a.signature == prev.signature {
			t.Errorf("attempt %d: timestamp %s and signature %s, not fresh after %s and %s", i+1, a.timestamp, a.signature, prev.timestamp, prev.signature)
		}
		if a.method != prev.method || a.target != prev.target || !bytes.Equal(a.body, prev.body) || a.idempotencyKey != prev.idempotencyKey {
			t.Errorf("attempt %d: %s %s %q key %q, unlike attempt %d: %s %s %q key %q", i+1, a.method, a.target, a.body, a.idempotencyKey,
				i, prev.method, prev.target, prev.body, prev.idempotencyKey)
		}
	}
	if len(attempts) > 0 && attempts[0].method == http.MethodPost && len(attempts[0].body) == 0 {
		t.Errorf("a POST arrived without its body")
	}
}

// TestRetryWaitEndsWithTheContext: a context cancelled while the client waits (the real wait, for
// a Retry-After of 20 s) ends the call at once, with an error that wraps both the context's error
// and the server's answer; nothing is sent again.
func TestRetryWaitEndsWithTheContext(t *testing.T) {
	s := newScriptedServer(t, rateLimited("20"), paymentOK)
	s.client.sleep = nil
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	err := getPayment(ctx, s.client)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the call took %v after the context was cancelled at 50ms", took)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want one that wraps context.Canceled", err)
	}
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Label != "RATE_LIMIT_EXCEEDED" {
		t.Errorf("error %v, want one that wraps the 429 answer", err)
	}
	if attempts, _ := s.received(); len(attempts) != 1 {
		t.Errorf("the server received %d attempts, want 1", len(attempts))
	}
}

// TestRetryWaitPastTheDeadlineIsNotStarted: when the wait would outlast the context's deadline,
// the client returns the answer at once rather than wait to fail.
func TestRetryWaitPastTheDeadlineIsNotStarted(t *testing.T) {
	s := newScriptedServer(t, rateLimited("20"), paymentOK)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := getPayment(ctx, s.client)
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the 429 answer alone", err)
	}
	if attempts, sleeps := s.received(); len(attempts) != 1 || len(sleeps) != 0 {
		t.Errorf("%d attempts and waits %v, want 1 attempt and no wait", len(attempts), sleeps)
	}
}

func TestBackoff(t *testing.T) {
	for retry, hi := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second} {
		for range 100 {
			if d := backoff(retry); d < hi/2 || d > hi {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", retry, d, hi/2, hi)
			}
		}
	}
	if d := backoff(1 << 20); d < backoffMax/2 || d > backoffMax {
		t.Errorf("backoff(1<<20) = %v", d)
	}
}

func TestParseRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true}, {"1", time.Second, true}, {" 12 ", 12 * time.Second, true}, {"30", 30 * time.Second, true},
		{"31", 31 * time.Second, true}, {"99999999999999999", MaxRetryAfter + time.Second, true},
		{"", 0, false}, {"-1", 0, false}, {"1.5", 0, false}, {"Wed, 21 Oct 2026 07:28:00 GMT", 0, false},
	} {
		got, ok := parseRetryAfter(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRepeatable(t *testing.T) {
	key := http.Header{"Idempotency-Key": {"k"}}
	for _, tc := range []struct {
		method string
		header http.Header
		want   bool
	}{
		{"GET", nil, true}, {"HEAD", nil, true}, {"get", nil, true},
		{"POST", nil, false}, {"POST", key, true}, {"POST", http.Header{"idempotency-key": {"k"}}, true},
		{"POST", http.Header{"Idempotency-Key": {""}}, false}, {"PUT", key, true}, {"PATCH", key, true},
		{"DELETE", nil, false}, {"DELETE", key, true}, {"OPTIONS", key, false},
	} {
		if got := repeatable(tc.method, tc.header); got != tc.want {
			t.Errorf("repeatable(%s, %v) = %v, want %v", tc.method, tc.header, got, tc.want)
		}
	}
}
