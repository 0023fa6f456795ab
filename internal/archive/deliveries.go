// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package archive

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// The archived webhook deliveries as the merchant console lists them (docs/console.md, Webhook
// deliveries): a merchant's deliveries in one environment, newest first, filtered by phase and
// event type. A page's total is read from webhook_delivery_counts (migration 00006), which the
// transaction that inserts a delivery's row keeps: a few rows, whatever the history.

// DeliveryOrder is the console's delivery list order: newest first by
// metadata.creationTimestamp, then by name, then by UID (apiserver's compareDeliveries).
const DeliveryOrder = "creation_timestamp DESC, name, uid"

// DeliveryFilter selects webhook deliveries; an empty field selects every value.
type DeliveryFilter struct {
	Namespace   string
	Merchant    string
	Environment paygatev1.Environment
	// Phase is the delivery's effective phase (Delivered, Abandoned or NoEndpoint: archived
	// deliveries are finished).
	Phase paygatev1.DeliveryPhase
	// EventType is the event's type (payment.completed, ...).
	EventType string
}

// ListWebhookDeliveries returns a page of the archived webhook deliveries f selects, in
// DeliveryOrder. With a namespace, merchant and environment the total is read from
// webhook_delivery_counts; else the rows are counted.
func (s *Store) ListWebhookDeliveries(ctx context.Context, f DeliveryFilter, limit, offset int) (Page[paygatev1.WebhookDelivery], error) {
	var w where
	w.eq("namespace", f.Namespace)
	w.eq("merchant", f.Merchant)
	w.eq("environment", string(f.Environment))
	w.eq("phase", string(f.Phase))
	w.eq("event_type", f.EventType)
	w.total = deliveryCount(f)
	return list[paygatev1.WebhookDelivery](ctx, s, KindWebhookDelivery, w, DeliveryOrder, limit, offset)
}

// deliveryCount sums the webhook_delivery_counts rows f selects; nil when f does not name a
// merchant and environment.
func deliveryCount(f DeliveryFilter) *countQuery {
	if f.Namespace == "" || f.Merchant == "" || f.Environment == "" {
		return nil
	}
	var w where
	w.eq("namespace", f.Namespace)
	w.eq("merchant", f.Merchant)
	w.eq("environment", string(f.Environment))
	w.eq("phase", string(f.Phase))
	w.eq("event_type", f.EventType)
	return &countQuery{sql: "SELECT coalesce(sum(deliveries), 0) FROM webhook_delivery_counts" + w.sql(), args: w.args}
}

// DeliveryCount is one row of webhook_delivery_counts.
type DeliveryCount struct {
	Namespace, Merchant string
	Environment         paygatev1.Environment
	Phase               paygatev1.DeliveryPhase
	EventType           string
	Deliveries          int64
}

// DeliveryCounts reads webhook_delivery_counts and the same counts computed from the rows, in one
// snapshot, both ordered by key and without zero counts: they must be equal.
func (s *Store) DeliveryCounts(ctx context.Context) (kept, fromRows []DeliveryCount, err error) {
	read := func(tx pgx.Tx, sql string) ([]DeliveryCount, error) {
		rows, err := tx.Query(ctx, sql)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (DeliveryCount, error) {
			var c DeliveryCount
			var env, phase string
			err := row.Scan(&c.Namespace, &c.Merchant, &env, &phase, &c.EventType, &c.Deliveries)
			c.Environment, c.Phase = paygatev1.Environment(env), paygatev1.DeliveryPhase(phase)
			return c, err
		})
	}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if kept, err = read(tx, `SELECT namespace, merchant, environment, phase, event_type, deliveries FROM webhook_delivery_counts
WHERE deliveries <> 0 ORDER BY 1, 2, 3, 4, 5`); err != nil {
			return err
		}
		fromRows, err = read(tx, `SELECT namespace, merchant, environment, phase, event_type, count(*) FROM webhook_deliveries
GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5`)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("archive: reading the webhook delivery counts: %w", err)
	}
	return kept, fromRows, nil
}

// countKey is one row of webhook_delivery_counts.
type countKey struct {
	namespace, merchant, environment, phase, eventType string
}

func (k countKey) compare(o countKey) int {
	return cmp.Or(strings.Compare(k.namespace, o.namespace), strings.Compare(k.merchant, o.merchant),
		strings.Compare(k.environment, o.environment), strings.Compare(k.phase, o.phase), strings.Compare(k.eventType, o.eventType))
}

// countDeliveries adds the deltas to webhook_delivery_counts, in key order (concurrent archivers
// wait for each other instead of deadlocking). A positive delta inserts or adds; a negative one
// (a refreshed row whose phase changed) subtracts from a row that must exist.
func countDeliveries(ctx context.Context, tx pgx.Tx, deltas map[countKey]int64) error {
	keys := make([]countKey, 0, len(deltas))
	for k, d := range deltas {
		if d != 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, countKey.compare)
	for _, k := range keys {
		d := deltas[k]
		args := []any{k.namespace, k.merchant, k.environment, k.phase, k.eventType, d}
		if d > 0 {
			if _, err := tx.Exec(ctx, `
INSERT INTO webhook_delivery_counts AS c (namespace, merchant, environment, phase, event_type, deliveries)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (namespace, merchant, environment, phase, event_type) DO UPDATE SET deliveries = c.deliveries + EXCLUDED.deliveries`,
				args...); err != nil {
				return fmt.Errorf("archive: counting webhook deliveries %+v: %w", k, err)
			}
			continue
		}
		tag, err := tx.Exec(ctx, `UPDATE webhook_delivery_counts SET deliveries = deliveries + $6
WHERE namespace = $1 AND merchant = $2 AND environment = $3 AND phase = $4 AND event_type = $5`, args...)
		if err != nil {
			return fmt.Errorf("archive: counting webhook deliveries %+v: %w", k, err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("archive: counting webhook deliveries %+v: no count to subtract from", k)
		}
	}
	return nil
}
