// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/test/fakepawapay"
)

const (
	ppPhone  = "+255754000001" // a VODACOM_TZA number the fake's sandbox list does not script
	ppDigits = "255754000001"
)

func newPawapayTest(t *testing.T, opts fakepawapay.Options, mod func(*PawapayConfig)) (*Pawapay, *fakepawapay.Server) {
	t.Helper()
	fake := fakepawapay.New(t, opts)
	cfg := PawapayConfig{BaseURL: fake.URL(), Token: fake.Token, Provider: "VODACOM_TZA", Country: "TZA", Timeout: 2 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	p, err := NewPawapay(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, fake
}

func ppPush(ref, amount string) PushRequest {
	return PushRequest{Reference: ref, Phone: ppPhone, Amount: amount, Currency: "TZS", Gateway: "VODACOM_TZ", Description: "Order #7 (shoes)"}
}

func ppPayout(ref, amount string) DisbursementRequest {
	return DisbursementRequest{Reference: ref, Phone: ppPhone, Amount: amount, Currency: "TZS", Gateway: "VODACOM_TZ"}
}

// ppRaw reads a payment from the fake directly, to see what the adapter sent.
func ppRaw(t *testing.T, fake *fakepawapay.Server, path string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, fake.URL()+path, nil)
	req.Header.Set("Authorization", "Bearer "+fake.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPawapayConfigValidation(t *testing.T) {
	ok := PawapayConfig{BaseURL: PawapaySandboxURL, Token: "tok", Provider: "VODACOM_TZA"}
	tests := []struct {
		name string
		mod  func(*PawapayConfig)
		ok   bool
	}{
		{"sandbox", func(*PawapayConfig) {}, true},
		{"production with country", func(c *PawapayConfig) { c.BaseURL, c.Country = PawapayProductionURL, "TZA" }, true},
		{"loopback http", func(c *PawapayConfig) { c.BaseURL = "http://127.0.0.1:8080" }, true},
		{"localhost http", func(c *PawapayConfig) { c.BaseURL = "http://localhost:8080/" }, true},
		{"ipv6 loopback http", func(c *PawapayConfig) { c.BaseURL = "http://[::1]:8080" }, true},
		{"multi-word provider", func(c *PawapayConfig) { c.Provider = "AIRTEL_OAPI_ZMB" }, true},
		{"two places", func(c *PawapayConfig) { c.Decimals = PawapayDecimalsTwoPlaces }, true},
		{"plain http elsewhere", func(c *PawapayConfig) { c.BaseURL = "http://api.pawapay.io" }, false},
		{"not a URL", func(c *PawapayConfig) { c.BaseURL = "://x" }, false},
		{"relative", func(c *PawapayConfig) { c.BaseURL = "/v2" }, false},
		{"ftp", func(c *PawapayConfig) { c.BaseURL = "ftp://api.pawapay.io" }, false},
		{"credentials", func(c *PawapayConfig) { c.BaseURL = "https://u:p@api.pawapay.io" }, false},
		{"query", func(c *PawapayConfig) { c.BaseURL = "https://api.pawapay.io/?a=b" }, false},
		{"empty token", func(c *PawapayConfig) { c.Token = "" }, false},
		{"token with space", func(c *PawapayConfig) { c.Token = "a b" }, false},
		{"empty provider", func(c *PawapayConfig) { c.Provider = "" }, false},
		{"lower-case provider", func(c *PawapayConfig) { c.Provider = "vodacom_tza" }, false},
		{"provider without country", func(c *PawapayConfig) { c.Provider = "VODACOM" }, false},
		{"country mismatch", func(c *PawapayConfig) { c.Country = "KEN" }, false},
		{"country shape", func(c *PawapayConfig) { c.Country = "TZ" }, false},
		{"decimals", func(c *PawapayConfig) { c.Decimals = "2" }, false},
		{"negative timeout", func(c *PawapayConfig) { c.Timeout = -time.Second }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			cfg.Token = "s3cr3t-pawapay-token"
			tc.mod(&cfg)
			p, err := NewPawapay(cfg)
			if (err == nil) != tc.ok {
				t.Fatalf("NewPawapay(%v): err %v, want ok=%v", cfg, err, tc.ok)
			}
			if err != nil && strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("error leaks the token: %v", err)
			}
			if p != nil && strings.Contains(fmt.Sprintf("%v %+v %#v %s", p, p, p, p), "s3cr3t") {
				t.Fatal("the adapter prints its token")
			}
		})
	}
}

func TestPawapayConfigRedactsToken(t *testing.T) {
	const token = "tok-ABCDEF-123456"
	cfg := PawapayConfig{BaseURL: PawapaySandboxURL, Token: token, Provider: "VODACOM_TZA"}
	for _, s := range []string{
		fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg),
		fmt.Sprintf("%v %+v %#v", &cfg, &cfg, &cfg),
		fmt.Sprintf("%s %q", cfg, cfg),
		fmt.Sprint(struct{ C PawapayConfig }{cfg}),
		fmt.Sprintf("%#v", struct{ C PawapayConfig }{cfg}),
	} {
		if strings.Contains(s, token) || strings.Contains(s, "ABCDEF") {
			t.Fatalf("printed config leaks the token: %s", s)
		}
		if !strings.Contains(s, "REDACTED") {
			t.Fatalf("printed config does not say the token is redacted: %s", s)
		}
	}
}

