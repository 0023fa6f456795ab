// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package fakepawapay

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testClock is an injectable clock that only moves when told to.
type testClock struct{ now atomic.Int64 }

func newClock() *testClock {
	c := &testClock{}
	c.now.Store(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *testClock) Now() time.Time          { return time.Unix(0, c.now.Load()).UTC() }
func (c *testClock) Advance(d time.Duration) { c.now.Add(int64(d)) }

// receiver is a callback endpoint that records what it receives.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []received
	code int
}

type received struct {
	req  *http.Request
	body []byte
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{code: http.StatusOK}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{r, body})
		code := rc.code
		rc.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) all() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// waitFor polls until n callbacks have arrived (generous limit, short steps).
func (rc *receiver) waitFor(t *testing.T, n int) []received {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if got := rc.all(); len(got) >= n {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("waited for %d callbacks, got %d", n, len(rc.all()))
	return nil
}

type env struct {
	fake  *Server
	clock *testClock
	cb    *receiver
	http  *http.Client
}

func newEnv(t *testing.T, mod func(*Options)) *env {
	t.Helper()
	e := &env{clock: newClock(), cb: newReceiver(t), http: &http.Client{Timeout: 5 * time.Second}}
	opts := Options{
		Clock:              e.clock.Now,
		DepositCallbackURL: e.cb.srv.URL + "/deposits",
		PayoutCallbackURL:  e.cb.srv.URL + "/payouts",
		RefundCallbackURL:  e.cb.srv.URL + "/refunds",
		SignCallbacks:      true,
	}
	if mod != nil {
		mod(&opts)
	}
	e.fake = New(t, opts)
	return e
}

// call sends a request with the fake's token and decodes the JSON answer into a map (or a slice).
func (e *env) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	code, raw := e.raw(t, method, path, "Bearer "+e.fake.Token, body)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s %s: answer %s is not a JSON object: %v", method, path, raw, err)
	}
	return code, m
}

func (e *env) raw(t *testing.T, method, path, auth string, body any) (int, []byte) {
	t.Helper()
	resp, err := e.do(method, path, auth, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (e *env) do(method, path, auth string, body any) (*http.Response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.fake.URL()+path, rd)
	if err != nil {
		return nil, err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	return e.http.Do(req)
}

var idSeq atomic.Int64

// newID is a fresh UUIDv4-shaped id.
func newID() string {
	return fmt.Sprintf("f4401bd2-1568-4140-bf2d-%012d", idSeq.Add(1))
}

func deposit(id, phone, provider, amount, currency string) map[string]any {
	return map[string]any{
		"depositId": id, "amount": amount, "currency": currency,
		"payer": map[string]any{"type": "MMO", "accountDetails": map[string]any{"phoneNumber": phone, "provider": provider}},
	}
}

func payout(id, phone, provider, amount, currency string) map[string]any {
	return map[string]any{
		"payoutId": id, "amount": amount, "currency": currency,
		"recipient": map[string]any{"type": "MMO", "accountDetails": map[string]any{"phoneNumber": phone, "provider": provider}},
	}
}

func str(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = mm[p]
	}
	s, _ := cur.(string)
	return s
}

const vodaPhone = "255741234567"

func TestAuthentication(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		name, auth string
		code       int
		failure    string
	}{
		{"missing", "", http.StatusUnauthorized, "NO_AUTHENTICATION"},
		{"not bearer", "Basic abc", http.StatusUnauthorized, "NO_AUTHENTICATION"},
		{"wrong token", "Bearer nope", http.StatusForbidden, "AUTHENTICATION_ERROR"},
		{"right token", "Bearer " + e.fake.Token, http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := e.raw(t, http.MethodGet, "/v2/deposits/"+newID(), tc.auth, nil)
			if code != tc.code {
				t.Fatalf("HTTP %d, want %d (%s)", code, tc.code, raw)
			}
			var m map[string]any
			_ = json.Unmarshal(raw, &m)
			if tc.failure != "" && str(m, "failureReason", "failureCode") != tc.failure {
				t.Fatalf("body %s, want failureCode %s", raw, tc.failure)
			}
			if tc.failure == "" && str(m, "status") != "NOT_FOUND" {
				t.Fatalf("body %s, want NOT_FOUND", raw)
			}
		})
	}
	// A rejected authentication does not reach the API.
	e.raw(t, http.MethodPost, "/v2/deposits", "Bearer nope", deposit(newID(), vodaPhone, "VODACOM_TZA", "1000", "TZS"))
	if n := len(e.fake.Counters().DepositInitiations); n != 0 {
		t.Fatalf("unauthenticated deposit counted: %d", n)
	}
}

