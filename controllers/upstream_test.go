// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/test/fakeupstream"
)

// upstreamGateway starts a fake upstream provider over real HTTP and a gateway that uses it; mods
// adjust the gateway before it is created.
func upstreamGateway(ns string, mods ...func(*paygatev1.Gateway)) (*fakeupstream.Server, *paygatev1.Gateway) {
	fake := fakeupstream.New(GinkgoTB(), fakeupstream.Options{Clock: clock.Now})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "upstream-credentials",
			Labels: map[string]string{paygatev1.LabelCredential: provider.CredentialKindUpstream}},
		Data: map[string][]byte{provider.UpstreamSecretToken: []byte(fake.Token), provider.UpstreamSecretCallbackSecret: fake.CallbackSecret},
	}
	Expect(k8s.Create(ctx, secret)).To(Succeed())
	gw := createGateway("TZS", append([]func(*paygatev1.Gateway){func(g *paygatev1.Gateway) {
		g.Spec.Provider = paygatev1.ProviderUpstream
		g.Spec.Upstream = &paygatev1.UpstreamConfig{BaseURL: fake.URL(), SecretRef: paygatev1.SecretReference{Namespace: ns, Name: secret.Name}, TimeoutSeconds: 2}
	}}, mods...)...)
	return fake, gw
}

func productionPayment(ns, name string, gw *paygatev1.Gateway, phone string) *paygatev1.Payment {
	p := newPayment(ns, "duka", name, "20000", gw, phone)
	p.Spec.Environment = paygatev1.EnvironmentProduction
	p.Labels[paygatev1.LabelEnvironment] = "production"
	return p
}

var _ = Describe("Upstream provider", func() {
	var (
		ns   string
		fake *fakeupstream.Server
		gw   *paygatev1.Gateway
	)
	BeforeEach(func() {
		ns = newNamespace()
		fake, gw = upstreamGateway(ns)
	})

	It("follows the provider's script for every outcome", func() {
		fake.Script("+255712000101", fakeupstream.Scenario{Outcome: provider.StatusFailed, Code: paygatev1.FailureInsufficientFunds})
		fake.Script("+255712000102", fakeupstream.Scenario{Outcome: provider.StatusFailed, Code: paygatev1.FailurePaymentDeclined})
		fake.Script("+255712000103", fakeupstream.Scenario{Outcome: provider.StatusSuccess, AmbiguousFor: 3})
		cases := map[string]struct {
			phase paygatev1.PaymentPhase
			code  paygatev1.FailureCode
		}{
			"+255712000100": {paygatev1.PaymentSuccess, ""},
			"+255712000101": {paygatev1.PaymentFailed, paygatev1.FailureInsufficientFunds},
			"+255712000102": {paygatev1.PaymentFailed, paygatev1.FailurePaymentDeclined},
			"+255712000103": {paygatev1.PaymentSuccess, ""},
		}
		i := 0
		payments := map[string]*paygatev1.Payment{}
		for phone := range cases {
			i++
			p := productionPayment(ns, "trx-up-"+string(rune('a'+i)), gw, phone)
			Expect(k8s.Create(ctx, p)).To(Succeed())
			payments[phone] = p
		}
		for phone, want := range cases {
			done := waitPhase(payments[phone], want.phase)
			Expect(done.Status.Reason).To(Equal(string(want.code)), phone)
			Expect(done.Status.Remark).To(BeEmpty(), "no sandbox remark on real money")
			Expect(fake.PushesFor(done.Status.Attempts[0].Reference)).To(Equal(1), phone)
		}
	})

	It("asks instead of pushing again when the provider's answer was lost", func() {
		fake.Script("+255712000201", fakeupstream.Scenario{PostError: http.StatusInternalServerError})
		fake.Script("+255712000202", fakeupstream.Scenario{DropPostConnection: true})
		for _, phone := range []string{"+255712000201", "+255712000202"} {
			p := productionPayment(ns, "trx-lost-"+phone[len(phone)-1:], gw, phone)
			Expect(k8s.Create(ctx, p)).To(Succeed())
			done := waitPhase(p, paygatev1.PaymentSuccess)
			Expect(fake.PushesFor(done.Status.Attempts[0].Reference)).To(Equal(1), phone)
		}
		Expect(fake.Operations()).To(Equal(2))
	})

	It("keeps asking while the provider is down and settles once it recovers", func() {
		fake.Fail(http.StatusServiceUnavailable)
		p := productionPayment(ns, "trx-outage", gw, "+255712000301")
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := getPayment(g, p)
			g.Expect(cur.Status.Attempts).To(HaveLen(1))
			g.Expect(cur.Status.Attempts[0].Phase).To(Equal(paygatev1.AttemptInitiating))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(getPayment(g, p).Status.Phase).To(Equal(paygatev1.PaymentPending))
		}, "1s").Should(Succeed())
		fake.Recover()
		done := waitPhase(p, paygatev1.PaymentSuccess)
		Expect(fake.PushesFor(done.Status.Attempts[0].Reference)).To(Equal(1))
	})

	It("flags an attempt the provider forgets, and expires the payment while the provider is down", func() {
		fake.Script("+255712000401", fakeupstream.Scenario{SettleAfter: time.Hour})
		p := productionPayment(ns, "trx-forgotten", gw, "+255712000401")
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) {
			a := getPayment(g, p).LatestAttempt()
			g.Expect(a).NotTo(BeNil())
			g.Expect(a.Phase).To(Equal(paygatev1.AttemptPending))
		}).Should(Succeed())
		forgotten := testutil.ToFloat64(metrics.ForgottenAttempts.WithLabelValues("push", "production"))

		By("raising a condition, an event and a metric when the provider forgets it")
		fake.Forget()
		Eventually(func(g Gomega) {
			cur := getPayment(g, p)
			c := meta.FindStatusCondition(cur.Status.Conditions, paygatev1.ConditionProviderForgotAttempt)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(controllers.ReasonProviderForgotAttempt))
			g.Expect(cur.Status.Phase).To(Equal(paygatev1.PaymentPending))
		}).Should(Succeed())
		Eventually(func() []string { return eventReasons(ns, p.Name) }).Should(ContainElement(controllers.ReasonProviderForgotAttempt))
		Expect(testutil.ToFloat64(metrics.ForgottenAttempts.WithLabelValues("push", "production"))).To(Equal(forgotten + 1))
		Consistently(func() int {
			n := 0
			for _, r := range eventReasons(ns, p.Name) {
				if r == controllers.ReasonProviderForgotAttempt {
					n++
				}
			}
			return n
		}, "1s").Should(Equal(1), "one event while the condition stays on, not one per poll")

		By("expiring it at its deadline although the provider cannot be asked")
		fake.Fail(http.StatusServiceUnavailable)
		clock.Step(31 * time.Minute)
		done := waitPhase(p, paygatev1.PaymentFailed)
		Expect(done.Status.Reason).To(Equal(string(paygatev1.FailureExpiredSession)))
		Expect(fake.PushesFor(done.Status.Attempts[0].Reference)).To(Equal(1), "never pushed again")
	})
})
