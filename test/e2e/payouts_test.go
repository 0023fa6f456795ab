// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/apiserver"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/pkg/paygate"
)

// settlementNumber is the payout destination of the suite's merchants.
const settlementNumber = "+255712345678"

// payoutMerchant is an approved, KYB-approved merchant with a settlement number whose sandbox
// webhooks go to webhookURL (the default one when empty); mods adjust it further.
func payoutMerchant(ns, name, webhookURL string, mods ...func(*paygatev1.Merchant)) *merchantFixture {
	return createMerchant(ns, name, append([]func(*paygatev1.Merchant){func(m *paygatev1.Merchant) {
		m.Spec.SettlementNumber = settlementNumber
		if webhookURL != "" {
			m.Spec.WebhookURLs.Sandbox = webhookURL
		}
	}}, mods...)...)
}

// fund settles a sandbox push payment of amount for the merchant and waits until the balance shows
// it: the gateway keeps 2.5 %, so the balance grows by 97.5 % of amount. It returns the available
// balance afterwards.
func fund(f *merchantFixture, amount string) money.Amount {
	before := availableBalance(f.sandbox)
	created, err := f.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{
		PaymentAmount: json.Number(amount), CurrencyCode: "TZS", RefTrx: uniqueName("funding"),
		PaymentMode: "push", CustomerPhone: settlementNumber,
	}, "")
	Expect(err).NotTo(HaveOccurred())
	var net money.Amount
	Eventually(func(g Gomega) {
		v, err := f.sandbox.VerifyPayment(ctx, created.TrxID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.Status).To(Equal("success"))
		net = money.MustParseAmount(v.NetAmount.String())
	}).WithPolling(time.Second).Should(Succeed())
	want := before.Add(net)
	// Polled gently: the merchant's API rate limit (120 a minute) holds while a loaded machine
	// takes its time to settle.
	Eventually(func(g Gomega) string { return availableInG(g, f.sandbox, "TZS").StringFixed(2) }).
		WithPolling(time.Second).Should(Equal(want.StringFixed(2)))
	return want
}

// availableBalance is the TZS balance GET /api/v1/balance reports.
func availableBalance(c *paygate.Client) money.Amount { return availableIn(c, "TZS") }

