// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package credentials generates merchant API credentials and webhook signing secrets and names
// the Secrets that hold them. The merchant controller issues them; the apiserver reads them.
package credentials

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"fmt"
	"maps"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/names"
)

// Keys of the data in a credentials Secret.
const (
	KeyBusinessID = "businessID"
	KeyAPIKey     = "apiKey"
	KeyAPISecret  = "apiSecret"
	// KeySigningSecret is the key of the webhook signing secret in its Secret.
	KeySigningSecret = "signingSecret"
	// KeyPreviousAPIKey, KeyPreviousAPISecret and KeyPreviousExpires hold, during a rotation's
	// overlap, the credentials the rotation replaced and when they stop working (RFC 3339).
	KeyPreviousAPIKey    = "previousApiKey"
	KeyPreviousAPISecret = "previousApiSecret"
	KeyPreviousExpires   = "previousExpires"
	// KeyPendingSigningSecret is a webhook signing secret prepared and not yet signing: the
	// merchant installs it on the receiver, then activates it.
	KeyPendingSigningSecret = "pendingSigningSecret"
)

// Overlap bounds: how long a rotated API key and secret keep working beside the new ones.
const (
	DefaultOverlap = 24 * time.Hour
	MaxOverlap     = 7 * 24 * time.Hour
)

// Values of the paygate.dev/credential label.
const (
	KindAPI            = "api"
	KindWebhookSigning = "webhook-signing"
)

// AnnotationRotation on a Secret records the rotation request (the value of the Merchant's
// rotate annotation) that the Secret's current values answer.
const AnnotationRotation = "paygate.dev/rotation"

// AnnotationOverlapEnded on a credentials Secret records the request to end an overlap early (the
// value of the Merchant's end-overlap annotation) that the Secret answers.
const AnnotationOverlapEnded = "paygate.dev/overlap-ended"

// Annotations of the webhook signing Secret: the prepare and activate requests it answers
// (values of the Merchant's annotations), and since when a prepared secret waits (RFC 3339).
const (
	AnnotationPrepared     = "paygate.dev/prepared"
	AnnotationActivated    = "paygate.dev/activated"
	AnnotationPendingSince = "paygate.dev/pending-since"
)

// AnnotationChange on a Secret records the UID of the last MerchantChange whose change the Secret
// holds: a change is made once, even when its answer is written only on a later pass.
const AnnotationChange = "paygate.dev/change"

var encoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// Prefix is the credential prefix of an environment: test_ for sandbox, live_ for production.
func Prefix(env paygatev1.Environment) string {
	if env == paygatev1.EnvironmentProduction {
		return "live_"
	}
	return "test_"
}

// SecretName is the name of the Secret holding a merchant's credentials for env.
func SecretName(merchant string, env paygatev1.Environment) string {
	return merchant + "-" + string(env) + "-credentials"
}

// WebhookSecretName is the name of the Secret holding a merchant's webhook signing secret.
func WebhookSecretName(merchant string) string {
	return merchant + "-webhook-signing-secret"
}

// BusinessID derives the business ID (X-Merchant-Key) of a merchant object in env from the
// object's UID. It is not secret. Deriving it makes it unique by construction (UIDs are unique)
// and stable: a deleted Secret is re-issued with the same business ID, so merchants' integrations
// keep their key; only the API key and secret change. It is the environment's prefix, "mk_" and
// 24 characters of lower-case base32 (names.Derive).
func BusinessID(merchantUID string, env paygatev1.Environment) string {
	return Prefix(env) + "mk_" + names.Derive(names.PurposeBusinessID, merchantUID, string(env))
}

// Set is one environment's credential set.
type Set struct {
	BusinessID string
	APIKey     string
	APISecret  string
	// Previous are the credentials a rotation replaced, while they still work; nil: none.
	Previous *Previous
}

// Previous are rotated credentials that keep working until Expires (the rotation's overlap).
type Previous struct {
	APIKey    string
	APISecret string
	Expires   time.Time
}

// Match is which of a set's credentials an API key names.
type Match int

const (
	// NoMatch: neither the current key nor a previous one still in its overlap.
	NoMatch Match = iota
	// MatchCurrent: the current key.
	MatchCurrent
	// MatchPrevious: the key a rotation replaced, within the rotation's overlap.
	MatchPrevious
)

// Check compares apiKey with the set's current key and, until it expires at now, the previous
// one, in constant time, and returns which matched and the API secret that signs for it.
func (s Set) Check(apiKey string, now time.Time) (Match, string) {
	current := subtle.ConstantTimeCompare([]byte(s.APIKey), []byte(apiKey)) == 1
	previous := false
	if s.Previous != nil {
		previous = subtle.ConstantTimeCompare([]byte(s.Previous.APIKey), []byte(apiKey)) == 1 && now.Before(s.Previous.Expires)
	}
	switch {
	case current:
		return MatchCurrent, s.APISecret
	case previous:
		return MatchPrevious, s.Previous.APISecret
	}
	return NoMatch, ""
}