func TestPawapayIDs(t *testing.T) {
	kinds := map[string]func(string) string{"deposit": PawapayDepositID, "payout": PawapayPayoutID, "refund": PawapayRefundID}
	seen := map[string]string{}
	for kind, f := range kinds {
		for i := 0; i < 200; i++ {
			ref := fmt.Sprintf("pay_%d-attempt-%d", i, i%3)
			id := f(ref)
			if id != f(ref) {
				t.Fatalf("%s id of %q is not stable", kind, ref)
			}
			u, err := uuid.Parse(id)
			if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != id {
				t.Fatalf("%s id %q: parse %v, version %v, variant %v", kind, id, err, u.Version(), u.Variant())
			}
			if id[14] != '4' || !strings.ContainsRune("89ab", rune(id[19])) {
				t.Fatalf("%s id %q: version or variant nibble wrong", kind, id)
			}
			if prev, dup := seen[id]; dup {
				t.Fatalf("%s %q and %s collide on %s", kind, ref, prev, id)
			}
			seen[id] = kind + " " + ref
		}
	}
	p := &Pawapay{}
	if p.DepositID("r") != PawapayDepositID("r") || p.PayoutID("r") != PawapayPayoutID("r") || p.RefundID("r") != PawapayRefundID("r") {
		t.Fatal("methods differ from the functions")
	}
	// Fixed vectors (SHA-256 of "paygate/pawapay/deposit/v1\x00ref-1" is eddb9b4fb27096b77383...,
	// with the version and variant bits set), so that a change of derivation, which would orphan
	// every attempt in flight, is noticed.
	for _, v := range []struct{ got, want string }{
		{PawapayDepositID("ref-1"), "eddb9b4f-b270-46b7-b383-840434dc5223"},
		{PawapayPayoutID("ref-1"), "d26d6d16-0995-4f71-8d14-77ba89893d43"},
		{PawapayRefundID("ref-1"), "697cdd5e-926b-46a7-ba10-9c450c55642d"},
	} {
		if v.got != v.want {
			t.Fatalf("id %s, want %s", v.got, v.want)
		}
	}
}

func TestPawapayPushAcceptedThenCompleted(t *testing.T) {
	p, fake := newPawapayTest(t, fakepawapay.Options{}, nil)
	fake.Script(ppDigits, fakepawapay.Scenario{SettleAfterChecks: 1})
	ctx := context.Background()
	req := ppPush("att-1", "1500.00")
	id := PawapayDepositID("att-1")

	res, err := p.Push(ctx, req)
	if err != nil || res != (Result{Status: StatusPending, ProviderReference: id}) {
		t.Fatalf("push: %+v %v", res, err)
	}
	if res, err := p.PushStatus(ctx, req); err != nil || res.Status != StatusPending {
		t.Fatalf("first status: %+v %v", res, err)
	}
	if res, err := p.PushStatus(ctx, req); err != nil || res != (Result{Status: StatusSuccess, ProviderReference: id}) {
		t.Fatalf("second status: %+v %v", res, err)
	}
	// What the adapter sent: the id derived from the reference, the amount without ".00", the
	// phone without '+', the configured provider, our reference and a cleaned customer message.
	m := ppRaw(t, fake, "/v2/deposits/"+id)
	d := m["data"].(map[string]any)
	acct := d["payer"].(map[string]any)["accountDetails"].(map[string]any)
	if d["amount"] != "1500" || d["currency"] != "TZS" || acct["phoneNumber"] != ppDigits || acct["provider"] != "VODACOM_TZA" ||
		d["clientReferenceId"] != "att-1" || d["customerMessage"] != "Order 7 shoes" {
		t.Fatalf("deposit as pawaPay holds it: %v", m)
	}
	if c := fake.Counters(); c.DepositsCreated[id] != 1 || c.StatusChecks[fakepawapay.OpDeposit][id] != 3 {
		t.Fatalf("counters %+v", c)
	}
}

func TestPawapayPushRejected(t *testing.T) {
	tests := []struct {
		name     string
		req      PushRequest
		setup    func(*fakepawapay.Server)
		decimals string
		want     paygatev1.FailureCode
		sent     bool // whether the request reached pawaPay
	}{
		{"phone of the wrong length", PushRequest{Phone: "+2557540001", Amount: "1500", Currency: "TZS"}, nil, "", paygatev1.FailureInvalidAccount, true},
		{"amount below the minimum", PushRequest{Phone: ppPhone, Amount: "50.00", Currency: "TZS"}, nil, "", paygatev1.FailurePaymentDeclined, true},
		{"decimals to a provider without", PushRequest{Phone: ppPhone, Amount: "1500.50", Currency: "TZS"}, nil, "", paygatev1.FailurePaymentDeclined, true},
		{"wrong currency", PushRequest{Phone: ppPhone, Amount: "1500", Currency: "KES"}, nil, "", paygatev1.FailurePaymentDeclined, true},
		{"missing currency (HTTP 400)", PushRequest{Phone: ppPhone, Amount: "1500"}, nil, "", paygatev1.FailureProviderError, true},
		{"provider closed", PushRequest{Phone: ppPhone, Amount: "1500", Currency: "TZS"}, func(f *fakepawapay.Server) {
			f.SetAvailability("VODACOM_TZA", fakepawapay.OpDeposit, fakepawapay.AvailabilityClosed)
		}, "", paygatev1.FailurePaymentDeclined, true},
		{"not a phone number", PushRequest{Phone: "+255-abc", Amount: "1500", Currency: "TZS"}, nil, "", paygatev1.FailureInvalidAccount, false},
		{"fraction refused locally", PushRequest{Phone: ppPhone, Amount: "1500.50", Currency: "TZS"}, nil, PawapayDecimalsNone, paygatev1.FailurePaymentDeclined, false},
		{"malformed amount", PushRequest{Phone: ppPhone, Amount: "-5", Currency: "TZS"}, nil, "", paygatev1.FailureProviderError, false},
		{"three decimal places", PushRequest{Phone: ppPhone, Amount: "1.005", Currency: "TZS"}, nil, "", paygatev1.FailureProviderError, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, fake := newPawapayTest(t, fakepawapay.Options{}, func(c *PawapayConfig) { c.Decimals = tc.decimals })
			if tc.setup != nil {
				tc.setup(fake)
			}
			tc.req.Reference = "att-rej"
			res, err := p.Push(context.Background(), tc.req)
			if err != nil {
				t.Fatalf("push: %v", err)
			}
			if res.Status != StatusFailed || res.Code != tc.want || res.ProviderReference != PawapayDepositID("att-rej") || res.Message == "" {
				t.Fatalf("push: %+v, want FAILED %s", res, tc.want)
			}
			if strings.Contains(res.Message, "754000001") {
				t.Fatalf("message carries the phone number: %q", res.Message)
			}
			c := fake.Counters()
			if got := c.Requests[fakepawapay.RouteInitiateDeposit] == 1; got != tc.sent {
				t.Fatalf("sent=%v, want %v (%+v)", got, tc.sent, c.Requests)
			}
			if len(c.DepositsCreated) != 0 {
				t.Fatalf("a rejected deposit was created: %+v", c.DepositsCreated)
			}
		})
	}
}

