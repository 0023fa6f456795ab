// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package driver runs Paygate's benchmark table (docs/performance.md, `make bench`): it builds the
// production paygate binary, starts etcd and kube-apiserver (envtest), the manager and the
// apiserver as separate processes, a merchant world and a webhook receiver, then runs the load
// generator (test/bench/cmd/paygate-load) as a separate process for every row, and prints one
// table with each figure, its ratio to the floor measured in the same run, and the issue's
// targets.
package driver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/test/bench/load"
	"github.com/paygate/paygate/test/testenv"
)

// Report is everything a run measured (results.json in the output directory).
type Report struct {
	Settings Settings  `json:"settings"`
	Machine  Machine   `json:"machine"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Dir      string    `json:"dir"`

	// Results of the load tool, by row key (create-raw-16, verify-open, e2e-50, ...).
	Results map[string]*load.Result `json:"results"`
	// CPU seconds each process used during each row.
	CPU map[string]map[string]float64 `json:"cpu_seconds"`
	// Heaps by stage (base, live-10000, pre-100000, live-100000) and process.
	Heaps map[string]map[string]Heap `json:"heaps"`
	// Backlog is the manager's work queue depth when each load row ended.
	Backlog map[string]float64 `json:"backlog"`
	// LoadAvg is the machine's 1-minute load average when each row started: on a shared machine,
	// what the others were doing.
	LoadAvg map[string]float64 `json:"loadavg"`
	// Rounds are the throughputs of each round of the rows run in alternating rounds, in the
	// order they ran, by row key (create-raw-16: [r1, r2, ...]).
	Rounds map[string][]float64 `json:"rounds,omitempty"`
	// RoundP99s are the p99s (ms) of the same rounds.
	RoundP99s map[string][]float64 `json:"round_p99s,omitempty"`
	// TerminatedWatchers is kube-apiserver's count of watches it closed because their client did
	// not keep up (apiserver_terminated_watchers_total), by resource, at the end of the run.
	TerminatedWatchers map[string]float64 `json:"terminated_watchers"`

	E2ESteps    []E2EStep  `json:"e2e_steps"`
	Sustainable float64    `json:"sustainable_rate"`
	Events      EventCheck `json:"events"`
	Storage     Storage    `json:"storage"`
	Profiles    []string   `json:"profiles,omitempty"`

	Rows []Row `json:"rows"`
}

// Machine describes where the run ran.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	MemoryGiB int    `json:"memory_gib"`
	Go        string `json:"go"`
	Kernel    string `json:"kernel"`
	Load      string `json:"loadavg_at_start"`
}

// E2EStep is one step of the search for the highest sustainable end-to-end rate.
type E2EStep struct {
	Rate        float64 `json:"rate"`
	Sustainable bool    `json:"sustainable"`
	Why         string  `json:"why,omitempty"`
	P50         float64 `json:"p50_ms"`
	P99         float64 `json:"p99_ms"`
	Result      string  `json:"result"`
}

// Storage is the storage row: payments through their whole life (create, push, settlement,
// webhook delivered) in a namespace of their own, then what etcd holds for them.
type Storage struct {
	Payments      int64   `json:"payments"`
	PaymentBytes  int64   `json:"payment_bytes"`
	DeliveryKeys  int64   `json:"delivery_keys"`
	DeliveryBytes int64   `json:"delivery_bytes"`
	EventKeys     int64   `json:"event_keys"`
	EventBytes    int64   `json:"event_bytes"`
	Writes        int64   `json:"writes"`          // etcd revisions during the run (every writer)
	DBGrowth      float64 `json:"db_growth_bytes"` // etcd_mvcc_db_total_size_in_use_in_bytes after - before
	// Requests are kube-apiserver's requests (all but watches) during the run per payment, by
	// "resource[/subresource] VERB code" (409: an optimistic-lock conflict).
	Requests          map[string]float64 `json:"requests_per_payment"`
	PerPayment        float64            `json:"bytes_per_payment"`
	WritesPerPayment  float64            `json:"writes_per_payment"`
	DBGrowthPerPaymnt float64            `json:"db_growth_per_payment"`
}

// Run runs every row and returns the report; logf reports progress.
func Run(ctx context.Context, s Settings, logf func(format string, args ...any)) (rep *Report, err error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	root, err := testenv.ModuleRoot()
	if err != nil {
		return nil, err
	}
	if s.OutDir == "" {
		s.OutDir, err = os.MkdirTemp("", "paygate-bench-")
		if err != nil {
			return nil, err
		}
	}
	for _, d := range []string{"results", "profiles"} {
		if err := os.MkdirAll(filepath.Join(s.OutDir, d), 0o755); err != nil {
			return nil, err
		}
	}
	rep = &Report{Settings: s, Machine: machine(), Started: time.Now(), Dir: s.OutDir,
		Results: map[string]*load.Result{}, CPU: map[string]map[string]float64{}, Heaps: map[string]map[string]Heap{},
		Backlog: map[string]float64{}, LoadAvg: map[string]float64{}, Rounds: map[string][]float64{},
		RoundP99s: map[string][]float64{}}
	st := &stack{s: s, dir: s.OutDir, root: root}
	defer st.stop()
	b := &bench{st: st, rep: rep, logf: logf}

	logf("bench: building paygate (production build) and paygate-load into %s", s.OutDir)
	if err := st.build(ctx); err != nil {
		return rep, err
	}
	logf("bench: starting etcd and kube-apiserver")
	if err := st.startControlPlane(); err != nil {
		return rep, err
	}
	if s.Archive {
		logf("bench: starting PostgreSQL for the archive (BENCH_ARCHIVE=0 runs without it)")
		if err := st.startArchive(ctx); err != nil {
			return rep, err
		}
	}
	logf("bench: starting paygate manager and paygate apiserver")
	if err := st.startServers(ctx); err != nil {
		return rep, err
	}
	logf("bench: creating the gateway, merchants, plan, templates and the read set")
	if err := st.setupWorld(ctx); err != nil {
		return rep, err
	}
	err = b.rows(ctx)
	if tw, werr := st.terminatedWatchers(ctx); werr == nil {
		rep.TerminatedWatchers = tw
	}
	rep.Finished = time.Now()
	rep.Rows = Table(rep)
	if werr := writeJSON(filepath.Join(s.OutDir, "results.json"), rep); werr != nil {
		err = errors.Join(err, werr)
	}
	if werr := os.WriteFile(filepath.Join(s.OutDir, "table.md"), []byte(Markdown(rep.Rows)+"\n"+CPUTable(rep)), 0o644); werr != nil {
		err = errors.Join(err, werr)
	}
	return rep, err
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

type bench struct {
	st   *stack
	rep  *Report
	logf func(format string, args ...any)
	// profileNext asks the next load run for CPU profiles.
	profileNext *profileRequest
}

// rows runs the rows in an order that keeps each one's conditions: the reads and the verify
// baseline while the seeded merchant holds VerifyBase payments, the list and the first memory
// size before the create rows add their own payments, the largest size last.
func (b *bench) rows(ctx context.Context) error {
	s := b.st.s
	b.quiesce(ctx)
	if err := b.heapStage(ctx, "base"); err != nil {
		return err
	}
	if err := b.seedTo(ctx, s.VerifyBase); err != nil {
		return err
	}
	if s.Runs("live") {
		if err := b.absorb(ctx, s.VerifyBase); err != nil {
			return err
		}
	}
	if s.Runs("reads") {
		if err := b.reads(ctx); err != nil {
			return err
		}
	}
	// The rows that add payments of their own run between the first size and the next (after the
	// only one when there is one).
	writing := func() error {
		for _, row := range []struct {
			group string
			run   func(context.Context) error
		}{{"creates", b.creates}, {"e2e", b.e2e}, {"storage", b.storage}, {"payouts", b.payoutsAndSubscriptions}} {
			if !s.Runs(row.group) {
				continue
			}
			if err := row.run(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	if !s.Runs("live") {
		return writing()
	}
	for i, n := range s.Live {
		if i == 1 {
			if err := writing(); err != nil {
				return err
			}
		}
		if err := b.liveStage(ctx, n, i == 0); err != nil {
			return err
		}
	}
	if len(s.Live) == 1 {
		if err := writing(); err != nil {
			return err
		}
	}
	if s.Profile {
		for _, p := range []string{"manager", "apiserver"} {
			path := filepath.Join(b.st.dir, "profiles", fmt.Sprintf("heap-%d-%s.pprof", s.Live[len(s.Live)-1], p))
			if err := b.st.heapProfile(ctx, p, path); err != nil {
				b.logf("bench: heap profile of the %s: %v", p, err)
				continue
			}
			b.rep.Profiles = append(b.rep.Profiles, path)
		}
	}
	return nil
}

// ---- running the load tool ----

// cpuSnapshot is the CPU time of each long-lived process.
func (b *bench) cpuSnapshot() map[string]time.Duration {
	out := map[string]time.Duration{}
	pids := childrenNamed("etcd", "kube-apiserver")
	pids["manager"], pids["apiserver"] = b.st.manager.pid(), b.st.apiserver.pid()
	for name, pid := range pids {
		if t, err := cpuTime(pid); err == nil {
			out[name] = t
		}
	}
	return out
}

// load runs the load tool for one row (key) and keeps its result and the CPU each process used.
func (b *bench) load(ctx context.Context, key string, args ...string) (*load.Result, error) {
	out := filepath.Join(b.st.dir, "results", key+".json")
	args = append([]string{"-config", b.st.cfgPath, "-out", out, "-prefix", key + "-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)}, args...)
	logPath := filepath.Join(b.st.dir, "results", key+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, b.st.loadBin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	b.rep.LoadAvg[key] = loadAvg()
	before := b.cpuSnapshot()
	runErr := cmd.Start()
	if runErr == nil {
		wait := func() {}
		if req := b.profileNext; req != nil {
			b.profileNext = nil
			wait = b.startProfiles(ctx, req)
		}
		runErr = cmd.Wait()
		wait()
	}
	after := b.cpuSnapshot()
	if runErr != nil {
		tail, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("paygate-load %s: %w\n%s", key, runErr, tail)
	}
	cpu := map[string]float64{}
	for name, t := range after {
		cpu[name] = (t - before[name]).Seconds()
	}
	if ps := cmd.ProcessState; ps != nil {
		cpu["load"] = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	res := &load.Result{}
	if err := json.Unmarshal(raw, res); err != nil {
		return nil, err
	}
	b.rep.Results[key], b.rep.CPU[key] = res, cpu
	if d, err := b.st.metric(ctx, "manager", "workqueue_depth"); err == nil {
		b.rep.Backlog[key] = d
	}
	return res, nil
}

func (b *bench) closed(ctx context.Context, key, scenario, merchant string, concurrency int) (*load.Result, error) {
	s := b.st.s
	b.quiesce(ctx)
	res, err := b.load(ctx, key, "-scenario", scenario, "-merchant", merchant, "-concurrency", strconv.Itoa(concurrency),
		"-warmup", s.Warmup.String(), "-duration", s.Duration.String())
	if err == nil {
		b.logf("bench: %-22s %8.1f/s  p50 %7.2f ms  p99 %7.2f ms  errors %d", key, res.Throughput, res.Latency.P50, res.Latency.P99, res.Errors)
	}
	return res, err
}

func (b *bench) open(ctx context.Context, key, scenario, merchant string, rate float64) (*load.Result, error) {
	s := b.st.s
	b.quiesce(ctx)
	res, err := b.load(ctx, key, "-scenario", scenario, "-merchant", merchant, "-rate", ftoa(rate),
		"-warmup", s.Warmup.String(), "-duration", s.Duration.String())
	if err == nil {
		b.logf("bench: %-22s @%6.1f/s  p50 %7.2f ms  p99 %7.2f ms  errors %d dropped %d", key, rate, res.Latency.P50, res.Latency.P99, res.Errors, res.Dropped)
	}
	return res, err
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func (b *bench) quiesce(ctx context.Context) {
	if took, depth := b.st.quiesce(ctx, 3*time.Minute); took > 5*time.Second {
		b.logf("bench: waited %s for the manager's queues to empty (depth now %.0f)", took.Round(time.Second), depth)
	}
}

// idle waits (at most 3 minutes) until the stack's processes together use less than a quarter of
// a core over two seconds, twice in a row.
func (b *bench) idle(ctx context.Context) {
	start, quiet := time.Now(), 0
	for time.Since(start) < 3*time.Minute && ctx.Err() == nil && quiet < 2 {
		before := b.cpuSnapshot()
		time.Sleep(2 * time.Second)
		var used time.Duration
		for name, t := range b.cpuSnapshot() {
			used += t - before[name]
		}
		if used < 500*time.Millisecond {
			quiet++
		} else {
			quiet = 0
		}
	}
	if took := time.Since(start); took > 10*time.Second {
		b.logf("bench: waited %s for the stack to go idle", took.Round(time.Second))
	}
}

// profiled runs f with CPU profiles of the manager, the apiserver and kube-apiserver taken for
// seconds from the start of f's load run (when profiling is on).
func (b *bench) profiled(name string, seconds int, f func() error) error {
	if b.st.s.Profile && seconds > 0 {
		b.profileNext = &profileRequest{name: name, seconds: seconds}
	}
	defer func() { b.profileNext = nil }()
	return f()
}

type profileRequest struct {
	name    string
	seconds int
}

// startProfiles starts the profiles of req; wait returns when they are written.
func (b *bench) startProfiles(ctx context.Context, req *profileRequest) (wait func()) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	take := func(process string, get func(path string) error) {
		defer wg.Done()
		path := filepath.Join(b.st.dir, "profiles", fmt.Sprintf("cpu-%s-%s.pprof", req.name, process))
		if err := get(path); err != nil {
			b.logf("bench: CPU profile of %s during %s: %v", process, req.name, err)
			return
		}
		mu.Lock()
		b.rep.Profiles = append(b.rep.Profiles, path)
		mu.Unlock()
	}
	wg.Add(3)
	for _, p := range []string{"manager", "apiserver"} {
		go take(p, func(path string) error { return b.st.cpuProfile(ctx, p, req.seconds, path) })
	}
	go take("kube-apiserver", func(path string) error { return b.st.kubeAPIServerProfile(ctx, req.seconds, path) })
	return wg.Wait
}

// ---- stages ----

func (b *bench) heapStage(ctx context.Context, stage string) error {
	live, err := b.st.livePayments(ctx, "")
	if err != nil {
		return err
	}
	hs := map[string]Heap{}
	for _, p := range []string{"manager", "apiserver"} {
		h, err := b.st.heap(ctx, p)
		if err != nil {
			return fmt.Errorf("heap of the %s: %w", p, err)
		}
		h.LivePayments = live
		hs[p] = h
	}
	b.rep.Heaps[stage] = hs
	b.logf("bench: heap at %-14s %7d live payments: manager %s, apiserver %s", stage, live, mib(hs["manager"].Alloc), mib(hs["apiserver"].Alloc))
	return nil
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// seedTo seeds the bulk merchant up to n payments, in batches of SeedBatch: after each, it waits
// until the apiserver's cache holds the batch's last payments and the manager's balance counts
// them all. A burst the informers cannot follow gets their watches closed by kube-apiserver
// ("terminated watchers"); pacing the seed by what they absorbed keeps them live.
func (b *bench) seedTo(ctx context.Context, n int) error {
	bulk := b.st.cfg.Merchants["bulk"]
	have, err := b.st.livePayments(ctx, bulk.Namespace)
	if err != nil {
		return err
	}
	if int64(n) <= have {
		return nil
	}
	b.quiesce(ctx)
	start, wrote, seeded := time.Now(), time.Duration(0), int64(0)
	for batch := 1; have < int64(n); batch++ {
		count := min(int64(n)-have, int64(b.st.s.SeedBatch))
		t := time.Now()
		res, err := b.load(ctx, fmt.Sprintf("seed-%d-%d", n, batch), "-scenario", load.Seed, "-merchant", "bulk", "-via", b.st.s.SeedVia,
			"-concurrency", strconv.Itoa(b.st.s.SeedConcurrency), "-max", strconv.FormatInt(count, 10))
		if err != nil {
			return err
		}
		if res.Errors > 0 {
			return fmt.Errorf("seeding: %d of %d payments failed, e.g. %v", res.Errors, count, res.ErrorSamples)
		}
		wrote += time.Since(t)
		have += count
		seeded += count
		if err := b.caughtUp(ctx, have, res.Seeded); err != nil {
			return err
		}
	}
	b.quiesce(ctx)
	b.logf("bench: seeded %d settled payments (%d now, via %s) in %s; writing took %s", seeded, n, b.st.s.SeedVia,
		time.Since(start).Round(time.Second), wrote.Round(time.Second))
	return nil
}

// caughtUp waits until the apiserver's cache holds the named payments of the bulk merchant (its
// informer sees them in the order they were written, so it holds every earlier one too) and the
// manager's balance of the bulk merchant counts n payments.
func (b *bench) caughtUp(ctx context.Context, n int64, names []string) error {
	bulk := b.st.cfg.Merchants["bulk"]
	c := b.st.clients["bulk"]
	return eventuallyEvery(ctx, "the servers see the seeded payments", 200*time.Millisecond, 10*time.Minute, func() error {
		for len(names) > 0 {
			if _, err := c.VerifyPayment(ctx, names[0]); err != nil {
				return fmt.Errorf("the apiserver does not know %s yet: %w", names[0], err)
			}
			names = names[1:]
		}
		bal := &paygatev1.Balance{}
		if err := b.st.k8s.Get(ctx, client.ObjectKey{Namespace: bulk.Namespace, Name: paygatev1.BalanceName(bulk.Name, paygatev1.EnvironmentSandbox)}, bal); err != nil {
			return err
		}
		if bal.Status.ObservedPayments < n {
			return fmt.Errorf("the balance counted %d of %d", bal.Status.ObservedPayments, n)
		}
		return nil
	})
}

func (b *bench) absorb(ctx context.Context, n int) error {
	b.quiesce(ctx)
	res, err := b.load(ctx, fmt.Sprintf("absorb-%d", n), "-scenario", load.Absorb, "-merchant", "bulk",
		"-max", strconv.Itoa(b.st.s.AbsorbRepeats), "-timeout", "20m")
	if err != nil {
		return err
	}
	b.logf("bench: absorb one settled payment at %d payments: median %.1f ms, max %.1f ms", res.Absorb.Payments, res.Absorb.Median, res.Absorb.Max)
	return nil
}

func (b *bench) reads(ctx context.Context) error {
	s := b.st.s
	// Not profiled: profiling three processes costs the row it watches (the verify row, when
	// profiled, once ran at 3,800/s against 6,500/s for get-payment right after it).
	if err := b.ratioRows(ctx, rowsAt(s.ReadConcurrency, "bulk", load.GetRaw, load.Verify, load.GetREST), s.ReadConcurrency, 0); err != nil {
		return err
	}
	b.idle(ctx)
	for _, sc := range []string{load.GetRaw, load.Verify, load.GetREST} {
		if _, err := b.open(ctx, sc+"-open", sc, "bulk", s.ReadRate); err != nil {
			return err
		}
	}
	return b.listPages(ctx, s.VerifyBase)
}

// listPages runs the list rows at n stored payments: the first page and the page at half the
// merchant's payments, each at the read concurrency (list-first-<c>-<n>, list-half-<c>-<n>), and
// the console's first page of payments (console-list-<c>-<n>), in
// alternating rounds, each keeping its round with the median p99. At the largest size the first
// round of each is profiled: where a page's time goes with the most payments.
func (b *bench) listPages(ctx context.Context, n int) error {
	c, profile := b.st.s.ReadConcurrency, 0
	if n == b.st.s.Live[len(b.st.s.Live)-1] {
		profile = int(math.Round((b.st.s.Warmup + b.st.s.Duration).Seconds()))
	}
	// Latency rows compared across sizes: not under kube-apiserver's digestion of a seed.
	b.idle(ctx)
	return b.latencyRows(ctx, []roundRow{
		{key: fmt.Sprintf("list-first-%d-%d", c, n), scenario: load.List, merchant: "bulk"},
		{key: fmt.Sprintf("list-half-%d-%d", c, n), scenario: load.ListHalf, merchant: "bulk"},
		{key: fmt.Sprintf("console-list-%d-%d", c, n), scenario: load.ConsoleList, merchant: "bulk"},
	}, c, profile)
}

// rawPaired is the key prefix of the raw create the payout and subscription rows are paired with.
const rawPaired = "create-raw-paired"

// liveStage seeds the bulk merchant to n payments and measures the heaps, the verify latency at
// the fixed rate and the balance; the first stage also runs the list row.
func (b *bench) liveStage(ctx context.Context, n int, first bool) error {
	if !first {
		b.quiesce(ctx)
		if err := b.heapStage(ctx, fmt.Sprintf("pre-%d", n)); err != nil {
			return err
		}
	}
	if err := b.seedTo(ctx, n); err != nil {
		return err
	}
	if err := b.heapStage(ctx, fmt.Sprintf("live-%d", n)); err != nil {
		return err
	}
	if first {
		if _, err := b.closed(ctx, fmt.Sprintf("list-%d", b.st.s.ReadConcurrency), load.List, "bulk", b.st.s.ReadConcurrency); err != nil {
			return err
		}
	}
	// A latency row compares sizes, not the seeding's tail: kube-apiserver and the informers go
	// on digesting a large seed (watch-cache, compaction, GC) after the servers have counted it.
	b.idle(ctx)
	if _, err := b.open(ctx, fmt.Sprintf("verify-open-%d", n), load.Verify, "bulk", b.st.s.ReadRate); err != nil {
		return err
	}
	if err := b.listPages(ctx, n); err != nil {
		return err
	}
	if n == b.st.s.Live[len(b.st.s.Live)-1] {
		// Where the balance reconciler's time goes with the most payments.
		return b.profiled(fmt.Sprintf("absorb-%d", n), 10, func() error { return b.absorb(ctx, n) })
	}
	return b.absorb(ctx, n)
}

func (b *bench) creates(ctx context.Context) error {
	s := b.st.s
	for _, c := range s.Concurrency {
		profile := 0
		if c == s.Concurrency[len(s.Concurrency)-1] {
			// Profiles under the largest concurrency: where each process spends its time.
			profile = int(math.Round((s.Warmup + s.Duration).Seconds()))
		}
		if err := b.ratioRows(ctx, rowsAt(c, "shop", load.CreateRaw, load.CreateREST), c, profile); err != nil {
			return err
		}
	}
	return nil
}

// roundRow is one row of a set run in alternating rounds: its key, its scenario and the merchant
// it runs as.
type roundRow struct{ key, scenario, merchant string }

// rowsAt names scenarios' rows at concurrency c (<scenario>-<c>), each run as merchant.
func rowsAt(c int, merchant string, scenarios ...string) []roundRow {
	rows := make([]roundRow, len(scenarios))
	for i, sc := range scenarios {
		rows[i] = roundRow{key: fmt.Sprintf("%s-%d", sc, c), scenario: sc, merchant: merchant}
	}
	return rows
}

// ratioRows runs the closed-loop rows of one ratio in alternating rounds, a b a b ..., and keeps
// for each row its round with the highest throughput. On a shared machine a neighbour's burst
// during one row moves a ratio by more than its target's margin; alternating, the rows see the
// same neighbours, and a burst has to hit every round of a row to move its figure. The first
// round of each row is profiled for profile seconds (0: none). Each round's result stays in the
// output directory (<row>.r<i>.json).
func (b *bench) ratioRows(ctx context.Context, rows []roundRow, c, profile int) error {
	return b.roundRows(ctx, rows, c, profile, func(rs []*load.Result) int {
		best := 0
		for i, r := range rs {
			if r.Throughput > rs[best].Throughput {
				best = i
			}
		}
		return best
	})
}

// latencyRows runs rows in alternating rounds as ratioRows does and keeps for each row its round
// with the median p99: a p99 compared across sizes (the list rows) is judged on a typical round,
// not on the one a neighbour's burst made or the quietest minute.
func (b *bench) latencyRows(ctx context.Context, rows []roundRow, c, profile int) error {
	return b.roundRows(ctx, rows, c, profile, func(rs []*load.Result) int {
		order := make([]int, len(rs))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(x, y int) int { return cmp.Compare(rs[x].Latency.P99, rs[y].Latency.P99) })
		return order[len(order)/2]
	})
}

// roundRows runs rows in b.st.s.Rounds alternating rounds at concurrency c; keep picks the round
// each row's key then stands for. Every round's throughput and p99 stay in the report (Rounds,
// RoundP99s).
func (b *bench) roundRows(ctx context.Context, rows []roundRow, c, profile int, keep func([]*load.Result) int) error {
	rounds := max(b.st.s.Rounds, 1)
	ran := map[string][]*load.Result{}
	for i := range rounds {
		for _, row := range rows {
			round := row.key
			if rounds > 1 {
				round = fmt.Sprintf("%s.r%d", row.key, i+1)
			}
			var res *load.Result
			run := func() (err error) { res, err = b.closed(ctx, round, row.scenario, row.merchant, c); return err }
			if i == 0 && profile > 0 {
				if err := b.profiled(row.key, profile, run); err != nil {
					return err
				}
			} else if err := run(); err != nil {
				return err
			}
			ran[row.key] = append(ran[row.key], res)
		}
	}
	if rounds == 1 {
		return nil
	}
	for _, row := range rows {
		key, rs := row.key, ran[row.key]
		for _, r := range rs {
			b.rep.Rounds[key] = append(b.rep.Rounds[key], r.Throughput)
			b.rep.RoundP99s[key] = append(b.rep.RoundP99s[key], r.Latency.P99)
		}
		round := fmt.Sprintf("%s.r%d", key, keep(rs)+1)
		b.rep.Results[key], b.rep.CPU[key], b.rep.LoadAvg[key], b.rep.Backlog[key] =
			b.rep.Results[round], b.rep.CPU[round], b.rep.LoadAvg[round], b.rep.Backlog[round]
		for i := range rounds {
			r := fmt.Sprintf("%s.r%d", key, i+1)
			delete(b.rep.Results, r)
			delete(b.rep.CPU, r)
			delete(b.rep.LoadAvg, r)
			delete(b.rep.Backlog, r)
		}
		b.logf("bench: %-22s kept of %d alternating rounds: %s", key, rounds, round)
	}
	return nil
}

func (b *bench) payoutsAndSubscriptions(ctx context.Context) error {
	s := b.st.s
	// Paired with a raw create of their own (create-raw-paired-<c>): the rows a ratio compares run
	// in alternating rounds, so each payout and subscription round has its raw round beside it.
	c := s.ReadConcurrency
	rows := append([]roundRow{{key: fmt.Sprintf("%s-%d", rawPaired, c), scenario: load.CreateRaw, merchant: "shop"}},
		rowsAt(c, "flow", load.Payout, load.Subscription)...)
	return b.ratioRows(ctx, rows, c, 0)
}

// ---- end to end ----

// rawCreateMax is the highest raw create throughput of the run: the stack's write floor.
func (r *Report) rawCreateMax() float64 {
	best := 0.0
	for _, c := range r.Settings.Concurrency {
		if res := r.Results[fmt.Sprintf("create-raw-%d", c)]; res != nil && res.Throughput > best {
			best = res.Throughput
		}
	}
	return best
}

// minQuarter is the fewest arrivals per quarter for the backlog test: the medians of smaller
// quarters say more about the machine's neighbours than about a backlog.
const minQuarter = 8

// Sustainable judges one end-to-end step at rate: every payment created and announced, the
// arrivals kept up, the backlog not growing (the median of the last quarter of arrivals within
// 1.5 times the first quarter's plus 200 ms, with quarters of minQuarter arrivals or more) and the
// p99 within maxP99.
func Sustainable(res *load.Result, rate float64, maxP99 time.Duration) (bool, string) {
	e := res.E2E
	switch {
	case e == nil:
		return false, "no end-to-end figures"
	case e.CreateErrors > 0:
		return false, fmt.Sprintf("%d creates failed", e.CreateErrors)
	case res.Dropped > 0:
		return false, fmt.Sprintf("%d arrivals dropped (too many in flight)", res.Dropped)
	case e.Missing > 0:
		return false, fmt.Sprintf("%d webhooks missing after %.0f s", e.Missing, e.DrainSeconds)
	case e.Failed > 0:
		return false, fmt.Sprintf("%d payments failed", e.Failed)
	case e.AchievedRate < 0.9*rate:
		return false, fmt.Sprintf("only %.1f/s created", e.AchievedRate)
	case e.Created >= 4*minQuarter && e.LateP50 > 1.5*e.EarlyP50+200:
		return false, fmt.Sprintf("backlog grows: median %.0f ms in the first quarter, %.0f ms in the last", e.EarlyP50, e.LateP50)
	case e.Latency.P99 > float64(maxP99.Milliseconds()):
		return false, fmt.Sprintf("p99 %.0f ms over %s", e.Latency.P99, maxP99)
	}
	return true, ""
}

func (b *bench) e2eRun(ctx context.Context, key string, rate float64, d time.Duration) (*load.Result, error) {
	b.quiesce(ctx)
	drain := b.st.s.E2EMaxP99 + 10*time.Second
	res, err := b.load(ctx, key, "-scenario", load.E2E, "-merchant", "flow", "-rate", ftoa(rate),
		"-duration", d.String(), "-drain", drain.String())
	if err != nil {
		return nil, err
	}
	b.logf("bench: %-22s @%6.1f/s  p50 %7.1f ms  p99 %7.1f ms  created %d received %d missing %d (quarters %.0f→%.0f ms)",
		key, rate, res.E2E.Latency.P50, res.E2E.Latency.P99, res.E2E.Created, res.E2E.Received, res.E2E.Missing, res.E2E.EarlyP50, res.E2E.LateP50)
	return res, nil
}

// SearchRate finds the highest rate try judges sustainable: from start up by half each step
// (down by half while nothing passed yet), at most maxSteps tries, then bisections between the
// highest rate that passed and the lowest that failed. Rates are rounded to 0.1/s; it never goes
// above limit or below 0.5/s. It returns 0 when nothing passed.
func SearchRate(start, limit float64, maxSteps, bisections int, try func(rate float64) (bool, error)) (float64, error) {
	round := func(r float64) float64 { return math.Round(r*10) / 10 }
	good, bad := 0.0, 0.0
	rate := round(start)
	for i := 0; i < maxSteps; i++ {
		ok, err := try(rate)
		if err != nil {
			return good, err
		}
		if ok {
			good = rate
			if bad > 0 {
				break
			}
			if rate = round(rate * 1.5); rate > limit {
				break
			}
			continue
		}
		bad = rate
		if good > 0 {
			break
		}
		if rate = round(rate / 2); rate < 0.5 {
			break
		}
	}
	for i := 0; i < bisections && good > 0 && bad > 0; i++ {
		mid := round((good + bad) / 2)
		if mid <= good || mid >= bad {
			break
		}
		ok, err := try(mid)
		if err != nil {
			return good, err
		}
		if ok {
			good = mid
		} else {
			bad = mid
		}
	}
	return good, nil
}

// e2e searches the highest sustainable rate of sandbox push payments (SearchRate from 5% of the
// raw create throughput), and measures at 25, 50 and 75% of it.
func (b *bench) e2e(ctx context.Context) error {
	s := b.st.s
	raw := b.rep.rawCreateMax()
	if raw <= 0 {
		return errors.New("no raw create throughput to start the end-to-end search from")
	}
	good, err := SearchRate(math.Max(1, raw*0.05), 2*raw, s.E2EMaxSteps, s.E2EBisections, func(r float64) (bool, error) {
		key := fmt.Sprintf("e2e-step-%s", ftoa(r))
		res, err := b.e2eRun(ctx, key, r, s.E2EStep)
		if err != nil {
			return false, err
		}
		ok, why := Sustainable(res, r, s.E2EMaxP99)
		b.rep.E2ESteps = append(b.rep.E2ESteps, E2EStep{Rate: r, Sustainable: ok, Why: why, P50: res.E2E.Latency.P50, P99: res.E2E.Latency.P99, Result: key})
		if !ok {
			b.logf("bench: %.1f/s is not sustainable: %s", r, why)
		}
		return ok, nil
	})
	if err != nil {
		return err
	}
	b.rep.Sustainable = good
	base := good
	if base == 0 {
		base = math.Max(1, math.Round(raw*0.05)) // nothing was sustainable: measure below the first step anyway
	}
	for _, pct := range []int{25, 50, 75} {
		r := math.Max(0.5, math.Round(base*float64(pct))/100)
		key := fmt.Sprintf("e2e-%d", pct)
		run := func() error { _, err := b.e2eRun(ctx, key, r, s.E2EMeasure); return err }
		if pct == 50 {
			if err := b.profiled(key, int(math.Round(s.E2EMeasure.Seconds())), run); err != nil {
				return err
			}
		} else if err := run(); err != nil {
			return err
		}
	}
	b.quiesce(ctx)
	ev, err := b.st.checkEvents(ctx, b.st.cfg.Merchants["flow"].Namespace)
	if err != nil {
		return err
	}
	b.rep.Events = ev
	b.logf("bench: %d payment Events, %d emitted twice; %d webhook deliveries, %d emitted twice", ev.Events, ev.EventsTwice, ev.Deliveries, ev.DeliveriesTwice)
	return nil
}

// storage runs StoragePayments through their whole life in the store merchant's namespace and
// reads what etcd holds for them.
func (b *bench) storage(ctx context.Context) error {
	st := b.st
	ns := st.cfg.Merchants["store"].Namespace
	b.quiesce(ctx)
	_, _, rev0, err := st.etcdRange(ctx, "/registry/paygate.dev/payments/"+ns+"/")
	if err != nil {
		return err
	}
	db0, err := st.etcdDBInUse(ctx)
	if err != nil {
		return err
	}
	w0, err := st.kubeRequests(ctx)
	if err != nil {
		return err
	}
	n := st.s.StoragePayments
	rate := math.Max(1, math.Min(20, float64(n)/5))
	res, err := b.load(ctx, "storage", "-scenario", load.E2E, "-merchant", "store", "-rate", ftoa(rate),
		"-duration", (time.Duration(float64(n)/rate*float64(time.Second)) + time.Second).String(), "-max", strconv.Itoa(n), "-drain", "30s")
	if err != nil {
		return err
	}
	b.quiesce(ctx)
	// The deliveries' status is written after the receiver answered: wait for the queues, then read.
	sg := Storage{}
	var rev int64
	if sg.Payments, sg.PaymentBytes, rev, err = st.etcdRange(ctx, "/registry/paygate.dev/payments/"+ns+"/"); err != nil {
		return err
	}
	if sg.DeliveryKeys, sg.DeliveryBytes, _, err = st.etcdRange(ctx, "/registry/paygate.dev/webhookdeliveries/"+ns+"/"); err != nil {
		return err
	}
	if sg.EventKeys, sg.EventBytes, _, err = st.etcdRange(ctx, "/registry/events/"+ns+"/"); err != nil {
		return err
	}
	db1, err := st.etcdDBInUse(ctx)
	if err != nil {
		return err
	}
	w1, err := st.kubeRequests(ctx)
	if err != nil {
		return err
	}
	sg.Writes, sg.DBGrowth = rev-rev0, db1-db0
	if sg.Payments > 0 {
		sg.Requests = map[string]float64{}
		for k, v := range w1 {
			if d := v - w0[k]; d > 0 {
				sg.Requests[k] = math.Round(d/float64(sg.Payments)*100) / 100
			}
		}
		sg.PerPayment = float64(sg.PaymentBytes+sg.DeliveryBytes) / float64(sg.Payments)
		sg.WritesPerPayment = float64(sg.Writes) / float64(sg.Payments)
		sg.DBGrowthPerPaymnt = sg.DBGrowth / float64(sg.Payments)
	}
	b.rep.Storage = sg
	if err := st.keepSamples(ctx, ns); err != nil {
		b.logf("bench: keeping a sample payment and delivery: %v", err)
	}
	b.logf("bench: storage: %d payments (%d received their webhook): %.0f bytes each with its delivery, %.1f etcd writes each, db +%.0f bytes each",
		sg.Payments, res.E2E.Received, sg.PerPayment, sg.WritesPerPayment, sg.DBGrowthPerPaymnt)
	return nil
}

// ---- the machine ----

func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				if i := strings.IndexByte(line, ':'); i > 0 {
					m.CPU = strings.TrimSpace(line[i+1:])
				}
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			m.MemoryGiB = int(math.Round(float64(kb) / (1 << 20)))
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.Load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return m
}

// loadAvg is the 1-minute load average.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// Logger returns a progress function writing to w with the elapsed time.
func Logger(w io.Writer) func(format string, args ...any) {
	start := time.Now()
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
}

// keepSamples writes one payment and one webhook delivery of namespace ns, as kube-apiserver
// serves them (managed fields included), to samples/ in the output directory: what each write of
// the storage row carried.
func (st *stack) keepSamples(ctx context.Context, ns string) error {
	if err := os.MkdirAll(filepath.Join(st.dir, "samples"), 0o755); err != nil {
		return err
	}
	for name, list := range map[string]client.ObjectList{"payment": &paygatev1.PaymentList{}, "webhookdelivery": &paygatev1.WebhookDeliveryList{}} {
		if err := st.k8s.List(ctx, list, client.InNamespace(ns), client.Limit(1)); err != nil {
			return err
		}
		items, err := meta.ExtractList(list)
		if err != nil || len(items) == 0 {
			return fmt.Errorf("no %s to keep (%v)", name, err)
		}
		if err := writeJSON(filepath.Join(st.dir, "samples", name+".json"), items[0]); err != nil {
			return err
		}
	}
	return nil
}
