// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"strings"
	"sync"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/provider"
)

// maxAcceptedPushes bounds acceptedPushes: beyond it an accepted push is written at once, as
// every push was before the memory existed.
const maxAcceptedPushes = 100_000

// acceptedPushes remembers, in this process, the pushes the provider accepted whose Pending phase
// is not written yet (docs/payments.md, Push attempts: written ahead). The write-ahead record
// (Initiating) is the only write before the first status query; the query's pass writes Pending,
// or the outcome straight away when the customer approved meanwhile. The memory keeps telling an
// accepted push from one whose answer was lost: the provider not knowing an accepted push is
// "forgotten" (flagged), not knowing an unanswered one means it never arrived (pushed again, with
// the same reference). A process that starts has no memory, and treats every Initiating attempt
// as unanswered, as it would after a crash between the record and the provider's answer.
type acceptedPushes struct {
	mu sync.Mutex
	m  map[acceptedKey]provider.Result
}

// acceptedKey names one attempt: its reference and start (a payment deleted and created again
// under its name starts its attempts at other times).
type acceptedKey struct {
	reference string
	started   int64
}

func keyOf(a *paygatev1.PushAttempt) acceptedKey {
	return acceptedKey{reference: a.Reference, started: a.StartedAt.UnixMicro()}
}

// remember records that the provider accepted attempt a with res; false when the memory is full
// (the caller writes Pending now).
func (p *acceptedPushes) remember(a *paygatev1.PushAttempt, res provider.Result) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[acceptedKey]provider.Result{}
	}
	if len(p.m) >= maxAcceptedPushes {
		return false
	}
	p.m[keyOf(a)] = res
	return true
}

// lookup returns what the provider answered when it accepted attempt a, if this process saw it
// and a's record has not caught up with it.
func (p *acceptedPushes) lookup(a *paygatev1.PushAttempt) (provider.Result, bool) {
	if a == nil || a.Phase != paygatev1.AttemptInitiating {
		return provider.Result{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	res, ok := p.m[keyOf(a)]
	return res, ok
}

// forget drops attempt a, whose record no longer needs the memory (written past Initiating, or
// its payment ended).
func (p *acceptedPushes) forget(a *paygatev1.PushAttempt) {
	if a == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, keyOf(a))
}

// forgetPayment drops every attempt of the payment namespace/name, which is gone (deleted while
// a push was in flight): its entries would otherwise stay until the process ends.
func (p *acceptedPushes) forgetPayment(namespace, name string) {
	prefix := namespace + "." + name + "."
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.m {
		if strings.HasPrefix(k.reference, prefix) {
			delete(p.m, k)
		}
	}
}

// size is how many accepted pushes wait for their write.
func (p *acceptedPushes) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}
