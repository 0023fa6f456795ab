// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// The archived webhook events as the merchant API's events list reads them (docs/api.md, Events):
// oldest first, the exact reverse of DeliveryOrder, so that a page is one backward scan of the
// ordered list indexes of migration 00006 from a cursor, whatever the history before it.

// EventOrder is the events list's order: by creation time, oldest first, then by name and UID
// descending (the reverse of DeliveryOrder, ties included).
const EventOrder = "creation_timestamp, name DESC, uid DESC"

// EventPosition is a webhook delivery's place in EventOrder.
type EventPosition struct {
	Created   time.Time
	Name, UID string
}

// EventQuery selects a page of archived events: the deliveries of f's namespace, merchant and
// environment (and f.EventType when set; f.Phase is ignored) strictly after After when set, else
// created at or after Since when set, else from the first.
type EventQuery struct {
	Filter DeliveryFilter
	After  *EventPosition
	Since  time.Time
}

// ListWebhookEvents returns up to limit archived webhook deliveries q selects, in EventOrder.
func (s *Store) ListWebhookEvents(ctx context.Context, q EventQuery, limit int) ([]paygatev1.WebhookDelivery, error) {
	if limit < 1 || q.Filter.Namespace == "" || q.Filter.Merchant == "" || q.Filter.Environment == "" {
		return nil, fmt.Errorf("archive: listing webhook events: a namespace, merchant, environment and positive limit are needed (limit %d)", limit)
	}
	var w where
	w.eq("namespace", q.Filter.Namespace)
	w.eq("merchant", q.Filter.Merchant)
	w.eq("environment", string(q.Filter.Environment))
	w.eq("event_type", q.Filter.EventType)
	if a := q.After; a != nil {
		// Strictly after a in EventOrder. The first bound is the index's; the rest filters the
		// rows of a's own second.
		n := len(w.args)
		w.args = append(w.args, a.Created, a.Name, a.UID)
		w.conds = append(w.conds, fmt.Sprintf(`creation_timestamp >= $%d AND (creation_timestamp > $%d OR name < $%d OR (name = $%d AND uid COLLATE "C" < $%d))`,
			n+1, n+1, n+2, n+2, n+3))
	} else {
		w.since("creation_timestamp", q.Since)
	}
	args := append(w.args, limit)
	rows, err := s.pool.Query(ctx, fmt.Sprintf("SELECT object FROM %s%s ORDER BY %s LIMIT $%d",
		KindWebhookDelivery, w.sql(), EventOrder, len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("archive: listing webhook events: %w", err)
	}
	objs, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("archive: listing webhook events: %w", err)
	}
	out := make([]paygatev1.WebhookDelivery, len(objs))
	for i, js := range objs {
		if err := json.Unmarshal(js, &out[i]); err != nil {
			return nil, fmt.Errorf("archive: decoding a webhook event: %w", err)
		}
	}
	return out, nil
}

// WebhookDeliveryByEvent reads the archived webhook delivery of an event id in a namespace
// (index webhook_deliveries_event); ErrNotFound when there is none.
func (s *Store) WebhookDeliveryByEvent(ctx context.Context, namespace, eventID string) (*paygatev1.WebhookDelivery, error) {
	var js []byte
	err := s.pool.QueryRow(ctx, "SELECT object FROM webhook_deliveries WHERE event_id = $1 AND namespace = $2 LIMIT 1",
		eventID, namespace).Scan(&js)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("archive: reading the webhook event %s in %s: %w", eventID, namespace, err)
	}
	d := new(paygatev1.WebhookDelivery)
	if err := json.Unmarshal(js, d); err != nil {
		return nil, fmt.Errorf("archive: decoding the webhook event %s in %s: %w", eventID, namespace, err)
	}
	return d, nil
}
