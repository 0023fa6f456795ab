// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/pkg/paygate/signing"
)

var (
	testSecret = []byte("whsec_0123456789abcdefghijklmnopqrstuvwxyzABCDEF")
	testBody   = []byte(`{"id":"evt_0123456789abcdef0123456789abcdef","type":"payment.completed","api_version":"2026-11-01","created_at":"2026-11-02T10:00:00.000000+00:00","data":{"trx_id":"trx-1","note":"caf\u00e9 & <b>"}}`)
	testNow    = time.Unix(1793613600, 0)
)

func testDelivery(url string) Delivery {
	return Delivery{
		URL: url, EventID: "evt_0123456789abcdef0123456789abcdef", EventType: "payment.completed",
		Environment: "sandbox", Body: testBody, Secret: testSecret,
	}
}

// localSender may reach httptest servers on 127.0.0.1.
func localSender(timeout time.Duration) *Sender {
	return NewSender(Options{Timeout: timeout, Guard: Guard{AllowPrivate: true}})
}

// checkSafe fails when an outcome's error carries the secret or the signature.
func checkSafe(t *testing.T, o Outcome) {
	t.Helper()
	sig := signing.SignWebhook(testSecret, o.Timestamp, testBody)
	if strings.Contains(o.Error, string(testSecret)) || strings.Contains(o.Error, sig) || strings.Contains(o.Error, "whsec_") {
		t.Errorf("outcome error leaks the secret or signature: %q", o.Error)
	}
	if len(o.Error) > MaxErrorLen {
		t.Errorf("outcome error is %d bytes", len(o.Error))
	}
}

func TestSendDeliversExactBodyAndHeaders(t *testing.T) {
	var (
		mu   sync.Mutex
		got  []byte
		hdr  http.Header
		meth string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, hdr, meth = b, r.Header.Clone(), r.Method
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	o := localSender(0).Send(context.Background(), testDelivery(srv.URL+"/hooks?shop=1"), testNow)
	if !o.Delivered || o.StatusCode != 200 || o.Error != "" {
		t.Fatalf("outcome = %+v", o)
	}
	if o.Timestamp != "1793613600" || o.Duration <= 0 {
		t.Errorf("timestamp %q, duration %v", o.Timestamp, o.Duration)
	}
	mu.Lock()
	defer mu.Unlock()
	if meth != http.MethodPost {
		t.Errorf("method %s", meth)
	}
	if !bytes.Equal(got, testBody) {
		t.Errorf("body differs:\n got %s\nwant %s", got, testBody)
	}
	for k, want := range map[string]string{
		"X-Paygate-Event":     "payment.completed",
		"X-Paygate-Timestamp": "1793613600",
		"X-Paygate-Event-Id":  "evt_0123456789abcdef0123456789abcdef",
		"X-Environment":       "sandbox",
		"Content-Type":        "application/json",
		"User-Agent":          DefaultUserAgent,
	} {
		if v := hdr.Get(k); v != want {
			t.Errorf("%s = %q; want %q", k, v, want)
		}
	}
	sig := hdr.Get("X-Paygate-Signature")
	if err := signing.VerifyWebhook(testSecret, sig, hdr.Get("X-Paygate-Timestamp"), got, testNow.Add(time.Minute), signing.WebhookMaxAge); err != nil {
		t.Errorf("signature does not verify: %v", err)
	}
	if err := signing.VerifyWebhook([]byte("whsec_other"), sig, hdr.Get("X-Paygate-Timestamp"), got, testNow, signing.WebhookMaxAge); err == nil {
		t.Error("signature verifies with another secret")
	}
	if strings.Contains(strings.Join(hdr.Values("X-Paygate-Signature"), ""), string(testSecret)) {
		t.Error("secret sent")
	}
}

func TestSendStatusCodes(t *testing.T) {
	for _, c := range []struct {
		code      int
		delivered bool
		err       string
	}{
		{200, true, ""},
		{202, true, ""},
		{204, true, ""},
		{299, true, ""},
		{400, false, "HTTP 400"},
		{404, false, "HTTP 404"},
		{500, false, "HTTP 500"},
		{503, false, "HTTP 503"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(c.code)
			if c.code != 204 {
				io.WriteString(w, strings.Repeat("x", 200<<10)) // larger than what is read
			}
		}))
		o := localSender(5*time.Second).Send(context.Background(), testDelivery(srv.URL), testNow)
		srv.Close()
		if o.Delivered != c.delivered || o.StatusCode != c.code || o.Error != c.err {
			t.Errorf("%d: outcome = %+v; want delivered %v, error %q", c.code, o, c.delivered, c.err)
		}
		checkSafe(t, o)
	}
}

