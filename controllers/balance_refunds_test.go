// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"strings"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/money"
)

// refundCustomer is the number the refund specs' payments are collected from.
const refundCustomer = "+255713000100"

// refundablePayment creates a sandbox payment of amount for merchant "duka" through gw, named as
// the apiserver names payments (a Refund's trxID must match), and waits until it settled.
func refundablePayment(ns string, gw *paygatev1.Gateway, amount string) *paygatev1.Payment {
	name := "trx-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24]
	p := newPayment(ns, "duka", name, amount, gw, refundCustomer)
	Expect(k8s.Create(ctx, p)).To(Succeed())
	return waitPhase(p, paygatev1.PaymentSuccess)
}

// newRefund is a Refund of amount from the payment p as the apiserver records it: a UUID name,
// the payment's amount as the cap, status empty (pending). Its creation time follows payoutSeq, so
// refunds and payouts a spec creates are ordered as it creates them.
func newRefund(p *paygatev1.Payment, amount string) *paygatev1.Refund {
	reference := "att-" + p.Name
	if n := len(p.Status.Attempts); n > 0 {
		reference = p.Status.Attempts[n-1].Reference
	}
	return &paygatev1.Refund{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: uuid.NewString(),
			Labels: map[string]string{paygatev1.LabelMerchant: p.Spec.MerchantRef.Name, paygatev1.LabelEnvironment: string(p.Spec.Environment),
				paygatev1.LabelPayment: p.Name}},
		Spec: paygatev1.RefundSpec{
			MerchantRef: p.Spec.MerchantRef, Environment: p.Spec.Environment,
			Payment: paygatev1.RefundedPayment{TrxID: p.Name, Amount: p.Spec.Amount, AttemptReference: reference},
			Amount:  paygatev1.Decimal(amount), Currency: p.Spec.Currency, Destination: refundCustomer, Gateway: p.Spec.Gateways[0],
			CreatedAt: metav1.NewMicroTime(clock.Now().Add(-time.Minute + time.Duration(payoutSeq.Add(1))*time.Microsecond)),
		},
	}
}

func getRefund(g Gomega, f *paygatev1.Refund) *paygatev1.Refund {
	out := &paygatev1.Refund{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(f), out)).To(Succeed())
	return out
}

// waitRefundReserved waits until the balance controller reserved f; the refund controller may take
// it further, but never back.
func waitRefundReserved(f *paygatev1.Refund) *paygatev1.Refund {
	var out *paygatev1.Refund
	EventuallyWithOffset(1, func(g Gomega) {
		out = getRefund(g, f)
		g.Expect(out.Status.ReservedAt).NotTo(BeNil())
		g.Expect(out.Status.Phase).NotTo(Equal(paygatev1.RefundFailed), "reason %s", out.Status.Reason)
	}).Should(Succeed())
	return out
}

// waitRefundRejected waits until the balance controller failed f with reason, never reserved.
func waitRefundRejected(f *paygatev1.Refund, reason paygatev1.RefundFailureCode) {
	EventuallyWithOffset(1, func(g Gomega) {
		out := getRefund(g, f)
		g.Expect(out.Status.Phase).To(Equal(paygatev1.RefundFailed))
		g.Expect(out.Status.Reason).To(Equal(string(reason)))
		g.Expect(out.Status.ReservedAt).To(BeNil())
		g.Expect(out.Status.Attempt).To(BeNil(), "a rejected refund never reaches the provider")
	}).Should(Succeed())
}

