// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
)

func indexPayment(uid string, phase paygatev1.PaymentPhase, net string) *paygatev1.Payment {
	return &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "trx-" + uid, UID: types.UID(uid)},
		Spec:       paygatev1.PaymentSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox, Currency: "TZS", Amount: "1500"},
		Status:     paygatev1.PaymentStatus{Phase: phase, NetAmount: paygatev1.Decimal(net)},
	}
}

func TestPaymentLedgerNotifiesOnlyWhatChangesABalance(t *testing.T) {
	pending := indexPayment("a", paygatev1.PaymentPending, "")
	tests := []struct {
		name   string
		change func(p *paygatev1.Payment)
		want   bool
	}{
		{"a push request", func(p *paygatev1.Payment) {
			p.Spec.PushRequest = &paygatev1.PushRequest{Sequence: 1, Phone: "+255712345678"}
		}, false},
		{"an attempt written ahead", func(p *paygatev1.Payment) {
			p.Status.Attempts = append(p.Status.Attempts, paygatev1.PushAttempt{Sequence: 1})
		}, false},
		{"a condition", func(p *paygatev1.Payment) {
			p.Status.Conditions = []metav1.Condition{{Type: paygatev1.ConditionReady, Status: metav1.ConditionFalse}}
		}, false},
		{"failed (counts nothing either way)", func(p *paygatev1.Payment) { p.Status.Phase = paygatev1.PaymentFailed }, false},
		{"settled", func(p *paygatev1.Payment) {
			p.Status.Phase, p.Status.NetAmount = paygatev1.PaymentSuccess, "1462.50"
		}, true},
		{"moved to production", func(p *paygatev1.Payment) { p.Spec.Environment = paygatev1.EnvironmentProduction }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var told []string
			l := newPaymentLedger(func(ns, m string, _ bool) { told = append(told, ns+"/"+m) })
			h := l.handler()
			h.OnAdd(pending, false)
			told = nil
			changed := pending.DeepCopy()
			tt.change(changed)
			h.OnUpdate(pending, changed)
			if got := len(told) > 0; got != tt.want {
				t.Fatalf("recount on %s = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestPaymentLedgerSums(t *testing.T) {
	var told int
	l := newPaymentLedger(func(string, string, bool) { told++ })
	h := l.handler()
	a, b, c := indexPayment("a", paygatev1.PaymentSuccess, "975.00"), indexPayment("b", paygatev1.PaymentSuccess, "0.01"), indexPayment("c", paygatev1.PaymentPending, "")
	for _, p := range []*paygatev1.Payment{a, b, c, a} { // a twice: an informer's replay counts once
		h.OnAdd(p, false)
	}
	sums := func(skip ...string) PaymentSums {
		t.Helper()
		set := map[string]bool{}
		for _, s := range skip {
			set[s] = true
		}
		s, err := l.Sums("shop", "duka", paygatev1.EnvironmentSandbox, set)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	check := func(s PaymentSums, observed int64, settled string, n int64) {
		t.Helper()
		if s.Observed != observed || s.Counts["TZS"] != n || s.Settled["TZS"].Cmp(money.MustParseAmount(settled)) != 0 {
			t.Fatalf("sums = %d observed, %s in %d; want %d, %s in %d", s.Observed, s.Settled["TZS"], s.Counts["TZS"], observed, settled, n)
		}
	}
	check(sums(), 3, "975.01", 2)
	check(sums("a"), 2, "0.01", 1)          // an archived payment still live counts in carried_forward
	check(sums("a", "b", "zzz"), 1, "0", 0) // unknown UIDs change nothing
	if _, ok := sums("a", "b").Settled["TZS"]; ok {
		t.Fatal("a currency with no counted payment must not appear (a full recount shows none)")
	}

	bad := indexPayment("d", paygatev1.PaymentSuccess, "1.2.3")
	h.OnAdd(bad, false)
	if _, err := l.Sums("shop", "duka", paygatev1.EnvironmentSandbox, nil); !errors.Is(err, money.ErrSyntax) {
		t.Fatalf("an unreadable net amount: error %v, want money.ErrSyntax", err)
	}
	check(sums("d"), 3, "975.01", 2) // unless that payment is archived: its row was checked then
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "shop/trx-d", Obj: bad})
	check(sums(), 3, "975.01", 2)

	h.OnDelete(a)
	check(sums(), 2, "0.01", 1)
	if l.Has("a") || !l.Has("b") {
		t.Fatal("Has must follow deletes")
	}
	h.OnDelete(b)
	h.OnDelete(c)
	if len(l.sums) != 0 || len(l.entries) != 0 {
		t.Fatalf("everything deleted leaves nothing behind: %d sums, %d entries", len(l.sums), len(l.entries))
	}
	if told == 0 {
		t.Fatal("no change was told")
	}
}

// TestPaymentLedgerMatchesARecount replays random event sequences (adds, updates, deletes,
// duplicates, out-of-order replays) and checks the incremental sums against SumPayments over
// the final objects after every step.
func TestPaymentLedgerMatchesARecount(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	phases := []paygatev1.PaymentPhase{paygatev1.PaymentPending, paygatev1.PaymentSuccess, paygatev1.PaymentFailed}
	for round := range 50 {
		l := newPaymentLedger(func(string, string, bool) {})
		h := l.handler()
		live := map[string]*paygatev1.Payment{}
		for step := range 200 {
			uid := fmt.Sprintf("p%d", rng.IntN(20))
			switch rng.IntN(4) {
			case 0, 1, 2:
				p := indexPayment(uid, phases[rng.IntN(len(phases))], fmt.Sprintf("%d.%02d", rng.IntN(5000), rng.IntN(100)))
				if rng.IntN(5) == 0 {
					p.Spec.Environment = paygatev1.EnvironmentProduction
				}
				if rng.IntN(7) == 0 {
					p.Spec.Currency = "KES"
				}
				if old, ok := live[uid]; ok {
					h.OnUpdate(old, p)
				} else {
					h.OnAdd(p, false)
				}
				live[uid] = p
			default:
				if old, ok := live[uid]; ok {
					h.OnDelete(old)
					delete(live, uid)
				}
			}
			var all []paygatev1.Payment
			for _, p := range live {
				all = append(all, *p)
			}
			skip := map[string]bool{fmt.Sprintf("p%d", rng.IntN(20)): true}
			for _, env := range paygatev1.Environments {
				want, err := SumPayments("duka", env, all, skip)
				if err != nil {
					t.Fatal(err)
				}
				got, err := l.Sums("shop", "duka", env, skip)
				if err != nil {
					t.Fatal(err)
				}
				if d := sumsDiffer(got, want); d != "" {
					t.Fatalf("round %d step %d %s: %s", round, step, env, d)
				}
			}
		}
	}
}

// TestPaymentLedgerTellsMoneyFromCounts: the balance controller batches a change of money less
// than a change of the count of payments (docs/ledger.md, Batched), so the ledger says which.
func TestPaymentLedgerTellsMoneyFromCounts(t *testing.T) {
	var told []bool
	l := newPaymentLedger(func(_, _ string, money bool) { told = append(told, money) })
	h := l.handler()
	pending, settled := indexPayment("a", paygatev1.PaymentPending, ""), indexPayment("a", paygatev1.PaymentSuccess, "1462.50")
	other := indexPayment("b", paygatev1.PaymentSuccess, "975.00")
	steps := []struct {
		name string
		do   func()
		want []bool
	}{
		{"a new pending payment: its count only", func() { h.OnAdd(pending, false) }, []bool{false}},
		{"settled: money", func() { h.OnUpdate(pending, settled) }, []bool{true}},
		{"a settled payment leaves: money", func() { h.OnDelete(settled) }, []bool{true}},
		{"a pending payment leaves: its count only", func() { h.OnAdd(pending, false); told = nil; h.OnDelete(pending) }, []bool{false}},
		{"a settled payment arrives: money", func() { h.OnAdd(other, false) }, []bool{true}},
	}
	for _, st := range steps {
		told = nil
		st.do()
		if fmt.Sprint(told) != fmt.Sprint(st.want) {
			t.Errorf("%s: told %v, want %v", st.name, told, st.want)
		}
	}
}
