-- Copyright 2026 The Paygate Authors.
-- SPDX-License-Identifier: Apache-2.0
--
-- The merchant console lists a merchant's webhook deliveries, live and archived merged, filtered
-- by status and event type (docs/console.md, docs/archive.md). The list's order ends with the UID
-- (archive.DeliveryOrder), as every list's does: these indexes carry the whole order, unfiltered,
-- by phase and by event type; the index of 00001 that stopped at the name is dropped.
--
-- A page's total comes from webhook_delivery_counts, one row per merchant, environment, phase and
-- event type, updated in the transaction that inserts (or refreshes with another phase) the rows:
-- a total costs a few rows, not a count of the merchant's history (as carried_forward's counts do
-- for payments, payouts and refunds). Its sums equal the rows' (TestDeliveryCountsFollowTheRows).

-- +goose Up
CREATE INDEX webhook_deliveries_list_ordered ON webhook_deliveries (namespace, merchant, environment, creation_timestamp DESC, name, uid);
CREATE INDEX webhook_deliveries_list_phase_ordered ON webhook_deliveries (namespace, merchant, environment, phase, creation_timestamp DESC, name, uid);
CREATE INDEX webhook_deliveries_list_type_ordered ON webhook_deliveries (namespace, merchant, environment, event_type, creation_timestamp DESC, name, uid);
DROP INDEX webhook_deliveries_list;

CREATE TABLE webhook_delivery_counts (
    namespace   text COLLATE "C" NOT NULL,
    merchant    text COLLATE "C" NOT NULL,
    environment text NOT NULL,
    phase       text NOT NULL,                  -- Delivered | Abandoned | NoEndpoint
    event_type  text NOT NULL,
    deliveries  bigint NOT NULL DEFAULT 0 CHECK (deliveries >= 0),
    PRIMARY KEY (namespace, merchant, environment, phase, event_type)
);
INSERT INTO webhook_delivery_counts (namespace, merchant, environment, phase, event_type, deliveries)
    SELECT namespace, merchant, environment, phase, event_type, count(*) FROM webhook_deliveries GROUP BY 1, 2, 3, 4, 5;

-- +goose Down
DROP TABLE webhook_delivery_counts;
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (namespace, merchant, environment, creation_timestamp DESC, name);
DROP INDEX webhook_deliveries_list_ordered;
DROP INDEX webhook_deliveries_list_phase_ordered;
DROP INDEX webhook_deliveries_list_type_ordered;
