// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package paygate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/paygate/paygate/pkg/paygate/signing"
)

// Webhook event types (docs/webhooks-receiver.md).
const (
	EventPaymentCompleted      = "payment.completed"
	EventPaymentFailed         = "payment.failed"
	EventSubscriptionCreated   = "subscription.created"
	EventSubscriptionCancelled = "subscription.cancelled"
	EventSubscriptionSuspended = "subscription.suspended"
	EventInvoiceCreated        = "invoice.created"
	EventInvoicePaid           = "invoice.paid"
	EventInvoicePaymentFailed  = "invoice.payment_failed"
	// EventPayoutCompleted and EventPayoutFailed are Paygate's own: a payout reached success or
	// failed. Their data is a Payout record (PayoutData).
	EventPayoutCompleted = "payout.completed"
	EventPayoutFailed    = "payout.failed"
	// EventRefundCompleted and EventRefundFailed: a refund reached success or failed. Their data
	// is a Refund record (RefundData).
	EventRefundCompleted = "refund.completed"
	EventRefundFailed    = "refund.failed"
	// EventWebhookTest is a test event the merchant sent itself, from the console or with a
	// MerchantChange, to check its receiver. It moves no money; its data is TestEventData.
	EventWebhookTest = "webhook.test"
)

// TestEventData decodes the data of a webhook.test event.
type TestEventData struct {
	Environment string `json:"environment"`
	Message     string `json:"message"`
}

// TestData decodes the data of a webhook.test event.
func (e *WebhookEvent) TestData() (*TestEventData, error) {
	if e.Type != EventWebhookTest {
		return nil, fmt.Errorf("%w: %s is not a test event", ErrWebhookPayload, e.Type)
	}
	d := &TestEventData{}
	if err := decodeJSON(e.Data, d); err != nil {
		return nil, fmt.Errorf("%w: decoding the test event data: %v", ErrWebhookPayload, err)
	}
	return d, nil
}

// Defaults of WebhookVerifier.
const (
	DefaultWebhookBrand  = signing.DefaultBrand
	DefaultWebhookMaxAge = signing.WebhookMaxAge
	// MaxWebhookBody is the largest body WebhookVerifier.Handler reads.
	MaxWebhookBody = 1 << 20
)

// Errors of WebhookVerifier.Verify; the returned errors wrap one of them (test with errors.Is).
// Their messages never contain the secret or the expected signature.
var (
	// ErrWebhookSignature: the signature header is missing, malformed or does not match (or no
	// secret is configured). Answer 401.
	ErrWebhookSignature = errors.New("paygate: invalid webhook signature")
	// ErrWebhookTimestamp: the timestamp header is missing, malformed, older than MaxAge or
	// more than MaxAge in the future. Answer 401.
	ErrWebhookTimestamp = errors.New("paygate: invalid webhook timestamp")
	// ErrWebhookPayload: the signed body is not a webhook event, or its type differs from
	// the event header. Answer 400.
	ErrWebhookPayload = errors.New("paygate: invalid webhook payload")
)

// WebhookEvent is the envelope of every webhook delivery.
type WebhookEvent struct {
	ID         string          `json:"id"`          // evt_…; de-duplicate on it
	Type       string          `json:"type"`        // payment.completed, payment.failed, ...
	APIVersion string          `json:"api_version"` // YYYY-MM-DD
	CreatedAt  string          `json:"created_at"`  // ISO 8601 with offset
	Data       json.RawMessage `json:"data"`        // see PaymentEventData for payment.* events
	// Legacy is the body of a legacy IPN delivery (WebhookVerifier.Format LegacyIPN); nil for
	// standard deliveries. Its event's ID is the X-<Brand>-Event-Id header.
	Legacy *LegacyIPN `json:"-"`
}

// Webhook formats a merchant's deliveries may have (the Merchant's spec.webhookFormat).
const (
	WebhookFormatStandard  = "Standard"
	WebhookFormatLegacyIPN = "LegacyIPN"
)

