// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package consoleauth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
)

// RecoveryCodeCount is the number of recovery codes a console user is given at a time.
const RecoveryCodeCount = 10

// recoveryAlphabet has the lower-case letters and digits that are hard to mistake for one
// another: no 0, 1, i, l or o. 31 characters, so a 10-character code holds about 49 bits.
const recoveryAlphabet = "23456789abcdefghjkmnpqrstuvwxyz"

// recoveryCodeLen is the number of characters in a recovery code, not counting the dash.
const recoveryCodeLen = 10

// NewRecoveryCodes returns n new recovery codes, shown to the user as xxxxx-xxxxx, and
// their hashes, to be stored in the same order: the lower-case hex SHA-256 of each code
// without its dash. n must be at least 1.
func NewRecoveryCodes(n int) (codes []string, hashes []string, err error) {
	if n < 1 {
		return nil, nil, fmt.Errorf("new recovery codes: count %d is less than 1", n)
	}
	seen := make(map[string]bool, n)
	for len(codes) < n {
		code, err := newRecoveryCode()
		if err != nil {
			return nil, nil, fmt.Errorf("new recovery codes: %w", err)
		}
		if seen[code] {
			continue
		}
		seen[code] = true
		codes = append(codes, code[:recoveryCodeLen/2]+"-"+code[recoveryCodeLen/2:])
		hashes = append(hashes, hashRecoveryCode(code))
	}
	return codes, hashes, nil
}

// MatchRecoveryCode returns the index in hashes of the hash of code, or -1 when there is
// none. Case, spaces and dashes in code are ignored. Every hash is compared, in constant
// time, so the time taken does not tell which one matched.
func MatchRecoveryCode(hashes []string, code string) int {
	code = normalizeRecoveryCode(code)
	if len(code) != recoveryCodeLen {
		return -1
	}
	want := []byte(hashRecoveryCode(code))
	match := -1
	for i, h := range hashes {
		if subtle.ConstantTimeCompare([]byte(h), want) == 1 && match < 0 {
			match = i
		}
	}
	return match
}

// newRecoveryCode returns recoveryCodeLen characters drawn uniformly from
// recoveryAlphabet.
func newRecoveryCode() (string, error) {
	// Bytes of 248 and over are dropped, so that each of the 31 characters is drawn
	// from 8 byte values.
	const limit = 256 - 256%len(recoveryAlphabet)
	code := make([]byte, 0, recoveryCodeLen)
	buf := make([]byte, 2*recoveryCodeLen)
	for len(code) < recoveryCodeLen {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("read random bytes: %w", err)
		}
		for _, b := range buf {
			if int(b) < limit && len(code) < recoveryCodeLen {
				code = append(code, recoveryAlphabet[int(b)%len(recoveryAlphabet)])
			}
		}
	}
	return string(code), nil
}

// normalizeRecoveryCode lower-cases code and removes its spaces and dashes.
func normalizeRecoveryCode(code string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, strings.ToLower(code))
}

// hashRecoveryCode returns the lower-case hex SHA-256 of a normalised recovery code.
func hashRecoveryCode(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}
