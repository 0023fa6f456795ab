// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package billing holds the rules of recurring billing that do not need Kubernetes: billing
// periods and their anchoring, the charging window, the dunning schedule, the subscription
// lifecycle, the consent record, the ids of subscriptions and invoice charges, and the checks
// the REST API applies to plans and subscriptions. The billing controller and the apiserver both
// call it, so they agree (docs/billing.md).
//
// Every time this package computes is on the subscription's clock (SubscriptionTime): real time
// for a production subscription, real time plus the test clock's offset in the sandbox.
package billing

import (
	"fmt"
	"time"

	// The plan's time zone must resolve in any image, with or without a system zone database.
	_ "time/tzdata"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Period is one billing period of a subscription: from Start (included) to End (excluded). The
// first period is number 1; period n+1 starts where period n ends.
type Period struct {
	Number int32
	Start  time.Time
	End    time.Time
}

// Contains reports whether t falls inside the period.
func (p Period) Contains(t time.Time) bool { return !t.Before(p.Start) && t.Before(p.End) }

// Anchor is the instant a subscription's first period starts: the consent's recordedAt,
// truncated to the second (periods are stored with second precision). Every period is computed
// from the anchor, never from the period before it, so periods never drift.
func Anchor(consentRecordedAt time.Time) time.Time {
	return consentRecordedAt.Truncate(time.Second)
}

// Periods computes the billing periods of an interval in a time zone.
type Periods struct {
	interval paygatev1.BillingInterval
	count    int32
	loc      *time.Location
}

// NewPeriods checks the interval and its count (the rules of CheckInterval) and returns their
// periods in loc.
func NewPeriods(interval paygatev1.BillingInterval, count int32, loc *time.Location) (Periods, error) {
	if problem := intervalProblem(string(interval), int64(count)); problem != "" {
		return Periods{}, fmt.Errorf("%s", problem)
	}
	if loc == nil {
		return Periods{}, fmt.Errorf("billing periods need a time zone")
	}
	return Periods{interval: interval, count: count, loc: loc}, nil
}

// Start is when period n begins, for a subscription anchored at anchor; n below 1 counts as 1,
// above paygatev1.MaxInvoicePeriod+1 as that. Periods follow the calendar of the time zone, at the anchor's local time of day:
//
//   - day and week: the anchor's date plus (n-1) x count days (x 7 for weeks), so a period is
//     23 or 25 hours long across a daylight-saving change, never shifted by it;
//   - month and year: the anchor's date plus (n-1) x count months (x 12 for years), on the
//     anchor's day of the month, or the month's last day when it is shorter. The anchor's day is
//     always the one aimed at: a subscription that started on 31 January renews on 28 February
//     (29 in a leap year), then 31 March, 30 April, 31 May; one that started on 29 February
//     renews on 28 February in common years.
//
// A local time skipped by a daylight-saving change is moved later by the gap; one that happens
// twice is its first occurrence (localTime).
func (p Periods) Start(anchor time.Time, n int32) time.Time {
	n = min(max(n, 1), paygatev1.MaxInvoicePeriod+1)
	a := anchor.In(p.loc)
	y, m, d := a.Date()
	hh, mm, ss := a.Clock()
	ns := a.Nanosecond()
	k := int(n-1) * int(p.count)
	switch p.interval {
	case paygatev1.IntervalDay:
		return localTime(y, m, d+k, hh, mm, ss, ns, p.loc)
	case paygatev1.IntervalWeek:
		return localTime(y, m, d+7*k, hh, mm, ss, ns, p.loc)
	case paygatev1.IntervalYear:
		k *= 12
	}
	months := int(m) - 1 + k
	ty, tm := y+months/12, time.Month(months%12+1)
	if last := daysIn(ty, tm); d > last {
		d = last
	}
	return localTime(ty, tm, d, hh, mm, ss, ns, p.loc)
}

// Period returns period n, from 1 to paygatev1.MaxInvoicePeriod (n outside counts as the
// nearest).
func (p Periods) Period(anchor time.Time, n int32) Period {
	n = min(max(n, 1), paygatev1.MaxInvoicePeriod)
	return Period{Number: n, Start: p.Start(anchor, n), End: p.Start(anchor, n+1)}
}

// At returns the period that contains t: the first period for a t before the anchor, the last
// one an invoice can have (paygatev1.MaxInvoicePeriod) for a t past it.
func (p Periods) At(anchor, t time.Time) Period {
	if t.Before(anchor) {
		return p.Period(anchor, 1)
	}
	if !t.Before(p.Start(anchor, paygatev1.MaxInvoicePeriod)) {
		return p.Period(anchor, paygatev1.MaxInvoicePeriod)
	}
	// Estimate from the average length of a period, then step to the exact one.
	n := int64(t.Sub(anchor)/(averageLength[p.interval]*time.Duration(p.count))) + 1
	n = min(max(n, 1), paygatev1.MaxInvoicePeriod)
	for n > 1 && p.Start(anchor, int32(n)).After(t) {
		n--
	}
	for n < paygatev1.MaxInvoicePeriod && !p.Start(anchor, int32(n+1)).After(t) {
		n++
	}
	return p.Period(anchor, int32(n))
}

// Next is the period to invoice after period last was paid, at time now: the period after
// last, or, when that one has already ended, the period that contains now. Periods that ended
// while an invoice waited for payment are never billed afterwards, so a late payment does not
// set off a burst of prompts for past periods (docs/billing.md, Periods).
func (p Periods) Next(anchor time.Time, last int32, now time.Time) Period {
	next := p.Period(anchor, last+1)
	if !now.Before(next.End) {
		if cur := p.At(anchor, now); cur.Number > next.Number {
			return cur
		}
	}
	return next
}

// averageLength of one interval, for estimates only.
var averageLength = map[paygatev1.BillingInterval]time.Duration{
	paygatev1.IntervalDay:   24 * time.Hour,
	paygatev1.IntervalWeek:  7 * 24 * time.Hour,
	paygatev1.IntervalMonth: 2629746 * time.Second, // 365.2425 days / 12
	paygatev1.IntervalYear:  31556952 * time.Second,
}

// daysIn is the number of days of month m of year y.
func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
