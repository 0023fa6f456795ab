// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package fakedaraja

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// ---- helpers ----

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *testClock {
	return &testClock{now: time.Date(2026, 3, 2, 6, 30, 0, 0, time.UTC)} // 09:30 in Nairobi
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// receiver is the merchant's callback server: it records every POST by path.
type receiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string][][]byte
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{got: map[string][][]byte{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got[req.URL.Path] = append(r.got[req.URL.Path], b)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ResultCode":0,"ResultDesc":"Accepted"}`)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) url(path string) string { return r.srv.URL + path }

func (r *receiver) bodies(path string) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.got[path]...)
}

// waitBodies polls (generously) until path has received n bodies.
func (r *receiver) waitBodies(t *testing.T, path string, n int) [][]byte {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d callback(s) at %s", n, path), func() bool { return len(r.bodies(path)) >= n })
	return r.bodies(path)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("decoding %q: %v", b, err)
	}
	return m
}

// get walks nested JSON objects.
func get(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// params turns a ResultParameters.ResultParameter (or CallbackMetadata.Item) list into a map.
func params(t *testing.T, v any, keyName string) map[string]any {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("not a list: %#v", v)
	}
	out := map[string]any{}
	for _, it := range list {
		m := it.(map[string]any)
		out[m[keyName].(string)] = m["Value"]
	}
	return out
}

type client struct {
	t     *testing.T
	f     *Server
	hc    *http.Client
	token string
}

func newClient(t *testing.T, f *Server) *client {
	c := &client{t: t, f: f, hc: &http.Client{Timeout: 10 * time.Second}}
	c.token = c.fetchToken()
	return c
}

func (c *client) oauth(key, secret, grant string) (int, map[string]any) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.f.URL()+PathOAuth+"?grant_type="+grant, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	if key != "" || secret != "" {
		req.SetBasicAuth(key, secret)
	}
	return c.do(req)
}

func (c *client) fetchToken() string {
	c.t.Helper()
	st, m := c.oauth(c.f.ConsumerKey(), c.f.ConsumerSecret(), "client_credentials")
	if st != http.StatusOK {
		c.t.Fatalf("token: %d %v", st, m)
	}
	return m["access_token"].(string)
}

func (c *client) do(req *http.Request) (int, map[string]any) {
	c.t.Helper()
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		c.t.Fatalf("Content-Type %q", ct)
	}
	return resp.StatusCode, decode(c.t, b)
}

func (c *client) request(path string, body any) *http.Request {
	c.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		c.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, c.f.URL()+path, bytes.NewReader(b))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	return req
}

func (c *client) post(path string, body any) (int, map[string]any) {
	c.t.Helper()
	return c.do(c.request(path, body))
}

// wantError checks Daraja's error body.
func wantError(t *testing.T, status int, m map[string]any, wantStatus int, code, msg string) {
	t.Helper()
	if status != wantStatus || m["errorCode"] != code || m["errorMessage"] != msg {
		t.Fatalf("got %d %v, want %d %s %q", status, m, wantStatus, code, msg)
	}
	if id, _ := m["requestId"].(string); id == "" {
		t.Fatalf("no requestId in %v", m)
	}
}

const ts = "20260302093000"

func stkBody(f *Server, cb, phone, ref string) map[string]any {
	return map[string]any{
		"BusinessShortCode": 174379, // a number, as in the documented request body
		"Password":          f.STKPassword(ts),
		"Timestamp":         ts,
		"TransactionType":   "CustomerPayBillOnline",
		"Amount":            "1",
		"PartyA":            phone,
		"PartyB":            "174379",
		"PhoneNumber":       phone,
		"CallBackURL":       cb,
		"AccountReference":  ref,
		"TransactionDesc":   "txndesc",
	}
}

func queryBody(f *Server, checkoutID string) map[string]any {
	return map[string]any{"BusinessShortCode": "174379", "Password": f.STKPassword(ts), "Timestamp": ts, "CheckoutRequestID": checkoutID}
}

func b2cBody(f *Server, rcv *receiver, ocid, partyB string, amount any) map[string]any {
	return map[string]any{
		"OriginatorConversationID": ocid,
		"InitiatorName":            f.InitiatorName(),
		"SecurityCredential":       f.SecurityCredential(f.InitiatorPassword()),
		"CommandID":                "BusinessPayment",
		"Amount":                   amount,
		"PartyA":                   SandboxB2CShortCode,
		"PartyB":                   partyB,
		"Remarks":                  "refund",
		"QueueTimeOutURL":          rcv.url("/b2c/timeout"),
		"ResultURL":                rcv.url("/b2c/result"),
		"Occassion":                "order-42",
	}
}

func push(t *testing.T, c *client, body map[string]any) map[string]any {
	t.Helper()
	st, m := c.post(PathSTKPush, body)
	if st != http.StatusOK || m["ResponseCode"] != "0" {
		t.Fatalf("push: %d %v", st, m)
	}
	return m
}

// ---- OAuth ----

func TestOAuth(t *testing.T) {
	clock := newClock()
	f := New(t, Options{Clock: clock.Now})
	c := &client{t: t, f: f, hc: &http.Client{Timeout: 10 * time.Second}}

	st, m := c.oauth(f.ConsumerKey(), f.ConsumerSecret(), "client_credentials")
	if st != http.StatusOK {
		t.Fatalf("good credentials: %d %v", st, m)
	}
	tok, _ := m["access_token"].(string)
	if !regexp.MustCompile(`^[A-Za-z0-9]{28}$`).MatchString(tok) {
		t.Fatalf("access_token %q", tok)
	}
	if m["expires_in"] != json.Number("3599") {
		t.Fatalf("expires_in %#v, want the number 3599", m["expires_in"])
	}
	if f.TokenCount() != 1 {
		t.Fatalf("TokenCount %d", f.TokenCount())
	}

	st, m = c.oauth(f.ConsumerKey(), "wrong", "client_credentials")
	wantError(t, st, m, http.StatusBadRequest, "400.008.01", "Invalid Authentication passed")
	st, m = c.oauth("", "", "client_credentials")
	wantError(t, st, m, http.StatusBadRequest, "400.008.01", "Invalid authentication type passed")
	st, m = c.oauth(f.ConsumerKey(), f.ConsumerSecret(), "password")
	wantError(t, st, m, http.StatusBadRequest, "400.008.02", "Invalid grant type passed")
	req, _ := http.NewRequest(http.MethodPost, f.URL()+PathOAuth+"?grant_type=client_credentials", nil)
	req.SetBasicAuth(f.ConsumerKey(), f.ConsumerSecret())
	st, m = c.do(req)
	wantError(t, st, m, http.StatusMethodNotAllowed, "405.001", "POST Method Not Allowed")
	if f.TokenCount() != 1 {
		t.Fatalf("failed fetches issued tokens: %d", f.TokenCount())
	}

	rcv := newReceiver(t)
	body := stkBody(f, rcv.url("/cb"), SandboxMSISDN, "INV1")
	c.token = tok
	push(t, c, body)

	// No, a malformed, or a wrong token.
	req = c.request(PathSTKPush, body)
	req.Header.Del("Authorization")
	st, m = c.do(req)
	wantError(t, st, m, http.StatusNotFound, "404.001.04", "Invalid Authentication Header")
	c.token = "not-a-token"
	st, m = c.post(PathSTKPush, body)
	wantError(t, st, m, http.StatusNotFound, "404.001.03", "Invalid Access Token")

	// Expiry by the injected clock: valid until the lifetime has passed.
	c.token = tok
	clock.Advance(time.Hour - time.Second)
	push(t, c, body)
	clock.Advance(time.Second)
	st, m = c.post(PathSTKPush, body)
	wantError(t, st, m, http.StatusNotFound, "404.001.03", "Invalid Access Token")

	// Expiry on demand.
	c.token = c.fetchToken()
	push(t, c, body)
	f.ExpireTokens()
	st, m = c.post(PathSTKPush, body)
	wantError(t, st, m, http.StatusNotFound, "404.001.03", "Invalid Access Token")

	// A new token invalidates the previous one (Authorization FAQ).
	old := c.fetchToken()
	c.token = c.fetchToken()
	push(t, c, body)
	c.token = old
	st, m = c.post(PathSTKPush, body)
	wantError(t, st, m, http.StatusNotFound, "404.001.03", "Invalid Access Token")

	// A shorter lifetime applies to later tokens.
	f.SetTokenLifetime(time.Minute)
	st, m = c.oauth(f.ConsumerKey(), f.ConsumerSecret(), "client_credentials")
	if st != http.StatusOK || m["expires_in"] != json.Number("59") {
		t.Fatalf("short lifetime: %d %v", st, m)
	}
	if got := f.STKPushCount(); got != 4 {
		t.Fatalf("STKPushCount %d, want 4", got)
	}
}