func TestSendDoesNotFollowRedirects(t *testing.T) {
	var targetHits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		targetHits.Add(1)
	}))
	defer target.Close()
	for _, code := range []int{301, 302, 303, 307, 308} {
		src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/elsewhere", code)
		}))
		o := localSender(5*time.Second).Send(context.Background(), testDelivery(src.URL), testNow)
		src.Close()
		if o.Delivered || o.StatusCode != code || o.Error != "redirect "+strconv.Itoa(code)+" not followed" {
			t.Errorf("%d: outcome = %+v", code, o)
		}
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("the redirect target was hit %d times", n)
	}
}

func TestSendTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	o := localSender(200*time.Millisecond).Send(context.Background(), testDelivery(srv.URL), testNow)
	if o.Delivered || o.StatusCode != 0 || o.Error != "timeout after 200ms" {
		t.Errorf("outcome = %+v", o)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("took %v", el)
	}
	checkSafe(t, o)
}

func TestSendConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	o := localSender(2*time.Second).Send(context.Background(), testDelivery("http://"+addr+"/hooks"), testNow)
	if o.Delivered || o.StatusCode != 0 || o.Error != "connection refused" {
		t.Errorf("outcome = %+v", o)
	}
	checkSafe(t, o)
}

func TestSendRefusesBadURLsWithoutARequest(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	s := localSender(2 * time.Second)
	for _, c := range []struct {
		url        string
		production bool
		want       string
	}{
		{srv.URL + "/hooks", true, "https in production"},
		{"HTTP://" + host + "/hooks", true, "https in production"},
		{"http://user:pass@" + host + "/hooks", false, "user info"},
		{"https://user@" + host + "/hooks", false, "user info"},
		{"ftp://" + host + "/hooks", false, "absolute http or https"},
		{"/hooks", false, "absolute http or https"},
		{host + "/hooks", false, "absolute http or https"},
		{"http:" + host, false, "absolute http or https"},
		{"http:///hooks", false, "host"},
		{"http://%zz", false, "not a valid"},
	} {
		d := testDelivery(c.url)
		d.Production = c.production
		o := s.Send(context.Background(), d, testNow)
		if o.Delivered || o.StatusCode != 0 || !strings.Contains(o.Error, c.want) {
			t.Errorf("%s: outcome = %+v; want error containing %q", c.url, o, c.want)
		}
		if strings.Contains(o.Error, "pass") {
			t.Errorf("%s: error repeats the URL: %q", c.url, o.Error)
		}
	}
	d := testDelivery(srv.URL)
	d.Secret = nil
	if o := s.Send(context.Background(), d, testNow); o.Delivered || !strings.Contains(o.Error, "secret") {
		t.Errorf("no secret: outcome = %+v", o)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}

func TestSendProductionHTTPS(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	defer srv.Close()

	// An untrusted certificate is a TLS failure.
	s := localSender(2 * time.Second)
	d := testDelivery(srv.URL + "/hooks")
	d.Production, d.Environment = true, "production"
	o := s.Send(context.Background(), d, testNow)
	if o.Delivered || o.Error != "TLS: certificate signed by an unknown authority" {
		t.Errorf("untrusted: outcome = %+v", o)
	}
	checkSafe(t, o)

	// Trusting the test certificate, production https is delivered.
	s.client.Transport.(*http.Transport).TLSClientConfig.RootCAs = srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	o = s.Send(context.Background(), d, testNow)
	if !o.Delivered || o.StatusCode != 204 {
		t.Errorf("trusted: outcome = %+v", o)
	}
	if hits.Load() != 1 {
		t.Errorf("hits = %d", hits.Load())
	}

	// A plain-HTTP receiver behind an https URL.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	d.URL = strings.Replace(plain.URL, "http://", "https://", 1)
	if o := s.Send(context.Background(), d, testNow); o.Delivered || !strings.HasPrefix(o.Error, "TLS: ") {
		t.Errorf("plain behind https: outcome = %+v", o)
	}
}

func TestSendDefaultGuardBlocksLoopback(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	s := NewSender(Options{Timeout: 2 * time.Second})
	for _, u := range []string{srv.URL, "http://localhost:" + port, "http://[::1]:" + port, "http://[::ffff:127.0.0.1]:" + port} {
		o := s.Send(context.Background(), testDelivery(u), testNow)
		if o.Delivered || o.StatusCode != 0 || !strings.HasPrefix(o.Error, "blocked: webhook target ") || !strings.Contains(o.Error, "loopback") {
			t.Errorf("%s: outcome = %+v", u, o)
		}
	}
	o := s.Send(context.Background(), testDelivery("http://169.254.169.254/latest/meta-data/"), testNow)
	if o.Error != "blocked: webhook target 169.254.169.254 is a cloud metadata address; refused" {
		t.Errorf("metadata: outcome = %+v", o)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the loopback server", n)
	}
}

func TestSendIgnoresEnvironmentProxy(t *testing.T) {
	var proxyHits atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { proxyHits.Add(1) }))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	if o := localSender(2*time.Second).Send(context.Background(), testDelivery(srv.URL), testNow); !o.Delivered {
		t.Errorf("outcome = %+v", o)
	}
	if proxyHits.Load() != 0 || hits.Load() != 1 {
		t.Errorf("proxy hits %d, receiver hits %d", proxyHits.Load(), hits.Load())
	}
}

func TestSendCanceledContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if o := localSender(2*time.Second).Send(ctx, testDelivery(srv.URL), testNow); o.Delivered || o.Error != "canceled" {
		t.Errorf("outcome = %+v", o)
	}
}

func TestBrandWordInHeaderNames(t *testing.T) {
	var hdr http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hdr = r.Header.Clone() }))
	defer srv.Close()
	s := NewSender(Options{Guard: Guard{AllowPrivate: true}, BrandWord: "AcmePay", UserAgent: "AcmePay-Hooks/2"})
	if o := s.Send(context.Background(), testDelivery(srv.URL), testNow); !o.Delivered {
		t.Fatalf("outcome = %+v", o)
	}
	for _, k := range []string{"X-Acmepay-Event", "X-Acmepay-Timestamp", "X-Acmepay-Signature", "X-Acmepay-Event-Id"} {
		if hdr.Get(k) == "" {
			t.Errorf("%s missing", k)
		}
	}
	if hdr.Get("X-Paygate-Signature") != "" || hdr.Get("User-Agent") != "AcmePay-Hooks/2" {
		t.Errorf("headers %v", hdr)
	}
	if err := signing.VerifyWebhook(testSecret, hdr.Get("X-Acmepay-Signature"), hdr.Get("X-Acmepay-Timestamp"), testBody, testNow, signing.WebhookMaxAge); err != nil {
		t.Error(err)
	}

	// An unusable brand word falls back to the default.
	s = NewSender(Options{BrandWord: "Pay Gate\r\n"})
	if s.hdrEvent != "X-Paygate-Event" {
		t.Errorf("fallback header %q", s.hdrEvent)
	}
}

func TestBound(t *testing.T) {
	long := strings.Repeat("é", 300)
	b := bound(long)
	if len(b) > MaxErrorLen || !strings.HasSuffix(b, "…") {
		t.Errorf("bound: %d bytes %q", len(b), b)
	}
	if got := bound("a\r\nb\x00"); got != "a  b " {
		t.Errorf("bound control chars = %q", got)
	}
}
