// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/pkg/paygate"
)

// Handler-level fuzz targets: arbitrary requests through Server.ServeHTTP on the fuzz fixture
// (fuzz_fixture_test.go), each answer checked by checkExchange. Each input gets a fresh fixture,
// so a failing input fails the same way when replayed from testdata/fuzz.

// fuzzAuth says how a fuzzed request authenticates, from a byte of the input:
//   - bits 0-2: whose credentials: duka (sandbox), live, unvetted (KYB pending), pending (not
//     approved) in production; newcomer, slow (1 request a minute) in sandbox; duka's keys sent to
//     production; none at all;
//   - bits 3-4: signed; not signed; a garbled signature; a stale timestamp;
//   - bit 5: no Content-Type of its own (otherwise application/json when there is a body);
//   - bit 6: the body sent chunked.
type fuzzAuth uint8

func (a fuzzAuth) creds(f *fuzzFixture) (paygate.Credentials, bool) {
	switch a & 7 {
	case 0:
		return f.duka, true
	case 1:
		return f.live, true
	case 2:
		return f.unvetted, true
	case 3:
		return f.pending, true
	case 4:
		return f.newcomer, true
	case 5:
		return f.slow, true
	case 6:
		c := f.duka
		c.Environment = string(paygatev1.EnvironmentProduction)
		return c, true
	}
	return paygate.Credentials{}, false
}

// headers builds the request's headers: the credentials and signature a says, then the fuzzed
// lines ("Name: value"), added after them (so a fuzzed X-Signature is a second value).
func (a fuzzAuth) headers(f *fuzzFixture, method, target, lines string, body []byte) http.Header {
	h := http.Header{}
	if creds, ok := a.creds(f); ok {
		h.Set("X-Environment", creds.Environment)
		h.Set("X-Merchant-Key", creds.MerchantKey)
		h.Set("X-API-Key", creds.APIKey)
		now := time.Now()
		if (a>>3)&3 == 3 {
			now = now.Add(-time.Hour)
		}
		ts := strconv.FormatInt(now.Unix(), 10)
		signed := target // what clients sign: the path and query, also of an absolute-form target
		if u, err := url.Parse(target); err == nil && u.IsAbs() {
			signed = u.RequestURI()
		}
		sig := paygate.Sign(creds.APISecret, ts, method, signed, body)
		switch (a >> 3) & 3 {
		case 1:
			ts, sig = "", ""
		case 2:
			sig = sig[:len(sig)-1] + string("10"[sig[len(sig)-1]&1])
		}
		if ts != "" {
			h.Set("X-Timestamp", ts)
			h.Set("X-Signature", sig)
		}
	}
	if a&(1<<5) == 0 && len(body) > 0 {
		h.Set("Content-Type", "application/json")
	}
	for _, line := range strings.Split(lines, "\n") {
		name, value, ok := strings.Cut(line, ":")
		if ok {
			h[http.CanonicalHeaderKey(strings.TrimSpace(name))] = append(h[http.CanonicalHeaderKey(strings.TrimSpace(name))], strings.TrimSpace(value))
		}
	}
	return h
}

func (a fuzzAuth) chunked() bool { return a&(1<<6) != 0 }

