// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/payouts"
)

// ledgerRefund is a refund of merchant "duka" in sandbox, TZS, of amount from payment trx (whose
// amount, the cap, is paid), created `at` after ledgerEpoch, in phase; a phase other than pending
// is reserved (reservedAt set). mods adjust it.
func ledgerRefund(name, trx, amount, paid string, at time.Duration, phase paygatev1.RefundPhase, mods ...func(*paygatev1.Refund)) paygatev1.Refund {
	f := paygatev1.Refund{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: paygatev1.RefundSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Payment: paygatev1.RefundedPayment{TrxID: trx, Amount: paygatev1.Decimal(paid), AttemptReference: "att-" + trx},
			Amount:  paygatev1.Decimal(amount), Currency: "TZS", CreatedAt: metav1.NewMicroTime(ledgerEpoch.Add(at))},
		Status: paygatev1.RefundStatus{Phase: phase},
	}
	if phase != paygatev1.RefundPending {
		f.Status.ReservedAt = ptrTime(ledgerEpoch.Add(at + time.Millisecond))
	}
	for _, m := range mods {
		m(&f)
	}
	return f
}

// refundMarked is a pending refund the balance controller reserved, not yet sent.
func refundMarked(f *paygatev1.Refund) {
	f.Status.ReservedAt = ptrTime(f.Spec.CreatedAt.Add(time.Millisecond))
}

func refundFailedWith(reason paygatev1.RefundFailureCode) func(*paygatev1.Refund) {
	return func(f *paygatev1.Refund) { f.Status.Reason = string(reason) }
}

// storedAmount reads a stored amount ("" is zero).
func storedAmount(d paygatev1.Decimal) money.Amount {
	if d == "" {
		return money.Amount{}
	}
	return money.MustParseAmount(string(d))
}

func refundIn(currency paygatev1.CurrencyCode) func(*paygatev1.Refund) {
	return func(f *paygatev1.Refund) { f.Spec.Currency = currency }
}

func refundHeld(refund, trx, amount string) paygatev1.RefundReservation {
	return paygatev1.RefundReservation{Refund: refund, TrxID: trx, Currency: "TZS", Amount: paygatev1.Decimal(amount)}
}

// wantRefundBalance is one currency's expected balance, refunds included ("" is a zero that is
// not written).
type wantRefundBalance struct{ available, settled, reserved, paidOut, refunded, refundsReserved string }

