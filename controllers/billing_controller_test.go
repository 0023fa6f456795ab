// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"encoding/json"
	"math"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/billing"
	webhookevents "github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/metrics"
)

// The billing controller against a real API server, with the suite's payment controller and
// sandbox carrying the charges. The suite's clock stands still: each subscription's test clock
// (spec.testClock) moves its time, exactly as the API's advance endpoint does, so renewals,
// dunning and the charging window play out without waiting.

var darEsSalaam = func() *time.Location {
	loc, err := billing.LoadTimeZone(paygatev1.DefaultTimeZone)
	if err != nil {
		panic(err)
	}
	return loc
}()

const (
	approvingPhone = "+255712345678"
	// failingPhone fails every charge with INSUFFICIENT_FUNDS (the sandbox's magic number).
	failingPhone = "+255711000001"
	merchantHook = "https://duka.example/hooks"
	billingHook  = "https://billing.duka.example/hooks"
)

// billingWorld is merchant duka of namespace ns, selling in TZS through a sandbox gateway with a
// default sandbox webhook URL, and its plan.
type billingWorld struct {
	ns   string
	plan *paygatev1.BillingPlan
}

func newBillingWorld(mods ...func(*paygatev1.BillingPlan)) billingWorld {
	ns := newNamespace()
	createGateway("TZS")
	createMerchant(ns, "duka", func(m *paygatev1.Merchant) { m.Spec.WebhookURLs.Sandbox = merchantHook })
	plan := billingPlan(ns, mods...)
	Expect(k8s.Create(ctx, plan)).To(Succeed())
	return billingWorld{ns: ns, plan: plan}
}

// createFirstInvoice creates invoice 1 of s, anchored at anchor, as the billing controller would
// (owned by the subscription), with no status: what a manager that stopped right after opening it
// leaves behind.
func (w billingWorld) createFirstInvoice(s *paygatev1.Subscription, anchor time.Time) *paygatev1.Invoice {
	schedule, err := billing.PlanSchedule(&w.plan.Spec)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	period := schedule.Periods.Period(billing.Anchor(anchor), 1)
	inv := &paygatev1.Invoice{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: paygatev1.InvoiceName(s.Name, 1),
			Labels: map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox", paygatev1.LabelSubscription: s.Name}},
		Spec: paygatev1.InvoiceSpec{
			MerchantRef: s.Spec.MerchantRef, Environment: s.Spec.Environment, SubscriptionRef: paygatev1.SubscriptionReference{Name: s.Name},
			PlanCode: s.Spec.PlanCode, Period: 1, PeriodStart: metav1.NewTime(period.Start), PeriodEnd: metav1.NewTime(period.End),
			Amount: "15000.00", Currency: "TZS",
		},
	}
	ExpectWithOffset(1, controllerutil.SetControllerReference(s, inv, kube.Scheme())).To(Succeed())
	ExpectWithOffset(1, k8s.Create(ctx, inv)).To(Succeed())
	return inv
}

// offsetFor is the test clock offset at which a subscription's clock shows t now (or up to a
// second later): the suite's clock stands still.
func offsetFor(t time.Time) int64 {
	return int64(math.Ceil(t.Sub(clock.Now()).Seconds()))
}

// subscribe creates a sandbox subscription of phone to the world's plan, with the consent the API
// would record at anchor and a test clock that shows anchor now.
func (w billingWorld) subscribe(phone string, anchor time.Time, mods ...func(*paygatev1.Subscription)) *paygatev1.Subscription {
	id, err := billing.NewSubscriptionID()
	Expect(err).NotTo(HaveOccurred())
	consent, err := billing.BuildConsent(billing.ConsentInput{
		TermsShown: consentTerms, RecordedAt: anchor, ClientIP: "196.249.1.7", UserAgent: "duka-backend/2.1",
		Plan: &w.plan.Spec, BusinessID: "test_mk_qj33hpibayoahnbujh4loofg", Environment: paygatev1.EnvironmentSandbox,
	})
	Expect(err).NotTo(HaveOccurred())
	s := &paygatev1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: paygatev1.SubscriptionName(id),
			Labels: map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox", paygatev1.LabelPlanCode: w.plan.Spec.Code}},
		Spec: paygatev1.SubscriptionSpec{
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			PlanRef: paygatev1.BillingPlanReference{Name: w.plan.Name}, PlanCode: w.plan.Spec.Code,
			CustomerPhone: paygatev1.MobileNumber(phone), Consent: consent,
			TestClock: &paygatev1.TestClock{OffsetSeconds: offsetFor(anchor)},
		},
	}
	for _, m := range mods {
		m(s)
	}
	Expect(k8s.Create(ctx, s)).To(Succeed())
	return s
}

func getSub(g Gomega, s *paygatev1.Subscription) *paygatev1.Subscription {
	out := &paygatev1.Subscription{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), out)).To(Succeed())
	return out
}

// updateSub changes a subscription's spec as the API or kubectl would, again on a conflict with
// the controller's status writes.
func updateSub(s *paygatev1.Subscription, change func(*paygatev1.Subscription)) {
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := getSub(Default, s)
		change(cur)
		return k8s.Update(ctx, cur)
	})).To(Succeed())
}

// advance moves a subscription's test clock so that it shows t (the API's advance endpoint).
func advance(s *paygatev1.Subscription, t time.Time) {
	updateSub(s, func(s *paygatev1.Subscription) { s.Spec.TestClock.OffsetSeconds = offsetFor(t) })
}

func waitSub(s *paygatev1.Subscription, check func(g Gomega, s *paygatev1.Subscription)) *paygatev1.Subscription {
	var out *paygatev1.Subscription
	EventuallyWithOffset(1, func(g Gomega) {
		out = getSub(g, s)
		check(g, out)
	}).Should(Succeed())
	return out
}

