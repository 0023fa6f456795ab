// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// send builds a request by hand, so a test controls every header.
func send(method, target string, header http.Header, body string) (int, http.Header, string) {
	req, err := http.NewRequestWithContext(ctx, method, baseURL+target, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.URL.Opaque = "//" + req.URL.Host + strings.SplitN(target, "?", 2)[0]
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, resp.Header, string(b)
}

// signedHeaders are the headers a correct client sends for (method, target, body) at ts.
func signedHeaders(c *paygate.Client, method, target, body string, ts time.Time) http.Header {
	t := strconv.FormatInt(ts.Unix(), 10)
	return http.Header{
		"X-Environment":  {c.Credentials.Environment},
		"X-Merchant-Key": {c.Credentials.MerchantKey},
		"X-Api-Key":      {c.Credentials.APIKey},
		"X-Timestamp":    {t},
		"X-Signature":    {paygate.Sign(c.Credentials.APISecret, t, method, target, []byte(body))},
		"Content-Type":   {"application/json"},
	}
}

var _ = Describe("Authentication", func() {
	var (
		ns   string
		duka *merchantFixture
	)
	BeforeEach(func() {
		ns = newNamespace()
		createGateway("TZS")
		duka = createMerchant(ns, "duka")
	})

	It("accepts a correctly signed request and the X-Business-Key alias", func() {
		h := signedHeaders(duka.sandbox, "GET", "/api/v1/site-info", "", time.Now())
		status, _, body := send("GET", "/api/v1/site-info", h, "")
		Expect(status).To(Equal(http.StatusOK), body)
		Expect(body).To(ContainSubstring(`"api_version":"1.0"`))
		Expect(body).To(ContainSubstring(`"status":"active"`))

		h.Set("X-Business-Key", h.Get("X-Merchant-Key"))
		h.Del("X-Merchant-Key")
		status, _, body = send("GET", "/api/v1/site-info", h, "")
		Expect(status).To(Equal(http.StatusOK), body)
	})

	It("verifies the raw request target: percent-encoded paths, queries and upper-case hex", func() {
		target := "/api/v1/payments/abc%2Fdef%20x"
		h := signedHeaders(duka.sandbox, "GET", target, "", time.Now())
		status, _, body := send("GET", target, h, "")
		Expect(status).To(Equal(http.StatusNotFound), body) // authenticated; no such payment
		Expect(body).To(ContainSubstring("NOT_FOUND"))

		target = "/api/v1/payments?limit=5&status=pending"
		h = signedHeaders(duka.sandbox, "GET", target, "", time.Now())
		h.Set("X-Signature", "sha256="+strings.ToUpper(strings.TrimPrefix(h.Get("X-Signature"), "sha256=")))
		status, _, body = send("GET", target, h, "")
		Expect(status).To(Equal(http.StatusOK), body)
	})

	DescribeTable("refuses bad credentials with 401 INVALID_CREDENTIALS",
		func(mutate func(h http.Header)) {
			h := signedHeaders(duka.sandbox, "GET", "/api/v1/payments", "", time.Now())
			mutate(h)
			status, _, body := send("GET", "/api/v1/payments", h, "")
			Expect(status).To(Equal(http.StatusUnauthorized), body)
			Expect(body).To(MatchJSON(`{"error":"INVALID_CREDENTIALS","message":"Invalid API credentials."}`))
		},
		Entry("no environment", func(h http.Header) { h.Del("X-Environment") }),
		Entry("an unknown environment", func(h http.Header) { h.Set("X-Environment", "staging") }),
		Entry("sandbox credentials against production", func(h http.Header) { h.Set("X-Environment", "production") }),
		Entry("no merchant key", func(h http.Header) { h.Del("X-Merchant-Key") }),
		Entry("an unknown merchant key", func(h http.Header) { h.Set("X-Merchant-Key", "test_mk_nobody") }),
		Entry("no API key", func(h http.Header) { h.Del("X-Api-Key") }),
		Entry("a wrong API key", func(h http.Header) { h.Set("X-Api-Key", "test_pk_wrong") }),
	)

	DescribeTable("refuses bad signatures with 401 INVALID_SIGNATURE and a clear message",
		func(mutate func(h http.Header), message string) {
			h := signedHeaders(duka.sandbox, "GET", "/api/v1/payments", "", time.Now())
			mutate(h)
			status, _, body := send("GET", "/api/v1/payments", h, "")
			Expect(status).To(Equal(http.StatusUnauthorized), body)
			Expect(body).To(ContainSubstring(`"error":"INVALID_SIGNATURE"`))
			Expect(body).To(ContainSubstring(message))
		},
		Entry("no signature", func(h http.Header) { h.Del("X-Signature") }, "X-Timestamp and X-Signature are required."),
		Entry("a stale timestamp", func(h http.Header) {
			ts := time.Now().Add(-301 * time.Second)
			h.Set("X-Timestamp", strconv.FormatInt(ts.Unix(), 10))
			h.Set("X-Signature", paygate.Sign(duka.sandbox.Credentials.APISecret, h.Get("X-Timestamp"), "GET", "/api/v1/payments", nil))
		}, "outside the allowed window of 300 seconds"),
		Entry("a future timestamp", func(h http.Header) {
			ts := time.Now().Add(10 * time.Minute)
			h.Set("X-Timestamp", strconv.FormatInt(ts.Unix(), 10))
			h.Set("X-Signature", paygate.Sign(duka.sandbox.Credentials.APISecret, h.Get("X-Timestamp"), "GET", "/api/v1/payments", nil))
		}, "outside the allowed window"),
		Entry("a timestamp in milliseconds text", func(h http.Header) { h.Set("X-Timestamp", "12x") }, "Unix time in seconds"),
		Entry("a signature without its prefix", func(h http.Header) { h.Set("X-Signature", strings.TrimPrefix(h.Get("X-Signature"), "sha256=")) }, "sha256=<hex"),
		Entry("a signature by another secret", func(h http.Header) {
			h.Set("X-Signature", paygate.Sign("test_sk_other", h.Get("X-Timestamp"), "GET", "/api/v1/payments", nil))
		}, "does not match"),
		Entry("a signature of another path", func(h http.Header) {
			h.Set("X-Signature", paygate.Sign(duka.sandbox.Credentials.APISecret, h.Get("X-Timestamp"), "GET", "/api/v1/payments?limit=1", nil))
		}, "does not match"),
	)

	It("refuses a tampered body", func() {
		body := `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"tamper-1"}`
		h := signedHeaders(duka.sandbox, "POST", "/api/v1/payments", body, time.Now())
		status, _, out := send("POST", "/api/v1/payments", h, strings.Replace(body, "1500", "15", 1))
		Expect(status).To(Equal(http.StatusUnauthorized), out)
		var payments paygatev1.PaymentList
		Expect(k8s.List(ctx, &payments, client.InNamespace(ns))).To(Succeed())
		Expect(payments.Items).To(BeEmpty())
	})

	It("blocks production for a business that is no longer approved, and suspended businesses everywhere", func() {
		_, err := duka.production.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		setStatus := func(s paygatev1.BusinessStatus) {
			Eventually(func(g Gomega) {
				var m paygatev1.Merchant
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(duka.merchant), &m)).To(Succeed())
				m.Spec.BusinessStatus = s
				g.Expect(k8s.Update(ctx, &m)).To(Succeed())
			}).Should(Succeed())
		}
		setStatus(paygatev1.BusinessPending)
		Eventually(func(g Gomega) {
			_, err := duka.production.ListPayments(ctx, paygate.ListOptions{})
			g.Expect(err).To(HaveOccurred())
			e := err.(*paygate.Error)
			g.Expect(e.StatusCode).To(Equal(http.StatusForbidden))
			g.Expect(e.Label).To(Equal("Merchant Pending Approval"))
		}).Should(Succeed())
		_, err = duka.sandbox.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred(), "a pending business may use sandbox")

		setStatus(paygatev1.BusinessDisabled)
		Eventually(func(g Gomega) {
			_, err := duka.sandbox.ListPayments(ctx, paygate.ListOptions{})
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.(*paygate.Error).Label).To(Equal("MERCHANT_SUSPENDED"))
			g.Expect(err.(*paygate.Error).StatusCode).To(Equal(http.StatusForbidden))
		}).Should(Succeed())
	})

	It("answers a business never approved 403 in production with its sandbox keys, and 401 to wrong keys", func() {
		newcomer := createMerchant(ns, "newcomer", func(m *paygatev1.Merchant) {
			m.Spec.BusinessStatus, m.Spec.KYBStatus = paygatev1.BusinessPending, paygatev1.KYBPending
		})
		Expect(newcomer.production).To(BeNil(), "a pending business has no production keys")
		Expect(newcomer.merchant.Status.Production.BusinessID).To(BeEmpty())

		h := signedHeaders(newcomer.sandbox, "GET", "/api/v1/payments", "", time.Now())
		h.Set("X-Environment", "production")
		status, _, body := send("GET", "/api/v1/payments", h, "")
		Expect(status).To(Equal(http.StatusForbidden), body)
		Expect(body).To(MatchJSON(`{"error":"Merchant Pending Approval","message":"This business is pending approval and can use the sandbox environment only."}`))

		payment := `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"early-1","webhook_url":"https://duka.example/hooks"}`
		h = signedHeaders(newcomer.sandbox, "POST", "/api/v1/payments", payment, time.Now())
		h.Set("X-Environment", "production")
		status, _, body = send("POST", "/api/v1/payments", h, payment)
		Expect(status).To(Equal(http.StatusForbidden), body)
		var payments paygatev1.PaymentList
		Expect(k8s.List(ctx, &payments, client.InNamespace(ns))).To(Succeed())
		Expect(payments.Items).To(BeEmpty())

		for name, mutate := range map[string]func(http.Header){
			"a wrong API key": func(h http.Header) { h.Set("X-Api-Key", "test_pk_wrong") },
			"an unknown key":  func(h http.Header) { h.Set("X-Merchant-Key", "test_mk_nobody") },
			"a bad signature": func(h http.Header) {
				h.Set("X-Signature", paygate.Sign("test_sk_other", h.Get("X-Timestamp"), "GET", "/api/v1/payments", nil))
			},
			"no signature": func(h http.Header) { h.Del("X-Signature") },
			"a stale timestamp": func(h http.Header) {
				ts := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
				h.Set("X-Timestamp", ts)
				h.Set("X-Signature", paygate.Sign(newcomer.sandbox.Credentials.APISecret, ts, "GET", "/api/v1/payments", nil))
			},
		} {
			h := signedHeaders(newcomer.sandbox, "GET", "/api/v1/payments", "", time.Now())
			h.Set("X-Environment", "production")
			mutate(h)
			status, _, body := send("GET", "/api/v1/payments", h, "")
			Expect(status).To(Equal(http.StatusUnauthorized), name+": "+body)
		}

		By("still serving it in sandbox")
		_, err := newcomer.sandbox.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
	})

	It("refuses live collection to an approved business whose KYB is not approved, and lets it read", func() {
		createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.Simulation = paygatev1.SimulationSandboxAndProduction })
		unvetted := createMerchant(ns, "unvetted", func(m *paygatev1.Merchant) { m.Spec.KYBStatus = paygatev1.KYBPending })
		req := paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: "kyb-1", WebhookURL: "https://duka.example/hooks",
			SuccessRedirect: "https://duka.example/ok", CancelRedirect: "https://duka.example/no"}
		expectKYB := func(err error) {
			GinkgoHelper()
			var e *paygate.Error
			Expect(errors.As(err, &e)).To(BeTrue(), "got %v", err)
			Expect(e.StatusCode).To(Equal(http.StatusForbidden))
			Expect(e.Label).To(Equal("Merchant Pending Approval"))
			Expect(e.Message).To(ContainSubstring("Live collection needs KYB approval"))
		}
		_, err := unvetted.production.CreatePayment(ctx, req, "kyb-key")
		expectKYB(err)
		_, err = unvetted.production.InitiatePayment(ctx, req, "")
		expectKYB(err)
		_, err = unvetted.production.PushPayment(ctx, "trx-7kq2m4xv5z3hbd5ntw6ycfa2", "+255712345678")
		expectKYB(err)
		_, err = unvetted.production.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = unvetted.production.VerifyPayment(ctx, "trx-7kq2m4xv5z3hbd5ntw6ycfa2")
		Expect(err.(*paygate.Error).StatusCode).To(Equal(http.StatusNotFound))
		_, err = unvetted.production.SiteInfo(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, err = unvetted.sandbox.CreatePayment(ctx, req, "")
		Expect(err).NotTo(HaveOccurred(), "sandbox needs no KYB")

		By("collecting once KYB is approved, with the same Idempotency-Key")
		Eventually(func(g Gomega) {
			var m paygatev1.Merchant
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(unvetted.merchant), &m)).To(Succeed())
			m.Spec.KYBStatus = paygatev1.KYBApproved
			g.Expect(k8s.Update(ctx, &m)).To(Succeed())
		}).Should(Succeed())
		Eventually(func() error { _, err := unvetted.production.CreatePayment(ctx, req, "kyb-key"); return err }).Should(Succeed())
	})

	It("refuses a production payment when no gateway of its currency serves production", func() {
		createGateway("RWF") // backed by the simulator, sandbox only
		rwanda := createMerchant(ns, "rwanda", func(m *paygatev1.Merchant) {
			m.Spec.Currencies, m.Spec.Wallets = []paygatev1.CurrencyCode{"RWF"}, []paygatev1.Wallet{{Currency: "RWF"}}
		})
		req := paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "RWF", RefTrx: "rw-1", WebhookURL: "https://duka.example/hooks",
			PaymentMode: "push", CustomerPhone: "+250781234567"}
		_, err := rwanda.production.CreatePayment(ctx, req, "")
		var e *paygate.Error
		Expect(errors.As(err, &e)).To(BeTrue(), "got %v", err)
		Expect(e.StatusCode).To(Equal(http.StatusUnprocessableEntity))
		Expect(e.Label).To(Equal("PAYMENT_METHOD_UNAVAILABLE"))
		var payments paygatev1.PaymentList
		Expect(k8s.List(ctx, &payments, client.InNamespace(ns))).To(Succeed())
		Expect(payments.Items).To(BeEmpty())
		_, err = rwanda.sandbox.CreatePayment(ctx, req, "")
		Expect(err).NotTo(HaveOccurred(), "the gateway serves sandbox")
	})

	It("stops accepting a rotated API key as soon as the Secret changes", func() {
		old := *duka.sandbox
		Eventually(func(g Gomega) {
			var m paygatev1.Merchant
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(duka.merchant), &m)).To(Succeed())
			m.Annotations = map[string]string{paygatev1.AnnotationRotateSandboxCredentials: "rotation-1"}
			g.Expect(k8s.Update(ctx, &m)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			_, err := old.ListPayments(ctx, paygate.ListOptions{})
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.(*paygate.Error).Label).To(Equal("INVALID_CREDENTIALS"))
		}).Should(Succeed())
		rotated := clientFor(duka.merchant, paygatev1.EnvironmentSandbox)
		Expect(rotated.Credentials.MerchantKey).To(Equal(old.Credentials.MerchantKey))
		_, err := rotated.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
	})

	It("limits the request rate per business and client IP with 429 and Retry-After", func() {
		limited := createMerchant(ns, "limited", func(m *paygatev1.Merchant) {
			m.Spec.RateLimit = &paygatev1.RateLimit{RequestsPerMinute: 5}
		})
		var last *paygate.Response
		for i := 0; i < 12; i++ {
			resp, err := limited.sandbox.Do(ctx, http.MethodGet, "/api/v1/site-info", nil, nil)
			Expect(err).NotTo(HaveOccurred())
			last = resp
			if resp.StatusCode == http.StatusTooManyRequests {
				break
			}
		}
		Expect(last.StatusCode).To(Equal(http.StatusTooManyRequests))
		Expect(last.Header.Get("Retry-After")).To(MatchRegexp(`^[1-9][0-9]*$`))
		Expect(string(last.Body)).To(ContainSubstring(`"error":"RATE_LIMIT_EXCEEDED"`))

		By("not limiting another business")
		_, err := duka.sandbox.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
	})

	It("answers unknown routes and wrong methods in the error shape", func() {
		status, _, body := send("GET", "/api/v1/nothing-here", http.Header{}, "")
		Expect(status).To(Equal(http.StatusNotFound))
		Expect(body).To(ContainSubstring(`"error":"NOT_FOUND"`))
		status, h, body := send("DELETE", "/api/v1/payments", http.Header{}, "")
		Expect(status).To(Equal(http.StatusMethodNotAllowed))
		Expect(body).To(ContainSubstring(`"error":"METHOD_NOT_ALLOWED"`))
		Expect(h.Get("Allow")).To(ContainSubstring("POST"))
	})
})
