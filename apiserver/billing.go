// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/billing"
	"github.com/paygate/paygate/internal/eligibility"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/phone"
	"github.com/paygate/paygate/pkg/paygate"
)

// Recurring billing (docs/api.md, Billing; the design is docs/billing.md). The apiserver records
// plans and subscriptions (with the customer's consent) and changes a subscription's spec for
// cancel and the test clock; the billing controller opens the invoices and charges them.

// LabelDuplicatePlanCode answers a plan create whose code the business already uses in the
// environment.
const LabelDuplicatePlanCode = "DUPLICATE_PLAN_CODE"

// maxPlanObjectName is the longest BillingPlan name a Subscription can reference
// (BillingPlanReference allows 120 characters).
const maxPlanObjectName = 120

var (
	errPlanNotFound         = &APIError{Status: http.StatusNotFound, Label: LabelNotFound, Message: "Plan not found."}
	errSubscriptionNotFound = &APIError{Status: http.StatusNotFound, Label: LabelNotFound, Message: "Subscription not found."}
	errTestClockSandbox     = &APIError{Status: http.StatusNotFound, Label: LabelNotFound,
		Message: "The test clock exists in sandbox only: production subscriptions follow the real clock."}

	subscriptionStatuses = []string{string(paygatev1.SubscriptionPending), string(paygatev1.SubscriptionActive),
		string(paygatev1.SubscriptionPastDue), string(paygatev1.SubscriptionSuspended), string(paygatev1.SubscriptionCancelled)}
	invoiceStatuses = []string{string(paygatev1.InvoiceOpen), string(paygatev1.InvoicePaid),
		string(paygatev1.InvoicePaymentFailed), string(paygatev1.InvoiceVoid)}
)

// addFieldError adds a billing.FieldError to v; it reports whether err was one.
func addFieldError(v validation, err error) bool {
	var fe *billing.FieldError
	if !errors.As(err, &fe) {
		return false
	}
	v.add(fe.Field, "%s", fe.Message)
	return true
}

// currencyError answers a currency the business cannot collect in: not enabled
// (INVALID_CURRENCY) or without an active wallet (WALLET_UNAVAILABLE), as for payments.
func currencyError(err error) *APIError {
	label := LabelInvalidCurrency
	if errors.Is(err, eligibility.ErrWalletUnavailable) {
		label = LabelWalletUnavailable
	}
	return &APIError{Status: http.StatusUnprocessableEntity, Label: label, Message: err.Error()}
}

// ---- Plans ----

func (s *Server) createPlan(w http.ResponseWriter, r *http.Request) {
	s.idempotent(w, r, s.doCreatePlan)
}

// parsePlanRequest reads and checks a plan create body (docs/api.md, POST /api/v1/billing/plans).
// It returns the messages per field, and whether the amount is a number out of range, which is
// INVALID_AMOUNT rather than Validation failed (as for payments).
func parsePlanRequest(f fields) (*billing.PlanRequest, validation, bool) {
	v := validation{}
	req := &billing.PlanRequest{IntervalCount: 1}
	req.Code, _ = f.str(v, "code")
	req.Name, _ = f.str(v, "name")
	req.Description, _ = f.str(v, "description")
	req.Interval, _ = f.str(v, "interval")
	code, _ := f.str(v, "currency_code")
	switch {
	case code == "" && !v.has("currency_code"):
		v.add("currency_code", "The currency_code field is required.")
	case code != "" && !currencyPattern.MatchString(code):
		v.add("currency_code", "The currency_code must be a 3-letter upper-case ISO 4217 code.")
	}
	cur, known := money.LookupCurrency(code)
	if !known {
		cur = money.Currency{Code: code, Scale: 2} // refused as INVALID_CURRENCY once the body is valid
	}
	req.Currency = cur
	outOfRange := false
	if raw, ok := f["amount"]; !ok {
		v.add("amount", "The amount field is required.")
	} else if a, err := money.ParseJSONNumber(raw); err != nil {
		switch {
		case errors.Is(err, money.ErrNegative):
			outOfRange = true
			v.add("amount", "The amount must be at least %s.", billing.MinimumPlanAmount.StringFixed(2))
		case errors.Is(err, money.ErrTooLarge):
			outOfRange = true
			v.add("amount", "The amount must be at most %s.", billing.MaximumPlanAmount)
		default:
			v.add("amount", "The amount must be a positive decimal number.")
		}
	} else {
		req.Amount = a
	}
	if raw, ok := f["interval_count"]; ok {
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil {
			v.add("interval_count", "The interval_count must be a whole number.")
		} else {
			req.IntervalCount = n
		}
	}
	for _, fe := range req.Validate() {
		if v.has(fe.Field) || (fe.Field == "amount" && v.has("currency_code") && !errors.Is(fe, billing.ErrAmountOutOfRange)) {
			continue // the type error already reported, or a scale check against a bad currency
		}
		if errors.Is(fe, billing.ErrAmountOutOfRange) {
			outOfRange = true
		}
		v.add(fe.Field, "%s", fe.Message)
	}
	return req, v, outOfRange
}

