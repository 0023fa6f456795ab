// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package paygate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// RefundRequest is the body of POST /api/v1/payments/{trx_id}/refunds. Amount is a decimal string
// sent as a JSON number ("500", "1000.50"); empty refunds everything of the payment not refunded
// yet. Reason is optional, at most 255 characters.
type RefundRequest struct {
	Amount json.Number `json:"amount,omitempty"`
	Reason string      `json:"reason,omitempty"`
}

// Refund is a refund record (docs/api.md, Refunds).
type Refund struct {
	ID          string      `json:"id"`
	Status      string      `json:"status"` // pending, processing, success, failed
	Reason      string      `json:"reason,omitempty"`
	Remark      string      `json:"remark,omitempty"`
	Amount      json.Number `json:"amount"`
	Currency    string      `json:"currency"`
	TrxID       string      `json:"trx_id"`
	Environment string      `json:"environment"`
	CreatedAt   string      `json:"created_at"`
	UpdatedAt   string      `json:"updated_at"`
}

// CreateRefund asks for a refund of a successful payment to the customer who paid it. With an
// idempotencyKey, a retry returns the same refund and never refunds twice.
func (c *Client) CreateRefund(ctx context.Context, trxID string, req RefundRequest, idempotencyKey string) (*Refund, error) {
	var out struct {
		Data Refund `json:"data"`
	}
	path := "/api/v1/payments/" + url.PathEscape(trxID) + "/refunds"
	if err := c.call(ctx, http.MethodPost, path, req, idempotencyHeader(idempotencyKey), &out); err != nil {
		return nil, err
	}
	return &out.Data, nil
}

// GetRefund reads one refund by id.
func (c *Client) GetRefund(ctx context.Context, id string) (*Refund, error) {
	var out struct {
		Data Refund `json:"data"`
	}
	if err := c.call(ctx, http.MethodGet, "/api/v1/refunds/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out.Data, nil
}

// RefundList is a page of refunds, newest first.
type RefundList struct {
	Data       []Refund   `json:"data"`
	Pagination Pagination `json:"pagination"`
}

// ListRefunds lists the merchant's refunds in the client's environment; Status and Payment (a
// trx_id) filter.
func (c *Client) ListRefunds(ctx context.Context, opts ListOptions) (*RefundList, error) {
	path := listPath("/api/v1/refunds", opts.Limit, opts.Offset, "status", opts.Status, "payment", opts.Payment)
	out := &RefundList{}
	return out, c.call(ctx, http.MethodGet, path, nil, nil, out)
}
