// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package consoleauth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// tokenLen is the number of random bytes in a token.
const tokenLen = 32

// tokenIDLen is the number of hex characters of a token ID: 160 bits of the SHA-256.
const tokenIDLen = 40

// NewToken returns a new opaque token, for a session, an invitation or a CSRF check, and
// its ID. The token is 32 random bytes in unpadded base64url and is given only to its
// holder; the ID is TokenID(token), under which the server stores what the token grants.
func NewToken() (token, id string, err error) {
	b := make([]byte, tokenLen)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("new token: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, TokenID(token), nil
}

// TokenID returns the ID of token: the first 40 characters of the lower-case hex SHA-256
// of the token. It is fit for a Kubernetes object name suffix, and knowing it does not
// give the token, so a leaked list of IDs grants nothing.
func TokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])[:tokenIDLen]
}
