// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/pkg/paygate"
)

// tenant is one merchant's credential set (one environment) and what it created through the API.
type tenant struct {
	name     string
	merchant *paygatev1.Merchant
	env      paygatev1.Environment
	c        *paygate.Client

	settledTrx, settledRef string
	pendingTrx, pendingRef string
	checkoutURL            *url.URL
	payoutID               string
	planCode               string
	subID                  string
	invoiceIDs             []string
	idemKey, idemBody      string
}

// ids are every identifier of the tenant's objects as the API names them.
func (t *tenant) ids() []string {
	return append([]string{t.settledTrx, t.settledRef, t.pendingTrx, t.pendingRef, t.payoutID, t.planCode, t.subID}, t.invoiceIDs...)
}

// scope lists the tenant's objects: its merchant and environment labels in its namespace.
func (t *tenant) scope() []client.ListOption {
	return []client.ListOption{client.InNamespace(t.merchant.Namespace),
		client.MatchingLabels{paygatev1.LabelMerchant: t.merchant.Name, paygatev1.LabelEnvironment: string(t.env)}}
}

// versions are the resourceVersions of every object of the tenant (payments, payouts, plans,
// subscriptions, invoices, idempotency keys and its balance), by kind and name.
func (t *tenant) versions() map[string]string {
	GinkgoHelper()
	out := map[string]string{}
	lists := map[string]client.ObjectList{
		"payment": &paygatev1.PaymentList{}, "payout": &paygatev1.PayoutList{}, "plan": &paygatev1.BillingPlanList{},
		"subscription": &paygatev1.SubscriptionList{}, "invoice": &paygatev1.InvoiceList{}, "idempotencykey": &paygatev1.IdempotencyKeyList{},
	}
	for kind, list := range lists {
		Expect(k8s.List(ctx, list, t.scope()...)).To(Succeed())
		items, err := metaItems(list)
		Expect(err).NotTo(HaveOccurred())
		for _, o := range items {
			out[kind+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	var b paygatev1.Balance
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: t.merchant.Namespace, Name: paygatev1.BalanceName(t.merchant.Name, t.env)}, &b)).To(Succeed())
	out["balance/"+b.Name] = b.ResourceVersion
	return out
}

// metaItems are the objects of a list.
func metaItems(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	switch l := list.(type) {
	case *paygatev1.PaymentList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *paygatev1.PayoutList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *paygatev1.BillingPlanList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *paygatev1.SubscriptionList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *paygatev1.InvoiceList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *paygatev1.IdempotencyKeyList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("unexpected list %T", list)
	}
	return out, nil
}

// count is how many objects of a kind the tenant has, read through the k8s client.
func (t *tenant) count(list client.ObjectList) int {
	GinkgoHelper()
	Expect(k8s.List(ctx, list, t.scope()...)).To(Succeed())
	items, err := metaItems(list)
	Expect(err).NotTo(HaveOccurred())
	return len(items)
}

