-- Copyright 2026 The Paygate Authors.
-- SPDX-License-Identifier: Apache-2.0
--
-- The archive of settled objects (docs/archive.md). One table per kind, keyed by the object's
-- UID, with the columns the API reads, filters and orders on, and the whole object as JSONB so a
-- record renders exactly as it did from etcd. Amounts are NUMERIC, never floating point. Names
-- and references compare byte-wise (COLLATE "C"), as the API server's Go sorts do.

-- +goose Up
CREATE TABLE payments (
    uid                text PRIMARY KEY,
    namespace          text COLLATE "C" NOT NULL,
    name               text COLLATE "C" NOT NULL,  -- the trx_id
    merchant           text COLLATE "C" NOT NULL,
    environment        text NOT NULL,
    merchant_reference text COLLATE "C" NOT NULL,  -- ref_trx
    phase              text NOT NULL,              -- success | failed
    reason             text NOT NULL,
    currency           text NOT NULL,
    amount             numeric NOT NULL CHECK (amount >= 0),
    fee                numeric CHECK (fee >= 0),
    net_amount         numeric CHECK (net_amount >= 0),
    creation_timestamp timestamptz NOT NULL,       -- metadata.creationTimestamp: the list order
    created_at         timestamptz,                -- spec.createdAt, microseconds
    settled_at         timestamptz,                -- status.settledAt
    archived_at        timestamptz NOT NULL DEFAULT now(),
    object             jsonb NOT NULL,
    CONSTRAINT payments_name UNIQUE (namespace, name)
);
CREATE INDEX payments_list ON payments (namespace, merchant, environment, creation_timestamp DESC, name);
CREATE INDEX payments_list_phase ON payments (namespace, merchant, environment, phase, creation_timestamp DESC, name);
CREATE INDEX payments_reference ON payments (namespace, merchant, environment, merchant_reference);
CREATE INDEX payments_archived_at ON payments (archived_at);

CREATE TABLE payouts (
    uid                text PRIMARY KEY,
    namespace          text COLLATE "C" NOT NULL,
    name               text COLLATE "C" NOT NULL,  -- the payout id
    merchant           text COLLATE "C" NOT NULL,
    environment        text NOT NULL,
    phase              text NOT NULL,              -- success | failed
    reason             text NOT NULL,
    currency           text NOT NULL,
    amount             numeric NOT NULL CHECK (amount >= 0),
    fee                numeric NOT NULL CHECK (fee >= 0),
    payable_amount     numeric NOT NULL CHECK (payable_amount >= 0),
    destination        text NOT NULL,
    gateway            text NOT NULL,
    creation_timestamp timestamptz NOT NULL,
    created_at         timestamptz NOT NULL,       -- spec.createdAt: the list order
    finished_at        timestamptz,                -- status.updatedAt
    archived_at        timestamptz NOT NULL DEFAULT now(),
    object             jsonb NOT NULL,
    CONSTRAINT payouts_name UNIQUE (namespace, name)
);
CREATE INDEX payouts_list ON payouts (namespace, merchant, environment, created_at DESC, name);
CREATE INDEX payouts_list_phase ON payouts (namespace, merchant, environment, phase, created_at DESC, name);
CREATE INDEX payouts_archived_at ON payouts (archived_at);

CREATE TABLE invoices (
    uid                text PRIMARY KEY,
    namespace          text COLLATE "C" NOT NULL,
    name               text COLLATE "C" NOT NULL,  -- inv-<subscription id>-<period>
    merchant           text COLLATE "C" NOT NULL,
    environment        text NOT NULL,
    subscription       text COLLATE "C" NOT NULL,  -- the Subscription's name
    plan_code          text NOT NULL,
    period             integer NOT NULL,
    phase              text NOT NULL,              -- paid | void
    currency           text NOT NULL,
    amount             numeric NOT NULL CHECK (amount >= 0),
    creation_timestamp timestamptz NOT NULL,       -- the list order
    period_start       timestamptz NOT NULL,
    period_end         timestamptz NOT NULL,
    paid_at            timestamptz,
    paid_payment       text NOT NULL,
    voided_at          timestamptz,
    archived_at        timestamptz NOT NULL DEFAULT now(),
    object             jsonb NOT NULL,
    CONSTRAINT invoices_name UNIQUE (namespace, name)
);
CREATE INDEX invoices_list ON invoices (namespace, merchant, environment, creation_timestamp DESC, subscription, period DESC);
CREATE INDEX invoices_list_phase ON invoices (namespace, merchant, environment, phase, creation_timestamp DESC, subscription, period DESC);
CREATE INDEX invoices_subscription ON invoices (namespace, subscription, period DESC);
CREATE INDEX invoices_archived_at ON invoices (archived_at);

CREATE TABLE webhook_deliveries (
    uid                text PRIMARY KEY,
    namespace          text COLLATE "C" NOT NULL,
    name               text COLLATE "C" NOT NULL,
    merchant           text COLLATE "C" NOT NULL,
    environment        text NOT NULL,
    event_id           text NOT NULL,
    event_type         text NOT NULL,
    source_kind        text NOT NULL,
    source_name        text NOT NULL,
    source_uid         text NOT NULL,
    phase              text NOT NULL,              -- Delivered | Abandoned | NoEndpoint
    total_attempts     integer NOT NULL,
    creation_timestamp timestamptz NOT NULL,
    delivered_at       timestamptz,
    archived_at        timestamptz NOT NULL DEFAULT now(),
    object             jsonb NOT NULL,
    CONSTRAINT webhook_deliveries_name UNIQUE (namespace, name)
);
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (namespace, merchant, environment, creation_timestamp DESC, name);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
CREATE INDEX webhook_deliveries_source ON webhook_deliveries (source_uid);
CREATE INDEX webhook_deliveries_archived_at ON webhook_deliveries (archived_at);

-- What the archived payments and payouts add to a merchant's balance, per merchant (namespace
-- and name), environment and currency. Updated in the transaction that inserts the rows, once per
-- inserted row: live balance = carried_forward + live objects (docs/ledger.md).
CREATE TABLE carried_forward (
    namespace        text COLLATE "C" NOT NULL,
    merchant         text COLLATE "C" NOT NULL,
    environment      text NOT NULL,
    currency         text NOT NULL,
    settled          numeric NOT NULL DEFAULT 0 CHECK (settled >= 0),   -- net amounts of archived successful payments
    settled_payments bigint  NOT NULL DEFAULT 0 CHECK (settled_payments >= 0),
    paid_out         numeric NOT NULL DEFAULT 0 CHECK (paid_out >= 0),  -- amounts of archived successful payouts
    paid_out_payouts bigint  NOT NULL DEFAULT 0 CHECK (paid_out_payouts >= 0),
    payments         bigint  NOT NULL DEFAULT 0 CHECK (payments >= 0),  -- archived payments, every phase
    payouts          bigint  NOT NULL DEFAULT 0 CHECK (payouts >= 0),   -- archived payouts, every phase
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, merchant, environment, currency)
);

-- +goose Down
DROP TABLE carried_forward;
DROP TABLE webhook_deliveries;
DROP TABLE invoices;
DROP TABLE payouts;
DROP TABLE payments;
