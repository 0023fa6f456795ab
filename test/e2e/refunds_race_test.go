// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/apiserver"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/pkg/paygate"
)

// raceTimeout bounds the waits of the race specs: CI has two cores and 40 to 50 objects go
// through the controllers at once.
const raceTimeout = 60 * time.Second

// apiPoll is how often the race specs poll the API: no faster than the per-replica rate limit
// (120 a minute) refills, so that polling never leaves the burst a 429.
const apiPoll = 500 * time.Millisecond

// refundsIn lists the Refund objects stored in ns.
func refundsIn(ns string) []paygatev1.Refund {
	GinkgoHelper()
	var list paygatev1.RefundList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// replicaClients starts a second apiserver with its own cache against the same control plane and
// returns the merchant's sandbox clients of both replicas, once each of them sees every payment in
// trxIDs a success and the whole balance want.
func replicaClients(f *merchantFixture, want money.Amount, trxIDs ...string) []*paygate.Client {
	GinkgoHelper()
	addr := startReplica("apiserver-2", func(*apiserver.Options) {})
	clients := []*paygate.Client{f.sandbox, clientAt("http://"+addr, f.merchant, paygatev1.EnvironmentSandbox)}
	for _, c := range clients {
		Eventually(func() string { return availableBalance(c).StringFixed(2) }).
			WithTimeout(raceTimeout).WithPolling(apiPoll).Should(Equal(want.StringFixed(2)))
		for _, trx := range trxIDs { // a replica refunds a payment its own cache shows a success
			Eventually(func(g Gomega) {
				p, err := c.GetPayment(ctx, trx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(p.Status).To(Equal("success"))
			}).WithTimeout(raceTimeout).WithPolling(apiPoll).Should(Succeed())
		}
	}
	return clients
}

// refusal is err as the API's answer to a create it refused: never a 5xx, never a transport error,
// only 422 with one of labels.
func refusal(err error, request string, labels ...string) *paygate.Error {
	GinkgoHelper()
	var e *paygate.Error
	Expect(errors.As(err, &e)).To(BeTrue(), "%s: %v", request, err)
	Expect(e.StatusCode).To(BeNumerically("<", 500), "%s: %v", request, err)
	Expect(e.StatusCode).To(Equal(http.StatusUnprocessableEntity), "%s: %v", request, err)
	Expect(e.Label).To(BeElementOf(labels), "%s: %v", request, err)
	Expect(e.Errors).To(HaveKey("amount"), "%s: %v", request, err)
	return e
}

// storedBalance reads the merchant's sandbox Balance and its TZS entry from the control plane
// (g is Default outside an Eventually).
func storedBalance(g Gomega, f *merchantFixture) (*paygatev1.Balance, paygatev1.CurrencyBalance) {
	GinkgoHelper()
	var b paygatev1.Balance
	key := client.ObjectKey{Namespace: f.merchant.Namespace, Name: paygatev1.BalanceName(f.merchant.Name, paygatev1.EnvironmentSandbox)}
	g.Expect(k8s.Get(ctx, key, &b)).To(Succeed())
	i := slices.IndexFunc(b.Status.Currencies, func(cb paygatev1.CurrencyBalance) bool { return cb.Currency == "TZS" })
	g.Expect(i).NotTo(BeNumerically("<", 0), "the balance has no TZS entry")
	return &b, b.Status.Currencies[i]
}

// balanceOut is what a Balance entry says its payouts and refunds hold: paidOut + reserved +
// refunded + refundsReserved.
func balanceOut(cb paygatev1.CurrencyBalance) money.Amount {
	GinkgoHelper()
	return decimal(cb.PaidOut).Add(decimal(cb.Reserved)).Add(decimal(cb.Refunded)).Add(decimal(cb.RefundsReserved))
}

// decimal parses a stored amount; empty is zero.
func decimal(d paygatev1.Decimal) money.Amount {
	GinkgoHelper()
	if d == "" {
		return money.Amount{}
	}
	a, err := money.ParseAmount(string(d))
	Expect(err).NotTo(HaveOccurred())
	return a
}

// refundsHeld sums, in total and by payment, the refunds that hold money: reserved and not failed,
// paid or not yet.
func refundsHeld(refunds []paygatev1.Refund) (money.Amount, map[string]money.Amount) {
	GinkgoHelper()
	total, byPayment := money.Amount{}, map[string]money.Amount{}
	for i := range refunds {
		if rf := &refunds[i]; rf.Reserved() {
			a := decimal(rf.Spec.Amount)
			total = total.Add(a)
			byPayment[rf.Spec.Payment.TrxID] = byPayment[rf.Spec.Payment.TrxID].Add(a)
		}
	}
	return total, byPayment
}

// payoutsHeld sums the payouts that hold money: reserved and not failed, paid or not yet.
func payoutsHeld(payouts []paygatev1.Payout) money.Amount {
	GinkgoHelper()
	total := money.Amount{}
	for i := range payouts {
		if p := &payouts[i]; p.Reserved() {
			total = total.Add(decimal(p.Spec.Amount))
		}
	}
	return total
}

// overdrawn stops an Eventually at once when held exceeds limit: waiting longer cannot mend it.
func overdrawn(what string, held, limit money.Amount) {
	if held.Cmp(limit) > 0 {
		StopTrying(fmt.Sprintf("%s hold %s, more than %s", what, held.StringFixed(2), limit.StringFixed(2))).Now()
	}
}

var _ = Describe("Refund races", func() {
	It("50 concurrent refunds of one payment over two apiserver instances never refund more than the payment", func() {
		ns := newNamespace()
		createGateway("TZS")
		duka := payoutMerchant(ns, "duka", newReceiver().url())
		trx := settledPayment(duka.sandbox, "TZS", "10000", "0712345678")
		// Funded generously, so that the balance is never what limits the refunds: the payment is.
		for i := range 3 {
			settledPayment(duka.sandbox, "TZS", "20000", fmt.Sprintf("07123456%02d", 80+i))
		}
		settled := money.MustParseAmount("68250") // 9750 + 3 x 19500
		clients := replicaClients(duka, settled, trx)

		By("sending 50 refunds of 1000 against the payment of 10000, with distinct keys, over both replicas")
		const n = 50
		ids := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{}) // all at once, not in the order the goroutines start
		for i := range n {
			wg.Go(func() {
				defer GinkgoRecover()
				<-start
				rf, err := clients[i%2].CreateRefund(ctx, trx, paygate.RefundRequest{Amount: "1000", Reason: "race"}, fmt.Sprintf("refund-race-%d", i))
				errs[i] = err
				if err == nil {
					ids[i] = rf.ID
				}
			})
		}
		close(start)
		wg.Wait()
		accepted := map[string]bool{}
		byReplica := [2]int{}
		for i, err := range errs {
			if err != nil {
				// The replica's cache already showed the payment's refunds claiming all of it.
				refusal(err, fmt.Sprintf("request %d", i), apiserver.LabelValidationFailed)
				continue
			}
			Expect(accepted).NotTo(HaveKey(ids[i]), "request %d: distinct keys make distinct refunds", i)
			accepted[ids[i]] = true
			byReplica[i%2]++
		}
		GinkgoWriter.Printf("refund race: accepted %d (%d and %d by each replica), refused at the API %d\n",
			len(accepted), byReplica[0], byReplica[1], n-len(accepted))
		// A replica refuses only once its cache shows refunds (not failed) claiming the whole payment,
		// so at least ten were accepted.
		Expect(len(accepted)).To(BeNumerically(">=", 10))

		By("ending every recorded refund: the first ten in creation order succeed, the rest fail REFUND_EXCEEDS_PAYMENT")
		var refunds []paygatev1.Refund
		Eventually(func(g Gomega) {
			refunds = refundsIn(ns)
			_, byPayment := refundsHeld(refunds)
			overdrawn("the refunds of the payment", byPayment[trx], money.MustParseAmount("10000"))
			g.Expect(refunds).To(HaveLen(len(accepted)))
			for _, rf := range refunds {
				g.Expect(rf.Terminal()).To(BeTrue(), "refund %s is %s", rf.Name, rf.Phase())
			}
		}).WithTimeout(raceTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
		refunded := money.Amount{}
		successes, exceeded := 0, 0
		for _, rf := range refunds {
			Expect(accepted).To(HaveKey(rf.Name), "only accepted requests record a refund")
			Expect(rf.Spec.Payment.TrxID).To(Equal(trx))
			if rf.Status.Phase == paygatev1.RefundSuccess {
				successes++
				refunded = refunded.Add(decimal(rf.Spec.Amount))
				Expect(rf.Status.ReservedAt).NotTo(BeNil(), "refund %s succeeded unreserved", rf.Name)
				Expect(sandbox.Refunds(rf.RefundReference())).To(Equal(1), "refund %s reached the provider once", rf.Name)
				continue
			}
			exceeded++
			Expect(rf.Status.Reason).To(Equal(string(paygatev1.RefundExceedsPayment)), "refund %s", rf.Name)
			Expect(rf.Status.ReservedAt).To(BeNil(), "refund %s failed after a reservation", rf.Name)
			Expect(sandbox.Refunds(rf.RefundReference())).To(BeZero(), "refund %s failed yet reached the provider", rf.Name)
		}
		GinkgoWriter.Printf("refund race: %d succeeded (%s), %d failed REFUND_EXCEEDS_PAYMENT\n", successes, refunded.StringFixed(2), exceeded)
		Expect(refunded.Cmp(money.MustParseAmount("10000"))).To(BeNumerically("<=", 0), "refunded %s of a payment of 10000", refunded)
		Expect(successes).To(Equal(10), "the single writer reserves what the payment's amount covers")

		By("telling the same on the payment record and the balance through both replicas")
		for _, c := range clients {
			Eventually(func(g Gomega) {
				p, err := c.GetPayment(ctx, trx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(p.Status).To(Equal("success"))
				g.Expect(p.AmountRefunded.String()).To(Equal(refunded.StringFixed(2)))
				g.Expect(p.RefundState).To(Equal("full"))
			}).WithTimeout(raceTimeout).WithPolling(apiPoll).Should(Succeed())
			left, err := settled.Sub(refunded)
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() string { return availableBalance(c).StringFixed(2) }).
				WithTimeout(raceTimeout).WithPolling(apiPoll).Should(Equal(left.StringFixed(2)))
		}
		b, tzs := storedBalance(Default, duka)
		Expect(b.Status.RefundReservations).To(BeEmpty())
		Expect(decimal(tzs.Refunded).StringFixed(2)).To(Equal(refunded.StringFixed(2)))
		Expect(decimal(tzs.RefundsReserved).IsZero()).To(BeTrue())
	})

	It("refunds and payouts racing for one balance never overdraw it", func() {
		ns := newNamespace()
		// Payouts of TZS through the same sandbox gateway: 1.5 % plus 100 each, at least 1000.
		createGateway("TZS", func(g *paygatev1.Gateway) {
			g.Spec.Payouts = &paygatev1.PayoutSchedule{
				Fees:      paygatev1.GatewayFees{Percent: "1.5", Fixed: "100"},
				MinAmount: ptr.To(paygatev1.Decimal("1000")),
			}
		})
		duka := payoutMerchant(ns, "duka", newReceiver().url())
		// Four payments of 1000 and one of 12000: 15600 settled, enough for a handful of the 40
		// requests below.
		paid := map[string]money.Amount{}
		var small []string
		for i := range 4 {
			trx := settledPayment(duka.sandbox, "TZS", "1000", fmt.Sprintf("07123456%02d", 70+i))
			small, paid[trx] = append(small, trx), money.MustParseAmount("1000")
		}
		big := settledPayment(duka.sandbox, "TZS", "12000", "0712345679")
		paid[big] = money.MustParseAmount("12000")
		settled := money.MustParseAmount("15600") // 4 x 975 + 11700
		clients := replicaClients(duka, settled, append(small, big)...)
		// refundOf is the payment the k-th refund returns 1000 of: two of each small payment (the
		// second exceeds it), then twelve of the big one (all of it).
		refundOf := func(k int) string {
			if k < 2*len(small) {
				return small[k%len(small)]
			}
			return big
		}

		By("sending 20 refunds of 1000 (two of each payment of 1000, twelve of the payment of 12000) and 20 payouts of 2000, all at once over both replicas")
		const n = 40
		refundIDs := make([]string, n)
		payoutIDs := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				defer GinkgoRecover()
				<-start
				c := clients[(i/2)%2]
				if i%2 == 0 {
					rf, err := c.CreateRefund(ctx, refundOf(i/2), paygate.RefundRequest{Amount: "1000"}, fmt.Sprintf("mixed-refund-%d", i))
					errs[i] = err
					if err == nil {
						refundIDs[i] = rf.ID
					}
					return
				}
				p, err := c.CreatePayout(ctx, paygate.PayoutRequest{Amount: "2000"}, fmt.Sprintf("mixed-payout-%d", i))
				errs[i] = err
				if err == nil {
					payoutIDs[i] = p.ID
				}
			})
		}
		close(start)
		wg.Wait()
		acceptedRefunds, acceptedPayouts := map[string]bool{}, map[string]bool{}
		refusedRefunds, refusedPayouts := 0, 0
		for i, err := range errs {
			request := fmt.Sprintf("request %d", i)
			switch {
			case i%2 == 0 && err != nil:
				// The replica's cache showed the balance, or the payment's refunds, used up.
				refusal(err, request, apiserver.LabelInsufficientBalance, apiserver.LabelValidationFailed)
				refusedRefunds++
			case i%2 == 0:
				acceptedRefunds[refundIDs[i]] = true
			case err != nil:
				refusal(err, request, apiserver.LabelInsufficientBalance)
				refusedPayouts++
			default:
				acceptedPayouts[payoutIDs[i]] = true
			}
		}
		GinkgoWriter.Printf("mixed race: accepted %d refunds and %d payouts, refused at the API %d refunds and %d payouts\n",
			len(acceptedRefunds), len(acceptedPayouts), refusedRefunds, refusedPayouts)

		By("ending every recorded refund and payout")
		var (
			refunds []paygatev1.Refund
			payouts []paygatev1.Payout
		)
		Eventually(func(g Gomega) {
			refunds, payouts = refundsIn(ns), payoutsIn(ns)
			rfHeld, byPayment := refundsHeld(refunds)
			for trx, a := range byPayment {
				overdrawn("the refunds of payment "+trx, a, paid[trx])
			}
			overdrawn("the refunds and payouts", rfHeld.Add(payoutsHeld(payouts)), settled)
			_, tzs := storedBalance(g, duka)
			overdrawn("the Balance's refunds and payouts", balanceOut(tzs), settled)
			g.Expect(refunds).To(HaveLen(len(acceptedRefunds)))
			g.Expect(payouts).To(HaveLen(len(acceptedPayouts)))
			for _, rf := range refunds {
				g.Expect(rf.Terminal()).To(BeTrue(), "refund %s is %s", rf.Name, rf.Phase())
			}
			for _, p := range payouts {
				g.Expect(p.Terminal()).To(BeTrue(), "payout %s is %s", p.Name, p.Phase())
			}
		}).WithTimeout(raceTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("paying the successes once each at the provider, and the refused ones never")
		refunded, paidOut := money.Amount{}, money.Amount{}
		ofPayment := map[string]money.Amount{}
		reasons := map[string]int{}
		for _, rf := range refunds {
			Expect(acceptedRefunds).To(HaveKey(rf.Name))
			if rf.Status.Phase == paygatev1.RefundSuccess {
				a := decimal(rf.Spec.Amount)
				refunded = refunded.Add(a)
				ofPayment[rf.Spec.Payment.TrxID] = ofPayment[rf.Spec.Payment.TrxID].Add(a)
				Expect(rf.Status.ReservedAt).NotTo(BeNil(), "refund %s succeeded unreserved", rf.Name)
				Expect(sandbox.Refunds(rf.RefundReference())).To(Equal(1), "refund %s reached the provider once", rf.Name)
				continue
			}
			reasons["refund "+rf.Status.Reason]++
			Expect(rf.Status.Reason).To(BeElementOf(string(paygatev1.RefundInsufficientBalance), string(paygatev1.RefundExceedsPayment)), "refund %s", rf.Name)
			Expect(rf.Status.ReservedAt).To(BeNil(), "refund %s failed after a reservation", rf.Name)
			Expect(sandbox.Refunds(rf.RefundReference())).To(BeZero(), "refund %s failed yet reached the provider", rf.Name)
		}
		for _, p := range payouts {
			Expect(acceptedPayouts).To(HaveKey(p.Name))
			if p.Status.Phase == paygatev1.PayoutSuccess {
				paidOut = paidOut.Add(decimal(p.Spec.Amount))
				Expect(p.Status.ReservedAt).NotTo(BeNil(), "payout %s succeeded unreserved", p.Name)
				Expect(sandbox.Disbursements(p.DisbursementReference())).To(Equal(1), "payout %s reached the provider once", p.Name)
				continue
			}
			reasons["payout "+p.Status.Reason]++
			Expect(p.Status.Reason).To(Equal(string(paygatev1.PayoutInsufficientBalance)), "payout %s", p.Name)
			Expect(p.Status.ReservedAt).To(BeNil(), "payout %s failed after a reservation", p.Name)
			Expect(sandbox.Disbursements(p.DisbursementReference())).To(BeZero(), "payout %s failed yet reached the provider", p.Name)
		}
		GinkgoWriter.Printf("mixed race: refunded %s, paid out %s of %s settled; failed by the balance controller: %v\n",
			refunded.StringFixed(2), paidOut.StringFixed(2), settled.StringFixed(2), reasons)
		for trx, a := range ofPayment {
			Expect(a.Cmp(paid[trx])).To(BeNumerically("<=", 0), "refunded %s of payment %s of %s", a, trx, paid[trx])
		}
		out := refunded.Add(paidOut)
		Expect(out.Cmp(settled)).To(BeNumerically("<=", 0), "refunds %s and payouts %s of %s settled", refunded, paidOut, settled)

		By("leaving the Balance with nothing reserved, its sums those of the successes, and nothing overdrawn")
		Eventually(func(g Gomega) {
			b, _ := storedBalance(g, duka)
			g.Expect(b.Status.PayoutReservations).To(BeEmpty())
			g.Expect(b.Status.RefundReservations).To(BeEmpty())
		}).WithTimeout(raceTimeout).Should(Succeed())
		_, tzs := storedBalance(Default, duka)
		Expect(decimal(tzs.Settled).StringFixed(2)).To(Equal(settled.StringFixed(2)))
		Expect(decimal(tzs.PaidOut).StringFixed(2)).To(Equal(paidOut.StringFixed(2)))
		Expect(decimal(tzs.Refunded).StringFixed(2)).To(Equal(refunded.StringFixed(2)))
		Expect(decimal(tzs.Reserved).IsZero()).To(BeTrue())
		Expect(decimal(tzs.RefundsReserved).IsZero()).To(BeTrue())
		// available = settled - paidOut - reserved - refunded - refundsReserved, never below zero.
		left, err := decimal(tzs.Settled).Sub(balanceOut(tzs))
		Expect(err).NotTo(HaveOccurred(), "the balance is overdrawn")
		Expect(decimal(tzs.Available).StringFixed(2)).To(Equal(left.StringFixed(2)))
		// 40000 of payouts alone were asked: some were refused, each when less than 2000 was left,
		// and nothing released any amount since.
		Expect(left.Cmp(money.MustParseAmount("2000"))).To(BeNumerically("<", 0), "%s left unused", left)
		for _, c := range clients {
			Eventually(func() string { return availableBalance(c).StringFixed(2) }).
				WithTimeout(raceTimeout).WithPolling(apiPoll).Should(Equal(left.StringFixed(2)))
		}
	})
})
