// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/provider"
)

// lateMerchant is the merchant "duka" of rulesPayment with late-settlement policy policy ("" is
// unset: Flag).
func lateMerchant(policy paygatev1.LateSettlementPolicy) *paygatev1.Merchant {
	return &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "duka"},
		Spec: paygatev1.MerchantSpec{DisplayName: "Duka", Owner: "o", Currencies: []paygatev1.CurrencyCode{"TZS"}, LateSettlement: policy}}
}

// settleLateThroughWatch runs TestAWatchedAttemptFindsALateSettlement's story under the merchant's
// policy: an expired payment whose watched attempt the provider then reports settled. It returns
// the payment after the late settlement and the client.
func settleLateThroughWatch(t *testing.T, policy paygatev1.LateSettlementPolicy) (*paygatev1.Payment, client.Client, *PaymentReconciler) {
	t.Helper()
	p := initiatingPayment(func(p *paygatev1.Payment) {
		a := &p.Status.Attempts[0]
		a.Phase, a.WatchUntil = paygatev1.AttemptPending, ptrTime(rulesNow.Add(time.Hour))
		a.Fees = paygatev1.GatewayFees{Percent: "2.5", Fixed: "0"}
		p.Status.Phase, p.Status.Reason = paygatev1.PaymentFailed, string(paygatev1.FailureExpiredSession)
	})
	r, c, _, _ := countedReconciler(p, rulesGateway(), lateMerchant(policy))
	prov := &scriptedProvider{dedup: true, pushed: map[string]int{"shop.trx-a.1": 1}, status: provider.StatusSuccess}
	r.Providers = stubProviders{prov}
	got, _, err := reconcilePayment(t, r, c, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !got.SettledLate() || got.Status.Phase != paygatev1.PaymentFailed {
		t.Fatalf("payment %s, conditions %+v; want failed and settled late", got.Status.Phase, got.Status.Conditions)
	}
	return got, c, r
}

func refundsOfShop(t *testing.T, c client.Client) []paygatev1.Refund {
	t.Helper()
	var l paygatev1.RefundList
	if err := c.List(context.Background(), &l, client.InNamespace("shop")); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func settledTZS(t *testing.T, l Ledger) (settled, available string) {
	t.Helper()
	for _, cb := range l.Status.Currencies {
		if cb.Currency == "TZS" {
			return string(cb.Settled), string(cb.Available)
		}
	}
	return "", ""
}

func TestALateSettlementUnderFlagCountsNothing(t *testing.T) {
	for _, policy := range []paygatev1.LateSettlementPolicy{"", paygatev1.LateSettlementFlag} {
		got, c, _ := settleLateThroughWatch(t, policy)
		if got.Status.NetAmount != "" || got.Status.Fee != "" {
			t.Errorf("policy %q: fee %q net %q stored; want none", policy, got.Status.Fee, got.Status.NetAmount)
		}
		if rfs := refundsOfShop(t, c); len(rfs) != 0 {
			t.Errorf("policy %q: %d refunds created; want none", policy, len(rfs))
		}
		l, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, []paygatev1.Payment{*got}, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := settledTZS(t, l); s != "" && s != "0" && s != "0.00" {
			t.Errorf("policy %q: settled %q; want nothing", policy, s)
		}
	}
}

func TestALateSettlementUnderCreditCountsItsNet(t *testing.T) {
	got, c, _ := settleLateThroughWatch(t, paygatev1.LateSettlementCredit)
	// 1500 TZS at 2.5%: fee 37.5, rounded half-up to TZS's scale.
	fee, net, err := paymentFee(got, got.LatestAttempt().Fees)
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := money.LookupCurrency("TZS")
	if string(got.Status.NetAmount) != net.StringFixed(cur.Scale) || string(got.Status.Fee) != fee.StringFixed(cur.Scale) || got.Status.Fee == "0" {
		t.Fatalf("stored fee %q net %q; want the success's fee %s and net %s", got.Status.Fee, got.Status.NetAmount, fee, net)
	}
	if got.Status.NetAmount == got.Spec.Amount {
		t.Fatalf("net %q is the gross amount; want the fee taken", got.Status.NetAmount)
	}
	if rfs := refundsOfShop(t, c); len(rfs) != 0 {
		t.Fatalf("%d refunds created under Credit; want none", len(rfs))
	}
	l, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, []paygatev1.Payment{*got}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	settled, avail := settledTZS(t, l)
	if settled != string(got.Status.NetAmount) || avail != string(got.Status.NetAmount) {
		t.Fatalf("ledger settled %q available %q; want the net %q", settled, avail, got.Status.NetAmount)
	}
	if got.Phase() != paygatev1.PaymentFailed {
		t.Fatalf("phase %s; the payment stays failed", got.Phase())
	}
	if e := entryOf(got); !e.settled || e.net.StringFixed(0) != net.StringFixed(0) {
		t.Fatalf("ledger index entry %+v; want the net counted as SumPayments counts it", e)
	}
}

func TestALateSettlementUnderRefundIsRefundedOnce(t *testing.T) {
	got, c, r := settleLateThroughWatch(t, paygatev1.LateSettlementRefund)
	rfs := refundsOfShop(t, c)
	if len(rfs) != 1 {
		t.Fatalf("%d refunds; want one", len(rfs))
	}
	rf := rfs[0]
	if rf.Name != lateRefundName(got) || rf.Spec.Amount != "1500" && rf.Spec.Amount != "1500.00" || rf.Spec.Payment.TrxID != "trx-a" ||
		rf.Spec.Payment.AttemptReference != "shop.trx-a.1" || rf.Spec.Destination != "+255712345678" || rf.Spec.Gateway != "mpesa-tz" ||
		rf.Spec.Reason != RefundReasonLateSettlement || rf.Labels[paygatev1.LabelPayment] != "trx-a" || rf.Labels[paygatev1.LabelMerchant] != "duka" {
		t.Fatalf("refund %s %+v; want the whole amount of trx-a back to its customer", rf.Name, rf.Spec)
	}
	if got.Status.NetAmount != rf.Spec.Amount {
		t.Fatalf("net %q stored; want the gross amount %q (no fee)", got.Status.NetAmount, rf.Spec.Amount)
	}
	// Later passes (and a second finding of the same settlement) create no other refund.
	if _, _, err := reconcilePayment(t, r, c, got, 2); err != nil {
		t.Fatal(err)
	}
	s := &paymentScope{payment: got.DeepCopy(), now: rulesNow}
	s.payment.Status.NetAmount = ""
	if _, err := r.settleLate(context.Background(), s, s.payment.LatestAttempt(), paygatev1.LateSettlementRefund); err != nil {
		t.Fatalf("creating the refund again: %v; want AlreadyExists taken as done", err)
	}
	if n := len(refundsOfShop(t, c)); n != 1 {
		t.Fatalf("%d refunds after more passes; want still one", n)
	}
	// The ledger counts the gross amount, and the refund debits it back to zero.
	rf.Status.Phase = paygatev1.RefundSuccess
	l, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, []paygatev1.Payment{*got}, nil, nil, nil, WithRefunds([]paygatev1.Refund{rf}, nil))
	if err != nil {
		t.Fatal(err)
	}
	settled, avail := settledTZS(t, l)
	if settled != string(got.Spec.Amount) && settled != "1500.00" || (avail != "0" && avail != "0.00") {
		t.Fatalf("ledger settled %q available %q; want the gross 1500 settled and nothing available after the refund", settled, avail)
	}
}

// TestSettledLateNeedsFailedAndTheReason: the one predicate the ledger counts late money by.
func TestSettledLateNeedsFailedAndTheReason(t *testing.T) {
	p := rulesPayment(func(p *paygatev1.Payment) { p.Status.Phase = paygatev1.PaymentFailed })
	set := func(status metav1.ConditionStatus, reason string) {
		meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: paygatev1.ConditionLateSettlement, Status: status, Reason: reason})
	}
	set(metav1.ConditionTrue, ReasonSettledAfterFailure)
	if !p.SettledLate() {
		t.Fatal("failed with LateSettlement=True SettledAfterFailure: want settled late")
	}
	set(metav1.ConditionFalse, ReasonNotSettled)
	if p.SettledLate() {
		t.Fatal("LateSettlement=False: want not settled late")
	}
	set(metav1.ConditionTrue, ReasonSettledAfterFailure)
	p.Status.Phase = paygatev1.PaymentSuccess
	if p.SettledLate() {
		t.Fatal("a successful payment is not settled late")
	}
}
