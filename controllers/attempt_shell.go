// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/attempt"
	"github.com/paygate/paygate/internal/failpoint"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/provider"
)

// attemptCalls are one attempt's provider calls and its write-ahead, for the shell around the
// attempt engine. prov is nil when the provider cannot be resolved (the pass then decides as if it
// did not answer).
type attemptCalls struct {
	prov  provider.Provider
	send  func(ctx context.Context, p provider.Provider) (provider.Result, error)
	query func(ctx context.Context, p provider.Provider) (provider.Result, error)
	// writeAhead stores rec, the record of a send about to happen, under the optimistic lock: a
	// pass that read a stale object conflicts here and sends nothing.
	writeAhead func(ctx context.Context, rec attempt.Record) error
	// recorded is the result of a verified callback recorded on the object for this attempt
	// (paygatev1.AnnotationProviderResult), for a provider whose results arrive only by callback;
	// nil or false: none.
	recorded func() (provider.Result, bool)
	// sent and answered are failpoints around a send (nil: none).
	sent, answered func()
}

// attemptStep is what one pass of the shell did.
type attemptStep struct {
	decision attempt.Decision
	// result is the provider's last answer with content (a reference, a remark), if any.
	result    provider.Result
	hasResult bool
	// asked: a query got an answer (found or not found).
	asked bool
	// sendErr is the error of a send whose outcome is unknown; providerErr the error of a query
	// that got no answer.
	sendErr, providerErr error
	// awaitingCallback: the provider answers only by callback, and none is recorded yet.
	awaitingCallback bool
}

// runAttempt is the thin shell around attempt.Decide: it runs the decision's action, feeds the
// answer back and repeats (at most a query, a send and the send's answer in one pass). A send is
// always preceded by calls.writeAhead of the decision's record. The caller stores the final
// record and applies the outcome.
func runAttempt(ctx context.Context, in attempt.Input, calls attemptCalls) (attemptStep, error) {
	if calls.prov != nil {
		in.Deduplicates = calls.prov.Capabilities().Deduplicates
	}
	var st attemptStep
	d := attempt.Decide(in)
	for i := 0; i < 3 && d.Action != attempt.ActionNone; i++ {
		var (
			res provider.Result
			err error
		)
		switch d.Action {
		case attempt.ActionSend:
			if err := calls.writeAhead(ctx, d.Record); err != nil {
				return st, err
			}
			if calls.sent != nil {
				calls.sent()
			}
			if calls.prov == nil {
				err = errNoProvider
			} else {
				res, err = calls.send(ctx, calls.prov)
			}
			if calls.answered != nil {
				calls.answered()
			}
			if err != nil && calls.prov != nil {
				st.sendErr = err
			}
		case attempt.ActionQuery:
			if calls.prov == nil {
				err = errNoProvider
			} else {
				res, err = calls.query(ctx, calls.prov)
			}
			if errors.Is(err, provider.ErrAnswersByCallback) {
				// No status query: the verified callback's result, recorded on the object, is the
				// answer; without one the attempt waits for it (not a provider failure).
				if rec, ok := recordedResult(calls); ok {
					res, err = rec, nil
				} else {
					st.awaitingCallback = true
				}
			}
			switch {
			case err == nil || errors.Is(err, provider.ErrNotFound):
				st.asked = true
			case !st.awaitingCallback && calls.prov != nil:
				st.providerErr = err // without a provider the caller has the reason it could not ask
			}
		}
		if err == nil {
			st.result, st.hasResult = res, true
		}
		ans := attempt.AnswerOf(d.Action, res, err)
		in.Record, in.Answer = d.Record, &ans
		d = attempt.Decide(in)
	}
	st.decision = d
	return st, nil
}

// hitFailpoint is failpoint.Hit; the controllers' simulation replaces it to crash a pass in
// process instead of killing it.
var hitFailpoint = failpoint.Hit

func recordedResult(calls attemptCalls) (provider.Result, bool) {
	if calls.recorded == nil {
		return provider.Result{}, false
	}
	return calls.recorded()
}

// recordedCallback reads the AnnotationProviderResult of an object for the attempt reference.
func recordedCallback(annotations map[string]string, reference string) (provider.Result, bool) {
	ref, status, code, ok := paygatev1.ParseProviderResult(annotations[paygatev1.AnnotationProviderResult])
	if !ok || ref != reference {
		return provider.Result{}, false
	}
	return provider.Result{Status: provider.Status(status), Code: paygatev1.FailureCode(code)}, true
}

var errNoProvider = errors.New("the gateway's provider cannot be resolved")

// recordOf is the engine's view of a stored attempt.
func recordOf(phase paygatev1.AttemptPhase, code string, startedAt metav1.MicroTime, sends int32, lastSentAt, watchUntil *metav1.MicroTime) attempt.Record {
	r := attempt.Record{Phase: phase, Code: code, StartedAt: startedAt.Time, Sends: sends, LastSentAt: startedAt.Time}
	if lastSentAt != nil {
		r.LastSentAt = lastSentAt.Time
	}
	if watchUntil != nil {
		r.WatchUntil = watchUntil.Time
	}
	return r
}

// microOrNil is t as a stored time, nil for the zero time.
func microOrNil(t time.Time) *metav1.MicroTime {
	if t.IsZero() {
		return nil
	}
	return ptrTime(t)
}

