-- Copyright 2026 The Paygate Authors.
-- SPDX-License-Identifier: Apache-2.0
--
-- Settled refunds (docs/archive.md). A refund is archived once it is terminal, older than its
-- retention, and its payment has left etcd: the refunds of a payment still in etcd are all in
-- etcd too, so a payment read from the API server's cache renders its refunds from the cache.
-- carried_forward gains what the archived successful refunds returned, and archived_live takes
-- refunds too, so a balance counts each refund once.

-- +goose Up
CREATE TABLE refunds (
    uid                text PRIMARY KEY,
    namespace          text COLLATE "C" NOT NULL,
    name               text COLLATE "C" NOT NULL,  -- the refund id
    merchant           text COLLATE "C" NOT NULL,
    environment        text NOT NULL,
    payment            text COLLATE "C" NOT NULL,  -- the refunded payment's trx_id
    phase              text NOT NULL,              -- success | failed
    reason             text NOT NULL,
    currency           text NOT NULL,
    amount             numeric NOT NULL CHECK (amount > 0),
    gateway            text NOT NULL,
    creation_timestamp timestamptz NOT NULL,
    created_at         timestamptz NOT NULL,       -- spec.createdAt: the list order
    finished_at        timestamptz,                -- status.updatedAt
    archived_at        timestamptz NOT NULL DEFAULT now(),
    object             jsonb NOT NULL,
    CONSTRAINT refunds_name UNIQUE (namespace, name)
);
CREATE INDEX refunds_list_ordered ON refunds (namespace, merchant, environment, created_at DESC, name, uid);
CREATE INDEX refunds_list_phase_ordered ON refunds (namespace, merchant, environment, phase, created_at DESC, name, uid);
CREATE INDEX refunds_payment ON refunds (namespace, payment);
CREATE INDEX refunds_archived_at ON refunds (archived_at);

ALTER TABLE carried_forward
    ADD COLUMN refunded         numeric NOT NULL DEFAULT 0 CHECK (refunded >= 0),          -- amounts of archived successful refunds
    ADD COLUMN refunded_refunds bigint  NOT NULL DEFAULT 0 CHECK (refunded_refunds >= 0),
    ADD COLUMN refunds          bigint  NOT NULL DEFAULT 0 CHECK (refunds >= 0);           -- archived refunds, every phase

-- +goose Down
ALTER TABLE carried_forward DROP COLUMN refunds, DROP COLUMN refunded_refunds, DROP COLUMN refunded;
DELETE FROM archived_live WHERE kind = 'refunds';
DROP TABLE refunds;
