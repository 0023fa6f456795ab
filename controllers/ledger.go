// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/payouts"
)

// Ledger is one pass's view of a merchant's money in one environment (docs/ledger.md): the
// balance to store, and the payouts and refunds the pass decided.
type Ledger struct {
	// Status is the Balance status to store (without conditions).
	Status paygatev1.BalanceStatus
	// Reserve are the pending payouts the balance covers, newly reserved, in creation order.
	Reserve []string
	// Reject are the pending payouts it does not cover: they fail with INSUFFICIENT_BALANCE.
	Reject []string
	// Mirror are reserved payouts whose own reservedAt is not written yet (a pass that stopped
	// between the Balance and the payout): the pass writes it.
	Mirror []string
	// ReserveRefunds are the pending refunds newly reserved, in creation order.
	ReserveRefunds []string
	// RejectRefunds are the pending refunds that fail, with the reason, in creation order.
	RejectRefunds []RejectedRefund
	// MirrorRefunds are reserved refunds whose own reservedAt is not written yet.
	MirrorRefunds []string
}

// RejectedRefund is a pending refund a pass rejected, and why: REFUND_EXCEEDS_PAYMENT or
// INSUFFICIENT_BALANCE.
type RejectedRefund struct {
	Name   string
	Reason paygatev1.RefundFailureCode
}

// LedgerOption adds to what ComputeLedger derives a balance from.
type LedgerOption func(*ledgerSources)

// WithRefunds counts the merchant's refunds and the refund reservations the Balance held, and
// decides the pending refunds together with the pending payouts. A ledger computed without it
// has no refund: every caller whose merchant may have refunds passes it.
func WithRefunds(refunds []paygatev1.Refund, held []paygatev1.RefundReservation) LedgerOption {
	return func(s *ledgerSources) { s.refunds, s.heldRefunds = refunds, held }
}

// ledgerSources is what a ledger derives from besides the live payments' sums.
type ledgerSources struct {
	payouts     []paygatev1.Payout
	heldPayouts []paygatev1.PayoutReservation
	refunds     []paygatev1.Refund
	heldRefunds []paygatev1.RefundReservation
	arch        *archive.LedgerView
}

// ComputeLedger derives a merchant's balance in env from its payments, payouts and refunds and the
// reservations the Balance held, and decides the pending payouts and refunds:
//
//	available = settled net payments - paid-out payouts - reserved payouts
//	            - refunded refunds - reserved refunds
//
// A reservation stays until its payout or refund succeeds (it then counts as paid out, or
// refunded) or fails (it is released: a failed one counts nowhere, so its release happens exactly
// once). Pending payouts and refunds are decided together in one creation order (spec.createdAt,
// then name, across both kinds): reserved while the balance covers them, rejected when it does
// not, and left pending while payouts.MaxOpenReservations reservations (payouts and refunds
// together) are open. A refund is also rejected, with REFUND_EXCEEDS_PAYMENT, when with the
// refunds of its payment reserved or refunded before it it would return more than the payment's
// amount. A reservation whose payout or refund the cache does not show stays counted: money is
// never released on the word of a missing object, unless the archive holds that payout or refund
// (it is then terminal).
//
// arch, when the archive is on, is the archive's part (docs/archive.md): its carried-forward sums
// are added, and live objects it already holds are skipped, so each object counts once. opts add
// the refunds (WithRefunds).
func ComputeLedger(merchant string, env paygatev1.Environment, payments []paygatev1.Payment, pos []paygatev1.Payout, held []paygatev1.PayoutReservation, arch *archive.LedgerView, opts ...LedgerOption) (Ledger, error) {
	if arch == nil {
		arch = &archive.LedgerView{}
	}
	sums, err := SumPayments(merchant, env, payments, arch.Payments)
	if err != nil {
		return Ledger{}, err
	}
	src := ledgerSources{payouts: pos, heldPayouts: held, arch: arch}
	for _, o := range opts {
		o(&src)
	}
	return computeLedger(merchant, env, sums, src)
}

// PaymentSums is what a merchant's live payments add to its balance in one environment.
type PaymentSums struct {
	// Observed counts the payments, whatever their phase.
	Observed int64
	// Settled and Counts are the net amounts and the number of the successful payments, by
	// currency.
	Settled map[paygatev1.CurrencyCode]money.Amount
	Counts  map[paygatev1.CurrencyCode]int64
}

