// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/payouts"
)

// ledgerEpoch is the time the ledger tests' payouts are created at (plus their offset).
var ledgerEpoch = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// ledgerPayment is a payment of merchant "duka" in sandbox, TZS, in phase with net amount net;
// mods adjust it.
func ledgerPayment(name string, phase paygatev1.PaymentPhase, net string, mods ...func(*paygatev1.Payment)) paygatev1.Payment {
	p := paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: paygatev1.PaymentSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Amount: "99999", Currency: "TZS"},
		Status: paygatev1.PaymentStatus{Phase: phase, NetAmount: paygatev1.Decimal(net)},
	}
	for _, m := range mods {
		m(&p)
	}
	return p
}

// ledgerPayout is a payout of merchant "duka" in sandbox, TZS, created `at` after ledgerEpoch,
// in phase; a phase other than pending is reserved (reservedAt set). mods adjust it.
func ledgerPayout(name, amount string, at time.Duration, phase paygatev1.PayoutPhase, mods ...func(*paygatev1.Payout)) paygatev1.Payout {
	p := paygatev1.Payout{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: paygatev1.PayoutSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Amount: paygatev1.Decimal(amount), Currency: "TZS", CreatedAt: metav1.NewMicroTime(ledgerEpoch.Add(at))},
		Status: paygatev1.PayoutStatus{Phase: phase},
	}
	if phase != paygatev1.PayoutPending {
		p.Status.ReservedAt = ptrTime(ledgerEpoch.Add(at + time.Millisecond))
	}
	for _, m := range mods {
		m(&p)
	}
	return p
}

func reservation(payout, amount string) paygatev1.PayoutReservation {
	return paygatev1.PayoutReservation{Payout: payout, Currency: "TZS", Amount: paygatev1.Decimal(amount)}
}

func inEnv(env paygatev1.Environment) func(*paygatev1.Payment) {
	return func(p *paygatev1.Payment) { p.Spec.Environment = env }
}

func ofMerchant(m string) func(*paygatev1.Payment) {
	return func(p *paygatev1.Payment) { p.Spec.MerchantRef.Name = m }
}

func payoutInEnv(env paygatev1.Environment) func(*paygatev1.Payout) {
	return func(p *paygatev1.Payout) { p.Spec.Environment = env }
}

func payoutOfMerchant(m string) func(*paygatev1.Payout) {
	return func(p *paygatev1.Payout) { p.Spec.MerchantRef.Name = m }
}

// marked is a pending payout the balance controller reserved (reservedAt set), not yet disbursed.
func marked(p *paygatev1.Payout) {
	p.Status.ReservedAt = ptrTime(p.Spec.CreatedAt.Add(time.Millisecond))
}

func failedWith(reason paygatev1.PayoutFailureCode) func(*paygatev1.Payout) {
	return func(p *paygatev1.Payout) { p.Status.Reason = string(reason) }
}

// wantBalance is one currency's expected balance: available, settled, reserved, paid out.
type wantBalance struct{ available, settled, reserved, paidOut string }

