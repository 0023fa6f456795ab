// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package consoleauth

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// cheapParams keep the tests fast; they are within bounds but far below the default.
var cheapParams = PasswordParams{Memory: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16}

// mustHash hashes password with p or fails the test.
func mustHash(t *testing.T, p PasswordParams, password string) string {
	t.Helper()
	encoded, err := HashPasswordWith(p, password)
	if err != nil {
		t.Fatalf("HashPasswordWith(%+v): %v", p, err)
	}
	return encoded
}

func TestHashPasswordFormat(t *testing.T) {
	encoded, err := HashPassword("correct horse battery staple")
	if err != nil {
		t.Fatalf("HashPassword: %v", err)
	}
	rest, ok := strings.CutPrefix(encoded, "$argon2id$v=19$m=19456,t=2,p=1$")
	if !ok {
		t.Fatalf("HashPassword = %q, want the argon2id PHC prefix with the default parameters", encoded)
	}
	salt64, key64, ok := strings.Cut(rest, "$")
	if !ok {
		t.Fatalf("HashPassword = %q, want salt and key separated by $", encoded)
	}
	for _, c := range []struct {
		what, value string
		wantLen     int
	}{{"salt", salt64, 16}, {"key", key64, 32}} {
		b, err := base64.RawStdEncoding.DecodeString(c.value)
		if err != nil || len(b) != c.wantLen {
			t.Errorf("%s %q: %d bytes, err %v; want %d bytes of unpadded base64", c.what, c.value, len(b), err, c.wantLen)
		}
	}
}

func TestHashPasswordSaltsEachHash(t *testing.T) {
	a, b := mustHash(t, cheapParams, "same password"), mustHash(t, cheapParams, "same password")
	if a == b {
		t.Errorf("two hashes of the same password are both %q, want different salts", a)
	}
}

func TestVerifyPassword(t *testing.T) {
	const password = "correct horse battery staple"
	encoded, err := HashPassword(password)
	if err != nil {
		t.Fatalf("HashPassword: %v", err)
	}
	for _, tc := range []struct {
		name, password string
		wantOK         bool
	}{
		{"right password", password, true},
		{"wrong password", "incorrect horse battery staple", false},
		{"different case", strings.ToUpper(password), false},
		{"trailing space", password + " ", false},
		{"prefix", password[:len(password)-1], false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, needsRehash, err := VerifyPassword(encoded, tc.password)
			if err != nil || ok != tc.wantOK || needsRehash {
				t.Errorf("VerifyPassword = %v, %v, %v; want %v, false, nil", ok, needsRehash, err, tc.wantOK)
			}
		})
	}
}

// TestVerifyPasswordReferenceVectors checks argon2id hashes from the test suite of the
// reference implementation (P-H-C/phc-winner-argon2, src/test.c), made elsewhere. None
// has the default parameters, so each right password asks for a rehash.
func TestVerifyPasswordReferenceVectors(t *testing.T) {
	const (
		m256p1   = "$argon2id$v=19$m=256,t=2,p=1$c29tZXNhbHQ$nf65EOgLrQMR/uIPnA4rEsF5h7TKyQwu9U1bMCHGi/4"
		m256p2   = "$argon2id$v=19$m=256,t=2,p=2$c29tZXNhbHQ$bQk8UB/VmZZF4Oo79iDXuL5/0ttZwg2f/5U52iv1cDc"
		m65536   = "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
		diffsalt = "$argon2id$v=19$m=65536,t=2,p=1$ZGlmZnNhbHQ$vfMrBczELrFdWP0ZsfhWsRPaHppYdP3MVEMIVlqoFBw"
	)
	for _, tc := range []struct {
		name, encoded, password string
		wantOK                  bool
	}{
		{"m=256 p=1", m256p1, "password", true},
		{"m=256 p=1, wrong password", m256p1, "Password", false},
		{"m=256 p=2", m256p2, "password", true},
		{"m=256 p=2, wrong password", m256p2, "password ", false},
		{"m=65536", m65536, "password", true},
		{"m=65536, other password", m65536, "differentpassword", false},
		{"other salt", diffsalt, "password", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, needsRehash, err := VerifyPassword(tc.encoded, tc.password)
			if err != nil || ok != tc.wantOK || needsRehash != tc.wantOK {
				t.Errorf("VerifyPassword = %v, %v, %v; want %v, %v, nil", ok, needsRehash, err, tc.wantOK, tc.wantOK)
			}
		})
	}
}

