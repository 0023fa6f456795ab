// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/pkg/paygate"
)

// The console's keys and webhook settings (docs/console.md, Keys and webhook settings), with the
// real manager, the apiserver under the chart's RBAC, a real receiver and Chromium: each change
// is a MerchantChange the merchant controller answers, and a new key or signing secret is shown
// once.

// settingsBrowser is a Chromium tab signed in as a new developer of m (a role without a second
// factor), or nil when Chromium is missing outside CI (the spec is then skipped).
func settingsBrowser(m *paygatev1.Merchant, email string) context.Context {
	GinkgoHelper()
	chromium := requireChromium()
	tab := browser(chromium, 1280, 900)
	signUpIn(tab, invite(m, email, paygatev1.ConsoleDeveloper))
	return tab
}

// submitChange clicks a settings form's button and waits for the change's answer (a change the
// controller has not answered within the form's wait shows "Look again").
func submitChange(tab context.Context, button string) {
	GinkgoHelper()
	Expect(chromedp.Run(tab,
		chromedp.Navigate(baseURL+"/console/settings"),
		chromedp.WaitVisible(button, chromedp.ByQuery),
		chromedp.Click(button, chromedp.ByQuery),
		chromedp.WaitVisible(`#change-phase`, chromedp.ByQuery),
	)).To(Succeed(), "the settings form %s", button)
	Eventually(func(g Gomega) {
		var phase string
		g.Expect(chromedp.Run(tab, chromedp.Text(`#change-phase`, &phase, chromedp.ByQuery))).To(Succeed())
		if phase == "Being made" {
			g.Expect(chromedp.Run(tab, chromedp.Click(`#change-refresh`, chromedp.ByQuery), chromedp.WaitVisible(`#change-phase`, chromedp.ByQuery))).To(Succeed())
		}
		g.Expect(phase).To(Or(Equal("Done"), Equal("Refused")))
	}).Should(Succeed())
}

func textOf(tab context.Context, sel string) string {
	GinkgoHelper()
	var s string
	Expect(chromedp.Run(tab, chromedp.Text(sel, &s, chromedp.ByQuery))).To(Succeed(), sel)
	return s
}

var changeLink = regexp.MustCompile(`/console/settings/changes/(console-[0-9a-f]+)`)

