// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package names derives Paygate's deterministic names: the trx_id of a payment, the business ID
// of a merchant's credentials, the IdempotencyKey object of a request, and the WebhookDelivery
// object and evt_ id of an event. A name derived from what identifies a thing makes uniqueness
// and idempotency a matter of the Kubernetes API server refusing a second create
// (AlreadyExists), across any number of replicas (docs/decisions.md).
//
// Every derivation has one form: Derive(purpose, parts...). Callers add their visible prefix
// ("trx-", "test_mk_", "idem-", "whd-", "evt_").
package names

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"strings"
)

// Purposes: each derivation has its own, so two kinds of name never share a value. They are part
// of every derived value: changing one renames everything derived with it.
const (
	// PurposeTrx derives a payment's trx_id from merchant UID, environment and ref_trx.
	PurposeTrx = "trx"
	// PurposeBusinessID derives a merchant's business ID from merchant UID and environment.
	PurposeBusinessID = "business-id"
	// PurposeIdempotency derives an IdempotencyKey object's name from merchant UID, environment
	// and the Idempotency-Key header.
	PurposeIdempotency = "idempotency"
	// PurposeEvent derives a webhook event's WebhookDelivery name and evt_ id from the source
	// object's UID and the event type.
	PurposeEvent = "event"
	// PurposePayout derives a payout's id from its IdempotencyKey object's name.
	PurposePayout = "payout"
)

// Length is the length of every derived value: 24 characters of lower-case base32 (120 bits).
const Length = 24

// Alphabet is the set of characters a derived value is made of (RFC 4648 base32, lower case).
// Every derived value is a valid Kubernetes object name on its own or after a prefix of lower-case
// letters and a dash, and needs no escaping in URLs, headers or JSON.
const Alphabet = "abcdefghijklmnopqrstuvwxyz234567"

var encoding = base32.NewEncoding(Alphabet).WithPadding(base32.NoPadding)

// Derive returns the name for purpose derived from parts: the first 15 bytes of
// SHA-256("paygate.dev/" + purpose, then "\x00" + part for each part), in lower-case base32 without
// padding, Length characters. Equal inputs give equal names; parts are separated by NUL, so they
// must not contain NUL themselves (every caller passes UIDs, environments, event types or
// validated merchant input free of control characters).
//
// The trx_id and business ID had this exact form before this package existed, so they are
// unchanged; see internal/events for the event names that changed.
func Derive(purpose string, parts ...string) string {
	return encoding.EncodeToString(digest(purpose, parts)[:15])
}

// DeriveUUID returns the same derivation written as a UUID, for names the API promises are UUIDs
// (payout ids): the first 16 bytes of the digest Derive uses, with the RFC 9562 version 8
// (custom) and variant bits set, in the canonical lower-case 8-4-4-4-12 form.
func DeriveUUID(purpose string, parts ...string) string {
	b := digest(purpose, parts)[:16]
	b[6] = b[6]&0x0f | 0x80 // version 8
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// digest is SHA-256("paygate.dev/" + purpose, then "\x00" + part for each part).
func digest(purpose string, parts []string) []byte {
	h := sha256.New()
	h.Write([]byte("paygate.dev/" + purpose))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return h.Sum(nil)
}

// Valid reports whether s has the form of a derived value (Length characters of Alphabet).
func Valid(s string) bool {
	if len(s) != Length {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(Alphabet, rune(s[i])) {
			return false
		}
	}
	return true
}