func TestPawapayFinalFailureCodes(t *testing.T) {
	p, fake := newPawapayTest(t, fakepawapay.Options{}, nil)
	tests := []struct{ code, want string }{
		{"PAYMENT_NOT_APPROVED", "CUSTOMER_CANCELLED"},
		{"INSUFFICIENT_BALANCE", "INSUFFICIENT_FUNDS"},
		{"PAYER_NOT_FOUND", "INVALID_ACCOUNT"},
		{"PAYER_LIMIT_REACHED", "PAYMENT_DECLINED"},
		{"WALLET_LIMIT_REACHED", "PAYMENT_DECLINED"},
		{"PAYMENT_IN_PROGRESS", "PAYMENT_DECLINED"},
		{"UNSPECIFIED_FAILURE", "PROVIDER_ERROR"},
		{"UNKNOWN_ERROR", "PROVIDER_ERROR"},
		{"SOMETHING_NEW", "SOMETHING_NEW"}, // unknown codes pass through
	}
	for i, tc := range tests {
		t.Run(tc.code, func(t *testing.T) {
			phone := fmt.Sprintf("25575400%04d", 100+i)
			fake.Script(phone, fakepawapay.Scenario{Status: fakepawapay.StatusFailed, FailureCode: tc.code})
			req := PushRequest{Reference: "att-f-" + tc.code, Phone: "+" + phone, Amount: "2000", Currency: "TZS"}
			if res, err := p.Push(context.Background(), req); err != nil || res.Status != StatusPending {
				t.Fatalf("push: %+v %v", res, err)
			}
			res, err := p.PushStatus(context.Background(), req)
			if err != nil || res.Status != StatusFailed || res.Code != paygatev1.FailureCode(tc.want) {
				t.Fatalf("status: %+v %v, want FAILED %s", res, err, tc.want)
			}
		})
	}
	if PawapayFailureCode("") != paygatev1.FailureProviderError {
		t.Fatal("an empty code is not PROVIDER_ERROR")
	}
}

func TestPawapayDuplicateSend(t *testing.T) {
	p, fake := newPawapayTest(t, fakepawapay.Options{}, nil)
	fake.Script(ppDigits, fakepawapay.Scenario{Status: fakepawapay.StatusProcessing})
	req := ppPush("att-dup", "1000")
	for i := 0; i < 3; i++ {
		if res, err := p.Push(context.Background(), req); err != nil || res.Status != StatusPending || res.ProviderReference != PawapayDepositID("att-dup") {
			t.Fatalf("send %d: %+v %v", i+1, res, err)
		}
	}
	id := PawapayDepositID("att-dup")
	if c := fake.Counters(); c.DepositsCreated[id] != 1 || c.DepositInitiations[id] != 3 || c.DuplicatesIgnored != 2 {
		t.Fatalf("counters %+v", c)
	}
}

func TestPawapayNotFoundRightAfterAcceptance(t *testing.T) {
	p, fake := newPawapayTest(t, fakepawapay.Options{}, nil)
	fake.Script(ppDigits, fakepawapay.Scenario{NotFoundChecks: 1})
	req := ppPush("att-nf", "1000")
	if res, err := p.Push(context.Background(), req); err != nil || res.Status != StatusPending {
		t.Fatalf("push: %+v %v", res, err)
	}
	if _, err := p.PushStatus(context.Background(), req); !errors.Is(err, ErrNotFound) {
		t.Fatalf("first status: %v, want ErrNotFound", err)
	}
	if res, err := p.PushStatus(context.Background(), req); err != nil || res.Status != StatusSuccess {
		t.Fatalf("second status: %+v %v", res, err)
	}
	// Never sent at all: NOT_FOUND as well.
	if _, err := p.PushStatus(context.Background(), ppPush("att-never", "1000")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("status of an unsent push: %v", err)
	}
	if _, err := p.DisbursementStatus(context.Background(), ppPayout("att-never", "1000")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("status of an unsent payout: %v", err)
	}
}

func TestPawapayTimeoutAfterProcessing(t *testing.T) {
	p, fake := newPawapayTest(t, fakepawapay.Options{}, func(c *PawapayConfig) { c.Timeout = 300 * time.Millisecond })
	fake.InjectFault(fakepawapay.RouteInitiateDeposit, 1, fakepawapay.Fault{Kind: fakepawapay.FaultTimeout, Process: true})
	req := ppPush("att-to", "1000")
	start := time.Now()
	_, err := p.Push(context.Background(), req)
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("push through a timeout: %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("the adapter did not bound the call")
	}
	if strings.Contains(err.Error(), fake.Token) || strings.Contains(err.Error(), "754000001") {
		t.Fatalf("error leaks a secret: %v", err)
	}
	// The engine asks by status: the deposit is there.
	if res, err := p.PushStatus(context.Background(), req); err != nil || res.Status != StatusSuccess {
		t.Fatalf("status: %+v %v", res, err)
	}
	// A re-send is ignored as a duplicate.
	if res, err := p.Push(context.Background(), req); err != nil || res.Status != StatusPending {
		t.Fatalf("re-send: %+v %v", res, err)
	}
	if c := fake.Counters(); c.DepositsCreated[PawapayDepositID("att-to")] != 1 {
		t.Fatalf("counters %+v", c)
	}
}

