// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/test/fakedaraja"
	"github.com/paygate/paygate/test/fakepawapay"
)

// pawapayFixture starts a fake of pawaPay's Merchant API v2 and a TZS gateway carried by it
// (Vodacom Tanzania), with its token in a labelled Secret, and waits for the gateway controller to
// find the provider usable.
func pawapayFixture(ns string, mods ...func(*paygatev1.Gateway)) (*fakepawapay.Server, *paygatev1.Gateway) {
	return pawapayFixtureWith(ns, fakepawapay.Options{}, mods...)
}

// pawapayFixtureWith is pawapayFixture with the fake's options (callback URLs, signing).
func pawapayFixtureWith(ns string, opts fakepawapay.Options, mods ...func(*paygatev1.Gateway)) (*fakepawapay.Server, *paygatev1.Gateway) {
	fake := fakepawapay.New(GinkgoTB(), opts)
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
		verifiedSuccess(duka.production, created.TrxID)
		Eventually(func() string { return availableBalance(duka.production).StringFixed(2) }).
			WithPolling(250 * time.Millisecond).WithTimeout(30 * time.Second).Should(Equal("19500.00"))

		By("paying 5000 out: one pawaPay payout of 4850 (1 % plus 100 kept)")
		po, err := duka.production.CreatePayout(ctx, paygate.PayoutRequest{Amount: "5000"}, "pawapay-payout-1")
		Expect(err).NotTo(HaveOccurred())
		payoutSucceeds(duka.production, po.ID)
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

	It("survives pawaPay's faults with one deposit per depositId and one payout per payoutId", func() {
		ns := newNamespace()
		cbURL := baseURL + "/internal/provider/callbacks/pawapay"
		fake, _ := pawapayFixtureWith(ns, fakepawapay.Options{DepositCallbackURL: cbURL, PayoutCallbackURL: cbURL},
			func(g *paygatev1.Gateway) {
				g.Spec.Payouts = &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: "1", Fixed: "100"}}
			})
		duka := payoutMerchant(ns, "duka", "")

		By("a deposit whose answer is lost (a timeout), NOT_FOUND right after acceptance, 429 and 503 on status checks, duplicate and late callbacks")
		fake.InjectFault(fakepawapay.RouteInitiateDeposit, 1, fakepawapay.Fault{Kind: fakepawapay.FaultTimeout, Hold: 200 * time.Millisecond, Process: true})
		fake.InjectFault(fakepawapay.RouteDepositStatus, 1, fakepawapay.Fault{Kind: fakepawapay.FaultHTTPStatus, Status: http.StatusTooManyRequests})
		fake.InjectFault(fakepawapay.RouteDepositStatus, 1, fakepawapay.Fault{Kind: fakepawapay.FaultHTTPStatus, Status: http.StatusServiceUnavailable})
		fake.Script("255754000621", fakepawapay.Scenario{NotFoundChecks: 1, SettleAfterChecks: 2, DuplicateCallbacks: 2, CallbackDelay: 300 * time.Millisecond})
		created, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "20000", CurrencyCode: "TZS", RefTrx: "pawapay-faults", PaymentMode: "push", CustomerPhone: "0754000621",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		verifiedSuccess(duka.production, created.TrxID)
		var p paygatev1.Payment
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created.TrxID}, &p)).To(Succeed())
		Expect(p.Status.Attempts).To(HaveLen(1))
		depositID := provider.PawapayDepositID(p.Status.Attempts[0].Reference)
		Expect(fake.Counters().DepositsCreated).To(Equal(map[string]int{depositID: 1}))
		Expect(fake.Counters().DepositInitiations).To(Equal(map[string]int{depositID: 2}),
			"sent again, with the same depositId, when pawaPay said NOT_FOUND after the lost answer")
		Expect(fake.Counters().DuplicatesIgnored).To(Equal(1))
		Eventually(func(g Gomega) {
			c := fake.Counters()
			g.Expect(c.CallbacksSent).To(Equal(3), "the callback and its two copies")
			g.Expect(c.CallbacksDelivered).To(Equal(3), "a duplicate or late callback is answered 200 and changes nothing")
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func() string { return availableIn(duka.production, "TZS").StringFixed(2) }).
			WithPolling(250 * time.Millisecond).WithTimeout(30 * time.Second).Should(Equal("19500.00"))

		By("a payout refused with 503 before pawaPay saw it, then one answered 500 after it was made")
		fake.InjectFault(fakepawapay.RouteInitiatePayout, 1, fakepawapay.Fault{Kind: fakepawapay.FaultHTTPStatus, Status: http.StatusServiceUnavailable})
		fake.InjectFault(fakepawapay.RouteInitiatePayout, 1, fakepawapay.Fault{Kind: fakepawapay.FaultHTTPStatus, Status: http.StatusInternalServerError, Process: true})
		po, err := duka.production.CreatePayout(ctx, paygate.PayoutRequest{Amount: "5000"}, "pawapay-faults-payout")
		Expect(err).NotTo(HaveOccurred())
		payoutSucceeds(duka.production, po.ID)
		var payout paygatev1.Payout
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: po.ID}, &payout)).To(Succeed())
		Expect(fake.Counters().PayoutsCreated).To(Equal(map[string]int{provider.PawapayPayoutID(payout.Status.Attempt.Reference): 1}))
		Expect(fake.Counters().Requests[fakepawapay.RouteInitiatePayout]).To(Equal(2),
			"sent again once pawaPay said it did not have it; never after it had it")
	})

	It("takes pawaPay's signed callbacks for deposits and payouts, and refuses unsigned, forged and unknown ones", func() {
		ns := newNamespace()
		cbURL := baseURL + "/internal/provider/callbacks/pawapay"
		fake, _ := pawapayFixtureWith(ns, fakepawapay.Options{SignCallbacks: true, DepositCallbackURL: cbURL, PayoutCallbackURL: cbURL},
			func(g *paygatev1.Gateway) {
				g.Spec.Pawapay.SignedCallbacks = true
				g.Spec.Payouts = &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: "1", Fixed: "100"}}
			})
		duka := payoutMerchant(ns, "duka", "")
		created, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "20000", CurrencyCode: "TZS", RefTrx: "pawapay-cb", PaymentMode: "push", CustomerPhone: "0754000611",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		verifiedSuccess(duka.production, created.TrxID)
		Eventually(func() string { return availableIn(duka.production, "TZS").StringFixed(2) }).
			WithPolling(250 * time.Millisecond).WithTimeout(30 * time.Second).Should(Equal("19500.00"))
		po, err := duka.production.CreatePayout(ctx, paygate.PayoutRequest{Amount: "5000"}, "pawapay-cb-payout")
		Expect(err).NotTo(HaveOccurred())
		payoutSucceeds(duka.production, po.ID)

		By("accepting every signed callback pawaPay sent: the deposit's and the payout's")
		Eventually(func(g Gomega) {
			c := fake.Counters()
			g.Expect(c.CallbacksSent).To(BeNumerically(">=", 2))
			g.Expect(c.CallbacksDelivered).To(Equal(c.CallbacksSent))
		}).WithTimeout(30 * time.Second).Should(Succeed())

		By("refusing a callback without a signature, or with one that does not verify")
		var p paygatev1.Payment
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created.TrxID}, &p)).To(Succeed())
		ref := p.Status.Attempts[0].Reference
		body, err := json.Marshal(map[string]any{"depositId": provider.PawapayDepositID(ref), "status": "COMPLETED",
			"amount": "20000", "currency": "TZS", "clientReferenceId": ref})
		Expect(err).NotTo(HaveOccurred())
		status, _, out := send(http.MethodPost, "/internal/provider/callbacks/pawapay", http.Header{"Content-Type": {"application/json"}}, string(body))
		Expect(status).To(Equal(http.StatusUnauthorized), string(out))
		digest := sha256.Sum256(body)
		forged := http.Header{"Content-Type": {"application/json"},
			"Signature-Input": {`sig-pp=("@method" "@authority" "@path" "content-digest");alg="ecdsa-p256-sha256"`},
			"Signature":       {"sig-pp=:MEUCIQDzJyy8cM2p3w8vVZ8d4q2k0v8W0w6YQ7v0XbYkZr3m3gIgB1g3pBvPn3U0l9m6M8yY4Gk6r1kG3G2t1c4d1Xy0f3Q=:"},
			"Content-Digest":  {"sha-256=:" + base64.StdEncoding.EncodeToString(digest[:]) + ":"}}
		status, _, out = send(http.MethodPost, "/internal/provider/callbacks/pawapay", forged, string(body))
		Expect(status).To(Equal(http.StatusUnauthorized), string(out))

		By("answering a callback naming no attempt of Paygate's as unknown")
		unknown := strings.ReplaceAll(string(body), ref, ns+".trx-aaaaaaaaaaaaaaaaaaaaaaaa.1")
		unknown = strings.ReplaceAll(unknown, provider.PawapayDepositID(ref), provider.PawapayDepositID(ns+".trx-aaaaaaaaaaaaaaaaaaaaaaaa.1"))
		status, _, out = send(http.MethodPost, "/internal/provider/callbacks/pawapay", http.Header{"Content-Type": {"application/json"}}, unknown)
		Expect(status).To(Equal(http.StatusNotFound), string(out))
		Expect(fake.Counters().DepositsCreated).To(HaveLen(1))
		Expect(fake.Counters().PayoutsCreated).To(HaveLen(1))
	})
})

