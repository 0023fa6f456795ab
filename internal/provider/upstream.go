// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// The upstream provider's HTTP protocol is written down in docs/upstream-provider.md.

const (
	// DefaultUpstreamTimeout bounds each upstream call when UpstreamConfig.Timeout is zero.
	DefaultUpstreamTimeout = 10 * time.Second
	// maxUpstreamBody bounds every upstream response body that is read.
	maxUpstreamBody = 1 << 20
	// maxUpstreamText bounds provider text copied into errors.
	maxUpstreamText = 200
)

// Upstream status strings, as they travel on the wire (responses and callbacks).
const (
	UpstreamInProgress = "INPROGRESS"
	UpstreamSuccess    = "SUCCESS"
	UpstreamFailed     = "FAILED"
	UpstreamAmbiguous  = "AMBIGUOUS"
)

// ParseUpstreamStatus maps a wire status to a Status: INPROGRESS is StatusPending; SUCCESS,
// FAILED and AMBIGUOUS map to themselves. Anything else (including "" and "PENDING") is an
// error: an operation in a state Paygate does not understand must not be guessed at.
func ParseUpstreamStatus(s string) (Status, error) {
	switch s {
	case UpstreamInProgress:
		return StatusPending, nil
	case UpstreamSuccess:
		return StatusSuccess, nil
	case UpstreamFailed:
		return StatusFailed, nil
	case UpstreamAmbiguous:
		return StatusAmbiguous, nil
	}
	return "", fmt.Errorf("provider: unknown upstream status %q", truncateUpstreamText(s))
}

// UpstreamStatus is the inverse of ParseUpstreamStatus (StatusPending is INPROGRESS). It returns
// "" for a Status that has no wire form.
func UpstreamStatus(s Status) string {
	switch s {
	case StatusPending:
		return UpstreamInProgress
	case StatusSuccess, StatusFailed, StatusAmbiguous:
		return string(s)
	}
	return ""
}

// UpstreamConfig configures the HTTP adapter to an upstream mobile-money provider.
type UpstreamConfig struct {
	// BaseURL is the provider's absolute http(s) URL, e.g. https://mm.example.com/api; the
	// protocol's paths (/v1/collections, ...) are appended to it. No credentials, query or fragment.
	BaseURL string
	// Token is sent as "Authorization: Bearer <token>". It never appears in errors or logs.
	Token string
	// Timeout bounds each call (request and reading the answer); 0 means DefaultUpstreamTimeout.
	Timeout time.Duration
	// HTTPClient is used for the calls; nil means a client that does not follow redirects.
	HTTPClient *http.Client
}

// String redacts the token, so that printing a config never leaks it.
func (c UpstreamConfig) String() string {
	return fmt.Sprintf("UpstreamConfig{BaseURL:%q Token:%s Timeout:%s}", c.BaseURL, redactUpstreamToken(c.Token), c.Timeout)
}

// GoString redacts the token for %#v as well.
func (c UpstreamConfig) GoString() string { return c.String() }

func redactUpstreamToken(s string) string {
	if s == "" {
		return `""`
	}
	return "[REDACTED]"
}

// Upstream is the Provider backed by an upstream mobile-money provider over HTTP. It is safe for
// concurrent use.
//
// Outcome mapping: a 2xx answer is a Result; a 400 or 422 answer to a push, disbursement or
// refund whose body carries a code is a FAILED Result with that code (the provider refused the
// request, money did not move); 404 to a status query is ErrNotFound. Everything else — 401/403 (configuration),
// other 4xx, 5xx, timeouts, connection errors, oversized or malformed bodies, unknown statuses —
// is an error, meaning the outcome is unknown and the caller resolves it by status query.
type Upstream struct {
	base    string // BaseURL without trailing slash
	token   string
	timeout time.Duration
	client  *http.Client
}

var (
	_ Provider = (*Upstream)(nil)
	_ Refunder = (*Upstream)(nil)
)

