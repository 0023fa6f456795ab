// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/apiserver"
	"github.com/paygate/paygate/pkg/paygate"
)

// expectAPIError checks an answer in the API's error shape (docs/api.md, Errors): the status, the
// stable label, a message containing message, and no other keys than error, message and errors.
func expectAPIError(status int, body string, wantStatus int, label, message string) {
	GinkgoHelper()
	Expect(status).To(Equal(wantStatus), body)
	var e map[string]any
	Expect(json.Unmarshal([]byte(body), &e)).To(Succeed(), "an error body in JSON: %q", body)
	Expect(e).To(HaveKeyWithValue("error", label), body)
	Expect(e).To(HaveKeyWithValue("message", And(BeAssignableToTypeOf(""), Not(BeEmpty()), ContainSubstring(message))), body)
	for k := range e {
		Expect(k).To(BeElementOf("error", "message", "errors"), body)
	}
}

// nothingRecorded checks that no payment, payout, plan, subscription or idempotency key exists in
// ns: a refused request wrote nothing.
func nothingRecorded(ns string) {
	GinkgoHelper()
	var payments paygatev1.PaymentList
	Expect(k8s.List(ctx, &payments, client.InNamespace(ns))).To(Succeed())
	Expect(payments.Items).To(BeEmpty(), "payments")
	Expect(payoutsIn(ns)).To(BeEmpty(), "payouts")
	Expect(plansIn(ns)).To(BeEmpty(), "plans")
	Expect(subscriptionsIn(ns)).To(BeEmpty(), "subscriptions")
	var keys paygatev1.IdempotencyKeyList
	Expect(k8s.List(ctx, &keys, client.InNamespace(ns))).To(Succeed())
	Expect(keys.Items).To(BeEmpty(), "idempotency keys")
}

// paymentsIn lists the Payment objects of a namespace.
func paymentsIn(ns string) []paygatev1.Payment {
	var list paygatev1.PaymentList
	ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// sendAt is send against the apiserver at base (another instance than the suite's).
func sendAt(base, method, target string, header http.Header, body string) (int, http.Header, string) {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, method, base+target, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.URL.Opaque = "//" + req.URL.Host + strings.SplitN(target, "?", 2)[0]
	req.Header = header
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, resp.Header, string(b)
}

// headerLine is one header line sent as it is: name spelled exactly, repeated lines kept.
type headerLine struct{ name, value string }

// signedLines are the header lines of a correctly signed request, in order, with canonical names.
func signedLines(c *paygate.Client, method, target, body string) []headerLine {
	t := strconv.FormatInt(time.Now().Unix(), 10)
	return []headerLine{
		{"X-Environment", c.Credentials.Environment},
		{"X-Merchant-Key", c.Credentials.MerchantKey},
		{"X-API-Key", c.Credentials.APIKey},
		{"X-Timestamp", t},
		{"X-Signature", paygate.Sign(c.Credentials.APISecret, t, method, target, []byte(body))},
		{"Content-Type", "application/json"},
	}
}

// lineValue is the value of the first line named name (exact spelling).
func lineValue(lines []headerLine, name string) string {
	for _, l := range lines {
		if l.name == name {
			return l.value
		}
	}
	Fail("no header line " + name)
	return ""
}

// rawRequest writes an HTTP/1.1 request byte for byte: the request line, Host, the lines as
// given, Connection: close, and the body with its Content-Length.
func rawRequest(method, target string, lines []headerLine, body string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, target)
	for _, l := range lines {
		fmt.Fprintf(&b, "%s: %s\r\n", l.name, l.value)
	}
	if body != "" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("Connection: close\r\n\r\n")
	b.WriteString(body)
	return []byte(b.String())
}

// rawExchange sends request bytes over a new TCP connection to addr (host:port on 127.0.0.1) and
// reads one response; every step is bounded by a deadline.
func rawExchange(addr string, request []byte) (int, http.Header, string) {
	GinkgoHelper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	Expect(conn.SetDeadline(time.Now().Add(20 * time.Second))).To(Succeed())
	_, err = conn.Write(request)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, resp.Header, string(b)
}

