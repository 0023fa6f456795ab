// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import (
	"testing"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

func mustWindow(t testing.TB, start, end, zone string) Window {
	t.Helper()
	w, err := NewWindow(paygatev1.ChargingWindow{Start: start, End: end, TimeZone: zone})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWindowNext(t *testing.T) {
	const ny = "America/New_York"
	tests := []struct {
		name             string
		start, end, zone string // empty: the defaults
		at, want         string // local times in the window's zone
	}{
		{"defaults: before the window", "", "", "", "2026-05-01 07:59:59", "2026-05-01 08:00:00"},
		{"defaults: at the start", "", "", "", "2026-05-01 08:00:00", "2026-05-01 08:00:00"},
		{"defaults: inside", "", "", "", "2026-05-01 13:37:00", "2026-05-01 13:37:00"},
		{"defaults: the last second", "", "", "", "2026-05-01 19:59:59", "2026-05-01 19:59:59"},
		{"defaults: at the end, next morning", "", "", "", "2026-05-01 20:00:00", "2026-05-02 08:00:00"},
		{"defaults: late evening", "", "", "", "2026-05-01 23:30:00", "2026-05-02 08:00:00"},
		{"defaults: midnight", "", "", "", "2026-05-02 00:00:00", "2026-05-02 08:00:00"},
		{"defaults: over a month and year end", "", "", "", "2026-12-31 21:00:00", "2027-01-01 08:00:00"},
		{"until the end of the day", "22:00", "24:00", dar, "2026-05-01 23:59:59", "2026-05-01 23:59:59"},
		{"until the end of the day, after midnight", "22:00", "24:00", dar, "2026-05-02 00:00:00", "2026-05-02 22:00:00"},
		{"the whole day", "00:00", "24:00", dar, "2026-05-02 03:17:00", "2026-05-02 03:17:00"},
		{"one minute", "12:00", "12:01", dar, "2026-05-02 12:01:00", "2026-05-03 12:00:00"},
		// Daylight saving: the window is on the customer's clock.
		{"spring change, window after the gap", "", "", ny, "2026-03-08 01:00:00", "2026-03-08 08:00:00"},
		{"spring change skips the whole window", "02:00", "03:00", ny, "2026-03-08 00:30:00", "2026-03-09 02:00:00"},
		{"spring change skips the window's start: open at the jump", "02:30", "04:00", ny, "2026-03-08 00:30:00", "2026-03-08 03:00:00"},
		{"spring change skips part of the window", "01:30", "02:30", "Europe/London", "2026-03-29 00:00:00", "2026-03-29 02:00:00"},
		{"autumn change repeats a time inside the window", "01:30", "03:00", ny, "2026-11-01 01:59:59", "2026-11-01 01:59:59"},
		{"autumn change, evening", "", "", ny, "2026-10-31 21:00:00", "2026-11-01 08:00:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			zone := tt.zone
			if zone == "" {
				zone = dar
			}
			w := mustWindow(t, tt.start, tt.end, tt.zone)
			at := local(t, zone, tt.at)
			got := w.Next(at)
			if want := local(t, zone, tt.want); !got.Equal(want) {
				t.Errorf("Next(%s) = %s, want %s", at, got.In(w.Location()), want)
			}
			if !w.Contains(got) {
				t.Errorf("Next(%s) = %s, outside the window", at, got)
			}
			if got.Before(at) {
				t.Errorf("Next(%s) = %s, before the time asked for", at, got)
			}
			if w.Contains(at) != got.Equal(at) {
				t.Errorf("Contains(%s) = %v, but Next moved it to %s", at, w.Contains(at), got)
			}
		})
	}
}