// storeRecord copies the engine's record into a stored attempt's fields.
func storeRecord(r attempt.Record, now time.Time, phase *paygatev1.AttemptPhase, code *string, sends *int32, lastSentAt, watchUntil, finishedAt **metav1.MicroTime) {
	if r.Final() && !(*phase == paygatev1.AttemptSucceeded || *phase == paygatev1.AttemptFailed) {
		*finishedAt = ptrTime(now)
	}
	*phase, *code, *sends = r.Phase, r.Code, r.Sends
	if r.Sends > 0 && (*lastSentAt == nil || !(*lastSentAt).Time.Equal(r.LastSentAt)) {
		*lastSentAt = microOrNil(r.LastSentAt)
	}
	*watchUntil = microOrNil(r.WatchUntil)
}

// defaultPollInterval is how often an attempt in flight is queried when a reconciler's
// PollInterval is not set.
const defaultPollInterval = 2 * time.Second

// orDefault is d, or def when d is not set.
func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// describeSendError is how an event names a send whose outcome is unknown.
func describeSendError(reference string, err error) string {
	return fmt.Sprintf("%s: outcome unknown, will ask the provider (%v)", reference, err)
}

// watchEnded runs the engine on the attempt of an object that ended (in.Ended is set): it asks the
// provider when the engine says so, and never sends. acted is false when the engine had nothing
// to do (no call made, nothing changed); resolve gives the provider only when one is needed.
func watchEnded(ctx context.Context, in attempt.Input, calls attemptCalls, resolve func() provider.Provider) (st attemptStep, acted bool, err error) {
	if d := attempt.Decide(in); d.Action == attempt.ActionNone && d.Outcome == attempt.OutcomeNone {
		return attemptStep{decision: d}, false, nil
	}
	calls.writeAhead = func(context.Context, attempt.Record) error { return errors.New("an object that ended sends nothing") }
	calls.prov = resolve()
	st, err = runAttempt(ctx, in, calls)
	return st, err == nil, err
}

// watchNews is what a watched attempt's answer means to the object that owns it, and how to say
// it: LateSettlement for an answer that contradicts how the object ended, an event when the watch
// closes unanswered, and paygate_attempt_watches_total. Announced after the write (announce).
type watchNews struct {
	obj        runtime.Object
	conditions *[]metav1.Condition
	generation int64
	announce   func(func())
	recorder   events.EventRecorder
	operation  string // push, disbursement or refund
	env        paygatev1.Environment
	reference  string
	// late says what a contradicting answer means (OutcomeLateSuccess, OutcomeLateFailure).
	late func(attempt.Outcome) string
	// also runs, announced, beside the metric of a late answer (the payments' own counter).
	also func(attempt.Outcome)
}

// tell records and announces what decision d (the answer to a watch) means; wasWatched: the
// attempt was watched before it.
func (n watchNews) tell(d attempt.Decision, wasWatched bool) {
	env := string(n.env)
	count := func(event string) { metrics.AttemptWatches.WithLabelValues(n.operation, env, event).Inc() }
	switch d.Outcome {
	case attempt.OutcomeLateSuccess, attempt.OutcomeLateFailure:
		reason, event := ReasonSettledAfterFailure, "settled_late"
		if d.Outcome == attempt.OutcomeLateFailure {
			reason, event = ReasonFailedAfterSuccess, "failed_late"
		}
		msg := n.late(d.Outcome)
		meta.SetStatusCondition(n.conditions, metav1.Condition{Type: paygatev1.ConditionLateSettlement, Status: metav1.ConditionTrue,
			Reason: reason, Message: msg, ObservedGeneration: n.generation})
		n.announce(func() {
			n.recorder.Eventf(n.obj, nil, corev1.EventTypeWarning, reason, "Watch", "%s", msg)
			count(event)
			if n.also != nil {
				n.also(d.Outcome)
			}
		})
	case attempt.OutcomeWatchEnded:
		msg := fmt.Sprintf("The provider gave no final answer about %s %s within the watch window; check with the provider", n.operation, n.reference)
		n.announce(func() {
			n.recorder.Eventf(n.obj, nil, corev1.EventTypeWarning, ReasonAttemptWatchEnded, "Watch", "%s", msg)
			count("window_closed")
		})
	default:
		if d.Record.Final() && wasWatched {
			n.announce(func() { count("answered") })
		}
	}
}

// gatewayProvider reads gateway code and resolves its provider for env. A sandbox attempt whose
// gateway is gone still resolves (the simulator needs nothing from the gateway); a production one
// does not.
func gatewayProvider(ctx context.Context, c client.Reader, providers Providers, code paygatev1.GatewayCode, env paygatev1.Environment) (provider.Provider, error) {
	gw := &paygatev1.Gateway{}
	if err := c.Get(ctx, client.ObjectKey{Name: string(code)}, gw); err != nil {
		if client.IgnoreNotFound(err) != nil || env == paygatev1.EnvironmentProduction {
			return nil, fmt.Errorf("reading gateway %s: %w", code, err)
		}
		gw.Name = string(code)
	}
	prov, err := providers.For(ctx, gw, env)
	if err != nil {
		return nil, asProviderError(fmt.Errorf("resolving the provider of gateway %s: %w", code, err))
	}
	return prov, nil
}