// LegacyIPN is the body of a payment webhook in the older gateway's IPN convention
// (docs/migrating.md): status "completed" or "failed", timestamp in Unix seconds.
type LegacyIPN struct {
	Data      LegacyIPNData `json:"data"`
	Message   string        `json:"message"`
	Status    string        `json:"status"`
	Timestamp int64         `json:"timestamp"`
}

// LegacyIPNData echoes the payment request's fields, with its trx_id.
type LegacyIPNData struct {
	RefTrx        string      `json:"ref_trx"`
	TrxID         string      `json:"trx_id"`
	Amount        json.Number `json:"amount"`
	CurrencyCode  string      `json:"currency_code"`
	CustomerName  string      `json:"customer_name"`
	CustomerEmail string      `json:"customer_email"`
	Description   string      `json:"description"`
	Environment   string      `json:"environment"`
}

// Money is an amount: value is a JSON number at the currency's scale ("1500.00").
type Money struct {
	Value    json.Number `json:"value"`
	Currency string      `json:"currency"`
}

// PaymentEventData is the data of payment.completed and payment.failed events. Status is
// "completed" or "failed"; a failed payment carries the failure code in Reason (for example
// INSUFFICIENT_FUNDS) and zero settlement fees and net.
type PaymentEventData struct {
	TrxID       string `json:"trx_id"`
	MerchantRef string `json:"merchant_ref"`
	Status      string `json:"status"`
	Reason      string `json:"reason,omitempty"`
	Amount      Money  `json:"amount"`
	Settlement  struct {
		Gross Money `json:"gross"`
		Fees  Money `json:"fees"`
		Net   Money `json:"net"`
	} `json:"settlement"`
	Customer struct {
		Name  string `json:"name"`
		Email string `json:"email"`
		Phone string `json:"phone"`
	} `json:"customer"`
	Environment string `json:"environment"`
	// Remark is SANDBOX_TRANSACTION on every sandbox payment and SIMULATED_PRODUCTION on a
	// production payment a demo gateway simulated; absent otherwise.
	Remark string `json:"remark,omitempty"`
}

// PayoutData decodes the data of a payout.completed or payout.failed event: the payout record,
// as GET /api/v1/payouts/{id} returns it.
func (e *WebhookEvent) PayoutData() (*Payout, error) {
	if e.Type != EventPayoutCompleted && e.Type != EventPayoutFailed {
		return nil, fmt.Errorf("%w: %s is not a payout event", ErrWebhookPayload, e.Type)
	}
	d := &Payout{}
	if err := decodeJSON(e.Data, d); err != nil {
		return nil, fmt.Errorf("%w: decoding the payout data: %v", ErrWebhookPayload, err)
	}
	return d, nil
}

// RefundData decodes the data of a refund.completed or refund.failed event: the refund record,
// as GET /api/v1/refunds/{id} returns it.
func (e *WebhookEvent) RefundData() (*Refund, error) {
	if e.Type != EventRefundCompleted && e.Type != EventRefundFailed {
		return nil, fmt.Errorf("%w: %s is not a refund event", ErrWebhookPayload, e.Type)
	}
	d := &Refund{}
	if err := decodeJSON(e.Data, d); err != nil {
		return nil, fmt.Errorf("%w: decoding the refund data: %v", ErrWebhookPayload, err)
	}
	return d, nil
}

// PaymentData decodes the data of a payment.* event.
func (e *WebhookEvent) PaymentData() (*PaymentEventData, error) {
	if e.Type != EventPaymentCompleted && e.Type != EventPaymentFailed {
		return nil, fmt.Errorf("%w: %s is not a payment event", ErrWebhookPayload, e.Type)
	}
	d := &PaymentEventData{}
	if err := json.Unmarshal(e.Data, d); err != nil {
		return nil, fmt.Errorf("%w: decoding the payment data: %v", ErrWebhookPayload, err)
	}
	return d, nil
}