// doCreatePlan validates the body, checks the currency is one the business collects in, and
// records the BillingPlan. Its name is <merchant>.<environment>.<code>, so the Kubernetes API
// server itself refuses a second plan with the code, across every replica.
func (s *Server) doCreatePlan(ctx context.Context, idemKey string) response {
	c := callerFrom(ctx)
	f, apiErr := decodeObject(c.body)
	if apiErr != nil {
		return errorResponse(apiErr)
	}
	req, v, outOfRange := parsePlanRequest(f)
	name := paygatev1.BillingPlanName(c.merchant.Name, c.env, req.Code)
	if !v.has("code") && len(name) > maxPlanObjectName {
		v.add("code", "The code must be at most %d characters for this business.", maxPlanObjectName-len(name)+len(req.Code))
	}
	if len(v) > 0 {
		e := validationError(v)
		if outOfRange {
			e.Label, e.Message = LabelInvalidAmount, v["amount"][0]
		}
		return errorResponse(e)
	}
	if err := eligibility.CheckCurrency(c.merchant, paygatev1.CurrencyCode(req.Currency.Code)); err != nil {
		return errorResponse(currencyError(err))
	}
	plan := &paygatev1.BillingPlan{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: c.merchant.Namespace,
			Labels: map[string]string{paygatev1.LabelMerchant: c.merchant.Name, paygatev1.LabelEnvironment: string(c.env)},
		},
		Spec: req.Spec(c.merchant.Name, c.env),
	}
	if idemKey != "" {
		plan.Annotations = map[string]string{annotationIdempotencyKey: idemKey}
	}
	if err := s.opts.Writer.Create(ctx, plan); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return s.serverError("Creating a billing plan", err)
		}
		existing, err := s.plan(ctx, c, req.Code, true)
		if err != nil {
			return s.serverError("Reading a billing plan", err)
		}
		if existing == nil || idemKey == "" || existing.Annotations[annotationIdempotencyKey] != idemKey {
			return errorResponse(&APIError{Status: http.StatusConflict, Label: LabelDuplicatePlanCode,
				Message: "A plan with this code already exists.",
				Errors:  map[string][]string{"code": {"The code " + req.Code + " is already used by another plan of this business in " + string(c.env) + "."}}})
		}
		plan = existing // a concurrent request with the same Idempotency-Key created it
	}
	s.opts.Log.Info("Billing plan created", "merchant", c.merchant.Name, "environment", c.env, "plan", plan.Name,
		"amount", plan.Spec.Amount, "currency", plan.Spec.Currency, "interval", plan.Spec.Interval, "intervalCount", plan.Spec.IntervalCount)
	rec, err := planRecord(plan)
	if err != nil {
		return s.serverError("Rendering a billing plan", fmt.Errorf("plan %s: %w", plan.Name, err))
	}
	return jsonResponse(http.StatusOK, map[string]any{"status": "success", "data": rec})
}

// plan reads the caller's plan with code: from the cache, falling back to a live read (a plan
// created a moment ago), or live only when asked. A code that is not a valid plan code, a plan
// being deleted, and (by its name) another merchant's or environment's plan are not found.
func (s *Server) plan(ctx context.Context, c *caller, code string, live bool) (*paygatev1.BillingPlan, error) {
	if billing.CheckPlanCode("code", code) != nil {
		return nil, nil
	}
	p := &paygatev1.BillingPlan{}
	found, err := s.read(ctx, c, paygatev1.BillingPlanName(c.merchant.Name, c.env, code), p, live)
	if err != nil || !found {
		return nil, err
	}
	if p.Spec.Code != code || p.DeletionTimestamp != nil {
		return nil, nil
	}
	return p, nil
}

func (s *Server) getPlan(w http.ResponseWriter, r *http.Request) {
	p, err := s.plan(r.Context(), callerFrom(r.Context()), r.PathValue("code"), false)
	answerRecord(s, w, "billing plan", p, err, errPlanNotFound, func(p *paygatev1.BillingPlan) (any, error) { return dataBody(planRecord(p)) })
}

func (s *Server) listPlans(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	v := validation{}
	limit, offset := pageParams(v, r)
	if len(v) > 0 {
		writeError(w, validationError(v))
		return
	}
	var list paygatev1.BillingPlanList
	if err := s.listOwn(r.Context(), c, &list); err != nil {
		s.serverError("Listing billing plans", err).write(w)
		return
	}
	items := slices.DeleteFunc(list.Items, func(p paygatev1.BillingPlan) bool {
		return p.Spec.MerchantRef.Name != c.merchant.Name || p.Spec.Environment != c.env
	})
	// Newest first; the code breaks ties so pages are stable.
	items = sortedByPointer(items, func(a, b *paygatev1.BillingPlan) int {
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Spec.Code, b.Spec.Code)
	})
	writePage(s, w, "billing plan", items, limit, offset, planRecord)
}

