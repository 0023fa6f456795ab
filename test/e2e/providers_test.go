// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"errors"
	"net/http"
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
	"github.com/paygate/paygate/test/fakedaraja"
	"github.com/paygate/paygate/test/fakepawapay"
)

// pawapayFixture starts a fake of pawaPay's Merchant API v2 and a TZS gateway carried by it
// (Vodacom Tanzania), with its token in a labelled Secret, and waits for the gateway controller to
// find the provider usable.
func pawapayFixture(ns string, mods ...func(*paygatev1.Gateway)) (*fakepawapay.Server, *paygatev1.Gateway) {
	fake := fakepawapay.New(GinkgoTB(), fakepawapay.Options{})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pawapay", Labels: map[string]string{paygatev1.LabelCredential: provider.CredentialKindPawapay}},
		Data:       map[string][]byte{provider.PawapaySecretToken: []byte(fake.Token)},
	}
	Expect(k8s.Create(ctx, secret)).To(Succeed())
	gw := createGateway("TZS", append([]func(*paygatev1.Gateway){func(g *paygatev1.Gateway) {
		g.Spec.Provider = paygatev1.ProviderPawapay
		g.Spec.Pawapay = &paygatev1.PawapayConfig{BaseURL: fake.URL(), Provider: "VODACOM_TZA",
			CredentialsSecretRef: paygatev1.PawapayCredentialsReference{Namespace: ns, Name: "pawapay"}}
	}}, mods...)...)
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

	It("pays a production payout out as one pawaPay payout, and charges a subscription as one deposit", func() {
		ns := newNamespace()
		fake, _ := pawapayFixture(ns, func(g *paygatev1.Gateway) {
			g.Spec.Payouts = &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: "1", Fixed: "100"}}
		})
		duka := payoutMerchant(ns, "duka", "")

		By("funding the production balance with a payment through pawaPay")
		created, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "20000", CurrencyCode: "TZS", RefTrx: "pawapay-fund", PaymentMode: "push", CustomerPhone: "0754000603",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			v, err := duka.production.VerifyPayment(ctx, created.TrxID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.Status).To(Equal("success"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func() string { return availableBalance(duka.production).StringFixed(2) }).
			WithPolling(250 * time.Millisecond).WithTimeout(30 * time.Second).Should(Equal("19500.00"))

		By("paying 5000 out: one pawaPay payout of 4850 (1 % plus 100 kept)")
		po, err := duka.production.CreatePayout(ctx, paygate.PayoutRequest{Amount: "5000"}, "pawapay-payout-1")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			got, err := duka.production.GetPayout(ctx, po.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status).To(Equal("success"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		var payout paygatev1.Payout
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: po.ID}, &payout)).To(Succeed())
		Expect(fake.Counters().PayoutsCreated).To(HaveKeyWithValue(provider.PawapayPayoutID(payout.Status.Attempt.Reference), 1))
		Expect(fake.Counters().PayoutsCreated).To(HaveLen(1))

		By("charging a production subscription's first invoice as one deposit")
		_, err = duka.production.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		sub, err := duka.production.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: "gold-monthly", CustomerPhone: "0754000604", TermsShown: goldTerms}, "pawapay-sub")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			got, err := duka.production.GetSubscription(ctx, sub.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status).To(Equal("active"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(fake.Counters().DepositsCreated).To(HaveLen(2), "the funding payment and the charge, each once")
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

// darajaFixture starts a fake of Safaricom's Daraja API and a KES gateway carried by it (M-Pesa
// Express to the sandbox pay bill), with its credentials in a labelled Secret, and waits for the
// gateway controller to find it usable.
func darajaFixture(ns string) *fakedaraja.Server {
	fake := fakedaraja.New(GinkgoTB(), fakedaraja.Options{})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "daraja", Labels: map[string]string{paygatev1.LabelCredential: provider.CredentialKindDaraja}},
		Data: map[string][]byte{
			provider.DarajaSecretConsumerKey: []byte(fake.ConsumerKey()), provider.DarajaSecretConsumerSecret: []byte(fake.ConsumerSecret()),
			provider.DarajaSecretPasskey: []byte(fake.Passkey()), provider.DarajaSecretCallbackSecret: []byte("e2e-callback-secret-of-32-bytes!"),
			provider.DarajaSecretInitiatorName: []byte(fake.InitiatorName()), provider.DarajaSecretInitiatorPassword: []byte(fake.InitiatorPassword()),
			provider.DarajaSecretCertificate: fake.CertificatePEM(),
		},
	}
	Expect(k8s.Create(ctx, secret)).To(Succeed())
	gw := createGateway("KES", func(g *paygatev1.Gateway) {
		g.Spec.Provider = paygatev1.ProviderDaraja
		g.Spec.Daraja = &paygatev1.DarajaConfig{BaseURL: fake.URL(), ShortCode: fake.ShortCode(),
			CredentialsSecretRef: paygatev1.SecretReference{Namespace: ns, Name: "daraja"}}
	})
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(gw), gw)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(gw.Status.Conditions, paygatev1.ConditionProviderReady)).To(BeTrue())
	}).Should(Succeed())
	return fake
}

// sellingInKES makes a merchant sell in KES, with an active KES wallet.
func sellingInKES(m *paygatev1.Merchant) {
	m.Spec.Currencies = []paygatev1.CurrencyCode{"KES"}
	m.Spec.Wallets = []paygatev1.Wallet{{Currency: "KES"}}
}

var _ = Describe("Production payments through M-Pesa Daraja", func() {
	It("collects a push payment as one STK push, settled by querying its CheckoutRequestID", func() {
		ns := newNamespace()
		fake := darajaFixture(ns)
		duka := createMerchant(ns, "duka", sellingInKES)
		created, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "1500", CurrencyCode: "KES", RefTrx: "daraja-1", PaymentMode: "push", CustomerPhone: "0708374149",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			v, err := duka.production.VerifyPayment(ctx, created.TrxID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.Status).To(Equal("success"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(fake.STKPushCount()).To(Equal(1), "one STK push: M-Pesa does not de-duplicate")
	})

	It("refuses a KES amount with cents before anything reaches M-Pesa", func() {
		ns := newNamespace()
		fake := darajaFixture(ns)
		duka := createMerchant(ns, "duka", sellingInKES)
		_, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "1500.50", CurrencyCode: "KES", RefTrx: "daraja-cents", PaymentMode: "push", CustomerPhone: "0708374149",
		}, "")
		var apiErr *paygate.Error
		Expect(errors.As(err, &apiErr)).To(BeTrue(), "%v", err)
		Expect(apiErr.StatusCode).To(Equal(http.StatusUnprocessableEntity))
		Expect(apiErr.Errors).To(HaveKey("payment_amount"))
		Expect(fake.STKPushCount()).To(BeZero())
	})
})