func TestPawapayHTTPFaults(t *testing.T) {
	type call struct {
		name, route string
		do          func(*Pawapay) (Result, error)
	}
	calls := []call{
		{"Push", fakepawapay.RouteInitiateDeposit, func(p *Pawapay) (Result, error) { return p.Push(context.Background(), ppPush("att-h", "1000")) }},
		{"PushStatus", fakepawapay.RouteDepositStatus, func(p *Pawapay) (Result, error) { return p.PushStatus(context.Background(), ppPush("att-h", "1000")) }},
		{"Disburse", fakepawapay.RouteInitiatePayout, func(p *Pawapay) (Result, error) { return p.Disburse(context.Background(), ppPayout("att-h", "1000")) }},
		{"DisbursementStatus", fakepawapay.RoutePayoutStatus, func(p *Pawapay) (Result, error) {
			return p.DisbursementStatus(context.Background(), ppPayout("att-h", "1000"))
		}},
		{"Refund", fakepawapay.RouteInitiateRefund, func(p *Pawapay) (Result, error) {
			return p.Refund(context.Background(), RefundRequest{Reference: "rf-h", Payment: "att-h", Full: true})
		}},
		{"RefundStatus", fakepawapay.RouteRefundStatus, func(p *Pawapay) (Result, error) {
			return p.RefundStatus(context.Background(), RefundRequest{Reference: "rf-h"})
		}},
	}
	for _, status := range []int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable} {
		for _, c := range calls {
			t.Run(fmt.Sprintf("%s/%d", c.name, status), func(t *testing.T) {
				p, fake := newPawapayTest(t, fakepawapay.Options{}, nil)
				fake.InjectFault(c.route, 1, fakepawapay.Fault{Kind: fakepawapay.FaultHTTPStatus, Status: status})
				_, err := c.do(p)
				var pe *PawapayError
				if !errors.As(err, &pe) || pe.StatusCode != status || errors.Is(err, ErrNotFound) || pe.Unauthorized() {
					t.Fatalf("err %v, want a *PawapayError with HTTP %d", err, status)
				}
			})
		}
	}
	t.Run("5xx after processing, then status", func(t *testing.T) {
		p, fake := newPawapayTest(t, fakepawapay.Options{}, nil)
		fake.InjectFault(fakepawapay.RouteInitiatePayout, 1, fakepawapay.Fault{Kind: fakepawapay.FaultHTTPStatus, Status: 500, Process: true})
		req := ppPayout("po-5xx", "1000")
		if _, err := p.Disburse(context.Background(), req); err == nil {
			t.Fatal("no error through a 500")
		}
		if res, err := p.DisbursementStatus(context.Background(), req); err != nil || res.Status != StatusSuccess {
			t.Fatalf("status: %+v %v", res, err)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		p, _ := newPawapayTest(t, fakepawapay.Options{}, func(c *PawapayConfig) { c.Token = "wrong-token-value" })
		for _, c := range calls {
			_, err := c.do(p)
			var pe *PawapayError
			if !errors.As(err, &pe) || !pe.Unauthorized() || pe.StatusCode != http.StatusForbidden || strings.Contains(err.Error(), "wrong-token-value") {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
	})
}

func TestPawapayPayouts(t *testing.T) {
	ctx := context.Background()
	t.Run("completed", func(t *testing.T) {
		p, fake := newPawapayTest(t, fakepawapay.Options{}, nil)
		req := ppPayout("po-1", "20000.00")
		id := PawapayPayoutID("po-1")
		if res, err := p.Disburse(ctx, req); err != nil || res != (Result{Status: StatusPending, ProviderReference: id}) {
			t.Fatalf("disburse: %+v %v", res, err)
		}
		if res, err := p.DisbursementStatus(ctx, req); err != nil || res != (Result{Status: StatusSuccess, ProviderReference: id}) {
			t.Fatalf("status: %+v %v", res, err)
		}
		d := ppRaw(t, fake, "/v2/payouts/"+id)["data"].(map[string]any)
		acct := d["recipient"].(map[string]any)["accountDetails"].(map[string]any)
		if d["amount"] != "20000" || acct["phoneNumber"] != ppDigits || acct["provider"] != "VODACOM_TZA" || d["clientReferenceId"] != "po-1" {
			t.Fatalf("payout as pawaPay holds it: %v", d)
		}
		// A repeated payout is not paid twice.
		if res, err := p.Disburse(ctx, req); err != nil || res.Status != StatusPending {
			t.Fatalf("re-send: %+v %v", res, err)
		}
		if c := fake.Counters(); c.PayoutsCreated[id] != 1 {
			t.Fatalf("counters %+v", c)
		}
	})
	t.Run("enqueued while delayed", func(t *testing.T) {
		p, fake := newPawapayTest(t, fakepawapay.Options{}, nil)
		fake.SetAvailability("VODACOM_TZA", fakepawapay.OpPayout, fakepawapay.AvailabilityDelayed)
		req := ppPayout("po-d", "1000")
		if res, err := p.Disburse(ctx, req); err != nil || res.Status != StatusPending {
			t.Fatalf("disburse: %+v %v", res, err)
		}
		if st, _ := fake.Status(fakepawapay.OpPayout, PawapayPayoutID("po-d")); st != fakepawapay.StatusEnqueued {
			t.Fatalf("fake status %s", st)
		}
		if res, err := p.DisbursementStatus(ctx, req); err != nil || res.Status != StatusPending {
			t.Fatalf("enqueued status: %+v %v", res, err)
		}
		fake.SetAvailability("VODACOM_TZA", fakepawapay.OpPayout, fakepawapay.AvailabilityOperational)
		if res, err := p.DisbursementStatus(ctx, req); err != nil || res.Status != StatusSuccess {
			t.Fatalf("status: %+v %v", res, err)
		}
	})
	t.Run("failures", func(t *testing.T) {
		p, fake := newPawapayTest(t, fakepawapay.Options{Balances: map[string]string{"TZA": "5000"}}, nil)
		fake.Script("255754000009", fakepawapay.Scenario{Status: fakepawapay.StatusFailed, FailureCode: "RECIPIENT_NOT_FOUND"})
		for _, tc := range []struct {
			req  DisbursementRequest
			want paygatev1.FailureCode
		}{
			{DisbursementRequest{Reference: "po-rnf", Phone: "+255754000009", Amount: "1000", Currency: "TZS"}, paygatev1.FailureInvalidAccount},
			{ppPayout("po-oof", "9000"), "PAWAPAY_WALLET_OUT_OF_FUNDS"},
		} {
			if res, err := p.Disburse(ctx, tc.req); err != nil || res.Status != StatusPending {
				t.Fatalf("%s: disburse %+v %v", tc.req.Reference, res, err)
			}
			if res, err := p.DisbursementStatus(ctx, tc.req); err != nil || res.Status != StatusFailed || res.Code != tc.want || res.Message == "" {
				t.Fatalf("%s: status %+v %v, want FAILED %s", tc.req.Reference, res, err, tc.want)
			}
		}
	})
}

// ppRefund is a refund of the deposit of push attempt payment.
func ppRefund(ref, payment, amount string, full bool) RefundRequest {
	return RefundRequest{Reference: ref, Payment: payment, PaymentProvider: PawapayDepositID(payment), PaymentAmount: "10000",
		Full: full, Phone: ppPhone, Amount: amount, Currency: "TZS", Gateway: "VODACOM_TZ"}
}

// bodyRecorder records the JSON bodies of the POSTs an adapter sends.
type bodyRecorder struct {
	mu     sync.Mutex
	bodies map[string][]map[string]any // by path
}

func (b *bodyRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.Body != nil {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		b.mu.Lock()
		if b.bodies == nil {
			b.bodies = map[string][]map[string]any{}
		}
		b.bodies[r.URL.Path] = append(b.bodies[r.URL.Path], m)
		b.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (b *bodyRecorder) last(t *testing.T, path string) map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.bodies[path]) == 0 {
		t.Fatalf("nothing POSTed to %s", path)
	}
	return b.bodies[path][len(b.bodies[path])-1]
}

// ppRefundOutcome is what became of a refund: the initiation's answer when pawaPay rejected it,
// else the status check's.
func ppRefundOutcome(t *testing.T, p *Pawapay, req RefundRequest) Result {
	t.Helper()
	res, err := p.Refund(context.Background(), req)
	if err != nil {
		t.Fatalf("Refund(%s): %v", req.Reference, err)
	}
	if res.Status == StatusFailed {
		return res
	}
	if res != (Result{Status: StatusPending, ProviderReference: PawapayRefundID(req.Reference)}) {
		t.Fatalf("Refund(%s) = %+v, want PENDING with the refundId", req.Reference, res)
	}
	st, err := p.RefundStatus(context.Background(), req)
	if err != nil {
		t.Fatalf("RefundStatus(%s): %v", req.Reference, err)
	}
	return st
}

// TestPawapayRefunds drives *Pawapay as a Refunder against the fake over HTTP: a full refund
// without an amount, partial refunds, two partials and then nothing left, a refund over the
// deposit's amount, one refund per refundId, and the status of a refund pawaPay never received.
func TestPawapayRefunds(t *testing.T) {
	ctx := context.Background()
	rec := &bodyRecorder{}
	p, fake := newPawapayTest(t, fakepawapay.Options{}, func(c *PawapayConfig) { c.HTTPClient = &http.Client{Transport: rec} })
	var r Refunder = p
	if r.RefundScope() != RefundsPartial || RefundScopeOf(p) != RefundsPartial {
		t.Fatalf("refund scope %q", r.RefundScope())
	}
	for _, ref := range []string{"shop.trx-full.1", "shop.trx-part.1", "shop.trx-over.1"} {
		dep := ppPush(ref, "10000")
		if _, err := p.Push(ctx, dep); err != nil {
			t.Fatal(err)
		}
		if res, err := p.PushStatus(ctx, dep); err != nil || res.Status != StatusSuccess {
			t.Fatalf("deposit %s: %+v %v", ref, res, err)
		}
	}

	t.Run("full", func(t *testing.T) {
		req := ppRefund("shop.rf-full.r", "shop.trx-full.1", "10000.00", true)
		if res := ppRefundOutcome(t, p, req); res.Status != StatusSuccess {
			t.Fatalf("full refund: %+v", res)
		}
		// The guide's full refund: refundId and depositId, no amount or currency.
		body := rec.last(t, "/v2/refunds")
		want := map[string]any{"refundId": PawapayRefundID("shop.rf-full.r"), "depositId": PawapayDepositID("shop.trx-full.1"), "clientReferenceId": "shop.rf-full.r"}
		if fmt.Sprint(body) != fmt.Sprint(want) {
			t.Fatalf("full refund body %v, want %v", body, want)
		}
		d := ppRaw(t, fake, "/v2/refunds/"+PawapayRefundID("shop.rf-full.r"))["data"].(map[string]any)
		if d["amount"] != "10000" || d["depositId"] != nil && d["depositId"] != PawapayDepositID("shop.trx-full.1") {
			t.Fatalf("full refund as pawaPay holds it: %v", d)
		}
	})

	t.Run("two partials, then nothing left", func(t *testing.T) {
		r1 := ppRefund("shop.rf-p1.r", "shop.trx-part.1", "4000.00", false)
		if res := ppRefundOutcome(t, p, r1); res.Status != StatusSuccess {
			t.Fatalf("first partial refund: %+v", res)
		}
		if body := rec.last(t, "/v2/refunds"); body["amount"] != "4000" || body["currency"] != "TZS" {
			t.Fatalf("partial refund body %v, want amount 4000 TZS", body)
		}
		if res := ppRefundOutcome(t, p, ppRefund("shop.rf-p2.r", "shop.trx-part.1", "6000", false)); res.Status != StatusSuccess {
			t.Fatalf("second partial refund: %+v", res)
		}
		res := ppRefundOutcome(t, p, ppRefund("shop.rf-p3.r", "shop.trx-part.1", "100", false))
		if res.Status != StatusFailed || res.Code != "DEPOSIT_ALREADY_REFUNDED" {
			t.Fatalf("refund of a refunded deposit: %+v", res)
		}
	})

	t.Run("over the deposit's amount", func(t *testing.T) {
		res := ppRefundOutcome(t, p, ppRefund("shop.rf-over.r", "shop.trx-over.1", "10001", false))
		if res.Status != StatusFailed || res.Code != "AMOUNT_TOO_LARGE" {
			t.Fatalf("refund over the deposit: %+v", res)
		}
		// Its failure gave nothing away: the whole deposit can still be refunded.
		if res := ppRefundOutcome(t, p, ppRefund("shop.rf-over2.r", "shop.trx-over.1", "10000", false)); res.Status != StatusSuccess {
			t.Fatalf("refund of the whole deposit after the refused one: %+v", res)
		}
	})

	t.Run("one refund per refundId", func(t *testing.T) {
		req := ppRefund("shop.rf-p1.r", "shop.trx-part.1", "4000.00", false)
		if res, err := p.Refund(ctx, req); err != nil || res != (Result{Status: StatusPending, ProviderReference: PawapayRefundID("shop.rf-p1.r")}) {
			t.Fatalf("re-sent refund: %+v %v (DUPLICATE_IGNORED is PENDING)", res, err)
		}
		if res, err := p.RefundStatus(ctx, req); err != nil || res.Status != StatusSuccess {
			t.Fatalf("re-sent refund's status: %+v %v", res, err)
		}
		c := fake.Counters()
		if id := PawapayRefundID("shop.rf-p1.r"); c.RefundsCreated[id] != 1 || c.RefundInitiations[id] != 2 || c.DuplicatesIgnored != 1 {
			t.Fatalf("counters %+v", c)
		}
	})

	t.Run("status NOT_FOUND", func(t *testing.T) {
		if _, err := p.RefundStatus(ctx, RefundRequest{Reference: "shop.rf-never.r"}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("status of a refund never sent: %v, want ErrNotFound", err)
		}
	})

	t.Run("refused before sending", func(t *testing.T) {
		c := fake.Counters()
		before := 0
		for _, n := range c.RefundInitiations {
			before += n
		}
		// A refund of a deposit pawaPay does not have is refused at initiation, and never created.
		if res, err := p.Refund(ctx, ppRefund("shop.rf-unknown.r", "shop.trx-unknown.1", "1", false)); err != nil || res.Status != StatusFailed {
			t.Fatalf("refund of an unknown deposit: %+v %v", res, err)
		}
		if _, err := p.RefundStatus(ctx, RefundRequest{Reference: "shop.rf-unknown.r"}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("status of a refused refund: %v", err)
		}
		// Nothing is sent without a payment reference, for a partial refund without an amount,
		// or when the payment's depositId is not the one its reference derives.
		if _, err := p.Refund(ctx, RefundRequest{Reference: "shop.rf-x.r", Full: true}); err == nil {
			t.Fatal("a refund without a payment reference was accepted")
		}
		if _, err := p.Refund(ctx, RefundRequest{Reference: "shop.rf-x.r", Payment: "shop.trx-part.1"}); err == nil {
			t.Fatal("a partial refund without an amount was accepted")
		}
		mismatch := ppRefund("shop.rf-x.r", "shop.trx-part.1", "1", false)
		mismatch.PaymentProvider = PawapayDepositID("shop.trx-other.1")
		if res, err := p.Refund(ctx, mismatch); err != nil || res.Status != StatusFailed || res.Code != paygatev1.FailureProviderError {
			t.Fatalf("refund of a payment with another depositId: %+v %v", res, err)
		}
		after := 0
		for _, n := range fake.Counters().RefundInitiations {
			after += n
		}
		if after != before+1 {
			t.Fatalf("%d refund initiations sent, want 1", after-before)
		}
	})
}

func TestPawapayToolkit(t *testing.T) {
	ctx := context.Background()
	p, fake := newPawapayTest(t, fakepawapay.Options{SignCallbacks: true, Balances: map[string]string{"TZA": "123456.5", "KEN": "70"}}, nil)

	conf, err := p.ActiveConfiguration(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	dep, ok := conf.Limits("TZS", PawapayOpDeposit)
	if !ok || conf.Country != "TZA" || conf.Provider != "VODACOM_TZA" || !conf.SignedCallbacks || conf.SignedRequestsOnly ||
		dep != (PawapayOperationConfig{MinAmount: "100", MaxAmount: "5000000", Decimals: PawapayDecimalsNone, Status: PawapayOperational}) {
		t.Fatalf("active configuration %+v", conf)
	}
	if _, ok := conf.Limits("TZS", PawapayOpRefund); !ok {
		t.Fatalf("no refund limits: %+v", conf)
	}
	if _, err := p.ActiveConfiguration(ctx, "KEN"); err == nil {
		t.Fatal("VODACOM_TZA found in Kenya's configuration")
	}

	fake.SetAvailability("VODACOM_TZA", fakepawapay.OpPayout, fakepawapay.AvailabilityDelayed)
	fake.SetAvailability("VODACOM_TZA", fakepawapay.OpDeposit, fakepawapay.AvailabilityClosed)
	av, err := p.Availability(ctx)
	if err != nil || av.Provider != "VODACOM_TZA" || av.Country != "TZA" ||
		av.Operations[PawapayOpDeposit] != PawapayClosed || av.Operations[PawapayOpPayout] != PawapayDelayed || av.Operations[PawapayOpRefund] != PawapayOperational {
		t.Fatalf("availability %+v %v", av, err)
	}

	pred, err := p.PredictProvider(ctx, "+255 754 000 001")
	if err != nil || pred != (PawapayPrediction{Country: "TZA", Provider: "VODACOM_TZA", PhoneNumber: ppDigits}) {
		t.Fatalf("predict %+v %v", pred, err)
	}
	if pred, err := p.PredictProvider(ctx, "+254712345678"); err != nil || pred.Provider != "MPESA_KEN" {
		t.Fatalf("predict a Kenyan number: %+v %v", pred, err)
	}
	_, err = p.PredictProvider(ctx, "+1 555 0100")
	var pe *PawapayError
	if !errors.As(err, &pe) || pe.Code != "INVALID_PHONE_NUMBER" || pe.StatusCode != http.StatusBadRequest {
		t.Fatalf("predict an unknown number: %v", err)
	}

	bal, err := p.WalletBalances(ctx)
	if err != nil || len(bal) != 1 || bal["TZS"] != "123456.50" {
		t.Fatalf("balances %v %v", bal, err)
	}
	all, _ := newPawapayTest(t, fakepawapay.Options{}, func(c *PawapayConfig) { c.Country = "" })
	if bal, err := all.WalletBalances(ctx); err != nil || len(bal) != 2 || bal["TZS"] != "10000000" || bal["KES"] != "10000000" {
		t.Fatalf("all balances %v %v", bal, err)
	}
	if conf, err := all.ActiveConfiguration(ctx, ""); err != nil || conf.Country != "TZA" {
		t.Fatalf("active configuration without a country: %+v %v", conf, err)
	}

	keys, err := p.PublicKeys(ctx)
	if err != nil || len(keys) != 1 || keys[0].ID != fakepawapay.CallbackKeyID || !strings.Contains(keys[0].Key, "PUBLIC KEY") {
		t.Fatalf("public keys %+v %v", keys, err)
	}

	other, _ := newPawapayTest(t, fakepawapay.Options{}, func(c *PawapayConfig) { c.Provider, c.Country = "MTN_MOMO_ZMB", "" })
	if _, err := other.ActiveConfiguration(ctx, ""); err == nil {
		t.Fatal("a provider not on the account was found")
	}
	if _, err := other.Availability(ctx); err == nil {
		t.Fatal("availability of a provider not on the account")
	}
}

// ppReceiver records callbacks.
type ppReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []ppReceived
}

type ppReceived struct {
	req  *http.Request
	body []byte
}

func newPPReceiver(t *testing.T) *ppReceiver {
	rc := &ppReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, ppReceived{r, body})
		rc.mu.Unlock()
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *ppReceiver) wait(t *testing.T, n int) []ppReceived {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		rc.mu.Lock()
		got := append([]ppReceived(nil), rc.got...)
		rc.mu.Unlock()
		if len(got) >= n {
			return got
		}
	}
	t.Fatalf("waited for %d callbacks", n)
	return nil
}

