// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package consoleauth

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// failInTurn fails n sign-ins, each as soon as the account allows it, and returns the
// state and the time of the last failure.
func failInTurn(n int, p LockoutPolicy) (Lockout, time.Time) {
	var l Lockout
	now := t0
	for range n {
		if l.Locked(now) {
			now = l.LockedUntil
		}
		l = l.Fail(now, p)
	}
	return l, now
}

func TestLockoutFail(t *testing.T) {
	custom := LockoutPolicy{Threshold: 3, Base: 10 * time.Second, Max: 25 * time.Second}
	for _, tc := range []struct {
		name     string
		policy   LockoutPolicy
		failures int
		wantLock time.Duration // from the last failure; 0 for not locked
	}{
		{"one failure", DefaultLockoutPolicy, 1, 0},
		{"below threshold", DefaultLockoutPolicy, 4, 0},
		{"threshold", DefaultLockoutPolicy, 5, time.Minute},
		{"one more", DefaultLockoutPolicy, 6, 2 * time.Minute},
		{"two more", DefaultLockoutPolicy, 7, 4 * time.Minute},
		{"five more", DefaultLockoutPolicy, 10, 32 * time.Minute},
		{"six more, capped", DefaultLockoutPolicy, 11, time.Hour},
		{"many more, capped", DefaultLockoutPolicy, 100, time.Hour},
		{"custom below threshold", custom, 2, 0},
		{"custom threshold", custom, 3, 10 * time.Second},
		{"custom doubled", custom, 4, 20 * time.Second},
		{"custom capped below double", custom, 5, 25 * time.Second},
		{"max below base", LockoutPolicy{Threshold: 1, Base: time.Hour, Max: time.Minute}, 1, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, last := failInTurn(tc.failures, tc.policy)
			if l.Failures != tc.failures {
				t.Errorf("Failures = %d, want %d", l.Failures, tc.failures)
			}
			if got := l.LockedUntil.Sub(last); tc.wantLock > 0 && got != tc.wantLock {
				t.Errorf("locked for %v after the last failure, want %v", got, tc.wantLock)
			}
			if l.Locked(last) != (tc.wantLock > 0) {
				t.Errorf("Locked = %v right after the last failure, want %v", l.Locked(last), tc.wantLock > 0)
			}
		})
	}
}

// TestLockoutFailManyFailures starts from a stored count far beyond the threshold: the
// lock is still bounded, and computing it does not loop once per failure.
func TestLockoutFailManyFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy LockoutPolicy
		want   time.Duration
	}{
		{"default", DefaultLockoutPolicy, time.Hour},
		{"no cap", LockoutPolicy{Threshold: 1, Base: time.Second}, 0},
		{"zero base", LockoutPolicy{Threshold: 1, Max: time.Hour}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Lockout{Failures: 1 << 62}.Fail(t0, tc.policy)
			if got := l.LockedUntil.Sub(t0); l.Failures != 1<<62+1 || (tc.want > 0 && got != tc.want) || (tc.want == 0 && l.Locked(t0)) {
				t.Errorf("Fail = %+v: locked for %v, want %v", l, got, tc.want)
			}
		})
	}
}

func TestLockoutLocked(t *testing.T) {
	locked := Lockout{Failures: 5, LockedUntil: t0.Add(time.Minute)}
	for _, tc := range []struct {
		name string
		l    Lockout
		now  time.Time
		want bool
	}{
		{"never failed", Lockout{}, t0, false},
		{"failed, not locked", Lockout{Failures: 4}, t0, false},
		{"during the lock", locked, t0, true},
		{"just before the end", locked, t0.Add(time.Minute - time.Nanosecond), true},
		{"at the end", locked, t0.Add(time.Minute), false},
		{"after the end", locked, t0.Add(time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.l.Locked(tc.now); got != tc.want {
				t.Errorf("Locked = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLockoutFailNeverShortens fails once more, at the start of a long lock: the new,
// shorter lock does not replace it.
func TestLockoutFailNeverShortens(t *testing.T) {
	l := Lockout{Failures: 5, LockedUntil: t0.Add(time.Hour)}.Fail(t0, DefaultLockoutPolicy)
	if l.Failures != 6 || !l.LockedUntil.Equal(t0.Add(time.Hour)) {
		t.Errorf("Fail = %+v, want 6 failures, locked until %v", l, t0.Add(time.Hour))
	}
}

func TestLockoutSucceed(t *testing.T) {
	l, last := failInTurn(7, DefaultLockoutPolicy)
	l = l.Succeed()
	if l.Failures != 0 || l.Locked(last) || !l.LockedUntil.IsZero() {
		t.Fatalf("Succeed = %+v, want the zero Lockout", l)
	}
	for i := range DefaultLockoutPolicy.Threshold - 1 {
		if l = l.Fail(last, DefaultLockoutPolicy); l.Locked(last) {
			t.Fatalf("locked after %d failures following a success", i+1)
		}
	}
	if l = l.Fail(last, DefaultLockoutPolicy); l.LockedUntil.Sub(last) != time.Minute {
		t.Errorf("after the threshold again: locked for %v, want the base minute", l.LockedUntil.Sub(last))
	}
}