func TestComputeLedgerRefunds(t *testing.T) {
	settled := []paygatev1.Payment{
		ledgerPayment("trx-1", paygatev1.PaymentSuccess, "975.00"),  // amount 1000.00
		ledgerPayment("trx-2", paygatev1.PaymentSuccess, "1950.00"), // amount 2000.00
		ledgerPayment("trx-3", paygatev1.PaymentSuccess, "75"),      // amount 100.00
	} // settled 3000.00 TZS

	tests := []struct {
		name          string
		payments      []paygatev1.Payment
		payouts       []paygatev1.Payout
		heldPayouts   []paygatev1.PayoutReservation
		refunds       []paygatev1.Refund
		heldRefunds   []paygatev1.RefundReservation
		want          map[paygatev1.CurrencyCode]wantRefundBalance
		reserve       []string // payouts
		reject        []string // payouts
		reserveRefund []string
		rejectRefund  []RejectedRefund
		mirrorRefund  []string
		holds         []string // the Balance's refund reservations after the pass
		wantErr       string
	}{
		{
			name:     "refunds and payouts are decided in one creation order, not kind by kind or by name",
			payments: settled,
			payouts: []paygatev1.Payout{
				ledgerPayout("po-1", "1000.00", 1*time.Second, paygatev1.PayoutPending),
				ledgerPayout("po-2", "1200.00", 3*time.Second, paygatev1.PayoutPending),
				ledgerPayout("po-3", "100.00", 5*time.Second, paygatev1.PayoutPending),
			},
			refunds: []paygatev1.Refund{
				ledgerRefund("rf-z", "trx-1", "900.00", "1000.00", 2*time.Second, paygatev1.RefundPending),
				ledgerRefund("rf-a", "trx-2", "1000.00", "2000.00", 4*time.Second, paygatev1.RefundPending),
			},
			want:          map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"0.00", "3000.00", "1100.00", "0.00", "", "1900.00"}},
			reserve:       []string{"po-1", "po-3"},
			reject:        []string{"po-2"},
			reserveRefund: []string{"rf-z", "rf-a"},
			holds:         []string{"rf-a", "rf-z"},
		},
		{
			name:         "a payout created before a refund is decided first",
			payments:     settled,
			payouts:      []paygatev1.Payout{ledgerPayout("po-z", "2500.00", time.Second, paygatev1.PayoutPending)},
			refunds:      []paygatev1.Refund{ledgerRefund("rf-a", "trx-1", "600.00", "1000.00", 2*time.Second, paygatev1.RefundPending)},
			want:         map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"500.00", "3000.00", "2500.00", "0.00", "", ""}},
			reserve:      []string{"po-z"},
			rejectRefund: []RejectedRefund{{"rf-a", paygatev1.RefundInsufficientBalance}},
		},
		{
			name:     "a refund above what its payment has left is rejected even when the balance covers it",
			payments: settled,
			refunds: []paygatev1.Refund{
				ledgerRefund("rf-paid", "trx-1", "600.00", "1000.00", 0, paygatev1.RefundSuccess),
				ledgerRefund("rf-over", "trx-1", "400.01", "1000.00", time.Second, paygatev1.RefundPending),
				ledgerRefund("rf-rest", "trx-1", "400.00", "1000.00", 2*time.Second, paygatev1.RefundPending),
			},
			want:          map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"2000.00", "3000.00", "0.00", "0.00", "600.00", "400.00"}},
			reserveRefund: []string{"rf-rest"},
			rejectRefund:  []RejectedRefund{{"rf-over", paygatev1.RefundExceedsPayment}},
			holds:         []string{"rf-rest"},
		},
		{
			name:     "two partial refunds up to the payment's amount, and a third rejected",
			payments: settled,
			refunds: []paygatev1.Refund{
				ledgerRefund("rf-1", "trx-2", "500.00", "2000.00", 1*time.Second, paygatev1.RefundPending),
				ledgerRefund("rf-2", "trx-2", "1500.00", "2000.00", 2*time.Second, paygatev1.RefundPending),
				ledgerRefund("rf-3", "trx-2", "0.01", "2000.00", 3*time.Second, paygatev1.RefundPending),
			},
			want:          map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"1000.00", "3000.00", "0.00", "0.00", "", "2000.00"}},
			reserveRefund: []string{"rf-1", "rf-2"},
			rejectRefund:  []RejectedRefund{{"rf-3", paygatev1.RefundExceedsPayment}},
			holds:         []string{"rf-1", "rf-2"},
		},
		{
			name:          "the payment's amount, not its net amount, caps its refunds: the fee is not given back",
			payments:      settled,
			refunds:       []paygatev1.Refund{ledgerRefund("rf-all", "trx-1", "1000.00", "1000.00", 0, paygatev1.RefundPending)},
			want:          map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"2000.00", "3000.00", "0.00", "0.00", "", "1000.00"}},
			reserveRefund: []string{"rf-all"},
			holds:         []string{"rf-all"},
		},
		{
			name:     "the refunds of one payment never use another's amount",
			payments: settled,
			refunds: []paygatev1.Refund{
				ledgerRefund("rf-1", "trx-1", "1000.00", "1000.00", 1*time.Second, paygatev1.RefundPending),
				ledgerRefund("rf-2", "trx-2", "1000.00", "2000.00", 2*time.Second, paygatev1.RefundPending),
				ledgerRefund("rf-3", "trx-1", "0.01", "1000.00", 3*time.Second, paygatev1.RefundPending),
			},
			want:          map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"1000.00", "3000.00", "0.00", "0.00", "", "2000.00"}},
			reserveRefund: []string{"rf-1", "rf-2"},
			rejectRefund:  []RejectedRefund{{"rf-3", paygatev1.RefundExceedsPayment}},
			holds:         []string{"rf-1", "rf-2"},
		},
		{
			name:     "exceeding the payment is the reason when the balance does not cover it either",
			payments: []paygatev1.Payment{ledgerPayment("trx-3", paygatev1.PaymentSuccess, "75")},
			refunds: []paygatev1.Refund{
				ledgerRefund("rf-over", "trx-3", "200.00", "100.00", 1*time.Second, paygatev1.RefundPending),
				ledgerRefund("rf-short", "trx-3", "90.00", "100.00", 2*time.Second, paygatev1.RefundPending),
				ledgerRefund("rf-fits", "trx-3", "75.00", "100.00", 3*time.Second, paygatev1.RefundPending),
			},
			want:          map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"0.00", "75.00", "0.00", "0.00", "", "75.00"}},
			reserveRefund: []string{"rf-fits"},
			rejectRefund:  []RejectedRefund{{"rf-over", paygatev1.RefundExceedsPayment}, {"rf-short", paygatev1.RefundInsufficientBalance}},
			holds:         []string{"rf-fits"},
		},
		{
			name:     "a refund the balance does not cover is rejected while a later smaller one still fits",
			payments: settled,
			payouts:  []paygatev1.Payout{ledgerPayout("po-flight", "2500.00", 0, paygatev1.PayoutProcessing)},
			refunds: []paygatev1.Refund{
				ledgerRefund("rf-1", "trx-1", "600.00", "1000.00", 1*time.Second, paygatev1.RefundPending),
				ledgerRefund("rf-2", "trx-2", "500.00", "2000.00", 2*time.Second, paygatev1.RefundPending),
			},
			heldPayouts:   []paygatev1.PayoutReservation{reservation("po-flight", "2500.00")},
			want:          map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"0.00", "3000.00", "2500.00", "0.00", "", "500.00"}},
			reserveRefund: []string{"rf-2"},
			rejectRefund:  []RejectedRefund{{"rf-1", paygatev1.RefundInsufficientBalance}},
			holds:         []string{"rf-2"},
		},
		{
			name:     "a failed refund releases its reservation, against the balance and its payment",
			payments: settled,
			refunds: []paygatev1.Refund{
				ledgerRefund("rf-failed", "trx-1", "1000.00", "1000.00", 0, paygatev1.RefundFailed, refundFailedWith(paygatev1.RefundResolvedFailed)),
				ledgerRefund("rf-next", "trx-1", "1000.00", "1000.00", time.Second, paygatev1.RefundPending),
			},
			heldRefunds:   []paygatev1.RefundReservation{refundHeld("rf-failed", "trx-1", "1000.00")},
			want:          map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"2000.00", "3000.00", "0.00", "0.00", "", "1000.00"}},
			reserveRefund: []string{"rf-next"},
			holds:         []string{"rf-next"},
		},
		{
			name:     "a refund failed before any reservation uses nothing of its payment",
			payments: settled,
			refunds: []paygatev1.Refund{
				ledgerRefund("rf-unsupported", "trx-1", "1000.00", "1000.00", 0, paygatev1.RefundPending,
					func(f *paygatev1.Refund) {
						f.Status.Phase, f.Status.Reason = paygatev1.RefundFailed, string(paygatev1.RefundNotSupported)
					}),
				ledgerRefund("rf-next", "trx-1", "1000.00", "1000.00", time.Second, paygatev1.RefundPending),
			},
			want:          map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"2000.00", "3000.00", "0.00", "0.00", "", "1000.00"}},
			reserveRefund: []string{"rf-next"},
			holds:         []string{"rf-next"},
		},
		{
			name:        "success moves the reservation to refunded",
			payments:    settled,
			refunds:     []paygatev1.Refund{ledgerRefund("rf-done", "trx-2", "500.00", "2000.00", 0, paygatev1.RefundSuccess)},
			heldRefunds: []paygatev1.RefundReservation{refundHeld("rf-done", "trx-2", "500.00")},
			want:        map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"2500.00", "3000.00", "0.00", "0.00", "500.00", ""}},
		},
		{
			name:          "a reservation whose refund the cache does not show stays counted, against the balance and its payment",
			payments:      settled,
			refunds:       []paygatev1.Refund{ledgerRefund("rf-new", "trx-1", "300.00", "1000.00", 0, paygatev1.RefundPending)},
			heldRefunds:   []paygatev1.RefundReservation{refundHeld("rf-unseen", "trx-1", "800.00")},
			want:          map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"2200.00", "3000.00", "0.00", "0.00", "", "800.00"}},
			rejectRefund:  []RejectedRefund{{"rf-new", paygatev1.RefundExceedsPayment}},
			holds:         []string{"rf-unseen"},
			reserveRefund: nil,
		},
		{
			name:     "a lost Balance is rebuilt from the refunds' reservedAt",
			payments: settled,
			refunds: []paygatev1.Refund{
				ledgerRefund("rf-flight", "trx-2", "1000.00", "2000.00", 0, paygatev1.RefundProcessing),
				ledgerRefund("rf-marked", "trx-2", "500.00", "2000.00", time.Second, paygatev1.RefundPending, refundMarked),
				ledgerRefund("rf-paid", "trx-2", "300.00", "2000.00", 2*time.Second, paygatev1.RefundSuccess),
				ledgerRefund("rf-pending", "trx-2", "300.00", "2000.00", 3*time.Second, paygatev1.RefundPending),
			},
			want:         map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"1200.00", "3000.00", "0.00", "0.00", "300.00", "1500.00"}},
			rejectRefund: []RejectedRefund{{"rf-pending", paygatev1.RefundExceedsPayment}},
			holds:        []string{"rf-flight", "rf-marked"},
		},
		{
			name:     "a reservation written before its refund was marked is mirrored, not decided again",
			payments: settled,
			refunds: []paygatev1.Refund{
				ledgerRefund("rf-unmarked", "trx-2", "2000.00", "2000.00", 0, paygatev1.RefundPending, func(f *paygatev1.Refund) { f.Status.Phase = "" }),
				ledgerRefund("rf-later", "trx-2", "1.00", "2000.00", time.Second, paygatev1.RefundPending),
			},
			heldRefunds:  []paygatev1.RefundReservation{refundHeld("rf-unmarked", "trx-2", "2000.00")},
			want:         map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"1000.00", "3000.00", "0.00", "0.00", "", "2000.00"}},
			mirrorRefund: []string{"rf-unmarked"},
			rejectRefund: []RejectedRefund{{"rf-later", paygatev1.RefundExceedsPayment}},
			holds:        []string{"rf-unmarked"},
		},
		{
			name: "currencies have separate balances",
			payments: append(slices.Clone(settled),
				ledgerPayment("trx-kes", paygatev1.PaymentSuccess, "100.00", func(p *paygatev1.Payment) { p.Spec.Currency = "KES" })),
			refunds: []paygatev1.Refund{
				ledgerRefund("rf-kes", "trx-kes", "110.00", "120.00", 0, paygatev1.RefundPending, refundIn("KES")),
				ledgerRefund("rf-tzs", "trx-1", "110.00", "1000.00", time.Second, paygatev1.RefundPending),
			},
			want: map[paygatev1.CurrencyCode]wantRefundBalance{
				"TZS": {"2890.00", "3000.00", "0.00", "0.00", "", "110.00"},
				"KES": {"100.00", "100.00", "0.00", "0.00", "", ""},
			},
			reserveRefund: []string{"rf-tzs"},
			rejectRefund:  []RejectedRefund{{"rf-kes", paygatev1.RefundInsufficientBalance}},
			holds:         []string{"rf-tzs"},
		},
		{
			name:     "environments and merchants never mix",
			payments: settled,
			refunds: []paygatev1.Refund{
				ledgerRefund("rf-big", "trx-2", "1950.01", "2000.00", 0, paygatev1.RefundPending),
				ledgerRefund("rf-prod", "trx-2", "1.00", "2000.00", time.Second, paygatev1.RefundPending,
					func(f *paygatev1.Refund) { f.Spec.Environment = paygatev1.EnvironmentProduction }),
				ledgerRefund("rf-prod-paid", "trx-2", "1500.00", "2000.00", time.Second, paygatev1.RefundSuccess,
					func(f *paygatev1.Refund) { f.Spec.Environment = paygatev1.EnvironmentProduction }),
				ledgerRefund("rf-other", "trx-2", "1000.00", "2000.00", time.Second, paygatev1.RefundProcessing,
					func(f *paygatev1.Refund) { f.Spec.MerchantRef.Name = "other" }),
			},
			want:          map[paygatev1.CurrencyCode]wantRefundBalance{"TZS": {"1049.99", "3000.00", "0.00", "0.00", "", "1950.01"}},
			reserveRefund: []string{"rf-big"},
			holds:         []string{"rf-big"},
		},
		{
			name:     "an unreadable refund amount is an error",
			payments: settled,
			refunds:  []paygatev1.Refund{ledgerRefund("rf-bad", "trx-1", "1,00", "1000.00", 0, paygatev1.RefundPending)},
			wantErr:  "refund rf-bad has an unreadable amount",
		},
		{
			name:     "an unreadable refunded amount is an error",
			payments: settled,
			refunds:  []paygatev1.Refund{ledgerRefund("rf-bad", "trx-1", "x", "1000.00", 0, paygatev1.RefundSuccess)},
			wantErr:  "refund rf-bad has an unreadable amount",
		},
		{
			name:     "an unreadable payment amount is an error",
			payments: settled,
			refunds:  []paygatev1.Refund{ledgerRefund("rf-bad", "trx-1", "1.00", "", 0, paygatev1.RefundPending)},
			wantErr:  "refund rf-bad has an unreadable payment amount",
		},
		{
			name:        "an unreadable refund reservation is an error",
			payments:    settled,
			heldRefunds: []paygatev1.RefundReservation{refundHeld("rf-gone", "trx-1", "abc")},
			wantErr:     "reservation of refund rf-gone has an unreadable amount",
		},
		{
			name:     "refunds above the settled payments are an error, never a negative balance",
			payments: settled,
			refunds:  []paygatev1.Refund{ledgerRefund("rf-paid", "trx-x", "3000.01", "5000.00", 0, paygatev1.RefundSuccess)},
			wantErr:  "exceed its settled payments",
		},
		{
			name:        "payouts and refunds together above the settled payments are an error",
			payments:    settled,
			payouts:     []paygatev1.Payout{ledgerPayout("po-paid", "2000.00", 0, paygatev1.PayoutSuccess)},
			heldRefunds: []paygatev1.RefundReservation{refundHeld("rf-unseen", "trx-2", "1000.01")},
			wantErr:     "exceed its settled payments",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			led, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, tt.payments, tt.payouts, tt.heldPayouts, nil,
				WithRefunds(tt.refunds, tt.heldRefunds))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ComputeLedger error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ComputeLedger: %v", err)
			}
			checkRefundLedger(t, led, tt.want)
			for what, pair := range map[string][2][]string{
				"Reserve": {led.Reserve, tt.reserve}, "Reject": {led.Reject, tt.reject},
				"ReserveRefunds": {led.ReserveRefunds, tt.reserveRefund}, "MirrorRefunds": {led.MirrorRefunds, tt.mirrorRefund},
				"refund reservations": {refundReservationNames(led), tt.holds},
			} {
				if !slices.Equal(pair[0], pair[1]) {
					t.Errorf("%s = %q, want %q", what, pair[0], pair[1])
				}
			}
			if !slices.Equal(led.RejectRefunds, tt.rejectRefund) {
				t.Errorf("RejectRefunds = %v, want %v", led.RejectRefunds, tt.rejectRefund)
			}

			// A pass over what this pass stored (its decisions applied) changes nothing.
			again, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, tt.payments, applyLedger(tt.payouts, led), led.Status.PayoutReservations, nil,
				WithRefunds(applyRefundLedger(tt.refunds, led), led.Status.RefundReservations))
			if err != nil {
				t.Fatalf("second pass: %v", err)
			}
			if n := len(again.Reserve) + len(again.Reject) + len(again.Mirror) + len(again.ReserveRefunds) + len(again.RejectRefunds) + len(again.MirrorRefunds); n != 0 {
				t.Errorf("second pass decided again: %+v", again)
			}
			checkRefundLedger(t, again, tt.want)
		})
	}
}

