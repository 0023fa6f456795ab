// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/test/fakedaraja"
)

// The Daraja adapter is tested over real HTTP against test/fakedaraja, a fake written from
// Safaricom's published documentation that shares no code with the adapter.

const darajaTestPhone = "+" + fakedaraja.SandboxMSISDN // E.164, as Paygate holds it

var darajaTestSecret = []byte("daraja-test-callback-secret-0123456789")

type darajaClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *darajaClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *darajaClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// darajaSink is the merchant's callback server: it records every POST.
type darajaSink struct {
	srv *httptest.Server
	ch  chan darajaPost
}

type darajaPost struct {
	Path string
	Body []byte
}

func newDarajaSink(t *testing.T) *darajaSink {
	t.Helper()
	s := &darajaSink{ch: make(chan darajaPost, 256)}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.ch <- darajaPost{Path: r.URL.Path, Body: body}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ResultCode":0,"ResultDesc":"Accepted"}`)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// wait returns the next POST whose path is path.
func (s *darajaSink) wait(t *testing.T, path string) darajaPost {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case p := <-s.ch:
			if p.Path == path {
				return p
			}
		case <-deadline:
			t.Fatalf("no callback arrived at %s", path)
		}
	}
}

type darajaFixture struct {
	d     *Daraja
	fake  *fakedaraja.Server
	sink  *darajaSink
	clock *darajaClock
	cfg   DarajaConfig
}

