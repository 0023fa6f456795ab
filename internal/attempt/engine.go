// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package attempt is the one engine for every provider call that can move money: a collection
// push (payments and subscription charges), a disbursement (payouts), and later refunds and
// reversals. Its rules are written once, here, and in docs/payments.md ("The attempt protocol"):
//
//   - Written ahead: a send is decided on a record, and the caller stores the record the
//     decision returns (under an optimistic lock) before it calls the provider.
//   - A collection has a deadline (the checkout's expiry; for a charge also the end of its charging
//     window). Nothing is sent at or after it; at the deadline the object ends for the merchant
//     (Expired) and an attempt that may have reached the provider stays watched.
//   - A send with the same reference is repeated only where the provider de-duplicates by our
//     reference, only before the deadline, only for an attempt the provider never acknowledged
//     (Initiating) and says it does not know, and never while an operator's verdict is pending.
//     Where the provider does not de-duplicate, a send that may have reached it is never repeated.
//   - An accepted send is recorded (phase Pending) by the caller at once, so no restart, leader
//     change or stale cache sends it again; except where the provider de-duplicates by our
//     reference (Decision.Deferrable): there the attempt may stay as written ahead (Initiating),
//     which is exactly the record of a send whose answer was lost, and the next pass asks.
//   - An operator's verdict names the send it resolves (the attempt's send count) and never
//     overrides a newer send; a decision that applies a verdict sends nothing.
//   - An attempt whose object ended without the provider's final answer stays watched for a
//     bounded window, asked with backoff; a late final answer that contradicts how the object
//     ended is reported (LateSuccess, LateFailure).
//
// Decide is a pure function: the record, the provider's answer, the clock, the deadline and the
// verdict in; the next record and at most one action out. The controllers are its thin shell
// (controllers/attempt_shell.go): they run the action, feed the answer back, store the record and
// announce what the decision says after the write sticks.
package attempt

import (
	"errors"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/provider"
)

// DefaultWatch is how long an attempt that ended without the provider's final answer is still
// asked about (the manager's --attempt-watch).
const DefaultWatch = 72 * time.Hour

// MaxWatchInterval bounds the backoff between two questions about a watched attempt.
const MaxWatchInterval = time.Hour

// CodeExpired is the failure code of a collection whose deadline passed.
const CodeExpired = string(paygatev1.FailureExpiredSession)

// Action is what the caller does next.
type Action string

const (
	// ActionNone: nothing to ask or send in this step.
	ActionNone Action = ""
	// ActionSend: store the decision's record (written ahead), then send to the provider with
	// the attempt's reference, and decide again with the answer.
	ActionSend Action = "Send"
	// ActionQuery: ask the provider about the attempt's reference, and decide again with the
	// answer.
	ActionQuery Action = "Query"
)

// Outcome is what the decision means for the object that owns the attempt.
type Outcome string

const (
	// OutcomeNone: the object goes on as it is.
	OutcomeNone Outcome = ""
	// OutcomeSucceeded: the provider's final answer is that money moved.
	OutcomeSucceeded Outcome = "Succeeded"
	// OutcomeFailed: the provider's final answer is that money did not move (Decision.Code says
	// why).
	OutcomeFailed Outcome = "Failed"
	// OutcomeExpired: the deadline passed without the provider's final answer, or before anything
	// was sent. The object ends for the merchant; the attempt, if any, is watched.
	OutcomeExpired Outcome = "Expired"
	// OutcomeResolvedSuccess and OutcomeResolvedFailed: an operator's verdict ended the object;
	// the attempt is watched.
	OutcomeResolvedSuccess Outcome = "ResolvedSuccess"
	OutcomeResolvedFailed  Outcome = "ResolvedFailed"
	// OutcomeLateSuccess: the object ended as failed, and the provider now reports the watched
	// attempt settled: money to refund or reconcile.
	OutcomeLateSuccess Outcome = "LateSuccess"
	// OutcomeLateFailure: the object ended as succeeded by an operator's verdict, and the provider
	// now reports the attempt failed.
	OutcomeLateFailure Outcome = "LateFailure"
	// OutcomeWatchEnded: a watched attempt's window closed without a final answer.
	OutcomeWatchEnded Outcome = "WatchEnded"
)

// Recall is what a status answer says about whether the provider still knows an attempt it
// accepted.
type Recall string

