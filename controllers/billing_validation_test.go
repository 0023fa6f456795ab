// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/config"
	"github.com/paygate/paygate/internal/billing"
)

// billingPlan is the gold plan of merchant duka in ns, with nothing defaulted; mods adjust it
// (nothing is created).
func billingPlan(ns string, mods ...func(*paygatev1.BillingPlan)) *paygatev1.BillingPlan {
	p := &paygatev1.BillingPlan{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: paygatev1.BillingPlanName("duka", paygatev1.EnvironmentSandbox, "gold"),
			Labels: map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox"}},
		Spec: paygatev1.BillingPlanSpec{
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Code: "gold", Name: "Gold", Amount: "15000.00", Currency: "TZS", Interval: paygatev1.IntervalMonth,
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// consentTerms has what terms shown to customers have: two languages, line breaks, non-ASCII
// text and trailing spaces. The consent must keep them byte for byte.
const consentTerms = "Utalipishwa TZS 15,000 kila mwezi hadi utakaposhitisha.\r\n" +
	"You will be charged TZS 15,000 every month until you cancel — approve each charge with your PIN.  \n"

// subscription is a sandbox subscription of a customer to plan gold, with the consent the API
// would record; mods adjust it (nothing is created).
func subscription(ns string, mods ...func(*paygatev1.Subscription)) *paygatev1.Subscription {
	id, err := billing.NewSubscriptionID()
	Expect(err).NotTo(HaveOccurred())
	plan := billingPlan(ns)
	consent, err := billing.BuildConsent(billing.ConsentInput{
		TermsShown: consentTerms, RecordedAt: time.Now(), ClientIP: "196.249.1.7", UserAgent: "duka-backend/2.1",
		Plan: &plan.Spec, BusinessID: "test_mk_qj33hpibayoahnbujh4loofg", Environment: paygatev1.EnvironmentSandbox,
	})
	Expect(err).NotTo(HaveOccurred())
	s := &paygatev1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: paygatev1.SubscriptionName(id),
			Labels: map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox", paygatev1.LabelPlanCode: "gold"}},
		Spec: paygatev1.SubscriptionSpec{
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			PlanRef: paygatev1.BillingPlanReference{Name: plan.Name}, PlanCode: "gold",
			CustomerPhone: "+255712345678", Consent: consent,
		},
	}
	for _, m := range mods {
		m(s)
	}
	return s
}

// invoice is period 1 of subscription sub; mods adjust it (nothing is created).
func invoice(ns, sub string, mods ...func(*paygatev1.Invoice)) *paygatev1.Invoice {
	start := time.Date(2026, 1, 31, 7, 0, 0, 0, time.UTC)
	i := &paygatev1.Invoice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: paygatev1.InvoiceName(sub, 1)},
		Spec: paygatev1.InvoiceSpec{
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			SubscriptionRef: paygatev1.SubscriptionReference{Name: sub}, PlanCode: "gold", Period: 1,
			PeriodStart: metav1.NewTime(start), PeriodEnd: metav1.NewTime(start.AddDate(0, 1, 0)),
			Amount: "15000.00", Currency: "TZS",
		},
	}
	for _, m := range mods {
		m(i)
	}
	return i
}

