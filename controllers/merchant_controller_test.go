// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"encoding/json"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/test/testenv"
)

var newGateway, newMerchant = testenv.Gateway, testenv.Merchant

func createGateway(currency paygatev1.CurrencyCode, mods ...func(*paygatev1.Gateway)) *paygatev1.Gateway {
	g := newGateway(currency, mods...)
	Expect(k8s.Create(ctx, g)).To(Succeed())
	deleteAfter(g)
	return g
}

func createMerchant(ns, name string, mods ...func(*paygatev1.Merchant)) *paygatev1.Merchant {
	m := newMerchant(ns, name, mods...)
	Expect(k8s.Create(ctx, m)).To(Succeed())
	return m
}

func getMerchant(g Gomega, ns, name string) *paygatev1.Merchant {
	m := &paygatev1.Merchant{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m)).To(Succeed())
	return m
}

func getSecret(g Gomega, ns, name string) *corev1.Secret {
	s := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)).To(Succeed())
	return s
}

func conditionStatus(m *paygatev1.Merchant, t string) metav1.ConditionStatus {
	c := meta.FindStatusCondition(m.Status.Conditions, t)
	if c == nil {
		return ""
	}
	return c.Status
}

// waitReady waits until the merchant is Ready at its current generation.
func waitReady(ns, name string) *paygatev1.Merchant {
	var m *paygatev1.Merchant
	Eventually(func(g Gomega) {
		m = getMerchant(g, ns, name)
		g.Expect(m.Status.ObservedGeneration).To(Equal(m.Generation))
		g.Expect(conditionStatus(m, paygatev1.ConditionReady)).To(Equal(metav1.ConditionTrue))
	}).Should(Succeed())
	return m
}

func eventReasons(ns, name string) []string {
	var list eventsv1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name != name {
			continue
		}
		out = append(out, e.Reason)
		if e.Series != nil { // the recorder folds a repeat within its window into a series
			for range e.Series.Count - 1 {
				out = append(out, e.Reason)
			}
		}
	}
	return out
}

func checkoutGateways(m *paygatev1.Merchant, currency paygatev1.CurrencyCode) (codes []string, reason string) {
	for _, cg := range m.Status.CheckoutGateways {
		if cg.Currency == currency {
			for _, c := range cg.Gateways {
				codes = append(codes, string(c))
			}
			return codes, cg.Reason
		}
	}
	return nil, "absent"
}

