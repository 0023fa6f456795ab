// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/pkg/paygate"
)

// The API's metrics are global (the process's registry): the tests read how much a counter moved.

func counterValue(c prometheus.Counter) float64 { return testutil.ToFloat64(c) }

// histogramCount is how many observations a histogram series holds.
func histogramCount(t *testing.T, route, method string) uint64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.APIRequestDuration)
	defer reg.Unregister(metrics.APIRequestDuration)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["route"] == route && labels["method"] == method {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

// signedRequest is a request of creds signed at ts, not sent.
func signedRequest(creds paygate.Credentials, method, target, body string, ts time.Time) *http.Request {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	stamp := strconv.FormatInt(ts.Unix(), 10)
	r.Header.Set("X-Environment", creds.Environment)
	r.Header.Set("X-Merchant-Key", creds.MerchantKey)
	r.Header.Set("X-API-Key", creds.APIKey)
	r.Header.Set("X-Timestamp", stamp)
	r.Header.Set("X-Signature", paygate.Sign(creds.APISecret, stamp, method, target, []byte(body)))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

func serve(s *Server, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, r)
	return rec
}

func TestMetricLabels(t *testing.T) {
	for pattern, want := range map[string]string{
		"/api/v1/payments/{trx_id}":         "/api/v1/payments/{trx_id}",
		"/api/v1/payments/{trx_id}/refunds": "/api/v1/payments/{trx_id}/refunds",
		"/api/v1/refunds/{id}":              "/api/v1/refunds/{id}",
		"GET /checkout/{trx_id}":            "/checkout/{trx_id}",
		"POST /internal/provider/callbacks": "/internal/provider/callbacks",
		"/":                                 routeOther,
		"":                                  routeOther,
	} {
		if got := routeLabel(pattern); got != want {
			t.Errorf("routeLabel(%q) = %q, want %q", pattern, got, want)
		}
	}
	for method, want := range map[string]string{"GET": "GET", "POST": "POST", "PATCH": "PATCH", "get": "other", "BREW": "other", "": "other"} {
		if got := methodLabel(method); got != want {
			t.Errorf("methodLabel(%q) = %q, want %q", method, got, want)
		}
	}
	for status, want := range map[int]string{100: "1xx", 200: "2xx", 201: "2xx", 302: "3xx", 404: "4xx", 429: "4xx", 500: "5xx", 503: "5xx", 0: "other", 600: "other", 999: "other"} {
		if got := codeLabel(status); got != want {
			t.Errorf("codeLabel(%d) = %q, want %q", status, got, want)
		}
	}
}

// TestRequestMetrics: every response is counted once under its route pattern, method and status
// class, and timed.
func TestRequestMetrics(t *testing.T) {
	f := newExchangeCluster(t)
	f.api.mux.HandleFunc("/boom/{id}", func(http.ResponseWriter, *http.Request) { panic("boom") })
	now := time.Now()
	for _, tt := range []struct {
		name                string
		req                 *http.Request
		route, method, code string
	}{
		{"a signed read", signedRequest(f.duka, "GET", "/api/v1/payments/"+f.settledTrxID, "", now), "/api/v1/payments/{trx_id}", "GET", "2xx"},
		{"a read of another id", signedRequest(f.duka, "GET", "/api/v1/payments/trx-nope", "", now), "/api/v1/payments/{trx_id}", "GET", "4xx"},
		{"a list", signedRequest(f.duka, "GET", "/api/v1/payments?limit=5", "", now), "/api/v1/payments", "GET", "2xx"},
		{"unauthenticated", httptest.NewRequest("GET", "/api/v1/balance", nil), "/api/v1/balance", "GET", "4xx"},
		{"a method of no route", httptest.NewRequest("DELETE", "/api/v1/payments", nil), "/api/v1/payments", "DELETE", "4xx"},
		{"a made-up method", httptest.NewRequest("BREW", "/api/v1/payments", nil), "/api/v1/payments", "other", "4xx"},
		{"no route", httptest.NewRequest("GET", "/api/v2/payments/123", nil), routeOther, "GET", "4xx"},
		{"a path in another spelling", httptest.NewRequest("GET", "/api/v1//payments/../balance", nil), routeOther, "GET", "4xx"},
		{"health", httptest.NewRequest("GET", "/healthz", nil), "/healthz", "GET", "2xx"},
		{"a checkout page without a signature", httptest.NewRequest("GET", "/checkout/trx-abc", nil), "/checkout/{trx_id}", "GET", "4xx"},
		{"a handler that panicked", httptest.NewRequest("GET", "/boom/7", nil), "/boom/{id}", "GET", "5xx"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			requests := metrics.APIRequests.WithLabelValues(tt.route, tt.method, tt.code)
			before, timedBefore := counterValue(requests), histogramCount(t, tt.route, tt.method)
			rec := serve(f.api, tt.req)
			if got := codeLabel(rec.Code); got != tt.code {
				t.Fatalf("answered %d, want %s: %s", rec.Code, tt.code, rec.Body)
			}
			if d := counterValue(requests) - before; d != 1 {
				t.Errorf("paygate_api_requests_total{route=%q,method=%q,code=%q} moved by %v, want 1", tt.route, tt.method, tt.code, d)
			}
			if d := histogramCount(t, tt.route, tt.method) - timedBefore; d != 1 {
				t.Errorf("paygate_api_request_duration_seconds{route=%q,method=%q} observed %d requests, want 1", tt.route, tt.method, d)
			}
		})
	}
}