// Times in any zone are read on the window's clock: 04:59 UTC is 07:59 in Dar es Salaam.
func TestWindowNextReadsTimesInItsZone(t *testing.T) {
	w := mustWindow(t, "", "", "")
	got := w.Next(time.Date(2026, 5, 1, 4, 59, 0, 0, time.UTC))
	if want := time.Date(2026, 5, 1, 5, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("got %s, want %s", got.UTC(), want)
	}
	got = w.Next(time.Date(2026, 5, 1, 17, 0, 0, 0, time.UTC)) // 20:00 EAT
	if want := time.Date(2026, 5, 2, 5, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("got %s, want %s", got.UTC(), want)
	}
}

// Across daylight-saving changes, Next is the earliest instant whose local time of day is in the
// window: nothing between t and Next(t) is (checked minute by minute).
func TestWindowNextIsEarliest(t *testing.T) {
	for _, tc := range []struct{ start, end, zone string }{
		{"01:30", "02:30", "Europe/London"},
		{"01:30", "03:00", "America/New_York"},
		{"00:00", "01:00", "America/Santiago"},    // clocks change at midnight there
		{"02:00", "02:45", "Australia/Lord_Howe"}, // a half-hour change
		{"08:00", "20:00", dar},
	} {
		w := mustWindow(t, tc.start, tc.end, tc.zone)
		inside := func(m time.Time) bool {
			l := m.In(w.Location())
			minute := l.Hour()*60 + l.Minute()
			return minute >= w.start && minute < w.end
		}
		// 2026, and a year past the zone database's listed changes, where zones follow their rule.
		for start, step := range map[time.Time]time.Duration{
			time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC): 97 * time.Minute,
			time.Date(2045, 1, 1, 0, 0, 0, 0, time.UTC): 397 * time.Minute,
		} {
			for at := start; at.Before(start.AddDate(1, 0, 0)); at = at.Add(step) {
				got := w.Next(at)
				if got.Before(at) || !inside(got) {
					t.Fatalf("%+v: Next(%s) = %s: not inside the window", tc, at, got)
				}
				for m := at; m.Before(got); m = m.Add(time.Minute) {
					if inside(m) {
						t.Fatalf("%+v: Next(%s) = %s, but %s is inside the window", tc, at, got, m.In(w.Location()))
					}
				}
			}
		}
	}
}

// Where clocks go back, 01:10 happens twice: the second time (EST) is 20 minutes before the
// window 01:30-03:00 opens again.
func TestWindowNextRepeatedHour(t *testing.T) {
	w := mustWindow(t, "01:30", "03:00", "America/New_York")
	at := time.Date(2026, 11, 1, 6, 10, 0, 0, time.UTC) // 01:10 EST
	if got, want := w.Next(at), time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next(01:10 EST) = %s, want 01:30 EST", got)
	}
}

func TestNewWindow(t *testing.T) {
	w, err := NewWindow(paygatev1.ChargingWindow{})
	if err != nil {
		t.Fatal(err)
	}
	if w.start != 8*60 || w.end != 20*60 || w.loc.String() != "Africa/Dar_es_Salaam" {
		t.Errorf("defaults: %+v", w)
	}
	for _, bad := range []paygatev1.ChargingWindow{
		{Start: "20:00", End: "08:00"}, // crosses midnight
		{Start: "08:00", End: "08:00"},
		{Start: "24:00", End: "24:00"},
		{Start: "8:00"},
		{Start: "08:60"},
		{End: "24:01"},
		{End: "25:00"},
		{Start: "+1:00"},
		{Start: "-1:00"},
		{Start: "08-00"},
		{TimeZone: "Mars/Olympus_Mons"},
		{TimeZone: "Local"},
		{TimeZone: "../../etc/passwd"},
	} {
		if _, err := NewWindow(bad); err == nil {
			t.Errorf("NewWindow(%+v) accepted", bad)
		}
	}
	for _, zone := range []string{"UTC", "Africa/Nairobi", "America/Argentina/Buenos_Aires", "Etc/GMT+3"} {
		if _, err := NewWindow(paygatev1.ChargingWindow{TimeZone: zone}); err != nil {
			t.Errorf("zone %s: %v", zone, err)
		}
	}
}
