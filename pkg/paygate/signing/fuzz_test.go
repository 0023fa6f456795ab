// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package signing

import (
	"errors"
	"testing"
	"time"
)

// FuzzVerifyRequest checks that VerifyRequest never panics, that what
// SignRequest produces verifies, and that any single-byte change to the body
// (or one appended byte) fails with ErrSignatureMismatch.
func FuzzVerifyRequest(f *testing.F) {
	f.Add([]byte("sk_test_51Hx"), "sha256="+createSig, testTS, "POST", "/api/v1/payments", []byte(createBody), int64(0), uint16(0))
	f.Add([]byte("sk_test_51Hx"), "sha256="+listSig, testTS, "get", listPath, []byte(nil), int64(300), uint16(7))
	f.Add([]byte("k"), "SHA256=ZZ", "abc", "", "", []byte("."), int64(-301), uint16(1))
	f.Add([]byte{}, "", "", "\xff", "/\x00", []byte{0}, int64(1<<62), uint16(65535))
	f.Add([]byte("k"), "sha256="+createSig[:63], "999999999999", "DELETE", "/a?b=c", []byte("x.y"), int64(-1<<62), uint16(3))

	f.Fuzz(func(t *testing.T, secret []byte, header, ts, method, path string, body []byte, skew int64, pos uint16) {
		ref := time.Unix(1700000000, 0)
		if n, err := ParseTimestamp(ts); err == nil {
			ref = time.Unix(n, 0)
		}
		// Arbitrary header and clock: must not panic, and anything accepted
		// must be exactly the correct signature.
		if err := VerifyRequest(secret, header, ts, method, path, body, ref.Add(time.Duration(skew)), DefaultTolerance); err == nil {
			if !equalFoldASCII(header, SignRequest(secret, ts, method, path, body)) {
				t.Fatalf("accepted a header that is not the signature: %q", header)
			}
		}

		checkOwnSignature(t, secret, ts, body, pos, SignRequest(secret, ts, method, path, body),
			func(sig string, body []byte) error {
				return VerifyRequest(secret, sig, ts, method, path, body, ref, DefaultTolerance)
			})
	})
}

// FuzzVerifyWebhook checks the same properties for webhook signatures.
func FuzzVerifyWebhook(f *testing.F) {
	f.Add([]byte("whsec_abc"), webhookSig, testTS, []byte(webhookBody), int64(0), uint16(0))
	f.Add([]byte("whsec_abc"), "sha256="+webhookSig, testTS, []byte(nil), int64(301e9), uint16(9))
	f.Add([]byte{}, "", "", []byte{0xff}, int64(-1<<62), uint16(65535))
	f.Add([]byte("k"), webhookSig[:63]+"G", "0", []byte("."), int64(1<<62), uint16(2))

	f.Fuzz(func(t *testing.T, secret []byte, sigIn, ts string, body []byte, skew int64, pos uint16) {
		ref := time.Unix(1700000000, 0)
		if n, err := ParseTimestamp(ts); err == nil {
			ref = time.Unix(n, 0)
		}
		if err := VerifyWebhook(secret, sigIn, ts, body, ref.Add(time.Duration(skew)), WebhookMaxAge); err == nil {
			if !equalFoldASCII(sigIn, SignWebhook(secret, ts, body)) {
				t.Fatalf("accepted a signature that is not the signature: %q", sigIn)
			}
		}

		checkOwnSignature(t, secret, ts, body, pos, SignWebhook(secret, ts, body),
			func(sig string, body []byte) error { return VerifyWebhook(secret, sig, ts, body, ref, WebhookMaxAge) })
	})
}

// checkOwnSignature holds for both kinds of signature: an empty secret and a malformed timestamp
// are refused with their own errors; otherwise the signature the package made verifies, and one
// changed or appended body byte (chosen by pos) fails with ErrSignatureMismatch.
func checkOwnSignature(t *testing.T, secret []byte, ts string, body []byte, pos uint16, sig string, verify func(sig string, body []byte) error) {
	t.Helper()
	err := verify(sig, body)
	switch {
	case len(secret) == 0:
		if !errors.Is(err, ErrEmptySecret) {
			t.Fatalf("empty secret: got %v", err)
		}
		return
	case ts == "" || len(ts) > MaxTimestampDigits || !allDigits(ts):
		if !errors.Is(err, ErrTimestampMalformed) {
			t.Fatalf("timestamp %q: got %v, want ErrTimestampMalformed", ts, err)
		}
		return
	case err != nil:
		t.Fatalf("own signature rejected: %v", err)
	}
	if len(body) > 0 {
		tampered := append([]byte(nil), body...)
		i := int(pos) % len(tampered)
		tampered[i] ^= byte(pos>>8) | 1 // never zero: always changes the byte
		if err := verify(sig, tampered); !errors.Is(err, ErrSignatureMismatch) {
			t.Fatalf("tampered body byte %d accepted or wrong error: %v", i, err)
		}
	}
	longer := append(append([]byte(nil), body...), byte(pos))
	if err := verify(sig, longer); !errors.Is(err, ErrSignatureMismatch) {
		t.Fatalf("appended body byte accepted or wrong error: %v", err)
	}
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// equalFoldASCII reports whether a and b are equal ignoring ASCII case.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
