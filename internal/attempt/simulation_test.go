// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package attempt

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/provider"
)

// The engine's simulation (docs/reliability.md, The attempt engine's simulation): seeded random
// schedules drive Decide through a thin shell like the controllers', against a simulated provider
// that accepts, rejects, times out, answers "not found" for a while after accepting, stays
// ambiguous, forgets, and with or without de-duplication; the shell crashes between any two
// steps (what it had not stored is lost), the clock jumps past deadlines, and an operator writes
// verdicts at any moment. After every step the invariants are checked. A failing seed prints
// itself and its steps; replay it with `make simulate SEED=n` (go test ./internal/attempt -run
// TestSimulation -args -seed=n -v).
var (
	simSeed  = flag.Uint64("seed", 0, "replay this seed of the attempt simulation only")
	simSeeds = flag.Int("seeds", 2000, "how many seeds the attempt simulation runs")
	simSteps = flag.Int("steps", 120, "steps per seed")
)

func TestSimulation(t *testing.T) {
	if *simSeed != 0 {
		w := runSeed(*simSeed, *simSteps)
		for _, l := range w.log {
			t.Log(l)
		}
		if w.violation != "" {
			t.Fatalf("seed %d: %s", *simSeed, w.violation)
		}
		t.Logf("seed %d: %d steps, %d faults, %d invariant checks", *simSeed, w.steps, w.faults, w.checks)
		return
	}
	var steps, faults, checks int
	for i := 1; i <= *simSeeds; i++ {
		seed := uint64(i)
		w := runSeed(seed, *simSteps)
		steps, faults, checks = steps+w.steps, faults+w.faults, checks+w.checks
		if w.violation != "" {
			t.Fatalf("seed %d violates an invariant: %s\nreplay: make simulate SEED=%d\n%s", seed, w.violation, seed, strings.Join(w.log, "\n"))
		}
	}
	t.Logf("%d seeds, %d steps, %d faults injected, %d invariant checks", *simSeeds, steps, faults, checks)
}

// simOp is the provider's record of one reference.
type simOp struct {
	sends      int
	visibleAt  time.Time // status queries answer "not found" before it
	settleAt   time.Time
	final      provider.Status // what it settles to
	code       string
	ambiguous  bool // answers AMBIGUOUS until settleAt
	forgotten  bool
	acceptedAt time.Time
}

// simWorld is one seed's world: the provider, the stored object, the clock, the operator.
type simWorld struct {
	rng          *rand.Rand
	now          time.Time
	deadline     time.Time // zero: a disbursement
	dedup        bool
	op           *simOp // nil until the provider received a send
	stored       Record
	ended        EndedAs
	verdict      *Verdict
	verdictAt    time.Time // when the operator checked with the provider
	looked       *Verdict
	lookedAt     time.Time
	asked        bool
	credited     int // the object's success counted (money counted in the balance)
	lateFlagged  bool
	lateFailure  bool
	lastSendAt   time.Time
	steps        int
	faults       int
	checks       int
	violation    string
	log          []string
	outageUntil  time.Time
	watchEndsAt  time.Time
	answerLoss   float64
	forgetChance float64
}

func runSeed(seed uint64, steps int) *simWorld {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	w := &simWorld{rng: rng, now: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC), dedup: rng.IntN(2) == 0}
	if rng.IntN(3) > 0 {
		w.deadline = w.now.Add(time.Duration(1+rng.IntN(30)) * time.Minute)
	}
	w.answerLoss = []float64{0, 0.1, 0.4}[rng.IntN(3)]
	w.forgetChance = []float64{0, 0, 0.05}[rng.IntN(3)]
	w.logf("seed %d: dedup=%v deadline=%v answerLoss=%.2f forget=%.2f", seed, w.dedup, !w.deadline.IsZero(), w.answerLoss, w.forgetChance)
	for i := 0; i < steps && w.violation == ""; i++ {
		w.step()
	}
	if w.violation == "" {
		w.settle()
	}
	return w
}

func (w *simWorld) logf(format string, args ...any) {
	w.log = append(w.log, fmt.Sprintf("%s ", w.now.Format("15:04:05"))+fmt.Sprintf(format, args...))
}

