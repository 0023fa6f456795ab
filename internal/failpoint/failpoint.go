// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package failpoint stops the process at named points of the write-ahead protocol, so the fault
// harness (test/chaos, docs/reliability.md) can prove that a crash at each boundary never moves
// money twice. It is inert unless the environment variable PAYGATE_FAILPOINT names a point when
// the process starts; production deployments never set it.
//
// PAYGATE_FAILPOINT is a comma-separated list of name or name:n; the process kills itself with
// SIGKILL (no deferred function, no status write, no graceful shutdown runs) at the n-th time it
// reaches that point (n defaults to 1).
package failpoint

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// EnvVar arms failpoints.
const EnvVar = "PAYGATE_FAILPOINT"

// The points. Each sits right after a write-ahead boundary.
const (
	// PaymentAttemptRecorded: a push attempt is stored (Initiating); the provider has not heard
	// of it.
	PaymentAttemptRecorded = "payment-attempt-recorded"
	// PaymentProviderAnswered: the provider accepted the push; its answer is not stored yet.
	PaymentProviderAnswered = "payment-provider-answered"
	// PayoutAttemptRecorded: a disbursement is stored (Initiating); the provider has not heard
	// of it.
	PayoutAttemptRecorded = "payout-attempt-recorded"
	// PayoutProviderAnswered: the provider accepted the disbursement; its answer is not stored.
	PayoutProviderAnswered = "payout-provider-answered"
	// RefundAttemptRecorded: a refund's attempt is stored (Initiating); the provider has not
	// heard of it.
	RefundAttemptRecorded = "refund-attempt-recorded"
	// RefundProviderAnswered: the provider accepted the refund; its answer is not stored.
	RefundProviderAnswered = "refund-provider-answered"
	// ChargeRecorded: an invoice's charge is recorded; its Payment does not exist yet.
	ChargeRecorded = "charge-recorded"
	// ArchiveCommitted: the archiver's batch is committed to PostgreSQL; nothing of it is
	// deleted from etcd yet.
	ArchiveCommitted = "archive-committed"
	// ArchiveDeleted: the archiver deleted a batch's objects from etcd; the next pass has not run.
	ArchiveDeleted = "archive-deleted"
)

// Points lists every write-ahead point, for the harness (test/chaos), which must reach each:
// the payment, payout and refund controllers' points and the subscription controller's.
var Points = []string{PaymentAttemptRecorded, PaymentProviderAnswered, PayoutAttemptRecorded, PayoutProviderAnswered,
	RefundAttemptRecorded, RefundProviderAnswered, ChargeRecorded}

// RefundPoints are the refund controller's points, a subset of Points (the harness nudges the
// load towards them with refunds).
var RefundPoints = []string{RefundAttemptRecorded, RefundProviderAnswered}

// ArchivePoints are the archiver's points; they are reached only with an archive configured.
var ArchivePoints = []string{ArchiveCommitted, ArchiveDeleted}

type point struct {
	after int64
	hits  atomic.Int64
}

var armed = parse(os.Getenv(EnvVar))

// kill stops the process at once; a variable so tests can watch it instead.
var kill = func() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill() // SIGKILL on Unix
	}
	os.Exit(137)
}

func parse(spec string) map[string]*point {
	if strings.TrimSpace(spec) == "" {
		return nil
	}
	out := map[string]*point{}
	for _, item := range strings.Split(spec, ",") {
		name, count, _ := strings.Cut(strings.TrimSpace(item), ":")
		n, err := strconv.ParseInt(count, 10, 64)
		if err != nil || n < 1 {
			n = 1
		}
		if name != "" {
			out[name] = &point{after: n}
		}
	}
	return out
}

// Hit marks that the process reached the point name; it kills the process when the point is
// armed and this is its n-th hit. Without PAYGATE_FAILPOINT it does nothing.
func Hit(name string) {
	if armed == nil {
		return
	}
	if p, ok := armed[name]; ok && p.hits.Add(1) == p.after {
		kill()
	}
}