func TestVerifyPasswordNeedsRehash(t *testing.T) {
	const password = "a long enough password"
	for _, tc := range []struct {
		name string
		p    PasswordParams
	}{
		{"less memory", PasswordParams{Memory: 64, Time: 2, Threads: 1, KeyLen: 32, SaltLen: 16}},
		{"fewer passes", PasswordParams{Memory: 19456, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16}},
		{"more threads", PasswordParams{Memory: 64, Time: 1, Threads: 2, KeyLen: 32, SaltLen: 16}},
		{"shorter key", PasswordParams{Memory: 64, Time: 1, Threads: 1, KeyLen: 16, SaltLen: 16}},
		{"shorter salt", PasswordParams{Memory: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			encoded := mustHash(t, tc.p, password)
			if ok, needsRehash, err := VerifyPassword(encoded, password); !ok || !needsRehash || err != nil {
				t.Errorf("right password: VerifyPassword = %v, %v, %v; want true, true, nil", ok, needsRehash, err)
			}
			if ok, needsRehash, err := VerifyPassword(encoded, "another password"); ok || needsRehash || err != nil {
				t.Errorf("wrong password: VerifyPassword = %v, %v, %v; want false, false, nil", ok, needsRehash, err)
			}
		})
	}
}

// TestVerifyPasswordTamperedHash changes one part of a well-formed hash: the password no
// longer matches, and the hash is still read without error.
func TestVerifyPasswordTamperedHash(t *testing.T) {
	const password = "a long enough password"
	encoded := mustHash(t, cheapParams, password)
	fields := strings.Split(encoded, "$")
	flip := func(s string) string {
		b, _ := base64.RawStdEncoding.DecodeString(s)
		b[0] ^= 1
		return base64.RawStdEncoding.EncodeToString(b)
	}
	for _, tc := range []struct{ name, encoded string }{
		{"key", strings.Join(append(fields[:5:5], flip(fields[5])), "$")},
		{"salt", strings.Join(append(fields[:4:4], flip(fields[4]), fields[5]), "$")},
		{"memory", strings.Replace(encoded, "m=64,", "m=72,", 1)},
		{"time", strings.Replace(encoded, "t=1,", "t=2,", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.encoded == encoded {
				t.Fatalf("tampering left the hash unchanged")
			}
			if ok, _, err := VerifyPassword(tc.encoded, password); ok || err != nil {
				t.Errorf("VerifyPassword(%q) = %v, %v; want false, nil", tc.encoded, ok, err)
			}
		})
	}
}

