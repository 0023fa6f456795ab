// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

var microsecondUTC = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

// apiError unwraps the client's *paygate.Error.
func apiError(err error) *paygate.Error {
	var e *paygate.Error
	ExpectWithOffset(1, errors.As(err, &e)).To(BeTrue(), "expected an API error, got %v", err)
	return e
}

// raw sends a signed request with a raw body and decodes the JSON answer.
func raw(c *paygate.Client, method, path, body string, header http.Header) (int, map[string]any) {
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	resp, err := c.Do(ctx, method, path, b, header)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	out := map[string]any{}
	ExpectWithOffset(1, json.Unmarshal(resp.Body, &out)).To(Succeed(), string(resp.Body))
	return resp.StatusCode, out
}

var _ = Describe("Payments API", func() {
	var (
		ns       string
		tz, tz2  *paygatev1.Gateway
		duka     *merchantFixture
		orderSeq int
	)
	nextRef := func() string { orderSeq++; return fmt.Sprintf("order-%d-%d", GinkgoParallelProcess(), orderSeq) }

	BeforeEach(func() {
		ns = newNamespace()
		// The only gateway of the two that serves production: it simulates it (no upstream here).
		tz = createGateway("TZS", func(g *paygatev1.Gateway) {
			g.Spec.DisplayName = "M-Pesa Tanzania"
			g.Spec.Simulation = paygatev1.SimulationSandboxAndProduction
		})
		tz2 = createGateway("TZS", func(g *paygatev1.Gateway) {
			g.Spec.DisplayName = "Tigo Pesa"
			g.Spec.MinAmount = ptr.To(paygatev1.Decimal("1000"))
		})
		duka = createMerchant(ns, "duka")
	})

	It("creates a hosted payment and reports it through get, verify and list", func() {
		ref := nextRef()
		created, err := duka.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "1500.00", CurrencyCode: "TZS", RefTrx: ref,
			CustomerName: "Asha", CustomerEmail: "asha@example.com", Description: "Two bags of coffee",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(created.Status).To(Equal("success"))
		Expect(created.TrxID).To(Equal(created.Data.TrxID))
		Expect(created.Data.MerchantRef).To(Equal(ref))
		Expect(created.Data.Amount.String()).To(Equal("1500.00"))
		Expect(created.Data.Currency).To(Equal("TZS"))
		Expect(created.Data.Status).To(Equal("pending"))
		Expect(created.Data.Environment).To(Equal("sandbox"))
		Expect(created.PaymentURL).To(Equal(created.Data.CheckoutURL))
		Expect(created.Data.CheckoutURL).To(HavePrefix("http://checkout.paygate.test/checkout/" + created.TrxID + "?expires="))
		Expect(created.Data.CheckoutURL).To(MatchRegexp(`signature=[0-9a-f]{64}$`))
		expires, err := time.Parse(time.RFC3339, created.Data.ExpiresAt)
		Expect(err).NotTo(HaveOccurred())
		Expect(expires).To(BeTemporally("~", time.Now().Add(30*time.Minute), time.Minute))

		By("recording intent as a Payment object, labelled for kubectl")
		var p paygatev1.Payment
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created.TrxID}, &p)).To(Succeed())
		Expect(p.Labels).To(HaveKeyWithValue(paygatev1.LabelEnvironment, "sandbox"))
		Expect(p.Labels).To(HaveKeyWithValue(paygatev1.LabelMerchant, "duka"))
		Expect(string(p.Spec.Amount)).To(Equal("1500.00"))
		Expect(p.Spec.Gateways).To(ConsistOf(paygatev1.GatewayCode(tz.Name), paygatev1.GatewayCode(tz2.Name)))

		got, err := duka.sandbox.GetPayment(ctx, created.TrxID)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Status).To(Equal("pending"))
		Expect(got.Customer.Name).To(Equal("Asha"))
		Expect(got.Fee).To(BeNil())

		v, err := duka.sandbox.VerifyPayment(ctx, created.TrxID)
		Expect(err).NotTo(HaveOccurred())
		Expect(v.Status).To(Equal("pending"))
		Expect(v.TrxID).To(Equal(created.TrxID))
		Expect(v.Amount.String()).To(Equal("1500.00"))
		Expect(v.Fee.String()).To(Equal("0.00"))
		Expect(v.NetAmount.String()).To(Equal("1500.00"))
		Expect(v.Customer).To(Equal(paygate.Customer{Name: "Asha", Email: "asha@example.com"}))
		Expect(v.Description).To(Equal("Two bags of coffee"))
		Expect(v.CreatedAt).To(MatchRegexp(microsecondUTC.String()))
		Expect(v.UpdatedAt).To(MatchRegexp(microsecondUTC.String()))
		Expect(v.Remark).To(Equal("SANDBOX_TRANSACTION"))
		Expect(got.Remark).To(Equal("SANDBOX_TRANSACTION"))

		list, err := duka.sandbox.ListPayments(ctx, paygate.ListOptions{MerchantRef: ref})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Data).To(HaveLen(1))
		Expect(list.Data[0].TrxID).To(Equal(created.TrxID))
		Expect(list.Data[0].Remark).To(Equal("SANDBOX_TRANSACTION"))
	})

	It("answers the legacy initiate-payment with payment_url, info and data", func() {
		sel := &paygatev1.GatewaySelection{}
		sel.Namespace, sel.Name = ns, "duka"
		sel.Spec.MerchantRef.Name = "duka"
		sel.Spec.Gateways = []paygatev1.GatewayCode{paygatev1.GatewayCode(tz.Name), paygatev1.GatewayCode(tz2.Name)}
		Expect(k8s.Create(ctx, sel)).To(Succeed())

		var (
			ref string
			res *paygate.InitiatePaymentResponse
		)
		Eventually(func(g Gomega) {
			var err error
			ref = nextRef() // until the apiserver's cache has the selection
			res, err = duka.sandbox.InitiatePayment(ctx, paygate.CreatePaymentRequest{
				PaymentAmount: "2500", CurrencyCode: "TZS", RefTrx: ref,
				SuccessRedirect: "https://duka.example/ok", CancelRedirect: "https://duka.example/cancel",
				IPNURL: "https://duka.example/ipn", CustomerName: "Juma", CustomerEmail: "juma@example.com",
				AllowPaymentMethods: []string{"tigo"},
			}, "")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Info["merchant_payment_methods_restricted"]).To(BeTrue())
		}).WithPolling(time.Second).Should(Succeed())
		Expect(res.PaymentURL).To(Equal(res.Data.CheckoutURL))
		Expect(res.Data.TrxID).NotTo(BeEmpty())
		info := res.Info
		Expect(info["ref_trx"]).To(Equal(ref))
		Expect(info["ipn_url"]).To(Equal("https://duka.example/ipn"))
		Expect(info["success_redirect"]).To(Equal("https://duka.example/ok"))
		Expect(info["customer_name"]).To(Equal("Juma"))
		// Numbers arrive as json.Number with the digits sent, never as float64.
		Expect(info["merchant_id"]).To(Equal(json.Number(strconv.FormatInt(duka.merchant.Status.ID, 10))))
		Expect(info["merchant_name"]).To(Equal("Duka duka"))
		Expect(info["amount"]).To(Equal(json.Number("2500.00")))
		Expect(info["currency_code"]).To(Equal("TZS"))
		Expect(info["environment"]).To(Equal("sandbox"))
		Expect(info["is_sandbox"]).To(BeTrue())
		Expect(info["allow_payment_methods"]).To(Equal([]any{"tigo"}))
		Expect(info["merchant_payment_method_codes"]).To(Equal([]any{tz2.Name}))
		Expect(info["merchant_payment_method_ids"]).To(Equal([]any{json.Number(strconv.FormatInt(tz2.Status.ID, 10))}))

		By("requiring the legacy fields")
		_, err := duka.sandbox.InitiatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "2500", CurrencyCode: "TZS", RefTrx: nextRef()}, "")
		e := apiError(err)
		Expect(e.StatusCode).To(Equal(http.StatusUnprocessableEntity))
		Expect(e.Label).To(Equal("Validation failed"))
		Expect(e.Errors).To(HaveKey("success_redirect"))
		Expect(e.Errors).To(HaveKey("cancel_redirect"))
		Expect(e.Errors).To(HaveKey("ipn_url"))
	})

	It("records a USSD push for push mode and on request", func() {
		created, err := duka.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{
			// The sandbox's no-answer number keeps the payment pending.
			PaymentAmount: "5000", CurrencyCode: "TZS", RefTrx: nextRef(), PaymentMode: "push", CustomerPhone: "0711 000 004",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		var p paygatev1.Payment
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created.TrxID}, &p)).To(Succeed())
		Expect(p.Spec.Mode).To(Equal(paygatev1.PaymentModePush))
		Expect(p.Spec.PushRequest).NotTo(BeNil())
		Expect(string(p.Spec.PushRequest.Phone)).To(Equal("+255711000004"))
		Expect(p.Spec.PushRequest.Sequence).To(Equal(int32(1)))

		By("refusing a second prompt while the first waits for the customer")
		Eventually(func(g Gomega) {
			_, err := duka.sandbox.PushPayment(ctx, created.TrxID, "+255 754 000 111")
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.(*paygate.Error).Label).To(Equal("PUSH_IN_PROGRESS"))
			g.Expect(err.(*paygate.Error).StatusCode).To(Equal(http.StatusConflict))
		}).Should(Succeed())

		By("recording a push on a hosted payment")
		hosted, err := duka.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "5000", CurrencyCode: "TZS", RefTrx: nextRef()}, "")
		Expect(err).NotTo(HaveOccurred())
		pushed, err := duka.sandbox.PushPayment(ctx, hosted.TrxID, "+255 754 000 111")
		Expect(err).NotTo(HaveOccurred())
		Expect(pushed.Data.PushSequence).To(Equal(1))
		Expect(pushed.Data.CustomerPhone).To(Equal("+255*******11"))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: hosted.TrxID}, &p)).To(Succeed())
		Expect(string(p.Spec.PushRequest.Phone)).To(Equal("+255754000111"))
		_, err = duka.sandbox.PushPayment(ctx, hosted.TrxID, "")
		Expect(apiError(err).StatusCode).To(Equal(http.StatusConflict), "in progress or already settled")
		Expect(apiError(err).Label).To(BeElementOf("PUSH_IN_PROGRESS", "PAYMENT_NOT_PENDING"))

		By("requiring a phone for push mode")
		_, err = duka.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "5000", CurrencyCode: "TZS", RefTrx: nextRef(), PaymentMode: "push"}, "")
		Expect(apiError(err).Errors).To(HaveKey("customer_phone"))

		By("refusing a push for an unknown payment")
		_, err = duka.sandbox.PushPayment(ctx, "trx-doesnotexist", "+255712345678")
		Expect(apiError(err).StatusCode).To(Equal(http.StatusNotFound))
	})

	It("settles a sandbox push payment by itself and credits the balance", func() {
		created, err := duka.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "10000", CurrencyCode: "TZS", RefTrx: nextRef(), PaymentMode: "push", CustomerPhone: "+255712345678",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		var v *paygate.Verification
		Eventually(func(g Gomega) {
			v, err = duka.sandbox.VerifyPayment(ctx, created.TrxID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.Status).To(Equal("success"))
		}).Should(Succeed())
		// The gateway charges 2.5 %.
		Expect(v.Fee.String()).To(Equal("250.00"))
		Expect(v.NetAmount.String()).To(Equal("9750.00"))
		got, err := duka.sandbox.GetPayment(ctx, created.TrxID)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Gateway).NotTo(BeEmpty())
		Expect(got.Fee.String()).To(Equal("250.00"))

		By("reporting the settlement in updated_at, to the microsecond, though it came within a second")
		createdAt, err := time.Parse(time.RFC3339Nano, v.CreatedAt)
		Expect(err).NotTo(HaveOccurred())
		updatedAt, err := time.Parse(time.RFC3339Nano, v.UpdatedAt)
		Expect(err).NotTo(HaveOccurred())
		Expect(v.UpdatedAt).To(MatchRegexp(microsecondUTC.String()))
		Expect(updatedAt).To(BeTemporally(">", createdAt))
		Expect(got.UpdatedAt).To(Equal(v.UpdatedAt))
		Expect(got.CreatedAt).To(Equal(v.CreatedAt))

		By("failing the insufficient-funds number with its code")
		failed, err := duka.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "10000", CurrencyCode: "TZS", RefTrx: nextRef(), PaymentMode: "push", CustomerPhone: "+255711000001",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			p, err := duka.sandbox.GetPayment(ctx, failed.TrxID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status).To(Equal("failed"))
			g.Expect(p.Reason).To(Equal("INSUFFICIENT_FUNDS"))
			g.Expect(p.Fee.String()).To(Equal("0.00"))
			g.Expect(p.NetAmount.String()).To(Equal("0.00"))
		}).Should(Succeed())
		fv, err := duka.sandbox.VerifyPayment(ctx, failed.TrxID)
		Expect(err).NotTo(HaveOccurred())
		Expect(fv.Fee.String()).To(Equal("0.00"))
		Expect(fv.NetAmount.String()).To(Equal("0.00"), "nothing is credited for a failed payment, as its webhook says")

		By("reporting the settled net amount as the sandbox balance, and nothing in production")
		Eventually(func(g Gomega) {
			resp, err := duka.sandbox.Do(ctx, http.MethodGet, "/api/v1/balance", nil, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.Body).To(MatchJSON(`{"status":"success","data":{"environment":"sandbox","balances":[{"currency":"TZS","available":9750.00,"settled_payments":1,"wallet_active":true}]}}`))
		}).Should(Succeed())
		resp, err := duka.production.Do(ctx, http.MethodGet, "/api/v1/balance", nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Body).To(MatchJSON(`{"status":"success","data":{"environment":"production","balances":[{"currency":"TZS","available":0.00,"settled_payments":0,"wallet_active":true}]}}`))
	})

	It("uses the merchant's checkout lifetime", func() {
		quick := createMerchant(ns, "quick", func(m *paygatev1.Merchant) { m.Spec.CheckoutLifetimeMinutes = 5 })
		created, err := quick.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: nextRef()}, "")
		Expect(err).NotTo(HaveOccurred())
		expires, err := time.Parse(time.RFC3339, created.Data.ExpiresAt)
		Expect(err).NotTo(HaveOccurred())
		Expect(expires).To(BeTemporally("~", time.Now().Add(5*time.Minute), 30*time.Second))
	})

	It("keeps ref_trx unique per merchant and environment", func() {
		ref := nextRef()
		req := paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: ref}
		_, err := duka.sandbox.CreatePayment(ctx, req, "")
		Expect(err).NotTo(HaveOccurred())
		_, err = duka.sandbox.CreatePayment(ctx, req, "")
		e := apiError(err)
		Expect(e.StatusCode).To(Equal(http.StatusConflict))
		Expect(e.Label).To(Equal("DUPLICATE_REFERENCE"))

		By("allowing the same reference in production")
		req.WebhookURL = "https://duka.example/hooks"
		_, err = duka.production.CreatePayment(ctx, req, "")
		Expect(err).NotTo(HaveOccurred())
	})

	It("replays an idempotent create and refuses the key for another body", func() {
		req := paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: nextRef()}
		first, err := duka.sandbox.Do(ctx, http.MethodPost, "/api/v1/payments", mustJSON(req), http.Header{"Idempotency-Key": {"key-1"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(first.StatusCode).To(Equal(http.StatusOK))
		again, err := duka.sandbox.Do(ctx, http.MethodPost, "/api/v1/payments", mustJSON(req), http.Header{"Idempotency-Key": {"key-1"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(again.StatusCode).To(Equal(http.StatusOK))
		Expect(again.Body).To(MatchJSON(first.Body))
		Expect(again.Header.Get("Idempotent-Replayed")).To(Equal("true"))

		req.PaymentAmount = "1600"
		_, err = duka.sandbox.CreatePayment(ctx, req, "key-1")
		e := apiError(err)
		Expect(e.StatusCode).To(Equal(http.StatusConflict))
		Expect(e.Label).To(Equal("IDEMPOTENCY_KEY_REUSED"))

		By("rejecting a key longer than 64 characters")
		_, err = duka.sandbox.CreatePayment(ctx, req, fmt.Sprintf("%065d", 1))
		Expect(apiError(err).Errors).To(HaveKey("Idempotency-Key"))
	})

	It("creates one payment from 50 concurrent requests with one Idempotency-Key", func() {
		req := paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: nextRef()}
		var wg sync.WaitGroup
		trxIDs := make([]string, 50)
		errs := make([]error, 50)
		for i := range 50 {
			wg.Go(func() {
				defer GinkgoRecover()
				res, err := duka.sandbox.CreatePayment(ctx, req, "burst-key")
				errs[i] = err
				if err == nil {
					trxIDs[i] = res.TrxID
				}
			})
		}
		wg.Wait()
		for i := range 50 {
			Expect(errs[i]).NotTo(HaveOccurred())
			Expect(trxIDs[i]).To(Equal(trxIDs[0]))
		}
		var payments paygatev1.PaymentList
		Expect(k8s.List(ctx, &payments, client.InNamespace(ns))).To(Succeed())
		Expect(payments.Items).To(HaveLen(1))
	})

	It("lists with filters and pagination, newest first, only in the caller's environment", func() {
		refs := []string{}
		for range 5 {
			ref := nextRef()
			refs = append(refs, ref)
			_, err := duka.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: ref}, "")
			Expect(err).NotTo(HaveOccurred())
		}
		_, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: nextRef()}, "")
		Expect(err).NotTo(HaveOccurred())

		Eventually(func(g Gomega) {
			all, err := duka.sandbox.ListPayments(ctx, paygate.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(all.Pagination.Total).To(Equal(5))
		}).Should(Succeed())
		page, err := duka.sandbox.ListPayments(ctx, paygate.ListOptions{Limit: 2, Offset: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(page.Data).To(HaveLen(2))
		Expect(page.Pagination.Limit).To(Equal(2))
		Expect(page.Pagination.Offset).To(Equal(1))
		for _, p := range page.Data {
			Expect(p.Environment).To(Equal("sandbox"))
		}
		pending, err := duka.sandbox.ListPayments(ctx, paygate.ListOptions{Status: "pending", MerchantRef: refs[2]})
		Expect(err).NotTo(HaveOccurred())
		Expect(pending.Data).To(HaveLen(1))
		none, err := duka.sandbox.ListPayments(ctx, paygate.ListOptions{Status: "success"})
		Expect(err).NotTo(HaveOccurred())
		Expect(none.Data).To(BeEmpty())
		Eventually(func(g Gomega) { // the list reads the apiserver's cache
			prod, err := duka.production.ListPayments(ctx, paygate.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(prod.Pagination.Total).To(Equal(1))
		}).Should(Succeed())

		status, body := raw(duka.sandbox, http.MethodGet, "/api/v1/payments?limit=500", "", nil)
		Expect(status).To(Equal(http.StatusUnprocessableEntity))
		Expect(body["errors"]).To(HaveKey("limit"))
		status, body = raw(duka.sandbox, http.MethodGet, "/api/v1/payments?status=paid", "", nil)
		Expect(status).To(Equal(http.StatusUnprocessableEntity))
		Expect(body["errors"]).To(HaveKey("status"))
	})

	It("isolates merchants and environments", func() {
		other := createMerchant(ns, "other")
		created, err := duka.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: nextRef()}, "")
		Expect(err).NotTo(HaveOccurred())
		for _, c := range []*paygate.Client{other.sandbox, duka.production} {
			_, err = c.VerifyPayment(ctx, created.TrxID)
			Expect(apiError(err).StatusCode).To(Equal(http.StatusNotFound))
			_, err = c.GetPayment(ctx, created.TrxID)
			Expect(apiError(err).StatusCode).To(Equal(http.StatusNotFound))
		}
		list, err := other.sandbox.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Data).To(BeEmpty())
	})

	It("follows the runtime decision order for currency, wallet and gateways", func() {
		kes := createMerchant(ns, "kes-shop", func(m *paygatev1.Merchant) {
			m.Spec.Currencies = []paygatev1.CurrencyCode{"TZS", "KES"}
			m.Spec.Wallets = []paygatev1.Wallet{{Currency: "TZS"}, {Currency: "KES", Active: ptr.To(false)}}
		})
		_, err := kes.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "UGX", RefTrx: nextRef()}, "")
		e := apiError(err)
		Expect(e.StatusCode).To(Equal(http.StatusUnprocessableEntity))
		Expect(e.Message).To(Equal("Currency is not enabled for this merchant."))

		_, err = kes.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "KES", RefTrx: nextRef()}, "")
		e = apiError(err)
		Expect(e.StatusCode).To(Equal(http.StatusUnprocessableEntity))
		Expect(e.Message).To(Equal("Receiver wallet for this currency is not available."))

		_, err = kes.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: nextRef(), AllowPaymentMethods: []string{"airtel"}}, "")
		e = apiError(err)
		Expect(e.Label).To(Equal("PAYMENT_METHOD_UNAVAILABLE"))

		By("narrowing with a comma-separated allow_payment_methods that never widens")
		status, body := raw(kes.sandbox, http.MethodPost, "/api/v1/initiate-payment",
			`{"payment_amount":2000,"currency_code":"TZS","ref_trx":"`+nextRef()+`","success_redirect":"https://a.example/ok","cancel_redirect":"https://a.example/no","ipn_url":"https://a.example/ipn","allow_payment_methods":"M-PESA, unknown"}`, nil)
		Expect(status).To(Equal(http.StatusOK), fmt.Sprint(body))
		Expect(body["info"].(map[string]any)["merchant_payment_method_codes"]).To(Equal([]any{tz.Name}))

		By("excluding gateways whose limits the amount misses")
		status, body = raw(kes.sandbox, http.MethodPost, "/api/v1/initiate-payment",
			`{"payment_amount":500,"currency_code":"TZS","ref_trx":"`+nextRef()+`","success_redirect":"https://a.example/ok","cancel_redirect":"https://a.example/no","ipn_url":"https://a.example/ipn"}`, nil)
		Expect(status).To(Equal(http.StatusOK), fmt.Sprint(body))
		Expect(body["info"].(map[string]any)["merchant_payment_method_codes"]).To(Equal([]any{tz.Name}))
	})

	DescribeTable("rejects invalid bodies with 422 and the field's message, creating nothing",
		func(body, field string) {
			status, out := raw(duka.sandbox, http.MethodPost, "/api/v1/payments", body, nil)
			Expect(status).To(Equal(http.StatusUnprocessableEntity), fmt.Sprint(out))
			Expect(out["error"]).To(Equal("Validation failed"))
			Expect(out["message"]).NotTo(BeEmpty())
			Expect(out["errors"]).To(HaveKey(field))
			var payments paygatev1.PaymentList
			Expect(k8s.List(ctx, &payments, client.InNamespace(ns))).To(Succeed())
			Expect(payments.Items).To(BeEmpty())
		},
		Entry("malformed JSON", `{"payment_amount":`, "body"),
		Entry("an array body", `[1,2]`, "body"),
		Entry("two objects", `{"a":1}{"b":2}`, "body"),
		Entry("a missing amount", `{"currency_code":"TZS","ref_trx":"r1"}`, "payment_amount"),
		Entry("an amount as a boolean", `{"payment_amount":true,"currency_code":"TZS","ref_trx":"r1"}`, "payment_amount"),
		Entry("too many decimals for TZS", `{"payment_amount":10.005,"currency_code":"TZS","ref_trx":"r1"}`, "payment_amount"),
		Entry("a lowercase currency", `{"payment_amount":1500,"currency_code":"tzs","ref_trx":"r1"}`, "currency_code"),
		Entry("a numeric currency", `{"payment_amount":1500,"currency_code":834,"ref_trx":"r1"}`, "currency_code"),
		Entry("a missing ref_trx", `{"payment_amount":1500,"currency_code":"TZS"}`, "ref_trx"),
		Entry("a ref_trx of 61 characters", `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"`+fmt.Sprintf("%061d", 7)+`"}`, "ref_trx"),
		Entry("an unknown payment_mode", `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"r1","payment_mode":"card"}`, "payment_mode"),
		Entry("a malformed phone", `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"r1","payment_mode":"push","customer_phone":"12ab"}`, "customer_phone"),
		Entry("a landline for push", `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"r1","payment_mode":"push","customer_phone":"+255222123456"}`, "customer_phone"),
		Entry("a webhook that is not a URL", `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"r1","webhook_url":"not a url"}`, "webhook_url"),
		Entry("a customer_name of 101 characters", `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"r1","customer_name":"`+fmt.Sprintf("%0101d", 1)+`"}`, "customer_name"),
		Entry("a malformed email", `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"r1","customer_email":"asha@"}`, "customer_email"),
		Entry("allow_payment_methods as a number", `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"r1","allow_payment_methods":5}`, "allow_payment_methods"),
		Entry("an oversized body", `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"r1","description":"`+fmt.Sprintf("%070000d", 1)+`"}`, "body"),
	)

	DescribeTable("refuses an amount out of range with 422 INVALID_AMOUNT on both create routes, creating nothing",
		func(amount string) {
			for _, route := range []string{"/api/v1/payments", "/api/v1/initiate-payment"} {
				status, out := raw(duka.sandbox, http.MethodPost, route, `{"payment_amount":`+amount+`,"currency_code":"TZS","ref_trx":"`+nextRef()+`"}`, nil)
				Expect(status).To(Equal(http.StatusUnprocessableEntity), route+" "+fmt.Sprint(out))
				Expect(out["error"]).To(Equal("INVALID_AMOUNT"), route)
				Expect(out["errors"]).To(HaveKey("payment_amount"), route)
			}
			var payments paygatev1.PaymentList
			Expect(k8s.List(ctx, &payments, client.InNamespace(ns))).To(Succeed())
			Expect(payments.Items).To(BeEmpty())
		},
		Entry("below 1.00", "0.99"),
		Entry("half a shilling", "0.5"),
		Entry("zero", "0"),
		Entry("a negative amount", "-1"),
		Entry("more than a payment can hold", "1000000000000000000"),
		Entry("far more", "1e25"),
	)

	It("accepts null optional fields, unknown fields and equal amounts written three ways", func() {
		for i, amount := range []string{"1500", "1500.0", "1500.00", `"1500.00"`} {
			status, out := raw(duka.sandbox, http.MethodPost, "/api/v1/payments",
				`{"payment_amount":`+amount+`,"currency_code":"TZS","ref_trx":"three-ways-`+strconv.Itoa(i)+`","customer_name":null,"webhook_url":null,"order_number":"A-77","metadata":{"x":1}}`, nil)
			Expect(status).To(Equal(http.StatusOK), fmt.Sprint(out))
			Expect(out["data"].(map[string]any)["amount"]).To(BeNumerically("==", 1500))
		}
	})

	It("requires HTTPS and allowed domains for production URLs", func() {
		_, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: nextRef(), WebhookURL: "http://duka.example/hooks"}, "")
		Expect(apiError(err).Errors).To(HaveKey("webhook_url"))

		restricted := createMerchant(ns, "strict", func(m *paygatev1.Merchant) {
			m.Spec.AllowedRedirectDomains = []paygatev1.DomainName{"strict.example"}
		})
		_, err = restricted.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: nextRef(), SuccessRedirect: "https://evil.example/ok"}, "")
		Expect(apiError(err).Errors).To(HaveKey("success_redirect"))
		_, err = restricted.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: nextRef(), SuccessRedirect: "https://shop.strict.example/ok"}, "")
		Expect(err).NotTo(HaveOccurred())
	})
})

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return b
}
