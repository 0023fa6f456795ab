// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package events builds webhook events as WebhookDelivery objects (docs/webhooks.md). An event's
// object name and its evt_ id both derive from the source object's UID and the event type
// (internal/names), so repeated reconciles and restarts can only ever produce the one event of an
// occurrence. The payload is built once and stored: every attempt sends, and signs, the same
// bytes.
package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/names"
	"github.com/paygate/paygate/internal/phone"
	"github.com/paygate/paygate/pkg/paygate"
)

// APIVersion is the date-form version webhook payloads carry (docs/webhooks-receiver.md).
const APIVersion = "2026-11-01"

// Event types (docs/webhooks-receiver.md), as merchants see them in pkg/paygate.
const (
	PaymentCompleted      = paygate.EventPaymentCompleted
	PaymentFailed         = paygate.EventPaymentFailed
	SubscriptionCreated   = paygate.EventSubscriptionCreated
	SubscriptionCancelled = paygate.EventSubscriptionCancelled
	SubscriptionSuspended = paygate.EventSubscriptionSuspended
	InvoiceCreated        = paygate.EventInvoiceCreated
	InvoicePaid           = paygate.EventInvoicePaid
	InvoicePaymentFailed  = paygate.EventInvoicePaymentFailed
	PayoutCompleted       = paygate.EventPayoutCompleted
	PayoutFailed          = paygate.EventPayoutFailed
	RefundCompleted       = paygate.EventRefundCompleted
	RefundFailed          = paygate.EventRefundFailed
	WebhookTest           = paygate.EventWebhookTest
)

// DeliveryName is the WebhookDelivery name of an occurrence: "whd-" and 24 characters of
// lower-case base32 (names.Derive).
func DeliveryName(sourceUID, eventType string) string {
	return "whd-" + names.Derive(names.PurposeEvent, sourceUID, eventType)
}

// EventID is the evt_ id of an occurrence: "evt_" and the same 24 characters as its
// DeliveryName.
func EventID(sourceUID, eventType string) string {
	return "evt_" + names.Derive(names.PurposeEvent, sourceUID, eventType)
}

// DeliveryNames are the names the WebhookDelivery of an occurrence may have: DeliveryName, then
// the name versions before names.Derive gave it ("whd-" and 32 hex digits). An occurrence whose
// event an earlier version created keeps that event, under its old name and with its old evt_ id:
// whoever checks whether an occurrence has its event looks for each of these names, so an
// upgrade never sends a merchant an event twice with two ids.
func DeliveryNames(sourceUID, eventType string) []string {
	sum := sha256.Sum256([]byte("paygate.dev/event\x00" + sourceUID + "\x00" + eventType))
	return []string{DeliveryName(sourceUID, eventType), "whd-" + hex.EncodeToString(sum[:16])}
}

// Envelope is the body of every webhook.
type Envelope struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	APIVersion string `json:"api_version"`
	CreatedAt  string `json:"created_at"`
	Data       any    `json:"data"`
}

// Source describes the object an event is about.
type Source struct {
	Kind      string
	Object    metav1.Object
	Merchant  string
	Env       paygatev1.Environment
	TargetURL string
	// Occurrence tells apart occurrences of one event type on one object (a subscription's
	// suspension after each resume, an invoice's failed charges): when set, the event's name and
	// id derive from it too (OccurrenceDeliveryName). Empty for events an object has once.
	Occurrence string
	// Format is the merchant's webhook format when the event is born, and SigningKey the key of
	// a LegacyIPN delivery's X-Signature. Every delivery of a LegacyIPN merchant carries
	// X-Signature; its payment events also have the legacy body (RawPayload).
	Format     paygatev1.WebhookFormat
	SigningKey paygatev1.WebhookSigningKey
}

// RawPayload is a body built elsewhere (a legacy IPN body): NewDelivery stores it as it is,
// instead of wrapping data in the event envelope.
type RawPayload string

