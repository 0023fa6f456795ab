// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import (
	"math/rand/v2"
	"testing"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := LoadTimeZone(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustPeriods(t testing.TB, interval paygatev1.BillingInterval, count int32, zone string) Periods {
	t.Helper()
	p, err := NewPeriods(interval, count, mustZone(t, zone))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// local parses "2006-01-02 15:04:05" in zone.
func local(t testing.TB, zone, s string) time.Time {
	t.Helper()
	v, err := time.ParseInLocation(time.DateTime, s, mustZone(t, zone))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const dar = "Africa/Dar_es_Salaam"

func TestPeriodStarts(t *testing.T) {
	tests := []struct {
		name     string
		interval paygatev1.BillingInterval
		count    int32
		zone     string
		anchor   string
		want     []string // starts of periods 1, 2, 3, ... in zone
	}{
		{"monthly from 31 January in a leap year", paygatev1.IntervalMonth, 1, dar, "2024-01-31 10:15:00",
			[]string{"2024-01-31 10:15:00", "2024-02-29 10:15:00", "2024-03-31 10:15:00", "2024-04-30 10:15:00", "2024-05-31 10:15:00", "2024-06-30 10:15:00"}},
		{"monthly from 31 January in a common year", paygatev1.IntervalMonth, 1, dar, "2025-01-31 10:15:00",
			[]string{"2025-01-31 10:15:00", "2025-02-28 10:15:00", "2025-03-31 10:15:00"}},
		{"monthly from 30 January", paygatev1.IntervalMonth, 1, dar, "2026-01-30 23:59:59",
			[]string{"2026-01-30 23:59:59", "2026-02-28 23:59:59", "2026-03-30 23:59:59"}},
		{"monthly from the 15th", paygatev1.IntervalMonth, 1, dar, "2026-11-15 08:00:00",
			[]string{"2026-11-15 08:00:00", "2026-12-15 08:00:00", "2027-01-15 08:00:00", "2027-02-15 08:00:00"}},
		{"quarterly from 30 November", paygatev1.IntervalMonth, 3, dar, "2023-11-30 12:00:00",
			[]string{"2023-11-30 12:00:00", "2024-02-29 12:00:00", "2024-05-30 12:00:00", "2024-08-30 12:00:00", "2024-11-30 12:00:00", "2025-02-28 12:00:00"}},
		{"twelve months", paygatev1.IntervalMonth, 12, dar, "2024-02-29 09:00:00",
			[]string{"2024-02-29 09:00:00", "2025-02-28 09:00:00", "2026-02-28 09:00:00", "2027-02-28 09:00:00", "2028-02-29 09:00:00"}},
		{"yearly from 29 February", paygatev1.IntervalYear, 1, dar, "2024-02-29 09:00:00",
			[]string{"2024-02-29 09:00:00", "2025-02-28 09:00:00", "2026-02-28 09:00:00", "2027-02-28 09:00:00", "2028-02-29 09:00:00"}},
		{"daily across a month and a year end", paygatev1.IntervalDay, 1, dar, "2025-12-30 18:30:00",
			[]string{"2025-12-30 18:30:00", "2025-12-31 18:30:00", "2026-01-01 18:30:00", "2026-01-02 18:30:00"}},
		{"every 10 days across February", paygatev1.IntervalDay, 10, dar, "2024-02-15 06:00:00",
			[]string{"2024-02-15 06:00:00", "2024-02-25 06:00:00", "2024-03-06 06:00:00"}},
		{"weekly", paygatev1.IntervalWeek, 1, dar, "2026-02-26 07:00:00",
			[]string{"2026-02-26 07:00:00", "2026-03-05 07:00:00", "2026-03-12 07:00:00"}},
		{"fortnightly", paygatev1.IntervalWeek, 2, dar, "2026-12-24 07:00:00",
			[]string{"2026-12-24 07:00:00", "2027-01-07 07:00:00", "2027-01-21 07:00:00"}},
		// Daylight saving: periods follow the calendar, at the same local time of day.
		{"daily across the spring change", paygatev1.IntervalDay, 1, "America/New_York", "2026-03-07 09:00:00",
			[]string{"2026-03-07 09:00:00", "2026-03-08 09:00:00", "2026-03-09 09:00:00"}},
		{"monthly across the autumn change", paygatev1.IntervalMonth, 1, "Europe/London", "2026-09-30 21:00:00",
			[]string{"2026-09-30 21:00:00", "2026-10-30 21:00:00", "2026-11-30 21:00:00"}},
		// An anchor time the change skips on a later day moves later by the gap on that day only.
		{"daily at a time the spring change skips", paygatev1.IntervalDay, 1, "America/New_York", "2026-03-07 02:30:00",
			[]string{"2026-03-07 02:30:00", "2026-03-08 03:30:00", "2026-03-09 02:30:00"}},
		// A time that happens twice is its first occurrence (EDT, not EST).
		{"daily at a time the autumn change repeats", paygatev1.IntervalDay, 1, "America/New_York", "2026-10-31 01:30:00",
			[]string{"2026-10-31 01:30:00", "2026-11-01 01:30:00", "2026-11-02 01:30:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPeriods(t, tt.interval, tt.count, tt.zone)
			anchor := local(t, tt.zone, tt.anchor)
			for i, want := range tt.want {
				n := int32(i + 1)
				got := p.Start(anchor, n)
				if w := local(t, tt.zone, want); !got.Equal(w) {
					t.Errorf("period %d starts %s, want %s", n, got, w)
				}
				if got.Location() != p.loc {
					t.Errorf("period %d start is in %s, want the plan's zone", n, got.Location())
				}
				period := p.Period(anchor, n)
				if period.Number != n || !period.Start.Equal(got) || !period.End.Equal(p.Start(anchor, n+1)) {
					t.Errorf("Period(%d) = %+v: not from Start(%d) to Start(%d)", n, period, n, n+1)
				}
			}
		})
	}
}

// The first occurrence of 01:30 on the autumn change day in New York is EDT.
func TestPeriodStartRepeatedTimeIsFirstOccurrence(t *testing.T) {
	p := mustPeriods(t, paygatev1.IntervalDay, 1, "America/New_York")
	got := p.Start(local(t, "America/New_York", "2026-10-31 01:30:00"), 2)
	if want := time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("got %s (%s), want %s", got, got.UTC(), want)
	}
	// London falls back at 02:00 BST: 01:30 happens at 00:30 UTC first.
	lp := mustPeriods(t, paygatev1.IntervalDay, 1, "Europe/London")
	got = lp.Start(local(t, "Europe/London", "2026-10-24 01:30:00"), 2)
	if want := time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("London: got %s (%s), want %s", got, got.UTC(), want)
	}
	// London springs forward at 01:00 GMT: 01:30 does not exist and becomes 02:30 BST.
	got = lp.Start(local(t, "Europe/London", "2026-03-28 01:30:00"), 2)
	if want := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("London spring: got %s (%s), want %s", got, got.UTC(), want)
	}
}

