// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	testSecret  = []byte("sk_test_51Hx")
	testWebhook = []byte("whsec_abc")
	testTS      = "1700000000"
	testNow     = time.Unix(1700000000, 0)
)

const (
	createBody = `{"amount":"1000.00","currency":"TZS"}`
	// printf '%s' '1700000000.POST./api/v1/payments.{"amount":"1000.00","currency":"TZS"}' |
	//   openssl dgst -sha256 -hmac 'sk_test_51Hx' -hex
	createSig = "1dd0e651e8e5e48163283cb85472898956cb66e95234ec502771dda88aac7803"
	// printf '%s' '1700000000.GET./api/v1/payments/abc%2Fdef?limit=10&status=pending.' |
	//   openssl dgst -sha256 -hmac 'sk_test_51Hx' -hex
	listPath = "/api/v1/payments/abc%2Fdef?limit=10&status=pending"
	listSig  = "fbd5bb4140a6e37b77dc6d6e2cf4fceab552e8211f7f29f7c6e444a5104e64f9"
	// printf '%s' '1700000000.{"id":"evt_123","type":"payment.completed"}' |
	//   openssl dgst -sha256 -hmac 'whsec_abc' -hex
	webhookBody = `{"id":"evt_123","type":"payment.completed"}`
	webhookSig  = "92f2cdc1cf555e39d902a6a38668eaf725cd7b89331507c990daafb069c97803"
)

// independentMAC computes the request signature without RequestPayload.
func independentMAC(secret []byte, payload string) string {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(payload))
	return hex.EncodeToString(h.Sum(nil))
}