// TestMetricLabelsStayBounded: random paths and methods, on routes and off them, never make a
// label value of their own, and never a 5xx.
func TestMetricLabelsStayBounded(t *testing.T) {
	f := newExchangeCluster(t)
	rng := rand.New(rand.NewPCG(15, 15))
	const marker = "zq9x"
	alphabet := []byte("abcXYZ019-_.~%/{}*?&= +;:@!$'()," + "\x00\x7f")
	randomSegment := func() string {
		b := make([]byte, 1+rng.IntN(20))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return marker + string(b)
	}
	prefixes := []string{"/", "/api/v1/", "/api/v1/payments/", "/api/v1/payouts/", "/api/v1/refunds/", "/api/v1/billing/subscriptions/",
		"/checkout/", "/checkout-assets/", "/internal/provider/", "/api/v1/verify-payment/"}
	methods := []string{"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", marker + "M", "get"}
	for i := 0; i < 2000; i++ {
		target := prefixes[rng.IntN(len(prefixes))] + randomSegment()
		if rng.IntN(3) == 0 {
			target += "/" + randomSegment()
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.Method = methods[rng.IntN(len(methods))]
		r.URL.Path, r.URL.RawPath, r.RequestURI = target, "", target
		rec := serve(f.api, r)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: %d %s", r.Method, target, rec.Code, rec.Body)
		}
	}
	// A read of an ID is counted under its pattern.
	if counterValue(metrics.APIRequests.WithLabelValues("/api/v1/payments/{trx_id}", "GET", "4xx")) == 0 {
		t.Error("no read of a random payment ID was counted under /api/v1/payments/{trx_id}")
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.APIRequests, metrics.APIRequestDuration, metrics.APIRateLimited, metrics.APIAuthFailures, metrics.APIIdempotentReplays)
	defer func() {
		for _, c := range []prometheus.Collector{metrics.APIRequests, metrics.APIRequestDuration, metrics.APIRateLimited, metrics.APIAuthFailures, metrics.APIIdempotentReplays} {
			reg.Unregister(c)
		}
	}()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				v := l.GetValue()
				if strings.Contains(v, marker) {
					t.Errorf("%s has a label %s=%q made of a request", mf.GetName(), l.GetName(), v)
				}
				switch l.GetName() {
				case "route":
					routes[v] = true
					if v != routeOther && !strings.HasPrefix(v, "/") {
						t.Errorf("%s: route %q is not a pattern", mf.GetName(), v)
					}
				case "method":
					if methodLabel(v) != v && v != "other" {
						t.Errorf("%s: method %q", mf.GetName(), v)
					}
				case "code":
					if codeLabel(int(v[0]-'0')*100) != v {
						t.Errorf("%s: code %q", mf.GetName(), v)
					}
				}
			}
		}
	}
	// Fewer routes than the Server registers (other tests' /boom/{id} included).
	if len(routes) > 32 {
		t.Errorf("%d route label values: %v", len(routes), routes)
	}
}