// SumPayments sums a merchant's payments in env (the successful ones, and the failed ones settled
// late whose net amount the merchant's Credit or Refund policy stored), skipping the UIDs in skip
// (archived objects still live, counted in carried_forward).
func SumPayments(merchant string, env paygatev1.Environment, payments []paygatev1.Payment, skip map[string]bool) (PaymentSums, error) {
	sums := PaymentSums{Settled: map[paygatev1.CurrencyCode]money.Amount{}, Counts: map[paygatev1.CurrencyCode]int64{}}
	for i := range payments {
		p := &payments[i]
		if p.Spec.MerchantRef.Name != merchant || p.Spec.Environment != env || skip[string(p.UID)] {
			continue
		}
		sums.Observed++
		if !countsInLedger(p) {
			continue
		}
		net, err := netAmount(p)
		if err != nil {
			return PaymentSums{}, err
		}
		sums.Settled[p.Spec.Currency] = sums.Settled[p.Spec.Currency].Add(net)
		sums.Counts[p.Spec.Currency]++
	}
	return sums, nil
}

// netAmount reads a successful payment's net amount.
func netAmount(p *paygatev1.Payment) (money.Amount, error) {
	net, err := money.ParseAmount(string(p.Status.NetAmount))
	if err != nil {
		return money.Amount{}, fmt.Errorf("payment %s has an unreadable net amount %q: %w", p.Name, p.Status.NetAmount, err)
	}
	return net, nil
}

// computeLedger is ComputeLedger over the sums of the live payments.
func computeLedger(merchant string, env paygatev1.Environment, live PaymentSums, src ledgerSources) (Ledger, error) {
	if src.arch == nil {
		src.arch = &archive.LedgerView{}
	}
	l := newLedgerPass(merchant, env, src)
	l.addPayments(live)
	for _, step := range []func() error{
		func() error { return l.holdPayouts(src.heldPayouts) },
		func() error { return l.holdRefunds(src.heldRefunds) },
		l.balance,
		l.decide,
	} {
		if err := step(); err != nil {
			return Ledger{}, err
		}
	}
	return l.result(), nil
}

// amounts are sums by currency.
type amounts map[paygatev1.CurrencyCode]money.Amount

func (s amounts) add(c paygatev1.CurrencyCode, a money.Amount) { s[c] = s[c].Add(a) }

// ArchiveQuery is what a ledger of merchant in env asks the archive (archive.LedgerQuery): which
// of the payouts and refunds the Balance holds are archived, and what the archived refunds of the
// payments with a refund still open returned.
func ArchiveQuery(b *paygatev1.Balance, refunds []paygatev1.Refund, merchant string, env paygatev1.Environment) archive.LedgerQuery {
	var q archive.LedgerQuery
	for _, h := range b.Status.PayoutReservations {
		q.Payouts = append(q.Payouts, h.Payout)
	}
	payments := map[string]bool{}
	for _, h := range b.Status.RefundReservations {
		q.Refunds = append(q.Refunds, h.Refund)
		payments[h.TrxID] = true
	}
	for i := range refunds {
		if f := &refunds[i]; f.Spec.MerchantRef.Name == merchant && f.Spec.Environment == env && !f.Terminal() {
			payments[f.Spec.Payment.TrxID] = true
		}
	}
	q.Payments = slices.Sorted(maps.Keys(payments))
	return q
}

// ledgerPass is one computation of a ledger: its sums and decisions as they build up.
type ledgerPass struct {
	merchant string
	env      paygatev1.Environment
	arch     *archive.LedgerView
	// The merchant's payouts and refunds in env (live, not archived), by name.
	payouts map[string]*paygatev1.Payout
	refunds map[string]*paygatev1.Refund

	settled, paidOut, reserved, refunded, refundsReserved, available amounts
	counts                                                           map[paygatev1.CurrencyCode]int64
	observed                                                         int64
	currencies                                                       map[paygatev1.CurrencyCode]bool
	// keptPayouts and keptRefunds are the open reservations, by payout or refund name.
	keptPayouts map[string]paygatev1.PayoutReservation
	keptRefunds map[string]paygatev1.RefundReservation
	// ofPayment is, by trx id, what the payment's refunds reserved or refunded: its cap's use.
	ofPayment map[string]money.Amount

	led Ledger
}