// checkRefundLedger compares a ledger's balances with want and checks the invariant on each:
// available = settled - paidOut - reserved - refunded - refundsReserved, never negative.
func checkRefundLedger(t *testing.T, led Ledger, want map[paygatev1.CurrencyCode]wantRefundBalance) {
	t.Helper()
	got := map[paygatev1.CurrencyCode]wantRefundBalance{}
	for _, c := range led.Status.Currencies {
		got[c.Currency] = wantRefundBalance{string(c.Available), string(c.Settled), string(c.Reserved), string(c.PaidOut), string(c.Refunded), string(c.RefundsReserved)}
		out := storedAmount(c.PaidOut).Add(storedAmount(c.Reserved)).Add(storedAmount(c.Refunded)).Add(storedAmount(c.RefundsReserved))
		if sum := out.Add(storedAmount(c.Available)); !sum.Equal(storedAmount(c.Settled)) {
			t.Errorf("%s: paid out + reserved + refunded + refunds reserved + available = %s, settled %s", c.Currency, sum, c.Settled)
		}
	}
	if len(got) != len(want) {
		t.Errorf("currencies = %v, want %v", got, want)
	}
	for c, w := range want {
		if got[c] != w {
			t.Errorf("%s balance = %+v, want %+v", c, got[c], w)
		}
	}
}