func newDarajaFixture(t *testing.T, opts fakedaraja.Options) *darajaFixture {
	t.Helper()
	clk := &darajaClock{now: time.Date(2026, 3, 2, 6, 30, 0, 0, time.UTC)}
	opts.Clock = clk.Now
	fake := fakedaraja.New(t, opts)
	sink := newDarajaSink(t)
	cfg := darajaTestConfig(fake, sink.srv.URL+"/mpesa/cb", clk.Now)
	d, err := NewDaraja(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &darajaFixture{d: d, fake: fake, sink: sink, clock: clk, cfg: cfg}
}

func darajaTestConfig(fake *fakedaraja.Server, callbackBase string, clock func() time.Time) DarajaConfig {
	return DarajaConfig{
		BaseURL:           fake.URL(),
		ConsumerKey:       fake.ConsumerKey(),
		ConsumerSecret:    fake.ConsumerSecret(),
		ShortCode:         fake.ShortCode(),
		Passkey:           fake.Passkey(),
		TransactionType:   DarajaPayBill,
		InitiatorName:     fake.InitiatorName(),
		InitiatorPassword: fake.InitiatorPassword(),
		CertificatePEM:    fake.CertificatePEM(),
		B2CShortCode:      fakedaraja.SandboxB2CShortCode,
		CallbackBaseURL:   callbackBase,
		CallbackSecret:    darajaTestSecret,
		Timeout:           2 * time.Second,
		Clock:             clock,
	}
}

func (f *darajaFixture) push(t *testing.T, ref, phone, amount string) Result {
	t.Helper()
	res, err := f.d.Push(context.Background(), PushRequest{Reference: ref, Phone: phone, Amount: amount, Currency: "KES", Description: "Order 42"})
	if err != nil {
		t.Fatalf("Push(%s): %v", ref, err)
	}
	return res
}

func TestDarajaCapabilities(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	if got := f.d.Capabilities(); got.Deduplicates || !got.ResultsByCallback {
		t.Fatalf("Capabilities = %+v, want no de-duplication and results by callback", got)
	}
}

func TestDarajaTokenCachedAndRefreshedNearExpiry(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := f.d.AccountBalance(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.fake.TokenCount(); n != 1 {
		t.Fatalf("tokens fetched = %d after three calls, want 1 (cached)", n)
	}
	// expires_in is 3599 s; the token is refreshed after 80% of it (47 min 59 s).
	f.clock.Advance(40 * time.Minute)
	if _, err := f.d.AccountBalance(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.fake.TokenCount(); n != 1 {
		t.Fatalf("tokens fetched = %d at 40 min, want 1", n)
	}
	f.clock.Advance(9 * time.Minute)
	if _, err := f.d.AccountBalance(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.fake.TokenCount(); n != 2 {
		t.Fatalf("tokens fetched = %d at 49 min, want 2 (refreshed before expiry)", n)
	}
	// No request was ever refused for its token.
	if n := f.fake.RequestCount(fakedaraja.PathAccountBalance); n != 5 {
		t.Fatalf("account balance requests = %d, want 5 (no retries)", n)
	}
}

func TestDarajaTokenExpiresInString(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{ExpiresInString: true})
	if _, err := f.d.AccountBalance(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestDarajaOneTokenFetchUnderConcurrency(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	f.fake.SetLatency(30 * time.Millisecond) // every call overlaps the token fetch
	run := func() {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := f.d.AccountBalance(context.Background())
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	run()
	if n := f.fake.TokenCount(); n != 1 {
		t.Fatalf("tokens fetched by 20 concurrent calls = %d, want 1", n)
	}
	// Every token is now refused: each query is refused once, the first refusal drops the
	// cached token, one new token is fetched, and every query is sent again with it.
	f.fake.ExpireTokens()
	run()
	if n := f.fake.TokenCount(); n != 2 {
		t.Fatalf("tokens fetched after expiry under 20 concurrent calls = %d, want 2", n)
	}
}

func TestDarajaPushCallbackSuccess(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	const ref = "shop-ns.pay-7f3a9c.1"
	res := f.push(t, ref, darajaTestPhone, "1500.00")
	if res.Status != StatusPending || !strings.HasPrefix(res.ProviderReference, "ws_CO_") {
		t.Fatalf("Push = %+v, want PENDING with a CheckoutRequestID", res)
	}
	p, ok := f.fake.STKPushByID(res.ProviderReference)
	if !ok {
		t.Fatal("the fake has no push with the acknowledged CheckoutRequestID")
	}
	if p.Amount != 1500 || p.PhoneNumber != fakedaraja.SandboxMSISDN || p.PartyA != fakedaraja.SandboxMSISDN ||
		p.PartyB != f.fake.ShortCode() || p.TransactionType != DarajaPayBill {
		t.Fatalf("push sent = %+v", p)
	}
	if p.AccountReference != AccountReferenceFor(ref) || len(p.AccountReference) > 12 {
		t.Fatalf("AccountReference = %q, want %q (at most 12 characters)", p.AccountReference, AccountReferenceFor(ref))
	}
	if p.CallBackURL != f.d.CallbackURLFor(ref) || strings.Contains(p.CallBackURL, ref) {
		t.Fatalf("CallBackURL = %q, want the per-attempt URL %q without the reference", p.CallBackURL, f.d.CallbackURLFor(ref))
	}
	if p.TransactionDesc != "Order 42" {
		t.Fatalf("TransactionDesc = %q", p.TransactionDesc)
	}

	cb := f.sink.wait(t, mustPath(t, f.d.CallbackURLFor(ref)))
	if !f.d.VerifyCallbackPath(cb.Path, ref) {
		t.Fatal("VerifyCallbackPath refused the push's own callback path")
	}
	if f.d.VerifyCallbackPath(cb.Path, ref+"x") {
		t.Fatal("VerifyCallbackPath accepted the path for another reference")
	}
	got, err := ParseSTKCallback(cb.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got.Result.Status != StatusSuccess || got.CheckoutRequestID != res.ProviderReference ||
		got.Result.ProviderReference != res.ProviderReference || got.MpesaReceiptNumber != p.ReceiptNumber ||
		got.Result.Remark != p.ReceiptNumber || got.Amount != "1500.00" || got.PhoneNumber != fakedaraja.SandboxMSISDN {
		t.Fatalf("ParseSTKCallback = %+v", got)
	}

	// This process saw the acknowledgement, so PushStatus can ask by CheckoutRequestID.
	st, err := f.d.PushStatus(context.Background(), PushRequest{Reference: ref})
	if err != nil || st.Status != StatusSuccess || st.ProviderReference != res.ProviderReference {
		t.Fatalf("PushStatus = %+v, %v; want SUCCESS", st, err)
	}
	// A reference this process never pushed cannot be looked up: its answer is the callback's.
	if _, err := f.d.PushStatus(context.Background(), PushRequest{Reference: "other"}); !errors.Is(err, ErrNoLookupByReference) || !errors.Is(err, ErrAnswersByCallback) {
		t.Fatalf("PushStatus(unknown) error = %v, want ErrNoLookupByReference (ErrAnswersByCallback)", err)
	}
}

func TestDarajaBuyGoodsPartyB(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	cfg := f.cfg
	cfg.TransactionType, cfg.PartyB = DarajaBuyGoods, "5123456"
	d, err := NewDaraja(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Push(context.Background(), PushRequest{Reference: "till", Phone: darajaTestPhone, Amount: "10", Currency: "KES"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := f.fake.STKPushByID(res.ProviderReference)
	if p.TransactionType != DarajaBuyGoods || p.PartyB != "5123456" || p.BusinessShortCode != f.fake.ShortCode() {
		t.Fatalf("push sent = %+v", p)
	}
}

func mustPath(t *testing.T, raw string) string {
	t.Helper()
	i := strings.Index(raw, "/mpesa/cb/")
	if i < 0 {
		t.Fatalf("%q is not under the callback base", raw)
	}
	return raw[i:]
}

func TestDarajaQuerySTKPendingThenSuccess(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	f.fake.ScriptPhone(fakedaraja.SandboxMSISDN, fakedaraja.STKScript{RespondAfter: time.Minute, Delivery: fakedaraja.DeliverNever})
	res := f.push(t, "slow", darajaTestPhone, "100")
	ctx := context.Background()
	q, err := f.d.QuerySTK(ctx, res.ProviderReference)
	if err != nil || q.Status != StatusPending || q.ProviderReference != res.ProviderReference {
		t.Fatalf("QuerySTK before the customer answered = %+v, %v; want PENDING", q, err)
	}
	f.clock.Advance(2 * time.Minute)
	q, err = f.d.QuerySTK(ctx, res.ProviderReference)
	if err != nil || q.Status != StatusSuccess {
		t.Fatalf("QuerySTK after the customer paid = %+v, %v; want SUCCESS", q, err)
	}
	if _, err := f.d.QuerySTK(ctx, "ws_CO_unknown"); err == nil {
		t.Fatal("QuerySTK of an unknown CheckoutRequestID succeeded")
	}
}

func TestDarajaSTKCustomerOutcomes(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	cases := []struct {
		phone  string
		result fakedaraja.ResultCode
		want   paygatev1.FailureCode
	}{
		{"254700000001", fakedaraja.ResultCancelledByUser, paygatev1.FailureCustomerCancelled},
		{"254700000002", fakedaraja.ResultInsufficientFunds, paygatev1.FailureInsufficientFunds},
		{"254700000003", fakedaraja.ResultUnreachable, paygatev1.FailurePaymentDeclined},
		{"254700000004", fakedaraja.ResultWrongPIN, paygatev1.FailurePaymentDeclined},
		{"254700000005", fakedaraja.ResultExpired, paygatev1.FailurePaymentDeclined},
		{"254700000006", "9876", paygatev1.FailureProviderError}, // a code not in the table
	}
	for _, c := range cases {
		f.fake.ScriptPhone(c.phone, fakedaraja.STKScript{Result: c.result, Delivery: fakedaraja.DeliverNever})
		res := f.push(t, "ref-"+c.phone, "+"+c.phone, "50")
		q, err := f.d.QuerySTK(context.Background(), res.ProviderReference)
		if err != nil || q.Status != StatusFailed || q.Code != c.want || q.Message == "" {
			t.Errorf("result %s: QuerySTK = %+v, %v; want FAILED %s", c.result, q, err, c.want)
		}
	}
}

func TestDarajaPushRefusedBeforeAnyRequest(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	cases := []struct {
		name string
		req  PushRequest
		want error
	}{
		{"cents", PushRequest{Reference: "r", Phone: darajaTestPhone, Amount: "1500.50", Currency: "KES"}, ErrNotWholeShillings},
		{"one cent", PushRequest{Reference: "r", Phone: darajaTestPhone, Amount: "10.01", Currency: "KES"}, ErrNotWholeShillings},
		{"not a number", PushRequest{Reference: "r", Phone: darajaTestPhone, Amount: "1e3", Currency: "KES"}, ErrDarajaInvalidRequest},
		{"zero", PushRequest{Reference: "r", Phone: darajaTestPhone, Amount: "0.00", Currency: "KES"}, ErrDarajaInvalidRequest},
		{"negative", PushRequest{Reference: "r", Phone: darajaTestPhone, Amount: "-5", Currency: "KES"}, ErrDarajaInvalidRequest},
		{"currency", PushRequest{Reference: "r", Phone: darajaTestPhone, Amount: "10", Currency: "UGX"}, ErrDarajaInvalidRequest},
		{"phone", PushRequest{Reference: "r", Phone: "+255712345678", Amount: "10", Currency: "KES"}, ErrDarajaInvalidRequest},
		{"reference", PushRequest{Phone: darajaTestPhone, Amount: "10", Currency: "KES"}, ErrDarajaInvalidRequest},
	}
	for _, c := range cases {
		_, err := f.d.Push(context.Background(), c.req)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: error = %v, want %v", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "255712345678") {
			t.Errorf("%s: the error shows the full phone number: %v", c.name, err)
		}
	}
	if errors.Is(ErrNotWholeShillings, ErrDarajaInvalidRequest) {
		t.Fatal("ErrNotWholeShillings must be distinguishable")
	}
	if n := f.fake.RequestCount(fakedaraja.PathOAuth) + f.fake.RequestCount(fakedaraja.PathSTKPush); n != 0 {
		t.Fatalf("the fake received %d requests, want none", n)
	}
	// Same for a payout with cents.
	_, err := f.d.Disburse(context.Background(), DisbursementRequest{Reference: "p", Phone: darajaTestPhone, Amount: "99.90", Currency: "KES"})
	if !errors.Is(err, ErrNotWholeShillings) || f.fake.RequestCount(fakedaraja.PathB2C) != 0 {
		t.Fatalf("Disburse with cents: %v, %d requests", err, f.fake.RequestCount(fakedaraja.PathB2C))
	}
}

func TestDarajaAccountReference(t *testing.T) {
	alnum := regexp.MustCompile(`^[A-Z0-9]{1,12}$`)
	seen := map[string]string{}
	for _, ref := range []string{"a", "shop.pay-1.1", "shop.pay-1.2", strings.Repeat("very-long-namespace.", 20) + "7"} {
		got := AccountReferenceFor(ref)
		if !alnum.MatchString(got) {
			t.Errorf("AccountReferenceFor(%q) = %q, want 1-12 upper-case letters and digits", ref, got)
		}
		if AccountReferenceFor(ref) != got {
			t.Errorf("AccountReferenceFor(%q) is not deterministic", ref)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("AccountReferenceFor(%q) = AccountReferenceFor(%q)", ref, other)
		}
		seen[got] = ref
	}
}

func TestDarajaOriginatorConversationID(t *testing.T) {
	if got := OriginatorConversationIDFor("shop.payout-1"); got != "shop.payout-1" {
		t.Errorf("a short reference is sent as it is, got %q", got)
	}
	long := strings.Repeat("n", 60) + ".payout"
	got := OriginatorConversationIDFor(long)
	if !regexp.MustCompile(`^PG-[0-9a-f]{32}$`).MatchString(got) || got != OriginatorConversationIDFor(long) {
		t.Errorf("OriginatorConversationIDFor(long) = %q, want PG- and 32 hex digits, deterministic", got)
	}
	if OriginatorConversationIDFor("a b") == "a b" {
		t.Error("a reference with a space is sent as it is")
	}
}

func TestDarajaPushAnswerLostIsNotRetried(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	f.fake.FailNext(fakedaraja.PathSTKPush, 1, fakedaraja.Fault{Kind: fakedaraja.FaultStatus, Status: 500, Processed: true})
	res, err := f.d.Push(context.Background(), PushRequest{Reference: "lost", Phone: darajaTestPhone, Amount: "10", Currency: "KES"})
	var de *DarajaError
	if !errors.As(err, &de) || de.StatusCode != 500 {
		t.Fatalf("Push with a lost answer = %+v, %v; want a *DarajaError (outcome unknown)", res, err)
	}
	if n, m := f.fake.STKPushCount(), f.fake.RequestCount(fakedaraja.PathSTKPush); n != 1 || m != 1 {
		t.Fatalf("the fake processed %d pushes from %d requests, want exactly 1 and 1 (no retry)", n, m)
	}
	if _, err := f.d.PushStatus(context.Background(), PushRequest{Reference: "lost"}); !errors.Is(err, ErrNoLookupByReference) {
		t.Fatalf("PushStatus after a lost answer = %v, want ErrNoLookupByReference", err)
	}

	// A dropped connection and a hang: errors, one request each.
	f.fake.DropNext(fakedaraja.PathSTKPush, 1)
	if _, err := f.d.Push(context.Background(), PushRequest{Reference: "drop", Phone: darajaTestPhone, Amount: "10", Currency: "KES"}); err == nil {
		t.Fatal("Push over a dropped connection succeeded")
	}
	f.fake.HangNext(fakedaraja.PathSTKPush, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := f.d.Push(ctx, PushRequest{Reference: "hang", Phone: darajaTestPhone, Amount: "10", Currency: "KES"}); err == nil {
		t.Fatal("Push to a hanging Daraja succeeded")
	}
	if m := f.fake.RequestCount(fakedaraja.PathSTKPush); m != 3 {
		t.Fatalf("push requests = %d, want 3 (no retries)", m)
	}
}

func TestDarajaPushValidationErrorIsFinal(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	f.fake.FailNext(fakedaraja.PathSTKPush, 1, fakedaraja.Fault{Kind: fakedaraja.FaultStatus, Status: 400,
		ErrorCode: "400.002.02", ErrorMessage: "Bad Request - Invalid PhoneNumber"})
	res, err := f.d.Push(context.Background(), PushRequest{Reference: "v", Phone: darajaTestPhone, Amount: "10", Currency: "KES"})
	if err != nil || res.Status != StatusFailed || res.Code != paygatev1.FailureInvalidAccount {
		t.Fatalf("Push refused by validation = %+v, %v; want FAILED INVALID_ACCOUNT", res, err)
	}
	// A Daraja-side error with HTTP 500 (wrong passkey: "Wrong credentials") is not proof either way.
	cfg := f.cfg
	cfg.Passkey = "not-the-passkey"
	d, err := NewDaraja(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Push(context.Background(), PushRequest{Reference: "w", Phone: darajaTestPhone, Amount: "10", Currency: "KES"}); err == nil {
		t.Fatal("Push with a wrong passkey succeeded")
	} else if strings.Contains(err.Error(), "not-the-passkey") {
		t.Fatalf("the error shows the passkey: %v", err)
	}
}

func TestDarajaRejectedTokenRetriesOnlyReads(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	ctx := context.Background()
	res := f.push(t, "first", darajaTestPhone, "10")
	f.fake.ExpireTokens()
	_, err := f.d.Push(ctx, PushRequest{Reference: "second", Phone: darajaTestPhone, Amount: "10", Currency: "KES"})
	if !errors.Is(err, ErrDarajaTokenRejected) {
		t.Fatalf("Push with a rejected token: %v, want ErrDarajaTokenRejected", err)
	}
	if n, m := f.fake.STKPushCount(), f.fake.RequestCount(fakedaraja.PathSTKPush); n != 1 || m != 2 {
		t.Fatalf("pushes = %d from %d requests, want 1 from 2 (the refused one not retried)", n, m)
	}
	// The next push fetches a new token.
	f.push(t, "third", darajaTestPhone, "10")
	if n := f.fake.TokenCount(); n != 2 {
		t.Fatalf("tokens = %d, want 2", n)
	}
	// A query is retried once with a new token.
	f.fake.ExpireTokens()
	if q, err := f.d.QuerySTK(ctx, res.ProviderReference); err != nil || q.Status != StatusSuccess {
		t.Fatalf("QuerySTK after the token expired = %+v, %v", q, err)
	}
	if n := f.fake.TokenCount(); n != 3 {
		t.Fatalf("tokens = %d, want 3", n)
	}
	// B2C and reversals are not retried either.
	f.fake.ExpireTokens()
	if _, err := f.d.Disburse(ctx, DisbursementRequest{Reference: "p", Phone: darajaTestPhone, Amount: "100", Currency: "KES"}); !errors.Is(err, ErrDarajaTokenRejected) {
		t.Fatalf("Disburse with a rejected token: %v", err)
	}
	if n := f.fake.RequestCount(fakedaraja.PathB2C); n != 1 {
		t.Fatalf("B2C requests = %d, want 1", n)
	}
}

// holdingTransport holds every STK push request before sending it until release is closed, and
// says on held when one is waiting.
type holdingTransport struct {
	held    chan struct{}
	release chan struct{}
}

func (h *holdingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == fakedaraja.PathSTKPush {
		h.held <- struct{}{}
		<-h.release
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A refresh due while a push carries the old token waits for the push: fetching a new token
// would make Daraja refuse the push ("each request invalidates the previous token"), and a
// refused push is never sent again.
func TestDarajaTokenRefreshWaitsForRequestsInFlight(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	hold := &holdingTransport{held: make(chan struct{}), release: make(chan struct{})}
	cfg := f.cfg
	cfg.HTTPClient = &http.Client{Transport: hold}
	d, err := NewDaraja(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pushed := make(chan error, 1)
	go func() {
		_, err := d.Push(ctx, PushRequest{Reference: "in-flight", Phone: darajaTestPhone, Amount: "10", Currency: "KES"})
		pushed <- err
	}()
	<-hold.held                       // the push carries the first token, and is not sent yet
	f.clock.Advance(50 * time.Minute) // past the refresh point (80 % of 3599 s), before expiry
	refreshed := make(chan error, 1)
	go func() { _, err := d.accessToken(ctx); refreshed <- err }() // due for a refresh
	// Without the wait the refresh is over in milliseconds; give it a bounded chance to happen.
	deadline := time.Now().Add(300 * time.Millisecond)
	for f.fake.TokenCount() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := f.fake.TokenCount(); n != 1 {
		t.Fatalf("tokens fetched while a push carried the first = %d, want 1", n)
	}
	close(hold.release)
	if err := <-pushed; err != nil {
		t.Fatalf("the push in flight: %v", err)
	}
	if err := <-refreshed; err != nil {
		t.Fatalf("the refresh: %v", err)
	}
	if n, p := f.fake.TokenCount(), f.fake.STKPushCount(); n != 2 || p != 1 {
		t.Fatalf("tokens = %d, pushes = %d; want 2 and 1", n, p)
	}
}

func TestDarajaRateLimitAndServerErrors(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	ctx := context.Background()
	for _, status := range []int{429, 500, 503} {
		f.fake.StatusNext(fakedaraja.PathSTKPush, 1, status)
		_, err := f.d.Push(ctx, PushRequest{Reference: fmt.Sprint("s", status), Phone: darajaTestPhone, Amount: "10", Currency: "KES"})
		var de *DarajaError
		if !errors.As(err, &de) || de.StatusCode != status || de.ErrorCode == "" {
			t.Errorf("Push answered %d: %v, want a *DarajaError with the code", status, err)
		}
		f.fake.StatusNext(fakedaraja.PathB2C, 1, status)
		if _, err := f.d.Disburse(ctx, DisbursementRequest{Reference: fmt.Sprint("b", status), Phone: darajaTestPhone, Amount: "100", Currency: "KES"}); err == nil {
			t.Errorf("Disburse answered %d succeeded", status)
		}
		f.fake.StatusNext(fakedaraja.PathSTKQuery, 1, status)
		if _, err := f.d.QuerySTK(ctx, "ws_CO_x"); err == nil {
			t.Errorf("QuerySTK answered %d succeeded", status)
		}
	}
	if n := f.fake.STKPushCount() + f.fake.B2CCount(); n != 0 {
		t.Fatalf("%d operations processed, want 0", n)
	}
	// An OAuth failure is an error too, without the credentials.
	f.fake.StatusNext(fakedaraja.PathOAuth, 1, 503)
	f.fake.ExpireTokens()
	d, _ := NewDaraja(f.cfg)
	_, err := d.AccountBalance(ctx)
	if err == nil || strings.Contains(err.Error(), f.fake.ConsumerSecret()) || strings.Contains(err.Error(), f.fake.ConsumerKey()) {
		t.Fatalf("AccountBalance with the token endpoint down: %v", err)
	}
}

func TestDarajaB2CResultAtResultURL(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	const ref = "merchant-ns.payout-2026-03-02-0001" // 34 characters: sent as it is
	res, err := f.d.Disburse(context.Background(), DisbursementRequest{Reference: ref, Phone: darajaTestPhone, Amount: "1500.00", Currency: "KES"})
	if err != nil || res.Status != StatusPending || !strings.HasPrefix(res.ProviderReference, "AG_") {
		t.Fatalf("Disburse = %+v, %v; want PENDING with a ConversationID", res, err)
	}
	pays := f.fake.B2CPayments()
	if len(pays) != 1 {
		t.Fatalf("B2C payments = %d", len(pays))
	}
	p := pays[0]
	if p.OriginatorConversationID != ref || p.Amount != 1500 || p.PartyB != fakedaraja.SandboxMSISDN ||
		p.PartyA != fakedaraja.SandboxB2CShortCode || p.CommandID != DarajaBusinessPayment || p.InitiatorName != f.fake.InitiatorName() ||
		p.ResultURL != f.d.ResultURLFor(ref) || p.QueueTimeOutURL != f.d.QueueTimeoutURLFor(ref) {
		t.Fatalf("B2C sent = %+v", p)
	}
	if _, err := f.d.DisbursementStatus(context.Background(), DisbursementRequest{Reference: ref}); !errors.Is(err, ErrResultsByCallback) {
		t.Fatalf("DisbursementStatus before a result: %v, want ErrResultsByCallback", err)
	}

	post := f.sink.wait(t, mustPath(t, f.d.ResultURLFor(ref)))
	if !f.d.VerifyCallbackPath(post.Path, ref) || IsQueueTimeoutPath(post.Path) {
		t.Fatal("the result's path does not verify as a result path")
	}
	r, err := ParseResult(post.Body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Result.Status != StatusSuccess || r.OriginatorConversationID != ref || r.ConversationID != res.ProviderReference ||
		r.TransactionID != p.TransactionID || r.Parameters["TransactionAmount"] != "1500" || r.Parameters["TransactionReceipt"] != p.TransactionID {
		t.Fatalf("ParseResult = %+v", r)
	}
	// The result is the apiserver's to record; the adapter never answers a status query for B2C.
	if _, err := f.d.DisbursementStatus(context.Background(), DisbursementRequest{Reference: ref}); !errors.Is(err, ErrAnswersByCallback) {
		t.Fatalf("DisbursementStatus after a result: %v, want ErrAnswersByCallback", err)
	}

	// Transaction Status by OriginatorConversationID: acknowledgement, then the result.
	ack, err := f.d.TransactionStatus(context.Background(), TransactionStatusQuery{OriginalConversationID: ref, ResultURL: f.d.ResultURLFor("status-1")})
	if err != nil || ack.ConversationID == "" {
		t.Fatalf("TransactionStatus = %+v, %v", ack, err)
	}
	post = f.sink.wait(t, mustPath(t, f.d.ResultURLFor("status-1")))
	sr, err := ParseResult(post.Body)
	if err != nil || sr.Result.Status != StatusSuccess || sr.Parameters["TransactionStatus"] != "Completed" || sr.Parameters["ReceiptNo"] != p.TransactionID {
		t.Fatalf("transaction status result = %+v, %v", sr, err)
	}
}

func TestDarajaB2CFailureAndQueueTimeout(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	const unknown, slow = "254700000011", "254700000012"
	f.fake.ScriptB2C(unknown, fakedaraja.ResultScript{Result: fakedaraja.ResultOperatorDoesNotExist})
	f.fake.ScriptB2C(slow, fakedaraja.ResultScript{QueueTimeout: true})
	ctx := context.Background()

	if _, err := f.d.Disburse(ctx, DisbursementRequest{Reference: "bad-number", Phone: "+" + unknown, Amount: "100", Currency: "KES"}); err != nil {
		t.Fatal(err)
	}
	r, err := ParseResult(f.sink.wait(t, mustPath(t, f.d.ResultURLFor("bad-number"))).Body)
	if err != nil || r.Result.Status != StatusFailed || r.Result.Code != paygatev1.FailureInvalidAccount || r.ResultCode != "SFC_IC0003" {
		t.Fatalf("failed B2C result = %+v, %v", r, err)
	}

	if _, err := f.d.Disburse(ctx, DisbursementRequest{Reference: "queued", Phone: "+" + slow, Amount: "100", Currency: "KES"}); err != nil {
		t.Fatal(err)
	}
	post := f.sink.wait(t, mustPath(t, f.d.QueueTimeoutURLFor("queued")))
	if !f.d.VerifyCallbackPath(post.Path, "queued") || !IsQueueTimeoutPath(post.Path) {
		t.Fatal("the time-out notice's path does not verify as a time-out path")
	}
	n, err := ParseQueueTimeout(post.Body)
	if err != nil || n.Result.Status != StatusAmbiguous || n.OriginatorConversationID != "queued" {
		t.Fatalf("ParseQueueTimeout = %+v, %v; want AMBIGUOUS", n, err)
	}
}

func TestDarajaSecurityCredential(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	cred, err := f.d.securityCredential()
	if err != nil {
		t.Fatal(err)
	}
	pw, err := f.fake.DecryptSecurityCredential(cred)
	if err != nil || pw != f.fake.InitiatorPassword() {
		t.Fatalf("the fake decrypts the credential to %q, %v", pw, err)
	}
	// A wrong initiator password gives 2001 at the ResultURL: the organisation's problem.
	cfg := f.cfg
	cfg.InitiatorPassword = "wrong-password"
	d, err := NewDaraja(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Disburse(context.Background(), DisbursementRequest{Reference: "wrong-pw", Phone: darajaTestPhone, Amount: "100", Currency: "KES"}); err != nil {
		t.Fatal(err)
	}
	r, err := ParseResult(f.sink.wait(t, mustPath(t, d.ResultURLFor("wrong-pw"))).Body)
	if err != nil || r.ResultCode != "2001" || r.Result.Status != StatusFailed || r.Result.Code != paygatev1.FailureProviderError {
		t.Fatalf("B2C with a wrong initiator password = %+v, %v", r, err)
	}
}

func TestDarajaReversalAndBalance(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	ctx := context.Background()
	res := f.push(t, "to-reverse", darajaTestPhone, "250")
	cb, err := ParseSTKCallback(f.sink.wait(t, mustPath(t, f.d.CallbackURLFor("to-reverse"))).Body)
	if err != nil || cb.MpesaReceiptNumber == "" || cb.CheckoutRequestID != res.ProviderReference {
		t.Fatalf("callback = %+v, %v", cb, err)
	}
	ack, err := f.d.Reverse(ctx, ReversalRequest{TransactionID: cb.MpesaReceiptNumber, Amount: "250.00", Reference: "refund-1"})
	if err != nil || ack.ResponseCode != "0" || ack.ConversationID == "" {
		t.Fatalf("Reverse = %+v, %v", ack, err)
	}
	r, err := ParseResult(f.sink.wait(t, mustPath(t, f.d.ResultURLFor("refund-1"))).Body)
	if err != nil || r.Result.Status != StatusSuccess || r.Parameters["OriginalTransactionID"] != cb.MpesaReceiptNumber {
		t.Fatalf("reversal result = %+v, %v", r, err)
	}
	if !f.fake.Reversed(cb.MpesaReceiptNumber) {
		t.Fatal("the fake did not reverse the payment")
	}
	// Again: already reversed.
	if _, err := f.d.Reverse(ctx, ReversalRequest{TransactionID: cb.MpesaReceiptNumber, Amount: "250", Reference: "refund-2"}); err != nil {
		t.Fatal(err)
	}
	r, err = ParseResult(f.sink.wait(t, mustPath(t, f.d.ResultURLFor("refund-2"))).Body)
	if err != nil || r.Result.Status != StatusFailed || r.ResultCode != string(fakedaraja.ResultAlreadyReversed) {
		t.Fatalf("second reversal result = %+v, %v", r, err)
	}
	if _, err := f.d.Reverse(ctx, ReversalRequest{TransactionID: "X", Amount: "1.50", Reference: "r"}); !errors.Is(err, ErrNotWholeShillings) {
		t.Fatalf("Reverse with cents: %v", err)
	}

	ack, err = f.d.AccountBalance(ctx)
	if err != nil || ack.ConversationID == "" {
		t.Fatalf("AccountBalance = %+v, %v", ack, err)
	}
	post := f.sink.wait(t, mustPath(t, f.d.ResultURLFor(DarajaBalanceReference)))
	if !f.d.VerifyCallbackPath(post.Path, DarajaBalanceReference) {
		t.Fatal("the balance result's path does not verify")
	}
	br, err := ParseResult(post.Body)
	if err != nil || br.Result.Status != StatusSuccess {
		t.Fatalf("balance result = %+v, %v", br, err)
	}
	accts, err := br.Balances()
	if err != nil {
		t.Fatal(err)
	}
	utility, _, _ := f.fake.Balances()
	var found bool
	for _, a := range accts {
		if a.Name == "Utility Account" {
			found = a.Currency == "KES" && a.Available == fmt.Sprintf("%d.%02d", utility/100, utility%100)
		}
	}
	if !found {
		t.Fatalf("balances = %+v, want the utility account at %d cents", accts, utility)
	}
}

func TestDarajaNotConfiguredForB2C(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	cfg := f.cfg
	cfg.InitiatorName, cfg.InitiatorPassword, cfg.CertificatePEM, cfg.B2CShortCode = "", "", nil, ""
	d, err := NewDaraja(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Disburse(context.Background(), DisbursementRequest{Reference: "p", Phone: darajaTestPhone, Amount: "10", Currency: "KES"}); !errors.Is(err, ErrDarajaNotConfigured) {
		t.Fatalf("Disburse without B2C configuration: %v", err)
	}
	if _, err := d.AccountBalance(context.Background()); !errors.Is(err, ErrDarajaNotConfigured) {
		t.Fatalf("AccountBalance without an initiator: %v", err)
	}
}

func TestDarajaParseSTKCallbackDocumentedSamples(t *testing.T) {
	// The documented samples (MpesaExpressSimulate, "Sample Successful Callback Payload" and
	// "Sample Unsuccessful Callback Payload").
	success := `{"Body":{"stkCallback":{"MerchantRequestID":"29115-34620561-1","CheckoutRequestID":"ws_CO_191220191020363925",
	  "ResultCode":0,"ResultDesc":"The service request is processed successfully.",
	  "CallbackMetadata":{"Item":[{"Name":"Amount","Value":1.00},{"Name":"MpesaReceiptNumber","Value":"NLJ7RT61SV"},
	  {"Name":"TransactionDate","Value":20191219102115},{"Name":"PhoneNumber","Value":254708374149}]}}}}`
	r, err := ParseSTKCallback([]byte(success))
	if err != nil || r.Result.Status != StatusSuccess || r.Amount != "1.00" || r.MpesaReceiptNumber != "NLJ7RT61SV" ||
		r.TransactionDate != "20191219102115" || r.PhoneNumber != "254708374149" || r.Result.ProviderReference != "ws_CO_191220191020363925" {
		t.Fatalf("success sample = %+v, %v", r, err)
	}
	failure := `{"Body":{"stkCallback":{"MerchantRequestID":"29115-34620561-1","CheckoutRequestID":"ws_CO_191220191020363925",
	  "ResultCode":1032,"ResultDesc":"Request cancelled by user."}}}`
	r, err = ParseSTKCallback([]byte(failure))
	if err != nil || r.Result.Status != StatusFailed || r.Result.Code != paygatev1.FailureCustomerCancelled || r.ResultCode != "1032" {
		t.Fatalf("failure sample = %+v, %v", r, err)
	}
	// A code as a string reads the same.
	r, err = ParseSTKCallback([]byte(strings.Replace(failure, "1032", `"1032"`, 1)))
	if err != nil || r.Result.Code != paygatev1.FailureCustomerCancelled {
		t.Fatalf("string code = %+v, %v", r, err)
	}
	for _, bad := range []string{``, `[]`, `{}`, `{"Body":{}}`, `{"Body":{"stkCallback":{"CheckoutRequestID":"x"}}}`} {
		if _, err := ParseSTKCallback([]byte(bad)); !errors.Is(err, ErrCallbackPayload) {
			t.Errorf("ParseSTKCallback(%q) error = %v, want ErrCallbackPayload", bad, err)
		}
	}
}

func TestDarajaParseResultShapes(t *testing.T) {
	// A single ResultParameter sent as an object, and a string ResultCode.
	body := `{"Result":{"ResultType":0,"ResultCode":"2040","ResultDesc":"Credit Party customer type can't be supported by the service.",
	  "OriginatorConversationID":"o-1","ConversationID":"AG_1","TransactionID":"T1",
	  "ResultParameters":{"ResultParameter":{"Key":"TransactionAmount","Value":10.50}}}}`
	r, err := ParseResult([]byte(body))
	if err != nil || r.Result.Status != StatusFailed || r.Result.Code != paygatev1.FailureInvalidAccount || r.Parameters["TransactionAmount"] != "10.50" {
		t.Fatalf("ParseResult = %+v, %v", r, err)
	}
	for _, bad := range []string{`{}`, `{"Result":{}}`, `nope`} {
		if _, err := ParseResult([]byte(bad)); !errors.Is(err, ErrCallbackPayload) {
			t.Errorf("ParseResult(%q) error = %v, want ErrCallbackPayload", bad, err)
		}
	}
}

func TestDarajaVerifyCallbackPath(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	u := f.d.CallbackURLFor("ref-1")
	if !regexp.MustCompile(`/mpesa/cb/[A-Za-z0-9_-]{40,}$`).MatchString(u) || strings.Contains(u, "ref-1") {
		t.Fatalf("CallbackURLFor = %q, want a sealed token under the base, without the reference", u)
	}
	if u != f.d.CallbackURLFor("ref-1") {
		t.Fatal("an attempt's URL must be the same every time")
	}
	token := u[strings.LastIndex(u, "/")+1:]
	if got, ok := f.d.CallbackReference(token); !ok || got != "ref-1" {
		t.Fatalf("CallbackReference(token) = %q, %v; want ref-1", got, ok)
	}
	for _, bad := range []string{"", token[:len(token)-2], token + "AA", strings.Repeat("A", 500), "not base64!"} {
		if got, ok := f.d.CallbackReference(bad); ok {
			t.Errorf("CallbackReference(%q) = %q, true", bad, got)
		}
	}
	if !f.d.VerifyCallbackPath(u, "ref-1") || !f.d.VerifyCallbackPath(mustPath(t, u)+"/", "ref-1") {
		t.Fatal("the URL and its path (with a trailing slash) must verify")
	}
	tampered := u[:len(u)-1] + "0"
	if tampered == u {
		tampered = u[:len(u)-1] + "1"
	}
	for _, p := range []string{tampered, mustPath(t, u) + "/other", "/mpesa/cb", "/mpesa/cb/", ""} {
		if f.d.VerifyCallbackPath(p, "ref-1") {
			t.Errorf("VerifyCallbackPath(%q) = true", p)
		}
	}
	// Another secret gives other paths.
	cfg := f.cfg
	cfg.CallbackSecret = []byte("another-secret-of-enough-length!")
	d2, err := NewDaraja(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d2.CallbackURLFor("ref-1") == u || d2.VerifyCallbackPath(u, "ref-1") {
		t.Fatal("the path token does not depend on the secret")
	}
	if _, ok := d2.CallbackReference(token); ok {
		t.Fatal("another gateway's secret opened the token")
	}
}

func TestDarajaConfigValidation(t *testing.T) {
	fake := fakedaraja.New(t, fakedaraja.Options{})
	good := darajaTestConfig(fake, "https://pay.example.com/mpesa/cb", nil)
	if _, err := NewDaraja(good); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for _, base := range []string{DarajaSandboxURL, DarajaProductionURL} {
		c := good
		c.BaseURL = base
		if _, err := NewDaraja(c); err != nil {
			t.Errorf("BaseURL %s: %v", base, err)
		}
	}
	ecKeyCert := darajaECCertificate(t)
	cases := []struct {
		name string
		mut  func(*DarajaConfig)
	}{
		{"no base URL", func(c *DarajaConfig) { c.BaseURL = "" }},
		{"relative base URL", func(c *DarajaConfig) { c.BaseURL = "/daraja" }},
		{"http to a remote host", func(c *DarajaConfig) { c.BaseURL = "http://sandbox.safaricom.co.ke" }},
		{"credentials in the URL", func(c *DarajaConfig) { c.BaseURL = "https://u:p@api.safaricom.co.ke" }},
		{"query in the URL", func(c *DarajaConfig) { c.BaseURL = "https://api.safaricom.co.ke?x=1" }},
		{"http callback to a remote host", func(c *DarajaConfig) { c.CallbackBaseURL = "http://pay.example.com/cb" }},
		{"no consumer key", func(c *DarajaConfig) { c.ConsumerKey = "" }},
		{"no consumer secret", func(c *DarajaConfig) { c.ConsumerSecret = "" }},
		{"bad shortcode", func(c *DarajaConfig) { c.ShortCode = "17437a" }},
		{"no passkey", func(c *DarajaConfig) { c.Passkey = "" }},
		{"bad transaction type", func(c *DarajaConfig) { c.TransactionType = "CustomerPayBill" }},
		{"bad PartyB", func(c *DarajaConfig) { c.PartyB = "12" }},
		{"short callback secret", func(c *DarajaConfig) { c.CallbackSecret = []byte("short") }},
		{"initiator without password", func(c *DarajaConfig) { c.InitiatorPassword = "" }},
		{"initiator without certificate", func(c *DarajaConfig) { c.CertificatePEM = nil }},
		{"certificate garbage", func(c *DarajaConfig) { c.CertificatePEM = []byte("not a certificate") }},
		{"certificate without an RSA key", func(c *DarajaConfig) { c.CertificatePEM = ecKeyCert }},
		{"B2C shortcode without initiator", func(c *DarajaConfig) {
			c.InitiatorName, c.InitiatorPassword, c.CertificatePEM = "", "", nil
		}},
		{"bad B2C shortcode", func(c *DarajaConfig) { c.B2CShortCode = "abc" }},
		{"bad command", func(c *DarajaConfig) { c.B2CCommandID = "Payment" }},
		{"negative timeout", func(c *DarajaConfig) { c.Timeout = -time.Second }},
	}
	// Without a callback base URL the adapter only receives: it opens path tokens, and refuses
	// unsent every request whose result would come to a callback URL.
	recv := good
	recv.CallbackBaseURL = ""
	rd, err := NewDaraja(recv)
	if err != nil {
		t.Fatalf("receive-only config: %v", err)
	}
	if _, err := rd.Push(context.Background(), PushRequest{Reference: "r", Phone: darajaTestPhone, Amount: "10", Currency: "KES"}); !errors.Is(err, ErrDarajaNotConfigured) {
		t.Fatalf("receive-only Push: %v, want ErrDarajaNotConfigured", err)
	}
	if _, err := rd.Disburse(context.Background(), DisbursementRequest{Reference: "r", Phone: darajaTestPhone, Amount: "10", Currency: "KES"}); !errors.Is(err, ErrDarajaNotConfigured) {
		t.Fatalf("receive-only Disburse: %v, want ErrDarajaNotConfigured", err)
	}
	if n := len(fake.STKPushes()) + len(fake.B2CPayments()); n != 0 {
		t.Fatalf("the fake received %d requests from a receive-only adapter", n)
	}
	for _, c := range cases {
		cfg := good
		c.mut(&cfg)
		d, err := NewDaraja(cfg)
		if err == nil {
			t.Errorf("%s: NewDaraja accepted %v", c.name, d)
			continue
		}
		for _, s := range []string{good.ConsumerSecret, good.Passkey, good.InitiatorPassword} {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: the error shows a secret: %v", c.name, err)
			}
		}
	}
}

// darajaECCertificate is a self-signed certificate with an ECDSA key: not usable for
// SecurityCredential.
func darajaECCertificate(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not-rsa"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestDarajaSecretsRedacted(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	if _, err := f.d.AccountBalance(context.Background()); err != nil { // a token is cached
		t.Fatal(err)
	}
	f.d.tokens.mu.Lock()
	token := f.d.tokens.token
	f.d.tokens.mu.Unlock()
	if token == "" {
		t.Fatal("no token cached")
	}
	secrets := map[string]string{
		"consumer key":       f.cfg.ConsumerKey,
		"consumer secret":    f.cfg.ConsumerSecret,
		"passkey":            f.cfg.Passkey,
		"initiator password": f.cfg.InitiatorPassword,
		"callback secret":    string(f.cfg.CallbackSecret),
		"callback secret []": fmt.Sprint(f.cfg.CallbackSecret)[1:20],
		"access token":       token,
	}
	cfg := f.cfg
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		for name, v := range map[string]any{"config": cfg, "*config": &cfg, "adapter": f.d, "*adapter": *f.d, "wrapped": struct{ C DarajaConfig }{cfg}} {
			out := fmt.Sprintf(verb, v)
			for what, s := range secrets {
				if strings.Contains(out, s) {
					t.Errorf("fmt %s of %s shows the %s: %s", verb, name, what, out)
				}
			}
		}
	}
	if !strings.Contains(fmt.Sprint(cfg), "[REDACTED]") || !strings.Contains(fmt.Sprint(cfg), cfg.ShortCode) {
		t.Errorf("String() = %s, want the shortcode and [REDACTED]", cfg)
	}
}

// TestDarajaDocsTable checks docs/providers.md lists every code of the Daraja mapping tables with
// the same outcome.
func TestDarajaDocsTable(t *testing.T) {
	data, err := os.ReadFile("../../docs/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (STK|Result) \\| `([^`]+)` \\| (SUCCESS|FAILED) \\| *`?([A-Z_]*)`? *\\|")
	docs := map[string]darajaCode{}
	for _, m := range row.FindAllStringSubmatch(string(data), -1) {
		docs[m[1]+" "+m[2]] = darajaCode{Status(m[3]), paygatev1.FailureCode(m[4])}
	}
	check := func(kind string, table map[string]darajaCode) {
		for code, want := range table {
			got, ok := docs[kind+" "+code]
			if !ok {
				t.Errorf("docs/providers.md has no row for %s code %s", kind, code)
			} else if got != want {
				t.Errorf("docs/providers.md says %s code %s is %v, the code says %v", kind, code, got, want)
			}
			delete(docs, kind+" "+code)
		}
	}
	check("STK", darajaSTKResultCodes)
	check("Result", darajaResultCodes)
	for k := range docs {
		t.Errorf("docs/providers.md lists %s, which the code does not map", k)
	}
}

// TestDarajaRefunds drives *Daraja as a Refunder against the fake over HTTP: the refund is a
// reversal of the collection's M-PESA receipt, acknowledged PENDING, its result posted to the
// refund's own result URL; refunds Daraja cannot make are refused unsent.
func TestDarajaRefunds(t *testing.T) {
	f := newDarajaFixture(t, fakedaraja.Options{})
	ctx := context.Background()
	var r Refunder = f.d
	if r.RefundScope() != RefundsFull || RefundScopeOf(f.d) != RefundsFull {
		t.Fatalf("refund scope %q, want Full", r.RefundScope())
	}
	pushed := f.push(t, "shop.trx-1.1", darajaTestPhone, "250")
	cb, err := ParseSTKCallback(f.sink.wait(t, mustPath(t, f.d.CallbackURLFor("shop.trx-1.1"))).Body)
	if err != nil || cb.MpesaReceiptNumber == "" {
		t.Fatalf("callback = %+v, %v", cb, err)
	}
	req := RefundRequest{Reference: "shop.rf-1.r", Payment: "shop.trx-1.1", PaymentProvider: pushed.ProviderReference,
		PaymentReceipt: cb.MpesaReceiptNumber, PaymentAmount: "250.00", Full: true, Phone: darajaTestPhone, Amount: "250.00", Currency: "KES"}

	// Refused before any request, as a final FAILED (nothing was sent, nothing will come back): no
	// receipt, a part of the payment, another currency, a receipt that is not one token.
	for name, mod := range map[string]func(*RefundRequest){
		"no receipt":     func(r *RefundRequest) { r.PaymentReceipt = "" },
		"partial":        func(r *RefundRequest) { r.Full, r.Amount = false, "100" },
		"not the amount": func(r *RefundRequest) { r.Amount = "200" },
		"currency":       func(r *RefundRequest) { r.Currency = "TZS" },
		"receipt":        func(r *RefundRequest) { r.PaymentReceipt = "SJ1 23" },
	} {
		bad := req
		mod(&bad)
		if res, err := f.d.Refund(ctx, bad); err != nil || res.Status != StatusFailed || res.Code != paygatev1.FailureProviderError {
			t.Errorf("%s: Refund = %+v, %v; want FAILED PROVIDER_ERROR", name, res, err)
		}
	}
	if res, _ := f.d.Refund(ctx, RefundRequest{Reference: "shop.rf-0.r", Payment: "shop.trx-1.1"}); !strings.Contains(res.Message, "receipt") {
		t.Fatalf("a refund without a receipt: %+v, want a message that says so", res)
	}
	if _, err := f.d.Refund(ctx, RefundRequest{Payment: "shop.trx-1.1"}); !errors.Is(err, ErrDarajaInvalidRequest) {
		t.Fatalf("a refund without a reference: %v, want ErrDarajaInvalidRequest", err)
	}
	if n := f.fake.ReversalCount(); n != 0 {
		t.Fatalf("%d reversals sent for refused refunds", n)
	}

	// The reversal is acknowledged; the result arrives at the refund's own result URL.
	res, err := f.d.Refund(ctx, req)
	if err != nil || res.Status != StatusPending || res.ProviderReference == "" {
		t.Fatalf("Refund = %+v, %v; want PENDING with the ConversationID", res, err)
	}
	if _, err := f.d.RefundStatus(ctx, req); !errors.Is(err, ErrAnswersByCallback) || !errors.Is(err, ErrReversalByCallback) {
		t.Fatalf("RefundStatus: %v, want ErrAnswersByCallback", err)
	}
	post := f.sink.wait(t, mustPath(t, f.d.ResultURLFor("shop.rf-1.r")))
	if !f.d.VerifyCallbackPath(post.Path, "shop.rf-1.r") || IsQueueTimeoutPath(post.Path) {
		t.Fatal("the reversal result's path does not verify as the refund's result URL")
	}
	result, err := ParseResult(post.Body)
	if err != nil || result.Result.Status != StatusSuccess || result.ConversationID != res.ProviderReference ||
		result.Parameters["OriginalTransactionID"] != cb.MpesaReceiptNumber {
		t.Fatalf("reversal result = %+v, %v", result, err)
	}
	if !f.fake.Reversed(cb.MpesaReceiptNumber) || f.fake.ReversalCount() != 1 {
		t.Fatalf("reversed %v, reversals %d", f.fake.Reversed(cb.MpesaReceiptNumber), f.fake.ReversalCount())
	}

	// A second refund of the same payment: acknowledged, and failed at its result URL (M-Pesa
	// reverses a transaction once).
	again := req
	again.Reference = "shop.rf-2.r"
	if res, err := f.d.Refund(ctx, again); err != nil || res.Status != StatusPending {
		t.Fatalf("second Refund = %+v, %v", res, err)
	}
	result, err = ParseResult(f.sink.wait(t, mustPath(t, f.d.ResultURLFor("shop.rf-2.r"))).Body)
	if err != nil || result.Result.Status != StatusFailed || result.ResultCode != string(fakedaraja.ResultAlreadyReversed) {
		t.Fatalf("second reversal result = %+v, %v", result, err)
	}
}
