// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// The merchant console's webhook delivery pages (docs/console.md, Webhook deliveries), against
// the real manager delivering to real receivers: one merchant's event delivered at once, another
// merchant's abandoned after its receiver answered 500 to every attempt.
var _ = Describe("The merchant console's webhook deliveries", Ordered, func() {
	var (
		ns                  string
		duka, soko          *merchantFixture
		accepts, fails      *receiver
		dukaEvent, sokoEvnt paygatev1.WebhookDelivery
		outDir, chromium    string
	)

	// deliveryOf waits for the one delivery of m's that reached phase.
	deliveryOf := func(m *paygatev1.Merchant, phase paygatev1.DeliveryPhase) paygatev1.WebhookDelivery {
		var found paygatev1.WebhookDelivery
		Eventually(func(g Gomega) {
			var mine []paygatev1.WebhookDelivery
			for _, d := range deliveries(ns) {
				if d.Spec.MerchantRef.Name == m.Name {
					mine = append(mine, d)
				}
			}
			g.Expect(mine).To(HaveLen(1))
			g.Expect(mine[0].Phase()).To(Equal(phase))
			found = mine[0]
		}).Should(Succeed())
		return found
	}

	BeforeAll(func() {
		ns = newNamespace()
		createGateway("TZS")
		duka = createMerchant(ns, "duka")
		soko = createMerchant(ns, "soko")
		accepts, fails = newReceiver(http.StatusOK), newReceiver(http.StatusInternalServerError)
		outDir = filepath.Join("..", "output", "console")
		Expect(os.MkdirAll(outDir, 0o755)).To(Succeed())
		chromium = chromiumPath()

		pay := func(f *merchantFixture, ref, hook string) string {
			res, err := f.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "15000", CurrencyCode: "TZS", RefTrx: ref,
				Description: "Kahawa", PaymentMode: "push", CustomerPhone: "+255712345678", WebhookURL: hook}, "")
			Expect(err).NotTo(HaveOccurred())
			return res.TrxID
		}
		dukaTrx := pay(duka, "order-hooked", accepts.url())
		sokoTrx := pay(soko, "soko-hooked", fails.url())
		dukaEvent = deliveryOf(duka.merchant, paygatev1.DeliveryDelivered)
		Expect(dukaEvent.Spec.Source.Name).To(Equal(dukaTrx))
		Expect(accepts.requests()).To(HaveLen(1))
		sokoEvnt = deliveryOf(soko.merchant, paygatev1.DeliveryAbandoned)
		Expect(sokoEvnt.Spec.Source.Name).To(Equal(sokoTrx))
		Expect(len(fails.requests())).To(BeNumerically(">=", 2))
	})

	It("lists each merchant's deliveries with status and response code, and shows another merchant's as not found", func() {
		dukaViewer := invite(duka.merchant, "hooks-viewer@duka.example", paygatev1.ConsoleViewer)
		d := newConsoleClient(baseURL)
		d.signUp(dukaViewer)
		sokoDev := invite(soko.merchant, "hooks-dev@soko.example", paygatev1.ConsoleDeveloper)
		s := newConsoleClient(baseURL)
		s.signUp(sokoDev)

		Eventually(func(g Gomega) {
			status, _, body := d.get("/console/webhooks?env=sandbox")
			g.Expect(status).To(Equal(http.StatusOK))
			g.Expect(body).To(ContainSubstring(`id="total">1<`))
			g.Expect(body).To(ContainSubstring(dukaEvent.Spec.EventID))
			g.Expect(body).To(ContainSubstring(`status-delivered">Delivered<`))
			g.Expect(body).To(ContainSubstring(">200<"))
			g.Expect(body).NotTo(ContainSubstring(sokoEvnt.Spec.EventID))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			status, _, body := s.get("/console/webhooks?env=sandbox&status=failed")
			g.Expect(status).To(Equal(http.StatusOK))
			g.Expect(body).To(ContainSubstring(`id="total">1<`))
			g.Expect(body).To(ContainSubstring(sokoEvnt.Spec.EventID))
			g.Expect(body).To(ContainSubstring(`status-failed">Failed<`))
			g.Expect(body).To(ContainSubstring(">500<"))
			g.Expect(body).NotTo(ContainSubstring(dukaEvent.Spec.EventID))
		}).Should(Succeed())
		_, _, body := s.get("/console/webhooks?env=sandbox&status=delivered")
		Expect(body).To(ContainSubstring(`id="total">0<`), "no delivered one of soko's")
		_, _, body = d.get("/console/webhooks?env=production")
		Expect(body).To(ContainSubstring(`id="total">0<`), "nothing of duka's in production")

		// The detail: soko's developer sees every attempt, the receiver and the payload; nothing
		// secret (no signature, no signing secret).
		status, _, body := s.get("/console/webhooks/" + sokoEvnt.Name + "?env=sandbox")
		Expect(status).To(Equal(http.StatusOK), body)
		Expect(body).To(ContainSubstring(`id="status">Failed<`))
		Expect(body).To(ContainSubstring(`id="total-attempts">5<`))
		Expect(strings.Count(body, "HTTP 500")).To(Equal(5))
		Expect(body).To(ContainSubstring(fails.url()))
		Expect(body).To(ContainSubstring(`id="payload"`))
		Expect(body).To(ContainSubstring(sokoEvnt.Spec.EventID))
		for _, got := range fails.requests() {
			Expect(body).NotTo(ContainSubstring(got.header.Get("X-Paygate-Signature")))
		}
		Expect(body).NotTo(ContainSubstring(string(webhookSecret(soko.merchant))))
		// Duka's viewer sees its own delivery without the receiver or the payload.
		status, _, body = d.get("/console/webhooks/" + dukaEvent.Name + "?env=sandbox")
		Expect(status).To(Equal(http.StatusOK), body)
		Expect(body).To(ContainSubstring(`id="code">200<`))
		Expect(body).To(ContainSubstring(`id="payload-hidden"`))
		Expect(body).NotTo(ContainSubstring(accepts.url()))
		Expect(body).NotTo(ContainSubstring(`id="payload"`))

		// A user of one merchant asking for the other's delivery by name: not found, as a missing
		// one, in either environment and on the other merchant's pages alike.
		for _, tc := range []struct {
			c    *consoleClient
			name string
		}{{d, sokoEvnt.Name}, {s, dukaEvent.Name}, {d, "whd-aaaaaaaaaaaaaaaaaaaaaaaa"}, {d, "whd-" + strings.Repeat("z", 80)}} {
			for _, env := range []string{"sandbox", "production"} {
				status, _, body := tc.c.get("/console/webhooks/" + tc.name + "?env=" + env)
				Expect(status).To(Equal(http.StatusNotFound), "%s in %s: %s", tc.name, env, body)
				Expect(body).NotTo(ContainSubstring("evt_"))
			}
		}
		status, _, _ = d.get("/console/webhooks/" + dukaEvent.Name + "?env=production")
		Expect(status).To(Equal(http.StatusNotFound), "duka's sandbox delivery in production")
	})

	It("shows the deliveries and a delivery in a real browser, at phone and desktop widths, in English and Swahili, accessibly", func() {
		requireChromium()
		for _, width := range []struct {
			name string
			w, h int
			role paygatev1.ConsoleRole
		}{{"desktop", 1280, 900, paygatev1.ConsoleDeveloper}, {"phone", 390, 844, paygatev1.ConsoleViewer}} {
			tab := browser(chromium, width.w, width.h)
			shot := func(name string) {
				screenshotTo(tab, filepath.Join(outDir, width.name+"-"+name+".png"))
				expectAccessible(tab, width.name+" "+name)
			}
			u := invite(duka.merchant, "hooks-"+width.name+"@duka.example", width.role)
			signUpIn(tab, u)
			var total string
			var cells []string
			Expect(chromedp.Run(tab,
				chromedp.Click(`nav.nav a[href^="/console/webhooks"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`#count`, chromedp.ByQuery),
				chromedp.Text(`#total`, &total, chromedp.ByQuery),
			)).To(Succeed(), "the deliveries from the navigation")
			Expect(total).To(Equal("0"), "an approved business's console opens on production, where duka has none")
			Expect(chromedp.Run(tab,
				chromedp.Click(`p.env a[href="?env=sandbox"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`#rows`, chromedp.ByQuery),
			)).To(Succeed(), "the sandbox deliveries from the environment switch")
			Expect(chromedp.Run(tab,
				chromedp.Text(`#total`, &total, chromedp.ByQuery),
				chromedp.Evaluate(`Array.from(document.querySelectorAll("#rows tbody td")).map(e => e.textContent.trim())`, &cells),
			)).To(Succeed())
			Expect(total).To(Equal("1"))
			Expect(cells).To(HaveLen(8))
			Expect(cells[:6]).To(Equal([]string{"payment.completed", dukaEvent.Spec.EventID, dukaEvent.Spec.Source.Name,
				"Delivered", "200", "1"}))
			shot("10-webhooks")

			// Filtered by event type: the one that has none, then back.
			Expect(chromedp.Run(tab,
				chromedp.SetValue(`#f-event_type`, "payout.failed", chromedp.ByQuery),
				chromedp.Click(`#apply`, chromedp.ByQuery),
			)).To(Succeed())
			Eventually(func() string {
				var loc string
				_ = chromedp.Run(tab, chromedp.Location(&loc))
				return loc
			}, "30s", "100ms").Should(ContainSubstring("event_type=payout.failed"))
			Expect(chromedp.Run(tab,
				chromedp.WaitVisible(`#count`, chromedp.ByQuery),
				chromedp.Text(`#total`, &total, chromedp.ByQuery),
			)).To(Succeed())
			Expect(total).To(Equal("0"))

			var status, code string
			Expect(chromedp.Run(tab,
				chromedp.Navigate(baseURL+"/console/webhooks?env=sandbox&status=delivered"),
				chromedp.WaitVisible(`#rows`, chromedp.ByQuery),
				chromedp.Click(`#rows a[href^="/console/webhooks/`+dukaEvent.Name+`"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`#attempts`, chromedp.ByQuery),
				chromedp.Text(`#status`, &status, chromedp.ByQuery),
				chromedp.Text(`#code`, &code, chromedp.ByQuery),
			)).To(Succeed())
			Expect(status).To(Equal("Delivered"))
			Expect(code).To(Equal("200"))
			var payload, hidden int
			Expect(chromedp.Run(tab,
				chromedp.Evaluate(`document.querySelectorAll("#payload").length`, &payload),
				chromedp.Evaluate(`document.querySelectorAll("#payload-hidden").length`, &hidden),
			)).To(Succeed())
			if width.role == paygatev1.ConsoleDeveloper {
				Expect([]int{payload, hidden}).To(Equal([]int{1, 0}), "a developer sees the payload")
			} else {
				Expect([]int{payload, hidden}).To(Equal([]int{0, 1}), "a viewer does not")
			}
			shot("11-webhook")

			var heading string
			Expect(chromedp.Run(tab,
				chromedp.Navigate(baseURL+"/console/webhooks?env=sandbox&lang=sw"),
				chromedp.WaitVisible(`#rows`, chromedp.ByQuery),
				chromedp.Text(`main h1`, &heading, chromedp.ByQuery),
				chromedp.Evaluate(`Array.from(document.querySelectorAll("#rows tbody td")).map(e => e.textContent.trim())`, &cells),
			)).To(Succeed())
			Expect(heading).To(Equal("Uwasilishaji wa webhook"))
			Expect(cells[3:5]).To(Equal([]string{"Imefika", "200"}))
			shot("12-webhooks-sw")
			Expect(chromedp.Run(tab,
				chromedp.Navigate(baseURL+"/console/webhooks/"+dukaEvent.Name+"?env=sandbox&lang=sw"),
				chromedp.WaitVisible(`#attempts`, chromedp.ByQuery),
				chromedp.Text(`#status`, &status, chromedp.ByQuery),
			)).To(Succeed())
			Expect(status).To(Equal("Imefika"))
			shot("13-webhook-sw")
		}

		// Soko's abandoned delivery, as its developer sees it.
		tab := browser(chromium, 1280, 900)
		u := invite(soko.merchant, "hooks-desktop@soko.example", paygatev1.ConsoleDeveloper)
		var status string
		var attempts int
		signUpIn(tab, u)
		Expect(chromedp.Run(tab,
			chromedp.Navigate(baseURL+"/console/webhooks/"+sokoEvnt.Name+"?env=sandbox&lang=en"),
			chromedp.WaitVisible(`#attempts`, chromedp.ByQuery),
			chromedp.Text(`#status`, &status, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelectorAll("#attempts tbody tr").length`, &attempts),
		)).To(Succeed())
		Expect(status).To(Equal("Failed"))
		Expect(attempts).To(Equal(5))
		screenshotTo(tab, filepath.Join(outDir, "desktop-14-webhook-failed.png"))
		expectAccessible(tab, "an abandoned delivery")
	})

	It("sends a delivery again for owners and developers, once per form, and not for viewers", func() {
		viewer := newConsoleClient(baseURL)
		viewer.signUp(invite(duka.merchant, "hooks-redeliver-viewer@duka.example", paygatev1.ConsoleViewer))
		dev := newConsoleClient(baseURL)
		dev.signUp(invite(duka.merchant, "hooks-redeliver-dev@duka.example", paygatev1.ConsoleDeveloper))
		page := "/console/webhooks/" + dukaEvent.Name + "?env=sandbox"
		keyOf := regexp.MustCompile(`name="key" value="([^"]+)"`)

		_, _, body := viewer.get(page)
		Expect(body).NotTo(ContainSubstring(`id="redeliver-form"`), "a viewer has no button")
		status, _, _ := viewer.post("/console/webhooks/"+dukaEvent.Name+"/redeliver?env=sandbox",
			url.Values{"csrf": {viewer.csrf()}, "key": {"console-cccccccccccccccccccccccc"}})
		Expect(status).To(Equal(http.StatusForbidden))

		before := len(accepts.requests())
		_, _, body = dev.get(page)
		Expect(body).To(ContainSubstring(`id="redeliver-form"`))
		form := url.Values{"csrf": {dev.csrf()}, "key": {keyOf.FindStringSubmatch(body)[1]}}
		status, loc, body := dev.post("/console/webhooks/"+dukaEvent.Name+"/redeliver?env=sandbox", form)
		Expect(status).To(Equal(http.StatusSeeOther), body)
		Expect(loc).To(HaveSuffix("&redelivered=1"))
		Eventually(func() int { return len(accepts.requests()) }).Should(Equal(before + 1))
		again := accepts.requests()[before]
		Expect(again.header.Get("X-Paygate-Event-Id")).To(Equal(dukaEvent.Spec.EventID), "the same event, sent again")
		_, err := (paygate.WebhookVerifier{Secret: webhookSecret(duka.merchant)}).Verify(again.header, again.body)
		Expect(err).NotTo(HaveOccurred())

		By("the same form again: no second round")
		status, _, _ = dev.post("/console/webhooks/"+dukaEvent.Name+"/redeliver?env=sandbox", form)
		Expect(status).To(Equal(http.StatusSeeOther))
		Consistently(func() int { return len(accepts.requests()) }, "2s").Should(Equal(before + 1))

		By("another merchant's delivery: not found")
		status, _, _ = dev.post("/console/webhooks/"+sokoEvnt.Name+"/redeliver?env=sandbox",
			url.Values{"csrf": {dev.csrf()}, "key": {"console-dddddddddddddddddddddddd"}})
		Expect(status).To(Equal(http.StatusNotFound))
	})
})

// signUpIn accepts u's invitation in the browser: a role without a second factor is signed in.
func signUpIn(tab context.Context, u *consoleUser) {
	GinkgoHelper()
	Expect(chromedp.Run(tab,
		chromedp.Navigate(strings.Replace(u.link, "http://checkout.paygate.test", baseURL, 1)),
		chromedp.WaitVisible(`#set-password`, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, u.password, chromedp.ByQuery),
		chromedp.SendKeys(`#confirm`, u.password, chromedp.ByQuery),
		chromedp.Click(`#set-password`, chromedp.ByQuery),
	)).To(Succeed(), "the invitation's page")
	Expect(chromedp.Run(tab, chromedp.WaitVisible(`nav.nav`, chromedp.ByQuery))).To(Succeed(), "signed in after choosing a password")
}