// startReplica starts another apiserver on 127.0.0.1 against the same control plane, with opts
// adjusted by mod, and stops it when the spec ends. It returns its host:port.
func startReplica(name string, mod func(*apiserver.Options)) string {
	GinkgoHelper()
	replicaCtx, stop := context.WithCancel(ctx)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	opts := apiserver.Options{CheckoutKey: key, PublicURL: "http://checkout.paygate.test", Log: logf.Log.WithName(name)}
	mod(&opts)
	rt, done, err := apiserver.Start(replicaCtx, env.Config, "127.0.0.1:0", opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		stop()
		Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
	})
	return rt.Listener.Addr().String()
}

// expectReplayed sends body to target once per header set (each a replay of a request already
// answered first) and expects the first answer back, byte for byte, marked as a replay.
func expectReplayed(target, body, first string, replays ...http.Header) {
	GinkgoHelper()
	for _, h := range replays {
		status, hdr, out := send("POST", target, h, body)
		Expect(status).To(Equal(http.StatusOK), out)
		Expect(hdr.Get("Idempotent-Replayed")).To(Equal("true"))
		Expect(out).To(Equal(first))
	}
}

// hostPort is the suite apiserver's address, for raw connections.
func hostPort() string { return strings.TrimPrefix(baseURL, "http://") }

