// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/paygate/paygate/test/bench/driver"
)

// TestBenchQuick runs the benchmark table (docs/performance.md) in its quick mode, every row with
// tiny counts, as a smoke test of the driver, the load generator and the stack under them. It
// runs only when asked (it takes a few minutes and loads the machine), never in `make test`:
//
//	PAYGATE_BENCH_QUICK=1 go test -count=1 -v -timeout 20m -run TestBenchQuick ./test/bench/
//
// BENCH_* variables size it as they size `make bench-quick`. It checks that every row was
// measured, not the targets: those are the table's to report.
func TestBenchQuick(t *testing.T) {
	if os.Getenv("PAYGATE_BENCH_QUICK") == "" {
		t.Skip("the quick benchmark runs only with PAYGATE_BENCH_QUICK=1 (make bench-quick runs the same rows)")
	}
	t.Setenv("BENCH_QUICK", "1")
	s, err := driver.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if s.OutDir == "" {
		s.OutDir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	rep, err := driver.Run(ctx, s, t.Logf)
	if rep != nil {
		t.Logf("\n%s\n%s", driver.Markdown(rep.Rows), driver.CPUTable(rep))
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rows {
		if r.Value == "not measured" {
			t.Errorf("row %s / %s was not measured", r.Section, r.Name)
		}
	}
	if len(rep.Rows) < 25 {
		t.Errorf("only %d rows", len(rep.Rows))
	}
}
