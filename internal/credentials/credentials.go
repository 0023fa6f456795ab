// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package credentials generates merchant API credentials and webhook signing secrets and names
// the Secrets that hold them. The merchant controller issues them; the apiserver reads them.
package credentials

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"

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
)

// Values of the paygate.dev/credential label.
const (
	KindAPI            = "api"
	KindWebhookSigning = "webhook-signing"
)

// AnnotationRotation on a Secret records the rotation request (the value of the Merchant's
// rotate annotation) that the Secret's current values answer.
const AnnotationRotation = "paygate.dev/rotation"

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

// Data is the Secret data of the set.
func (s Set) Data() map[string][]byte {
	return map[string][]byte{
		KeyBusinessID: []byte(s.BusinessID),
		KeyAPIKey:     []byte(s.APIKey),
		KeyAPISecret:  []byte(s.APISecret),
	}
}

// SetFromData reads a set from Secret data; ok is false when a value is missing.
func SetFromData(data map[string][]byte) (Set, bool) {
	s := Set{BusinessID: string(data[KeyBusinessID]), APIKey: string(data[KeyAPIKey]), APISecret: string(data[KeyAPISecret])}
	return s, s.BusinessID != "" && s.APIKey != "" && s.APISecret != ""
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
