-- Copyright 2026 The Paygate Authors.
-- SPDX-License-Identifier: Apache-2.0
--
-- archived_live lists the archived payments and payouts whose objects may still be in etcd: the
-- archiver commits a row before it deletes the object, and forgets the entry only once the object
-- has been gone from the manager's view for a whole pass (docs/archive.md). Balances subtract
-- these from their live sums, so each object counts once, and read only this merchant's entries
-- instead of asking about every live object.

-- +goose Up
CREATE TABLE archived_live (
    uid         text PRIMARY KEY,
    kind        text NOT NULL,                  -- payments | payouts
    namespace   text COLLATE "C" NOT NULL,
    name        text COLLATE "C" NOT NULL,
    merchant    text COLLATE "C" NOT NULL,
    environment text NOT NULL,
    archived_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX archived_live_merchant ON archived_live (namespace, merchant, environment);
-- Every row archived before this migration may still be live: the archiver forgets those it
-- finds gone.
INSERT INTO archived_live (uid, kind, namespace, name, merchant, environment)
    SELECT uid, 'payments', namespace, name, merchant, environment FROM payments
    UNION ALL
    SELECT uid, 'payouts', namespace, name, merchant, environment FROM payouts;

-- +goose Down
DROP TABLE archived_live;
