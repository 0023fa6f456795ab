// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package consoleauth

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckPasswordPolicy(t *testing.T) {
	const email = "ada.lovelace@example.com"
	for _, tc := range []struct {
		name, password, email string
		want                  error
	}{
		{"empty", "", email, ErrPasswordTooShort},
		{"11 characters", "abcdefghijk", email, ErrPasswordTooShort},
		{"12 characters", "abcdefghijkl", email, nil},
		{"11 runes in more bytes", "ééééééééééa", email, ErrPasswordTooShort},
		{"12 runes", "éééééééééééa", email, nil},
		{"128 characters", strings.Repeat("ab", 64), email, nil},
		{"129 characters", strings.Repeat("ab", 64) + "c", email, ErrPasswordTooLong},
		{"128 runes in more bytes", strings.Repeat("éa", 64), email, nil},
		{"the email", email, email, ErrPasswordIsEmail},
		{"the email in upper case", strings.ToUpper(email), email, ErrPasswordIsEmail},
		{"the email typed with spaces", email, "  " + email + " ", ErrPasswordIsEmail},
		{"the email and more", email + "!", email, nil},
		{"no email", "abcdefghijkl", "", nil},
		{"one character", strings.Repeat("a", 12), email, ErrPasswordOneCharacter},
		{"one rune", strings.Repeat("é", 20), email, ErrPasswordOneCharacter},
		{"two characters", strings.Repeat("a", 11) + "b", email, nil},
		{"passphrase", "correct horse battery staple", email, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckPasswordPolicy(tc.password, tc.email); !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
				t.Errorf("CheckPasswordPolicy(%q, %q) = %v, want %v", tc.password, tc.email, err, tc.want)
			}
		})
	}
}

// TestPasswordPolicyMessages checks that the errors read as advice for a form: a sentence
// with no internal detail.
func TestPasswordPolicyMessages(t *testing.T) {
	for _, err := range []error{ErrPasswordTooShort, ErrPasswordTooLong, ErrPasswordIsEmail, ErrPasswordOneCharacter} {
		msg := err.Error()
		if msg == "" || msg[0] < 'A' || msg[0] > 'Z' || !strings.HasSuffix(msg, ".") || strings.Contains(msg, ":") {
			t.Errorf("message %q: want a capitalised sentence ending in a full stop, without a colon", msg)
		}
	}
	if got := ErrPasswordTooShort.Error(); got != "Use at least 12 characters." {
		t.Errorf("ErrPasswordTooShort = %q", got)
	}
}