var _ = Describe("Merchant credentials", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("issues sandbox credentials, a webhook signing secret and an id, and no production set while pending", func() {
		createMerchant(ns, "pending-shop")
		m := waitReady(ns, "pending-shop")

		Expect(m.Status.ID).To(BeNumerically(">", 0))
		Expect(m.Status.Sandbox.BusinessID).To(HavePrefix("test_"))
		Expect(m.Status.Sandbox.SecretName).To(Equal("pending-shop-sandbox-credentials"))
		Expect(m.Status.Production).To(Equal(paygatev1.CredentialSetStatus{}))
		Expect(conditionStatus(m, paygatev1.ConditionSandboxCredentialsIssued)).To(Equal(metav1.ConditionTrue))
		Expect(conditionStatus(m, paygatev1.ConditionWebhookSecretIssued)).To(Equal(metav1.ConditionTrue))
		prod := meta.FindStatusCondition(m.Status.Conditions, paygatev1.ConditionProductionEnabled)
		Expect(prod).NotTo(BeNil())
		Expect(prod.Status).To(Equal(metav1.ConditionFalse))
		Expect(prod.Reason).To(Equal("BusinessNotApproved"))
		for _, c := range m.Status.Conditions {
			Expect(c.ObservedGeneration).To(Equal(m.Generation), c.Type)
		}

		secret := getSecret(Default, ns, m.Status.Sandbox.SecretName)
		set, ok := credentials.SetFromData(secret.Data)
		Expect(ok).To(BeTrue())
		Expect(set.BusinessID).To(Equal(m.Status.Sandbox.BusinessID))
		Expect(set.APIKey).To(HavePrefix("test_pk_"))
		Expect(set.APISecret).To(HavePrefix("test_sk_"))
		Expect(metav1.IsControlledBy(secret, m)).To(BeTrue())
		Expect(secret.Labels).To(HaveKeyWithValue(paygatev1.LabelMerchant, "pending-shop"))
		Expect(secret.Labels).To(HaveKeyWithValue(paygatev1.LabelEnvironment, "sandbox"))

		webhook := getSecret(Default, ns, m.Status.WebhookSigningSecretName)
		signing := string(webhook.Data[credentials.KeySigningSecret])
		Expect(signing).To(HavePrefix("whsec_"))

		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pending-shop-production-credentials"}, &corev1.Secret{})
		Expect(client.IgnoreNotFound(err)).To(Succeed())
		Expect(err).To(HaveOccurred(), "no production Secret for a pending business")

		By("keeping every secret value out of status and events")
		status, err := json.Marshal(m.Status)
		Expect(err).NotTo(HaveOccurred())
		var events eventsv1.EventList
		Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
		eventsJSON, err := json.Marshal(events)
		Expect(err).NotTo(HaveOccurred())
		for _, secretValue := range []string{set.APIKey, set.APISecret, signing} {
			Expect(string(status)).NotTo(ContainSubstring(secretValue))
			Expect(string(eventsJSON)).NotTo(ContainSubstring(secretValue))
		}
		Expect(eventReasons(ns, "pending-shop")).To(ContainElements("CredentialsIssued", "WebhookSecretIssued"))
	})

	It("shows whether the merchant accepts unsigned requests, and where", func() {
		createMerchant(ns, "plugin-shop")
		m := waitReady(ns, "plugin-shop")
		Expect(conditionStatus(m, paygatev1.ConditionUnsignedRequestsAccepted)).To(Equal(metav1.ConditionFalse))
		Eventually(func(g Gomega) {
			cur := &paygatev1.Merchant{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), cur)).To(Succeed())
			cur.Spec.UnsignedRequests = []paygatev1.Environment{paygatev1.EnvironmentSandbox}
			g.Expect(k8s.Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			cur := &paygatev1.Merchant{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), cur)).To(Succeed())
			c := meta.FindStatusCondition(cur.Status.Conditions, paygatev1.ConditionUnsignedRequestsAccepted)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(controllers.ReasonUnsignedRequestsOn))
			g.Expect(c.Message).To(ContainSubstring("sandbox"))
			g.Expect(c.ObservedGeneration).To(Equal(cur.Generation))
		}).Should(Succeed())
		By("refusing an environment that does not exist at apply time")
		cur := &paygatev1.Merchant{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), cur)).To(Succeed())
		cur.Spec.UnsignedRequests = []paygatev1.Environment{"staging"}
		Expect(k8s.Update(ctx, cur)).NotTo(Succeed())
	})

	It("issues production credentials once the business is approved", func() {
		createMerchant(ns, "growing-shop")
		m := waitReady(ns, "growing-shop")

		m.Spec.BusinessStatus = paygatev1.BusinessApproved
		Expect(k8s.Update(ctx, m)).To(Succeed())
		Eventually(func(g Gomega) {
			m = getMerchant(g, ns, "growing-shop")
			g.Expect(conditionStatus(m, paygatev1.ConditionProductionEnabled)).To(Equal(metav1.ConditionTrue))
			g.Expect(m.Status.Production.BusinessID).To(HavePrefix("live_"))
		}).Should(Succeed())
		Expect(m.Status.Production.BusinessID).NotTo(Equal(m.Status.Sandbox.BusinessID))

		set, ok := credentials.SetFromData(getSecret(Default, ns, "growing-shop-production-credentials").Data)
		Expect(ok).To(BeTrue())
		Expect(set.APIKey).To(HavePrefix("live_pk_"))
		Expect(set.APISecret).To(HavePrefix("live_sk_"))
		Eventually(func() []string { return eventReasons(ns, "growing-shop") }).Should(ContainElement("ProductionEnabled"))

		By("keeping production credentials, disabled, when the business is disabled")
		m.Spec.BusinessStatus = paygatev1.BusinessDisabled
		Expect(k8s.Update(ctx, m)).To(Succeed())
		Eventually(func(g Gomega) {
			m = getMerchant(g, ns, "growing-shop")
			g.Expect(conditionStatus(m, paygatev1.ConditionProductionEnabled)).To(Equal(metav1.ConditionFalse))
		}).Should(Succeed())
		kept, _ := credentials.SetFromData(getSecret(Default, ns, "growing-shop-production-credentials").Data)
		Expect(kept).To(Equal(set))
		Eventually(func() []string { return eventReasons(ns, "growing-shop") }).Should(ContainElement("ProductionDisabled"))
	})

	It("re-issues a deleted Secret under the same business ID with new keys", func() {
		createMerchant(ns, "careless-shop")
		m := waitReady(ns, "careless-shop")
		old := getSecret(Default, ns, m.Status.Sandbox.SecretName)
		oldSet, _ := credentials.SetFromData(old.Data)

		Expect(k8s.Delete(ctx, old)).To(Succeed())
		Eventually(func(g Gomega) {
			s := getSecret(g, ns, m.Status.Sandbox.SecretName)
			g.Expect(s.UID).NotTo(Equal(old.UID))
			set, ok := credentials.SetFromData(s.Data)
			g.Expect(ok).To(BeTrue())
			g.Expect(set.BusinessID).To(Equal(oldSet.BusinessID))
			g.Expect(set.APIKey).NotTo(Equal(oldSet.APIKey))
			g.Expect(set.APISecret).NotTo(Equal(oldSet.APISecret))
		}).Should(Succeed())

		oldWebhook := getSecret(Default, ns, m.Status.WebhookSigningSecretName)
		Expect(k8s.Delete(ctx, oldWebhook)).To(Succeed())
		Eventually(func(g Gomega) {
			s := getSecret(g, ns, m.Status.WebhookSigningSecretName)
			g.Expect(s.UID).NotTo(Equal(oldWebhook.UID))
			g.Expect(string(s.Data[credentials.KeySigningSecret])).To(HavePrefix("whsec_"))
		}).Should(Succeed())
		waitReady(ns, "careless-shop")
	})

	It("rotates a set once per distinct annotation value", func() {
		createMerchant(ns, "rotating-shop", func(m *paygatev1.Merchant) { m.Spec.BusinessStatus = paygatev1.BusinessApproved })
		m := waitReady(ns, "rotating-shop")
		Eventually(func(g Gomega) {
			getSecret(g, ns, "rotating-shop-production-credentials")
		}).Should(Succeed())
		sandbox0, _ := credentials.SetFromData(getSecret(Default, ns, "rotating-shop-sandbox-credentials").Data)
		production0, _ := credentials.SetFromData(getSecret(Default, ns, "rotating-shop-production-credentials").Data)
		webhook0 := string(getSecret(Default, ns, "rotating-shop-webhook-signing-secret").Data[credentials.KeySigningSecret])

		annotate := func(key, value string) {
			Eventually(func(g Gomega) {
				m := getMerchant(g, ns, "rotating-shop")
				if m.Annotations == nil {
					m.Annotations = map[string]string{}
				}
				m.Annotations[key] = value
				g.Expect(k8s.Update(ctx, m)).To(Succeed())
			}).Should(Succeed())
		}
		annotate(paygatev1.AnnotationRotateSandboxCredentials, "2026-11-22T10:00")
		var sandbox1 credentials.Set
		Eventually(func(g Gomega) {
			s := getSecret(g, ns, "rotating-shop-sandbox-credentials")
			sandbox1, _ = credentials.SetFromData(s.Data)
			g.Expect(sandbox1.APIKey).NotTo(Equal(sandbox0.APIKey))
			g.Expect(s.Annotations).To(HaveKeyWithValue(credentials.AnnotationRotation, "2026-11-22T10:00"))
		}).Should(Succeed())
		Expect(sandbox1.BusinessID).To(Equal(sandbox0.BusinessID))
		Expect(sandbox1.APISecret).NotTo(Equal(sandbox0.APISecret))
		Eventually(func() []string { return eventReasons(ns, "rotating-shop") }).Should(ContainElement("CredentialsRotated"))

		By("leaving the other sets alone")
		production1, _ := credentials.SetFromData(getSecret(Default, ns, "rotating-shop-production-credentials").Data)
		Expect(production1).To(Equal(production0))

		By("not rotating again for an unrelated change")
		m = getMerchant(Default, ns, "rotating-shop")
		m.Spec.DisplayName = "Rotating Shop Ltd"
		Expect(k8s.Update(ctx, m)).To(Succeed())
		waitReady(ns, "rotating-shop")
		Consistently(func(g Gomega) {
			now, _ := credentials.SetFromData(getSecret(g, ns, "rotating-shop-sandbox-credentials").Data)
			g.Expect(now).To(Equal(sandbox1))
		}, "2s").Should(Succeed())

		By("rotating the webhook signing secret and the production set on request")
		annotate(paygatev1.AnnotationRotateWebhookSecret, "1")
		annotate(paygatev1.AnnotationRotateProductionCredentials, "1")
		Eventually(func(g Gomega) {
			g.Expect(string(getSecret(g, ns, "rotating-shop-webhook-signing-secret").Data[credentials.KeySigningSecret])).NotTo(Equal(webhook0))
			now, _ := credentials.SetFromData(getSecret(g, ns, "rotating-shop-production-credentials").Data)
			g.Expect(now.APIKey).NotTo(Equal(production0.APIKey))
			g.Expect(now.BusinessID).To(Equal(production0.BusinessID))
		}).Should(Succeed())
	})

	It("refuses to overwrite a Secret it did not issue", func() {
		foreign := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "squatted-shop-sandbox-credentials",
				Labels: map[string]string{paygatev1.LabelCredential: "api"}},
			StringData: map[string]string{"apiKey": "not-ours"},
		}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		createMerchant(ns, "squatted-shop")
		Eventually(func(g Gomega) {
			m := getMerchant(g, ns, "squatted-shop")
			c := meta.FindStatusCondition(m.Status.Conditions, paygatev1.ConditionSandboxCredentialsIssued)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring("not controlled by this Merchant"))
			g.Expect(c.Reason).To(Equal(controllers.ReasonSecretNotOwned))
			ready := meta.FindStatusCondition(m.Status.Conditions, paygatev1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(controllers.ReasonSecretNotOwned))
			// The other steps do not depend on the sandbox credentials: they still ran.
			g.Expect(conditionStatus(m, paygatev1.ConditionWebhookSecretIssued)).To(Equal(metav1.ConditionTrue))
			g.Expect(m.Status.ID).NotTo(BeZero())
		}).Should(Succeed())
		Expect(string(getSecret(Default, ns, foreign.Name).Data["apiKey"])).To(Equal("not-ours"))
	})
})

