// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/openapitest"
	"github.com/paygate/paygate/pkg/paygate"
)

// signedExchange sends a request signed with creds with exactly the Content-Type given ("" sends
// none), through a lenient validator of the OpenAPI document, and decodes the JSON answer.
func (f *exchangeFixture) signedExchange(t *testing.T, creds paygate.Credentials, method, target, body, contentType string, header http.Header) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("X-Environment", creds.Environment)
	req.Header.Set("X-Merchant-Key", creds.MerchantKey)
	req.Header.Set("X-API-Key", creds.APIKey)
	req.Header.Set("X-Timestamp", ts)
	req.Header.Set("X-Signature", paygate.Sign(creds.APISecret, ts, method, target, []byte(body)))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if header.Get("Transfer-Encoding") == "chunked" {
		req.Body, req.ContentLength = io.NopCloser(strings.NewReader(body)), -1
	}
	hc := &http.Client{Transport: openapitest.NewValidator(t, openAPIDocument, nil).AllowUnknownRoutes()}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	if b, _ := io.ReadAll(resp.Body); json.Unmarshal(b, &out) != nil {
		t.Fatalf("%s %s: not JSON: %s", method, target, b)
	}
	return resp.StatusCode, out
}

func (f *exchangeFixture) payments(t *testing.T) int {
	t.Helper()
	var list paygatev1.PaymentList
	if err := f.k8s.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

func TestBodiesMustBeDeclaredJSON(t *testing.T) {
	f := newExchangeFixture(t)
	const create = `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"REF"}`
	for i, tc := range []struct {
		name, method, target, body, contentType string
		header                                  http.Header
		want                                    int
	}{
		{"no Content-Type", "POST", "/api/v1/payments", create, "", nil, 415},
		{"text/plain", "POST", "/api/v1/payments", create, "text/plain", nil, 415},
		{"a form", "POST", "/api/v1/initiate-payment", create, "application/x-www-form-urlencoded", nil, 415},
		{"a JSON look-alike", "POST", "/api/v1/payments", create, "application/jsonp", nil, 415},
		{"a vendor JSON type", "POST", "/api/v1/payments", create, "application/vnd.api+json", nil, 415},
		{"a chunked body without Content-Type", "POST", "/api/v1/payments", create, "", http.Header{"Transfer-Encoding": {"chunked"}}, 415},
		{"a body on a read", "GET", "/api/v1/payments", `{"x":1}`, "text/plain", nil, 415},
		{"a push body without Content-Type", "POST", "/api/v1/payments/" + f.settledTrxID + "/push", `{}`, "", nil, 415},
		{"application/json", "POST", "/api/v1/payments", create, "application/json", nil, 200},
		{"with a charset", "POST", "/api/v1/payments", create, "application/json; charset=utf-8", nil, 200},
		{"in upper case", "POST", "/api/v1/payments", create, "Application/JSON;charset=UTF-8", nil, 200},
		{"a read without a body ignores Content-Type", "GET", "/api/v1/payments", "", "text/plain", nil, 200},
		{"a read without Content-Type", "GET", "/api/v1/site-info", "", "", nil, 200},
		{"a push without a body needs none", "POST", "/api/v1/payments/" + f.settledTrxID + "/push", "", "", nil, 409},
	} {
		before := f.payments(t)
		body := strings.ReplaceAll(tc.body, "REF", "media-"+strconv.Itoa(i))
		status, out := f.signedExchange(t, f.duka, tc.method, tc.target, body, tc.contentType, tc.header)
		if status != tc.want {
			t.Errorf("%s: status %d, want %d: %v %v", tc.name, status, tc.want, out["error"], out["message"])
			continue
		}
		if tc.want == 415 {
			if out["error"] != "UNSUPPORTED_MEDIA_TYPE" || out["message"] != "Content-Type must be application/json." {
				t.Errorf("%s: body %v", tc.name, out)
			}
			if f.payments(t) != before {
				t.Errorf("%s: a payment was recorded", tc.name)
			}
		}
	}

	// The media type is checked before the credentials: nothing about the caller is looked at.
	wrong := f.duka
	wrong.APIKey = "wrong"
	if status, out := f.signedExchange(t, wrong, "POST", "/api/v1/payments", create, "text/plain", nil); status != 415 {
		t.Errorf("bad credentials and a bad Content-Type: %d %v, want 415", status, out)
	}
	// Hosted checkout's own HTML form posts are not part of /api/v1.
	resp, err := http.Post(f.srv.URL+"/checkout/"+f.settledTrxID+"/pay", "application/x-www-form-urlencoded", strings.NewReader("phone=0712345678"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 415 {
		t.Errorf("a checkout form post got 415")
	}
}

// TestAmountsOutOfRangeAnswerAlikeOnBothCreateRoutes: a number below the minimum or above the
// maximum is 422 INVALID_AMOUNT on both create routes, whatever else the body lacks; an amount
// that is not a number (or has too many decimals) is 422 Validation failed.
func TestAmountsOutOfRangeAnswerAlikeOnBothCreateRoutes(t *testing.T) {
	f := newExchangeFixture(t)
	gw := &paygatev1.Gateway{}
	if err := f.k8s.Get(t.Context(), client.ObjectKey{Name: "tz-mpesa"}, gw); err != nil {
		t.Fatal(err)
	}
	max := paygatev1.Decimal("5000000")
	gw.Spec.MaxAmount = &max
	if err := f.k8s.Update(t.Context(), gw); err != nil {
		t.Fatal(err)
	}
	const legacyFields = `,"success_redirect":"https://shop.example/ok","cancel_redirect":"https://shop.example/no","ipn_url":"https://shop.example/ipn"`
	n := 0
	for _, tc := range []struct {
		amount, label string
		// validBodyOnly: the gateways' limits are checked only once the rest of the body is valid.
		validBodyOnly bool
	}{
		{"0.5", LabelInvalidAmount, false},
		{"0.99", LabelInvalidAmount, false},
		{"0", LabelInvalidAmount, false},
		{"-1", LabelInvalidAmount, false},
		{"-0", LabelInvalidAmount, false},
		{`"-1"`, LabelInvalidAmount, false},
		{`"0.50"`, LabelInvalidAmount, false},
		{"1000000000000000000", LabelInvalidAmount, false}, // 10^18: more than a Payment can hold
		{"99999999999999999999", LabelInvalidAmount, false},
		{"1e25", LabelInvalidAmount, false},
		{"-1e99", LabelInvalidAmount, false},
		{"5000000.01", LabelInvalidAmount, true}, // above the gateway's maxAmount
		{`"abc"`, LabelValidationFailed, false},
		{"true", LabelValidationFailed, false},
		{"1.001", LabelValidationFailed, false},
		{"1e-40", LabelValidationFailed, false},
	} {
		for _, route := range []string{"/api/v1/payments", "/api/v1/initiate-payment"} {
			for _, extra := range []string{"", legacyFields} {
				if tc.validBodyOnly && extra == "" {
					continue
				}
				n++
				body := `{"payment_amount":` + tc.amount + `,"currency_code":"TZS","ref_trx":"amount-` + strconv.Itoa(n) + `"` + extra + `}`
				status, out := f.signedExchange(t, f.duka, "POST", route, body, "application/json", nil)
				if status != http.StatusUnprocessableEntity || out["error"] != tc.label {
					t.Errorf("%s with %s (legacy fields %v): %d %v, want 422 %s", route, tc.amount, extra != "", status, out["error"], tc.label)
					continue
				}
				if errs, _ := out["errors"].(map[string]any); errs["payment_amount"] == nil {
					t.Errorf("%s with %s: no errors.payment_amount: %v", route, tc.amount, out)
				}
			}
		}
	}
	if got := f.payments(t); got != 1 {
		t.Errorf("%d payments stored, want only the fixture's", got)
	}
}