// WebhookVerifier checks webhook deliveries: their signature, their age and their shape.
//
//	v := paygate.WebhookVerifier{Secret: []byte(os.Getenv("PAYGATE_WEBHOOK_SECRET"))}
//	http.Handle("/hooks", v.Handler(func(ctx context.Context, e *paygate.WebhookEvent) error {
//		return queue.Enqueue(ctx, e) // de-duplicate on e.ID; process later
//	}))
type WebhookVerifier struct {
	// Secret is the webhook signing secret (whsec_…), the whole value as bytes.
	Secret []byte
	// MoreSecrets are accepted beside Secret while the signing secret is rotated: the pending
	// secret from its preparation until it is activated, and the old one for a while after (a
	// delivery signed just before the activation may arrive just after). A delivery verifies when
	// its signature matches any of them.
	MoreSecrets [][]byte
	// Brand is the word in the header names X-<Brand>-Timestamp, X-<Brand>-Signature and
	// X-<Brand>-Event. Default DefaultWebhookBrand.
	Brand string
	// MaxAge is how far the timestamp may be from now, in the past or in the future.
	// Default DefaultWebhookMaxAge (5 minutes).
	MaxAge time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Format is the merchant's webhook format: WebhookFormatStandard (the default) or
	// WebhookFormatLegacyIPN, whose deliveries are checked by X-Signature over the raw body with
	// Secret (the webhook signing secret, or the API secret when the merchant signs legacy IPNs
	// with it) and decoded into WebhookEvent.Legacy.
	Format string
}

// WebhookHeaderNames returns the event type, timestamp and signature header names of brand
// (DefaultWebhookBrand when empty), for example X-Paygate-Event, X-Paygate-Timestamp and
// X-Paygate-Signature. Deliveries also carry X-<Brand>-Event-Id and X-Environment.
func WebhookHeaderNames(brand string) (event, timestamp, signature string) {
	return signing.WebhookHeaderNames(brand)
}

// Verify checks a delivery and decodes its event. body must be the raw request body, unchanged.
// It checks, with signing.VerifyWebhook, that the timestamp header is Unix seconds at most MaxAge
// old and at most MaxAge in the future, and that the signature header is the hex HMAC-SHA256 of
// "<timestamp>.<body>" keyed with Secret (compared in constant time); then that the body is an
// event with an id and a type, and that the type equals the event header.
func (v WebhookVerifier) Verify(header http.Header, body []byte) (*WebhookEvent, error) {
	if v.Format == WebhookFormatLegacyIPN {
		return v.verifyLegacy(header, body)
	}
	hEvent, hTS, hSig := WebhookHeaderNames(v.Brand)
	maxAge := v.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultWebhookMaxAge
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	ts, sig := header.Get(hTS), header.Get(hSig)
	if err := v.anySecret(func(secret []byte) error { return signing.VerifyWebhook(secret, sig, ts, body, now(), maxAge) }); err != nil {
		return nil, webhookError(err, hTS, ts, hSig, sig, maxAge)
	}

	e := &WebhookEvent{}
	if err := json.Unmarshal(body, e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWebhookPayload, err)
	}
	if e.ID == "" || e.Type == "" {
		return nil, fmt.Errorf("%w: the event has no id or no type", ErrWebhookPayload)
	}
	if t := header.Get(hEvent); t != e.Type {
		return nil, fmt.Errorf("%w: %s %q does not match the event type %q", ErrWebhookPayload, hEvent, t, e.Type)
	}
	return e, nil
}

// verifyLegacy checks a legacy IPN delivery: X-Signature is the hex HMAC-SHA256 of the raw body
// keyed with Secret, and the body is a legacy IPN of a payment (data.trx_id, status completed or
// failed). There is no timestamp header: de-duplicate on the event id or data.trx_id.
func (v WebhookVerifier) verifyLegacy(header http.Header, body []byte) (*WebhookEvent, error) {
	sig := header.Get(signing.LegacyIPNHeader)
	switch err := v.anySecret(func(secret []byte) error { return signing.VerifyLegacyIPN(secret, sig, body) }); {
	case errors.Is(err, signing.ErrEmptySecret):
		return nil, fmt.Errorf("%w: no webhook signing secret is configured", ErrWebhookSignature)
	case errors.Is(err, signing.ErrSignatureMalformed):
		return nil, fmt.Errorf("%w: %s is missing or not 64 hexadecimal characters", ErrWebhookSignature, signing.LegacyIPNHeader)
	case err != nil:
		return nil, fmt.Errorf("%w: %s does not match the body", ErrWebhookSignature, signing.LegacyIPNHeader)
	}
	ipn := &LegacyIPN{}
	if err := decodeJSON(body, ipn); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWebhookPayload, err)
	}
	e := &WebhookEvent{Legacy: ipn, Type: EventPaymentCompleted}
	switch ipn.Status {
	case "completed":
	case "failed":
		e.Type = EventPaymentFailed
	default:
		return nil, fmt.Errorf("%w: status %q is neither completed nor failed", ErrWebhookPayload, ipn.Status)
	}
	if ipn.Data.TrxID == "" {
		return nil, fmt.Errorf("%w: the IPN has no data.trx_id", ErrWebhookPayload)
	}
	hEvent, _, _ := WebhookHeaderNames(v.Brand)
	e.ID = header.Get(hEvent + "-Id")
	return e, nil
}