// FuzzServeHTTP sends an arbitrary method, target (path and query; {pending}, {settled},
// {payout}, {plan} and {sub} name the fixture's objects), headers and body through the Server,
// signed with a fixture merchant's credentials or not (fuzzAuth). Whatever the request, the
// answer must pass checkExchange: no 5xx or panic, the documented error shape on every refusal,
// nothing written by a refused request or a read.
func FuzzServeHTTP(f *testing.F) {
	const create = `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"order-9","payment_mode":"push","customer_phone":"0712345678"}`
	const legacy = `{"payment_amount":"1500.00","currency_code":"TZS","ref_trx":"order-10","success_redirect":"https://duka.example/ok",` +
		`"cancel_redirect":"https://duka.example/no","ipn_url":"http://127.0.0.1:9/ipn","allow_payment_methods":"mpesa"}`
	for _, seed := range []struct {
		method, target, headers, body string
		auth                          uint8
	}{
		{"POST", "/api/v1/payments", "", create, 0},
		{"POST", "/api/v1/payments", "Idempotency-Key: order-9", create, 0},
		{"POST", "/api/v1/payments", "Idempotency-Key: order-9", create, 1},
		{"POST", "/api/v1/payments", "Idempotency-Key: order-9", create, 2},
		{"POST", "/api/v1/payments", "", create, 1 << 5},
		{"POST", "/api/v1/payments", "Content-Type: text/plain", create, 1 << 5},
		{"POST", "/api/v1/payments", "", create, 1 << 6},
		{"POST", "/api/v1/payments", "", create, 1 << 3},
		{"POST", "/api/v1/payments", "", create, 2 << 3},
		{"POST", "/api/v1/payments", "", create, 3 << 3},
		{"POST", "/api/v1/payments", "", `{"payment_amount":-5,"currency_code":"tzs"}`, 0},
		{"POST", "/api/v1/initiate-payment", "Idempotency-Key: legacy-1", legacy, 0},
		{"POST", "/api/v1/initiate-payment", "", legacy, 3},
		{"GET", "/api/v1/payments?limit=5&offset=1&status=pending&merchant_ref=order-pending", "", "", 0},
		{"GET", "/api/v1/payments?limit=0&offset=-1&status=x", "", "", 0},
		{"GET", "/api/v1/payments/{pending}", "", "", 0},
		{"GET", "/api/v1/payments/{settled}", "", "", 4},
		{"GET", "/api/v1/verify-payment/{settled}", "", "", 0},
		{"POST", "/api/v1/payments/{pending}/push", "", `{"customer_phone":"+255712345678"}`, 0},
		{"POST", "/api/v1/payments/{settled}/push", "", `{}`, 0},
		{"GET", "/api/v1/balance", "", "", 0},
		{"GET", "/api/v1/site-info", "", "", 6},
		{"GET", "/api/v1/openapi.json", "", "", 7},
		{"POST", "/api/v1/payouts/preview", "", `{"amount":2003,"currency_code":"TZS","destination":"0712 345 678"}`, 0},
		{"POST", "/api/v1/payouts", "Idempotency-Key: payout-2", `{"amount":2003}`, 0},
		{"POST", "/api/v1/payouts", "Idempotency-Key: payout-1", `{"amount":5}`, 0},
		{"POST", "/api/v1/payouts", "", `{"amount":99999999}`, 0},
		{"GET", "/api/v1/payouts?status=pending&limit=1", "", "", 0},
		{"GET", "/api/v1/payouts/{payout}", "", "", 0},
		{"POST", "/api/v1/payments/{settled}/refunds", "", `{"amount":500,"reason":"Out of stock"}`, 0},
		{"POST", "/api/v1/payments/{settled}/refunds", "Idempotency-Key: refund-1", `{}`, 0},
		{"POST", "/api/v1/payments/{settled}/refunds", "", `{"amount":"-1","reason":7}`, 0},
		{"POST", "/api/v1/payments/{settled}/refunds", "", `{"amount":500}`, 4},
		{"POST", "/api/v1/payments/{pending}/refunds", "", "", 0},
		{"POST", "/api/v1/payments/trx-missing/refunds", "Idempotency-Key: refund-2", `{}`, 0},
		{"GET", "/api/v1/refunds?payment={settled}&status=pending&limit=5", "", "", 0},
		{"GET", "/api/v1/refunds?status=x&offset=-1", "", "", 0},
		{"GET", "/api/v1/refunds/6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f", "", "", 0},
		{"POST", "/api/v1/billing/plans", "Idempotency-Key: plan-2", `{"code":"daily","name":"Daily","amount":500,"currency_code":"TZS","interval":"day","interval_count":2}`, 0},
		{"POST", "/api/v1/billing/plans", "", goldPlan, 0},
		{"GET", "/api/v1/billing/plans/{plan}", "", "", 0},
		{"GET", "/api/v1/billing/plans?limit=100", "", "", 0},
		{"POST", "/api/v1/billing/subscriptions", "Idempotency-Key: sub-2", `{"plan_code":"gold-monthly","customer_phone":"+255712345678","terms_shown":"TZS 15,000 a month.","webhook_url":"https://duka.example/b"}`, 0},
		{"GET", "/api/v1/billing/subscriptions?status=active&plan_code=gold-monthly", "", "", 0},
		{"GET", "/api/v1/billing/subscriptions/{sub}", "", "", 0},
		{"POST", "/api/v1/billing/subscriptions/{sub}/cancel", "", `{"at_period_end":true}`, 0},
		{"POST", "/api/v1/billing/subscriptions/{sub}/advance", "", `{"seconds":86400}`, 0},
		{"POST", "/api/v1/billing/subscriptions/{sub}/advance", "", `{"seconds":86400}`, 1},
		{"GET", "/api/v1/billing/invoices?subscription={sub}&status=open", "", "", 0},
		{"DELETE", "/api/v1/payments", "", "", 0},
		{"GET", "/api/v1/nope", "", "", 0},
		{"GET", "/api/v1//payments", "", "", 0},
		{"GET", "/api/v1/payments/../balance", "", "", 0},
		{"GET", "/checkout-assets/checkout.css", "", "", 7},
		{"GET", "/checkout-assets/nope.js", "", "", 7},
		{"GET", "/checkout/{pending}?expires=1&signature=00", "Accept-Language: sw", "", 7},
		{"POST", "/checkout/{pending}/pay", "Content-Type: application/x-www-form-urlencoded", "gateway=tz-mpesa&phone=0712345678", 7 | 1<<5},
		{"GET", "/checkout/{pending}/status?expires=1&signature=00", "", "", 7},
		{"POST", "/internal/provider/callbacks", "X-Provider-Signature: 00\nX-Provider-Timestamp: 1", `{"reference":"shop.x.1"}`, 7},
		{"POST", "/internal/provider/callbacks/pawapay", "Content-Type: application/json", `{"depositId":"2b1f6f0e-7d6a-4c1b-9d7e-0b9a3e1c5f21","status":"COMPLETED","clientReferenceId":"shop.x.1"}`, 7},
		{"POST", "/internal/provider/callbacks/pawapay", "Signature-Input: sig=(\"@method\");alg=\"ecdsa-p256-sha256\"\nSignature: sig=:AAAA:", `{"payoutId":"2b1f6f0e-7d6a-4c1b-9d7e-0b9a3e1c5f21","status":"FAILED","clientReferenceId":"shop.po"}`, 7},
		{"POST", "/internal/provider/callbacks/daraja/mpesa-tz/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "", `{"Body":{"stkCallback":{"CheckoutRequestID":"ws_CO_1","ResultCode":0}}}`, 7},
		{"POST", "/internal/provider/callbacks/daraja/mpesa-tz/AAAA/result", "", `{"Result":{"ResultCode":0,"OriginatorConversationID":"shop.po"}}`, 7},
		{"GET", "/healthz", "", "", 7},
		{"GET", "http://pay.example.com/api/v1/payments/{settled}?x=1", "", "", 0},
	} {
		f.Add(seed.method, seed.target, seed.headers, []byte(seed.body), seed.auth)
	}
	f.Fuzz(func(t *testing.T, method, target, headers string, body []byte, auth uint8) {
		fx := newFuzzFixture(t)
		target = fx.expand(target)
		a := fuzzAuth(auth)
		r, err := wireRequest(method, target, a.headers(fx, method, target, headers, body), body, a.chunked())
		if err != nil {
			return // net/http answers it itself: it never reaches the Server
		}
		fx.serve(t, r)
	})
}

// FuzzCheckoutForm posts arbitrary form bodies to the pending payment's checkout (with its
// signed link, or a changed one), and reads its page and status with an arbitrary language:
// checkExchange holds (no 5xx; HTML pages or the error shape; a refused Pay writes nothing), and
// Pay records a push only for a valid number and one of the payment's gateways.
func FuzzCheckoutForm(f *testing.F) {
	for _, seed := range []struct {
		form, lang string
		mode       uint8
	}{
		{"gateway=tz-mpesa&phone=0712345678", "en", 0},
		{"gateway=tz-mpesa&phone=%2B255712345678&lang=sw", "sw", 0},
		{"gateway=tz-mpesa&phone=", "", 0},
		{"gateway=&phone=0712345678", "fr", 0},
		{"gateway=nope&phone=0712345678", "en-GB,en;q=0.8", 0},
		{"gateway=tz-mpesa&phone=12", "", 0},
		{"gateway=tz-mpesa&phone=0712345678", "", 1},
		{"gateway=tz-mpesa&phone=0712345678", "", 2},
		{"%zz", "", 0},
		{"gateway=tz-mpesa&gateway=tz-upstream&phone=0712345678&phone=0", "*", 3},
	} {
		f.Add([]byte(seed.form), seed.lang, seed.mode)
	}
	f.Fuzz(func(t *testing.T, form []byte, lang string, mode uint8) {
		fx := newFuzzFixture(t)
		link, err := url.Parse(fx.pendingLink)
		if err != nil {
			t.Fatal(err)
		}
		q := link.Query()
		switch mode & 3 {
		case 1: // another expiry than the signed one
			q.Set("expires", strconv.FormatInt(time.Now().Unix(), 10))
		case 2: // a changed signature
			sig := q.Get("signature")
			q.Set("signature", sig[:len(sig)-1]+string("10"[sig[len(sig)-1]&1]))
		}
		// The form carries the link's expires and signature, as the page's hidden fields do.
		body := append([]byte("expires="+url.QueryEscape(q.Get("expires"))+"&signature="+url.QueryEscape(q.Get("signature"))+"&"), form...)
		h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
		if validHeaderValue(lang) {
			h.Set("Accept-Language", lang)
		}
		r, err := wireRequest(http.MethodPost, link.Path+"/pay", h, body, mode&4 != 0)
		if err != nil {
			t.Fatal(err)
		}
		before := fx.rec.count()
		w := fx.serve(t, r)
		if writes := fx.rec.since(before); len(writes) > 0 {
			vals, _ := url.ParseQuery(string(body))
			if w.Code != http.StatusSeeOther || len(writes) != 1 || mode&3 == 1 || mode&3 == 2 ||
				(vals.Get("gateway") != "tz-mpesa" && vals.Get("gateway") != "tz-upstream") {
				t.Fatalf("Pay with %q answered %d and wrote %v", body, w.Code, writes)
			}
		}

		q.Set("lang", lang)
		for _, target := range []string{link.Path + "?" + q.Encode(), link.Path + "/status?" + q.Encode()} {
			if r, err := wireRequest(http.MethodGet, target, h, nil, false); err == nil {
				fx.serve(t, r)
			}
		}
	})
}

// FuzzProviderCallback sends arbitrary callback bodies to the provider callback route, signed
// with the upstream gateway's callback secret (or with a changed signature, or too old):
// checkExchange holds, and only a verified collection callback about the fixture's pending
// attempt writes (one patch of that payment): a callback of another kind, or naming a payout or a
// refund that has no attempt through the upstream gateway, writes nothing.
func FuzzProviderCallback(f *testing.F) {
	ref := "shop." + TrxID("uid-duka", paygatev1.EnvironmentSandbox, "order-callback") + ".1"
	for _, seed := range []struct {
		body string
		mode uint8
	}{
		{`{"reference":"` + ref + `","provider_reference":"MP1","status":"SUCCESS","code":"","message":"ok","kind":"collection"}`, 0},
		{`{"reference":"` + ref + `","status":"FAILED","code":"INSUFFICIENT_FUNDS","kind":"collection"}`, 0},
		{`{"reference":"` + ref + `","status":"INPROGRESS","kind":"disbursement"}`, 0},
		{`{"reference":"` + ref + `","status":"SUCCESS","kind":"collection"}`, 1},
		{`{"reference":"` + ref + `","status":"SUCCESS","kind":"collection"}`, 2},
		{`{"reference":"` + ref + `","status":"BOGUS","kind":"collection"}`, 0},
		{`{"reference":"` + ref + `","status":"SUCCESS","kind":"refund"}`, 0},
		{`{"reference":"shop.po-aaaaaaaaaaaa","status":"SUCCESS","kind":"disbursement"}`, 0},
		{`{"reference":"shop.5b0c7a52-2f57-4d5e-9a63-6f7b1c2d3e4f.r","status":"FAILED","kind":"refund"}`, 0},
		{`{"reference":"shop..r","status":"SUCCESS","kind":"refund"}`, 0},
		{`{"reference":"shop.trx-aaaaaaaaaaaaaaaaaaaaaaaa.1","status":"SUCCESS","kind":"collection"}`, 0},
		{`{"reference":"other.` + ref[5:] + `","status":"SUCCESS","kind":"collection"}`, 0},
		{`{"reference":"` + ref + `"}{}`, 0},
		{`{"reference":null}`, 0},
		{`[]`, 0},
		{"\xff", 0},
		{``, 3},
	} {
		f.Add([]byte(seed.body), seed.mode)
	}
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		fx := newFuzzFixture(t)
		now := time.Now()
		if mode&3 == 2 {
			now = now.Add(-time.Hour)
		}
		ts := strconv.FormatInt(now.Unix(), 10)
		sig := provider.SignCallback(fx.callbackSecret, ts, body)
		switch mode & 3 {
		case 1:
			sig = sig[:len(sig)-1] + string("10"[sig[len(sig)-1]&1])
		case 3:
			sig, ts = "", ""
		}
		h := http.Header{"Content-Type": {"application/json"}}
		if sig != "" {
			h.Set(provider.CallbackSignatureHeader, sig)
			h.Set(provider.CallbackTimestampHeader, ts)
		}
		r, err := wireRequest(http.MethodPost, "/internal/provider/callbacks", h, body, mode&4 != 0)
		if err != nil {
			t.Fatal(err)
		}
		before := fx.rec.count()
		w := fx.serve(t, r)
		if writes := fx.rec.since(before); len(writes) > 0 {
			var cb struct{ Reference, Kind string }
			_ = json.Unmarshal(body, &cb)
			if w.Code != http.StatusOK || mode&3 != 0 || cb.Reference != fx.callbackRef || cb.Kind != provider.CallbackKindCollection || len(writes) != 1 ||
				writes[0] != "Patch Payment shop/"+strings.Split(fx.callbackRef, ".")[1] {
				t.Fatalf("callback %q answered %d and wrote %v", body, w.Code, writes)
			}
		}
	})
}
