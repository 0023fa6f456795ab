// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/test/fakeupstream"
)

// settledPayment creates a push payment of amount in currency through c and waits for success.
func settledPayment(c *paygate.Client, currency, amount, phone string) string {
	GinkgoHelper()
	created, err := c.CreatePayment(ctx, paygate.CreatePaymentRequest{
		PaymentAmount: json.Number(amount), CurrencyCode: currency, RefTrx: uniqueName("refundable"), PaymentMode: "push", CustomerPhone: phone,
	}, "")
	Expect(err).NotTo(HaveOccurred())
	verifiedSuccess(c, created.TrxID)
	return created.TrxID
}

// awaitRefund waits until the refund is terminal through the API and returns it.
func awaitRefund(c *paygate.Client, id string) *paygate.Refund {
	GinkgoHelper()
	var r *paygate.Refund
	Eventually(func(g Gomega) {
		var err error
		r, err = c.GetRefund(ctx, id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r.Status).To(BeElementOf("success", "failed"))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	return r
}

// refundEvent waits for the one signed webhook of eventType for refund id at rcv.
func refundEvent(rcv *receiver, m *paygatev1.Merchant, eventType, id string) *paygate.Refund {
	GinkgoHelper()
	verifier := paygate.WebhookVerifier{Secret: webhookSecret(m)}
	var data *paygate.Refund
	Eventually(func(g Gomega) {
		data = nil
		for _, got := range rcv.requests() {
			if got.header.Get("X-Paygate-Event") != eventType {
				continue
			}
			e, err := verifier.Verify(got.header, got.body)
			g.Expect(err).NotTo(HaveOccurred())
			d, err := e.RefundData()
			g.Expect(err).NotTo(HaveOccurred())
			if d.ID == id {
				g.Expect(data).To(BeNil(), "one %s event for refund %s", eventType, id)
				data = d
			}
		}
		g.Expect(data).NotTo(BeNil())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return data
}

// refundAPIError is err as the API's error.
func refundAPIError(err error) *paygate.Error {
	GinkgoHelper()
	var e *paygate.Error
	Expect(errors.As(err, &e)).To(BeTrue(), "%v", err)
	return e
}

var _ = Describe("Refunds", func() {
	It("refunds a sandbox payment in parts up to its amount, refuses more, and tells the merchant by webhook", func() {
		ns := newNamespace()
		createGateway("TZS")
		rcv := newReceiver()
		duka := payoutMerchant(ns, "duka", rcv.url())
		trx := settledPayment(duka.sandbox, "TZS", "10000", "0712345678")
		settledPayment(duka.sandbox, "TZS", "10000", "0712345679")
		Eventually(func() string { return availableBalance(duka.sandbox).StringFixed(2) }).
			WithTimeout(30 * time.Second).Should(Equal("19500.00"))

		By("a partial refund of 4000, which debits the balance by 4000: the fee is not given back")
		first, err := duka.sandbox.CreateRefund(ctx, trx, paygate.RefundRequest{Amount: "4000", Reason: "one item out of stock"}, "refund-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(first.Status).To(Equal("pending"))
		again, err := duka.sandbox.CreateRefund(ctx, trx, paygate.RefundRequest{Amount: "4000", Reason: "one item out of stock"}, "refund-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(again.ID).To(Equal(first.ID), "the same Idempotency-Key is the same refund")
		done := awaitRefund(duka.sandbox, first.ID)
		Expect(done.Status).To(Equal("success"))
		Expect(done.Remark).To(Equal("SANDBOX_TRANSACTION"))
		Expect(*refundEvent(rcv, duka.merchant, paygate.EventRefundCompleted, first.ID)).To(Equal(*done),
			"the event carries the refund record GET returns")
		Eventually(func() string { return availableBalance(duka.sandbox).StringFixed(2) }).Should(Equal("15500.00"))
		p, err := duka.sandbox.GetPayment(ctx, trx)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Status).To(Equal("success"), "a refund leaves the payment's status as it is")
		Expect(p.RefundState).To(Equal("partial"))
		Expect(p.AmountRefunded.String()).To(Equal("4000.00"))

		By("the rest by default, then nothing left")
		rest, err := duka.sandbox.CreateRefund(ctx, trx, paygate.RefundRequest{}, "refund-2")
		Expect(err).NotTo(HaveOccurred())
		Expect(rest.Amount.String()).To(Equal("6000.00"))
		Expect(awaitRefund(duka.sandbox, rest.ID).Status).To(Equal("success"))
		_, err = duka.sandbox.CreateRefund(ctx, trx, paygate.RefundRequest{Amount: "1"}, "refund-3")
		e := refundAPIError(err)
		Expect(e.StatusCode).To(Equal(http.StatusUnprocessableEntity))
		Expect(e.Errors).To(HaveKey("amount"))
		Eventually(func(g Gomega) {
			p, err := duka.sandbox.GetPayment(ctx, trx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.RefundState).To(Equal("full"))
		}).Should(Succeed())
		Eventually(func() string { return availableBalance(duka.sandbox).StringFixed(2) }).Should(Equal("9500.00"),
			"19500 settled, 10000 refunded: the payment's fee of 250 stays with the gateway")

		By("each refund reached the provider once, under its own reference")
		var list paygatev1.RefundList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		Expect(list.Items).To(HaveLen(2))
		for _, rf := range list.Items {
			Expect(sandbox.Refunds(rf.RefundReference())).To(Equal(1))
			Expect(rf.OwnerReferences).To(BeEmpty(), "a refund is not owned by its payment")
		}
	})

	It("fails a refund the sandbox refuses, with its webhook, and gives the reservation back", func() {
		ns := newNamespace()
		createGateway("TZS")
		rcv := newReceiver()
		duka := payoutMerchant(ns, "duka", rcv.url())
		trx := settledPayment(duka.sandbox, "TZS", "10000", "0712345678")
		Eventually(func() string { return availableBalance(duka.sandbox).StringFixed(2) }).
			WithTimeout(30 * time.Second).Should(Equal("9750.00"))
		refused, err := duka.sandbox.CreateRefund(ctx, trx, paygate.RefundRequest{Amount: "1001"}, "")
		Expect(err).NotTo(HaveOccurred())
		done := awaitRefund(duka.sandbox, refused.ID)
		Expect(done.Status).To(Equal("failed"))
		Expect(done.Reason).To(Equal("INVALID_ACCOUNT"))
		Expect(*refundEvent(rcv, duka.merchant, paygate.EventRefundFailed, refused.ID)).To(Equal(*done))
		Eventually(func() string { return availableBalance(duka.sandbox).StringFixed(2) }).Should(Equal("9750.00"))
	})

	It("refunds through the upstream protocol in parts, one refund per reference at the provider", func() {
		ns := newNamespace()
		fake := upstreamFixture(ns)
		duka := createMerchant(ns, "duka")
		settledPayment(duka.production, "TZS", "20000", "+255712000601") // funds the refunds
		trx := settledPayment(duka.production, "TZS", "10000", "+255712000602")
		Eventually(func() string { return availableIn(duka.production, "TZS").StringFixed(2) }).
			WithTimeout(30 * time.Second).Should(Equal("29250.00"))
		var ids []string
		for i, amount := range []string{"2500", "7500"} {
			rf, err := duka.production.CreateRefund(ctx, trx, paygate.RefundRequest{Amount: json.Number(amount)}, fmt.Sprintf("up-%d", i))
			Expect(err).NotTo(HaveOccurred())
			Expect(awaitRefund(duka.production, rf.ID).Status).To(Equal("success"))
			ids = append(ids, rf.ID)
		}
		for _, id := range ids {
			var stored paygatev1.Refund
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: id}, &stored)).To(Succeed())
			Expect(fake.RefundsFor(stored.RefundReference())).To(Equal(1))
		}
		Expect(fake.Refunds()).To(Equal(2))
		Eventually(func() string { return availableIn(duka.production, "TZS").StringFixed(2) }).Should(Equal("19250.00"))
	})

	It("refunds through pawaPay as one refund of the deposit, and through Daraja as one reversal of its receipt", func() {
		ns := newNamespace()
		pp, _ := pawapayFixture(ns)
		duka := createMerchant(ns, "duka", func(m *paygatev1.Merchant) {
			m.Spec.Currencies = []paygatev1.CurrencyCode{"TZS", "KES"}
			m.Spec.Wallets = []paygatev1.Wallet{{Currency: "TZS"}, {Currency: "KES"}}
		})
		trx := settledPayment(duka.production, "TZS", "20000", "0754000631")
		Eventually(func() string { return availableIn(duka.production, "TZS").StringFixed(2) }).
			WithTimeout(30 * time.Second).Should(Equal("19500.00"))
		rf, err := duka.production.CreateRefund(ctx, trx, paygate.RefundRequest{Amount: "5000"}, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(awaitRefund(duka.production, rf.ID).Status).To(Equal("success"))
		var stored paygatev1.Refund
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: rf.ID}, &stored)).To(Succeed())
		Expect(pp.Counters().RefundsCreated).To(Equal(map[string]int{provider.PawapayRefundID(stored.RefundReference()): 1}))

		By("Daraja: a partial reversal is refused, the whole payment is reversed once")
		dj, _ := darajaFixture(ns)
		settledPayment(duka.production, "KES", "3000", "0708374161") // funds the refund (the fee is not given back)
		kes := settledPayment(duka.production, "KES", "1500", "0708374160")
		Eventually(func(g Gomega) {
			var p paygatev1.Payment
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: kes}, &p)).To(Succeed())
			g.Expect(p.Annotations).To(HaveKey(paygatev1.AnnotationProviderReceipt), "the receipt comes with M-Pesa's callback")
		}).WithTimeout(30 * time.Second).Should(Succeed())
		_, err = duka.production.CreateRefund(ctx, kes, paygate.RefundRequest{Amount: "500"}, "")
		Expect(refundAPIError(err).StatusCode).To(Equal(http.StatusUnprocessableEntity))
		Expect(dj.ReversalCount()).To(BeZero())
		whole, err := duka.production.CreateRefund(ctx, kes, paygate.RefundRequest{}, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(awaitRefund(duka.production, whole.ID).Status).To(Equal("success"), "settled by the reversal's result at its own result URL")
		Expect(dj.ReversalCount()).To(Equal(1))
	})

	DescribeTable("takes money that settled after its payment failed as the merchant's lateSettlement says",
		func(policy paygatev1.LateSettlementPolicy, wantAvailable string, wantRefunds int, wantHandling, wantNet string) {
			ns := newNamespace()
			fake := upstreamFixture(ns)
			duka := createMerchant(ns, "duka", func(m *paygatev1.Merchant) { m.Spec.LateSettlement = policy })
			phone := "+255712000701"
			fake.Script(phone, fakeupstream.Scenario{SettleAfter: 4 * time.Second, Callback: true})
			created, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
				PaymentAmount: "20000", CurrencyCode: "TZS", RefTrx: uniqueName("late"), PaymentMode: "push", CustomerPhone: phone,
			}, "")
			Expect(err).NotTo(HaveOccurred())
			key := client.ObjectKey{Namespace: ns, Name: created.TrxID}
			Eventually(func(g Gomega) {
				var p paygatev1.Payment
				g.Expect(k8s.Get(ctx, key, &p)).To(Succeed())
				g.Expect(p.Status.Attempts).NotTo(BeEmpty())
				g.Expect(fake.PushesFor(p.Status.Attempts[0].Reference)).To(Equal(1))
			}).Should(Succeed())
			Eventually(func(g Gomega) { // the session ends before the money arrives
				var p paygatev1.Payment
				g.Expect(k8s.Get(ctx, key, &p)).To(Succeed())
				p.Spec.ExpiresAt = metav1.NewTime(time.Now().Add(time.Second))
				g.Expect(k8s.Update(ctx, &p)).To(Succeed())
			}).Should(Succeed())
			Eventually(func(g Gomega) {
				var p paygatev1.Payment
				g.Expect(k8s.Get(ctx, key, &p)).To(Succeed())
				g.Expect(p.SettledLate()).To(BeTrue())
				g.Expect(p.Status.Phase).To(Equal(paygatev1.PaymentFailed), "the payment's status stays failed")
			}).WithTimeout(60 * time.Second).Should(Succeed())
			Eventually(func(g Gomega) {
				var list paygatev1.RefundList
				g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
				g.Expect(list.Items).To(HaveLen(wantRefunds))
				for _, rf := range list.Items {
					g.Expect(rf.Status.Phase).To(Equal(paygatev1.RefundSuccess))
					g.Expect(string(rf.Spec.Amount)).To(Equal("20000.00"))
				}
				g.Expect(availableIn(duka.production, "TZS").StringFixed(2)).To(Equal(wantAvailable))
			}).WithTimeout(60 * time.Second).Should(Succeed())
			Expect(fake.Refunds()).To(Equal(wantRefunds), "a late settlement is refunded once at most")

			By("the payment and verification records telling the merchant what became of the money")
			rec, err := duka.production.GetPayment(ctx, created.TrxID)
			Expect(err).NotTo(HaveOccurred())
			Expect(rec.Status).To(Equal("failed"))
			Expect(rec.LateSettlement).NotTo(BeNil())
			Expect(rec.LateSettlement.Amount).To(BeEquivalentTo("20000.00"))
			Expect(rec.LateSettlement.Handling).To(Equal(wantHandling))
			Expect(rec.LateSettlement.NetAmount).To(BeEquivalentTo(wantNet))
			Expect(rec.LateSettlement.SettledAt).NotTo(BeEmpty())
			if wantRefunds > 0 {
				Expect(rec.LateSettlement.RefundID).NotTo(BeEmpty())
				Expect(rec.AmountRefunded).To(BeEquivalentTo("20000.00"))
				rf, err := duka.production.GetRefund(ctx, rec.LateSettlement.RefundID)
				Expect(err).NotTo(HaveOccurred())
				Expect(rf.TrxID).To(Equal(created.TrxID))
			} else {
				Expect(rec.LateSettlement.RefundID).To(BeEmpty())
			}
			v, err := duka.production.VerifyPayment(ctx, created.TrxID)
			Expect(err).NotTo(HaveOccurred())
			Expect(v.LateSettlement).To(Equal(rec.LateSettlement))
		},
		Entry("Flag (the default): reported, not counted", paygatev1.LateSettlementFlag, "0.00", 0, "flagged", "0.00"),
		Entry("Credit: the net counts in the balance", paygatev1.LateSettlementCredit, "19500.00", 0, "credited", "19500.00"),
		Entry("Refund: refunded once, the balance back where it was", paygatev1.LateSettlementRefund, "0.00", 1, "refunded", "0.00"),
	)
})
