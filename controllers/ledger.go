// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/payouts"
)

// Ledger is one pass's view of a merchant's money in one environment (docs/ledger.md): the
// balance to store, and the payouts the pass decided.
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
}

// ComputeLedger derives a merchant's balance in env from its payments and payouts and the
// reservations the Balance held, and decides the pending payouts:
//
//	available = settled net payments - paid-out payouts - reserved payouts
//
// A reservation stays until its payout succeeds (it then counts as paid out) or fails (it is
// released: a failed payout counts nowhere, so its release happens exactly once). Pending payouts
// are decided in creation order (spec.createdAt, then name): reserved while the balance covers
// them, rejected when it does not, and left pending while payouts.MaxOpenReservations are open.
// A reservation whose payout the cache does not show stays counted: money is never released on
// the word of a missing object, unless the archive holds that payout (it is then terminal).
//
// arch, when the archive is on, is the archive's part (docs/archive.md): its carried-forward sums
// are added, and live objects it already holds are skipped, so each object counts once.
func ComputeLedger(merchant string, env paygatev1.Environment, payments []paygatev1.Payment, pos []paygatev1.Payout, held []paygatev1.PayoutReservation, arch *archive.LedgerView) (Ledger, error) {
	if arch == nil {
		arch = &archive.LedgerView{}
	}
	sums, err := SumPayments(merchant, env, payments, arch.Payments)
	if err != nil {
		return Ledger{}, err
	}
	return computeLedger(merchant, env, sums, pos, held, arch)
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

// SumPayments sums a merchant's payments in env, skipping the UIDs in skip (archived objects
// still live, counted in carried_forward).
func SumPayments(merchant string, env paygatev1.Environment, payments []paygatev1.Payment, skip map[string]bool) (PaymentSums, error) {
	sums := PaymentSums{Settled: map[paygatev1.CurrencyCode]money.Amount{}, Counts: map[paygatev1.CurrencyCode]int64{}}
	for i := range payments {
		p := &payments[i]
		if p.Spec.MerchantRef.Name != merchant || p.Spec.Environment != env || skip[string(p.UID)] {
			continue
		}
		sums.Observed++
		if p.Status.Phase != paygatev1.PaymentSuccess {
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
func computeLedger(merchant string, env paygatev1.Environment, live PaymentSums, pos []paygatev1.Payout, held []paygatev1.PayoutReservation, arch *archive.LedgerView) (Ledger, error) {
	if arch == nil {
		arch = &archive.LedgerView{}
	}
	settled := map[paygatev1.CurrencyCode]money.Amount{}
	counts := map[paygatev1.CurrencyCode]int64{}
	paid := map[paygatev1.CurrencyCode]money.Amount{}
	observed := live.Observed
	for c, a := range live.Settled {
		settled[c] = a
	}
	for c, n := range live.Counts {
		counts[c] = n
	}
	for _, cf := range arch.Carried {
		if cf.Merchant != merchant || cf.Environment != env {
			continue
		}
		settled[cf.Currency] = settled[cf.Currency].Add(cf.Settled)
		counts[cf.Currency] += cf.SettledPayments
		paid[cf.Currency] = paid[cf.Currency].Add(cf.PaidOut)
		observed += cf.Payments
	}

	byName := map[string]*paygatev1.Payout{}
	for i := range pos {
		if p := &pos[i]; p.Spec.MerchantRef.Name == merchant && p.Spec.Environment == env && !arch.Payouts[string(p.UID)] {
			byName[p.Name] = p
		}
	}
	amountOf := func(p *paygatev1.Payout) (money.Amount, error) {
		a, err := money.ParseAmount(string(p.Spec.Amount))
		if err != nil {
			return money.Amount{}, fmt.Errorf("payout %s has an unreadable amount %q: %w", p.Name, p.Spec.Amount, err)
		}
		return a, nil
	}

	var led Ledger
	reserved := map[paygatev1.CurrencyCode]money.Amount{}
	kept := map[string]paygatev1.PayoutReservation{}
	for _, r := range held {
		p, ok := byName[r.Payout]
		if (ok && p.Terminal()) || (!ok && arch.PayoutNames[r.Payout]) {
			continue // paid out (counted below, or carried forward) or failed (released)
		}
		kept[r.Payout] = r
		if ok && p.Status.ReservedAt == nil {
			led.Mirror = append(led.Mirror, p.Name)
		}
	}
	for _, p := range byName {
		switch {
		case p.Status.Phase == paygatev1.PayoutSuccess:
			a, err := amountOf(p)
			if err != nil {
				return Ledger{}, err
			}
			paid[p.Spec.Currency] = paid[p.Spec.Currency].Add(a)
		case p.Reserved():
			// Reserved by an earlier pass whose Balance was lost: rebuild the reservation.
			if _, ok := kept[p.Name]; !ok {
				kept[p.Name] = paygatev1.PayoutReservation{Payout: p.Name, Currency: p.Spec.Currency, Amount: p.Spec.Amount}
			}
		}
	}
	for _, r := range kept {
		a, err := money.ParseAmount(string(r.Amount))
		if err != nil {
			return Ledger{}, fmt.Errorf("reservation of payout %s has an unreadable amount %q: %w", r.Payout, r.Amount, err)
		}
		reserved[r.Currency] = reserved[r.Currency].Add(a)
	}
	available := map[paygatev1.CurrencyCode]money.Amount{}
	currencies := map[paygatev1.CurrencyCode]bool{}
	for _, m := range []map[paygatev1.CurrencyCode]money.Amount{settled, paid, reserved} {
		for c := range m {
			currencies[c] = true
		}
	}
	for c := range currencies {
		out := paid[c].Add(reserved[c])
		if out.Cmp(settled[c]) > 0 {
			return Ledger{}, fmt.Errorf("the payouts of %s (%s) exceed its settled payments (%s)", c, out, settled[c])
		}
		available[c], _ = settled[c].Sub(out)
	}

	// Decide the pending payouts in creation order.
	var pending []*paygatev1.Payout
	for _, p := range byName {
		if _, ok := kept[p.Name]; !ok && p.Phase() == paygatev1.PayoutPending && p.Status.ReservedAt == nil {
			pending = append(pending, p)
		}
	}
	slices.SortFunc(pending, func(a, b *paygatev1.Payout) int {
		return cmp.Or(a.Spec.CreatedAt.Compare(b.Spec.CreatedAt.Time), strings.Compare(a.Name, b.Name))
	})
	for _, p := range pending {
		if len(kept) >= payouts.MaxOpenReservations {
			break // the rest wait for earlier payouts to finish
		}
		a, err := amountOf(p)
		if err != nil {
			return Ledger{}, err
		}
		c := p.Spec.Currency
		if a.Cmp(available[c]) > 0 {
			led.Reject = append(led.Reject, p.Name)
			continue
		}
		available[c], _ = available[c].Sub(a)
		reserved[c] = reserved[c].Add(a)
		currencies[c] = true
		kept[p.Name] = paygatev1.PayoutReservation{Payout: p.Name, Currency: c, Amount: p.Spec.Amount}
		led.Reserve = append(led.Reserve, p.Name)
	}

	led.Status.ObservedPayments = observed
	for c := range currencies {
		cur, _ := money.LookupCurrency(string(c))
		led.Status.Currencies = append(led.Status.Currencies, paygatev1.CurrencyBalance{
			Currency:        c,
			Available:       paygatev1.Decimal(available[c].StringFixed(cur.Scale)),
			Settled:         paygatev1.Decimal(settled[c].StringFixed(cur.Scale)),
			Reserved:        paygatev1.Decimal(reserved[c].StringFixed(cur.Scale)),
			PaidOut:         paygatev1.Decimal(paid[c].StringFixed(cur.Scale)),
			SettledPayments: counts[c],
		})
	}
	slices.SortFunc(led.Status.Currencies, func(a, b paygatev1.CurrencyBalance) int {
		return strings.Compare(string(a.Currency), string(b.Currency))
	})
	for _, r := range kept {
		led.Status.PayoutReservations = append(led.Status.PayoutReservations, r)
	}
	slices.SortFunc(led.Status.PayoutReservations, func(a, b paygatev1.PayoutReservation) int {
		return strings.Compare(a.Payout, b.Payout)
	})
	slices.Sort(led.Mirror)
	return led, nil
}