const (
	RecallUnchanged Recall = ""
	// RecallForgot: the provider accepted the attempt and now answers it does not know it.
	RecallForgot Recall = "Forgot"
	// RecallKnows: the provider answers about the attempt.
	RecallKnows Recall = "Knows"
)

// Record is an attempt as the caller stores it: the part of it the engine rules on. The zero
// Record (Phase "") is no attempt.
type Record struct {
	// Phase: Initiating (recorded; the provider may or may not have it), Pending (accepted),
	// Ambiguous, Succeeded or Failed (the provider's final answers).
	Phase paygatev1.AttemptPhase
	// Code says why a failed attempt failed.
	Code string
	// StartedAt is when the attempt was first recorded.
	StartedAt time.Time
	// Sends counts the sends written ahead (1 after the first; a re-send adds one). A record
	// stored before sends were counted has 0, which counts as 1.
	Sends int32
	// LastSentAt is when the newest send was written ahead.
	LastSentAt time.Time
	// WatchUntil, when after the clock, is the end of the window in which the attempt of an ended
	// object is still asked about.
	WatchUntil time.Time
}

// Final reports whether the provider gave its final answer.
func (r Record) Final() bool {
	return r.Phase == paygatev1.AttemptSucceeded || r.Phase == paygatev1.AttemptFailed
}

// Watched reports whether the attempt is still asked about at now.
func (r Record) Watched(now time.Time) bool { return !r.Final() && now.Before(r.WatchUntil) }

// SendCount is Sends, with a record from before sends were counted counting as one send.
func (r Record) SendCount() int32 {
	if r.Sends == 0 && r.Phase != "" {
		return 1
	}
	return r.Sends
}

// Verdict is an operator's resolution of an attempt without a final answer.
type Verdict struct {
	// Succeeded: the operator confirmed with the provider that money moved; otherwise it did not.
	Succeeded bool
	// Send is the send the verdict resolves (Record.Sends when the operator was asked); 0 names
	// the first send, and is refused once the attempt was sent again.
	Send int32
}

// Answer is what the provider said to the step's action.
type Answer struct {
	// To is the action answered: ActionSend or ActionQuery.
	To Action
	// Unreachable: no answer (an error, a timeout, a 5xx): the outcome is unknown.
	Unreachable bool
	// NotFound: a status query's "no operation with this reference".
	NotFound bool
	// Status and Code: the provider's answer otherwise.
	Status provider.Status
	Code   string
}

// AnswerOf turns a provider call's result into an Answer.
func AnswerOf(to Action, res provider.Result, err error) Answer {
	switch {
	case err == nil:
		return Answer{To: to, Status: res.Status, Code: string(res.Code)}
	case to == ActionQuery && errors.Is(err, provider.ErrNotFound):
		return Answer{To: to, NotFound: true}
	}
	return Answer{To: to, Unreachable: true}
}

// EndedAs is how the object that owns the attempt ended for the merchant.
type EndedAs string

const (
	// NotEnded: the object is still in progress.
	NotEnded EndedAs = ""
	// EndedSucceeded and EndedFailed: the object's terminal phase.
	EndedSucceeded EndedAs = "Succeeded"
	EndedFailed    EndedAs = "Failed"
)

// Input is everything a decision depends on.
type Input struct {
	// Record is the attempt as stored (or as the previous decision of this pass left it).
	Record Record
	// Start: the object wants a new attempt (a push request without an attempt; a reserved payout
	// without a disbursement). Only read while Record has no phase.
	Start bool
	// Ended is how the object ended, or NotEnded.
	Ended EndedAs
	// Now is the clock.
	Now time.Time
	// Deadline: nothing is sent at or after it; zero means none (a disbursement).
	Deadline time.Time
	// Deduplicates: the provider performs at most one operation per reference.
	Deduplicates bool
	// Verdict is an operator's resolution, if one is written on the object.
	Verdict *Verdict
	// OperatorAsked: the object asked an operator to resolve the attempt (it has stayed without a
	// final answer too long). An attempt the provider never acknowledged (Initiating) is resolved
	// by a verdict only then.
	OperatorAsked bool
	// Hint: a provider callback arrived that no query has checked yet.
	Hint bool
	// Watch is how long an attempt is watched after its object ended (DefaultWatch when zero).
	Watch time.Duration
	// Poll is the interval between status queries of an attempt in flight.
	Poll time.Duration
	// Answer is the provider's answer to the previous decision's action; nil at a step's start.
	Answer *Answer
}

