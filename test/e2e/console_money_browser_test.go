// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/consoleauth"
	"github.com/paygate/paygate/pkg/paygate"
)

// browserAs is a Chromium tab holding c's session (signed in, second factor included, over HTTP),
// or nil and a skipped spec when Chromium is missing outside CI.
func browserAs(c *consoleClient) context.Context {
	GinkgoHelper()
	chromium := requireChromium()
	tab := browser(chromium, 1280, 900)
	base, _ := url.Parse(baseURL)
	for _, ck := range c.http.Jar.Cookies(base) {
		Expect(chromedp.Run(tab, network.SetCookie(ck.Name, ck.Value).WithURL(baseURL).WithHTTPOnly(true))).To(Succeed())
	}
	return tab
}

// Money from the console in a real browser (docs/console.md, Payouts, Refunds, Gateways): a
// finance user pays out with the second factor asked again and refunds a payment from its page;
// an owner chooses the checkout's gateways and the next checkout offers only them.
var _ = Describe("The merchant console's money pages in a browser", func() {
	It("pays out with the second factor and refunds a payment, by clicking", func() {
		ns := newNamespace()
		createGateway("TZS", func(g *paygatev1.Gateway) {
			g.Spec.Payouts = &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: "1.5", Fixed: "100"}}
		})
		shop := payoutMerchant(ns, "browser-money", "")
		fund(shop, "100000") // first: it waits for the balance to be what it was plus this payment
		trx := settledPayment(shop.sandbox, "TZS", "10000", "0712345678")
		financeUser := invite(shop.merchant, "browser-finance@shop.example", paygatev1.ConsoleFinance)
		finance := newConsoleClient(baseURL)
		finance.signUp(financeUser)
		tab := browserAs(finance)
		outDir := filepath.Join("..", "output", "console")
		Expect(os.MkdirAll(outDir, 0o755)).To(Succeed())

		By("previewing a payout from the overview, then confirming it with a fresh code")
		Expect(chromedp.Run(tab,
			chromedp.Navigate(baseURL+"/console/?env=sandbox"),
			chromedp.WaitVisible(`#pay-out`, chromedp.ByQuery),
			chromedp.Click(`#pay-out`, chromedp.ByQuery),
			chromedp.WaitVisible(`#payout-amount`, chromedp.ByQuery),
		)).To(Succeed(), "the overview's Pay out link")
		Expect(chromedp.Run(tab,
			chromedp.SetValue(`#payout-amount`, "5000", chromedp.ByQuery),
			chromedp.SetValue(`#payout-currency`, "TZS", chromedp.ByQuery),
			chromedp.Click(`#preview-payout`, chromedp.ByQuery),
			chromedp.WaitVisible(`#quote-fee`, chromedp.ByQuery),
		)).To(Succeed(), "the preview")
		Expect(textOf(tab, `#quote-amount`)).To(ContainSubstring("5000"))
		expectAccessible(tab, "the payout's preview")
		screenshotTo(tab, filepath.Join(outDir, "desktop-20-payout-preview.png"))
		code, err := consoleauth.TOTPCode(financeUser.totp, time.Now().Add(30*time.Second))
		Expect(err).NotTo(HaveOccurred())
		Expect(chromedp.Run(tab,
			chromedp.SendKeys(`#payout-code`, code, chromedp.ByQuery),
			chromedp.Click(`#confirm-payout`, chromedp.ByQuery),
			chromedp.WaitVisible(`table`, chromedp.ByQuery),
		)).To(Succeed())
		var loc string
		Expect(chromedp.Run(tab, chromedp.Location(&loc))).To(Succeed())
		Expect(loc).To(ContainSubstring("/console/payouts?env=sandbox&created="))
		payouts, err := shop.sandbox.ListPayouts(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(payouts.Data).To(HaveLen(1))
		Expect(string(payouts.Data[0].Amount)).To(HavePrefix("5000"))

		By("refunding part of a payment from its page")
		Expect(chromedp.Run(tab,
			chromedp.Navigate(baseURL+"/console/payments/"+trx+"?env=sandbox"),
			chromedp.WaitVisible(`#refund-amount`, chromedp.ByQuery),
			chromedp.SetValue(`#refund-amount`, "4000", chromedp.ByQuery),
			chromedp.SetValue(`#refund-reason`, "one item out of stock", chromedp.ByQuery),
			chromedp.Click(`#refund`, chromedp.ByQuery),
			chromedp.WaitVisible(`#refunded`, chromedp.ByQuery),
		)).To(Succeed())
		expectAccessible(tab, "a payment after its refund was asked")
		screenshotTo(tab, filepath.Join(outDir, "desktop-21-refund-asked.png"))
		refunds, err := shop.sandbox.ListRefunds(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(refunds.Data).To(HaveLen(1))
		Expect(string(refunds.Data[0].Amount)).To(HavePrefix("4000"))
		Expect(textOf(tab, `#refunded`)).To(ContainSubstring(refunds.Data[0].ID))
	})

	It("lets an owner choose the checkout's gateways by clicking, and the next checkout offers only them", func() {
		ns := newNamespace()
		first := createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.DisplayName = "Alpha Pesa" })
		second := createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.DisplayName = "Beta Money" })
		shop := createMerchant(ns, "browser-gw")
		owner := newConsoleClient(baseURL)
		owner.signUp(invite(shop.merchant, "browser-gw-owner@shop.example", paygatev1.ConsoleOwner))
		tab := browserAs(owner)
		Expect(chromedp.Run(tab,
			chromedp.Navigate(baseURL+"/console/gateways"),
			chromedp.WaitVisible(`#gateways-form`, chromedp.ByQuery),
			// Untick the first gateway, keep the second.
			chromedp.Click(`input[name="gateway"][value="`+string(first.Code())+`"]`, chromedp.ByQuery),
			chromedp.Click(`#save-gateways`, chromedp.ByQuery),
			chromedp.WaitVisible(`#saved`, chromedp.ByQuery),
		)).To(Succeed())
		expectAccessible(tab, "the gateways, saved")
		Eventually(func(g Gomega) {
			res, err := shop.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "5000", CurrencyCode: "TZS",
				RefTrx: uniqueName("order"), PaymentMode: "hosted", CustomerPhone: "+255712345678"}, "")
			g.Expect(err).NotTo(HaveOccurred())
			link, err := url.Parse(res.Data.CheckoutURL)
			g.Expect(err).NotTo(HaveOccurred())
			var codes []string
			g.Expect(chromedp.Run(tab, chromedp.Navigate(baseURL+link.RequestURI()), chromedp.WaitVisible(`#pay`, chromedp.ByQuery),
				chromedp.Evaluate(`Array.from(document.querySelectorAll("input[name=gateway]")).map(e => e.value)`, &codes))).To(Succeed())
			g.Expect(codes).To(Equal([]string{string(second.Code())}), "the checkout offers the chosen gateway only")
		}).Should(Succeed())
	})
})