// The billing CRDs' schemas and CEL rules, against a real API server.
var _ = Describe("Billing resources the API server rejects", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	expectRejected := func(obj client.Object, message string) {
		err := k8s.Create(ctx, obj)
		if err == nil {
			deleteAfter(obj)
		}
		Expect(err).To(HaveOccurred(), "expected the API server to reject it")
		Expect(err.Error()).To(ContainSubstring(message))
	}
	create := func(obj client.Object) {
		Expect(k8s.Create(ctx, obj)).To(Succeed())
		deleteAfter(obj)
	}
	// The billing controllers write status meanwhile: an update that lost that race (a conflict)
	// is made again on the stored resourceVersion, so the API server judges the change itself.
	expectUpdateRejected := func(obj client.Object, message string) {
		err := k8s.Update(ctx, obj)
		for i := 0; apierrors.IsConflict(err) && i < 10; i++ {
			stored := obj.DeepCopyObject().(client.Object)
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), stored)).To(Succeed())
			obj.SetResourceVersion(stored.GetResourceVersion())
			err = k8s.Update(ctx, obj)
		}
		Expect(err).To(HaveOccurred(), "expected the API server to refuse the change")
		Expect(err.Error()).To(ContainSubstring(message))
	}

	DescribeTable("billing plans",
		func(mod func(*paygatev1.BillingPlan), message string) {
			expectRejected(billingPlan(ns, mod), message)
		},
		Entry("a name not derived from merchant, environment and code", func(p *paygatev1.BillingPlan) { p.Name = "gold" },
			"a BillingPlan's name must be <merchantRef.name>.<environment>.<code>"),
		Entry("a name of another environment", func(p *paygatev1.BillingPlan) { p.Name = "duka.production.gold" },
			"a BillingPlan's name must be"),
		Entry("an upper-case code", func(p *paygatev1.BillingPlan) { p.Spec.Code, p.Name = "Gold", "duka.sandbox.Gold" }, "spec.code"),
		Entry("a code with an underscore", func(p *paygatev1.BillingPlan) { p.Spec.Code, p.Name = "gold_monthly", "duka.sandbox.gold_monthly" }, "spec.code"),
		Entry("an empty name", func(p *paygatev1.BillingPlan) { p.Spec.Name = "" }, "spec.name"),
		Entry("an amount below 1", func(p *paygatev1.BillingPlan) { p.Spec.Amount = "0.99" }, "amount must be at least 1 and at most 999999999999999999"),
		Entry("a zero amount", func(p *paygatev1.BillingPlan) { p.Spec.Amount = "0" }, "amount must be at least 1"),
		Entry("a float amount in exponent form", func(p *paygatev1.BillingPlan) { p.Spec.Amount = "1e3" }, "spec.amount"),
		Entry("a negative amount", func(p *paygatev1.BillingPlan) { p.Spec.Amount = "-15000" }, "spec.amount"),
		Entry("an unknown currency", func(p *paygatev1.BillingPlan) { p.Spec.Currency = "XYZ" }, `Unsupported value: "XYZ"`),
		Entry("an unknown interval", func(p *paygatev1.BillingPlan) { p.Spec.Interval = "fortnight" }, `Unsupported value: "fortnight"`),
		Entry("13 months", func(p *paygatev1.BillingPlan) { p.Spec.IntervalCount = 13 },
			"a billing period is at most one year: intervalCount is at most 365 for day, 52 for week, 12 for month and 1 for year"),
		Entry("53 weeks", func(p *paygatev1.BillingPlan) { p.Spec.Interval, p.Spec.IntervalCount = paygatev1.IntervalWeek, 53 }, "a billing period is at most one year"),
		Entry("2 years", func(p *paygatev1.BillingPlan) { p.Spec.Interval, p.Spec.IntervalCount = paygatev1.IntervalYear, 2 }, "a billing period is at most one year"),
		Entry("366 days", func(p *paygatev1.BillingPlan) { p.Spec.Interval, p.Spec.IntervalCount = paygatev1.IntervalDay, 366 }, "spec.intervalCount"),
		Entry("a negative interval count", func(p *paygatev1.BillingPlan) { p.Spec.IntervalCount = -1 }, "spec.intervalCount"),
		Entry("a window across midnight", func(p *paygatev1.BillingPlan) {
			p.Spec.ChargingWindow = paygatev1.ChargingWindow{Start: "20:00", End: "08:00"}
		}, "chargingWindow.start must be before chargingWindow.end: a window cannot cross midnight"),
		Entry("an empty window", func(p *paygatev1.BillingPlan) {
			p.Spec.ChargingWindow = paygatev1.ChargingWindow{Start: "09:00", End: "09:00"}
		}, "a window cannot cross midnight"),
		Entry("a window start without its leading zero", func(p *paygatev1.BillingPlan) { p.Spec.ChargingWindow.Start = "8:00" }, "spec.chargingWindow.start"),
		Entry("a window start of 24:00", func(p *paygatev1.BillingPlan) { p.Spec.ChargingWindow.Start = "24:00" }, "spec.chargingWindow.start"),
		Entry("a window end after 24:00", func(p *paygatev1.BillingPlan) { p.Spec.ChargingWindow.End = "24:30" }, "spec.chargingWindow.end"),
		Entry("a time zone with spaces", func(p *paygatev1.BillingPlan) { p.Spec.ChargingWindow.TimeZone = "East Africa Time" }, "spec.chargingWindow.timeZone"),
		Entry("a zero-day retry", func(p *paygatev1.BillingPlan) { p.Spec.Dunning.RetryAfterDays = []int32{0, 3} }, "spec.dunning.retryAfterDays[0]"),
		Entry("a retry after 31 days", func(p *paygatev1.BillingPlan) { p.Spec.Dunning.RetryAfterDays = []int32{31} }, "spec.dunning.retryAfterDays[0]"),
		Entry("eleven retries", func(p *paygatev1.BillingPlan) { p.Spec.Dunning.RetryAfterDays = make([]int32, 11) }, "spec.dunning.retryAfterDays"),
		Entry("eleven failures", func(p *paygatev1.BillingPlan) { p.Spec.Dunning.MaxFailures = 11 }, "spec.dunning.maxFailures"),
	)

	It("fills in the documented defaults and accepts the widest values", func() {
		p := billingPlan(ns)
		create(p)
		got := &paygatev1.BillingPlan{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		Expect(got.Spec.IntervalCount).To(Equal(int32(1)))
		Expect(got.Spec.Dunning).To(Equal(paygatev1.DunningPolicy{RetryAfterDays: paygatev1.DefaultRetryAfterDays, MaxFailures: paygatev1.DefaultMaxFailures}))
		Expect(got.Spec.ChargingWindow).To(Equal(paygatev1.ChargingWindow{
			Start: paygatev1.DefaultWindowStart, End: paygatev1.DefaultWindowEnd, TimeZone: paygatev1.DefaultTimeZone}))
		_, err := billing.PlanSchedule(&got.Spec)
		Expect(err).NotTo(HaveOccurred(), "the defaults make a schedule")

		create(billingPlan(ns, func(p *paygatev1.BillingPlan) {
			p.Spec.Code, p.Name = "yearly-max", "duka.sandbox.yearly-max"
			p.Spec.Amount, p.Spec.Interval, p.Spec.IntervalCount = "999999999999999999", paygatev1.IntervalYear, 1
			p.Spec.ChargingWindow = paygatev1.ChargingWindow{Start: "00:00", End: "24:00", TimeZone: "America/Argentina/Buenos_Aires"}
			p.Spec.Dunning = paygatev1.DunningPolicy{RetryAfterDays: []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 30}, MaxFailures: 10}
		}))
		create(billingPlan(ns, func(p *paygatev1.BillingPlan) {
			p.Spec.Code, p.Name = "daily", "duka.sandbox.daily"
			p.Spec.Amount, p.Spec.Interval, p.Spec.IntervalCount = "1", paygatev1.IntervalDay, 365
		}))
		create(billingPlan(ns, func(p *paygatev1.BillingPlan) {
			p.Spec.Environment, p.Name = paygatev1.EnvironmentProduction, "duka.production.gold"
		}))
	})

	It("ships demo billing plans the API server accepts", func() {
		manifests, err := config.Samples()
		Expect(err).NotTo(HaveOccurred())
		var plans []string
		for _, m := range manifests {
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(m), 4096)
			for {
				p := &paygatev1.BillingPlan{}
				if err := dec.Decode(p); errors.Is(err, io.EOF) {
					break
				} else {
					Expect(err).NotTo(HaveOccurred())
				}
				if p.Kind != "BillingPlan" {
					continue
				}
				p.Namespace = ns
				Expect(k8s.Create(ctx, p, client.DryRunAll)).To(Succeed(), p.Name)
				_, err := billing.PlanSchedule(&p.Spec)
				Expect(err).NotTo(HaveOccurred(), p.Name)
				plans = append(plans, p.Name)
			}
		}
		Expect(plans).To(ConsistOf("duka-online.sandbox.gold-monthly", "duka-online.sandbox.kahawa-weekly"))
	})

	It("keeps one code per merchant and environment", func() {
		create(billingPlan(ns))
		err := k8s.Create(ctx, billingPlan(ns, func(p *paygatev1.BillingPlan) { p.Spec.Name, p.Spec.Amount = "Gold again", "20000" }))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("already exists"))
	})

	It("keeps a plan's price immutable and lets its name, window and dunning change", func() {
		p := billingPlan(ns)
		create(p)
		for name, change := range map[string]func(*paygatev1.BillingPlan){
			"amount":        func(p *paygatev1.BillingPlan) { p.Spec.Amount = "20000.00" },
			"amount text":   func(p *paygatev1.BillingPlan) { p.Spec.Amount = "15000" },
			"currency":      func(p *paygatev1.BillingPlan) { p.Spec.Currency = "KES" },
			"interval":      func(p *paygatev1.BillingPlan) { p.Spec.Interval = paygatev1.IntervalWeek },
			"intervalCount": func(p *paygatev1.BillingPlan) { p.Spec.IntervalCount = 2 },
		} {
			By("changing the " + name)
			changed := &paygatev1.BillingPlan{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), changed)).To(Succeed())
			change(changed)
			expectUpdateRejected(changed, "a billing plan's price (amount, currency, interval, intervalCount) is immutable: customers consented to it; create a new plan")
		}

		By("changing the merchant")
		changed := &paygatev1.BillingPlan{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), changed)).To(Succeed())
		changed.Spec.MerchantRef.Name = "other"
		expectUpdateRejected(changed, "a billing plan's merchantRef, environment and code are immutable")

		By("changing what may change")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), changed)).To(Succeed())
			changed.Spec.Name, changed.Spec.Description = "Gold (renamed)", "Now with more gold."
			changed.Spec.ChargingWindow = paygatev1.ChargingWindow{Start: "09:00", End: "18:30", TimeZone: "Africa/Nairobi"}
			changed.Spec.Dunning = paygatev1.DunningPolicy{RetryAfterDays: []int32{2}, MaxFailures: 3}
			return k8s.Update(ctx, changed)
		})).To(Succeed())
	})

	It("accepts a Kenyan mobile number for a KES plan's subscription", func() {
		s := subscription(ns, func(s *paygatev1.Subscription) {
			s.Spec.Consent.PlanCurrency, s.Spec.CustomerPhone = "KES", "+254712345678"
		})
		Expect(k8s.Create(ctx, s)).To(Succeed())
		Expect(k8s.Delete(ctx, s)).To(Succeed())
	})

	DescribeTable("subscriptions",
		func(mod func(*paygatev1.Subscription), message string) {
			expectRejected(subscription(ns, mod), message)
		},
		Entry("a name that is not sub- and an id", func(s *paygatev1.Subscription) { s.Name = "gold-for-asha" },
			"a Subscription's name is sub- and 24 characters of a-z and 2-7"),
		Entry("a Kenyan phone for a TZS plan", func(s *paygatev1.Subscription) { s.Spec.CustomerPhone = "+254712345678" },
			"customerPhone must be a Tanzanian mobile number in E.164 form for a TZS plan"),
		Entry("a Tanzanian phone for a KES plan", func(s *paygatev1.Subscription) { s.Spec.Consent.PlanCurrency = "KES" },
			"customerPhone must be a Kenyan mobile number in E.164 form for a KES plan"),
		Entry("a Tanzanian landline", func(s *paygatev1.Subscription) { s.Spec.CustomerPhone = "+255222123456" },
			"customerPhone must be a Tanzanian mobile number"),
		Entry("a national-format phone", func(s *paygatev1.Subscription) { s.Spec.CustomerPhone = "0712345678" }, "spec.customerPhone"),
		Entry("a plan reference that is not the plan code's", func(s *paygatev1.Subscription) { s.Spec.PlanRef.Name = "duka.sandbox.silver" },
			"planRef.name must be <merchantRef.name>.<environment>.<planCode>"),
		Entry("consent recorded by production credentials", func(s *paygatev1.Subscription) {
			s.Spec.Consent.RecordedBy = paygatev1.ConsentRecorder{BusinessID: "live_mk_qj33hpibayoahnbujh4loofg", Environment: paygatev1.EnvironmentProduction}
		}, "consent.recordedBy.environment must be the subscription's environment"),
		Entry("no terms", func(s *paygatev1.Subscription) { s.Spec.Consent.TermsShown = "" }, "spec.consent.termsShown"),
		Entry("terms over 4096 characters", func(s *paygatev1.Subscription) {
			s.Spec.Consent.TermsShown = strings.Repeat("a", 4097)
		}, "spec.consent.termsShown"),
		Entry("an upper-case hash", func(s *paygatev1.Subscription) {
			s.Spec.Consent.TermsSHA256 = strings.ToUpper(s.Spec.Consent.TermsSHA256)
		}, "spec.consent.termsSHA256"),
		Entry("a client address that is not an IP", func(s *paygatev1.Subscription) { s.Spec.Consent.ClientIP = "duka.example" },
			"consent.clientIP must be an IP address"),
		Entry("an API key as the recorder", func(s *paygatev1.Subscription) {
			s.Spec.Consent.RecordedBy.BusinessID = "test_pk_qj33hpibayoahnbujh4loofg"
		}, "spec.consent.recordedBy.businessID"),
		Entry("a consented interval count of 0", func(s *paygatev1.Subscription) { s.Spec.Consent.PlanIntervalCount = 0 },
			"spec.consent.planIntervalCount"),
		Entry("a test clock in production", func(s *paygatev1.Subscription) {
			s.Spec.Environment, s.Spec.PlanRef.Name = paygatev1.EnvironmentProduction, "duka.production.gold"
			s.Spec.Consent.RecordedBy = paygatev1.ConsentRecorder{BusinessID: "live_mk_qj33hpibayoahnbujh4loofg", Environment: paygatev1.EnvironmentProduction}
			s.Spec.TestClock = &paygatev1.TestClock{OffsetSeconds: 60}
		}, "testClock is for sandbox subscriptions only"),
		Entry("a negative clock offset", func(s *paygatev1.Subscription) { s.Spec.TestClock = &paygatev1.TestClock{OffsetSeconds: -1} },
			"spec.testClock.offsetSeconds"),
		Entry("an http webhook in production", func(s *paygatev1.Subscription) {
			s.Spec.Environment, s.Spec.PlanRef.Name = paygatev1.EnvironmentProduction, "duka.production.gold"
			s.Spec.Consent.RecordedBy = paygatev1.ConsentRecorder{BusinessID: "live_mk_qj33hpibayoahnbujh4loofg", Environment: paygatev1.EnvironmentProduction}
			s.Spec.WebhookURL = "http://duka.example/hooks"
		}, "a production subscription's webhookURL must be an https:// URL"),
		Entry("a webhook that is not a URL", func(s *paygatev1.Subscription) { s.Spec.WebhookURL = "ftp://duka.example/hooks" },
			"webhookURL must be an http:// or https:// URL"),
		Entry("an unknown way to cancel", func(s *paygatev1.Subscription) { s.Spec.Cancel = "tomorrow" }, `Unsupported value: "tomorrow"`),
	)

	It("stores the consent verbatim and keeps it immutable", func() {
		s := subscription(ns)
		create(s)
		got := &paygatev1.Subscription{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), got)).To(Succeed())
		Expect(got.Spec.Consent.TermsShown).To(Equal(consentTerms), "byte for byte")
		Expect(got.Spec.Consent.TermsSHA256).To(Equal(billing.TermsSHA256(consentTerms)))
		Expect(got.Spec.Consent.RecordedAt.Time).To(Equal(s.Spec.Consent.RecordedAt.Time), "to the microsecond")
		Expect(billing.VerifyConsent(&got.Spec.Consent)).To(Succeed())

		for name, change := range map[string]func(*paygatev1.SubscriptionConsent){
			"terms": func(c *paygatev1.SubscriptionConsent) { c.TermsShown = strings.TrimSpace(c.TermsShown) },
			"hash":  func(c *paygatev1.SubscriptionConsent) { c.TermsSHA256 = billing.TermsSHA256("other terms") },
			"time": func(c *paygatev1.SubscriptionConsent) {
				c.RecordedAt = metav1.NewMicroTime(c.RecordedAt.Add(time.Microsecond))
			},
			"client IP":  func(c *paygatev1.SubscriptionConsent) { c.ClientIP = "10.0.0.1" },
			"user agent": func(c *paygatev1.SubscriptionConsent) { c.UserAgent = "" },
			"price":      func(c *paygatev1.SubscriptionConsent) { c.PlanAmount = "1.00" },
			"recorder":   func(c *paygatev1.SubscriptionConsent) { c.RecordedBy.BusinessID = "test_mk_aaaaaaaaaaaaaaaaaaaaaaaa" },
		} {
			By("changing the consent's " + name)
			changed := got.DeepCopy()
			change(&changed.Spec.Consent)
			expectUpdateRejected(changed, "consent is immutable: it records what the customer agreed to")
		}

		By("changing the customer's phone")
		changed := got.DeepCopy()
		changed.Spec.CustomerPhone = "+255754000000"
		expectUpdateRejected(changed, "a subscription's merchantRef, environment, plan and customerPhone are immutable")
	})

	It("lets the test clock, resume and cancel move only forward", func() {
		s := subscription(ns)
		create(s)
		update := func(change func(*paygatev1.Subscription)) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cur := &paygatev1.Subscription{}
				Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), cur)).To(Succeed())
				change(cur)
				return k8s.Update(ctx, cur)
			})
		}
		Expect(update(func(s *paygatev1.Subscription) { s.Spec.TestClock = &paygatev1.TestClock{OffsetSeconds: 86400} })).To(Succeed())
		Expect(update(func(s *paygatev1.Subscription) { s.Spec.TestClock.OffsetSeconds = 3600 })).To(
			MatchError(ContainSubstring("a test clock only moves forward")))
		Expect(update(func(s *paygatev1.Subscription) { s.Spec.TestClock = nil })).To(
			MatchError(ContainSubstring("a test clock only moves forward")))
		Expect(update(func(s *paygatev1.Subscription) { s.Spec.TestClock.OffsetSeconds = billing.MaxTestClockOffsetSeconds })).To(Succeed())

		Expect(update(func(s *paygatev1.Subscription) { s.Spec.ResumeSequence = 2 })).To(Succeed())
		Expect(update(func(s *paygatev1.Subscription) { s.Spec.ResumeSequence = 1 })).To(
			MatchError(ContainSubstring("resumeSequence only increases")))
		Expect(update(func(s *paygatev1.Subscription) { s.Spec.ResumeSequence = 0 })).To(
			MatchError(ContainSubstring("resumeSequence only increases")))

		Expect(update(func(s *paygatev1.Subscription) { s.Spec.WebhookURL = "https://duka.example/billing-hooks" })).To(Succeed())
		Expect(update(func(s *paygatev1.Subscription) { s.Spec.Cancel = paygatev1.CancelAtPeriodEnd })).To(Succeed())
		Expect(update(func(s *paygatev1.Subscription) { s.Spec.Cancel = "" })).To(Succeed(), "cancelling at the period end can be withdrawn")
		Expect(update(func(s *paygatev1.Subscription) { s.Spec.Cancel = paygatev1.CancelImmediately })).To(Succeed())
		Expect(update(func(s *paygatev1.Subscription) { s.Spec.Cancel = "" })).To(
			MatchError(ContainSubstring("cancel: immediately is final")))
		Expect(update(func(s *paygatev1.Subscription) { s.Spec.Cancel = paygatev1.CancelAtPeriodEnd })).To(
			MatchError(ContainSubstring("cancel: immediately is final")))
	})

	DescribeTable("invoices",
		func(mod func(*paygatev1.Invoice), message string) {
			expectRejected(invoice(ns, "sub-qj33hpibayoahnbujh4loofg", mod), message)
		},
		Entry("a name of another period", func(i *paygatev1.Invoice) { i.Spec.Period = 2 }, "an Invoice's name must be inv-<subscription id>-<period>"),
		Entry("a name not derived from the subscription", func(i *paygatev1.Invoice) { i.Name = "inv-1" }, "an Invoice's name must be"),
		Entry("a subscription reference that is not a subscription name", func(i *paygatev1.Invoice) {
			i.Spec.SubscriptionRef.Name, i.Name = "gold-for-asha", "inv-gold-for-asha-1"
		}, "spec.subscriptionRef.name"),
		Entry("period 0", func(i *paygatev1.Invoice) { i.Spec.Period, i.Name = 0, "inv-qj33hpibayoahnbujh4loofg-0" }, "spec.period"),
		Entry("a period that ends before it starts", func(i *paygatev1.Invoice) { i.Spec.PeriodEnd = metav1.NewTime(i.Spec.PeriodStart.Add(-time.Hour)) },
			"periodStart must be before periodEnd"),
		Entry("a float amount", func(i *paygatev1.Invoice) { i.Spec.Amount = "1.5e4" }, "spec.amount"),
	)

	It("keeps an invoice immutable once issued and lets its status follow the charges", func() {
		i := invoice(ns, "sub-qj33hpibayoahnbujh4loofg")
		create(i)
		changed := i.DeepCopy()
		changed.Spec.Amount = "1.00"
		expectUpdateRejected(changed, "an invoice is immutable once issued")

		got := &paygatev1.Invoice{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(i), got)).To(Succeed())
		got.Status = paygatev1.InvoiceStatus{
			Phase: paygatev1.InvoicePaymentFailed, AttemptCount: 1, LastFailureReason: "INSUFFICIENT_FUNDS",
			Payments:      []string{billing.InvoicePaymentName(string(got.UID), 1)},
			NextAttemptAt: ptr.To(metav1.NewTime(time.Date(2026, 2, 1, 5, 0, 0, 0, time.UTC))),
		}
		Expect(k8s.Status().Update(ctx, got)).To(Succeed())

		got.Status.Payments = append(got.Status.Payments, "not-a-trx-id")
		err := k8s.Status().Update(ctx, got)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("status.payments[1]"))

		got.Status.Payments = got.Status.Payments[:1]
		got.Status.Phase = "refunded"
		err = k8s.Status().Update(ctx, got)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`Unsupported value: "refunded"`))
	})
})
