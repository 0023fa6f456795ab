-- Copyright 2026 The Paygate Authors.
-- SPDX-License-Identifier: Apache-2.0
--
-- The payment list's customer_phone filter (docs/api.md, GET /api/v1/payments). The column is
-- generated from the archived object (spec.customer.phone, E.164; '' when the payment has none),
-- so every row has it, those archived before this migration and those an archiver of an older
-- release writes during a rollout alike, and no writer names it. Adding it rewrites the table
-- once. The index serves a phone's payments in the list's order, and a span of creation times
-- within them; the span alone, with or without a status, is served by the list indexes of 00003.

-- +goose Up
ALTER TABLE payments ADD COLUMN customer_phone text COLLATE "C" NOT NULL
    GENERATED ALWAYS AS (coalesce(object #>> '{spec,customer,phone}', '')) STORED;
CREATE INDEX payments_list_phone_ordered ON payments (namespace, merchant, environment, customer_phone, creation_timestamp DESC, name, uid);

-- +goose Down
DROP INDEX payments_list_phone_ordered;
ALTER TABLE payments DROP COLUMN customer_phone;
