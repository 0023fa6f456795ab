// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import (
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Schedule is everything about when a subscription is charged: its periods, the plan's charging
// window and its dunning policy, all in the plan's time zone.
type Schedule struct {
	Periods Periods
	Window  Window
	Dunning Dunning
}

// NewSchedule builds the schedule of a subscription to a plan: the interval and count the
// customer consented to, and the plan's charging window and dunning policy (defaults applied).
// An error says what in the plan is wrong, in words a platform engineer can act on.
func NewSchedule(interval paygatev1.BillingInterval, count int32, window paygatev1.ChargingWindow, dunning paygatev1.DunningPolicy) (Schedule, error) {
	w, err := NewWindow(window)
	if err != nil {
		return Schedule{}, err
	}
	d, err := NewDunning(dunning)
	if err != nil {
		return Schedule{}, err
	}
	p, err := NewPeriods(interval, count, w.Location())
	if err != nil {
		return Schedule{}, err
	}
	return Schedule{Periods: p, Window: w, Dunning: d}, nil
}

// PlanSchedule is the schedule of a plan's subscriptions (NewSchedule with the plan's price).
func PlanSchedule(spec *paygatev1.BillingPlanSpec) (Schedule, error) {
	count := spec.IntervalCount
	if count == 0 {
		count = 1 // the CRD's default
	}
	return NewSchedule(spec.Interval, count, spec.ChargingWindow, spec.Dunning)
}

// RenewalChargeAt is when the invoice of period p is charged: at the period's start, or the next
// opening of the charging window. The first charge of a subscription is not scheduled: it goes
// out as soon as the consent is recorded, while the customer is at hand.
func (s Schedule) RenewalChargeAt(p Period) time.Time { return s.Window.Next(p.Start) }

// AfterFailure says what follows the failures-th failed charge in a row (1 or more, the first
// charge included), which failed at lastFailure: suspend when the dunning policy gives up, else
// the retry time, moved into the charging window.
func (s Schedule) AfterFailure(failures int32, lastFailure time.Time) (retryAt time.Time, suspend bool) {
	at, suspend := s.Dunning.Retry(failures, lastFailure, s.Window.Location())
	if suspend {
		return time.Time{}, true
	}
	return s.Window.Next(at), false
}

// SubscriptionTime is the subscription's clock at real time now: now plus the test clock's
// offset (docs/billing.md, Test clock). Without a test clock the offset is 0.
func SubscriptionTime(now time.Time, offsetSeconds int64) time.Time {
	return now.Add(time.Duration(offsetSeconds) * time.Second)
}

// RealTime is the real time at which the subscription's clock shows t: the inverse of
// SubscriptionTime, for the controller's RequeueAfter.
func RealTime(t time.Time, offsetSeconds int64) time.Time {
	return t.Add(-time.Duration(offsetSeconds) * time.Second)
}