// ---- Subscriptions ----

// subscriptionRequest is a checked subscription create body.
type subscriptionRequest struct {
	planCode      string
	rawPhone      string // customer_phone as sent: subscriberPhone reads it for the plan's currency
	customerPhone string // E.164, once read
	termsShown    string // verbatim
	webhookURL    string
}

// parseSubscriptionRequest reads and checks a subscription create body (docs/api.md,
// POST /api/v1/billing/subscriptions): every field's problem at once.
func (s *Server) parseSubscriptionRequest(f fields, c *caller) (*subscriptionRequest, validation) {
	v := validation{}
	req := &subscriptionRequest{}
	if code, _ := f.str(v, "plan_code"); !v.has("plan_code") {
		addFieldError(v, billing.CheckPlanCode("plan_code", code))
		req.planCode = code
	}
	// The number is read in the country of the plan's currency once the plan is known
	// (subscriberPhone); here it must be present.
	if raw, _ := f.str(v, "customer_phone"); !v.has("customer_phone") {
		if strings.TrimSpace(raw) == "" {
			v.add("customer_phone", "The customer_phone field is required.")
		}
		req.rawPhone = raw
	}
	if terms, _ := f.str(v, "terms_shown"); !v.has("terms_shown") {
		addFieldError(v, billing.CheckTermsShown(terms))
		req.termsShown = terms
	}
	if u, ok := f.str(v, "webhook_url"); ok && u != "" {
		s.checkURL(v, c, "webhook_url", u, c.merchant.Spec.AllowedWebhookDomains)
		// The Subscription's own rules: a lower-case scheme and a request URI.
		if _, err := url.ParseRequestURI(u); !v.has("webhook_url") && (err != nil || !(strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://"))) {
			v.add("webhook_url", "The webhook_url must be an absolute http or https URL.")
		}
		req.webhookURL = u
	}
	return req, v
}

// subscriberPhone normalizes a subscription's customer_phone for the plan's currency: every charge
// is a USSD prompt to a mobile-money account of the currency's country, so a TZS plan takes
// Tanzanian numbers (+255, or 07xx read in Tanzania), a KES plan Kenyan ones (+254, or 07xx read
// in Kenya). It returns the E.164 number, or the message for customer_phone. A currency without a
// phone region (internal/money) takes mobile numbers in international form, as payments do.
func subscriberPhone(raw, currency string) (e164, msg string) {
	if currency == "TZS" {
		// The Tanzanian rules and messages of the Subscription's own validation.
		e164, err := billing.NormalizeCustomerPhone(raw)
		var fe *billing.FieldError
		if errors.As(err, &fe) {
			return "", fe.Message
		}
		if err != nil {
			return "", "The customer_phone must be a Tanzanian mobile number, such as +255712345678 or 0712345678."
		}
		return e164, ""
	}
	e164, region, err := phone.NormalizeInRegionOfCurrency(raw, currency)
	switch {
	case err == nil:
		return e164, ""
	case errors.Is(err, phone.ErrNotAMobileNumber):
		return "", "The customer_phone must be a mobile number that can receive a USSD prompt, not a fixed line or a service number."
	case region == "":
		return "", "The customer_phone must be a mobile number in international form, such as +255712345678."
	}
	country := phone.CountryAdjective(region)
	if errors.Is(err, phone.ErrOtherRegion) {
		return "", fmt.Sprintf("The customer_phone must be a %s mobile number (%s): subscriptions in %s are charged to %s mobile-money accounts.",
			country, phone.CallingCode(region), currency, country)
	}
	international, national := phone.ExampleMobile(region)
	return "", fmt.Sprintf("The customer_phone must be a %s mobile number, such as %s or %s.", country, international, national)
}

func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) {
	s.replayProof(w, r, func(ctx context.Context, idemKey string) response { return s.doCreateSubscription(ctx, r, idemKey) }, s.keptSubscriptionResponse)
}

// keptSubscriptionResponse finds the answer kept on the subscription a claim of key created
// (keptLookup): its id derives from the claim's record (billing.SubscriptionIDForRequest).
func (s *Server) keptSubscriptionResponse(ctx context.Context, _ string, rec *paygatev1.IdempotencyKey) (response, bool, error) {
	c := callerFrom(ctx)
	id := billing.SubscriptionIDForRequest(string(c.merchant.UID), c.env, string(rec.UID))
	sub, err := s.subscription(ctx, c, paygatev1.SubscriptionAPIID(paygatev1.SubscriptionName(id)), false)
	if err != nil || sub == nil {
		return response{}, false, err
	}
	resp, _ := keptResponse(sub) // created before answers were kept there: status 0
	return resp, true, nil
}

