// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package signing is Paygate's one implementation of its HMAC-SHA256 signatures: the request
// signature a merchant sends in X-Signature (docs/api.md, Authentication), the signature Paygate
// puts on webhook deliveries (docs/webhooks-receiver.md), and a generic keyed MAC for the other
// signed values (the hosted checkout link, the upstream provider's callbacks). It owns the signed
// payloads, the header names, the timestamp rules and the constant-time comparison.
//
// Merchants may import it (it depends on the standard library only); the Go client
// (github.com/paygate/paygate/pkg/paygate) and the Paygate server use it.
//
// Verification is constant time in the digest comparison and never reports the secret or the
// expected signature in an error.
package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/textproto"
	"time"
)

// Header names and values used by the request and webhook signatures.
const (
	// TimestampHeader carries the Unix time, in seconds, of a signed request.
	TimestampHeader = "X-Timestamp"
	// SignatureHeader carries the request signature, "sha256=<hex>".
	SignatureHeader = "X-Signature"
	// Prefix precedes the hex digest in SignatureHeader.
	Prefix = "sha256="
	// DefaultTolerance is the default allowed distance between a request's
	// timestamp and the server clock (docs/api.md, Authentication).
	DefaultTolerance = 300 * time.Second
	// WebhookMaxAge is the age after which a webhook receiver rejects a
	// delivery's timestamp (docs/webhooks-receiver.md).
	WebhookMaxAge = 5 * time.Minute
	// MaxTimestampDigits is the maximum number of digits of a timestamp.
	MaxTimestampDigits = 12
	// DefaultBrand is the brand word of the webhook header names when none is
	// configured: X-Paygate-Event, X-Paygate-Timestamp, X-Paygate-Signature.
	DefaultBrand = "Paygate"
)

// WebhookHeaderNames returns the event type, timestamp and signature header
// names of a webhook delivery for brand, in canonical form: X-<Brand>-Event,
// X-<Brand>-Timestamp and X-<Brand>-Signature. An empty brand means
// DefaultBrand. Deliveries also carry X-<Brand>-Event-Id (the event id) and
// X-Environment.
func WebhookHeaderNames(brand string) (event, timestamp, signature string) {
	if brand == "" {
		brand = DefaultBrand
	}
	p := "X-" + brand + "-"
	return textproto.CanonicalMIMEHeaderKey(p + "Event"), textproto.CanonicalMIMEHeaderKey(p + "Timestamp"),
		textproto.CanonicalMIMEHeaderKey(p + "Signature")
}

// hexDigestLen is the length of a hex-encoded SHA-256 digest.
const hexDigestLen = 2 * sha256.Size

// Sentinel errors. VerifyRequest and VerifyWebhook return *Error values that
// wrap one of these; ParseTimestamp, CheckTimestamp and VerifyMAC return them
// as they are. Test them with errors.Is.
var (
	// ErrEmptySecret means the verifier was given no secret. It is a server
	// configuration error (with an empty key anyone could sign): answer it
	// as an internal error rather than showing its text to the client.
	ErrEmptySecret = errors.New("signature: no signing secret is configured")
	// ErrTimestampMalformed means the timestamp is not Unix time in whole
	// seconds written as 1 to 12 decimal digits.
	ErrTimestampMalformed = errors.New("timestamp is not a Unix time in whole seconds")
	// ErrTimestampOutsideTolerance means the timestamp is too far in the past
	// or in the future.
	ErrTimestampOutsideTolerance = errors.New("timestamp is outside the allowed window")
	// ErrSignatureMalformed means the signature is not a 64-character hex
	// SHA-256 digest (with the "sha256=" prefix for requests).
	ErrSignatureMalformed = errors.New("signature is malformed")
	// ErrSignatureMismatch means the signature is well formed but does not
	// match the signed payload.
	ErrSignatureMismatch = errors.New("signature does not match")
)

// Error is the error returned by VerifyRequest and VerifyWebhook. Its
// message is safe to return to the caller of the API: it names the header at
// fault and never contains the secret or the expected signature.
type Error struct {
	// Header is the header or field at fault, for example "X-Timestamp".
	Header string
	// Err is one of the sentinel errors of this package.
	Err error
	// Tolerance is the allowed window; set for ErrTimestampOutsideTolerance.
	Tolerance time.Duration
	// Future is set for ErrTimestampOutsideTolerance when the timestamp is
	// ahead of now rather than stale.
	Future bool

	msg string
}

// Error returns a human-readable message.
func (e *Error) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return e.Header + ": " + e.Err.Error()
}

// Unwrap returns the sentinel error, so errors.Is works.
func (e *Error) Unwrap() error { return e.Err }