func refundReservationNames(led Ledger) []string {
	var out []string
	for _, r := range led.Status.RefundReservations {
		out = append(out, r.Refund)
	}
	return out
}

// applyRefundLedger is what the balance controller writes on the refunds after the Balance:
// reservedAt on the reserved and mirrored ones, failed with the reason on the rejected ones.
func applyRefundLedger(in []paygatev1.Refund, led Ledger) []paygatev1.Refund {
	out := make([]paygatev1.Refund, len(in))
	for i := range in {
		f := *in[i].DeepCopy()
		rejected := slices.IndexFunc(led.RejectRefunds, func(r RejectedRefund) bool { return r.Name == f.Name })
		switch {
		case slices.Contains(led.ReserveRefunds, f.Name), slices.Contains(led.MirrorRefunds, f.Name):
			f.Status.ReservedAt, f.Status.Phase = ptrTime(ledgerEpoch.Add(time.Hour)), paygatev1.RefundPending
		case rejected >= 0:
			f.Status.Phase, f.Status.Reason = paygatev1.RefundFailed, string(led.RejectRefunds[rejected].Reason)
		}
		out[i] = f
	}
	return out
}

// TestComputeLedgerRefundReleasesOnce follows one refund through its life, pass after pass: a
// failure gives the money back once, to the balance and to the payment's amount, however often the
// pass repeats or reads a stale Balance.
func TestComputeLedgerRefundReleasesOnce(t *testing.T) {
	payments := []paygatev1.Payment{ledgerPayment("trx-1", paygatev1.PaymentSuccess, "1000.00")}
	pass := func(refunds []paygatev1.Refund, held []paygatev1.RefundReservation) Ledger {
		t.Helper()
		led, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, payments, nil, nil, nil, WithRefunds(refunds, held))
		if err != nil {
			t.Fatal(err)
		}
		return led
	}
	available := func(led Ledger) string { return string(led.Status.Currencies[0].Available) }

	rf := ledgerRefund("rf-1", "trx-1", "400.00", "1000.00", 0, paygatev1.RefundPending)
	led := pass([]paygatev1.Refund{rf}, nil)
	if available(led) != "600.00" || !slices.Equal(led.ReserveRefunds, []string{"rf-1"}) {
		t.Fatalf("reserved: available %s, reserve %q", available(led), led.ReserveRefunds)
	}
	held := led.Status.RefundReservations
	rf.Status.ReservedAt, rf.Status.Phase = ptrTime(ledgerEpoch.Add(time.Second)), paygatev1.RefundProcessing
	if led = pass([]paygatev1.Refund{rf}, held); available(led) != "600.00" || len(led.Status.RefundReservations) != 1 {
		t.Fatalf("in flight: available %s, reservations %v", available(led), led.Status.RefundReservations)
	}

	rf.Status.Phase, rf.Status.Reason = paygatev1.RefundFailed, "PROVIDER_REJECTED"
	for i := range 3 {
		led = pass([]paygatev1.Refund{rf}, held)
		if available(led) != "1000.00" || len(led.Status.RefundReservations) != 0 || led.Status.Currencies[0].RefundsReserved != "" {
			t.Fatalf("pass %d after the failure: %+v, reservations %v; want 1000.00 available and none held",
				i, led.Status.Currencies[0], led.Status.RefundReservations)
		}
		held = led.Status.RefundReservations
	}
	// A stale Balance that still holds the failed refund's reservation releases it, once; the
	// payment's whole amount may be refunded again.
	again := ledgerRefund("rf-2", "trx-1", "1000.00", "1000.00", time.Minute, paygatev1.RefundPending)
	led = pass([]paygatev1.Refund{rf, again}, []paygatev1.RefundReservation{refundHeld("rf-1", "trx-1", "400.00")})
	if available(led) != "0.00" || !slices.Equal(refundReservationNames(led), []string{"rf-2"}) || len(led.RejectRefunds) != 0 {
		t.Fatalf("stale reservation: available %s, reservations %q, rejected %v", available(led), refundReservationNames(led), led.RejectRefunds)
	}
}