var _ = Describe("Integer ids", func() {
	It("gives concurrently created merchants distinct ids and never reuses one", func() {
		ns := newNamespace()
		const n = 8
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				defer GinkgoRecover()
				createMerchant(ns, "shop-"+string(rune('a'+i)))
			})
		}
		wg.Wait()
		ids := map[int64]string{}
		for i := range n {
			name := "shop-" + string(rune('a'+i))
			m := waitReady(ns, name)
			Expect(ids).NotTo(HaveKey(m.Status.ID), "id %d given twice", m.Status.ID)
			ids[m.Status.ID] = name
		}

		By("giving a re-created merchant of the same name a new id")
		old := getMerchant(Default, ns, "shop-a")
		Expect(k8s.Delete(ctx, old)).To(Succeed())
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKeyFromObject(old), &paygatev1.Merchant{})
		}).Should(Satisfy(func(err error) bool { return client.IgnoreNotFound(err) == nil && err != nil }))
		// envtest runs no garbage collector: delete the Secrets the owner reference would take.
		Expect(k8s.DeleteAllOf(ctx, &corev1.Secret{}, client.InNamespace(ns), client.MatchingLabels{paygatev1.LabelMerchant: "shop-a"})).To(Succeed())
		createMerchant(ns, "shop-a")
		again := waitReady(ns, "shop-a")
		Expect(again.Status.ID).NotTo(Equal(old.Status.ID))
		Expect(ids).NotTo(HaveKey(again.Status.ID))

		By("rebuilding a lost id from its claim on the next pass")
		again.Status.ID = 0
		Expect(k8s.Status().Update(ctx, again)).To(Succeed())
		again.Annotations = map[string]string{"example.com/touched": "yes"}
		Expect(k8s.Update(ctx, again)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getMerchant(g, ns, "shop-a").Status.ID).To(Equal(claimedID(again)))
		}).Should(Succeed())
	})

	It("gives gateways ids and reports amounts their currency cannot express", func() {
		good := createGateway("TZS")
		bad := createGateway("UGX", func(g *paygatev1.Gateway) { g.Spec.Fees.Fixed = "0.5" })
		Eventually(func(g Gomega) {
			var gw paygatev1.Gateway
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(good), &gw)).To(Succeed())
			g.Expect(gw.Status.ID).To(BeNumerically(">", 0))
			g.Expect(meta.IsStatusConditionTrue(gw.Status.Conditions, paygatev1.ConditionReady)).To(BeTrue())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			var gw paygatev1.Gateway
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(bad), &gw)).To(Succeed())
			g.Expect(gw.Status.ID).To(BeNumerically(">", 0))
			c := meta.FindStatusCondition(gw.Status.Conditions, paygatev1.ConditionReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal("ConfigInvalid"))
			g.Expect(c.Message).To(ContainSubstring("UGX allows at most 0 decimal places"))
		}).Should(Succeed())
	})
})