// doCreateSubscription checks the body and the plan, records the customer's consent and creates
// the Subscription; the billing controller opens the first invoice and sends the first USSD
// prompt (the apiserver records intent, controllers act).
func (s *Server) doCreateSubscription(ctx context.Context, r *http.Request, idemKey string) response {
	c := callerFrom(ctx)
	f, apiErr := decodeObject(c.body)
	if apiErr != nil {
		return errorResponse(apiErr)
	}
	req, v := s.parseSubscriptionRequest(f, c)
	if len(v) > 0 {
		return errorResponse(validationError(v))
	}
	plan, err := s.plan(ctx, c, req.planCode, false)
	if err != nil {
		return s.serverError("Reading a billing plan", err)
	}
	if plan == nil {
		return errorResponse(validationError(map[string][]string{"plan_code": {
			"No plan with the code " + req.planCode + " exists for this business in " + string(c.env) + "."}}))
	}
	if _, err := billing.PlanSchedule(&plan.Spec); err != nil {
		s.opts.Log.Info("Subscription refused: the plan's configuration is invalid", "merchant", c.merchant.Name, "plan", plan.Name, "error", err.Error())
		return errorResponse(validationError(map[string][]string{"plan_code": {
			"The plan " + req.planCode + " cannot take subscriptions: its configuration is invalid (see its Ready condition)."}}))
	}
	if _, err := money.JSONAmount(string(plan.Spec.Amount), string(plan.Spec.Currency)); err != nil {
		s.opts.Log.Info("Subscription refused: the plan's amount is invalid", "merchant", c.merchant.Name, "plan", plan.Name, "error", err.Error())
		return errorResponse(validationError(map[string][]string{"plan_code": {
			"The plan " + req.planCode + " cannot take subscriptions: its amount does not fit its currency."}}))
	}
	e164, msg := subscriberPhone(req.rawPhone, string(plan.Spec.Currency))
	if msg != "" {
		return errorResponse(validationError(map[string][]string{"customer_phone": {msg}}))
	}
	req.customerPhone = e164
	if err := eligibility.CheckCurrency(c.merchant, plan.Spec.Currency); err != nil {
		return errorResponse(currencyError(err))
	}

	// With an Idempotency-Key the id derives from the UID of the key's record, which every
	// request sharing the claim reads alike: every replica names the subscription alike and the
	// API server lets one create it, so one subscription and one first prompt. A key claimed
	// afresh after it expired has a new record, so a new subscription. Without a key the id is
	// random.
	var id string
	if rec := idempotencyRecordFrom(ctx); idemKey != "" && rec != nil {
		id = billing.SubscriptionIDForRequest(string(c.merchant.UID), c.env, string(rec.UID))
	} else if id, err = billing.NewSubscriptionID(); err != nil {
		return s.serverError("Making a subscription id", err)
	}
	consent, err := billing.BuildConsent(billing.ConsentInput{
		TermsShown: req.termsShown, RecordedAt: s.opts.Clock.Now(),
		ClientIP: s.ips.ClientIP(r).String(), UserAgent: r.UserAgent(),
		Plan: &plan.Spec, BusinessID: businessID(c), Environment: c.env,
	})
	if err != nil {
		return s.serverError("Recording a consent", err)
	}
	sub := &paygatev1.Subscription{
		ObjectMeta: metav1.ObjectMeta{
			Name: paygatev1.SubscriptionName(id), Namespace: c.merchant.Namespace,
			Labels: map[string]string{paygatev1.LabelMerchant: c.merchant.Name, paygatev1.LabelEnvironment: string(c.env),
				paygatev1.LabelPlanCode: plan.Spec.Code},
		},
		Spec: paygatev1.SubscriptionSpec{
			MerchantRef: paygatev1.MerchantReference{Name: c.merchant.Name}, Environment: c.env,
			PlanRef: paygatev1.BillingPlanReference{Name: plan.Name}, PlanCode: plan.Spec.Code,
			CustomerPhone: paygatev1.MobileNumber(req.customerPhone), WebhookURL: req.webhookURL,
			Consent: consent,
		},
	}
	answer := s.subscriptionCreated(sub)
	if idemKey != "" {
		sub.Annotations = map[string]string{annotationIdempotencyKey: idemKey}
		if idempotencyRecordFrom(ctx) != nil {
			answer = keepResponse(sub, answer)
		}
	}
	if err := s.opts.Writer.Create(ctx, sub); err != nil {
		if !apierrors.IsAlreadyExists(err) || idemKey == "" {
			return s.serverError("Creating a subscription", err)
		}
		// A concurrent request with the same Idempotency-Key (and body: the key's record refuses
		// another) created it first: answer with that subscription and its consent.
		existing, err := s.subscription(ctx, c, paygatev1.SubscriptionAPIID(sub.Name), true)
		if err != nil || existing == nil || existing.Annotations[annotationIdempotencyKey] != idemKey {
			return s.serverError("Reading a subscription after a concurrent create", errors.Join(err, errors.New("subscription not found")))
		}
		if kept, ok := keptResponse(existing); ok {
			return kept
		}
		return s.subscriptionCreated(existing)
	}
	s.opts.Log.Info("Subscription created", "merchant", c.merchant.Name, "environment", c.env, "subscription", sub.Name,
		"plan", plan.Name, "customerPhone", phone.Mask(string(sub.Spec.CustomerPhone)), "termsSHA256", sub.Spec.Consent.TermsSHA256)
	return answer
}

