// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate/signing"
)

// Callback headers the upstream provider sets on every callback POST.
const (
	// CallbackSignatureHeader carries the lowercase or uppercase hex HMAC-SHA256, keyed with the
	// callback secret, of "<timestamp>.<raw body>".
	CallbackSignatureHeader = "X-Provider-Signature"
	// CallbackTimestampHeader carries the signing time in Unix seconds (decimal).
	CallbackTimestampHeader = "X-Provider-Timestamp"
)

// Callback kinds: which operation a callback is about.
const (
	CallbackKindCollection   = "collection"
	CallbackKindDisbursement = "disbursement"
	// CallbackKindRefund is a refund's callback (POST /v1/refunds; its reference is the refund's,
	// "<namespace>.<refund>.r").
	CallbackKindRefund = "refund"
)

// DefaultCallbackMaxAge is the tolerated clock distance of a callback's timestamp when
// ParseCallback is given a maxAge <= 0.
const DefaultCallbackMaxAge = 5 * time.Minute

// MaxCallbackBody is the largest callback body ParseCallback accepts; receivers should read at
// most this many bytes (plus one, to detect more).
const MaxCallbackBody = 64 << 10

// Errors ParseCallback wraps, so that a receiver can tell a forged or stale callback (answer 401,
// log as suspicious) from a well-signed one it does not understand (answer 400).
var (
	// ErrCallbackSignature: the signature is missing, malformed or does not match.
	ErrCallbackSignature = errors.New("provider: callback signature is invalid")
	// ErrCallbackTimestamp: the timestamp is missing, malformed or outside the allowed window.
	ErrCallbackTimestamp = errors.New("provider: callback timestamp is invalid or outside the allowed window")
	// ErrCallbackPayload: the signed body is not a callback Paygate understands.
	ErrCallbackPayload = errors.New("provider: callback payload is invalid")
)

// Callback is a verified result notification from the upstream provider. Callbacks may arrive
// late, more than once, or out of order: they are hints to be applied idempotently (a terminal
// status never goes back), or confirmed by a status query.
type Callback struct {
	Reference         string
	ProviderReference string
	Status            Status
	Code              paygatev1.FailureCode
	Message           string
	// Kind is CallbackKindCollection, CallbackKindDisbursement or CallbackKindRefund.
	Kind string
}

// callbackBody is the callback's wire shape.
type callbackBody struct {
	Reference         string `json:"reference"`
	ProviderReference string `json:"provider_reference"`
	Status            string `json:"status"`
	Code              string `json:"code"`
	Message           string `json:"message"`
	Kind              string `json:"kind"`
}

// SignCallback returns the hex HMAC-SHA256 of "<timestamp>.<body>" keyed with secret: the value
// of the X-Provider-Signature header.
func SignCallback(secret []byte, timestamp string, body []byte) string {
	return signing.SignMAC(secret, callbackPayload(timestamp, body))
}

// callbackPayload is what a callback signs, "<timestamp>.<body>": the form of Paygate's own
// webhook signature.
func callbackPayload(timestamp string, body []byte) []byte {
	return signing.WebhookPayload(timestamp, body)
}

// ParseCallback verifies and decodes a callback: signatureHex and timestamp are the
// X-Provider-Signature and X-Provider-Timestamp headers, body the raw request body. It checks,
// in this order, the signature (constant time), that the timestamp is within maxAge of now in
// either direction (maxAge <= 0 means DefaultCallbackMaxAge), and the payload: valid JSON object,
// non-empty reference, a known status (INPROGRESS is StatusPending), a known kind. A FAILED
// callback without a code gets PROVIDER_ERROR. Errors wrap ErrCallbackSignature,
// ErrCallbackTimestamp or ErrCallbackPayload and never contain the secret.
func ParseCallback(secret []byte, signatureHex, timestamp string, body []byte, now time.Time, maxAge time.Duration) (Callback, error) {
	if len(secret) == 0 {
		// An empty key would make every attacker's signature computable.
		return Callback{}, fmt.Errorf("%w: no callback secret configured", ErrCallbackSignature)
	}
	if signatureHex == "" {
		return Callback{}, fmt.Errorf("%w: missing %s", ErrCallbackSignature, CallbackSignatureHeader)
	}
	sigErr := signing.VerifyMAC(secret, signatureHex, callbackPayload(timestamp, body))
	if errors.Is(sigErr, signing.ErrSignatureMalformed) {
		return Callback{}, fmt.Errorf("%w: %s is not a hex SHA-256 MAC", ErrCallbackSignature, CallbackSignatureHeader)
	}
	if timestamp == "" {
		return Callback{}, fmt.Errorf("%w: missing %s", ErrCallbackTimestamp, CallbackTimestampHeader)
	}
	if sigErr != nil {
		return Callback{}, fmt.Errorf("%w: mismatch", ErrCallbackSignature)
	}

	if maxAge <= 0 {
		maxAge = DefaultCallbackMaxAge
	}
	ts, err := signing.CheckTimestamp(timestamp, now, maxAge)
	if errors.Is(err, signing.ErrTimestampMalformed) {
		return Callback{}, fmt.Errorf("%w: %s is not Unix seconds", ErrCallbackTimestamp, CallbackTimestampHeader)
	}
	if err != nil {
		return Callback{}, fmt.Errorf("%w: signed %ds away from now (allowed %ds)", ErrCallbackTimestamp,
			now.Unix()-ts, int64(maxAge/time.Second))
	}

	if len(body) > MaxCallbackBody {
		return Callback{}, fmt.Errorf("%w: body larger than %d bytes", ErrCallbackPayload, MaxCallbackBody)
	}
	var cb callbackBody
	if err := json.Unmarshal(body, &cb); err != nil {
		return Callback{}, fmt.Errorf("%w: malformed JSON: %v", ErrCallbackPayload, err)
	}
	if cb.Reference == "" {
		return Callback{}, fmt.Errorf("%w: empty reference", ErrCallbackPayload)
	}
	st, err := ParseUpstreamStatus(cb.Status)
	if err != nil {
		return Callback{}, fmt.Errorf("%w: %v", ErrCallbackPayload, err)
	}
	if cb.Kind != CallbackKindCollection && cb.Kind != CallbackKindDisbursement && cb.Kind != CallbackKindRefund {
		return Callback{}, fmt.Errorf("%w: unknown kind %q", ErrCallbackPayload, truncateUpstreamText(cb.Kind))
	}
	out := Callback{
		Reference:         cb.Reference,
		ProviderReference: cb.ProviderReference,
		Status:            st,
		Code:              paygatev1.FailureCode(cb.Code),
		Message:           cb.Message,
		Kind:              cb.Kind,
	}
	if st == StatusFailed && out.Code == "" {
		out.Code = paygatev1.FailureProviderError
	}
	return out, nil
}