// TestAuthFailureMetrics: each way authentication fails is counted under its own reason, and
// under that one only.
func TestAuthFailureMetrics(t *testing.T) {
	now := time.Now()
	get := func(creds paygate.Credentials, mod func(*http.Request)) func(*exchangeFixture) *http.Request {
		return func(*exchangeFixture) *http.Request {
			r := signedRequest(creds, "GET", "/api/v1/balance", "", now)
			if mod != nil {
				mod(r)
			}
			return r
		}
	}
	failingLookups := func(o *Options) {
		o.Cache = interceptor.NewClient(o.Cache.(client.WithWatch), interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if _, ok := list.(*paygatev1.MerchantList); ok {
					return errors.New("the cache is gone")
				}
				return c.List(ctx, list, opts...)
			},
		})
	}
	for _, tt := range []struct {
		reason string
		note   string
		status int
		mods   []func(*Options)
		setup  func(*testing.T, *exchangeFixture)
		req    func(*exchangeFixture) *http.Request
	}{
		{reason: metrics.AuthDuplicateHeaders, note: "X-API-Key twice", status: 401, req: func(f *exchangeFixture) *http.Request {
			return get(f.duka, func(r *http.Request) { r.Header.Add("x-api-key", "other") })(f)
		}},
		{reason: metrics.AuthDuplicateHeaders, note: "X-Business-Key disagreeing", status: 401, req: func(f *exchangeFixture) *http.Request {
			return get(f.duka, func(r *http.Request) { r.Header.Set("X-Business-Key", "test_mk_other") })(f)
		}},
		{reason: metrics.AuthDuplicateHeaders, note: "X-Signature twice", status: 401, req: func(f *exchangeFixture) *http.Request {
			return get(f.duka, func(r *http.Request) { r.Header.Add("X-Signature", "sha256=00") })(f)
		}},
		{reason: metrics.AuthInvalidEnvironment, status: 401, req: func(f *exchangeFixture) *http.Request {
			return get(f.duka, func(r *http.Request) { r.Header.Set("X-Environment", "staging") })(f)
		}},
		{reason: metrics.AuthMissingHeaders, status: 401, req: func(f *exchangeFixture) *http.Request {
			return get(f.duka, func(r *http.Request) { r.Header.Del("X-API-Key") })(f)
		}},
		{reason: metrics.AuthMalformedHeaders, status: 401, req: func(f *exchangeFixture) *http.Request {
			return get(f.duka, func(r *http.Request) { r.Header.Set("X-API-Key", strings.Repeat("k", 129)) })(f)
		}},
		{reason: metrics.AuthLookupFailed, status: 503, mods: []func(*Options){failingLookups}, req: func(f *exchangeFixture) *http.Request {
			return get(f.duka, nil)(f)
		}},
		{reason: metrics.AuthUnknownKey, status: 401, req: func(f *exchangeFixture) *http.Request {
			return get(f.duka, func(r *http.Request) { r.Header.Set("X-Merchant-Key", "test_mk_nobody") })(f)
		}},
		{reason: metrics.AuthCredentialsUnavailable, status: 401, setup: func(t *testing.T, f *exchangeFixture) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: credentials.SecretName("duka", paygatev1.EnvironmentSandbox)}}
			if err := f.k8s.Delete(t.Context(), s); err != nil {
				t.Fatal(err)
			}
		}, req: func(f *exchangeFixture) *http.Request { return get(f.duka, nil)(f) }},
		{reason: metrics.AuthWrongAPIKey, status: 401, req: func(f *exchangeFixture) *http.Request {
			creds := f.duka
			creds.APIKey = "key-wrong"
			return get(creds, nil)(f)
		}},
		{reason: metrics.AuthMissingSignature, status: 401, req: func(f *exchangeFixture) *http.Request {
			return get(f.duka, func(r *http.Request) { r.Header.Del("X-Signature") })(f)
		}},
		{reason: metrics.AuthMalformedTimestamp, status: 401, req: func(f *exchangeFixture) *http.Request {
			return get(f.duka, func(r *http.Request) { r.Header.Set("X-Timestamp", "yesterday") })(f)
		}},
		{reason: metrics.AuthStaleTimestamp, status: 401, req: func(f *exchangeFixture) *http.Request {
			return signedRequest(f.duka, "GET", "/api/v1/balance", "", now.Add(-time.Hour))
		}},
		{reason: metrics.AuthMalformedSignature, status: 401, req: func(f *exchangeFixture) *http.Request {
			return get(f.duka, func(r *http.Request) { r.Header.Set("X-Signature", "md5=abc") })(f)
		}},
		{reason: metrics.AuthBadSignature, status: 401, req: func(f *exchangeFixture) *http.Request {
			creds := f.duka
			creds.APISecret = "secret-wrong"
			return get(creds, nil)(f)
		}},
		{reason: metrics.AuthSuspended, status: 403, setup: func(t *testing.T, f *exchangeFixture) {
			m := &paygatev1.Merchant{}
			if err := f.k8s.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: "duka"}, m); err != nil {
				t.Fatal(err)
			}
			m.Spec.BusinessStatus = paygatev1.BusinessDisabled
			if err := f.k8s.Update(t.Context(), m); err != nil {
				t.Fatal(err)
			}
		}, req: func(f *exchangeFixture) *http.Request { return get(f.duka, nil)(f) }},
		{reason: metrics.AuthPendingApproval, status: 403, req: func(f *exchangeFixture) *http.Request { return get(f.pending, nil)(f) }},
	} {
		t.Run(strings.TrimSpace(tt.reason+" "+tt.note), func(t *testing.T) {
			f := newExchangeCluster(t, tt.mods...)
			if tt.setup != nil {
				tt.setup(t, f)
			}
			before := map[string]float64{}
			for _, reason := range metrics.AuthFailureReasons {
				before[reason] = counterValue(metrics.APIAuthFailures.WithLabelValues(reason))
			}
			rec := serve(f.api, tt.req(f))
			if rec.Code != tt.status {
				t.Fatalf("answered %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			for _, reason := range metrics.AuthFailureReasons {
				want := 0.0
				if reason == tt.reason {
					want = 1
				}
				if d := counterValue(metrics.APIAuthFailures.WithLabelValues(reason)) - before[reason]; d != want {
					t.Errorf("paygate_api_auth_failures_total{reason=%q} moved by %v, want %v", reason, d, want)
				}
			}
		})
	}

	t.Run("a success counts no failure", func(t *testing.T) {
		f := newExchangeCluster(t)
		total := func() (n float64) {
			for _, reason := range metrics.AuthFailureReasons {
				n += counterValue(metrics.APIAuthFailures.WithLabelValues(reason))
			}
			return n
		}
		before := total()
		if rec := serve(f.api, signedRequest(f.duka, "GET", "/api/v1/balance", "", now)); rec.Code != http.StatusOK {
			t.Fatalf("answered %d: %s", rec.Code, rec.Body)
		}
		if d := total() - before; d != 0 {
			t.Errorf("a success moved the auth failures by %v", d)
		}
	})
}

