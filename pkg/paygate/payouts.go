// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package paygate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// PayoutRequest is the body of POST /api/v1/payouts and /api/v1/payouts/preview. Amount is a
// decimal string sent as a JSON number ("2500", "1000.50"). CurrencyCode is optional: it chooses
// the payout's currency, and so the settlement number it goes to, for a business with one per
// currency (empty: the currency of the business's settlement number). Destination is optional:
// when set it must be that settlement number.
type PayoutRequest struct {
	Amount       json.Number `json:"amount"`
	Destination  string      `json:"destination,omitempty"`
	CurrencyCode string      `json:"currency_code,omitempty"`
}

// PayoutQuote is the answer of the preview: the balance is debited by Amount, Fee is kept and
// PayableAmount reaches the settlement number.
type PayoutQuote struct {
	Amount        json.Number `json:"amount"`
	Fee           json.Number `json:"fee"`
	PayableAmount json.Number `json:"payable_amount"`
	Currency      string      `json:"currency"`
}

// Payout is a payout record (docs/api.md, Payouts).
type Payout struct {
	ID            string      `json:"id"`
	Status        string      `json:"status"` // pending, processing, success, failed
	Reason        string      `json:"reason,omitempty"`
	Remark        string      `json:"remark,omitempty"`
	Amount        json.Number `json:"amount"`
	Fee           json.Number `json:"fee"`
	PayableAmount json.Number `json:"payable_amount"`
	Currency      string      `json:"currency"`
	Destination   string      `json:"destination"` // masked
	Environment   string      `json:"environment"`
	CreatedAt     string      `json:"created_at"`
	UpdatedAt     string      `json:"updated_at"`
}

// PreviewPayout quotes a payout without making it.
func (c *Client) PreviewPayout(ctx context.Context, req PayoutRequest) (*PayoutQuote, error) {
	var out struct {
		Data PayoutQuote `json:"data"`
	}
	if err := c.call(ctx, http.MethodPost, "/api/v1/payouts/preview", req, nil, &out); err != nil {
		return nil, err
	}
	return &out.Data, nil
}

// CreatePayout asks for a payout. With an idempotencyKey, a retry returns the same payout and
// never pays out twice.
func (c *Client) CreatePayout(ctx context.Context, req PayoutRequest, idempotencyKey string) (*Payout, error) {
	var out struct {
		Data Payout `json:"data"`
	}
	if err := c.call(ctx, http.MethodPost, "/api/v1/payouts", req, idempotencyHeader(idempotencyKey), &out); err != nil {
		return nil, err
	}
	return &out.Data, nil
}

// GetPayout reads one payout by id.
func (c *Client) GetPayout(ctx context.Context, id string) (*Payout, error) {
	var out struct {
		Data Payout `json:"data"`
	}
	if err := c.call(ctx, http.MethodGet, "/api/v1/payouts/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out.Data, nil
}

// PayoutList is a page of payouts, newest first.
type PayoutList struct {
	Data       []Payout   `json:"data"`
	Pagination Pagination `json:"pagination"`
}

// ListPayouts lists the merchant's payouts in the client's environment; Status filters.
func (c *Client) ListPayouts(ctx context.Context, opts ListOptions) (*PayoutList, error) {
	path := listPath("/api/v1/payouts", opts.Limit, opts.Offset, "status", opts.Status)
	out := &PayoutList{}
	return out, c.call(ctx, http.MethodGet, path, nil, nil, out)
}
