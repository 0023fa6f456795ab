// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/csv"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/apiserver"
	"github.com/paygate/paygate/console"
	"github.com/paygate/paygate/internal/consoleauth"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/test/oidcissuer"
	"github.com/paygate/paygate/test/testenv"
)

// logBuffer collects a replica's log lines, to check that no secret reaches them.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.buf.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10})
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// consoleUser is an invited user and what the test learns signing them up.
type consoleUser struct {
	email, password, totp string
	recovery              []string
	link                  string
}

// invite invites email to m's console with role, as `paygate console invite` does.
func invite(m *paygatev1.Merchant, email string, role paygatev1.ConsoleRole) *consoleUser {
	inv, err := console.Invite(ctx, k8s, testenv.ChartNamespace, m, email, role, "", baseURL, time.Hour, time.Now())
	Expect(err).NotTo(HaveOccurred())
	return &consoleUser{email: email, password: "correct horse " + uniqueName("battery"), link: inv.Link}
}

// consoleClient is a browser without a browser: a cookie jar and forms posted as a page would.
type consoleClient struct {
	base string
	http *http.Client
}

func newConsoleClient(base string) *consoleClient {
	jar, err := cookiejar.New(nil)
	Expect(err).NotTo(HaveOccurred())
	return &consoleClient{base: base, http: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// at is the same cookies against another replica.
func (c *consoleClient) at(base string) *consoleClient {
	out := &consoleClient{base: base, http: &http.Client{Jar: newJar(), Timeout: 30 * time.Second, CheckRedirect: c.http.CheckRedirect}}
	from, _ := url.Parse(c.base)
	to, _ := url.Parse(base)
	out.http.Jar.SetCookies(to, c.http.Jar.Cookies(from))
	return out
}

func newJar() http.CookieJar {
	jar, err := cookiejar.New(nil)
	Expect(err).NotTo(HaveOccurred())
	return jar
}

// get fetches path and returns the status, the Location and the body.
func (c *consoleClient) get(path string) (int, string, string) {
	res, err := c.http.Get(c.base + path)
	Expect(err).NotTo(HaveOccurred())
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(b)
}

// post posts a form as the console's own page would (same origin).
func (c *consoleClient) post(path string, form url.Values, headers ...string) (int, string, string) {
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", c.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := c.http.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the CSRF proof from a page of the session.
func (c *consoleClient) csrf() string {
	_, _, body := c.get("/console/")
	m := csrfField.FindStringSubmatch(body)
	Expect(m).NotTo(BeNil(), "a signed-in page carries the session's CSRF proof: %s", body)
	return m[1]
}

// signUp accepts u's invitation, enrols the second factor when the answer asks for it and keeps
// the recovery codes.
func (c *consoleClient) signUp(u *consoleUser) {
	link, err := url.Parse(u.link)
	Expect(err).NotTo(HaveOccurred())
	q := link.Query()
	status, loc, body := c.post("/console/invite", url.Values{"user": {q.Get("user")}, "token": {q.Get("token")},
		"password": {u.password}, "confirm": {u.password}})
	Expect(status).To(Equal(http.StatusSeeOther), body)
	if loc != "/console/enrol" {
		Expect(loc).To(Equal("/console/"))
		return
	}
	_, _, page := c.get("/console/enrol")
	secret := regexp.MustCompile(`id="totp-secret">([A-Z2-7 ]+)<`).FindStringSubmatch(page)
	Expect(secret).NotTo(BeNil(), page)
	u.totp = strings.ReplaceAll(secret[1], " ", "")
	code, err := consoleauth.TOTPCode(u.totp, time.Now())
	Expect(err).NotTo(HaveOccurred())
	csrf := csrfField.FindStringSubmatch(page)[1]
	status, _, page = c.post("/console/enrol", url.Values{"csrf": {csrf}, "code": {code}})
	Expect(status).To(Equal(http.StatusOK), page)
	for _, m := range regexp.MustCompile(`<li><code>([a-z0-9-]+)</code></li>`).FindAllStringSubmatch(page, -1) {
		u.recovery = append(u.recovery, m[1])
	}
	Expect(u.recovery).To(HaveLen(consoleauth.RecoveryCodeCount))
}

// signIn signs u in with their password and, when asked, the code of the TOTP step ahead (the
// step of sign-up or of an earlier sign-in is spent).
func (c *consoleClient) signIn(u *consoleUser, ahead int) (int, string) {
	status, loc, body := c.post("/console/sign-in", url.Values{"email": {u.email}, "password": {u.password}})
	if status != http.StatusSeeOther || loc != "/console/second-factor" {
		return status, body
	}
	code, err := consoleauth.TOTPCode(u.totp, time.Now().Add(time.Duration(ahead)*30*time.Second))
	Expect(err).NotTo(HaveOccurred())
	_, _, page := c.get("/console/second-factor")
	csrf := csrfField.FindStringSubmatch(page)
	Expect(csrf).NotTo(BeNil(), page)
	status, _, body = c.post("/console/second-factor", url.Values{"csrf": {csrf[1]}, "code": {code}})
	return status, body
}

var _ = Describe("The merchant console", Ordered, func() {
	var (
		ns          string
		duka, soko  *merchantFixture
		replicaB    string
		logsB       *logBuffer
		dukaPays    []string // trx ids: pending, success, failed
		sokoPay     string
		outDir      string
		chromium    string
		ownerOfDuka *consoleUser
		// dukaDay is the UTC day duka's payments were created.
		dukaDay time.Time
	)

	BeforeAll(func() {
		ns = newNamespace()
		createGateway("TZS", func(g *paygatev1.Gateway) { g.Spec.DisplayName = "M-Pesa Tanzania" })
		duka = createMerchant(ns, "duka")
		soko = createMerchant(ns, "soko")
		logsB = &logBuffer{}
		replicaB = "http://" + startReplica("console-b", func(o *apiserver.Options) {
			o.Log, o.Console.SecretsNamespace = logsB.logger(), testenv.ChartNamespace
		})
		outDir = filepath.Join("..", "output", "console")
		Expect(os.MkdirAll(outDir, 0o755)).To(Succeed())
		chromium = chromiumPath()

		pay := func(f *merchantFixture, ref, mode, phone string) string {
			res, err := f.sandbox.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "15000", CurrencyCode: "TZS",
				RefTrx: ref, Description: "Kahawa", PaymentMode: mode, CustomerPhone: phone}, "")
			Expect(err).NotTo(HaveOccurred())
			return res.TrxID
		}
		dukaPays = []string{
			pay(duka, "order-hosted", "", ""),
			pay(duka, "order-paid", "push", "+255712345678"),
			pay(duka, "order-broke", "push", "+255711000001"),
		}
		sokoPay = pay(soko, "soko-secret-order", "push", "+255712345678")
		for i, want := range []string{"success", "failed"} {
			Eventually(func() string {
				v, err := duka.sandbox.VerifyPayment(ctx, dukaPays[i+1])
				Expect(err).NotTo(HaveOccurred())
				return v.Status
			}).Should(Equal(want))
		}
		ownerOfDuka = invite(duka.merchant, "owner@duka.example", paygatev1.ConsoleOwner)
		paid, err := duka.sandbox.GetPayment(ctx, dukaPays[1])
		Expect(err).NotTo(HaveOccurred())
		created, err := time.Parse(time.RFC3339Nano, paid.CreatedAt)
		Expect(err).NotTo(HaveOccurred())
		dukaDay = created.UTC().Truncate(24 * time.Hour)
	})

	It("signs an invited owner up with a second factor and recovery codes, in a real browser at phone and desktop widths, in English and Swahili", func() {
		requireChromium()
		// The check can fail: a page with an image without a text alternative is a critical
		// violation.
		probe := browser(chromium, 800, 600)
		Expect(chromedp.Run(probe, chromedp.Navigate(`data:text/html,<html lang="en"><title>x</title><body><main><img src="a.png"></main></body></html>`))).To(Succeed())
		if bad, checked := seriousViolations(probe, "the probe"); checked {
			Expect(bad).To(ContainElement(HaveField("ID", "image-alt")), "axe-core finds what it should")
		}
		for _, width := range []struct {
			name string
			w, h int
		}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
			tab := browser(chromium, width.w, width.h)
			shot := func(name string) {
				screenshotTo(tab, filepath.Join(outDir, width.name+"-"+name+".png"))
				expectAccessible(tab, width.name+" "+name)
			}
			u := ownerOfDuka
			if width.name == "phone" {
				u = invite(duka.merchant, "finance@duka.example", paygatev1.ConsoleFinance)
			}
			var email, secret string
			Expect(chromedp.Run(tab,
				chromedp.Navigate(strings.Replace(u.link, "http://checkout.paygate.test", baseURL, 1)),
				chromedp.WaitVisible(`#set-password`, chromedp.ByQuery),
				chromedp.Text(`#invited-email`, &email, chromedp.ByQuery),
			)).To(Succeed())
			Expect(email).To(Equal(u.email))
			shot("1-invite")
			Expect(chromedp.Run(tab,
				chromedp.SendKeys(`#password`, u.password, chromedp.ByQuery),
				chromedp.SendKeys(`#confirm`, u.password, chromedp.ByQuery),
				chromedp.Click(`#set-password`, chromedp.ByQuery),
				chromedp.WaitVisible(`#totp-secret`, chromedp.ByQuery),
				chromedp.Text(`#totp-secret`, &secret, chromedp.ByQuery),
			)).To(Succeed())
			shot("2-enrol")
			u.totp = strings.ReplaceAll(secret, " ", "")
			code, err := consoleauth.TOTPCode(u.totp, time.Now())
			Expect(err).NotTo(HaveOccurred())
			var codes []string
			Expect(chromedp.Run(tab,
				chromedp.SendKeys(`#code`, code, chromedp.ByQuery),
				chromedp.Click(`#enrol`, chromedp.ByQuery),
				chromedp.WaitVisible(`#recovery-codes`, chromedp.ByQuery),
				chromedp.Evaluate(`Array.from(document.querySelectorAll("#recovery-codes code")).map(e => e.textContent)`, &codes),
			)).To(Succeed())
			Expect(codes).To(HaveLen(consoleauth.RecoveryCodeCount))
			u.recovery = codes
			shot("3-recovery-codes")

			var total, heading string
			Expect(chromedp.Run(tab,
				chromedp.Click(`#continue`, chromedp.ByQuery),
				chromedp.WaitVisible(`nav.nav`, chromedp.ByQuery),
				chromedp.Navigate(baseURL+"/console/payments?env=sandbox"),
				chromedp.WaitVisible(`#payments`, chromedp.ByQuery),
				chromedp.Text(`#total`, &total, chromedp.ByQuery),
			)).To(Succeed())
			Expect(total).To(Equal("3"), "duka's three sandbox payments, none of soko's")
			shot("4-payments")
			Expect(chromedp.Run(tab,
				chromedp.SetValue(`#merchant_ref`, "order-broke", chromedp.ByQuery),
				chromedp.Click(`#apply`, chromedp.ByQuery),
			)).To(Succeed())
			Eventually(func() string { // the filtered page, not the one the click left
				var loc string
				_ = chromedp.Run(tab, chromedp.Location(&loc))
				return loc
			}, "30s", "100ms").Should(ContainSubstring("merchant_ref=order-broke"))
			Expect(chromedp.Run(tab,
				chromedp.WaitVisible(`a[href^="/console/payments/`+dukaPays[2]+`"]`, chromedp.ByQuery),
				chromedp.Text(`#total`, &total, chromedp.ByQuery),
			)).To(Succeed())
			Expect(total).To(Equal("1"))
			shot("5-filtered")
			var steps []string
			Expect(chromedp.Run(tab,
				chromedp.Click(`a[href^="/console/payments/`+dukaPays[2]+`"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`#timeline`, chromedp.ByQuery),
				chromedp.Evaluate(`Array.from(document.querySelectorAll("#timeline li")).map(e => e.dataset.what)`, &steps),
			)).To(Succeed())
			Expect(steps).To(ContainElements("tlCreated", "tlPushSent", "tlPushAnswered", "tlSettled"))
			shot("6-payment")

			// The day's payments of one customer, the phone typed as a Tanzanian reads it: only
			// duka's paid one (soko's payment from the same phone is not duka's).
			day := dukaDay.Format(time.DateOnly)
			var rows []string
			Expect(chromedp.Run(tab,
				chromedp.Navigate(baseURL+"/console/payments?env=sandbox&lang=en"),
				chromedp.WaitVisible(`#payments`, chromedp.ByQuery),
				chromedp.SetValue(`#from`, day, chromedp.ByQuery),
				chromedp.SetValue(`#to`, day, chromedp.ByQuery),
				chromedp.SetValue(`#customer_phone`, "0712 345 678", chromedp.ByQuery),
				chromedp.Click(`#apply`, chromedp.ByQuery),
			)).To(Succeed())
			Eventually(func() string {
				var loc string
				_ = chromedp.Run(tab, chromedp.Location(&loc))
				return loc
			}, "30s", "100ms").Should(ContainSubstring("customer_phone="))
			Expect(chromedp.Run(tab,
				chromedp.WaitVisible(`a[href^="/console/payments/`+dukaPays[1]+`"]`, chromedp.ByQuery),
				chromedp.Text(`#total`, &total, chromedp.ByQuery),
				chromedp.Evaluate(`Array.from(document.querySelectorAll("#payments tbody tr td:nth-child(2)")).map(e => e.textContent)`, &rows),
			)).To(Succeed())
			Expect(total).To(Equal("1"))
			Expect(rows).To(Equal([]string{dukaPays[1]}))
			shot("5b-day-and-phone")
			// The day before theirs holds none of them; a To before the From is said, not listed.
			before := dukaDay.AddDate(0, 0, -1).Format(time.DateOnly)
			Expect(chromedp.Run(tab,
				chromedp.Navigate(baseURL+"/console/payments?env=sandbox&from="+before+"&to="+before),
				chromedp.WaitVisible(`#count`, chromedp.ByQuery),
				chromedp.Text(`#total`, &total, chromedp.ByQuery),
			)).To(Succeed())
			Expect(total).To(Equal("0"))
			var alert string
			Expect(chromedp.Run(tab,
				chromedp.SetValue(`#from`, day, chromedp.ByQuery),
				chromedp.SetValue(`#to`, before, chromedp.ByQuery),
				chromedp.Click(`#apply`, chromedp.ByQuery),
				chromedp.WaitVisible(`#form-error`, chromedp.ByQuery),
				chromedp.Text(`#form-error`, &alert, chromedp.ByQuery),
			)).To(Succeed())
			Expect(alert).To(ContainSubstring("before the From date"))
			shot("5c-dates-refused")
			Expect(chromedp.Run(tab,
				chromedp.Navigate(baseURL+"/console/payments?env=sandbox&lang=sw"),
				chromedp.WaitVisible(`#payments`, chromedp.ByQuery),
				chromedp.Text(`h1`, &heading, chromedp.ByQuery),
			)).To(Succeed())
			Expect(heading).To(Equal("Malipo"))
			shot("7-payments-sw")
			pages := []string{"refunds", "payouts", "subscriptions", "invoices"}
			if u == ownerOfDuka {
				pages = append(pages, "settings", "people", "audit")
			}
			for i, page := range pages {
				for _, lang := range []string{"en", "sw"} {
					Expect(chromedp.Run(tab,
						chromedp.Navigate(baseURL+"/console/"+page+"?env=sandbox&lang="+lang),
						chromedp.WaitVisible(`main h1`, chromedp.ByQuery),
						chromedp.Text(`main h1`, &heading, chromedp.ByQuery),
					)).To(Succeed())
					Expect(heading).NotTo(BeEmpty())
					shot(fmt.Sprintf("9-%d-%s-%s", i, page, lang))
				}
			}
			var lang string
			Expect(chromedp.Run(tab,
				chromedp.Navigate(baseURL+"/console/?lang=en"),
				chromedp.Click(`form[action="/console/sign-out"] button`, chromedp.ByQuery),
				chromedp.WaitVisible(`#sign-in`, chromedp.ByQuery),
				chromedp.Evaluate(`document.documentElement.lang`, &lang),
			)).To(Succeed())
			Expect(lang).To(Equal("en"))
			shot("8-signed-out")
		}
	})

	It("exports a filtered range as CSV that matches the API, shows every list, masks credentials, and lets an owner invite and remove people", func() {
		owner := invite(duka.merchant, "second-owner@duka.example", paygatev1.ConsoleOwner)
		c := newConsoleClient(baseURL)
		c.signUp(owner)

		// CSV: every payment, then only the failed ones, against the API's list of the same filter.
		for _, status := range []string{"", "failed"} {
			code, _, body := c.get("/console/payments.csv?env=sandbox&status=" + status)
			Expect(code).To(Equal(http.StatusOK))
			rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
			Expect(err).NotTo(HaveOccurred())
			api, err := duka.sandbox.ListPayments(ctx, paygate.ListOptions{Limit: 100, Status: status})
			Expect(err).NotTo(HaveOccurred())
			Expect(rows).To(HaveLen(len(api.Data) + 1))
			Expect(rows[0][:4]).To(Equal([]string{"trx_id", "merchant_ref", "status", "reason"}))
			for i, p := range api.Data {
				Expect(rows[i+1][0:5]).To(Equal([]string{p.TrxID, p.MerchantRef, p.Status, p.Reason, p.Amount.String()}))
				Expect(rows[i+1][12]).To(Equal(p.CreatedAt))
			}
		}

		// CSV of a span of days and a customer's phone, against the API's list of the same filter:
		// the console's To is the last day listed, the API's created_to the first one not listed.
		next := dukaDay.AddDate(0, 0, 1)
		day, before := dukaDay.Format(time.DateOnly), dukaDay.AddDate(0, 0, -1).Format(time.DateOnly)
		for _, tc := range []struct {
			query string
			api   paygate.ListOptions
			want  []string // the trx ids (payments of one second are in trx_id order)
		}{
			{"from=" + day + "&to=" + day, paygate.ListOptions{CreatedFrom: dukaDay, CreatedTo: next},
				[]string{dukaPays[2], dukaPays[1], dukaPays[0]}},
			{"from=" + day + "&to=" + day + "&customer_phone=0712345678",
				paygate.ListOptions{CreatedFrom: dukaDay, CreatedTo: next, CustomerPhone: "0712345678"}, []string{dukaPays[1]}},
			{"customer_phone=%2B255711000001&status=failed", paygate.ListOptions{CustomerPhone: "+255711000001", Status: "failed"},
				[]string{dukaPays[2]}},
			{"to=" + before, paygate.ListOptions{CreatedTo: dukaDay}, nil},
		} {
			code, _, body := c.get("/console/payments.csv?env=sandbox&" + tc.query)
			Expect(code).To(Equal(http.StatusOK), tc.query+": "+body)
			rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
			Expect(err).NotTo(HaveOccurred())
			tc.api.Limit = 100
			api, err := duka.sandbox.ListPayments(ctx, tc.api)
			Expect(err).NotTo(HaveOccurred())
			Expect(api.Pagination.Total).To(Equal(len(tc.want)), tc.query)
			Expect(rows).To(HaveLen(len(api.Data)+1), tc.query)
			var listed []string
			for i, p := range api.Data {
				listed = append(listed, p.TrxID)
				Expect(rows[i+1][0:5]).To(Equal([]string{p.TrxID, p.MerchantRef, p.Status, p.Reason, p.Amount.String()}))
				Expect(rows[i+1][10]).To(Equal(p.Customer.Phone), "the export masks the phone as the API does")
				Expect(rows[i+1][12]).To(Equal(p.CreatedAt))
			}
			Expect(listed).To(ConsistOf(tc.want), tc.query)
		}
		// The API names a filter it refuses; so does the console's export.
		_, err := duka.sandbox.ListPayments(ctx, paygate.ListOptions{CreatedFrom: next, CreatedTo: dukaDay})
		var apiErr *paygate.Error
		Expect(errors.As(err, &apiErr)).To(BeTrue(), "%v", err)
		Expect(apiErr.StatusCode).To(Equal(http.StatusUnprocessableEntity))
		Expect(apiErr.Errors).To(HaveKey("created_to"))
		code, _, body := c.get("/console/payments.csv?env=sandbox&customer_phone=12345")
		Expect(code).To(Equal(http.StatusUnprocessableEntity), body)

		// Every list answers, through the API's own list (an invalid filter is said to be one).
		for _, page := range []string{"payouts", "refunds", "subscriptions", "invoices"} {
			code, _, body := c.get("/console/" + page + "?env=sandbox")
			Expect(code).To(Equal(http.StatusOK), page+": "+body)
			Expect(body).To(ContainSubstring(`id="total">0<`))
		}
		code, _, body = c.get("/console/invoices?env=sandbox&subscription=not-a-subscription")
		Expect(code).To(Equal(http.StatusUnprocessableEntity), body)

		// Settings: the business id, the API key masked, no secret.
		code, _, body = c.get("/console/settings")
		Expect(code).To(Equal(http.StatusOK), body)
		var creds corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: credentials.SecretName(duka.merchant.Name, paygatev1.EnvironmentSandbox)}, &creds)).To(Succeed())
		Expect(body).To(ContainSubstring(string(creds.Data[credentials.KeyBusinessID])))
		Expect(body).NotTo(ContainSubstring(string(creds.Data[credentials.KeyAPIKey])))
		Expect(body).NotTo(ContainSubstring(string(creds.Data[credentials.KeyAPISecret])))
		Expect(body).To(ContainSubstring(string(creds.Data[credentials.KeyAPIKey])[:7] + "…"))

		// People: invite a viewer, who signs up; remove them; the last owner stays.
		csrf := c.csrf()
		code, _, body = c.post("/console/people/invite", url.Values{"csrf": {csrf}, "email": {"temp@duka.example"}, "role": {"viewer"}})
		Expect(code).To(Equal(http.StatusOK), body)
		link := regexp.MustCompile(`id="invite-link" class="wrap">([^<]+)<`).FindStringSubmatch(body)
		Expect(link).NotTo(BeNil(), body)
		temp := &consoleUser{email: "temp@duka.example", password: "a long enough password 1", link: html.UnescapeString(link[1])}
		tc := newConsoleClient(baseURL)
		tc.signUp(temp)
		code, _, _ = tc.get("/console/settings")
		Expect(code).To(Equal(http.StatusForbidden), "a viewer sees no settings")
		code, _, _ = tc.post("/console/people/invite", url.Values{"csrf": {tc.csrf()}, "email": {"x@duka.example"}, "role": {"owner"}})
		Expect(code).To(Equal(http.StatusForbidden), "a viewer invites nobody")
		code, _, _ = c.post("/console/people/remove", url.Values{"csrf": {csrf}, "user": {paygatev1.ConsoleUserName(temp.email)}})
		Expect(code).To(Equal(http.StatusSeeOther))
		code, _, _ = tc.get("/console/")
		Expect(code).To(Equal(http.StatusSeeOther), "a removed user's session ends")
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: testenv.ChartNamespace,
				Name: paygatev1.ConsoleCredentialsSecretName(ns, paygatev1.ConsoleUserName(temp.email))}, &corev1.Secret{})
		}).Should(Satisfy(apierrors.IsNotFound), "the removed user's credentials go with them")
		var audit paygatev1.ConsoleAuditRecordList
		Expect(k8s.List(ctx, &audit, client.InNamespace(ns))).To(Succeed())
		actions := map[string]bool{}
		for _, r := range audit.Items {
			if r.Spec.Actor == owner.email {
				actions[r.Spec.Action+" "+string(r.Spec.Result)] = true
			}
		}
		Expect(actions).To(HaveKey("export-payments success"))
		Expect(actions).To(HaveKey("invite-user success"))
		Expect(actions).To(HaveKey("remove-user success"))
	})

	It("signs a user in through the installation's OpenID Connect provider in a real browser, with the merchant and role its claims give", func() {
		requireChromium()
		// A replica whose public URL is its own address, so the provider can send the browser back.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := ln.Addr().String()
		Expect(ln.Close()).To(Succeed())
		public := "http://" + addr
		iss, err := oidcissuer.New(oidcissuer.Options{RedirectURIs: []string{public + "/console/oidc/callback"}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(iss.Close)
		iss.SetUser(oidcissuer.User{Subject: "u-42", Email: "Asha@Duka.example", EmailVerified: true, Name: "Asha Mushi",
			Merchant: ns + "/" + duka.merchant.Name, Role: "finance"})
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		rctx, stop := context.WithCancel(ctx)
		_, done, err := apiserver.Start(rctx, identities.APIServer, addr, apiserver.Options{CheckoutKey: key, PublicURL: public,
			Log: logf.Log.WithName("console-oidc"), Console: apiserver.ConsoleOptions{SecretsNamespace: testenv.ChartNamespace, OIDC: &console.OIDCOptions{
				IssuerURL: iss.URL(), ClientID: oidcissuer.DefaultClientID, ClientSecret: iss.ClientSecret}}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			stop()
			Eventually(done).Should(Receive(BeNil()))
		})

		tab := browser(chromium, 1280, 900)
		var who string
		Expect(chromedp.Run(tab,
			chromedp.Navigate(public+"/console/sign-in"),
			chromedp.WaitVisible(`#oidc`, chromedp.ByQuery),
		)).To(Succeed())
		screenshotTo(tab, filepath.Join(outDir, "oidc-1-sign-in.png"))
		expectAccessible(tab, "the sign-in page with the identity provider")
		Expect(chromedp.Run(tab,
			chromedp.Click(`#oidc`, chromedp.ByQuery),
			chromedp.WaitVisible(`nav.nav`, chromedp.ByQuery),
			chromedp.Text(`.who`, &who, chromedp.ByQuery),
		)).To(Succeed())
		Expect(who).To(ContainSubstring("asha@duka.example"))
		Expect(who).To(ContainSubstring("finance"))
		screenshotTo(tab, filepath.Join(outDir, "oidc-2-signed-in.png"))
		var u paygatev1.ConsoleUser
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: paygatev1.ConsoleUserName("asha@duka.example")}, &u)).To(Succeed())
		Expect(u.Spec.Role).To(Equal(paygatev1.ConsoleFinance))
		Expect(u.Spec.Merchant).To(Equal(duka.merchant.Name))
		var sessions paygatev1.ConsoleSessionList
		Expect(k8s.List(ctx, &sessions, client.InNamespace(ns), client.MatchingLabels{paygatev1.LabelConsoleUser: u.Name})).To(Succeed())
		Expect(sessions.Items).To(HaveLen(1))
		Expect(sessions.Items[0].Spec.Method).To(Equal(paygatev1.ConsoleSignInOIDC))

		// The provider says the user is now a viewer of soko's: another merchant's claim for a user
		// of duka is refused, and nothing changes.
		iss.SetUser(oidcissuer.User{Subject: "u-42", Email: "asha@duka.example", EmailVerified: true,
			Merchant: ns + "/" + soko.merchant.Name, Role: "viewer"})
		fresh := browser(chromium, 390, 844)
		var message string
		Expect(chromedp.Run(fresh,
			chromedp.Navigate(public+"/console/sign-in"),
			chromedp.Click(`#oidc`, chromedp.ByQuery),
			chromedp.WaitVisible(`#message`, chromedp.ByQuery),
			chromedp.Text(`#message`, &message, chromedp.ByQuery),
		)).To(Succeed())
		Expect(message).NotTo(BeEmpty())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&u), &u)).To(Succeed())
		Expect(u.Spec.Role).To(Equal(paygatev1.ConsoleFinance))
		Expect(u.Spec.Merchant).To(Equal(duka.merchant.Name))
	})

	It("keeps merchant A's users out of everything of merchant B, on both replicas", func() {
		viewer := invite(soko.merchant, "viewer@soko.example", paygatev1.ConsoleViewer)
		a := newConsoleClient(baseURL)
		a.signUp(viewer)
		for _, c := range []*consoleClient{a, a.at(replicaB)} {
			status, _, body := c.get("/console/payments?env=sandbox")
			Expect(status).To(Equal(http.StatusOK))
			Expect(body).To(ContainSubstring(sokoPay))
			for _, trx := range dukaPays {
				Expect(body).NotTo(ContainSubstring(trx))
				for _, env := range []string{"sandbox", "production"} {
					status, _, body = c.get("/console/payments/" + trx + "?env=" + env)
					Expect(status).To(Equal(http.StatusNotFound), "duka's payment %s through soko's session: %s", trx, body)
					Expect(body).NotTo(ContainSubstring("15000"))
				}
			}
			status, _, body = c.get("/console/payments.csv?env=sandbox")
			Expect(status).To(Equal(http.StatusOK))
			Expect(body).To(ContainSubstring(sokoPay))
			for _, trx := range dukaPays {
				Expect(body).NotTo(ContainSubstring(trx))
			}
			status, _, body = c.get("/console/refunds?env=sandbox&payment=" + dukaPays[1])
			Expect(status).To(BeElementOf(http.StatusOK, http.StatusUnprocessableEntity))
			Expect(body).NotTo(ContainSubstring(`id="rows"`), "no refund of duka's payment through soko")
			status, _, _ = c.get("/console/audit")
			Expect(status).To(Equal(http.StatusForbidden), "a viewer is no owner")
			status, _, _ = c.get("/console/settings")
			Expect(status).To(Equal(http.StatusForbidden), "a viewer sees no settings")
		}
	})

	It("refuses a form without the session's CSRF proof, from another origin, after sign-out or sign-out everywhere, and a fixed session id", func() {
		u := invite(soko.merchant, "dev@soko.example", paygatev1.ConsoleDeveloper)
		c := newConsoleClient(baseURL)
		c.signUp(u)
		csrf := c.csrf()

		status, _, _ := c.post("/console/sign-out", url.Values{})
		Expect(status).To(Equal(http.StatusForbidden), "no CSRF proof")
		status, _, _ = c.post("/console/sign-out", url.Values{"csrf": {csrf}}, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
		Expect(status).To(Equal(http.StatusForbidden), "posted from another site")
		status, _, _ = c.get("/console/")
		Expect(status).To(Equal(http.StatusOK), "still signed in after both refusals")

		stolen := c.at(replicaB)
		status, _, body := stolen.get("/console/")
		Expect(status).To(Equal(http.StatusOK), "the session's cookie works on the other replica")
		Expect(body).To(ContainSubstring("dev@soko.example"))
		status, loc, _ := c.post("/console/sign-out", url.Values{"csrf": {csrf}})
		Expect(status).To(Equal(http.StatusSeeOther))
		Expect(loc).To(Equal("/console/sign-in"))
		status, loc, _ = stolen.get("/console/payments")
		Expect(status).To(Equal(http.StatusSeeOther), "the signed-out session on the other replica, at once")
		Expect(loc).To(Equal("/console/sign-in"))

		// Sign out everywhere on replica B ends a session of replica A.
		one, two := newConsoleClient(baseURL), newConsoleClient(replicaB)
		for _, cl := range []*consoleClient{one, two} {
			status, body = cl.signIn(u, 0)
			Expect(status).To(Equal(http.StatusSeeOther), body)
		}
		status, _, _ = two.post("/console/sign-out-everywhere", url.Values{"csrf": {two.csrf()}})
		Expect(status).To(Equal(http.StatusSeeOther))
		status, _, _ = one.get("/console/")
		Expect(status).To(Equal(http.StatusSeeOther), "revoked everywhere")

		// A session id planted before sign-in is never the signed-in one.
		fixed := newConsoleClient(baseURL)
		planted := &http.Cookie{Name: "paygate-console", Value: ns + ".planted-by-an-attacker-0123456789", Path: "/"}
		base, _ := url.Parse(baseURL)
		fixed.http.Jar.SetCookies(base, []*http.Cookie{planted})
		status, body = fixed.signIn(u, 0)
		Expect(status).To(Equal(http.StatusSeeOther), body)
		var now string
		for _, ck := range fixed.http.Jar.Cookies(base) {
			if ck.Name == "paygate-console" {
				now = ck.Value
			}
		}
		Expect(now).NotTo(BeEmpty())
		Expect(now).NotTo(Equal(planted.Value))
		attacker := newConsoleClient(baseURL)
		attacker.http.Jar.SetCookies(base, []*http.Cookie{planted})
		status, _, _ = attacker.get("/console/")
		Expect(status).To(Equal(http.StatusSeeOther), "the planted id signs nobody in")

		// Malformed ids are nobody's, never a server error.
		odd := newConsoleClient(baseURL)
		odd.http.Jar.SetCookies(base, []*http.Cookie{{Name: "paygate-console", Value: "Not/A-Namespace.0123456789abcdefghijkl", Path: "/"}})
		status, _, _ = odd.get("/console/payments")
		Expect(status).To(Equal(http.StatusSeeOther))
		for _, q := range []string{"user=" + ns + "/a/b&token=0123456789abcdefghijklmnop", "user=Bad%20NS/x&token=0123456789abcdefghijklmnop",
			"user=" + ns + "/" + paygatev1.ConsoleUserName(u.email) + "&token=not-the-token-0123456789"} {
			status, _, _ = odd.get("/console/invite?" + q)
			Expect(status).To(Equal(http.StatusNotFound), q)
		}
		status, _, _ = odd.get("/console/payments/..%2f..%2fsecrets")
		Expect(status).To(BeElementOf(http.StatusSeeOther, http.StatusNotFound))
	})

	It("locks a user after repeated failures on either replica, and keeps passwords, codes and cookies out of logs and the audit trail", func() {
		u := invite(soko.merchant, "finance@soko.example", paygatev1.ConsoleFinance)
		c := newConsoleClient(replicaB)
		c.signUp(u)
		wrong := "not the password " + uniqueName("x")
		for i := range consoleauth.DefaultLockoutPolicy.Threshold {
			target := []string{baseURL, replicaB}[i%2]
			status, _, _ := newConsoleClient(target).post("/console/sign-in", url.Values{"email": {u.email}, "password": {wrong}})
			Expect(status).To(Equal(http.StatusUnauthorized))
		}
		for _, target := range []string{baseURL, replicaB} {
			status, body := newConsoleClient(target).signIn(u, 1)
			Expect(status).To(Equal(http.StatusTooManyRequests), "locked on %s even with the right password", target)
			Expect(body).To(ContainSubstring("locked"))
		}
		var cu paygatev1.ConsoleUser
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: paygatev1.ConsoleUserName(u.email)}, &cu)).To(Succeed())
		Expect(cu.Status.LockedUntil).NotTo(BeNil())

		var audit paygatev1.ConsoleAuditRecordList
		Expect(k8s.List(ctx, &audit, client.InNamespace(ns))).To(Succeed())
		var trail strings.Builder
		refused := 0
		for _, rec := range audit.Items {
			fmt.Fprintf(&trail, "%+v\n", rec.Spec)
			if rec.Spec.Actor == u.email && rec.Spec.Action == "sign-in" && rec.Spec.Result == paygatev1.ConsoleAuditRefused {
				refused++
			}
		}
		Expect(refused).To(BeNumerically(">=", consoleauth.DefaultLockoutPolicy.Threshold+2), "every refusal audited")
		var secret corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testenv.ChartNamespace, Name: paygatev1.ConsoleCredentialsSecretName(ns, cu.Name)}, &secret)).To(Succeed())
		for _, where := range []string{logsB.String(), trail.String()} {
			for _, s := range append([]string{u.password, wrong, u.totp, string(secret.Data["password"])}, u.recovery...) {
				Expect(where).NotTo(ContainSubstring(s))
			}
			for _, ck := range c.http.Jar.Cookies(mustURL(replicaB)) {
				Expect(where).NotTo(ContainSubstring(ck.Value))
			}
		}
	})
})

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	Expect(err).NotTo(HaveOccurred())
	return u
}
