// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/money"
)

// LedgerDifference is one number the ledger check found different from its recomputation.
type LedgerDifference struct {
	Namespace   string
	Merchant    string
	Environment paygatev1.Environment
	Currency    paygatev1.CurrencyCode
	// Field names the number: settled, paidOut, refunded, settledPayments, observedPayments,
	// available (the invariant available = settled - paidOut - reserved - refunded -
	// refundsReserved >= 0), or carriedForward.<column> (the archive's sums against its rows).
	Field    string
	Stored   string
	Computed string
}

func (d LedgerDifference) String() string {
	return fmt.Sprintf("%s/%s %s %s %s: stored %s, recomputed %s", d.Namespace, d.Merchant, d.Environment, d.Currency, d.Field, d.Stored, d.Computed)
}

// LedgerCheckArchive is what the check reads of the archive.
type LedgerCheckArchive interface {
	LedgerArchive
	AllCarriedForward(ctx context.Context) ([]archive.CarriedForward, error)
	SumArchived(ctx context.Context) ([]archive.CarriedForward, error)
}

// LedgerCheck is what CheckLedgers found.
type LedgerCheck struct {
	// Balances is how many Balance objects were checked.
	Balances int
	// CarriedForward is how many carried-forward entries the archive has (0 without archive).
	CarriedForward int
	Differences    []LedgerDifference
}

