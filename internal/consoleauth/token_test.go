// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package consoleauth

import (
	"encoding/base64"
	"regexp"
	"testing"
)

func TestNewToken(t *testing.T) {
	token, id, err := NewToken()
	if err != nil {
		t.Fatalf("NewToken: %v", err)
	}
	if b, err := base64.RawURLEncoding.Strict().DecodeString(token); err != nil || len(b) != 32 {
		t.Errorf("token %q: %d bytes, %v; want 32 bytes of unpadded base64url", token, len(b), err)
	}
	if id != TokenID(token) {
		t.Errorf("id %q, want TokenID(token) = %q", id, TokenID(token))
	}
	if other, otherID, _ := NewToken(); other == token || otherID == id {
		t.Errorf("two tokens share token %q or id %q", token, id)
	}
}

func TestTokenID(t *testing.T) {
	lowerHex40 := regexp.MustCompile(`^[0-9a-f]{40}$`)
	for _, tc := range []struct{ token, want string }{
		// The SHA-256 of "abc" is ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad.
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a3"},
		// The SHA-256 of "" is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"[:40]},
	} {
		got := TokenID(tc.token)
		if got != tc.want || !lowerHex40.MatchString(got) {
			t.Errorf("TokenID(%q) = %q, want %q", tc.token, got, tc.want)
		}
	}
	if TokenID("abd") == TokenID("abc") {
		t.Errorf("TokenID of different tokens is the same")
	}
}
