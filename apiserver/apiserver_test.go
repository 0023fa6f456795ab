// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

func TestTrxID(t *testing.T) {
	a := TrxID("uid-1", paygatev1.EnvironmentSandbox, "order-1")
	if !trxIDPattern.MatchString(a) {
		t.Fatalf("TrxID %q does not match the issued pattern", a)
	}
	for name, other := range map[string]string{
		"same input":        TrxID("uid-1", paygatev1.EnvironmentSandbox, "order-1"),
		"other reference":   TrxID("uid-1", paygatev1.EnvironmentSandbox, "order-2"),
		"other environment": TrxID("uid-1", paygatev1.EnvironmentProduction, "order-1"),
		"other merchant":    TrxID("uid-2", paygatev1.EnvironmentSandbox, "order-1"),
	} {
		if (name == "same input") != (other == a) {
			t.Errorf("%s: TrxID %q vs %q", name, other, a)
		}
	}
}

func TestRequestTarget(t *testing.T) {
	for _, tc := range []struct{ uri, want string }{
		{"/api/v1/payments?limit=5&status=pending", "/api/v1/payments?limit=5&status=pending"},
		{"/api/v1/payments/abc%2Fdef%20x", "/api/v1/payments/abc%2Fdef%20x"},
		{"http://pay.example/api/v1/site-info?x=1", "/api/v1/site-info?x=1"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RequestURI = tc.uri
		if got := requestTarget(r); got != tc.want {
			t.Errorf("requestTarget(%q) = %q, want %q", tc.uri, got, tc.want)
		}
	}
}

func TestQueryInt(t *testing.T) {
	for _, tc := range []struct {
		raw     string
		want    int
		invalid bool
	}{{"", 20, false}, {"1", 1, false}, {"100", 100, false}, {"0", 20, true}, {"101", 20, true}, {"x", 20, true}, {"-1", 20, true}} {
		v := validation{}
		got := queryInt(v, tc.raw, "limit", 20, 1, 100)
		if got != tc.want || v.has("limit") != tc.invalid {
			t.Errorf("queryInt(%q) = %d (invalid %v), want %d (invalid %v)", tc.raw, got, v.has("limit"), tc.want, tc.invalid)
		}
	}
}

func TestUnknownRoutesAndPanicsAnswerInTheErrorShape(t *testing.T) {
	s := New(Options{CheckoutKey: make([]byte, 32)})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/nope", nil))
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"error":"NOT_FOUND"`) {
		t.Fatalf("unknown route: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPatch, "/api/v1/payments", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") == "" {
		t.Fatalf("wrong method: %d %v", rec.Code, rec.Header())
	}
	s.mux.HandleFunc("/boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/boom", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"error":"SERVER_ERROR"`) || strings.Contains(rec.Body.String(), "boom") {
		t.Fatalf("panic: %d %s", rec.Code, rec.Body)
	}
}