func TestDepositValidation(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		name    string
		body    any
		code    int
		failure string
	}{
		{"unparsable", `{"depositId":`, 400, "INVALID_INPUT"},
		{"amount as number", `{"depositId":"` + newID() + `","amount":1000}`, 400, "INVALID_INPUT"},
		{"unknown field", map[string]any{"depositId": newID(), "bogus": 1}, 400, "UNSUPPORTED_PARAMETER"},
		{"missing depositId", deposit("", vodaPhone, "VODACOM_TZA", "1000", "TZS"), 400, "MISSING_PARAMETER"},
		{"not a UUID", deposit("order-42", vodaPhone, "VODACOM_TZA", "1000", "TZS"), 400, "INVALID_PARAMETER"},
		{"UUID v1", deposit("f4401bd2-1568-1140-bf2d-eb77d2b2b639", vodaPhone, "VODACOM_TZA", "1000", "TZS"), 400, "INVALID_PARAMETER"},
		{"missing payer", map[string]any{"depositId": newID(), "amount": "1000", "currency": "TZS"}, 400, "MISSING_PARAMETER"},
		{"payer not MMO", map[string]any{"depositId": newID(), "amount": "1000", "currency": "TZS",
			"payer": map[string]any{"type": "MSISDN", "accountDetails": map[string]any{"phoneNumber": vodaPhone, "provider": "VODACOM_TZA"}}}, 400, "INVALID_PARAMETER"},
		{"short customerMessage", func() map[string]any {
			d := deposit(newID(), vodaPhone, "VODACOM_TZA", "1000", "TZS")
			d["customerMessage"] = "ab"
			return d
		}(), 400, "INVALID_PARAMETER"},
		{"unknown provider", deposit(newID(), vodaPhone, "VODACOM_MPESA_TZA", "1000", "TZS"), 200, "INVALID_PROVIDER"},
		{"wrong currency", deposit(newID(), vodaPhone, "VODACOM_TZA", "1000", "KES"), 200, "INVALID_CURRENCY"},
		{"bad phone", deposit(newID(), "25574123", "VODACOM_TZA", "1000", "TZS"), 200, "INVALID_PHONE_NUMBER"},
		{"phone of another country", deposit(newID(), "254712345678", "VODACOM_TZA", "1000", "TZS"), 200, "INVALID_PHONE_NUMBER"},
		{"decimals on a NONE provider", deposit(newID(), vodaPhone, "VODACOM_TZA", "1000.50", "TZS"), 200, "INVALID_AMOUNT"},
		{"three decimals", deposit(newID(), vodaPhone, "VODACOM_TZA", "1000.555", "TZS"), 200, "INVALID_AMOUNT"},
		{"leading zero", deposit(newID(), vodaPhone, "VODACOM_TZA", "01000", "TZS"), 200, "INVALID_AMOUNT"},
		{"negative", deposit(newID(), vodaPhone, "VODACOM_TZA", "-1000", "TZS"), 200, "INVALID_AMOUNT"},
		{"below minimum", deposit(newID(), vodaPhone, "VODACOM_TZA", "99", "TZS"), 200, "AMOUNT_OUT_OF_BOUNDS"},
		{"above maximum", deposit(newID(), vodaPhone, "VODACOM_TZA", "5000001", "TZS"), 200, "AMOUNT_OUT_OF_BOUNDS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, m := e.call(t, http.MethodPost, "/v2/deposits", tc.body)
			if code != tc.code || str(m, "status") != StatusRejected || str(m, "failureReason", "failureCode") != tc.failure {
				t.Fatalf("HTTP %d %v, want %d REJECTED %s", code, m, tc.code, tc.failure)
			}
			if str(m, "failureReason", "failureMessage") == "" {
				t.Fatalf("no failureMessage in %v", m)
			}
		})
	}
	c := e.fake.Counters()
	if len(c.DepositsCreated) != 0 {
		t.Fatalf("rejected deposits were created: %v", c.DepositsCreated)
	}
	// The limits bound inclusively.
	for _, amount := range []string{"100", "5000000"} {
		if _, m := e.call(t, http.MethodPost, "/v2/deposits", deposit(newID(), vodaPhone, "VODACOM_TZA", amount, "TZS")); str(m, "status") != StatusAccepted {
			t.Fatalf("amount %s: %v", amount, m)
		}
	}
}

func TestDepositAcceptedThenCompletedByStatusChecks(t *testing.T) {
	e := newEnv(t, nil)
	e.fake.Script(vodaPhone, Scenario{SettleAfterChecks: 2})
	id := newID()
	body := deposit(id, vodaPhone, "VODACOM_TZA", "15000", "TZS")
	body["clientReferenceId"] = "INV-123456"
	body["customerMessage"] = "Paygate order"
	body["metadata"] = []map[string]any{{"orderId": "ORD-1"}, {"customerId": "c@example.com", "isPII": true}}
	code, m := e.call(t, http.MethodPost, "/v2/deposits", body)
	if code != 200 || str(m, "status") != StatusAccepted || str(m, "depositId") != id || str(m, "created") != "2026-03-01T09:00:00Z" {
		t.Fatalf("initiate: HTTP %d %v", code, m)
	}
	for i, want := range []string{StatusProcessing, StatusProcessing, StatusCompleted, StatusCompleted} {
		_, m := e.call(t, http.MethodGet, "/v2/deposits/"+id, nil)
		if str(m, "status") != "FOUND" || str(m, "data", "status") != want {
			t.Fatalf("check %d: %v, want FOUND %s", i+1, m, want)
		}
		if want == StatusCompleted {
			d := m["data"].(map[string]any)
			if d["providerTransactionId"] == "" || d["amount"] != "15000" || d["currency"] != "TZS" || d["country"] != "TZA" ||
				str(d, "payer", "accountDetails", "provider") != "VODACOM_TZA" || d["clientReferenceId"] != "INV-123456" ||
				str(d, "metadata", "orderId") != "ORD-1" || d["failureReason"] != nil {
				t.Fatalf("completed data: %v", d)
			}
		}
	}
	if got := e.fake.Counters().StatusChecks[OpDeposit][id]; got != 4 {
		t.Fatalf("status checks counted %d, want 4", got)
	}
	if _, m := e.call(t, http.MethodGet, "/v2/deposits/"+newID(), nil); str(m, "status") != "NOT_FOUND" || m["data"] != nil {
		t.Fatalf("unknown deposit: %v", m)
	}
	// The callback came once, when the status check first saw COMPLETED.
	if got := e.cb.waitFor(t, 1); len(got) != 1 {
		t.Fatalf("callbacks: %d", len(got))
	}
}