func TestRequestPayload(t *testing.T) {
	tests := []struct {
		name, ts, method, path, body, want string
	}{
		{"post with body", "1700000000", "POST", "/api/v1/payments", `{"a":1}`, `1700000000.POST./api/v1/payments.{"a":1}`},
		{"empty body ends in dot", "1700000000", "GET", "/api/v1/balance", "", "1700000000.GET./api/v1/balance."},
		{"method upper-cased", "1", "get", "/x", "", "1.GET./x."},
		{"mixed-case method", "1", "pAtCh", "/x", "b", "1.PATCH./x.b"},
		{"query and percent-encoding verbatim", "1700000000", "GET", listPath, "", "1700000000.GET." + listPath + "."},
		{"non-ASCII method bytes kept", "1", "pos\xfft", "/", "", "1.POS\xffT./."},
		{"body with dots and newlines", "1", "POST", "/a.b", "x.\ny", "1.POST./a.b.x.\ny"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(RequestPayload(tt.ts, tt.method, tt.path, []byte(tt.body)))
			if got != tt.want {
				t.Errorf("RequestPayload = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSignRequestKnownAnswers(t *testing.T) {
	tests := []struct {
		name                  string
		secret                []byte
		ts, method, path      string
		body                  string
		wantHex, wantIndepPay string
	}{
		{"create payment (openssl)", testSecret, testTS, "POST", "/api/v1/payments", createBody, createSig,
			testTS + ".POST./api/v1/payments." + createBody},
		{"list with query, encoded path, no body (openssl)", testSecret, testTS, "GET", listPath, "", listSig,
			testTS + ".GET." + listPath + "."},
		{"lower-case method signs as upper", testSecret, testTS, "get", listPath, "", listSig,
			testTS + ".GET." + listPath + "."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SignRequest(tt.secret, tt.ts, tt.method, tt.path, []byte(tt.body))
			if got != "sha256="+tt.wantHex {
				t.Errorf("SignRequest = %q, want sha256=%s", got, tt.wantHex)
			}
			if indep := independentMAC(tt.secret, tt.wantIndepPay); indep != tt.wantHex {
				t.Errorf("independent HMAC = %s, want %s", indep, tt.wantHex)
			}
		})
	}
}

func TestHMACRFC4231Vector(t *testing.T) {
	// RFC 4231 test case 2 guards the primitive itself.
	h := hmac.New(sha256.New, []byte("Jefe"))
	h.Write([]byte("what do ya want for nothing?"))
	const want = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Fatalf("HMAC-SHA256 = %s, want %s", got, want)
	}
}

func TestVerifyRequest(t *testing.T) {
	good := "sha256=" + createSig
	body := []byte(createBody)
	tests := []struct {
		name      string
		secret    []byte
		header    string
		ts        string
		method    string
		path      string
		body      []byte
		now       time.Time
		tolerance time.Duration
		want      error
	}{
		{"valid", testSecret, good, testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, nil},
		{"valid lower-case method", testSecret, good, testTS, "post", "/api/v1/payments", body, testNow, DefaultTolerance, nil},
		{"upper-case hex", testSecret, "sha256=" + strings.ToUpper(createSig), testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, nil},
		{"mixed-case hex", testSecret, "sha256=" + strings.ToUpper(createSig[:31]) + createSig[31:], testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, nil},
		{"upper-case prefix", testSecret, "SHA256=" + createSig, testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, nil},
		{"query and encoded path verbatim", testSecret, "sha256=" + listSig, testTS, "GET", listPath, nil, testNow, DefaultTolerance, nil},
		{"decoded path does not verify", testSecret, "sha256=" + listSig, testTS, "GET", "/api/v1/payments/abc/def?limit=10&status=pending", nil, testNow, DefaultTolerance, ErrSignatureMismatch},
		{"reordered query does not verify", testSecret, "sha256=" + listSig, testTS, "GET", "/api/v1/payments/abc%2Fdef?status=pending&limit=10", nil, testNow, DefaultTolerance, ErrSignatureMismatch},
		{"missing query does not verify", testSecret, "sha256=" + listSig, testTS, "GET", "/api/v1/payments/abc%2Fdef", nil, testNow, DefaultTolerance, ErrSignatureMismatch},

		{"exactly tolerance in the past", testSecret, good, testTS, "POST", "/api/v1/payments", body, testNow.Add(300 * time.Second), DefaultTolerance, nil},
		{"exactly tolerance in the future", testSecret, good, testTS, "POST", "/api/v1/payments", body, testNow.Add(-300 * time.Second), DefaultTolerance, nil},
		{"sub-second past the boundary still same second", testSecret, good, testTS, "POST", "/api/v1/payments", body, testNow.Add(300*time.Second + 999*time.Millisecond), DefaultTolerance, nil},
		{"stale by tolerance+1s", testSecret, good, testTS, "POST", "/api/v1/payments", body, testNow.Add(301 * time.Second), DefaultTolerance, ErrTimestampOutsideTolerance},
		{"future by tolerance+1s", testSecret, good, testTS, "POST", "/api/v1/payments", body, testNow.Add(-301 * time.Second), DefaultTolerance, ErrTimestampOutsideTolerance},
		{"very stale", testSecret, good, testTS, "POST", "/api/v1/payments", body, testNow.Add(24 * time.Hour), DefaultTolerance, ErrTimestampOutsideTolerance},
		{"custom tolerance", testSecret, good, testTS, "POST", "/api/v1/payments", body, testNow.Add(61 * time.Second), time.Minute, ErrTimestampOutsideTolerance},
		{"zero tolerance same second", testSecret, good, testTS, "POST", "/api/v1/payments", body, testNow, 0, nil},
		{"negative tolerance acts as zero", testSecret, good, testTS, "POST", "/api/v1/payments", body, testNow.Add(time.Second), -time.Hour, ErrTimestampOutsideTolerance},
		{"zero time now", testSecret, good, testTS, "POST", "/api/v1/payments", body, time.Time{}, DefaultTolerance, ErrTimestampOutsideTolerance},

		{"wrong secret", []byte("sk_test_other"), good, testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMismatch},
		{"empty secret", nil, good, testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrEmptySecret},
		{"tampered body", testSecret, good, testTS, "POST", "/api/v1/payments", []byte(`{"amount":"9000.00","currency":"TZS"}`), testNow, DefaultTolerance, ErrSignatureMismatch},
		{"body with trailing newline", testSecret, good, testTS, "POST", "/api/v1/payments", []byte(createBody + "\n"), testNow, DefaultTolerance, ErrSignatureMismatch},
		{"other method", testSecret, good, testTS, "PUT", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMismatch},
		{"other path", testSecret, good, testTS, "POST", "/api/v1/payouts", body, testNow, DefaultTolerance, ErrSignatureMismatch},
		{"other timestamp in window", testSecret, good, "1700000001", "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMismatch},
		{"leading zero timestamp is another payload", testSecret, good, "01700000000", "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMismatch},

		{"timestamp empty", testSecret, good, "", "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrTimestampMalformed},
		{"timestamp with sign", testSecret, good, "+1700000000", "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrTimestampMalformed},
		{"timestamp negative", testSecret, good, "-1", "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrTimestampMalformed},
		{"timestamp milliseconds (13 digits)", testSecret, good, "1700000000000", "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrTimestampMalformed},
		{"timestamp fraction", testSecret, good, "1700000000.5", "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrTimestampMalformed},
		{"timestamp spaces", testSecret, good, " 1700000000", "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrTimestampMalformed},
		{"timestamp RFC 3339", testSecret, good, "2023-11-14T22:13:20Z", "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrTimestampMalformed},
		{"timestamp non-ASCII digits", testSecret, good, "١٧٠٠٠٠٠٠٠٠", "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrTimestampMalformed},
		{"malformed timestamp wins over bad header", testSecret, "garbage", "x", "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrTimestampMalformed},
		{"stale timestamp wins over bad header", testSecret, "garbage", testTS, "POST", "/api/v1/payments", body, testNow.Add(time.Hour), DefaultTolerance, ErrTimestampOutsideTolerance},

		{"header empty", testSecret, "", testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMalformed},
		{"header missing prefix", testSecret, createSig, testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMalformed},
		{"header other algorithm", testSecret, "sha512=" + createSig, testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMalformed},
		{"header prefix only", testSecret, "sha256=", testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMalformed},
		{"header odd-length hex", testSecret, "sha256=" + createSig[:63], testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMalformed},
		{"header short even hex", testSecret, "sha256=" + createSig[:62], testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMalformed},
		{"header too long", testSecret, "sha256=" + createSig + "00", testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMalformed},
		{"header non-hex", testSecret, "sha256=" + createSig[:63] + "g", testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMalformed},
		{"header base64", testSecret, "sha256=HdDmUejl5IFjKDy4VHKJiVbLZulSNOxQJ3HdqIqseAM=", testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMalformed},
		{"header space after prefix", testSecret, "sha256= " + createSig, testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMalformed},
		{"header two signatures", testSecret, good + ",sha256=" + createSig, testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMalformed},
		{"header Unicode-folded prefix", testSecret, "\u017fha256=" + createSig, testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMalformed},
		{"header all zeros", testSecret, "sha256=" + strings.Repeat("0", 64), testTS, "POST", "/api/v1/payments", body, testNow, DefaultTolerance, ErrSignatureMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyRequest(tt.secret, tt.header, tt.ts, tt.method, tt.path, tt.body, tt.now, tt.tolerance)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("VerifyRequest = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("VerifyRequest = %v, want errors.Is %v", err, tt.want)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("VerifyRequest error %T is not *Error", err)
			}
			assertNoLeak(t, err, tt.secret, testSecret)
		})
	}
}

// assertNoLeak fails if err's text contains a secret or an expected digest.
func assertNoLeak(t *testing.T, err error, secrets ...[]byte) {
	t.Helper()
	msg := err.Error()
	for _, s := range secrets {
		if len(s) > 0 && strings.Contains(msg, string(s)) {
			t.Errorf("error %q contains the secret", msg)
		}
	}
	for _, d := range []string{createSig, listSig, webhookSig} {
		if strings.Contains(strings.ToLower(msg), d) {
			t.Errorf("error %q contains a signature", msg)
		}
	}
}

func TestErrorMessages(t *testing.T) {
	body := []byte(createBody)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"tolerance", VerifyRequest(testSecret, "sha256="+createSig, testTS, "POST", "/api/v1/payments", body, testNow.Add(time.Hour), DefaultTolerance),
			"X-Timestamp is outside the allowed window of 300 seconds"},
		{"custom tolerance", VerifyRequest(testSecret, "sha256="+createSig, testTS, "POST", "/api/v1/payments", body, testNow.Add(time.Hour), 90*time.Second),
			"X-Timestamp is outside the allowed window of 90 seconds"},
		{"malformed timestamp", VerifyRequest(testSecret, "", "abc", "POST", "/", nil, testNow, DefaultTolerance),
			"X-Timestamp must be a Unix time in whole seconds (1 to 12 digits)"},
		{"malformed header", VerifyRequest(testSecret, "nope", testTS, "POST", "/", nil, testNow, DefaultTolerance),
			`X-Signature must be "sha256=" followed by 64 hexadecimal characters`},
		{"mismatch", VerifyRequest(testSecret, "sha256="+createSig, testTS, "POST", "/", nil, testNow, DefaultTolerance),
			"X-Signature does not match the request"},
		{"webhook age", VerifyWebhook(testWebhook, webhookSig, testTS, []byte(webhookBody), testNow.Add(time.Hour), WebhookMaxAge),
			"webhook timestamp is outside the allowed window of 300 seconds"},
		{"webhook mismatch", VerifyWebhook(testWebhook, webhookSig, testTS, nil, testNow, WebhookMaxAge),
			"webhook signature does not match the delivery"},
		{"empty secret", VerifyWebhook(nil, webhookSig, testTS, nil, testNow, WebhookMaxAge),
			"signature: no signing secret is configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("got nil error")
			}
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}

	var se *Error
	err := VerifyRequest(testSecret, "sha256="+createSig, testTS, "POST", "/api/v1/payments", body, testNow.Add(time.Hour), 2*time.Minute)
	if !errors.As(err, &se) || se.Tolerance != 2*time.Minute || se.Header != TimestampHeader {
		t.Errorf("errors.As = %+v, want Tolerance 2m and Header X-Timestamp", se)
	}
	if err := VerifyWebhook(testWebhook, webhookSig, testTS, nil, testNow.Add(-time.Hour), WebhookMaxAge); !errors.As(err, &se) || !se.Future {
		t.Errorf("timestamp an hour ahead: errors.As = %+v, want Future", se)
	}
	if err := VerifyWebhook(testWebhook, webhookSig, testTS, nil, testNow.Add(time.Hour), WebhookMaxAge); !errors.As(err, &se) || se.Future {
		t.Errorf("timestamp an hour old: errors.As = %+v, want not Future", se)
	}
	if (&Error{Header: "H", Err: ErrSignatureMismatch}).Error() != "H: signature does not match" {
		t.Errorf("zero-message Error() fallback is wrong")
	}
}

func TestSignWebhookKnownAnswer(t *testing.T) {
	got := SignWebhook(testWebhook, testTS, []byte(webhookBody))
	if got != webhookSig {
		t.Errorf("SignWebhook = %s, want %s", got, webhookSig)
	}
	if indep := independentMAC(testWebhook, testTS+"."+webhookBody); indep != webhookSig {
		t.Errorf("independent HMAC = %s, want %s", indep, webhookSig)
	}
	if p := string(WebhookPayload(testTS, nil)); p != testTS+"." {
		t.Errorf("WebhookPayload with empty body = %q, want %q", p, testTS+".")
	}
}

func TestVerifyWebhook(t *testing.T) {
	body := []byte(webhookBody)
	tests := []struct {
		name   string
		secret []byte
		sig    string
		ts     string
		body   []byte
		now    time.Time
		maxAge time.Duration
		want   error
	}{
		{"valid", testWebhook, webhookSig, testTS, body, testNow, WebhookMaxAge, nil},
		{"upper-case hex", testWebhook, strings.ToUpper(webhookSig), testTS, body, testNow, WebhookMaxAge, nil},
		{"exactly max age old", testWebhook, webhookSig, testTS, body, testNow.Add(5 * time.Minute), WebhookMaxAge, nil},
		{"max age + 1s old", testWebhook, webhookSig, testTS, body, testNow.Add(5*time.Minute + time.Second), WebhookMaxAge, ErrTimestampOutsideTolerance},
		{"exactly max age in future", testWebhook, webhookSig, testTS, body, testNow.Add(-5 * time.Minute), WebhookMaxAge, nil},
		{"max age + 1s in future", testWebhook, webhookSig, testTS, body, testNow.Add(-5*time.Minute - time.Second), WebhookMaxAge, ErrTimestampOutsideTolerance},
		{"wrong secret", []byte("whsec_other"), webhookSig, testTS, body, testNow, WebhookMaxAge, ErrSignatureMismatch},
		{"request secret is not webhook secret", testSecret, webhookSig, testTS, body, testNow, WebhookMaxAge, ErrSignatureMismatch},
		{"empty secret", []byte{}, webhookSig, testTS, body, testNow, WebhookMaxAge, ErrEmptySecret},
		{"tampered body", testWebhook, webhookSig, testTS, []byte(`{"id":"evt_124","type":"payment.completed"}`), testNow, WebhookMaxAge, ErrSignatureMismatch},
		{"replayed with new timestamp", testWebhook, webhookSig, "1700000060", body, testNow, WebhookMaxAge, ErrSignatureMismatch},
		{"prefix not accepted", testWebhook, "sha256=" + webhookSig, testTS, body, testNow, WebhookMaxAge, ErrSignatureMalformed},
		{"empty signature", testWebhook, "", testTS, body, testNow, WebhookMaxAge, ErrSignatureMalformed},
		{"odd-length", testWebhook, webhookSig[:63], testTS, body, testNow, WebhookMaxAge, ErrSignatureMalformed},
		{"non-hex", testWebhook, "z" + webhookSig[1:], testTS, body, testNow, WebhookMaxAge, ErrSignatureMalformed},
		{"malformed timestamp", testWebhook, webhookSig, "17e8", body, testNow, WebhookMaxAge, ErrTimestampMalformed},
		{"empty timestamp", testWebhook, webhookSig, "", body, testNow, WebhookMaxAge, ErrTimestampMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyWebhook(tt.secret, tt.sig, tt.ts, tt.body, tt.now, tt.maxAge)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("VerifyWebhook = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("VerifyWebhook = %v, want errors.Is %v", err, tt.want)
			}
			assertNoLeak(t, err, tt.secret, testWebhook)
		})
	}
}

func TestParseTimestamp(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0", 0, false},
		{"1700000000", 1700000000, false},
		{"999999999999", 999999999999, false},
		{"000000000001", 1, false},
		{"1000000000000", 0, true},
		{"", 0, true},
		{"-5", 0, true},
		{"+5", 0, true},
		{"5 ", 0, true},
		{"0x10", 0, true},
		{"1_000", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseTimestamp(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseTimestamp(%q) = %d, %v; want %d, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !errors.Is(err, ErrTimestampMalformed) {
			t.Errorf("ParseTimestamp(%q) error %v is not ErrTimestampMalformed", tt.in, err)
		}
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	methods := []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
	paths := []string{"/", "/api/v1/payments", listPath, "/api/v1/verify-payment/TRX%20001?x=%E2%82%AC", "/a?b=c.d"}
	bodies := [][]byte{nil, {}, []byte("{}"), []byte(createBody), {0, 0xff, '.', '\n'}}
	for _, m := range methods {
		for _, p := range paths {
			for _, b := range bodies {
				h := SignRequest(testSecret, testTS, m, p, b)
				if err := VerifyRequest(testSecret, h, testTS, m, p, b, testNow, DefaultTolerance); err != nil {
					t.Errorf("%s %s %q: %v", m, p, b, err)
				}
			}
		}
	}
}

func TestCheckTimestamp(t *testing.T) {
	tests := []struct {
		name      string
		ts        string
		now       time.Time
		tolerance time.Duration
		want      int64
		wantErr   error
	}{
		{"now", testTS, testNow, DefaultTolerance, 1700000000, nil},
		{"exactly tolerance old", testTS, testNow.Add(300 * time.Second), DefaultTolerance, 1700000000, nil},
		{"exactly tolerance ahead", testTS, testNow.Add(-300 * time.Second), DefaultTolerance, 1700000000, nil},
		{"stale returns the timestamp", testTS, testNow.Add(301 * time.Second), DefaultTolerance, 1700000000, ErrTimestampOutsideTolerance},
		{"future returns the timestamp", testTS, testNow.Add(-301 * time.Second), DefaultTolerance, 1700000000, ErrTimestampOutsideTolerance},
		{"negative tolerance is zero", testTS, testNow, -time.Second, 1700000000, nil},
		{"malformed", "17e8", testNow, DefaultTolerance, 0, ErrTimestampMalformed},
		{"13 digits", "1700000000000", testNow, DefaultTolerance, 0, ErrTimestampMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckTimestamp(tt.ts, tt.now, tt.tolerance)
			if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("CheckTimestamp(%q) = %d, %v; want %d, %v", tt.ts, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestSignVerifyMAC(t *testing.T) {
	key := []byte("key")
	// printf '1.{}' | openssl dgst -sha256 -hmac key
	const known = "1ba6b8171186efc613e8bcc0cbdab2748f24984d7c5a84faa2637afa0e40d224"
	if got := SignMAC(key, []byte("1.{}")); got != known {
		t.Fatalf("SignMAC = %s, want %s", got, known)
	}
	if got := hex.EncodeToString(MAC(key, []byte("1.{}"))); got != known {
		t.Fatalf("MAC = %s, want %s", got, known)
	}
	if SignWebhook(key, "1", []byte("{}")) != known {
		t.Fatal("SignWebhook is not SignMAC over WebhookPayload")
	}
	tests := []struct {
		name    string
		key     []byte
		sig     string
		payload string
		want    error
	}{
		{"valid", key, known, "1.{}", nil},
		{"upper-case hex", key, strings.ToUpper(known), "1.{}", nil},
		{"other payload", key, known, "1.{} ", ErrSignatureMismatch},
		{"other key", []byte("kez"), known, "1.{}", ErrSignatureMismatch},
		{"empty key", nil, SignMAC(nil, []byte("1.{}")), "1.{}", ErrEmptySecret},
		{"empty signature", key, "", "1.{}", ErrSignatureMalformed},
		{"short", key, known[:62], "1.{}", ErrSignatureMalformed},
		{"long", key, known + "00", "1.{}", ErrSignatureMalformed},
		{"prefixed", key, "sha256=" + known, "1.{}", ErrSignatureMalformed},
		{"non-hex", key, "g" + known[1:], "1.{}", ErrSignatureMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyMAC(tt.key, tt.sig, []byte(tt.payload))
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("VerifyMAC = %v, want %v", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), known) {
				t.Errorf("error %q contains the signature", err)
			}
		})
	}
}

func TestEqual(t *testing.T) {
	a := MAC([]byte("k"), []byte("a"))
	if !Equal(a, append([]byte(nil), a...)) {
		t.Error("Equal(a, copy of a) = false")
	}
	if Equal(a, MAC([]byte("k"), []byte("b"))) || Equal(a, a[:31]) || Equal(a, nil) {
		t.Error("Equal accepted a different digest")
	}
}

func TestWebhookHeaderNames(t *testing.T) {
	tests := []struct{ brand, event, ts, sig string }{
		{"", "X-Paygate-Event", "X-Paygate-Timestamp", "X-Paygate-Signature"},
		{"Paygate", "X-Paygate-Event", "X-Paygate-Timestamp", "X-Paygate-Signature"},
		{"acmepay", "X-Acmepay-Event", "X-Acmepay-Timestamp", "X-Acmepay-Signature"},
		{"ACME-pay", "X-Acme-Pay-Event", "X-Acme-Pay-Timestamp", "X-Acme-Pay-Signature"},
	}
	for _, tt := range tests {
		e, ts, sig := WebhookHeaderNames(tt.brand)
		if e != tt.event || ts != tt.ts || sig != tt.sig {
			t.Errorf("WebhookHeaderNames(%q) = %s, %s, %s; want %s, %s, %s", tt.brand, e, ts, sig, tt.event, tt.ts, tt.sig)
		}
	}
}
