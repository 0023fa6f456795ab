-- Copyright 2026 The Paygate Authors.
-- SPDX-License-Identifier: Apache-2.0
--
-- The list orders end with the UID (docs/archive.md, Lists in the API's order). The list indexes
-- of 00001 stopped at the name, so a page deep in a long list had the rows sorted instead of
-- read in index order. These indexes carry the whole order; the old ones are dropped.

-- +goose Up
CREATE INDEX payments_list_ordered ON payments (namespace, merchant, environment, creation_timestamp DESC, name, uid);
CREATE INDEX payments_list_phase_ordered ON payments (namespace, merchant, environment, phase, creation_timestamp DESC, name, uid);
DROP INDEX payments_list;
DROP INDEX payments_list_phase;
CREATE INDEX payouts_list_ordered ON payouts (namespace, merchant, environment, created_at DESC, name, uid);
CREATE INDEX payouts_list_phase_ordered ON payouts (namespace, merchant, environment, phase, created_at DESC, name, uid);
DROP INDEX payouts_list;
DROP INDEX payouts_list_phase;
CREATE INDEX invoices_list_ordered ON invoices (namespace, merchant, environment, creation_timestamp DESC, subscription, period DESC, uid);
CREATE INDEX invoices_list_phase_ordered ON invoices (namespace, merchant, environment, phase, creation_timestamp DESC, subscription, period DESC, uid);
DROP INDEX invoices_list;
DROP INDEX invoices_list_phase;

-- +goose Down
CREATE INDEX payments_list ON payments (namespace, merchant, environment, creation_timestamp DESC, name);
CREATE INDEX payments_list_phase ON payments (namespace, merchant, environment, phase, creation_timestamp DESC, name);
DROP INDEX payments_list_ordered;
DROP INDEX payments_list_phase_ordered;
CREATE INDEX payouts_list ON payouts (namespace, merchant, environment, created_at DESC, name);
CREATE INDEX payouts_list_phase ON payouts (namespace, merchant, environment, phase, created_at DESC, name);
DROP INDEX payouts_list_ordered;
DROP INDEX payouts_list_phase_ordered;
CREATE INDEX invoices_list ON invoices (namespace, merchant, environment, creation_timestamp DESC, subscription, period DESC);
CREATE INDEX invoices_list_phase ON invoices (namespace, merchant, environment, phase, creation_timestamp DESC, subscription, period DESC);
DROP INDEX invoices_list_ordered;
DROP INDEX invoices_list_phase_ordered;