func newLedgerPass(merchant string, env paygatev1.Environment, src ledgerSources) *ledgerPass {
	l := &ledgerPass{
		merchant: merchant, env: env, arch: src.arch,
		payouts: map[string]*paygatev1.Payout{}, refunds: map[string]*paygatev1.Refund{},
		settled: amounts{}, paidOut: amounts{}, reserved: amounts{}, refunded: amounts{}, refundsReserved: amounts{}, available: amounts{},
		counts: map[paygatev1.CurrencyCode]int64{}, currencies: map[paygatev1.CurrencyCode]bool{},
		keptPayouts: map[string]paygatev1.PayoutReservation{}, keptRefunds: map[string]paygatev1.RefundReservation{},
		ofPayment: map[string]money.Amount{},
	}
	for i := range src.payouts {
		if p := &src.payouts[i]; p.Spec.MerchantRef.Name == merchant && p.Spec.Environment == env && !l.arch.Payouts[string(p.UID)] {
			l.payouts[p.Name] = p
		}
	}
	for i := range src.refunds {
		if f := &src.refunds[i]; f.Spec.MerchantRef.Name == merchant && f.Spec.Environment == env && !l.arch.Refunds[string(f.UID)] {
			l.refunds[f.Name] = f
		}
	}
	// What the archived refunds of a payment returned counts against its amount too.
	for trx, a := range l.arch.RefundedOf {
		l.ofPayment[trx] = l.ofPayment[trx].Add(a)
	}
	return l
}

// addPayments adds the live payments' sums and the archive's carried-forward ones.
func (l *ledgerPass) addPayments(live PaymentSums) {
	l.observed = live.Observed
	for c, a := range live.Settled {
		l.settled.add(c, a)
	}
	for c, n := range live.Counts {
		l.counts[c] += n
	}
	for _, cf := range l.arch.Carried {
		if cf.Merchant != l.merchant || cf.Environment != l.env {
			continue
		}
		l.settled.add(cf.Currency, cf.Settled)
		l.counts[cf.Currency] += cf.SettledPayments
		l.paidOut.add(cf.Currency, cf.PaidOut)
		l.refunded.add(cf.Currency, cf.Refunded)
		l.observed += cf.Payments
	}
}

// holdPayouts carries the Balance's payout reservations over (dropping those of finished
// payouts), rebuilds the ones a lost Balance forgot, and sums the paid-out payouts.
func (l *ledgerPass) holdPayouts(held []paygatev1.PayoutReservation) error {
	for _, r := range held {
		p, ok := l.payouts[r.Payout]
		if (ok && p.Terminal()) || (!ok && l.arch.PayoutNames[r.Payout]) {
			continue // paid out (counted below, or carried forward) or failed (released)
		}
		l.keptPayouts[r.Payout] = r
		if ok && p.Status.ReservedAt == nil {
			l.led.Mirror = append(l.led.Mirror, p.Name)
		}
	}
	for _, p := range l.payouts {
		switch {
		case p.Status.Phase == paygatev1.PayoutSuccess:
			a, err := payoutAmount(p)
			if err != nil {
				return err
			}
			l.paidOut.add(p.Spec.Currency, a)
		case p.Reserved():
			// Reserved by an earlier pass whose Balance was lost: rebuild the reservation.
			if _, ok := l.keptPayouts[p.Name]; !ok {
				l.keptPayouts[p.Name] = paygatev1.PayoutReservation{Payout: p.Name, Currency: p.Spec.Currency, Amount: p.Spec.Amount}
			}
		}
	}
	for _, r := range l.keptPayouts {
		a, err := money.ParseAmount(string(r.Amount))
		if err != nil {
			return fmt.Errorf("reservation of payout %s has an unreadable amount %q: %w", r.Payout, r.Amount, err)
		}
		l.reserved.add(r.Currency, a)
	}
	return nil
}

// holdRefunds is holdPayouts for the refunds: it also sums, by payment, what the payment's
// refunds reserved or refunded.
func (l *ledgerPass) holdRefunds(held []paygatev1.RefundReservation) error {
	for _, r := range held {
		f, ok := l.refunds[r.Refund]
		if (ok && f.Terminal()) || (!ok && l.arch.RefundNames[r.Refund]) {
			continue // refunded (counted below, or carried forward) or failed (released)
		}
		l.keptRefunds[r.Refund] = r
		if ok && f.Status.ReservedAt == nil {
			l.led.MirrorRefunds = append(l.led.MirrorRefunds, f.Name)
		}
	}
	for _, f := range l.refunds {
		switch {
		case f.Status.Phase == paygatev1.RefundSuccess:
			a, err := refundAmount(f)
			if err != nil {
				return err
			}
			l.refunded.add(f.Spec.Currency, a)
			l.ofPayment[f.Spec.Payment.TrxID] = l.ofPayment[f.Spec.Payment.TrxID].Add(a)
		case f.Reserved():
			// Reserved by an earlier pass whose Balance was lost: rebuild the reservation.
			if _, ok := l.keptRefunds[f.Name]; !ok {
				l.keptRefunds[f.Name] = refundReservation(f)
			}
		}
	}
	for _, r := range l.keptRefunds {
		a, err := money.ParseAmount(string(r.Amount))
		if err != nil {
			return fmt.Errorf("reservation of refund %s has an unreadable amount %q: %w", r.Refund, r.Amount, err)
		}
		l.refundsReserved.add(r.Currency, a)
		l.ofPayment[r.TrxID] = l.ofPayment[r.TrxID].Add(a)
	}
	return nil
}