func TestComputeLedger(t *testing.T) {
	settled := []paygatev1.Payment{
		ledgerPayment("trx-1", paygatev1.PaymentSuccess, "975.00"),
		ledgerPayment("trx-2", paygatev1.PaymentSuccess, "1950.00"),
		ledgerPayment("trx-3", paygatev1.PaymentSuccess, "75"),
		ledgerPayment("trx-failed", paygatev1.PaymentFailed, ""),
		ledgerPayment("trx-pending", paygatev1.PaymentPending, ""),
	} // settled 3000.00 TZS, 3 settled payments, 5 observed

	tests := []struct {
		name     string
		payments []paygatev1.Payment
		payouts  []paygatev1.Payout
		held     []paygatev1.PayoutReservation
		want     map[paygatev1.CurrencyCode]wantBalance
		// reserve, reject and mirror are the decided payouts, in order; holds the names in the
		// Balance's reservations after the pass.
		reserve, reject, mirror, holds []string
		observed                       int64
		wantErr                        string
	}{
		{
			name:     "settled payments only",
			payments: settled,
			want:     map[paygatev1.CurrencyCode]wantBalance{"TZS": {"3000.00", "3000.00", "0.00", "0.00"}},
			observed: 5,
		},
		{
			name:     "nothing at all",
			want:     map[paygatev1.CurrencyCode]wantBalance{},
			observed: 0,
		},
		{
			name:     "available is settled minus paid out minus reserved",
			payments: settled,
			payouts: []paygatev1.Payout{
				ledgerPayout("po-paid", "500.00", 0, paygatev1.PayoutSuccess),
				ledgerPayout("po-flight", "300.00", time.Second, paygatev1.PayoutProcessing),
				ledgerPayout("po-reserved", "200.50", 2*time.Second, paygatev1.PayoutPending, marked),
				ledgerPayout("po-failed", "400.00", 3*time.Second, paygatev1.PayoutFailed, failedWith(paygatev1.PayoutRejected)),
			},
			held:     []paygatev1.PayoutReservation{reservation("po-flight", "300.00"), reservation("po-reserved", "200.50")},
			want:     map[paygatev1.CurrencyCode]wantBalance{"TZS": {"1999.50", "3000.00", "500.50", "500.00"}},
			holds:    []string{"po-flight", "po-reserved"},
			observed: 5,
		},
		{
			name:     "pending payouts are decided in creation order, not name order",
			payments: settled,
			payouts: []paygatev1.Payout{
				ledgerPayout("po-a-later", "2000.00", 2*time.Second, paygatev1.PayoutPending),
				ledgerPayout("po-b-first", "2000.00", time.Second, paygatev1.PayoutPending),
			},
			want:    map[paygatev1.CurrencyCode]wantBalance{"TZS": {"1000.00", "3000.00", "2000.00", "0.00"}},
			reserve: []string{"po-b-first"}, reject: []string{"po-a-later"}, holds: []string{"po-b-first"},
			observed: 5,
		},
		{
			name:     "the same creation time falls back to the name",
			payments: settled,
			payouts: []paygatev1.Payout{
				ledgerPayout("po-b", "2000.00", time.Second, paygatev1.PayoutPending),
				ledgerPayout("po-a", "2000.00", time.Second, paygatev1.PayoutPending),
			},
			want:    map[paygatev1.CurrencyCode]wantBalance{"TZS": {"1000.00", "3000.00", "2000.00", "0.00"}},
			reserve: []string{"po-a"}, reject: []string{"po-b"}, holds: []string{"po-a"},
			observed: 5,
		},
		{
			name:     "a payout the balance does not cover is rejected while a later smaller one still fits",
			payments: settled,
			payouts: []paygatev1.Payout{
				ledgerPayout("po-1", "2000.00", 1*time.Second, paygatev1.PayoutPending),
				ledgerPayout("po-2", "1500.00", 2*time.Second, paygatev1.PayoutPending),
				ledgerPayout("po-3", "1000.00", 3*time.Second, paygatev1.PayoutPending),
				ledgerPayout("po-4", "0.01", 4*time.Second, paygatev1.PayoutPending),
			},
			want:    map[paygatev1.CurrencyCode]wantBalance{"TZS": {"0.00", "3000.00", "3000.00", "0.00"}},
			reserve: []string{"po-1", "po-3"}, reject: []string{"po-2", "po-4"}, holds: []string{"po-1", "po-3"},
			observed: 5,
		},
		{
			name:     "exactly the available balance is covered",
			payments: settled,
			payouts:  []paygatev1.Payout{ledgerPayout("po-all", "3000", 0, paygatev1.PayoutPending)},
			want:     map[paygatev1.CurrencyCode]wantBalance{"TZS": {"0.00", "3000.00", "3000.00", "0.00"}},
			reserve:  []string{"po-all"}, holds: []string{"po-all"},
			observed: 5,
		},
		{
			name:     "a failed payout releases its reservation",
			payments: settled,
			payouts: []paygatev1.Payout{
				ledgerPayout("po-failed", "2500.00", 0, paygatev1.PayoutFailed, failedWith(paygatev1.PayoutResolvedFailed)),
				ledgerPayout("po-next", "2500.00", time.Second, paygatev1.PayoutPending),
			},
			held:    []paygatev1.PayoutReservation{reservation("po-failed", "2500.00")},
			want:    map[paygatev1.CurrencyCode]wantBalance{"TZS": {"500.00", "3000.00", "2500.00", "0.00"}},
			reserve: []string{"po-next"}, holds: []string{"po-next"},
			observed: 5,
		},
		{
			name:     "success moves the reservation to paid out",
			payments: settled,
			payouts:  []paygatev1.Payout{ledgerPayout("po-paid", "1200.00", 0, paygatev1.PayoutSuccess)},
			held:     []paygatev1.PayoutReservation{reservation("po-paid", "1200.00")},
			want:     map[paygatev1.CurrencyCode]wantBalance{"TZS": {"1800.00", "3000.00", "0.00", "1200.00"}},
			observed: 5,
		},
		{
			name:     "a reservation whose payout the cache does not show stays counted",
			payments: settled,
			payouts:  []paygatev1.Payout{ledgerPayout("po-new", "2500.00", 0, paygatev1.PayoutPending)},
			held:     []paygatev1.PayoutReservation{reservation("po-unseen", "1000.00")},
			want:     map[paygatev1.CurrencyCode]wantBalance{"TZS": {"2000.00", "3000.00", "1000.00", "0.00"}},
			reject:   []string{"po-new"}, holds: []string{"po-unseen"},
			observed: 5,
		},
		{
			name:     "a lost Balance is rebuilt from the payouts' reservedAt",
			payments: settled,
			payouts: []paygatev1.Payout{
				ledgerPayout("po-flight", "1000.00", 0, paygatev1.PayoutProcessing),
				ledgerPayout("po-marked", "500.00", time.Second, paygatev1.PayoutPending, marked),
				ledgerPayout("po-paid", "700.00", 2*time.Second, paygatev1.PayoutSuccess),
				ledgerPayout("po-pending", "1000.00", 3*time.Second, paygatev1.PayoutPending),
			},
			want:     map[paygatev1.CurrencyCode]wantBalance{"TZS": {"800.00", "3000.00", "1500.00", "700.00"}},
			reject:   []string{"po-pending"},
			holds:    []string{"po-flight", "po-marked"},
			observed: 5,
		},
		{
			name:     "a reservation written before its payout was marked is mirrored, not decided again",
			payments: settled,
			payouts: []paygatev1.Payout{
				ledgerPayout("po-unmarked", "2500.00", 0, paygatev1.PayoutPending, func(p *paygatev1.Payout) { p.Status.Phase = "" }),
				ledgerPayout("po-later", "600.00", time.Second, paygatev1.PayoutPending),
			},
			held:   []paygatev1.PayoutReservation{reservation("po-unmarked", "2500.00")},
			want:   map[paygatev1.CurrencyCode]wantBalance{"TZS": {"500.00", "3000.00", "2500.00", "0.00"}},
			reject: []string{"po-later"}, mirror: []string{"po-unmarked"}, holds: []string{"po-unmarked"},
			observed: 5,
		},
		{
			name:     "currencies have separate balances",
			payments: append(slices.Clone(settled), ledgerPayment("trx-kes", paygatev1.PaymentSuccess, "100.00", func(p *paygatev1.Payment) { p.Spec.Currency = "KES" })),
			payouts: []paygatev1.Payout{
				ledgerPayout("po-kes", "150.00", 0, paygatev1.PayoutPending, func(p *paygatev1.Payout) { p.Spec.Currency = "KES" }),
				ledgerPayout("po-tzs", "150.00", time.Second, paygatev1.PayoutPending),
			},
			want: map[paygatev1.CurrencyCode]wantBalance{
				"TZS": {"2850.00", "3000.00", "150.00", "0.00"},
				"KES": {"100.00", "100.00", "0.00", "0.00"},
			},
			reserve: []string{"po-tzs"}, reject: []string{"po-kes"}, holds: []string{"po-tzs"},
			observed: 6,
		},
		{
			name: "environments and merchants never mix",
			payments: append(slices.Clone(settled),
				ledgerPayment("trx-prod", paygatev1.PaymentSuccess, "5000.00", inEnv(paygatev1.EnvironmentProduction)),
				ledgerPayment("trx-other", paygatev1.PaymentSuccess, "5000.00", ofMerchant("other"))),
			payouts: []paygatev1.Payout{
				ledgerPayout("po-big", "3500.00", 0, paygatev1.PayoutPending),
				ledgerPayout("po-prod", "1.00", time.Second, paygatev1.PayoutPending, payoutInEnv(paygatev1.EnvironmentProduction)),
				ledgerPayout("po-other", "1.00", time.Second, paygatev1.PayoutPending, payoutOfMerchant("other")),
				ledgerPayout("po-prod-paid", "900.00", time.Second, paygatev1.PayoutSuccess, payoutInEnv(paygatev1.EnvironmentProduction)),
				ledgerPayout("po-other-flight", "900.00", time.Second, paygatev1.PayoutProcessing, payoutOfMerchant("other")),
			},
			want:     map[paygatev1.CurrencyCode]wantBalance{"TZS": {"3000.00", "3000.00", "0.00", "0.00"}},
			reject:   []string{"po-big"},
			observed: 5,
		},
		{
			name:     "a payout above the balance of an empty ledger is rejected",
			payouts:  []paygatev1.Payout{ledgerPayout("po-early", "1.00", 0, paygatev1.PayoutPending)},
			want:     map[paygatev1.CurrencyCode]wantBalance{},
			reject:   []string{"po-early"},
			observed: 0,
		},
		{
			name:     "an unreadable net amount is an error, not a partial sum",
			payments: append(slices.Clone(settled), ledgerPayment("trx-bad", paygatev1.PaymentSuccess, "1,000.00")),
			wantErr:  "payment trx-bad has an unreadable net amount",
		},
		{
			name:     "an unreadable payout amount is an error",
			payments: settled,
			payouts:  []paygatev1.Payout{ledgerPayout("po-bad", "10 00", 0, paygatev1.PayoutPending)},
			wantErr:  "payout po-bad has an unreadable amount",
		},
		{
			name:     "an unreadable paid-out amount is an error",
			payments: settled,
			payouts:  []paygatev1.Payout{ledgerPayout("po-bad", "x", 0, paygatev1.PayoutSuccess)},
			wantErr:  "payout po-bad has an unreadable amount",
		},
		{
			name:     "an unreadable reservation is an error",
			payments: settled,
			held:     []paygatev1.PayoutReservation{reservation("po-gone", "abc")},
			wantErr:  "reservation of payout po-gone has an unreadable amount",
		},
		{
			name:     "payouts above the settled payments are an error, never a negative balance",
			payments: settled,
			payouts:  []paygatev1.Payout{ledgerPayout("po-paid", "3000.01", 0, paygatev1.PayoutSuccess)},
			wantErr:  "exceed its settled payments",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			led, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, tt.payments, tt.payouts, tt.held, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ComputeLedger error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ComputeLedger: %v", err)
			}
			checkLedger(t, led, tt.want, tt.observed)
			for what, pair := range map[string][2][]string{
				"Reserve": {led.Reserve, tt.reserve}, "Reject": {led.Reject, tt.reject}, "Mirror": {led.Mirror, tt.mirror},
				"reservations": {reservationNames(led), tt.holds},
			} {
				if !slices.Equal(pair[0], pair[1]) {
					t.Errorf("%s = %q, want %q", what, pair[0], pair[1])
				}
			}

			// A pass over what this pass stored (its decisions applied) changes nothing: nothing is
			// reserved, released or rejected twice.
			again, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, tt.payments, applyLedger(tt.payouts, led), led.Status.PayoutReservations, nil)
			if err != nil {
				t.Fatalf("second pass: %v", err)
			}
			if len(again.Reserve)+len(again.Reject)+len(again.Mirror) != 0 {
				t.Errorf("second pass decided again: reserve %q, reject %q, mirror %q", again.Reserve, again.Reject, again.Mirror)
			}
			checkLedger(t, again, tt.want, tt.observed)
		})
	}
}