// expectRefundLedger waits until the merchant's Balance in env is what its payments, payouts and
// refunds say, for every currency (docs/ledger.md):
//
//	available = settled - paid out - reserved payouts - refunded - reserved refunds
//
// and the Balance's refund reservations are exactly the reserved, unfinished refunds. It returns
// the Balance.
func expectRefundLedger(ns, merchant string, env paygatev1.Environment) *paygatev1.Balance {
	var b *paygatev1.Balance
	EventuallyWithOffset(1, func(g Gomega) {
		var (
			payments paygatev1.PaymentList
			pos      paygatev1.PayoutList
			refunds  paygatev1.RefundList
		)
		for _, l := range []client.ObjectList{&payments, &pos, &refunds} {
			g.Expect(k8s.List(ctx, l, client.InNamespace(ns), client.MatchingLabels{paygatev1.LabelMerchant: merchant})).To(Succeed())
		}
		b = getBalance(g, ns, merchant, env)

		type sums struct{ settled, paid, reserved, refunded, refundsReserved money.Amount }
		by := map[paygatev1.CurrencyCode]*sums{}
		of := func(c paygatev1.CurrencyCode) *sums {
			if by[c] == nil {
				by[c] = &sums{}
			}
			return by[c]
		}
		for _, p := range payments.Items {
			if p.Spec.Environment == env && p.Status.Phase == paygatev1.PaymentSuccess {
				s := of(p.Spec.Currency)
				s.settled = s.settled.Add(amountOf(p.Status.NetAmount))
			}
		}
		for _, p := range pos.Items {
			switch {
			case p.Spec.Environment != env:
			case p.Status.Phase == paygatev1.PayoutSuccess:
				s := of(p.Spec.Currency)
				s.paid = s.paid.Add(amountOf(p.Spec.Amount))
			case p.Reserved():
				s := of(p.Spec.Currency)
				s.reserved = s.reserved.Add(amountOf(p.Spec.Amount))
			}
		}
		var holds []string
		for _, f := range refunds.Items {
			switch {
			case f.Spec.Environment != env:
			case f.Status.Phase == paygatev1.RefundSuccess:
				s := of(f.Spec.Currency)
				s.refunded = s.refunded.Add(amountOf(f.Spec.Amount))
			case f.Reserved():
				s := of(f.Spec.Currency)
				s.refundsReserved = s.refundsReserved.Add(amountOf(f.Spec.Amount))
				holds = append(holds, f.Name)
			}
		}
		for c, s := range by {
			var got paygatev1.CurrencyBalance
			for _, cb := range b.Status.Currencies {
				if cb.Currency == c {
					got = cb
				}
			}
			available, err := s.settled.Sub(s.paid.Add(s.reserved).Add(s.refunded).Add(s.refundsReserved))
			g.Expect(err).NotTo(HaveOccurred(), "%s: payouts and refunds above settled %s", c, s.settled)
			for _, f := range []struct {
				field     string
				got, want money.Amount
			}{
				{"settled", amountOf(got.Settled), s.settled}, {"paidOut", amountOf(got.PaidOut), s.paid},
				{"reserved", amountOf(got.Reserved), s.reserved}, {"refunded", amountOf(got.Refunded), s.refunded},
				{"refundsReserved", amountOf(got.RefundsReserved), s.refundsReserved}, {"available", amountOf(got.Available), available},
			} {
				g.Expect(f.got.Equal(f.want)).To(BeTrue(), "%s %s: the Balance holds %s, the objects say %s", c, f.field, f.got, f.want)
			}
		}
		var reservations []string
		for _, r := range b.Status.RefundReservations {
			reservations = append(reservations, r.Refund)
		}
		g.Expect(reservations).To(ConsistOf(holds), "the Balance's refund reservations are the reserved, unfinished refunds")
		ready := meta.FindStatusCondition(b.Status.Conditions, paygatev1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(controllers.ReasonBalanceComputed))
	}).Should(Succeed())
	return b
}

// stopManagerFor stops the suite's manager until the spec starts it again (or ends).
func stopManagerFor() {
	Expect(env.StopManager()).To(Succeed())
	DeferCleanup(func() {
		if _, err := env.StartManager(managerOptions()); err != nil {
			Expect(err.Error()).To(ContainSubstring("already running"))
		}
	})
}

