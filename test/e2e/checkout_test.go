// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// merchantSite is where checkout sends customers back.
type merchantSite struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits []string
}

func newMerchantSite() *merchantSite {
	m := &merchantSite{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.hits = append(m.hits, r.URL.RequestURI())
		m.mu.Unlock()
		_, _ = io.WriteString(w, "<!doctype html><title>Shop</title><h1 id=shop>Back at the shop</h1>")
	}))
	DeferCleanup(m.srv.Close)
	return m
}

func (m *merchantSite) visited() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.hits...)
}

var _ = Describe("Hosted checkout in a real browser", Ordered, func() {
	var (
		chromium string
		ns       string
		duka     *merchantFixture
		mpesa    *paygatev1.Gateway
		tigo     *paygatev1.Gateway
		shop     *merchantSite
		outDir   string
	)
	BeforeAll(func() {
		path := requireChromium()
		chromium = path
		outDir = filepath.Join("..", "output", "checkout")
		Expect(os.MkdirAll(outDir, 0o755)).To(Succeed())
	})

	BeforeEach(func() {
		ns = newNamespace()
		mpesa = createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.DisplayName = "M-Pesa Tanzania" })
		tigo = createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.DisplayName = "Tigo Pesa" })
		duka = createMerchant(ns, "duka")
		shop = newMerchantSite()
	})

	// open starts a browser of its own for the spec (a phone-sized window, nothing shared with
	// other specs) and returns its tab and the checkout URL on the test's apiserver. One browser per
	// spec, not one tab per spec in a shared browser, so no spec's page waits behind another's.
	open := func(checkoutURL string) (context.Context, string) {
		u, err := url.Parse(checkoutURL)
		Expect(err).NotTo(HaveOccurred())
		tab := browser(chromium, 390, 844)
		return tab, baseURL + u.RequestURI()
	}
	// screenshot writes a picture for review (screenshotTo).
	screenshot := func(tab context.Context, name string) { screenshotTo(tab, filepath.Join(outDir, name+".png")) }
	create := func(extra func(*paygate.CreatePaymentRequest)) *paygate.CreatePaymentResponse {
		req := paygate.CreatePaymentRequest{
			PaymentAmount: "15000", CurrencyCode: "TZS", RefTrx: uniqueName("order"), Description: "Kilo ya kahawa",
			SuccessRedirect: shop.srv.URL + "/thanks", CancelRedirect: shop.srv.URL + "/cart",
		}
		if extra != nil {
			extra(&req)
		}
		res, err := duka.sandbox.CreatePayment(ctx, req, "")
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	gatewaysShown := func(tab context.Context) []string {
		var codes []string
		Expect(chromedp.Run(tab, chromedp.Evaluate(`Array.from(document.querySelectorAll("input[name=gateway]")).map(e => e.value)`, &codes))).To(Succeed())
		return codes
	}

	It("lets a customer pay on a phone-sized screen and lands on success_redirect; the merchant gets the webhook", func() {
		rcv := newReceiver()
		res := create(func(r *paygate.CreatePaymentRequest) { r.WebhookURL = rcv.url() })
		tab, link := open(res.Data.CheckoutURL)
		var heading, banner, amount string
		Expect(chromedp.Run(tab,
			chromedp.Navigate(link),
			chromedp.WaitVisible(`#pay`, chromedp.ByQuery),
			chromedp.Text(`#heading`, &heading, chromedp.ByQuery),
			chromedp.Text(`.sandbox`, &banner, chromedp.ByQuery),
			chromedp.Text(`.amount`, &amount, chromedp.ByQuery),
		)).To(Succeed())
		Expect(heading).To(ContainSubstring("Duka duka"))
		Expect(banner).To(ContainSubstring("Sandbox"))
		Expect(amount).To(Equal("TZS 15,000"), "grouped as people in Tanzania read it")
		Expect(gatewaysShown(tab)).To(Equal([]string{mpesa.Name, tigo.Name}), "no selection: by display name")
		screenshot(tab, "1-form")

		Expect(chromedp.Run(tab,
			chromedp.Click(`input[value="`+mpesa.Name+`"]`, chromedp.ByQuery),
			chromedp.SendKeys(`#phone`, "0712 345 678", chromedp.ByQuery),
			chromedp.Click(`#pay`, chromedp.ByQuery),
		)).To(Succeed())
		Eventually(func() string {
			var loc string
			_ = chromedp.Run(tab, chromedp.Location(&loc))
			return loc
		}, "30s", "200ms").Should(HavePrefix(shop.srv.URL + "/thanks?"))
		Expect(shop.visited()).To(ContainElement(And(ContainSubstring("/thanks?"), ContainSubstring("status=success"), ContainSubstring("trx_id="+res.TrxID))))
		Expect(chromedp.Run(tab, chromedp.WaitVisible(`#shop`, chromedp.ByQuery))).To(Succeed())
		screenshot(tab, "2-back-at-shop")

		v, err := duka.sandbox.VerifyPayment(ctx, res.TrxID)
		Expect(err).NotTo(HaveOccurred())
		Expect(v.Status).To(Equal("success"))
		var p paygatev1.Payment
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: res.TrxID}, &p)).To(Succeed())
		Expect(p.Status.Gateway).To(Equal(mpesa.Code()), "the customer's choice")
		Eventually(func() int { return len(rcv.requests()) }).Should(Equal(1))
		Expect(rcv.requests()[0].header.Get("X-Paygate-Event")).To(Equal("payment.completed"))
	})

	It("shows the insufficient-funds message and ends on cancel_redirect", func() {
		res := create(nil)
		tab, link := open(res.Data.CheckoutURL)
		var message string
		Expect(chromedp.Run(tab,
			chromedp.Navigate(link),
			chromedp.WaitVisible(`#pay`, chromedp.ByQuery),
			chromedp.Click(`input[value="`+tigo.Name+`"]`, chromedp.ByQuery),
			chromedp.SendKeys(`#phone`, "0711 000 001", chromedp.ByQuery),
			chromedp.Click(`#pay`, chromedp.ByQuery),
			chromedp.WaitVisible(`#result`, chromedp.ByQuery),
			chromedp.Text(`#result`, &message, chromedp.ByQuery),
		)).To(Succeed())
		Expect(message).To(ContainSubstring("not enough money"))
		screenshot(tab, "3-insufficient-funds")
		Eventually(func() string {
			var loc string
			_ = chromedp.Run(tab, chromedp.Location(&loc))
			return loc
		}, "30s", "200ms").Should(HavePrefix(shop.srv.URL + "/cart?"))
		Expect(shop.visited()).To(ContainElement(ContainSubstring("status=failed")))
	})

	It("can be completed with the keyboard alone", func() {
		res := create(nil)
		tab, link := open(res.Data.CheckoutURL)
		var focused string
		Expect(chromedp.Run(tab,
			chromedp.Navigate(link),
			chromedp.WaitVisible(`#pay`, chromedp.ByQuery),
			chromedp.Focus(`input[name=gateway]`, chromedp.ByQuery), // the first radio, as Tab reaches it
			chromedp.KeyEvent(" "),                                  // select it
			chromedp.KeyEvent(kb.Tab),                               // to the phone field
			chromedp.Evaluate(`document.activeElement.id`, &focused),
		)).To(Succeed())
		Expect(focused).To(Equal("phone"), "Tab moves from the gateways to the phone number")
		Expect(chromedp.Run(tab,
			chromedp.KeyEvent("0712345678"),
			chromedp.KeyEvent(kb.Enter), // submits the form
		)).To(Succeed())
		Eventually(func() string {
			var loc string
			_ = chromedp.Run(tab, chromedp.Location(&loc))
			return loc
		}, "30s", "200ms").Should(HavePrefix(shop.srv.URL + "/thanks?"))
	})

	It("asks again for an invalid phone number, in Swahili when asked", func() {
		res := create(nil)
		tab, link := open(res.Data.CheckoutURL + "&lang=sw")
		var alert, legend string
		Expect(chromedp.Run(tab,
			chromedp.Navigate(link),
			chromedp.WaitVisible(`#pay`, chromedp.ByQuery),
			chromedp.Text(`legend`, &legend, chromedp.ByQuery),
			chromedp.Click(`input[value="`+mpesa.Name+`"]`, chromedp.ByQuery),
			chromedp.SendKeys(`#phone`, "12345", chromedp.ByQuery),
			chromedp.Click(`#pay`, chromedp.ByQuery),
			chromedp.WaitVisible(`#form-error`, chromedp.ByQuery),
			chromedp.Text(`#form-error`, &alert, chromedp.ByQuery),
		)).To(Succeed())
		Expect(legend).To(Equal("Chagua njia ya kulipa"))
		Expect(alert).To(ContainSubstring("Weka namba sahihi"))
		screenshot(tab, "4-invalid-phone-sw")
		var p paygatev1.Payment
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: res.TrxID}, &p)).To(Succeed())
		Expect(p.Spec.PushRequest).To(BeNil(), "nothing recorded for a bad number")
	})

	It("shows only the gateways the rules allow: the selection narrowed by allow_payment_methods", func() {
		other := createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.DisplayName = "Airtel Money" })
		createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.DisplayName = "Halo Pesa"; g.Spec.Active = ptr.To(false) })
		createGateway("KES", func(g *paygatev1.Gateway) { g.Spec.DisplayName = "M-Pesa Kenya" })
		sel := &paygatev1.GatewaySelection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "duka"},
			Spec: paygatev1.GatewaySelectionSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"},
				Gateways: []paygatev1.GatewayCode{tigo.Code(), mpesa.Code()}}}
		Expect(k8s.Create(ctx, sel)).To(Succeed())
		var all, filtered *paygate.CreatePaymentResponse
		Eventually(func(g Gomega) {
			all = create(nil)
			var p paygatev1.Payment
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: all.TrxID}, &p)).To(Succeed())
			g.Expect(p.Spec.Gateways).NotTo(ContainElement(other.Code()), "the apiserver's cache has the selection")
		}).WithPolling(500 * time.Millisecond).Should(Succeed())
		filtered = create(func(r *paygate.CreatePaymentRequest) { r.AllowPaymentMethods = []string{"TIGO"} })

		tab, link := open(all.Data.CheckoutURL)
		Expect(chromedp.Run(tab, chromedp.Navigate(link), chromedp.WaitVisible(`#pay`, chromedp.ByQuery))).To(Succeed())
		Expect(gatewaysShown(tab)).To(Equal([]string{tigo.Name, mpesa.Name}), "in the selection's order")
		tab, link = open(filtered.Data.CheckoutURL)
		Expect(chromedp.Run(tab, chromedp.Navigate(link), chromedp.WaitVisible(`#pay`, chromedp.ByQuery))).To(Succeed())
		Expect(gatewaysShown(tab)).To(ConsistOf(tigo.Name))
		screenshot(tab, "5-filtered")
	})

	It("shows clear pages for a tampered link and an expired one, with nothing of the merchant", func() {
		res := create(nil)
		tampered := strings.Replace(res.Data.CheckoutURL, "signature=", "signature=0", 1)
		tampered = tampered[:len(tampered)-1]
		tab, link := open(tampered)
		var body string
		Expect(chromedp.Run(tab, chromedp.Navigate(link), chromedp.Text(`body`, &body, chromedp.ByQuery))).To(Succeed())
		Expect(body).To(ContainSubstring("This payment link is not valid"))
		Expect(body).NotTo(ContainSubstring("Duka"))
		Expect(body).NotTo(ContainSubstring("15,000"))
		screenshot(tab, "6-tampered")

		// A payment whose session ended, with a link the apiserver signed for it.
		expired := &paygatev1.Payment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "trx-" + strings.Repeat("e", 24),
				Labels: map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox"}},
			Spec: paygatev1.PaymentSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: "sandbox",
				MerchantReference: "old-order", Amount: "15000.00", Currency: "TZS", Mode: paygatev1.PaymentModeHosted,
				Gateways: []paygatev1.GatewayCode{mpesa.Code()}, CancelRedirect: shop.srv.URL + "/cart",
				ExpiresAt: metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))},
		}
		Expect(k8s.Create(ctx, expired)).To(Succeed())
		tab, link = open(api.Server.CheckoutURL(expired))
		Expect(chromedp.Run(tab, chromedp.Navigate(link), chromedp.WaitVisible(`#heading`, chromedp.ByQuery), chromedp.Text(`body`, &body, chromedp.ByQuery))).To(Succeed())
		Expect(body).To(ContainSubstring("This payment link has expired"))
		Expect(body).NotTo(ContainSubstring("Pay 15000"))
		screenshot(tab, "7-expired")
	})

	It("serves the page with a strict Content-Security-Policy and no outside assets", func() {
		res := create(nil)
		u, _ := url.Parse(res.Data.CheckoutURL)
		resp, err := http.Get(baseURL + u.RequestURI())
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		csp := resp.Header.Get("Content-Security-Policy")
		Expect(csp).To(ContainSubstring("default-src 'none'"))
		Expect(csp).To(ContainSubstring("script-src 'self'"))
		Expect(csp).To(ContainSubstring("frame-ancestors 'none'"))
		Expect(string(body)).NotTo(MatchRegexp(`(src="https?://|<link[^>]+href="https?://)`), "no assets from other hosts")
		Expect(len(body)).To(BeNumerically("<", 8*1024), "light enough for a 3G phone")
	})
})
