// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import "time"

// localTime is the instant a wall clock in loc shows y-m-d hh:mm:ss.ns. The fields may overflow
// (day 32, hour 24) and are normalised as time.Date does. Around a daylight-saving change it
// decides what time.Date leaves open:
//
//   - a wall time the change skips (clocks jump from 02:00 to 03:00; 02:30 does not exist) is
//     moved later by the length of the gap: 02:30 is read with the offset before the change,
//     and shows as 03:30;
//   - a wall time that happens twice (clocks go back from 02:00 to 01:00; 01:30 happens twice)
//     is its first occurrence.
//
// So a charging window never opens before its start on the customer's clock, and a period
// never starts before its anchor's time of day.
func localTime(y int, m time.Month, d, hh, mm, ss, ns int, loc *time.Location) time.Time {
	wall := time.Date(y, m, d, hh, mm, ss, ns, time.UTC) // the normalised wall clock, read as UTC
	// The offsets a little before and a little after: zones are at most 14 hours off UTC, so
	// a change that concerns this wall time lies between these two instants.
	_, before := wall.Add(-15 * time.Hour).In(loc).Zone()
	_, after := wall.Add(15 * time.Hour).In(loc).Zone()
	first := wall.Add(-time.Duration(before) * time.Second).In(loc)
	if shows(first, wall) || before == after {
		return first // the wall time's only or first occurrence, or no change nearby
	}
	second := wall.Add(-time.Duration(after) * time.Second).In(loc)
	if shows(second, wall) {
		return second
	}
	return first // skipped by the change: read with the offset before it
}

// shows reports whether instant t, on its location's clock, shows wall (a wall clock read as UTC).
func shows(t, wall time.Time) bool {
	y, m, d := t.Date()
	hh, mm, ss := t.Clock()
	return y == wall.Year() && m == wall.Month() && d == wall.Day() &&
		hh == wall.Hour() && mm == wall.Minute() && ss == wall.Second() && t.Nanosecond() == wall.Nanosecond()
}