// subscriptionCreated is the answer of a create that recorded sub (or found it recorded).
func (s *Server) subscriptionCreated(sub *paygatev1.Subscription) response {
	rec, err := subscriptionRecord(sub)
	if err != nil {
		return s.serverError("Rendering a subscription", fmt.Errorf("subscription %s: %w", sub.Name, err))
	}
	return jsonResponse(http.StatusOK, map[string]any{"status": "success", "data": rec, "id": rec.ID})
}

// businessID is the business ID the caller authenticated with: the merchant's of the environment
// (authentication compared the header with it).
func businessID(c *caller) string {
	if c.env == paygatev1.EnvironmentProduction {
		return c.merchant.Status.Production.BusinessID
	}
	return c.merchant.Status.Sandbox.BusinessID
}

// subscription reads the caller's subscription with API id apiID (sub_<id>), from the cache with
// a live fallback, or live only when asked. An id of another form, and another merchant's or
// environment's subscription, are not found.
func (s *Server) subscription(ctx context.Context, c *caller, apiID string, live bool) (*paygatev1.Subscription, error) {
	name, ok := paygatev1.SubscriptionNameFromAPIID(apiID)
	if !ok {
		return nil, nil
	}
	sub := &paygatev1.Subscription{}
	if found, err := s.read(ctx, c, name, sub, live); err != nil || !found {
		return nil, err
	}
	return sub, nil
}

func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request) {
	sub, err := s.subscription(r.Context(), callerFrom(r.Context()), r.PathValue("id"), false)
	s.writeSubscription(w, sub, err)
}

// writeSubscription answers with the subscription's record (after a read, a cancel or an advance).
func (s *Server) writeSubscription(w http.ResponseWriter, sub *paygatev1.Subscription, err error) {
	answerRecord(s, w, "subscription", sub, err, errSubscriptionNotFound, func(sub *paygatev1.Subscription) (any, error) {
		return dataBody(subscriptionRecord(sub))
	})
}

func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	q := r.URL.Query()
	v := validation{}
	limit, offset := pageParams(v, r)
	status := q.Get("status")
	if status != "" && !slices.Contains(subscriptionStatuses, status) {
		v.add("status", "The status must be pending, active, past_due, suspended or cancelled.")
	}
	planCode := q.Get("plan_code")
	if planCode != "" {
		addFieldError(v, billing.CheckPlanCode("plan_code", planCode))
	}
	if len(v) > 0 {
		writeError(w, validationError(v))
		return
	}
	if x := s.lists.subscriptionIndex(); x.ready() { // docs/performance.md, List indexes
		facet, key := facetOf(status, planCode)
		var page []paygatev1.Subscription
		total := 0
		live := x.live(callerBucket(c), facet, key, nil)
		live.read(nil, func(seq liveSeq[paygatev1.Subscription]) { page, total = pageOf(seq, offset, limit), seq.Len() })
		s.observeList("subscriptions", live.stats())
		writeItems(s, w, "subscription", page, limit, offset, total, subscriptionRecord)
		return
	}
	var list paygatev1.SubscriptionList
	if err := s.listOwn(r.Context(), c, &list); err != nil {
		s.serverError("Listing subscriptions", err).write(w)
		return
	}
	scanned := len(list.Items)
	items := slices.DeleteFunc(list.Items, func(sub paygatev1.Subscription) bool {
		return sub.Spec.MerchantRef.Name != c.merchant.Name || sub.Spec.Environment != c.env ||
			(status != "" && string(sub.Phase()) != status) || (planCode != "" && sub.Spec.PlanCode != planCode)
	})
	items = sortedByPointer(items, compareSubscriptions)
	s.observeList("subscriptions", &listStats{live: scanned})
	writePage(s, w, "subscription", items, limit, offset, subscriptionRecord)
}