// TestComputeLedgerOpenCapCountsRefunds: payouts and refunds share payouts.MaxOpenReservations
// open reservations; past it both wait in pending, in creation order.
func TestComputeLedgerOpenCapCountsRefunds(t *testing.T) {
	payments := []paygatev1.Payment{ledgerPayment("trx-1", paygatev1.PaymentSuccess, "1000000.00")}
	var open []paygatev1.Payout
	var held []paygatev1.PayoutReservation
	for i := range payouts.MaxOpenReservations - 3 {
		name := fmt.Sprintf("po-open-%03d", i)
		open = append(open, ledgerPayout(name, "1.00", time.Duration(i), paygatev1.PayoutProcessing))
		held = append(held, reservation(name, "1.00"))
	}
	refunds := []paygatev1.Refund{
		ledgerRefund("rf-open", "trx-1", "1.00", "1000.00", time.Minute, paygatev1.RefundProcessing),
		ledgerRefund("rf-new-1", "trx-1", "1.00", "1000.00", time.Hour, paygatev1.RefundPending),
		ledgerRefund("rf-new-2", "trx-1", "1.00", "1000.00", time.Hour+2, paygatev1.RefundPending),
	}
	pending := []paygatev1.Payout{
		ledgerPayout("po-new-1", "1.00", time.Hour+1, paygatev1.PayoutPending),
		ledgerPayout("po-new-2", "1.00", time.Hour+3, paygatev1.PayoutPending),
	}
	all := append(slices.Clone(open), pending...)
	heldRefunds := []paygatev1.RefundReservation{refundHeld("rf-open", "trx-1", "1.00")}
	led, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, payments, all, held, nil, WithRefunds(refunds, heldRefunds))
	if err != nil {
		t.Fatal(err)
	}
	// 97 payouts and rf-open are open: rf-new-1 and po-new-1 fill the cap; the later two wait.
	if !slices.Equal(led.ReserveRefunds, []string{"rf-new-1"}) || !slices.Equal(led.Reserve, []string{"po-new-1"}) {
		t.Fatalf("ReserveRefunds = %q, Reserve = %q; want [rf-new-1] and [po-new-1]", led.ReserveRefunds, led.Reserve)
	}
	if len(led.Reject)+len(led.RejectRefunds) != 0 {
		t.Fatalf("rejected beyond the cap: %q, %v", led.Reject, led.RejectRefunds)
	}
	if n := len(led.Status.PayoutReservations) + len(led.Status.RefundReservations); n != payouts.MaxOpenReservations {
		t.Fatalf("%d reservations open, want the cap %d", n, payouts.MaxOpenReservations)
	}

	// The open refund finishes: the next in creation order, rf-new-2, is reserved, not po-new-2.
	all, refunds = applyLedger(all, led), applyRefundLedger(refunds, led)
	refunds[0].Status.Phase = paygatev1.RefundSuccess
	led2, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, payments, all, led.Status.PayoutReservations, nil,
		WithRefunds(refunds, led.Status.RefundReservations))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(led2.ReserveRefunds, []string{"rf-new-2"}) || len(led2.Reserve) != 0 {
		t.Fatalf("after one finished: ReserveRefunds %q, Reserve %q; want [rf-new-2] and none", led2.ReserveRefunds, led2.Reserve)
	}
}