// NewSet issues a fresh API key and secret for a business ID, from crypto/rand.
func NewSet(businessID string, env paygatev1.Environment) (Set, error) {
	key, err := random(Prefix(env)+"pk_", 20)
	if err != nil {
		return Set{}, err
	}
	secret, err := random(Prefix(env)+"sk_", 32)
	if err != nil {
		return Set{}, err
	}
	return Set{BusinessID: businessID, APIKey: key, APISecret: secret}, nil
}

// Rotated issues a new key and secret for s's business ID; s's current key and secret keep
// working beside them until overlap from now (not at all when overlap is 0). The expiry is kept to
// the second, as the Secret stores it.
func (s Set) Rotated(env paygatev1.Environment, overlap time.Duration, now time.Time) (Set, error) {
	next, err := NewSet(s.BusinessID, env)
	if err != nil {
		return Set{}, err
	}
	if overlap > 0 {
		next.Previous = &Previous{APIKey: s.APIKey, APISecret: s.APISecret, Expires: now.Add(overlap).Truncate(time.Second)}
	}
	return next, nil
}

// Data is the Secret data of the set.
func (s Set) Data() map[string][]byte {
	data := map[string][]byte{
		KeyBusinessID: []byte(s.BusinessID),
		KeyAPIKey:     []byte(s.APIKey),
		KeyAPISecret:  []byte(s.APISecret),
	}
	if p := s.Previous; p != nil {
		data[KeyPreviousAPIKey] = []byte(p.APIKey)
		data[KeyPreviousAPISecret] = []byte(p.APISecret)
		data[KeyPreviousExpires] = []byte(p.Expires.UTC().Format(time.RFC3339))
	}
	return data
}

// SetFromData reads a set from Secret data; ok is false when a value of the current credentials
// is missing. Previous credentials with a value missing or an unreadable expiry are none.
func SetFromData(data map[string][]byte) (Set, bool) {
	s := Set{BusinessID: string(data[KeyBusinessID]), APIKey: string(data[KeyAPIKey]), APISecret: string(data[KeyAPISecret])}
	key, secret := string(data[KeyPreviousAPIKey]), string(data[KeyPreviousAPISecret])
	if expires, err := time.Parse(time.RFC3339, string(data[KeyPreviousExpires])); err == nil && key != "" && secret != "" {
		s.Previous = &Previous{APIKey: key, APISecret: secret, Expires: expires}
	}
	return s, s.BusinessID != "" && s.APIKey != "" && s.APISecret != ""
}

// ParseOverlap reads an overlap: a Go duration from 0 (the rotated credentials stop at once) to
// MaxOverlap; "" is DefaultOverlap.
func ParseOverlap(v string) (time.Duration, error) {
	if v == "" {
		return DefaultOverlap, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > MaxOverlap {
		return 0, fmt.Errorf("%q is not a duration from 0s to %s (for example 24h or 90m)", v, MaxOverlap)
	}
	return d, nil
}

// WithPendingSigningSecret is the webhook signing Secret's data with a new pending secret beside
// the one that signs (replacing an earlier pending one), and the prepared time to record in
// AnnotationPendingSince (now, to the second, RFC 3339).
func WithPendingSigningSecret(data map[string][]byte, now time.Time) (map[string][]byte, string, error) {
	value, err := NewWebhookSigningSecret()
	if err != nil {
		return nil, "", err
	}
	out := maps.Clone(data)
	if out == nil {
		out = map[string][]byte{}
	}
	out[KeyPendingSigningSecret] = []byte(value)
	return out, now.UTC().Truncate(time.Second).Format(time.RFC3339), nil
}

// ActivatedSigningSecret is the webhook signing Secret's data once its pending secret signs;
// ok is false (and data unchanged) when none is pending.
func ActivatedSigningSecret(data map[string][]byte) (_ map[string][]byte, ok bool) {
	pending := data[KeyPendingSigningSecret]
	if len(pending) == 0 {
		return data, false
	}
	return map[string][]byte{KeySigningSecret: pending}, true
}

// NewWebhookSigningSecret issues a webhook signing secret, from crypto/rand.
func NewWebhookSigningSecret() (string, error) {
	return random("whsec_", 32)
}

func random(prefix string, n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading crypto/rand: %w", err)
	}
	return prefix + lower(encoding.EncodeToString(b)), nil
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
