// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/consoleauth"
	"github.com/paygate/paygate/pkg/paygate"
)

// Payouts from the console (docs/console.md, Payouts): a finance user previews a payout (the API's
// quote), confirms it with the second factor asked again, and the API's own payout is made once;
// without a code, with a wrong one or with a code already used nothing is paid; a developer cannot
// pay out.
var _ = Describe("The merchant console's payouts", func() {
	It("pays out after a preview and the second factor again, once, for owners and finance users only", func() {
		ns := newNamespace()
		createGateway("TZS", func(g *paygatev1.Gateway) {
			g.Spec.Payouts = &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: "1.5", Fixed: "100"}}
		})
		shop := payoutMerchant(ns, "payout-shop", "")
		fund(shop, "100000")
		financeUser := invite(shop.merchant, "payout-finance@shop.example", paygatev1.ConsoleFinance)
		finance := newConsoleClient(baseURL)
		finance.signUp(financeUser)
		dev := newConsoleClient(baseURL)
		dev.signUp(invite(shop.merchant, "payout-dev@shop.example", paygatev1.ConsoleDeveloper))
		payouts := func() []paygate.Payout {
			list, err := shop.sandbox.ListPayouts(ctx, paygate.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
			return list.Data
		}

		status, _, _ := dev.get("/console/payouts/new?env=sandbox")
		Expect(status).To(Equal(http.StatusForbidden))
		status, _, _ = dev.post("/console/payouts/preview?env=sandbox", url.Values{"csrf": {dev.csrf()}, "amount": {"5000"}, "currency": {"TZS"}})
		Expect(status).To(Equal(http.StatusForbidden))

		By("the preview: the API's quote, and the second factor asked")
		status, _, body := finance.get("/console/payouts/new?env=sandbox")
		Expect(status).To(Equal(http.StatusOK))
		status, _, body = finance.post("/console/payouts/preview?env=sandbox", url.Values{"csrf": {finance.csrf()}, "amount": {"5000"}, "currency": {"TZS"}})
		Expect(status).To(Equal(http.StatusOK), body)
		Expect(body).To(ContainSubstring(`id="quote-fee"`))
		Expect(body).To(ContainSubstring(`id="payout-code"`))
		Expect(body).To(ContainSubstring(strings.TrimPrefix(string(shop.merchant.Spec.SettlementNumber), "+")), "where it goes")
		key := regexp.MustCompile(`name="key" value="([^"]+)"`).FindStringSubmatch(body)[1]
		Expect(payouts()).To(BeEmpty(), "a preview pays nothing")

		confirm := func(code string) (int, string, string) {
			return finance.post("/console/payouts/create?env=sandbox", url.Values{"csrf": {finance.csrf()}, "amount": {"5000"},
				"currency": {"TZS"}, "key": {key}, "code": {code}})
		}
		By("no code, a wrong code: nothing paid")
		status, _, _ = confirm("")
		Expect(status).To(Equal(http.StatusUnauthorized))
		status, _, _ = confirm("000000")
		Expect(status).To(Equal(http.StatusUnauthorized))
		Expect(payouts()).To(BeEmpty())

		By("the code of the next step: one payout")
		code, err := consoleauth.TOTPCode(financeUser.totp, time.Now().Add(30*time.Second))
		Expect(err).NotTo(HaveOccurred())
		status, loc, body := confirm(code)
		Expect(status).To(Equal(http.StatusSeeOther), body)
		Expect(loc).To(HavePrefix("/console/payouts?env=sandbox&created="))
		made := payouts()
		Expect(made).To(HaveLen(1))
		Expect(made[0].ID).To(Equal(strings.TrimPrefix(loc, "/console/payouts?env=sandbox&created=")))

		By("the same code again: refused, still one payout")
		status, _, _ = confirm(code)
		Expect(status).To(Equal(http.StatusUnauthorized))
		Expect(payouts()).To(HaveLen(1))

		By("more than the balance: the API's words on the page, nothing paid")
		status, _, body = finance.post("/console/payouts/preview?env=sandbox", url.Values{"csrf": {finance.csrf()}, "amount": {"0"}, "currency": {"TZS"}})
		Expect(status).To(Equal(http.StatusUnprocessableEntity))
		Expect(body).To(ContainSubstring(`id="form-error"`))
		Expect(payouts()).To(HaveLen(1))
	})
})
