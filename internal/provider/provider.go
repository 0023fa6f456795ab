// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package provider is the mobile-money provider Paygate moves money through: USSD push
// (collection), push status query, disbursement and disbursement status query. Every call
// carries the caller's reference, which is also the idempotency key: the provider performs at
// most one operation per reference, and a status query by reference tells whether an earlier call
// reached it. Implementations: the in-process sandbox simulator (sandbox.go) and the upstream
// HTTP adapter (upstream.go).
package provider

import (
	"context"
	"errors"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Status is the provider's view of an operation.
type Status string

const (
	// StatusPending (upstream: INPROGRESS): accepted, waiting for the customer or the network.
	StatusPending Status = "PENDING"
	// StatusSuccess: money moved.
	StatusSuccess Status = "SUCCESS"
	// StatusFailed: money did not move and will not; Code says why.
	StatusFailed Status = "FAILED"
	// StatusAmbiguous: the provider cannot say yet whether money moved. Resolved only by status
	// queries, never by a new operation.
	StatusAmbiguous Status = "AMBIGUOUS"
)

// Terminal reports whether the status can no longer change.
func (s Status) Terminal() bool { return s == StatusSuccess || s == StatusFailed }

// ErrNotFound is returned by status queries for a reference the provider never received: the
// earlier call did not reach it, so it is safe to make the call (with the same reference).
var ErrNotFound = errors.New("provider: no operation with this reference")

// ErrAnswersByCallback is returned by a status query of a provider whose results arrive only by
// callback to a result URL (Daraja's B2C): the attempt engine's shell then takes the verified
// callback's result recorded on the object (paygatev1.AnnotationProviderResult), or waits for it.
var ErrAnswersByCallback = errors.New("provider: this operation's result arrives only by callback")

// PushRequest asks the customer to approve a collection on their phone.
type PushRequest struct {
	// Reference identifies this attempt; the provider performs one push per reference.
	Reference string
	// Phone is the customer's mobile number, E.164.
	Phone string
	// Amount is a decimal string at the currency's scale; Currency is ISO 4217.
	Amount   string
	Currency string
	// Gateway is the gateway code the money travels through.
	Gateway string
	// Description is shown to the customer where the network allows.
	Description string
	// CallbackURL receives the provider's result (upstream only).
	CallbackURL string
	// StartedAt is when the attempt was recorded (written ahead). Status queries carry it; the
	// sandbox derives its answer from it, an upstream provider from its own records.
	StartedAt time.Time
	// ProviderReference is the provider's own id for the operation, once an answer gave one
	// (Daraja's CheckoutRequestID): status queries carry it for a provider that cannot look an
	// operation up by our reference.
	ProviderReference string
}

// DisbursementRequest sends money to a mobile number (payouts).
type DisbursementRequest struct {
	// Reference identifies the payout; the provider performs one disbursement per reference.
	Reference string
	// Phone is the destination mobile number, E.164.
	Phone string
	// Amount is what reaches Phone (the payable amount), a decimal string at the currency's
	// scale; Currency is ISO 4217.
	Amount   string
	Currency string
	// RequestedAmount is what the merchant's balance is debited (before the payout fee).
	// Providers do not need it; the sandbox chooses its outcome from it (PayoutMagic).
	RequestedAmount string
	Gateway         string
	CallbackURL     string
	// StartedAt is when the attempt was recorded (see PushRequest.StartedAt).
	StartedAt time.Time
	// ProviderReference is the provider's own id for the disbursement, once an answer gave one.
	ProviderReference string
}

// Result is what the provider says about an operation.
type Result struct {
	Status Status
	// ProviderReference is the provider's own id for the operation, once it has one.
	ProviderReference string
	// Code says why a failed operation failed, as the payment domain names it (the failure codes
	// of api/v1alpha1). The sandbox answers with those codes; the upstream protocol uses them on
	// the wire, a code it sends that Paygate does not know is passed through as it is, and a
	// failure it sends without a code is PROVIDER_ERROR (docs/upstream-provider.md).
	Code paygatev1.FailureCode
	// Message is the provider's human text, if any (never shown to customers as is).
	Message string
	// Remark is an annotation the provider attaches (the sandbox marks SANDBOX_TRANSACTION).
	Remark string
}

// Provider moves money. Implementations are safe for concurrent use. An error (other than
// ErrNotFound from a status query) means the outcome is unknown: the caller asks again by
// status query, never by a new push or disbursement. A status query carries the request the
// attempt was recorded with (the operation is identified by its Reference).
type Provider interface {
	// Capabilities says what the attempt engine must know about the provider.
	Capabilities() Capabilities
	Push(ctx context.Context, req PushRequest) (Result, error)
	PushStatus(ctx context.Context, req PushRequest) (Result, error)
	Disburse(ctx context.Context, req DisbursementRequest) (Result, error)
	DisbursementStatus(ctx context.Context, req DisbursementRequest) (Result, error)
}

// Capabilities is what the attempt engine (internal/attempt) must know about a provider.
type Capabilities struct {
	// Deduplicates: the provider performs at most one operation per reference, so a send whose
	// answer was lost may be sent again with the same reference (before its deadline) once a
	// status query says the provider does not have it. A provider that does not de-duplicate
	// (M-Pesa's STK push) never gets a second send of an attempt that may have reached it.
	// Such a provider is asked by our reference, and every answer about an operation carries its
	// provider reference and remark, so the acceptance of a send need not be stored at once
	// (attempt.Decision.Deferrable).
	Deduplicates bool
	// ResultsByCallback: the provider's final answer arrives only by callback to a result URL
	// (Daraja's B2C, transaction status and reversal); status queries, where it has them, confirm.
	ResultsByCallback bool
}

// RefundScope is what refunds a provider can make of a collection.
type RefundScope string

const (
	// RefundsNone: the provider cannot refund; a refund is refused before anything is recorded.
	RefundsNone RefundScope = ""
	// RefundsFull: only the whole amount of a collection, once (Daraja's reversal).
	RefundsFull RefundScope = "Full"
	// RefundsPartial: any amount, in several refunds, up to the collection's amount (pawaPay,
	// the sandbox, the upstream protocol).
	RefundsPartial RefundScope = "Partial"
)

// RefundRequest returns money of one collection to its customer.
type RefundRequest struct {
	// Reference identifies the refund; the provider performs one refund per reference.
	Reference string
	// Payment is the reference of the push attempt that collected the money, PaymentProvider
	// the provider's id for it (pawaPay's depositId, Daraja's CheckoutRequestID) and
	// PaymentReceipt its receipt (the M-Pesa receipt a reversal names), where known.
	Payment, PaymentProvider, PaymentReceipt string
	// PaymentAmount is the collection's amount; Full reports whether Amount is all of it.
	PaymentAmount string
	Full          bool
	// Phone is the customer's number the money goes back to.
	Phone string
	// Amount is a decimal string at the currency's scale; Currency is ISO 4217.
	Amount, Currency string
	Gateway          string
	CallbackURL      string
	// StartedAt is when the attempt was recorded (see PushRequest.StartedAt).
	StartedAt time.Time
	// ProviderReference is the provider's own id for the refund, once an answer gave one.
	ProviderReference string
}

// Refunder is a Provider that can refund collections. A refund goes through the attempt engine
// like a disbursement: written ahead, sent at most once per reference (again only where the
// provider de-duplicates), resolved by RefundStatus.
type Refunder interface {
	// RefundScope says which refunds the provider makes.
	RefundScope() RefundScope
	Refund(ctx context.Context, req RefundRequest) (Result, error)
	RefundStatus(ctx context.Context, req RefundRequest) (Result, error)
}

// RefundScopeOf is p's refund scope: RefundsNone when it is not a Refunder.
func RefundScopeOf(p Provider) RefundScope {
	if r, ok := p.(Refunder); ok {
		return r.RefundScope()
	}
	return RefundsNone
}

// GatewayRefundScope is the refunds a gateway's provider makes for payments in env, read from
// the gateway alone (no call): the simulator, pawaPay and the upstream protocol refund any amount,
// Daraja only a whole payment (a reversal). The apiserver refuses a refund outside it before
// anything is recorded.
func GatewayRefundScope(gw *paygatev1.Gateway, env paygatev1.Environment) RefundScope {
	if env == paygatev1.EnvironmentSandbox && !gw.SandboxToProvider() {
		return RefundsPartial // the simulator
	}
	switch gw.Spec.Provider {
	case paygatev1.ProviderDaraja:
		return RefundsFull
	case paygatev1.ProviderPawapay, paygatev1.ProviderUpstream, paygatev1.ProviderSandbox, "":
		return RefundsPartial
	}
	return RefundsNone
}
