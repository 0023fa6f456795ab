// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/pkg/paygate"
)

// The default charging window of a plan (docs/billing.md, Charging window): scheduled charges
// prompt the customer only from 08:00 (included) to 20:00 (excluded) in Dar es Salaam.
const (
	windowZone  = "Africa/Dar_es_Salaam"
	windowStart = 8 * time.Hour
	windowEnd   = 20 * time.Hour
)

// insufficientFundsPhone is the sandbox number whose every charge fails with INSUFFICIENT_FUNDS
// (docs/sandbox.md).
const insufficientFundsPhone = "+255711000001"

// parseRecordTime reads a time of an API record.
func parseRecordTime(s *string) time.Time {
	ExpectWithOffset(1, s).NotTo(BeNil())
	t, err := time.Parse(time.RFC3339Nano, *s)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return t
}

// expectInChargingWindow checks that t, a time on a subscription's clock, is inside the default
// charging window.
func expectInChargingWindow(t time.Time) {
	loc, err := time.LoadLocation(windowZone)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	local := t.In(loc)
	sinceMidnight := local.Sub(time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc))
	ExpectWithOffset(1, sinceMidnight).To(And(BeNumerically(">=", windowStart), BeNumerically("<", windowEnd)),
		"%s is outside the charging window", local)
}

// invoiceOf is the id of a subscription's invoice for period (docs/billing.md, Names and ids).
func invoiceOf(sub *paygate.Subscription, period int) string {
	return fmt.Sprintf("inv-%s-%d", strings.TrimPrefix(sub.ID, "sub_"), period)
}

// subscriptionEventsFor and invoiceEventsFor keep the events of one subscription.
func subscriptionEventsFor(all []*events.SubscriptionData, subID string) []*events.SubscriptionData {
	var out []*events.SubscriptionData
	for _, e := range all {
		if e.SubscriptionID == subID {
			out = append(out, e)
		}
	}
	return out
}

func invoiceEventsFor(all []*events.InvoiceData, subID string) []*events.InvoiceData {
	var out []*events.InvoiceData
	for _, e := range all {
		if e.SubscriptionID == subID {
			out = append(out, e)
		}
	}
	return out
}