func TestDuplicateDepositIgnored(t *testing.T) {
	e := newEnv(t, nil)
	id := newID()
	body := deposit(id, vodaPhone, "VODACOM_TZA", "2000", "TZS")
	_, first := e.call(t, http.MethodPost, "/v2/deposits", body)
	e.clock.Advance(time.Minute)
	_, second := e.call(t, http.MethodPost, "/v2/deposits", body)
	_, third := e.call(t, http.MethodPost, "/v2/deposits", deposit(id, vodaPhone, "VODACOM_TZA", "9999", "TZS"))
	if str(first, "status") != StatusAccepted || str(second, "status") != StatusDuplicateIgnored || str(third, "status") != StatusDuplicateIgnored {
		t.Fatalf("answers %v / %v / %v", first, second, third)
	}
	if str(second, "created") != str(first, "created") {
		t.Fatalf("duplicate created %q, want the original %q", str(second, "created"), str(first, "created"))
	}
	c := e.fake.Counters()
	if c.DepositInitiations[id] != 3 || c.DepositsCreated[id] != 1 || c.DuplicatesIgnored != 2 {
		t.Fatalf("counters: initiations %d created %d duplicates %d", c.DepositInitiations[id], c.DepositsCreated[id], c.DuplicatesIgnored)
	}
	if got := e.cb.waitFor(t, 1); len(got) != 1 {
		t.Fatalf("a duplicate sent a callback: %d", len(got))
	}
}

func TestSignedCallback(t *testing.T) {
	e := newEnv(t, nil)
	id := newID()
	e.call(t, http.MethodPost, "/v2/deposits", deposit(id, "254703456789", "MPESA_KEN", "150", "KES"))
	got := e.cb.waitFor(t, 1)[0]
	if got.req.URL.Path != "/deposits" || got.req.Method != http.MethodPost || got.req.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("callback %s %s %v", got.req.Method, got.req.URL, got.req.Header)
	}
	var d map[string]any
	if err := json.Unmarshal(got.body, &d); err != nil {
		t.Fatal(err)
	}
	if d["depositId"] != id || d["status"] != StatusCompleted || d["amount"] != "150" || d["currency"] != "KES" || d["country"] != "KEN" ||
		str(d, "payer", "type") != "MMO" || str(d, "payer", "accountDetails", "phoneNumber") != "254703456789" ||
		d["providerTransactionId"] == nil || d["created"] != "2026-03-01T09:00:00Z" {
		t.Fatalf("callback body %s", got.body)
	}
	for _, h := range []string{"Content-Digest", "Signature", "Signature-Input", "Signature-Date"} {
		if got.req.Header.Get(h) == "" {
			t.Fatalf("callback lacks %s: %v", h, got.req.Header)
		}
	}
	if !strings.Contains(got.req.Header.Get("Signature-Input"), `keyid="HTTP_EC_P256_KEY:1"`) {
		t.Fatalf("Signature-Input %q", got.req.Header.Get("Signature-Input"))
	}

	// The key the test reads over the API verifies the callback.
	code, raw := e.raw(t, http.MethodGet, "/v2/public-key/http", "Bearer "+e.fake.Token, nil)
	var keys []map[string]string
	if err := json.Unmarshal(raw, &keys); code != 200 || err != nil || len(keys) != 1 || keys[0]["id"] != CallbackKeyID {
		t.Fatalf("public keys: %d %s", code, raw)
	}
	block, _ := pem.Decode([]byte(keys[0]["key"]))
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyCallback(got.req, got.body, pub.(*ecdsa.PublicKey)); err != nil {
		t.Fatalf("verify: %v", err)
	}
	// Tampering is detected.
	if err := VerifyCallback(got.req, bytes.Replace(got.body, []byte(`"150"`), []byte(`"999"`), 1), e.fake.CallbackPublicKey()); err == nil {
		t.Fatal("a tampered body verified")
	}
	r2 := got.req.Clone(got.req.Context())
	r2.Host = "evil.example:443"
	if err := VerifyCallback(r2, got.body, e.fake.CallbackPublicKey()); err == nil {
		t.Fatal("a callback to another authority verified")
	}
	if c := e.fake.Counters(); c.CallbacksSent != 1 || c.CallbacksDelivered != 1 {
		t.Fatalf("callback counters %+v", c)
	}
}

func TestUnsignedCallbackWhenNotConfigured(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.SignCallbacks = false })
	e.call(t, http.MethodPost, "/v2/deposits", deposit(newID(), vodaPhone, "VODACOM_TZA", "1000", "TZS"))
	got := e.cb.waitFor(t, 1)[0]
	if got.req.Header.Get("Signature") != "" {
		t.Fatalf("unsigned callbacks carry a Signature: %v", got.req.Header)
	}
}

