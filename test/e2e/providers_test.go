// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/test/fakepawapay"
)

// pawapayFixture starts a fake of pawaPay's Merchant API v2 and a TZS gateway carried by it
// (Vodacom Tanzania), with its token in a labelled Secret, and waits for the gateway controller to
// find the provider usable.
func pawapayFixture(ns string) (*fakepawapay.Server, *paygatev1.Gateway) {
	fake := fakepawapay.New(GinkgoTB(), fakepawapay.Options{})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pawapay", Labels: map[string]string{paygatev1.LabelCredential: provider.CredentialKindPawapay}},
		Data:       map[string][]byte{provider.PawapaySecretToken: []byte(fake.Token)},
	}
	Expect(k8s.Create(ctx, secret)).To(Succeed())
	gw := createGateway("TZS", func(g *paygatev1.Gateway) {
		g.Spec.Provider = paygatev1.ProviderPawapay
		g.Spec.Pawapay = &paygatev1.PawapayConfig{BaseURL: fake.URL(), Provider: "VODACOM_TZA",
			CredentialsSecretRef: paygatev1.PawapayCredentialsReference{Namespace: ns, Name: "pawapay"}}
	})
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(gw), gw)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(gw.Status.Conditions, paygatev1.ConditionProviderReady)).To(BeTrue())
	}).Should(Succeed())
	return fake, gw
}

var _ = Describe("Production payments through pawaPay", func() {
	It("collects a push payment as one pawaPay deposit, settled by status checks", func() {
		ns := newNamespace()
		fake, _ := pawapayFixture(ns)
		duka := createMerchant(ns, "duka")
		fake.Script("255754000601", fakepawapay.Scenario{SettleAfterChecks: 2})
		created, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "20000", CurrencyCode: "TZS", RefTrx: "pawapay-1", PaymentMode: "push", CustomerPhone: "0754000601",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			v, err := duka.production.VerifyPayment(ctx, created.TrxID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.Status).To(Equal("success"))
			g.Expect(v.NetAmount.String()).To(Equal("19500.00"))
		}).WithTimeout(30 * time.Second).Should(Succeed())

		By("sending one deposit, whose id is derived from the attempt's reference (a UUID v4)")
		var p paygatev1.Payment
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created.TrxID}, &p)).To(Succeed())
		depositID := provider.PawapayDepositID(p.Status.Attempts[0].Reference)
		counters := fake.Counters()
		Expect(counters.DepositsCreated).To(HaveLen(1))
		Expect(counters.DepositsCreated).To(HaveKeyWithValue(depositID, 1))
		Expect(p.Status.Attempts[0].Sends).To(Equal(int32(1)))
	})

	It("fails a declined deposit with the mapped reason, and sends it once", func() {
		ns := newNamespace()
		fake, _ := pawapayFixture(ns)
		duka := createMerchant(ns, "duka")
		fake.Script("255754000602", fakepawapay.Scenario{Status: fakepawapay.StatusFailed, FailureCode: "INSUFFICIENT_BALANCE"})
		created, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "20000", CurrencyCode: "TZS", RefTrx: "pawapay-2", PaymentMode: "push", CustomerPhone: "0754000602",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			v, err := duka.production.GetPayment(ctx, created.TrxID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.Status).To(Equal("failed"))
			g.Expect(v.Reason).To(Equal("INSUFFICIENT_FUNDS"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(fake.Counters().DepositsCreated).To(HaveLen(1))
	})
})