func (w *simWorld) fail(format string, args ...any) {
	if w.violation == "" {
		w.violation = fmt.Sprintf(format, args...)
		w.logf("VIOLATION: %s", w.violation)
	}
}

// step is one thing happening: a pass of the shell, a clock jump, a verdict, an outage.
func (w *simWorld) step() {
	w.steps++
	switch n := w.rng.IntN(100); {
	case n < 55:
		w.pass()
	case n < 75:
		d := time.Duration(w.rng.IntN(120)) * time.Second
		if w.rng.IntN(10) == 0 {
			d = time.Duration(w.rng.IntN(100)) * time.Hour // past deadlines and watch windows
			w.faults++
		}
		w.now = w.now.Add(d)
		w.logf("clock +%s", d)
	case n < 82:
		w.faults++
		w.outageUntil = w.now.Add(time.Duration(w.rng.IntN(3600)) * time.Second)
		w.logf("provider down until %s", w.outageUntil.Format("15:04:05"))
	case n < 85:
		if w.stored.Phase != "" && w.ended == NotEnded && w.looked == nil {
			w.faults++
			// An operator checks with the provider, noting the send the object shows; they write
			// their verdict later (next case): sends may happen in between.
			moved := w.op != nil && !w.op.forgotten && w.op.final == provider.StatusSuccess && !w.now.Before(w.op.settleAt)
			send := w.stored.SendCount()
			if w.rng.IntN(2) == 0 {
				send = 0
			}
			w.looked, w.lookedAt = &Verdict{Succeeded: moved, Send: send}, w.now
			w.logf("operator checks: moved=%v send=%d", moved, send)
		}
	case n < 88:
		if w.looked != nil && w.verdict == nil {
			w.verdict, w.verdictAt = w.looked, w.lookedAt
			w.logf("operator writes the verdict succeeded=%v send=%d", w.verdict.Succeeded, w.verdict.Send)
		}
	case n < 92:
		if w.stored.Phase != "" {
			w.asked = true
		}
	default:
		w.pass() // a callback: a pass with a hint
	}
	w.check()
}

// pass is the controllers' shell around Decide, crashing at random between its steps.
func (w *simWorld) pass() {
	crashAt := -1
	if w.rng.IntN(5) == 0 {
		crashAt = w.rng.IntN(4)
		w.faults++
	}
	in := Input{Record: w.stored, Start: true, Ended: w.ended, Now: w.now, Deadline: w.deadline, Deduplicates: w.dedup,
		Verdict: w.verdict, OperatorAsked: w.asked, Hint: w.rng.IntN(8) == 0, Poll: 2 * time.Second, Watch: 72 * time.Hour}
	d := decide(in)
	for i := 0; i < 3 && d.Action != ActionNone; i++ {
		if crashAt == i {
			w.logf("crash before %s", d.Action)
			return
		}
		var ans Answer
		switch d.Action {
		case ActionSend:
			w.stored = d.Record // written ahead
			ans = w.send()
		case ActionQuery:
			ans = w.query()
		}
		in.Record, in.Answer = d.Record, &ans
		d = decide(in)
		w.logf("%s answered %+v -> phase %s outcome %q (%s)", ans.To, ans, d.Record.Phase, d.Outcome, d.Why)
	}
	if crashAt == 3 {
		w.logf("crash before the final write")
		return
	}
	w.apply(d)
}

