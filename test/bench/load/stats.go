// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package load is the client side of Paygate's benchmark table (docs/performance.md): the load
// generator's scenarios, its closed-loop and open-loop runners, the latency summaries it reports,
// and a webhook receiver that verifies signatures. cmd/paygate-load runs it as its own process,
// so the load never shares a scheduler or a garbage collector with the servers it measures.
package load

import (
	"math"
	"slices"
	"time"
)

// Summary is a latency distribution in milliseconds.
type Summary struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
}

// Summarize sorts d (in place) and summarises it. Percentiles are nearest-rank: p99 of 100
// samples is the 99th smallest.
func Summarize(d []time.Duration) Summary {
	if len(d) == 0 {
		return Summary{}
	}
	slices.Sort(d)
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return Summary{
		N:    len(d),
		Mean: ms(sum / time.Duration(len(d))),
		P50:  ms(Percentile(d, 0.50)),
		P90:  ms(Percentile(d, 0.90)),
		P99:  ms(Percentile(d, 0.99)),
		P999: ms(Percentile(d, 0.999)),
		Max:  ms(d[len(d)-1]),
	}
}

// Percentile is the nearest-rank percentile p (0 < p <= 1) of sorted durations.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p*float64(len(sorted)))) - 1
	rank = max(0, min(rank, len(sorted)-1))
	return sorted[rank]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// Result is what one run of a scenario reports (JSON on the file named by -out).
type Result struct {
	Scenario    string  `json:"scenario"`
	Merchant    string  `json:"merchant,omitempty"`
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"rate,omitempty"` // open loop: the arrival rate asked for, per second
	// Window is the measured time in seconds (after the warm-up).
	Window float64 `json:"window_s"`
	// Count is the operations that started in the window and succeeded; Errors those that failed.
	Count  int64 `json:"count"`
	Errors int64 `json:"errors"`
	// Total is every successful operation of the run, the warm-up's included (CPU per operation
	// divides by it).
	Total int64 `json:"total"`
	// ErrorSamples are the first few errors, as text.
	ErrorSamples []string `json:"error_samples,omitempty"`
	// Throughput is Count / Window.
	Throughput float64 `json:"throughput"`
	// Latency of the successful operations: closed loop from the send, open loop from the
	// scheduled arrival (so a generator that falls behind shows up as latency, not as a lower
	// rate).
	Latency Summary `json:"latency"`
	// Open loop: arrivals not sent because MaxOutstanding were in flight; the largest delay
	// between a scheduled arrival and its send.
	Dropped     int64   `json:"dropped,omitempty"`
	MaxSendLagM float64 `json:"max_send_lag_ms,omitempty"`

	// Seeded are the names of the last payments the seed wrote (the writes still in flight at its
	// end among them): once a server's cache holds them all, it holds every earlier one.
	Seeded []string `json:"seeded,omitempty"`

	E2E    *E2EResult    `json:"e2e,omitempty"`
	Absorb *AbsorbResult `json:"absorb,omitempty"`
}

// E2EResult is the end-to-end scenario's figures: from the create request to the signed
// payment.completed webhook at the receiver.
type E2EResult struct {
	Arrivals     int64   `json:"arrivals"`
	Created      int64   `json:"created"`
	CreateErrors int64   `json:"create_errors"`
	Received     int64   `json:"received"` // created payments whose payment.completed arrived
	Missing      int64   `json:"missing"`  // created payments whose payment.completed did not arrive within the drain
	Failed       int64   `json:"failed"`   // payment.failed received instead
	AchievedRate float64 `json:"achieved_rate"`
	// Latency is create (scheduled arrival) to the first verified payment.completed delivery.
	Latency Summary `json:"latency"`
	// CreateLatency is the create call alone.
	CreateLatency Summary `json:"create_latency"`
	// EarlyP50 and LateP50 are the median end-to-end latencies of the first and the last quarter
	// of the arrivals: a backlog that grows shows as LateP50 well above EarlyP50.
	EarlyP50 float64 `json:"early_p50_ms"`
	LateP50  float64 `json:"late_p50_ms"`
	// Webhook delivery figures over the run: deliveries received, the ones whose event id had
	// been received before (redeliveries), events emitted twice (two event ids for one payment
	// and type), bad signatures.
	Deliveries    int64 `json:"deliveries"`
	Redeliveries  int64 `json:"redeliveries"`
	EmittedTwice  int64 `json:"emitted_twice"`
	BadSignatures int64 `json:"bad_signatures"`
	// DrainSeconds is how long after the last arrival the tool waited for webhooks.
	DrainSeconds float64 `json:"drain_s"`
}

// AbsorbResult is the balance scenario's figures: the time from the status write that settles a
// payment to the Balance that counts it.
type AbsorbResult struct {
	Payments int64     `json:"payments"` // the merchant's payments when measured
	Samples  []float64 `json:"samples_ms"`
	Median   float64   `json:"median_ms"`
	Max      float64   `json:"max_ms"`
	// CreateObserved is the median time from creating the (pending) payment to the Balance's
	// observedPayments counting it: the same recount, triggered by the create.
	CreateObserved float64 `json:"create_observed_ms"`
}