// replicaCount is a ReplicaCounter a test sets.
type replicaCount struct{ n atomic.Int64 }

func (c *replicaCount) Count() int { return int(c.n.Load()) }

// TestRateLimitSharedByReplicas: with N replicas, each allows ceil(limit/N) requests per minute
// per business and client IP, the default limit and a merchant's own alike; every 429 is
// counted under its route, and the answer names the configured limit.
func TestRateLimitSharedByReplicas(t *testing.T) {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name          string
		limit         int  // --rate-limit
		merchant      bool // the request is slow's (1 per minute of its own), else an unknown business's
		replicas      int
		wantAllowed   int
		wantInMessage string
	}{
		{name: "one replica", limit: 120, replicas: 1, wantAllowed: 120, wantInMessage: "at most 120 requests"},
		{name: "no count", limit: 120, replicas: 0, wantAllowed: 120, wantInMessage: "at most 120 requests"},
		{name: "three replicas", limit: 120, replicas: 3, wantAllowed: 40, wantInMessage: "at most 120 requests"},
		{name: "rounded up", limit: 100, replicas: 3, wantAllowed: 34, wantInMessage: "at most 100 requests"},
		{name: "seven replicas", limit: 120, replicas: 7, wantAllowed: 18, wantInMessage: "at most 120 requests"},
		{name: "a merchant's limit below the replicas", limit: 120, merchant: true, replicas: 3, wantAllowed: 1, wantInMessage: "at most 1 requests"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(start)
			n := &replicaCount{}
			n.n.Store(int64(tt.replicas))
			f := newExchangeCluster(t, func(o *Options) {
				o.RateLimitPerMinute, o.Clock, o.Replicas = tt.limit, clk, n
			})
			req := func() *http.Request {
				if tt.merchant {
					return signedRequest(f.slow, "GET", "/api/v1/balance", "", clk.Now())
				}
				return signedRequest(paygate.Credentials{Environment: "sandbox", MerchantKey: "test_mk_nobody", APIKey: "k", APISecret: "s"},
					"GET", "/api/v1/balance", "", clk.Now())
			}
			limited := metrics.APIRateLimited.WithLabelValues("/api/v1/balance")
			before := counterValue(limited)
			allowed := 0
			for ; allowed <= tt.limit; allowed++ {
				rec := serve(f.api, req())
				if rec.Code == http.StatusTooManyRequests {
					if !strings.Contains(rec.Body.String(), tt.wantInMessage) || rec.Header().Get("Retry-After") == "" {
						t.Errorf("429: %v %s", rec.Header(), rec.Body)
					}
					break
				}
			}
			if allowed != tt.wantAllowed {
				t.Errorf("allowed %d of %d with %d replicas, want %d", allowed, tt.limit, tt.replicas, tt.wantAllowed)
			}
			if d := counterValue(limited) - before; d != 1 {
				t.Errorf("paygate_api_rate_limited_total{route=\"/api/v1/balance\"} moved by %v, want 1", d)
			}
		})
	}

	t.Run("the share follows the count", func(t *testing.T) {
		clk := testingclock.NewFakeClock(start)
		n := &replicaCount{}
		n.n.Store(3)
		f := newExchangeCluster(t, func(o *Options) { o.Clock, o.Replicas = clk, n })
		nobody := paygate.Credentials{Environment: "sandbox", MerchantKey: "test_mk_nobody", APIKey: "k", APISecret: "s"}
		drain := func() (allowed int) {
			for ; allowed <= 120; allowed++ {
				if rec := serve(f.api, signedRequest(nobody, "GET", "/api/v1/balance", "", clk.Now())); rec.Code == http.StatusTooManyRequests {
					return allowed
				}
			}
			return allowed
		}
		if got := drain(); got != 40 {
			t.Fatalf("3 replicas: allowed %d, want 40", got)
		}
		n.n.Store(2) // a replica's Lease expired
		clk.Step(time.Minute)
		if got := drain(); got != 60 {
			t.Fatalf("2 replicas, a minute later: allowed %d, want 60", got)
		}
	})
}

