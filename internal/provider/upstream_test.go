// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

const testUpstreamToken = "s3cr3t-upstream-token"

// upstreamFixture serves one canned answer and records what it received.
type upstreamFixture struct {
	mu       sync.Mutex
	requests []recordedRequest
}

type recordedRequest struct {
	Method, RequestURI, EscapedPath, Auth, ContentType string
	Body                                               map[string]any
}

func (f *upstreamFixture) last(t *testing.T) recordedRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		t.Fatal("the server received no request")
	}
	return f.requests[len(f.requests)-1]
}

func newUpstreamFixture(t *testing.T, handler http.HandlerFunc) (*Upstream, *upstreamFixture) {
	t.Helper()
	f := &upstreamFixture{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := recordedRequest{
			Method:      r.Method,
			RequestURI:  r.RequestURI,
			EscapedPath: r.URL.EscapedPath(),
			Auth:        r.Header.Get("Authorization"),
			ContentType: r.Header.Get("Content-Type"),
		}
		if data, _ := io.ReadAll(r.Body); len(data) > 0 {
			_ = json.Unmarshal(data, &rec.Body)
		}
		f.mu.Lock()
		f.requests = append(f.requests, rec)
		f.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	up, err := NewUpstream(UpstreamConfig{BaseURL: srv.URL + "/api/", Token: testUpstreamToken, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return up, f
}

func answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// call runs one of the four Provider methods.
type call struct {
	name string
	do   func(context.Context, *Upstream) (Result, error)
	// path the request must reach (below the base URL) and method.
	method, path string
}

func calls(reference string) []call {
	return []call{
		{"Push", func(ctx context.Context, u *Upstream) (Result, error) {
			return u.Push(ctx, PushRequest{Reference: reference, Phone: "+255712345678", Amount: "1500.00", Currency: "TZS", Gateway: "MPESA_TZ", Description: "Order 7", CallbackURL: "https://paygate.example/internal/provider/callback"})
		}, http.MethodPost, "/api/v1/collections"},
		{"PushStatus", func(ctx context.Context, u *Upstream) (Result, error) {
			return u.PushStatus(ctx, PushRequest{Reference: reference})
		}, http.MethodGet, "/api/v1/collections/" + reference},
		{"Disburse", func(ctx context.Context, u *Upstream) (Result, error) {
			return u.Disburse(ctx, DisbursementRequest{Reference: reference, Phone: "+255712345678", Amount: "1500.00", Currency: "TZS", Gateway: "MPESA_TZ", CallbackURL: "https://paygate.example/cb"})
		}, http.MethodPost, "/api/v1/disbursements"},
		{"DisbursementStatus", func(ctx context.Context, u *Upstream) (Result, error) {
			return u.DisbursementStatus(ctx, DisbursementRequest{Reference: reference})
		}, http.MethodGet, "/api/v1/disbursements/" + reference},
		{"Refund", func(ctx context.Context, u *Upstream) (Result, error) {
			return u.Refund(ctx, testUpstreamRefund(reference))
		}, http.MethodPost, "/api/v1/refunds"},
		{"RefundStatus", func(ctx context.Context, u *Upstream) (Result, error) {
			return u.RefundStatus(ctx, RefundRequest{Reference: reference})
		}, http.MethodGet, "/api/v1/refunds/" + reference},
	}
}

func testUpstreamRefund(reference string) RefundRequest {
	return RefundRequest{Reference: reference, Payment: "shop.trx-1.1", PaymentProvider: "FKC000001", PaymentAmount: "1500.00",
		Phone: "+255712345678", Amount: "500.00", Currency: "TZS", Gateway: "MPESA_TZ", CallbackURL: "https://paygate.example/cb"}
}

func TestUpstreamRefunds(t *testing.T) {
	up, f := newUpstreamFixture(t, answer(http.StatusAccepted, `{"reference":"shop.rf-1.r","status":"INPROGRESS","provider_reference":"FKR1"}`))
	var _ Refunder = up
	if up.RefundScope() != RefundsPartial || RefundScopeOf(up) != RefundsPartial {
		t.Fatalf("refund scope %q", up.RefundScope())
	}
	res, err := up.Refund(context.Background(), testUpstreamRefund("shop.rf-1.r"))
	if err != nil || res != (Result{Status: StatusPending, ProviderReference: "FKR1"}) {
		t.Fatalf("Refund = %+v, %v", res, err)
	}
	req := f.last(t)
	want := map[string]any{
		"reference": "shop.rf-1.r", "collection_reference": "shop.trx-1.1", "collection_provider_reference": "FKC000001",
		"msisdn": "+255712345678", "amount": "500.00", "currency": "TZS", "gateway": "MPESA_TZ", "callback_url": "https://paygate.example/cb",
	}
	if req.Method != http.MethodPost || req.EscapedPath != "/api/v1/refunds" || fmt.Sprint(req.Body) != fmt.Sprint(want) {
		t.Fatalf("request %s %s %v, want the refund body %v", req.Method, req.EscapedPath, req.Body, want)
	}
	// Without the provider's id of the collection, the field is left out; without the
	// collection's reference, nothing is sent.
	r := testUpstreamRefund("shop.rf-1.r")
	r.PaymentProvider = ""
	if _, err := up.Refund(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.last(t).Body["collection_provider_reference"]; ok {
		t.Fatalf("empty collection_provider_reference sent: %v", f.last(t).Body)
	}
	r.Payment = ""
	if _, err := up.Refund(context.Background(), r); err == nil {
		t.Fatal("a refund without the collection's reference was accepted")
	}
	f.mu.Lock()
	sent := len(f.requests)
	f.mu.Unlock()
	if sent != 2 {
		t.Fatalf("%d requests sent, want 2", sent)
	}
}

func TestUpstreamStatusMapping(t *testing.T) {
	tests := []struct {
		wire, code string
		httpStatus int
		want       Result
	}{
		{"INPROGRESS", "", http.StatusAccepted, Result{Status: StatusPending, ProviderReference: "PR1", Message: "m", Remark: "r"}},
		{"SUCCESS", "", http.StatusOK, Result{Status: StatusSuccess, ProviderReference: "PR1", Message: "m", Remark: "r"}},
		{"SUCCESS", "", http.StatusCreated, Result{Status: StatusSuccess, ProviderReference: "PR1", Message: "m", Remark: "r"}},
		{"FAILED", string(paygatev1.FailureInsufficientFunds), http.StatusOK, Result{Status: StatusFailed, ProviderReference: "PR1", Code: paygatev1.FailureInsufficientFunds, Message: "m", Remark: "r"}},
		{"FAILED", "", http.StatusOK, Result{Status: StatusFailed, ProviderReference: "PR1", Code: paygatev1.FailureProviderError, Message: "m", Remark: "r"}},
		{"FAILED", "LIMIT_EXCEEDED", http.StatusOK, Result{Status: StatusFailed, ProviderReference: "PR1", Code: "LIMIT_EXCEEDED", Message: "m", Remark: "r"}},
		{"AMBIGUOUS", "", http.StatusOK, Result{Status: StatusAmbiguous, ProviderReference: "PR1", Message: "m", Remark: "r"}},
	}
	for _, tc := range tests {
		for _, c := range calls("ref-1") {
			t.Run(fmt.Sprintf("%s/%s/%d/%s", c.name, tc.wire, tc.httpStatus, tc.code), func(t *testing.T) {
				httpStatus := tc.httpStatus
				if c.method == http.MethodGet {
					httpStatus = http.StatusOK // status queries always answer 200
				}
				body := fmt.Sprintf(`{"reference":"ref-1","provider_reference":"PR1","status":%q,"code":%q,"message":"m","remark":"r","extra":1}`, tc.wire, tc.code)
				up, f := newUpstreamFixture(t, answer(httpStatus, body))
				got, err := c.do(context.Background(), up)
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if got != tc.want {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
				req := f.last(t)
				if req.Method != c.method || req.EscapedPath != c.path {
					t.Fatalf("request %s %s, want %s %s", req.Method, req.EscapedPath, c.method, c.path)
				}
				if req.Auth != "Bearer "+testUpstreamToken {
					t.Fatalf("Authorization %q", req.Auth)
				}
			})
		}
	}
}

func TestUpstreamRequestBody(t *testing.T) {
	up, f := newUpstreamFixture(t, answer(http.StatusAccepted, `{"reference":"ref-1","status":"INPROGRESS"}`))
	c := calls("ref-1")[0]
	if _, err := c.do(context.Background(), up); err != nil {
		t.Fatal(err)
	}
	req := f.last(t)
	want := map[string]any{
		"reference": "ref-1", "msisdn": "+255712345678", "amount": "1500.00", "currency": "TZS",
		"gateway": "MPESA_TZ", "description": "Order 7", "callback_url": "https://paygate.example/internal/provider/callback",
	}
	if fmt.Sprint(req.Body) != fmt.Sprint(want) {
		t.Fatalf("body %v, want %v", req.Body, want)
	}
	if req.ContentType != "application/json" {
		t.Fatalf("Content-Type %q", req.ContentType)
	}

	c = calls("ref-2")[2]
	up2, f2 := newUpstreamFixture(t, answer(http.StatusAccepted, `{"reference":"ref-2","status":"INPROGRESS"}`))
	if _, err := c.do(context.Background(), up2); err != nil {
		t.Fatal(err)
	}
	if _, ok := f2.last(t).Body["description"]; ok {
		t.Fatalf("disbursement body carries a description: %v", f2.last(t).Body)
	}
	if f2.last(t).Body["amount"] != "1500.00" {
		t.Fatalf("amount %v (must stay a string)", f2.last(t).Body["amount"])
	}
}

func TestUpstreamErrors(t *testing.T) {
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	huge := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"status":"SUCCESS","message":"`+strings.Repeat("x", 2<<20)+`"}`)
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		// only restricts the case to POSTs or GETs; "" for both.
		only string
		// wantUnauthorized: the error is an *UpstreamError for a bad token.
		wantUnauthorized bool
	}{
		{name: "500", handler: answer(500, `{"code":"PROVIDER_ERROR","message":"boom"}`)},
		{name: "502 empty", handler: answer(502, ``)},
		{name: "503 html", handler: answer(503, `<html>down</html>`)},
		{name: "timeout", handler: slow},
		{name: "malformed JSON", handler: answer(200, `{"status":`)},
		{name: "not an object", handler: answer(200, `["SUCCESS"]`)},
		{name: "unknown status", handler: answer(200, `{"reference":"ref-1","status":"DONE"}`)},
		{name: "PENDING is not a wire status", handler: answer(200, `{"reference":"ref-1","status":"PENDING"}`)},
		{name: "missing status", handler: answer(200, `{"reference":"ref-1"}`)},
		{name: "other reference", handler: answer(200, `{"reference":"ref-2","status":"SUCCESS"}`)},
		{name: "oversized body", handler: huge},
		{name: "204", handler: answer(204, ``)},
		{name: "redirect", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		}},
		{name: "401", handler: answer(401, `{"code":"UNAUTHORIZED","message":"bad token"}`), wantUnauthorized: true},
		{name: "403", handler: answer(403, ``), wantUnauthorized: true},
		{name: "409", handler: answer(409, `{"code":"DUPLICATE_REFERENCE","message":"different body"}`)},
		{name: "429", handler: answer(429, `{"code":"RATE_LIMITED"}`)},
		{name: "400 without code", handler: answer(400, `{"message":"nope"}`), only: http.MethodPost},
		{name: "400 not JSON", handler: answer(400, `Bad Request`), only: http.MethodPost},
		// A status query refused with a code says nothing about the operation.
		{name: "400 with code on status query", handler: answer(400, `{"code":"INVALID_REFERENCE"}`), only: http.MethodGet},
		{name: "422 with code on status query", handler: answer(422, `{"code":"INSUFFICIENT_FUNDS"}`), only: http.MethodGet},
		{name: "404 on POST", handler: answer(404, `{"code":"NOT_FOUND"}`), only: http.MethodPost},
	}
	for _, tc := range tests {
		for _, c := range calls("ref-1") {
			if tc.only != "" && tc.only != c.method {
				continue
			}
			t.Run(tc.name+"/"+c.name, func(t *testing.T) {
				up, _ := newUpstreamFixture(t, tc.handler)
				got, err := c.do(context.Background(), up)
				if err == nil {
					t.Fatalf("want an error, got result %+v", got)
				}
				if got != (Result{}) {
					t.Fatalf("an error came with a result %+v", got)
				}
				if errors.Is(err, ErrNotFound) {
					t.Fatalf("must not be ErrNotFound: %v", err)
				}
				if strings.Contains(err.Error(), testUpstreamToken) {
					t.Fatalf("error leaks the token: %v", err)
				}
				var ue *UpstreamError
				if isUE := errors.As(err, &ue); tc.wantUnauthorized != (isUE && ue.Unauthorized()) {
					t.Fatalf("unauthorized = %v, want %v (%v)", isUE && ue.Unauthorized(), tc.wantUnauthorized, err)
				}
			})
		}
	}
}

func TestUpstreamConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	up, err := NewUpstream(UpstreamConfig{BaseURL: base, Token: testUpstreamToken, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls("ref-1") {
		if _, err := c.do(context.Background(), up); err == nil || errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: err = %v", c.name, err)
		}
	}
}

func TestUpstreamCallerContextCancelled(t *testing.T) {
	up, _ := newUpstreamFixture(t, answer(200, `{"reference":"ref-1","status":"SUCCESS"}`))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := up.PushStatus(ctx, PushRequest{Reference: "ref-1"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestUpstreamRejected(t *testing.T) {
	for _, httpStatus := range []int{http.StatusBadRequest, http.StatusUnprocessableEntity} {
		for _, c := range calls("ref-1") {
			if c.method != http.MethodPost {
				continue
			}
			t.Run(fmt.Sprintf("%d/%s", httpStatus, c.name), func(t *testing.T) {
				up, _ := newUpstreamFixture(t, answer(httpStatus, `{"code":"INVALID_ACCOUNT","message":"msisdn not registered"}`))
				got, err := c.do(context.Background(), up)
				if err != nil {
					t.Fatal(err)
				}
				want := Result{Status: StatusFailed, Code: paygatev1.FailureInvalidAccount, Message: "msisdn not registered"}
				if got != want {
					t.Fatalf("got %+v, want %+v", got, want)
				}
			})
		}
	}
}

func TestUpstreamNotFound(t *testing.T) {
	for _, c := range calls("ref-1") {
		if c.method != http.MethodGet {
			continue
		}
		for _, body := range []string{`{"code":"NOT_FOUND","message":"unknown reference"}`, ``} {
			up, _ := newUpstreamFixture(t, answer(http.StatusNotFound, body))
			if _, err := c.do(context.Background(), up); err != ErrNotFound {
				t.Fatalf("%s: err = %v, want ErrNotFound", c.name, err)
			}
		}
	}
}

func TestUpstreamEscapesReference(t *testing.T) {
	const ref = "pay/1 ?#%x"
	up, f := newUpstreamFixture(t, answer(200, `{"reference":"pay/1 ?#%x","status":"SUCCESS"}`))
	for _, c := range calls(ref) {
		if c.method != http.MethodGet {
			continue
		}
		if _, err := c.do(context.Background(), up); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		req := f.last(t)
		wantPath := strings.TrimSuffix(c.path, ref) + "pay%2F1%20%3F%23%25x"
		if req.RequestURI != wantPath {
			t.Fatalf("%s: request URI %q, want %q", c.name, req.RequestURI, wantPath)
		}
	}
}

func TestUpstreamEmptyReference(t *testing.T) {
	up, f := newUpstreamFixture(t, answer(200, `{"status":"SUCCESS"}`))
	for _, c := range calls("") {
		if _, err := c.do(context.Background(), up); err == nil {
			t.Fatalf("%s: empty reference accepted", c.name)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) != 0 {
		t.Fatalf("sent %d requests with an empty reference", len(f.requests))
	}
}

func TestNewUpstreamValidation(t *testing.T) {
	bad := []UpstreamConfig{
		{BaseURL: "", Token: "t"},
		{BaseURL: "mm.example.com", Token: "t"},
		{BaseURL: "/v1", Token: "t"},
		{BaseURL: "ftp://mm.example.com", Token: "t"},
		{BaseURL: "https://", Token: "t"},
		{BaseURL: "https://user:" + testUpstreamToken + "@mm.example.com", Token: "t"},
		{BaseURL: "https://mm.example.com?x=1", Token: "t"},
		{BaseURL: "https://mm.example.com#f", Token: "t"},
		{BaseURL: "https://mm.example.com/ %zz", Token: "t"},
		{BaseURL: "https://mm.example.com", Token: ""},
		{BaseURL: "https://mm.example.com", Token: testUpstreamToken + "\r\nX-Evil: 1"},
		{BaseURL: "https://mm.example.com", Token: "t", Timeout: -time.Second},
	}
	for _, cfg := range bad {
		if _, err := NewUpstream(cfg); err == nil {
			t.Errorf("NewUpstream(%v) accepted", cfg)
		} else if strings.Contains(err.Error(), testUpstreamToken) {
			t.Errorf("error leaks the token: %v", err)
		}
	}
	up, err := NewUpstream(UpstreamConfig{BaseURL: "https://mm.example.com/api/", Token: testUpstreamToken})
	if err != nil {
		t.Fatal(err)
	}
	if up.timeout != DefaultUpstreamTimeout {
		t.Fatalf("default timeout %v", up.timeout)
	}
	for _, s := range []string{fmt.Sprint(up), fmt.Sprintf("%v %+v %#v", up, up, up), fmt.Sprintf("%v %+v %#v", *up, *up, *up),
		fmt.Sprintf("%v %+v %#v %s", UpstreamConfig{Token: testUpstreamToken}, UpstreamConfig{Token: testUpstreamToken}, UpstreamConfig{Token: testUpstreamToken}, UpstreamConfig{Token: testUpstreamToken})} {
		if strings.Contains(s, testUpstreamToken) {
			t.Fatalf("printing leaks the token: %s", s)
		}
	}
}

func TestParseUpstreamStatus(t *testing.T) {
	for wire, want := range map[string]Status{"INPROGRESS": StatusPending, "SUCCESS": StatusSuccess, "FAILED": StatusFailed, "AMBIGUOUS": StatusAmbiguous} {
		got, err := ParseUpstreamStatus(wire)
		if err != nil || got != want {
			t.Fatalf("%s: %v %v", wire, got, err)
		}
		if UpstreamStatus(want) != wire {
			t.Fatalf("UpstreamStatus(%s) = %q", want, UpstreamStatus(want))
		}
	}
	for _, wire := range []string{"", "PENDING", "success", "UNKNOWN"} {
		if _, err := ParseUpstreamStatus(wire); err == nil {
			t.Fatalf("%q accepted", wire)
		}
	}
}
