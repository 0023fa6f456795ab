// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package consoleauth

import "time"

// LockoutPolicy says when repeated sign-in failures lock a console account: after
// Threshold consecutive failures the account locks for Base, and each further failure
// doubles the lock, up to Max.
type LockoutPolicy struct {
	// Threshold is the number of consecutive failures that locks the account.
	Threshold int
	// Base is how long the first lock lasts.
	Base time.Duration
	// Max is the longest a lock lasts.
	Max time.Duration
}

// DefaultLockoutPolicy locks an account for a minute after 5 consecutive failures, and
// for up to an hour as failures go on.
var DefaultLockoutPolicy = LockoutPolicy{Threshold: 5, Base: time.Minute, Max: time.Hour}

// Lockout is the sign-in failure state of a console account. The zero value is an
// account with no failures.
type Lockout struct {
	// Failures is the number of consecutive failed sign-ins.
	Failures int
	// LockedUntil is when the current lock ends; zero when the account was never locked.
	LockedUntil time.Time
}

// Locked reports whether the account is locked at now. A locked account's sign-ins are
// refused without checking the password.
func (l Lockout) Locked(now time.Time) bool {
	return now.Before(l.LockedUntil)
}

// Fail returns the state after a failed sign-in at now under policy p. From the
// Threshold-th consecutive failure on, the account is locked from now for Base times
// 2^(Failures-Threshold), at most Max; a lock already running is never shortened.
func (l Lockout) Fail(now time.Time, p LockoutPolicy) Lockout {
	l.Failures++
	if l.Failures < p.Threshold {
		return l
	}
	if until := now.Add(p.lockFor(l.Failures - p.Threshold)); until.After(l.LockedUntil) {
		l.LockedUntil = until
	}
	return l
}

// Succeed returns the state after a successful sign-in: no failures and no lock.
func (l Lockout) Succeed() Lockout {
	return Lockout{}
}

// lockFor returns how long the account locks after extra failures beyond the threshold:
// Base doubled extra times, at most Max. It returns as soon as Max is reached, so a
// count of failures in the millions costs no more than a few.
func (p LockoutPolicy) lockFor(extra int) time.Duration {
	d := p.Base
	if d <= 0 {
		return 0
	}
	for range extra {
		if d >= p.Max/2 {
			return p.Max
		}
		d *= 2
	}
	return min(d, p.Max)
}