func TestPawapayCallbacks(t *testing.T) {
	ctx := context.Background()
	rc := newPPReceiver(t)
	p, fake := newPawapayTest(t, fakepawapay.Options{
		SignCallbacks:      true,
		DepositCallbackURL: rc.srv.URL + "/pawapay/deposits",
		PayoutCallbackURL:  rc.srv.URL + "/pawapay/payouts",
	}, nil)
	fake.Script("255754000077", fakepawapay.Scenario{Status: fakepawapay.StatusFailed, FailureCode: "INSUFFICIENT_BALANCE"})

	if _, err := p.Push(ctx, ppPush("att-cb", "1000")); err != nil {
		t.Fatal(err)
	}
	got := rc.wait(t, 1)[0]
	if _, err := p.Disburse(ctx, DisbursementRequest{Reference: "po-cb", Phone: "+255754000077", Amount: "1000", Currency: "TZS"}); err != nil {
		t.Fatal(err)
	}
	failed := rc.wait(t, 2)[1]

	keys, err := p.PublicKeys(ctx)
	if err != nil || len(keys) != 1 {
		t.Fatalf("public keys %v %v", keys, err)
	}
	key := []byte(keys[0].Key)

	// Good signatures verify and parse.
	if err := p.VerifyCallback(got.req, got.body, key); err != nil {
		t.Fatalf("verify: %v", err)
	}
	kind, id, st, code, err := p.ParseCallback(got.body)
	if err != nil || kind != PawapayKindDeposit || id != PawapayDepositID("att-cb") || st != StatusSuccess || code != "" {
		t.Fatalf("parse: %s %s %s %s %v", kind, id, st, code, err)
	}
	if err := VerifyPawapayCallback(failed.req, failed.body, key); err != nil {
		t.Fatalf("verify payout callback: %v", err)
	}
	kind, id, st, code, err = p.ParseCallback(failed.body)
	if err != nil || kind != PawapayKindPayout || id != PawapayPayoutID("po-cb") || st != StatusFailed || code != paygatev1.FailureInsufficientFunds {
		t.Fatalf("parse payout: %s %s %s %s %v", kind, id, st, code, err)
	}

	// Tampering is detected.
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&otherKey.PublicKey)
	wrongKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	clone := func(mod func(*http.Request)) *http.Request {
		r := got.req.Clone(context.Background())
		mod(r)
		return r
	}
	tampered := []struct {
		name string
		req  *http.Request
		body []byte
		key  []byte
	}{
		{"body", got.req, bytes.Replace(got.body, []byte(`"COMPLETED"`), []byte(`"FAILED"`), 1), key},
		{"body and digest", clone(func(r *http.Request) {
			r.Header.Set("Content-Digest", "sha-512=:"+strings.Repeat("A", 86)+"==:")
		}), got.body, key},
		{"authority", clone(func(r *http.Request) { r.Host = "evil.example" }), got.body, key},
		{"path", clone(func(r *http.Request) { r.URL.Path = "/pawapay/payouts" }), got.body, key},
		{"signature-date", clone(func(r *http.Request) { r.Header.Set("Signature-Date", "2001-01-01T00:00:00Z") }), got.body, key},
		{"wrong key", got.req, got.body, wrongKey},
		{"no signature", clone(func(r *http.Request) { r.Header.Del("Signature") }), got.body, key},
		{"no digest", clone(func(r *http.Request) { r.Header.Del("Content-Digest") }), got.body, key},
		{"covers too little", clone(func(r *http.Request) {
			r.Header.Set("Signature-Input", strings.Replace(r.Header.Get("Signature-Input"), `"content-digest" `, "", 1))
		}), got.body, key},
		{"other alg", clone(func(r *http.Request) {
			r.Header.Set("Signature-Input", strings.Replace(r.Header.Get("Signature-Input"), "ecdsa-p256-sha256", "hmac-sha256", 1))
		}), got.body, key},
	}
	for _, tc := range tampered {
		if err := p.VerifyCallback(tc.req, tc.body, tc.key); !errors.Is(err, ErrCallbackSignature) {
			t.Errorf("%s: %v, want ErrCallbackSignature", tc.name, err)
		}
	}
	if err := p.VerifyCallback(got.req, got.body, []byte("not a key")); err == nil || errors.Is(err, ErrCallbackSignature) {
		t.Fatalf("unusable key: %v", err)
	}
}

