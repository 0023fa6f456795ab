// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package consoleauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// TOTP parameters (RFC 6238 with HMAC-SHA1): what authenticator apps assume when an
// otpauth URI does not say otherwise.
const (
	totpDigits     = 6
	totpModulus    = 1000000 // 10^totpDigits
	totpPeriod     = 30      // seconds
	totpSecretLen  = 20      // bytes, the length of the HMAC-SHA1 output (RFC 4226 §4)
	totpMinKeyLen  = 16      // bytes: RFC 4226 §4 requires at least 128 bits
	totpSkewWindow = 1       // steps accepted either side of the current one
)

// ErrInvalidTOTPSecret is wrapped by the error of TOTPCode for a secret that is not
// base32 or is shorter than 128 bits.
var ErrInvalidTOTPSecret = errors.New("invalid TOTP secret")

var totpBase32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewTOTPSecret returns a new TOTP secret: 20 random bytes in upper-case base32 (RFC 4648)
// without padding, as authenticator apps expect it.
func NewTOTPSecret() (string, error) {
	key := make([]byte, totpSecretLen)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("new TOTP secret: %w", err)
	}
	return totpBase32.EncodeToString(key), nil
}

// TOTPCode returns the 6-digit code of secret for the 30-second step that holds t.
func TOTPCode(secret string, t time.Time) (string, error) {
	key, err := decodeTOTPSecret(secret)
	if err != nil {
		return "", fmt.Errorf("TOTP code: %w", err)
	}
	step := totpStep(t)
	if step < 0 {
		return "", errors.New("TOTP code: time before the Unix epoch")
	}
	return hotp(key, uint64(step)), nil
}

// VerifyTOTP reports whether code is the code of secret for the step of now or for one
// step either side, and returns the step it matched. Spaces in code are ignored. A step
// not after lastStep is refused, so that each code is used once: the caller stores the
// returned step and passes it as lastStep next time (0 before the first code). When
// several steps match, the latest is returned. On failure VerifyTOTP returns 0, false.
func VerifyTOTP(secret, code string, now time.Time, lastStep int64) (step int64, ok bool) {
	key, err := decodeTOTPSecret(secret)
	code = strings.Join(strings.Fields(code), "")
	if err != nil || !isTOTPCode(code) {
		return 0, false
	}
	current := totpStep(now)
	for s := current - totpSkewWindow; s <= current+totpSkewWindow; s++ {
		if s <= lastStep || s < 0 {
			continue
		}
		if subtle.ConstantTimeCompare([]byte(hotp(key, uint64(s))), []byte(code)) == 1 {
			step, ok = s, true
		}
	}
	return step, ok
}

// OTPAuthURI returns the otpauth URI that enrols secret in an authenticator app, usually
// shown as a QR code: the label is issuer:account, and the parameters repeat the issuer
// and spell out the defaults (SHA1, 6 digits, 30 seconds). An empty issuer is left out.
func OTPAuthURI(issuer, account, secret string) string {
	label := escapeOTPAuth(account)
	query := "secret=" + escapeOTPAuth(secret)
	if issuer != "" {
		label = escapeOTPAuth(issuer) + ":" + label
		query += "&issuer=" + escapeOTPAuth(issuer)
	}
	query += fmt.Sprintf("&algorithm=SHA1&digits=%d&period=%d", totpDigits, totpPeriod)
	return "otpauth://totp/" + label + "?" + query
}

// escapeOTPAuth percent-encodes everything but letters, digits and -._~ (RFC 3986
// unreserved characters): colons too, since a colon separates the issuer from the account
// in the label, and spaces as %20 rather than +, which some authenticator apps show as is.
func escapeOTPAuth(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

// decodeTOTPSecret decodes a base32 secret, ignoring case, spaces and padding. Anything
// that does not encode back to the same characters, such as a dangling last character,
// is refused.
func decodeTOTPSecret(secret string) ([]byte, error) {
	s := strings.TrimRight(strings.ToUpper(strings.Join(strings.Fields(secret), "")), "=")
	key, err := totpBase32.DecodeString(s)
	if err != nil || totpBase32.EncodeToString(key) != s {
		return nil, fmt.Errorf("%w: not base32", ErrInvalidTOTPSecret)
	}
	if len(key) < totpMinKeyLen {
		return nil, fmt.Errorf("%w: shorter than 128 bits", ErrInvalidTOTPSecret)
	}
	return key, nil
}

// isTOTPCode reports whether code is exactly six ASCII digits.
func isTOTPCode(code string) bool {
	if len(code) != totpDigits {
		return false
	}
	for i := range len(code) {
		if code[i] < '0' || code[i] > '9' {
			return false
		}
	}
	return true
}

// totpStep returns the number of 30-second steps from the Unix epoch to t, rounded down.
func totpStep(t time.Time) int64 {
	sec := t.Unix()
	step := sec / totpPeriod
	if sec%totpPeriod < 0 {
		step--
	}
	return step
}

// hotp returns the RFC 4226 code of key for counter, in 6 digits.
func hotp(key []byte, counter uint64) string {
	mac := hmac.New(sha1.New, key)
	mac.Write(binary.BigEndian.AppendUint64(nil, counter))
	sum := mac.Sum(nil)
	offset := sum[len(sum)-1] & 0x0f
	value := binary.BigEndian.Uint32(sum[offset:]) & 0x7fffffff
	return fmt.Sprintf("%0*d", totpDigits, value%totpModulus)
}
