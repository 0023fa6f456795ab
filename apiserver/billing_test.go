// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/billing"
	"github.com/paygate/paygate/internal/openapitest"
	"github.com/paygate/paygate/pkg/paygate"
)

const goldPlan = `{"code":"gold-monthly","name":"Gold","amount":15000,"currency_code":"TZS","interval":"month"}`

// billingObjects counts the plans and subscriptions the fake cluster holds.
func (f *exchangeFixture) billingObjects(t *testing.T) (plans, subs int) {
	t.Helper()
	var pl paygatev1.BillingPlanList
	var sl paygatev1.SubscriptionList
	if err := f.k8s.List(t.Context(), &pl); err != nil {
		t.Fatal(err)
	}
	if err := f.k8s.List(t.Context(), &sl); err != nil {
		t.Fatal(err)
	}
	return len(pl.Items), len(sl.Items)
}

// errorFields are the field names of an error body's errors, sorted.
func errorFields(body map[string]any) []string {
	errs, _ := body["errors"].(map[string]any)
	var out []string
	for k := range errs {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestPlanCreateValidation sends plan bodies that must be refused, each with its label and the
// fields it names, and checks that no plan was recorded.
func TestPlanCreateValidation(t *testing.T) {
	f := newExchangeFixture(t)
	for name, tc := range map[string]struct {
		body   string
		label  string
		fields []string
	}{
		"empty body":                 {`{}`, LabelValidationFailed, []string{"amount", "code", "currency_code", "interval", "name"}},
		"not an object":              {`[1]`, LabelValidationFailed, []string{"body"}},
		"code upper case":            {`{"code":"Gold","name":"Gold","amount":1000,"currency_code":"TZS","interval":"month"}`, LabelValidationFailed, []string{"code"}},
		"code with a dot":            {`{"code":"gold.monthly","name":"Gold","amount":1000,"currency_code":"TZS","interval":"month"}`, LabelValidationFailed, []string{"code"}},
		"code not a string":          {`{"code":7,"name":"Gold","amount":1000,"currency_code":"TZS","interval":"month"}`, LabelValidationFailed, []string{"code"}},
		"name only spaces":           {`{"code":"gold","name":"   ","amount":1000,"currency_code":"TZS","interval":"month"}`, LabelValidationFailed, []string{"name"}},
		"description too long":       {`{"code":"gold","name":"Gold","amount":1000,"currency_code":"TZS","interval":"month","description":"` + strings.Repeat("d", 501) + `"}`, LabelValidationFailed, []string{"description"}},
		"amount below the minimum":   {`{"code":"gold","name":"Gold","amount":0.5,"currency_code":"TZS","interval":"month"}`, LabelInvalidAmount, []string{"amount"}},
		"amount negative":            {`{"code":"gold","name":"Gold","amount":-100,"currency_code":"TZS","interval":"month"}`, LabelInvalidAmount, []string{"amount"}},
		"amount too large":           {`{"code":"gold","name":"Gold","amount":1e19,"currency_code":"TZS","interval":"month"}`, LabelInvalidAmount, []string{"amount"}},
		"amount out of range wins":   {`{"code":"Gold","name":"Gold","amount":0,"currency_code":"TZS","interval":"month"}`, LabelInvalidAmount, []string{"amount", "code"}},
		"amount too precise for TZS": {`{"code":"gold","name":"Gold","amount":1000.005,"currency_code":"TZS","interval":"month"}`, LabelValidationFailed, []string{"amount"}},
		"amount not a number":        {`{"code":"gold","name":"Gold","amount":"1,000","currency_code":"TZS","interval":"month"}`, LabelValidationFailed, []string{"amount"}},
		"currency lower case":        {`{"code":"gold","name":"Gold","amount":1000,"currency_code":"tzs","interval":"month"}`, LabelValidationFailed, []string{"currency_code"}},
		"currency not enabled":       {`{"code":"gold","name":"Gold","amount":1000,"currency_code":"KES","interval":"month"}`, LabelInvalidCurrency, nil},
		"interval unknown":           {`{"code":"gold","name":"Gold","amount":1000,"currency_code":"TZS","interval":"fortnight"}`, LabelValidationFailed, []string{"interval"}},
		"interval_count zero":        {`{"code":"gold","name":"Gold","amount":1000,"currency_code":"TZS","interval":"month","interval_count":0}`, LabelValidationFailed, []string{"interval_count"}},
		"13 months":                  {`{"code":"gold","name":"Gold","amount":1000,"currency_code":"TZS","interval":"month","interval_count":13}`, LabelValidationFailed, []string{"interval_count"}},
		"two years":                  {`{"code":"gold","name":"Gold","amount":1000,"currency_code":"TZS","interval":"year","interval_count":2}`, LabelValidationFailed, []string{"interval_count"}},
		"interval_count fractional":  {`{"code":"gold","name":"Gold","amount":1000,"currency_code":"TZS","interval":"day","interval_count":1.5}`, LabelValidationFailed, []string{"interval_count"}},
	} {
		t.Run(name, func(t *testing.T) {
			status, body := f.signedExchange(t, f.duka, http.MethodPost, "/api/v1/billing/plans", tc.body, "application/json", nil)
			if status != http.StatusUnprocessableEntity || body["error"] != tc.label {
				t.Fatalf("got %d %v, want 422 %s", status, body, tc.label)
			}
			if got := errorFields(body); !slices.Equal(got, tc.fields) {
				t.Errorf("errors name %v, want %v: %v", got, tc.fields, body["errors"])
			}
		})
	}
	if plans, _ := f.billingObjects(t); plans != 0 {
		t.Errorf("%d plans recorded by refused requests", plans)
	}
}

// TestSubscriptionCreateValidation sends subscription bodies that must be refused and checks that
// nothing was recorded.
func TestSubscriptionCreateValidation(t *testing.T) {
	f := newExchangeFixture(t)
	if status, body := f.signedExchange(t, f.duka, http.MethodPost, "/api/v1/billing/plans", goldPlan, "application/json", nil); status != http.StatusOK {
		t.Fatalf("plan: %d %v", status, body)
	}
	const terms = `"terms_shown":"TZS 15,000 a month."`
	for name, tc := range map[string]struct {
		creds  paygate.Credentials
		body   string
		status int
		label  string
		fields []string
	}{
		"empty body":         {f.duka, `{}`, 422, LabelValidationFailed, []string{"customer_phone", "plan_code", "terms_shown"}},
		"unknown plan":       {f.duka, `{"plan_code":"silver","customer_phone":"0712345678",` + terms + `}`, 422, LabelValidationFailed, []string{"plan_code"}},
		"malformed plan":     {f.duka, `{"plan_code":"Gold Monthly","customer_phone":"0712345678",` + terms + `}`, 422, LabelValidationFailed, []string{"plan_code"}},
		"empty terms":        {f.duka, `{"plan_code":"gold-monthly","customer_phone":"0712345678","terms_shown":""}`, 422, LabelValidationFailed, []string{"terms_shown"}},
		"terms only spaces":  {f.duka, `{"plan_code":"gold-monthly","customer_phone":"0712345678","terms_shown":" \n\t "}`, 422, LabelValidationFailed, []string{"terms_shown"}},
		"terms not a string": {f.duka, `{"plan_code":"gold-monthly","customer_phone":"0712345678","terms_shown":["a"]}`, 422, LabelValidationFailed, []string{"terms_shown"}},
		"terms too long": {f.duka, `{"plan_code":"gold-monthly","customer_phone":"0712345678","terms_shown":"` + strings.Repeat("t", 4097) + `"}`,
			422, LabelValidationFailed, []string{"terms_shown"}},
		"terms with a control character": {f.duka, `{"plan_code":"gold-monthly","customer_phone":"0712345678","terms_shown":"a\u0000b"}`, 422, LabelValidationFailed, []string{"terms_shown"}},
		"Kenyan phone":                   {f.duka, `{"plan_code":"gold-monthly","customer_phone":"+254712345678",` + terms + `}`, 422, LabelValidationFailed, []string{"customer_phone"}},
		"fixed line":                     {f.duka, `{"plan_code":"gold-monthly","customer_phone":"+255222123456",` + terms + `}`, 422, LabelValidationFailed, []string{"customer_phone"}},
		"not a phone":                    {f.duka, `{"plan_code":"gold-monthly","customer_phone":"call me",` + terms + `}`, 422, LabelValidationFailed, []string{"customer_phone"}},
		"relative webhook":               {f.duka, `{"plan_code":"gold-monthly","customer_phone":"0712345678",` + terms + `,"webhook_url":"/hooks"}`, 422, LabelValidationFailed, []string{"webhook_url"}},
		"upper-case scheme":              {f.duka, `{"plan_code":"gold-monthly","customer_phone":"0712345678",` + terms + `,"webhook_url":"HTTPS://shop.example/hooks"}`, 422, LabelValidationFailed, []string{"webhook_url"}},
		"http in production": {f.live, `{"plan_code":"gold-monthly","customer_phone":"0712345678",` + terms + `,"webhook_url":"http://shop.example/hooks"}`,
			422, LabelValidationFailed, []string{"webhook_url"}},
		"sandbox plan from production": {f.live, `{"plan_code":"gold-monthly","customer_phone":"0712345678",` + terms + `}`, 422, LabelValidationFailed, []string{"plan_code"}},
		"production without KYB":       {f.unvetted, `{"plan_code":"gold-monthly","customer_phone":"0712345678",` + terms + `}`, 403, LabelMerchantPendingApproval, nil},
	} {
		t.Run(name, func(t *testing.T) {
			status, body := f.signedExchange(t, tc.creds, http.MethodPost, "/api/v1/billing/subscriptions", tc.body, "application/json", nil)
			if status != tc.status || body["error"] != tc.label {
				t.Fatalf("got %d %v, want %d %s", status, body, tc.status, tc.label)
			}
			if got := errorFields(body); !slices.Equal(got, tc.fields) {
				t.Errorf("errors name %v, want %v: %v", got, tc.fields, body["errors"])
			}
		})
	}
	if _, subs := f.billingObjects(t); subs != 0 {
		t.Errorf("%d subscriptions recorded by refused requests", subs)
	}
}

// TestOpenAPIBillingExchanges drives the billing routes through the validating transport: the Go
// client's requests and every answer, errors included, must match the document.
func TestOpenAPIBillingExchanges(t *testing.T) {
	f := newExchangeFixture(t)
	ctx := t.Context()
	c := f.client(openapitest.NewValidator(t, openAPIDocument, nil).StrictRequests(), f.duka)
	lenient := openapitest.NewValidator(t, openAPIDocument, nil)
	bad := f.client(lenient, f.duka)

	plan, err := c.CreatePlan(ctx, paygate.PlanRequest{Code: "gold-monthly", Name: "Gold", Amount: "15000", CurrencyCode: "TZS", Interval: "month"}, "plan-1")
	if err != nil {
		t.Fatalf("create plan: %v", err)
	}
	if plan.Amount != "15000.00" || plan.IntervalCount != 1 || !slices.Equal(plan.Dunning.RetryAfterDays, []int{1, 3, 5}) ||
		plan.Dunning.MaxFailures != 4 || plan.ChargingWindow != (paygate.PlanChargingWindow{Start: "08:00", End: "20:00", TimeZone: "Africa/Dar_es_Salaam"}) {
		t.Errorf("plan: %+v", plan)
	}
	resp, err := c.Do(ctx, http.MethodPost, "/api/v1/billing/plans", paygate.PlanRequest{Code: "gold-monthly", Name: "Gold", Amount: "15000",
		CurrencyCode: "TZS", Interval: "month"}, http.Header{"Idempotency-Key": {"plan-1"}})
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("plan replay: %v %+v", err, resp)
	}
	if _, err := bad.CreatePlan(ctx, paygate.PlanRequest{Code: "gold-monthly", Name: "Gold 2", Amount: "20000", CurrencyCode: "TZS", Interval: "month"}, ""); !isAPIError(err, 409, LabelDuplicatePlanCode) {
		t.Errorf("duplicate code: %v", err)
	}
	if _, err := c.CreatePlan(ctx, paygate.PlanRequest{Code: "daily", Name: "Daily", Amount: "500", CurrencyCode: "TZS", Interval: "day",
		IntervalCount: 2, Description: "Every other day"}, ""); err != nil {
		t.Errorf("second plan: %v", err)
	}
	if got, err := c.GetPlan(ctx, "gold-monthly"); err != nil || got.Code != "gold-monthly" {
		t.Errorf("get plan: %+v %v", got, err)
	}
	if list, err := c.ListPlans(ctx, paygate.BillingListOptions{}); err != nil || list.Pagination.Total != 2 {
		t.Errorf("list plans: %+v %v", list, err)
	}
	if _, err := bad.GetPlan(ctx, "silver"); !isAPIError(err, 404, LabelNotFound) {
		t.Errorf("missing plan: %v", err)
	}

	sub, err := c.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: "gold-monthly", CustomerPhone: "0712 345 678",
		TermsShown: "TZS 15,000 a month.\n", WebhookURL: "https://shop.example/billing"}, "sub-1")
	if err != nil {
		t.Fatalf("create subscription: %v", err)
	}
	if !strings.HasPrefix(sub.ID, "sub_") || sub.Status != "pending" || sub.CustomerPhone != "+255*******78" || sub.Consent.TermsShown != "TZS 15,000 a month.\n" ||
		sub.Consent.TermsSHA256 != billing.TermsSHA256("TZS 15,000 a month.\n") || sub.Consent.ClientIP != "127.0.0.1" ||
		sub.Consent.RecordedBy.BusinessID != f.duka.MerchantKey || sub.Consent.PlanAmount != "15000.00" || sub.CurrentPeriod != nil {
		t.Errorf("subscription: %+v", sub)
	}
	resp, err = c.Do(ctx, http.MethodPost, "/api/v1/billing/subscriptions", paygate.SubscriptionRequest{PlanCode: "gold-monthly", CustomerPhone: "0712 345 678",
		TermsShown: "TZS 15,000 a month.\n", WebhookURL: "https://shop.example/billing"}, http.Header{"Idempotency-Key": {"sub-1"}})
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(resp.Body), sub.ID) {
		t.Errorf("subscription replay: %v %+v", err, resp)
	}
	if _, err := bad.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: "daily", CustomerPhone: "0712345678", TermsShown: "x"}, "sub-1"); !isAPIError(err, 409, LabelIdempotencyKeyReused) {
		t.Errorf("reused key: %v", err)
	}
	if got, err := c.GetSubscription(ctx, sub.ID); err != nil || got.ID != sub.ID {
		t.Errorf("get subscription: %+v %v", got, err)
	}
	for _, opts := range []paygate.BillingListOptions{{}, {Status: "pending"}, {PlanCode: "gold-monthly", Limit: 1}, {Status: "active"}} {
		if _, err := c.ListSubscriptions(ctx, opts); err != nil {
			t.Errorf("list subscriptions %+v: %v", opts, err)
		}
	}
	advanced, err := c.AdvanceTestClock(ctx, sub.ID, 86400)
	if err != nil || advanced.TestClockOffsetSeconds != 86400 {
		t.Errorf("advance: %+v %v", advanced, err)
	}
	if _, err := bad.AdvanceTestClock(ctx, sub.ID, 0); !isAPIError(err, 422, LabelValidationFailed) {
		t.Errorf("advance by 0: %v", err)
	}
	if _, err := f.client(lenient, f.live).AdvanceTestClock(ctx, sub.ID, 60); !isAPIError(err, 404, LabelNotFound) {
		t.Errorf("advance in production: %v", err)
	}
	cancelled, err := c.CancelSubscription(ctx, sub.ID, true)
	if err != nil || !cancelled.CancelAtPeriodEnd {
		t.Errorf("cancel at period end: %+v %v", cancelled, err)
	}
	resp, err = c.Do(ctx, http.MethodPost, "/api/v1/billing/subscriptions/"+sub.ID+"/cancel", nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("cancel without a body: %v %+v", err, resp)
	}
	if _, err := bad.GetSubscription(ctx, "sub_"+strings.Repeat("a", 24)); !isAPIError(err, 404, LabelNotFound) {
		t.Errorf("missing subscription: %v", err)
	}
	if _, err := bad.CancelSubscription(ctx, "sub-nope", false); !isAPIError(err, 404, LabelNotFound) {
		t.Errorf("cancel a malformed id: %v", err)
	}

	// Invoices, as the billing controller writes them.
	name, _ := paygatev1.SubscriptionNameFromAPIID(sub.ID)
	start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for period := int32(1); period <= 2; period++ {
		inv := &paygatev1.Invoice{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: paygatev1.InvoiceName(name, period),
				Labels: map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox", paygatev1.LabelSubscription: name}},
			Spec: paygatev1.InvoiceSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
				SubscriptionRef: paygatev1.SubscriptionReference{Name: name}, PlanCode: "gold-monthly", Period: period,
				PeriodStart: metav1.NewTime(start.AddDate(0, int(period-1), 0)), PeriodEnd: metav1.NewTime(start.AddDate(0, int(period), 0)),
				Amount: "15000.00", Currency: "TZS"},
		}
		if period == 1 {
			paid := metav1.NewMicroTime(start.Add(4 * time.Second))
			inv.Status = paygatev1.InvoiceStatus{Phase: paygatev1.InvoicePaid, AttemptCount: 1, Payments: []string{"trx-7hq2mxk4d3bz5nwa6fpc2ryu"},
				PaidAt: &paid, PaidPayment: "trx-7hq2mxk4d3bz5nwa6fpc2ryu"}
		}
		if err := f.k8s.Create(ctx, inv); err != nil {
			t.Fatal(err)
		}
	}
	invoices, err := c.ListInvoices(ctx, paygate.BillingListOptions{Subscription: sub.ID})
	if err != nil || len(invoices.Data) != 2 || invoices.Data[0].Period != 2 || invoices.Data[0].Status != "open" || invoices.Data[1].PaidTrxID == nil {
		t.Errorf("invoices: %+v %v", invoices, err)
	}
	for _, opts := range []paygate.BillingListOptions{{}, {Status: "paid"}, {Status: "void", Limit: 5, Offset: 1}} {
		if _, err := c.ListInvoices(ctx, opts); err != nil {
			t.Errorf("list invoices %+v: %v", opts, err)
		}
	}
	if _, err := bad.ListInvoices(ctx, paygate.BillingListOptions{Subscription: "sub_" + strings.Repeat("a", 24)}); !isAPIError(err, 404, LabelNotFound) {
		t.Errorf("invoices of a missing subscription: %v", err)
	}
	if _, err := bad.ListInvoices(ctx, paygate.BillingListOptions{Subscription: "inv-1"}); !isAPIError(err, 422, LabelValidationFailed) {
		t.Errorf("invoices of a malformed subscription id: %v", err)
	}
	if _, err := bad.ListInvoices(ctx, paygate.BillingListOptions{Status: "overdue"}); !isAPIError(err, 422, LabelValidationFailed) {
		t.Errorf("invoices with an unknown status: %v", err)
	}
	// Another environment sees none of it.
	live := f.client(lenient, f.live)
	if _, err := live.GetSubscription(ctx, sub.ID); !isAPIError(err, 404, LabelNotFound) {
		t.Errorf("the sandbox subscription from production: %v", err)
	}
	if list, err := live.ListInvoices(ctx, paygate.BillingListOptions{}); err != nil || len(list.Data) != 0 {
		t.Errorf("invoices from production: %+v %v", list, err)
	}
	var stored paygatev1.Subscription
	if err := f.k8s.Get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Spec.Cancel != paygatev1.CancelImmediately || stored.ClockOffsetSeconds() != 86400 || stored.Spec.CustomerPhone != "+255712345678" {
		t.Errorf("stored subscription: %+v", stored.Spec)
	}
}