// compareSubscriptions is the subscription list's order: newest first (by the consent's time);
// the id breaks ties so pages are stable.
func compareSubscriptions(a, b *paygatev1.Subscription) int {
	if c := b.Spec.Consent.RecordedAt.Compare(a.Spec.Consent.RecordedAt.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// cancelSubscription sets spec.cancel (docs/billing.md, Cancelling): immediately, or atPeriodEnd
// when the body says {"at_period_end": true}. Cancelling is idempotent: a subscription already
// cancelled, or already set to be cancelled that way or sooner, is answered as it is.
func (s *Server) cancelSubscription(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	f, apiErr := decodeObject(c.body)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	atPeriodEnd := false
	if raw, ok := f["at_period_end"]; ok && json.Unmarshal(raw, &atPeriodEnd) != nil {
		writeError(w, validationError(map[string][]string{"at_period_end": {"The at_period_end field must be true or false."}}))
		return
	}
	want := paygatev1.CancelImmediately
	if atPeriodEnd {
		want = paygatev1.CancelAtPeriodEnd
	}
	s.changeSubscription(w, r, "cancel", func(sub *paygatev1.Subscription) (bool, *APIError) {
		if sub.Phase() == paygatev1.SubscriptionCancelled || sub.Spec.Cancel == paygatev1.CancelImmediately || sub.Spec.Cancel == want {
			return false, nil
		}
		sub.Spec.Cancel = want
		return true, nil
	})
}

// advanceTestClock moves a sandbox subscription's clock forward (docs/billing.md, Test clock):
// it raises spec.testClock.offsetSeconds by the body's seconds. In production the route does not
// exist (404).
func (s *Server) advanceTestClock(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	if c.env != paygatev1.EnvironmentSandbox {
		writeError(w, errTestClockSandbox)
		return
	}
	f, apiErr := decodeObject(c.body)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	var seconds int64
	if raw, ok := f["seconds"]; !ok {
		writeError(w, validationError(map[string][]string{"seconds": {"The seconds field is required."}}))
		return
	} else if err := json.Unmarshal(raw, &seconds); err != nil {
		writeError(w, validationError(map[string][]string{"seconds": {"The seconds must be a whole number."}}))
		return
	}
	s.changeSubscription(w, r, "advance", func(sub *paygatev1.Subscription) (bool, *APIError) {
		offset, err := billing.AdvanceTestClock(sub.ClockOffsetSeconds(), seconds)
		if err != nil {
			v := validation{}
			addFieldError(v, err)
			return false, validationError(v)
		}
		sub.Spec.TestClock = &paygatev1.TestClock{OffsetSeconds: offset}
		return true, nil
	})
}

// changeSubscription applies change to the live subscription the path names and updates it,
// again on a write conflict (another replica or the controller wrote in between), then answers
// with the subscription. what names the change in logs (cancel, advance); change reports whether
// it changed anything, or refuses.
func (s *Server) changeSubscription(w http.ResponseWriter, r *http.Request, what string, change func(*paygatev1.Subscription) (bool, *APIError)) {
	ctx := r.Context()
	c := callerFrom(ctx)
	var out *paygatev1.Subscription
	var refused *APIError
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sub, err := s.subscription(ctx, c, r.PathValue("id"), true)
		if err != nil {
			return err
		}
		if sub == nil {
			refused = errSubscriptionNotFound
			return nil
		}
		var apiErr *APIError
		changed, apiErr = change(sub)
		if apiErr != nil || !changed {
			out, refused = sub, apiErr
			return nil
		}
		if err := s.opts.Writer.Update(ctx, sub); err != nil {
			return err
		}
		out = sub
		return nil
	})
	switch {
	case err != nil:
		s.serverError("Changing a subscription ("+what+")", err).write(w)
		return
	case refused != nil:
		writeError(w, refused)
		return
	}
	if changed {
		s.opts.Log.Info("Subscription changed", "merchant", c.merchant.Name, "environment", c.env, "subscription", out.Name,
			"change", what, "cancel", out.Spec.Cancel, "clockOffsetSeconds", out.ClockOffsetSeconds())
	}
	s.writeSubscription(w, out, nil)
}

// ---- Invoices ----

