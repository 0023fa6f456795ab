// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/pkg/paygate"
)

var _ = Describe("Webhook signing secret rotation", func() {
	// docs/webhooks-receiver.md, Rotating the signing secret: prepare a pending secret, install it
	// on the receiver beside the current one, activate it, and drop the old one later. A receiver
	// that follows the steps verifies every delivery; one that skips them is refused at the switch.
	It("lets a receiver verify every delivery through prepare and activate", func() {
		ns := newNamespace()
		createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.Simulation = paygatev1.SimulationSandboxAndProduction })
		shop := createMerchant(ns, "signing")
		rcv := newReceiver()
		secretKey := client.ObjectKey{Namespace: ns, Name: credentials.WebhookSecretName(shop.merchant.Name)}
		readSecret := func(g Gomega) corev1.Secret {
			var s corev1.Secret
			g.Expect(k8s.Get(ctx, secretKey, &s)).To(Succeed())
			return s
		}
		annotate := func(key, value string) {
			Eventually(func(g Gomega) {
				var m paygatev1.Merchant
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(shop.merchant), &m)).To(Succeed())
				if m.Annotations == nil {
					m.Annotations = map[string]string{}
				}
				m.Annotations[key] = value
				g.Expect(k8s.Update(ctx, &m)).To(Succeed())
			}).Should(Succeed())
		}
		// pay settles a push payment and returns its delivery as the receiver got it.
		pay := func() received {
			n := len(rcv.requests())
			_, err := shop.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{
				PaymentAmount: "10000", CurrencyCode: "TZS", RefTrx: uniqueName("order"), PaymentMode: "push",
				CustomerPhone: "+255712345678", CustomerName: "Asha", WebhookURL: rcv.url(),
			}, "")
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() int { return len(rcv.requests()) }).Should(Equal(n + 1))
			return rcv.requests()[n]
		}
		verifies := func(got received, secret []byte, more ...[]byte) error {
			_, err := paygate.WebhookVerifier{Secret: secret, MoreSecrets: more}.Verify(got.header, got.body)
			return err
		}
		old := readSecret(Default).Data[credentials.KeySigningSecret]
		Expect(verifies(pay(), old)).To(Succeed())

		By("preparing: a pending secret appears, and the current one still signs")
		annotate(paygatev1.AnnotationPrepareWebhookSecret, "prepare-1")
		var pending []byte
		Eventually(func(g Gomega) {
			s := readSecret(g)
			pending = s.Data[credentials.KeyPendingSigningSecret]
			g.Expect(pending).NotTo(BeEmpty())
			g.Expect(s.Data[credentials.KeySigningSecret]).To(Equal(old))
			var m paygatev1.Merchant
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(shop.merchant), &m)).To(Succeed())
			g.Expect(m.Status.WebhookSigningSecretPendingSince).NotTo(BeNil())
		}).Should(Succeed())
		got := pay()
		Expect(verifies(got, old, pending)).To(Succeed(), "the receiver holds both")
		Expect(verifies(got, pending)).To(MatchError(paygate.ErrWebhookSignature), "the pending secret does not sign yet")

		By("activating: the pending secret signs, and a receiver holding both verifies throughout")
		annotate(paygatev1.AnnotationActivateWebhookSecret, "activate-1")
		Eventually(func(g Gomega) {
			s := readSecret(g)
			g.Expect(s.Data[credentials.KeySigningSecret]).To(Equal(pending))
			g.Expect(s.Data).NotTo(HaveKey(credentials.KeyPendingSigningSecret))
			var m paygatev1.Merchant
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(shop.merchant), &m)).To(Succeed())
			g.Expect(m.Status.WebhookSigningSecretPendingSince).To(BeNil())
		}).Should(Succeed())
		Eventually(func() error {
			got := pay() // the manager's cache sees the activation a moment after the API server
			if err := verifies(got, old, pending); err != nil {
				return StopTrying(fmt.Sprintf("a delivery the receiver holding both secrets cannot verify: %v", err))
			}
			if verifies(got, old) == nil {
				return errors.New("still signed with the old secret")
			}
			return verifies(got, pending)
		}).Should(Succeed())

		By("dropping the old secret on the receiver: the new one alone verifies")
		Expect(verifies(pay(), pending)).To(Succeed())

		By("activating with nothing pending: a Warning, and nothing changes")
		annotate(paygatev1.AnnotationActivateWebhookSecret, "activate-2")
		Eventually(func(g Gomega) {
			var evs eventsv1.EventList
			g.Expect(k8s.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
			reasons := []string{}
			for _, e := range evs.Items {
				reasons = append(reasons, e.Reason)
				g.Expect(e.Note).NotTo(ContainSubstring(string(pending)))
				g.Expect(e.Note).NotTo(ContainSubstring(string(old)))
			}
			g.Expect(reasons).To(ContainElements("WebhookSecretPrepared", "WebhookSecretActivated", "NoPendingWebhookSecret"))
		}).Should(Succeed())
		Expect(readSecret(Default).Data[credentials.KeySigningSecret]).To(Equal(pending))
		Expect(verifies(pay(), pending)).To(Succeed())
	})
})
