// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// TestCheckoutSignatureKnownAnswer pins the checkout link's signed payload, so that links issued
// before a change still open after it.
func TestCheckoutSignatureKnownAnswer(t *testing.T) {
	s := New(Options{CheckoutKey: make([]byte, 32)})
	const trx, expires = "trx-abcdefghijklmnopqrstuvwx", "1793613600"
	// printf '%s' 'trx-abcdefghijklmnopqrstuvwx.1793613600' |
	//   openssl dgst -sha256 -mac HMAC -macopt hexkey:<64 zeros> -hex
	const want = "cbdc84ea46040552b6518541f39ba343f4899fb08132d70c01c8454a0c0f9834"
	if got := s.checkoutSignature(trx, expires); got != want {
		t.Fatalf("checkoutSignature = %s, want %s", got, want)
	}
	for _, tc := range []struct {
		name, trx, expires, sig string
		valid                   bool
	}{
		{"issued", trx, expires, want, true},
		{"upper-case hex", trx, expires, strings.ToUpper(want), true},
		{"other expiry", trx, "1793613601", want, false},
		{"other payment", "trx-abcdefghijklmnopqrstuvwy", expires, want, false},
		{"tampered", trx, expires, "0" + want[1:], false},
		{"short", trx, expires, want[:63], false},
		{"empty", trx, expires, "", false},
		{"non-hex", trx, expires, "z" + want[1:], false},
	} {
		if got := s.checkoutSignatureValid(tc.trx, tc.expires, tc.sig); got != tc.valid {
			t.Errorf("%s: checkoutSignatureValid = %v, want %v", tc.name, got, tc.valid)
		}
	}
	if New(Options{}).checkoutSignatureValid(trx, expires, New(Options{}).checkoutSignature(trx, expires)) {
		t.Error("a link signed with no checkout key was accepted")
	}
}

// TestVerifySignatureKnownAnswer checks the server against a request signature computed with
// openssl, and that every refusal keeps its message.
func TestVerifySignatureKnownAnswer(t *testing.T) {
	now := time.Unix(1700000000, 0)
	s := New(Options{CheckoutKey: make([]byte, 32), Clock: testingclock.NewFakePassiveClock(now)})
	secret := []byte("sk_test_51Hx")
	const body = `{"amount":"1000.00","currency":"TZS"}`
	// printf '%s' '1700000000.POST./api/v1/payments.{"amount":"1000.00","currency":"TZS"}' |
	//   openssl dgst -sha256 -hmac 'sk_test_51Hx' -hex
	const sig = "sha256=1dd0e651e8e5e48163283cb85472898956cb66e95234ec502771dda88aac7803"
	for _, tc := range []struct {
		name, ts, sig, want string
	}{
		{"valid", "1700000000", sig, ""},
		{"missing timestamp", "", sig, "X-Timestamp and X-Signature are required."},
		{"missing signature", "1700000000", "", "X-Timestamp and X-Signature are required."},
		{"malformed timestamp", "17e8", sig, "X-Timestamp must be Unix time in seconds."},
		{"stale", "1699999699", sig, "X-Timestamp is outside the allowed window of 300 seconds."},
		{"malformed signature", "1700000000", sig[7:], "X-Signature must be sha256=<hex HMAC-SHA256>."},
		{"mismatch", "1700000001", sig, "X-Signature does not match the request."},
	} {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/payments", strings.NewReader(body))
		if tc.ts != "" {
			r.Header.Set("X-Timestamp", tc.ts)
		}
		if tc.sig != "" {
			r.Header.Set("X-Signature", tc.sig)
		}
		apiErr := s.verifySignature(r, []byte(body), secret)
		switch {
		case tc.want == "" && apiErr != nil:
			t.Errorf("%s: %v", tc.name, apiErr.Message)
		case tc.want != "" && (apiErr == nil || apiErr.Message != tc.want || apiErr.Status != http.StatusUnauthorized || apiErr.Label != LabelInvalidSignature):
			t.Errorf("%s: got %+v, want 401 %s %q", tc.name, apiErr, LabelInvalidSignature, tc.want)
		}
	}
}