func TestSandboxNumbers(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		kind            Operation
		phone, provider string
		amount          string
		currency        string
		status, failure string
	}{
		{OpDeposit, "254703456789", "MPESA_KEN", "100", "KES", StatusCompleted, ""},
		{OpDeposit, "254703456039", "MPESA_KEN", "100", "KES", StatusFailed, "PAYMENT_NOT_APPROVED"},
		{OpDeposit, "254703456049", "MPESA_KEN", "100", "KES", StatusFailed, "INSUFFICIENT_BALANCE"},
		{OpDeposit, "254703456129", "MPESA_KEN", "100", "KES", StatusProcessing, ""},
		{OpPayout, "254703456089", "MPESA_KEN", "100", "KES", StatusFailed, "RECIPIENT_NOT_FOUND"},
		{OpDeposit, "255123656021", "TIGO_TZA", "1000", "TZS", StatusFailed, "PAYER_NOT_FOUND"},
		{OpDeposit, "255123756041", "HALOTEL_TZA", "1000", "TZS", StatusFailed, "INSUFFICIENT_BALANCE"},
		{OpDeposit, "255123456051", "AIRTEL_TZA", "1000", "TZS", StatusCompleted, ""},
		{OpPayout, "255123556082", "VODACOM_TZA", "1000", "TZS", StatusFailed, "RECIPIENT_NOT_FOUND"},
	} {
		t.Run(string(tc.kind)+" "+tc.phone, func(t *testing.T) {
			id := newID()
			path, body := "/v2/deposits", deposit(id, tc.phone, tc.provider, tc.amount, tc.currency)
			if tc.kind == OpPayout {
				path, body = "/v2/payouts", payout(id, tc.phone, tc.provider, tc.amount, tc.currency)
			}
			if _, m := e.call(t, http.MethodPost, path, body); str(m, "status") != StatusAccepted {
				t.Fatalf("initiate: %v", m)
			}
			_, m := e.call(t, http.MethodGet, path+"/"+id, nil)
			if str(m, "data", "status") != tc.status || str(m, "data", "failureReason", "failureCode") != tc.failure {
				t.Fatalf("status %v, want %s %s", m, tc.status, tc.failure)
			}
		})
	}
}

func TestSettlementByClockAndTick(t *testing.T) {
	e := newEnv(t, nil)
	e.fake.ScriptAmount("4321", Scenario{Status: StatusFailed, FailureCode: "PAYMENT_NOT_APPROVED", SettleAfter: time.Minute})
	id := newID()
	e.call(t, http.MethodPost, "/v2/deposits", deposit(id, vodaPhone, "VODACOM_TZA", "4321", "TZS"))
	if st, _ := e.fake.Status(OpDeposit, id); st != StatusProcessing {
		t.Fatalf("status %s before the minute", st)
	}
	e.fake.Tick()
	time.Sleep(20 * time.Millisecond)
	if n := len(e.cb.all()); n != 0 {
		t.Fatalf("%d callbacks before settlement", n)
	}
	e.clock.Advance(time.Minute)
	e.fake.Tick()
	got := e.cb.waitFor(t, 1)
	var d map[string]any
	_ = json.Unmarshal(got[0].body, &d)
	if d["status"] != StatusFailed || str(d, "failureReason", "failureCode") != "PAYMENT_NOT_APPROVED" || d["providerTransactionId"] != nil {
		t.Fatalf("callback %s", got[0].body)
	}
}

func TestReconciliationThenFinal(t *testing.T) {
	e := newEnv(t, nil)
	e.fake.Script(vodaPhone, Scenario{ReconciliationChecks: 2})
	id := newID()
	e.call(t, http.MethodPost, "/v2/deposits", deposit(id, vodaPhone, "VODACOM_TZA", "1000", "TZS"))
	for i, want := range []string{StatusInReconciliation, StatusInReconciliation, StatusCompleted} {
		if _, m := e.call(t, http.MethodGet, "/v2/deposits/"+id, nil); str(m, "data", "status") != want {
			t.Fatalf("check %d: %v, want %s", i+1, m, want)
		}
	}
	e.cb.waitFor(t, 1)
}