// seedTenant creates, through the API with c, a settled push payment of amount, a pending hosted
// payment, a payout of 5000 (settled), a plan and a subscription whose first invoice is paid, and a
// create with an Idempotency-Key; it waits until all of them are final.
func seedTenant(name string, m *paygatev1.Merchant, env paygatev1.Environment, c *paygate.Client, amount string) *tenant {
	GinkgoHelper()
	t := &tenant{name: name, merchant: m, env: env, c: c,
		settledRef: name + "-settled", pendingRef: name + "-pending", planCode: name + "-plan", idemKey: name + "-key"}

	settled, err := c.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: json.Number(amount), CurrencyCode: "TZS",
		RefTrx: t.settledRef, PaymentMode: "push", CustomerPhone: settlementNumber}, "")
	Expect(err).NotTo(HaveOccurred())
	t.settledTrx = settled.TrxID
	Eventually(func(g Gomega) {
		v, err := c.VerifyPayment(ctx, t.settledTrx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(v.Status).To(Equal("success"))
	}).WithPolling(250 * time.Millisecond).Should(Succeed())

	pending, err := c.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "2500", CurrencyCode: "TZS", RefTrx: t.pendingRef}, "")
	Expect(err).NotTo(HaveOccurred())
	t.pendingTrx = pending.TrxID
	t.checkoutURL, err = url.Parse(pending.Data.CheckoutURL)
	Expect(err).NotTo(HaveOccurred())
	Expect(t.checkoutURL.Query().Get("signature")).NotTo(BeEmpty())

	Eventually(func() string { return availableBalance(c).String() }).ShouldNot(Equal(money.Amount{}.String()))
	po, err := c.CreatePayout(ctx, paygate.PayoutRequest{Amount: "5000"}, name+"-payout")
	Expect(err).NotTo(HaveOccurred())
	t.payoutID = po.ID
	Expect(awaitPayout(c, t.payoutID).Status).To(Equal("success"))

	_, err = c.CreatePlan(ctx, paygate.PlanRequest{Code: t.planCode, Name: "Gold " + name, Amount: "15000", CurrencyCode: "TZS", Interval: "month"}, "")
	Expect(err).NotTo(HaveOccurred())
	sub, err := c.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: t.planCode, CustomerPhone: settlementNumber,
		TermsShown: "Gold: TZS 15,000 every month."}, name+"-signup")
	Expect(err).NotTo(HaveOccurred())
	t.subID = sub.ID
	Eventually(func(g Gomega) {
		s, err := c.GetSubscription(ctx, t.subID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s.Status).To(Equal("active"))
		invoices, err := c.ListInvoices(ctx, paygate.BillingListOptions{Subscription: t.subID})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(invoices.Data).To(HaveLen(1))
		g.Expect(invoices.Data[0].Status).To(Equal("paid"))
		t.invoiceIDs = []string{invoices.Data[0].ID}
	}).WithPolling(250 * time.Millisecond).Should(Succeed())

	t.idemBody = `{"payment_amount":3000,"currency_code":"TZS","ref_trx":"` + name + `-keyed","payment_mode":"hosted"}`
	resp, err := c.Do(ctx, http.MethodPost, "/api/v1/payments", []byte(t.idemBody), http.Header{"Idempotency-Key": {t.idemKey}})
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), string(resp.Body))
	return t
}