func TestComputeLedgerRefundErrorsAreWrapped(t *testing.T) {
	_, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox,
		[]paygatev1.Payment{ledgerPayment("trx-1", paygatev1.PaymentSuccess, "10.00")}, nil, nil, nil,
		WithRefunds([]paygatev1.Refund{ledgerRefund("rf-bad", "trx-1", "1.2.3", "10.00", 0, paygatev1.RefundPending)}, nil))
	if !errors.Is(err, money.ErrSyntax) {
		t.Fatalf("error %v does not wrap money.ErrSyntax", err)
	}
}

// TestBalanceReconcilerMarksRefunds runs the balance controller's passes over a fake API server:
// the Balance holds the refunds it reserved (and the amounts), and each decided refund records
// it (reservedAt, or failed with the reason); a failed refund's reservation is released.
func TestBalanceReconcilerMarksRefunds(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	m := &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "duka", UID: "m-uid"}}
	paid := indexPayment("a", paygatev1.PaymentSuccess, "975.00") // amount 1500
	paid.Labels = map[string]string{paygatev1.LabelMerchant: "duka"}
	inShop := func(f paygatev1.Refund) *paygatev1.Refund {
		f.Namespace = "shop"
		f.Labels = map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelPayment: f.Spec.Payment.TrxID}
		return &f
	}
	fits := inShop(ledgerRefund("rf-fits", "trx-a", "500.00", "1500.00", 1*time.Second, paygatev1.RefundPending))
	over := inShop(ledgerRefund("rf-over", "trx-a", "1000.01", "1500.00", 2*time.Second, paygatev1.RefundPending))
	short := inShop(ledgerRefund("rf-short", "trx-a", "475.01", "1500.00", 3*time.Second, paygatev1.RefundPending))
	payout := ledgerPayout("po-rest", "475.00", 4*time.Second, paygatev1.PayoutPending)
	payout.Namespace, payout.Labels = "shop", map[string]string{paygatev1.LabelMerchant: "duka"}
	c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(m, paid, fits, over, short, &payout).
		WithStatusSubresource(&paygatev1.Balance{}, &paygatev1.Payout{}, &paygatev1.Refund{}).Build()
	r := &BalanceReconciler{Client: c, Clock: testingclock.NewFakeClock(now), RecountEvery: 10 * time.Minute}
	seedLedger(r, paid)

	pass := func() paygatev1.Balance {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "duka"}}); err != nil {
			t.Fatal(err)
		}
		var b paygatev1.Balance
		if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: paygatev1.BalanceName("duka", paygatev1.EnvironmentSandbox)}, &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	refund := func(name string) paygatev1.Refund {
		t.Helper()
		var f paygatev1.Refund
		if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, &f); err != nil {
			t.Fatal(err)
		}
		return f
	}

	b := pass()
	want := paygatev1.CurrencyBalance{Currency: "TZS", Available: "0.00", Settled: "975.00", Reserved: "475.00", PaidOut: "0.00",
		RefundsReserved: "500.00", SettledPayments: 1}
	if len(b.Status.Currencies) != 1 || b.Status.Currencies[0] != want {
		t.Fatalf("balance %+v, want %+v", b.Status.Currencies, want)
	}
	if got := b.Status.RefundReservations; !slices.Equal(got, []paygatev1.RefundReservation{refundHeld("rf-fits", "trx-a", "500.00")}) {
		t.Fatalf("refund reservations %+v, want rf-fits's", got)
	}
	for _, tt := range []struct {
		name     string
		reserved bool
		phase    paygatev1.RefundPhase
		reason   paygatev1.RefundFailureCode
	}{
		{"rf-fits", true, paygatev1.RefundPending, ""},
		{"rf-over", false, paygatev1.RefundFailed, paygatev1.RefundExceedsPayment},
		{"rf-short", false, paygatev1.RefundFailed, paygatev1.RefundInsufficientBalance},
	} {
		f := refund(tt.name)
		if (f.Status.ReservedAt != nil) != tt.reserved || f.Status.Phase != tt.phase || f.Status.Reason != string(tt.reason) || f.Status.UpdatedAt == nil {
			t.Errorf("%s: reservedAt %v, phase %q, reason %q; want reserved %v, %q, %q", tt.name, f.Status.ReservedAt, f.Status.Phase, f.Status.Reason, tt.reserved, tt.phase, tt.reason)
		}
	}

	// The provider refuses rf-fits: the next pass releases its 500.00, once.
	f := refund("rf-fits")
	f.Status.Phase, f.Status.Reason = paygatev1.RefundFailed, "PROVIDER_REJECTED"
	if err := c.Status().Update(ctx, &f); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		b = pass()
		want.Available, want.RefundsReserved = "500.00", ""
		if len(b.Status.Currencies) != 1 || b.Status.Currencies[0] != want || len(b.Status.RefundReservations) != 0 {
			t.Fatalf("after the failure: %+v, reservations %+v; want %+v and none", b.Status.Currencies, b.Status.RefundReservations, want)
		}
	}
}

