// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/paygate/paygate/internal/archive"
)

// EnvArchiveDSN names the environment variable that holds the archive's DSN when no
// --archive-dsn-file is given.
const EnvArchiveDSN = "PAYGATE_ARCHIVE_DSN"

// archiveOptions are the archive flags the manager and the apiserver share (docs/archive.md,
// Configuration). Without a DSN the archive is off: nothing is archived and reads do not fall back.
type archiveOptions struct {
	dsnFile  string
	maxConns int
}

// Default pool sizes: the manager's archiver uses a few connections at a time; the apiserver holds
// one through each payment or payout create (the name's lock, docs/archive.md), so its pool bounds
// how many creates run at once.
const (
	defaultArchiveMaxConns          = 8
	defaultApiserverArchiveMaxConns = 24
)

func (o *archiveOptions) bindFlags(fs *flag.FlagSet) {
	o.bindFlagsWithPool(fs, defaultArchiveMaxConns)
}

func (o *archiveOptions) bindFlagsWithPool(fs *flag.FlagSet, maxConns int) {
	fs.StringVar(&o.dsnFile, "archive-dsn-file", "", "File holding the PostgreSQL DSN of the archive (a mounted Secret); also read from "+EnvArchiveDSN+". Empty: no archive.")
	fs.IntVar(&o.maxConns, "archive-max-conns", maxConns, "Most connections open to the archive database.")
}

// dsn returns the archive's DSN: the file's content, else the environment variable; "" when the
// archive is off.
func (o *archiveOptions) dsn() (string, error) {
	if o.dsnFile != "" {
		b, err := os.ReadFile(o.dsnFile)
		if err != nil {
			return "", fmt.Errorf("reading --archive-dsn-file: %w", err)
		}
		dsn := strings.TrimSpace(string(b))
		if dsn == "" {
			return "", errors.New("--archive-dsn-file is empty")
		}
		return dsn, nil
	}
	return strings.TrimSpace(os.Getenv(EnvArchiveDSN)), nil
}

// open prepares the archive's connection pool, without connecting (a database that is down at
// start is retried by its users); nil when the archive is off.
func (o *archiveOptions) open(ctx context.Context, applicationName string) (*archive.Store, error) {
	dsn, err := o.dsn()
	if err != nil || dsn == "" {
		return nil, err
	}
	if o.maxConns < 1 || o.maxConns > 1000 {
		return nil, errors.New("--archive-max-conns must be between 1 and 1000")
	}
	return archive.Open(ctx, dsn, archive.Options{MaxConns: int32(o.maxConns), ApplicationName: applicationName})
}