// darajaFixture starts a fake of Safaricom's Daraja API and a KES gateway carried by it (M-Pesa
// Express to the sandbox pay bill), with its credentials in a labelled Secret, and waits for the
// gateway controller to find it usable.
func darajaFixture(ns string, mods ...func(*paygatev1.Gateway)) (*fakedaraja.Server, *paygatev1.Gateway) {
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
	gw := createGateway("KES", append([]func(*paygatev1.Gateway){func(g *paygatev1.Gateway) {
		g.Spec.Provider = paygatev1.ProviderDaraja
		g.Spec.Daraja = &paygatev1.DarajaConfig{BaseURL: fake.URL(), ShortCode: fake.ShortCode(),
			CredentialsSecretRef: paygatev1.SecretReference{Namespace: ns, Name: "daraja"}}
	}}, mods...)...)
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(gw), gw)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(gw.Status.Conditions, paygatev1.ConditionProviderReady)).To(BeTrue())
	}).Should(Succeed())
	return fake, gw
}

// sellingInKES makes a merchant sell in KES, with an active KES wallet.
func sellingInKES(m *paygatev1.Merchant) {
	m.Spec.Currencies = []paygatev1.CurrencyCode{"KES"}
	m.Spec.Wallets = []paygatev1.Wallet{{Currency: "KES"}}
}