var _ = Describe("The merchant console's keys and webhook settings", func() {
	It("rotates API keys in the browser, shows the new ones once, and keeps the old key working until the overlap is ended", func() {
		ns := newNamespace()
		createGateway("TZS")
		shop := createMerchant(ns, "keys-shop")
		old := shop.sandbox
		tab := settingsBrowser(shop.merchant, "keys-dev@shop.example")

		By("making new sandbox keys with a one-hour overlap")
		Expect(chromedp.Run(tab, chromedp.Navigate(baseURL+"/console/settings"), chromedp.WaitVisible(`#overlap-sandbox`, chromedp.ByQuery),
			chromedp.SetValue(`#overlap-sandbox`, "1h", chromedp.ByQuery))).To(Succeed())
		Expect(chromedp.Run(tab, chromedp.Click(`#rotate-sandbox-button`, chromedp.ByQuery), chromedp.WaitVisible(`#change-phase`, chromedp.ByQuery))).To(Succeed())
		Eventually(func(g Gomega) {
			var loc string
			g.Expect(chromedp.Run(tab, chromedp.Location(&loc))).To(Succeed())
			if textOf(tab, `#change-phase`) == "Being made" {
				g.Expect(chromedp.Run(tab, chromedp.Navigate(loc), chromedp.WaitVisible(`#change-phase`, chromedp.ByQuery))).To(Succeed())
			}
			g.Expect(textOf(tab, `#change-phase`)).To(Equal("Done"))
		}).Should(Succeed())
		var changeURL string
		Expect(chromedp.Run(tab, chromedp.Location(&changeURL))).To(Succeed())
		expectAccessible(tab, "a change, before its key is shown")
		Expect(chromedp.Run(tab, chromedp.Click(`#reveal`, chromedp.ByQuery), chromedp.WaitVisible(`#revealed-api-key`, chromedp.ByQuery))).To(Succeed())
		newKey, newSecret := textOf(tab, `#revealed-api-key`), textOf(tab, `#revealed-api-secret`)
		Expect(newKey).To(HavePrefix("test_pk_"))
		Expect(newSecret).To(HavePrefix("test_sk_"))
		outDir := filepath.Join("..", "output", "console")
		Expect(os.MkdirAll(outDir, 0o755)).To(Succeed())
		screenshotTo(tab, filepath.Join(outDir, "desktop-16-new-keys-once.png"))
		expectAccessible(tab, "the new keys, shown once")

		By("using the new key over the API while the old one still works")
		fresh := paygate.New(baseURL, paygate.Credentials{Environment: "sandbox", MerchantKey: textOf(tab, `#revealed-business-id`), APIKey: newKey, APISecret: newSecret})
		_, err := fresh.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred(), "the new key works at once")
		_, err = old.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred(), "the replaced key works during the overlap")

		By("showing them only once")
		Expect(chromedp.Run(tab, chromedp.Navigate(changeURL), chromedp.WaitVisible(`#change-gone`, chromedp.ByQuery))).To(Succeed())
		var page string
		Expect(chromedp.Run(tab, chromedp.OuterHTML(`html`, &page, chromedp.ByQuery))).To(Succeed())
		Expect(page).NotTo(ContainSubstring(newSecret))
		var s corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: credentials.SecretName(shop.merchant.Name, paygatev1.EnvironmentSandbox)}, &s)).To(Succeed())
		Expect(string(s.Data["apiKey"])).To(Equal(newKey))

		By("the settings page shows the overlap; ending it stops the old key")
		Expect(chromedp.Run(tab, chromedp.Navigate(baseURL+"/console/settings"), chromedp.WaitVisible(`#end-overlap-sandbox-button`, chromedp.ByQuery))).To(Succeed())
		screenshotTo(tab, filepath.Join(outDir, "desktop-17-settings-overlap.png"))
		expectAccessible(tab, "the settings, with a key in its overlap")
		submitChange(tab, `#end-overlap-sandbox-button`)
		Expect(textOf(tab, `#change-phase`)).To(Equal("Done"))
		Eventually(func() error {
			_, err := old.ListPayments(ctx, paygate.ListOptions{})
			return err
		}).Should(MatchError(ContainSubstring("401")), "the replaced key stops once the overlap is ended")
		_, err = fresh.ListPayments(ctx, paygate.ListOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("the audit trail has every step")
		Eventually(func(g Gomega) {
			var recs paygatev1.ConsoleAuditRecordList
			g.Expect(k8s.List(ctx, &recs, client.InNamespace(ns))).To(Succeed())
			var actions []string
			for _, r := range recs.Items {
				actions = append(actions, r.Spec.Action)
				g.Expect(r.Spec.Target + r.Spec.Reason).NotTo(ContainSubstring(newSecret))
			}
			g.Expect(actions).To(ContainElements("rotate-credentials", "reveal-credentials", "end-credentials-overlap"))
		}).Should(Succeed())
	})

	It("refuses changes to viewers, finance users and other merchants, production keys to a business not approved, and writes nothing", func() {
		ns := newNamespace()
		shop := createMerchant(ns, "locked-shop", func(m *paygatev1.Merchant) { m.Spec.BusinessStatus = paygatev1.BusinessPending })
		other := createMerchant(newNamespace(), "other-shop")
		dev := newConsoleClient(baseURL)
		dev.signUp(invite(shop.merchant, "locked-dev@shop.example", paygatev1.ConsoleDeveloper))
		viewer := newConsoleClient(baseURL)
		viewer.signUp(invite(shop.merchant, "locked-viewer@shop.example", paygatev1.ConsoleViewer))
		finance := newConsoleClient(baseURL)
		finance.signUp(invite(shop.merchant, "locked-finance@shop.example", paygatev1.ConsoleFinance))
		key := "console-aaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		rotate := func(c *consoleClient, env string) (int, string) {
			status, loc, _ := c.post("/console/settings/changes", url.Values{"csrf": {c.csrf()}, "key": {key}, "action": {"rotate"},
				"env": {env}, "overlap": {"24h"}})
			return status, loc
		}
		for name, c := range map[string]*consoleClient{"viewer": viewer, "finance": finance} {
			status, _ := rotate(c, "sandbox")
			Expect(status).To(Equal(http.StatusForbidden), name)
			status, _, _ = c.post("/console/webhooks/redeliver-failed", url.Values{"csrf": {c.csrf()}, "key": {key}, "env": {"sandbox"}, "since": {"2026-01-01"}})
			Expect(status).To(Equal(http.StatusForbidden), name)
		}
		By("a viewer cannot change anything anywhere in the console")
		var usersBefore paygatev1.ConsoleUserList
		Expect(k8s.List(ctx, &usersBefore, client.InNamespace(ns))).To(Succeed())
		for path, form := range map[string]url.Values{
			"/console/payouts/preview?env=sandbox":            {"amount": {"5000"}, "currency": {"TZS"}},
			"/console/payouts/create?env=sandbox":             {"amount": {"5000"}, "currency": {"TZS"}, "key": {key}, "code": {"123456"}},
			"/console/payments/trx-any/refund?env=sandbox":    {"amount": {"1000"}, "key": {key}},
			"/console/gateways":                               {"gateway": {"any"}},
			"/console/webhooks/whd-any/redeliver?env=sandbox": {"key": {key}},
			"/console/people/invite":                          {"email": {"friend@shop.example"}, "role": {"owner"}},
			"/console/people/remove":                          {"user": {"user-any"}},
		} {
			form.Set("csrf", viewer.csrf())
			status, _, _ := viewer.post(path, form)
			Expect(status).To(Equal(http.StatusForbidden), path)
		}
		var usersAfter paygatev1.ConsoleUserList
		Expect(k8s.List(ctx, &usersAfter, client.InNamespace(ns))).To(Succeed())
		Expect(usersAfter.Items).To(HaveLen(len(usersBefore.Items)), "nobody invited or removed")
		var payouts paygatev1.PayoutList
		Expect(k8s.List(ctx, &payouts, client.InNamespace(ns))).To(Succeed())
		Expect(payouts.Items).To(BeEmpty())
		var refunds paygatev1.RefundList
		Expect(k8s.List(ctx, &refunds, client.InNamespace(ns))).To(Succeed())
		Expect(refunds.Items).To(BeEmpty())
		var sels paygatev1.GatewaySelectionList
		Expect(k8s.List(ctx, &sels, client.InNamespace(ns))).To(Succeed())
		Expect(sels.Items).To(BeEmpty())

		status, _ := rotate(dev, "production")
		Expect(status).To(Equal(http.StatusForbidden), "production keys are for approved businesses")
		status, _, _ = dev.post("/console/settings/changes", url.Values{"key": {key}, "action": {"rotate"}, "env": {"sandbox"}, "overlap": {"24h"}})
		Expect(status).To(Equal(http.StatusForbidden), "no form proof")
		for _, bad := range []url.Values{
			{"action": {"rotate"}, "env": {"sandbox"}, "overlap": {"999h"}},
			{"action": {"delete-everything"}, "env": {"sandbox"}},
			{"action": {"webhook-url"}, "env": {"production"}, "webhook_url": {"http://plain.example/hook"}},
			{"action": {"webhook-url"}, "env": {"sandbox"}, "webhook_url": {"javascript:alert(1)"}},
		} {
			bad.Set("csrf", dev.csrf())
			bad.Set("key", key)
			status, _, body := dev.post("/console/settings/changes", bad)
			Expect(status).To(Equal(http.StatusUnprocessableEntity), "%v: %s", bad, body)
		}
		var changes paygatev1.MerchantChangeList
		Expect(k8s.List(ctx, &changes, client.InNamespace(ns))).To(Succeed())
		Expect(changes.Items).To(BeEmpty(), "nothing is asked on refusal")

		By("another merchant's change is not found")
		status, loc := rotate(dev, "sandbox")
		Expect(status).To(Equal(http.StatusSeeOther))
		name := changeLink.FindStringSubmatch(loc)
		Expect(name).NotTo(BeNil(), loc)
		stranger := newConsoleClient(baseURL)
		stranger.signUp(invite(other.merchant, "stranger-dev@other.example", paygatev1.ConsoleDeveloper))
		status, _, _ = stranger.get(loc)
		Expect(status).To(Equal(http.StatusNotFound))
		status, _, _ = stranger.post(loc+"/reveal", url.Values{"csrf": {stranger.csrf()}})
		Expect(status).To(Equal(http.StatusNotFound))
		colleague := newConsoleClient(baseURL)
		colleague.signUp(invite(shop.merchant, "locked-dev2@shop.example", paygatev1.ConsoleDeveloper))
		status, _, _ = colleague.post(loc+"/reveal", url.Values{"csrf": {colleague.csrf()}})
		Expect(status).To(Equal(http.StatusNotFound), "a change is shown only to who asked for it")

		By("the same form sent twice asks once; the key is shown to one of two concurrent clicks")
		status, again := rotate(dev, "sandbox")
		Expect(status).To(Equal(http.StatusSeeOther))
		Expect(again).To(Equal(loc))
		Expect(k8s.List(ctx, &changes, client.InNamespace(ns))).To(Succeed())
		Expect(changes.Items).To(HaveLen(1))
		Eventually(func(g Gomega) {
			_, _, body := dev.get(loc)
			g.Expect(body).To(ContainSubstring(`id="reveal"`))
		}).Should(Succeed())
		csrf := dev.csrf()
		shown := make(chan string, 2)
		for range 2 {
			go func() {
				defer GinkgoRecover()
				_, _, body := dev.post(loc+"/reveal", url.Values{"csrf": {csrf}})
				shown <- body
			}()
		}
		keys := 0
		for range 2 {
			if regexp.MustCompile(`id="revealed-api-secret">test_sk_`).MatchString(<-shown) {
				keys++
			}
		}
		Expect(keys).To(Equal(1))
	})

	It("sets the webhook URL, sends a test event, rotates the signing secret with a receiver verifying throughout, and sends failed deliveries again", func() {
		ns := newNamespace()
		createGateway("TZS")
		shop := createMerchant(ns, "hooks-shop")
		rcv := newReceiver()
		tab := settingsBrowser(shop.merchant, "hooks-dev@shop.example")
		secretKey := client.ObjectKey{Namespace: ns, Name: credentials.WebhookSecretName(shop.merchant.Name)}
		var current corev1.Secret
		Expect(k8s.Get(ctx, secretKey, &current)).To(Succeed())
		held := [][]byte{current.Data[credentials.KeySigningSecret]} // what the receiver has installed
		verifyAll := func() {
			GinkgoHelper()
			for i, got := range rcv.requests() {
				_, err := paygate.WebhookVerifier{Secret: held[0], MoreSecrets: held[1:]}.Verify(got.header, got.body)
				Expect(err).NotTo(HaveOccurred(), "delivery %d", i)
			}
		}

		By("setting the sandbox default webhook URL")
		Expect(chromedp.Run(tab, chromedp.Navigate(baseURL+"/console/settings"), chromedp.WaitVisible(`#webhook-url-sandbox-input`, chromedp.ByQuery),
			chromedp.SetValue(`#webhook-url-sandbox-input`, rcv.url(), chromedp.ByQuery),
			chromedp.Click(`#webhook-url-sandbox-button`, chromedp.ByQuery), chromedp.WaitVisible(`#change-phase`, chromedp.ByQuery))).To(Succeed())
		Eventually(func(g Gomega) {
			var m paygatev1.Merchant
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(shop.merchant), &m)).To(Succeed())
			g.Expect(m.Spec.WebhookURLs.Sandbox).To(Equal(rcv.url()))
		}).Should(Succeed())

		By("sending a test event: the receiver gets a signed webhook.test")
		submitChange(tab, `#test-event-sandbox-button`)
		Expect(textOf(tab, `#change-phase`)).To(Equal("Done"), textOf(tab, `#change-message`))
		Eventually(func() int { return len(rcv.requests()) }).Should(BeNumerically(">=", 1))
		var ev paygate.WebhookEvent
		Expect(json.Unmarshal(rcv.requests()[0].body, &ev)).To(Succeed())
		Expect(ev.Type).To(Equal(paygate.EventWebhookTest))
		verifyAll()

		By("preparing a new signing secret: shown once, not signing yet")
		submitChange(tab, `#prepare-secret-button`)
		Expect(chromedp.Run(tab, chromedp.Click(`#reveal`, chromedp.ByQuery), chromedp.WaitVisible(`#revealed-signing-secret`, chromedp.ByQuery))).To(Succeed())
		pending := textOf(tab, `#revealed-signing-secret`)
		Expect(pending).To(HavePrefix("whsec_"))
		expectAccessible(tab, "a new signing secret, shown once")
		held = append(held, []byte(pending)) // installed on the receiver beside the current one
		pay := func() {
			n := len(rcv.requests())
			_, err := shop.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "10000", CurrencyCode: "TZS",
				RefTrx: uniqueName("order"), PaymentMode: "push", CustomerPhone: "+255712345678", CustomerName: "Asha"}, "")
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() int { return len(rcv.requests()) }).Should(BeNumerically(">", n))
		}
		pay()
		verifyAll()

		By("activating it: the receiver holding both verifies every delivery, and the new one signs")
		submitChange(tab, `#activate-secret-button`)
		Expect(textOf(tab, `#change-phase`)).To(Equal("Done"))
		Eventually(func() error {
			pay()
			last := rcv.requests()[len(rcv.requests())-1]
			if _, err := (paygate.WebhookVerifier{Secret: []byte(pending)}).Verify(last.header, last.body); err != nil {
				return errors.New("still signed with the old secret")
			}
			return nil
		}).Should(Succeed())
		verifyAll()

		By("sending failed deliveries again")
		since := time.Now().UTC().Add(-time.Minute).Format("2006-01-02T15:04")
		rcv.answer(http.StatusInternalServerError)
		pay()
		Eventually(func(g Gomega) {
			var list paygatev1.WebhookDeliveryList
			g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			abandoned := 0
			for _, d := range list.Items {
				if d.Phase() == paygatev1.DeliveryAbandoned {
					abandoned++
				}
			}
			g.Expect(abandoned).To(BeNumerically(">=", 1))
		}).Should(Succeed())
		rcv.answer(http.StatusOK)
		Expect(chromedp.Run(tab, chromedp.Navigate(baseURL+"/console/settings"), chromedp.WaitVisible(`#redeliver-since`, chromedp.ByQuery),
			chromedp.SetValue(`#redeliver-since`, since, chromedp.ByQuery),
			chromedp.Click(`#redeliver-failed-button`, chromedp.ByQuery), chromedp.WaitVisible(`#redelivered`, chromedp.ByQuery))).To(Succeed())
		Expect(textOf(tab, `#redelivered`)).To(MatchRegexp(`again: [1-9]`))
		Eventually(func() int { return len(rcv.requests()) }).Should(BeNumerically(">=", 1))
		verifyAll()
		screenshotTo(tab, filepath.Join("..", "output", "console", "desktop-18-webhook-settings.png"))
		expectAccessible(tab, "the settings, after sending failed deliveries again")

		By("a configuration managed by GitOps: the URLs are read-only, and keys stay self-service")
		Eventually(func(g Gomega) {
			var m paygatev1.Merchant
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(shop.merchant), &m)).To(Succeed())
			m.Annotations = map[string]string{paygatev1.AnnotationManagedBy: "Flux (payments-config)"}
			g.Expect(k8s.Update(ctx, &m)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(chromedp.Run(tab, chromedp.Navigate(baseURL+"/console/settings"), chromedp.WaitVisible(`#webhooks`, chromedp.ByQuery))).To(Succeed())
			g.Expect(textOf(tab, `#managed-by`)).To(ContainSubstring("Flux (payments-config)"))
		}).Should(Succeed())
		var buttons int
		Expect(chromedp.Run(tab, chromedp.Evaluate(`document.querySelectorAll("#webhook-url-sandbox-button").length`, &buttons))).To(Succeed())
		Expect(buttons).To(BeZero())
		screenshotTo(tab, filepath.Join("..", "output", "console", "desktop-19-settings-managed.png"))
		expectAccessible(tab, "the settings, managed elsewhere")
		forced := newConsoleClient(baseURL)
		forced.signUp(invite(shop.merchant, "hooks-dev2@shop.example", paygatev1.ConsoleDeveloper))
		status, _, _ := forced.post("/console/settings/changes", url.Values{"csrf": {forced.csrf()}, "key": {"console-bbbbbbbbbbbbbbbbbbbbbbbbbbbb"},
			"action": {"webhook-url"}, "env": {"sandbox"}, "webhook_url": {"https://elsewhere.example/hook"}})
		Expect(status).To(Equal(http.StatusConflict), "a forced post is refused")
		var m paygatev1.Merchant
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(shop.merchant), &m)).To(Succeed())
		Expect(m.Spec.WebhookURLs.Sandbox).To(Equal(rcv.url()))
		submitChange(tab, `#rotate-sandbox-button`)
		Expect(textOf(tab, `#change-phase`)).To(Equal("Done"), "keys stay self-service under GitOps")
	})
})