// TestComputeLedgerLateSettlementRefundWaits: the refund the payment controller makes of a late
// settlement is created before the late money counts; the balance never rejects it for the
// balance, it waits, and what came after it waits behind it; once the money counts it is
// reserved first.
func TestComputeLedgerLateSettlementRefundWaits(t *testing.T) {
	late := ledgerRefund("rf-late", "trx-late", "1000.00", "1000.00", 0, paygatev1.RefundPending, func(r *paygatev1.Refund) {
		r.Labels = map[string]string{paygatev1.LabelLateSettlement: "true"}
	})
	after := ledgerRefund("rf-after", "trx-1", "100.00", "500.00", time.Minute, paygatev1.RefundPending)
	pass := func(payments ...paygatev1.Payment) Ledger {
		t.Helper()
		led, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, payments, nil, nil, nil, WithRefunds([]paygatev1.Refund{late, after}, nil))
		if err != nil {
			t.Fatal(err)
		}
		return led
	}
	paid := ledgerPayment("trx-1", paygatev1.PaymentSuccess, "500.00")
	led := pass(paid)
	if len(led.RejectRefunds) != 0 || len(led.ReserveRefunds) != 0 {
		t.Fatalf("before the late money counts: reserve %q, reject %v; want both waiting", led.ReserveRefunds, led.RejectRefunds)
	}
	// The late settlement now counts (as the payment controller stores it under Refund: net = gross).
	lateMoney := ledgerPayment("trx-late", paygatev1.PaymentSuccess, "1000.00")
	led = pass(paid, lateMoney)
	if !slices.Equal(led.ReserveRefunds, []string{"rf-late", "rf-after"}) || len(led.RejectRefunds) != 0 {
		t.Fatalf("once it counts: reserve %q, reject %v; want rf-late then rf-after", led.ReserveRefunds, led.RejectRefunds)
	}
}

