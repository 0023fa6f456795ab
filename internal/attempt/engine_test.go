// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package attempt

import (
	"testing"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/provider"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	initiating := Record{Phase: paygatev1.AttemptInitiating, StartedAt: now.Add(-time.Hour), Sends: 1, LastSentAt: now.Add(-time.Hour)}
	pending := initiating
	pending.Phase = paygatev1.AttemptPending
	notFound := &Answer{To: ActionQuery, NotFound: true}
	success := &Answer{To: ActionQuery, Status: provider.StatusSuccess}
	down := &Answer{To: ActionQuery, Unreachable: true}
	watched := pending
	watched.WatchUntil = now.Add(time.Hour)
	resent := initiating
	resent.Sends = 2

	for _, tc := range []struct {
		name        string
		in          Input
		wantAction  Action
		wantOutcome Outcome
		wantPhase   paygatev1.AttemptPhase
		wantWatched bool
	}{
		{"first send, written ahead", Input{Start: true, Now: now, Deadline: now.Add(time.Minute)}, ActionSend, OutcomeNone, paygatev1.AttemptInitiating, false},
		{"nothing sent at the deadline", Input{Start: true, Now: now, Deadline: now}, ActionNone, OutcomeExpired, "", false},
		{"an attempt in flight is asked about", Input{Record: pending, Now: now}, ActionQuery, OutcomeNone, paygatev1.AttemptPending, false},
		{"not found: re-sent where the provider de-duplicates", Input{Record: initiating, Now: now, Deduplicates: true, Answer: notFound}, ActionSend, OutcomeNone, paygatev1.AttemptInitiating, false},
		{"hole 3: not found: never re-sent where it does not", Input{Record: initiating, Now: now, Answer: notFound}, ActionNone, OutcomeNone, paygatev1.AttemptInitiating, false},
		{"hole 2: not found after the deadline: nothing sent, expired, watched",
			Input{Record: initiating, Now: now, Deadline: now.Add(-time.Minute), Deduplicates: true, Answer: notFound}, ActionNone, OutcomeExpired, paygatev1.AttemptInitiating, true},
		{"the deadline ends a pending attempt's object, which stays watched",
			Input{Record: pending, Now: now, Deadline: now, Answer: down}, ActionNone, OutcomeExpired, paygatev1.AttemptPending, true},
		{"hole 1: a verdict's pass sends nothing and resolves",
			Input{Record: initiating, Now: now, Deduplicates: true, OperatorAsked: true, Verdict: &Verdict{}, Answer: notFound}, ActionNone, OutcomeResolvedFailed, paygatev1.AttemptInitiating, true},
		{"a final answer wins over a verdict",
			Input{Record: pending, Now: now, Verdict: &Verdict{}, Answer: success}, ActionNone, OutcomeSucceeded, paygatev1.AttemptSucceeded, false},
		{"a verdict for the first send does not resolve a re-sent attempt",
			Input{Record: resent, Now: now, OperatorAsked: true, Verdict: &Verdict{Succeeded: true}, Answer: down}, ActionNone, OutcomeNone, paygatev1.AttemptInitiating, false},
		{"a verdict naming the current send resolves it",
			Input{Record: resent, Now: now, OperatorAsked: true, Verdict: &Verdict{Succeeded: true, Send: 2}, Answer: down}, ActionNone, OutcomeResolvedSuccess, paygatev1.AttemptInitiating, true},
		{"an unacknowledged attempt is resolved only once the operator was asked",
			Input{Record: initiating, Now: now, Verdict: &Verdict{}, Answer: down}, ActionNone, OutcomeNone, paygatev1.AttemptInitiating, false},
		{"hole 5: a watched attempt is asked about", Input{Record: watched, Ended: EndedFailed, Now: now}, ActionQuery, OutcomeNone, paygatev1.AttemptPending, true},
		{"hole 5: a late success is found", Input{Record: watched, Ended: EndedFailed, Now: now, Answer: success}, ActionNone, OutcomeLateSuccess, paygatev1.AttemptSucceeded, false},
		{"the watch ends", Input{Record: watched, Ended: EndedFailed, Now: now.Add(2 * time.Hour)}, ActionNone, OutcomeWatchEnded, paygatev1.AttemptPending, false},
		{"a callback after the watch: asked", Input{Record: pending, Ended: EndedFailed, Now: now, Hint: true}, ActionQuery, OutcomeNone, paygatev1.AttemptPending, false},
		{"an ended object sends nothing", Input{Record: initiating, Ended: EndedFailed, Now: now, Deduplicates: true, Answer: notFound}, ActionNone, OutcomeNone, paygatev1.AttemptInitiating, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			if d.Action != tc.wantAction || d.Outcome != tc.wantOutcome || d.Record.Phase != tc.wantPhase || d.Record.Watched(tc.in.Now) != tc.wantWatched {
				t.Fatalf("Decide = action %q outcome %q phase %q watched %v (%s); want %q %q %q %v",
					d.Action, d.Outcome, d.Record.Phase, d.Record.Watched(tc.in.Now), d.Why, tc.wantAction, tc.wantOutcome, tc.wantPhase, tc.wantWatched)
			}
		})
	}
}

func TestWatchInterval(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		since time.Duration
		want  time.Duration
	}{
		{time.Second, 2 * time.Second},
		{8 * time.Minute, time.Minute},
		{24 * time.Hour, time.Hour},
		{DefaultWatch - time.Minute, time.Minute}, // never past the window's end
	} {
		r := Record{Phase: paygatev1.AttemptPending, WatchUntil: now.Add(DefaultWatch - tc.since)}
		if got := WatchInterval(r, now, DefaultWatch, 2*time.Second); got != tc.want {
			t.Errorf("watched for %s: interval %s, want %s", tc.since, got, tc.want)
		}
	}
}
