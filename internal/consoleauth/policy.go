// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package consoleauth

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// Lengths, in characters, that CheckPasswordPolicy allows.
const (
	MinPasswordLength = 12
	MaxPasswordLength = 128
)

// Errors of CheckPasswordPolicy. Unlike most error strings, their messages are whole
// sentences, written to be shown as they are next to the password field of a form.
var (
	// ErrPasswordTooShort is returned for a password of fewer than MinPasswordLength characters.
	ErrPasswordTooShort = errors.New("Use at least 12 characters.")
	// ErrPasswordTooLong is returned for a password of more than MaxPasswordLength characters.
	ErrPasswordTooLong = errors.New("Use at most 128 characters.")
	// ErrPasswordIsEmail is returned for a password equal to the user's email address.
	ErrPasswordIsEmail = errors.New("Don't use your email address as your password.")
	// ErrPasswordOneCharacter is returned for a password that repeats a single character.
	ErrPasswordOneCharacter = errors.New("Don't repeat a single character; mix several.")
)

// CheckPasswordPolicy returns one of the ErrPassword errors when password may not be
// chosen by the console user whose email address is email, and nil when it may.
func CheckPasswordPolicy(password, email string) error {
	switch n := utf8.RuneCountInString(password); {
	case n < MinPasswordLength:
		return ErrPasswordTooShort
	case n > MaxPasswordLength:
		return ErrPasswordTooLong
	case strings.EqualFold(password, strings.TrimSpace(email)):
		return ErrPasswordIsEmail
	case oneCharacter(password):
		return ErrPasswordOneCharacter
	}
	return nil
}

// oneCharacter reports whether s repeats a single character.
func oneCharacter(s string) bool {
	first, _ := utf8.DecodeRuneInString(s)
	for _, r := range s {
		if r != first {
			return false
		}
	}
	return true
}
