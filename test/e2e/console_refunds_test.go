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
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// Refunds from the console (docs/console.md, Refunds): a finance user refunds part of a settled
// payment from its page through the API's own rules; the same form sent twice is one refund; a
// refund of more than is left is said on the page and writes nothing; a developer cannot refund.
var _ = Describe("The merchant console's refunds", func() {
	It("refunds from a payment's page, once per form, within what is left, for owners and finance users only", func() {
		ns := newNamespace()
		createGateway("TZS")
		rcv := newReceiver()
		shop := payoutMerchant(ns, "refund-shop", rcv.url())
		trx := settledPayment(shop.sandbox, "TZS", "10000", "0712345678")
		settledPayment(shop.sandbox, "TZS", "10000", "0712345679")
		Eventually(func() string { return availableBalance(shop.sandbox).StringFixed(2) }).
			WithTimeout(30 * time.Second).Should(Equal("19500.00"))
		finance := newConsoleClient(baseURL)
		finance.signUp(invite(shop.merchant, "refund-finance@shop.example", paygatev1.ConsoleFinance))
		dev := newConsoleClient(baseURL)
		dev.signUp(invite(shop.merchant, "refund-dev@shop.example", paygatev1.ConsoleDeveloper))
		page := "/console/payments/" + trx + "?env=sandbox"
		keyOf := regexp.MustCompile(`name="key" value="([^"]+)"`)
		refunds := func() []paygatev1.Refund {
			var list paygatev1.RefundList
			Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			return list.Items
		}

		status, _, body := dev.get(page)
		Expect(status).To(Equal(http.StatusOK))
		Expect(body).NotTo(ContainSubstring(`id="refund-form"`), "a developer has no refund form")
		status, _, _ = dev.post("/console/payments/"+trx+"/refund?env=sandbox", url.Values{"csrf": {dev.csrf()}, "amount": {"1000"},
			"key": {"console-aaaaaaaaaaaaaaaaaaaaaaaa"}})
		Expect(status).To(Equal(http.StatusForbidden))
		Expect(refunds()).To(BeEmpty())

		By("a finance user refunds 4000; the same form sent again is the same refund")
		status, _, body = finance.get(page)
		Expect(status).To(Equal(http.StatusOK))
		Expect(body).To(ContainSubstring(`id="refund-form"`))
		key := keyOf.FindStringSubmatch(body)[1]
		form := url.Values{"csrf": {finance.csrf()}, "amount": {"4000"}, "reason": {"one item out of stock"}, "key": {key}}
		status, loc, body := finance.post("/console/payments/"+trx+"/refund?env=sandbox", form)
		Expect(status).To(Equal(http.StatusSeeOther), body)
		Expect(loc).To(HavePrefix("/console/payments/" + trx + "?env=sandbox&refunded="))
		status, again, _ := finance.post("/console/payments/"+trx+"/refund?env=sandbox", form)
		Expect(status).To(Equal(http.StatusSeeOther))
		Expect(again).To(Equal(loc), "the same form, the same refund")
		Expect(refunds()).To(HaveLen(1))
		id := strings.TrimPrefix(loc, "/console/payments/"+trx+"?env=sandbox&refunded=")
		Expect(string(awaitRefund(shop.sandbox, id).Amount)).To(Equal("4000.00"))
		_, _, body = finance.get(loc)
		Expect(body).To(ContainSubstring(`id="refunded"`))

		By("more than what is left: said on the page, nothing written")
		key = keyOf.FindStringSubmatch(body)[1]
		status, _, body = finance.post("/console/payments/"+trx+"/refund?env=sandbox",
			url.Values{"csrf": {finance.csrf()}, "amount": {"7000"}, "key": {key}})
		Expect(status).To(Equal(http.StatusUnprocessableEntity))
		Expect(body).To(ContainSubstring(`id="refund-error"`))
		Expect(body).To(ContainSubstring("more than what is left"))
		Expect(refunds()).To(HaveLen(1))

		By("a form without a valid key, or of another merchant's payment")
		status, _, _ = finance.post("/console/payments/"+trx+"/refund?env=sandbox", url.Values{"csrf": {finance.csrf()}, "amount": {"100"}, "key": {"x"}})
		Expect(status).To(Equal(http.StatusUnprocessableEntity))
		other := payoutMerchant(ns, "refund-other", rcv.url())
		otherTrx := settledPayment(other.sandbox, "TZS", "10000", "0712345670")
		status, _, _ = finance.post("/console/payments/"+otherTrx+"/refund?env=sandbox",
			url.Values{"csrf": {finance.csrf()}, "amount": {"100"}, "key": {"console-bbbbbbbbbbbbbbbbbbbbbbbb"}})
		Expect(status).To(Equal(http.StatusNotFound))
		Expect(refunds()).To(HaveLen(1))
		list, err := other.sandbox.ListRefunds(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Data).To(BeEmpty())
	})
})