func TestFaults(t *testing.T) {
	t.Run("timeout after processing, then duplicate", func(t *testing.T) {
		e := newEnv(t, nil)
		e.fake.InjectFault(RouteInitiateDeposit, 1, Fault{Kind: FaultTimeout, Hold: 20 * time.Millisecond, Process: true})
		id := newID()
		body := deposit(id, vodaPhone, "VODACOM_TZA", "1000", "TZS")
		if resp, err := e.do(http.MethodPost, "/v2/deposits", "Bearer "+e.fake.Token, body); err == nil {
			resp.Body.Close()
			t.Fatalf("got HTTP %d through a timeout fault", resp.StatusCode)
		}
		if _, m := e.call(t, http.MethodGet, "/v2/deposits/"+id, nil); str(m, "status") != "FOUND" {
			t.Fatalf("the processed deposit is %v", m)
		}
		if _, m := e.call(t, http.MethodPost, "/v2/deposits", body); str(m, "status") != StatusDuplicateIgnored {
			t.Fatalf("retry: %v", m)
		}
		c := e.fake.Counters()
		if c.DepositsCreated[id] != 1 || c.DepositInitiations[id] != 2 || c.Requests[RouteInitiateDeposit] != 2 {
			t.Fatalf("counters %+v", c)
		}
	})
	t.Run("hang until the client's deadline, not processed", func(t *testing.T) {
		e := newEnv(t, nil)
		e.http.Timeout = 100 * time.Millisecond
		e.fake.InjectFault(RouteInitiateDeposit, 1, Fault{Kind: FaultTimeout})
		id := newID()
		start := time.Now()
		if resp, err := e.do(http.MethodPost, "/v2/deposits", "Bearer "+e.fake.Token, deposit(id, vodaPhone, "VODACOM_TZA", "1000", "TZS")); err == nil {
			resp.Body.Close()
			t.Fatal("no timeout")
		}
		if time.Since(start) < 100*time.Millisecond {
			t.Fatal("the fault did not hold the request")
		}
		e.http.Timeout = 5 * time.Second
		if _, m := e.call(t, http.MethodGet, "/v2/deposits/"+id, nil); str(m, "status") != "NOT_FOUND" {
			t.Fatalf("unprocessed deposit exists: %v", m)
		}
		if n := e.fake.Counters().DepositInitiations[id]; n != 0 {
			t.Fatalf("counted %d initiations", n)
		}
	})
	t.Run("429 and 5xx, then normal", func(t *testing.T) {
		e := newEnv(t, nil)
		e.fake.InjectFault(RouteDepositStatus, 1, Fault{Kind: FaultHTTPStatus, Status: 429})
		e.fake.InjectFault(RouteDepositStatus, 2, Fault{Kind: FaultHTTPStatus, Status: 503})
		id := newID()
		for _, want := range []int{429, 503, 503, 200} {
			if code, m := e.call(t, http.MethodGet, "/v2/deposits/"+id, nil); code != want || (code != 200 && str(m, "failureReason", "failureCode") == "") {
				t.Fatalf("HTTP %d %v, want %d", code, m, want)
			}
		}
	})
	t.Run("5xx after processing", func(t *testing.T) {
		e := newEnv(t, nil)
		e.fake.InjectFault(RouteInitiatePayout, 1, Fault{Kind: FaultHTTPStatus, Status: 500, Process: true})
		id := newID()
		if code, _ := e.call(t, http.MethodPost, "/v2/payouts", payout(id, vodaPhone, "VODACOM_TZA", "1000", "TZS")); code != 500 {
			t.Fatalf("HTTP %d", code)
		}
		if c := e.fake.Counters(); c.PayoutsCreated[id] != 1 {
			t.Fatalf("payout not created behind the 500: %+v", c.PayoutsCreated)
		}
	})
	t.Run("NOT_FOUND for the first checks", func(t *testing.T) {
		e := newEnv(t, nil)
		e.fake.Script(vodaPhone, Scenario{NotFoundChecks: 2})
		id := newID()
		e.call(t, http.MethodPost, "/v2/deposits", deposit(id, vodaPhone, "VODACOM_TZA", "1000", "TZS"))
		for i, want := range []string{"NOT_FOUND", "NOT_FOUND", "FOUND"} {
			if _, m := e.call(t, http.MethodGet, "/v2/deposits/"+id, nil); str(m, "status") != want {
				t.Fatalf("check %d: %v, want %s", i+1, m, want)
			}
		}
	})
	t.Run("NOT_FOUND for a duration", func(t *testing.T) {
		e := newEnv(t, nil)
		e.fake.Script(vodaPhone, Scenario{NotFoundFor: 30 * time.Second})
		id := newID()
		e.call(t, http.MethodPost, "/v2/deposits", deposit(id, vodaPhone, "VODACOM_TZA", "1000", "TZS"))
		if _, m := e.call(t, http.MethodGet, "/v2/deposits/"+id, nil); str(m, "status") != "NOT_FOUND" {
			t.Fatalf("%v", m)
		}
		e.clock.Advance(30 * time.Second)
		if _, m := e.call(t, http.MethodGet, "/v2/deposits/"+id, nil); str(m, "status") != "FOUND" {
			t.Fatalf("%v", m)
		}
	})
	t.Run("forget", func(t *testing.T) {
		e := newEnv(t, nil)
		id := newID()
		body := deposit(id, vodaPhone, "VODACOM_TZA", "1000", "TZS")
		e.call(t, http.MethodPost, "/v2/deposits", body)
		e.fake.Forget(OpDeposit, id)
		if _, m := e.call(t, http.MethodGet, "/v2/deposits/"+id, nil); str(m, "status") != "NOT_FOUND" {
			t.Fatalf("%v", m)
		}
		if _, m := e.call(t, http.MethodPost, "/v2/deposits", body); str(m, "status") != StatusAccepted {
			t.Fatalf("re-initiation after forget: %v", m)
		}
		if n := e.fake.Counters().DepositsCreated[id]; n != 2 {
			t.Fatalf("created %d", n)
		}
	})
	t.Run("callback late", func(t *testing.T) {
		e := newEnv(t, nil)
		e.fake.Script(vodaPhone, Scenario{CallbackDelay: 150 * time.Millisecond})
		e.call(t, http.MethodPost, "/v2/deposits", deposit(newID(), vodaPhone, "VODACOM_TZA", "1000", "TZS"))
		time.Sleep(30 * time.Millisecond)
		if n := len(e.cb.all()); n != 0 {
			t.Fatalf("%d callbacks before the delay", n)
		}
		e.cb.waitFor(t, 1)
	})
	t.Run("callback twice", func(t *testing.T) {
		e := newEnv(t, nil)
		e.fake.Script(vodaPhone, Scenario{DuplicateCallbacks: 1})
		e.call(t, http.MethodPost, "/v2/deposits", deposit(newID(), vodaPhone, "VODACOM_TZA", "1000", "TZS"))
		got := e.cb.waitFor(t, 2)
		if !bytes.Equal(got[0].body, got[1].body) {
			t.Fatalf("copies differ: %s / %s", got[0].body, got[1].body)
		}
	})
	t.Run("callback never, then resend", func(t *testing.T) {
		e := newEnv(t, nil)
		e.fake.Script(vodaPhone, Scenario{NoCallback: true})
		id := newID()
		e.call(t, http.MethodPost, "/v2/deposits", deposit(id, vodaPhone, "VODACOM_TZA", "1000", "TZS"))
		time.Sleep(30 * time.Millisecond)
		if n := len(e.cb.all()); n != 0 {
			t.Fatalf("%d callbacks", n)
		}
		if _, m := e.call(t, http.MethodPost, "/v2/deposits/resend-callback/"+id, nil); str(m, "status") != StatusAccepted || str(m, "depositId") != id {
			t.Fatalf("resend: %v", m)
		}
		e.cb.waitFor(t, 1)
		if _, m := e.call(t, http.MethodPost, "/v2/deposits/resend-callback/"+newID(), nil); str(m, "status") != StatusRejected {
			t.Fatalf("resend of an unknown deposit: %v", m)
		}
	})
	t.Run("provider closed", func(t *testing.T) {
		e := newEnv(t, nil)
		e.fake.SetAvailability("VODACOM_TZA", OpDeposit, AvailabilityClosed)
		if _, m := e.call(t, http.MethodPost, "/v2/deposits", deposit(newID(), vodaPhone, "VODACOM_TZA", "1000", "TZS")); str(m, "failureReason", "failureCode") != "PROVIDER_TEMPORARILY_UNAVAILABLE" {
			t.Fatalf("%v", m)
		}
		code, raw := e.raw(t, http.MethodGet, "/v2/availability?country=TZA&operationType=DEPOSIT", "Bearer "+e.fake.Token, nil)
		if code != 200 || !strings.Contains(string(raw), `{"provider":"VODACOM_TZA","operationTypes":[{"operationType":"DEPOSIT","status":"CLOSED"}]}`) ||
			strings.Contains(string(raw), "KEN") || strings.Contains(string(raw), "PAYOUT") {
			t.Fatalf("availability %s", raw)
		}
	})
	t.Run("payouts delayed are enqueued", func(t *testing.T) {
		e := newEnv(t, nil)
		e.fake.SetAvailability("AIRTEL_TZA", OpPayout, AvailabilityDelayed)
		id := newID()
		e.call(t, http.MethodPost, "/v2/payouts", payout(id, "255781234567", "AIRTEL_TZA", "1000", "TZS"))
		if _, m := e.call(t, http.MethodGet, "/v2/payouts/"+id, nil); str(m, "data", "status") != StatusEnqueued {
			t.Fatalf("%v", m)
		}
		e.fake.SetAvailability("AIRTEL_TZA", OpPayout, AvailabilityOperational)
		if _, m := e.call(t, http.MethodGet, "/v2/payouts/"+id, nil); str(m, "data", "status") != StatusCompleted {
			t.Fatalf("%v", m)
		}
	})
}