var _ = Describe("Production payments through M-Pesa Daraja", func() {
	It("collects a push payment as one STK push, settled by querying its CheckoutRequestID", func() {
		ns := newNamespace()
		fake, _ := darajaFixture(ns)
		duka := createMerchant(ns, "duka", sellingInKES)
		created, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "1500", CurrencyCode: "KES", RefTrx: "daraja-1", PaymentMode: "push", CustomerPhone: "0708374149",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		verifiedSuccess(duka.production, created.TrxID)
		Expect(fake.STKPushCount()).To(Equal(1), "one STK push: M-Pesa does not de-duplicate")
	})

	It("refuses a KES amount with cents before anything reaches M-Pesa", func() {
		ns := newNamespace()
		fake, _ := darajaFixture(ns)
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

	It("settles a push whose answer was lost by querying the CheckoutRequestID its callback told, and never pushes it again", func() {
		ns := newNamespace()
		fake, _ := darajaFixture(ns)
		duka := createMerchant(ns, "duka", sellingInKES)
		fake.FailNext(fakedaraja.PathSTKPush, 1, fakedaraja.Fault{Kind: fakedaraja.FaultDrop, Processed: true})
		fake.ScriptPhone("254708374150", fakedaraja.STKScript{Delivery: fakedaraja.DeliverTwice})
		created, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "1500", CurrencyCode: "KES", RefTrx: "daraja-lost", PaymentMode: "push", CustomerPhone: "0708374150",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		verifiedSuccess(duka.production, created.TrxID)
		Expect(fake.STKPushCount()).To(Equal(1), "the push whose answer was lost is never sent again")
		Expect(fake.STKQueryCount()).To(BeNumerically(">=", 1), "the callback was confirmed by a query")
		Expect(fake.TokenCount()).To(Equal(1), "one access token, the manager's: the apiserver never asks Daraja")
		var p paygatev1.Payment
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created.TrxID}, &p)).To(Succeed())
		Expect(p.Status.Attempts).To(HaveLen(1))
		Expect(p.Status.Attempts[0].Sends).To(Equal(int32(1)))
		Expect(p.Annotations[paygatev1.AnnotationProviderReference]).To(Equal(p.Status.Attempts[0].Reference+" "+p.Status.Attempts[0].ProviderReference),
			"the callback told the CheckoutRequestID the acceptance lost; the controller's query with it answered")
		Expect(p.Status.Attempts[0].ProviderReference).To(HavePrefix("ws_CO_"))

		By("refusing a callback on a path whose token does not open, or on another gateway's path")
		var cb fakedaraja.CallbackRecord
		for _, c := range fake.Callbacks() {
			cb = c
		}
		Expect(cb.Status).To(Equal(http.StatusOK))
		path := cb.URL[strings.Index(cb.URL, "/internal/"):]
		tampered := path[:len(path)-2] + "AA"
		if tampered == path {
			tampered = path[:len(path)-2] + "BB"
		}
		for _, bad := range []string{tampered, strings.Replace(path, "/daraja/", "/daraja/no-such-gateway-x/", 1), path + "/result"} {
			status, _, out := send(http.MethodPost, bad, http.Header{"Content-Type": {"application/json"}}, string(cb.Body))
			Expect(status).To(Equal(http.StatusNotFound), "%s: %s", bad, out)
		}
		Expect(fake.STKPushCount()).To(Equal(1))
	})

	It("pays a payout out as one B2C payment settled by its result, fails a refused one, and charges a KES subscription", func() {
		ns := newNamespace()
		fake, gw := darajaFixture(ns, func(g *paygatev1.Gateway) {
			g.Spec.Daraja.B2CShortCode = fakedaraja.SandboxB2CShortCode
			g.Spec.Payouts = &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: "1", Fixed: "10"}}
		})
		duka := createMerchant(ns, "duka", sellingInKES, func(m *paygatev1.Merchant) { m.Spec.SettlementNumber = "+254708374149" })

		By("exporting the organisation's M-Pesa account balances, which Daraja posts to the gateway's balance result URL")
		Eventually(func() float64 {
			return testutil.ToFloat64(metrics.ProviderAccountBalance.WithLabelValues(gw.Name, "Working Account", "KES"))
		}).WithTimeout(30 * time.Second).Should(BeNumerically(">", 0))
		Expect(fake.AccountBalanceCount()).To(BeNumerically(">=", 1))

		By("funding the KES balance with a payment through M-Pesa Express")
		created, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "10000", CurrencyCode: "KES", RefTrx: "daraja-fund", PaymentMode: "push", CustomerPhone: "0708374151",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		verifiedSuccess(duka.production, created.TrxID)
		Eventually(func() string { return availableIn(duka.production, "KES").StringFixed(2) }).
			WithPolling(250 * time.Millisecond).WithTimeout(30 * time.Second).Should(Equal("9750.00"))

		By("paying 1000 out: one B2C payment of 980, settled by the result at its own result URL")
		po, err := duka.production.CreatePayout(ctx, paygate.PayoutRequest{Amount: "1000"}, "daraja-payout-1")
		Expect(err).NotTo(HaveOccurred())
		payoutSucceeds(duka.production, po.ID)
		pays := fake.B2CPayments()
		Expect(pays).To(HaveLen(1))
		Expect(pays[0].Amount).To(Equal(int64(980)))
		var payout paygatev1.Payout
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: po.ID}, &payout)).To(Succeed())
		Expect(pays[0].OriginatorConversationID).To(Equal(provider.OriginatorConversationIDFor(payout.Status.Attempt.Reference)))

		By("failing a payout M-Pesa refuses, with the mapped reason, sent once")
		fake.ScriptB2C("254708374149", fakedaraja.ResultScript{Result: fakedaraja.ResultOperatorDoesNotExist})
		po2, err := duka.production.CreatePayout(ctx, paygate.PayoutRequest{Amount: "1000"}, "daraja-payout-2")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			got, err := duka.production.GetPayout(ctx, po2.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status).To(Equal("failed"))
			g.Expect(got.Reason).NotTo(BeEmpty())
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(fake.B2CPayments()).To(HaveLen(2))
		Eventually(func() string { return availableIn(duka.production, "KES").StringFixed(2) }).
			WithPolling(250 * time.Millisecond).WithTimeout(30 * time.Second).Should(Equal("8750.00"))

		By("charging a KES subscription's first invoice with one STK push to a Kenyan number")
		pushes := fake.STKPushCount()
		_, err = duka.production.CreatePlan(ctx, paygate.PlanRequest{Code: "gold-ke", Name: "Gold", Amount: "1500", CurrencyCode: "KES", Interval: "month"}, "")
		Expect(err).NotTo(HaveOccurred())
		sub, err := duka.production.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: "gold-ke", CustomerPhone: "0708374152", TermsShown: "Gold: KES 1,500 every month."}, "daraja-sub")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			got, err := duka.production.GetSubscription(ctx, sub.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status).To(Equal("active"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(fake.STKPushCount()).To(Equal(pushes + 1))
	})
})