// CheckLedgers recomputes every balance from its sources and reports each difference
// (docs/ledger.md, Checking the ledger): the archive's carried-forward sums against its rows, and
// every Balance's settled, paid-out and refunded amounts and counts against the archive's
// carried-forward sums plus the live payments, payouts and refunds, and its
// available amount against the invariant. arch is nil without an archive. A balance whose payment
// settled while the check ran may differ once: a difference that persists across runs is drift.
func CheckLedgers(ctx context.Context, reader client.Reader, arch LedgerCheckArchive) (LedgerCheck, error) {
	var out LedgerCheck
	if arch != nil {
		stored, err := arch.AllCarriedForward(ctx)
		if err != nil {
			return out, err
		}
		summed, err := arch.SumArchived(ctx)
		if err != nil {
			return out, err
		}
		out.CarriedForward = len(stored)
		out.Differences = append(out.Differences, compareCarried(stored, summed)...)
	}
	var (
		balances paygatev1.BalanceList
		payments paygatev1.PaymentList
		payouts  paygatev1.PayoutList
		refunds  paygatev1.RefundList
	)
	for _, l := range []client.ObjectList{&balances, &payments, &payouts, &refunds} {
		if err := reader.List(ctx, l); err != nil {
			return out, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	type key struct{ namespace, merchant string }
	paymentsOf, payoutsOf, refundsOf := map[key][]paygatev1.Payment{}, map[key][]paygatev1.Payout{}, map[key][]paygatev1.Refund{}
	for _, p := range payments.Items {
		k := key{p.Namespace, p.Spec.MerchantRef.Name}
		paymentsOf[k] = append(paymentsOf[k], p)
	}
	for _, p := range payouts.Items {
		k := key{p.Namespace, p.Spec.MerchantRef.Name}
		payoutsOf[k] = append(payoutsOf[k], p)
	}
	for _, f := range refunds.Items {
		k := key{f.Namespace, f.Spec.MerchantRef.Name}
		refundsOf[k] = append(refundsOf[k], f)
	}
	for i := range balances.Items {
		b := &balances.Items[i]
		k := key{b.Namespace, b.Spec.MerchantRef.Name}
		diffs, err := checkBalance(ctx, b, ledgerSources{payouts: payoutsOf[k], refunds: refundsOf[k]}, paymentsOf[k], arch)
		if err != nil {
			return out, err
		}
		out.Balances++
		out.Differences = append(out.Differences, diffs...)
	}
	return out, nil
}

// checkBalance compares one Balance with its recomputation from payments and src's payouts and
// refunds (the Balance's own reservations are held).
func checkBalance(ctx context.Context, b *paygatev1.Balance, src ledgerSources, payments []paygatev1.Payment, arch LedgerCheckArchive) ([]LedgerDifference, error) {
	m, env := b.Spec.MerchantRef.Name, b.Spec.Environment
	var view *archive.LedgerView
	if arch != nil {
		v, err := arch.LedgerView(ctx, b.Namespace, m, env, ArchiveQuery(b, src.refunds, m, env))
		if err != nil {
			return nil, err
		}
		view = &v
	}
	diff := func(c paygatev1.CurrencyCode, field, stored, computed string) LedgerDifference {
		return LedgerDifference{Namespace: b.Namespace, Merchant: m, Environment: env, Currency: c, Field: field, Stored: stored, Computed: computed}
	}
	led, err := ComputeLedger(m, env, payments, src.payouts, b.Status.PayoutReservations, view,
		WithRefunds(src.refunds, b.Status.RefundReservations))
	if err != nil {
		return []LedgerDifference{diff("", "ledger", "", err.Error())}, nil
	}
	var out []LedgerDifference
	if led.Status.ObservedPayments != b.Status.ObservedPayments {
		out = append(out, diff("", "observedPayments", strconv.FormatInt(b.Status.ObservedPayments, 10), strconv.FormatInt(led.Status.ObservedPayments, 10)))
	}
	stored := map[paygatev1.CurrencyCode]paygatev1.CurrencyBalance{}
	for _, c := range b.Status.Currencies {
		stored[c.Currency] = c
		// The invariant on the stored numbers themselves.
		if err := checkInvariant(c); err != nil {
			out = append(out, diff(c.Currency, "available", string(c.Available), err.Error()))
		}
	}
	for _, c := range led.Status.Currencies {
		s, ok := stored[c.Currency]
		if !ok {
			s = paygatev1.CurrencyBalance{Currency: c.Currency, Settled: "0", PaidOut: "0"}
		}
		if !sameAmount(s.Settled, c.Settled) {
			out = append(out, diff(c.Currency, "settled", string(s.Settled), string(c.Settled)))
		}
		if !sameAmount(s.PaidOut, c.PaidOut) {
			out = append(out, diff(c.Currency, "paidOut", string(s.PaidOut), string(c.PaidOut)))
		}
		if !sameAmount(s.Refunded, c.Refunded) {
			out = append(out, diff(c.Currency, "refunded", string(s.Refunded), string(cmp.Or(c.Refunded, "0"))))
		}
		if s.SettledPayments != c.SettledPayments {
			out = append(out, diff(c.Currency, "settledPayments", strconv.FormatInt(s.SettledPayments, 10), strconv.FormatInt(c.SettledPayments, 10)))
		}
		delete(stored, c.Currency)
	}
	for c, s := range stored {
		if !sameAmount(s.Settled, "0") || !sameAmount(s.PaidOut, "0") || !sameAmount(s.Refunded, "0") {
			out = append(out, diff(c, "settled", string(s.Settled), "0"))
		}
	}
	return out, nil
}

// checkInvariant checks available = settled - paidOut - reserved - refunded - refundsReserved >= 0
// on a stored entry (an empty amount is zero).
func checkInvariant(c paygatev1.CurrencyBalance) error {
	parse := func(d paygatev1.Decimal) money.Amount {
		a, err := money.ParseAmount(string(cmp.Or(d, "0")))
		if err != nil {
			return money.Amount{}
		}
		return a
	}
	rest, err := parse(c.Settled).Sub(parse(c.PaidOut).Add(parse(c.Reserved)).Add(parse(c.Refunded)).Add(parse(c.RefundsReserved)))
	if err != nil {
		return fmt.Errorf("settled %s below paidOut %s + reserved %s + refunded %s + refundsReserved %s",
			c.Settled, c.PaidOut, c.Reserved, cmp.Or(c.Refunded, "0"), cmp.Or(c.RefundsReserved, "0"))
	}
	if rest.Cmp(parse(c.Available)) != 0 {
		return fmt.Errorf("settled - paidOut - reserved - refunded - refundsReserved = %s", rest)
	}
	return nil
}

func sameAmount(a, b paygatev1.Decimal) bool {
	x, errX := money.ParseAmount(string(cmp.Or(a, "0")))
	y, errY := money.ParseAmount(string(cmp.Or(b, "0")))
	return errX == nil && errY == nil && x.Cmp(y) == 0
}

// compareCarried reports each carried-forward entry that differs from the sums of the rows.
func compareCarried(stored, summed []archive.CarriedForward) []LedgerDifference {
	type key struct {
		ns, m string
		env   paygatev1.Environment
		c     paygatev1.CurrencyCode
	}
	k := func(c archive.CarriedForward) key { return key{c.Namespace, c.Merchant, c.Environment, c.Currency} }
	rows := map[key]archive.CarriedForward{}
	for _, s := range summed {
		rows[k(s)] = s
	}
	var out []LedgerDifference
	check := func(s, r archive.CarriedForward) {
		add := func(field string, differ bool, stored, computed string) {
			if differ {
				out = append(out, LedgerDifference{Namespace: s.Namespace, Merchant: s.Merchant, Environment: s.Environment, Currency: s.Currency,
					Field: "carriedForward." + field, Stored: stored, Computed: computed})
			}
		}
		counts := func(field string, a, b int64) {
			add(field, a != b, strconv.FormatInt(a, 10), strconv.FormatInt(b, 10))
		}
		add("settled", s.Settled.Cmp(r.Settled) != 0, s.Settled.String(), r.Settled.String())
		add("paidOut", s.PaidOut.Cmp(r.PaidOut) != 0, s.PaidOut.String(), r.PaidOut.String())
		counts("settledPayments", s.SettledPayments, r.SettledPayments)
		counts("paidOutPayouts", s.PaidOutPayouts, r.PaidOutPayouts)
		counts("payments", s.Payments, r.Payments)
		counts("payouts", s.Payouts, r.Payouts)
		add("refunded", s.Refunded.Cmp(r.Refunded) != 0, s.Refunded.String(), r.Refunded.String())
		counts("refundedRefunds", s.RefundedRefunds, r.RefundedRefunds)
		counts("refunds", s.Refunds, r.Refunds)
	}
	for _, s := range stored {
		r, ok := rows[k(s)]
		if !ok {
			r = archive.CarriedForward{Namespace: s.Namespace, Merchant: s.Merchant, Environment: s.Environment, Currency: s.Currency}
		}
		check(s, r)
		delete(rows, k(s))
	}
	for _, r := range rows {
		check(archive.CarriedForward{Namespace: r.Namespace, Merchant: r.Merchant, Environment: r.Environment, Currency: r.Currency}, r)
	}
	slices.SortFunc(out, func(a, b LedgerDifference) int {
		return strings.Compare(a.String(), b.String())
	})
	return out
}
