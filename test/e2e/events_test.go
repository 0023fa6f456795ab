// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"errors"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// The events API (docs/api.md, Events) against the real manager and apiserver: a settled
// payment's event is listed with the body its receiver got, and redelivered to that receiver
// with the same id, once per Idempotency-Key; another merchant cannot see or redeliver it.
var _ = Describe("Events API", func() {
	It("lists a settled payment's event and redelivers it to the real receiver with the same id", func() {
		ns := newNamespace()
		createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.Simulation = paygatev1.SimulationSandboxAndProduction })
		duka := createMerchant(ns, "duka")
		soko := createMerchant(ns, "soko")
		rcv := newReceiver()
		_, err := duka.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "10000", CurrencyCode: "TZS", RefTrx: uniqueName("order"), PaymentMode: "push",
			CustomerPhone: "+255712345678", CustomerName: "Asha", CustomerEmail: "asha@example.com", WebhookURL: rcv.url(),
		}, "")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return len(rcv.requests()) }).Should(Equal(1))
		first := rcv.requests()[0]
		verifier := paygate.WebhookVerifier{Secret: webhookSecret(duka.merchant)}
		sent, err := verifier.Verify(first.header, first.body)
		Expect(err).NotTo(HaveOccurred())
		Expect(sent.Type).To(Equal("payment.completed"))

		By("listing the event with the exact body the receiver got")
		var listed paygate.Event
		Eventually(func(g Gomega) {
			page, err := duka.sandbox.ListEvents(ctx, paygate.EventListOptions{Type: "payment.completed"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(page.Data).To(HaveLen(1))
			listed = page.Data[0]
			g.Expect(listed.Delivery.Status).To(Equal("Delivered"))
			g.Expect(page.Pagination.HasMore).To(BeFalse())
			g.Expect(page.Pagination.NextAfter).To(Equal(sent.ID))
		}).Should(Succeed())
		Expect(listed.ID).To(Equal(sent.ID))
		Expect(listed.Payload).To(MatchJSON(first.body))
		Expect(listed.Delivery.Attempts).To(Equal(1))
		page, err := duka.sandbox.ListEvents(ctx, paygate.EventListOptions{After: sent.ID})
		Expect(err).NotTo(HaveOccurred())
		Expect(page.Data).To(BeEmpty())
		Expect(page.Pagination.NextAfter).To(Equal(sent.ID))

		By("redelivering it: the receiver gets the same event a second time")
		ev, err := duka.sandbox.RedeliverEvent(ctx, sent.ID, "redeliver-"+sent.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(ev.ID).To(Equal(sent.ID))
		Eventually(func() int { return len(rcv.requests()) }, "30s").Should(Equal(2))
		second := rcv.requests()[1]
		again, err := verifier.Verify(second.header, second.body)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.ID).To(Equal(sent.ID))
		Expect(second.body).To(MatchJSON(first.body))
		Eventually(func(g Gomega) {
			page, err := duka.sandbox.ListEvents(ctx, paygate.EventListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(page.Data).To(HaveLen(1))
			g.Expect(page.Data[0].Delivery.Status).To(Equal("Delivered"))
			g.Expect(page.Data[0].Delivery.Attempts).To(Equal(2))
		}).Should(Succeed())

		By("not redelivering again when the same request is replayed")
		_, err = duka.sandbox.RedeliverEvent(ctx, sent.ID, "redeliver-"+sent.ID)
		Expect(err).NotTo(HaveOccurred())
		Consistently(func() int { return len(rcv.requests()) }, "3s").Should(Equal(2))

		By("answering another merchant that the event does not exist")
		_, err = soko.sandbox.RedeliverEvent(ctx, sent.ID, "")
		var apiErr *paygate.Error
		Expect(errors.As(err, &apiErr)).To(BeTrue(), "%v", err)
		Expect(apiErr.StatusCode).To(Equal(http.StatusNotFound))
		_, err = soko.sandbox.ListEvents(ctx, paygate.EventListOptions{After: sent.ID})
		Expect(errors.As(err, &apiErr)).To(BeTrue(), "%v", err)
		Expect(apiErr.StatusCode).To(Equal(http.StatusNotFound))
		sokoPage, err := soko.sandbox.ListEvents(ctx, paygate.EventListOptions{Since: time.Now().Add(-time.Hour)})
		Expect(err).NotTo(HaveOccurred())
		Expect(sokoPage.Data).To(BeEmpty())
	})
})