func TestPayoutsRefundsAndBalances(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Balances = map[string]string{"TZA": "50000", "KEN": "0"} })
	balance := func(country string) string {
		_, m := e.call(t, http.MethodGet, "/v2/wallet-balances?country="+country, nil)
		bs := m["balances"].([]any)
		if len(bs) != 1 {
			t.Fatalf("balances %v", m)
		}
		b := bs[0].(map[string]any)
		if b["country"] != country {
			t.Fatalf("balance %v", b)
		}
		return b["balance"].(string)
	}
	if b := balance("TZA"); b != "50000" {
		t.Fatalf("opening balance %s", b)
	}

	// A payout debits the wallet; its callback goes to the payout URL.
	pid := newID()
	if _, m := e.call(t, http.MethodPost, "/v2/payouts", payout(pid, vodaPhone, "VODACOM_TZA", "20000", "TZS")); str(m, "status") != StatusAccepted || str(m, "payoutId") != pid {
		t.Fatalf("payout: %v", m)
	}
	if _, m := e.call(t, http.MethodGet, "/v2/payouts/"+pid, nil); str(m, "data", "status") != StatusCompleted || str(m, "data", "recipient", "accountDetails", "phoneNumber") != vodaPhone {
		t.Fatalf("payout status: %v", m)
	}
	if got := e.cb.waitFor(t, 1); got[0].req.URL.Path != "/payouts" {
		t.Fatalf("payout callback to %s", got[0].req.URL.Path)
	}
	if b := balance("TZA"); b != "30000" {
		t.Fatalf("balance after payout %s", b)
	}
	// A payout the wallet cannot cover fails.
	kid := newID()
	e.call(t, http.MethodPost, "/v2/payouts", payout(kid, "254703456789", "MPESA_KEN", "100", "KES"))
	if _, m := e.call(t, http.MethodGet, "/v2/payouts/"+kid, nil); str(m, "data", "failureReason", "failureCode") != "PAWAPAY_WALLET_OUT_OF_FUNDS" {
		t.Fatalf("uncovered payout: %v", m)
	}

	// Deposit 10000, refund 4000 then the rest; a third refund finds nothing left.
	did := newID()
	e.call(t, http.MethodPost, "/v2/deposits", deposit(did, vodaPhone, "VODACOM_TZA", "10000", "TZS"))
	if b := balance("TZA"); b != "40000" {
		t.Fatalf("balance after deposit %s", b)
	}
	r1 := newID()
	if _, m := e.call(t, http.MethodPost, "/v2/refunds", map[string]any{"refundId": r1, "depositId": did, "amount": "4000", "currency": "TZS"}); str(m, "status") != StatusAccepted || str(m, "refundId") != r1 {
		t.Fatalf("refund: %v", m)
	}
	_, m := e.call(t, http.MethodGet, "/v2/refunds/"+r1, nil)
	if str(m, "data", "status") != StatusCompleted || str(m, "data", "amount") != "4000" || str(m, "data", "recipient", "accountDetails", "provider") != "VODACOM_TZA" {
		t.Fatalf("refund status: %v", m)
	}
	r2 := newID()
	e.call(t, http.MethodPost, "/v2/refunds", map[string]any{"refundId": r2, "depositId": did})
	if _, m := e.call(t, http.MethodGet, "/v2/refunds/"+r2, nil); str(m, "data", "status") != StatusCompleted || str(m, "data", "amount") != "6000" {
		t.Fatalf("full remaining refund: %v", m)
	}
	r3 := newID()
	e.call(t, http.MethodPost, "/v2/refunds", map[string]any{"refundId": r3, "depositId": did, "amount": "100", "currency": "TZS"})
	if _, m := e.call(t, http.MethodGet, "/v2/refunds/"+r3, nil); str(m, "data", "failureReason", "failureCode") != "DEPOSIT_ALREADY_REFUNDED" {
		t.Fatalf("refund of a refunded deposit: %v", m)
	}
	if b := balance("TZA"); b != "30000" {
		t.Fatalf("balance after refunds %s", b)
	}
	if code, m := e.call(t, http.MethodPost, "/v2/refunds", map[string]any{"refundId": newID(), "depositId": newID()}); code != 400 || str(m, "failureReason", "failureCode") != "INVALID_PARAMETER" {
		t.Fatalf("refund of an unknown deposit: %d %v", code, m)
	}
	e.cb.waitFor(t, 6) // payout, KEN payout, deposit, three refunds
	c := e.fake.Counters()
	if c.PayoutsCreated[pid] != 1 || c.RefundsCreated[r1] != 1 || c.RefundInitiations[r1] != 1 {
		t.Fatalf("counters %+v", c)
	}
}

