// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"bytes"
	"errors"
	"io"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/config"
)

// A production payment never settles through the simulator unless its gateway opted in.
var _ = Describe("Simulated production", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	simulating := func(g *paygatev1.Gateway) { g.Spec.Simulation = paygatev1.SimulationSandboxAndProduction }

	It("declines a production payment through a gateway that simulates sandbox only, pushing nothing", func() {
		gw := createGateway("TZS")
		p := productionPayment(ns, "trx-prod-unsimulated", gw, "+255712345678")
		Expect(k8s.Create(ctx, p)).To(Succeed())
		done := waitPhase(p, paygatev1.PaymentFailed)
		Expect(done.Status.Reason).To(Equal(string(paygatev1.FailurePaymentDeclined)))
		Expect(done.Status.Attempts).To(BeEmpty())
		Expect(done.Status.Remark).To(BeEmpty())
		Expect(sandbox.Pushes(ns + ".trx-prod-unsimulated.1")).To(BeZero())
	})

	It("simulates a production payment through a gateway that opted in, with the remark SIMULATED_PRODUCTION", func() {
		gw := createGateway("TZS", simulating)
		p := productionPayment(ns, "trx-prod-simulated", gw, "+255712345678")
		Expect(k8s.Create(ctx, p)).To(Succeed())
		done := waitPhase(p, paygatev1.PaymentSuccess)
		Expect(done.Status.Remark).To(Equal(paygatev1.RemarkSimulatedProduction))
		Expect(done.MerchantRemark()).To(Equal(paygatev1.RemarkSimulatedProduction))
		Expect(sandbox.Pushes(ns + ".trx-prod-simulated.1")).To(Equal(1))
	})

	It("warns on a gateway while it simulates production, and not after", func() {
		gw := createGateway("TZS", simulating)
		Eventually(func(g Gomega) {
			var cur paygatev1.Gateway
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(gw), &cur)).To(Succeed())
			c := meta.FindStatusCondition(cur.Status.Conditions, paygatev1.ConditionSimulatingProduction)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal("ProductionSimulated"))
			g.Expect(c.Message).To(ContainSubstring("no money moves"))
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, paygatev1.ConditionReady)).To(BeTrue())
		}).Should(Succeed())
		Eventually(func() []string { return eventReasons(metav1.NamespaceDefault, gw.Name) }).Should(ContainElement("ProductionSimulated"))

		Eventually(func(g Gomega) {
			var cur paygatev1.Gateway
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(gw), &cur)).To(Succeed())
			cur.Spec.Simulation = paygatev1.SimulationSandboxOnly
			g.Expect(k8s.Update(ctx, &cur)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			var cur paygatev1.Gateway
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(gw), &cur)).To(Succeed())
			g.Expect(meta.FindStatusCondition(cur.Status.Conditions, paygatev1.ConditionSimulatingProduction)).To(BeNil())
		}).Should(Succeed())

		By("defaulting a new gateway to sandbox only")
		plain := createGateway("TZS")
		Expect(plain.Spec.Simulation).To(Equal(paygatev1.SimulationSandboxOnly))
	})

	It("ships a demo configuration the API server accepts, whose production gateways opt in visibly", func() {
		manifests, err := config.Samples()
		Expect(err).NotTo(HaveOccurred())
		var simulated []string
		for _, m := range manifests {
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(m), 4096)
			for {
				gw := &paygatev1.Gateway{}
				if err := dec.Decode(gw); errors.Is(err, io.EOF) {
					break
				} else {
					Expect(err).NotTo(HaveOccurred())
				}
				if gw.Kind != "Gateway" {
					continue
				}
				// Dry run: the schema, defaults and CEL rules apply; nothing is stored.
				Expect(k8s.Create(ctx, gw, client.DryRunAll)).To(Succeed(), gw.Name)
				if gw.ServesEnvironment(paygatev1.EnvironmentProduction) {
					Expect(gw.Spec.Provider).To(Equal(paygatev1.ProviderSandbox), gw.Name)
					Expect(gw.SimulatesProduction()).To(BeTrue(), gw.Name)
					simulated = append(simulated, gw.Name)
				}
			}
		}
		Expect(simulated).To(ConsistOf("mpesa-tz", "mpesa-ke"))
	})
})
