// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// The console's gateway controls (docs/console.md, Gateways), with the real manager and
// apiserver: an owner's choice is the merchant's GatewaySelection and the next checkout offers
// only it; a developer cannot choose; a merchant whose configuration is managed elsewhere sees the
// page read-only and a forced post changes nothing.
var _ = Describe("The merchant console's gateway controls", func() {
	It("lets an owner choose the checkout's gateways, and nobody else", func() {
		ns := newNamespace()
		first := createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.DisplayName = "Alpha Pesa" })
		second := createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.DisplayName = "Beta Money" })
		shop := createMerchant(ns, "gw-shop")
		owner := newConsoleClient(baseURL)
		owner.signUp(invite(shop.merchant, "gw-owner@shop.example", paygatev1.ConsoleOwner))
		dev := newConsoleClient(baseURL)
		dev.signUp(invite(shop.merchant, "gw-dev@shop.example", paygatev1.ConsoleDeveloper))

		status, _, body := owner.get("/console/gateways")
		Expect(status).To(Equal(http.StatusOK), body)
		Expect(body).To(ContainSubstring(string(first.Code())))
		Expect(body).To(ContainSubstring(string(second.Code())))

		status, _, _ = dev.post("/console/gateways", url.Values{"csrf": {dev.csrf()}, "gateway": {string(first.Code())}})
		Expect(status).To(Equal(http.StatusForbidden), "a developer does not choose gateways")
		status, _, _ = owner.post("/console/gateways", url.Values{"gateway": {string(first.Code())}})
		Expect(status).To(Equal(http.StatusForbidden), "no form proof")
		var sels paygatev1.GatewaySelectionList
		Expect(k8s.List(ctx, &sels, client.InNamespace(ns))).To(Succeed())
		Expect(sels.Items).To(BeEmpty(), "nothing written on refusal")

		By("choosing one gateway: the next checkout offers only it")
		status, loc, body := owner.post("/console/gateways", url.Values{"csrf": {owner.csrf()}, "gateway": {string(second.Code())}})
		Expect(status).To(Equal(http.StatusSeeOther), body)
		Expect(loc).To(Equal("/console/gateways?saved=1"))
		Expect(k8s.List(ctx, &sels, client.InNamespace(ns))).To(Succeed())
		Expect(sels.Items).To(HaveLen(1))
		Expect(sels.Items[0].Spec.Gateways).To(Equal([]paygatev1.GatewayCode{second.Code()}))
		Eventually(func(g Gomega) {
			res, err := shop.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "5000", CurrencyCode: "TZS",
				RefTrx: uniqueName("order"), PaymentMode: "hosted", CustomerPhone: "+255712345678"}, "")
			g.Expect(err).NotTo(HaveOccurred())
			var p paygatev1.Payment
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: res.TrxID}, &p)).To(Succeed())
			g.Expect(p.Spec.Gateways).To(Equal([]paygatev1.GatewayCode{second.Code()}))
		}).Should(Succeed())
		_, _, body = owner.get("/console/gateways?saved=1")
		Expect(body).To(ContainSubstring(`id="saved"`))

		By("refusing a gateway of another merchant's currency, and an empty choice")
		kenya := createGateway("KES")
		status, _, _ = owner.post("/console/gateways", url.Values{"csrf": {owner.csrf()}, "gateway": {string(kenya.Code())}})
		Expect(status).To(Equal(http.StatusUnprocessableEntity))
		status, _, _ = owner.post("/console/gateways", url.Values{"csrf": {owner.csrf()}})
		Expect(status).To(Equal(http.StatusUnprocessableEntity))
		Expect(k8s.List(ctx, &sels, client.InNamespace(ns))).To(Succeed())
		Expect(sels.Items[0].Spec.Gateways).To(Equal([]paygatev1.GatewayCode{second.Code()}))

		By("a configuration managed by GitOps: read-only, and a forced post changes nothing")
		Eventually(func(g Gomega) {
			var m paygatev1.Merchant
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(shop.merchant), &m)).To(Succeed())
			m.Annotations = map[string]string{paygatev1.AnnotationManagedBy: "Argo CD (platform team)"}
			g.Expect(k8s.Update(ctx, &m)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			_, _, body := owner.get("/console/gateways")
			g.Expect(body).To(ContainSubstring(`id="managed-by"`))
			g.Expect(body).To(ContainSubstring("Argo CD (platform team)"))
			g.Expect(body).To(ContainSubstring("<fieldset disabled>"))
		}).Should(Succeed())
		status, _, _ = owner.post("/console/gateways", url.Values{"csrf": {owner.csrf()}, "gateway": {string(first.Code())}})
		Expect(status).To(Equal(http.StatusConflict))
		Expect(k8s.List(ctx, &sels, client.InNamespace(ns))).To(Succeed())
		Expect(sels.Items[0].Spec.Gateways).To(Equal([]paygatev1.GatewayCode{second.Code()}))

		By("the page in a real browser, accessibly")
		outDir := filepath.Join("..", "output", "console")
		Expect(os.MkdirAll(outDir, 0o755)).To(Succeed())
		tab := browserAs(owner) // the owner's session, signed in with the second factor above
		Expect(chromedp.Run(tab,
			chromedp.Navigate(baseURL+"/console/"),
			chromedp.WaitVisible(`nav.nav`, chromedp.ByQuery),
			chromedp.Click(`nav.nav a[href="/console/gateways"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`#managed-by`, chromedp.ByQuery),
		)).To(Succeed())
		screenshotTo(tab, filepath.Join(outDir, "desktop-15-gateways-managed.png"))
		expectAccessible(tab, "gateways, managed elsewhere")
	})
})