// TestIdempotentReplayMetrics: a response replayed for an Idempotency-Key, and one replayed for a
// keyless payout sent again with the same signature, are counted under their route and source.
func TestIdempotentReplayMetrics(t *testing.T) {
	f := newExchangeCluster(t)
	f.enablePayouts(t)
	now := time.Now()
	replays := func(route, source string) float64 {
		return counterValue(metrics.APIIdempotentReplays.WithLabelValues(route, source))
	}
	payment := `{"ref_trx":"order-replay","payment_amount":1500,"currency_code":"TZS","customer_name":"Asha","customer_email":"asha@example.com","customer_phone":"+255712345678"}`
	for _, tt := range []struct {
		name, target, body, key, route, source string
	}{
		{"a payment with an Idempotency-Key", "/api/v1/payments", payment, "order-replay", "/api/v1/payments", metrics.ReplayIdempotencyKey},
		{"a payout with an Idempotency-Key", "/api/v1/payouts", `{"amount":2000}`, "payout-replay", "/api/v1/payouts", metrics.ReplayIdempotencyKey},
		{"a keyless payout sent again", "/api/v1/payouts", `{"amount":2001}`, "", "/api/v1/payouts", metrics.ReplaySignature},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := replays(tt.route, tt.source)
			send := func() *httptest.ResponseRecorder {
				r := signedRequest(f.duka, "POST", tt.target, tt.body, now)
				if tt.key != "" {
					r.Header.Set("Idempotency-Key", tt.key)
				}
				return serve(f.api, r)
			}
			first := send()
			if first.Code >= 300 || first.Header().Get("Idempotent-Replayed") != "" {
				t.Fatalf("first: %d %v %s", first.Code, first.Header(), first.Body)
			}
			if d := replays(tt.route, tt.source) - before; d != 0 {
				t.Fatalf("the first request counted %v replays", d)
			}
			again := send()
			if again.Code != first.Code || again.Header().Get("Idempotent-Replayed") != "true" {
				t.Fatalf("again: %d %v %s", again.Code, again.Header(), again.Body)
			}
			if d := replays(tt.route, tt.source) - before; d != 1 {
				t.Errorf("paygate_api_idempotent_replays_total{route=%q,source=%q} moved by %v, want 1", tt.route, tt.source, d)
			}
		})
	}
}
