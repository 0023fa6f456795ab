// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package names

// Purposes of recurring billing's derived names (internal/billing, docs/billing.md).
const (
	// PurposeSubscription derives a subscription's id from merchant UID, environment and the UID
	// of the request's IdempotencyKey object.
	PurposeSubscription = "subscription"
	// PurposeInvoiceCharge derives the trx_id of an invoice's charge attempt from the invoice's
	// UID and the attempt number. No ref_trx a merchant sends derives the same trx_id: the
	// merchant's payments use PurposeTrx.
	PurposeInvoiceCharge = "invoice-charge"
)