func (s *Server) listInvoices(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c := callerFrom(ctx)
	q := r.URL.Query()
	v := validation{}
	limit, offset := pageParams(v, r)
	status := q.Get("status")
	if status != "" && !slices.Contains(invoiceStatuses, status) {
		v.add("status", "The status must be open, paid, payment_failed or void.")
	}
	subID := q.Get("subscription")
	if _, ok := paygatev1.SubscriptionNameFromAPIID(subID); subID != "" && !ok {
		v.add("subscription", "The subscription must be a subscription id: sub_ and 24 characters.")
	}
	if len(v) > 0 {
		writeError(w, validationError(v))
		return
	}
	subName := ""
	if subID != "" {
		sub, err := s.subscription(ctx, c, subID, false)
		if err != nil {
			s.serverError("Reading a subscription", err).write(w)
			return
		}
		if sub == nil {
			writeError(w, errSubscriptionNotFound)
			return
		}
		subName = sub.Name
	}
	k := listKind[paygatev1.Invoice]{
		kind:     archive.KindInvoice,
		uid:      func(inv *paygatev1.Invoice) string { return string(inv.UID) },
		terminal: (*paygatev1.Invoice).Terminal,
		compare:  compareInvoices,
	}
	if status == "" || status == string(paygatev1.InvoicePaid) || status == string(paygatev1.InvoiceVoid) { // archived invoices are paid or void
		k.archived = func(ctx context.Context, limit, offset int) (archive.Page[paygatev1.Invoice], error) {
			return s.opts.Archive.ListInvoices(ctx, archive.InvoiceFilter{Namespace: c.merchant.Namespace, Merchant: c.merchant.Name,
				Environment: c.env, Phase: paygatev1.InvoicePhase(status), Subscription: subName}, limit, offset)
		}
	}
	var live liveItems[paygatev1.Invoice]
	if x := s.lists.invoiceIndex(); x.ready() { // docs/performance.md, List indexes
		facet, key := facetOf(status, subName)
		live = x.live(callerBucket(c), facet, key, func(ctx context.Context) (archive.Page[paygatev1.Invoice], error) {
			return s.opts.Archive.ListInvoices(ctx, archive.InvoiceFilter{Namespace: c.merchant.Namespace, Merchant: c.merchant.Name,
				Environment: c.env}, 1, 0)
		})
	} else {
		var list paygatev1.InvoiceList
		if err := s.listOwn(ctx, c, &list); err != nil {
			s.serverError("Listing invoices", err).write(w)
			return
		}
		scanned := len(list.Items)
		items := slices.DeleteFunc(list.Items, func(inv paygatev1.Invoice) bool {
			return inv.Spec.MerchantRef.Name != c.merchant.Name || inv.Spec.Environment != c.env ||
				(subName != "" && inv.Spec.SubscriptionRef.Name != subName) || (status != "" && string(inv.Phase()) != status)
		})
		live = newSliceLive(k, items, scanned)
	}
	page, total, err := mergedPage(ctx, s, k, live, limit, offset)
	s.observeList("invoices", live.stats())
	if err != nil {
		s.serverError("Listing invoices", err).write(w)
		return
	}
	writeItems(s, w, "invoice", page, limit, offset, total, invoiceRecord)
}

// compareInvoices is the invoice list's order (archive.InvoiceOrder): newest first, then by
// subscription and latest period, then by UID, so pages are stable.
func compareInvoices(a, b *paygatev1.Invoice) int {
	if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
		return c
	}
	if c := strings.Compare(a.Spec.SubscriptionRef.Name, b.Spec.SubscriptionRef.Name); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Spec.Period, a.Spec.Period); c != 0 {
		return c
	}
	return strings.Compare(string(a.UID), string(b.UID))
}

// ---- Lists ----

// listOwn lists the caller's objects of list's kind (its namespace, merchant and environment
// labels) from the cache as the cache holds them, without a deep copy of each: a merchant with
// 10,000 payments made every page copy 10,000 of them. List handlers only filter and sort what it
// returns (sortedByPointer), never modify it; writeItems copies the page it renders.
func (s *Server) listOwn(ctx context.Context, c *caller, list client.ObjectList) error {
	return s.opts.Cache.List(ctx, list, client.InNamespace(c.merchant.Namespace),
		client.MatchingLabels{paygatev1.LabelMerchant: c.merchant.Name, paygatev1.LabelEnvironment: string(c.env)},
		client.UnsafeDisableDeepCopy)
}

// ---- Records ----

