// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package driver

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Settings size the run. FromEnv reads them from BENCH_* variables; BENCH_QUICK=1 starts from the
// quick defaults (every row, tiny counts, a few minutes) instead of the full ones.
type Settings struct {
	Quick bool
	// Duration and Warmup of every closed-loop and fixed-rate row (BENCH_DURATION, BENCH_WARMUP).
	Duration, Warmup time.Duration
	// Concurrency of the create rows (BENCH_CONCURRENCY=1,16,64).
	Concurrency []int
	// Rounds of the rows a ratio compares (raw and REST create at each concurrency; raw GET,
	// verify and get-payment; a raw create, payouts and subscriptions), run alternately, each row
	// keeping its best round, and of the list rows at each size, each keeping its round with the
	// median p99 (BENCH_ROUNDS=5).
	Rounds int
	// ReadConcurrency of the read, list, payout and subscription rows (BENCH_READ_CONCURRENCY=16).
	ReadConcurrency int
	// ReadRate is the fixed open-loop rate of the read latency rows (BENCH_READ_RATE=300).
	ReadRate float64
	// VerifyBase is how many payments the seeded merchant holds for the read rows and the
	// verify baseline (BENCH_VERIFY_BASE=1000).
	VerifyBase int
	// Live are the seeded merchant's payment counts of the memory, list and balance rows
	// (BENCH_LIVE_PAYMENTS=10000,100000); the list row runs at the first.
	Live []int
	// E2EStep is the length of each step of the search for the highest sustainable end-to-end
	// rate, E2EMeasure of each row at 25, 50 and 75% of it; a step whose create-to-webhook p99
	// exceeds E2EMaxP99 is not sustainable (BENCH_E2E_STEP, BENCH_E2E_MEASURE, BENCH_E2E_MAX_P99).
	E2EStep, E2EMeasure, E2EMaxP99 time.Duration
	// E2EMaxSteps and E2EBisections bound the search (BENCH_E2E_MAX_STEPS, BENCH_E2E_BISECTIONS).
	E2EMaxSteps, E2EBisections int
	// PollInterval is the manager's --provider-poll-interval (BENCH_POLL_INTERVAL=200ms): a
	// sandbox push succeeds at its first status query, so it is a floor of the end-to-end time.
	PollInterval time.Duration
	// StoragePayments go through their whole life for the storage row (BENCH_STORAGE_PAYMENTS).
	StoragePayments int
	// AbsorbRepeats samples of the balance row at each size (BENCH_ABSORB_REPEATS).
	AbsorbRepeats int
	// SeedConcurrency writes the seeded payments (BENCH_SEED_CONCURRENCY=32), SeedBatch at a time
	// (BENCH_SEED_BATCH=5000) before the servers must have caught up.
	SeedConcurrency, SeedBatch int
	// SeedVia is how they are written (BENCH_SEED_VIA): etcd (the default: one settled payment
	// through the Kubernetes API, then copies of it straight into etcd, which kube-apiserver's
	// watch cache serves like any write) or api (every payment created, then settled, through the
	// Kubernetes API: about 100 a second on a 2-core machine).
	SeedVia string
	// Profile takes CPU profiles of the manager, the apiserver and kube-apiserver under the
	// create and end-to-end rows, and heap profiles at the largest size (BENCH_PROFILE=1).
	Profile bool
	// OutDir keeps the logs, profiles and results (BENCH_OUT; default a new directory under
	// $TMPDIR).
	OutDir string
	// Archive runs the manager and the apiserver with the PostgreSQL archive, as a deployment at
	// scale and `make run` do (BENCH_ARCHIVE, default 1; 0 runs without it). The archive is
	// empty and nothing is archived during the run (the retentions are a week): what it measures
	// is what the archive adds to live traffic, a create's name check first.
	Archive bool
	// Rows are the groups of rows to run (BENCH_ROWS, comma-separated; empty: all of them):
	// reads, live (memory, list, verify at size, balance), creates, e2e, storage, payouts. The
	// end-to-end search starts from the raw create throughput, so e2e runs the creates too.
	Rows []string
}

// RowGroups are the groups BENCH_ROWS may name.
var RowGroups = []string{"reads", "live", "creates", "e2e", "storage", "payouts"}

// Runs reports whether the row group runs.
func (s Settings) Runs(group string) bool {
	if len(s.Rows) == 0 {
		return true
	}
	for _, g := range s.Rows {
		if g == group || (g == "e2e" && group == "creates") {
			return true
		}
	}
	return false
}

// Full are the defaults of `make bench` (about 15 minutes on a 2-core machine).
func Full() Settings {
	return Settings{
		Duration: 8 * time.Second, Warmup: 2 * time.Second,
		Concurrency: []int{1, 16, 64}, Rounds: 5, ReadConcurrency: 16, ReadRate: 300,
		VerifyBase: 1000, Live: []int{10_000, 100_000},
		E2EStep: 8 * time.Second, E2EMeasure: 15 * time.Second, E2EMaxP99: 3 * time.Second,
		E2EMaxSteps: 8, E2EBisections: 2,
		PollInterval: 200 * time.Millisecond, StoragePayments: 200, AbsorbRepeats: 5,
		SeedConcurrency: 32, SeedBatch: 5000, SeedVia: "etcd", Profile: true, Archive: true,
	}
}