// NewDelivery builds the WebhookDelivery of an occurrence, with its payload.
func NewDelivery(src Source, eventType string, data any, now time.Time) (*paygatev1.WebhookDelivery, error) {
	uid := string(src.Object.GetUID())
	id, name := EventID(uid, eventType), DeliveryName(uid, eventType)
	if src.Occurrence != "" {
		id, name = OccurrenceEventID(uid, eventType, src.Occurrence), OccurrenceDeliveryName(uid, eventType, src.Occurrence)
	}
	env := Envelope{
		ID: id, Type: eventType, APIVersion: APIVersion,
		CreatedAt: now.UTC().Format("2006-01-02T15:04:05.000000-07:00"), Data: data,
	}
	var buf bytes.Buffer
	if raw, ok := data.(RawPayload); ok {
		buf.WriteString(string(raw))
	} else {
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(env); err != nil {
			return nil, fmt.Errorf("encoding the %s payload: %w", eventType, err)
		}
	}
	var legacyKey paygatev1.WebhookSigningKey
	if src.Format == paygatev1.WebhookFormatLegacyIPN {
		legacyKey = src.SigningKey
		if legacyKey == "" {
			legacyKey = paygatev1.SigningKeyWebhookSecret
		}
	}
	return &paygatev1.WebhookDelivery{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: src.Object.GetNamespace(),
			Name:      name,
			Labels:    map[string]string{paygatev1.LabelMerchant: src.Merchant, paygatev1.LabelEnvironment: string(src.Env)},
		},
		Spec: paygatev1.WebhookDeliverySpec{
			EventID: env.ID, EventType: eventType,
			MerchantRef: paygatev1.MerchantReference{Name: src.Merchant}, Environment: src.Env,
			Source: paygatev1.EventSource{Kind: src.Kind, Name: src.Object.GetName(), UID: uid},
			URL:    src.TargetURL, Payload: string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))),
			Format: src.Format, LegacySigningKey: legacyKey,
		},
	}, nil
}

// Money and PaymentData are the wire types merchants decode with pkg/paygate: the server builds
// the very structs the client reads, so the two cannot drift.
type (
	Money       = paygate.Money
	PaymentData = paygate.PaymentEventData
)

// PaymentEventType is payment.completed for a settled payment and payment.failed for a failed one.
func PaymentEventType(p *paygatev1.Payment) (string, bool) {
	switch p.Status.Phase {
	case paygatev1.PaymentSuccess:
		return PaymentCompleted, true
	case paygatev1.PaymentFailed:
		return PaymentFailed, true
	}
	return "", false
}

// NewPaymentData builds the data of a terminal payment's event. A settled payment reports
// status "completed"; a failed one "failed" with the failure code in reason. Fees and net are
// Payment.Settlement, the rule the payment and verification records share (0 and 0 on failure);
// remark is the one the records carry (SANDBOX_TRANSACTION, SIMULATED_PRODUCTION). An amount
// that cannot be rendered exactly (money.JSONAmount) is an error and no data: the caller sends no
// event rather than one with a wrong amount.
func NewPaymentData(p *paygatev1.Payment) (PaymentData, error) {
	var errs []error
	m := func(what string, d paygatev1.Decimal) Money {
		v, err := money.JSONAmount(string(d), string(p.Spec.Currency))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s of payment %s: %w", what, p.Name, err))
		}
		return Money{Value: v, Currency: string(p.Spec.Currency)}
	}
	d := PaymentData{TrxID: p.Name, MerchantRef: p.Spec.MerchantReference, Environment: string(p.Spec.Environment),
		Remark: p.MerchantRemark()}
	d.Amount = m("amount", p.Spec.Amount)
	d.Settlement.Gross = d.Amount
	fee, net := p.Settlement()
	d.Settlement.Fees, d.Settlement.Net = m("fee", fee), m("net amount", net)
	if p.Status.Phase == paygatev1.PaymentSuccess {
		d.Status = "completed"
	} else {
		d.Status, d.Reason = "failed", p.Status.Reason
	}
	if len(errs) > 0 {
		return PaymentData{}, errors.Join(errs...)
	}
	d.Customer.Name, d.Customer.Email = p.Spec.Customer.Name, p.Spec.Customer.Email
	d.Customer.Phone = string(p.Spec.Customer.Phone)
	if d.Customer.Phone == "" && p.Spec.PushRequest != nil {
		d.Customer.Phone = string(p.Spec.PushRequest.Phone)
	}
	return d, nil
}

