// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// APIError is the API's error body (docs/api.md, Errors): a stable label, a human message and, for validation
// failures, the messages per field.
type APIError struct {
	Status  int                 `json:"-"`
	Label   string              `json:"error"`
	Message string              `json:"message"`
	Errors  map[string][]string `json:"errors,omitempty"`
	// RetryAfter, when set, is sent as the Retry-After header (429).
	RetryAfter time.Duration `json:"-"`
}

func (e *APIError) Error() string { return e.Label + ": " + e.Message }

// Error labels: stable machine-readable keys. A few are phrases merchants' integrations already
// match on (Merchant Pending Approval, Payout Rejected, Validation failed); the failure codes
// (INVALID_AMOUNT, DUPLICATE_REFERENCE, ...) are labels too.
// docs/api.md maps each to its HTTP status.
const (
	LabelInvalidCredentials      = "INVALID_CREDENTIALS"
	LabelInvalidSignature        = "INVALID_SIGNATURE"
	LabelMerchantPendingApproval = "Merchant Pending Approval"
	LabelMerchantSuspended       = "MERCHANT_SUSPENDED"
	LabelValidationFailed        = "Validation failed"
	LabelInvalidCurrency         = "INVALID_CURRENCY"
	LabelWalletUnavailable       = "WALLET_UNAVAILABLE"
	LabelInvalidAmount           = "INVALID_AMOUNT"
	LabelNoPaymentMethod         = "PAYMENT_METHOD_UNAVAILABLE"
	LabelDuplicateReference      = "DUPLICATE_REFERENCE"
	LabelIdempotencyKeyReused    = "IDEMPOTENCY_KEY_REUSED"
	LabelNotFound                = "NOT_FOUND"
	LabelEventArchived           = "EVENT_ARCHIVED"
	LabelEventNotRedeliverable   = "EVENT_NOT_REDELIVERABLE"
	LabelMethodNotAllowed        = "METHOD_NOT_ALLOWED"
	LabelPaymentNotPending       = "PAYMENT_NOT_PENDING"
	LabelPushInProgress          = "PUSH_IN_PROGRESS"
	LabelRateLimited             = "RATE_LIMIT_EXCEEDED"
	LabelBadRequest              = "BAD_REQUEST"
	LabelServerError             = "SERVER_ERROR"
	LabelServiceUnavailable      = "SERVICE_UNAVAILABLE"
	LabelPayoutRejected          = "Payout Rejected"
	LabelInsufficientBalance     = "INSUFFICIENT_BALANCE"
	LabelNoPayoutMethod          = "PAYOUT_METHOD_UNAVAILABLE"
	LabelRefundRejected          = "REFUND_REJECTED"
	LabelPaymentNotRefundable    = "PAYMENT_NOT_REFUNDABLE"
	LabelRefundNotSupported      = "REFUND_NOT_SUPPORTED"
)

var (
	errInvalidCredentials = &APIError{Status: http.StatusUnauthorized, Label: LabelInvalidCredentials, Message: "Invalid API credentials."}
	errPendingApproval    = &APIError{Status: http.StatusForbidden, Label: LabelMerchantPendingApproval,
		Message: "This business is pending approval and can use the sandbox environment only."}
	errSuspended = &APIError{Status: http.StatusForbidden, Label: LabelMerchantSuspended, Message: "Business account is suspended."}
	errNotFound  = &APIError{Status: http.StatusNotFound, Label: LabelNotFound, Message: "Transaction not found."}
)

// validationError is a 422 with the messages per field.
func validationError(errs map[string][]string) *APIError {
	msg := "The request is invalid."
	if len(errs) == 1 {
		for _, m := range errs {
			if len(m) > 0 {
				msg = m[0]
			}
		}
	}
	return &APIError{Status: http.StatusUnprocessableEntity, Label: LabelValidationFailed, Message: msg, Errors: errs}
}

// writeJSON writes v as the response body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshalJSON(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"SERVER_ERROR","message":"The response could not be encoded."}`)
	}
	writeBody(w, status, body)
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header() // canonical names, set directly: every answer sets them
	h["Content-Type"] = []string{"application/json"}
	h["Cache-Control"] = []string{"no-store"}
	h["X-Content-Type-Options"] = []string{"nosniff"}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError writes an APIError in the error shape (docs/api.md, Errors).
func writeError(w http.ResponseWriter, e *APIError) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	}
	writeJSON(w, e.Status, e)
}

// marshalJSON encodes v without HTML escaping: messages such as "sha256=<hex>" stay readable.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