// apply stores the pass's record and outcome, as the controllers' final status write does. A
// deferrable record is left as written ahead half the time (the payments' shell leaves it unless
// the pass learned something else).
func (w *simWorld) apply(d Decision) {
	if d.Deferrable && w.rng.IntN(2) == 0 {
		w.logf("the acceptance is not stored: the attempt stays %s", w.stored.Phase)
		if d.Record.Phase != paygatev1.AttemptPending || w.stored.Phase != paygatev1.AttemptInitiating || d.Outcome != OutcomeNone {
			w.fail("a deferrable decision that is more than an accepted send: %+v over %+v", d, w.stored)
		}
		return
	}
	w.stored = d.Record
	if d.Record.Watched(w.now) && w.watchEndsAt.IsZero() {
		w.watchEndsAt = d.Record.WatchUntil
	}
	switch d.Outcome {
	case OutcomeSucceeded, OutcomeResolvedSuccess:
		w.ended = EndedSucceeded
		w.credited++
		if d.Outcome == OutcomeResolvedSuccess {
			w.checkVerdict()
		}
	case OutcomeFailed, OutcomeExpired, OutcomeResolvedFailed:
		w.ended = EndedFailed
		if d.Outcome == OutcomeResolvedFailed {
			w.checkVerdict()
		}
		if !d.Record.Final() && d.Record.Phase != "" && !d.Record.Watched(w.now) {
			w.fail("the object ended (%s) without a final answer and its attempt is not watched", d.Outcome)
		}
	case OutcomeLateSuccess:
		w.lateFlagged = true
	case OutcomeLateFailure:
		w.lateFailure = true
	}
}

func (w *simWorld) checkVerdict() {
	w.checks++
	if w.verdict == nil {
		w.fail("a verdict outcome without a verdict")
		return
	}
	if w.lastSendAt.After(w.verdictAt) {
		w.fail("a verdict from a check at %s overrode a send at %s", w.verdictAt.Format("15:04:05"), w.lastSendAt.Format("15:04:05"))
	}
}

func (w *simWorld) down() bool { return w.now.Before(w.outageUntil) }

// send is the provider receiving (or not) a send.
func (w *simWorld) send() Answer {
	w.checks++
	if !w.deadline.IsZero() && !w.now.Before(w.deadline) {
		w.fail("sent at %s, at or after the deadline %s", w.now.Format("15:04:05"), w.deadline.Format("15:04:05"))
	}
	if w.ended != NotEnded {
		w.fail("sent for an object that ended")
	}
	w.lastSendAt = w.now
	if w.down() && w.rng.IntN(2) == 0 {
		return Answer{To: ActionSend, Unreachable: true} // never arrived
	}
	if w.op == nil {
		w.op = w.newOp()
	}
	w.op.sends++
	if !w.dedup && w.op.sends > 1 {
		w.fail("the provider, which does not de-duplicate, received %d sends of one attempt", w.op.sends)
	}
	if w.rng.Float64() < w.answerLoss || w.down() {
		w.faults++
		return Answer{To: ActionSend, Unreachable: true} // arrived, answer lost
	}
	if w.op.final == provider.StatusFailed && w.op.settleAt.Equal(w.op.acceptedAt) {
		return Answer{To: ActionSend, Status: provider.StatusFailed, Code: w.op.code}
	}
	return Answer{To: ActionSend, Status: provider.StatusPending}
}

func (w *simWorld) newOp() *simOp {
	op := &simOp{acceptedAt: w.now, final: provider.StatusSuccess}
	op.visibleAt = w.now
	if w.rng.IntN(3) == 0 {
		op.visibleAt = w.now.Add(time.Duration(w.rng.IntN(90)) * time.Second) // NOT_FOUND for a while
	}
	op.settleAt = w.now.Add(time.Duration(w.rng.IntN(3600)) * time.Second)
	switch w.rng.IntN(4) {
	case 0:
		op.final, op.code = provider.StatusFailed, string(paygatev1.FailureInsufficientFunds)
		if w.rng.IntN(2) == 0 {
			op.settleAt = w.now // rejected at once
		}
	case 1:
		op.ambiguous = true
	}
	if w.rng.Float64() < w.forgetChance {
		op.forgotten = true
	}
	return op
}

// query is a status query.
func (w *simWorld) query() Answer {
	if w.down() {
		return Answer{To: ActionQuery, Unreachable: true}
	}
	op := w.op
	if op == nil || op.forgotten || w.now.Before(op.visibleAt) {
		return Answer{To: ActionQuery, NotFound: true}
	}
	if w.now.Before(op.settleAt) {
		if op.ambiguous {
			return Answer{To: ActionQuery, Status: provider.StatusAmbiguous}
		}
		return Answer{To: ActionQuery, Status: provider.StatusPending}
	}
	return Answer{To: ActionQuery, Status: op.final, Code: op.code}
}