var _ = Describe("Refunds on the balance", func() {
	var (
		ns string
		gw *paygatev1.Gateway
		m  *paygatev1.Merchant
	)
	BeforeEach(func() {
		ns = newNamespace()
		gw = createGateway("TZS", withPayouts)
		m = payoutMerchant(ns)
	})

	It("decides refunds and payouts in one creation order: reserved, REFUND_EXCEEDS_PAYMENT, INSUFFICIENT_BALANCE", func() {
		a := refundablePayment(ns, gw, "10000") // net 9750.00
		bp := refundablePayment(ns, gw, "10000")
		Eventually(func(g Gomega) {
			g.Expect(currencyBalance(g, ns, m.Name, paygatev1.EnvironmentSandbox, "TZS").Settled).To(BeEquivalentTo("19500.00"))
		}).Should(Succeed())

		// Recorded while the manager is down, so that one pass sees them all: the order is their
		// spec.createdAt, whatever the order they arrive in.
		stopManagerFor()
		rf1 := newRefund(a, "6000.00")                                    // reserved: 13500.00 left
		rf2 := newRefund(a, "4000.01")                                    // above what payment a has left, though covered
		po1 := newPayout(m, paygatev1.EnvironmentSandbox, "10000.00", gw) // reserved: 3500.00 left
		rf3 := newRefund(bp, "4000.00")                                   // not covered
		rf4 := newRefund(bp, "3500.00")                                   // reserved: nothing left
		po2 := newPayout(m, paygatev1.EnvironmentSandbox, "1000.00", gw)  // not covered
		for _, o := range []client.Object{po2, rf4, rf3, po1, rf2, rf1} {
			Expect(k8s.Create(ctx, o)).To(Succeed())
		}
		_, err := env.StartManager(managerOptions())
		Expect(err).NotTo(HaveOccurred())

		waitRefundReserved(rf1)
		waitRefundReserved(rf4)
		waitRefundRejected(rf2, paygatev1.RefundExceedsPayment)
		waitRefundRejected(rf3, paygatev1.RefundInsufficientBalance)
		Eventually(func(g Gomega) {
			g.Expect(getPayout(g, po1).Status.ReservedAt).NotTo(BeNil())
			out := getPayout(g, po2)
			g.Expect(out.Status.Phase).To(Equal(paygatev1.PayoutFailed))
			g.Expect(out.Status.Reason).To(Equal(string(paygatev1.PayoutInsufficientBalance)))
		}).Should(Succeed())

		b := expectRefundLedger(ns, m.Name, paygatev1.EnvironmentSandbox)
		Expect(b.Status.Currencies).To(HaveLen(1))
		cb := b.Status.Currencies[0]
		Expect(cb.Settled).To(BeEquivalentTo("19500.00"))
		Expect(cb.Available).To(BeEquivalentTo("0.00"), "refunds 9500.00 and payout 10000.00 hold the whole balance")
		Expect(amountOf(cb.Refunded).Add(amountOf(cb.RefundsReserved)).StringFixed(2)).To(Equal("9500.00"))
		Expect(amountOf(cb.Reserved).Add(amountOf(cb.PaidOut)).StringFixed(2)).To(Equal("10000.00"))
		prod := getBalance(Default, ns, m.Name, paygatev1.EnvironmentProduction)
		Expect(prod.Status.Currencies).To(BeEmpty(), "a sandbox refund never touches production money")
	})

	It("releases a failed refund's reservation once, and rebuilds a lost Balance's from the refunds' reservedAt", func() {
		a := refundablePayment(ns, gw, "10000") // net 9750.00
		Eventually(func(g Gomega) {
			g.Expect(currencyBalance(g, ns, m.Name, paygatev1.EnvironmentSandbox, "TZS").Settled).To(BeEquivalentTo("9750.00"))
		}).Should(Succeed())

		// While the manager is down: failed was reserved and then failed at the provider, and the
		// Balance still holds it; reserved was reserved, and the Balance lost it.
		stopManagerFor()
		failed, reserved := newRefund(a, "3000.00"), newRefund(a, "2000.00")
		at := metav1.NewMicroTime(clock.Now())
		for _, f := range []*paygatev1.Refund{failed, reserved} {
			Expect(k8s.Create(ctx, f)).To(Succeed())
			f.Status = paygatev1.RefundStatus{Phase: paygatev1.RefundPending, ReservedAt: &at}
			if f == failed {
				f.Status.Phase, f.Status.Reason = paygatev1.RefundFailed, string(paygatev1.RefundResolvedFailed)
			}
			Expect(k8s.Status().Update(ctx, f)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			b := getBalance(g, ns, m.Name, paygatev1.EnvironmentSandbox)
			b.Status.RefundReservations = []paygatev1.RefundReservation{{Refund: failed.Name, TrxID: a.Name, Currency: "TZS", Amount: "3000.00"}}
			g.Expect(k8s.Status().Update(ctx, b)).To(Succeed())
		}).Should(Succeed())
		// Fits only once failed's 3000.00 is back, in the balance and in payment a's amount.
		next := newRefund(a, "7750.00")
		Expect(k8s.Create(ctx, next)).To(Succeed())
		_, err := env.StartManager(managerOptions())
		Expect(err).NotTo(HaveOccurred())

		waitRefundReserved(next)
		b := expectRefundLedger(ns, m.Name, paygatev1.EnvironmentSandbox)
		Expect(b.Status.Currencies[0].Available).To(BeEquivalentTo("0.00"))
		for _, r := range b.Status.RefundReservations {
			Expect(r.Refund).NotTo(Equal(failed.Name), "a failed refund holds nothing")
		}
		Consistently(func(g Gomega) {
			g.Expect(currencyBalance(g, ns, m.Name, paygatev1.EnvironmentSandbox, "TZS").Available).To(BeEquivalentTo("0.00"), "released once")
		}, "500ms").Should(Succeed())

		By("rebuilding the refund reservations from the refunds when the Balance is lost")
		Expect(k8s.Delete(ctx, b)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getBalance(g, ns, m.Name, paygatev1.EnvironmentSandbox).UID).NotTo(Equal(b.UID))
		}).Should(Succeed())
		b = expectRefundLedger(ns, m.Name, paygatev1.EnvironmentSandbox)
		Expect(b.Status.Currencies[0].Available).To(BeEquivalentTo("0.00"))
		Expect(getRefund(Default, failed).Status.Phase).To(Equal(paygatev1.RefundFailed))
	})
})