// Billing driven by the sandbox test clock through the REST API alone, with the plan's default
// charging window: every advance is computed from the times the API returns
// (docs/billing.md, Test clock).
var _ = Describe("Billing flow with the test clock and the default charging window", func() {
	var (
		rcv  *receiver
		shop *merchantFixture
		plan *paygate.Plan
	)

	BeforeEach(func() {
		ns := newNamespace()
		createGateway("TZS")
		// The merchant's default sandbox URL answers nothing: events reach rcv only through the
		// subscription's own webhook_url.
		shop = createMerchant(ns, "shop")
		rcv = newReceiver()
		var err error
		plan, err = shop.sandbox.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(plan.ChargingWindow).To(Equal(paygate.PlanChargingWindow{Start: "08:00", End: "20:00", TimeZone: windowZone}))
	})

	subscribeWithHooks := func(phone string) *paygate.Subscription {
		sub, err := shop.sandbox.CreateSubscription(ctx, paygate.SubscriptionRequest{
			PlanCode: "gold-monthly", CustomerPhone: phone, TermsShown: goldTerms, WebhookURL: rcv.url(),
		}, "")
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		ExpectWithOffset(1, sub.WebhookURL).To(Equal(rcv.url()))
		ExpectWithOffset(1, sub.Status).To(Equal("pending"))
		return sub
	}

	// awaitActive waits until the first invoice of sub is paid and the subscription confirmed.
	awaitActive := func(sub *paygate.Subscription) *paygate.Subscription {
		Eventually(func(g Gomega) {
			got, err := shop.sandbox.GetSubscription(ctx, sub.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status).To(Equal("active"))
			g.Expect(got.ConfirmedAt).NotTo(BeNil())
			g.Expect(got.CurrentPeriod).To(HaveValue(Equal(1)))
			g.Expect(got.NextChargeAt).NotTo(BeNil())
			sub = got
		}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		return sub
	}

	It("pays the first charge, then renews in the charging window when the clock reaches the next period", func() {
		sub := awaitActive(subscribeWithHooks("0712345678"))
		Expect(sub.ConsecutiveFailures).To(BeZero())
		Expect(sub.LatestInvoice).To(HaveValue(Equal(invoiceOf(sub, 1))))

		By("scheduling the renewal at the next period's start, moved into the charging window")
		periodEnd, nextCharge := parseRecordTime(sub.CurrentPeriodEnd), parseRecordTime(sub.NextChargeAt)
		Expect(nextCharge).NotTo(BeTemporally("<", periodEnd))
		Expect(nextCharge.Sub(periodEnd)).To(BeNumerically("<", 24*time.Hour))
		expectInChargingWindow(nextCharge)

		By("sending subscription.created, invoice.created and invoice.paid, signed, to the subscription's webhook_url")
		Eventually(func(g Gomega) {
			g.Expect(subscriptionEventsFor(billingEvents[events.SubscriptionData](rcv, shop.merchant, "subscription.created"), sub.ID)).To(HaveLen(1))
			g.Expect(invoiceEventsFor(billingEvents[events.InvoiceData](rcv, shop.merchant, "invoice.created"), sub.ID)).
				To(ConsistOf(HaveField("InvoiceID", invoiceOf(sub, 1))))
			g.Expect(invoiceEventsFor(billingEvents[events.InvoiceData](rcv, shop.merchant, "invoice.paid"), sub.ID)).
				To(ConsistOf(And(HaveField("InvoiceID", invoiceOf(sub, 1)), HaveField("Status", "paid"))))
		}).WithTimeout(2 * time.Minute).Should(Succeed())

		By("advancing the clock to the renewal charge: invoice 2 is opened and paid")
		advanced := advanceTo(shop.sandbox, sub, *sub.NextChargeAt)
		Expect(advanced.TestClockOffsetSeconds).To(BeNumerically(">=", 28*86400))
		var invoices *paygate.InvoiceList
		Eventually(func(g Gomega) {
			got, err := shop.sandbox.GetSubscription(ctx, sub.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status).To(Equal("active"))
			g.Expect(got.CurrentPeriod).To(HaveValue(Equal(2)))
			g.Expect(got.LatestInvoice).To(HaveValue(Equal(invoiceOf(sub, 2))))
			var err2 error
			invoices, err2 = shop.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Subscription: sub.ID})
			g.Expect(err2).NotTo(HaveOccurred())
			g.Expect(invoices.Data).To(HaveLen(2))
			g.Expect(invoices.Data).To(HaveEach(HaveField("Status", "paid")))
		}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		renewal, first := invoices.Data[0], invoices.Data[1] // newest first
		Expect(first.ID).To(Equal(invoiceOf(sub, 1)))
		Expect(renewal.ID).To(Equal(invoiceOf(sub, 2)))
		Expect([]int{first.Period, renewal.Period}).To(Equal([]int{1, 2}))
		Expect(renewal.PeriodStart).To(Equal(first.PeriodEnd), "consecutive periods")
		Expect(first.PeriodEnd).To(Equal(*sub.CurrentPeriodEnd))
		Expect(renewal.Amount.String()).To(Equal("15000.00"))
		Expect(renewal.Attempts).To(Equal(1))
		Expect(renewal.PaidTrxID).NotTo(BeNil())
		Expect(*renewal.PaidTrxID).NotTo(Equal(*first.PaidTrxID))
		// Charged when due, not before: the settlement comes a few seconds after the prompt.
		Expect(parseRecordTime(renewal.PaidAt)).NotTo(BeTemporally("<", nextCharge))
		charge, err := shop.sandbox.GetPayment(ctx, *renewal.PaidTrxID)
		Expect(err).NotTo(HaveOccurred())
		Expect(charge.Status).To(Equal("success"))
		Expect(charge.MerchantRef).To(Equal(renewal.ID))
		Eventually(func(g Gomega) {
			g.Expect(invoiceEventsFor(billingEvents[events.InvoiceData](rcv, shop.merchant, "invoice.created"), sub.ID)).
				To(ContainElement(HaveField("InvoiceID", invoiceOf(sub, 2))))
			g.Expect(invoiceEventsFor(billingEvents[events.InvoiceData](rcv, shop.merchant, "invoice.paid"), sub.ID)).
				To(ContainElement(And(HaveField("InvoiceID", invoiceOf(sub, 2)), HaveField("TrxID", *renewal.PaidTrxID))))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
	})

	It("retries a customer who cannot pay inside the charging window until suspended, then charges no more", func() {
		sub := subscribeWithHooks(insufficientFundsPhone)
		maxFailures := plan.Dunning.MaxFailures
		Expect(maxFailures).To(Equal(4))

		for failures := 1; failures < maxFailures; failures++ {
			By(fmt.Sprintf("failing charge %d and scheduling the retry inside the window", failures))
			Eventually(func(g Gomega) {
				got, err := shop.sandbox.GetSubscription(ctx, sub.ID)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got.ConsecutiveFailures).To(Equal(failures))
				g.Expect(got.NextChargeAt).NotTo(BeNil())
				sub = got
			}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
			Expect(sub.Status).To(Equal("pending"), "never confirmed")
			retryAt := parseRecordTime(sub.NextChargeAt)
			expectInChargingWindow(retryAt)
			Expect(retryAt).To(BeTemporally(">", subscriptionClock(sub)))
			sub = advanceTo(shop.sandbox, sub, *sub.NextChargeAt)
		}

		By("suspending at the plan's maximum of failures")
		Eventually(func(g Gomega) {
			got, err := shop.sandbox.GetSubscription(ctx, sub.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status).To(Equal("suspended"))
			sub = got
		}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(sub.ConsecutiveFailures).To(Equal(maxFailures))
		Expect(sub.SuspendedAt).NotTo(BeNil())
		Expect(sub.NextChargeAt).To(BeNil())
		list, err := shop.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Subscription: sub.ID})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Data).To(HaveLen(1))
		Expect(list.Data[0].Status).To(Equal("payment_failed"))
		Expect(list.Data[0].FailureReason).To(Equal("INSUFFICIENT_FUNDS"))
		Expect(list.Data[0].Attempts).To(Equal(maxFailures))
		Expect(list.Data[0].NextAttemptAt).To(BeNil())
		Eventually(func(g Gomega) {
			failed := invoiceEventsFor(billingEvents[events.InvoiceData](rcv, shop.merchant, "invoice.payment_failed"), sub.ID)
			g.Expect(failed).To(HaveLen(maxFailures))
			g.Expect(failed).To(HaveEach(And(HaveField("InvoiceID", invoiceOf(sub, 1)), HaveField("Reason", "INSUFFICIENT_FUNDS"))))
			g.Expect(subscriptionEventsFor(billingEvents[events.SubscriptionData](rcv, shop.merchant, "subscription.suspended"), sub.ID)).
				To(ConsistOf(And(HaveField("Reason", "INSUFFICIENT_FUNDS"), HaveField("ConsecutiveFailures", int32(maxFailures)))))
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		charges, err := shop.sandbox.ListPayments(ctx, paygate.ListOptions{MerchantRef: invoiceOf(sub, 1)})
		Expect(err).NotTo(HaveOccurred())
		Expect(charges.Data).To(HaveLen(maxFailures))

		By("charging nothing more when the clock moves past the next period")
		sub, err = shop.sandbox.AdvanceTestClock(ctx, sub.ID, 40*86400)
		Expect(err).NotTo(HaveOccurred())
		Consistently(func(g Gomega) {
			got, err := shop.sandbox.GetSubscription(ctx, sub.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status).To(Equal("suspended"))
			g.Expect(got.NextChargeAt).To(BeNil())
			list, err := shop.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Subscription: sub.ID})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Data).To(HaveLen(1))
			g.Expect(list.Data[0].Attempts).To(Equal(maxFailures))
			charges, err := shop.sandbox.ListPayments(ctx, paygate.ListOptions{MerchantRef: invoiceOf(sub, 1)})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(charges.Data).To(HaveLen(maxFailures))
		}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(subscriptionEventsFor(billingEvents[events.SubscriptionData](rcv, shop.merchant, "subscription.suspended"), sub.ID)).To(HaveLen(1))
	})

	It("cancels an active subscription at its period's end: no renewal invoice, subscription.cancelled", func() {
		sub := awaitActive(subscribeWithHooks("0712345679"))

		By("cancelling at the period's end: still active until then")
		got, err := shop.sandbox.CancelSubscription(ctx, sub.ID, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.CancelAtPeriodEnd).To(BeTrue())
		Expect(got.Status).To(Equal("active"))

		By("advancing the clock past the period's end")
		advanceTo(shop.sandbox, sub, *sub.CurrentPeriodEnd)
		Eventually(func(g Gomega) {
			got, err := shop.sandbox.GetSubscription(ctx, sub.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status).To(Equal("cancelled"))
			g.Expect(got.CancelledAt).NotTo(BeNil())
			g.Expect(got.NextChargeAt).To(BeNil())
			g.Expect(subscriptionEventsFor(billingEvents[events.SubscriptionData](rcv, shop.merchant, "subscription.cancelled"), sub.ID)).
				To(ConsistOf(HaveField("Status", "cancelled")))
		}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("opening no invoice for the next period, even a period later")
		_, err = shop.sandbox.AdvanceTestClock(ctx, sub.ID, 31*86400)
		Expect(err).NotTo(HaveOccurred())
		Consistently(func(g Gomega) {
			list, err := shop.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Subscription: sub.ID})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Data).To(ConsistOf(And(HaveField("ID", invoiceOf(sub, 1)), HaveField("Status", "paid"))))
			charges, err := shop.sandbox.ListPayments(ctx, paygate.ListOptions{MerchantRef: invoiceOf(sub, 2)})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(charges.Data).To(BeEmpty())
		}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(invoiceEventsFor(billingEvents[events.InvoiceData](rcv, shop.merchant, "invoice.created"), sub.ID)).
			To(ConsistOf(HaveField("InvoiceID", invoiceOf(sub, 1))))
	})
})