func TestPawapayParseCallbackPayloads(t *testing.T) {
	p := &Pawapay{}
	id := PawapayDepositID("x")
	tests := []struct {
		name, body string
		ok         bool
		status     Status
		code       paygatev1.FailureCode
	}{
		{"completed", `{"depositId":"` + id + `","status":"COMPLETED"}`, true, StatusSuccess, ""},
		{"processing (redirect flows)", `{"depositId":"` + id + `","status":"PROCESSING"}`, true, StatusPending, ""},
		{"failed without code", `{"depositId":"` + id + `","status":"FAILED"}`, true, StatusFailed, paygatev1.FailureProviderError},
		{"failed", `{"refundId":"` + id + `","status":"FAILED","failureReason":{"failureCode":"PAYER_NOT_FOUND"}}`, true, StatusFailed, paygatev1.FailureInvalidAccount},
		{"unknown status", `{"depositId":"` + id + `","status":"WEIRD"}`, false, "", ""},
		{"no id", `{"status":"COMPLETED"}`, false, "", ""},
		{"two ids", `{"depositId":"` + id + `","payoutId":"` + id + `","status":"COMPLETED"}`, false, "", ""},
		{"not a uuid", `{"depositId":"abc","status":"COMPLETED"}`, false, "", ""},
		{"not JSON", `{`, false, "", ""},
	}
	for _, tc := range tests {
		_, _, st, code, err := p.ParseCallback([]byte(tc.body))
		if (err == nil) != tc.ok || st != tc.status || code != tc.code {
			t.Errorf("%s: %s %s %v", tc.name, st, code, err)
		}
		if err != nil && !errors.Is(err, ErrCallbackPayload) {
			t.Errorf("%s: %v does not wrap ErrCallbackPayload", tc.name, err)
		}
	}
}

