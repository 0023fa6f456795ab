// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package paygate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// Recurring billing (docs/api.md, Billing): plans, subscriptions with the customer's recorded
// consent, and the invoices the billing controller opens and charges with USSD prompts.

// PlanRequest is the body of POST /api/v1/billing/plans. Amount is a decimal string sent as a
// JSON number ("15000", "15000.50"); IntervalCount 0 is left out and means 1.
type PlanRequest struct {
	Code          string      `json:"code"`
	Name          string      `json:"name"`
	Amount        json.Number `json:"amount"`
	CurrencyCode  string      `json:"currency_code"`
	Interval      string      `json:"interval"`
	IntervalCount int         `json:"interval_count,omitempty"`
	Description   string      `json:"description,omitempty"`
}

// Plan is a billing plan record (docs/api.md, The plan record).
type Plan struct {
	Code           string             `json:"code"`
	Name           string             `json:"name"`
	Description    string             `json:"description"`
	Amount         json.Number        `json:"amount"`
	Currency       string             `json:"currency"`
	Interval       string             `json:"interval"` // day, week, month, year
	IntervalCount  int                `json:"interval_count"`
	Dunning        PlanDunning        `json:"dunning"`
	ChargingWindow PlanChargingWindow `json:"charging_window"`
	// SubscriptionCount is how many of the plan's subscriptions are not cancelled, as the billing
	// controller last counted them.
	SubscriptionCount int    `json:"subscription_count"`
	Environment       string `json:"environment"`
	CreatedAt         string `json:"created_at"`
}

// PlanDunning is when a plan's failed charges are retried and when a subscription is suspended.
type PlanDunning struct {
	RetryAfterDays []int `json:"retry_after_days"`
	MaxFailures    int   `json:"max_failures"`
}

// PlanChargingWindow is the local time of day in which scheduled charges prompt the customer.
type PlanChargingWindow struct {
	Start    string `json:"start"`
	End      string `json:"end"`
	TimeZone string `json:"time_zone"`
}

// PlanList is a page of plans, newest first.
type PlanList struct {
	Data       []Plan     `json:"data"`
	Pagination Pagination `json:"pagination"`
}

// SubscriptionRequest is the body of POST /api/v1/billing/subscriptions. TermsShown is stored
// verbatim in the consent record; WebhookURL is optional.
type SubscriptionRequest struct {
	PlanCode      string `json:"plan_code"`
	CustomerPhone string `json:"customer_phone"`
	TermsShown    string `json:"terms_shown"`
	WebhookURL    string `json:"webhook_url,omitempty"`
}

// Subscription is a subscription record (docs/api.md, The subscription record). Its times are on
// the subscription's clock (real time plus TestClockOffsetSeconds); the nullable ones are nil
// until they happen.
type Subscription struct {
	ID                     string      `json:"id"`     // sub_<24 characters>
	Status                 string      `json:"status"` // pending, active, past_due, suspended, cancelled
	PlanCode               string      `json:"plan_code"`
	CustomerPhone          string      `json:"customer_phone"` // masked
	Amount                 json.Number `json:"amount"`
	Currency               string      `json:"currency"`
	Interval               string      `json:"interval"`
	IntervalCount          int         `json:"interval_count"`
	WebhookURL             string      `json:"webhook_url,omitempty"`
	CurrentPeriod          *int        `json:"current_period"`
	CurrentPeriodStart     *string     `json:"current_period_start"`
	CurrentPeriodEnd       *string     `json:"current_period_end"`
	LatestInvoice          *string     `json:"latest_invoice"`
	NextChargeAt           *string     `json:"next_charge_at"`
	ConsecutiveFailures    int         `json:"consecutive_failures"`
	ConfirmedAt            *string     `json:"confirmed_at"`
	CancelAtPeriodEnd      bool        `json:"cancel_at_period_end"`
	CancelledAt            *string     `json:"cancelled_at"`
	SuspendedAt            *string     `json:"suspended_at"`
	TestClockOffsetSeconds int64       `json:"test_clock_offset_seconds"`
	Consent                Consent     `json:"consent"`
	Environment            string      `json:"environment"`
	CreatedAt              string      `json:"created_at"`
}

// Consent is the customer's consent as Paygate recorded it when the subscription was created.
// It never changes.
type Consent struct {
	TermsShown        string          `json:"terms_shown"`  // verbatim
	TermsSHA256       string          `json:"terms_sha256"` // lower-case hex SHA-256 of TermsShown's bytes
	RecordedAt        string          `json:"recorded_at"`
	ClientIP          string          `json:"client_ip"`
	UserAgent         string          `json:"user_agent"`
	PlanAmount        json.Number     `json:"plan_amount"`
	PlanCurrency      string          `json:"plan_currency"`
	PlanInterval      string          `json:"plan_interval"`
	PlanIntervalCount int             `json:"plan_interval_count"`
	RecordedBy        ConsentRecorder `json:"recorded_by"`
}

// ConsentRecorder is which API credentials recorded a consent: the business ID (never a key or
// secret) and its environment.
type ConsentRecorder struct {
	BusinessID  string `json:"business_id"`
	Environment string `json:"environment"`
}

// SubscriptionList is a page of subscriptions, newest first.
type SubscriptionList struct {
	Data       []Subscription `json:"data"`
	Pagination Pagination     `json:"pagination"`
}