// The anchor's day of the month is aimed at in every period, however many periods were short:
// period n never depends on period n-1.
func TestPeriodStartsNeverDrift(t *testing.T) {
	p := mustPeriods(t, paygatev1.IntervalMonth, 1, dar)
	for _, anchorDay := range []int{28, 29, 30, 31} {
		anchor := time.Date(2024, time.January, anchorDay, 14, 0, 0, 0, p.loc)
		for n := int32(1); n <= 120; n++ {
			got := p.Start(anchor, n)
			y, m := 2024+int(n-1)/12, time.Month(int(n-1)%12+1)
			want := min(anchorDay, daysIn(y, m))
			if got.Year() != y || got.Month() != m || got.Day() != want || got.Hour() != 14 {
				t.Fatalf("anchor day %d, period %d starts %s, want %d-%02d-%02d 14:00", anchorDay, n, got, y, m, want)
			}
		}
	}
}

// Time zones matter: the same instant is 30 January in UTC and 31 January in Dar es Salaam.
func TestPeriodStartsFollowThePlansZone(t *testing.T) {
	anchor := time.Date(2026, 1, 30, 22, 30, 0, 0, time.UTC) // 01:30 on 31 January in Dar es Salaam
	inDar := mustPeriods(t, paygatev1.IntervalMonth, 1, dar).Start(anchor, 2)
	inUTC := mustPeriods(t, paygatev1.IntervalMonth, 1, "UTC").Start(anchor, 2)
	if want := time.Date(2026, 2, 27, 22, 30, 0, 0, time.UTC); !inDar.Equal(want) { // 28 February 01:30 EAT
		t.Errorf("in Dar es Salaam: %s, want %s", inDar.UTC(), want)
	}
	if want := time.Date(2026, 2, 28, 22, 30, 0, 0, time.UTC); !inUTC.Equal(want) {
		t.Errorf("in UTC: %s, want %s", inUTC.UTC(), want)
	}
}

func TestPeriodNumberOutOfRange(t *testing.T) {
	p := mustPeriods(t, paygatev1.IntervalMonth, 1, dar)
	anchor := local(t, dar, "2026-01-31 10:00:00")
	for _, n := range []int32{0, -1, -1 << 31} {
		if got := p.Period(anchor, n); got.Number != 1 || !got.Start.Equal(anchor) {
			t.Errorf("Period(%d) = %+v, want period 1", n, got)
		}
	}
	last := p.Period(anchor, paygatev1.MaxInvoicePeriod)
	for _, n := range []int32{paygatev1.MaxInvoicePeriod + 1, 1<<31 - 1} {
		if got := p.Period(anchor, n); got != last || !got.End.After(got.Start) {
			t.Errorf("Period(%d) = %+v, want the last period %+v", n, got, last)
		}
	}
}

