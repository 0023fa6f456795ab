// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// Deleting billing objects with kubectl, with kube-controller-manager's garbage collector running
// as in a cluster: the subscription's invoices go with it, its charges (money) never do
// (docs/billing.md, Deleting billing objects).
var _ = Describe("Deleting billing objects", func() {
	var (
		ns   string
		shop *merchantFixture
	)

	BeforeEach(func() {
		ns = newNamespace()
		createGateway("TZS")
		shop = createMerchant(ns, "shop")
		_, err := shop.sandbox.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
	})

	// paidSubscription subscribes a customer and waits for the first charge to settle and be
	// counted in the balance; it returns the subscription object and the charge's trx_id.
	paidSubscription := func(key string) (*paygatev1.Subscription, string) {
		sub, err := shop.sandbox.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: "gold-monthly", CustomerPhone: "0712345678", TermsShown: goldTerms}, key)
		Expect(err).NotTo(HaveOccurred())
		var trx string
		Eventually(func(g Gomega) {
			invoices, err := shop.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Subscription: sub.ID})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(invoices.Data).To(HaveLen(1))
			g.Expect(invoices.Data[0].Status).To(Equal("paid"))
			trx = *invoices.Data[0].PaidTrxID
		}).WithPolling(250 * time.Millisecond).Should(Succeed())
		return subscriptionObject(ns, sub.ID), trx
	}

	// expectChargeSurvives checks that the charge is still a settled payment of the merchant,
	// counted in the balance, owned by nothing that can be deleted.
	expectChargeSurvives := func(trx string, balanceBefore string) {
		Consistently(func(g Gomega) {
			p := &paygatev1.Payment{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: trx}, p)).To(Succeed())
			g.Expect(p.Status.Phase).To(Equal(paygatev1.PaymentSuccess))
			g.Expect(p.DeletionTimestamp).To(BeNil())
			got, err := shop.sandbox.GetPayment(ctx, trx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status).To(Equal("success"))
			g.Expect(availableBalance(shop.sandbox).StringFixed(2)).To(Equal(balanceBefore))
		}, "3s", "250ms").Should(Succeed())
	}

	It("kubectl delete subscription: its invoices are garbage-collected, its settled charge and the balance stay", func() {
		sub, trx := paidSubscription("del-sub")
		balance := "14625.00" // 15000 less the gateway's 2.5 %
		Eventually(func() string { return availableBalance(shop.sandbox).StringFixed(2) }).WithPolling(250 * time.Millisecond).Should(Equal(balance))
		inv := &paygatev1.Invoice{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: paygatev1.InvoiceName(sub.Name, 1)}, inv)).To(Succeed())

		Expect(k8s.Delete(ctx, sub, client.PropagationPolicy("Background"))).To(Succeed())
		By("the garbage collector takes the invoice, which the subscription owns")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(inv), &paygatev1.Invoice{}))
		}).WithTimeout(60 * time.Second).Should(BeTrue())
		expectChargeSurvives(trx, balance)
	})

	It("kubectl delete invoice: the invoice goes, its settled charge and the balance stay", func() {
		sub, trx := paidSubscription("del-inv")
		balance := "14625.00" // 15000 less the gateway's 2.5 %
		Eventually(func() string { return availableBalance(shop.sandbox).StringFixed(2) }).WithPolling(250 * time.Millisecond).Should(Equal(balance))
		inv := &paygatev1.Invoice{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: paygatev1.InvoiceName(sub.Name, 1)}, inv)).To(Succeed())
		Expect(k8s.Delete(ctx, inv, client.PropagationPolicy("Foreground"))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(inv), &paygatev1.Invoice{}))
		}).WithTimeout(60 * time.Second).Should(BeTrue())
		expectChargeSurvives(trx, balance)
	})

	It("releases a charge an earlier version made owned by its invoice before anything can delete it", func() {
		sub, trx := paidSubscription("del-legacy")
		inv := &paygatev1.Invoice{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: paygatev1.InvoiceName(sub.Name, 1)}, inv)).To(Succeed())
		By("giving the charge the owner reference earlier versions gave it, with a label change that wakes its controller")
		patch := `{"metadata":{"labels":{"e2e.paygate.dev/legacy":"true"},"ownerReferences":[{"apiVersion":"paygate.dev/v1alpha1","kind":"Invoice","name":"` +
			inv.Name + `","uid":"` + string(inv.UID) + `","controller":true,"blockOwnerDeletion":true}]}}`
		Expect(k8s.Patch(ctx, &paygatev1.Payment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: trx}}, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
		Eventually(func(g Gomega) {
			p := &paygatev1.Payment{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: trx}, p)).To(Succeed())
			g.Expect(p.Labels).To(HaveKey("e2e.paygate.dev/legacy"))
			g.Expect(p.OwnerReferences).To(BeEmpty())
		}).Should(Succeed())
	})
})
