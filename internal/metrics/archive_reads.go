// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of an archive read (ArchiveReadSeconds' result label).
const (
	ArchiveReadOK       = "ok"
	ArchiveReadNotFound = "not_found"
	ArchiveReadError    = "error"
)

// ArchiveReadSeconds measures the API server's reads of the archive (docs/archive.md, Reads):
// the operation (get_payment, get_payout, list_payments, list_payouts, list_invoices,
// archived_payments, archived_payouts, archived_invoices) and its result (ok, not_found, error).
var ArchiveReadSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "paygate_archive_read_seconds",
	Help:    "Duration of the API server's reads of the archive (PostgreSQL), by operation and result (ok, not_found, error).",
	Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 10),
}, []string{"operation", "result"})

func init() {
	crmetrics.Registry.MustRegister(ArchiveReadSeconds)
}