var _ = Describe("Attacks on the merchant API", func() {
	var (
		ns   string
		duka *merchantFixture
	)
	BeforeEach(func() {
		ns = newNamespace()
		createGateway("TZS")
		duka = createMerchant(ns, "duka")
	})

	paymentBody := func(ref string) string {
		return `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"` + ref + `","payment_mode":"hosted"}`
	}

	Context("replayed requests", func() {
		It("answers a GET replayed inside the tolerance again, harmlessly", func() {
			target := "/api/v1/payments?limit=5"
			h := signedHeaders(duka.sandbox, "GET", target, "", time.Now())
			status, _, first := send("GET", target, h, "")
			Expect(status).To(Equal(http.StatusOK), first)
			status, _, again := send("GET", target, h.Clone(), "")
			Expect(status).To(Equal(http.StatusOK), again)
			Expect(again).To(MatchJSON(first))
			nothingRecorded(ns)
		})

		It("never creates a second payment from a create replayed inside the tolerance", func() {
			body := paymentBody("replay-1")
			h := signedHeaders(duka.sandbox, "POST", "/api/v1/payments", body, time.Now())
			status, _, first := send("POST", "/api/v1/payments", h.Clone(), body)
			Expect(status).To(Equal(http.StatusOK), first)
			Expect(paymentsIn(ns)).To(HaveLen(1))

			By("replaying the same signed request, without an Idempotency-Key")
			for range 3 {
				status, _, out := send("POST", "/api/v1/payments", h.Clone(), body)
				expectAPIError(status, out, http.StatusConflict, "DUPLICATE_REFERENCE", "")
				Expect(out).To(ContainSubstring(`"ref_trx"`))
			}
			Expect(paymentsIn(ns)).To(HaveLen(1))

			By("replaying a signed request that carries an Idempotency-Key: the first answer, byte for byte")
			body = paymentBody("replay-2")
			h = signedHeaders(duka.sandbox, "POST", "/api/v1/payments", body, time.Now())
			h.Set("Idempotency-Key", "replay-key-2")
			status, hdr, first := send("POST", "/api/v1/payments", h.Clone(), body)
			Expect(status).To(Equal(http.StatusOK), first)
			Expect(hdr.Get("Idempotent-Replayed")).To(BeEmpty())
			expectReplayed("/api/v1/payments", body, first, h.Clone(), h.Clone(), h.Clone())
			Expect(paymentsIn(ns)).To(HaveLen(2))
		})

		It("never creates a second plan or subscription from a replayed create", func() {
			plan := `{"code":"replay-gold","name":"Gold","amount":15000,"currency_code":"TZS","interval":"month"}`
			h := signedHeaders(duka.sandbox, "POST", "/api/v1/billing/plans", plan, time.Now())
			status, _, out := send("POST", "/api/v1/billing/plans", h.Clone(), plan)
			Expect(status).To(Equal(http.StatusOK), out)
			status, _, out = send("POST", "/api/v1/billing/plans", h.Clone(), plan)
			expectAPIError(status, out, http.StatusConflict, "DUPLICATE_PLAN_CODE", "")
			Expect(plansIn(ns)).To(HaveLen(1))

			sub := `{"plan_code":"replay-gold","customer_phone":"` + noAnswerPhone + `","terms_shown":"Gold: TZS 15,000 a month."}`
			h = signedHeaders(duka.sandbox, "POST", "/api/v1/billing/subscriptions", sub, time.Now())
			h.Set("Idempotency-Key", "replay-signup")
			status, _, first := send("POST", "/api/v1/billing/subscriptions", h.Clone(), sub)
			Expect(status).To(Equal(http.StatusOK), first)
			expectReplayed("/api/v1/billing/subscriptions", sub, first, h.Clone())
			Expect(subscriptionsIn(ns)).To(HaveLen(1))
		})

		It("never makes a second payout or subscription from a keyless create replayed inside the tolerance", func() {
			createGateway("TZS", func(g *paygatev1.Gateway) {
				g.Spec.Payouts = &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: "1"}}
			})
			payer := payoutMerchant(ns, "payer", "")
			fund(payer, "10000")
			body := `{"amount":2000}`
			h := signedHeaders(payer.sandbox, "POST", "/api/v1/payouts", body, time.Now())
			status, hdr, first := send("POST", "/api/v1/payouts", h.Clone(), body)
			Expect(status).To(Equal(http.StatusOK), first)
			Expect(hdr.Get("Idempotent-Replayed")).To(BeEmpty())
			By("replaying it as it was, and with the signature's hex in upper case")
			upper := h.Clone()
			upper.Set("X-Signature", "sha256="+strings.ToUpper(strings.TrimPrefix(h.Get("X-Signature"), "sha256=")))
			expectReplayed("/api/v1/payouts", body, first, h.Clone(), upper, h.Clone())
			Expect(payoutsIn(ns)).To(HaveLen(1), "one payout, whatever the replays")
			By("a new request (another signature) is another payout")
			other := signedHeaders(payer.sandbox, "POST", "/api/v1/payouts", `{"amount":2001}`, time.Now())
			status, _, out := send("POST", "/api/v1/payouts", other, `{"amount":2001}`)
			Expect(status).To(Equal(http.StatusOK), out)
			Expect(payoutsIn(ns)).To(HaveLen(2))

			By("the same for a subscription create without a key")
			plan := `{"code":"replay-silver","name":"Silver","amount":4000,"currency_code":"TZS","interval":"week"}`
			status, _, out = send("POST", "/api/v1/billing/plans", signedHeaders(duka.sandbox, "POST", "/api/v1/billing/plans", plan, time.Now()), plan)
			Expect(status).To(Equal(http.StatusOK), out)
			sub := `{"plan_code":"replay-silver","customer_phone":"` + noAnswerPhone + `","terms_shown":"Silver: TZS 4,000 a week."}`
			h = signedHeaders(duka.sandbox, "POST", "/api/v1/billing/subscriptions", sub, time.Now())
			status, _, first = send("POST", "/api/v1/billing/subscriptions", h.Clone(), sub)
			Expect(status).To(Equal(http.StatusOK), first)
			expectReplayed("/api/v1/billing/subscriptions", sub, first, h.Clone())
			Expect(subscriptionsIn(ns)).To(HaveLen(1))
		})

		It("refuses a signed request replayed after the tolerance, and records nothing", func() {
			addr := startReplica("apiserver-replay", func(o *apiserver.Options) { o.SignatureTolerance = 2 * time.Second })
			base := "http://" + addr
			clientAt(base, duka.merchant, paygatev1.EnvironmentSandbox) // the replica knows the merchant

			sentBody, heldBody := paymentBody("late-1"), paymentBody("late-2")
			signedAt := time.Now()
			sent := signedHeaders(duka.sandbox, "POST", "/api/v1/payments", sentBody, signedAt)
			held := signedHeaders(duka.sandbox, "POST", "/api/v1/payments", heldBody, signedAt)
			held.Set("Idempotency-Key", "late-key")
			status, _, out := sendAt(base, "POST", "/api/v1/payments", sent.Clone(), sentBody)
			Expect(status).To(Equal(http.StatusOK), out)

			By("waiting until the timestamp is more than 2 seconds old")
			signedSecond := time.Unix(signedAt.Unix(), 0)
			time.Sleep(time.Until(signedSecond.Add(4 * time.Second)))
			for name, req := range map[string]struct {
				h    http.Header
				body string
			}{"the request already answered": {sent, sentBody}, "a request never sent before": {held, heldBody}} {
				status, _, out := sendAt(base, "POST", "/api/v1/payments", req.h.Clone(), req.body)
				By(name)
				expectAPIError(status, out, http.StatusUnauthorized, "INVALID_SIGNATURE", "X-Timestamp is outside the allowed window of 2 seconds.")
			}
			Expect(paymentsIn(ns)).To(HaveLen(1))
			var keys paygatev1.IdempotencyKeyList
			Expect(k8s.List(ctx, &keys, client.InNamespace(ns))).To(Succeed())
			Expect(keys.Items).To(BeEmpty())
		})
	})

	DescribeTable("refuses forged and malformed signatures on a create, recording nothing",
		func(forge func(h http.Header, body string), message string) {
			body := paymentBody("forged-1")
			h := signedHeaders(duka.sandbox, "POST", "/api/v1/payments", body, time.Now())
			h.Set("Idempotency-Key", "forged-key")
			forge(h, body)
			status, _, out := send("POST", "/api/v1/payments", h, body)
			expectAPIError(status, out, http.StatusUnauthorized, "INVALID_SIGNATURE", message)
			Expect(out).NotTo(ContainSubstring(duka.sandbox.Credentials.APISecret))
			nothingRecorded(ns)
		},
		Entry("signed with another secret", func(h http.Header, body string) {
			h.Set("X-Signature", paygate.Sign("test_sk_attacker", h.Get("X-Timestamp"), "POST", "/api/v1/payments", []byte(body)))
		}, "X-Signature does not match the request."),
		Entry("signed with the API key, which travels in the clear", func(h http.Header, body string) {
			h.Set("X-Signature", paygate.Sign(duka.sandbox.Credentials.APIKey, h.Get("X-Timestamp"), "POST", "/api/v1/payments", []byte(body)))
		}, "X-Signature does not match the request."),
		Entry("signed with the production secret", func(h http.Header, body string) {
			h.Set("X-Signature", paygate.Sign(duka.production.Credentials.APISecret, h.Get("X-Timestamp"), "POST", "/api/v1/payments", []byte(body)))
		}, "X-Signature does not match the request."),
		Entry("one hex digit short", func(h http.Header, _ string) {
			sig := h.Get("X-Signature")
			h.Set("X-Signature", sig[:len(sig)-1])
		}, "X-Signature must be sha256=<hex HMAC-SHA256>."),
		Entry("half the digest", func(h http.Header, _ string) {
			h.Set("X-Signature", h.Get("X-Signature")[:len("sha256=")+32])
		}, "X-Signature must be sha256=<hex HMAC-SHA256>."),
		Entry("the prefix alone", func(h http.Header, _ string) { h.Set("X-Signature", "sha256=") }, "X-Signature must be sha256=<hex HMAC-SHA256>."),
		Entry("one hex digit too many", func(h http.Header, _ string) { h.Set("X-Signature", h.Get("X-Signature")+"0") }, "X-Signature must be sha256=<hex HMAC-SHA256>."),
		Entry("the digest in base64", func(h http.Header, body string) {
			m := hmac.New(sha256.New, []byte(duka.sandbox.Credentials.APISecret))
			m.Write([]byte(h.Get("X-Timestamp") + ".POST./api/v1/payments." + body))
			h.Set("X-Signature", "sha256="+base64.StdEncoding.EncodeToString(m.Sum(nil)))
		}, "X-Signature must be sha256=<hex HMAC-SHA256>."),
		Entry("an HMAC-SHA1 under a sha1= prefix", func(h http.Header, body string) {
			m := hmac.New(sha1.New, []byte(duka.sandbox.Credentials.APISecret))
			m.Write([]byte(h.Get("X-Timestamp") + ".POST./api/v1/payments." + body))
			h.Set("X-Signature", fmt.Sprintf("sha1=%x", m.Sum(nil)))
		}, "X-Signature must be sha256=<hex HMAC-SHA256>."),
		Entry("the right digest after a colon", func(h http.Header, _ string) {
			h.Set("X-Signature", strings.Replace(h.Get("X-Signature"), "sha256=", "sha256:", 1))
		}, "X-Signature must be sha256=<hex HMAC-SHA256>."),
		Entry("one hex digit changed", func(h http.Header, _ string) {
			sig := []byte(h.Get("X-Signature"))
			last := len(sig) - 1
			if sig[last] == '0' {
				sig[last] = '1'
			} else {
				sig[last] = '0'
			}
			h.Set("X-Signature", string(sig))
		}, "X-Signature does not match the request."),
		Entry("an empty X-Signature", func(h http.Header, _ string) { h["X-Signature"] = []string{""} }, "X-Timestamp and X-Signature are required."),
		Entry("an empty X-Timestamp", func(h http.Header, _ string) { h["X-Timestamp"] = []string{""} }, "X-Timestamp and X-Signature are required."),
		Entry("a timestamp signed but changed in the header", func(h http.Header, _ string) {
			ts, _ := strconv.ParseInt(h.Get("X-Timestamp"), 10, 64)
			h.Set("X-Timestamp", strconv.FormatInt(ts-1, 10))
		}, "X-Signature does not match the request."),
	)

	It("accepts the digest in upper-case hex, as documented", func() {
		body := paymentBody("upper-1")
		h := signedHeaders(duka.sandbox, "POST", "/api/v1/payments", body, time.Now())
		h.Set("X-Signature", "sha256="+strings.ToUpper(strings.TrimPrefix(h.Get("X-Signature"), "sha256=")))
		status, _, out := send("POST", "/api/v1/payments", h, body)
		Expect(status).To(Equal(http.StatusOK), out)
		Expect(paymentsIn(ns)).To(HaveLen(1))
	})

	Context("header smuggling", func() {
		var rival *merchantFixture
		BeforeEach(func() { rival = createMerchant(ns, "rival") })

		// refused sends lines to GET /api/v1/payments over a raw connection and expects the refusal;
		// accepted expects a 200.
		refused := func(lines []headerLine, label, message string) {
			GinkgoHelper()
			status, _, body := rawExchange(hostPort(), rawRequest("GET", "/api/v1/payments", lines, ""))
			expectAPIError(status, body, http.StatusUnauthorized, label, message)
		}
		accepted := func(lines []headerLine) {
			GinkgoHelper()
			status, _, body := rawExchange(hostPort(), rawRequest("GET", "/api/v1/payments", lines, ""))
			Expect(status).To(Equal(http.StatusOK), body)
		}
		get := func() []headerLine { return signedLines(duka.sandbox, "GET", "/api/v1/payments", "") }

		It("treats header names case-insensitively, like the canonical names", func() {
			lower := get()
			for i := range lower {
				lower[i].name = strings.ToLower(lower[i].name)
			}
			accepted(lower)
			upper := get()
			for i := range upper {
				upper[i].name = strings.ToUpper(upper[i].name)
			}
			accepted(upper)
			mixed := get()
			for i := range mixed {
				mixed[i].name = strings.Map(func(r rune) rune {
					if r%2 == 0 {
						return r
					}
					return []rune(strings.ToLower(string(r)))[0]
				}, strings.ToUpper(mixed[i].name))
			}
			accepted(mixed)

			By("still refusing bad credentials sent under a lower-case name")
			bad := get()
			bad[2] = headerLine{"x-api-key", "test_pk_wrong"}
			refused(bad, "INVALID_CREDENTIALS", "Invalid API credentials.")
		})

		DescribeTable("refuses a credential header sent twice, whichever value comes first",
			func(name string, other func() string, label, message string) {
				for _, otherFirst := range []bool{false, true} {
					lines := get()
					var out []headerLine
					for _, l := range lines {
						if strings.EqualFold(l.name, name) {
							dup := headerLine{strings.ToLower(name), other()}
							if otherFirst {
								out = append(out, dup, l)
							} else {
								out = append(out, l, dup)
							}
							continue
						}
						out = append(out, l)
					}
					Expect(out).To(HaveLen(len(lines) + 1))
					refused(out, label, message)
				}
			},
			Entry("X-API-Key, another key", "X-API-Key", func() string { return "test_pk_attacker" }, "INVALID_CREDENTIALS", "Invalid API credentials."),
			Entry("X-API-Key, the rival's key", "X-API-Key", func() string { return rival.sandbox.Credentials.APIKey }, "INVALID_CREDENTIALS", "Invalid API credentials."),
			Entry("X-API-Key, the same key", "X-API-Key", func() string { return duka.sandbox.Credentials.APIKey }, "INVALID_CREDENTIALS", "Invalid API credentials."),
			Entry("X-Merchant-Key, the rival's business ID", "X-Merchant-Key", func() string { return rival.sandbox.Credentials.MerchantKey }, "INVALID_CREDENTIALS", "Invalid API credentials."),
			Entry("X-Environment, production", "X-Environment", func() string { return "production" }, "INVALID_CREDENTIALS", "Invalid API credentials."),
			Entry("X-Environment, sandbox again", "X-Environment", func() string { return "sandbox" }, "INVALID_CREDENTIALS", "Invalid API credentials."),
			Entry("X-Signature, garbage", "X-Signature", func() string { return "sha256=" + strings.Repeat("0", 64) }, "INVALID_SIGNATURE", "X-Timestamp and X-Signature must each be sent once."),
			Entry("X-Timestamp, another second", "X-Timestamp", func() string { return strconv.FormatInt(time.Now().Unix()-1, 10) }, "INVALID_SIGNATURE", "X-Timestamp and X-Signature must each be sent once."),
		)

		It("refuses two identical X-Signature lines and a comma-joined X-API-Key", func() {
			lines := get()
			lines = append(lines, headerLine{"x-signature", lineValue(lines, "X-Signature")})
			refused(lines, "INVALID_SIGNATURE", "X-Timestamp and X-Signature must each be sent once.")

			lines = get()
			for i := range lines {
				if lines[i].name == "X-API-Key" {
					lines[i].value += ", " + lines[i].value
				}
			}
			refused(lines, "INVALID_CREDENTIALS", "Invalid API credentials.")
		})

		It("refuses X-Merchant-Key and X-Business-Key that disagree, and accepts them equal", func() {
			withAlias := func(merchantKey, aliasKey string) []headerLine {
				lines := get()
				for i := range lines {
					if lines[i].name == "X-Merchant-Key" {
						lines[i].value = merchantKey
					}
				}
				return append(lines, headerLine{"X-Business-Key", aliasKey})
			}
			own, other := duka.sandbox.Credentials.MerchantKey, rival.sandbox.Credentials.MerchantKey
			refused(withAlias(own, other), "INVALID_CREDENTIALS", "Invalid API credentials.")
			refused(withAlias(other, own), "INVALID_CREDENTIALS", "Invalid API credentials.")
			refused(withAlias(own, "test_mk_nobody"), "INVALID_CREDENTIALS", "Invalid API credentials.")
			refused(withAlias("test_mk_nobody", own), "INVALID_CREDENTIALS", "Invalid API credentials.")
			accepted(withAlias(own, own))

			By("refusing the alias sent twice")
			lines := get()
			var aliasTwice []headerLine
			for _, l := range lines {
				if l.name != "X-Merchant-Key" {
					aliasTwice = append(aliasTwice, l)
				}
			}
			accepted(append(append([]headerLine{}, aliasTwice...), headerLine{"X-Business-Key", own}))
			refused(append(append([]headerLine{}, aliasTwice...), headerLine{"X-Business-Key", own}, headerLine{"x-business-key", other}),
				"INVALID_CREDENTIALS", "Invalid API credentials.")
		})

		It("records nothing for a create whose headers are smuggled", func() {
			body := paymentBody("smuggled-1")
			lines := signedLines(duka.sandbox, "POST", "/api/v1/payments", body)
			lines = append(lines, headerLine{"X-Business-Key", rival.sandbox.Credentials.MerchantKey}, headerLine{"Idempotency-Key", "smuggled-key"})
			status, _, out := rawExchange(hostPort(), rawRequest("POST", "/api/v1/payments", lines, body))
			expectAPIError(status, out, http.StatusUnauthorized, "INVALID_CREDENTIALS", "Invalid API credentials.")

			lines = signedLines(duka.sandbox, "POST", "/api/v1/payments", body)
			lines = append(lines, headerLine{"x-api-key", "test_pk_attacker"})
			status, _, out = rawExchange(hostPort(), rawRequest("POST", "/api/v1/payments", lines, body))
			expectAPIError(status, out, http.StatusUnauthorized, "INVALID_CREDENTIALS", "Invalid API credentials.")
			nothingRecorded(ns)

			By("creating it with the same headers sent once")
			lines = signedLines(duka.sandbox, "POST", "/api/v1/payments", body)
			status, _, out = rawExchange(hostPort(), rawRequest("POST", "/api/v1/payments", lines, body))
			Expect(status).To(Equal(http.StatusOK), out)
			Expect(paymentsIn(ns)).To(HaveLen(1))
		})
	})

	Context("oversized requests", func() {
		It("refuses a body over 64 KiB with 422 and records nothing, with a length or chunked", func() {
			padding := strings.Repeat("x", 64<<10)
			body := `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"big-1","description":"` + padding + `"}`
			h := signedHeaders(duka.sandbox, "POST", "/api/v1/payments", body, time.Now())
			h.Set("Idempotency-Key", "big-key")
			status, _, out := send("POST", "/api/v1/payments", h, body)
			expectAPIError(status, out, http.StatusUnprocessableEntity, "Validation failed", "The request body must be at most 65536 bytes.")
			Expect(out).To(ContainSubstring(`"body"`))

			By("sending it chunked, without a length")
			req, err := http.NewRequestWithContext(ctx, "POST", baseURL+"/api/v1/payments", io.MultiReader(strings.NewReader(body)))
			Expect(err).NotTo(HaveOccurred())
			req.Header = h.Clone()
			Expect(req.ContentLength).To(BeZero(), "a body of unknown length, sent chunked")
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			expectAPIError(resp.StatusCode, string(b), http.StatusUnprocessableEntity, "Validation failed", "The request body must be at most 65536 bytes.")

			By("refusing 64 KiB and one byte, and accepting exactly 64 KiB")
			small := paymentBody("edge-1")
			edge := small[:len(small)-1] + `,"x":"` + strings.Repeat("y", 64<<10-len(small)-7) + `"}`
			Expect(edge).To(HaveLen(64 << 10))
			h = signedHeaders(duka.sandbox, "POST", "/api/v1/payments", edge+" ", time.Now())
			status, _, out = send("POST", "/api/v1/payments", h, edge+" ")
			expectAPIError(status, out, http.StatusUnprocessableEntity, "Validation failed", "at most 65536 bytes")
			nothingRecorded(ns)
			h = signedHeaders(duka.sandbox, "POST", "/api/v1/payments", edge, time.Now())
			status, _, out = send("POST", "/api/v1/payments", h, edge)
			Expect(status).To(Equal(http.StatusOK), out)
			Expect(paymentsIn(ns)).To(HaveLen(1))
		})

		It("answers a body of megabytes without reading it all, and keeps serving", func() {
			conn, err := net.DialTimeout("tcp", hostPort(), 5*time.Second)
			Expect(err).NotTo(HaveOccurred())
			defer conn.Close()
			Expect(conn.SetDeadline(time.Now().Add(20 * time.Second))).To(Succeed())
			const size = 16 << 20
			head := rawRequest("POST", "/api/v1/payments", []headerLine{
				{"Content-Type", "application/json"}, {"Content-Length", strconv.Itoa(size)},
			}, "")
			_, err = conn.Write(head)
			Expect(err).NotTo(HaveOccurred())
			written := make(chan int64, 1)
			go func() { // the server stops reading: this write fails or times out, bounded by the deadline
				n, _ := io.CopyN(conn, neverEnding('x'), size)
				written <- n
			}()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			Expect(err).NotTo(HaveOccurred())
			b, _ := io.ReadAll(resp.Body)
			expectAPIError(resp.StatusCode, string(b), http.StatusUnprocessableEntity, "Validation failed", "at most 65536 bytes")
			_ = conn.Close()
			Eventually(written).WithTimeout(25 * time.Second).Should(Receive(BeNumerically("<", size)))
			nothingRecorded(ns)

			_, err = duka.sandbox.ListPayments(ctx, paygate.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
		})

		It("refuses headers over the limit with 431 and keeps serving", func() {
			lines := signedLines(duka.sandbox, "GET", "/api/v1/payments", "")
			lines = append(lines, headerLine{"X-Padding", strings.Repeat("p", 40<<10)})
			status, _, body := rawExchange(hostPort(), rawRequest("GET", "/api/v1/payments", lines, ""))
			Expect(status).To(Equal(http.StatusRequestHeaderFieldsTooLarge), body)

			By("refusing many small headers that add up over the limit too")
			lines = signedLines(duka.sandbox, "GET", "/api/v1/payments", "")
			for i := range 1000 {
				lines = append(lines, headerLine{fmt.Sprintf("X-Pad-%d", i), strings.Repeat("q", 40)})
			}
			status, _, body = rawExchange(hostPort(), rawRequest("GET", "/api/v1/payments", lines, ""))
			Expect(status).To(Equal(http.StatusRequestHeaderFieldsTooLarge), body)

			By("answering a request with headers under the limit")
			lines = signedLines(duka.sandbox, "GET", "/api/v1/payments", "")
			lines = append(lines, headerLine{"X-Padding", strings.Repeat("p", 16<<10)})
			status, _, body = rawExchange(hostPort(), rawRequest("GET", "/api/v1/payments", lines, ""))
			Expect(status).To(Equal(http.StatusOK), body)
			_, err := duka.sandbox.ListPayments(ctx, paygate.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
		})
	})

	It("keeps answering other clients while slow clients trickle headers, and disconnects them", func() {
		const headerTimeout = 1500 * time.Millisecond
		addr := startReplica("apiserver-slowloris", func(o *apiserver.Options) { o.ReadHeaderTimeout = headerTimeout })
		replica := clientAt("http://"+addr, duka.merchant, paygatev1.EnvironmentSandbox)

		type slow struct {
			opened, closed time.Time
			got            string
			sent           int
		}
		const clients = 8
		results := make([]slow, clients)
		var wg sync.WaitGroup
		partial := "GET /api/v1/site-info HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Environment: sandbox\r\nX-Merchant-Key: " +
			duka.sandbox.Credentials.MerchantKey + "\r\nX-Pad: " + strings.Repeat("z", 200)
		for i := range clients {
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(conn.Close)
			r := &results[i]
			r.opened = time.Now()
			Expect(conn.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
			stop := make(chan struct{})
			if i%4 != 3 { // every fourth client connects and sends nothing at all
				wg.Go(func() { // a byte every 100 ms until the server hangs up: 10 s at most
					for j := 0; j < len(partial); j++ {
						select {
						case <-stop:
							return
						case <-time.After(100 * time.Millisecond):
						}
						if _, err := conn.Write([]byte{partial[j]}); err != nil {
							return
						}
						r.sent++
					}
				})
			}
			wg.Go(func() {
				defer close(stop)
				rest, _ := io.ReadAll(conn) // until the server closes the connection (or the deadline)
				r.got, r.closed = string(rest), time.Now()
			})
		}

		By("answering a signed request from another client promptly meanwhile")
		for range 3 {
			start := time.Now()
			_, err := replica.ListPayments(ctx, paygate.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(time.Since(start)).To(BeNumerically("<", time.Second))
			time.Sleep(200 * time.Millisecond)
		}
		wg.Wait()

		By("having closed every slow connection once its header time was up, without an answer")
		for i, r := range results {
			Expect(r.got).NotTo(HavePrefix("HTTP/1.1 200"), "slow client %d got an answer", i)
			elapsed := r.closed.Sub(r.opened)
			Expect(elapsed).To(BeNumerically(">=", headerTimeout-100*time.Millisecond), "slow client %d", i)
			Expect(elapsed).To(BeNumerically("<", headerTimeout+2*time.Second), "slow client %d was not disconnected in time", i)
			if i%4 != 3 {
				Expect(r.sent).To(BeNumerically("<", len(partial)), "slow client %d sent its whole partial header", i)
			}
		}
		_, err := replica.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
	})
})

// neverEnding is an endless stream of one byte.
type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}
