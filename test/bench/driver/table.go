// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package driver

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/paygate/paygate/test/bench/load"
)

// Row is one line of the table. Verdict is PASS or FAIL for a row with a target, "" otherwise.
type Row struct {
	Section string `json:"section"`
	Name    string `json:"name"`
	Value   string `json:"value"`
	P50     string `json:"p50"`
	P99     string `json:"p99"`
	Ratio   string `json:"ratio"`
	Target  string `json:"target"`
	Verdict string `json:"verdict"`
}

// Verification p99 at the largest size may exceed the baseline's by this factor and still count
// as "no worse": two p99s of a few milliseconds measured minutes apart on a shared machine differ
// by more than that without any change.
const verifyNoise = 1.2

// heapTarget is the bound on the manager's heap per live payment.
const heapTarget = 2048

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func msStr(v float64) string {
	switch {
	case v == 0:
		return "–"
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case v < 1000:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f s", v/1000)
}

func rateStr(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f/s", v)
	}
	return fmt.Sprintf("%.1f/s", v)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func kb(bytes float64) string { return fmt.Sprintf("%.2f KB", bytes/1024) }

func clients(n int) string {
	if n == 1 {
		return "1 client"
	}
	return fmt.Sprintf("%d clients", n)
}

func count(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// stackCPUPerOp is the CPU the stack (every process but the load generator) spent per successful
// operation of a row, in milliseconds; 0 when unknown. On a shared machine it moves less from row
// to row than throughput does: it does not depend on how much CPU the neighbours left.
func (r *Report) stackCPUPerOp(key string) float64 {
	res, cpu := r.Results[key], r.CPU[key]
	if res == nil || res.Total == 0 || len(cpu) == 0 {
		return 0
	}
	total := 0.0
	for p, v := range cpu {
		if p != "load" {
			total += v
		}
	}
	return total * 1000 / float64(res.Total)
}

// pairedRatio renders ", paired rounds 0.97x (0.91–1.04x)": the median, lowest and highest of the
// ratios of key's rounds to floor's, round by round (each round of key ran right after floor's,
// so the two saw the same neighbours), or "" without rounds. The table's own ratio compares each
// row's best round, which a single quiet minute can make; the paired median needs most rounds.
func (r *Report) pairedRatio(key, floor string) string {
	median, lo, hi, ok := r.pairedMedian(key, floor)
	if !ok {
		return ""
	}
	return fmt.Sprintf(", paired rounds %.2fx (%.2f–%.2fx)", median, lo, hi)
}

// pairedMedian is the median, lowest and highest of the round-by-round throughput ratios of key
// to floor; ok is false with fewer than two rounds.
func (r *Report) pairedMedian(key, floor string) (median, lo, hi float64, ok bool) {
	a, b := r.Rounds[key], r.Rounds[floor]
	n := min(len(a), len(b))
	if n < 2 {
		return 0, 0, 0, false
	}
	ratios := make([]float64, n)
	for i := range n {
		ratios[i] = ratio(a[i], b[i])
	}
	slices.Sort(ratios)
	median = ratios[n/2]
	if n%2 == 0 {
		median = (ratios[n/2-1] + ratios[n/2]) / 2
	}
	return median, ratios[0], ratios[n-1], true
}

// cpuRatio renders ", 1.04x stack CPU/op" comparing two rows' stack CPU per operation, or "".
func (r *Report) cpuRatio(key, floor string) string {
	a, b := r.stackCPUPerOp(key), r.stackCPUPerOp(floor)
	if a == 0 || b == 0 {
		return ""
	}
	return fmt.Sprintf(", %.2fx stack CPU/op", a/b)
}

// Table turns a report into the table's rows, with the targets of issue 14 judged.
func Table(r *Report) []Row {
	s := r.Settings
	var rows []Row
	add := func(row Row) { rows = append(rows, row) }
	res := func(key string) *load.Result { return r.Results[key] }
	missing := func(section, name string) {
		add(Row{Section: section, Name: name, Value: "not measured"})
	}

	// Create.
	for _, c := range s.Concurrency {
		raw, rest := res(fmt.Sprintf("create-raw-%d", c)), res(fmt.Sprintf("create-rest-%d", c))
		if raw == nil || rest == nil {
			missing("Create", fmt.Sprintf("create at %d clients", c))
			continue
		}
		add(Row{Section: "Create", Name: "raw Payment CR create, " + clients(c), Value: rateStr(raw.Throughput),
			P50: msStr(raw.Latency.P50), P99: msStr(raw.Latency.P99)})
		tr, pr := ratio(rest.Throughput, raw.Throughput), ratio(rest.Latency.P99, raw.Latency.P99)
		add(Row{Section: "Create", Name: "signed POST /api/v1/payments, " + clients(c), Value: rateStr(rest.Throughput),
			P50: msStr(rest.Latency.P50), P99: msStr(rest.Latency.P99),
			Ratio: fmt.Sprintf("%.2fx thr, %.2fx p99", tr, pr) + r.cpuRatio(fmt.Sprintf("create-rest-%d", c), fmt.Sprintf("create-raw-%d", c)) +
				r.pairedRatio(fmt.Sprintf("create-rest-%d", c), fmt.Sprintf("create-raw-%d", c)),
			Target: "≥ 0.9x thr, p99 ≤ 1.5x", Verdict: verdict(tr >= 0.9 && pr <= 1.5 && rest.Errors == 0)})
	}

	// Read.
	rc := s.ReadConcurrency
	rawGet := res(fmt.Sprintf("%s-%d", load.GetRaw, rc))
	if rawGet != nil {
		add(Row{Section: "Read", Name: fmt.Sprintf("raw GET of the Payment, %d clients", rc), Value: rateStr(rawGet.Throughput),
			P50: msStr(rawGet.Latency.P50), P99: msStr(rawGet.Latency.P99)})
		if v := res(fmt.Sprintf("%s-%d", load.Verify, rc)); v != nil {
			t := ratio(v.Throughput, rawGet.Throughput)
			add(Row{Section: "Read", Name: fmt.Sprintf("GET /verify-payment/{id}, %d clients", rc), Value: rateStr(v.Throughput),
				P50: msStr(v.Latency.P50), P99: msStr(v.Latency.P99),
				Ratio: fmt.Sprintf("%.2fx thr", t) + r.cpuRatio(fmt.Sprintf("%s-%d", load.Verify, rc), fmt.Sprintf("%s-%d", load.GetRaw, rc)) +
					r.pairedRatio(fmt.Sprintf("%s-%d", load.Verify, rc), fmt.Sprintf("%s-%d", load.GetRaw, rc)),
				Target: "≥ 10x thr", Verdict: verdict(t >= 10 && v.Errors == 0)})
		}
		if g := res(fmt.Sprintf("%s-%d", load.GetREST, rc)); g != nil {
			add(Row{Section: "Read", Name: fmt.Sprintf("GET /payments/{id}, %d clients", rc), Value: rateStr(g.Throughput),
				P50: msStr(g.Latency.P50), P99: msStr(g.Latency.P99), Ratio: fmt.Sprintf("%.2fx thr", ratio(g.Throughput, rawGet.Throughput)) +
					r.pairedRatio(fmt.Sprintf("%s-%d", load.GetREST, rc), fmt.Sprintf("%s-%d", load.GetRaw, rc))})
		}
	} else {
		missing("Read", "reads at 16 clients")
	}
	if o := res(load.GetRaw + "-open"); o != nil {
		add(Row{Section: "Read", Name: fmt.Sprintf("raw GET at %s open loop", rateStr(s.ReadRate)), Value: rateStr(o.Throughput),
			P50: msStr(o.Latency.P50), P99: msStr(o.Latency.P99)})
		if v := res(load.Verify + "-open"); v != nil {
			add(Row{Section: "Read", Name: fmt.Sprintf("verify-payment at %s open loop", rateStr(s.ReadRate)), Value: rateStr(v.Throughput),
				P50: msStr(v.Latency.P50), P99: msStr(v.Latency.P99), Ratio: fmt.Sprintf("%.2fx p99", ratio(v.Latency.P99, o.Latency.P99)),
				Target: "p99 < 10 ms", Verdict: verdict(v.Latency.P99 < 10 && v.Errors == 0 && v.Dropped == 0)})
		}
		if g := res(load.GetREST + "-open"); g != nil {
			add(Row{Section: "Read", Name: fmt.Sprintf("GET /payments/{id} at %s open loop", rateStr(s.ReadRate)), Value: rateStr(g.Throughput),
				P50: msStr(g.Latency.P50), P99: msStr(g.Latency.P99), Ratio: fmt.Sprintf("%.2fx p99", ratio(g.Latency.P99, o.Latency.P99))})
		}
	}

	// List.
	if l := res(fmt.Sprintf("list-%d", rc)); l != nil {
		row := Row{Section: "List", Name: fmt.Sprintf("GET /payments?limit=100, %s stored, %d clients", count(s.Live[0]), rc),
			Value: rateStr(l.Throughput), P50: msStr(l.Latency.P50), P99: msStr(l.Latency.P99)}
		if rawGet != nil {
			row.Ratio = fmt.Sprintf("%.3fx raw GET thr", ratio(l.Throughput, rawGet.Throughput))
		}
		add(row)
	} else {
		missing("List", "list")
	}
	// The first page and the page at half the merchant's payments, at each size: the largest's
	// p99 against the smallest's, and the records a list renders per second against verify's.
	listSizes := append([]int{s.VerifyBase}, s.Live...)
	verify := res(fmt.Sprintf("%s-%d", load.Verify, rc))
	for _, page := range []struct{ key, name string }{{"list-first", "first page"}, {"list-half", "page at half"}} {
		base := res(fmt.Sprintf("%s-%d-%d", page.key, rc, listSizes[0]))
		for _, n := range listSizes {
			l := res(fmt.Sprintf("%s-%d-%d", page.key, rc, n))
			if l == nil {
				continue
			}
			row := Row{Section: "List", Name: fmt.Sprintf("GET /payments?limit=100, %s, %s stored, %d clients", page.name, count(n), rc),
				Value: rateStr(l.Throughput), P50: msStr(l.Latency.P50), P99: msStr(l.Latency.P99)}
			if n == listSizes[len(listSizes)-1] && base != nil && n != listSizes[0] {
				x := ratio(l.Latency.P99, base.Latency.P99)
				recs := 100 * l.Throughput
				row.Ratio = fmt.Sprintf("%.2fx p99 (%s at %s)", x, msStr(base.Latency.P99), count(listSizes[0]))
				if ps := r.RoundP99s[fmt.Sprintf("%s-%d-%d", page.key, rc, n)]; len(ps) > 1 {
					row.Ratio += fmt.Sprintf(", the median of %d rounds (%s–%s)", len(ps), msStr(slices.Min(ps)), msStr(slices.Max(ps)))
				}
				ok := x <= 1.2 && l.Errors == 0
				row.Target = "p99 ≤ 1.2x the smallest"
				if verify != nil && verify.Throughput > 0 {
					row.Ratio += fmt.Sprintf("; %.0f records/s, %.2fx verify's %.0f", recs, recs/verify.Throughput, verify.Throughput)
					row.Target += ", records/s ≥ 0.5x verify"
					ok = ok && recs >= 0.5*verify.Throughput
				}
				row.Verdict = verdict(ok)
			}
			add(row)
		}
	}

	// The console's payments page at each size: the largest's p99 against the smallest's.
	if base := res(fmt.Sprintf("console-list-%d-%d", rc, listSizes[0])); base != nil {
		for _, n := range listSizes {
			l := res(fmt.Sprintf("console-list-%d-%d", rc, n))
			if l == nil {
				continue
			}
			row := Row{Section: "List", Name: fmt.Sprintf("console payments page (50), %s stored, %d clients", count(n), rc),
				Value: rateStr(l.Throughput), P50: msStr(l.Latency.P50), P99: msStr(l.Latency.P99)}
			if n == listSizes[len(listSizes)-1] && n != listSizes[0] {
				x := ratio(l.Latency.P99, base.Latency.P99)
				row.Ratio = fmt.Sprintf("%.2fx p99 (%s at %s)", x, msStr(base.Latency.P99), count(listSizes[0]))
				row.Target, row.Verdict = "p99 ≤ 1.5x the smallest", verdict(x <= 1.5 && l.Errors == 0)
			}
			add(row)
		}
	}

	// Payouts and subscriptions, against the raw create they ran in alternating rounds with (the
	// create row's raw create at the same concurrency in a run without those rounds), judged on
	// the paired median.
	rawAt := res(fmt.Sprintf("%s-%d", rawPaired, rc))
	if rawAt == nil {
		rawAt = res(fmt.Sprintf("create-raw-%d", rc))
	}
	for _, k := range []struct{ key, name string }{{load.Payout, "POST /api/v1/payouts"}, {load.Subscription, "POST /api/v1/billing/subscriptions"}} {
		key := fmt.Sprintf("%s-%d", k.key, rc)
		x := res(key)
		if x == nil {
			missing("Payouts, subscriptions", k.name)
			continue
		}
		row := Row{Section: "Payouts, subscriptions", Name: fmt.Sprintf("%s, %d clients", k.name, rc), Value: rateStr(x.Throughput),
			P50: msStr(x.Latency.P50), P99: msStr(x.Latency.P99)}
		if rawAt != nil {
			tr, pr := ratio(x.Throughput, rawAt.Throughput), ratio(x.Latency.P99, rawAt.Latency.P99)
			row.Ratio = fmt.Sprintf("%.2fx raw create thr, %.2fx p99", tr, pr) + r.pairedRatio(key, fmt.Sprintf("%s-%d", rawPaired, rc))
			if median, _, _, ok := r.pairedMedian(key, fmt.Sprintf("%s-%d", rawPaired, rc)); ok {
				tr = median
			}
			row.Target = "≥ 0.5x raw create thr (paired median), p99 ≤ 2x"
			row.Verdict = verdict(tr >= 0.5 && pr <= 2 && x.Errors == 0)
		}
		add(row)
	}

	// End to end.
	raw := r.rawCreateMax()
	if len(r.E2ESteps) > 0 {
		sr := ratio(r.Sustainable, raw)
		add(Row{Section: "End to end", Name: "highest sustainable rate of push payments", Value: rateStr(r.Sustainable),
			Ratio: fmt.Sprintf("%.3fx raw create thr (%s)", sr, rateStr(raw)), Target: "≥ 0.2x raw create", Verdict: verdict(sr >= 0.2)})
		for _, pct := range []int{25, 50, 75} {
			e := res(fmt.Sprintf("e2e-%d", pct))
			if e == nil || e.E2E == nil {
				missing("End to end", fmt.Sprintf("at %d%%", pct))
				continue
			}
			row := Row{Section: "End to end", Name: fmt.Sprintf("create → signed payment.completed, %d%% (%s)", pct, rateStr(e.Rate)),
				Value: fmt.Sprintf("%s received", count(int(e.E2E.Received))), P50: msStr(e.E2E.Latency.P50), P99: msStr(e.E2E.Latency.P99)}
			if e.E2E.Missing+e.E2E.CreateErrors > 0 {
				row.Value += fmt.Sprintf(", %d missing, %d create errors", e.E2E.Missing, e.E2E.CreateErrors)
			}
			if pct == 50 {
				row.Target, row.Verdict = "p99 ≤ 1 s", verdict(e.E2E.Latency.P99 <= 1000 && e.E2E.Missing == 0 && e.E2E.Received > 0)
			}
			add(row)
		}
		twice, atReceiver, badSigs := r.Events.EventsTwice+r.Events.DeliveriesTwice, 0, 0
		for _, x := range r.Results {
			if x.E2E != nil {
				atReceiver += int(x.E2E.EmittedTwice)
				badSigs += int(x.E2E.BadSignatures)
			}
		}
		add(Row{Section: "End to end", Name: "events emitted twice for one transition",
			Value: fmt.Sprintf("%d: %d Kubernetes Events of %s, %d WebhookDeliveries of %s, %d at the receivers (%d bad signatures)",
				twice+atReceiver, r.Events.EventsTwice, count(r.Events.Events), r.Events.DeliveriesTwice, count(r.Events.Deliveries), atReceiver, badSigs),
			Target: "0", Verdict: verdict(twice+atReceiver+badSigs == 0)})
	} else {
		missing("End to end", "end to end")
	}

	// Memory and storage.
	for i, n := range s.Live {
		from := "base"
		if i > 0 {
			from = fmt.Sprintf("pre-%d", n)
		}
		at, base := r.Heaps[fmt.Sprintf("live-%d", n)], r.Heaps[from]
		if at == nil || base == nil {
			missing("Memory, storage", fmt.Sprintf("heap at %s", count(n)))
			continue
		}
		for _, p := range []string{"manager", "apiserver"} {
			dl := at[p].LivePayments - base[p].LivePayments
			per := 0.0
			if dl > 0 {
				per = (float64(at[p].Alloc) - float64(base[p].Alloc)) / float64(dl)
			}
			row := Row{Section: "Memory, storage", Name: fmt.Sprintf("%s heap per live payment, %s live", p, count(int(at[p].LivePayments))),
				Value: kb(per), Ratio: fmt.Sprintf("%s heap, +%s payments", mib(at[p].Alloc), count(int(dl)))}
			if p == "manager" {
				row.Target, row.Verdict = "≤ 2 KB", verdict(per <= heapTarget)
			}
			add(row)
		}
	}
	if sg := r.Storage; sg.Payments > 0 {
		add(Row{Section: "Memory, storage", Name: "etcd bytes per payment, with its webhook delivery", Value: fmt.Sprintf("%.0f B", sg.PerPayment),
			Ratio: fmt.Sprintf("%.0f B payment + %.0f B delivery; %.1f writes, +%.0f B db per payment; Events %.0f B", float64(sg.PaymentBytes)/float64(sg.Payments),
				float64(sg.DeliveryBytes)/float64(sg.Payments), sg.WritesPerPayment, sg.DBGrowthPerPaymnt, float64(sg.EventBytes)/float64(sg.Payments))})
	} else {
		missing("Memory, storage", "etcd bytes per payment")
	}
	largest := s.Live[len(s.Live)-1]
	if lo, hi := res(load.Verify+"-open"), res(fmt.Sprintf("verify-open-%d", largest)); lo != nil && hi != nil {
		x := ratio(hi.Latency.P99, lo.Latency.P99)
		add(Row{Section: "Memory, storage", Name: fmt.Sprintf("verify p99 at %s vs %s payments (%s open loop)", count(largest), count(s.VerifyBase), rateStr(s.ReadRate)),
			Value: rateStr(hi.Throughput), P50: msStr(hi.Latency.P50), P99: msStr(hi.Latency.P99), Ratio: fmt.Sprintf("%.2fx p99 (%s)", x, msStr(lo.Latency.P99)),
			Target: fmt.Sprintf("no worse (≤ %.1fx)", verifyNoise), Verdict: verdict(x <= verifyNoise && hi.Errors == 0)})
	}

	// Balance.
	sizes := append([]int{s.VerifyBase}, s.Live...)
	var small *load.AbsorbResult
	for i, n := range sizes {
		a := res(fmt.Sprintf("absorb-%d", n))
		if a == nil || a.Absorb == nil {
			missing("Balance", fmt.Sprintf("absorb at %s", count(n)))
			continue
		}
		row := Row{Section: "Balance", Name: fmt.Sprintf("absorb one settled payment, %s payments", count(int(a.Absorb.Payments))),
			Value: fmt.Sprintf("%d samples", len(a.Absorb.Samples)), P50: msStr(a.Absorb.Median), P99: "max " + msStr(a.Absorb.Max)}
		if small == nil {
			small = a.Absorb
		} else {
			x := ratio(a.Absorb.Median, small.Median)
			row.Ratio = fmt.Sprintf("%.1fx the %s-payment median", x, count(int(small.Payments)))
			if i == len(sizes)-1 {
				row.Target, row.Verdict = "O(1): ≤ 2x", verdict(x <= 2)
			}
		}
		add(row)
	}
	return rows
}

// Markdown renders rows as a Markdown table.
func Markdown(rows []Row) string {
	var b strings.Builder
	b.WriteString("| | Row | Rate / figure | p50 | p99 | Ratio | Target | Result |\n|---|---|---|---|---|---|---|---|\n")
	last := ""
	for _, r := range rows {
		sec := ""
		if r.Section != last {
			sec, last = "**"+r.Section+"**", r.Section
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", sec, r.Name, r.Value, r.P50, r.P99, r.Ratio, r.Target, r.Verdict)
	}
	return b.String()
}

// CPUTable renders the CPU each process spent per operation of the main rows (milliseconds of
// CPU per successful operation, the warm-up included).
func CPUTable(r *Report) string {
	var keys []string
	for k := range r.CPU {
		if strings.HasPrefix(k, "seed") || strings.HasPrefix(k, "e2e-step") || strings.HasPrefix(k, "absorb") {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	procs := []string{"load", "apiserver", "manager", "kube-apiserver", "etcd"}
	var b strings.Builder
	b.WriteString("| Row | load avg | ops | " + strings.Join(procs, " | ") + " | stack (all but load) |\n|---|---|---|" + strings.Repeat("---|", len(procs)+1) + "\n")
	for _, k := range keys {
		res := r.Results[k]
		if res == nil || res.Total == 0 {
			continue
		}
		la := "–"
		if v, ok := r.LoadAvg[k]; ok {
			la = fmt.Sprintf("%.1f", v)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |", k, la, count(int(res.Total)))
		for _, p := range procs {
			fmt.Fprintf(&b, " %.2f |", r.CPU[k][p]*1000/float64(res.Total))
		}
		fmt.Fprintf(&b, " %.2f |\n", r.stackCPUPerOp(k))
	}
	return b.String()
}
