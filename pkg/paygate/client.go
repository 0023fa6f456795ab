// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package paygate is a Go client for the Paygate merchant API: it signs every request as
// docs/api.md (Authentication) says, with package signing, and calls each endpoint. Merchants import it; Paygate's end-to-end tests
// use it too.
//
//	c := paygate.New("https://pay.example", paygate.Credentials{
//		Environment: "sandbox", MerchantKey: os.Getenv("PAYGATE_MERCHANT_KEY"),
//		APIKey: os.Getenv("PAYGATE_API_KEY"), APISecret: os.Getenv("PAYGATE_API_SECRET"),
//	})
//	p, err := c.CreatePayment(ctx, paygate.CreatePaymentRequest{
//		PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: "order-1001",
//	}, "order-1001")
package paygate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/paygate/paygate/pkg/paygate/signing"
)

// Credentials are one environment's credential set. Switching environment switches all four.
type Credentials struct {
	Environment string // sandbox or production
	MerchantKey string // business ID, sent as X-Merchant-Key
	APIKey      string
	APISecret   string // signs requests; never sent
}

// Client calls the merchant API.
type Client struct {
	BaseURL     string
	Credentials Credentials
	HTTP        *http.Client
	// Now is the clock used for X-Timestamp (tests may skew it).
	Now func() time.Time
	// MaxRetries is how many times the endpoint methods (CreatePayment, GetPayment, ...) send a
	// request again after a 429 or 503 answer or a failed connection: 0 (the zero value) means
	// DefaultMaxRetries, a negative value turns retries off. Only a request that is safe to repeat
	// is retried: a GET or HEAD, or a POST, PUT, PATCH or DELETE with an Idempotency-Key. Before a
	// retry the client waits the answer's Retry-After (seconds; one over MaxRetryAfter ends the
	// call), or else an exponential backoff from 200 ms with jitter, at most 5 s. Do never retries.
	MaxRetries int

	// sleep waits between attempts; nil is sleepContext. Tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// New returns a client for baseURL (scheme and host, no /api/v1).
func New(baseURL string, creds Credentials) *Client {
	return &Client{BaseURL: strings.TrimSuffix(baseURL, "/"), Credentials: creds,
		HTTP: &http.Client{Timeout: 30 * time.Second}, Now: time.Now}
}

// Sign returns the X-Signature value for a request: sha256=<hex HMAC-SHA256> of
// "<timestamp>.<METHOD>.<path_with_query>.<raw_body>" with the API secret. It is
// signing.SignRequest with the secret as a string.
func Sign(secret, timestamp, method, pathWithQuery string, body []byte) string {
	return signing.SignRequest([]byte(secret), timestamp, method, pathWithQuery, body)
}

// Response is a raw API response.
type Response struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// Error is the API's error body.
type Error struct {
	StatusCode int                 `json:"-"`
	Label      string              `json:"error"`
	Message    string              `json:"message"`
	Errors     map[string][]string `json:"errors,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("paygate: %d %s: %s", e.StatusCode, e.Label, e.Message)
}

// Do sends a signed request, once, and returns the answer whatever its status: it never retries
// (the endpoint methods do; see Client.MaxRetries). pathWithQuery is signed exactly as sent. body
// is marshalled to JSON unless it is already []byte or nil. Extra headers (Idempotency-Key) may be
// given.
func (c *Client) Do(ctx context.Context, method, pathWithQuery string, body any, header http.Header) (*Response, error) {
	raw, err := encodeBody(body)
	if err != nil {
		return nil, err
	}
	return c.send(ctx, method, pathWithQuery, raw, header)
}

// encodeBody is the request body Do sends for body.
func encodeBody(body any) ([]byte, error) {
	switch b := body.(type) {
	case nil:
		return nil, nil
	case []byte:
		return b, nil
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("paygate: encoding the request: %w", err)
		}
		return raw, nil
	}
}

// send makes one attempt: it builds the request with a reader of its own over raw, signs it with
// a timestamp of now, sends it and reads the answer.
func (c *Client) send(ctx context.Context, method, pathWithQuery string, raw []byte, header http.Header) (*Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+pathWithQuery, bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("paygate: building the request: %w", err)
	}
	// Keep the request target byte for byte as signed (Go would re-encode some paths).
	target, _, _ := strings.Cut(pathWithQuery, "?")
	req.URL.Opaque = "//" + req.URL.Host + target
	ts := strconv.FormatInt(c.Now().Unix(), 10)
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	// Canonical names, set directly (Header.Set would canonicalize each on every request).
	h := req.Header
	h["X-Environment"] = []string{c.Credentials.Environment}
	h["X-Merchant-Key"] = []string{c.Credentials.MerchantKey}
	h["X-Api-Key"] = []string{c.Credentials.APIKey}
	h[signing.TimestampHeader] = []string{ts}
	h[signing.SignatureHeader] = []string{signing.SignRequest([]byte(c.Credentials.APISecret), ts, method, pathWithQuery, raw)}
	h["Accept"] = []string{"application/json"}
	if len(raw) > 0 {
		h["Content-Type"] = []string{"application/json"}
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("paygate: %s %s: %w", method, pathWithQuery, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("paygate: reading the response: %w", err)
	}
	return &Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// call sends a request and decodes a 2xx body into out, or returns an *Error. A request that is
// safe to repeat is sent again after a 429, a 503 or no answer, as retry.go says; the body is
// encoded once and every attempt is signed afresh. What a failed call returns is the last
// attempt's error (an *Error when the server answered), or, when ctx ends during a wait, an error
// that wraps both ctx.Err() and that last error.
func (c *Client) call(ctx context.Context, method, path string, body any, header http.Header, out any) error {
	raw, err := encodeBody(body)
	if err != nil {
		return err
	}
	for retry := 0; ; retry++ {
		resp, err := c.send(ctx, method, path, raw, header)
		if err == nil {
			if resp.StatusCode/100 == 2 {
				return decodeResponse(resp, out)
			}
			err = responseError(resp)
		}
		wait, ok := c.retryAfter(ctx, method, header, retry, resp, err)
		if !ok {
			return err
		}
		if werr := c.wait(ctx, wait); werr != nil {
			return fmt.Errorf("paygate: %s %s: %w while waiting %v to retry; last attempt: %w", method, path, werr, wait, err)
		}
	}
}

// responseError is the *Error of a non-2xx answer.
func responseError(resp *Response) *Error {
	e := &Error{StatusCode: resp.StatusCode}
	if json.Unmarshal(resp.Body, e) != nil || e.Label == "" {
		e.Label, e.Message = http.StatusText(resp.StatusCode), string(resp.Body)
	}
	return e
}

// decodeResponse decodes a 2xx body into out (nil: ignored).
func decodeResponse(resp *Response, out any) error {
	if out == nil {
		return nil
	}
	if err := decodeJSON(resp.Body, out); err != nil {
		return fmt.Errorf("paygate: decoding the response: %w", err)
	}
	return nil
}

// decodeJSON decodes the one JSON value of b into out, as json.Unmarshal does (trailing data is
// an error) but with UseNumber: a number that lands in an untyped value (map[string]any, any)
// is a json.Number holding the digits as sent, never a float64, so no amount is rounded.
func decodeJSON(b []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// CreatePaymentRequest is the body of POST /api/v1/payments (and initiate-payment).
type CreatePaymentRequest struct {
	PaymentAmount       json.Number `json:"payment_amount"`
	CurrencyCode        string      `json:"currency_code"`
	RefTrx              string      `json:"ref_trx"`
	WebhookURL          string      `json:"webhook_url,omitempty"`
	IPNURL              string      `json:"ipn_url,omitempty"`
	PaymentMode         string      `json:"payment_mode,omitempty"`
	CustomerPhone       string      `json:"customer_phone,omitempty"`
	SuccessRedirect     string      `json:"success_redirect,omitempty"`
	CancelRedirect      string      `json:"cancel_redirect,omitempty"`
	Description         string      `json:"description,omitempty"`
	CustomerName        string      `json:"customer_name,omitempty"`
	CustomerEmail       string      `json:"customer_email,omitempty"`
	AllowPaymentMethods []string    `json:"allow_payment_methods,omitempty"`
}

// CreatedPayment is data of the create response.
type CreatedPayment struct {
	TrxID       string      `json:"trx_id"`
	MerchantRef string      `json:"merchant_ref"`
	Amount      json.Number `json:"amount"`
	Currency    string      `json:"currency"`
	Status      string      `json:"status"`
	PaymentMode string      `json:"payment_mode"`
	CheckoutURL string      `json:"checkout_url"`
	ExpiresAt   string      `json:"expires_at"`
	Environment string      `json:"environment"`
}

// CreatePaymentResponse is the response of POST /api/v1/payments.
type CreatePaymentResponse struct {
	Status     string         `json:"status"`
	Data       CreatedPayment `json:"data"`
	PaymentURL string         `json:"payment_url"`
	TrxID      string         `json:"trx_id"`
}

func idempotencyHeader(key string) http.Header {
	if key == "" {
		return nil
	}
	return http.Header{"Idempotency-Key": {key}}
}

// CreatePayment creates a payment. idempotencyKey may be empty.
func (c *Client) CreatePayment(ctx context.Context, req CreatePaymentRequest, idempotencyKey string) (*CreatePaymentResponse, error) {
	out := &CreatePaymentResponse{}
	return out, c.call(ctx, http.MethodPost, "/api/v1/payments", req, idempotencyHeader(idempotencyKey), out)
}

// InitiatePaymentResponse is the legacy create response. The numbers in Info (amount,
// merchant_id, merchant_payment_method_ids) are json.Number values, never float64.
type InitiatePaymentResponse struct {
	PaymentURL string         `json:"payment_url"`
	Info       map[string]any `json:"info"`
	Data       struct {
		TrxID       string `json:"trx_id"`
		CheckoutURL string `json:"checkout_url"`
	} `json:"data"`
}

// InitiatePayment calls the legacy POST /api/v1/initiate-payment.
func (c *Client) InitiatePayment(ctx context.Context, req CreatePaymentRequest, idempotencyKey string) (*InitiatePaymentResponse, error) {
	out := &InitiatePaymentResponse{}
	return out, c.call(ctx, http.MethodPost, "/api/v1/initiate-payment", req, idempotencyHeader(idempotencyKey), out)
}

// Customer is who pays.
type Customer struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Phone string `json:"phone,omitempty"`
}

// Payment is the record of get-payment and list items.
type Payment struct {
	TrxID       string       `json:"trx_id"`
	MerchantRef string       `json:"merchant_ref"`
	Status      string       `json:"status"`
	Reason      string       `json:"reason,omitempty"`
	Amount      json.Number  `json:"amount"`
	Fee         *json.Number `json:"fee"`
	NetAmount   *json.Number `json:"net_amount"`
	Currency    string       `json:"currency"`
	PaymentMode string       `json:"payment_mode"`
	Gateway     string       `json:"gateway,omitempty"`
	Customer    Customer     `json:"customer"`
	Description string       `json:"description"`
	Environment string       `json:"environment"`
	CheckoutURL string       `json:"checkout_url"`
	ExpiresAt   string       `json:"expires_at"`
	CreatedAt   string       `json:"created_at"`
	UpdatedAt   string       `json:"updated_at"`
	// Remark marks a payment no real money moved for: SANDBOX_TRANSACTION on every sandbox
	// payment, SIMULATED_PRODUCTION on a production payment a demo gateway simulated; absent
	// otherwise.
	Remark string `json:"remark,omitempty"`
	// AmountRefunded is the sum of the payment's refunds that succeeded, at the currency's scale
	// (0 without any); RefundState is none, partial or full.
	AmountRefunded json.Number `json:"amount_refunded"`
	RefundState    string      `json:"refund_state"`
	// LateSettlement is present on a failed payment whose money the provider settled afterwards.
	LateSettlement *LateSettlement `json:"late_settlement,omitempty"`
}

// LateSettlement is money a provider settled after its payment had failed (docs/api.md, Late
// settlements): the payment stays failed, and the merchant's late-settlement policy decided what
// the money counts for.
type LateSettlement struct {
	// Amount is what the customer paid: the payment's amount.
	Amount json.Number `json:"amount"`
	// Handling is flagged (not counted; Paygate's operators reconcile it with you), credited
	// (NetAmount added to your balance) or refunded (returned to the customer by refund RefundID).
	Handling string `json:"handling"`
	// NetAmount is what your balance keeps of it: the amount less the fee when credited, 0
	// otherwise.
	NetAmount json.Number `json:"net_amount"`
	// RefundID is the refund that returns it, when refunded.
	RefundID string `json:"refund_id,omitempty"`
	// SettledAt is when Paygate learned of the late settlement.
	SettledAt string `json:"settled_at"`
}

// GetPayment reads one payment.
func (c *Client) GetPayment(ctx context.Context, trxID string) (*Payment, error) {
	var out struct {
		Data Payment `json:"data"`
	}
	if err := c.call(ctx, http.MethodGet, "/api/v1/payments/"+url.PathEscape(trxID), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out.Data, nil
}

// Verification is the verify-payment record (docs/api.md). Before settlement Fee is 0 and
// NetAmount equals Amount; a failed payment reports Fee and NetAmount 0.
type Verification struct {
	Status      string      `json:"status"`
	TrxID       string      `json:"trx_id"`
	MerchantRef string      `json:"merchant_ref"`
	Amount      json.Number `json:"amount"`
	Fee         json.Number `json:"fee"`
	Currency    string      `json:"currency"`
	NetAmount   json.Number `json:"net_amount"`
	Customer    Customer    `json:"customer"`
	Description string      `json:"description"`
	Environment string      `json:"environment"`
	CreatedAt   string      `json:"created_at"`
	UpdatedAt   string      `json:"updated_at"`
	// Remark is SANDBOX_TRANSACTION or SIMULATED_PRODUCTION, as in Payment.
	Remark string `json:"remark,omitempty"`
	// AmountRefunded, RefundState and LateSettlement are as in Payment.
	AmountRefunded json.Number     `json:"amount_refunded"`
	RefundState    string          `json:"refund_state"`
	LateSettlement *LateSettlement `json:"late_settlement,omitempty"`
}

// VerifyPayment calls GET /api/v1/verify-payment/{trxId}.
func (c *Client) VerifyPayment(ctx context.Context, trxID string) (*Verification, error) {
	out := &Verification{}
	return out, c.call(ctx, http.MethodGet, "/api/v1/verify-payment/"+url.PathEscape(trxID), nil, nil, out)
}

// ListOptions filter the lists (GET /api/v1/payments, /payouts, /refunds): each list reads the
// filters it has.
type ListOptions struct {
	Limit, Offset int
	Status        string
	MerchantRef   string
	// Payment filters the refund list by the trx_id of the refunded payment.
	Payment string
	// CreatedFrom (inclusive) and CreatedTo (exclusive) filter the payment list by creation time;
	// the zero time is no bound. They are sent as RFC 3339 times in UTC.
	CreatedFrom, CreatedTo time.Time
	// CustomerPhone filters the payment list by the customer's mobile number (docs/api.md says
	// which forms the list reads).
	CustomerPhone string
}

// PaymentList is a page of payments.
type PaymentList struct {
	Data       []Payment  `json:"data"`
	Pagination Pagination `json:"pagination"`
}

// ListPayments lists the merchant's payments in the client's environment, newest first.
func (c *Client) ListPayments(ctx context.Context, opts ListOptions) (*PaymentList, error) {
	path := listPath("/api/v1/payments", opts.Limit, opts.Offset, "status", opts.Status, "merchant_ref", opts.MerchantRef,
		"created_from", listTime(opts.CreatedFrom), "created_to", listTime(opts.CreatedTo), "customer_phone", opts.CustomerPhone)
	out := &PaymentList{}
	return out, c.call(ctx, http.MethodGet, path, nil, nil, out)
}

// PushResult is the response of the push endpoint.
type PushResult struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Data    struct {
		TrxID         string `json:"trx_id"`
		Status        string `json:"status"`
		PushSequence  int    `json:"push_sequence"`
		CustomerPhone string `json:"customer_phone"`
		RequestedAt   string `json:"requested_at"`
		ExpiresAt     string `json:"expires_at"`
	} `json:"data"`
}

// PushPayment asks for a USSD prompt on a pending payment; phone may be empty when the payment
// has one.
func (c *Client) PushPayment(ctx context.Context, trxID, phone string) (*PushResult, error) {
	body := map[string]string{}
	if phone != "" {
		body["customer_phone"] = phone
	}
	out := &PushResult{}
	return out, c.call(ctx, http.MethodPost, "/api/v1/payments/"+url.PathEscape(trxID)+"/push", body, nil, out)
}

// SiteInfo calls GET /api/v1/site-info. Its numbers are json.Number values, never float64.
func (c *Client) SiteInfo(ctx context.Context) (map[string]any, error) {
	out := map[string]any{}
	return out, c.call(ctx, http.MethodGet, "/api/v1/site-info", nil, nil, &out)
}

// Pagination describes a page of a list.
type Pagination struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
	Total  int `json:"total"`
	Count  int `json:"count"`
}

// listTime is a time filter's value: RFC 3339 in UTC, "" for the zero time (no filter).
func listTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// listPath is a list's path with its paging (limit and offset when positive) and its non-empty
// filters, given as name, value pairs, as the query.
func listPath(path string, limit, offset int, filters ...string) string {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if offset > 0 {
		q.Set("offset", strconv.Itoa(offset))
	}
	for i := 0; i+1 < len(filters); i += 2 {
		if filters[i+1] != "" {
			q.Set(filters[i], filters[i+1])
		}
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return path
}
