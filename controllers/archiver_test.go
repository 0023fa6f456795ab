// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/archive"
)

// crashAfterCommit is an archive whose Archive commits and then "crashes" the pass: it cancels
// the pass's context, so the deletes that follow the commit fail, as when the manager dies
// between the two.
type crashAfterCommit struct {
	controllers.ArchiveStore
	crash context.CancelFunc
}

func (c crashAfterCommit) Archive(ctx context.Context, b archive.Batch) (archive.Result, error) {
	res, err := c.ArchiveStore.Archive(context.WithoutCancel(ctx), b)
	c.crash()
	return res, err
}

var _ = Describe("Archiving settled history", func() {
	var (
		ns  string
		gw  *paygatev1.Gateway
		m   *paygatev1.Merchant
		now *clocktesting.FakeClock
	)
	// Deliveries leave with their payments and payouts here: a delivery that never had an
	// endpoint is dated by its creation, in real time, and other specs move the suite's clock.
	retention := controllers.Retention{Payments: time.Hour, Payouts: time.Hour, Invoices: time.Hour}
	archiverFor := func(store controllers.ArchiveStore) *controllers.Archiver {
		return &controllers.Archiver{Client: k8s, Store: store, Clock: now, Retention: retention, Namespace: ns,
			Interval: time.Second, BatchSize: 7, Log: GinkgoLogr}
	}
	BeforeEach(func() {
		needArchive()
		ns = newNamespace()
		gw = createGateway("TZS", withPayouts)
		m = payoutMerchant(ns)
		now = clocktesting.NewFakeClock(clock.Now())
	})

	// live lists what of the namespace is still in etcd.
	live := func(g Gomega) (payments []string, payouts []string, deliveries int) {
		var ps paygatev1.PaymentList
		g.Expect(k8s.List(ctx, &ps, client.InNamespace(ns))).To(Succeed())
		for _, p := range ps.Items {
			payments = append(payments, p.Name)
		}
		var pos paygatev1.PayoutList
		g.Expect(k8s.List(ctx, &pos, client.InNamespace(ns))).To(Succeed())
		for _, p := range pos.Items {
			payouts = append(payouts, p.Name)
		}
		var ds paygatev1.WebhookDeliveryList
		g.Expect(k8s.List(ctx, &ds, client.InNamespace(ns))).To(Succeed())
		return payments, payouts, len(ds.Items)
	}
	// expectBalance waits until the sandbox balance is ready and shows want.
	expectBalance := func(want []paygatev1.CurrencyBalance, observed int64) {
		EventuallyWithOffset(1, func(g Gomega) {
			b := getBalance(g, ns, m.Name, paygatev1.EnvironmentSandbox)
			ready := meta.FindStatusCondition(b.Status.Conditions, paygatev1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(controllers.ReasonBalanceComputed))
			g.Expect(b.Status.Currencies).To(Equal(want))
			g.Expect(b.Status.ObservedPayments).To(Equal(observed))
		}).Should(Succeed())
	}
	// expectLedgerChecks runs the operators' ledger check: nothing of this namespace differs.
	expectLedgerChecks := func() {
		EventuallyWithOffset(1, func(g Gomega) {
			res, err := controllers.CheckLedgers(ctx, k8s, archiveStore)
			g.Expect(err).NotTo(HaveOccurred())
			var mine []string
			for _, d := range res.Differences {
				if d.Namespace == ns || strings.HasPrefix(d.Field, "carriedForward") {
					mine = append(mine, d.String())
				}
			}
			g.Expect(mine).To(BeEmpty())
		}).Should(Succeed())
	}

	It("moves settled payments, payouts and their deliveries to PostgreSQL after their retention, and balances stay exact", func() {
		settle(ns, paygatev1.EnvironmentSandbox, gw, 3, "10000") // 3 × 9750.00
		paid := newPayout(m, paygatev1.EnvironmentSandbox, "10000.00", gw)
		Expect(k8s.Create(ctx, paid)).To(Succeed())
		paidDone := waitPayout(paid, paygatev1.PayoutSuccess)
		open := newPayment(ns, m.Name, "trx-open-"+uniqueName("p"), "500", gw, "") // no push: stays pending
		Expect(k8s.Create(ctx, open)).To(Succeed())
		want := []paygatev1.CurrencyBalance{{Currency: "TZS", Available: "19250.00", Settled: "29250.00", Reserved: "0.00", PaidOut: "10000.00", SettledPayments: 3}}
		expectBalance(want, 4)
		var before paygatev1.PaymentList
		Expect(k8s.List(ctx, &before, client.InNamespace(ns))).To(Succeed())
		_, _, deliveries := live(Default)
		Expect(deliveries).To(BeNumerically(">=", 4), "a payment.completed per payment and a payout.completed")

		a := archiverFor(archiveStore)
		By("keeping everything younger than the retention")
		res, err := a.Pass(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Deleted).To(BeEmpty())

		By("archiving, then deleting, everything settled past it")
		now.Step(2 * time.Hour)
		res, err = a.Pass(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Archived).To(HaveKeyWithValue(archive.KindPayment, 3))
		Expect(res.Archived).To(HaveKeyWithValue(archive.KindPayout, 1))
		Expect(res.Deleted).To(HaveKeyWithValue(archive.KindPayment, 3))
		Expect(res.Deleted).To(HaveKeyWithValue(archive.KindWebhookDelivery, deliveries))
		payments, payouts, left := live(Default)
		Expect(payments).To(ConsistOf(open.Name), "the pending payment stays live")
		Expect(payouts).To(BeEmpty())
		Expect(left).To(BeZero())
		Consistently(func(g Gomega) {
			_, _, left := live(g)
			g.Expect(left).To(BeZero(), "an archived payment or payout must not send its event again")
		}, "2s", "100ms").Should(Succeed())
		for _, p := range before.Items {
			if p.Name == open.Name {
				continue
			}
			got, err := archiveStore.GetPayment(ctx, ns, p.Name)
			Expect(err).NotTo(HaveOccurred())
			p.ManagedFields = nil
			Expect(got.Spec).To(Equal(p.Spec))
			Expect(got.Status).To(Equal(p.Status))
			Expect(got.UID).To(Equal(p.UID))
		}
		gotPayout, err := archiveStore.GetPayout(ctx, ns, paid.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(gotPayout.Status).To(Equal(paidDone.Status))

		By("counting the archive's carried-forward sums in the balance, each payment once")
		expectBalance(want, 4)
		expectLedgerChecks()

		By("deciding new payouts against carried forward plus live")
		next := newPayout(m, paygatev1.EnvironmentSandbox, "5000.00", gw)
		Expect(k8s.Create(ctx, next)).To(Succeed())
		waitPayout(next, paygatev1.PayoutSuccess)
		tooMuch := newPayout(m, paygatev1.EnvironmentSandbox, "14250.01", gw)
		Expect(k8s.Create(ctx, tooMuch)).To(Succeed())
		failed := waitPayout(tooMuch, paygatev1.PayoutFailed)
		Expect(failed.Status.Reason).To(Equal(string(paygatev1.PayoutInsufficientBalance)))
		expectBalance([]paygatev1.CurrencyBalance{{Currency: "TZS", Available: "14250.00", Settled: "29250.00", Reserved: "0.00", PaidOut: "15000.00", SettledPayments: 3}}, 4)
		expectLedgerChecks()
	})

	It("archives settled refunds once their payment has left etcd; refunds of archived payments stay capped, balances exact", func() {
		retention.Refunds = time.Hour
		DeferCleanup(func() { retention.Refunds = 0 })
		p1 := refundablePayment(ns, gw, "10000")
		p2 := refundablePayment(ns, gw, "10000")
		refundTo := func(p *paygatev1.Payment, amount string, phase paygatev1.RefundPhase) *paygatev1.Refund {
			GinkgoHelper()
			f := newRefund(p, amount)
			Expect(k8s.Create(ctx, f)).To(Succeed())
			var out *paygatev1.Refund
			Eventually(func(g Gomega) {
				out = getRefund(g, f)
				g.Expect(out.Status.Phase).To(Equal(phase), "reason %s", out.Status.Reason)
			}).Should(Succeed())
			return out
		}
		r1 := refundTo(p1, "4000.00", paygatev1.RefundSuccess)
		refundTo(p2, "1000.00", paygatev1.RefundSuccess)
		expectTZS := func(available, refunded string) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				c := currencyBalance(g, ns, m.Name, paygatev1.EnvironmentSandbox, "TZS")
				g.Expect(c.Settled).To(BeEquivalentTo("19500.00"))
				g.Expect(c.Available).To(BeEquivalentTo(available))
				g.Expect(c.Refunded).To(BeEquivalentTo(refunded))
				g.Expect(c.RefundsReserved).To(BeEmpty())
			}).Should(Succeed())
		}
		expectTZS("14500.00", "5000.00")
		liveRefunds := func(g Gomega) []string {
			var l paygatev1.RefundList
			g.Expect(k8s.List(ctx, &l, client.InNamespace(ns))).To(Succeed())
			var out []string
			for _, f := range l.Items {
				out = append(out, f.Name)
			}
			return out
		}

		By("archiving the payments first: their refunds wait while the payments are in etcd")
		a := archiverFor(archiveStore)
		now.Step(2 * time.Hour)
		res, err := a.Pass(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Deleted).To(HaveKeyWithValue(archive.KindPayment, 2))
		Expect(res.Archived).NotTo(HaveKey(archive.KindRefund))
		Expect(liveRefunds(Default)).To(HaveLen(2))

		By("archiving the refunds, with their deliveries, once the payments are gone from the view")
		Eventually(func(g Gomega) {
			_, err := a.Pass(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(liveRefunds(g)).To(BeEmpty())
		}).Should(Succeed())
		got, err := archiveStore.GetRefund(ctx, ns, r1.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Status).To(Equal(r1.Status))
		Expect(got.Spec).To(Equal(r1.Spec))
		Consistently(func(g Gomega) {
			var ds paygatev1.WebhookDeliveryList
			g.Expect(k8s.List(ctx, &ds, client.InNamespace(ns))).To(Succeed())
			g.Expect(ds.Items).To(BeEmpty(), "an archived refund must not send its event again")
		}, "2s", "100ms").Should(Succeed())
		expectTZS("14500.00", "5000.00")
		expectLedgerChecks()

		By("refunding an archived payment: its archived refunds count against its amount")
		over := newRefund(p1, "6000.01")
		Expect(k8s.Create(ctx, over)).To(Succeed())
		waitRefundRejected(over, paygatev1.RefundExceedsPayment)
		refundTo(p1, "6000.00", paygatev1.RefundSuccess)
		expectTZS("8500.00", "11000.00")
		expectLedgerChecks()
	})

	It("loses nothing and counts nothing twice when the manager dies between the commit and the deletes", func() {
		settle(ns, paygatev1.EnvironmentSandbox, gw, 2, "10000")
		now.Step(2 * time.Hour)
		passCtx, crash := context.WithCancel(ctx)
		res, err := archiverFor(crashAfterCommit{ArchiveStore: archiveStore, crash: crash}).Pass(passCtx)
		Expect(err).To(MatchError(context.Canceled), "the commit succeeded; the pass died after it")
		Expect(res.Archived).To(HaveKeyWithValue(archive.KindPayment, 2))
		Expect(res.Deleted).To(BeEmpty())
		payments, _, _ := live(Default)
		Expect(payments).To(HaveLen(2), "committed and still live")

		By("counting each payment once while it is both archived and live")
		third := newPayment(ns, m.Name, "trx-third-"+uniqueName("p"), "10000", gw, "+255713000100")
		Expect(k8s.Create(ctx, third)).To(Succeed()) // its settlement recounts with both in view
		waitPhase(third, paygatev1.PaymentSuccess)
		want := []paygatev1.CurrencyBalance{{Currency: "TZS", Available: "29250.00", Settled: "29250.00", Reserved: "0.00", PaidOut: "0.00", SettledPayments: 3}}
		expectBalance(want, 3)
		expectLedgerChecks()

		By("finishing the job on the next pass, as a restarted manager would")
		now.Step(2 * time.Hour)
		res, err = archiverFor(archiveStore).Pass(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Archived).To(HaveKeyWithValue(archive.KindPayment, 1), "only the third payment is new")
		Expect(res.Deleted).To(HaveKeyWithValue(archive.KindPayment, 3))
		payments, _, left := live(Default)
		Expect(payments).To(BeEmpty())
		Expect(left).To(BeZero())
		expectBalance(want, 3)
		expectLedgerChecks()

		By("and a pass after the deletes has nothing left to do")
		res, err = archiverFor(archiveStore).Pass(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Archived).To(BeEmpty())
		Expect(res.Deleted).To(BeEmpty())
	})

	It("keeps archiving when the archive refuses one object, which stays in etcd", func() {
		settle(ns, paygatev1.EnvironmentSandbox, gw, 2, "10000")
		var ps paygatev1.PaymentList
		Expect(k8s.List(ctx, &ps, client.InNamespace(ns))).To(Succeed())
		Expect(ps.Items).To(HaveLen(2))
		// A row with the first payment's name under another UID: the archive refuses the payment
		// (names are the API's ids).
		impostor := ps.Items[0].DeepCopy()
		impostor.UID = "impostor-" + impostor.UID
		_, err := archiveStore.ArchivePayments(ctx, []paygatev1.Payment{*impostor})
		Expect(err).NotTo(HaveOccurred())
		Expect(archiveStore.ForgetLive(ctx, []string{string(impostor.UID)})).To(Succeed())

		now.Step(2 * time.Hour)
		for range 2 { // and again: a refused object never stops a pass
			_, err := archiverFor(archiveStore).Pass(ctx)
			Expect(err).NotTo(HaveOccurred())
		}
		payments, _, _ := live(Default)
		Expect(payments).To(ConsistOf(ps.Items[0].Name), "the refused payment stays; the other is archived")
		got, err := archiveStore.GetPayment(ctx, ns, ps.Items[1].Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.UID).To(Equal(ps.Items[1].UID))
	})

	It("deletes nothing while PostgreSQL is down, leaves live traffic alone, and catches up when it returns", func() {
		settle(ns, paygatev1.EnvironmentSandbox, gw, 1, "10000")
		now.Step(2 * time.Hour)
		archiveProxy.Down()
		defer archiveProxy.Up()

		runCtx, stop := context.WithCancel(ctx)
		defer stop()
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			_ = archiverFor(archiveStore).Start(runCtx)
		}()
		Consistently(func(g Gomega) {
			payments, _, deliveries := live(g)
			g.Expect(payments).To(HaveLen(1))
			g.Expect(deliveries).To(BeNumerically(">=", 1))
		}, "3s", "200ms").Should(Succeed())

		By("settling payments meanwhile; the balance waits for the archive and says why")
		p := newPayment(ns, m.Name, "trx-down-"+uniqueName("p"), "10000", gw, "+255713000100")
		Expect(k8s.Create(ctx, p)).To(Succeed())
		waitPhase(p, paygatev1.PaymentSuccess)
		Eventually(func(g Gomega) {
			b := getBalance(g, ns, m.Name, paygatev1.EnvironmentSandbox)
			ready := meta.FindStatusCondition(b.Status.Conditions, paygatev1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(controllers.ReasonArchiveUnreachable))
		}).Should(Succeed())

		By("catching up once the database is back")
		archiveProxy.Up()
		now.Step(2 * time.Hour)
		Eventually(func(g Gomega) {
			payments, _, deliveries := live(g)
			g.Expect(payments).To(BeEmpty())
			g.Expect(deliveries).To(BeZero())
		}).Should(Succeed())
		expectBalance([]paygatev1.CurrencyBalance{{Currency: "TZS", Available: "19500.00", Settled: "19500.00", Reserved: "0.00", PaidOut: "0.00", SettledPayments: 2}}, 2)
		expectLedgerChecks()
		stop()
		Eventually(stopped).Should(BeClosed())
	})
})
