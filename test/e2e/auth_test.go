// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

	It("keeps a rotated API key working for the rotation's overlap, and no longer", func() {
		shop := createMerchant(ns, "rotating")
		old := *shop.sandbox
		annotate := func(kv ...string) {
			Eventually(func(g Gomega) {
				var m paygatev1.Merchant
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(shop.merchant), &m)).To(Succeed())
				if m.Annotations == nil {
					m.Annotations = map[string]string{}
				}
				for i := 0; i < len(kv); i += 2 {
					m.Annotations[kv[i]] = kv[i+1]
				}
				g.Expect(k8s.Update(ctx, &m)).To(Succeed())
			}).Should(Succeed())
		}
		refused := func(c *paygate.Client) func(g Gomega) {
			return func(g Gomega) {
				_, err := c.ListPayments(ctx, paygate.ListOptions{})
				g.Expect(err).To(HaveOccurred())
				g.Expect(err.(*paygate.Error).Label).To(Equal("INVALID_CREDENTIALS"))
			}
		}
		secretName := types.NamespacedName{Namespace: ns, Name: shop.merchant.Name + "-sandbox-credentials"}
		newKey := func(g Gomega, than string) *paygate.Client {
			var secret corev1.Secret
			g.Expect(k8s.Get(ctx, secretName, &secret)).To(Succeed())
			g.Expect(string(secret.Data["apiKey"])).NotTo(Equal(than))
			return clientFor(shop.merchant, paygatev1.EnvironmentSandbox)
		}

		By("rotating with the default overlap: the old key and the new one both work")
		annotate(paygatev1.AnnotationRotateSandboxCredentials, "rotation-1")
		var rotated *paygate.Client
		Eventually(func(g Gomega) { rotated = newKey(g, old.Credentials.APIKey) }).Should(Succeed())
		Expect(rotated.Credentials.MerchantKey).To(Equal(old.Credentials.MerchantKey), "the business ID stays")
		Eventually(func(g Gomega) {
			_, err := rotated.ListPayments(ctx, paygate.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			_, err := old.ListPayments(ctx, paygate.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred(), "the old key, signed with the old secret, works during the overlap")
		}, "2s", "200ms").Should(Succeed())
		var m paygatev1.Merchant
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(shop.merchant), &m)).To(Succeed())
			g.Expect(m.Status.Sandbox.PreviousKeyExpiresAt).NotTo(BeNil())
			g.Expect(m.Status.Sandbox.PreviousKeyExpiresAt.Time).To(BeTemporally("~", time.Now().Add(24*time.Hour), time.Minute))
		}).Should(Succeed())
		mixed := *rotated
		mixed.Credentials.APISecret = old.Credentials.APISecret
		_, err := mixed.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).To(HaveOccurred(), "the new key signed with the old secret")
		Expect(err.(*paygate.Error).Label).To(Equal("INVALID_SIGNATURE"))

		By("ending the overlap early: the old key stops at once, the new one goes on")
		annotate(paygatev1.AnnotationEndSandboxOverlap, "done-1")
		Eventually(refused(&old)).Should(Succeed())
		_, err = rotated.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(shop.merchant), &m)).To(Succeed())
			g.Expect(m.Status.Sandbox.PreviousKeyExpiresAt).To(BeNil())
		}).Should(Succeed())

		By("rotating with a short overlap: the old key stops when it ends, and leaves the Secret")
		annotate(paygatev1.AnnotationCredentialsOverlap, "3s", paygatev1.AnnotationRotateSandboxCredentials, "rotation-2")
		var second *paygate.Client
		Eventually(func(g Gomega) { second = newKey(g, rotated.Credentials.APIKey) }).Should(Succeed())
		_, err = rotated.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred(), "within the 3 s overlap")
		Eventually(refused(rotated), "30s").Should(Succeed())
		Eventually(func(g Gomega) {
			var secret corev1.Secret
			g.Expect(k8s.Get(ctx, secretName, &secret)).To(Succeed())
			g.Expect(secret.Data).NotTo(HaveKey("previousApiKey"))
		}, "30s").Should(Succeed())
		_, err = second.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("rotating with no overlap: the old key stops as soon as the Secret changes")
		annotate(paygatev1.AnnotationCredentialsOverlap, "0s", paygatev1.AnnotationRotateSandboxCredentials, "rotation-3")
		Eventually(refused(second)).Should(Succeed())
		third := clientFor(shop.merchant, paygatev1.EnvironmentSandbox)
		_, err = third.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("refusing an overlap that does not read, rotating nothing")
		annotate(paygatev1.AnnotationCredentialsOverlap, "a day", paygatev1.AnnotationRotateSandboxCredentials, "rotation-4")
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(shop.merchant), &m)).To(Succeed())
			c := meta.FindStatusCondition(m.Status.Conditions, paygatev1.ConditionSandboxCredentialsIssued)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring(paygatev1.AnnotationCredentialsOverlap))
			g.Expect(c.Reason).To(Equal("InvalidAnnotation"))
		}).Should(Succeed())
		_, err = third.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred(), "the credentials did not change")
		var evs eventsv1.EventList
		Expect(k8s.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
		events := fmt.Sprintf("%+v", evs.Items)
		Expect(events).To(ContainSubstring("CredentialsOverlapEnded"))
		for _, secret := range []string{old.Credentials.APIKey, old.Credentials.APISecret, rotated.Credentials.APISecret} {
			Expect(events).NotTo(ContainSubstring(secret))
			Expect(fmt.Sprintf("%+v", m.Status)).NotTo(ContainSubstring(secret))
		}
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
