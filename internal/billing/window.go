// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import (
	"fmt"
	"strconv"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Window is a plan's charging window: the part of each local day, in the plan's time zone, in
// which a scheduled charge may prompt the customer (docs/billing.md, Charging window). It runs
// from start (included) to end (excluded) and never crosses midnight.
type Window struct {
	start, end int // minutes after local midnight; 0 <= start < end <= 24*60
	loc        *time.Location
}

// NewWindow reads a plan's charging window, its empty fields taking the defaults (08:00, 20:00,
// Africa/Dar_es_Salaam). It fails for a malformed time, a start not before the end, or a time
// zone the zone database does not know.
func NewWindow(w paygatev1.ChargingWindow) (Window, error) {
	startText, endText, zone := w.Start, w.End, w.TimeZone
	if startText == "" {
		startText = paygatev1.DefaultWindowStart
	}
	if endText == "" {
		endText = paygatev1.DefaultWindowEnd
	}
	if zone == "" {
		zone = paygatev1.DefaultTimeZone
	}
	start, ok := parseClock(startText)
	if !ok || start == 24*60 {
		return Window{}, fmt.Errorf("chargingWindow.start %q is not a time of day from 00:00 to 23:59", startText)
	}
	end, ok := parseClock(endText)
	if !ok {
		return Window{}, fmt.Errorf("chargingWindow.end %q is not a time of day from 00:00 to 24:00", endText)
	}
	if start >= end {
		return Window{}, fmt.Errorf("chargingWindow.start %s is not before chargingWindow.end %s: a window cannot cross midnight", startText, endText)
	}
	loc, err := LoadTimeZone(zone)
	if err != nil {
		return Window{}, err
	}
	return Window{start: start, end: end, loc: loc}, nil
}

// LoadTimeZone loads an IANA time zone by name ("Africa/Dar_es_Salaam"). The zone database is
// built into the binary. "Local" and the empty name are refused: a plan's zone never depends on
// the machine it runs on.
func LoadTimeZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("time zone %q: name an IANA time zone such as %s", name, paygatev1.DefaultTimeZone)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: name an IANA time zone such as %s", name, paygatev1.DefaultTimeZone)
	}
	return loc, nil
}

// parseClock reads "HH:MM" (00:00 to 24:00) as minutes after midnight.
func parseClock(s string) (int, bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	h, err1 := strconv.Atoi(s[:2])
	m, err2 := strconv.Atoi(s[3:])
	if err1 != nil || err2 != nil || s[0] == '+' || s[3] == '+' || h < 0 || m < 0 || m > 59 || h > 24 || (h == 24 && m != 0) {
		return 0, false
	}
	return h*60 + m, true
}

// Location is the window's time zone: the plan's time zone.
func (w Window) Location() *time.Location { return w.loc }

// Next is the earliest instant at or after t at which the customer's clock, in the window's
// zone, shows a time of day inside the window: t itself when the window is open at t, else the
// next opening. Daylight-saving changes are followed exactly: where clocks jump forward the
// window opens at the jump if it skipped the start (and is empty that day if it skipped all of
// it); where clocks go back, a time of day inside the window that happens twice is inside it
// both times.
func (w Window) Next(t time.Time) time.Time {
	// Between two changes of the zone's offset the local clock runs like a fixed-offset clock:
	// find the next opening on that clock, and move to the next stretch when it lies past it.
	// Offsets change a few times a year, so a handful of stretches is plenty.
	for i := 0; i < 16; i++ {
		_, offset := t.In(w.loc).Zone()
		_, stretchEnd := t.In(w.loc).ZoneBounds()
		next := w.nextOnFixedClock(t, time.FixedZone("", offset))
		if stretchEnd.IsZero() || next.Before(stretchEnd) {
			return next.In(w.loc)
		}
		t = stretchEnd
	}
	return t.In(w.loc) // unreachable for a real zone
}

// nextOnFixedClock is Next for a clock that never changes its offset.
func (w Window) nextOnFixedClock(t time.Time, clock *time.Location) time.Time {
	y, m, d := t.In(clock).Date()
	for i := 0; i < 2; i++ {
		open := time.Date(y, m, d+i, w.start/60, w.start%60, 0, 0, clock)
		close := time.Date(y, m, d+i, w.end/60, w.end%60, 0, 0, clock) // 24:00 is the next day's 00:00
		if t.Before(close) {
			if t.Before(open) {
				return open
			}
			return t
		}
	}
	return t // unreachable: t is before the next day's close
}

// Contains reports whether the window is open at t.
func (w Window) Contains(t time.Time) bool { return w.Next(t).Equal(t) }

// Closes is when the window open at t closes (for a t outside it: the close of its next opening).
// A charge sent at t must have ended by then: its prompt's deadline is no later.
func (w Window) Closes(t time.Time) time.Time {
	y, m, d := w.Next(t).In(w.loc).Date()
	return time.Date(y, m, d, w.end/60, w.end%60, 0, 0, w.loc) // 24:00 is the next day's 00:00
}