// Invoice is an invoice record (docs/api.md, The invoice record): what one period of a
// subscription costs and how its charges went. Its times, but CreatedAt, are on the
// subscription's clock.
type Invoice struct {
	ID            string      `json:"id"`           // inv-<subscription id>-<period>
	Subscription  string      `json:"subscription"` // sub_<id>
	PlanCode      string      `json:"plan_code"`
	Period        int         `json:"period"`
	Status        string      `json:"status"` // open, paid, payment_failed, void
	Amount        json.Number `json:"amount"`
	Currency      string      `json:"currency"`
	PeriodStart   string      `json:"period_start"`
	PeriodEnd     string      `json:"period_end"`
	Attempts      int         `json:"attempts"`
	Payments      []string    `json:"payments"` // trx_ids of the newest charges, oldest first
	FailureReason string      `json:"failure_reason,omitempty"`
	NextAttemptAt *string     `json:"next_attempt_at"`
	PaidAt        *string     `json:"paid_at"`
	PaidTrxID     *string     `json:"paid_trx_id"`
	VoidedAt      *string     `json:"voided_at"`
	Environment   string      `json:"environment"`
	CreatedAt     string      `json:"created_at"`
}

// InvoiceList is a page of invoices, newest first.
type InvoiceList struct {
	Data       []Invoice  `json:"data"`
	Pagination Pagination `json:"pagination"`
}

// BillingListOptions filter and page the billing lists. Status applies to subscriptions and
// invoices, PlanCode to subscriptions, Subscription (sub_<id>) to invoices.
type BillingListOptions struct {
	Limit, Offset int
	Status        string
	PlanCode      string
	Subscription  string
}

func (o BillingListOptions) query(path string) string {
	return listPath(path, o.Limit, o.Offset, "status", o.Status, "plan_code", o.PlanCode, "subscription", o.Subscription)
}

// CreatePlan creates a billing plan. Its code is unique per business and environment: a second
// plan with the code is 409 DUPLICATE_PLAN_CODE.
func (c *Client) CreatePlan(ctx context.Context, req PlanRequest, idempotencyKey string) (*Plan, error) {
	var out struct {
		Data Plan `json:"data"`
	}
	if err := c.call(ctx, http.MethodPost, "/api/v1/billing/plans", req, idempotencyHeader(idempotencyKey), &out); err != nil {
		return nil, err
	}
	return &out.Data, nil
}

// GetPlan reads one plan by its code.
func (c *Client) GetPlan(ctx context.Context, code string) (*Plan, error) {
	var out struct {
		Data Plan `json:"data"`
	}
	if err := c.call(ctx, http.MethodGet, "/api/v1/billing/plans/"+url.PathEscape(code), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out.Data, nil
}

// ListPlans lists the business's plans in the client's environment (Limit and Offset apply).
func (c *Client) ListPlans(ctx context.Context, opts BillingListOptions) (*PlanList, error) {
	out := &PlanList{}
	return out, c.call(ctx, http.MethodGet, opts.query("/api/v1/billing/plans"), nil, nil, out)
}

// CreateSubscription subscribes a customer to a plan, recording their consent; Paygate then
// sends the first USSD prompt. With an idempotencyKey, a retry returns the same subscription and
// never prompts twice.
func (c *Client) CreateSubscription(ctx context.Context, req SubscriptionRequest, idempotencyKey string) (*Subscription, error) {
	var out struct {
		Data Subscription `json:"data"`
	}
	if err := c.call(ctx, http.MethodPost, "/api/v1/billing/subscriptions", req, idempotencyHeader(idempotencyKey), &out); err != nil {
		return nil, err
	}
	return &out.Data, nil
}

// GetSubscription reads one subscription by its id (sub_<id>).
func (c *Client) GetSubscription(ctx context.Context, id string) (*Subscription, error) {
	return c.subscriptionCall(ctx, http.MethodGet, id, "", nil)
}

// ListSubscriptions lists the business's subscriptions in the client's environment; Status and
// PlanCode filter.
func (c *Client) ListSubscriptions(ctx context.Context, opts BillingListOptions) (*SubscriptionList, error) {
	out := &SubscriptionList{}
	return out, c.call(ctx, http.MethodGet, opts.query("/api/v1/billing/subscriptions"), nil, nil, out)
}

// CancelSubscription cancels a subscription now, or, with atPeriodEnd, when its paid period ends.
// Cancelling a cancelled subscription changes nothing.
func (c *Client) CancelSubscription(ctx context.Context, id string, atPeriodEnd bool) (*Subscription, error) {
	return c.subscriptionCall(ctx, http.MethodPost, id, "/cancel", map[string]bool{"at_period_end": atPeriodEnd})
}

// AdvanceTestClock moves a sandbox subscription's clock seconds forward (production: 404).
func (c *Client) AdvanceTestClock(ctx context.Context, id string, seconds int64) (*Subscription, error) {
	return c.subscriptionCall(ctx, http.MethodPost, id, "/advance", map[string]int64{"seconds": seconds})
}

func (c *Client) subscriptionCall(ctx context.Context, method, id, action string, body any) (*Subscription, error) {
	var out struct {
		Data Subscription `json:"data"`
	}
	if err := c.call(ctx, method, "/api/v1/billing/subscriptions/"+url.PathEscape(id)+action, body, nil, &out); err != nil {
		return nil, err
	}
	return &out.Data, nil
}

// ListInvoices lists the business's invoices in the client's environment; Subscription (sub_<id>)
// and Status filter.
func (c *Client) ListInvoices(ctx context.Context, opts BillingListOptions) (*InvoiceList, error) {
	out := &InvoiceList{}
	return out, c.call(ctx, http.MethodGet, opts.query("/api/v1/billing/invoices"), nil, nil, out)
}
