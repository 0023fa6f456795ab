// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import (
	"errors"
	"fmt"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Event is something that moves a subscription between phases (docs/billing.md, Subscription
// lifecycle).
type Event string

const (
	// ChargePaid: a charge of the current invoice settled (the customer approved it with their PIN).
	ChargePaid Event = "ChargePaid"
	// ChargeFailed: a charge of the current invoice failed (declined, cancelled, expired, ...).
	ChargeFailed Event = "ChargeFailed"
	// Cancel: the merchant cancelled the subscription (now, or its paid period ran out).
	Cancel Event = "Cancel"
	// Resume: the merchant resumed a suspended subscription (spec.resumeSequence was raised).
	Resume Event = "Resume"
)

// ErrInvalidTransition is returned for an event that does not apply in a phase: resuming a
// subscription that is not suspended, or anything but a charge outcome after cancellation.
var ErrInvalidTransition = errors.New("invalid subscription transition")

// State is the part of a subscription's status its lifecycle moves.
type State struct {
	Phase paygatev1.SubscriptionPhase
	// ConsecutiveFailures counts the current invoice's failed charges in a row.
	ConsecutiveFailures int32
	// Confirmed: a charge was paid once (status.confirmedAt is set).
	Confirmed bool
}

// Next is the state after ev under the dunning policy d:
//
//	pending   + ChargePaid   -> active (confirmed)
//	pending   + ChargeFailed -> pending, or suspended at maxFailures (the first charge included)
//	active    + ChargePaid   -> active
//	active    + ChargeFailed -> past_due, or suspended at maxFailures
//	past_due  + ChargePaid   -> active
//	past_due  + ChargeFailed -> past_due, or suspended at maxFailures
//	suspended + Resume       -> past_due if confirmed, else pending; failures back to 0
//	suspended + ChargePaid   -> active (a charge that settled late still paid the invoice)
//	suspended + ChargeFailed -> suspended (a late failure changes nothing)
//	any       + Cancel       -> cancelled (final)
//	cancelled + ChargePaid   -> cancelled, confirmed (a prompt already on the phone was approved)
//	cancelled + ChargeFailed -> cancelled
//
// A paid charge sets the failures back to 0. Any other event is ErrInvalidTransition, with the
// state unchanged.
func (s State) Next(ev Event, d Dunning) (State, error) {
	phase := s.Phase
	if phase == "" {
		phase = paygatev1.SubscriptionPending
	}
	next := State{Phase: phase, ConsecutiveFailures: s.ConsecutiveFailures, Confirmed: s.Confirmed}
	switch ev {
	case Cancel:
		next.Phase = paygatev1.SubscriptionCancelled
		return next, nil
	case ChargePaid:
		next.ConsecutiveFailures, next.Confirmed = 0, true
		if phase != paygatev1.SubscriptionCancelled {
			next.Phase = paygatev1.SubscriptionActive
		}
		return next, nil
	case ChargeFailed:
		switch phase {
		case paygatev1.SubscriptionCancelled, paygatev1.SubscriptionSuspended:
			return next, nil
		}
		next.ConsecutiveFailures++
		switch {
		case d.Suspends(next.ConsecutiveFailures):
			next.Phase = paygatev1.SubscriptionSuspended
		case phase == paygatev1.SubscriptionPending:
			next.Phase = paygatev1.SubscriptionPending
		default:
			next.Phase = paygatev1.SubscriptionPastDue
		}
		return next, nil
	case Resume:
		if phase != paygatev1.SubscriptionSuspended {
			return s, fmt.Errorf("%w: %s in phase %s: only a suspended subscription resumes", ErrInvalidTransition, ev, phase)
		}
		next.ConsecutiveFailures = 0
		next.Phase = paygatev1.SubscriptionPending
		if s.Confirmed {
			next.Phase = paygatev1.SubscriptionPastDue
		}
		return next, nil
	}
	return s, fmt.Errorf("%w: unknown event %q", ErrInvalidTransition, ev)
}