// PayoutEventType is payout.completed for a payout that reached success and payout.failed
// otherwise; only terminal payouts have events.
func PayoutEventType(p *paygatev1.Payout) string {
	if p.Status.Phase == paygatev1.PayoutSuccess {
		return PayoutCompleted
	}
	return PayoutFailed
}

// NewPayoutData builds the data of a terminal payout's event: the payout record merchants read
// with GET /api/v1/payouts/{id} (pkg/paygate.Payout), destination masked. An amount that cannot
// be rendered exactly is an error and no data.
func NewPayoutData(p *paygatev1.Payout) (paygate.Payout, error) {
	var errs []error
	m := func(what string, d paygatev1.Decimal) json.Number {
		v, err := money.JSONAmount(string(d), string(p.Spec.Currency))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s of payout %s: %w", what, p.Name, err))
		}
		return v
	}
	updated := p.Spec.CreatedAt.Time
	if p.Status.UpdatedAt != nil && p.Status.UpdatedAt.After(updated) {
		updated = p.Status.UpdatedAt.Time
	}
	d := paygate.Payout{
		ID: p.Name, Status: string(p.Phase()), Reason: p.Status.Reason, Remark: p.MerchantRemark(),
		Amount: m("amount", p.Spec.Amount), Fee: m("fee", p.Spec.Fee), PayableAmount: m("payable amount", p.Spec.PayableAmount),
		Currency: string(p.Spec.Currency), Destination: phone.Mask(string(p.Spec.Destination)),
		Environment: string(p.Spec.Environment),
		CreatedAt:   FormatTime(p.Spec.CreatedAt.Time), UpdatedAt: FormatTime(updated),
	}
	if len(errs) > 0 {
		return paygate.Payout{}, errors.Join(errs...)
	}
	return d, nil
}

// RefundEventType is refund.completed for a refund that reached success and refund.failed
// otherwise; only ended refunds have events.
func RefundEventType(r *paygatev1.Refund) string {
	if r.Status.Phase == paygatev1.RefundSuccess {
		return RefundCompleted
	}
	return RefundFailed
}

// NewRefundData builds the refund record merchants read with GET /api/v1/refunds/{id}
// (pkg/paygate.Refund), which is also the data of its events: updated_at is the latest of
// spec.createdAt and status.updatedAt, remark the merchant's remark, reason only on a failed
// refund. An amount that cannot be rendered exactly is an error and no data.
func NewRefundData(r *paygatev1.Refund) (paygate.Refund, error) {
	amount, err := money.JSONAmount(string(r.Spec.Amount), string(r.Spec.Currency))
	if err != nil {
		return paygate.Refund{}, fmt.Errorf("amount of refund %s: %w", r.Name, err)
	}
	updated := r.Spec.CreatedAt.Time
	if r.Status.UpdatedAt != nil && r.Status.UpdatedAt.After(updated) {
		updated = r.Status.UpdatedAt.Time
	}
	d := paygate.Refund{
		ID: r.Name, Status: string(r.Phase()), Remark: r.MerchantRemark(),
		Amount: amount, Currency: string(r.Spec.Currency),
		TrxID: r.Spec.Payment.TrxID, Environment: string(r.Spec.Environment),
		CreatedAt: FormatTime(r.Spec.CreatedAt.Time), UpdatedAt: FormatTime(updated),
	}
	if r.Phase() == paygatev1.RefundFailed {
		d.Reason = r.Status.Reason
	}
	return d, nil
}

// FormatTime is the API's timestamp form: ISO 8601 UTC with microseconds and Z.
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }
