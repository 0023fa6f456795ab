// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package events

import (
	"errors"
	"fmt"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/names"
)

// The data of subscription.* and invoice.* events (docs/billing.md, Events). Times are on the
// subscription's clock, in the plan's time zone, ISO 8601 with the zone's offset and
// microseconds (BillingTime).

// OccurrenceDeliveryName is the WebhookDelivery name of an occurrence that one object can have
// more than once with the same event type: a subscription is suspended once per resume, an
// invoice's charges fail one by one. occurrence tells them apart (the resume sequence, the
// charge payment's UID). It never equals a DeliveryName: the derivation has one more part.
func OccurrenceDeliveryName(sourceUID, eventType, occurrence string) string {
	return "whd-" + names.Derive(names.PurposeEvent, sourceUID, eventType, occurrence)
}

// OccurrenceEventID is the evt_ id of such an occurrence: the same 24 characters as its
// OccurrenceDeliveryName.
func OccurrenceEventID(sourceUID, eventType, occurrence string) string {
	return "evt_" + names.Derive(names.PurposeEvent, sourceUID, eventType, occurrence)
}

// BillingTimeLayout renders the times of billing events: local time of the plan's zone with its
// offset, to the microsecond ("2026-03-01T21:00:00.000000+03:00").
const BillingTimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// BillingTime renders t in loc (UTC when loc is nil) with BillingTimeLayout.
func BillingTime(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format(BillingTimeLayout)
}

// NullableTime is a time in an event's data that is null when it is empty (confirmed_at before
// the first paid charge, next_attempt_at once the subscription is suspended).
type NullableTime string

// MarshalJSON writes the time, or null when it is empty.
func (t NullableTime) MarshalJSON() ([]byte, error) {
	if t == "" {
		return []byte("null"), nil
	}
	return fmt.Appendf(nil, "%q", string(t)), nil
}

// BillingPeriod is a billing period in an event: {number, start, end}.
type BillingPeriod struct {
	Number int32  `json:"number"`
	Start  string `json:"start"`
	End    string `json:"end"`
}

// ConsentSummary is the part of the consent record events carry; the terms themselves are in the
// API's subscription record.
type ConsentSummary struct {
	TermsSHA256 string `json:"terms_sha256"`
	RecordedAt  string `json:"recorded_at"`
}

// SubscriptionData is the data of subscription.created, subscription.cancelled and
// subscription.suspended.
type SubscriptionData struct {
	SubscriptionID      string         `json:"subscription_id"`
	PlanCode            string         `json:"plan_code"`
	Status              string         `json:"status"`
	CustomerPhone       string         `json:"customer_phone"`
	Amount              Money          `json:"amount"`
	Interval            string         `json:"interval"`
	IntervalCount       int32          `json:"interval_count"`
	Consent             ConsentSummary `json:"consent"`
	CurrentPeriod       *BillingPeriod `json:"current_period,omitempty"`
	ConfirmedAt         NullableTime   `json:"confirmed_at"`
	ConsecutiveFailures int32          `json:"consecutive_failures"`
	// CancelledAt: subscription.cancelled only.
	CancelledAt string `json:"cancelled_at,omitempty"`
	// SuspendedAt, LatestInvoiceID and Reason (the last failure's code): subscription.suspended
	// only.
	SuspendedAt     string `json:"suspended_at,omitempty"`
	LatestInvoiceID string `json:"latest_invoice_id,omitempty"`
	Reason          string `json:"reason,omitempty"`
	Environment     string `json:"environment"`
}

// InvoiceSettlement is how a paid invoice's charge settled, as in payment events.
type InvoiceSettlement struct {
	Gross Money `json:"gross"`
	Fees  Money `json:"fees"`
	Net   Money `json:"net"`
}

// InvoiceData is the data of invoice.created, invoice.paid and invoice.payment_failed.
type InvoiceData struct {
	InvoiceID      string        `json:"invoice_id"`
	SubscriptionID string        `json:"subscription_id"`
	PlanCode       string        `json:"plan_code"`
	Period         BillingPeriod `json:"period"`
	Amount         Money         `json:"amount"`
	Status         string        `json:"status"`
	AttemptCount   int32         `json:"attempt_count"`
	// TrxID is the charge payment of invoice.paid and invoice.payment_failed.
	TrxID string `json:"trx_id,omitempty"`
	// PaidAt and Settlement: invoice.paid only.
	PaidAt     string             `json:"paid_at,omitempty"`
	Settlement *InvoiceSettlement `json:"settlement,omitempty"`
	// Reason and NextAttemptAt (null once the subscription is suspended): invoice.payment_failed
	// only.
	Reason        string        `json:"reason,omitempty"`
	NextAttemptAt *NullableTime `json:"next_attempt_at,omitempty"`
	Environment   string        `json:"environment"`
}

// SubscriptionEvent says which subscription event to build, and from what.
type SubscriptionEvent struct {
	Type         string // SubscriptionCreated, SubscriptionCancelled or SubscriptionSuspended
	Subscription *paygatev1.Subscription
	// Location is the plan's time zone (UTC when nil).
	Location *time.Location
	// Reason is the last failure's code, for subscription.suspended.
	Reason string
}

// NewSubscriptionData builds the data of a subscription event. Status is the phase after the
// event: pending for subscription.created (the subscription as it was created: no period, not
// confirmed, no failures), cancelled and suspended for the others. An amount that cannot be
// rendered exactly is an error and no data.
func NewSubscriptionData(ev SubscriptionEvent) (SubscriptionData, error) {
	s, loc := ev.Subscription, ev.Location
	amount, err := money.JSONAmount(string(s.Spec.Consent.PlanAmount), string(s.Spec.Consent.PlanCurrency))
	if err != nil {
		return SubscriptionData{}, fmt.Errorf("amount of subscription %s: %w", s.Name, err)
	}
	d := SubscriptionData{
		SubscriptionID: s.APIID(), PlanCode: s.Spec.PlanCode, CustomerPhone: string(s.Spec.CustomerPhone),
		Amount:   Money{Value: amount, Currency: string(s.Spec.Consent.PlanCurrency)},
		Interval: string(s.Spec.Consent.PlanInterval), IntervalCount: s.Spec.Consent.PlanIntervalCount,
		Consent: ConsentSummary{TermsSHA256: s.Spec.Consent.TermsSHA256,
			RecordedAt: BillingTime(s.Spec.Consent.RecordedAt.Time, loc)},
		Environment: string(s.Spec.Environment),
	}
	switch ev.Type {
	case SubscriptionCreated:
		d.Status = string(paygatev1.SubscriptionPending)
		return d, nil
	case SubscriptionCancelled:
		d.Status = string(paygatev1.SubscriptionCancelled)
		if s.Status.CancelledAt != nil {
			d.CancelledAt = BillingTime(s.Status.CancelledAt.Time, loc)
		}
	case SubscriptionSuspended:
		d.Status = string(paygatev1.SubscriptionSuspended)
		if s.Status.SuspendedAt != nil {
			d.SuspendedAt = BillingTime(s.Status.SuspendedAt.Time, loc)
		}
		d.LatestInvoiceID, d.Reason = s.Status.LatestInvoice, ev.Reason
	default:
		return SubscriptionData{}, fmt.Errorf("%q is not a subscription event", ev.Type)
	}
	if st := s.Status; st.CurrentPeriod > 0 && st.CurrentPeriodStart != nil && st.CurrentPeriodEnd != nil {
		d.CurrentPeriod = &BillingPeriod{Number: st.CurrentPeriod,
			Start: BillingTime(st.CurrentPeriodStart.Time, loc), End: BillingTime(st.CurrentPeriodEnd.Time, loc)}
	}
	if s.Status.ConfirmedAt != nil {
		d.ConfirmedAt = NullableTime(BillingTime(s.Status.ConfirmedAt.Time, loc))
	}
	d.ConsecutiveFailures = s.Status.ConsecutiveFailures
	return d, nil
}

// InvoiceEvent says which invoice event to build, and from what.
type InvoiceEvent struct {
	Type    string // InvoiceCreated, InvoicePaid or InvoicePaymentFailed
	Invoice *paygatev1.Invoice
	// Charge is the charge payment that paid the invoice or failed (invoice.paid and
	// invoice.payment_failed).
	Charge *paygatev1.Payment
	// Location is the plan's time zone (UTC when nil).
	Location *time.Location
}

// NewInvoiceData builds the data of an invoice event from the invoice's stored status. Status is
// open for invoice.created, paid for invoice.paid and payment_failed for invoice.payment_failed.
// An amount that cannot be rendered exactly is an error and no data.
func NewInvoiceData(ev InvoiceEvent) (InvoiceData, error) {
	inv, loc := ev.Invoice, ev.Location
	var errs []error
	m := func(what string, d paygatev1.Decimal) Money {
		v, err := money.JSONAmount(string(d), string(inv.Spec.Currency))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s of invoice %s: %w", what, inv.Name, err))
		}
		return Money{Value: v, Currency: string(inv.Spec.Currency)}
	}
	d := InvoiceData{
		InvoiceID: inv.Name, SubscriptionID: paygatev1.SubscriptionAPIID(inv.Spec.SubscriptionRef.Name), PlanCode: inv.Spec.PlanCode,
		Period: BillingPeriod{Number: inv.Spec.Period,
			Start: BillingTime(inv.Spec.PeriodStart.Time, loc), End: BillingTime(inv.Spec.PeriodEnd.Time, loc)},
		Amount: m("amount", inv.Spec.Amount), AttemptCount: inv.Status.AttemptCount,
		Environment: string(inv.Spec.Environment),
	}
	if ev.Type != InvoiceCreated && ev.Charge == nil {
		return InvoiceData{}, fmt.Errorf("%s of invoice %s needs its charge payment", ev.Type, inv.Name)
	}
	switch ev.Type {
	case InvoiceCreated:
		d.Status = string(paygatev1.InvoiceOpen)
	case InvoicePaid:
		d.Status, d.TrxID = string(paygatev1.InvoicePaid), ev.Charge.Name
		if inv.Status.PaidAt != nil {
			d.PaidAt = BillingTime(inv.Status.PaidAt.Time, loc)
		}
		fee, net := ev.Charge.Settlement()
		d.Settlement = &InvoiceSettlement{Gross: d.Amount, Fees: m("fee", fee), Net: m("net amount", net)}
	case InvoicePaymentFailed:
		d.Status, d.TrxID, d.Reason = string(paygatev1.InvoicePaymentFailed), ev.Charge.Name, ev.Charge.Status.Reason
		next := NullableTime("")
		if inv.Status.NextAttemptAt != nil {
			next = NullableTime(BillingTime(inv.Status.NextAttemptAt.Time, loc))
		}
		d.NextAttemptAt = &next
	default:
		return InvoiceData{}, fmt.Errorf("%q is not an invoice event", ev.Type)
	}
	if len(errs) > 0 {
		return InvoiceData{}, errors.Join(errs...)
	}
	return d, nil
}
