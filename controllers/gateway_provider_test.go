// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/eligibility"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/test/fakedaraja"
	"github.com/paygate/paygate/test/fakepawapay"
)

var _ = Describe("Gateway provider check", func() {
	const (
		wrongToken       = "wrong-pawapay-token-7f3a"
		darajaCallback   = "0123456789abcdef-callback-secret"
		wrongConsumerKey = "wrong-consumer-key-91b2"
	)
	var (
		ns  string
		pp  *fakepawapay.Server
		dj  *fakedaraja.Server
		rec *events.FakeRecorder
		r   *controllers.GatewayReconciler
	)
	BeforeEach(func() {
		ns = newNamespace()
		pp = fakepawapay.New(GinkgoTB(), fakepawapay.Options{})
		dj = fakedaraja.New(GinkgoTB(), fakedaraja.Options{})
		rec = events.NewFakeRecorder(100)
		r = &controllers.GatewayReconciler{Client: k8s, Recorder: rec, IDs: &controllers.IDAllocator{Client: k8s, APIReader: k8s},
			Checker: &provider.Registry{Gateways: &provider.Gateways{Reader: k8s, DarajaCallbackURL: "http://127.0.0.1:1/callbacks/daraja"}}}
	})

	secret := func(name, kind string, data map[string]string) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{paygatev1.LabelCredential: kind}},
			StringData: data}
		Expect(k8s.Create(ctx, s)).To(Succeed())
	}
	pawapayGW := func(baseURL string) *paygatev1.Gateway {
		return createGateway("TZS", func(g *paygatev1.Gateway) {
			g.Spec.Provider = paygatev1.ProviderPawapay
			g.Spec.Pawapay = &paygatev1.PawapayConfig{BaseURL: baseURL, Provider: "VODACOM_TZA", Country: "TZA",
				CredentialsSecretRef: paygatev1.PawapayCredentialsReference{Namespace: ns, Name: "pawapay"}}
		})
	}
	darajaGW := func(baseURL string) *paygatev1.Gateway {
		return createGateway("KES", func(g *paygatev1.Gateway) {
			g.Spec.Provider = paygatev1.ProviderDaraja
			g.Spec.Daraja = &paygatev1.DarajaConfig{BaseURL: baseURL, ShortCode: fakedaraja.SandboxShortCode,
				CredentialsSecretRef: paygatev1.SecretReference{Namespace: ns, Name: "daraja"}}
		})
	}
	darajaData := func(key string) map[string]string {
		return map[string]string{"consumerKey": key, "consumerSecret": "fake-consumer-secret",
			"passkey": fakedaraja.SandboxPasskey, "callbackSecret": darajaCallback}
	}
	// check reconciles gw (the suite's manager has no pawapay or daraja builder, so this
	// reconciler is the one that checks) until ProviderReady has the wanted status and reason.
	check := func(gw *paygatev1.Gateway, status metav1.ConditionStatus, reason string) *paygatev1.Gateway {
		got := &paygatev1.Gateway{}
		Eventually(func(g Gomega) {
			res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gw)})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.RequeueAfter).To(Equal(controllers.DefaultProviderRecheck))
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(gw), got)).To(Succeed())
			c := meta.FindStatusCondition(got.Status.Conditions, paygatev1.ConditionProviderReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(status))
			g.Expect(c.Reason).To(Equal(reason))
			g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
		}).Should(Succeed())
		return got
	}
	noSecrets := func(gw *paygatev1.Gateway, secrets ...string) {
		status, err := json.Marshal(gw.Status)
		Expect(err).NotTo(HaveOccurred())
		var evs []string
		for len(rec.Events) > 0 {
			evs = append(evs, <-rec.Events)
		}
		for _, s := range secrets {
			Expect(string(status)).NotTo(ContainSubstring(s))
			Expect(strings.Join(evs, "\n")).NotTo(ContainSubstring(s))
		}
	}
	serves := func(gw *paygatev1.Gateway, env paygatev1.Environment) bool {
		return eligibility.Serves(gw, eligibility.Request{Currency: gw.Spec.Currency, Environment: env})
	}

	It("reports a working pawaPay account with its limits, and the gateway serves production", func() {
		secret("pawapay", provider.CredentialKindPawapay, map[string]string{"token": pp.Token})
		gw := check(pawapayGW(pp.URL()), metav1.ConditionTrue, controllers.ReasonProviderReady)
		Expect(gw.Status.ProviderLimits).To(Equal(&paygatev1.ProviderLimits{
			MinAmount: ptrTo(paygatev1.Decimal("100")), MaxAmount: ptrTo(paygatev1.Decimal("5000000")), Decimals: 0}))
		Expect(meta.IsStatusConditionTrue(gw.Status.Conditions, paygatev1.ConditionReady)).To(BeTrue())
		Expect(serves(gw, paygatev1.EnvironmentProduction)).To(BeTrue())
		noSecrets(gw, pp.Token)
	})

	It("takes a gateway whose pawaPay token is refused out of service, without showing the token", func() {
		secret("pawapay", provider.CredentialKindPawapay, map[string]string{"token": wrongToken})
		gw := check(pawapayGW(pp.URL()), metav1.ConditionFalse, provider.ReasonCredentialsRejected)
		Expect(meta.FindStatusCondition(gw.Status.Conditions, paygatev1.ConditionReady).Reason).To(Equal(controllers.ReasonProviderNotReady))
		Expect(walletSeries(gw.Name)).To(BeEmpty(), "no balance is read through a provider that fails its check")
		Expect(serves(gw, paygatev1.EnvironmentProduction)).To(BeFalse())
		Expect(serves(gw, paygatev1.EnvironmentSandbox)).To(BeTrue(), "sandbox payments still go to the simulator")
		noSecrets(gw, wrongToken, pp.Token)
	})

	It("reports a missing key and a missing Secret", func() {
		secret("pawapay", provider.CredentialKindPawapay, map[string]string{"apiToken": pp.Token})
		gw := check(pawapayGW(pp.URL()), metav1.ConditionFalse, provider.ReasonSecretKeyMissing)
		noSecrets(gw, pp.Token)
		check(darajaGW(dj.URL()), metav1.ConditionFalse, provider.ReasonSecretMissing)
	})

	It("reports an unreachable provider", func() {
		secret("pawapay", provider.CredentialKindPawapay, map[string]string{"token": pp.Token})
		gw := check(pawapayGW("http://127.0.0.1:1"), metav1.ConditionFalse, provider.ReasonProviderUnreachable)
		Expect(serves(gw, paygatev1.EnvironmentProduction)).To(BeFalse())
	})

	It("exports the pawaPay wallet balance of each pawapay gateway, and keeps a gateway whose balance cannot be read in service", func() {
		pp = fakepawapay.New(GinkgoTB(), fakepawapay.Options{Balances: map[string]string{"TZA": "1234567.89", "KEN": "4200"}})
		secret("pawapay", provider.CredentialKindPawapay, map[string]string{"token": pp.Token})
		gw := check(pawapayGW(pp.URL()), metav1.ConditionTrue, controllers.ReasonProviderReady)
		By("reading the country wallet of spec.pawapay.country (TZA), converted to a float only at the metric")
		Expect(walletSeries(gw.Name)).To(Equal(map[string]float64{"TZS/": 1234567.89}), "only the TZA wallet (Kenya's is another country's)")
		Expect(testutil.ToFloat64(metrics.ProviderWalletBalance.WithLabelValues(gw.Name, "TZS", ""))).To(Equal(1234567.89))

		By("labelling by gateway: a second gateway on the same account reports the same wallet")
		other := check(pawapayGW(pp.URL()), metav1.ConditionTrue, controllers.ReasonProviderReady)
		Expect(testutil.ToFloat64(metrics.ProviderWalletBalance.WithLabelValues(other.Name, "TZS", ""))).To(Equal(1234567.89))

		By("a failing balance read: the gateway stays in service, its series goes, nothing secret is shown")
		before := pp.Counters().Requests[fakepawapay.RouteWalletBalances]
		pp.InjectFault(fakepawapay.RouteWalletBalances, 1, fakepawapay.Fault{Kind: fakepawapay.FaultHTTPStatus, Status: 500})
		gw = check(gw, metav1.ConditionTrue, controllers.ReasonProviderReady)
		Expect(pp.Counters().Requests[fakepawapay.RouteWalletBalances]).To(Equal(before+1), "one read, which failed")
		Expect(meta.IsStatusConditionTrue(gw.Status.Conditions, paygatev1.ConditionReady)).To(BeTrue())
		Expect(serves(gw, paygatev1.EnvironmentProduction)).To(BeTrue())
		Expect(walletSeries(gw.Name)).To(BeEmpty(), "absent rather than stale")
		Expect(walletSeries(other.Name)).To(HaveLen(1), "the other gateway's series is its own")
		noSecrets(gw, pp.Token)

		By("the next check reads it again")
		check(gw, metav1.ConditionTrue, controllers.ReasonProviderReady)
		Expect(testutil.ToFloat64(metrics.ProviderWalletBalance.WithLabelValues(gw.Name, "TZS", ""))).To(Equal(1234567.89))
	})

	It("takes a Daraja gateway with a certificate that is not Safaricom's RSA certificate out of service, without showing the initiator password", func() {
		data := darajaData("fake-consumer-key")
		data["initiatorName"], data["initiatorPassword"] = fakedaraja.SandboxInitiatorName, "initiator-password-not-to-show"
		data["certificate"] = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"
		secret("daraja", provider.CredentialKindDaraja, data)
		gw := check(darajaGW(dj.URL()), metav1.ConditionFalse, provider.ReasonProviderConfig)
		Expect(serves(gw, paygatev1.EnvironmentProduction)).To(BeFalse())
		noSecrets(gw, "initiator-password-not-to-show", "fake-consumer-secret", fakedaraja.SandboxPasskey, darajaCallback)
		Expect(dj.TokenCount()).To(BeZero(), "a configuration the adapter refuses calls nothing")
	})

	It("reports working Daraja credentials in whole shillings, and refused ones", func() {
		secret("daraja", provider.CredentialKindDaraja, darajaData("fake-consumer-key"))
		gw := check(darajaGW(dj.URL()), metav1.ConditionTrue, controllers.ReasonProviderReady)
		Expect(gw.Status.ProviderLimits).To(Equal(&paygatev1.ProviderLimits{Decimals: 0}))
		noSecrets(gw, "fake-consumer-secret", fakedaraja.SandboxPasskey, darajaCallback)

		Expect(k8s.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "daraja"}})).To(Succeed())
		secret("daraja", provider.CredentialKindDaraja, darajaData(wrongConsumerKey))
		gw = check(gw, metav1.ConditionFalse, provider.ReasonCredentialsRejected)
		Expect(serves(gw, paygatev1.EnvironmentProduction)).To(BeFalse())
		noSecrets(gw, wrongConsumerKey, "fake-consumer-secret", fakedaraja.SandboxPasskey, darajaCallback)
	})
})

func ptrTo[T any](v T) *T { return &v }

// walletSeries is the gateway's paygate_provider_wallet_balance series, "currency/pawapay_provider"
// → value (read without creating one, as WithLabelValues would).
func walletSeries(gateway string) map[string]float64 {
	ch := make(chan prometheus.Metric, 64)
	go func() { metrics.ProviderWalletBalance.Collect(ch); close(ch) }()
	out := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		Expect(m.Write(&d)).To(Succeed())
		l := map[string]string{}
		for _, p := range d.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["gateway"] == gateway {
			out[l["currency"]+"/"+l["pawapay_provider"]] = d.GetGauge().GetValue()
		}
	}
	return out
}
