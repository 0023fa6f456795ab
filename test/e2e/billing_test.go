// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/pkg/paygate"
)

// goldMonthly is the plan most billing specs sell: TZS 15,000 a month.
var goldMonthly = paygate.PlanRequest{Code: "gold-monthly", Name: "Gold", Amount: "15000", CurrencyCode: "TZS", Interval: "month"}

// goldTerms are recurring terms as a merchant shows them: line breaks, a trailing space and
// non-ASCII text, all of which the consent keeps byte for byte.
const goldTerms = "Gold — TZS 15,000 kila mwezi.\r\nEach month you get a USSD prompt; approve it with your PIN. Cancel any time. "

// subscriptionsIn lists the Subscription objects of a namespace.
func subscriptionsIn(ns string) []paygatev1.Subscription {
	var list paygatev1.SubscriptionList
	ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// plansIn lists the BillingPlan objects of a namespace.
func plansIn(ns string) []paygatev1.BillingPlan {
	var list paygatev1.BillingPlanList
	ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// subscriptionObject reads the Subscription behind an API id.
func subscriptionObject(ns, apiID string) *paygatev1.Subscription {
	name, ok := paygatev1.SubscriptionNameFromAPIID(apiID)
	ExpectWithOffset(1, ok).To(BeTrue(), apiID)
	sub := &paygatev1.Subscription{}
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sub)).To(Succeed())
	return sub
}

// subscribe subscribes phone to the plan with planCode through the API, showing goldTerms.
func subscribe(c *paygate.Client, planCode, phone string) *paygate.Subscription {
	sub, err := c.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: planCode, CustomerPhone: phone, TermsShown: goldTerms}, "")
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return sub
}

// noAnswerPhone is the sandbox number that never answers a prompt: its charges stay pending for
// the whole session (docs/sandbox.md).
const noAnswerPhone = "+255711000004"

// issueInvoice writes an invoice of a subscription's period in phase, as the billing controller
// would, but without the paygate.dev/subscription label, by which the controller finds a
// subscription's invoices: the controller leaves these alone, and the API, which reads an
// invoice's spec, lists them like any other.
func issueInvoice(sub *paygatev1.Subscription, period int32, phase paygatev1.InvoicePhase) *paygatev1.Invoice {
	start := sub.Spec.Consent.RecordedAt.Time.Truncate(time.Second).AddDate(0, int(period-1), 0)
	inv := &paygatev1.Invoice{
		ObjectMeta: metav1.ObjectMeta{Namespace: sub.Namespace, Name: paygatev1.InvoiceName(sub.Name, period),
			Labels: map[string]string{paygatev1.LabelMerchant: sub.Spec.MerchantRef.Name, paygatev1.LabelEnvironment: string(sub.Spec.Environment)}},
		Spec: paygatev1.InvoiceSpec{MerchantRef: sub.Spec.MerchantRef, Environment: sub.Spec.Environment,
			SubscriptionRef: paygatev1.SubscriptionReference{Name: sub.Name}, PlanCode: sub.Spec.PlanCode, Period: period,
			PeriodStart: metav1.NewTime(start), PeriodEnd: metav1.NewTime(start.AddDate(0, 1, 0)),
			Amount: sub.Spec.Consent.PlanAmount, Currency: sub.Spec.Consent.PlanCurrency},
	}
	ExpectWithOffset(1, k8s.Create(ctx, inv)).To(Succeed())
	inv.Status = paygatev1.InvoiceStatus{Phase: phase}
	if phase == paygatev1.InvoicePaymentFailed {
		next := metav1.NewTime(start.Add(24 * time.Hour))
		inv.Status.AttemptCount, inv.Status.LastFailureReason, inv.Status.NextAttemptAt = 1, "INSUFFICIENT_FUNDS", &next
	}
	ExpectWithOffset(1, k8s.Status().Update(ctx, inv)).To(Succeed())
	return inv
}

