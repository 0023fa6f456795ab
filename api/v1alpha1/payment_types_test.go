// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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

func TestPaymentExpired(t *testing.T) {
	expiresAt := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	attempt := func(phase AttemptPhase) []PushAttempt { return []PushAttempt{{Sequence: 1, Phase: phase}} }
	for _, tc := range []struct {
		name     string
		phase    PaymentPhase
		reason   FailureCode
		attempts []PushAttempt
		now      time.Time
		want     bool
		left     time.Duration
	}{
		{"pending, session running", "", "", nil, expiresAt.Add(-time.Minute), false, time.Minute},
		{"pending, a moment before the end", PaymentPending, "", nil, expiresAt.Add(-time.Nanosecond), false, time.Nanosecond},
		{"pending, at the end exactly", PaymentPending, "", nil, expiresAt, true, 0},
		{"pending, after the end", "", "", nil, expiresAt.Add(time.Second), true, -time.Second},
		{"pending, last attempt failed, after the end", PaymentPending, "", attempt(AttemptFailed), expiresAt, true, 0},
		{"pending, prompt with the customer, after the end", PaymentPending, "", attempt(AttemptPending), expiresAt, true, 0},
		{"pending, attempt not yet answered by the provider: the deadline ends it (the attempt is watched)", PaymentPending, "", attempt(AttemptInitiating), expiresAt.Add(time.Hour), true, -time.Hour},
		{"pending, provider unsure: the deadline ends it too", PaymentPending, "", attempt(AttemptAmbiguous), expiresAt.Add(time.Hour), true, -time.Hour},
		{"failed with EXPIRED_SESSION", PaymentFailed, FailureExpiredSession, nil, expiresAt.Add(-time.Minute), true, time.Minute},
		{"failed otherwise, after the end", PaymentFailed, FailureInsufficientFunds, attempt(AttemptFailed), expiresAt.Add(time.Hour), false, -time.Hour},
		{"settled, after the end", PaymentSuccess, "", attempt(AttemptSucceeded), expiresAt.Add(time.Hour), false, -time.Hour},
	} {
		p := &Payment{
			Spec:   PaymentSpec{ExpiresAt: metav1.NewTime(expiresAt)},
			Status: PaymentStatus{Phase: tc.phase, Reason: string(tc.reason), Attempts: tc.attempts},
		}
		if got := p.Expired(tc.now); got != tc.want {
			t.Errorf("%s: Expired = %v, want %v", tc.name, got, tc.want)
		}
		if got := p.TimeLeft(tc.now); got != tc.left {
			t.Errorf("%s: TimeLeft = %v, want %v", tc.name, got, tc.left)
		}
	}
}

func TestPaymentSettlement(t *testing.T) {
	for _, tc := range []struct {
		name          string
		status        PaymentStatus
		fee, net      Decimal
		remarkSandbox string
	}{
		{"pending: nothing charged yet", PaymentStatus{}, "0", "1500.00", RemarkSandboxTransaction},
		{"pending, explicitly", PaymentStatus{Phase: PaymentPending}, "0", "1500.00", RemarkSandboxTransaction},
		{"success: the stored settlement", PaymentStatus{Phase: PaymentSuccess, Fee: "37.50", NetAmount: "1462.50"}, "37.50", "1462.50", RemarkSandboxTransaction},
		{"success without a recorded fee", PaymentStatus{Phase: PaymentSuccess}, "0", "1500.00", RemarkSandboxTransaction},
		{"failed: nothing charged, nothing credited", PaymentStatus{Phase: PaymentFailed, Reason: "INSUFFICIENT_FUNDS"}, "0", "0", RemarkSandboxTransaction},
		{"failed with a stray fee", PaymentStatus{Phase: PaymentFailed, Fee: "37.50", NetAmount: "1462.50"}, "0", "0", RemarkSandboxTransaction},
	} {
		p := &Payment{Spec: PaymentSpec{Amount: "1500.00", Environment: EnvironmentSandbox}, Status: tc.status}
		if fee, net := p.Settlement(); fee != tc.fee || net != tc.net {
			t.Errorf("%s: Settlement = (%s, %s), want (%s, %s)", tc.name, fee, net, tc.fee, tc.net)
		}
		if got := p.MerchantRemark(); got != tc.remarkSandbox {
			t.Errorf("%s: MerchantRemark = %q, want %q", tc.name, got, tc.remarkSandbox)
		}
	}
}

func TestPaymentMerchantRemark(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    Environment
		status string
		want   string
	}{
		{"sandbox, not pushed yet", EnvironmentSandbox, "", RemarkSandboxTransaction},
		{"sandbox, answered by the simulator", EnvironmentSandbox, RemarkSandboxTransaction, RemarkSandboxTransaction},
		{"production through the provider", EnvironmentProduction, "", ""},
		{"production: a provider's own remark is not passed on", EnvironmentProduction, "routed via hub 7", ""},
		{"production simulated for a demo", EnvironmentProduction, RemarkSimulatedProduction, RemarkSimulatedProduction},
	} {
		p := &Payment{Spec: PaymentSpec{Environment: tc.env}, Status: PaymentStatus{Remark: tc.status}}
		if got := p.MerchantRemark(); got != tc.want {
			t.Errorf("%s: MerchantRemark = %q, want %q", tc.name, got, tc.want)
		}
	}
}
