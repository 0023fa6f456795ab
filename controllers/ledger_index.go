// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
)

// ledgerKey names one merchant's ledger in one environment.
type ledgerKey struct {
	namespace, merchant string
	env                 paygatev1.Environment
}

// paymentEntry is what one payment adds to its ledger.
type paymentEntry struct {
	key      ledgerKey
	currency paygatev1.CurrencyCode
	settled  bool         // phase success: net counts
	net      money.Amount // when settled
	bad      error        // settled with an unreadable net amount
}

func (e paymentEntry) same(o paymentEntry) bool {
	return e.key == o.key && e.currency == o.currency && e.settled == o.settled && e.net.Cmp(o.net) == 0 &&
		(e.bad == nil) == (o.bad == nil)
}

// ledgerSums are the running sums of one ledger.
type ledgerSums struct {
	observed int64
	bad      map[types.UID]error
	settled  map[paygatev1.CurrencyCode]money.Amount
	counts   map[paygatev1.CurrencyCode]int64
}

// paymentLedger keeps, from the Payment informer's events, what every merchant's live payments
// add to its balances, so that a recount costs O(1) in the number of payments instead of a
// pass over all of them (docs/ledger.md, Cost). Every change to a payment replaces that
// payment's previous contribution, so repeated, reordered or replayed events count it once; the
// balance controller checks the sums against a full recount periodically.
type paymentLedger struct {
	mu      sync.RWMutex
	entries map[types.UID]paymentEntry
	sums    map[ledgerKey]*ledgerSums
	// changed is told which merchant's ledger changed, after the change is applied, and whether
	// its money changed (settled sums, or a payment that cannot be counted) or only the number
	// of payments it observes.
	changed func(namespace, merchant string, money bool)
	synced  func() bool
}

func newPaymentLedger(changed func(namespace, merchant string, money bool)) *paymentLedger {
	return &paymentLedger{entries: map[types.UID]paymentEntry{}, sums: map[ledgerKey]*ledgerSums{}, changed: changed}
}

// handler is the informer event handler that keeps the ledger.
func (l *paymentLedger) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { l.upsert(obj) },
		UpdateFunc: func(_, obj any) { l.upsert(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*paygatev1.Payment); ok {
				l.remove(p.UID)
			}
		},
	}
}

func entryOf(p *paygatev1.Payment) paymentEntry {
	e := paymentEntry{key: ledgerKey{p.Namespace, p.Spec.MerchantRef.Name, p.Spec.Environment}, currency: p.Spec.Currency}
	if countsInLedger(p) {
		e.settled = true
		e.net, e.bad = netAmount(p)
	}
	return e
}

func (l *paymentLedger) upsert(obj any) {
	p, ok := obj.(*paygatev1.Payment)
	if !ok {
		return
	}
	e := entryOf(p)
	l.mu.Lock()
	old, had := l.entries[p.UID]
	if had && old.same(e) {
		l.mu.Unlock()
		return
	}
	if had {
		l.subtract(p.UID, old)
	}
	l.add(p.UID, e)
	l.entries[p.UID] = e
	l.mu.Unlock()
	if had && old.key != e.key {
		l.changed(old.key.namespace, old.key.merchant, old.money())
		had = false
	}
	l.changed(e.key.namespace, e.key.merchant, e.money() || (had && old.money()))
}

// money reports whether the entry counts in the ledger's money (settled, or settled with an
// unreadable amount) rather than in its count of payments only.
func (e paymentEntry) money() bool { return e.settled || e.bad != nil }

func (l *paymentLedger) remove(uid types.UID) {
	l.mu.Lock()
	old, had := l.entries[uid]
	if had {
		l.subtract(uid, old)
		delete(l.entries, uid)
	}
	l.mu.Unlock()
	if had {
		l.changed(old.key.namespace, old.key.merchant, old.money())
	}
}

// add and subtract change the sums; the caller holds the lock.
func (l *paymentLedger) add(uid types.UID, e paymentEntry) {
	s := l.sums[e.key]
	if s == nil {
		s = &ledgerSums{bad: map[types.UID]error{}, settled: map[paygatev1.CurrencyCode]money.Amount{}, counts: map[paygatev1.CurrencyCode]int64{}}
		l.sums[e.key] = s
	}
	s.observed++
	switch {
	case e.bad != nil:
		s.bad[uid] = e.bad
	case e.settled:
		s.settled[e.currency] = s.settled[e.currency].Add(e.net)
		s.counts[e.currency]++
	}
}

func (l *paymentLedger) subtract(uid types.UID, e paymentEntry) {
	s := l.sums[e.key]
	s.observed--
	switch {
	case e.bad != nil:
		delete(s.bad, uid)
	case e.settled:
		// Never below zero: it was added before.
		s.settled[e.currency], _ = s.settled[e.currency].Sub(e.net)
		if s.counts[e.currency]--; s.counts[e.currency] == 0 {
			delete(s.counts, e.currency)
			delete(s.settled, e.currency)
		}
	}
	if s.observed == 0 {
		delete(l.sums, e.key)
	}
}

// Synced reports whether the ledger has seen every payment the informer listed at start.
func (l *paymentLedger) Synced() bool {
	l.mu.RLock()
	synced := l.synced
	l.mu.RUnlock()
	return synced != nil && synced()
}

func (l *paymentLedger) setSynced(f func() bool) {
	l.mu.Lock()
	l.synced = f
	l.mu.Unlock()
}

// Sums returns a merchant's live payment sums in env, without the payments whose UIDs are in
// skip (archived objects still live). Its cost is O(currencies + len(skip)).
func (l *paymentLedger) Sums(namespace, merchant string, env paygatev1.Environment, skip map[string]bool) (PaymentSums, error) {
	key := ledgerKey{namespace, merchant, env}
	out := PaymentSums{Settled: map[paygatev1.CurrencyCode]money.Amount{}, Counts: map[paygatev1.CurrencyCode]int64{}}
	l.mu.RLock()
	defer l.mu.RUnlock()
	s := l.sums[key]
	if s == nil {
		return out, nil
	}
	out.Observed = s.observed
	for c, a := range s.settled {
		out.Settled[c] = a
	}
	for c, n := range s.counts {
		out.Counts[c] = n
	}
	bad := len(s.bad)
	var badErr error
	for uid, err := range s.bad {
		if !skip[string(uid)] {
			badErr = err
		}
	}
	for uid := range skip {
		e, ok := l.entries[types.UID(uid)]
		if !ok || e.key != key {
			continue
		}
		out.Observed--
		switch {
		case e.bad != nil:
			bad--
		case e.settled:
			out.Settled[e.currency], _ = out.Settled[e.currency].Sub(e.net)
			out.Counts[e.currency]--
		}
	}
	if bad > 0 {
		return PaymentSums{}, badErr
	}
	for c, n := range out.Counts {
		if n == 0 {
			delete(out.Counts, c)
			delete(out.Settled, c)
		}
	}
	return out, nil
}

// Has reports whether the ledger counts the payment with uid (the archiver forgets an archived
// payment's archived_live entry only once no balance can count it live).
func (l *paymentLedger) Has(uid types.UID) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	_, ok := l.entries[uid]
	return ok
}