// TestComputeLedgerArchivedRefunds: refunds in the archive count once, through its view: the
// carried-forward refunded amount, a refund archived while still in the cache skipped, a held
// reservation of an archived refund dropped, and a payment's archived refunds against its amount.
func TestComputeLedgerArchivedRefunds(t *testing.T) {
	payments := []paygatev1.Payment{
		ledgerPayment("trx-1", paygatev1.PaymentSuccess, "975.00"),
		ledgerPayment("trx-2", paygatev1.PaymentSuccess, "1950.00"),
	} // settled 2925.00 live
	archived := ledgerRefund("rf-archived", "trx-1", "300.00", "1000.00", time.Second, paygatev1.RefundSuccess,
		func(f *paygatev1.Refund) { f.UID = "uid-rf-archived" })
	view := &archive.LedgerView{
		Carried: []archive.CarriedForward{{Merchant: "duka", Environment: paygatev1.EnvironmentSandbox, Currency: "TZS",
			Settled: money.MustParseAmount("500"), SettledPayments: 1, Payments: 1,
			Refunded: money.MustParseAmount("300.00"), RefundedRefunds: 1, Refunds: 1}},
		Refunds:     map[string]bool{"uid-rf-archived": true},
		RefundNames: map[string]bool{"rf-archived": true},
		RefundedOf:  map[string]money.Amount{"trx-1": money.MustParseAmount("300.00")},
	}
	tests := []struct {
		name         string
		refunds      []paygatev1.Refund
		held         []paygatev1.RefundReservation
		view         *archive.LedgerView
		available    string
		refunded     string
		reserve      []string
		rejectRefund []RejectedRefund
	}{
		{
			name:      "the archived refund counts once, carried forward, though the cache still holds it",
			refunds:   []paygatev1.Refund{archived},
			view:      view,
			available: "3125.00", refunded: "300.00",
		},
		{
			name:      "a reservation the Balance still holds for an archived refund is dropped: it is carried forward",
			held:      []paygatev1.RefundReservation{refundHeld("rf-archived", "trx-1", "300.00")},
			view:      view,
			available: "3125.00", refunded: "300.00",
		},
		{
			name: "a payment's archived refunds count against its amount",
			refunds: []paygatev1.Refund{
				ledgerRefund("rf-over", "trx-1", "800.00", "1000.00", time.Minute, paygatev1.RefundPending),
				ledgerRefund("rf-fits", "trx-1", "700.00", "1000.00", 2*time.Minute, paygatev1.RefundPending),
			},
			view:      view,
			available: "2425.00", refunded: "300.00",
			reserve:      []string{"rf-fits"},
			rejectRefund: []RejectedRefund{{"rf-over", paygatev1.RefundExceedsPayment}},
		},
		{
			name: "without the view the same refund would fit: the archive's part is what rejects it",
			refunds: []paygatev1.Refund{
				ledgerRefund("rf-over", "trx-1", "800.00", "1000.00", time.Minute, paygatev1.RefundPending),
			},
			available: "2125.00", refunded: "",
			reserve: []string{"rf-over"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			led, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, payments, nil, nil, tt.view, WithRefunds(tt.refunds, tt.held))
			if err != nil {
				t.Fatal(err)
			}
			c := led.Status.Currencies[0]
			if string(c.Available) != tt.available || string(c.Refunded) != tt.refunded {
				t.Errorf("available %s refunded %q, want %s %q (%+v)", c.Available, c.Refunded, tt.available, tt.refunded, c)
			}
			if !slices.Equal(led.ReserveRefunds, tt.reserve) || !slices.Equal(led.RejectRefunds, tt.rejectRefund) {
				t.Errorf("reserve %q reject %v, want %q %v", led.ReserveRefunds, led.RejectRefunds, tt.reserve, tt.rejectRefund)
			}
			if len(tt.held) > 0 && len(led.Status.RefundReservations) != 0 {
				t.Errorf("reservations %v kept", led.Status.RefundReservations)
			}
		})
	}
}

func TestArchiveQueryAsksForHeldNamesAndOpenRefundsPayments(t *testing.T) {
	b := &paygatev1.Balance{Status: paygatev1.BalanceStatus{
		PayoutReservations: []paygatev1.PayoutReservation{{Payout: "po-1"}},
		RefundReservations: []paygatev1.RefundReservation{refundHeld("rf-1", "trx-held", "1")},
	}}
	refunds := []paygatev1.Refund{
		ledgerRefund("rf-2", "trx-open", "1", "10", 0, paygatev1.RefundPending),
		ledgerRefund("rf-3", "trx-done", "1", "10", 0, paygatev1.RefundSuccess),
		ledgerRefund("rf-4", "trx-other", "1", "10", 0, paygatev1.RefundPending, func(f *paygatev1.Refund) { f.Spec.MerchantRef.Name = "kahawa" }),
	}
	q := ArchiveQuery(b, refunds, "duka", paygatev1.EnvironmentSandbox)
	if !slices.Equal(q.Payouts, []string{"po-1"}) || !slices.Equal(q.Refunds, []string{"rf-1"}) || !slices.Equal(q.Payments, []string{"trx-held", "trx-open"}) {
		t.Fatalf("query = %+v", q)
	}
}
