// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package archive keeps the history of settled objects in PostgreSQL, so that etcd holds live
// state only (docs/archive.md). Terminal Payments, Payouts, Invoices and WebhookDeliveries are
// written here, keyed by their UID, and only then deleted from etcd by the archiver; so are
// settled Refunds once their payment has left etcd. The money the archived payments, payouts and
// refunds moved is kept per merchant, environment and currency in
// carried_forward, updated in the same transaction as the rows, so that
//
//	live balance = carried forward + live objects
//
// stays exact. Amounts are NUMERIC in the database and decimal text (internal/money) in Go:
// never floating point.
package archive

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Migrations are the versioned schema migrations, applied in order by Migrate.
//
//go:embed migrations/*.sql
var Migrations embed.FS

// VersionTable is the table goose records applied migrations in.
const VersionTable = "archive_schema_version"

// migrationLockID is the PostgreSQL advisory lock Migrate holds ("paygate" in ASCII).
const migrationLockID = 0x70617967617465

// Kind is an archived kind: its table's name.
type Kind string

// The archived kinds.
const (
	KindPayment         Kind = "payments"
	KindPayout          Kind = "payouts"
	KindInvoice         Kind = "invoices"
	KindWebhookDelivery Kind = "webhook_deliveries"
	KindRefund          Kind = "refunds"
)

// Kinds lists every archived kind.
var Kinds = []Kind{KindPayment, KindPayout, KindInvoice, KindWebhookDelivery, KindRefund}

func (k Kind) valid() bool {
	switch k {
	case KindPayment, KindPayout, KindInvoice, KindWebhookDelivery, KindRefund:
		return true
	}
	return false
}

// ErrNotFound is returned by the Get methods when no archived object has the name.
var ErrNotFound = errors.New("archive: not found")

// Options configure the connection pool.
type Options struct {
	// MaxConns bounds the pool (0: pgxpool's default, the larger of 4 and the number of CPUs).
	// The DSN's pool_max_conns, if any, applies when MaxConns is 0.
	MaxConns int32
	// MinConns keeps that many connections open (0: none).
	MinConns int32
	// ApplicationName is reported to the server (pg_stat_activity); empty keeps the DSN's.
	ApplicationName string
}

// Store is the archive: a pool of connections to its database. It is safe for concurrent use,
// by several goroutines and by several processes (managers, API servers) at once.
type Store struct {
	pool *pgxpool.Pool
}

// Open prepares a pool for dsn, a PostgreSQL URL or key=value string. TLS is the DSN's: sslmode
// (verify-full in production), sslrootcert, sslcert and sslkey. Open does not connect: the
// first query does, and Ping checks the server.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The DSN may hold a password: do not echo it.
		return nil, errors.New("archive: the DSN cannot be parsed")
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.MinConns > 0 {
		cfg.MinConns = opts.MinConns
	}
	if cfg.MinConns > cfg.MaxConns {
		cfg.MinConns = cfg.MaxConns
	}
	if opts.ApplicationName != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = opts.ApplicationName
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return &Store{pool: pool}, nil
}

// Close closes every connection.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

// Pool is the connection pool, for the metrics and the ledger check.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Migrate applies the migrations not applied yet, in order, under a PostgreSQL advisory lock:
// several processes may migrate at once, and a database already up to date is left as it is.
func (s *Store) Migrate(ctx context.Context) error {
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	p, err := s.provider(db)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("archive: migrating: %w", err)
	}
	return nil
}

// SchemaVersion is the version of the newest applied migration (0 on an empty database).
func (s *Store) SchemaVersion(ctx context.Context) (int64, error) {
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	p, err := s.provider(db)
	if err != nil {
		return 0, err
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("archive: reading the schema version: %w", err)
	}
	return v, nil
}

func (s *Store) provider(db *sql.DB) (*goose.Provider, error) {
	// Managers starting together wait for each other's migration, asking every second for up
	// to five minutes, under a lock of the archive's own.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID), lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(Migrations, "migrations")
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithTableName(VersionTable),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true))
}

// Has reports whether an object of kind with uid is archived (committed). An error is never
// a "no": an archiver deletes from etcd only on a true.
func (s *Store) Has(ctx context.Context, kind Kind, uid string) (bool, error) {
	got, err := s.Archived(ctx, kind, []string{uid})
	if err != nil {
		return false, err
	}
	return got[uid], nil
}

// Archived returns which of uids are archived, in one query: the API server drops live objects
// the archive already holds (an archiver stopped between its commit and its delete) when it
// merges the two.
func (s *Store) Archived(ctx context.Context, kind Kind, uids []string) (map[string]bool, error) {
	if !kind.valid() {
		return nil, fmt.Errorf("archive: unknown kind %q", kind)
	}
	rows, err := s.pool.Query(ctx, "SELECT uid FROM "+string(kind)+" WHERE uid = ANY($1)", uids)
	if err != nil {
		return nil, fmt.Errorf("archive: reading %s: %w", kind, err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("archive: reading %s: %w", kind, err)
	}
	out := make(map[string]bool, len(found))
	for _, u := range found {
		out[u] = true
	}
	return out, nil
}

// Count is how many objects of kind are archived (the rows-per-kind metric).
func (s *Store) Count(ctx context.Context, kind Kind) (int64, error) {
	if !kind.valid() {
		return 0, fmt.Errorf("archive: unknown kind %q", kind)
	}
	var n int64
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+string(kind)).Scan(&n); err != nil {
		return 0, fmt.Errorf("archive: counting %s: %w", kind, err)
	}
	return n, nil
}
