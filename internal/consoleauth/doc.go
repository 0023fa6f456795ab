// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package consoleauth holds the credential primitives of the merchant web console:
// argon2id password hashes and the password policy, RFC 6238 one-time codes, recovery
// codes, opaque tokens for sessions, invitations and CSRF, and the arithmetic of the
// sign-in lockout. It stores nothing and logs nothing; callers keep the hashes, the last
// used TOTP step and the lockout state wherever they keep the merchant's console users.
package consoleauth