func TestPawapayAmount(t *testing.T) {
	tests := []struct{ in, decimals, want string }{
		{"1500.00", "", "1500"},
		{"1500", "", "1500"},
		{"12.50", "", "12.5"},
		{"12.05", PawapayDecimalsTwoPlaces, "12.05"},
		{"0.50", "", "0.5"},
		{"007.10", "", "7.1"},
		{"1500.000", PawapayDecimalsNone, "1500"},
		{"12.50", PawapayDecimalsNone, ""},
		{"1.005", "", ""},
		{"0.00", "", ""},
		{"", "", ""},
		{"-5", "", ""},
		{"5.", "", ""},
		{".5", "", ""},
		{"1e3", "", ""},
		{"1234567890123456789", "", ""},
	}
	for _, tc := range tests {
		got, err := PawapayAmount(tc.in, tc.decimals)
		if (err == nil) != (tc.want != "") || got != tc.want {
			t.Errorf("PawapayAmount(%q, %q) = %q, %v; want %q", tc.in, tc.decimals, got, err, tc.want)
		}
	}
}

func TestPawapayCustomerMessage(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Order #7 (shoes)", "Order 7 shoes"},
		{"Hi", ""},
		{"  Café  Rouge  ", "Caf Rouge"},
		{"Subscription for the premium plan", "Subscription for the"},
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZ", "ABCDEFGHIJKLMNOPQRSTUV"},
		{"", ""},
	}
	for _, tc := range tests {
		got := PawapayCustomerMessage(tc.in)
		if got != tc.want || len(got) > 22 || (got != "" && len(got) < 4) {
			t.Errorf("PawapayCustomerMessage(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPawapayTextMasksPhoneNumbers(t *testing.T) {
	got := pawapayText("The phone number 255754000001 (+255754000002) is not valid; amount 1500.")
	if strings.Contains(got, "754000001") || strings.Contains(got, "754000002") || !strings.Contains(got, "*********001") || !strings.Contains(got, "1500") {
		t.Fatalf("masked: %q", got)
	}
}

// TestPawapayUnusualAnswers covers answers the fake does not give, from a canned server.
func TestPawapayUnusualAnswers(t *testing.T) {
	id := PawapayDepositID("att-u")
	tests := []struct {
		name   string
		status int
		body   string
		want   Result // zero: an error is expected
	}{
		{"REJECTED with UNKNOWN_ERROR is an unknown outcome", 200, `{"depositId":"` + id + `","status":"REJECTED","failureReason":{"failureCode":"UNKNOWN_ERROR","failureMessage":"m"}}`, Result{}},
		{"500 UNKNOWN_ERROR", 500, `{"failureReason":{"failureCode":"UNKNOWN_ERROR","failureMessage":"m"}}`, Result{}},
		{"bare 400 from a proxy", 400, `<html>bad request</html>`, Result{}},
		{"400 without a failure code", 400, `{"status":"REJECTED"}`, Result{}},
		{"401", 401, `{"failureReason":{"failureCode":"NO_AUTHENTICATION","failureMessage":"m"}}`, Result{}},
		{"403 signature", 403, `{"failureReason":{"failureCode":"HTTP_SIGNATURE_ERROR","failureMessage":"m"}}`, Result{}},
		{"answer for another id", 200, `{"depositId":"` + PawapayDepositID("other") + `","status":"ACCEPTED"}`, Result{}},
		{"unknown initiation status", 200, `{"depositId":"` + id + `","status":"MAYBE"}`, Result{}},
		{"not JSON", 200, `ACCEPTED`, Result{}},
		{"redirect", 302, ``, Result{}},
		{"403 deposits not allowed", 403, `{"depositId":"` + id + `","status":"REJECTED","failureReason":{"failureCode":"DEPOSITS_NOT_ALLOWED","failureMessage":"m"}}`,
			Result{Status: StatusFailed, ProviderReference: id, Code: paygatev1.FailurePaymentDeclined, Message: "m"}},
		{"REJECTED without a reason", 200, `{"depositId":"` + id + `","status":"REJECTED"}`,
			Result{Status: StatusFailed, ProviderReference: id, Code: paygatev1.FailureProviderError}},
		{"ACCEPTED without an id", 200, `{"status":"ACCEPTED"}`, Result{Status: StatusPending, ProviderReference: id}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.status == 302 {
					w.Header().Set("Location", "https://elsewhere.example/v2/deposits")
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			p, err := NewPawapay(PawapayConfig{BaseURL: srv.URL, Token: "t", Provider: "VODACOM_TZA"})
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Push(context.Background(), ppPush("att-u", "1000"))
			if tc.want == (Result{}) {
				if err == nil || errors.Is(err, ErrNotFound) {
					t.Fatalf("got %+v %v, want an unknown-outcome error", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}

	statusTests := []struct{ name, body string }{
		{"FOUND without data", `{"status":"FOUND"}`},
		{"unknown payment status", `{"status":"FOUND","data":{"depositId":"` + id + `","status":"SUBMITTED"}}`},
		{"unknown answer status", `{"status":"MAYBE"}`},
		{"data for another id", `{"status":"FOUND","data":{"depositId":"` + PawapayDepositID("other") + `","status":"COMPLETED"}}`},
	}
	for _, tc := range statusTests {
		t.Run("status/"+tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, tc.body) }))
			defer srv.Close()
			p, _ := NewPawapay(PawapayConfig{BaseURL: srv.URL, Token: "t", Provider: "VODACOM_TZA"})
			if got, err := p.PushStatus(context.Background(), ppPush("att-u", "1000")); err == nil || errors.Is(err, ErrNotFound) {
				t.Fatalf("got %+v %v, want an error", got, err)
			}
		})
	}
}