// payoutsIn lists the Payout objects stored in ns.
func payoutsIn(ns string) []paygatev1.Payout {
	var list paygatev1.PayoutList
	ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// awaitPayout waits until the payout is terminal through the API and returns it.
func awaitPayout(c *paygate.Client, id string) *paygate.Payout {
	var p *paygate.Payout
	EventuallyWithOffset(1, func(g Gomega) {
		var err error
		p, err = c.GetPayout(ctx, id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Status).To(BeElementOf("success", "failed"))
	}).WithPolling(250 * time.Millisecond).Should(Succeed())
	return p
}

// payoutEvent waits for the one webhook of type for payout id at rcv and verifies it.
func payoutEvent(rcv *receiver, m *paygatev1.Merchant, eventType, id string) (*paygate.WebhookEvent, *paygate.Payout) {
	verifier := paygate.WebhookVerifier{Secret: webhookSecret(m)}
	var (
		event *paygate.WebhookEvent
		data  *paygate.Payout
	)
	EventuallyWithOffset(1, func(g Gomega) {
		event, data = nil, nil
		for _, got := range rcv.requests() {
			if got.header.Get("X-Paygate-Event") != eventType {
				continue
			}
			e, err := verifier.Verify(got.header, got.body)
			g.Expect(err).NotTo(HaveOccurred())
			d, err := e.PayoutData()
			g.Expect(err).NotTo(HaveOccurred())
			if d.ID == id {
				g.Expect(event).To(BeNil(), "one %s event for payout %s", eventType, id)
				event, data = e, d
			}
		}
		g.Expect(event).NotTo(BeNil())
	}).Should(Succeed())
	return event, data
}

var _ = Describe("Payouts API", func() {
	var (
		ns   string
		gw   *paygatev1.Gateway
		duka *merchantFixture
		rcv  *receiver
	)

	BeforeEach(func() {
		ns = newNamespace()
		// The disbursing gateway of TZS: 1.5 % plus 100 per payout, at least 1000.
		gw = createGateway("TZS", func(g *paygatev1.Gateway) {
			g.Spec.DisplayName = "M-Pesa Tanzania"
			g.Spec.Payouts = &paygatev1.PayoutSchedule{
				Fees:      paygatev1.GatewayFees{Percent: "1.5", Fixed: "100"},
				MinAmount: ptr.To(paygatev1.Decimal("1000")),
			}
		})
		rcv = newReceiver()
		duka = payoutMerchant(ns, "duka", rcv.url())
	})

	It("quotes with the preview exactly what a create charges, the fee rounded half up", func() {
		fund(duka, "10000") // 9750.00 available
		// 2003 x 1.5 % = 30.045, half up 30.05, plus 100 fixed.
		req := paygate.PayoutRequest{Amount: "2003"}
		quote, err := duka.sandbox.PreviewPayout(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(quote.Amount.String()).To(Equal("2003.00"))
		Expect(quote.Fee.String()).To(Equal("130.05"))
		Expect(quote.PayableAmount.String()).To(Equal("1872.95"))
		Expect(quote.Currency).To(Equal("TZS"))
		status, body := raw(duka.sandbox, http.MethodPost, "/api/v1/payouts/preview", `{"amount":2003}`, nil)
		Expect(status).To(Equal(http.StatusOK))
		Expect(body).To(HaveKeyWithValue("payable_amount", BeNumerically("==", 1872.95)), "the quote at the top level too")
		Expect(payoutsIn(ns)).To(BeEmpty(), "a preview records nothing")

		created, err := duka.sandbox.CreatePayout(ctx, req, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(created.ID).To(MatchRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`))
		Expect(created.Status).To(Equal("pending"))
		Expect(created.Amount).To(Equal(quote.Amount))
		Expect(created.Fee).To(Equal(quote.Fee))
		Expect(created.PayableAmount).To(Equal(quote.PayableAmount))
		Expect(created.Currency).To(Equal(quote.Currency))
		Expect(created.Destination).To(Equal("+255*******78"))
		Expect(created.Environment).To(Equal("sandbox"))
		Expect(created.CreatedAt).To(MatchRegexp(microsecondUTC.String()))

		By("recording intent as a Payout object, labelled for kubectl")
		var p paygatev1.Payout
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created.ID}, &p)).To(Succeed())
		Expect(p.Labels).To(HaveKeyWithValue(paygatev1.LabelMerchant, "duka"))
		Expect(p.Labels).To(HaveKeyWithValue(paygatev1.LabelEnvironment, "sandbox"))
		Expect(string(p.Spec.Amount)).To(Equal("2003.00"))
		Expect(string(p.Spec.Fee)).To(Equal("130.05"))
		Expect(string(p.Spec.PayableAmount)).To(Equal("1872.95"))
		Expect(string(p.Spec.Destination)).To(Equal(settlementNumber))
		Expect(p.Spec.Gateway).To(Equal(paygatev1.GatewayCode(gw.Name)))
	})

	It("pays out in the sandbox to success and sends a signed payout.completed", func() {
		fund(duka, "10000")
		created, err := duka.sandbox.CreatePayout(ctx, paygate.PayoutRequest{Amount: "2003", Destination: settlementNumber, CurrencyCode: "TZS"}, "")
		Expect(err).NotTo(HaveOccurred())
		done := awaitPayout(duka.sandbox, created.ID)
		Expect(done.Status).To(Equal("success"))
		Expect(done.Reason).To(BeEmpty())
		Expect(done.Remark).To(Equal("SANDBOX_TRANSACTION"))
		Expect(done.UpdatedAt).To(MatchRegexp(microsecondUTC.String()))
		Expect(done.CreatedAt).To(Equal(created.CreatedAt))

		event, data := payoutEvent(rcv, duka.merchant, paygate.EventPayoutCompleted, created.ID)
		Expect(event.Type).To(Equal("payout.completed"))
		Expect(*data).To(Equal(*done), "the event carries the payout record GET returns")

		By("debiting the balance by the amount, fee included")
		Eventually(func() string { return availableBalance(duka.sandbox).StringFixed(2) }).Should(Equal("7747.00"))
		var p paygatev1.Payout
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created.ID}, &p)).To(Succeed())
		Expect(p.Status.Attempt).NotTo(BeNil())
		Expect(p.Status.Attempt.Reference).To(Equal(ns + "." + created.ID))
	})

	DescribeTable("ends the sandbox's magic amounts as documented, with their webhook and balance",
		func(amount, status, reason, event string) {
			fund(duka, "10000") // 9750.00 available
			created, err := duka.sandbox.CreatePayout(ctx, paygate.PayoutRequest{Amount: json.Number(amount)}, "")
			Expect(err).NotTo(HaveOccurred())
			left := money.MustParseAmount("9750")
			if status != "failed" { // a failed payout releases its amount
				left, err = left.Sub(money.MustParseAmount(amount))
				Expect(err).NotTo(HaveOccurred())
			}
			if status == "processing" { // the provider never answers: the amount stays reserved
				Eventually(func(g Gomega) {
					p, err := duka.sandbox.GetPayout(ctx, created.ID)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(p.Status).To(Equal("processing"))
				}).Should(Succeed())
				Consistently(func(g Gomega) {
					p, err := duka.sandbox.GetPayout(ctx, created.ID)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(p.Status).To(Equal("processing"))
				}, "2s", "250ms").Should(Succeed())
				Expect(availableBalance(duka.sandbox).StringFixed(2)).To(Equal(left.StringFixed(2)))
				return
			}
			done := awaitPayout(duka.sandbox, created.ID)
			Expect(done.Status).To(Equal(status))
			Expect(done.Reason).To(Equal(reason))
			Expect(done.Remark).To(Equal("SANDBOX_TRANSACTION"))

			_, data := payoutEvent(rcv, duka.merchant, event, created.ID)
			Expect(*data).To(Equal(*done), "the event carries the payout record GET returns")
			other := map[string]string{"payout.failed": "payout.completed", "payout.completed": "payout.failed"}[event]
			Expect(rcv.requests()).NotTo(ContainElement(WithTransform(func(r received) string { return r.header.Get("X-Paygate-Event") }, Equal(other))))
			Eventually(func() string { return availableBalance(duka.sandbox).StringFixed(2) }).Should(Equal(left.StringFixed(2)))
		},
		Entry("whole part ending 001: INVALID_ACCOUNT", "2001", "failed", "INVALID_ACCOUNT", paygate.EventPayoutFailed),
		Entry("whole part ending 002: PAYMENT_DECLINED", "3002.50", "failed", "PAYMENT_DECLINED", paygate.EventPayoutFailed),
		Entry("whole part ending 009: ambiguous at first, then success", "2009", "success", "", paygate.EventPayoutCompleted),
		Entry("whole part ending 004: no answer, processing", "2004", "processing", "", ""),
	)

	DescribeTable("refuses a merchant whose payout gate is closed with 403 Payout Rejected naming the gate, recording nothing",
		func(mod func(*paygatev1.Merchant), gate string) {
			shut := payoutMerchant(ns, "shut", "", mod)
			for _, route := range []string{"/api/v1/payouts/preview", "/api/v1/payouts"} {
				status, body := raw(shut.sandbox, http.MethodPost, route, `{"amount":2000}`, nil)
				Expect(status).To(Equal(http.StatusForbidden), route)
				Expect(body["error"]).To(Equal("Payout Rejected"), route)
				Expect(body["message"]).To(ContainSubstring(gate), route)
			}
			_, err := shut.sandbox.CreatePayout(ctx, paygate.PayoutRequest{Amount: "2000"}, "gate-key")
			Expect(apiError(err).Label).To(Equal("Payout Rejected"))
			Expect(payoutsIn(ns)).To(BeEmpty())
		},
		Entry("KYB not approved", func(m *paygatev1.Merchant) { m.Spec.KYBStatus = paygatev1.KYBPending }, "KYB"),
		Entry("business not approved (sandbox works for a pending business)", func(m *paygatev1.Merchant) {
			m.Spec.BusinessStatus = paygatev1.BusinessPending
		}, "approved business"),
		Entry("no settlement number", func(m *paygatev1.Merchant) { m.Spec.SettlementNumber = "" }, "settlement number"),
	)

	It("validates destination, currency_code and amount, and checks limits and the balance", func() {
		fund(duka, "10000") // 9750.00 available
		expect422 := func(body, label, field string) {
			GinkgoHelper()
			for _, route := range []string{"/api/v1/payouts/preview", "/api/v1/payouts"} {
				status, out := raw(duka.sandbox, http.MethodPost, route, body, nil)
				Expect(status).To(Equal(http.StatusUnprocessableEntity), route+" "+body+" "+fmt.Sprint(out))
				Expect(out["error"]).To(Equal(label), route+" "+body)
				Expect(out["message"]).NotTo(BeEmpty())
				if field != "" {
					Expect(out["errors"]).To(HaveKey(field), route+" "+body)
				}
			}
		}
		expect422(`{"amount":2000,"destination":"+255754000111"}`, "Validation failed", "destination")
		expect422(`{"amount":2000,"destination":"not a number"}`, "Validation failed", "destination")
		expect422(`{"amount":2000,"currency_code":"KES"}`, "Validation failed", "currency_code")
		expect422(`{"amount":2000,"currency_code":"tzs"}`, "Validation failed", "currency_code")
		expect422(`{"destination":"+255712345678"}`, "Validation failed", "amount")
		expect422(`{"amount":"lots"}`, "Validation failed", "amount")
		expect422(`{"amount":true}`, "Validation failed", "amount")
		expect422(`{"amount":0}`, "Validation failed", "amount")
		expect422(`{"amount":-2000}`, "Validation failed", "amount")
		expect422(`{"amount":"-2000"}`, "Validation failed", "amount")
		expect422(`{"amount":2000.005}`, "Validation failed", "amount")
		expect422(`[1]`, "Validation failed", "body")
		expect422(`{"amount":999.99}`, "INVALID_AMOUNT", "amount")
		// Only a create checks the balance; a preview quotes any amount within the limits.
		status, out := raw(duka.sandbox, http.MethodPost, "/api/v1/payouts", `{"amount":9750.01}`, nil)
		Expect(status).To(Equal(http.StatusUnprocessableEntity), fmt.Sprint(out))
		Expect(out["error"]).To(Equal("INSUFFICIENT_BALANCE"))
		Expect(out["errors"]).To(HaveKey("amount"))
		Expect(payoutsIn(ns)).To(BeEmpty(), "no refused request records a payout")

		By("accepting the settlement number in local form, the settlement currency and the whole balance")
		for _, body := range []string{
			`{"amount":"2000.00","destination":"0712 345 678","currency_code":"TZS"}`,
			`{"amount":7750,"destination":"+255712345678","currency_code":null}`,
		} {
			status, out := raw(duka.sandbox, http.MethodPost, "/api/v1/payouts", body, nil)
			Expect(status).To(Equal(http.StatusOK), body+" "+fmt.Sprint(out))
		}
		Expect(payoutsIn(ns)).To(HaveLen(2))
	})

	It("refuses payouts in a currency no gateway pays out", func() {
		patch := client.MergeFrom(gw.DeepCopy())
		gw.Spec.Payouts = nil
		Expect(k8s.Patch(ctx, gw, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			_, err := duka.sandbox.PreviewPayout(ctx, paygate.PayoutRequest{Amount: "2000"})
			g.Expect(err).To(HaveOccurred())
			g.Expect(apiError(err).Label).To(Equal("PAYOUT_METHOD_UNAVAILABLE"))
		}).WithPolling(250 * time.Millisecond).Should(Succeed())
	})

	It("reads payouts by id, only the caller's in the caller's environment, with lists, filters and pages", func() {
		fund(duka, "10000")
		var ids []string
		for _, amount := range []string{"1000", "1100", "1200"} {
			p, err := duka.sandbox.CreatePayout(ctx, paygate.PayoutRequest{Amount: json.Number(amount)}, "")
			Expect(err).NotTo(HaveOccurred())
			ids = append(ids, p.ID)
		}
		got, err := duka.sandbox.GetPayout(ctx, ids[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(got.ID).To(Equal(ids[0]))
		Expect(got.Amount.String()).To(Equal("1000.00"))

		By("answering 404 in the error shape for an unknown or malformed id, another merchant and the other environment")
		other := payoutMerchant(ns, "other", "")
		for _, probe := range []struct {
			c  *paygate.Client
			id string
		}{
			{duka.sandbox, "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"},
			{duka.sandbox, "not-a-uuid"},
			{duka.sandbox, strings.ToUpper(ids[0])},
			{other.sandbox, ids[0]},
			{duka.production, ids[0]},
		} {
			_, err := probe.c.GetPayout(ctx, probe.id)
			e := apiError(err)
			Expect(e.StatusCode).To(Equal(http.StatusNotFound), probe.id)
			Expect(e.Label).To(Equal("NOT_FOUND"), probe.id)
			Expect(e.Message).NotTo(BeEmpty())
		}

		By("listing newest first in pages, filtered by status")
		for _, id := range ids {
			Expect(awaitPayout(duka.sandbox, id).Status).To(Equal("success"))
		}
		Eventually(func(g Gomega) { // the list reads the apiserver's cache
			all, err := duka.sandbox.ListPayouts(ctx, paygate.ListOptions{Status: "success"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(all.Pagination.Total).To(Equal(3))
		}).WithPolling(250 * time.Millisecond).Should(Succeed())
		first, err := duka.sandbox.ListPayouts(ctx, paygate.ListOptions{Limit: 2})
		Expect(err).NotTo(HaveOccurred())
		Expect(first.Pagination).To(Equal(paygate.Pagination{Limit: 2, Offset: 0, Total: 3, Count: 2}))
		Expect([]string{first.Data[0].ID, first.Data[1].ID}).To(Equal([]string{ids[2], ids[1]}))
		rest, err := duka.sandbox.ListPayouts(ctx, paygate.ListOptions{Limit: 2, Offset: 2})
		Expect(err).NotTo(HaveOccurred())
		Expect(rest.Pagination).To(Equal(paygate.Pagination{Limit: 2, Offset: 2, Total: 3, Count: 1}))
		Expect(rest.Data[0].ID).To(Equal(ids[0]))
		Expect(rest.Data[0].Status).To(Equal("success"))
		pending, err := duka.sandbox.ListPayouts(ctx, paygate.ListOptions{Status: "pending"})
		Expect(err).NotTo(HaveOccurred())
		Expect(pending.Data).To(BeEmpty())
		Expect(pending.Pagination.Total).To(BeZero())
		for _, c := range []*paygate.Client{duka.production, other.sandbox} {
			list, err := c.ListPayouts(ctx, paygate.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(list.Data).To(BeEmpty())
		}
		status, body := raw(duka.sandbox, http.MethodGet, "/api/v1/payouts?status=paid", "", nil)
		Expect(status).To(Equal(http.StatusUnprocessableEntity))
		Expect(body["errors"]).To(HaveKey("status"))
		status, body = raw(duka.sandbox, http.MethodGet, "/api/v1/payouts?limit=0", "", nil)
		Expect(status).To(Equal(http.StatusUnprocessableEntity))
		Expect(body["errors"]).To(HaveKey("limit"))
	})

	It("replays an idempotent create and refuses the key for another body", func() {
		fund(duka, "10000")
		body := mustJSON(paygate.PayoutRequest{Amount: "3000"})
		first, err := duka.sandbox.Do(ctx, http.MethodPost, "/api/v1/payouts", body, http.Header{"Idempotency-Key": {"payout-1"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(first.StatusCode).To(Equal(http.StatusOK), string(first.Body))
		again, err := duka.sandbox.Do(ctx, http.MethodPost, "/api/v1/payouts", body, http.Header{"Idempotency-Key": {"payout-1"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(again.StatusCode).To(Equal(http.StatusOK))
		Expect(again.Body).To(MatchJSON(first.Body))
		Expect(again.Header.Get("Idempotent-Replayed")).To(Equal("true"))

		By("returning the same payout to the Go client, also once it has been paid out")
		p, err := duka.sandbox.CreatePayout(ctx, paygate.PayoutRequest{Amount: "3000"}, "payout-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(awaitPayout(duka.sandbox, p.ID).Status).To(Equal("success"))
		replayed, err := duka.sandbox.CreatePayout(ctx, paygate.PayoutRequest{Amount: "3000"}, "payout-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(replayed.ID).To(Equal(p.ID))
		Expect(payoutsIn(ns)).To(HaveLen(1))

		_, err = duka.sandbox.CreatePayout(ctx, paygate.PayoutRequest{Amount: "3100"}, "payout-1")
		e := apiError(err)
		Expect(e.StatusCode).To(Equal(http.StatusConflict))
		Expect(e.Label).To(Equal("IDEMPOTENCY_KEY_REUSED"))
		_, err = duka.sandbox.CreatePayout(ctx, paygate.PayoutRequest{Amount: "3000"}, fmt.Sprintf("%065d", 1))
		Expect(apiError(err).Errors).To(HaveKey("Idempotency-Key"))
		Expect(payoutsIn(ns)).To(HaveLen(1))
		Eventually(func() string { return availableBalance(duka.sandbox).StringFixed(2) }).Should(Equal("6750.00"))
	})

	It("creates one payout from 50 concurrent requests with one Idempotency-Key", func() {
		fund(duka, "10000")
		// More than half the balance: a second payout could not be reserved.
		req := paygate.PayoutRequest{Amount: "6000"}
		var wg sync.WaitGroup
		ids := make([]string, 50)
		errs := make([]error, 50)
		for i := range 50 {
			wg.Go(func() {
				defer GinkgoRecover()
				p, err := duka.sandbox.CreatePayout(ctx, req, "burst-payout")
				errs[i] = err
				if err == nil {
					ids[i] = p.ID
				}
			})
		}
		wg.Wait()
		for i := range 50 {
			Expect(errs[i]).NotTo(HaveOccurred(), "request %d", i)
			Expect(ids[i]).To(Equal(ids[0]))
		}
		Expect(payoutsIn(ns)).To(HaveLen(1))
		Expect(awaitPayout(duka.sandbox, ids[0]).Status).To(Equal("success"))
		Eventually(func() string { return availableBalance(duka.sandbox).StringFixed(2) }).Should(Equal("3750.00"))
	})

	It("never pays out more than the balance, whichever replica takes the requests", func() {
		settled := fund(duka, "100000") // 97500.00 available
		fifth := "19500"

		By("starting a second apiserver with its own cache against the same control plane")
		replicaCtx, stopReplica := context.WithCancel(ctx)
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		replica, done, err := apiserver.Start(replicaCtx, env.Config, "127.0.0.1:0", apiserver.Options{
			CheckoutKey: key, PublicURL: "http://checkout.paygate.test", Log: logf.Log.WithName("apiserver-2"),
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			stopReplica()
			Eventually(done).Should(Receive(BeNil()))
		})
		clients := []*paygate.Client{duka.sandbox, clientAt("http://"+replica.Listener.Addr().String(), duka.merchant, paygatev1.EnvironmentSandbox)}
		for _, c := range clients { // both replicas see the whole balance before the burst
			Eventually(func() string { return availableBalance(c).StringFixed(2) }).Should(Equal(settled.StringFixed(2)))
		}

		By("sending 50 payouts of a fifth of the balance each, with distinct keys, spread over both")
		var wg sync.WaitGroup
		created := make([]string, 50)
		errs := make([]error, 50)
		for i := range 50 {
			wg.Go(func() {
				defer GinkgoRecover()
				p, err := clients[i%2].CreatePayout(ctx, paygate.PayoutRequest{Amount: json.Number(fifth)}, fmt.Sprintf("overdraw-%d", i))
				errs[i] = err
				if err == nil {
					created[i] = p.ID
				}
			})
		}
		wg.Wait()
		accepted, refused := 0, 0
		byReplica := [2]int{}
		for i, err := range errs {
			if err == nil {
				accepted++
				byReplica[i%2]++
				continue
			}
			var e *paygate.Error
			Expect(errors.As(err, &e)).To(BeTrue(), "request %d: %v", i, err)
			Expect(e.StatusCode).To(Equal(http.StatusUnprocessableEntity), "request %d", i)
			Expect(e.Label).To(Equal("INSUFFICIENT_BALANCE"), "request %d", i)
			refused++
		}
		GinkgoWriter.Printf("accepted %d (%d and %d by each replica), refused at the API %d\n", accepted, byReplica[0], byReplica[1], refused)
		Expect(accepted).To(BeNumerically(">=", 5), "the balance covers five")

		By("ending every recorded payout: at most the balance succeeds, the rest fail INSUFFICIENT_BALANCE")
		var payouts []paygatev1.Payout
		Eventually(func(g Gomega) {
			payouts = payoutsIn(ns)
			g.Expect(payouts).To(HaveLen(accepted))
			for _, p := range payouts {
				g.Expect(p.Terminal()).To(BeTrue(), "payout %s is %s", p.Name, p.Phase())
			}
		}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		paidOut := money.Amount{}
		successes := 0
		for _, p := range payouts {
			if p.Status.Phase == paygatev1.PayoutSuccess {
				successes++
				paidOut = paidOut.Add(money.MustParseAmount(string(p.Spec.Amount)))
				continue
			}
			Expect(p.Status.Reason).To(Equal(string(paygatev1.PayoutInsufficientBalance)), "payout %s", p.Name)
		}
		Expect(paidOut.Cmp(settled)).To(BeNumerically("<=", 0), "paid out %s of %s", paidOut, settled)
		Expect(successes).To(Equal(5), "the single writer reserves what the balance covers")

		remaining, err := settled.Sub(paidOut)
		Expect(err).NotTo(HaveOccurred())
		for _, c := range clients {
			Eventually(func() string { return availableBalance(c).StringFixed(2) }).Should(Equal(remaining.StringFixed(2)))
		}
	})
})
