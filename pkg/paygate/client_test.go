// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package paygate_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/pkg/paygate/signing"
)

var testCreds = paygate.Credentials{Environment: "sandbox", MerchantKey: "biz_1", APIKey: "pk_1", APISecret: "sk_test_51Hx"}

// signedServer answers body to every request whose X-Signature verifies with testCreds, and 401
// to any other.
func signedServer(t *testing.T, body string) *paygate.Client {
	t.Helper()
	now := time.Unix(1700000000, 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		target := r.RequestURI // the client sends the absolute form, to keep the path as signed
		if u, err := url.Parse(target); err == nil && u.IsAbs() {
			target = u.RequestURI()
		}
		if err := signing.VerifyRequest([]byte(testCreds.APISecret), r.Header.Get(signing.SignatureHeader),
			r.Header.Get(signing.TimestampHeader), r.Method, target, raw, now, signing.DefaultTolerance); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"INVALID_SIGNATURE","message":"`+err.Error()+`"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c := paygate.New(srv.URL, testCreds)
	c.Now = func() time.Time { return now }
	return c
}

// TestInitiatePaymentKeepsMoneyExact: the legacy response's info object is untyped, and its
// amounts must come back as the digits sent, not as float64 (1500.10 would print as 1500.1, and
// a large amount would be rounded).
func TestInitiatePaymentKeepsMoneyExact(t *testing.T) {
	for _, amount := range []string{"1500.10", "12345678901234567.89", "0.30", "1500"} {
		c := signedServer(t, `{"payment_url":"https://pay.example/checkout/trx-1","info":{"ref_trx":"order-1",`+
			`"amount":`+amount+`,"merchant_id":9007199254740993,"merchant_payment_method_ids":[1,2]},`+
			`"data":{"trx_id":"trx-1","checkout_url":"https://pay.example/checkout/trx-1"}}`)
		res, err := c.InitiatePayment(context.Background(), paygate.CreatePaymentRequest{
			PaymentAmount: json.Number(amount), CurrencyCode: "TZS", RefTrx: "order-1"}, "order-1")
		if err != nil {
			t.Fatalf("%s: %v", amount, err)
		}
		if got, ok := res.Info["amount"].(json.Number); !ok || got.String() != amount {
			t.Errorf("info.amount = %#v (%T), want json.Number %q", res.Info["amount"], res.Info["amount"], amount)
		}
		if got, ok := res.Info["merchant_id"].(json.Number); !ok || got.String() != "9007199254740993" {
			t.Errorf("info.merchant_id = %#v (%T), want json.Number 9007199254740993", res.Info["merchant_id"], res.Info["merchant_id"])
		}
		if ids, ok := res.Info["merchant_payment_method_ids"].([]any); !ok || len(ids) != 2 || ids[0] != json.Number("1") {
			t.Errorf("info.merchant_payment_method_ids = %#v", res.Info["merchant_payment_method_ids"])
		}
		if res.Data.TrxID != "trx-1" {
			t.Errorf("data = %+v", res.Data)
		}
	}
}

func TestSiteInfoNumbersAreJSONNumbers(t *testing.T) {
	c := signedServer(t, `{"site_name":"Paygate","max_amount":10000000.00}`)
	info, err := c.SiteInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := info["max_amount"].(json.Number); !ok || got.String() != "10000000.00" {
		t.Errorf("max_amount = %#v (%T), want json.Number 10000000.00", info["max_amount"], info["max_amount"])
	}
}

func TestResponseWithTrailingDataIsAnError(t *testing.T) {
	c := signedServer(t, `{"site_name":"Paygate"} {}`)
	if _, err := c.SiteInfo(context.Background()); err == nil {
		t.Fatal("a response with trailing data was accepted")
	}
}

// TestClientSignsAsTheServerVerifies checks the client's signature on a path with a query and an
// encoded segment, and that Sign is signing.SignRequest.
func TestClientSignsAsTheServerVerifies(t *testing.T) {
	c := signedServer(t, `{"status":"pending","trx_id":"abc/def","amount":1000.00,"fee":0.00,"net_amount":1000.00}`)
	v, err := c.VerifyPayment(context.Background(), "abc/def")
	if err != nil {
		t.Fatalf("VerifyPayment: %v", err)
	}
	if v.Amount != "1000.00" || v.Fee != "0.00" || v.NetAmount != "1000.00" {
		t.Errorf("verification = %+v", v)
	}
	c = signedServer(t, `{"status":"success","data":[],"pagination":{"limit":10,"offset":0,"total":0,"count":0}}`)
	if _, err := c.ListPayments(context.Background(), paygate.ListOptions{Limit: 10, Status: "pending"}); err != nil {
		t.Fatalf("ListPayments: %v", err)
	}
	const ts, path = "1700000000", "/api/v1/payments/abc%2Fdef?limit=10&status=pending"
	// printf '%s' '1700000000.GET./api/v1/payments/abc%2Fdef?limit=10&status=pending.' |
	//   openssl dgst -sha256 -hmac 'sk_test_51Hx' -hex
	const want = "sha256=fbd5bb4140a6e37b77dc6d6e2cf4fceab552e8211f7f29f7c6e444a5104e64f9"
	if got := paygate.Sign(testCreds.APISecret, ts, "get", path, nil); got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
}
