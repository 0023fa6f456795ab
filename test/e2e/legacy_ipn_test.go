// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/pkg/paygate"
)

// ipnLine is what the Node.js receiver printed about one delivery.
type ipnLine struct {
	Raw       bool           `json:"raw"`
	Stringify bool           `json:"stringify"`
	Plugin    bool           `json:"plugin"`
	Status    string         `json:"status"`
	TrxID     string         `json:"trx_id"`
	Data      map[string]any `json:"data"`
	Error     string         `json:"error"`
}

// legacyReceiver runs testdata/legacy-ipn-receiver.js, a receiver written for the older
// gateway's IPN convention, with secret; it returns its URL and what it has seen so far.
func legacyReceiver(secret string) (string, func() []ipnLine) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			Fail("node is missing in CI")
		}
		Skip("node is not installed: the legacy IPN receivers are written in JavaScript")
	}
	cmd := exec.Command(node, "testdata/legacy-ipn-receiver.js")
	cmd.Env = append(os.Environ(), "IPN_SECRET="+secret)
	out, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	cmd.Stderr = GinkgoWriter
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	Expect(lines.Scan()).To(BeTrue(), "the receiver prints its port")
	var hello struct{ Listening int }
	Expect(json.Unmarshal(lines.Bytes(), &hello)).To(Succeed())
	var (
		mu   sync.Mutex
		seen []ipnLine
	)
	go func() {
		for lines.Scan() {
			var l ipnLine
			if json.Unmarshal(lines.Bytes(), &l) == nil {
				mu.Lock()
				seen = append(seen, l)
				mu.Unlock()
			}
		}
	}()
	return fmt.Sprintf("http://127.0.0.1:%d/ipn", hello.Listening), func() []ipnLine {
		mu.Lock()
		defer mu.Unlock()
		return append([]ipnLine(nil), seen...)
	}
}

func secretValue(ns, name, key string) string {
	var s corev1.Secret
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s)).To(Succeed())
	return string(s.Data[key])
}