// claimedID is the id the merchant's IDClaim holds: what status is rebuilt from.
func claimedID(m *paygatev1.Merchant) int64 {
	var claims paygatev1.IDClaimList
	Expect(k8s.List(ctx, &claims)).To(Succeed())
	for _, c := range claims.Items {
		if c.Spec.Owner.UID == string(m.UID) {
			return c.Spec.ID
		}
	}
	Fail("no IDClaim for merchant " + m.Name)
	return 0
}

var _ = Describe("Checkout gateways", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("follows the three layers and reacts to gateways and the selection", func() {
		tz1 := createGateway("TZS")
		tz2 := createGateway("TZS")
		createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.Type = paygatev1.GatewayTypeManual })
		createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.Active = ptr.To(false) })
		ke := createGateway("KES")
		createMerchant(ns, "layered-shop", func(m *paygatev1.Merchant) {
			m.Spec.Currencies = []paygatev1.CurrencyCode{"TZS", "KES", "UGX"}
			m.Spec.Wallets = []paygatev1.Wallet{{Currency: "TZS"}, {Currency: "KES", Active: ptr.To(false)}}
		})
		Eventually(func(g Gomega) {
			m := getMerchant(g, ns, "layered-shop")
			codes, _ := checkoutGateways(m, "TZS")
			g.Expect(codes).To(ConsistOf(tz1.Name, tz2.Name))
			codes, reason := checkoutGateways(m, "KES")
			g.Expect(codes).To(BeEmpty())
			g.Expect(reason).To(Equal("WalletInactive"))
			_, reason = checkoutGateways(m, "UGX")
			g.Expect(reason).To(Equal("WalletMissing"))
		}).Should(Succeed())

		By("dropping a gateway that is deactivated")
		Eventually(func(g Gomega) {
			var gw paygatev1.Gateway
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tz2), &gw)).To(Succeed())
			gw.Spec.Active = ptr.To(false)
			g.Expect(k8s.Update(ctx, &gw)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			codes, _ := checkoutGateways(getMerchant(g, ns, "layered-shop"), "TZS")
			g.Expect(codes).To(ConsistOf(tz1.Name))
		}).Should(Succeed())

		By("narrowing to the selection")
		sel := &paygatev1.GatewaySelection{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "layered-shop"},
			Spec: paygatev1.GatewaySelectionSpec{
				MerchantRef: paygatev1.MerchantReference{Name: "layered-shop"},
				Gateways:    []paygatev1.GatewayCode{paygatev1.GatewayCode(ke.Name)},
			},
		}
		Expect(k8s.Create(ctx, sel)).To(Succeed())
		Eventually(func(g Gomega) {
			m := getMerchant(g, ns, "layered-shop")
			codes, reason := checkoutGateways(m, "TZS")
			g.Expect(codes).To(BeEmpty())
			g.Expect(reason).To(Equal("NoneSelected"))
			g.Expect(conditionStatus(m, paygatev1.ConditionInvalidGatewaySelection)).To(Equal(metav1.ConditionFalse))
		}).Should(Succeed())

		By("flagging a selection that names an unknown or inactive gateway")
		sel.Spec.Gateways = []paygatev1.GatewayCode{paygatev1.GatewayCode(tz1.Name), paygatev1.GatewayCode(tz2.Name), "no-such-gateway"}
		Expect(k8s.Update(ctx, sel)).To(Succeed())
		Eventually(func(g Gomega) {
			m := getMerchant(g, ns, "layered-shop")
			c := meta.FindStatusCondition(m.Status.Conditions, paygatev1.ConditionInvalidGatewaySelection)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(ContainSubstring("no-such-gateway: UnknownGateway"))
			g.Expect(c.Message).To(ContainSubstring(tz2.Name + ": GatewayInactive"))
			g.Expect(conditionStatus(m, paygatev1.ConditionReady)).To(Equal(metav1.ConditionFalse))
			codes, _ := checkoutGateways(m, "TZS")
			g.Expect(codes).To(ConsistOf(tz1.Name))
		}).Should(Succeed())
		Eventually(func() []string { return eventReasons(ns, "layered-shop") }).Should(ContainElement("SelectionInvalid"))

		By("recovering when the selection is fixed")
		sel.Spec.Gateways = []paygatev1.GatewayCode{paygatev1.GatewayCode(tz1.Name)}
		Expect(k8s.Update(ctx, sel)).To(Succeed())
		waitReady(ns, "layered-shop")
		Eventually(func() []string { return eventReasons(ns, "layered-shop") }).Should(ContainElement("SelectionValid"))

		By("widening again when the selection is deleted")
		Expect(k8s.Delete(ctx, sel)).To(Succeed())
		Eventually(func(g Gomega) {
			var gw paygatev1.Gateway
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tz2), &gw)).To(Succeed())
			gw.Spec.Active = ptr.To(true)
			g.Expect(k8s.Update(ctx, &gw)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			codes, _ := checkoutGateways(getMerchant(g, ns, "layered-shop"), "TZS")
			g.Expect(codes).To(ConsistOf(tz1.Name, tz2.Name))
		}).Should(Succeed())
	})
})
