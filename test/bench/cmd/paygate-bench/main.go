// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command paygate-bench runs Paygate's benchmark table (docs/performance.md): `make bench` (about
// 15 minutes on a 2-core machine) or `make bench-quick` (BENCH_QUICK=1: every row with tiny
// counts, a few minutes). BENCH_* variables size the run (test/bench/driver.Settings). Progress
// goes to stderr; the table to stdout; logs, profiles and results.json stay in the output
// directory (BENCH_OUT, else a new directory under $TMPDIR), whose path is printed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/paygate/paygate/test/bench/driver"
)

func main() {
	render := flag.String("render", "", "Print the table of an earlier run's results.json instead of running.")
	flag.Parse()
	if *render != "" {
		b, err := os.ReadFile(*render)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		rep := &driver.Report{}
		if err := json.Unmarshal(b, rep); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		print(rep)
		return
	}
	s, err := driver.FromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Every run ends by itself: no more than an hour whatever happens.
	ctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	rep, err := driver.Run(ctx, s, driver.Logger(os.Stderr))
	if rep != nil && len(rep.Rows) > 0 {
		print(rep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "paygate-bench:", err)
		os.Exit(1)
	}
}

func print(rep *driver.Report) {
	rep.Rows = driver.Table(rep)
	fmt.Println()
	fmt.Print(driver.Markdown(rep.Rows))
	fmt.Println()
	fmt.Println("CPU milliseconds per operation, by process:")
	fmt.Println()
	fmt.Print(driver.CPUTable(rep))
	fmt.Printf("\n%s, %d cores, %s; %s; started %s, took %s. Logs, profiles and results.json: %s\n",
		rep.Machine.CPU, rep.Machine.Cores, rep.Machine.Go, mode(rep.Settings), rep.Started.Format(time.RFC3339),
		rep.Finished.Sub(rep.Started).Round(time.Second), rep.Dir)
}

func mode(s driver.Settings) string {
	m := "full run"
	if s.Quick {
		m = "BENCH_QUICK=1"
	}
	if s.Archive {
		return m + ", with the PostgreSQL archive"
	}
	return m + ", without the archive (BENCH_ARCHIVE=0)"
}