// Decision is the engine's answer: the next record and at most one action.
type Decision struct {
	Record  Record
	Action  Action
	Outcome Outcome
	// Code is the failure code of OutcomeFailed and OutcomeExpired.
	Code   string
	Recall Recall
	// RetryAfter is when to decide again, absent another wake-up (0: no need).
	RetryAfter time.Duration
	// Deferrable: the only news in Record is that a provider which de-duplicates by our reference
	// accepted the send (Initiating became Pending). The caller may leave the stored attempt as it
	// was written ahead and save the write: a stored Initiating record is the record of a send
	// whose answer was lost, which every rule already covers (the next pass asks; a "not found"
	// re-sends the same reference, at most one operation). A provider reference or remark in the
	// acceptance can wait: such a provider is asked by our reference and repeats them in every
	// answer (provider.Capabilities). Only a first send's acceptance is deferrable: a re-send
	// followed a "not found" (a provider slow to show what it accepted), and its acceptance is
	// stored so that the next "not found" is not taken for a lost send again.
	Deferrable bool
	// Why names the rule that decided, for logs and tests.
	Why string
}

// Decide is the engine's one decision.
func Decide(in Input) Decision {
	if in.Ended != NotEnded {
		return decideEnded(in)
	}
	if in.Answer == nil {
		return begin(in)
	}
	return answered(in)
}

// begin decides a step of an object in progress that has no answer yet.
func begin(in Input) Decision {
	r := in.Record
	d := Decision{Record: r}
	switch {
	case (r.Phase == "" || r.Final()) && pastDeadline(in):
		d.Outcome, d.Code, d.Why = OutcomeExpired, CodeExpired, "deadline passed with nothing in flight"
		return d
	case r.Phase == "" && !in.Start:
		d.Why = "nothing to send"
		return d
	case r.Phase == "" && in.Verdict != nil:
		d.Why = "an operator's verdict is pending: nothing is sent"
		return d
	case r.Phase == "":
		d.Record = Record{Phase: paygatev1.AttemptInitiating, StartedAt: in.Now, Sends: 1, LastSentAt: in.Now}
		d.Action, d.Why = ActionSend, "first send, written ahead"
		return d
	case r.Final():
		d.Why = "the provider answered finally"
		return d
	}
	d.Action, d.Why = ActionQuery, "ask the provider about the attempt in flight"
	return d
}

// answered applies the provider's answer to an object in progress.
func answered(in Input) Decision {
	r, a := in.Record, *in.Answer
	d := Decision{Record: r}
	switch {
	case a.Unreachable:
		d.Why = "no answer: the outcome is unknown"
	case a.NotFound && r.Phase == paygatev1.AttemptInitiating:
		if in.Deduplicates && !pastDeadline(in) && in.Verdict == nil {
			// The provider never received it (or has not yet): the same reference again is at
			// most one operation where the provider de-duplicates.
			d.Record.Sends = r.SendCount() + 1
			d.Record.LastSentAt = in.Now
			d.Action, d.Why = ActionSend, "not found: re-send with the same reference (the provider de-duplicates)"
			return d
		}
		d.Why = "not found: never re-sent (the provider does not de-duplicate, the deadline passed, or a verdict is pending)"
	case a.NotFound:
		d.Recall, d.Why = RecallForgot, "the provider forgot an attempt it accepted"
	default:
		if a.To == ActionQuery {
			d.Recall = RecallKnows
		}
		switch a.Status {
		case provider.StatusPending:
			d.Record.Phase = paygatev1.AttemptPending
		case provider.StatusAmbiguous:
			d.Record.Phase = paygatev1.AttemptAmbiguous
		case provider.StatusSuccess:
			d.Record.Phase, d.Record.WatchUntil = paygatev1.AttemptSucceeded, time.Time{}
			d.Outcome, d.Why = OutcomeSucceeded, "the provider settled it"
			return d
		case provider.StatusFailed:
			d.Record.Phase, d.Record.Code, d.Record.WatchUntil = paygatev1.AttemptFailed, failureCode(a.Code), time.Time{}
			d.Outcome, d.Code, d.Why = OutcomeFailed, d.Record.Code, "the provider failed it"
			return d
		}
		d.Why = "in flight"
	}
	if verdictApplies(in) {
		d.Record.WatchUntil = in.Now.Add(watch(in))
		d.Outcome, d.Why = OutcomeResolvedFailed, "an operator resolved it as not paid"
		if in.Verdict.Succeeded {
			d.Outcome, d.Why = OutcomeResolvedSuccess, "an operator resolved it as paid"
		}
		return d
	}
	if pastDeadline(in) {
		d.Record.WatchUntil = in.Now.Add(watch(in))
		d.Outcome, d.Code, d.Why = OutcomeExpired, CodeExpired, "deadline passed without a final answer: watched"
		return d
	}
	d.RetryAfter = in.Poll
	d.Deferrable = a.To == ActionSend && a.Status == provider.StatusPending && r.Phase == paygatev1.AttemptInitiating &&
		r.SendCount() == 1 && in.Deduplicates
	return d
}