// check is the invariants that hold after every step.
func (w *simWorld) check() {
	w.checks++
	if w.credited > 1 {
		w.fail("the object's success was counted %d times", w.credited)
	}
	if w.ended == EndedSucceeded && w.verdict == nil {
		if w.op == nil || w.op.final != provider.StatusSuccess || w.now.Before(w.op.settleAt) {
			w.fail("the object succeeded without the provider moving money")
		}
	}
	if w.ended != NotEnded && w.stored.Phase != "" && !w.stored.Final() && w.stored.WatchUntil.IsZero() && w.watchEndsAt.After(w.now) {
		w.fail("an attempt that ended without a final answer stopped being watched before its window closed")
	}
}

// settle runs quiet passes after the schedule (no faults, the provider up) across the watch
// window and checks that what the provider did is what the object says, or is flagged.
func (w *simWorld) settle() {
	w.outageUntil, w.answerLoss = time.Time{}, 0
	// What the engine can still learn: an object in progress, or an attempt still watched. An
	// attempt whose window closed during an outage is the operator's (OutcomeWatchEnded).
	open := w.ended == NotEnded || w.stored.Watched(w.now)
	for i := 0; i < 40 && w.violation == ""; i++ {
		w.now = w.now.Add(30 * time.Minute)
		in := Input{Record: w.stored, Start: true, Ended: w.ended, Now: w.now, Deadline: w.deadline, Deduplicates: w.dedup,
			Verdict: w.verdict, OperatorAsked: w.asked, Poll: 2 * time.Second, Watch: 72 * time.Hour}
		d := decide(in)
		for j := 0; j < 3 && d.Action != ActionNone; j++ {
			var ans Answer
			if d.Action == ActionSend {
				w.stored = d.Record
				ans = w.send()
			} else {
				ans = w.query()
			}
			in.Record, in.Answer = d.Record, &ans
			d = decide(in)
		}
		w.apply(d)
		w.check()
	}
	if w.violation != "" || w.op == nil || w.op.forgotten || !open {
		return
	}
	w.checks++
	moved := w.op.final == provider.StatusSuccess && !w.now.Before(w.op.settleAt)
	switch {
	case moved && w.ended == EndedFailed && !w.lateFlagged && w.stored.Phase != paygatev1.AttemptFailed:
		w.fail("the provider moved money for a failed object and no late settlement was found (attempt %s)", w.stored.Phase)
	case !moved && w.ended == EndedSucceeded && w.verdict == nil:
		w.fail("the object succeeded but the provider moved no money")
	case !moved && w.ended == EndedSucceeded && w.stored.Phase == paygatev1.AttemptFailed && !w.lateFailure:
		w.fail("an operator resolved the object as paid, the provider failed it, and nothing flagged it")
	}
}

// brokenRule, set by TestSimulationFindsBrokenRules, changes what the shell tells the engine.
var brokenRule func(*Input)

func decide(in Input) Decision {
	if brokenRule != nil {
		brokenRule(&in)
	}
	return Decide(in)
}

// TestSimulationFindsBrokenRules shows the simulation can fail: with the deadline rule or the
// de-duplication rule switched off it finds a violating seed.
func TestSimulationFindsBrokenRules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		breakIt func(*Input)
	}{
		{"re-send without de-duplication", func(in *Input) { in.Deduplicates = true }},
		{"no deadline", func(in *Input) { in.Deadline = time.Time{} }},
		{"a verdict for whatever send is current", func(in *Input) {
			if in.Verdict != nil {
				v := *in.Verdict
				v.Send = in.Record.SendCount()
				in.Verdict = &v
			}
		}},
		{"no watch after the object ended", func(in *Input) {
			if in.Ended != NotEnded {
				in.Record.WatchUntil = time.Time{}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			brokenRule = tc.breakIt
			defer func() { brokenRule = nil }()
			for seed := uint64(1); seed <= 2000; seed++ {
				if w := runSeed(seed, 120); w.violation != "" {
					t.Logf("seed %d: %s", seed, w.violation)
					return
				}
			}
			t.Fatal("no seed found the broken rule")
		})
	}
}