func getInvoice(g Gomega, s *paygatev1.Subscription, period int32) *paygatev1.Invoice {
	inv := &paygatev1.Invoice{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: paygatev1.InvoiceName(s.Name, period)}, inv)).To(Succeed())
	return inv
}

func waitInvoice(s *paygatev1.Subscription, period int32, check func(g Gomega, inv *paygatev1.Invoice)) *paygatev1.Invoice {
	var out *paygatev1.Invoice
	EventuallyWithOffset(1, func(g Gomega) {
		out = getInvoice(g, s, period)
		check(g, out)
	}).Should(Succeed())
	return out
}

func invoicePhase(phase paygatev1.InvoicePhase) func(Gomega, *paygatev1.Invoice) {
	return func(g Gomega, inv *paygatev1.Invoice) { g.Expect(inv.Status.Phase).To(Equal(phase)) }
}

// invoicePeriods are the periods the subscription has invoices for.
func invoicePeriods(g Gomega, s *paygatev1.Subscription) []int32 {
	var list paygatev1.InvoiceList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingLabels{paygatev1.LabelSubscription: s.Name})).To(Succeed())
	var out []int32
	for _, inv := range list.Items {
		out = append(out, inv.Spec.Period)
	}
	return out
}

// chargesOf are the payments labelled as charges of invoice inv.
func chargesOf(g Gomega, ns, inv string) []paygatev1.Payment {
	var list paygatev1.PaymentList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{paygatev1.LabelInvoice: inv})).To(Succeed())
	return list.Items
}

// billingEvents are the webhook events of ns whose type starts with prefix ("" for all).
func billingEvents(g Gomega, ns, prefix string) []paygatev1.WebhookDelivery {
	var list paygatev1.WebhookDeliveryList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []paygatev1.WebhookDelivery
	for _, d := range list.Items {
		if strings.HasPrefix(d.Spec.EventType, prefix) {
			out = append(out, d)
		}
	}
	return out
}

// eventsOf are the events of type eventType about the object named source.
func eventsOf(g Gomega, ns, eventType, source string) []paygatev1.WebhookDelivery {
	var out []paygatev1.WebhookDelivery
	for _, d := range billingEvents(g, ns, eventType) {
		if d.Spec.EventType == eventType && d.Spec.Source.Name == source {
			out = append(out, d)
		}
	}
	return out
}

// eventData decodes an event's data.
func eventData(d paygatev1.WebhookDelivery) map[string]any {
	var env struct {
		Data map[string]any `json:"data"`
	}
	ExpectWithOffset(1, json.Unmarshal([]byte(d.Spec.Payload), &env)).To(Succeed())
	return env.Data
}

// expectBilledOnce checks what must hold of every subscription at any time: one invoice per
// period (its name holds the period), every recorded charge a Payment owned by its invoice and
// pushed exactly once, at most one paid charge per invoice, and no payment.* event for a charge.
func expectBilledOnce(s *paygatev1.Subscription) {
	var list paygatev1.InvoiceList
	ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingLabels{paygatev1.LabelSubscription: s.Name})).To(Succeed())
	for _, inv := range list.Items {
		ExpectWithOffset(1, inv.Name).To(Equal(paygatev1.InvoiceName(s.Name, inv.Spec.Period)))
		charges := chargesOf(Default, s.Namespace, inv.Name)
		ExpectWithOffset(1, charges).To(HaveLen(int(inv.Status.AttemptCount)), "every recorded charge of %s exists, and no other", inv.Name)
		paid := 0
		for _, p := range charges {
			ExpectWithOffset(1, inv.Status.Payments).To(ContainElement(p.Name))
			ExpectWithOffset(1, p.OwnerReferences).To(BeEmpty(), "%s has no owner: deleting %s never takes it (docs/billing.md)", p.Name, inv.Name)
			ExpectWithOffset(1, sandbox.Pushes(s.Namespace+"."+p.Name+".1")).To(Equal(1), "charge %s is pushed once", p.Name)
			if p.Status.Phase == paygatev1.PaymentSuccess {
				paid++
			}
		}
		ExpectWithOffset(1, paid).To(BeNumerically("<=", 1), "invoice %s is paid at most once", inv.Name)
	}
	ExpectWithOffset(1, billingEvents(Default, s.Namespace, "payment.")).To(BeEmpty(), "charges send no payment.* events")
}

// billingCounts are the invoice and dunning counters of the sandbox, where every subscription of
// these tests is (failed charges fail with INSUFFICIENT_FUNDS, failingPhone's reason).
type billingCounts struct {
	Succeeded, Failed, Paid, Void, Retries float64
}

func countBilling() billingCounts {
	return billingCounts{
		Succeeded: testutil.ToFloat64(metrics.InvoiceCharges.WithLabelValues("sandbox", "success", "")),
		Failed:    testutil.ToFloat64(metrics.InvoiceCharges.WithLabelValues("sandbox", "failed", string(paygatev1.FailureInsufficientFunds))),
		Paid:      testutil.ToFloat64(metrics.Invoices.WithLabelValues("sandbox", "paid")),
		Void:      testutil.ToFloat64(metrics.Invoices.WithLabelValues("sandbox", "void")),
		Retries:   testutil.ToFloat64(metrics.DunningRetries.WithLabelValues("sandbox")),
	}
}

// billingCountedSince is how far the counters moved since before.
func billingCountedSince(before billingCounts) func() billingCounts {
	return func() billingCounts {
		now := countBilling()
		return billingCounts{now.Succeeded - before.Succeeded, now.Failed - before.Failed, now.Paid - before.Paid,
			now.Void - before.Void, now.Retries - before.Retries}
	}
}