var _ = Describe("Legacy IPN webhooks", func() {
	It("reach receivers written for the older gateway, signed with either key, and a format change applies to later events only", func() {
		ns := newNamespace()
		createGateway("TZS")
		legacy := createMerchant(ns, "legacy-shop", func(m *paygatev1.Merchant) { m.Spec.WebhookFormat = paygatev1.WebhookFormatLegacyIPN })
		apiSigned := createMerchant(ns, "api-signed", func(m *paygatev1.Merchant) {
			m.Spec.WebhookFormat, m.Spec.LegacyIPNSigningKey = paygatev1.WebhookFormatLegacyIPN, paygatev1.SigningKeyAPISecret
		})
		webhookSecret := secretValue(ns, credentials.WebhookSecretName(legacy.merchant.Name), credentials.KeySigningSecret)
		set, ok := credentials.SetFromData(func() map[string][]byte {
			var s corev1.Secret
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: credentials.SecretName(apiSigned.merchant.Name, paygatev1.EnvironmentSandbox)}, &s)).To(Succeed())
			return s.Data
		}())
		Expect(ok).To(BeTrue())
		legacyURL, legacySeen := legacyReceiver(webhookSecret)
		apiURL, apiSeen := legacyReceiver(set.APISecret)

		pay := func(f *merchantFixture, url, ref, amount, phone string) string {
			created, err := f.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{
				PaymentAmount: json.Number(amount), CurrencyCode: "TZS", RefTrx: ref, WebhookURL: url,
				PaymentMode: "push", CustomerPhone: phone, CustomerName: "Zoë Ñandú 山田", CustomerEmail: "zoe@duka.example",
				Description: `Order "1001" https://duka.example/orders/1001?a=b/c`,
			}, "")
			Expect(err).NotTo(HaveOccurred())
			return created.TrxID
		}
		paid := pay(legacy, legacyURL, "legacy/1", "1500.00", "+255712345678")
		declined := pay(legacy, legacyURL, "legacy/2", "37.50", insufficientFundsPhone)
		apiPaid := pay(apiSigned, apiURL, "api/1", "2500", "+255712345678")

		byTrx := func(lines []ipnLine) map[string]ipnLine {
			out := map[string]ipnLine{}
			for _, l := range lines {
				out[l.TrxID] = l
			}
			return out
		}
		Eventually(func(g Gomega) {
			seen := byTrx(legacySeen())
			g.Expect(seen).To(HaveKey(paid))
			g.Expect(seen).To(HaveKey(declined))
			for _, trx := range []string{paid, declined} {
				l := seen[trx]
				g.Expect(l.Raw).To(BeTrue(), "raw-body hash of %s", trx)
				g.Expect(l.Stringify).To(BeTrue(), "JSON.stringify hash of %s", trx)
				g.Expect(l.Plugin).To(BeTrue())
			}
			g.Expect(seen[paid].Status).To(Equal("completed"))
			g.Expect(seen[paid].Data).To(HaveKeyWithValue("amount", BeNumerically("==", 1500)))
			g.Expect(seen[paid].Data).To(HaveKeyWithValue("ref_trx", "legacy/1"))
			g.Expect(seen[paid].Data).To(HaveKeyWithValue("customer_name", "Zoë Ñandú 山田"))
			g.Expect(seen[declined].Status).To(Equal("failed"))
			g.Expect(seen[declined].Data).To(HaveKeyWithValue("amount", BeNumerically("==", 37.5)))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			l, ok := byTrx(apiSeen())[apiPaid]
			g.Expect(ok).To(BeTrue())
			g.Expect(l.Raw && l.Stringify && l.Plugin).To(BeTrue(), "signed with the sandbox API secret: %+v", l)
		}).Should(Succeed())
		expectDelivered := func(trx string, format paygatev1.WebhookFormat) {
			Eventually(func(g Gomega) {
				var list paygatev1.WebhookDeliveryList
				g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
				found := false
				for _, d := range list.Items {
					if d.Spec.Source.Name == trx {
						found = true
						g.Expect(d.Spec.Format).To(Equal(format))
						g.Expect(d.EffectiveStatus().Phase).To(Equal(paygatev1.DeliveryDelivered))
					}
				}
				g.Expect(found).To(BeTrue())
			}).Should(Succeed())
		}
		expectDelivered(paid, paygatev1.WebhookFormatLegacyIPN)

		By("switching the merchant to the standard format: later events are standard, earlier ones stay legacy")
		Eventually(func(g Gomega) {
			m := &paygatev1.Merchant{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(legacy.merchant), m)).To(Succeed())
			m.Spec.WebhookFormat = paygatev1.WebhookFormatStandard
			g.Expect(k8s.Update(ctx, m)).To(Succeed())
		}).Should(Succeed())
		hook := newReceiver()
		later := pay(legacy, hook.url(), "legacy/3", "1500", "+255712345678")
		Eventually(func(g Gomega) {
			reqs := hook.requests()
			g.Expect(reqs).NotTo(BeEmpty())
			e, err := (paygate.WebhookVerifier{Secret: []byte(webhookSecret)}).Verify(reqs[0].header, reqs[0].body)
			g.Expect(err).NotTo(HaveOccurred(), "a standard delivery, verified by the Go client")
			d, err := e.PaymentData()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.TrxID).To(Equal(later))
			g.Expect(reqs[0].header.Get("X-Signature")).To(BeEmpty(), "no legacy signature any more")
		}).Should(Succeed())
		expectDelivered(later, paygatev1.WebhookFormatStandard)
		expectDelivered(paid, paygatev1.WebhookFormatLegacyIPN)
	})

	It("accepts unsigned requests only where the merchant's switch allows them, never production without the administrator", func() {
		ns := newNamespace()
		createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.Simulation = paygatev1.SimulationSandboxAndProduction })
		plugin := createMerchant(ns, "plugin-shop", func(m *paygatev1.Merchant) {
			m.Spec.UnsignedRequests = []paygatev1.Environment{paygatev1.EnvironmentSandbox, paygatev1.EnvironmentProduction}
		})
		signer := createMerchant(ns, "signing-shop")
		unsigned := func(c *paygate.Client, ref string) (int, string) {
			body := `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"` + ref + `","payment_mode":"hosted"}`
			h := http.Header{"X-Environment": {c.Credentials.Environment}, "X-Merchant-Key": {c.Credentials.MerchantKey},
				"X-Api-Key": {c.Credentials.APIKey}, "Content-Type": {"application/json"}}
			status, _, out := send("POST", "/api/v1/payments", h, body)
			return status, out
		}
		status, out := unsigned(plugin.sandbox, "plugin-1")
		Expect(status).To(Equal(http.StatusOK), out)
		status, out = unsigned(plugin.production, "plugin-2")
		expectAPIError(status, out, http.StatusUnauthorized, "INVALID_SIGNATURE", "")
		status, out = unsigned(signer.sandbox, "signer-1")
		expectAPIError(status, out, http.StatusUnauthorized, "INVALID_SIGNATURE", "")
		var payments paygatev1.PaymentList
		Expect(k8s.List(ctx, &payments, client.InNamespace(ns))).To(Succeed())
		Expect(payments.Items).To(HaveLen(1), "only the sandbox request of the merchant whose switch is on")
		Eventually(func(g Gomega) {
			m := &paygatev1.Merchant{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(plugin.merchant), m)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(m.Status.Conditions, paygatev1.ConditionUnsignedRequestsAccepted)).To(BeTrue())
		}).Should(Succeed())
	})
})
