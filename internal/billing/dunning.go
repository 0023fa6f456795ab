// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import (
	"fmt"
	"slices"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Bounds of a dunning policy, the same as the BillingPlan CRD's.
const (
	MaxRetryEntries   = 10
	MaxRetryAfterDays = 30
	MaxFailuresLimit  = 10
)

// Dunning is a plan's dunning policy with its defaults applied (docs/billing.md, Dunning).
type Dunning struct {
	retryAfterDays []int32
	maxFailures    int32
}

// NewDunning reads a plan's dunning policy: an empty list or a zero maxFailures takes the
// default (retries 1, 3 and 5 days after each failure; suspended at the 4th failure). Values
// outside the CRD's bounds are refused.
func NewDunning(p paygatev1.DunningPolicy) (Dunning, error) {
	d := Dunning{retryAfterDays: slices.Clone(p.RetryAfterDays), maxFailures: p.MaxFailures}
	if len(d.retryAfterDays) == 0 {
		d.retryAfterDays = slices.Clone(paygatev1.DefaultRetryAfterDays)
	}
	if d.maxFailures == 0 {
		d.maxFailures = paygatev1.DefaultMaxFailures
	}
	if len(d.retryAfterDays) > MaxRetryEntries {
		return Dunning{}, fmt.Errorf("dunning.retryAfterDays has %d entries, at most %d are allowed", len(d.retryAfterDays), MaxRetryEntries)
	}
	for _, days := range d.retryAfterDays {
		if days < 1 || days > MaxRetryAfterDays {
			return Dunning{}, fmt.Errorf("dunning.retryAfterDays entry %d is not from 1 to %d days", days, MaxRetryAfterDays)
		}
	}
	if d.maxFailures < 1 || d.maxFailures > MaxFailuresLimit {
		return Dunning{}, fmt.Errorf("dunning.maxFailures %d is not from 1 to %d", d.maxFailures, MaxFailuresLimit)
	}
	return d, nil
}

// MaxFailures is how many failed charges in a row suspend a subscription.
func (d Dunning) MaxFailures() int32 { return d.maxFailures }

// Suspends reports whether failures failed charges in a row suspend the subscription.
func (d Dunning) Suspends(failures int32) bool { return failures >= d.maxFailures }

// RetryAfterDays is the wait, in days, after the failures-th failure in a row (1 or more): the
// list's entry at that position, or its last entry once the list is used up.
func (d Dunning) RetryAfterDays(failures int32) int32 {
	i := int(max(failures, 1)) - 1
	if i >= len(d.retryAfterDays) {
		i = len(d.retryAfterDays) - 1
	}
	return d.retryAfterDays[i]
}

// Retry says what follows the failures-th failed charge in a row (1 or more), which failed at
// lastFailure: suspend is true when the policy gives up (failures reached maxFailures), else
// retryAt is lastFailure plus RetryAfterDays(failures) calendar days in loc, at the same local
// time of day (localTime). The charging window is not applied here: Schedule.AfterFailure
// applies it.
func (d Dunning) Retry(failures int32, lastFailure time.Time, loc *time.Location) (retryAt time.Time, suspend bool) {
	if d.Suspends(failures) {
		return time.Time{}, true
	}
	l := lastFailure.In(loc)
	y, m, day := l.Date()
	hh, mm, ss := l.Clock()
	return localTime(y, m, day+int(d.RetryAfterDays(failures)), hh, mm, ss, l.Nanosecond(), loc), false
}