// availableIn is the available balance of currency.
func availableIn(c *paygate.Client, currency string) money.Amount {
	return availableInG(Default, c, currency)
}

// availableInG is availableIn for an Eventually: a refusal (a 429 on a loaded machine included)
// fails g's attempt, not the spec.
func availableInG(g Gomega, c *paygate.Client, currency string) money.Amount {
	resp, err := c.Do(ctx, http.MethodGet, "/api/v1/balance", nil, nil)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	g.ExpectWithOffset(1, resp.StatusCode).To(Equal(http.StatusOK), string(resp.Body))
	var out struct {
		Data struct {
			Balances []struct {
				Currency  string      `json:"currency"`
				Available json.Number `json:"available"`
			} `json:"balances"`
		} `json:"data"`
	}
	dec := json.NewDecoder(strings.NewReader(string(resp.Body)))
	dec.UseNumber()
	g.ExpectWithOffset(1, dec.Decode(&out)).To(Succeed())
	for _, b := range out.Data.Balances {
		if b.Currency == currency {
			return money.MustParseAmount(b.Available.String())
		}
	}
	g.ExpectWithOffset(1, out.Data.Balances).To(ContainElement(HaveField("Currency", currency)), string(resp.Body))
	return money.Amount{}
}

// verifiedSuccess waits until verify-payment reports the payment a success.
func verifiedSuccess(c *paygate.Client, trxID string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		v, err := c.VerifyPayment(ctx, trxID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.Status).To(Equal("success"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// payoutSucceeds waits until the payout reads success.
func payoutSucceeds(c *paygate.Client, id string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got, err := c.GetPayout(ctx, id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status).To(Equal("success"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