// RequestPayload returns the signed payload of a request:
// "<timestamp>.<METHOD>.<path_with_query>.<raw_body>". The method is
// upper-cased (ASCII only); the path with its query and the body are used
// verbatim, so the path must be the raw request URI as sent (for example
// r.URL.RequestURI() or r.RequestURI, not a decoded path). An empty body
// yields a payload that ends in a dot.
func RequestPayload(timestamp, method, pathWithQuery string, body []byte) []byte {
	p := make([]byte, 0, len(timestamp)+len(method)+len(pathWithQuery)+len(body)+3)
	p = append(p, timestamp...)
	p = append(p, '.')
	for i := 0; i < len(method); i++ {
		c := method[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		p = append(p, c)
	}
	p = append(p, '.')
	p = append(p, pathWithQuery...)
	p = append(p, '.')
	p = append(p, body...)
	return p
}

// SignRequest returns the X-Signature value of a request: "sha256=" followed
// by the lower-case hex HMAC-SHA256 of RequestPayload keyed with secret.
func SignRequest(secret []byte, timestamp, method, pathWithQuery string, body []byte) string {
	return Prefix + SignMAC(secret, RequestPayload(timestamp, method, pathWithQuery, body))
}

// VerifyRequest checks the X-Signature header of a request signed with
// secret. It checks, in this order, that a secret is configured
// (ErrEmptySecret), that timestamp is Unix seconds in 1 to 12 decimal digits
// (ErrTimestampMalformed), that it is within tolerance of now in either
// direction (ErrTimestampOutsideTolerance; exactly tolerance is accepted,
// compared in whole seconds), that header is "sha256=" (any case) followed by
// 64 hex digits of either case (ErrSignatureMalformed), and that the digest
// matches, compared in constant time (ErrSignatureMismatch). A negative
// tolerance is treated as zero.
func VerifyRequest(secret []byte, header, timestamp, method, pathWithQuery string, body []byte, now time.Time, tolerance time.Duration) error {
	if len(secret) == 0 {
		return &Error{Header: SignatureHeader, Err: ErrEmptySecret, msg: ErrEmptySecret.Error()}
	}
	if err := checkTimestampField(TimestampHeader, timestamp, now, tolerance); err != nil {
		return err
	}
	err := ErrSignatureMalformed
	if hasPrefixFoldASCII(header, Prefix) {
		err = VerifyMAC(secret, header[len(Prefix):], RequestPayload(timestamp, method, pathWithQuery, body))
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrSignatureMalformed):
		return &Error{Header: SignatureHeader, Err: ErrSignatureMalformed,
			msg: SignatureHeader + ` must be "sha256=" followed by 64 hexadecimal characters`}
	}
	return &Error{Header: SignatureHeader, Err: ErrSignatureMismatch,
		msg: SignatureHeader + " does not match the request"}
}

// WebhookPayload returns the signed payload of a webhook delivery:
// "<timestamp>.<raw_body>".
func WebhookPayload(timestamp string, body []byte) []byte {
	p := make([]byte, 0, len(timestamp)+1+len(body))
	p = append(p, timestamp...)
	p = append(p, '.')
	return append(p, body...)
}

// SignWebhook returns the signature header value of a webhook delivery: the
// lower-case hex HMAC-SHA256 of "<timestamp>.<raw_body>" keyed with the
// webhook secret, without any prefix.
func SignWebhook(secret []byte, timestamp string, body []byte) string {
	return SignMAC(secret, WebhookPayload(timestamp, body))
}

// VerifyWebhook checks a webhook delivery's signature as a receiver does. It
// checks, in this order, that a secret is configured (ErrEmptySecret), that
// timestamp is Unix seconds in 1 to 12 decimal digits
// (ErrTimestampMalformed), that it is at most maxAge old and at most maxAge
// in the future (ErrTimestampOutsideTolerance), that signatureHex is 64 hex
// digits of either case (ErrSignatureMalformed) and that it matches, compared
// in constant time (ErrSignatureMismatch). Receivers use WebhookMaxAge.
func VerifyWebhook(secret []byte, signatureHex, timestamp string, body []byte, now time.Time, maxAge time.Duration) error {
	const sigField, tsField = "webhook signature", "webhook timestamp"
	if len(secret) == 0 {
		return &Error{Header: sigField, Err: ErrEmptySecret, msg: ErrEmptySecret.Error()}
	}
	if err := checkTimestampField(tsField, timestamp, now, maxAge); err != nil {
		return err
	}
	switch err := VerifyMAC(secret, signatureHex, WebhookPayload(timestamp, body)); {
	case err == nil:
		return nil
	case errors.Is(err, ErrSignatureMalformed):
		return &Error{Header: sigField, Err: ErrSignatureMalformed,
			msg: sigField + " must be 64 hexadecimal characters"}
	}
	return &Error{Header: sigField, Err: ErrSignatureMismatch,
		msg: sigField + " does not match the delivery"}
}

