// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package driver

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/test/bench/load"
)

func TestPromSum(t *testing.T) {
	text := []byte(`# HELP workqueue_depth Current depth of workqueue
# TYPE workqueue_depth gauge
workqueue_depth{controller="payment",name="payment"} 3
workqueue_depth{controller="balance",name="balance"} 2 1700000000000
workqueue_depth_other 40
go_memstats_heap_inuse_bytes 1.5e+07
`)
	if v, err := promSum(text, "workqueue_depth"); err != nil || v != 5 {
		t.Fatalf("workqueue_depth = %v, %v; want 5", v, err)
	}
	if v, err := promSum(text, "go_memstats_heap_inuse_bytes"); err != nil || v != 1.5e7 {
		t.Fatalf("heap = %v, %v", v, err)
	}
	if _, err := promSum(text, "absent"); err == nil {
		t.Fatal("an absent metric has no value")
	}
}

func TestRequestCounts(t *testing.T) {
	text := []byte(`apiserver_request_total{code="201",component="apiserver",dry_run="",group="paygate.dev",resource="payments",scope="resource",subresource="",verb="POST",version="v1alpha1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="paygate.dev",resource="payments",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 4
apiserver_request_total{code="409",component="apiserver",dry_run="",group="paygate.dev",resource="payments",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="paygate.dev",resource="payments",scope="resource",subresource="",verb="GET",version="v1alpha1"} 99
apiserver_request_total{code="200",component="apiserver",dry_run="",group="paygate.dev",resource="payments",scope="resource",subresource="",verb="WATCH",version="v1alpha1"} 3
`)
	got := requestCounts(text)
	want := map[string]float64{"payments POST 201": 7, "payments/status PATCH 200": 4, "payments/status PATCH 409": 1, "payments GET 200": 99}
	if len(got) != len(want) {
		t.Fatalf("requestCounts = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("requestCounts[%q] = %v, want %v", k, got[k], v)
		}
	}
}

func TestParseStat(t *testing.T) {
	stat := "4242 (kube apiserver) S 17 4242 4242 0 -1 4194560 1 0 0 0 250 50 0 0 20 0 12 0 100 0 0"
	if d, err := parseStatCPU(stat); err != nil || d != 3*time.Second {
		t.Fatalf("cpu = %s, %v; want 3s (300 ticks)", d, err)
	}
	if comm, ppid := statComm(stat); comm != "kube apiserver" || ppid != 17 {
		t.Fatalf("comm %q ppid %d", comm, ppid)
	}
}

func e2eResult(rate float64, mut func(*load.Result)) *load.Result {
	r := &load.Result{Rate: rate, E2E: &load.E2EResult{Created: 100, Received: 100, AchievedRate: rate,
		EarlyP50: 100, LateP50: 120, Latency: load.Summary{P50: 110, P99: 400}}}
	if mut != nil {
		mut(r)
	}
	return r
}

func TestSustainable(t *testing.T) {
	bound := 3 * time.Second
	if ok, why := Sustainable(e2eResult(10, nil), 10, bound); !ok {
		t.Fatalf("a steady step is sustainable: %s", why)
	}
	for name, mut := range map[string]func(*load.Result){
		"missing webhook":  func(r *load.Result) { r.E2E.Missing = 1 },
		"create error":     func(r *load.Result) { r.E2E.CreateErrors = 1 },
		"dropped arrival":  func(r *load.Result) { r.Dropped = 1 },
		"growing backlog":  func(r *load.Result) { r.E2E.LateP50 = 500 },
		"p99 over bound":   func(r *load.Result) { r.E2E.Latency.P99 = 3500 },
		"rate not reached": func(r *load.Result) { r.E2E.AchievedRate = 8 },
	} {
		if ok, _ := Sustainable(e2eResult(10, mut), 10, bound); ok {
			t.Errorf("%s: judged sustainable", name)
		}
	}
}