func TestPredictProvider(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		in               string
		code             int
		country, prov, n string
	}{
		{"+255 74 123-4567", 200, "TZA", "VODACOM_TZA", "255741234567"},
		{"255781234567", 200, "TZA", "AIRTEL_TZA", "255781234567"},
		{"255651234567", 200, "TZA", "TIGO_TZA", "255651234567"},
		{"255621234567", 200, "TZA", "HALOTEL_TZA", "255621234567"},
		{"+254 712 345 678", 200, "KEN", "MPESA_KEN", "254712345678"},
		{"255123656021", 200, "TZA", "TIGO_TZA", "255123656021"}, // a sandbox number
		{"12345", 400, "", "", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			code, m := e.call(t, http.MethodPost, "/v2/predict-provider", map[string]any{"phoneNumber": tc.in})
			if code != tc.code {
				t.Fatalf("HTTP %d %v", code, m)
			}
			if code == 200 && (m["country"] != tc.country || m["provider"] != tc.prov || m["phoneNumber"] != tc.n) {
				t.Fatalf("%v", m)
			}
			if code != 200 && str(m, "failureReason", "failureCode") != "INVALID_PHONE_NUMBER" {
				t.Fatalf("%v", m)
			}
		})
	}
}

func TestActiveConf(t *testing.T) {
	e := newEnv(t, nil)
	var conf struct {
		CompanyName            string          `json:"companyName"`
		SignatureConfiguration map[string]bool `json:"signatureConfiguration"`
		Countries              []struct {
			Country   string `json:"country"`
			Prefix    string `json:"prefix"`
			Providers []struct {
				Provider   string `json:"provider"`
				Currencies []struct {
					Currency       string                       `json:"currency"`
					OperationTypes map[string]map[string]string `json:"operationTypes"`
				} `json:"currencies"`
			} `json:"providers"`
		} `json:"countries"`
	}
	_, raw := e.raw(t, http.MethodGet, "/v2/active-conf", "Bearer "+e.fake.Token, nil)
	if err := json.Unmarshal(raw, &conf); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if conf.CompanyName == "" || !conf.SignatureConfiguration["signedCallbacks"] || len(conf.Countries) != 2 {
		t.Fatalf("conf %s", raw)
	}
	tz := conf.Countries[0]
	var codes []string
	for _, p := range tz.Providers {
		codes = append(codes, p.Provider)
	}
	if tz.Country != "TZA" || tz.Prefix != "255" || strings.Join(codes, ",") != "VODACOM_TZA,AIRTEL_TZA,TIGO_TZA,HALOTEL_TZA" {
		t.Fatalf("Tanzania %+v", tz)
	}
	dep := tz.Providers[0].Currencies[0].OperationTypes["DEPOSIT"]
	if tz.Providers[0].Currencies[0].Currency != "TZS" || dep["minAmount"] != "100" || dep["maxAmount"] != "5000000" ||
		dep["decimalsInAmount"] != DecimalsNone || dep["status"] != AvailabilityOperational || dep["callbackUrl"] != e.cb.srv.URL+"/deposits" {
		t.Fatalf("VODACOM_TZA deposit %v", dep)
	}
	if conf.Countries[1].Country != "KEN" || conf.Countries[1].Providers[0].Provider != "MPESA_KEN" {
		t.Fatalf("Kenya %+v", conf.Countries[1])
	}
	_, raw = e.raw(t, http.MethodGet, "/v2/active-conf?country=KEN&operationType=PAYOUT", "Bearer "+e.fake.Token, nil)
	if !strings.Contains(string(raw), `"PAYOUT"`) || strings.Contains(string(raw), `"DEPOSIT"`) || strings.Contains(string(raw), "TZA") {
		t.Fatalf("filtered conf %s", raw)
	}
}

