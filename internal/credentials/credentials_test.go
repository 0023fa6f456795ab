// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package credentials

import (
	"strings"
	"testing"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

const (
	sandbox    = paygatev1.EnvironmentSandbox
	production = paygatev1.EnvironmentProduction
)

// checkValue asserts that v is prefix followed by n characters of lower-case base32 (a-z, 2-7).
func checkValue(t *testing.T, what, v, prefix string, n int) {
	t.Helper()
	rest, ok := strings.CutPrefix(v, prefix)
	if !ok {
		t.Errorf("%s = %q, want prefix %q", what, v, prefix)
		return
	}
	if len(rest) != n {
		t.Errorf("%s = %q: %d characters after the prefix, want %d", what, v, len(rest), n)
	}
	for i, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			t.Errorf("%s = %q: character %q at %d is not lower-case base32", what, v, c, len(prefix)+i)
			return
		}
	}
}

func TestPrefix(t *testing.T) {
	tests := []struct {
		env  paygatev1.Environment
		want string
	}{
		{sandbox, "test_"},
		{production, "live_"},
	}
	for _, tt := range tests {
		t.Run(string(tt.env), func(t *testing.T) {
			if got := Prefix(tt.env); got != tt.want {
				t.Errorf("Prefix(%q) = %q, want %q", tt.env, got, tt.want)
			}
		})
	}
}

func TestBusinessID(t *testing.T) {
	const uid = "6f1c2a8e-1b4d-4c3e-9a7f-0d2b5e8c1a90"
	const otherUID = "6f1c2a8e-1b4d-4c3e-9a7f-0d2b5e8c1a91"

	tests := []struct {
		env    paygatev1.Environment
		prefix string
	}{
		{sandbox, "test_mk_"},
		{production, "live_mk_"},
	}
	for _, tt := range tests {
		t.Run(string(tt.env), func(t *testing.T) {
			id := BusinessID(uid, tt.env)
			// 15 bytes of SHA-256 in unpadded base32: 24 characters.
			checkValue(t, "BusinessID", id, tt.prefix, 24)
			if again := BusinessID(uid, tt.env); again != id {
				t.Errorf("BusinessID not deterministic: %q then %q", id, again)
			}
			if other := BusinessID(otherUID, tt.env); other == id {
				t.Errorf("BusinessID of two UIDs is the same: %q", id)
			}
			// Status.businessID allows at most 64 characters.
			if len(id) > 64 {
				t.Errorf("BusinessID %q is %d characters, status allows 64", id, len(id))
			}
		})
	}

	t.Run("differs across environments beyond the prefix", func(t *testing.T) {
		s, p := BusinessID(uid, sandbox), BusinessID(uid, production)
		if s == p {
			t.Fatalf("sandbox and production business IDs are equal: %q", s)
		}
		if strings.TrimPrefix(s, "test_") == strings.TrimPrefix(p, "live_") {
			t.Errorf("sandbox %q and production %q differ only by prefix", s, p)
		}
	})

	t.Run("stable across versions", func(t *testing.T) {
		// Merchants' integrations hold their business ID: a new version must derive the same one.
		if got, want := BusinessID("uid-1", production), "live_mk_wtpu6ifhnygzouzteeab4gxm"; got != want {
			t.Errorf("BusinessID(uid-1, production) = %q, want %q as ever", got, want)
		}
	})

	t.Run("UID boundary is not ambiguous", func(t *testing.T) {
		// The UID and environment are separated, so no UID can imitate another pair.
		if BusinessID("a", "bsandbox") == BusinessID("ab", sandbox) {
			t.Errorf("BusinessID(\"a\", \"bsandbox\") == BusinessID(\"ab\", sandbox)")
		}
	})

	t.Run("many UIDs give distinct IDs", func(t *testing.T) {
		seen := map[string]string{}
		for i := range 1000 {
			uid := strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
			id := BusinessID(uid, sandbox)
			if prev, dup := seen[id]; dup && prev != uid {
				t.Fatalf("UIDs %q and %q share business ID %q", prev, uid, id)
			}
			seen[id] = uid
		}
	})
}

func TestNewSet(t *testing.T) {
	tests := []struct {
		env        paygatev1.Environment
		keyPrefix  string
		secretPref string
	}{
		{sandbox, "test_pk_", "test_sk_"},
		{production, "live_pk_", "live_sk_"},
	}
	for _, tt := range tests {
		t.Run(string(tt.env), func(t *testing.T) {
			bid := BusinessID("uid-1", tt.env)
			s, err := NewSet(bid, tt.env)
			if err != nil {
				t.Fatalf("NewSet: %v", err)
			}
			if s.BusinessID != bid {
				t.Errorf("BusinessID = %q, want %q", s.BusinessID, bid)
			}
			// 20 random bytes: 32 base32 characters; 32 random bytes: 52 characters.
			checkValue(t, "APIKey", s.APIKey, tt.keyPrefix, 32)
			checkValue(t, "APISecret", s.APISecret, tt.secretPref, 52)

			// crypto/rand: every call issues new values.
			seen := map[string]bool{s.APIKey: true, s.APISecret: true}
			for range 50 {
				n, err := NewSet(bid, tt.env)
				if err != nil {
					t.Fatalf("NewSet: %v", err)
				}
				if n.BusinessID != bid {
					t.Errorf("BusinessID changed to %q", n.BusinessID)
				}
				for _, v := range []string{n.APIKey, n.APISecret} {
					if seen[v] {
						t.Fatalf("NewSet issued %q twice", v)
					}
					seen[v] = true
				}
			}
		})
	}
}