// NewUpstream validates cfg and returns the adapter.
func NewUpstream(cfg UpstreamConfig) (*Upstream, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return nil, errors.New("provider: upstream base URL is not a valid URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("provider: upstream base URL must be an absolute http or https URL")
	}
	if u.User != nil {
		return nil, errors.New("provider: upstream base URL must not carry credentials (use the token)")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, errors.New("provider: upstream base URL must not have a query or fragment")
	}
	if cfg.Token == "" {
		return nil, errors.New("provider: upstream token is empty")
	}
	for i := 0; i < len(cfg.Token); i++ {
		if c := cfg.Token[i]; c <= ' ' || c >= 0x7f {
			return nil, errors.New("provider: upstream token contains whitespace or non-printable characters")
		}
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("provider: upstream timeout is negative")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultUpstreamTimeout
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{
			// A redirect is not part of the protocol; surface it as an unexpected answer rather
			// than re-sending a money-moving request somewhere else.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return &Upstream{
		base:    strings.TrimRight(u.String(), "/"),
		token:   cfg.Token,
		timeout: timeout,
		client:  client,
	}, nil
}

// String identifies the adapter without its token.
func (p Upstream) String() string { return "provider.Upstream(" + p.base + ")" }

// GoString redacts the token for %#v.
func (p Upstream) GoString() string { return p.String() }

// upstreamRequest is the body of POST /v1/collections and POST /v1/disbursements.
type upstreamRequest struct {
	Reference   string `json:"reference"`
	MSISDN      string `json:"msisdn"`
	Amount      string `json:"amount"`
	Currency    string `json:"currency"`
	Gateway     string `json:"gateway"`
	Description string `json:"description,omitempty"`
	CallbackURL string `json:"callback_url,omitempty"`
}

// upstreamRefundRequest is the body of POST /v1/refunds.
type upstreamRefundRequest struct {
	Reference string `json:"reference"`
	// Collection is the reference of the collection refunded, CollectionProviderReference the
	// provider's id for it (when Paygate has one).
	Collection                  string `json:"collection_reference"`
	CollectionProviderReference string `json:"collection_provider_reference,omitempty"`
	MSISDN                      string `json:"msisdn"`
	Amount                      string `json:"amount"`
	Currency                    string `json:"currency"`
	Gateway                     string `json:"gateway"`
	CallbackURL                 string `json:"callback_url,omitempty"`
}

// upstreamResponse is the body of a 2xx answer, and (code and message only) of an error answer.
type upstreamResponse struct {
	Reference         string `json:"reference"`
	ProviderReference string `json:"provider_reference"`
	Status            string `json:"status"`
	Code              string `json:"code"`
	Message           string `json:"message"`
	Remark            string `json:"remark"`
}

const (
	collectionsPath   = "/v1/collections"
	disbursementsPath = "/v1/disbursements"
	refundsPath       = "/v1/refunds"
)

// Failure codes of the protocol's refunds (docs/upstream-provider.md), answered 422 to a refund
// the provider refuses; Paygate passes them through as the refund's code.
const (
	// UpstreamRefundExceedsPayment: with the refunds of the collection already accepted (and not
	// failed), this one would return more than the collection's amount.
	UpstreamRefundExceedsPayment = "REFUND_EXCEEDS_PAYMENT"
	// UpstreamPaymentNotRefundable: the provider has the collection, and it did not succeed.
	UpstreamPaymentNotRefundable = "PAYMENT_NOT_REFUNDABLE"
)

// Push implements Provider: POST /v1/collections.
// Capabilities: the upstream protocol answers a repeated POST of a reference with the existing
// operation (docs/upstream-provider.md).
func (p *Upstream) Capabilities() Capabilities { return Capabilities{Deduplicates: true} }

func (p *Upstream) Push(ctx context.Context, req PushRequest) (Result, error) {
	return p.create(ctx, collectionsPath, req.Reference, upstreamRequest{
		Reference:   req.Reference,
		MSISDN:      req.Phone,
		Amount:      req.Amount,
		Currency:    req.Currency,
		Gateway:     req.Gateway,
		Description: req.Description,
		CallbackURL: req.CallbackURL,
	})
}

// PushStatus implements Provider: GET /v1/collections/{reference}.
func (p *Upstream) PushStatus(ctx context.Context, req PushRequest) (Result, error) {
	return p.status(ctx, collectionsPath, req.Reference)
}

// Disburse implements Provider: POST /v1/disbursements.
func (p *Upstream) Disburse(ctx context.Context, req DisbursementRequest) (Result, error) {
	return p.create(ctx, disbursementsPath, req.Reference, upstreamRequest{
		Reference:   req.Reference,
		MSISDN:      req.Phone,
		Amount:      req.Amount,
		Currency:    req.Currency,
		Gateway:     req.Gateway,
		CallbackURL: req.CallbackURL,
	})
}

// DisbursementStatus implements Provider: GET /v1/disbursements/{reference}.
func (p *Upstream) DisbursementStatus(ctx context.Context, req DisbursementRequest) (Result, error) {
	return p.status(ctx, disbursementsPath, req.Reference)
}

// RefundScope implements Refunder: the protocol refunds any amount of a collection, in several
// refunds, up to its amount.
func (p *Upstream) RefundScope() RefundScope { return RefundsPartial }

// Refund implements Refunder: POST /v1/refunds with the refund's reference, the collection's
// reference (req.Payment) and provider reference, the customer's msisdn, the amount and currency.
// It maps like Disburse: a 400/422 with a code (REFUND_EXCEEDS_PAYMENT, PAYMENT_NOT_REFUNDABLE,
// ...) is FAILED with that code; everything outside the protocol's answers is an error. A repeated
// POST of a reference is answered with the existing refund.
func (p *Upstream) Refund(ctx context.Context, req RefundRequest) (Result, error) {
	if req.Payment == "" {
		return Result{}, errors.New("provider: upstream refund without the collection's reference")
	}
	return p.create(ctx, refundsPath, req.Reference, upstreamRefundRequest{
		Reference:                   req.Reference,
		Collection:                  req.Payment,
		CollectionProviderReference: req.PaymentProvider,
		MSISDN:                      req.Phone,
		Amount:                      req.Amount,
		Currency:                    req.Currency,
		Gateway:                     req.Gateway,
		CallbackURL:                 req.CallbackURL,
	})
}

// RefundStatus implements Refunder: GET /v1/refunds/{reference}; 404 is ErrNotFound.
func (p *Upstream) RefundStatus(ctx context.Context, req RefundRequest) (Result, error) {
	return p.status(ctx, refundsPath, req.Reference)
}

// create POSTs body (whose reference is reference) to path and maps the answer.
func (p *Upstream) create(ctx context.Context, path, reference string, body any) (Result, error) {
	if reference == "" {
		return Result{}, errors.New("provider: upstream request has an empty reference")
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return Result{}, fmt.Errorf("provider: encoding upstream request: %w", err)
	}
	status, resp, err := p.do(ctx, http.MethodPost, path, payload)
	if err != nil {
		return Result{}, err
	}
	switch {
	case status == http.StatusOK || status == http.StatusCreated || status == http.StatusAccepted:
		return resultFrom(path, reference, resp)
	case (status == http.StatusBadRequest || status == http.StatusUnprocessableEntity) && len(resp) > 0:
		// A definitive refusal, but only if the body says so in the protocol's shape; a bare 400
		// (from a proxy, say) proves nothing about whether the provider saw the request.
		var r upstreamResponse
		if json.Unmarshal(resp, &r) == nil && r.Code != "" {
			return Result{Status: StatusFailed, Code: paygatev1.FailureCode(r.Code), Message: r.Message}, nil
		}
	}
	return Result{}, statusError(http.MethodPost, path, status, resp)
}

func (p *Upstream) status(ctx context.Context, path, reference string) (Result, error) {
	if reference == "" {
		return Result{}, errors.New("provider: upstream status query with an empty reference")
	}
	status, resp, err := p.do(ctx, http.MethodGet, path+"/"+url.PathEscape(reference), nil)
	if err != nil {
		return Result{}, err
	}
	switch status {
	case http.StatusOK:
		return resultFrom(path, reference, resp)
	case http.StatusNotFound:
		return Result{}, ErrNotFound
	}
	// Any other answer to a status query, 4xx included, says nothing about the operation.
	return Result{}, statusError(http.MethodGet, path, status, resp)
}

// do sends one request and reads at most maxUpstreamBody bytes of the answer.
func (p *Upstream) do(ctx context.Context, method, path string, payload []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, body)
	if err != nil {
		return 0, nil, fmt.Errorf("provider: building upstream request %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Accept", "application/json")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		// *url.Error carries the method, the URL (no credentials: NewUpstream refuses them) and
		// the cause; the token is only in a header and never part of it.
		return 0, nil, fmt.Errorf("provider: upstream %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody+1))
	if err != nil {
		return 0, nil, fmt.Errorf("provider: reading upstream answer to %s %s (HTTP %d): %w", method, path, resp.StatusCode, err)
	}
	if len(data) > maxUpstreamBody {
		return 0, nil, fmt.Errorf("provider: upstream answer to %s %s (HTTP %d) is larger than %d bytes", method, path, resp.StatusCode, maxUpstreamBody)
	}
	return resp.StatusCode, data, nil
}

func resultFrom(path, reference string, data []byte) (Result, error) {
	var r upstreamResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return Result{}, fmt.Errorf("provider: malformed upstream answer to %s: %w", path, err)
	}
	if r.Reference != "" && r.Reference != reference {
		return Result{}, fmt.Errorf("provider: upstream answered for reference %q, asked about %q", truncateUpstreamText(r.Reference), reference)
	}
	st, err := ParseUpstreamStatus(r.Status)
	if err != nil {
		return Result{}, err
	}
	res := Result{Status: st, ProviderReference: r.ProviderReference, Code: paygatev1.FailureCode(r.Code), Message: r.Message, Remark: r.Remark}
	if st == StatusFailed && res.Code == "" {
		res.Code = paygatev1.FailureProviderError
	}
	return res, nil
}

// UpstreamError is the error for an answer outside the protocol's happy paths (401/403, other
// 4xx, 5xx, 3xx): the outcome of a push, disbursement or refund is unknown.
type UpstreamError struct {
	Method     string
	Path       string // the collection, disbursement or refund path, without the reference
	StatusCode int
	Code       string // the body's code, if it had one
	Message    string // the body's message, truncated
}

func (e *UpstreamError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider: upstream %s %s answered HTTP %d", e.Method, e.Path, e.StatusCode)
	if e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden {
		b.WriteString(" (check the upstream token)")
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " code %q", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	return b.String()
}

// Unauthorized reports whether the provider refused the credentials (a configuration error).
func (e *UpstreamError) Unauthorized() bool {
	return e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden
}

func statusError(method, path string, status int, body []byte) error {
	e := &UpstreamError{Method: method, Path: path, StatusCode: status}
	var r upstreamResponse
	if json.Unmarshal(body, &r) == nil {
		e.Code, e.Message = truncateUpstreamText(r.Code), truncateUpstreamText(r.Message)
	}
	return e
}

func truncateUpstreamText(s string) string {
	if len(s) <= maxUpstreamText {
		return s
	}
	return strings.ToValidUTF8(s[:maxUpstreamText], "") + "..."
}