// Quick are the defaults of BENCH_QUICK=1: every row, tiny counts.
func Quick() Settings {
	s := Full()
	s.Quick = true
	s.Duration, s.Warmup = 2*time.Second, 500*time.Millisecond
	s.Rounds = 1
	s.VerifyBase, s.Live = 300, []int{1000, 3000}
	s.E2EStep, s.E2EMeasure = 2*time.Second, 3*time.Second
	s.E2EMaxSteps, s.E2EBisections = 4, 0
	s.StoragePayments, s.AbsorbRepeats = 30, 2
	return s
}

// FromEnv reads the settings from the environment.
func FromEnv() (Settings, error) {
	s := Full()
	if b, _ := strconv.ParseBool(os.Getenv("BENCH_QUICK")); b {
		s = Quick()
	}
	var errs []string
	dur := func(name string, to *time.Duration) {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				errs = append(errs, name+": not a duration")
				return
			}
			*to = d
		}
	}
	num := func(name string, to *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				errs = append(errs, name+": not a count")
				return
			}
			*to = n
		}
	}
	list := func(name string, to *[]int) {
		if v := os.Getenv(name); v != "" {
			var out []int
			for _, part := range strings.Split(v, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(part))
				if err != nil || n <= 0 {
					errs = append(errs, name+": not a list of counts")
					return
				}
				out = append(out, n)
			}
			*to = out
		}
	}
	dur("BENCH_DURATION", &s.Duration)
	dur("BENCH_WARMUP", &s.Warmup)
	list("BENCH_CONCURRENCY", &s.Concurrency)
	num("BENCH_ROUNDS", &s.Rounds)
	num("BENCH_READ_CONCURRENCY", &s.ReadConcurrency)
	if v := os.Getenv("BENCH_READ_RATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 {
			errs = append(errs, "BENCH_READ_RATE: not a rate")
		}
		s.ReadRate = r
	}
	num("BENCH_VERIFY_BASE", &s.VerifyBase)
	list("BENCH_LIVE_PAYMENTS", &s.Live)
	dur("BENCH_E2E_STEP", &s.E2EStep)
	dur("BENCH_E2E_MEASURE", &s.E2EMeasure)
	dur("BENCH_E2E_MAX_P99", &s.E2EMaxP99)
	num("BENCH_E2E_MAX_STEPS", &s.E2EMaxSteps)
	num("BENCH_E2E_BISECTIONS", &s.E2EBisections)
	dur("BENCH_POLL_INTERVAL", &s.PollInterval)
	num("BENCH_STORAGE_PAYMENTS", &s.StoragePayments)
	num("BENCH_ABSORB_REPEATS", &s.AbsorbRepeats)
	num("BENCH_SEED_CONCURRENCY", &s.SeedConcurrency)
	num("BENCH_SEED_BATCH", &s.SeedBatch)
	if v := os.Getenv("BENCH_SEED_VIA"); v != "" {
		s.SeedVia = v
	}
	if v := os.Getenv("BENCH_PROFILE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, "BENCH_PROFILE: not a boolean")
		}
		s.Profile = b
	}
	if v := os.Getenv("BENCH_ARCHIVE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, "BENCH_ARCHIVE: not a boolean")
		}
		s.Archive = b
	}
	s.OutDir = os.Getenv("BENCH_OUT")
	if v := os.Getenv("BENCH_ROWS"); v != "" {
		for _, g := range strings.Split(v, ",") {
			g = strings.TrimSpace(g)
			if !slices.Contains(RowGroups, g) {
				errs = append(errs, fmt.Sprintf("BENCH_ROWS: %q is not one of %s", g, strings.Join(RowGroups, ", ")))
				continue
			}
			s.Rows = append(s.Rows, g)
		}
	}
	if len(errs) > 0 {
		return s, fmt.Errorf("bench settings: %s", strings.Join(errs, "; "))
	}
	return s, s.check()
}

func (s Settings) check() error {
	switch {
	case len(s.Concurrency) == 0 || len(s.Live) == 0:
		return fmt.Errorf("bench settings: BENCH_CONCURRENCY and BENCH_LIVE_PAYMENTS need at least one value")
	case s.Duration <= 0 || s.E2EStep <= 0 || s.E2EMeasure <= 0:
		return fmt.Errorf("bench settings: durations must be positive")
	case s.VerifyBase < readSet || s.Live[0] < s.VerifyBase:
		return fmt.Errorf("bench settings: BENCH_VERIFY_BASE must be at least %d and at most the first BENCH_LIVE_PAYMENTS", readSet)
	case s.ReadConcurrency <= 0 || s.SeedConcurrency <= 0 || s.SeedBatch <= 0:
		return fmt.Errorf("bench settings: concurrencies must be positive")
	case s.SeedVia != "etcd" && s.SeedVia != "api":
		return fmt.Errorf("bench settings: BENCH_SEED_VIA is etcd or api")
	}
	for i := 1; i < len(s.Live); i++ {
		if s.Live[i] <= s.Live[i-1] {
			return fmt.Errorf("bench settings: BENCH_LIVE_PAYMENTS must grow")
		}
	}
	return nil
}