// decideEnded watches the attempt of an object that ended.
func decideEnded(in Input) Decision {
	r := in.Record
	d := Decision{Record: r}
	if in.Answer == nil {
		switch {
		case r.Phase == "":
			d.Why = "no attempt"
		case r.Watched(in.Now):
			d.Action, d.Why = ActionQuery, "watched: ask again"
		case in.Hint && (!r.Final() || (r.Phase == paygatev1.AttemptFailed && in.Ended == EndedFailed)):
			d.Action, d.Why = ActionQuery, "a callback about an ended object: ask"
		case !r.Final() && !r.WatchUntil.IsZero():
			d.Record.WatchUntil = time.Time{}
			d.Outcome, d.Why = OutcomeWatchEnded, "the watch ended without a final answer"
		default:
			d.Why = "ended"
		}
		return d
	}
	a := *in.Answer
	switch {
	case a.Unreachable || a.NotFound:
		d.Why = "no final answer yet"
	case a.Status == provider.StatusSuccess:
		d.Record.Phase, d.Record.WatchUntil = paygatev1.AttemptSucceeded, time.Time{}
		d.Why = "settled"
		if in.Ended == EndedFailed {
			d.Outcome, d.Why = OutcomeLateSuccess, "settled after the object failed"
		}
		return d
	case a.Status == provider.StatusFailed:
		d.Record.Phase, d.Record.Code, d.Record.WatchUntil = paygatev1.AttemptFailed, failureCode(a.Code), time.Time{}
		d.Why = "failed"
		if in.Ended == EndedSucceeded {
			d.Outcome, d.Why = OutcomeLateFailure, "failed after the object was resolved as paid"
		}
		return d
	case a.Status == provider.StatusPending && r.Phase != paygatev1.AttemptAmbiguous:
		d.Record.Phase, d.Why = paygatev1.AttemptPending, "still in flight"
	case a.Status == provider.StatusAmbiguous:
		d.Record.Phase, d.Why = paygatev1.AttemptAmbiguous, "still ambiguous"
	}
	if d.Record.Watched(in.Now) {
		d.RetryAfter = WatchInterval(d.Record, in.Now, watch(in), in.Poll)
	}
	return d
}

// WatchInterval is the backoff between two questions about a watched attempt: an eighth of the
// time it has been watched, at least poll and at most MaxWatchInterval (a minute after the
// object ended it is asked about every few seconds; a day after, hourly).
func WatchInterval(r Record, now time.Time, watch, poll time.Duration) time.Duration {
	since := now.Sub(r.WatchUntil.Add(-watch))
	iv := since / 8
	if iv < poll {
		iv = poll
	}
	if iv > MaxWatchInterval {
		iv = MaxWatchInterval
	}
	if left := r.WatchUntil.Sub(now); left > 0 && left < iv {
		iv = left
	}
	return iv
}

// verdictApplies reports whether the operator's verdict resolves the attempt: it names the
// attempt's current send, and the attempt is one the provider left open (or never acknowledged
// and the operator was asked).
func verdictApplies(in Input) bool {
	v, r := in.Verdict, in.Record
	if v == nil || r.Final() || r.Phase == "" {
		return false
	}
	send := v.Send
	if send == 0 {
		send = 1
	}
	if send != r.SendCount() {
		return false
	}
	return r.Phase != paygatev1.AttemptInitiating || in.OperatorAsked
}

func pastDeadline(in Input) bool { return !in.Deadline.IsZero() && !in.Now.Before(in.Deadline) }

func watch(in Input) time.Duration {
	if in.Watch > 0 {
		return in.Watch
	}
	return DefaultWatch
}

func failureCode(code string) string {
	if code == "" {
		return string(paygatev1.FailurePaymentDeclined)
	}
	return code
}
