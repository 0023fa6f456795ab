// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import (
	"errors"
	"testing"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

func TestStateNext(t *testing.T) {
	const (
		pending   = paygatev1.SubscriptionPending
		active    = paygatev1.SubscriptionActive
		pastDue   = paygatev1.SubscriptionPastDue
		suspended = paygatev1.SubscriptionSuspended
		cancelled = paygatev1.SubscriptionCancelled
	)
	defaults, _ := NewDunning(paygatev1.DunningPolicy{})
	noRetries, _ := NewDunning(paygatev1.DunningPolicy{MaxFailures: 1})
	tests := []struct {
		name    string
		from    State
		ev      Event
		dunning Dunning
		want    State
		invalid bool
	}{
		{"first charge paid", State{Phase: pending}, ChargePaid, defaults, State{Phase: active, Confirmed: true}, false},
		{"untouched subscription is pending", State{}, ChargePaid, defaults, State{Phase: active, Confirmed: true}, false},
		{"first charge failed", State{Phase: pending}, ChargeFailed, defaults, State{Phase: pending, ConsecutiveFailures: 1}, false},
		{"first charge paid on a retry", State{Phase: pending, ConsecutiveFailures: 2}, ChargePaid, defaults, State{Phase: active, Confirmed: true}, false},
		{"first charge failed for the 4th time", State{Phase: pending, ConsecutiveFailures: 3}, ChargeFailed, defaults, State{Phase: suspended, ConsecutiveFailures: 4}, false},
		{"first charge failed, no retries", State{Phase: pending}, ChargeFailed, noRetries, State{Phase: suspended, ConsecutiveFailures: 1}, false},
		{"renewal paid", State{Phase: active, Confirmed: true}, ChargePaid, defaults, State{Phase: active, Confirmed: true}, false},
		{"renewal failed", State{Phase: active, Confirmed: true}, ChargeFailed, defaults, State{Phase: pastDue, ConsecutiveFailures: 1, Confirmed: true}, false},
		{"retry failed", State{Phase: pastDue, ConsecutiveFailures: 1, Confirmed: true}, ChargeFailed, defaults, State{Phase: pastDue, ConsecutiveFailures: 2, Confirmed: true}, false},
		{"retry paid", State{Phase: pastDue, ConsecutiveFailures: 3, Confirmed: true}, ChargePaid, defaults, State{Phase: active, Confirmed: true}, false},
		{"last retry failed", State{Phase: pastDue, ConsecutiveFailures: 3, Confirmed: true}, ChargeFailed, defaults, State{Phase: suspended, ConsecutiveFailures: 4, Confirmed: true}, false},
		{"renewal failed, no retries", State{Phase: active, Confirmed: true}, ChargeFailed, noRetries, State{Phase: suspended, ConsecutiveFailures: 1, Confirmed: true}, false},
		{"resume a confirmed subscription", State{Phase: suspended, ConsecutiveFailures: 4, Confirmed: true}, Resume, defaults, State{Phase: pastDue, Confirmed: true}, false},
		{"resume one never confirmed", State{Phase: suspended, ConsecutiveFailures: 4}, Resume, defaults, State{Phase: pending}, false},
		{"a late settlement after suspension", State{Phase: suspended, ConsecutiveFailures: 4, Confirmed: true}, ChargePaid, defaults, State{Phase: active, Confirmed: true}, false},
		{"a late failure after suspension", State{Phase: suspended, ConsecutiveFailures: 4}, ChargeFailed, defaults, State{Phase: suspended, ConsecutiveFailures: 4}, false},
		{"cancel pending", State{Phase: pending, ConsecutiveFailures: 1}, Cancel, defaults, State{Phase: cancelled, ConsecutiveFailures: 1}, false},
		{"cancel active", State{Phase: active, Confirmed: true}, Cancel, defaults, State{Phase: cancelled, Confirmed: true}, false},
		{"cancel past due", State{Phase: pastDue, ConsecutiveFailures: 2, Confirmed: true}, Cancel, defaults, State{Phase: cancelled, ConsecutiveFailures: 2, Confirmed: true}, false},
		{"cancel suspended", State{Phase: suspended, ConsecutiveFailures: 4}, Cancel, defaults, State{Phase: cancelled, ConsecutiveFailures: 4}, false},
		{"cancel twice", State{Phase: cancelled}, Cancel, defaults, State{Phase: cancelled}, false},
		{"a prompt approved after cancellation", State{Phase: cancelled}, ChargePaid, defaults, State{Phase: cancelled, Confirmed: true}, false},
		{"a prompt failed after cancellation", State{Phase: cancelled}, ChargeFailed, defaults, State{Phase: cancelled}, false},
		{"resume active", State{Phase: active, Confirmed: true}, Resume, defaults, State{Phase: active, Confirmed: true}, true},
		{"resume pending", State{Phase: pending, ConsecutiveFailures: 2}, Resume, defaults, State{Phase: pending, ConsecutiveFailures: 2}, true},
		{"resume past due", State{Phase: pastDue, ConsecutiveFailures: 2}, Resume, defaults, State{Phase: pastDue, ConsecutiveFailures: 2}, true},
		{"resume cancelled", State{Phase: cancelled}, Resume, defaults, State{Phase: cancelled}, true},
		{"unknown event", State{Phase: active}, "Refund", defaults, State{Phase: active}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.from.Next(tt.ev, tt.dunning)
			if tt.invalid != errors.Is(err, ErrInvalidTransition) {
				t.Errorf("error %v, want invalid %v", err, tt.invalid)
			}
			if got != tt.want {
				t.Errorf("%+v + %s = %+v, want %+v", tt.from, tt.ev, got, tt.want)
			}
		})
	}
}
