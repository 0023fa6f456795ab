// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Command paygate-load is the load generator of Paygate's benchmark table (docs/performance.md).
// It runs one scenario against a running stack, as its own process, and writes its figures as
// JSON:
//
//	paygate-load -config bench.json -scenario create-rest -concurrency 16 -warmup 2s -duration 8s -out r.json
//	paygate-load -config bench.json -scenario verify -rate 300 -duration 8s -out r.json
//	paygate-load -config bench.json -scenario e2e -rate 40 -duration 10s -drain 10s -out r.json
//
// The driver (test/bench/cmd/paygate-bench, `make bench`) writes the config and runs it for every
// row. Every run is bounded: by -duration, or by -max for the seed and absorb scenarios, and by
// -timeout in any case.
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

	"github.com/paygate/paygate/test/bench/load"
)

func main() {
	var (
		f       load.Flags
		cfgPath string
		out     string
		timeout time.Duration
	)
	flag.StringVar(&cfgPath, "config", "", "The driver's config file (JSON).")
	flag.StringVar(&f.Scenario, "scenario", "", "create-raw, create-rest, get-raw, verify, get-rest, list, payout, subscription, e2e, seed or absorb.")
	flag.StringVar(&f.Merchant, "merchant", "shop", "The merchant's role in the config: shop, bulk or store.")
	flag.IntVar(&f.Concurrency, "concurrency", 1, "Clients of a closed loop (each sends when its previous request answered).")
	flag.Float64Var(&f.Rate, "rate", 0, "Open loop: arrivals per second (0: closed loop).")
	flag.DurationVar(&f.Warmup, "warmup", 0, "Load before the measured window.")
	flag.DurationVar(&f.Duration, "duration", 5*time.Second, "The measured window.")
	flag.Int64Var(&f.Max, "max", 0, "At most this many operations (seed: payments; absorb: samples); 0: no limit.")
	flag.IntVar(&f.MaxOutstanding, "max-outstanding", 2000, "Open loop: arrivals in flight beyond which an arrival is dropped.")
	flag.DurationVar(&f.Drain, "drain", 10*time.Second, "e2e: how long to wait for webhooks after the last arrival.")
	flag.StringVar(&f.Prefix, "prefix", fmt.Sprintf("load-%d", time.Now().UnixNano()), "Prefix of the run's references.")
	flag.StringVar(&f.Via, "via", "api", "seed: api (create, then status, through the Kubernetes API) or etcd (copies of one API-written payment straight into etcd).")
	flag.StringVar(&out, "out", "", "Where to write the result (JSON); stdout when empty.")
	flag.DurationVar(&timeout, "timeout", 30*time.Minute, "The run ends after this long whatever happens.")
	flag.Parse()

	cfg, err := load.ReadConfig(cfgPath)
	if err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := load.Run(ctx, cfg, f)
	if err != nil {
		fail(err)
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		fail(err)
	}
	if out == "" {
		fmt.Println(string(b))
		return
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "paygate-load:", err)
	os.Exit(1)
}
