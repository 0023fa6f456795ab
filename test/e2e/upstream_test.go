// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"net/http"
	"strconv"
	"strings"
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
	"github.com/paygate/paygate/test/fakeupstream"
)

// upstreamFixture starts a fake upstream provider and a TZS gateway that uses it.
func upstreamFixture(ns string) *fakeupstream.Server {
	fake := fakeupstream.New(GinkgoTB(), fakeupstream.Options{})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mno", Labels: map[string]string{paygatev1.LabelCredential: provider.CredentialKindUpstream}},
		Data:       map[string][]byte{provider.UpstreamSecretToken: []byte(fake.Token), provider.UpstreamSecretCallbackSecret: fake.CallbackSecret},
	}
	Expect(k8s.Create(ctx, secret)).To(Succeed())
	createGateway("TZS", func(g *paygatev1.Gateway) {
		g.Spec.Provider = paygatev1.ProviderUpstream
		g.Spec.Upstream = &paygatev1.UpstreamConfig{BaseURL: fake.URL(), SecretRef: paygatev1.SecretReference{Namespace: ns, Name: "mno"}}
	})
	return fake
}

var _ = Describe("Production payments through the upstream provider", func() {
	It("keeps an expired payment failed when the provider's success callback arrives late", func() {
		ns := newNamespace()
		fake := upstreamFixture(ns)
		duka := createMerchant(ns, "duka")
		fake.Script("+255712000501", fakeupstream.Scenario{SettleAfter: 4 * time.Second, Callback: true})
		created, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "20000", CurrencyCode: "TZS", RefTrx: "live-late", PaymentMode: "push", CustomerPhone: "+255712000501",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		key := client.ObjectKey{Namespace: ns, Name: created.TrxID}
		// The provider must have the push before the session ends: a payment that expires before
		// its push was sent never gets a callback, late or not.
		Eventually(func(g Gomega) {
			var p paygatev1.Payment
			g.Expect(k8s.Get(ctx, key, &p)).To(Succeed())
			g.Expect(p.Status.Attempts).NotTo(BeEmpty())
			g.Expect(fake.PushesFor(p.Status.Attempts[0].Reference)).To(Equal(1))
		}).Should(Succeed())
		// Shorten the session (as a one-minute lifetime would, without waiting a minute).
		Eventually(func(g Gomega) {
			var p paygatev1.Payment
			g.Expect(k8s.Get(ctx, key, &p)).To(Succeed())
			p.Spec.ExpiresAt = metav1.NewTime(time.Now().Add(time.Second))
			g.Expect(k8s.Update(ctx, &p)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			p, err := duka.production.GetPayment(ctx, created.TrxID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status).To(Equal("failed"))
			g.Expect(p.Reason).To(Equal("EXPIRED_SESSION"))
		}).Should(Succeed())
		Eventually(fake.CallbacksDelivered, "15s").Should(BeNumerically(">=", 1))
		Consistently(func(g Gomega) {
			p, err := duka.production.GetPayment(ctx, created.TrxID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status).To(Equal("failed"))
		}, "1s").Should(Succeed())

		By("reporting the money that arrived too late, for a refund or reconciliation")
		Eventually(func(g Gomega) {
			var p paygatev1.Payment
			g.Expect(k8s.Get(ctx, key, &p)).To(Succeed())
			c := meta.FindStatusCondition(p.Status.Conditions, paygatev1.ConditionLateSettlement)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal("SettledAfterFailure"))
			g.Expect(p.Status.Phase).To(Equal(paygatev1.PaymentFailed))
		}).Should(Succeed())
	})

	It("settles with signed callbacks; duplicate, late and forged callbacks change nothing", func() {
		ns := newNamespace()
		fake := upstreamFixture(ns)
		duka := createMerchant(ns, "duka")
		fake.Script("+255712000401", fakeupstream.Scenario{SettleAfter: 300 * time.Millisecond, Callback: true, DuplicateCallbacks: 2})

		created, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "20000", CurrencyCode: "TZS", RefTrx: "live-1", PaymentMode: "push", CustomerPhone: "+255712000401",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			v, err := duka.production.VerifyPayment(ctx, created.TrxID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.Status).To(Equal("success"))
			g.Expect(v.NetAmount.String()).To(Equal("19500.00"))
		}).Should(Succeed())
		Eventually(fake.CallbacksDelivered).Should(BeNumerically(">=", 3))
		Expect(fake.CallbacksFailed()).To(BeZero())

		var p paygatev1.Payment
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created.TrxID}, &p)).To(Succeed())
		Expect(p.Status.Attempts).To(HaveLen(1))
		ref := p.Status.Attempts[0].Reference
		Expect(fake.PushesFor(ref)).To(Equal(1))

		By("answering a late callback for a settled payment without changing it")
		before := p.ResourceVersion
		fake.SendCallback(ref)
		Eventually(fake.CallbacksDelivered).Should(BeNumerically(">=", 4))
		Consistently(func(g Gomega) {
			var now paygatev1.Payment
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created.TrxID}, &now)).To(Succeed())
			g.Expect(now.ResourceVersion).To(Equal(before))
		}, "1s").Should(Succeed())

		By("refusing forged and unknown callbacks")
		body := `{"reference":"` + ref + `","provider_reference":"x","status":"FAILED","code":"PAYMENT_DECLINED","kind":"collection"}`
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		forged := http.Header{provider.CallbackSignatureHeader: {provider.SignCallback([]byte("not-the-secret"), ts, []byte(body))}, provider.CallbackTimestampHeader: {ts}}
		status, _, out := send(http.MethodPost, "/internal/provider/callbacks", forged, body)
		Expect(status).To(Equal(http.StatusUnauthorized), out)
		unknown := strings.Replace(body, ref, ns+".trx-aaaaaaaaaaaaaaaaaaaaaaaa.1", 1)
		status, _, out = send(http.MethodPost, "/internal/provider/callbacks", http.Header{}, unknown)
		Expect(status).To(Equal(http.StatusNotFound), out)
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created.TrxID}, &p)).To(Succeed())
		Expect(p.Status.Phase).To(Equal(paygatev1.PaymentSuccess))
	})
})