func TestVerifyPasswordRejectsMalformedHash(t *testing.T) {
	const (
		salt = "c29tZXNhbHRzb21lc2FsdA"                      // 16 bytes
		key  = "CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8xXs8BwLuZKA" // 32 bytes
	)
	valid := "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + key
	if _, _, err := VerifyPassword(valid, "x"); err != nil {
		t.Fatalf("VerifyPassword(%q): %v; the base of the malformed cases must be valid", valid, err)
	}
	for _, tc := range []struct{ name, encoded string }{
		{"empty", ""},
		{"bcrypt", "$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW"},
		{"argon2i", "$argon2i$v=19$m=64,t=1,p=1$" + salt + "$" + key},
		{"argon2d", "$argon2d$v=19$m=64,t=1,p=1$" + salt + "$" + key},
		{"upper-case algorithm", "$ARGON2ID$v=19$m=64,t=1,p=1$" + salt + "$" + key},
		{"version 16", "$argon2id$v=16$m=64,t=1,p=1$" + salt + "$" + key},
		{"no version", "$argon2id$m=64,t=1,p=1$" + salt + "$" + key},
		{"no leading $", "argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + key},
		{"extra field", valid + "$" + key},
		{"no key", "$argon2id$v=19$m=64,t=1,p=1$" + salt},
		{"empty key", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$"},
		{"parameters reordered", "$argon2id$v=19$t=1,m=64,p=1$" + salt + "$" + key},
		{"parameter missing", "$argon2id$v=19$m=64,t=1$" + salt + "$" + key},
		{"parameter repeated", "$argon2id$v=19$m=64,t=1,p=1,p=1$" + salt + "$" + key},
		{"data parameter", "$argon2id$v=19$m=64,t=1,p=1,data=abc$" + salt + "$" + key},
		{"leading zero", "$argon2id$v=19$m=064,t=1,p=1$" + salt + "$" + key},
		{"plus sign", "$argon2id$v=19$m=+64,t=1,p=1$" + salt + "$" + key},
		{"negative", "$argon2id$v=19$m=64,t=-1,p=1$" + salt + "$" + key},
		{"not a number", "$argon2id$v=19$m=lots,t=1,p=1$" + salt + "$" + key},
		{"space", "$argon2id$v=19$m=64, t=1,p=1$" + salt + "$" + key},
		{"memory over 1 GiB", "$argon2id$v=19$m=1048577,t=1,p=1$" + salt + "$" + key},
		{"memory over 32 bits", "$argon2id$v=19$m=4294967360,t=1,p=1$" + salt + "$" + key},
		{"memory under 8 per thread", "$argon2id$v=19$m=31,t=1,p=4$" + salt + "$" + key},
		{"time 0", "$argon2id$v=19$m=64,t=0,p=1$" + salt + "$" + key},
		{"time 11", "$argon2id$v=19$m=64,t=11,p=1$" + salt + "$" + key},
		{"threads 0", "$argon2id$v=19$m=64,t=1,p=0$" + salt + "$" + key},
		{"threads 17", "$argon2id$v=19$m=256,t=1,p=17$" + salt + "$" + key},
		{"threads 257", "$argon2id$v=19$m=4096,t=1,p=257$" + salt + "$" + key},
		{"key of 15 bytes", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + key[:20]},
		{"key of 65 bytes", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + key + key + "A"},
		{"salt of 7 bytes", "$argon2id$v=19$m=64,t=1,p=1$" + "c29tZXNhbA" + "$" + key},
		{"padded key", valid + "="},
		{"standard base64 with newline", "$argon2id$v=19$m=64,t=1,p=1$" + salt[:8] + "\n" + salt[8:] + "$" + key},
		{"url-safe base64", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$-" + key[1:]},
		{"non-zero trailing bits", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + key[:len(key)-1] + "B"},
		{"trailing newline", valid + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, needsRehash, err := VerifyPassword(tc.encoded, "x")
			if !errors.Is(err, ErrInvalidPasswordHash) || ok || needsRehash {
				t.Errorf("VerifyPassword(%q) = %v, %v, %v; want false, false, ErrInvalidPasswordHash",
					tc.encoded, ok, needsRehash, err)
			}
		})
	}
}

func TestHashPasswordWithRejectsParams(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*PasswordParams)
	}{
		{"zero", func(p *PasswordParams) { *p = PasswordParams{} }},
		{"memory over 1 GiB", func(p *PasswordParams) { p.Memory = 1<<20 + 1 }},
		{"memory under 8 per thread", func(p *PasswordParams) { p.Memory, p.Threads = 15, 2 }},
		{"time 0", func(p *PasswordParams) { p.Time = 0 }},
		{"time 11", func(p *PasswordParams) { p.Time = 11 }},
		{"threads 0", func(p *PasswordParams) { p.Threads = 0 }},
		{"threads 17", func(p *PasswordParams) { p.Threads, p.Memory = 17, 1024 }},
		{"key of 15 bytes", func(p *PasswordParams) { p.KeyLen = 15 }},
		{"key of 65 bytes", func(p *PasswordParams) { p.KeyLen = 65 }},
		{"salt of 7 bytes", func(p *PasswordParams) { p.SaltLen = 7 }},
		{"salt of 65 bytes", func(p *PasswordParams) { p.SaltLen = 65 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cheapParams
			tc.change(&p)
			encoded, err := HashPasswordWith(p, "a long enough password")
			if !errors.Is(err, ErrInvalidPasswordParams) || encoded != "" {
				t.Errorf("HashPasswordWith(%+v) = %q, %v; want ErrInvalidPasswordParams", p, encoded, err)
			}
		})
	}
}