// planRecord is the plan as the API shows it (docs/api.md, The plan record). The defaults the
// CRD applies at admission are written out for a plan stored without them.
func planRecord(p *paygatev1.BillingPlan) (paygate.Plan, error) {
	am := amounts{currency: p.Spec.Currency}
	d := p.Spec.Dunning
	retryDays := d.RetryAfterDays
	if len(retryDays) == 0 {
		retryDays = paygatev1.DefaultRetryAfterDays
	}
	maxFailures := d.MaxFailures
	if maxFailures == 0 {
		maxFailures = paygatev1.DefaultMaxFailures
	}
	rec := paygate.Plan{
		Code: p.Spec.Code, Name: p.Spec.Name, Description: p.Spec.Description,
		Amount: am.json(p.Spec.Amount), Currency: string(p.Spec.Currency),
		Interval: string(p.Spec.Interval), IntervalCount: int(max(p.Spec.IntervalCount, 1)),
		Dunning: paygate.PlanDunning{RetryAfterDays: []int{}, MaxFailures: int(maxFailures)},
		ChargingWindow: paygate.PlanChargingWindow{
			Start:    cmpOr(p.Spec.ChargingWindow.Start, paygatev1.DefaultWindowStart),
			End:      cmpOr(p.Spec.ChargingWindow.End, paygatev1.DefaultWindowEnd),
			TimeZone: cmpOr(p.Spec.ChargingWindow.TimeZone, paygatev1.DefaultTimeZone),
		},
		SubscriptionCount: int(p.Status.Subscriptions),
		Environment:       string(p.Spec.Environment),
		CreatedAt:         formatTime(p.CreationTimestamp.Time),
	}
	for _, days := range retryDays {
		rec.Dunning.RetryAfterDays = append(rec.Dunning.RetryAfterDays, int(days))
	}
	return rec, am.err
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// subscriptionRecord is the subscription as the API shows it (docs/api.md, The subscription
// record): the customer's phone masked, the consent whole, times on the subscription's clock.
func subscriptionRecord(sub *paygatev1.Subscription) (paygate.Subscription, error) {
	cons := &sub.Spec.Consent
	am := amounts{currency: cons.PlanCurrency}
	rec := paygate.Subscription{
		ID: sub.APIID(), Status: string(sub.Phase()), PlanCode: sub.Spec.PlanCode,
		CustomerPhone: phone.Mask(string(sub.Spec.CustomerPhone)),
		Amount:        am.json(cons.PlanAmount), Currency: string(cons.PlanCurrency),
		Interval: string(cons.PlanInterval), IntervalCount: int(cons.PlanIntervalCount),
		WebhookURL:             sub.Spec.WebhookURL,
		CurrentPeriodStart:     optTime(sub.Status.CurrentPeriodStart),
		CurrentPeriodEnd:       optTime(sub.Status.CurrentPeriodEnd),
		NextChargeAt:           optTime(sub.Status.NextChargeAt),
		ConsecutiveFailures:    int(sub.Status.ConsecutiveFailures),
		ConfirmedAt:            optMicroTime(sub.Status.ConfirmedAt),
		CancelAtPeriodEnd:      sub.Spec.Cancel == paygatev1.CancelAtPeriodEnd,
		CancelledAt:            optTime(sub.Status.CancelledAt),
		SuspendedAt:            optTime(sub.Status.SuspendedAt),
		TestClockOffsetSeconds: sub.ClockOffsetSeconds(),
		Consent: paygate.Consent{
			TermsShown: cons.TermsShown, TermsSHA256: cons.TermsSHA256, RecordedAt: formatTime(cons.RecordedAt.Time),
			ClientIP: cons.ClientIP, UserAgent: cons.UserAgent,
			PlanAmount: am.json(cons.PlanAmount), PlanCurrency: string(cons.PlanCurrency),
			PlanInterval: string(cons.PlanInterval), PlanIntervalCount: int(cons.PlanIntervalCount),
			RecordedBy: paygate.ConsentRecorder{BusinessID: cons.RecordedBy.BusinessID, Environment: string(cons.RecordedBy.Environment)},
		},
		Environment: string(sub.Spec.Environment),
		CreatedAt:   formatTime(cons.RecordedAt.Time),
	}
	if n := int(sub.Status.CurrentPeriod); n > 0 {
		rec.CurrentPeriod = &n
	}
	if inv := sub.Status.LatestInvoice; inv != "" {
		rec.LatestInvoice = &inv
	}
	return rec, am.err
}

// invoiceRecord is the invoice as the API shows it (docs/api.md, The invoice record).
func invoiceRecord(inv *paygatev1.Invoice) (paygate.Invoice, error) {
	am := amounts{currency: inv.Spec.Currency}
	rec := paygate.Invoice{
		ID: inv.Name, Subscription: paygatev1.SubscriptionAPIID(inv.Spec.SubscriptionRef.Name), PlanCode: inv.Spec.PlanCode,
		Period: int(inv.Spec.Period), Status: string(inv.Phase()),
		Amount: am.json(inv.Spec.Amount), Currency: string(inv.Spec.Currency),
		PeriodStart: formatTime(inv.Spec.PeriodStart.Time), PeriodEnd: formatTime(inv.Spec.PeriodEnd.Time),
		Attempts: int(inv.Status.AttemptCount), Payments: append([]string{}, inv.Status.Payments...),
		FailureReason: inv.Status.LastFailureReason,
		NextAttemptAt: optTime(inv.Status.NextAttemptAt), PaidAt: optMicroTime(inv.Status.PaidAt),
		VoidedAt:    optTime(inv.Status.VoidedAt),
		Environment: string(inv.Spec.Environment),
		CreatedAt:   formatTime(inv.CreationTimestamp.Time),
	}
	if trx := inv.Status.PaidPayment; trx != "" {
		rec.PaidTrxID = &trx
	}
	return rec, am.err
}

func optTime(t *metav1.Time) *string {
	if t == nil || t.IsZero() {
		return nil
	}
	s := formatTime(t.Time)
	return &s
}

func optMicroTime(t *metav1.MicroTime) *string {
	if t == nil || t.IsZero() {
		return nil
	}
	s := formatTime(t.Time)
	return &s
}
