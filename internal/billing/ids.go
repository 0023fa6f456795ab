// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"strconv"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/names"
)

// Ids of billing objects (docs/billing.md, Names and ids). A subscription's id is 24 characters
// of lower-case base32, like every id Paygate derives: its object name is "sub-" + id
// (paygatev1.SubscriptionName) and the API shows "sub_" + id.

var idEncoding = base32.NewEncoding(names.Alphabet).WithPadding(base32.NoPadding)

// SubscriptionIDForRequest is the id of the subscription a create request with an
// Idempotency-Key makes: derived from the merchant's UID, the environment and the UID of the
// IdempotencyKey object that claimed the key. Requests that race with one key create one
// subscription (the second create is AlreadyExists); the same key used again after its record
// expired has a new record, so it makes a new subscription.
func SubscriptionIDForRequest(merchantUID string, env paygatev1.Environment, idempotencyKeyUID string) string {
	return names.Derive(names.PurposeSubscription, merchantUID, string(env), idempotencyKeyUID)
}

// NewSubscriptionID is the id of a subscription created without an Idempotency-Key: 120 random
// bits from crypto/rand, in the form of a derived id.
func NewSubscriptionID() (string, error) {
	b := make([]byte, 15)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a subscription id: %w", err)
	}
	return idEncoding.EncodeToString(b), nil
}

// InvoicePaymentName is the trx_id (Payment name) of an invoice's charge attempt (1 or more):
// "trx-" and 24 characters derived from the invoice's UID and the attempt number. The billing
// controller records it in the invoice's status before it creates the Payment (write-ahead): a
// create repeated after a crash is AlreadyExists, so an attempt is pushed once. The payment's
// merchant reference is the invoice's name.
func InvoicePaymentName(invoiceUID string, attempt int32) string {
	return "trx-" + names.Derive(names.PurposeInvoiceCharge, invoiceUID, strconv.FormatInt(int64(attempt), 10))
}