var _ = Describe("Billing API", func() {
	var (
		ns   string
		duka *merchantFixture
	)

	BeforeEach(func() {
		ns = newNamespace()
		createGateway("TZS")
		duka = createMerchant(ns, "duka")
	})

	It("creates, reads and lists plans, writing the dunning policy and charging window out", func() {
		plan, err := duka.sandbox.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(plan.Code).To(Equal("gold-monthly"))
		Expect(plan.Amount.String()).To(Equal("15000.00"))
		Expect(plan.Currency).To(Equal("TZS"))
		Expect(plan.Interval).To(Equal("month"))
		Expect(plan.IntervalCount).To(Equal(1))
		Expect(plan.Dunning).To(Equal(paygate.PlanDunning{RetryAfterDays: []int{1, 3, 5}, MaxFailures: 4}))
		Expect(plan.ChargingWindow).To(Equal(paygate.PlanChargingWindow{Start: "08:00", End: "20:00", TimeZone: "Africa/Dar_es_Salaam"}))
		Expect(plan.Environment).To(Equal("sandbox"))
		Expect(plan.CreatedAt).To(MatchRegexp(microsecondUTC.String()))

		By("recording a BillingPlan named <merchant>.<environment>.<code>, labelled for kubectl")
		var obj paygatev1.BillingPlan
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "duka.sandbox.gold-monthly"}, &obj)).To(Succeed())
		Expect(obj.Labels).To(HaveKeyWithValue(paygatev1.LabelMerchant, "duka"))
		Expect(obj.Labels).To(HaveKeyWithValue(paygatev1.LabelEnvironment, "sandbox"))
		Expect(string(obj.Spec.Amount)).To(Equal("15000.00"))
		Expect(obj.Spec.Dunning.MaxFailures).To(Equal(int32(4)))

		quarterly, err := duka.sandbox.CreatePlan(ctx, paygate.PlanRequest{Code: "gold-quarterly", Name: "Gold, quarterly", Amount: "42000.50",
			CurrencyCode: "TZS", Interval: "month", IntervalCount: 3, Description: "Three months of Gold"}, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(quarterly.Amount.String()).To(Equal("42000.50"))
		Expect(quarterly.IntervalCount).To(Equal(3))
		Expect(quarterly.Description).To(Equal("Three months of Gold"))

		got, err := duka.sandbox.GetPlan(ctx, "gold-monthly")
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Name).To(Equal("Gold"))
		Eventually(func(g Gomega) { // the list reads the apiserver's cache
			list, err := duka.sandbox.ListPlans(ctx, paygate.BillingListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Pagination.Total).To(Equal(2))
		}).Should(Succeed())
		page, err := duka.sandbox.ListPlans(ctx, paygate.BillingListOptions{Limit: 1, Offset: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(page.Pagination).To(Equal(paygate.Pagination{Limit: 1, Offset: 1, Total: 2, Count: 1}))

		By("keeping plans apart per environment and merchant")
		other := createMerchant(ns, "other")
		for _, c := range []*paygate.Client{duka.production, other.sandbox} {
			_, err := c.GetPlan(ctx, "gold-monthly")
			Expect(apiError(err).StatusCode).To(Equal(http.StatusNotFound))
			list, err := c.ListPlans(ctx, paygate.BillingListOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(list.Data).To(BeEmpty())
		}
		// The same code is free in the other environment and for another merchant.
		_, err = duka.production.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		_, err = other.sandbox.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(plansIn(ns)).To(HaveLen(4))
	})

	It("refuses a duplicate code with 409 DUPLICATE_PLAN_CODE and invalid plans, recording nothing", func() {
		_, err := duka.sandbox.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		dup := goldMonthly
		dup.Amount, dup.Name = "20000", "Gold, dearer"
		_, err = duka.sandbox.CreatePlan(ctx, dup, "")
		e := apiError(err)
		Expect(e.StatusCode).To(Equal(http.StatusConflict))
		Expect(e.Label).To(Equal("DUPLICATE_PLAN_CODE"))
		Expect(e.Errors).To(HaveKey("code"))
		var obj paygatev1.BillingPlan
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "duka.sandbox.gold-monthly"}, &obj)).To(Succeed())
		Expect(string(obj.Spec.Amount)).To(Equal("15000.00"), "the first plan's price stands")

		for _, tc := range []struct {
			body  string
			label string
			field string
		}{
			{`{"code":"Gold!","name":"Gold","amount":1000,"currency_code":"TZS","interval":"month"}`, "Validation failed", "code"},
			{`{"code":"gold","amount":1000,"currency_code":"TZS","interval":"month"}`, "Validation failed", "name"},
			{`{"code":"gold","name":"Gold","amount":0.99,"currency_code":"TZS","interval":"month"}`, "INVALID_AMOUNT", "amount"},
			{`{"code":"gold","name":"Gold","amount":1000000000000000000,"currency_code":"TZS","interval":"month"}`, "INVALID_AMOUNT", "amount"},
			{`{"code":"gold","name":"Gold","amount":1000.001,"currency_code":"TZS","interval":"month"}`, "Validation failed", "amount"},
			{`{"code":"gold","name":"Gold","amount":1000,"currency_code":"TZS","interval":"hour"}`, "Validation failed", "interval"},
			{`{"code":"gold","name":"Gold","amount":1000,"currency_code":"TZS","interval":"week","interval_count":53}`, "Validation failed", "interval_count"},
			{`{"code":"gold","name":"Gold","amount":1000,"currency_code":"TZS","interval":"day","interval_count":366}`, "Validation failed", "interval_count"},
			{`{"code":"gold","name":"Gold","amount":1000,"currency_code":"KES","interval":"month"}`, "INVALID_CURRENCY", ""},
		} {
			status, body := raw(duka.sandbox, http.MethodPost, "/api/v1/billing/plans", tc.body, nil)
			Expect(status).To(Equal(http.StatusUnprocessableEntity), tc.body)
			Expect(body).To(HaveKeyWithValue("error", tc.label), tc.body)
			if tc.field != "" {
				Expect(body["errors"]).To(HaveKey(tc.field), tc.body)
			}
		}
		Expect(plansIn(ns)).To(HaveLen(1))

		By("replaying an idempotent create, and one plan from concurrent requests with one key")
		var wg sync.WaitGroup
		codes := make([]string, 20)
		for i := range 20 {
			wg.Go(func() {
				defer GinkgoRecover()
				p, err := duka.sandbox.CreatePlan(ctx, paygate.PlanRequest{Code: "silver", Name: "Silver", Amount: "9000", CurrencyCode: "TZS", Interval: "week"}, "silver-1")
				Expect(err).NotTo(HaveOccurred(), "request %d", i)
				codes[i] = p.Code
			})
		}
		wg.Wait()
		Expect(codes).To(HaveEach("silver"))
		Expect(plansIn(ns)).To(HaveLen(2))
	})

	It("subscribes a customer, storing the consent verbatim, and the consent cannot be changed", func() {
		_, err := duka.sandbox.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		before := time.Now().UTC().Truncate(time.Microsecond)
		resp, err := duka.sandbox.Do(ctx, http.MethodPost, "/api/v1/billing/subscriptions",
			paygate.SubscriptionRequest{PlanCode: "gold-monthly", CustomerPhone: "0712 345 678", TermsShown: goldTerms},
			http.Header{"User-Agent": {"duka-backend/2.1 (+https://duka.example)"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(http.StatusOK), string(resp.Body))
		var created struct {
			Data paygate.Subscription `json:"data"`
			ID   string               `json:"id"`
		}
		Expect(json.Unmarshal(resp.Body, &created)).To(Succeed())
		sub := created.Data
		Expect(created.ID).To(Equal(sub.ID))
		Expect(sub.ID).To(MatchRegexp(`^sub_[a-z2-7]{24}$`))
		Expect(sub.Status).To(Equal("pending"))
		Expect(sub.PlanCode).To(Equal("gold-monthly"))
		Expect(sub.CustomerPhone).To(Equal("+255*******78"))
		Expect(sub.Amount.String()).To(Equal("15000.00"))
		Expect(sub.Interval).To(Equal("month"))
		Expect(sub.CreatedAt).To(Equal(sub.Consent.RecordedAt))
		sum := sha256.Sum256([]byte(goldTerms))
		Expect(sub.Consent).To(Equal(paygate.Consent{
			TermsShown: goldTerms, TermsSHA256: hex.EncodeToString(sum[:]), RecordedAt: sub.Consent.RecordedAt,
			ClientIP: "127.0.0.1", UserAgent: "duka-backend/2.1 (+https://duka.example)",
			PlanAmount: "15000.00", PlanCurrency: "TZS", PlanInterval: "month", PlanIntervalCount: 1,
			RecordedBy: paygate.ConsentRecorder{BusinessID: duka.sandbox.Credentials.MerchantKey, Environment: "sandbox"},
		}))
		Expect(sub.Consent.RecordedAt).To(MatchRegexp(microsecondUTC.String()))
		recordedAt, err := time.Parse(time.RFC3339Nano, sub.Consent.RecordedAt)
		Expect(err).NotTo(HaveOccurred())
		Expect(recordedAt).To(BeTemporally(">=", before))
		Expect(recordedAt).To(BeTemporally("<=", time.Now()))

		By("storing the consent verbatim on the Subscription object, never a secret")
		obj := subscriptionObject(ns, sub.ID)
		Expect(obj.Labels).To(HaveKeyWithValue(paygatev1.LabelPlanCode, "gold-monthly"))
		Expect(obj.Spec.PlanRef.Name).To(Equal("duka.sandbox.gold-monthly"))
		Expect(string(obj.Spec.CustomerPhone)).To(Equal("+255712345678"))
		c := obj.Spec.Consent
		Expect([]byte(c.TermsShown)).To(Equal([]byte(goldTerms)))
		Expect(c.TermsSHA256).To(Equal(hex.EncodeToString(sum[:])))
		Expect(c.RecordedAt.UTC()).To(Equal(recordedAt))
		Expect(c.ClientIP).To(Equal("127.0.0.1"))
		Expect(c.UserAgent).To(Equal("duka-backend/2.1 (+https://duka.example)"))
		Expect(string(c.PlanAmount)).To(Equal("15000.00"))
		Expect(c.PlanCurrency).To(Equal(paygatev1.CurrencyCode("TZS")))
		Expect(c.PlanInterval).To(Equal(paygatev1.IntervalMonth))
		Expect(c.PlanIntervalCount).To(Equal(int32(1)))
		Expect(c.RecordedBy).To(Equal(paygatev1.ConsentRecorder{BusinessID: duka.sandbox.Credentials.MerchantKey, Environment: paygatev1.EnvironmentSandbox}))
		stored, err := json.Marshal(obj)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(stored)).NotTo(ContainSubstring(duka.sandbox.Credentials.APIKey))
		Expect(string(stored)).NotTo(ContainSubstring(duka.sandbox.Credentials.APISecret))

		By("refusing any change of the consent, by update or by kubectl-style patch")
		// The billing controller writes the subscription's status meanwhile: read it afresh until
		// the update reaches validation instead of losing an optimistic-lock race.
		Eventually(func(g Gomega) {
			changed := &paygatev1.Subscription{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), changed)).To(Succeed())
			changed.Spec.Consent.TermsShown = "Gold — TZS 1,500 kila mwezi."
			g.Expect(k8s.Update(ctx, changed)).To(MatchError(ContainSubstring("consent is immutable")))
		}).Should(Succeed())
		for _, patch := range []string{
			`{"spec":{"consent":{"clientIP":"10.0.0.1"}}}`,
			`{"spec":{"consent":{"planAmount":"1500.00"}}}`,
			`{"spec":{"consent":{"termsSHA256":"` + strings.Repeat("0", 64) + `"}}}`,
		} {
			Expect(k8s.Patch(ctx, obj.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))).
				To(MatchError(ContainSubstring("consent is immutable")), patch)
		}
		Expect(k8s.Patch(ctx, obj.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"customerPhone":"+255713000000"}}`)))).
			To(MatchError(ContainSubstring("immutable")))
		again, err := duka.sandbox.GetSubscription(ctx, sub.ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Consent).To(Equal(sub.Consent))
		Expect(again.CustomerPhone).To(Equal("+255*******78"))

		By("showing the subscription to its merchant and environment only")
		Eventually(func(g Gomega) {
			list, err := duka.sandbox.ListSubscriptions(ctx, paygate.BillingListOptions{PlanCode: "gold-monthly"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Data).To(HaveLen(1))
			g.Expect(list.Data[0].ID).To(Equal(sub.ID))
		}).Should(Succeed())
		other := createMerchant(ns, "other")
		for _, cl := range []*paygate.Client{duka.production, other.sandbox} {
			_, err := cl.GetSubscription(ctx, sub.ID)
			Expect(apiError(err).StatusCode).To(Equal(http.StatusNotFound))
			_, err = cl.CancelSubscription(ctx, sub.ID, false)
			Expect(apiError(err).StatusCode).To(Equal(http.StatusNotFound))
			list, err := cl.ListSubscriptions(ctx, paygate.BillingListOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(list.Data).To(BeEmpty())
		}
		_, err = other.sandbox.AdvanceTestClock(ctx, sub.ID, 60)
		Expect(apiError(err).StatusCode).To(Equal(http.StatusNotFound))
		Expect(subscriptionObject(ns, sub.ID).Spec.Cancel).To(BeEmpty(), "another merchant cannot cancel it")
	})

	It("refuses invalid subscriptions in the error shape, recording nothing", func() {
		_, err := duka.sandbox.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		for _, tc := range []struct {
			body  string
			field string
		}{
			{`{"plan_code":"platinum","customer_phone":"0712345678","terms_shown":"TZS 15,000 a month"}`, "plan_code"},
			{`{"customer_phone":"0712345678","terms_shown":"TZS 15,000 a month"}`, "plan_code"},
			{`{"plan_code":"gold-monthly","customer_phone":"0712345678"}`, "terms_shown"},
			{`{"plan_code":"gold-monthly","customer_phone":"0712345678","terms_shown":""}`, "terms_shown"},
			{`{"plan_code":"gold-monthly","customer_phone":"0712345678","terms_shown":"   "}`, "terms_shown"},
			{`{"plan_code":"gold-monthly","customer_phone":"0712345678","terms_shown":null}`, "terms_shown"},
			{`{"plan_code":"gold-monthly","customer_phone":"+254712345678","terms_shown":"TZS 15,000 a month"}`, "customer_phone"},
			{`{"plan_code":"gold-monthly","customer_phone":"+255222123456","terms_shown":"TZS 15,000 a month"}`, "customer_phone"},
			{`{"plan_code":"gold-monthly","terms_shown":"TZS 15,000 a month"}`, "customer_phone"},
			{`{"plan_code":"gold-monthly","customer_phone":"0712345678","terms_shown":"TZS 15,000 a month","webhook_url":"ftp://duka.example/hooks"}`, "webhook_url"},
		} {
			status, body := raw(duka.sandbox, http.MethodPost, "/api/v1/billing/subscriptions", tc.body, nil)
			Expect(status).To(Equal(http.StatusUnprocessableEntity), tc.body)
			Expect(body).To(HaveKeyWithValue("error", "Validation failed"), tc.body)
			Expect(body["errors"]).To(HaveKey(tc.field), tc.body)
			Expect(body["message"]).NotTo(BeEmpty())
		}

		By("holding production webhook URLs to https and the merchant's allowed domains")
		strict := createMerchant(ns, "strict", func(m *paygatev1.Merchant) {
			m.Spec.AllowedWebhookDomains = []paygatev1.DomainName{"duka.example"}
		})
		for _, c := range []*paygate.Client{strict.sandbox, strict.production} {
			_, err := c.CreatePlan(ctx, goldMonthly, "")
			Expect(err).NotTo(HaveOccurred())
		}
		for _, probe := range []struct {
			c   *paygate.Client
			url string
		}{
			{strict.production, "http://duka.example/hooks"},
			{strict.sandbox, "https://evil.example/hooks"},
		} {
			_, err := probe.c.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: "gold-monthly", CustomerPhone: "0712345678",
				TermsShown: goldTerms, WebhookURL: probe.url}, "")
			e := apiError(err)
			Expect(e.StatusCode).To(Equal(http.StatusUnprocessableEntity), probe.url)
			Expect(e.Errors).To(HaveKey("webhook_url"), probe.url)
		}
		Expect(subscriptionsIn(ns)).To(BeEmpty())

		ok, err := strict.production.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: "gold-monthly", CustomerPhone: "+255712345678",
			TermsShown: goldTerms, WebhookURL: "https://billing.duka.example/hooks"}, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(ok.WebhookURL).To(Equal("https://billing.duka.example/hooks"))
		Expect(ok.Consent.RecordedBy).To(Equal(paygate.ConsentRecorder{BusinessID: strict.production.Credentials.MerchantKey, Environment: "production"}))
	})

	It("replays an idempotent subscription create and makes one subscription from concurrent requests", func() {
		_, err := duka.sandbox.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		body := mustJSON(paygate.SubscriptionRequest{PlanCode: "gold-monthly", CustomerPhone: "0712345678", TermsShown: goldTerms})
		first, err := duka.sandbox.Do(ctx, http.MethodPost, "/api/v1/billing/subscriptions", body, http.Header{"Idempotency-Key": {"signup-1"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(first.StatusCode).To(Equal(http.StatusOK), string(first.Body))
		again, err := duka.sandbox.Do(ctx, http.MethodPost, "/api/v1/billing/subscriptions", body, http.Header{"Idempotency-Key": {"signup-1"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(again.StatusCode).To(Equal(http.StatusOK))
		Expect(again.Body).To(MatchJSON(first.Body), "the same subscription and consent")
		Expect(again.Header.Get("Idempotent-Replayed")).To(Equal("true"))
		_, err = duka.sandbox.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: "gold-monthly", CustomerPhone: "0712345679", TermsShown: goldTerms}, "signup-1")
		Expect(apiError(err).Label).To(Equal("IDEMPOTENCY_KEY_REUSED"))
		Expect(subscriptionsIn(ns)).To(HaveLen(1))

		By("answering 30 concurrent requests with one key with one subscription")
		var wg sync.WaitGroup
		ids := make([]string, 30)
		for i := range 30 {
			wg.Go(func() {
				defer GinkgoRecover()
				sub, err := duka.sandbox.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: "gold-monthly", CustomerPhone: "0713000000", TermsShown: goldTerms}, "burst-signup")
				Expect(err).NotTo(HaveOccurred(), "request %d", i)
				ids[i] = sub.ID
			})
		}
		wg.Wait()
		Expect(ids).To(HaveEach(ids[0]))
		Expect(subscriptionsIn(ns)).To(HaveLen(2))

		By("making a new subscription for each request without a key (a byte-identical one in the same second is a replay)")
		subscribe(duka.sandbox, "gold-monthly", "0712345678")
		subscribe(duka.sandbox, "gold-monthly", "0712345679")
		Expect(subscriptionsIn(ns)).To(HaveLen(4))
	})

	It("cancels a subscription now or at the period's end, idempotently", func() {
		_, err := duka.sandbox.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		later := subscribe(duka.sandbox, "gold-monthly", "0712345678")
		now := subscribe(duka.sandbox, "gold-monthly", "0712345679")

		got, err := duka.sandbox.CancelSubscription(ctx, later.ID, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.CancelAtPeriodEnd).To(BeTrue())
		Expect(subscriptionObject(ns, later.ID).Spec.Cancel).To(Equal(paygatev1.CancelAtPeriodEnd))
		_, err = duka.sandbox.CancelSubscription(ctx, later.ID, true)
		Expect(err).NotTo(HaveOccurred(), "again: nothing changes")

		status, _ := raw(duka.sandbox, http.MethodPost, "/api/v1/billing/subscriptions/"+now.ID+"/cancel", "", nil)
		Expect(status).To(Equal(http.StatusOK), "the body is optional")
		Expect(subscriptionObject(ns, now.ID).Spec.Cancel).To(Equal(paygatev1.CancelImmediately))
		got, err = duka.sandbox.CancelSubscription(ctx, now.ID, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.CancelAtPeriodEnd).To(BeFalse(), "cancelled immediately stays so")
		Expect(subscriptionObject(ns, now.ID).Spec.Cancel).To(Equal(paygatev1.CancelImmediately))

		By("turning a cancellation at the period's end into an immediate one")
		_, err = duka.sandbox.CancelSubscription(ctx, later.ID, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(subscriptionObject(ns, later.ID).Spec.Cancel).To(Equal(paygatev1.CancelImmediately))

		status, body := raw(duka.sandbox, http.MethodPost, "/api/v1/billing/subscriptions/"+now.ID+"/cancel", `{"at_period_end":"yes"}`, nil)
		Expect(status).To(Equal(http.StatusUnprocessableEntity))
		Expect(body["errors"]).To(HaveKey("at_period_end"))
		for _, id := range []string{"sub_" + strings.Repeat("a", 24), "sub-" + strings.TrimPrefix(now.ID, "sub_"), "nothing"} {
			_, err := duka.sandbox.CancelSubscription(ctx, id, false)
			e := apiError(err)
			Expect(e.StatusCode).To(Equal(http.StatusNotFound), id)
			Expect(e.Label).To(Equal("NOT_FOUND"), id)
		}
	})

	It("advances a sandbox subscription's test clock, and answers 404 in production", func() {
		_, err := duka.sandbox.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		sub := subscribe(duka.sandbox, "gold-monthly", "0712345678")
		Expect(sub.TestClockOffsetSeconds).To(BeZero())
		got, err := duka.sandbox.AdvanceTestClock(ctx, sub.ID, 86400)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.TestClockOffsetSeconds).To(Equal(int64(86400)))
		got, err = duka.sandbox.AdvanceTestClock(ctx, sub.ID, 3600)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.TestClockOffsetSeconds).To(Equal(int64(90000)))
		Expect(subscriptionObject(ns, sub.ID).Spec.TestClock).To(Equal(&paygatev1.TestClock{OffsetSeconds: 90000}))

		for _, body := range []string{`{}`, `{"seconds":0}`, `{"seconds":-5}`, `{"seconds":1.5}`, `{"seconds":"60"}`, `{"seconds":315576001}`} {
			status, out := raw(duka.sandbox, http.MethodPost, "/api/v1/billing/subscriptions/"+sub.ID+"/advance", body, nil)
			Expect(status).To(Equal(http.StatusUnprocessableEntity), body)
			Expect(out["errors"]).To(HaveKey("seconds"), body)
		}
		Expect(subscriptionObject(ns, sub.ID).Spec.TestClock.OffsetSeconds).To(Equal(int64(90000)), "refusals change nothing")
		_, err = duka.sandbox.AdvanceTestClock(ctx, "sub_"+strings.Repeat("b", 24), 60)
		Expect(apiError(err).StatusCode).To(Equal(http.StatusNotFound))

		By("answering 404 in the error shape in production, changing nothing")
		_, err = duka.production.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		live := subscribe(duka.production, "gold-monthly", "0712345678")
		Expect(live.TestClockOffsetSeconds).To(BeZero())
		for _, id := range []string{live.ID, sub.ID} {
			status, out := raw(duka.production, http.MethodPost, "/api/v1/billing/subscriptions/"+id+"/advance", `{"seconds":60}`, nil)
			Expect(status).To(Equal(http.StatusNotFound))
			Expect(out).To(HaveKeyWithValue("error", "NOT_FOUND"))
			Expect(out).To(HaveKey("message"))
		}
		Expect(subscriptionObject(ns, live.ID).Spec.TestClock).To(BeNil())

		By("refusing a test clock on a production subscription through kubectl too (CEL)")
		obj := subscriptionObject(ns, live.ID)
		Expect(k8s.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"testClock":{"offsetSeconds":60}}}`)))).
			To(MatchError(ContainSubstring("sandbox subscriptions only")))
	})

	It("lists invoices, by subscription and status, only the caller's in the caller's environment", func() {
		_, err := duka.sandbox.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		// The customers never answer, so the first invoice the billing controller opens for each
		// stays open and the hand-written ones below are the only paid or failed ones.
		first := subscriptionObject(ns, subscribe(duka.sandbox, "gold-monthly", noAnswerPhone).ID)
		// The same number in its local form: a byte-identical keyless request in the same second
		// would be a replay of the first (docs/api.md, Replays).
		second := subscriptionObject(ns, subscribe(duka.sandbox, "gold-monthly", "0711000004").ID)
		issueInvoice(first, 41, paygatev1.InvoicePaid)
		issueInvoice(first, 42, paygatev1.InvoicePaymentFailed)
		issueInvoice(second, 41, paygatev1.InvoicePaid)
		other := createMerchant(ns, "other")
		_, err = other.sandbox.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		theirs := subscriptionObject(ns, subscribe(other.sandbox, "gold-monthly", noAnswerPhone).ID)
		issueInvoice(theirs, 41, paygatev1.InvoicePaid)

		firstID := first.APIID()
		var mine *paygate.InvoiceList
		Eventually(func(g Gomega) {
			mine, err = duka.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Subscription: firstID})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(mine.Data).To(ContainElements(
				HaveField("ID", paygatev1.InvoiceName(first.Name, 41)), HaveField("ID", paygatev1.InvoiceName(first.Name, 42))))
		}).Should(Succeed())
		for _, inv := range mine.Data {
			Expect(inv.Subscription).To(Equal(firstID))
			Expect(inv.Currency).To(Equal("TZS"))
			Expect(inv.Amount.String()).To(Equal("15000.00"))
			Expect(inv.PeriodStart).To(MatchRegexp(microsecondUTC.String()))
			if inv.Period == 42 {
				Expect(inv.Status).To(Equal("payment_failed"))
				Expect(inv.FailureReason).To(Equal("INSUFFICIENT_FUNDS"))
				Expect(inv.NextAttemptAt).NotTo(BeNil())
			}
		}
		failed, err := duka.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Subscription: firstID, Status: "payment_failed"})
		Expect(err).NotTo(HaveOccurred())
		Expect(failed.Data).To(HaveLen(1))
		Expect(failed.Data[0].Period).To(Equal(42))

		By("listing every invoice of the merchant and environment without the filter")
		Eventually(func(g Gomega) {
			all, err := duka.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Status: "paid"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(all.Data).To(ConsistOf(HaveField("ID", paygatev1.InvoiceName(first.Name, 41)), HaveField("ID", paygatev1.InvoiceName(second.Name, 41))))
		}).Should(Succeed())
		page, err := duka.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Status: "paid", Limit: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(page.Pagination).To(Equal(paygate.Pagination{Limit: 1, Offset: 0, Total: 2, Count: 1}))

		By("keeping another merchant's and the other environment's invoices out")
		_, err = duka.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Subscription: theirs.APIID()})
		Expect(apiError(err).StatusCode).To(Equal(http.StatusNotFound))
		_, err = duka.production.ListInvoices(ctx, paygate.BillingListOptions{Subscription: firstID})
		Expect(apiError(err).StatusCode).To(Equal(http.StatusNotFound))
		for _, c := range []*paygate.Client{duka.production} {
			list, err := c.ListInvoices(ctx, paygate.BillingListOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(list.Data).To(BeEmpty())
		}
		// Their invoice was written last: the apiserver's cache may not hold its paid status yet.
		Eventually(func(g Gomega) {
			theirList, err := other.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Status: "paid"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(theirList.Data).To(ConsistOf(HaveField("ID", paygatev1.InvoiceName(theirs.Name, 41))))
		}).Should(Succeed())
		status, body := raw(duka.sandbox, http.MethodGet, "/api/v1/billing/invoices?subscription="+strings.Replace(firstID, "_", "-", 1), "", nil)
		Expect(status).To(Equal(http.StatusUnprocessableEntity))
		Expect(body["errors"]).To(HaveKey("subscription"))
		status, body = raw(duka.sandbox, http.MethodGet, "/api/v1/billing/invoices?status=overdue", "", nil)
		Expect(status).To(Equal(http.StatusUnprocessableEntity))
		Expect(body["errors"]).To(HaveKey("status"))
	})
})