func TestOAuthOptions(t *testing.T) {
	f := New(t, Options{KeepOldTokens: true, ExpiresInString: true, TokenLifetime: 10 * time.Minute})
	c := &client{t: t, f: f, hc: &http.Client{Timeout: 10 * time.Second}}
	st, m := c.oauth(f.ConsumerKey(), f.ConsumerSecret(), "client_credentials")
	if st != http.StatusOK || m["expires_in"] != "599" {
		t.Fatalf("%d %#v", st, m)
	}
	old := m["access_token"].(string)
	c.fetchToken()
	c.token = old
	rcv := newReceiver(t)
	push(t, c, stkBody(f, rcv.url("/cb"), SandboxMSISDN, "A"))
}

// ---- M-Pesa Express ----

func TestSTKPushValidation(t *testing.T) {
	f := New(t, Options{})
	c := newClient(t, f)
	rcv := newReceiver(t)
	valid := func() map[string]any { return stkBody(f, rcv.url("/cb"), SandboxMSISDN, "INV-1") }

	cases := []struct {
		name   string
		change func(map[string]any)
		status int
		code   string
		msg    string
	}{
		{"wrong password", func(m map[string]any) {
			m["Password"] = base64.StdEncoding.EncodeToString([]byte("174379" + "not-the-passkey" + ts))
		}, 500, "500.001.1001", "Wrong credentials"},
		{"password of another timestamp", func(m map[string]any) { m["Password"] = f.STKPassword("20260302093001") }, 500, "500.001.1001", "Wrong credentials"},
		{"missing password", func(m map[string]any) { delete(m, "Password") }, 400, "400.002.02", "Bad Request - Invalid Password"},
		{"unknown shortcode", func(m map[string]any) {
			m["BusinessShortCode"] = "600000"
			m["Password"] = base64.StdEncoding.EncodeToString([]byte("600000" + f.Passkey() + ts))
		}, 500, "500.001.1001", "Merchant does not exist"},
		{"decimal amount string", func(m map[string]any) { m["Amount"] = "1.5" }, 400, "400.002.02", "Bad Request - Invalid Amount"},
		{"decimal amount number", func(m map[string]any) { m["Amount"] = 1.5 }, 400, "400.002.02", "Bad Request - Invalid Amount"},
		{"amount with cents", func(m map[string]any) { m["Amount"] = json.Number("10.00") }, 400, "400.002.02", "Bad Request - Invalid Amount"},
		{"zero amount", func(m map[string]any) { m["Amount"] = 0 }, 400, "400.002.02", "Bad Request - Invalid Amount"},
		{"negative amount", func(m map[string]any) { m["Amount"] = -5 }, 400, "400.002.02", "Bad Request - Invalid Amount"},
		{"account reference of 13", func(m map[string]any) { m["AccountReference"] = "ABCDEFGHIJKLM" }, 400, "400.002.02", "Bad Request - Invalid AccountReference"},
		{"no account reference", func(m map[string]any) { m["AccountReference"] = "" }, 400, "400.002.02", "Bad Request - Invalid AccountReference"},
		{"transaction desc of 14", func(m map[string]any) { m["TransactionDesc"] = "ABCDEFGHIJKLMN" }, 400, "400.002.02", "Bad Request - Invalid TransactionDesc"},
		{"local phone number", func(m map[string]any) { m["PhoneNumber"] = "0708374149" }, 400, "400.002.02", "Bad Request - Invalid PhoneNumber"},
		{"E.164 party A", func(m map[string]any) { m["PartyA"] = "+254708374149" }, 400, "400.002.02", "Bad Request - Invalid PartyA"},
		{"bad timestamp", func(m map[string]any) { m["Timestamp"] = "2026-03-02T09:30" }, 400, "400.002.02", "Bad Request - Invalid Timestamp"},
		{"impossible timestamp", func(m map[string]any) { m["Timestamp"] = "20261302093000" }, 400, "400.002.02", "Bad Request - Invalid Timestamp"},
		{"bad transaction type", func(m map[string]any) { m["TransactionType"] = "CustomerPay" }, 400, "400.002.02", "Bad Request - Invalid TransactionType"},
		{"bad callback", func(m map[string]any) { m["CallBackURL"] = "mydomain.com/path" }, 400, "400.002.02", "Bad Request - Invalid CallBackURL"},
		{"wrong key case", func(m map[string]any) {
			m["businessShortCode"] = m["BusinessShortCode"]
			delete(m, "BusinessShortCode")
		}, 400, "400.002.02", "Bad Request - Invalid BusinessShortCode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			m := valid()
			tc.change(m)
			st, got := c.post(PathSTKPush, m)
			wantError(t, st, got, tc.status, tc.code, tc.msg)
		})
	}
	c.t = t

	// Not JSON, or not declared as JSON.
	req, _ := http.NewRequest(http.MethodPost, f.URL()+PathSTKPush, strings.NewReader("{not json"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	st, m := c.do(req)
	wantError(t, st, m, 400, "400.002.05", "Invalid Request Payload")
	req = c.request(PathSTKPush, valid())
	req.Header.Set("Content-Type", "text/plain")
	st, m = c.do(req)
	wantError(t, st, m, 400, "400.002.02", "Bad Request - Invalid BusinessShortCode")
	req, _ = http.NewRequest(http.MethodGet, f.URL()+PathSTKPush, nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	st, m = c.do(req)
	wantError(t, st, m, 405, "405.001", "GET Method Not Allowed")
	req = c.request("/mpesa/stkpush/v9/nothing", valid())
	st, m = c.do(req)
	wantError(t, st, m, 404, "404.001.01", "Resource not found")

	if n := f.STKPushCount(); n != 0 {
		t.Fatalf("invalid requests pushed: %d", n)
	}

	// The limits: 12 characters of AccountReference, a numeric or string whole Amount.
	m1 := valid()
	m1["AccountReference"] = "ABCDEFGHIJKL"
	m1["Amount"] = 250
	push(t, c, m1)
	m2 := valid()
	m2["Amount"] = "250"
	m2["TransactionType"] = "CustomerBuyGoodsOnline"
	m2["PhoneNumber"] = "254110000001" // the newer 2541 range
	m2["PartyA"] = "254110000001"
	push(t, c, m2)
	if n := f.STKPushCount(); n != 2 {
		t.Fatalf("STKPushCount %d", n)
	}
	if p := f.STKPushes(); p[0].Amount != 250 || p[1].Amount != 250 || p[0].AccountReference != "ABCDEFGHIJKL" {
		t.Fatalf("pushes %+v", p)
	}
}

func TestSTKPushCallback(t *testing.T) {
	clock := newClock()
	f := New(t, Options{Clock: clock.Now})
	c := newClient(t, f)
	rcv := newReceiver(t)
	utility0, _, _ := f.Balances()

	body := stkBody(f, rcv.url("/mpesa/callback"), SandboxMSISDN, "INV-1001")
	body["Amount"] = 1
	ack := push(t, c, body)
	if ack["ResponseDescription"] != "Success. Request accepted for processing" || ack["CustomerMessage"] != "Success. Request accepted for processing" {
		t.Fatalf("ack %v", ack)
	}
	mid, _ := ack["MerchantRequestID"].(string)
	cid, _ := ack["CheckoutRequestID"].(string)
	if mid == "" || !regexp.MustCompile(`^ws_CO_020320260930000\d\d708374149$`).MatchString(cid) {
		t.Fatalf("ids %q %q", mid, cid)
	}

	raw := rcv.waitBodies(t, "/mpesa/callback", 1)[0]
	cb := decode(t, raw)
	sc := get(cb, "Body", "stkCallback")
	if get(sc, "MerchantRequestID") != mid || get(sc, "CheckoutRequestID") != cid ||
		get(sc, "ResultCode") != json.Number("0") || get(sc, "ResultDesc") != "The service request is processed successfully." {
		t.Fatalf("callback %s", raw)
	}
	items := get(sc, "CallbackMetadata", "Item").([]any)
	var names []string
	for _, it := range items {
		names = append(names, it.(map[string]any)["Name"].(string))
	}
	if strings.Join(names, ",") != "Amount,MpesaReceiptNumber,TransactionDate,PhoneNumber" {
		t.Fatalf("items %v", names)
	}
	meta := params(t, items, "Name")
	rec, ok := f.STKPushByID(cid)
	if !ok || meta["MpesaReceiptNumber"] != rec.ReceiptNumber || !regexp.MustCompile(`^[A-Z0-9]{10}$`).MatchString(rec.ReceiptNumber) {
		t.Fatalf("receipt %v / %+v", meta["MpesaReceiptNumber"], rec)
	}
	if meta["Amount"] != json.Number("1.00") || meta["PhoneNumber"] != json.Number(SandboxMSISDN) ||
		meta["TransactionDate"] != json.Number("20260302093000") {
		t.Fatalf("metadata %v", meta)
	}
	if !bytes.Contains(raw, []byte(`"Value":1.00`)) || !bytes.Contains(raw, []byte(`"Value":254708374149`)) {
		t.Fatalf("numbers are not JSON numbers: %s", raw)
	}
	if utility, _, _ := f.Balances(); utility != utility0+100 {
		t.Fatalf("utility %d, want %d", utility, utility0+100)
	}
	if f.CallbacksDelivered() != 1 || f.CallbacksFailed() != 0 {
		t.Fatalf("delivered %d failed %d", f.CallbacksDelivered(), f.CallbacksFailed())
	}
	// The callback is the only place of the result: the acknowledgement says nothing of it.
	if _, has := ack["ResultCode"]; has {
		t.Fatalf("ack carries a result: %v", ack)
	}
}

func TestSTKNoDeduplication(t *testing.T) {
	f := New(t, Options{})
	c := newClient(t, f)
	rcv := newReceiver(t)
	body := stkBody(f, rcv.url("/cb"), SandboxMSISDN, "INV-7")
	a1 := push(t, c, body)
	a2 := push(t, c, body)
	if a1["CheckoutRequestID"] == a2["CheckoutRequestID"] || a1["MerchantRequestID"] == a2["MerchantRequestID"] {
		t.Fatalf("identical pushes share ids: %v %v", a1, a2)
	}
	other := stkBody(f, rcv.url("/cb"), "254711000222", "INV-7")
	push(t, c, other)
	if f.STKPushCount() != 3 || f.STKPushCountFor(SandboxMSISDN, "INV-7") != 2 ||
		f.STKPushCountForPhone(SandboxMSISDN) != 2 || f.STKPushCountForAccount("INV-7") != 3 ||
		f.STKPushCountFor(SandboxMSISDN, "INV-8") != 0 {
		t.Fatalf("counts %d %d %d %d", f.STKPushCount(), f.STKPushCountFor(SandboxMSISDN, "INV-7"),
			f.STKPushCountForPhone(SandboxMSISDN), f.STKPushCountForAccount("INV-7"))
	}
	rcv.waitBodies(t, "/cb", 3)
}

func TestSTKQuery(t *testing.T) {
	clock := newClock()
	f := New(t, Options{Clock: clock.Now})
	c := newClient(t, f)
	rcv := newReceiver(t)
	f.ScriptPhone(SandboxMSISDN, STKScript{RespondAfter: 30 * time.Second, QueryProcessing: 1})

	cid := push(t, c, stkBody(f, rcv.url("/cb"), SandboxMSISDN, "INV-9"))["CheckoutRequestID"].(string)

	// The customer has not answered yet (by the clock).
	for range 2 {
		st, m := c.post(PathSTKQuery, queryBody(f, cid))
		if st != 500 || m["requestId"] != cid || m["errorCode"] != "500.001.1001" || m["errorMessage"] != "The transaction is being processed" {
			t.Fatalf("pending query: %d %v", st, m)
		}
	}
	if n := len(rcv.bodies("/cb")); n != 0 {
		t.Fatalf("callback before the answer: %d", n)
	}

	clock.Advance(30 * time.Second)
	// Answered: one more "being processed" (QueryProcessing 1), then the result. The first query
	// that sees the answer sends the callback.
	st, m := c.post(PathSTKQuery, queryBody(f, cid))
	if st != 500 || m["errorMessage"] != "The transaction is being processed" {
		t.Fatalf("QueryProcessing: %d %v", st, m)
	}
	st, m = c.post(PathSTKQuery, queryBody(f, cid))
	if st != 200 || m["ResponseCode"] != "0" || m["ResultCode"] != "0" || m["CheckoutRequestID"] != cid ||
		m["ResponseDescription"] != "The service request has been accepted successfully" ||
		m["ResultDesc"] != "The service request is processed successfully." || m["MerchantRequestID"] == "" {
		t.Fatalf("answered query: %d %v", st, m)
	}
	cb := decode(t, rcv.waitBodies(t, "/cb", 1)[0])
	if v := params(t, get(cb, "Body", "stkCallback", "CallbackMetadata", "Item"), "Name")["TransactionDate"]; v != json.Number("20260302093030") {
		t.Fatalf("TransactionDate %v", v)
	}
	if f.STKQueryCount() != 4 {
		t.Fatalf("STKQueryCount %d", f.STKQueryCount())
	}

	// Only by CheckoutRequestID.
	st, m = c.post(PathSTKQuery, queryBody(f, "INV-9"))
	wantError(t, st, m, 400, "400.002.02", "Bad Request - Invalid CheckoutRequestID")
	q := queryBody(f, cid)
	q["Password"] = f.STKPassword("20260302093001")
	st, m = c.post(PathSTKQuery, q)
	wantError(t, st, m, 500, "500.001.1001", "Wrong credentials")
}

func TestSTKCustomerOutcomes(t *testing.T) {
	f := New(t, Options{})
	c := newClient(t, f)
	rcv := newReceiver(t)
	cases := []struct {
		phone string
		code  ResultCode
		desc  string
	}{
		{"254700000001", ResultCancelledByUser, "Request cancelled by user"},
		{"254700000002", ResultInsufficientFunds, "The balance is insufficient for the transaction."},
		{"254700000003", ResultUnreachable, "DS timeout user cannot be reached"},
		{"254700000004", ResultWrongPIN, "The initiator information is invalid."},
		{"254700000005", ResultExpired, "Transaction has expired"},
	}
	utility0, _, _ := f.Balances()
	for _, tc := range cases {
		f.ScriptPhone(tc.phone, STKScript{Result: tc.code})
		path := "/cb/" + tc.phone
		cid := push(t, c, stkBody(f, rcv.url(path), tc.phone, "INV"))["CheckoutRequestID"].(string)
		raw := rcv.waitBodies(t, path, 1)[0]
		sc := get(decode(t, raw), "Body", "stkCallback")
		if get(sc, "ResultCode") != json.Number(tc.code) || get(sc, "ResultDesc") != tc.desc || get(sc, "CheckoutRequestID") != cid {
			t.Fatalf("%s: callback %s", tc.phone, raw)
		}
		if get(sc, "CallbackMetadata") != nil {
			t.Fatalf("%s: metadata on a failure: %s", tc.phone, raw)
		}
		st, m := c.post(PathSTKQuery, queryBody(f, cid))
		if st != 200 || m["ResultCode"] != string(tc.code) || m["ResultDesc"] != tc.desc {
			t.Fatalf("%s: query %d %v", tc.phone, st, m)
		}
		if p, _ := f.STKPushByID(cid); p.ReceiptNumber != "" || p.Result != tc.code {
			t.Fatalf("%s: record %+v", tc.phone, p)
		}
	}
	if utility, _, _ := f.Balances(); utility != utility0 {
		t.Fatalf("failed payments credited: %d", utility-utility0)
	}

	// Above the per-transaction maximum (Ksh 250,000): accepted, then result 3.
	body := stkBody(f, rcv.url("/cb/max"), SandboxMSISDN, "BIG")
	body["Amount"] = 250001
	push(t, c, body)
	sc := get(decode(t, rcv.waitBodies(t, "/cb/max", 1)[0]), "Body", "stkCallback")
	if get(sc, "ResultCode") != json.Number("3") {
		t.Fatalf("over the maximum: %v", sc)
	}
}

func TestSandboxPasskey(t *testing.T) {
	// The documented sample request of https://developer.safaricom.co.ke/apis/MpesaExpressSimulate.
	const sample = "MTc0Mzc5YmZiMjc5ZjlhYTliZGJjZjE1OGU5N2RkNzFhNDY3Y2QyZTBjODkzMDU5YjEwZjc4ZTZiNzJhZGExZWQyYzkxOTIwMjEwNjI4MDkyNDA4"
	f := New(t, Options{})
	if got := f.STKPassword("20210628092408"); got != sample {
		t.Fatalf("STKPassword %s, want the documented %s", got, sample)
	}
	c := newClient(t, f)
	rcv := newReceiver(t)
	body := stkBody(f, rcv.url("/cb"), SandboxMSISDN, "accountref")
	body["Password"], body["Timestamp"] = sample, "20210628092408"
	push(t, c, body)
}

func TestSTKProductAssignment(t *testing.T) {
	f := New(t, Options{})
	c := newClient(t, f)
	rcv := newReceiver(t)
	body := stkBody(f, rcv.url("/paybill"), SandboxMSISDN, "X")
	body["PartyB"] = "600000" // not the pay bill of BusinessShortCode
	push(t, c, body)
	sc := get(decode(t, rcv.waitBodies(t, "/paybill", 1)[0]), "Body", "stkCallback")
	if get(sc, "ResultCode") != json.Number("2028") || get(sc, "ResultDesc") != "The request is not permitted according to product assignment." {
		t.Fatalf("pay bill to another PartyB: %v", sc)
	}
	body = stkBody(f, rcv.url("/till"), SandboxMSISDN, "X")
	body["TransactionType"], body["PartyB"] = "CustomerBuyGoodsOnline", "600000" // a till number
	push(t, c, body)
	sc = get(decode(t, rcv.waitBodies(t, "/till", 1)[0]), "Body", "stkCallback")
	if get(sc, "ResultCode") != json.Number("0") {
		t.Fatalf("buy goods: %v", sc)
	}
}

func TestSTKLockSubscriber(t *testing.T) {
	clock := newClock()
	f := New(t, Options{Clock: clock.Now, LockSubscriber: true})
	c := newClient(t, f)
	rcv := newReceiver(t)
	f.ScriptPhone(SandboxMSISDN, STKScript{RespondAfter: 30 * time.Minute, Delivery: DeliverNever})
	body := stkBody(f, rcv.url("/cb"), SandboxMSISDN, "A")
	push(t, c, body)
	st, m := c.post(PathSTKPush, body)
	wantError(t, st, m, 500, "500.001.1001", "Unable to lock subscriber, a transaction is already in process for the current subscriber")
	clock.Advance(30 * time.Minute)
	push(t, c, body)
	if f.STKPushCount() != 2 {
		t.Fatalf("STKPushCount %d", f.STKPushCount())
	}
}

// ---- SecurityCredential ----

func TestSecurityCredential(t *testing.T) {
	f := New(t, Options{InitiatorPassword: "Safe#Pass&1"})
	// What an adapter does: parse the certificate it was given, encrypt with its public key.
	block, _ := pem.Decode(f.CertificatePEM())
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatal("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := rsa.EncryptPKCS1v15(rand.Reader, cert.PublicKey.(*rsa.PublicKey), []byte("Safe#Pass&1"))
	if err != nil {
		t.Fatal(err)
	}
	cred := base64.StdEncoding.EncodeToString(ct)
	if pw, err := f.DecryptSecurityCredential(cred); err != nil || pw != "Safe#Pass&1" {
		t.Fatalf("decrypt: %q %v", pw, err)
	}
	if !f.initiatorValid(SandboxInitiatorName, cred) || f.initiatorValid("someoneelse", cred) {
		t.Fatal("initiator check")
	}
	if f.initiatorValid(SandboxInitiatorName, f.SecurityCredential("wrong")) {
		t.Fatal("a wrong password passed")
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ct, _ = rsa.EncryptPKCS1v15(rand.Reader, &other.PublicKey, []byte("Safe#Pass&1"))
	if _, err := f.DecryptSecurityCredential(base64.StdEncoding.EncodeToString(ct)); err == nil {
		t.Fatal("a credential for another certificate decrypted")
	}
	if _, err := f.DecryptSecurityCredential("%%%"); err == nil {
		t.Fatal("not base64 decrypted")
	}
}

// ---- B2C ----

func TestB2C(t *testing.T) {
	clock := newClock()
	f := New(t, Options{Clock: clock.Now})
	c := newClient(t, f)
	rcv := newReceiver(t)
	utility0, working0, _ := f.Balances()

	st, m := c.post(PathB2C, b2cBody(f, rcv, "pay-1", "254705912645", "100"))
	if st != 200 || m["OriginatorConversationID"] != "pay-1" || m["ResponseCode"] != "0" ||
		m["ResponseDescription"] != "Accept the service request successfully." ||
		!regexp.MustCompile(`^AG_20260302_[0-9a-f]{20}$`).MatchString(m["ConversationID"].(string)) {
		t.Fatalf("ack %d %v", st, m)
	}
	raw := rcv.waitBodies(t, "/b2c/result", 1)[0]
	res := get(decode(t, raw), "Result")
	if get(res, "ResultType") != json.Number("0") || get(res, "ResultCode") != json.Number("0") ||
		get(res, "ResultDesc") != "The service request is processed successfully." ||
		get(res, "OriginatorConversationID") != "pay-1" || get(res, "ConversationID") != m["ConversationID"] {
		t.Fatalf("result %s", raw)
	}
	p := params(t, get(res, "ResultParameters", "ResultParameter"), "Key")
	if p["TransactionAmount"] != json.Number("100") || p["TransactionReceipt"] != get(res, "TransactionID") ||
		p["ReceiverPartyPublicName"] != "254705912645 - FAKE CUSTOMER" ||
		p["TransactionCompletedDateTime"] != "02.03.2026 09:30:00" || p["B2CRecipientIsRegisteredCustomer"] != "Y" ||
		p["B2CUtilityAccountAvailableFunds"] != json.Number(cents(utility0-100_00)) ||
		p["B2CWorkingAccountAvailableFunds"] != json.Number(cents(working0)) {
		t.Fatalf("parameters %v", p)
	}
	if len(rcv.bodies("/b2c/timeout")) != 0 {
		t.Fatal("time-out notice for a completed payment")
	}

	// Not de-duplicated: the same OriginatorConversationID again is a second payment.
	st, m = c.post(PathB2C, b2cBody(f, rcv, "pay-1", "254705912645", 100))
	if st != 200 || m["OriginatorConversationID"] != "pay-1" {
		t.Fatalf("repeat: %d %v", st, m)
	}
	rcv.waitBodies(t, "/b2c/result", 2)
	if f.B2CCount() != 2 || f.B2CCountFor("pay-1") != 2 || f.B2CCountFor("pay-2") != 0 {
		t.Fatalf("counts %d %d", f.B2CCount(), f.B2CCountFor("pay-1"))
	}
	if utility, _, _ := f.Balances(); utility != utility0-2*100_00 {
		t.Fatalf("utility %d", utility)
	}

	// The v1 path generates an OriginatorConversationID when there is none.
	b := b2cBody(f, rcv, "", "254705912645", 50)
	delete(b, "OriginatorConversationID")
	st, m = c.post(PathB2CV1, b)
	if st != 200 || m["OriginatorConversationID"] == "" {
		t.Fatalf("v1: %d %v", st, m)
	}
	st, m = c.post(PathB2C, b)
	wantError(t, st, m, 400, "400.002.02", "Bad Request - Invalid OriginatorConversationID")
}

func TestB2COutcomes(t *testing.T) {
	f := New(t, Options{UtilityAccountCents: 1_000_00})
	c := newClient(t, f)
	rcv := newReceiver(t)
	f.ScriptB2C("254700000404", ResultScript{Result: ResultOperatorDoesNotExist})

	wrongName := b2cBody(f, rcv, "p-name", "254705912645", 100)
	wrongName["InitiatorName"] = "someone"
	wrongPassword := b2cBody(f, rcv, "p-pw", "254705912645", 100)
	wrongPassword["SecurityCredential"] = f.SecurityCredential("not-the-password")
	garbage := b2cBody(f, rcv, "p-garbage", "254705912645", 100)
	garbage["SecurityCredential"] = "RC6E9WDxXR4b9X2c6z3gp0oC5Th =="

	cases := []struct {
		body map[string]any
		code string
		desc string
	}{
		{wrongName, "2001", "The initiator information is invalid."},
		{wrongPassword, "2001", "The initiator information is invalid."},
		{garbage, "2001", "The initiator information is invalid."},
		{b2cBody(f, rcv, "p-min", "254705912645", 9), "2", "Declined due to limit rule"},
		{b2cBody(f, rcv, "p-max", "254705912645", 250001), "3", "Declined due to limit rule: greater than the maximum transaction amount."},
		{b2cBody(f, rcv, "p-funds", "254705912645", 1001), "1", "The balance is insufficient for the transaction."},
		{b2cBody(f, rcv, "p-unknown", "254700000404", 100), "SFC_IC0003", "The operator does not exist."},
	}
	for i, tc := range cases {
		st, m := c.post(PathB2C, tc.body)
		if st != 200 || m["ResponseCode"] != "0" {
			t.Fatalf("%s: ack %d %v", tc.body["OriginatorConversationID"], st, m)
		}
		raw := rcv.waitBodies(t, "/b2c/result", i+1)[i]
		res := get(decode(t, raw), "Result")
		if fmt.Sprint(get(res, "ResultCode")) != tc.code || get(res, "ResultDesc") != tc.desc ||
			get(res, "OriginatorConversationID") != tc.body["OriginatorConversationID"] || get(res, "ResultParameters") != nil {
			t.Fatalf("result %s", raw)
		}
	}
	if !bytes.Contains(rcv.bodies("/b2c/result")[6], []byte(`"ResultCode":"SFC_IC0003"`)) {
		t.Fatalf("non-numeric code not a string: %s", rcv.bodies("/b2c/result")[6])
	}
	if utility, _, _ := f.Balances(); utility != 1_000_00 {
		t.Fatalf("failed payments debited: %d", utility)
	}

	// Validation.
	for field, value := range map[string]any{
		"Amount": "100.50", "CommandID": "Payment", "PartyB": "0705912645", "Remarks": "x",
		"ResultURL": "", "QueueTimeOutURL": "ftp://x", "InitiatorName": "", "SecurityCredential": "", "PartyA": "abc",
	} {
		b := b2cBody(f, rcv, "p-bad", "254705912645", 100)
		b[field] = value
		st, m := c.post(PathB2C, b)
		wantError(t, st, m, 400, "400.002.02", "Bad Request - Invalid "+field)
	}
	if f.B2CCount() != len(cases) {
		t.Fatalf("B2CCount %d", f.B2CCount())
	}
}

func TestB2CRejectDuplicates(t *testing.T) {
	f := New(t, Options{RejectDuplicateOriginatorConversationID: true})
	c := newClient(t, f)
	rcv := newReceiver(t)
	if st, m := c.post(PathB2C, b2cBody(f, rcv, "once", "254705912645", 100)); st != 200 {
		t.Fatalf("%d %v", st, m)
	}
	st, m := c.post(PathB2C, b2cBody(f, rcv, "once", "254705912645", 100))
	wantError(t, st, m, 500, "500.002.1001", "Duplicate OriginatorConversationID.")
	if f.B2CCount() != 1 || f.B2CCountFor("once") != 2 {
		t.Fatalf("counts %d %d", f.B2CCount(), f.B2CCountFor("once"))
	}
}

func TestB2CQueueTimeout(t *testing.T) {
	f := New(t, Options{})
	c := newClient(t, f)
	rcv := newReceiver(t)
	utility0, _, _ := f.Balances()
	f.ScriptB2C("254705912645", ResultScript{QueueTimeout: true})
	st, m := c.post(PathB2C, b2cBody(f, rcv, "slow-1", "254705912645", 100))
	if st != 200 {
		t.Fatalf("%d %v", st, m)
	}
	res := get(decode(t, rcv.waitBodies(t, "/b2c/timeout", 1)[0]), "Result")
	if get(res, "ResultType") != json.Number("1") || get(res, "OriginatorConversationID") != "slow-1" || get(res, "ConversationID") != m["ConversationID"] {
		t.Fatalf("time-out notice %v", res)
	}
	// A sentinel payment to another number: once its result is in, the timed-out one has none.
	st, _ = c.post(PathB2C, b2cBody(f, rcv, "sentinel", "254705912646", 100))
	if st != 200 {
		t.Fatal(st)
	}
	results := rcv.waitBodies(t, "/b2c/result", 1)
	if len(results) != 1 || get(decode(t, results[0]), "Result", "OriginatorConversationID") != "sentinel" {
		t.Fatalf("results %q", results)
	}
	if p := f.B2CPayments(); !p[0].QueueTimedOut || p[0].Result != "" {
		t.Fatalf("record %+v", p[0])
	}
	if utility, _, _ := f.Balances(); utility != utility0-100_00 {
		t.Fatalf("timed-out payment debited: %d", utility0-utility)
	}
}

// ---- Transaction Status, Reversal, Account Balance ----

func initiatorBody(f *Server, rcv *receiver, prefix string) map[string]any {
	return map[string]any{
		"Initiator":          f.InitiatorName(),
		"SecurityCredential": f.SecurityCredential(f.InitiatorPassword()),
		"ResultURL":          rcv.url("/" + prefix + "/result"),
		"QueueTimeOutURL":    rcv.url("/" + prefix + "/timeout"),
		"Remarks":            "ok",
	}
}

func TestTransactionStatus(t *testing.T) {
	f := New(t, Options{})
	c := newClient(t, f)
	rcv := newReceiver(t)
	cid := push(t, c, stkBody(f, rcv.url("/cb"), SandboxMSISDN, "INV-3"))["CheckoutRequestID"].(string)
	rcv.waitBodies(t, "/cb", 1)
	pushRec, _ := f.STKPushByID(cid)
	if st, m := c.post(PathB2C, b2cBody(f, rcv, "b2c-77", "254705912645", 300)); st != 200 {
		t.Fatalf("%d %v", st, m)
	}
	b2cRes := get(decode(t, rcv.waitBodies(t, "/b2c/result", 1)[0]), "Result")

	query := func(extra map[string]any) (map[string]any, map[string]any) {
		t.Helper()
		b := initiatorBody(f, rcv, "ts")
		b["CommandID"] = "TransactionStatusQuery"
		b["PartyA"] = "600782"
		b["IdentifierType"] = "4"
		b["Occasion"] = "OK"
		for k, v := range extra {
			b[k] = v
		}
		n := len(rcv.bodies("/ts/result"))
		st, ack := c.post(PathTransactionStatus, b)
		if st != 200 || ack["ResponseCode"] != "0" || ack["OriginatorConversationID"] == "" || ack["ConversationID"] == "" {
			t.Fatalf("ack %d %v", st, ack)
		}
		res := get(decode(t, rcv.waitBodies(t, "/ts/result", n+1)[n]), "Result")
		if get(res, "OriginatorConversationID") != ack["OriginatorConversationID"] {
			t.Fatalf("result of another query: %v", res)
		}
		return ack, res.(map[string]any)
	}

	_, res := query(map[string]any{"TransactionID": pushRec.ReceiptNumber})
	p := params(t, get(res, "ResultParameters", "ResultParameter"), "Key")
	if res["ResultCode"] != json.Number("0") || p["TransactionStatus"] != "Completed" || p["ReceiptNo"] != pushRec.ReceiptNumber ||
		p["Amount"] != "1" || p["DebitPartyName"] != SandboxMSISDN+" - FAKE CUSTOMER" || get(res, "ReferenceData", "ReferenceItem", "Value") != "OK" {
		t.Fatalf("STK status %v %v", res, p)
	}

	// By the B2C OriginatorConversationID, with the sample body's spelling "Command ID".
	_, res = query(map[string]any{"OriginalConversationID": "b2c-77", "CommandID": nil, "Command ID": "TransactionStatusQuery"})
	p = params(t, get(res, "ResultParameters", "ResultParameter"), "Key")
	if res["ResultCode"] != json.Number("0") || p["ReceiptNo"] != get(b2cRes, "TransactionID") || p["Amount"] != "300" ||
		p["ConversationID"] != get(b2cRes, "ConversationID") || p["ReasonType"] != "Business Payment to Customer via API" {
		t.Fatalf("B2C status %v", p)
	}

	_, res = query(map[string]any{"TransactionID": "NOPE000000"})
	if res["ResultCode"] != "R000002" || res["ResultParameters"] != nil {
		t.Fatalf("unknown %v", res)
	}
	_, res = query(map[string]any{"TransactionID": pushRec.ReceiptNumber, "SecurityCredential": f.SecurityCredential("bad")})
	if res["ResultCode"] != json.Number("2001") {
		t.Fatalf("bad credential %v", res)
	}
	f.ScriptTransactionStatus(pushRec.ReceiptNumber, ResultScript{QueueTimeout: true})
	b := initiatorBody(f, rcv, "ts")
	b["CommandID"], b["PartyA"], b["IdentifierType"], b["TransactionID"] = "TransactionStatusQuery", "600782", "4", pushRec.ReceiptNumber
	if st, m := c.post(PathTransactionStatus, b); st != 200 {
		t.Fatalf("%d %v", st, m)
	}
	rcv.waitBodies(t, "/ts/timeout", 1)

	delete(b, "TransactionID")
	st, m := c.post(PathTransactionStatus, b)
	wantError(t, st, m, 400, "400.002.02", "Bad Request - Invalid TransactionID")
	if f.TransactionStatusCount() != 5 {
		t.Fatalf("TransactionStatusCount %d", f.TransactionStatusCount())
	}
}

func TestReversal(t *testing.T) {
	f := New(t, Options{})
	c := newClient(t, f)
	rcv := newReceiver(t)
	body := stkBody(f, rcv.url("/cb"), SandboxMSISDN, "INV-R")
	body["Amount"] = 200
	cid := push(t, c, body)["CheckoutRequestID"].(string)
	rec, _ := f.STKPushByID(cid)
	utility0, _, _ := f.Balances()

	reverse := func(txID string) map[string]any {
		t.Helper()
		b := initiatorBody(f, rcv, "rev")
		b["CommandID"], b["TransactionID"], b["Amount"], b["ReceiverParty"], b["RecieverIdentifierType"] =
			"TransactionReversal", txID, "200", "174379", "11"
		b["Remarks"] = "Payment reversal"
		n := len(rcv.bodies("/rev/result"))
		st, ack := c.post(PathReversal, b)
		if st != 200 || ack["ResponseCode"] != "0" || ack["ResponseDescription"] != "Accept the service request successfully." {
			t.Fatalf("ack %d %v", st, ack)
		}
		return get(decode(t, rcv.waitBodies(t, "/rev/result", n+1)[n]), "Result").(map[string]any)
	}

	res := reverse(rec.ReceiptNumber)
	p := params(t, get(res, "ResultParameters", "ResultParameter"), "Key")
	if res["ResultCode"] != json.Number("0") || p["OriginalTransactionID"] != rec.ReceiptNumber || p["Amount"] != json.Number("200.00") ||
		p["CreditPartyPublicName"] != SandboxMSISDN+" - FAKE CUSTOMER" || p["TransCompletedTime"] == nil ||
		p["DebitAccountBalance"] != fmt.Sprintf("Utility Account|KES|%s|%s|0.00|0.00", cents(utility0-200_00), cents(utility0-200_00)) {
		t.Fatalf("reversal %v %v", res, p)
	}
	if !f.Reversed(rec.ReceiptNumber) {
		t.Fatal("not recorded as reversed")
	}
	if res := reverse(rec.ReceiptNumber); res["ResultCode"] != "R000001" || res["ResultDesc"] != "The transaction has already been reversed" {
		t.Fatalf("twice %v", res)
	}
	if res := reverse("NOPE000000"); res["ResultCode"] != "R000002" || res["ResultDesc"] != "The OriginalTransactionID is invalid." {
		t.Fatalf("unknown %v", res)
	}
	if f.ReversalCount() != 3 {
		t.Fatalf("ReversalCount %d", f.ReversalCount())
	}
	b := initiatorBody(f, rcv, "rev")
	b["CommandID"], b["TransactionID"], b["Amount"], b["ReceiverParty"], b["RecieverIdentifierType"] = "Reversal", "X", "1", "174379", "11"
	st, m := c.post(PathReversal, b)
	wantError(t, st, m, 400, "400.002.02", "Bad Request - Invalid CommandID")
}

func TestAccountBalance(t *testing.T) {
	f := New(t, Options{UtilityAccountCents: 228037_00, WorkingAccountCents: 700000_00, ChargesPaidAccountCents: -1540_00})
	c := newClient(t, f)
	rcv := newReceiver(t)
	b := initiatorBody(f, rcv, "bal")
	b["CommandID"], b["PartyA"], b["IdentifierType"] = "AccountBalance", "600000", "4"
	st, ack := c.post(PathAccountBalance, b)
	if st != 200 || ack["ResponseCode"] != "0" || ack["ResponseDescription"] != "Accept the service request successfully" {
		t.Fatalf("ack %d %v", st, ack)
	}
	raw := rcv.waitBodies(t, "/bal/result", 1)[0]
	res := get(decode(t, raw), "Result")
	p := params(t, get(res, "ResultParameters", "ResultParameter"), "Key")
	want := "Working Account|KES|700000.00|700000.00|0.00|0.00&Float Account|KES|0.00|0.00|0.00|0.00&" +
		"Utility Account|KES|228037.00|228037.00|0.00|0.00&Charges Paid Account|KES|-1540.00|-1540.00|0.00|0.00&" +
		"Organization Settlement Account|KES|0.00|0.00|0.00|0.00"
	if get(res, "ResultType") != "0" || get(res, "ResultCode") != "0" || p["AccountBalance"] != want ||
		!regexp.MustCompile(`^\d{14}$`).MatchString(p["BOCompletedTime"].(string)) {
		t.Fatalf("balance %s", raw)
	}

	f.ScriptAccountBalance("600000", ResultScript{Result: "2001"})
	if st, m := c.post(PathAccountBalance, b); st != 200 {
		t.Fatalf("%d %v", st, m)
	}
	res = get(decode(t, rcv.waitBodies(t, "/bal/result", 2)[1]), "Result")
	if get(res, "ResultCode") != "2001" || get(res, "ResultParameters") != nil {
		t.Fatalf("scripted %v", res)
	}
	f.ScriptAccountBalance("600000", ResultScript{QueueTimeout: true})
	if st, m := c.post(PathAccountBalance, b); st != 200 {
		t.Fatalf("%d %v", st, m)
	}
	rcv.waitBodies(t, "/bal/timeout", 1)
	if f.AccountBalanceCount() != 3 {
		t.Fatalf("AccountBalanceCount %d", f.AccountBalanceCount())
	}
}

// ---- faults ----

func TestFaultsBeforeProcessing(t *testing.T) {
	f := New(t, Options{})
	c := newClient(t, f)
	rcv := newReceiver(t)
	body := stkBody(f, rcv.url("/cb"), SandboxMSISDN, "F-1")

	// Hang: the client gives up; nothing was pushed.
	f.HangNext(PathSTKPush, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := c.hc.Do(c.request(PathSTKPush, body).WithContext(ctx))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hang: %v", err)
	}
	// Drop: the connection closes without an answer.
	f.DropNext(PathSTKPush, 1)
	if _, err := c.hc.Do(c.request(PathSTKPush, body)); err == nil {
		t.Fatal("drop: an answer")
	}
	// 429 and 5xx with Daraja's error body; FailNext with a custom body.
	f.StatusNext(PathSTKPush, 1, http.StatusTooManyRequests)
	f.StatusNext(PathSTKPush, 1, http.StatusServiceUnavailable)
	f.FailNext(PathSTKPush, 1, Fault{Kind: FaultStatus, ErrorCode: "500.003.03", ErrorMessage: "Quota Violation"})
	st, m := c.post(PathSTKPush, body)
	wantError(t, st, m, 429, "500.003.02", "Error Occurred: Spike Arrest Violation")
	st, m = c.post(PathSTKPush, body)
	wantError(t, st, m, 503, "500.003.1001", "Internal Server Error")
	st, m = c.post(PathSTKPush, body)
	wantError(t, st, m, 500, "500.003.03", "Quota Violation")
	if f.STKPushCount() != 0 {
		t.Fatalf("refused requests pushed: %d", f.STKPushCount())
	}
	// The faults are used up: the next request is served.
	push(t, c, body)
	if f.STKPushCount() != 1 || f.RequestCount(PathSTKPush) != 6 {
		t.Fatalf("pushes %d requests %d", f.STKPushCount(), f.RequestCount(PathSTKPush))
	}

	// The token endpoint fails the same way.
	f.StatusNext(PathOAuth, 2, 500)
	st, m = c.oauth(f.ConsumerKey(), f.ConsumerSecret(), "client_credentials")
	wantError(t, st, m, 500, "500.003.1001", "Internal Server Error")
	f.ClearFaults()
	c.token = c.fetchToken()
	if f.TokenCount() != 2 {
		t.Fatalf("TokenCount %d", f.TokenCount())
	}

	// Latency.
	f.SetLatency(50 * time.Millisecond)
	start := time.Now()
	push(t, c, body)
	if time.Since(start) < 50*time.Millisecond {
		t.Fatal("no latency")
	}
	f.SetLatency(0)
}

func TestFaultsAfterProcessing(t *testing.T) {
	f := New(t, Options{})
	c := newClient(t, f)
	rcv := newReceiver(t)

	// The push reached the customer but the answer was lost: counted, and the callback comes.
	f.FailNext(PathSTKPush, 1, Fault{Kind: FaultHang, Processed: true})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := c.hc.Do(c.request(PathSTKPush, stkBody(f, rcv.url("/cb"), SandboxMSISDN, "LOST-1")).WithContext(ctx))
	cancel()
	if err == nil {
		t.Fatal("an answer")
	}
	if f.STKPushCountFor(SandboxMSISDN, "LOST-1") != 1 {
		t.Fatalf("pushes %d", f.STKPushCountFor(SandboxMSISDN, "LOST-1"))
	}
	cb := decode(t, rcv.waitBodies(t, "/cb", 1)[0])
	if get(cb, "Body", "stkCallback", "CheckoutRequestID") != f.STKPushes()[0].CheckoutRequestID {
		t.Fatalf("callback %v", cb)
	}

	f.FailNext(PathSTKPush, 1, Fault{Kind: FaultDrop, Processed: true})
	if _, err := c.hc.Do(c.request(PathSTKPush, stkBody(f, rcv.url("/cb"), SandboxMSISDN, "LOST-2"))); err == nil {
		t.Fatal("drop: an answer")
	}
	f.FailNext(PathB2C, 1, Fault{Kind: FaultStatus, Status: 503, Processed: true})
	st, m := c.post(PathB2C, b2cBody(f, rcv, "lost-b2c", "254705912645", 100))
	wantError(t, st, m, 503, "500.003.1001", "Internal Server Error")
	rcv.waitBodies(t, "/b2c/result", 1)
	if f.STKPushCount() != 2 || f.B2CCountFor("lost-b2c") != 1 {
		t.Fatalf("pushes %d b2c %d", f.STKPushCount(), f.B2CCountFor("lost-b2c"))
	}
}

func TestCallbackDelivery(t *testing.T) {
	f := New(t, Options{})
	c := newClient(t, f)
	rcv := newReceiver(t)
	f.ScriptPhone("254700000010", STKScript{Delivery: DeliverTwice})
	f.ScriptPhone("254700000011", STKScript{Delivery: DeliverNever})
	f.ScriptPhone("254700000012", STKScript{CallbackDelay: 500 * time.Millisecond})

	// Late: not there right after the acknowledgement, there later.
	start := time.Now()
	push(t, c, stkBody(f, rcv.url("/late"), "254700000012", "L"))
	if len(rcv.bodies("/late")) != 0 {
		t.Fatal("late callback came at once")
	}
	rcv.waitBodies(t, "/late", 1)
	if time.Since(start) < 500*time.Millisecond {
		t.Fatal("late callback was not late")
	}

	// Twice: two identical bodies.
	push(t, c, stkBody(f, rcv.url("/twice"), "254700000010", "T"))
	two := rcv.waitBodies(t, "/twice", 2)
	if !bytes.Equal(two[0], two[1]) {
		t.Fatalf("copies differ: %s / %s", two[0], two[1])
	}

	// Never: no callback (none is ever scheduled), but the query knows the outcome, and
	// SendCallback sends one on demand.
	cid := push(t, c, stkBody(f, rcv.url("/never"), "254700000011", "N"))["CheckoutRequestID"].(string)
	push(t, c, stkBody(f, rcv.url("/sentinel"), SandboxMSISDN, "S"))
	rcv.waitBodies(t, "/sentinel", 1)
	if len(rcv.bodies("/never")) != 0 {
		t.Fatal("a callback for DeliverNever")
	}
	if st, m := c.post(PathSTKQuery, queryBody(f, cid)); st != 200 || m["ResultCode"] != "0" {
		t.Fatalf("query %d %v", st, m)
	}
	if !f.SendCallback(cid) || f.SendCallback("ws_CO_nope") {
		t.Fatal("SendCallback")
	}
	rcv.waitBodies(t, "/never", 1)

	// B2C results late and twice.
	f.ScriptB2C("254705912645", ResultScript{Delivery: DeliverTwice, CallbackDelay: 100 * time.Millisecond})
	if st, m := c.post(PathB2C, b2cBody(f, rcv, "twice", "254705912645", 100)); st != 200 {
		t.Fatalf("%d %v", st, m)
	}
	rcv.waitBodies(t, "/b2c/result", 2)

	// A receiver that fails is counted, and not retried.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer bad.Close()
	push(t, c, stkBody(f, bad.URL+"/cb", SandboxMSISDN, "B"))
	waitFor(t, "a failed callback", func() bool { return f.CallbacksFailed() == 1 })
	var failed CallbackRecord
	for _, r := range f.Callbacks() {
		if r.Status == 503 {
			failed = r
		}
	}
	if failed.URL != bad.URL+"/cb" {
		t.Fatalf("records %+v", f.Callbacks())
	}
}