func TestTableJudgesTargets(t *testing.T) {
	s := Quick()
	s.Concurrency = []int{16}
	r := &Report{Settings: s, Results: map[string]*load.Result{
		"create-raw-16":  {Throughput: 200, Latency: load.Summary{P50: 50, P99: 100}},
		"create-rest-16": {Throughput: 190, Latency: load.Summary{P50: 55, P99: 160}},
		"get-raw-16":     {Throughput: 1000, Latency: load.Summary{P50: 10, P99: 30}},
		"verify-16":      {Throughput: 12000, Latency: load.Summary{P50: 1, P99: 5}},
		"verify-open":    {Throughput: 300, Latency: load.Summary{P50: 1, P99: 4}},
		"get-raw-open":   {Throughput: 300, Latency: load.Summary{P50: 2, P99: 8}},
	}, Heaps: map[string]map[string]Heap{
		"base":      {"manager": {Alloc: 10 << 20, LivePayments: 100}, "apiserver": {Alloc: 8 << 20, LivePayments: 100}},
		"live-1000": {"manager": {Alloc: 10<<20 + 900*1500, LivePayments: 1000}, "apiserver": {Alloc: 8<<20 + 900*4000, LivePayments: 1000}},
	}}
	rows := Table(r)
	verdicts := map[string]string{}
	for _, row := range rows {
		verdicts[row.Name] = row.Verdict
	}
	for name, want := range map[string]string{
		"signed POST /api/v1/payments, 16 clients":    "FAIL", // p99 1.6x
		"GET /verify-payment/{id}, 16 clients":        "PASS", // 12x
		"verify-payment at 300/s open loop":           "PASS",
		"manager heap per live payment, 1,000 live":   "PASS", // 1.46 KB
		"apiserver heap per live payment, 1,000 live": "",
		"raw Payment CR create, 16 clients":           "",
	} {
		if got, ok := verdicts[name]; !ok || got != want {
			t.Errorf("%s: verdict %q (present %v), want %q", name, got, ok, want)
		}
	}
	if _, ok := verdicts["list"]; !ok {
		t.Error("the list, not measured, has no row saying so")
	}
	md := Markdown(rows)
	if !strings.Contains(md, "| **Create** | raw Payment CR create, 16 clients | 200/s |") || !strings.Contains(md, "not measured") {
		t.Fatalf("markdown:\n%s", md)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("BENCH_QUICK", "1")
	t.Setenv("BENCH_CONCURRENCY", "2,4")
	t.Setenv("BENCH_E2E_STEP", "5s")
	s, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if !s.Quick || len(s.Concurrency) != 2 || s.Concurrency[1] != 4 || s.E2EStep != 5*time.Second || s.Live[0] != Quick().Live[0] {
		t.Fatalf("settings %+v", s)
	}
	t.Setenv("BENCH_LIVE_PAYMENTS", "5000,1000")
	if _, err := FromEnv(); err == nil {
		t.Fatal("sizes that shrink are refused")
	}
}

func TestSearchRate(t *testing.T) {
	for _, c := range []struct {
		name  string
		start float64
		limit float64 // the stack sustains rates up to this
		want  float64
		tries []float64
	}{
		{"up, then bisect", 10, 40, 38.1, []float64{10, 15, 22.5, 33.8, 50.7, 42.3, 38.1}},
		{"down from a first failure", 10, 3, 2.5, []float64{10, 5, 2.5, 3.8, 3.2}},
		{"nothing passes", 1, 0, 0, []float64{1, 0.5}},
	} {
		var tried []float64
		got, err := SearchRate(c.start, 1000, 8, 2, func(r float64) (bool, error) {
			tried = append(tried, r)
			return r <= c.limit, nil
		})
		if err != nil || got != c.want || fmt.Sprint(tried) != fmt.Sprint(c.tries) {
			t.Errorf("%s: SearchRate = %v, %v after %v; want %v after %v", c.name, got, err, tried, c.want, c.tries)
		}
	}
}

func TestParseHeapProfile(t *testing.T) {
	text := []byte("heap profile: 1: 2 [3: 4] @ heap/1048576\n1: 2 [3: 4] @ 0x1\n\n# runtime.MemStats\n# Alloc = 10\n# TotalAlloc = 99\n# Sys = 4000\n# HeapAlloc = 1234\n# HeapSys = 5\n# HeapInuse = 2048\n# HeapObjects = 17\n")
	h, err := parseHeapProfile(text)
	if err != nil || h.Alloc != 1234 || h.Inuse != 2048 || h.Objects != 17 || h.Sys != 4000 {
		t.Fatalf("parseHeapProfile = %+v, %v", h, err)
	}
	if _, err := parseHeapProfile([]byte("heap profile: 1: 2 [3: 4] @ heap/1048576\n")); err == nil {
		t.Fatal("a profile without MemStats parsed")
	}
}

// TestPairedRatio: the ratio of each round to the floor's round that ran just before it, their
// median and range; nothing without rounds.
func TestPairedRatio(t *testing.T) {
	r := &Report{Rounds: map[string][]float64{
		"create-raw-1":  {100, 200, 100, 50},
		"create-rest-1": {90, 100, 110, 50},
		"verify-16":     {10000, 9000, 8000},
		"get-raw-16":    {1000, 1000, 400},
		"single":        {5},
	}}
	for _, tt := range []struct{ key, floor, want string }{
		{"create-rest-1", "create-raw-1", ", paired rounds 0.95x (0.50–1.10x)"}, // 0.9, 0.5, 1.1, 1.0
		{"verify-16", "get-raw-16", ", paired rounds 10.00x (9.00–20.00x)"},
		{"single", "create-raw-1", ""},
		{"create-rest-16", "create-raw-16", ""},
	} {
		if got := r.pairedRatio(tt.key, tt.floor); got != tt.want {
			t.Errorf("pairedRatio(%s, %s) = %q, want %q", tt.key, tt.floor, got, tt.want)
		}
	}
}

// TestPayoutsJudgedOnPairedMedian: a payout row passes on the median of its rounds against the raw
// create it alternated with, whatever its best round against the raw create's best round says.
func TestPayoutsJudgedOnPairedMedian(t *testing.T) {
	s := Settings{ReadConcurrency: 16, Concurrency: []int{16}, Live: []int{10000}, VerifyBase: 1000}
	res := func(thr, p99 float64) *load.Result {
		return &load.Result{Throughput: thr, Latency: load.Summary{P99: p99}}
	}
	for _, tt := range []struct {
		name        string
		raw, payout []float64
		p99         float64
		want        string
	}{
		{"median met, best round not", []float64{200, 100, 100}, []float64{60, 55, 52}, 100, "PASS"}, // 0.30, 0.55, 0.52; best 60/200
		{"median missed", []float64{100, 100, 100}, []float64{40, 60, 45}, 100, "FAIL"},
		{"p99 over twice the raw's", []float64{100, 100, 100}, []float64{60, 60, 60}, 250, "FAIL"},
	} {
		r := &Report{Settings: s, Results: map[string]*load.Result{
			"create-raw-paired-16": res(slices.Max(tt.raw), 100),
			"payout-16":            res(slices.Max(tt.payout), tt.p99),
		}, Rounds: map[string][]float64{"create-raw-paired-16": tt.raw, "payout-16": tt.payout}}
		var got *Row
		for _, row := range Table(r) {
			if strings.HasPrefix(row.Name, "POST /api/v1/payouts") {
				got = &row
			}
		}
		if got == nil || got.Verdict != tt.want {
			t.Errorf("%s: payout row %+v, want verdict %s", tt.name, got, tt.want)
		}
	}
}
