// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import (
	"testing"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

func TestNewDunningDefaults(t *testing.T) {
	d, err := NewDunning(paygatev1.DunningPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if d.MaxFailures() != 4 {
		t.Errorf("maxFailures = %d, want 4", d.MaxFailures())
	}
	for failures, want := range map[int32]int32{1: 1, 2: 3, 3: 5, 4: 5, 9: 5} {
		if got := d.RetryAfterDays(failures); got != want {
			t.Errorf("RetryAfterDays(%d) = %d, want %d", failures, got, want)
		}
	}
	// The defaults are copied, not shared.
	d.retryAfterDays[0] = 99
	if paygatev1.DefaultRetryAfterDays[0] != 1 {
		t.Error("NewDunning shares the default list")
	}
}

func TestNewDunningRefuses(t *testing.T) {
	for _, p := range []paygatev1.DunningPolicy{
		{RetryAfterDays: []int32{0}},
		{RetryAfterDays: []int32{1, 31}},
		{RetryAfterDays: []int32{-1}},
		{RetryAfterDays: make([]int32, 11)},
		{MaxFailures: -1},
		{MaxFailures: 11},
	} {
		if _, err := NewDunning(p); err == nil {
			t.Errorf("NewDunning(%+v) accepted", p)
		}
	}
}

func TestDunningRetry(t *testing.T) {
	loc := mustZone(t, dar)
	failedAt := time.Date(2026, 3, 1, 9, 30, 0, 0, loc)
	tests := []struct {
		name     string
		policy   paygatev1.DunningPolicy
		failures int32
		want     time.Time // zero: suspend
	}{
		{"default, first failure: a day later", paygatev1.DunningPolicy{}, 1, failedAt.AddDate(0, 0, 1)},
		{"default, second failure: 3 days later", paygatev1.DunningPolicy{}, 2, failedAt.AddDate(0, 0, 3)},
		{"default, third failure: 5 days later", paygatev1.DunningPolicy{}, 3, failedAt.AddDate(0, 0, 5)},
		{"default, fourth failure: suspended", paygatev1.DunningPolicy{}, 4, time.Time{}},
		{"default, beyond: suspended", paygatev1.DunningPolicy{}, 7, time.Time{}},
		{"no retries", paygatev1.DunningPolicy{MaxFailures: 1}, 1, time.Time{}},
		{"list used up: last entry repeats", paygatev1.DunningPolicy{RetryAfterDays: []int32{2}, MaxFailures: 5}, 4, failedAt.AddDate(0, 0, 2)},
		{"unused entries", paygatev1.DunningPolicy{RetryAfterDays: []int32{1, 2, 3, 4}, MaxFailures: 2}, 2, time.Time{}},
		{"zero failures read as one", paygatev1.DunningPolicy{}, 0, failedAt.AddDate(0, 0, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDunning(tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			got, suspend := d.Retry(tt.failures, failedAt, loc)
			if suspend != tt.want.IsZero() || !got.Equal(tt.want) {
				t.Errorf("Retry(%d) = %s, suspend %v; want %s", tt.failures, got, suspend, tt.want)
			}
		})
	}
}

// Retries are calendar days on the customer's clock: across a daylight-saving change a retry is
// 23 or 25 hours later, at the same local time.
func TestDunningRetryCalendarDays(t *testing.T) {
	loc := mustZone(t, "America/New_York")
	d, _ := NewDunning(paygatev1.DunningPolicy{})
	failedAt := time.Date(2026, 3, 7, 10, 0, 0, 0, loc)
	got, _ := d.Retry(1, failedAt, loc)
	if want := time.Date(2026, 3, 8, 10, 0, 0, 0, loc); !got.Equal(want) || got.Sub(failedAt) != 23*time.Hour {
		t.Errorf("got %s, want %s (23 hours later)", got, want)
	}
}

func TestScheduleAfterFailure(t *testing.T) {
	s, err := NewSchedule(paygatev1.IntervalMonth, 1, paygatev1.ChargingWindow{}, paygatev1.DunningPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		failures int32
		failedAt string
		want     string // empty: suspend
	}{
		{"a day later, inside the window", 1, "2026-03-01 09:30:00", "2026-03-02 09:30:00"},
		{"failed in the evening: retried next morning after the wait", 1, "2026-03-01 19:59:00", "2026-03-02 19:59:00"},
		{"a first charge at night: the retry waits for 08:00", 1, "2026-03-01 23:10:00", "2026-03-03 08:00:00"},
		{"early morning: the retry waits for 08:00", 2, "2026-03-01 06:00:00", "2026-03-04 08:00:00"},
		{"at the end of the window: next morning", 3, "2026-03-01 20:00:00", "2026-03-07 08:00:00"},
		{"the fourth failure suspends", 4, "2026-03-01 12:00:00", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, suspend := s.AfterFailure(tt.failures, local(t, dar, tt.failedAt))
			if tt.want == "" {
				if !suspend || !got.IsZero() {
					t.Errorf("got %s, suspend %v; want suspend", got, suspend)
				}
				return
			}
			if want := local(t, dar, tt.want); suspend || !got.Equal(want) {
				t.Errorf("got %s, suspend %v; want %s", got, suspend, want)
			}
		})
	}
}

// A subscription whose charges all fail walks the whole schedule, the first charge included, and
// ends suspended: 4 charges over 9 days with the defaults, each retry inside the window.
func TestDunningWalkToSuspension(t *testing.T) {
	s, err := NewSchedule(paygatev1.IntervalMonth, 1, paygatev1.ChargingWindow{}, paygatev1.DunningPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	state := State{Phase: paygatev1.SubscriptionPending}
	at := local(t, dar, "2026-03-01 21:00:00") // subscribed at night: the first charge goes out at once
	var charges []time.Time
	for {
		charges = append(charges, at)
		var err error
		if state, err = state.Next(ChargeFailed, s.Dunning); err != nil {
			t.Fatal(err)
		}
		next, suspend := s.AfterFailure(state.ConsecutiveFailures, at.Add(time.Minute)) // fails a minute later
		if suspend {
			break
		}
		if !s.Window.Contains(next) {
			t.Fatalf("retry at %s is outside the window", next)
		}
		at = next
	}
	want := []string{"2026-03-01 21:00:00", "2026-03-03 08:00:00", "2026-03-06 08:01:00", "2026-03-11 08:02:00"}
	if len(charges) != len(want) {
		t.Fatalf("%d charges %v, want %d", len(charges), charges, len(want))
	}
	for i, w := range want {
		if !charges[i].Equal(local(t, dar, w)) {
			t.Errorf("charge %d at %s, want %s", i+1, charges[i], w)
		}
	}
	if state.Phase != paygatev1.SubscriptionSuspended || state.ConsecutiveFailures != 4 {
		t.Errorf("ends %+v, want suspended after 4 failures", state)
	}
}

func TestScheduleRenewalChargeAt(t *testing.T) {
	s, err := PlanSchedule(&paygatev1.BillingPlanSpec{Interval: paygatev1.IntervalMonth})
	if err != nil {
		t.Fatal(err)
	}
	anchor := local(t, dar, "2026-01-31 21:30:00") // subscribed in the evening
	p := s.Periods.Period(anchor, 2)
	if got, want := s.RenewalChargeAt(p), local(t, dar, "2026-03-01 08:00:00"); !got.Equal(want) {
		t.Errorf("renewal of period 2 (from %s) charged %s, want %s", p.Start, got, want)
	}
	anchor = local(t, dar, "2026-01-31 10:00:00")
	p = s.Periods.Period(anchor, 2)
	if got := s.RenewalChargeAt(p); !got.Equal(p.Start) {
		t.Errorf("renewal inside the window charged %s, want the period start %s", got, p.Start)
	}
}

func TestNewScheduleRefuses(t *testing.T) {
	for name, spec := range map[string]paygatev1.BillingPlanSpec{
		"unknown zone":     {Interval: paygatev1.IntervalMonth, ChargingWindow: paygatev1.ChargingWindow{TimeZone: "Africa/Atlantis"}},
		"inverted window":  {Interval: paygatev1.IntervalMonth, ChargingWindow: paygatev1.ChargingWindow{Start: "21:00", End: "06:00"}},
		"bad dunning":      {Interval: paygatev1.IntervalMonth, Dunning: paygatev1.DunningPolicy{MaxFailures: 20}},
		"13 months":        {Interval: paygatev1.IntervalMonth, IntervalCount: 13},
		"unknown interval": {Interval: "quarter"},
	} {
		if _, err := PlanSchedule(&spec); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestSubscriptionClock(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	if got := SubscriptionTime(now, 0); !got.Equal(now) {
		t.Errorf("no offset: %s", got)
	}
	sub := SubscriptionTime(now, 86400*31)
	if want := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC); !sub.Equal(want) {
		t.Errorf("31 days ahead: %s, want %s", sub, want)
	}
	if back := RealTime(sub, 86400*31); !back.Equal(now) {
		t.Errorf("RealTime(SubscriptionTime(now)) = %s, want %s", back, now)
	}
}