func TestSetDataRoundTrip(t *testing.T) {
	for _, env := range paygatev1.Environments {
		t.Run(string(env), func(t *testing.T) {
			s, err := NewSet(BusinessID("uid-1", env), env)
			if err != nil {
				t.Fatalf("NewSet: %v", err)
			}
			data := s.Data()
			if len(data) != 3 {
				t.Errorf("Data has %d keys, want 3: %v", len(data), data)
			}
			for k, want := range map[string]string{KeyBusinessID: s.BusinessID, KeyAPIKey: s.APIKey, KeyAPISecret: s.APISecret} {
				if got := string(data[k]); got != want {
					t.Errorf("Data()[%q] = %q, want %q", k, got, want)
				}
			}
			got, ok := SetFromData(data)
			if !ok {
				t.Fatalf("SetFromData(Data()) reports incomplete data")
			}
			if got != s {
				t.Errorf("SetFromData(Data()) = %+v, want %+v", got, s)
			}
		})
	}
}

func TestSetFromDataIncomplete(t *testing.T) {
	full := func() map[string][]byte {
		return map[string][]byte{
			KeyBusinessID: []byte("test_mk_abc"),
			KeyAPIKey:     []byte("test_pk_def"),
			KeyAPISecret:  []byte("test_sk_ghi"),
		}
	}
	tests := []struct {
		name string
		edit func(map[string][]byte) map[string][]byte
		ok   bool
	}{
		{"complete", func(d map[string][]byte) map[string][]byte { return d }, true},
		{"complete with extra keys", func(d map[string][]byte) map[string][]byte { d["other"] = []byte("x"); return d }, true},
		{"nil data", func(map[string][]byte) map[string][]byte { return nil }, false},
		{"empty data", func(map[string][]byte) map[string][]byte { return map[string][]byte{} }, false},
		{"business ID missing", func(d map[string][]byte) map[string][]byte { delete(d, KeyBusinessID); return d }, false},
		{"API key missing", func(d map[string][]byte) map[string][]byte { delete(d, KeyAPIKey); return d }, false},
		{"API secret missing", func(d map[string][]byte) map[string][]byte { delete(d, KeyAPISecret); return d }, false},
		{"business ID empty", func(d map[string][]byte) map[string][]byte { d[KeyBusinessID] = []byte{}; return d }, false},
		{"API key empty", func(d map[string][]byte) map[string][]byte { d[KeyAPIKey] = nil; return d }, false},
		{"API secret empty", func(d map[string][]byte) map[string][]byte { d[KeyAPISecret] = []byte(""); return d }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ok := SetFromData(tt.edit(full()))
			if ok != tt.ok {
				t.Errorf("SetFromData ok = %v, want %v", ok, tt.ok)
			}
		})
	}
}

func TestNewWebhookSigningSecret(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		s, err := NewWebhookSigningSecret()
		if err != nil {
			t.Fatalf("NewWebhookSigningSecret: %v", err)
		}
		// 32 random bytes: 52 base32 characters.
		checkValue(t, "webhook signing secret", s, "whsec_", 52)
		if seen[s] {
			t.Fatalf("NewWebhookSigningSecret issued %q twice", s)
		}
		seen[s] = true
	}
}

func TestSecretNames(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"sandbox credentials", SecretName("acme", sandbox), "acme-sandbox-credentials"},
		{"production credentials", SecretName("acme", production), "acme-production-credentials"},
		{"webhook signing secret", WebhookSecretName("acme"), "acme-webhook-signing-secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}

	t.Run("distinct for one merchant", func(t *testing.T) {
		names := []string{SecretName("acme", sandbox), SecretName("acme", production), WebhookSecretName("acme")}
		for i := range names {
			for j := i + 1; j < len(names); j++ {
				if names[i] == names[j] {
					t.Errorf("Secret name %q used twice", names[i])
				}
			}
		}
	})

	t.Run("longest merchant name stays a valid Secret name", func(t *testing.T) {
		long := strings.Repeat("m", 40) // a Merchant's name is at most 40 characters
		for _, n := range []string{SecretName(long, sandbox), SecretName(long, production), WebhookSecretName(long)} {
			if len(n) > 253 {
				t.Errorf("Secret name %q is %d characters, want at most 253", n, len(n))
			}
		}
	})
}