func TestPeriodAt(t *testing.T) {
	anchor := local(t, dar, "2024-01-31 10:00:00")
	p := mustPeriods(t, paygatev1.IntervalMonth, 1, dar)
	tests := []struct {
		at   string
		want int32
	}{
		{"2023-12-01 00:00:00", 1}, // before the anchor: the first period
		{"2024-01-31 09:59:59", 1},
		{"2024-01-31 10:00:00", 1},
		{"2024-02-29 09:59:59", 1},
		{"2024-02-29 10:00:00", 2}, // a period's end belongs to the next one
		{"2024-03-30 23:00:00", 2},
		{"2024-03-31 10:00:00", 3},
		{"2025-01-31 10:00:00", 13},
		{"2034-01-31 09:59:59", 120},
		{"2034-01-31 10:00:00", 121},
	}
	for _, tt := range tests {
		got := p.At(anchor, local(t, dar, tt.at))
		if got.Number != tt.want {
			t.Errorf("At(%s) = period %d, want %d", tt.at, got.Number, tt.want)
		}
	}
}

// At agrees with Start for any time, interval and count, including daylight-saving zones.
func TestPeriodAtContainsTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, zone := range []string{dar, "America/New_York", "Europe/London", "Australia/Lord_Howe"} {
		for interval, limit := range paygatev1.MaxIntervalCount {
			for _, count := range []int32{1, min(2, limit), limit} {
				p := mustPeriods(t, interval, count, zone)
				anchor := time.Date(2024, 1, 31, 1, 30, 0, 0, p.loc)
				for i := 0; i < 200; i++ {
					at := anchor.Add(time.Duration(rng.Int64N(int64(20 * 365 * 24 * time.Hour))))
					got := p.At(anchor, at)
					if !got.Contains(at) || !got.Start.Equal(p.Start(anchor, got.Number)) || !got.End.Equal(p.Start(anchor, got.Number+1)) {
						t.Fatalf("%s x%d in %s: At(%s) = %+v does not contain it", interval, count, zone, at, got)
					}
				}
			}
		}
	}
}

func TestPeriodAtCapsAtTheLastInvoicePeriod(t *testing.T) {
	p := mustPeriods(t, paygatev1.IntervalDay, 1, dar)
	anchor := local(t, dar, "2026-01-01 00:00:00")
	if got := p.At(anchor, anchor.AddDate(400, 0, 0)); got.Number != paygatev1.MaxInvoicePeriod {
		t.Errorf("400 years of days: period %d, want %d", got.Number, paygatev1.MaxInvoicePeriod)
	}
	// Past what a time.Duration holds, without stepping through every period.
	weekly := mustPeriods(t, paygatev1.IntervalWeek, 1, dar)
	if got := weekly.At(anchor, anchor.AddDate(5000, 0, 0)); got.Number != paygatev1.MaxInvoicePeriod {
		t.Errorf("5000 years of weeks: period %d, want %d", got.Number, paygatev1.MaxInvoicePeriod)
	}
}

func TestNextPeriod(t *testing.T) {
	anchor := local(t, dar, "2026-01-31 10:00:00")
	monthly := mustPeriods(t, paygatev1.IntervalMonth, 1, dar)
	daily := mustPeriods(t, paygatev1.IntervalDay, 1, dar)
	tests := []struct {
		name    string
		periods Periods
		last    int32
		now     string
		want    int32
	}{
		{"paid early: the next period", monthly, 1, "2026-02-01 00:00:00", 2},
		{"renewal at the period start", monthly, 1, "2026-02-28 10:00:00", 2},
		{"paid late, the next period still running", monthly, 1, "2026-03-20 10:00:00", 2},
		{"paid after the next period ended: the current one", monthly, 1, "2026-04-02 10:00:00", 3},
		{"daily, paid five days late: skipped days are not billed", daily, 2, "2026-02-06 12:00:00", 7},
		{"daily, paid in time", daily, 2, "2026-02-02 09:00:00", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.periods.Next(anchor, tt.last, local(t, dar, tt.now))
			if got.Number != tt.want {
				t.Errorf("Next(last %d, %s) = period %d (%s), want %d", tt.last, tt.now, got.Number, got.Start, tt.want)
			}
		})
	}
}

func TestNewPeriodsRefuses(t *testing.T) {
	loc := mustZone(t, dar)
	tests := []struct {
		interval paygatev1.BillingInterval
		count    int32
		loc      *time.Location
	}{
		{"", 1, loc},
		{"fortnight", 1, loc},
		{"Month", 1, loc},
		{paygatev1.IntervalMonth, 0, loc},
		{paygatev1.IntervalMonth, -1, loc},
		{paygatev1.IntervalMonth, 13, loc},
		{paygatev1.IntervalDay, 366, loc},
		{paygatev1.IntervalWeek, 53, loc},
		{paygatev1.IntervalYear, 2, loc},
		{paygatev1.IntervalMonth, 1, nil},
	}
	for _, tt := range tests {
		if _, err := NewPeriods(tt.interval, tt.count, tt.loc); err == nil {
			t.Errorf("NewPeriods(%q, %d, %v) accepted", tt.interval, tt.count, tt.loc)
		}
	}
}

func TestAnchor(t *testing.T) {
	at := time.Date(2026, 1, 31, 10, 0, 0, 999999000, time.UTC)
	if got := Anchor(at); !got.Equal(time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("Anchor = %s", got)
	}
}
