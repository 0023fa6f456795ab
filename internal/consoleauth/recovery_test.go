// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package consoleauth

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

var recoveryCodeForm = regexp.MustCompile(`^[2-9a-hjkmnp-z]{5}-[2-9a-hjkmnp-z]{5}$`)

// mustRecoveryCodes returns n new recovery codes and their hashes or fails the test.
func mustRecoveryCodes(t *testing.T, n int) ([]string, []string) {
	t.Helper()
	codes, hashes, err := NewRecoveryCodes(n)
	if err != nil {
		t.Fatalf("NewRecoveryCodes(%d): %v", n, err)
	}
	if len(codes) != n || len(hashes) != n {
		t.Fatalf("NewRecoveryCodes(%d): %d codes and %d hashes", n, len(codes), len(hashes))
	}
	return codes, hashes
}

func TestNewRecoveryCodes(t *testing.T) {
	codes, hashes := mustRecoveryCodes(t, RecoveryCodeCount)
	seen := map[string]bool{}
	for i, code := range codes {
		if !recoveryCodeForm.MatchString(code) {
			t.Errorf("code %q: want xxxxx-xxxxx from 2-9 and a-z without i, l and o", code)
		}
		if seen[code] {
			t.Errorf("code %q given twice", code)
		}
		seen[code] = true
		sum := sha256.Sum256([]byte(strings.ReplaceAll(code, "-", "")))
		if want := hex.EncodeToString(sum[:]); hashes[i] != want {
			t.Errorf("hash of %q = %q, want %q", code, hashes[i], want)
		}
		if got := MatchRecoveryCode(hashes, code); got != i {
			t.Errorf("MatchRecoveryCode(code %d) = %d", i, got)
		}
	}
}

// TestNewRecoveryCodesAlphabet draws enough characters that each of the 31 is all but
// certain to appear (the chance that one is missing is below 1e-12).
func TestNewRecoveryCodesAlphabet(t *testing.T) {
	codes, _ := mustRecoveryCodes(t, 100)
	used := map[rune]bool{}
	for _, code := range codes {
		for _, r := range strings.ReplaceAll(code, "-", "") {
			used[r] = true
		}
	}
	for _, r := range "0123456789abcdefghijklmnopqrstuvwxyz-" {
		want := !strings.ContainsRune("01ilo-", r)
		if used[r] != want {
			t.Errorf("character %q used = %v, want %v", r, used[r], want)
		}
	}
}

func TestNewRecoveryCodesRejectsCount(t *testing.T) {
	for _, n := range []int{0, -1} {
		if codes, hashes, err := NewRecoveryCodes(n); err == nil || codes != nil || hashes != nil {
			t.Errorf("NewRecoveryCodes(%d) = %v, %v, %v; want an error", n, codes, hashes, err)
		}
	}
}

func TestMatchRecoveryCode(t *testing.T) {
	codes, hashes := mustRecoveryCodes(t, RecoveryCodeCount)
	others, otherHashes := mustRecoveryCodes(t, 1)
	code := codes[3]
	for _, tc := range []struct {
		name   string
		hashes []string
		code   string
		want   int
	}{
		{"as shown", hashes, code, 3},
		{"upper case", hashes, strings.ToUpper(code), 3},
		{"no dash", hashes, strings.ReplaceAll(code, "-", ""), 3},
		{"spaces", hashes, " " + code[:5] + " " + code[6:] + " ", 3},
		{"extra dashes", hashes, strings.Join(strings.Split(code, ""), "-"), 3},
		{"one character changed", hashes, changeFirst(code), -1},
		{"one character more", hashes, code + "a", -1},
		{"one character fewer", hashes, code[:len(code)-1], -1},
		{"another user's code", hashes, others[0], -1},
		{"the hash itself", hashes, hashes[3], -1},
		{"empty", hashes, "", -1},
		{"dashes only", hashes, "-----", -1},
		{"no hashes", nil, code, -1},
		{"used codes removed", append(append([]string{}, hashes[:3]...), hashes[4:]...), code, -1},
		{"malformed hashes around it", []string{"", "xyz", otherHashes[0], hashes[3]}, code, 3},
		{"stored twice, first index", []string{otherHashes[0], hashes[3], hashes[3]}, code, 1},
		{"upper-case hex stored", []string{strings.ToUpper(hashes[3])}, code, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MatchRecoveryCode(tc.hashes, tc.code); got != tc.want {
				t.Errorf("MatchRecoveryCode(%q) = %d, want %d", tc.code, got, tc.want)
			}
		})
	}
}

// changeFirst returns code with its first character replaced by another from the alphabet.
func changeFirst(code string) string {
	if code[0] == 'a' {
		return "b" + code[1:]
	}
	return "a" + code[1:]
}