// billingEvents are the verified webhook events of eventType rcv received for m, with their data
// decoded into a new D each.
func billingEvents[D any](rcv *receiver, m *paygatev1.Merchant, eventType string) []*D {
	verifier := paygate.WebhookVerifier{Secret: webhookSecret(m)}
	var out []*D
	for _, got := range rcv.requests() {
		if got.header.Get("X-Paygate-Event") != eventType {
			continue
		}
		e, err := verifier.Verify(got.header, got.body)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		d := new(D)
		ExpectWithOffset(1, json.Unmarshal(e.Data, d)).To(Succeed())
		out = append(out, d)
	}
	return out
}

// subscriptionClock is the time on a subscription's clock now.
func subscriptionClock(sub *paygate.Subscription) time.Time {
	return time.Now().Add(time.Duration(sub.TestClockOffsetSeconds) * time.Second)
}

// advanceTo moves a sandbox subscription's test clock to just past t (a time of its record).
func advanceTo(c *paygate.Client, sub *paygate.Subscription, t string) *paygate.Subscription {
	at, err := time.Parse(time.RFC3339Nano, t)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	seconds := int64(at.Sub(subscriptionClock(sub))/time.Second) + 2
	ExpectWithOffset(1, seconds).To(BeNumerically(">", 0), "%s is ahead of the subscription's clock", t)
	got, err := c.AdvanceTestClock(ctx, sub.ID, seconds)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return got
}

var _ = Describe("Billing end to end with the test clock", func() {
	var (
		ns   string
		rcv  *receiver
		shop *merchantFixture
	)

	BeforeEach(func() {
		ns = newNamespace()
		createGateway("TZS")
		rcv = newReceiver()
		shop = createMerchant(ns, "shop", func(m *paygatev1.Merchant) { m.Spec.WebhookURLs.Sandbox = rcv.url() })
		_, err := shop.sandbox.CreatePlan(ctx, goldMonthly, "")
		Expect(err).NotTo(HaveOccurred())
		// Renewals and retries wait for the charging window (08:00 to 20:00 in Dar es Salaam by
		// default); the platform team opens it all day, so these specs run at any hour.
		plan := &paygatev1.BillingPlan{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop.sandbox.gold-monthly"}, plan)).To(Succeed())
		Expect(k8s.Patch(ctx, plan, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"chargingWindow":{"start":"00:00","end":"24:00"}}}`)))).To(Succeed())
		Eventually(func(g Gomega) { // the manager's cache has the new window once the plan's status says so
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(plan), plan)).To(Succeed())
			g.Expect(plan.Status.ObservedGeneration).To(Equal(plan.Generation))
		}).Should(Succeed())
	})

	It("charges the first invoice at once, confirms the subscription, and renews it when its clock reaches the next period", func() {
		sub, err := shop.sandbox.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: "gold-monthly", CustomerPhone: "0712345678", TermsShown: goldTerms}, "signup-e2e")
		Expect(err).NotTo(HaveOccurred())
		Expect(sub.Status).To(Equal("pending"))

		By("paying the first invoice with the first prompt: active and confirmed")
		Eventually(func(g Gomega) {
			sub, err = shop.sandbox.GetSubscription(ctx, sub.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sub.Status).To(Equal("active"))
			g.Expect(sub.ConfirmedAt).NotTo(BeNil())
			g.Expect(sub.CurrentPeriod).To(HaveValue(Equal(1)))
			// The renewal is charged at the next period's start: the window is open all day.
			g.Expect(sub.NextChargeAt).To(Equal(sub.CurrentPeriodEnd))
		}).WithPolling(250 * time.Millisecond).Should(Succeed())
		firstInvoice := "inv-" + strings.TrimPrefix(sub.ID, "sub_") + "-1"
		Expect(sub.LatestInvoice).To(HaveValue(Equal(firstInvoice)))
		Expect(sub.ConsecutiveFailures).To(BeZero())

		var invoices *paygate.InvoiceList
		Eventually(func(g Gomega) {
			invoices, err = shop.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Subscription: sub.ID})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(invoices.Data).To(HaveLen(1))
			g.Expect(invoices.Data[0].Status).To(Equal("paid"))
		}).WithPolling(250 * time.Millisecond).Should(Succeed())
		inv := invoices.Data[0]
		Expect(inv.ID).To(Equal(firstInvoice))
		Expect(inv.Period).To(Equal(1))
		Expect(inv.Amount.String()).To(Equal("15000.00"))
		Expect(inv.Attempts).To(Equal(1))
		Expect(inv.Payments).To(HaveLen(1))
		Expect(inv.PaidTrxID).To(HaveValue(Equal(inv.Payments[0])))
		Expect(inv.PaidAt).NotTo(BeNil())
		Expect(inv.PeriodStart).To(Equal(*sub.CurrentPeriodStart))
		Expect(inv.PeriodEnd).To(Equal(*sub.CurrentPeriodEnd))

		By("charging with an ordinary push payment whose merchant_ref is the invoice")
		charge, err := shop.sandbox.GetPayment(ctx, inv.Payments[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(charge.Status).To(Equal("success"))
		Expect(charge.MerchantRef).To(Equal(inv.ID))
		Expect(charge.PaymentMode).To(Equal("push"))
		Expect(charge.Amount.String()).To(Equal("15000.00"))

		By("sending subscription.created, invoice.created and invoice.paid")
		Eventually(func(g Gomega) {
			created := billingEvents[events.SubscriptionData](rcv, shop.merchant, "subscription.created")
			g.Expect(created).To(ContainElement(HaveField("SubscriptionID", sub.ID)))
			opened := billingEvents[events.InvoiceData](rcv, shop.merchant, "invoice.created")
			g.Expect(opened).To(ContainElement(HaveField("InvoiceID", firstInvoice)))
			paid := billingEvents[events.InvoiceData](rcv, shop.merchant, "invoice.paid")
			g.Expect(paid).To(ContainElement(And(HaveField("InvoiceID", firstInvoice), HaveField("TrxID", inv.Payments[0]))))
		}).Should(Succeed())

		By("moving the subscription's clock to the next period: the renewal invoice is opened and paid")
		advanced := advanceTo(shop.sandbox, sub, *sub.CurrentPeriodEnd)
		Expect(advanced.TestClockOffsetSeconds).To(BeNumerically(">=", 28*86400))
		secondInvoice := "inv-" + strings.TrimPrefix(sub.ID, "sub_") + "-2"
		Eventually(func(g Gomega) {
			got, err := shop.sandbox.GetSubscription(ctx, sub.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.CurrentPeriod).To(HaveValue(Equal(2)))
			g.Expect(got.Status).To(Equal("active"))
			g.Expect(got.CurrentPeriodStart).To(HaveValue(Equal(*sub.CurrentPeriodEnd)))
			invoices, err = shop.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Subscription: sub.ID, Status: "paid"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(invoices.Data).To(HaveLen(2))
		}).WithPolling(250 * time.Millisecond).Should(Succeed())
		renewal := invoices.Data[0]
		Expect(renewal.ID).To(Equal(secondInvoice), "newest first")
		Expect(renewal.PeriodStart).To(Equal(inv.PeriodEnd))
		Expect(renewal.Amount.String()).To(Equal("15000.00"))
		Expect(renewal.PaidTrxID).NotTo(Equal(inv.PaidTrxID))
		Eventually(func() []*events.InvoiceData {
			return billingEvents[events.InvoiceData](rcv, shop.merchant, "invoice.paid")
		}).Should(ContainElement(HaveField("InvoiceID", secondInvoice)))

		By("cancelling: the subscription ends and the merchant hears subscription.cancelled")
		_, err = shop.sandbox.CancelSubscription(ctx, sub.ID, false)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			got, err := shop.sandbox.GetSubscription(ctx, sub.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status).To(Equal("cancelled"))
			g.Expect(got.CancelledAt).NotTo(BeNil())
			g.Expect(got.NextChargeAt).To(BeNil())
			g.Expect(billingEvents[events.SubscriptionData](rcv, shop.merchant, "subscription.cancelled")).
				To(ContainElement(HaveField("SubscriptionID", sub.ID)))
		}).WithPolling(250 * time.Millisecond).Should(Succeed())
	})

	It("walks a customer who never pays through the dunning schedule to suspension as the clock moves", func() {
		sub, err := shop.sandbox.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: "gold-monthly",
			CustomerPhone: "+255711000001", TermsShown: goldTerms}, "signup-broke") // fails every charge: INSUFFICIENT_FUNDS
		Expect(err).NotTo(HaveOccurred())
		invoice := "inv-" + strings.TrimPrefix(sub.ID, "sub_") + "-1"
		// Failures 1 to 3 are retried 1, 3 and 5 days later; the 4th suspends.
		for failures, wait := range []int{1, 3, 5} {
			By(fmt.Sprintf("failing charge %d, retried %d days later", failures+1, wait))
			// The subscription and its invoice are written one after the other: read both until
			// they show this failure.
			Eventually(func(g Gomega) {
				sub, err = shop.sandbox.GetSubscription(ctx, sub.ID)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(sub.ConsecutiveFailures).To(Equal(failures + 1))
				g.Expect(sub.NextChargeAt).NotTo(BeNil())
				g.Expect(sub.Status).To(Equal("pending"), "never confirmed: the first invoice is being retried")
				list, err := shop.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Subscription: sub.ID})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(list.Data).To(HaveLen(1))
				g.Expect(list.Data[0].Attempts).To(Equal(failures + 1))
				g.Expect(list.Data[0].Status).To(Equal("payment_failed"))
				g.Expect(list.Data[0].FailureReason).To(Equal("INSUFFICIENT_FUNDS"))
				g.Expect(list.Data[0].NextAttemptAt).To(Equal(sub.NextChargeAt))
			}).WithPolling(250 * time.Millisecond).Should(Succeed())
			retryAt, err := time.Parse(time.RFC3339Nano, *sub.NextChargeAt)
			Expect(err).NotTo(HaveOccurred())
			Expect(retryAt.Sub(subscriptionClock(sub))).To(BeNumerically("~", time.Duration(wait)*24*time.Hour, time.Minute))
			sub = advanceTo(shop.sandbox, sub, *sub.NextChargeAt)
		}

		By("suspending at the 4th failure, with subscription.suspended")
		Eventually(func(g Gomega) {
			sub, err = shop.sandbox.GetSubscription(ctx, sub.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sub.Status).To(Equal("suspended"))
			list, err := shop.sandbox.ListInvoices(ctx, paygate.BillingListOptions{Subscription: sub.ID})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Data).To(HaveLen(1))
			g.Expect(list.Data[0].ID).To(Equal(invoice))
			g.Expect(list.Data[0].Attempts).To(Equal(4))
			g.Expect(list.Data[0].NextAttemptAt).To(BeNil())
		}).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(sub.ConsecutiveFailures).To(Equal(4))
		Expect(sub.SuspendedAt).NotTo(BeNil())
		Expect(sub.NextChargeAt).To(BeNil())
		Expect(sub.ConfirmedAt).To(BeNil())
		Eventually(func(g Gomega) {
			g.Expect(billingEvents[events.InvoiceData](rcv, shop.merchant, "invoice.payment_failed")).To(HaveLen(4))
			g.Expect(billingEvents[events.SubscriptionData](rcv, shop.merchant, "subscription.suspended")).
				To(ConsistOf(And(HaveField("SubscriptionID", sub.ID), HaveField("Reason", "INSUFFICIENT_FUNDS"))))
		}).Should(Succeed())
	})
})