// quiesce waits until no object of the tenants changes for two seconds (webhook deliveries,
// balance updates and the controllers' status writes are over).
func quiesce(tenants ...*tenant) {
	GinkgoHelper()
	all := func() map[string]string {
		out := map[string]string{}
		for _, t := range tenants {
			for k, v := range t.versions() {
				out[t.name+":"+k] = v
			}
		}
		return out
	}
	Eventually(func(g Gomega) {
		before := all()
		time.Sleep(2 * time.Second)
		g.Expect(all()).To(Equal(before))
	}).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// probe is one request a prober makes about a victim's object, and the refusal it must get.
type probe struct {
	method, target, body string
	status               int
	label, message       string
	field                string // the field errors must name, if any
}

var _ = Describe("Cross-tenant isolation", Ordered, ContinueOnFailure, func() {
	var (
		ns                      string
		bSandbox, aProd, aSandb *tenant
		pairs                   map[string][2]*tenant // prober, victim
	)

	BeforeAll(func() {
		ns = newNamespace()
		createGateway("TZS", func(g *paygatev1.Gateway) {
			g.Spec.Simulation = paygatev1.SimulationSandboxAndProduction
			g.Spec.Payouts = &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: "1", Fixed: "100"}, MinAmount: ptr.To(paygatev1.Decimal("1000"))}
		})
		// Both merchants live in one namespace: only the apiserver's ownership checks keep them apart.
		a := payoutMerchant(ns, "tenant-a", "")
		b := payoutMerchant(ns, "tenant-b", "")
		bSandbox = seedTenant("b-sandbox", b.merchant, paygatev1.EnvironmentSandbox, b.sandbox, "100000")
		aProd = seedTenant("a-production", a.merchant, paygatev1.EnvironmentProduction, a.production, "60000")
		aSandb = seedTenant("a-sandbox", a.merchant, paygatev1.EnvironmentSandbox, a.sandbox, "30000")
		quiesce(bSandbox, aProd, aSandb)
		pairs = map[string][2]*tenant{
			"A sandbox probes B sandbox":    {aSandb, bSandbox},
			"A sandbox probes A production": {aSandb, aProd},
			"A production probes A sandbox": {aProd, aSandb},
		}
	})

	// unchanged runs probe and checks that the victim's objects, and the prober's, are exactly as
	// they were: the same objects with the same resourceVersions.
	unchanged := func(prober, victim *tenant, probe func()) {
		GinkgoHelper()
		vBefore, pBefore := victim.versions(), prober.versions()
		probe()
		Expect(victim.versions()).To(Equal(vBefore), "the victim's objects changed")
		Expect(prober.versions()).To(Equal(pBefore), "the prober's objects changed")
	}

	pairNames := []string{"A sandbox probes B sandbox", "A sandbox probes A production", "A production probes A sandbox"}

	DescribeTable("refuses every route about another tenant's object",
		func(build func(prober, victim *tenant) probe) {
			for _, pairName := range pairNames {
				prober, victim := pairs[pairName][0], pairs[pairName][1]
				By(pairName)
				p := build(prober, victim)
				unchanged(prober, victim, func() {
					var body []byte
					if p.body != "" {
						body = []byte(p.body)
					}
					resp, err := prober.c.Do(ctx, p.method, p.target, body, nil)
					Expect(err).NotTo(HaveOccurred())
					expectAPIError(resp.StatusCode, string(resp.Body), p.status, p.label, p.message)
					if p.field != "" {
						Expect(string(resp.Body)).To(ContainSubstring(`"errors":{"` + p.field + `"`))
					}
					for _, id := range victim.ids() {
						if !strings.Contains(p.target+p.body, id) { // the prober's own words may be echoed
							Expect(string(resp.Body)).NotTo(ContainSubstring(id), "the answer names the victim's object")
						}
					}
				})
			}
		},
		Entry("GET /api/v1/payments/{trx_id}, settled", func(_, v *tenant) probe {
			return probe{method: "GET", target: "/api/v1/payments/" + v.settledTrx, status: 404, label: "NOT_FOUND", message: "Transaction not found."}
		}),
		Entry("GET /api/v1/payments/{trx_id}, pending", func(_, v *tenant) probe {
			return probe{method: "GET", target: "/api/v1/payments/" + v.pendingTrx, status: 404, label: "NOT_FOUND", message: "Transaction not found."}
		}),
		Entry("GET /api/v1/verify-payment/{trx_id}", func(_, v *tenant) probe {
			return probe{method: "GET", target: "/api/v1/verify-payment/" + v.settledTrx, status: 404, label: "NOT_FOUND", message: "Transaction not found."}
		}),
		Entry("POST /api/v1/payments/{trx_id}/push", func(_, v *tenant) probe {
			return probe{method: "POST", target: "/api/v1/payments/" + v.pendingTrx + "/push", body: `{"customer_phone":"+255712345678"}`,
				status: 404, label: "NOT_FOUND", message: "Transaction not found."}
		}),
		Entry("GET /api/v1/payouts/{id}", func(_, v *tenant) probe {
			return probe{method: "GET", target: "/api/v1/payouts/" + v.payoutID, status: 404, label: "NOT_FOUND", message: "Payout not found."}
		}),
		Entry("POST /api/v1/payouts, more than the prober's own balance", func(p, _ *tenant) probe {
			amount := availableBalance(p.c).Add(money.MustParseAmount("1000")).StringFixed(2)
			return probe{method: "POST", target: "/api/v1/payouts", body: `{"amount":` + amount + `}`,
				status: 422, label: "INSUFFICIENT_BALANCE", message: "does not cover this payout", field: "amount"}
		}),
		Entry("GET /api/v1/billing/plans/{code}", func(_, v *tenant) probe {
			return probe{method: "GET", target: "/api/v1/billing/plans/" + v.planCode, status: 404, label: "NOT_FOUND", message: "Plan not found."}
		}),
		Entry("POST /api/v1/billing/subscriptions to the victim's plan", func(_, v *tenant) probe {
			return probe{method: "POST", target: "/api/v1/billing/subscriptions",
				body:   `{"plan_code":"` + v.planCode + `","customer_phone":"+255712345678","terms_shown":"Gold, monthly."}`,
				status: 422, label: "Validation failed", field: "plan_code"}
		}),
		Entry("GET /api/v1/billing/subscriptions/{id}", func(_, v *tenant) probe {
			return probe{method: "GET", target: "/api/v1/billing/subscriptions/" + v.subID, status: 404, label: "NOT_FOUND", message: "Subscription not found."}
		}),
		Entry("POST /api/v1/billing/subscriptions/{id}/cancel", func(_, v *tenant) probe {
			return probe{method: "POST", target: "/api/v1/billing/subscriptions/" + v.subID + "/cancel", body: `{"at_period_end":false}`,
				status: 404, label: "NOT_FOUND", message: "Subscription not found."}
		}),
		Entry("POST /api/v1/billing/subscriptions/{id}/advance", func(p, v *tenant) probe {
			message := "Subscription not found."
			if p.env == paygatev1.EnvironmentProduction {
				message = "" // the test clock does not exist in production: 404 as well, with its own message
			}
			return probe{method: "POST", target: "/api/v1/billing/subscriptions/" + v.subID + "/advance", body: `{"seconds":2678400}`,
				status: 404, label: "NOT_FOUND", message: message}
		}),
		Entry("GET /api/v1/billing/invoices?subscription={id}", func(_, v *tenant) probe {
			return probe{method: "GET", target: "/api/v1/billing/invoices?subscription=" + v.subID, status: 404, label: "NOT_FOUND", message: "Subscription not found."}
		}),
	)

	DescribeTable("lists only the prober's own objects",
		func(target func(v *tenant) string, list func() client.ObjectList) {
			for _, pairName := range pairNames {
				prober, victim := pairs[pairName][0], pairs[pairName][1]
				By(pairName)
				unchanged(prober, victim, func() {
					resp, err := prober.c.Do(ctx, http.MethodGet, target(victim), nil, nil)
					Expect(err).NotTo(HaveOccurred())
					Expect(resp.StatusCode).To(Equal(http.StatusOK), string(resp.Body))
					for _, id := range victim.ids() {
						Expect(string(resp.Body)).NotTo(ContainSubstring(`"`+id+`"`), "the list shows the victim's object")
					}
					var page struct {
						Pagination paygate.Pagination `json:"pagination"`
					}
					Expect(json.Unmarshal(resp.Body, &page)).To(Succeed())
					want := 0
					if !strings.Contains(target(victim), "merchant_ref=") {
						want = prober.count(list())
					}
					Expect(page.Pagination.Total).To(Equal(want), string(resp.Body))
				})
			}
		},
		Entry("GET /api/v1/payments", func(*tenant) string { return "/api/v1/payments?limit=100" }, func() client.ObjectList { return &paygatev1.PaymentList{} }),
		Entry("GET /api/v1/payments?merchant_ref=", func(v *tenant) string { return "/api/v1/payments?merchant_ref=" + v.settledRef },
			func() client.ObjectList { return &paygatev1.PaymentList{} }),
		Entry("GET /api/v1/payouts", func(*tenant) string { return "/api/v1/payouts?limit=100" }, func() client.ObjectList { return &paygatev1.PayoutList{} }),
		Entry("GET /api/v1/billing/plans", func(*tenant) string { return "/api/v1/billing/plans?limit=100" }, func() client.ObjectList { return &paygatev1.BillingPlanList{} }),
		Entry("GET /api/v1/billing/subscriptions", func(*tenant) string { return "/api/v1/billing/subscriptions?limit=100" },
			func() client.ObjectList { return &paygatev1.SubscriptionList{} }),
		Entry("GET /api/v1/billing/invoices", func(*tenant) string { return "/api/v1/billing/invoices?limit=100" }, func() client.ObjectList { return &paygatev1.InvoiceList{} }),
	)

	It("answers the balance and a payout preview from the prober's own environment", func() {
		for _, pairName := range pairNames {
			prober, victim := pairs[pairName][0], pairs[pairName][1]
			By(pairName)
			unchanged(prober, victim, func() {
				resp, err := prober.c.Do(ctx, http.MethodGet, "/api/v1/balance", nil, nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(resp.StatusCode).To(Equal(http.StatusOK), string(resp.Body))
				Expect(string(resp.Body)).To(ContainSubstring(`"environment":"` + string(prober.env) + `"`))
				var own paygatev1.Balance
				Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: paygatev1.BalanceName(prober.merchant.Name, prober.env)}, &own)).To(Succeed())
				Expect(own.Status.Currencies).To(HaveLen(1))
				Expect(availableBalance(prober.c).StringFixed(2)).To(Equal(money.MustParseAmount(string(own.Status.Currencies[0].Available)).StringFixed(2)))
				Expect(availableBalance(prober.c).StringFixed(2)).NotTo(Equal(availableBalance(victim.c).StringFixed(2)))

				resp, err = prober.c.Do(ctx, http.MethodPost, "/api/v1/payouts/preview", []byte(`{"amount":5000}`), nil)
				Expect(err).NotTo(HaveOccurred())
				Expect(resp.StatusCode).To(Equal(http.StatusOK), string(resp.Body))
			})
		}
	})

	It("never lets a checkout link be moved to another tenant's payment", func() {
		for _, pairName := range pairNames {
			prober, victim := pairs[pairName][0], pairs[pairName][1]
			By(pairName)
			q := prober.checkoutURL.Query()
			unchanged(prober, victim, func() {
				status, _, body := send("GET", "/checkout/"+victim.pendingTrx+"/status?"+q.Encode(), http.Header{}, "")
				expectAPIError(status, body, http.StatusNotFound, "NOT_FOUND", "Unknown payment link.")

				status, _, body = send("GET", "/checkout/"+victim.pendingTrx+"?"+q.Encode(), http.Header{}, "")
				Expect(status).To(Equal(http.StatusNotFound))
				Expect(body).NotTo(ContainSubstring(victim.pendingRef))
				Expect(body).NotTo(ContainSubstring("2,500"))

				form := url.Values{"expires": {q.Get("expires")}, "signature": {q.Get("signature")}, "gateway": {"mpesa"}, "phone": {"+255712345678"}}
				status, hdr, _ := send("POST", "/checkout/"+victim.pendingTrx+"/pay", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, form.Encode())
				Expect(status).To(Equal(http.StatusNotFound))
				Expect(hdr.Get("Location")).To(BeEmpty())
			})
			By("the prober's own link still opening its own payment")
			status, _, _ := send("GET", "/checkout/"+prober.pendingTrx+"/status?"+q.Encode(), http.Header{}, "")
			Expect(status).To(Equal(http.StatusOK))
		}
	})

	It("never replays another tenant's answer for the same Idempotency-Key and body", func() {
		for _, pairName := range pairNames {
			prober, victim := pairs[pairName][0], pairs[pairName][1]
			By(pairName)
			// The payment an earlier pair's prober created is still being counted by its balance
			// (a ledger change waits up to a second for others to join it): let it finish.
			quiesce(prober, victim)
			vBefore := victim.versions()
			payments := prober.count(&paygatev1.PaymentList{})
			resp, err := prober.c.Do(ctx, http.MethodPost, "/api/v1/payments", []byte(victim.idemBody), http.Header{"Idempotency-Key": {victim.idemKey}})
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(http.StatusOK), string(resp.Body))
			Expect(resp.Header.Get("Idempotent-Replayed")).To(BeEmpty(), "the victim's stored answer was replayed")
			var created paygate.CreatePaymentResponse
			Expect(json.Unmarshal(resp.Body, &created)).To(Succeed())
			Expect(victim.ids()).NotTo(ContainElement(created.TrxID))
			var p paygatev1.Payment
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created.TrxID}, &p)).To(Succeed())
			owner, env := p.Owner()
			Expect([]string{owner, string(env)}).To(Equal([]string{prober.merchant.Name, string(prober.env)}))
			Expect(prober.count(&paygatev1.PaymentList{})).To(Equal(payments + 1))
			Expect(victim.versions()).To(Equal(vBefore))
		}
	})

	It("keeps every tenant's objects where they were created", func() {
		for _, t := range []*tenant{bSandbox, aProd, aSandb} {
			var names []string
			for k := range t.versions() {
				names = append(names, k)
			}
			sort.Strings(names)
			Expect(names).To(ContainElements("payment/"+t.settledTrx, "payment/"+t.pendingTrx, "payout/"+t.payoutID), t.name)
			var p paygatev1.Payment
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: t.pendingTrx}, &p)).To(Succeed())
			Expect(p.Spec.PushRequest).To(BeNil(), "%s: nobody pushed the pending payment", t.name)
			sub := subscriptionObject(ns, t.subID)
			Expect(sub.Spec.Cancel).To(BeEmpty(), "%s: nobody cancelled the subscription", t.name)
			Expect(sub.ClockOffsetSeconds()).To(BeZero(), "%s: nobody moved the test clock", t.name)
		}
	})
})
