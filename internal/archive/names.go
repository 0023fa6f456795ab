// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package archive

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Name locks keep "a name is taken forever, live or archived" without a live read
// (docs/archive.md, Creates never reuse an archived name). The API server creates a payment or a
// payout under a name derived from the request, and must not create one whose name the archive
// holds. It asks the archive and then creates in etcd, holding a shared lock on the name across
// both (CreateUnlessArchived); the archiver deletes an archived object from etcd only while it
// holds the exclusive lock on its name (WithNamesLocked). So an object cannot leave etcd between
// a create's archive read and its create: either the read finds the row (committed before any
// delete), or the object is still in etcd when the create runs, which the Kubernetes API server
// refuses as AlreadyExists. The locks are PostgreSQL transaction-level advisory locks on
// (nameLockClass + the kind's index, hashtext(namespace/name)): a hash collision only makes one
// wait for the other.
const nameLockClass = 0x5047_0000

// NameKey names one object of a kind.
type NameKey struct {
	Kind            Kind
	Namespace, Name string
}

func (k NameKey) lockArgs() (int32, string) {
	return int32(nameLockClass + slices.Index(Kinds, k.Kind)), k.Namespace + "/" + k.Name
}

// CreateUnlessArchived runs create unless the archive holds an object of kind named namespace/name,
// holding the name's shared lock across the archive's answer and create (see Name locks). It
// reports whether the archive holds the name (create then does not run). An error is the
// archive's (create did not run); create's own outcome is create's to report. Once create has
// run, the lock has done its work: a failure to release it (the transaction's commit) is not an
// error, PostgreSQL releases it with the connection.
func (s *Store) CreateUnlessArchived(ctx context.Context, key NameKey, create func()) (archived bool, err error) {
	if !key.Kind.valid() {
		return false, fmt.Errorf("archive: unknown kind %q", key.Kind)
	}
	// One round trip opens the transaction, takes the lock and reads the row (BEGIN pipelined with
	// them); one more commits once create has run.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("archive: locking the name %s/%s: %w", key.Namespace, key.Name, err)
	}
	open := true
	defer func() {
		if open { // roll back; a connection that cannot is closed, and the pool drops it
			if _, err := conn.Exec(context.WithoutCancel(ctx), "ROLLBACK"); err != nil {
				_ = conn.Conn().Close(context.WithoutCancel(ctx))
			}
		}
		conn.Release()
	}()
	class, obj := key.lockArgs()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SELECT pg_advisory_xact_lock_shared($1, hashtext($2))", class, obj)
	b.Queue("SELECT EXISTS (SELECT 1 FROM "+string(key.Kind)+" WHERE namespace = $1 AND name = $2)", key.Namespace, key.Name)
	br := conn.SendBatch(ctx, b)
	_, beginErr := br.Exec()
	_, lockErr := br.Exec()
	var exists bool
	readErr := br.QueryRow().Scan(&exists)
	if err := errors.Join(beginErr, lockErr, readErr, br.Close()); err != nil {
		return false, fmt.Errorf("archive: reading the name %s/%s: %w", key.Namespace, key.Name, err)
	}
	if exists {
		return true, nil
	}
	create()
	if _, err := conn.Exec(context.WithoutCancel(ctx), "COMMIT"); err == nil {
		open = false
	}
	return false, nil
}

// WithNamesLocked runs fn holding the exclusive locks of keys' names (see Name locks): the
// archiver deletes archived payments and payouts from etcd inside it. The locks are taken in one
// order, so archivers never deadlock one another; a create holds one name at most. An error of
// the archive runs nothing.
func (s *Store) WithNamesLocked(ctx context.Context, keys []NameKey, fn func()) error {
	keys = slices.Clone(keys)
	slices.SortFunc(keys, func(a, b NameKey) int {
		return cmp.Or(strings.Compare(string(a.Kind), string(b.Kind)), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	keys = slices.Compact(keys)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("archive: locking %d names: %w", len(keys), err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	b := &pgx.Batch{}
	for _, k := range keys {
		if !k.Kind.valid() {
			return fmt.Errorf("archive: unknown kind %q", k.Kind)
		}
		class, obj := k.lockArgs()
		b.Queue("SELECT pg_advisory_xact_lock($1, hashtext($2))", class, obj)
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("archive: locking %d names: %w", len(keys), err)
		}
	}
	fn()
	_ = tx.Commit(context.WithoutCancel(ctx))
	return nil
}