// at is a local time in Dar es Salaam next year.
func at(month time.Month, day, hour, minute int) time.Time {
	return time.Date(clock.Now().Year()+1, month, day, hour, minute, 0, 0, darEsSalaam)
}

var _ = Describe("Billing controller", func() {
	It("charges the first invoice at once, whatever the hour: paid, active, confirmed, announced", func() {
		w := newBillingWorld()
		anchor := at(3, 1, 21, 0) // outside the charging window
		counted := billingCountedSince(countBilling())
		s := w.subscribe(approvingPhone, anchor)

		sub := waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.Phase).To(Equal(paygatev1.SubscriptionActive))
		})
		inv := getInvoice(Default, s, 1)
		Expect(inv.Status.Phase).To(Equal(paygatev1.InvoicePaid))
		Expect(inv.Status.AttemptCount).To(Equal(int32(1)))
		Expect(inv.Status.Payments).To(HaveLen(1))
		Expect(inv.Status.PaidPayment).To(Equal(inv.Status.Payments[0]))
		Expect(inv.Status.PaidAt.Time).To(BeTemporally("~", anchor, 2*time.Second), "on the subscription's clock")
		Expect(meta.IsStatusConditionTrue(inv.Status.Conditions, paygatev1.ConditionReady)).To(BeTrue())
		Expect(string(inv.Spec.Amount)).To(Equal("15000.00"))
		Expect(inv.Spec.PeriodStart.Time).To(BeTemporally("==", anchor))
		Expect(inv.Spec.PeriodEnd.Time).To(BeTemporally("==", at(4, 1, 21, 0)))
		Expect(metav1.IsControlledBy(inv, sub)).To(BeTrue())

		By("confirming the consent with the paid charge")
		Expect(sub.Status.ConfirmedAt).NotTo(BeNil())
		Expect(sub.Status.ConfirmedAt.Time).To(Equal(inv.Status.PaidAt.Time))
		Expect(sub.Status.ConfirmedInvoice).To(Equal(inv.Name))
		Expect(sub.Status.ConfirmedPayment).To(Equal(inv.Status.PaidPayment))
		Expect(sub.Status.ConsecutiveFailures).To(BeZero())
		Expect(sub.Status.CurrentPeriod).To(Equal(int32(1)))
		Expect(sub.Status.LatestInvoice).To(Equal(inv.Name))
		Expect(sub.Status.CurrentPeriodEnd.Time).To(BeTemporally("==", at(4, 1, 21, 0)))
		Expect(sub.Status.NextChargeAt.Time).To(BeTemporally("==", at(4, 2, 8, 0)), "the renewal waits for the window to open")
		Expect(meta.IsStatusConditionTrue(sub.Status.Conditions, paygatev1.ConditionReady)).To(BeTrue())
		Expect(sub.Status.ObservedGeneration).To(Equal(sub.Generation))

		By("charging with a push payment labelled with the invoice, owned by nothing (deleting billing objects never takes money)")
		charge := &paygatev1.Payment{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: inv.Status.PaidPayment}, charge)).To(Succeed())
		Expect(charge.Name).To(Equal(billing.InvoicePaymentName(string(inv.UID), 1)))
		Expect(charge.OwnerReferences).To(BeEmpty())
		Expect(charge.Labels).To(HaveKeyWithValue(paygatev1.LabelInvoice, inv.Name))
		Expect(charge.Labels).To(HaveKeyWithValue(paygatev1.LabelSubscription, s.Name))
		Expect(charge.Spec.Mode).To(Equal(paygatev1.PaymentModePush))
		Expect(charge.Spec.MerchantReference).To(Equal(inv.Name))
		Expect(string(charge.Spec.Amount)).To(Equal("15000.00"))
		Expect(string(charge.Spec.PushRequest.Phone)).To(Equal(approvingPhone))
		Expect(charge.Spec.Gateways).NotTo(BeEmpty())
		expectBilledOnce(s)

		By("announcing the subscription, the invoice and its payment, and no payment.* event")
		Eventually(func(g Gomega) {
			g.Expect(eventsOf(g, w.ns, webhookevents.SubscriptionCreated, s.Name)).To(HaveLen(1))
			g.Expect(eventsOf(g, w.ns, webhookevents.InvoiceCreated, inv.Name)).To(HaveLen(1))
			g.Expect(eventsOf(g, w.ns, webhookevents.InvoicePaid, inv.Name)).To(HaveLen(1))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(billingEvents(g, w.ns, "payment.")).To(BeEmpty())
			g.Expect(billingEvents(g, w.ns, "")).To(HaveLen(3))
		}, "1s").Should(Succeed())
		paid := eventsOf(Default, w.ns, webhookevents.InvoicePaid, inv.Name)[0]
		Expect(paid.Spec.URL).To(Equal(merchantHook), "the merchant's default URL: the subscription names none")
		data := eventData(paid)
		Expect(data).To(HaveKeyWithValue("trx_id", charge.Name))
		Expect(data).To(HaveKeyWithValue("status", "paid"))

		By("counting one successful charge and one paid invoice, once")
		Eventually(counted).Should(Equal(billingCounts{Succeeded: 1, Paid: 1}))
		Consistently(counted, "500ms").Should(Equal(billingCounts{Succeeded: 1, Paid: 1}))
		Expect(data).To(HaveKeyWithValue("subscription_id", s.APIID()))
		Expect(data["period"]).To(HaveKeyWithValue("start", anchor.Format(webhookevents.BillingTimeLayout)))
		Expect(data["settlement"]).To(HaveKeyWithValue("fees", HaveKeyWithValue("value", 375.0)), "2.5% of 15000")
		created := eventData(eventsOf(Default, w.ns, webhookevents.SubscriptionCreated, s.Name)[0])
		Expect(created).To(HaveKeyWithValue("status", "pending"))
		Expect(created).To(HaveKeyWithValue("consent", HaveKeyWithValue("terms_sha256", billing.TermsSHA256(consentTerms))))

		By("counting the subscription on its plan")
		Eventually(func(g Gomega) {
			plan := &paygatev1.BillingPlan{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w.plan), plan)).To(Succeed())
			g.Expect(plan.Status.Subscriptions).To(Equal(int32(1)))
			g.Expect(meta.IsStatusConditionTrue(plan.Status.Conditions, paygatev1.ConditionReady)).To(BeTrue())
		}).Should(Succeed())
	})

	It("renews from the anchor through month ends (31 Jan, 29 Feb, 31 Mar) and bills only the period a jump lands in", func() {
		w := newBillingWorld()
		y := clock.Now().Year() + 1
		for y%4 != 0 || (y%100 == 0 && y%400 != 0) {
			y++
		}
		local := func(month time.Month, day int) time.Time { return time.Date(y, month, day, 10, 15, 0, 0, darEsSalaam) }
		s := w.subscribe(approvingPhone, local(1, 31), func(s *paygatev1.Subscription) { s.Spec.WebhookURL = billingHook })
		waitInvoice(s, 1, invoicePhase(paygatev1.InvoicePaid))
		sub := waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.NextChargeAt).NotTo(BeNil())
		})
		Expect(sub.Status.NextChargeAt.Time).To(BeTemporally("==", local(2, 29)))

		for _, tc := range []struct {
			period     int32
			start, end time.Time
		}{
			{2, local(2, 29), local(3, 31)},
			{3, local(3, 31), local(4, 30)},
		} {
			By("renewing for period " + tc.start.Format("2 Jan"))
			Consistently(func(g Gomega) { g.Expect(invoicePeriods(g, s)).NotTo(ContainElement(tc.period)) }, "500ms").Should(Succeed(),
				"nothing is opened before the period starts")
			advance(s, tc.start)
			inv := waitInvoice(s, tc.period, invoicePhase(paygatev1.InvoicePaid))
			Expect(inv.Spec.PeriodStart.Time).To(BeTemporally("==", tc.start))
			Expect(inv.Spec.PeriodEnd.Time).To(BeTemporally("==", tc.end))
			Expect(inv.Status.AttemptCount).To(Equal(int32(1)))
			waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
				g.Expect(s.Status.CurrentPeriod).To(Equal(tc.period))
				g.Expect(s.Status.Phase).To(Equal(paygatev1.SubscriptionActive))
			})
		}

		By("jumping to the night of 15 July: periods 4 and 5 ended unbilled, period 6 (30 Jun to 31 Jul) is opened, its charge waits for 08:00")
		advance(s, time.Date(y, 7, 15, 22, 0, 0, 0, darEsSalaam))
		morning := time.Date(y, 7, 16, 8, 0, 0, 0, darEsSalaam)
		waitInvoice(s, 6, func(g Gomega, inv *paygatev1.Invoice) {
			g.Expect(inv.Status.NextAttemptAt).NotTo(BeNil())
			g.Expect(inv.Status.NextAttemptAt.Time).To(BeTemporally("==", morning))
		})
		Consistently(func(g Gomega) { g.Expect(getInvoice(g, s, 6).Status.AttemptCount).To(BeZero()) }, "1s").Should(Succeed())
		Expect(getSub(Default, s).Status.NextChargeAt.Time).To(BeTemporally("==", morning))
		advance(s, morning)
		inv := waitInvoice(s, 6, invoicePhase(paygatev1.InvoicePaid))
		Expect(inv.Spec.PeriodStart.Time).To(BeTemporally("==", local(6, 30)))
		Expect(inv.Spec.PeriodEnd.Time).To(BeTemporally("==", local(7, 31)))
		Consistently(func(g Gomega) { g.Expect(invoicePeriods(g, s)).To(ConsistOf(int32(1), int32(2), int32(3), int32(6))) }, "1s").Should(Succeed())
		expectBilledOnce(s)

		By("sending every event to the subscription's webhook URL")
		Eventually(func(g Gomega) {
			g.Expect(billingEvents(g, w.ns, webhookevents.InvoicePaid)).To(HaveLen(4))
			g.Expect(billingEvents(g, w.ns, webhookevents.InvoiceCreated)).To(HaveLen(4))
			g.Expect(billingEvents(g, w.ns, webhookevents.SubscriptionCreated)).To(HaveLen(1))
		}).Should(Succeed())
		for _, d := range billingEvents(Default, w.ns, "") {
			Expect(d.Spec.URL).To(Equal(billingHook), d.Spec.EventType)
		}
	})

	It("walks the dunning schedule inside the charging window to suspension, then resumes on the current period", func() {
		w := newBillingWorld()
		counted := billingCountedSince(countBilling())
		s := w.subscribe(failingPhone, at(3, 1, 21, 0))
		inv := getInvoice
		expectFailures := func(n int32, phase paygatev1.SubscriptionPhase, next time.Time) {
			GinkgoHelper()
			waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
				g.Expect(s.Status.ConsecutiveFailures).To(Equal(n))
				g.Expect(s.Status.Phase).To(Equal(phase))
				g.Expect(s.Status.NextChargeAt).NotTo(BeNil())
				g.Expect(s.Status.NextChargeAt.Time).To(BeTemporally("==", next))
			})
			i := inv(Default, s, 1)
			Expect(i.Status.Phase).To(Equal(paygatev1.InvoicePaymentFailed))
			Expect(i.Status.AttemptCount).To(Equal(n))
			Expect(i.Status.LastFailureReason).To(Equal(string(paygatev1.FailureInsufficientFunds)))
			Expect(i.Status.NextAttemptAt.Time).To(BeTemporally("==", next))
			// Each failed charge is counted once, with the retry it scheduled.
			Eventually(counted).Should(Equal(billingCounts{Failed: float64(n), Retries: float64(n)}))
		}
		attempts := func(g Gomega) int32 { return inv(g, s, 1).Status.AttemptCount }

		By("charging at once at 21:00; the retry a day later falls at 21:00, outside the window: 08:00 on 3 March")
		expectFailures(1, paygatev1.SubscriptionPending, at(3, 3, 8, 0))
		Eventually(func(g Gomega) {
			failed := eventsOf(g, w.ns, webhookevents.InvoicePaymentFailed, paygatev1.InvoiceName(s.Name, 1))
			g.Expect(failed).To(HaveLen(1))
			g.Expect(eventData(failed[0])).To(HaveKeyWithValue("next_attempt_at", at(3, 3, 8, 0).Format(webhookevents.BillingTimeLayout)))
			g.Expect(eventData(failed[0])).To(HaveKeyWithValue("reason", "INSUFFICIENT_FUNDS"))
		}).Should(Succeed())

		By("sending nothing outside the window")
		advance(s, at(3, 2, 21, 0))
		Consistently(attempts, "1s").Should(Equal(int32(1)))
		advance(s, at(3, 3, 7, 59))
		Consistently(attempts, "1s").Should(Equal(int32(1)))

		By("retrying at the window's opening, 3 then 5 days after the failures")
		advance(s, at(3, 3, 8, 0))
		expectFailures(2, paygatev1.SubscriptionPending, at(3, 6, 8, 0))
		advance(s, at(3, 6, 8, 0))
		expectFailures(3, paygatev1.SubscriptionPending, at(3, 11, 8, 0))
		advance(s, at(3, 11, 8, 0))

		By("suspending at the 4th failure")
		sub := waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.Phase).To(Equal(paygatev1.SubscriptionSuspended))
		})
		Expect(sub.Status.ConsecutiveFailures).To(Equal(int32(4)))
		Expect(sub.Status.NextChargeAt).To(BeNil())
		Expect(sub.Status.SuspendedAt.Time).To(BeTemporally("==", at(3, 11, 8, 0)))
		Expect(sub.Status.ConfirmedAt).To(BeNil(), "never approved: never confirmed")
		Expect(meta.FindStatusCondition(sub.Status.Conditions, paygatev1.ConditionReady).Reason).To(Equal(controllers.ReasonSubscriptionSuspended))
		failed := waitInvoice(s, 1, func(g Gomega, i *paygatev1.Invoice) {
			g.Expect(meta.FindStatusCondition(i.Status.Conditions, paygatev1.ConditionReady).Reason).To(Equal(controllers.ReasonChargeFailed),
				"the last failure is stored although its reason is the one before's")
		})
		Expect(failed.Status.AttemptCount).To(Equal(int32(4)))
		Expect(failed.Status.NextAttemptAt).To(BeNil())
		Eventually(counted).Should(Equal(billingCounts{Failed: 4, Retries: 3}), "the 4th failure schedules no retry")
		Eventually(func(g Gomega) {
			g.Expect(eventsOf(g, w.ns, webhookevents.InvoicePaymentFailed, failed.Name)).To(HaveLen(4))
			suspended := eventsOf(g, w.ns, webhookevents.SubscriptionSuspended, s.Name)
			g.Expect(suspended).To(HaveLen(1))
			g.Expect(eventData(suspended[0])).To(And(HaveKeyWithValue("status", "suspended"), HaveKeyWithValue("reason", "INSUFFICIENT_FUNDS"),
				HaveKeyWithValue("latest_invoice_id", failed.Name), HaveKeyWithValue("consecutive_failures", 4.0)))
		}).Should(Succeed())
		for _, d := range eventsOf(Default, w.ns, webhookevents.InvoicePaymentFailed, failed.Name) {
			if eventData(d)["attempt_count"] == 4.0 {
				Expect(eventData(d)).To(HaveKeyWithValue("next_attempt_at", BeNil()), "no retry once suspended")
			}
		}

		By("charging nothing while suspended, past the period's end")
		advance(s, at(4, 5, 12, 0))
		Consistently(func(g Gomega) {
			g.Expect(invoicePeriods(g, s)).To(ConsistOf(int32(1)))
			g.Expect(attempts(g)).To(Equal(int32(4)))
		}, "1s").Should(Succeed())

		By("resuming after the period ended: the failed invoice is voided and the current period charged in the window")
		updateSub(s, func(s *paygatev1.Subscription) { s.Spec.ResumeSequence = 1 })
		waitInvoice(s, 1, invoicePhase(paygatev1.InvoiceVoid))
		second := waitInvoice(s, 2, func(g Gomega, i *paygatev1.Invoice) {
			g.Expect(i.Status.Phase).To(Equal(paygatev1.InvoicePaymentFailed))
			g.Expect(i.Status.NextAttemptAt).NotTo(BeNil())
		})
		Expect(second.Spec.PeriodStart.Time).To(BeTemporally("==", at(4, 1, 21, 0)))
		Expect(second.Status.AttemptCount).To(Equal(int32(1)))
		Expect(second.Status.NextAttemptAt.Time).To(BeTemporally("==", at(4, 6, 12, 0)))
		sub = waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.ResumedSequence).To(Equal(int32(1)))
			g.Expect(s.Status.ConsecutiveFailures).To(Equal(int32(1)))
		})
		Expect(sub.Status.Phase).To(Equal(paygatev1.SubscriptionPending), "resumed unconfirmed: pending")
		Expect(invoicePeriods(Default, s)).To(ConsistOf(int32(1), int32(2)))
		expectBilledOnce(s)

		By("counting invoice 1 void, and invoice 2's failed charge and its retry, once")
		Eventually(counted).Should(Equal(billingCounts{Failed: 5, Retries: 4, Void: 1}))
		Consistently(counted, "500ms").Should(Equal(billingCounts{Failed: 5, Retries: 4, Void: 1}))
	})

	It("resumes within the period: the failed invoice is charged again with the whole schedule ahead", func() {
		w := newBillingWorld(func(p *paygatev1.BillingPlan) {
			p.Spec.Dunning = paygatev1.DunningPolicy{RetryAfterDays: []int32{1}, MaxFailures: 2}
		})
		s := w.subscribe(failingPhone, at(5, 10, 9, 0))
		waitSub(s, func(g Gomega, s *paygatev1.Subscription) { g.Expect(s.Status.ConsecutiveFailures).To(Equal(int32(1))) })
		advance(s, at(5, 11, 9, 0))
		waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.Phase).To(Equal(paygatev1.SubscriptionSuspended))
		})

		advance(s, at(5, 12, 10, 0))
		updateSub(s, func(s *paygatev1.Subscription) { s.Spec.ResumeSequence = 1 })
		sub := waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.ResumedSequence).To(Equal(int32(1)))
			g.Expect(s.Status.ConsecutiveFailures).To(Equal(int32(1)), "the charge after the resume failed: the first failure of the new schedule")
		})
		Expect(sub.Status.Phase).To(Equal(paygatev1.SubscriptionPending))
		inv := getInvoice(Default, s, 1)
		Expect(inv.Annotations).To(HaveKeyWithValue(controllers.AnnotationDunningSince, "2"))
		Expect(inv.Status.AttemptCount).To(Equal(int32(3)))
		Expect(inv.Status.NextAttemptAt.Time).To(BeTemporally("==", at(5, 13, 10, 0)))

		By("suspending again at the schedule's end, with a second subscription.suspended")
		advance(s, at(5, 13, 10, 0))
		waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.Phase).To(Equal(paygatev1.SubscriptionSuspended))
		})
		Eventually(func(g Gomega) []paygatev1.WebhookDelivery {
			return eventsOf(g, w.ns, webhookevents.SubscriptionSuspended, s.Name)
		}).Should(HaveLen(2))
		Expect(invoicePeriods(Default, s)).To(ConsistOf(int32(1)))
		expectBilledOnce(s)

		By("ignoring a resume of a subscription that is not suspended, and answering it")
		paid := w.subscribe(approvingPhone, at(5, 10, 9, 0))
		waitSub(paid, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.Phase).To(Equal(paygatev1.SubscriptionActive))
		})
		updateSub(paid, func(s *paygatev1.Subscription) { s.Spec.ResumeSequence = 1 })
		waitSub(paid, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.ResumedSequence).To(Equal(int32(1)))
			g.Expect(s.Status.Phase).To(Equal(paygatev1.SubscriptionActive))
		})
	})

	It("cancels immediately: no further invoice, an idle open invoice voided", func() {
		w := newBillingWorld()
		counted := billingCountedSince(countBilling())
		paid := w.subscribe(approvingPhone, at(6, 1, 12, 0))
		dunning := w.subscribe(failingPhone, at(6, 1, 12, 0))
		waitSub(paid, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.Phase).To(Equal(paygatev1.SubscriptionActive))
		})
		waitSub(dunning, func(g Gomega, s *paygatev1.Subscription) { g.Expect(s.Status.ConsecutiveFailures).To(Equal(int32(1))) })

		for _, s := range []*paygatev1.Subscription{paid, dunning} {
			updateSub(s, func(s *paygatev1.Subscription) { s.Spec.Cancel = paygatev1.CancelImmediately })
			sub := waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
				g.Expect(s.Status.Phase).To(Equal(paygatev1.SubscriptionCancelled))
			})
			Expect(sub.Status.CancelledAt.Time).To(BeTemporally("~", at(6, 1, 12, 0), 2*time.Second))
			Expect(sub.Status.NextChargeAt).To(BeNil())
		}
		waitInvoice(dunning, 1, invoicePhase(paygatev1.InvoiceVoid))
		Expect(getInvoice(Default, paid, 1).Status.Phase).To(Equal(paygatev1.InvoicePaid), "a paid invoice stays paid")

		By("opening and charging nothing more, past the period's end and the retry time")
		for _, s := range []*paygatev1.Subscription{paid, dunning} {
			advance(s, at(8, 15, 12, 0))
		}
		Consistently(func(g Gomega) {
			g.Expect(invoicePeriods(g, paid)).To(ConsistOf(int32(1)))
			g.Expect(invoicePeriods(g, dunning)).To(ConsistOf(int32(1)))
			g.Expect(getInvoice(g, dunning, 1).Status.AttemptCount).To(Equal(int32(1)))
		}, "1s").Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(eventsOf(g, w.ns, webhookevents.SubscriptionCancelled, paid.Name)).To(HaveLen(1))
			g.Expect(eventsOf(g, w.ns, webhookevents.SubscriptionCancelled, dunning.Name)).To(HaveLen(1))
			plan := &paygatev1.BillingPlan{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w.plan), plan)).To(Succeed())
			g.Expect(plan.Status.Subscriptions).To(BeZero())
		}).Should(Succeed())
		expectBilledOnce(paid)
		expectBilledOnce(dunning)
		Expect(counted()).To(Equal(billingCounts{Succeeded: 1, Paid: 1, Failed: 1, Retries: 1, Void: 1}))
	})

	It("cancels at the period's end: the paid period runs out and no further invoice is opened", func() {
		w := newBillingWorld()
		s := w.subscribe(approvingPhone, at(6, 1, 12, 0))
		waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.Phase).To(Equal(paygatev1.SubscriptionActive))
		})
		updateSub(s, func(s *paygatev1.Subscription) { s.Spec.Cancel = paygatev1.CancelAtPeriodEnd })
		waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.ObservedGeneration).To(Equal(s.Generation))
			g.Expect(s.Status.NextChargeAt).To(BeNil())
		})

		advance(s, at(7, 1, 11, 59))
		Consistently(func(g Gomega) {
			g.Expect(getSub(g, s).Status.Phase).To(Equal(paygatev1.SubscriptionActive))
		}, "1s").Should(Succeed())
		advance(s, at(7, 1, 12, 0))
		sub := waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.Phase).To(Equal(paygatev1.SubscriptionCancelled))
		})
		Expect(sub.Status.CancelledAt.Time).To(BeTemporally("~", at(7, 1, 12, 0), 2*time.Second))
		Consistently(func(g Gomega) { g.Expect(invoicePeriods(g, s)).To(ConsistOf(int32(1))) }, "1s").Should(Succeed())
		expectBilledOnce(s)
	})

	It("pushes a charge recorded by a manager that stopped before creating its Payment exactly once", func() {
		w := newBillingWorld()
		counted := billingCountedSince(countBilling())
		Expect(env.StopManager()).To(Succeed())
		DeferCleanup(func() {
			if _, err := env.StartManager(managerOptions()); err != nil {
				Expect(err.Error()).To(ContainSubstring("already running"))
			}
		})
		anchor := at(9, 1, 10, 0)
		s := w.subscribe(approvingPhone, anchor)

		By("leaving behind invoice 1 with charge 1 recorded and no Payment, as a stopped manager would")
		inv := w.createFirstInvoice(s, anchor)
		trx := billing.InvoicePaymentName(string(inv.UID), 1)
		inv.Status = paygatev1.InvoiceStatus{Phase: paygatev1.InvoiceOpen, AttemptCount: 1, Payments: []string{trx}}
		Expect(k8s.Status().Update(ctx, inv)).To(Succeed())

		By("restarting the manager")
		_, err := env.StartManager(managerOptions())
		Expect(err).NotTo(HaveOccurred())
		waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.Phase).To(Equal(paygatev1.SubscriptionActive))
		})
		got := getInvoice(Default, s, 1)
		Expect(got.Status.AttemptCount).To(Equal(int32(1)), "the recorded attempt is the one sent")
		Expect(got.Status.Payments).To(Equal([]string{trx}))
		Expect(got.Status.PaidPayment).To(Equal(trx))
		Consistently(func(g Gomega) {
			g.Expect(chargesOf(g, w.ns, inv.Name)).To(HaveLen(1))
			g.Expect(sandbox.Pushes(w.ns + "." + trx + ".1")).To(Equal(1))
		}, "1s").Should(Succeed())
		expectBilledOnce(s)
		Expect(counted()).To(Equal(billingCounts{Succeeded: 1, Paid: 1}), "the charge the stopped manager recorded is counted once")
	})

	It("takes back a retry recorded before the charging window closed and never sent, and sends it when the window opens", func() {
		w := newBillingWorld()
		Expect(env.StopManager()).To(Succeed())
		DeferCleanup(func() {
			if _, err := env.StartManager(managerOptions()); err != nil {
				Expect(err.Error()).To(ContainSubstring("already running"))
			}
		})
		anchor := at(9, 1, 10, 0)
		s := w.subscribe(failingPhone, anchor)

		By("leaving behind invoice 1 with charge 1 failed and retry 2 recorded at 19:59 and no Payment, as a manager stopped then would")
		inv := w.createFirstInvoice(s, anchor)
		first, retryName := billing.InvoicePaymentName(string(inv.UID), 1), billing.InvoicePaymentName(string(inv.UID), 2)
		failed := &paygatev1.Payment{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: first, Labels: map[string]string{paygatev1.LabelMerchant: "duka",
				paygatev1.LabelEnvironment: "sandbox", paygatev1.LabelInvoice: inv.Name, paygatev1.LabelSubscription: s.Name}},
			Spec: paygatev1.PaymentSpec{MerchantRef: s.Spec.MerchantRef, Environment: s.Spec.Environment, MerchantReference: inv.Name,
				Amount: "15000.00", Currency: "TZS", Mode: paygatev1.PaymentModePush, Customer: paygatev1.Customer{Phone: failingPhone},
				Gateways: []paygatev1.GatewayCode{"mpesa-tz"}, ExpiresAt: metav1.NewTime(anchor.Add(time.Minute)), CreatedAt: ptrMicro(anchor)},
		}
		Expect(k8s.Create(ctx, failed)).To(Succeed())
		failed.Status = paygatev1.PaymentStatus{Phase: paygatev1.PaymentFailed, Reason: string(paygatev1.FailureInsufficientFunds), SettledAt: ptrMicro(anchor)}
		Expect(k8s.Status().Update(ctx, failed)).To(Succeed())
		inv.Status = paygatev1.InvoiceStatus{Phase: paygatev1.InvoicePaymentFailed, AttemptCount: 2, Payments: []string{first, retryName}}
		Expect(k8s.Status().Update(ctx, inv)).To(Succeed())
		advance(s, at(9, 1, 23, 0))

		By("restarting the manager at 23:00: the retry is not sent, and waits for 08:00")
		_, err := env.StartManager(managerOptions())
		Expect(err).NotTo(HaveOccurred())
		waitInvoice(s, 1, func(g Gomega, inv *paygatev1.Invoice) {
			g.Expect(inv.Status.AttemptCount).To(Equal(int32(1)))
			g.Expect(inv.Status.Payments).To(Equal([]string{first}))
			g.Expect(inv.Status.NextAttemptAt).NotTo(BeNil())
			g.Expect(inv.Status.NextAttemptAt.Time).To(BeTemporally("==", at(9, 2, 8, 0)))
		})
		Consistently(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: retryName}, &paygatev1.Payment{})).NotTo(Succeed())
			g.Expect(sandbox.Pushes(w.ns + "." + retryName + ".1")).To(BeZero())
		}, "1s").Should(Succeed())
		Eventually(func() []string { return eventReasons(w.ns, s.Name) }).Should(ContainElement(controllers.ReasonChargeDeferred))

		By("opening the window: the retry is sent once, its prompt ending by the window's close")
		advance(s, at(9, 2, 19, 50))
		var retry paygatev1.Payment
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: retryName}, &retry)).To(Succeed())
			g.Expect(sandbox.Pushes(w.ns + "." + retryName + ".1")).To(Equal(1))
		}).Should(Succeed())
		Expect(retry.Spec.ExpiresAt.Time.Sub(clock.Now())).To(BeNumerically("<=", 10*time.Minute), "a prompt sent at 19:50 ends by 20:00")
	})

	It("changes nothing on duplicate or late provider callbacks, on a paid invoice or a void one", func() {
		w := newBillingWorld()
		paid := w.subscribe(approvingPhone, at(10, 1, 10, 0))
		voided := w.subscribe(failingPhone, at(10, 1, 10, 0))
		waitSub(paid, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.Phase).To(Equal(paygatev1.SubscriptionActive))
		})
		waitSub(voided, func(g Gomega, s *paygatev1.Subscription) { g.Expect(s.Status.ConsecutiveFailures).To(Equal(int32(1))) })
		updateSub(voided, func(s *paygatev1.Subscription) { s.Spec.Cancel = paygatev1.CancelImmediately })
		waitInvoice(voided, 1, invoicePhase(paygatev1.InvoiceVoid))
		Eventually(func(g Gomega) {
			g.Expect(billingEvents(g, w.ns, "")).To(HaveLen(7)) // 2 created, 2 invoice.created, paid, payment_failed, cancelled
		}).Should(Succeed())

		type snapshot struct {
			subs     []paygatev1.SubscriptionStatus
			invoices []paygatev1.InvoiceStatus
			events   int
			counts   billingCounts
		}
		take := func(g Gomega) snapshot {
			var out snapshot
			for _, s := range []*paygatev1.Subscription{paid, voided} {
				st := getSub(g, s).Status
				st.Conditions = nil
				out.subs = append(out.subs, st)
				ist := getInvoice(g, s, 1).Status
				ist.Conditions = nil
				out.invoices = append(out.invoices, ist)
			}
			out.events = len(billingEvents(g, w.ns, ""))
			out.counts = countBilling()
			return out
		}
		before := take(Default)
		charges := []string{before.invoices[0].PaidPayment, before.invoices[1].Payments[0]}

		By("delivering the provider's callback twice, claiming success, for the paid charge and the void invoice's failed one")
		for i := range 2 {
			for _, name := range charges {
				Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
					p := &paygatev1.Payment{}
					Expect(k8s.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, p)).To(Succeed())
					if p.Annotations == nil {
						p.Annotations = map[string]string{}
					}
					p.Annotations[paygatev1.AnnotationProviderCallback] = "SUCCESS " + clock.Now().Add(time.Duration(i)*time.Second).Format(time.RFC3339)
					return k8s.Update(ctx, p)
				})).To(Succeed())
			}
		}
		Eventually(func(g Gomega) {
			p := &paygatev1.Payment{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: charges[1]}, p)).To(Succeed())
			g.Expect(meta.FindStatusCondition(p.Status.Conditions, paygatev1.ConditionLateSettlement)).NotTo(BeNil())
			g.Expect(p.Status.Phase).To(Equal(paygatev1.PaymentFailed))
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(take(g)).To(Equal(before)) }, "2s").Should(Succeed())
		expectBilledOnce(paid)
		expectBilledOnce(voided)
	})

	It("waits for its plan and merchant, and charges nothing meanwhile", func() {
		ns := newNamespace()
		s := billingWorld{ns: ns, plan: billingPlan(ns)}.subscribe(approvingPhone, at(11, 1, 10, 0))
		sub := waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(meta.FindStatusCondition(s.Status.Conditions, paygatev1.ConditionReady)).NotTo(BeNil())
		})
		Expect(meta.FindStatusCondition(sub.Status.Conditions, paygatev1.ConditionReady).Reason).To(Equal(controllers.ReasonMerchantNotFound))
		Expect(sub.Status.Phase).To(Equal(paygatev1.SubscriptionPending))
		Consistently(func(g Gomega) { g.Expect(invoicePeriods(g, s)).To(BeEmpty()) }, "1s").Should(Succeed())

		By("billing once the plan, the merchant and a gateway exist")
		createGateway("TZS")
		createMerchant(ns, "duka")
		plan := billingPlan(ns)
		Expect(k8s.Create(ctx, plan)).To(Succeed())
		waitSub(s, func(g Gomega, s *paygatev1.Subscription) {
			g.Expect(s.Status.Phase).To(Equal(paygatev1.SubscriptionActive))
		})
		expectBilledOnce(s)
	})
})
