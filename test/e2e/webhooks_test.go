// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/pkg/paygate"
)

// receiver is a merchant's webhook endpoint: a real HTTP server that records what it receives
// and answers what the test scripts.
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []received
	answers []int // status per request; the last one repeats
	delay   time.Duration
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(answers ...int) *receiver {
	r := &receiver{answers: answers}
	if len(answers) == 0 {
		r.answers = []int{http.StatusOK}
	}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.got)
		r.got = append(r.got, received{header: req.Header.Clone(), body: body})
		status := r.answers[min(n, len(r.answers)-1)]
		delay := r.delay
		r.mu.Unlock()
		time.Sleep(delay)
		if status >= 300 && status < 400 {
			w.Header().Set("Location", r.srv.URL+"/elsewhere")
		}
		w.WriteHeader(status)
	}))
	DeferCleanup(r.srv.Close)
	return r
}

func (r *receiver) url() string { return r.srv.URL + "/hooks/paygate" }

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func (r *receiver) answer(status ...int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers, r.got = status, nil
}

func webhookSecret(m *paygatev1.Merchant) []byte {
	var s corev1.Secret
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: credentials.WebhookSecretName(m.Name)}, &s)).To(Succeed())
	return s.Data[credentials.KeySigningSecret]
}

func deliveries(ns string) []paygatev1.WebhookDelivery {
	var list paygatev1.WebhookDeliveryList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

var _ = Describe("Webhooks", func() {
	var (
		ns   string
		duka *merchantFixture
	)
	BeforeEach(func() {
		ns = newNamespace()
		// Production payments here are simulated: there is no upstream provider.
		createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.Simulation = paygatev1.SimulationSandboxAndProduction })
		duka = createMerchant(ns, "duka")
	})

	pushPayment := func(phone, webhookURL string) string {
		created, err := duka.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "10000", CurrencyCode: "TZS", RefTrx: uniqueName("order"), PaymentMode: "push",
			CustomerPhone: phone, CustomerName: "Asha", CustomerEmail: "asha@example.com", WebhookURL: webhookURL,
		}, "")
		Expect(err).NotTo(HaveOccurred())
		return created.TrxID
	}

	It("delivers one signed payment.completed that matches the spec field by field", func() {
		rcv := newReceiver()
		trx := pushPayment("+255712345678", rcv.url())
		Eventually(func() int { return len(rcv.requests()) }).Should(Equal(1))
		Consistently(func() int { return len(rcv.requests()) }, "1s").Should(Equal(1))
		got := rcv.requests()[0]

		verifier := paygate.WebhookVerifier{Secret: webhookSecret(duka.merchant)}
		event, err := verifier.Verify(got.header, got.body)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.header.Get("X-Paygate-Event")).To(Equal("payment.completed"))
		Expect(got.header.Get("X-Environment")).To(Equal("sandbox"))
		Expect(got.header.Get("X-Paygate-Timestamp")).To(MatchRegexp(`^\d{10}$`))
		Expect(got.header.Get("X-Paygate-Signature")).To(MatchRegexp(`^[0-9a-f]{64}$`))
		Expect(got.header.Get("Content-Type")).To(Equal("application/json"))
		Expect(event.ID).To(MatchRegexp(`^evt_[0-9a-z]+$`))
		Expect(event.Type).To(Equal("payment.completed"))
		Expect(event.APIVersion).To(MatchRegexp(`^\d{4}-\d\d-\d\d$`))
		_, err = time.Parse(time.RFC3339, event.CreatedAt)
		Expect(err).NotTo(HaveOccurred())
		Expect(event.CreatedAt).To(MatchRegexp(`[+-]\d\d:\d\d$`), "ISO 8601 with offset")
		Expect(got.body).To(MatchJSON(`{
			"id": "` + event.ID + `", "type": "payment.completed", "api_version": "` + event.APIVersion + `", "created_at": "` + event.CreatedAt + `",
			"data": {
				"trx_id": "` + trx + `", "merchant_ref": ` + jsonString(refOf(ns, trx)) + `, "status": "completed",
				"amount": {"value": 10000.00, "currency": "TZS"},
				"settlement": {"gross": {"value": 10000.00, "currency": "TZS"}, "fees": {"value": 250.00, "currency": "TZS"}, "net": {"value": 9750.00, "currency": "TZS"}},
				"customer": {"name": "Asha", "email": "asha@example.com", "phone": "+255712345678"},
				"environment": "sandbox", "remark": "SANDBOX_TRANSACTION"
			}}`))
		Expect(string(got.body)).To(ContainSubstring(`"value":10000.00`), "values at the currency's scale")

		By("rejecting a tampered body, a wrong secret and an old delivery")
		_, err = verifier.Verify(got.header, append([]byte(nil), got.body[:len(got.body)-2]...))
		Expect(err).To(MatchError(paygate.ErrWebhookSignature))
		_, err = paygate.WebhookVerifier{Secret: []byte("whsec_wrong")}.Verify(got.header, got.body)
		Expect(err).To(MatchError(paygate.ErrWebhookSignature))
		_, err = paygate.WebhookVerifier{Secret: webhookSecret(duka.merchant), Now: func() time.Time { return time.Now().Add(6 * time.Minute) }}.Verify(got.header, got.body)
		Expect(err).To(MatchError(paygate.ErrWebhookTimestamp))

		ds := deliveries(ns)
		Expect(ds).To(HaveLen(1))
		Expect(ds[0].Spec.EventID).To(Equal(event.ID))
		Eventually(func(g Gomega) {
			var d paygatev1.WebhookDelivery
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&ds[0]), &d)).To(Succeed())
			g.Expect(d.EffectiveStatus().Phase).To(Equal(paygatev1.DeliveryDelivered))
		}).Should(Succeed())
	})

	It("delivers payment.failed with the failure code", func() {
		rcv := newReceiver()
		trx := pushPayment("+255711000001", rcv.url())
		Eventually(func() int { return len(rcv.requests()) }).Should(Equal(1))
		var body map[string]any
		Expect(json.Unmarshal(rcv.requests()[0].body, &body)).To(Succeed())
		Expect(body["type"]).To(Equal("payment.failed"))
		data := body["data"].(map[string]any)
		Expect(data["trx_id"]).To(Equal(trx))
		Expect(data["status"]).To(Equal("failed"))
		Expect(data["reason"]).To(Equal("INSUFFICIENT_FUNDS"))
		Expect(data["settlement"].(map[string]any)["net"]).To(Equal(map[string]any{"value": 0.0, "currency": "TZS"}))
		Expect(data["remark"]).To(Equal("SANDBOX_TRANSACTION"))

		By("reporting the same net amount through verify-payment")
		v, err := duka.sandbox.VerifyPayment(ctx, trx)
		Expect(err).NotTo(HaveOccurred())
		Expect(v.Status).To(Equal("failed"))
		Expect(v.NetAmount.String()).To(Equal("0.00"))
		Expect(v.Fee.String()).To(Equal("0.00"))
	})

	It("retries 500s, timeouts, refused connections and redirects on the schedule with one event id", func() {
		rcv := newReceiver(http.StatusInternalServerError, http.StatusFound, http.StatusOK)
		pushPayment("+255712345678", rcv.url())
		Eventually(func() int { return len(rcv.requests()) }, "30s").Should(Equal(3))
		ids := map[string]bool{}
		for _, r := range rcv.requests() {
			var e map[string]any
			Expect(json.Unmarshal(r.body, &e)).To(Succeed())
			ids[e["id"].(string)] = true
		}
		Expect(ids).To(HaveLen(1), "every attempt carries the same id")
		Eventually(func(g Gomega) {
			d := deliveries(ns)[0]
			g.Expect(d.EffectiveStatus().Phase).To(Equal(paygatev1.DeliveryDelivered))
			g.Expect(d.EffectiveStatus().Attempts).To(HaveLen(3))
			g.Expect(d.EffectiveStatus().Attempts[0].StatusCode).To(BeEquivalentTo(500))
			g.Expect(d.EffectiveStatus().Attempts[1].StatusCode).To(BeEquivalentTo(302))
		}).Should(Succeed())

		By("abandoning after 5 attempts, then redelivering on request with the same id")
		dead := newReceiver(http.StatusServiceUnavailable)
		dead.delay = 0
		pushPayment("+255712345679", dead.url())
		var abandoned paygatev1.WebhookDelivery
		Eventually(func(g Gomega) {
			for _, d := range deliveries(ns) {
				if d.Spec.URL == dead.url() {
					abandoned = d
				}
			}
			g.Expect(abandoned.EffectiveStatus().Phase).To(Equal(paygatev1.DeliveryAbandoned))
		}, "30s").Should(Succeed())
		Expect(abandoned.EffectiveStatus().Attempts).To(HaveLen(5))
		Expect(dead.requests()).To(HaveLen(5))
		dead.answer(http.StatusNoContent)
		abandoned.Annotations = map[string]string{paygatev1.AnnotationRedeliver: "ops-1"}
		Expect(k8s.Update(ctx, &abandoned)).To(Succeed())
		Eventually(func(g Gomega) {
			var d paygatev1.WebhookDelivery
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&abandoned), &d)).To(Succeed())
			g.Expect(d.EffectiveStatus().Phase).To(Equal(paygatev1.DeliveryDelivered))
			g.Expect(d.EffectiveStatus().TotalAttempts).To(BeEquivalentTo(6))
		}).Should(Succeed())
		Expect(dead.requests()[0].header.Get("X-Paygate-Event-Id")).To(Equal(abandoned.Spec.EventID))

		By("recording timeouts and refused connections")
		slow := newReceiver(http.StatusOK)
		slow.delay = 3 * time.Second
		pushPayment("+255712345680", slow.url())
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		closedURL := "http://" + ln.Addr().String() + "/hooks"
		Expect(ln.Close()).To(Succeed())
		pushPayment("+255712345681", closedURL)
		Eventually(func(g Gomega) {
			var timedOut, refused bool
			for _, d := range deliveries(ns) {
				for _, a := range d.EffectiveStatus().Attempts {
					timedOut = timedOut || (d.Spec.URL == slow.url() && a.Error != "" && a.StatusCode == 0)
					refused = refused || (d.Spec.URL == closedURL && a.Error != "")
				}
			}
			g.Expect(timedOut).To(BeTrue())
			g.Expect(refused).To(BeTrue())
		}, "30s").Should(Succeed())
	})

	It("never lets a slow receiver stall another merchant's delivery", func() {
		slow := newReceiver(http.StatusOK)
		slow.delay = 5 * time.Second // beyond the 1 s attempt timeout: every attempt hangs
		fast := newReceiver(http.StatusOK)
		// Ten hanging deliveries: one at a time they would hold the queue for ten timeouts.
		for range 10 {
			pushPayment("+255712345678", slow.url())
		}
		Eventually(func() int { return len(slow.requests()) }).Should(BeNumerically(">=", 1))
		pushPayment("+255712345678", fast.url())
		Eventually(func() int { return len(fast.requests()) }, "5s").Should(Equal(1))
	})

	It("loses and duplicates no event across a manager restart mid-schedule", func() {
		rcv := newReceiver(http.StatusInternalServerError)
		trx := pushPayment("+255712345678", rcv.url())
		Eventually(func() int { return len(rcv.requests()) }).Should(BeNumerically(">=", 1))
		Expect(env.StopManager()).To(Succeed())
		rcv.answer(http.StatusOK)
		_, err := env.StartManager(managerOptions())
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return len(rcv.requests()) }, "30s").Should(BeNumerically(">=", 1))
		Eventually(func(g Gomega) {
			ds := deliveries(ns)
			g.Expect(ds).To(HaveLen(1))
			g.Expect(ds[0].EffectiveStatus().Phase).To(Equal(paygatev1.DeliveryDelivered))
			g.Expect(ds[0].Spec.Source.Name).To(Equal(trx))
		}).Should(Succeed())
	})

	It("never reaches private addresses in production", func() {
		rcv := newReceiver()
		created, err := duka.production.CreatePayment(ctx, paygate.CreatePaymentRequest{
			PaymentAmount: "10000", CurrencyCode: "TZS", RefTrx: uniqueName("live"), PaymentMode: "push",
			CustomerPhone: "+255712345678", WebhookURL: "https://" + rcv.srv.Listener.Addr().String() + "/hooks",
		}, "")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			ds := deliveries(ns)
			g.Expect(ds).To(HaveLen(1))
			g.Expect(ds[0].Spec.Source.Name).To(Equal(created.TrxID))
			g.Expect(ds[0].EffectiveStatus().Attempts).NotTo(BeEmpty())
			g.Expect(ds[0].EffectiveStatus().Attempts[0].Error).To(ContainSubstring("loopback"))
		}).Should(Succeed())
		Expect(rcv.requests()).To(BeEmpty())

		By("marking the simulated production payment where the merchant sees it")
		Expect(deliveries(ns)[0].Spec.Payload).To(ContainSubstring(`"remark":"SIMULATED_PRODUCTION"`))
		v, err := duka.production.VerifyPayment(ctx, created.TrxID)
		Expect(err).NotTo(HaveOccurred())
		Expect(v.Status).To(Equal("success"))
		Expect(v.Remark).To(Equal("SIMULATED_PRODUCTION"))
	})
})

func refOf(ns, trx string) string {
	var p paygatev1.Payment
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: trx}, &p)).To(Succeed())
	return p.Spec.MerchantReference
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
