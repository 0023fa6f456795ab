// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/credentials"
	webhookevents "github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/pkg/paygate"
)

var _ = Describe("Merchant changes", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	// change creates a MerchantChange and returns it once answered.
	change := func(name string, spec paygatev1.MerchantChangeSpec) *paygatev1.MerchantChange {
		c := &paygatev1.MerchantChange{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			g.Expect(c.IsAnswered()).To(BeTrue())
		}).Should(Succeed())
		return c
	}
	sandboxSet := func(g Gomega, merchant string) credentials.Set {
		set, ok := credentials.SetFromData(getSecret(g, ns, merchant+"-sandbox-credentials").Data)
		g.Expect(ok).To(BeTrue())
		return set
	}

	It("rotates credentials with an overlap once, even when its answer is lost, and ends the overlap on request", func() {
		createMerchant(ns, "duka")
		waitReady(ns, "duka")
		before := sandboxSet(Default, "duka")

		c := change("rotate-1", paygatev1.MerchantChangeSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"},
			Action: paygatev1.ChangeRotateCredentials, Environment: paygatev1.EnvironmentSandbox,
			Overlap: &metav1.Duration{Duration: 2 * time.Hour}, RequestedBy: "owner@duka.example"})
		Expect(c.Status.Phase).To(Equal(paygatev1.ChangeApplied), c.Status.Message)
		Expect(c.Status.PreviousKeyExpiresAt).NotTo(BeNil())
		Expect(c.Status.PreviousKeyExpiresAt.Time).To(BeTemporally("~", clock.Now().Add(2*time.Hour), 2*time.Second))
		Expect(c.Status.Message).NotTo(ContainSubstring("test_"), "an answer never holds a key")
		after := sandboxSet(Default, "duka")
		Expect(after.APIKey).NotTo(Equal(before.APIKey))
		Expect(after.Previous).NotTo(BeNil())
		Expect(after.Previous.APIKey).To(Equal(before.APIKey))
		match, secret := after.Check(before.APIKey, clock.Now())
		Expect(match).To(Equal(credentials.MatchPrevious), "the replaced key works during the overlap")
		Expect(secret).To(Equal(before.APISecret))
		Eventually(func(g Gomega) {
			g.Expect(getMerchant(g, ns, "duka").Status.Sandbox.PreviousKeyExpiresAt).NotTo(BeNil())
		}).Should(Succeed())

		By("answering again, without rotating again, when the answer was lost")
		c.Status = paygatev1.MerchantChangeStatus{}
		Expect(k8s.Status().Update(ctx, c)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			g.Expect(c.Status.Phase).To(Equal(paygatev1.ChangeApplied))
		}).Should(Succeed())
		Expect(sandboxSet(Default, "duka")).To(Equal(after))

		By("ending the overlap: the replaced key stops working")
		end := change("end-1", paygatev1.MerchantChangeSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"},
			Action: paygatev1.ChangeEndCredentialsOverlap, Environment: paygatev1.EnvironmentSandbox})
		Expect(end.Status.Phase).To(Equal(paygatev1.ChangeApplied), end.Status.Message)
		ended := sandboxSet(Default, "duka")
		Expect(ended.Previous).To(BeNil())
		Expect(ended.APIKey).To(Equal(after.APIKey))
		match, _ = ended.Check(before.APIKey, clock.Now())
		Expect(match).To(Equal(credentials.NoMatch))
		Expect(eventReasons(ns, "duka")).To(ContainElements(controllers.ReasonCredentialsRotated, controllers.ReasonCredentialsOverlapEnded))

		By("refusing to end an overlap there is not")
		again := change("end-2", paygatev1.MerchantChangeSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"},
			Action: paygatev1.ChangeEndCredentialsOverlap, Environment: paygatev1.EnvironmentSandbox})
		Expect(again.Status.Phase).To(Equal(paygatev1.ChangeRefused))
		Expect(again.Status.Reason).To(Equal(controllers.ReasonNoOverlap))

		By("deleting answered changes an hour after their answer")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		clock.Step(controllers.ChangeRetention + time.Second)
		// A change is read again when the hour is over (RequeueAfter); an edit of its labels
		// wakes it at once on the stepped clock.
		for _, name := range []string{"rotate-1", "end-1", "end-2"} {
			Eventually(func(g Gomega) {
				obj := &paygatev1.MerchantChange{}
				err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
				if err == nil {
					obj.Labels = map[string]string{"poke": time.Now().Format("150405.000000")}
					_ = k8s.Update(ctx, obj)
				}
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "MerchantChange %s still exists", name)
			}).Should(Succeed())
		}
	})

	It("issues production credentials only to an approved business", func() {
		createMerchant(ns, "pending-shop")
		waitReady(ns, "pending-shop")
		c := change("rotate-live", paygatev1.MerchantChangeSpec{MerchantRef: paygatev1.MerchantReference{Name: "pending-shop"},
			Action: paygatev1.ChangeRotateCredentials, Environment: paygatev1.EnvironmentProduction})
		Expect(c.Status.Phase).To(Equal(paygatev1.ChangeRefused))
		Expect(c.Status.Reason).To(Equal(controllers.ReasonBusinessNotApproved))
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pending-shop-production-credentials"}, &corev1.Secret{}))).To(BeTrue())

		missing := change("for-nobody", paygatev1.MerchantChangeSpec{MerchantRef: paygatev1.MerchantReference{Name: "nobody"},
			Action: paygatev1.ChangeRotateCredentials, Environment: paygatev1.EnvironmentSandbox})
		Expect(missing.Status.Reason).To(Equal(controllers.ReasonChangeMerchantMissing))
	})

	It("rotates the webhook signing secret in two steps", func() {
		createMerchant(ns, "hooks")
		waitReady(ns, "hooks")
		secretName := credentials.WebhookSecretName("hooks")
		old := string(getSecret(Default, ns, secretName).Data[credentials.KeySigningSecret])

		none := change("activate-0", paygatev1.MerchantChangeSpec{MerchantRef: paygatev1.MerchantReference{Name: "hooks"}, Action: paygatev1.ChangeActivateWebhookSecret})
		Expect(none.Status.Reason).To(Equal(controllers.ReasonNoPendingWebhookSecret))

		prep := change("prepare-1", paygatev1.MerchantChangeSpec{MerchantRef: paygatev1.MerchantReference{Name: "hooks"}, Action: paygatev1.ChangePrepareWebhookSecret})
		Expect(prep.Status.Phase).To(Equal(paygatev1.ChangeApplied), prep.Status.Message)
		s := getSecret(Default, ns, secretName)
		pending := string(s.Data[credentials.KeyPendingSigningSecret])
		Expect(pending).To(HavePrefix("whsec_"))
		Expect(string(s.Data[credentials.KeySigningSecret])).To(Equal(old), "the pending secret does not sign yet")
		Eventually(func(g Gomega) {
			g.Expect(getMerchant(g, ns, "hooks").Status.WebhookSigningSecretPendingSince).NotTo(BeNil())
		}).Should(Succeed())

		act := change("activate-1", paygatev1.MerchantChangeSpec{MerchantRef: paygatev1.MerchantReference{Name: "hooks"}, Action: paygatev1.ChangeActivateWebhookSecret})
		Expect(act.Status.Phase).To(Equal(paygatev1.ChangeApplied), act.Status.Message)
		s = getSecret(Default, ns, secretName)
		Expect(string(s.Data[credentials.KeySigningSecret])).To(Equal(pending))
		Expect(s.Data).NotTo(HaveKey(credentials.KeyPendingSigningSecret))
		Eventually(func(g Gomega) {
			g.Expect(getMerchant(g, ns, "hooks").Status.WebhookSigningSecretPendingSince).To(BeNil())
		}).Should(Succeed())
	})

	It("sets a default webhook URL under the API's rules, never for a merchant managed elsewhere, and sends a test event there", func() {
		createMerchant(ns, "urls", func(m *paygatev1.Merchant) { m.Spec.AllowedWebhookDomains = []paygatev1.DomainName{"duka.example"} })
		waitReady(ns, "urls")
		set := func(name string, env paygatev1.Environment, u string) *paygatev1.MerchantChange {
			return change(name, paygatev1.MerchantChangeSpec{MerchantRef: paygatev1.MerchantReference{Name: "urls"},
				Action: paygatev1.ChangeSetWebhookURL, Environment: env, WebhookURL: u})
		}
		noURL := change("test-0", paygatev1.MerchantChangeSpec{MerchantRef: paygatev1.MerchantReference{Name: "urls"},
			Action: paygatev1.ChangeSendTestEvent, Environment: paygatev1.EnvironmentSandbox})
		Expect(noURL.Status.Reason).To(Equal(controllers.ReasonNoWebhookURL))

		for name, u := range map[string]string{"bad-host": "https://evil.test/hook", "bad-scheme": "ftp://hooks.duka.example/x"} {
			c := set(name, paygatev1.EnvironmentSandbox, u)
			Expect(c.Status.Reason).To(Equal(controllers.ReasonInvalidWebhookURL), name)
		}
		Expect(set("plain-live", paygatev1.EnvironmentProduction, "http://hooks.duka.example/x").Status.Message).To(ContainSubstring("HTTPS in production"))
		Expect(getMerchant(Default, ns, "urls").Spec.WebhookURLs).To(Equal(paygatev1.WebhookURLs{}), "a refused change changes nothing")

		ok := set("good", paygatev1.EnvironmentSandbox, "https://hooks.duka.example/paygate")
		Expect(ok.Status.Phase).To(Equal(paygatev1.ChangeApplied), ok.Status.Message)
		Expect(getMerchant(Default, ns, "urls").Spec.WebhookURLs.Sandbox).To(Equal("https://hooks.duka.example/paygate"))

		test := change("test-1", paygatev1.MerchantChangeSpec{MerchantRef: paygatev1.MerchantReference{Name: "urls"},
			Action: paygatev1.ChangeSendTestEvent, Environment: paygatev1.EnvironmentSandbox})
		Expect(test.Status.Phase).To(Equal(paygatev1.ChangeApplied), test.Status.Message)
		Expect(test.Status.EventID).To(HavePrefix("evt_"))
		d := &paygatev1.WebhookDelivery{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: webhookevents.DeliveryName(string(test.UID), paygate.EventWebhookTest)}, d)).To(Succeed())
		Expect(d.Spec.URL).To(Equal("https://hooks.duka.example/paygate"))
		Expect(d.Spec.EventID).To(Equal(test.Status.EventID))
		var ev paygate.WebhookEvent
		Expect(json.Unmarshal([]byte(d.Spec.Payload), &ev)).To(Succeed())
		data, err := ev.TestData()
		Expect(err).NotTo(HaveOccurred())
		Expect(data.Environment).To(Equal("sandbox"))

		By("refusing a merchant whose configuration GitOps manages")
		Eventually(func(g Gomega) {
			m := getMerchant(g, ns, "urls")
			m.Annotations = map[string]string{paygatev1.AnnotationManagedBy: "Argo CD, repo payments-config"}
			g.Expect(k8s.Update(ctx, m)).To(Succeed())
		}).Should(Succeed())
		managed := set("managed", paygatev1.EnvironmentSandbox, "https://other.duka.example/x")
		Expect(managed.Status.Reason).To(Equal(controllers.ReasonManagedElsewhere))
		Expect(managed.Status.Message).To(ContainSubstring("Argo CD"))
		Expect(getMerchant(Default, ns, "urls").Spec.WebhookURLs.Sandbox).To(Equal("https://hooks.duka.example/paygate"))
	})

	It("refuses a malformed change at the API server", func() {
		for name, spec := range map[string]paygatev1.MerchantChangeSpec{
			"no-env":       {MerchantRef: paygatev1.MerchantReference{Name: "m"}, Action: paygatev1.ChangeRotateCredentials},
			"long-overlap": {MerchantRef: paygatev1.MerchantReference{Name: "m"}, Action: paygatev1.ChangeRotateCredentials, Environment: paygatev1.EnvironmentSandbox, Overlap: &metav1.Duration{Duration: 169 * time.Hour}},
			"url-on-rotate": {MerchantRef: paygatev1.MerchantReference{Name: "m"}, Action: paygatev1.ChangeRotateCredentials, Environment: paygatev1.EnvironmentSandbox,
				WebhookURL: "https://x.example"},
			"unknown": {MerchantRef: paygatev1.MerchantReference{Name: "m"}, Action: "DeleteEverything"},
		} {
			err := k8s.Create(ctx, &paygatev1.MerchantChange{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec})
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", name, err)
		}
		c := &paygatev1.MerchantChange{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fixed"},
			Spec: paygatev1.MerchantChangeSpec{MerchantRef: paygatev1.MerchantReference{Name: "m"}, Action: paygatev1.ChangePrepareWebhookSecret}}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Eventually(func(g Gomega) { // read again: the controller may answer it meanwhile (a conflict)
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			c.Spec.Action = paygatev1.ChangeActivateWebhookSecret
			err := k8s.Update(ctx, c)
			g.Expect(apierrors.IsConflict(err)).To(BeFalse())
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "a change cannot change: %v", err)
		}).Should(Succeed())
	})
})