// checkLedger compares a ledger's balances with want and checks the invariant on each:
// available = settled - paidOut - reserved, never negative.
func checkLedger(t *testing.T, led Ledger, want map[paygatev1.CurrencyCode]wantBalance, observed int64) {
	t.Helper()
	got := map[paygatev1.CurrencyCode]wantBalance{}
	for _, c := range led.Status.Currencies {
		got[c.Currency] = wantBalance{string(c.Available), string(c.Settled), string(c.Reserved), string(c.PaidOut)}
		s, r, p, a := money.MustParseAmount(string(c.Settled)), money.MustParseAmount(string(c.Reserved)),
			money.MustParseAmount(string(c.PaidOut)), money.MustParseAmount(string(c.Available))
		if out := p.Add(r).Add(a); !out.Equal(s) {
			t.Errorf("%s: paid out %s + reserved %s + available %s != settled %s", c.Currency, p, r, a, s)
		}
		if a.Cmp(money.Amount{}) < 0 {
			t.Errorf("%s: available %s is negative", c.Currency, a)
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
	if led.Status.ObservedPayments != observed {
		t.Errorf("observedPayments = %d, want %d", led.Status.ObservedPayments, observed)
	}
}

func reservationNames(led Ledger) []string {
	var out []string
	for _, r := range led.Status.PayoutReservations {
		out = append(out, r.Payout)
	}
	return out
}

// applyLedger is what the balance controller writes on the payouts after the Balance: reservedAt
// on the reserved and mirrored ones, failed INSUFFICIENT_BALANCE on the rejected ones.
func applyLedger(in []paygatev1.Payout, led Ledger) []paygatev1.Payout {
	out := make([]paygatev1.Payout, len(in))
	for i := range in {
		p := *in[i].DeepCopy()
		switch {
		case slices.Contains(led.Reserve, p.Name), slices.Contains(led.Mirror, p.Name):
			p.Status.ReservedAt, p.Status.Phase = ptrTime(ledgerEpoch.Add(time.Hour)), paygatev1.PayoutPending
		case slices.Contains(led.Reject, p.Name):
			p.Status.Phase, p.Status.Reason = paygatev1.PayoutFailed, string(paygatev1.PayoutInsufficientBalance)
		}
		out[i] = p
	}
	return out
}

// TestComputeLedgerReleasesOnce follows one payout through its life, pass after pass: a failure
// gives the money back once, however often the pass repeats.
func TestComputeLedgerReleasesOnce(t *testing.T) {
	payments := []paygatev1.Payment{ledgerPayment("trx-1", paygatev1.PaymentSuccess, "1000.00")}
	available := func(payouts []paygatev1.Payout, held []paygatev1.PayoutReservation) (string, []paygatev1.PayoutReservation) {
		t.Helper()
		led, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, payments, payouts, held, nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(led.Status.Currencies[0].Available), led.Status.PayoutReservations
	}
	po := ledgerPayout("po-1", "400.00", 0, paygatev1.PayoutProcessing)
	got, held := available([]paygatev1.Payout{po}, nil)
	if got != "600.00" || len(held) != 1 {
		t.Fatalf("reserved: available %s, reservations %v", got, held)
	}
	po.Status.Phase, po.Status.Reason = paygatev1.PayoutFailed, string(paygatev1.PayoutRejected)
	for pass := range 3 {
		got, held = available([]paygatev1.Payout{po}, held)
		if got != "1000.00" || len(held) != 0 {
			t.Fatalf("pass %d after the failure: available %s, reservations %v; want 1000.00 and none", pass, got, held)
		}
	}
	// A stale Balance that still holds the failed payout's reservation releases it, once.
	got, held = available([]paygatev1.Payout{po}, []paygatev1.PayoutReservation{reservation("po-1", "400.00")})
	if got != "1000.00" || len(held) != 0 {
		t.Fatalf("stale reservation: available %s, reservations %v", got, held)
	}
}

// TestComputeLedgerOpenCap: at most payouts.MaxOpenReservations reservations are open; more
// payouts wait in pending (neither reserved nor rejected) until earlier ones finish.
func TestComputeLedgerOpenCap(t *testing.T) {
	payments := []paygatev1.Payment{ledgerPayment("trx-1", paygatev1.PaymentSuccess, "1000000.00")}
	var open []paygatev1.Payout
	var held []paygatev1.PayoutReservation
	for i := range payouts.MaxOpenReservations - 2 {
		name := fmt.Sprintf("po-open-%03d", i)
		open = append(open, ledgerPayout(name, "1.00", time.Duration(i), paygatev1.PayoutProcessing))
		held = append(held, reservation(name, "1.00"))
	}
	pending := []paygatev1.Payout{
		ledgerPayout("po-new-1", "1.00", time.Hour, paygatev1.PayoutPending),
		ledgerPayout("po-new-2", "2000000.00", time.Hour+1, paygatev1.PayoutPending), // would be rejected, but waits
		ledgerPayout("po-new-3", "1.00", time.Hour+2, paygatev1.PayoutPending),
		ledgerPayout("po-new-4", "1.00", time.Hour+3, paygatev1.PayoutPending),
	}
	led, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, payments, append(slices.Clone(open), pending...), held, nil)
	if err != nil {
		t.Fatal(err)
	}
	// po-new-2 does not fit and is rejected while there is room; po-new-3 fills the cap.
	if !slices.Equal(led.Reserve, []string{"po-new-1", "po-new-3"}) || !slices.Equal(led.Reject, []string{"po-new-2"}) {
		t.Fatalf("Reserve = %q, Reject = %q; want [po-new-1 po-new-3] and [po-new-2]", led.Reserve, led.Reject)
	}
	if n := len(led.Status.PayoutReservations); n != payouts.MaxOpenReservations {
		t.Fatalf("%d reservations open, want the cap %d", n, payouts.MaxOpenReservations)
	}
	if slices.Contains(led.Reserve, "po-new-4") || slices.Contains(led.Reject, "po-new-4") {
		t.Fatalf("po-new-4 was decided beyond the cap: Reserve %q, Reject %q", led.Reserve, led.Reject)
	}

	// Full: nothing more is decided.
	full := append(slices.Clone(open), pending...)
	full = applyLedger(full, led)
	led2, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, payments, full, led.Status.PayoutReservations, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(led2.Reserve)+len(led2.Reject) != 0 {
		t.Fatalf("at the cap: Reserve %q, Reject %q; want nothing decided", led2.Reserve, led2.Reject)
	}

	// One finishes: the next waiting payout is reserved.
	full[0].Status.Phase = paygatev1.PayoutSuccess
	led3, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, payments, full, led2.Status.PayoutReservations, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(led3.Reserve, []string{"po-new-4"}) {
		t.Fatalf("after one finished: Reserve %q, want [po-new-4]", led3.Reserve)
	}
}

func TestComputeLedgerErrorsAreWrapped(t *testing.T) {
	_, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox,
		[]paygatev1.Payment{ledgerPayment("trx-bad", paygatev1.PaymentSuccess, "1.2.3")}, nil, nil, nil)
	if !errors.Is(err, money.ErrSyntax) {
		t.Fatalf("error %v does not wrap money.ErrSyntax", err)
	}
}