// anySecret runs verify with Secret and then each of MoreSecrets until one verifies; the error
// is Secret's (a timestamp or a malformed header fails alike with every secret).
func (v WebhookVerifier) anySecret(verify func(secret []byte) error) error {
	err := verify(v.Secret)
	for _, more := range v.MoreSecrets {
		if err == nil || !errors.Is(err, signing.ErrSignatureMismatch) {
			break
		}
		if verify(more) == nil {
			return nil
		}
	}
	return err
}

// webhookError turns an error of signing.VerifyWebhook into ErrWebhookSignature or
// ErrWebhookTimestamp with a message that names the header at fault (and never the secret or the
// expected signature).
func webhookError(err error, hTS, ts, hSig, sig string, maxAge time.Duration) error {
	switch {
	case errors.Is(err, signing.ErrEmptySecret):
		return fmt.Errorf("%w: no webhook signing secret is configured", ErrWebhookSignature)
	case errors.Is(err, signing.ErrTimestampMalformed) && ts == "":
		return fmt.Errorf("%w: %s is missing", ErrWebhookTimestamp, hTS)
	case errors.Is(err, signing.ErrTimestampMalformed):
		return fmt.Errorf("%w: %s is not a Unix time in seconds", ErrWebhookTimestamp, hTS)
	case errors.Is(err, signing.ErrTimestampOutsideTolerance):
		var se *signing.Error
		if errors.As(err, &se) && se.Future {
			return fmt.Errorf("%w: %s is more than %s in the future", ErrWebhookTimestamp, hTS, maxAge)
		}
		return fmt.Errorf("%w: %s is older than %s", ErrWebhookTimestamp, hTS, maxAge)
	case errors.Is(err, signing.ErrSignatureMalformed) && sig == "":
		return fmt.Errorf("%w: %s is missing", ErrWebhookSignature, hSig)
	case errors.Is(err, signing.ErrSignatureMalformed):
		return fmt.Errorf("%w: %s is not 64 hexadecimal characters", ErrWebhookSignature, hSig)
	}
	return fmt.Errorf("%w: %s does not match the body", ErrWebhookSignature, hSig)
}

// Handler returns an http.Handler for the webhook endpoint. It answers 405 to anything but
// POST, reads at most MaxWebhookBody bytes (413 beyond), answers 401 when the signature or the
// timestamp is invalid and 400 when the payload is, and otherwise calls handle and answers 200.
// When handle returns an error it answers 500, so Paygate tries again later.
//
// Paygate waits at most a few seconds for the answer: handle should record or enqueue the event
// and return, and the work (fulfilling the order) should happen elsewhere. Deliveries can be
// repeated: de-duplicate on e.ID, ideally with a unique key in the same database transaction
// that records the event.
func (v WebhookVerifier) Handler(handle func(ctx context.Context, e *WebhookEvent) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if len(v.Secret) == 0 {
			http.Error(w, "webhook receiver is not configured", http.StatusInternalServerError)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "reading the body failed", http.StatusBadRequest)
			return
		}
		e, err := v.Verify(r.Header, body)
		switch {
		case errors.Is(err, ErrWebhookPayload):
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if err := handle(r.Context(), e); err != nil {
			http.Error(w, "the event could not be recorded", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}
