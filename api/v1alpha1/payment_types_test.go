// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "testing"

func TestPaymentAwaitingCustomer(t *testing.T) {
	req := func(seq int32) *PushRequest { return &PushRequest{Sequence: seq, Phone: "+255712345678"} }
	attempt := func(seq int32, phase AttemptPhase) []PushAttempt {
		return []PushAttempt{{Sequence: seq, Phase: phase}}
	}
	for _, tc := range []struct {
		name               string
		request            *PushRequest
		attempts           []PushAttempt
		unanswered, awaits bool
	}{
		{"no push asked for", nil, nil, false, false},
		{"asked, not yet attempted", req(1), nil, true, true},
		{"attempt recorded, provider not answered", req(1), attempt(1, AttemptInitiating), false, true},
		{"customer has the prompt", req(1), attempt(1, AttemptPending), false, true},
		{"provider unsure", req(1), attempt(1, AttemptAmbiguous), false, true},
		{"attempt failed", req(1), attempt(1, AttemptFailed), false, false},
		{"attempt failed, a new push asked for", req(2), attempt(1, AttemptFailed), true, true},
		{"attempt succeeded", req(1), attempt(1, AttemptSucceeded), false, false},
	} {
		p := &Payment{Spec: PaymentSpec{PushRequest: tc.request}, Status: PaymentStatus{Attempts: tc.attempts}}
		if got := p.PushUnanswered(); got != tc.unanswered {
			t.Errorf("%s: PushUnanswered = %v, want %v", tc.name, got, tc.unanswered)
		}
		if got := p.AwaitingCustomer(); got != tc.awaits {
			t.Errorf("%s: AwaitingCustomer = %v, want %v", tc.name, got, tc.awaits)
		}
	}
}