// balance derives each currency's available amount, and checks that what the payouts and refunds
// hold never exceeds the settled payments.
func (l *ledgerPass) balance() error {
	for _, m := range []amounts{l.settled, l.paidOut, l.reserved, l.refunded, l.refundsReserved} {
		for c := range m {
			l.currencies[c] = true
		}
	}
	for c := range l.currencies {
		out := l.paidOut[c].Add(l.reserved[c]).Add(l.refunded[c]).Add(l.refundsReserved[c])
		if out.Cmp(l.settled[c]) > 0 {
			return fmt.Errorf("the payouts and refunds of %s (%s) exceed its settled payments (%s)", c, out, l.settled[c])
		}
		l.available[c], _ = l.settled[c].Sub(out)
	}
	return nil
}

// pendingItem is a pending payout or refund, waiting for its decision.
type pendingItem struct {
	createdAt metav1.MicroTime
	name      string
	payout    *paygatev1.Payout
	refund    *paygatev1.Refund
}

// decide walks the pending payouts and refunds in one creation order (spec.createdAt, then name)
// and reserves or rejects each, while fewer than payouts.MaxOpenReservations reservations,
// payouts' and refunds' together, are open.
func (l *ledgerPass) decide() error {
	var pending []pendingItem
	for _, p := range l.payouts {
		if _, ok := l.keptPayouts[p.Name]; !ok && p.Phase() == paygatev1.PayoutPending && p.Status.ReservedAt == nil {
			pending = append(pending, pendingItem{createdAt: p.Spec.CreatedAt, name: p.Name, payout: p})
		}
	}
	for _, f := range l.refunds {
		if _, ok := l.keptRefunds[f.Name]; !ok && f.Phase() == paygatev1.RefundPending && f.Status.ReservedAt == nil {
			pending = append(pending, pendingItem{createdAt: f.Spec.CreatedAt, name: f.Name, refund: f})
		}
	}
	slices.SortFunc(pending, func(a, b pendingItem) int {
		// A payout and a refund of the same time and name: the payout first, so the order is total.
		return cmp.Or(a.createdAt.Compare(b.createdAt.Time), strings.Compare(a.name, b.name), cmp.Compare(kindRank(a), kindRank(b)))
	})
	for _, it := range pending {
		if len(l.keptPayouts)+len(l.keptRefunds) >= payouts.MaxOpenReservations {
			break // the rest wait for earlier payouts and refunds to finish
		}
		var err error
		if it.payout != nil {
			err = l.decidePayout(it.payout)
		} else {
			err = l.decideRefund(it.refund)
		}
		if errors.Is(err, errAwaitingCover) {
			break // a late settlement's refund waits for its money, and what came after waits behind it
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// errAwaitingCover: a late settlement's refund the balance does not cover yet.
var errAwaitingCover = errors.New("a late settlement's refund waits for the balance to cover it")

func kindRank(it pendingItem) int {
	if it.payout != nil {
		return 0
	}
	return 1
}

// decidePayout reserves a pending payout the available balance covers, and rejects it otherwise.
func (l *ledgerPass) decidePayout(p *paygatev1.Payout) error {
	a, err := payoutAmount(p)
	if err != nil {
		return err
	}
	c := p.Spec.Currency
	if a.Cmp(l.available[c]) > 0 {
		l.led.Reject = append(l.led.Reject, p.Name)
		return nil
	}
	l.available[c], _ = l.available[c].Sub(a)
	l.reserved.add(c, a)
	l.currencies[c] = true
	l.keptPayouts[p.Name] = paygatev1.PayoutReservation{Payout: p.Name, Currency: c, Amount: p.Spec.Amount}
	l.led.Reserve = append(l.led.Reserve, p.Name)
	return nil
}

// decideRefund rejects a pending refund that would return more than its payment's amount (with
// the refunds of the payment reserved or refunded before it), or that the available balance does
// not cover, and reserves it otherwise.
func (l *ledgerPass) decideRefund(f *paygatev1.Refund) error {
	a, err := refundAmount(f)
	if err != nil {
		return err
	}
	limit, err := money.ParseAmount(string(f.Spec.Payment.Amount))
	if err != nil {
		return fmt.Errorf("refund %s has an unreadable payment amount %q: %w", f.Name, f.Spec.Payment.Amount, err)
	}
	c, trx := f.Spec.Currency, f.Spec.Payment.TrxID
	switch {
	case l.ofPayment[trx].Add(a).Cmp(limit) > 0:
		l.led.RejectRefunds = append(l.led.RejectRefunds, RejectedRefund{Name: f.Name, Reason: paygatev1.RefundExceedsPayment})
		return nil
	case a.Cmp(l.available[c]) > 0 && f.Labels[paygatev1.LabelLateSettlement] == "true":
		// The late money may not count yet (the payment's write, or the cache, lags the
		// refund, which is created first): never reject it for the balance.
		return errAwaitingCover
	case a.Cmp(l.available[c]) > 0:
		l.led.RejectRefunds = append(l.led.RejectRefunds, RejectedRefund{Name: f.Name, Reason: paygatev1.RefundInsufficientBalance})
		return nil
	}
	l.available[c], _ = l.available[c].Sub(a)
	l.refundsReserved.add(c, a)
	l.ofPayment[trx] = l.ofPayment[trx].Add(a)
	l.currencies[c] = true
	l.keptRefunds[f.Name] = refundReservation(f)
	l.led.ReserveRefunds = append(l.led.ReserveRefunds, f.Name)
	return nil
}

// result is the Balance status and the decisions of the pass. refunded and refundsReserved are
// written only when not zero (empty is zero), so a merchant without refunds keeps the entries it
// had.
func (l *ledgerPass) result() Ledger {
	led := l.led
	led.Status.ObservedPayments = l.observed
	for c := range l.currencies {
		cur, _ := money.LookupCurrency(string(c))
		fixed := func(a money.Amount) paygatev1.Decimal { return paygatev1.Decimal(a.StringFixed(cur.Scale)) }
		unlessZero := func(a money.Amount) paygatev1.Decimal {
			if a.IsZero() {
				return ""
			}
			return fixed(a)
		}
		led.Status.Currencies = append(led.Status.Currencies, paygatev1.CurrencyBalance{
			Currency:        c,
			Available:       fixed(l.available[c]),
			Settled:         fixed(l.settled[c]),
			Reserved:        fixed(l.reserved[c]),
			PaidOut:         fixed(l.paidOut[c]),
			Refunded:        unlessZero(l.refunded[c]),
			RefundsReserved: unlessZero(l.refundsReserved[c]),
			SettledPayments: l.counts[c],
		})
	}
	slices.SortFunc(led.Status.Currencies, func(a, b paygatev1.CurrencyBalance) int {
		return strings.Compare(string(a.Currency), string(b.Currency))
	})
	for _, r := range l.keptPayouts {
		led.Status.PayoutReservations = append(led.Status.PayoutReservations, r)
	}
	slices.SortFunc(led.Status.PayoutReservations, func(a, b paygatev1.PayoutReservation) int {
		return strings.Compare(a.Payout, b.Payout)
	})
	for _, r := range l.keptRefunds {
		led.Status.RefundReservations = append(led.Status.RefundReservations, r)
	}
	slices.SortFunc(led.Status.RefundReservations, func(a, b paygatev1.RefundReservation) int {
		return strings.Compare(a.Refund, b.Refund)
	})
	slices.Sort(led.Mirror)
	slices.Sort(led.MirrorRefunds)
	return led
}

// payoutAmount reads a payout's amount.
func payoutAmount(p *paygatev1.Payout) (money.Amount, error) {
	a, err := money.ParseAmount(string(p.Spec.Amount))
	if err != nil {
		return money.Amount{}, fmt.Errorf("payout %s has an unreadable amount %q: %w", p.Name, p.Spec.Amount, err)
	}
	return a, nil
}

// refundAmount reads a refund's amount.
func refundAmount(f *paygatev1.Refund) (money.Amount, error) {
	a, err := money.ParseAmount(string(f.Spec.Amount))
	if err != nil {
		return money.Amount{}, fmt.Errorf("refund %s has an unreadable amount %q: %w", f.Name, f.Spec.Amount, err)
	}
	return a, nil
}

// refundReservation is the reservation that holds a refund's amount.
func refundReservation(f *paygatev1.Refund) paygatev1.RefundReservation {
	return paygatev1.RefundReservation{Refund: f.Name, TrxID: f.Spec.Payment.TrxID, Currency: f.Spec.Currency, Amount: f.Spec.Amount}
}
