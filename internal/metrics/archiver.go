// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The archiver's metrics (docs/archive.md, Metrics).
var (
	// ArchivedObjects counts objects the archiver committed to the archive for the first time, by
	// kind (payments, payouts, invoices, webhook_deliveries).
	ArchivedObjects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_archive_objects_archived_total",
		Help: "Objects the archiver wrote to the archive for the first time, by kind.",
	}, []string{"kind"})
	// ArchiveDeletes counts objects the archiver deleted from etcd after their commit, by kind.
	ArchiveDeletes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_archive_objects_deleted_total",
		Help: "Archived objects the archiver deleted from etcd after their commit, by kind.",
	}, []string{"kind"})
	// ArchiveLag is how far past its retention the oldest object waiting to be archived is, by
	// kind; 0 when none waits.
	ArchiveLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "paygate_archive_lag_seconds",
		Help: "How long past its retention the oldest terminal object not yet archived is, by kind (0: none waits).",
	}, []string{"kind"})
	// ArchiveRows is how many rows each archive table holds, as of the archiver's last pass.
	ArchiveRows = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "paygate_archive_rows",
		Help: "Rows in each archive table as of the archiver's last pass, by kind.",
	}, []string{"kind"})
	// ArchiveErrors counts failed archiver steps, by stage (migrate, archive, refused, delete, forget, count).
	ArchiveErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_archive_errors_total",
		Help: "Archiver steps that failed, by stage (migrate, archive, refused, delete, forget, count).",
	}, []string{"stage"})
	// ArchivePasses counts archiver passes, by result (ok, error).
	ArchivePasses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_archive_passes_total",
		Help: "Archiver passes, by result (ok, error).",
	}, []string{"result"})
)

func init() {
	crmetrics.Registry.MustRegister(ArchivedObjects, ArchiveDeletes, ArchiveLag, ArchiveRows, ArchiveErrors, ArchivePasses)
}

// LedgerDrift counts full recounts that found a balance's incremental payment sums wrong (they
// are corrected), by environment. It should stay 0.
var LedgerDrift = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "paygate_ledger_drift_total",
	Help: "Full recounts that found a balance's incremental payment sums different (then corrected), by environment; should stay 0.",
}, []string{"environment"})

func init() { crmetrics.Registry.MustRegister(LedgerDrift) }