func isAPIError(err error, status int, label string) bool {
	e, ok := err.(*paygate.Error)
	return ok && e.StatusCode == status && e.Label == label
}

// clearStoredResponses takes the fixture back to the moment before the first request with each
// Idempotency-Key stored its answer, as if it had then ended without one (released its key): a
// retry then runs the create again.
func (f *exchangeFixture) clearStoredResponses(t *testing.T) {
	t.Helper()
	clearStoredAnswers(t, f.k8s)
}

// clearStoredAnswers forgets every IdempotencyKey's stored answer and releases the key.
func clearStoredAnswers(t testing.TB, k8s client.Client) {
	t.Helper()
	var keys paygatev1.IdempotencyKeyList
	if err := k8s.List(context.Background(), &keys); err != nil {
		t.Fatal(err)
	}
	for i := range keys.Items {
		keys.Items[i].Spec.Response = nil
		metav1.SetMetaDataAnnotation(&keys.Items[i].ObjectMeta, annotationClaimReleased, "true")
		if err := k8s.Update(context.Background(), &keys.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBillingRetryWhileTheFirstIsInFlight: a request that repeats an Idempotency-Key after the
// first created its plan or subscription but ended before it stored its answer meets the object
// the first made: it answers with it (same plan, same subscription id and consent), never 409
// DUPLICATE_PLAN_CODE and never a second subscription. (A retry while the first is still running
// waits for it: TestRetryWaitsForTheRequestHoldingItsKey.)
func TestBillingRetryWhileTheFirstIsInFlight(t *testing.T) {
	f := newExchangeFixture(t)
	ctx := t.Context()
	c := f.client(openapitest.NewValidator(t, openAPIDocument, nil), f.duka)
	planReq := paygate.PlanRequest{Code: "gold-monthly", Name: "Gold", Amount: "15000", CurrencyCode: "TZS", Interval: "month"}
	if _, err := c.CreatePlan(ctx, planReq, "plan-1"); err != nil {
		t.Fatal(err)
	}
	subReq := paygate.SubscriptionRequest{PlanCode: "gold-monthly", CustomerPhone: "0712345678", TermsShown: "TZS 15,000 a month."}
	first, err := c.CreateSubscription(ctx, subReq, "sub-1")
	if err != nil {
		t.Fatal(err)
	}
	f.clearStoredResponses(t)

	if plan, err := c.CreatePlan(ctx, planReq, "plan-1"); err != nil || plan.Code != "gold-monthly" {
		t.Errorf("the plan retry: %+v, %v", plan, err)
	}
	again, err := c.CreateSubscription(ctx, subReq, "sub-1")
	if err != nil {
		t.Fatalf("the subscription retry: %v", err)
	}
	if again.ID != first.ID || again.Consent != first.Consent {
		t.Errorf("the retry answered %+v, the first %+v", again, first)
	}
	if plans, subs := f.billingObjects(t); plans != 1 || subs != 1 {
		t.Errorf("%d plans and %d subscriptions, want 1 and 1", plans, subs)
	}
	// Without the key, the same code is a duplicate.
	if _, err := c.CreatePlan(ctx, planReq, "plan-2"); !isAPIError(err, 409, LabelDuplicatePlanCode) {
		t.Errorf("another key for the same code: %v", err)
	}
}

// TestSubscriptionIdempotencyKeyExpires: after 24 hours an Idempotency-Key is forgotten
// (docs/api.md, Idempotency), so it subscribes the customer again instead of answering with the
// old subscription.
func TestSubscriptionIdempotencyKeyExpires(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	f := newExchangeFixture(t, func(o *Options) { o.Clock, o.Writer = clk, uidWriter{o.Writer} })
	c := paygate.New(f.srv.URL, f.duka)
	c.Now = clk.Now
	ctx := t.Context()
	if _, err := c.CreatePlan(ctx, paygate.PlanRequest{Code: "daily", Name: "Daily", Amount: "500", CurrencyCode: "TZS", Interval: "day"}, ""); err != nil {
		t.Fatal(err)
	}
	req := paygate.SubscriptionRequest{PlanCode: "daily", CustomerPhone: "0712345678", TermsShown: "TZS 500 a day."}
	first, err := c.CreateSubscription(ctx, req, "signup")
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(25 * time.Hour)
	second, err := c.CreateSubscription(ctx, req, "signup")
	if err != nil {
		t.Fatalf("the key after 24 hours: %v", err)
	}
	if second.ID == first.ID || second.Consent.RecordedAt == first.Consent.RecordedAt {
		t.Errorf("the key after 24 hours answered %+v, the first subscription was %s", second, first.ID)
	}
	if _, subs := f.billingObjects(t); subs != 2 {
		t.Errorf("%d subscriptions, want 2", subs)
	}
}

// uidWriter gives every object it creates a fresh UID, as the Kubernetes API server does (the
// fake client leaves it empty): a subscription's id derives from its key record's UID.
type uidWriter struct{ client.Writer }

func (w uidWriter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if obj.GetUID() == "" {
		obj.SetUID(types.UID(uuid.NewString()))
	}
	return w.Writer.Create(ctx, obj, opts...)
}

// TestABadStoredBillingAmountIsAServerError: a plan or invoice amount the currency cannot hold
// (written with kubectl) is never shown rounded: reads answer SERVER_ERROR, and nobody can
// subscribe to such a plan.
func TestABadStoredBillingAmountIsAServerError(t *testing.T) {
	f := newExchangeFixture(t)
	ctx := t.Context()
	plan := &paygatev1.BillingPlan{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "duka.sandbox.odd",
			Labels: map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox"}},
		Spec: paygatev1.BillingPlanSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Code: "odd", Name: "Odd", Amount: "1500.555", Currency: "TZS", Interval: paygatev1.IntervalMonth, IntervalCount: 1},
	}
	if err := f.k8s.Create(ctx, plan); err != nil {
		t.Fatal(err)
	}
	c := paygate.New(f.srv.URL, f.duka)
	for what, call := range map[string]func() error{
		"get":  func() error { _, err := c.GetPlan(ctx, "odd"); return err },
		"list": func() error { _, err := c.ListPlans(ctx, paygate.BillingListOptions{}); return err },
	} {
		if err := call(); !isAPIError(err, http.StatusInternalServerError, LabelServerError) {
			t.Errorf("%s: %v, want a 500 %s", what, err, LabelServerError)
		}
	}
	_, err := c.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: "odd", CustomerPhone: "0712345678", TermsShown: "Odd."}, "")
	if e, ok := err.(*paygate.Error); !ok || e.StatusCode != 422 || len(e.Errors["plan_code"]) == 0 {
		t.Errorf("subscribing to the odd plan: %v", err)
	}
	if _, subs := f.billingObjects(t); subs != 0 {
		t.Errorf("%d subscriptions, want none", subs)
	}
}