// ParseTimestamp parses a signature timestamp: Unix time in seconds written
// as 1 to 12 ASCII decimal digits, without sign, spaces or fraction. Its error
// is ErrTimestampMalformed.
func ParseTimestamp(timestamp string) (int64, error) {
	if len(timestamp) == 0 || len(timestamp) > MaxTimestampDigits {
		return 0, ErrTimestampMalformed
	}
	var n int64
	for i := 0; i < len(timestamp); i++ {
		c := timestamp[i]
		if c < '0' || c > '9' {
			return 0, ErrTimestampMalformed
		}
		n = n*10 + int64(c-'0') // at most 12 digits: cannot overflow
	}
	return n, nil
}

// CheckTimestamp parses timestamp (ParseTimestamp) and checks that it is
// within tolerance of now in either direction, compared in whole seconds:
// exactly tolerance is accepted, and a negative tolerance is treated as zero.
// It returns the parsed timestamp (also with ErrTimestampOutsideTolerance, so
// that the caller can tell a stale timestamp from one in the future) and
// ErrTimestampMalformed or ErrTimestampOutsideTolerance.
func CheckTimestamp(timestamp string, now time.Time, tolerance time.Duration) (int64, error) {
	ts, err := ParseTimestamp(timestamp)
	if err != nil {
		return 0, err
	}
	if tolerance < 0 {
		tolerance = 0
	}
	// The timestamp has one-second resolution. ts+limit and ts-limit cannot
	// overflow (0 <= ts < 1e12, 0 <= limit < 1e10), whatever now is.
	limit := int64(tolerance / time.Second)
	if n := now.Unix(); n > ts+limit || n < ts-limit {
		return ts, ErrTimestampOutsideTolerance
	}
	return ts, nil
}

// checkTimestampField is CheckTimestamp with an *Error naming field.
func checkTimestampField(field, timestamp string, now time.Time, tolerance time.Duration) error {
	ts, err := CheckTimestamp(timestamp, now, tolerance)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrTimestampMalformed):
		return &Error{Header: field, Err: ErrTimestampMalformed,
			msg: fmt.Sprintf("%s must be a Unix time in whole seconds (1 to %d digits)", field, MaxTimestampDigits)}
	}
	if tolerance < 0 {
		tolerance = 0
	}
	return &Error{Header: field, Err: ErrTimestampOutsideTolerance, Tolerance: tolerance, Future: ts > now.Unix(),
		msg: fmt.Sprintf("%s is outside the allowed window of %d seconds", field, int64(tolerance/time.Second))}
}

// MAC returns the HMAC-SHA256 of payload keyed with key. It is the primitive
// of every signature of this package; an empty key is the caller's concern
// here (VerifyMAC refuses one).
func MAC(key, payload []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(payload)
	return h.Sum(nil)
}

// SignMAC returns the lower-case hex HMAC-SHA256 of payload keyed with key,
// without any prefix: the form of the webhook signature, the hosted checkout
// link's signature and the upstream provider's callback signature.
func SignMAC(key, payload []byte) string {
	return hex.EncodeToString(MAC(key, payload))
}

// VerifyMAC checks a hex HMAC-SHA256 made by SignMAC (upper- or lower-case
// hex). It returns ErrEmptySecret when key is empty, ErrSignatureMalformed
// when signatureHex is not 64 hex digits, and ErrSignatureMismatch when the
// digest, compared in constant time, differs.
func VerifyMAC(key []byte, signatureHex string, payload []byte) error {
	if len(key) == 0 {
		return ErrEmptySecret
	}
	got, ok := decodeDigest(signatureHex)
	if !ok {
		return ErrSignatureMalformed
	}
	if !Equal(got, MAC(key, payload)) {
		return ErrSignatureMismatch
	}
	return nil
}

// Equal compares two digests in constant time (for equal lengths): use it,
// never bytes.Equal or ==, to compare a received MAC with the expected one.
func Equal(a, b []byte) bool { return hmac.Equal(a, b) }

// decodeDigest decodes a 64-character hex digest of either case.
func decodeDigest(s string) ([]byte, bool) {
	if len(s) != hexDigestLen {
		return nil, false
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, false
	}
	return b, true
}

// hasPrefixFoldASCII reports whether s starts with the lower-case ASCII
// prefix, ignoring ASCII case only (no Unicode folding).
func hasPrefixFoldASCII(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// LegacyIPNHeader carries the signature of a legacy IPN delivery (a merchant whose webhook format
// is LegacyIPN, docs/migrating.md): the hex HMAC-SHA256 of the raw body, no timestamp.
const LegacyIPNHeader = "X-Signature"

// SignLegacyIPN signs a legacy IPN body: hex HMAC-SHA256 of the body, keyed with the merchant's
// webhook signing secret or the environment's API secret (the merchant's legacyIPNSigningKey).
func SignLegacyIPN(secret, body []byte) string { return SignMAC(secret, body) }

// VerifyLegacyIPN checks a legacy IPN signature as a receiver written for the older gateway does
// (constant-time; errors as VerifyMAC). It has no timestamp to check: receivers de-duplicate on
// data.trx_id.
func VerifyLegacyIPN(secret []byte, signatureHex string, body []byte) error {
	return VerifyMAC(secret, signatureHex, body)
}