func TestTwoPlacesProvider(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.Providers = []Provider{{
			Code: "MTN_MOMO_ZMB", DisplayName: "MTN", Country: "ZMB", CountryName: "Zambia", Currency: "ZMW",
			CallingCode: "260", NationalDigits: 9, Prefixes: []string{"76", "96"},
			Deposit: Limits{Min: "1", Max: "20000", Decimals: DecimalsTwoPlaces},
		}}
	})
	for amount, want := range map[string]string{"15.55": StatusAccepted, "0.5": "AMOUNT_OUT_OF_BOUNDS", "15.555": "INVALID_AMOUNT", "20000.01": "AMOUNT_OUT_OF_BOUNDS"} {
		_, m := e.call(t, http.MethodPost, "/v2/deposits", deposit(newID(), "260763456789", "MTN_MOMO_ZMB", amount, "ZMW"))
		if got := str(m, "status"); got != want && str(m, "failureReason", "failureCode") != want {
			t.Fatalf("amount %s: %v, want %s", amount, m, want)
		}
	}
}

func TestConcurrentInitiationsOfOneDeposit(t *testing.T) {
	e := newEnv(t, nil)
	id := newID()
	body := deposit(id, vodaPhone, "VODACOM_TZA", "1000", "TZS")
	var wg sync.WaitGroup
	var accepted atomic.Int32
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := e.do(http.MethodPost, "/v2/deposits", "Bearer "+e.fake.Token, body)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var m map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&m)
			if m["status"] == StatusAccepted {
				accepted.Add(1)
			}
		}()
	}
	wg.Wait()
	c := e.fake.Counters()
	if accepted.Load() != 1 || c.DepositsCreated[id] != 1 || c.DepositInitiations[id] != 8 || c.DuplicatesIgnored != 7 {
		t.Fatalf("accepted %d, counters %+v", accepted.Load(), c)
	}
}

func TestSettleAndTickOnAStuckNumber(t *testing.T) {
	e := newEnv(t, nil)
	id := newID()
	e.call(t, http.MethodPost, "/v2/deposits", deposit(id, "254703456129", "MPESA_KEN", "100", "KES"))
	e.clock.Advance(time.Hour)
	e.fake.Tick()
	if st, ok := e.fake.Status(OpDeposit, id); !ok || st != StatusProcessing {
		t.Fatalf("stuck number: %s %v", st, ok)
	}
	if _, m := e.call(t, http.MethodPost, "/v2/deposits/resend-callback/"+id, nil); str(m, "status") != StatusRejected {
		t.Fatalf("resend of a pending deposit: %v", m)
	}
	e.fake.Settle(OpDeposit, id, StatusFailed, "PAYMENT_NOT_APPROVED")
	got := e.cb.waitFor(t, 1)
	if !bytes.Contains(got[0].body, []byte(`"failureCode":"PAYMENT_NOT_APPROVED"`)) {
		t.Fatalf("callback %s", got[0].body)
	}
	e.fake.ResendCallback(OpDeposit, id)
	e.cb.waitFor(t, 2)
}

// TestOneRefundAtATime: while a refund of a deposit is processing, another refund of it is
// rejected with REFUND_IN_PROGRESS (https://docs.pawapay.io/v2/docs/refunds, "One refund at a
// time"); once it is final, the next one is accepted.
func TestOneRefundAtATime(t *testing.T) {
	e := newEnv(t, nil)
	did := newID()
	e.call(t, http.MethodPost, "/v2/deposits", deposit(did, vodaPhone, "VODACOM_TZA", "10000", "TZS"))
	if _, m := e.call(t, http.MethodGet, "/v2/deposits/"+did, nil); str(m, "data", "status") != StatusCompleted {
		t.Fatalf("deposit: %v", m)
	}
	e.fake.ScriptAmount("1000", Scenario{SettleAfter: time.Minute})
	r1 := newID()
	if _, m := e.call(t, http.MethodPost, "/v2/refunds", map[string]any{"refundId": r1, "depositId": did, "amount": "1000", "currency": "TZS"}); str(m, "status") != StatusAccepted {
		t.Fatalf("first refund: %v", m)
	}
	r2 := newID()
	code, m := e.call(t, http.MethodPost, "/v2/refunds", map[string]any{"refundId": r2, "depositId": did, "amount": "2000", "currency": "TZS"})
	if code != http.StatusOK || str(m, "status") != StatusRejected || str(m, "failureReason", "failureCode") != "REFUND_IN_PROGRESS" {
		t.Fatalf("refund while another is processing: %d %v", code, m)
	}
	if _, m := e.call(t, http.MethodGet, "/v2/refunds/"+r2, nil); str(m, "status") != "NOT_FOUND" {
		t.Fatalf("a rejected refund was created: %v", m)
	}
	e.clock.Advance(time.Minute)
	if _, m := e.call(t, http.MethodPost, "/v2/refunds", map[string]any{"refundId": r2, "depositId": did, "amount": "2000", "currency": "TZS"}); str(m, "status") != StatusAccepted {
		t.Fatalf("refund after the first settled: %v", m)
	}
	if _, m := e.call(t, http.MethodGet, "/v2/refunds/"+r1, nil); str(m, "data", "status") != StatusCompleted {
		t.Fatalf("first refund: %v", m)
	}
}
