// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package paygate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// EventListOptions select a page of GET /api/v1/events (docs/api.md, Events). After and Since
// are exclusive: give one of them, or neither to start from the merchant's first event.
type EventListOptions struct {
	// Limit is the page size, 1 to 100 (0: the server's default, 20).
	Limit int
	// After lists the events strictly after this event id (a page's NextAfter).
	After string
	// Since lists the events created at or after this time (sent in UTC, RFC 3339).
	Since time.Time
	// Type keeps the events of one type (payment.completed, ...).
	Type string
}

// Event is one webhook event as the events API lists it: the exact body its webhook carried (or
// will carry) and how its delivery stands.
type Event struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt string          `json:"created_at"`
	Payload   json.RawMessage `json:"payload"`
	Delivery  EventDelivery   `json:"delivery"`
}

// EventDelivery is how an event's delivery stands.
type EventDelivery struct {
	// Status is Pending, Delivered, Abandoned or NoEndpoint.
	Status           string  `json:"status"`
	Attempts         int     `json:"attempts"`
	LastResponseCode *int    `json:"last_response_code"`
	DeliveredAt      *string `json:"delivered_at"`
	NextAttemptAt    *string `json:"next_attempt_at"`
}

// EventPagination is an events page's cursor.
type EventPagination struct {
	Limit   int  `json:"limit"`
	Count   int  `json:"count"`
	HasMore bool `json:"has_more"`
	// NextAfter is the After of the next page (the last event's id; the request's After when the
	// page is empty); empty when there is neither.
	NextAfter string `json:"next_after"`
}

// EventList is a page of events, oldest first.
type EventList struct {
	Data       []Event         `json:"data"`
	Pagination EventPagination `json:"pagination"`
}

// ListEvents lists the merchant's webhook events in the client's environment, oldest first, from
// opts' cursor. Page on with After: page.Pagination.NextAfter while page.Pagination.HasMore.
func (c *Client) ListEvents(ctx context.Context, opts EventListOptions) (*EventList, error) {
	q := url.Values{}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.After != "" {
		q.Set("after", opts.After)
	}
	if !opts.Since.IsZero() {
		q.Set("since", opts.Since.UTC().Format(time.RFC3339Nano))
	}
	if opts.Type != "" {
		q.Set("type", opts.Type)
	}
	path := "/api/v1/events"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	out := &EventList{}
	return out, c.call(ctx, http.MethodGet, path, nil, nil, out)
}

// RedeliverEvent asks for a new round of deliveries of a delivered or abandoned event (same id,
// same body) and returns the event. idempotencyKey may be empty; a request sent again with the
// same key starts no second round.
func (c *Client) RedeliverEvent(ctx context.Context, id, idempotencyKey string) (*Event, error) {
	var out struct {
		Data Event `json:"data"`
	}
	if err := c.call(ctx, http.MethodPost, "/api/v1/events/"+url.PathEscape(id)+"/redeliver", nil, idempotencyHeader(idempotencyKey), &out); err != nil {
		return nil, err
	}
	return &out.Data, nil
}
