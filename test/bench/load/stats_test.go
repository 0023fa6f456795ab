// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package load

import (
	"testing"
	"time"
)

func TestSummarizeNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	s := Summarize(d)
	if s.N != 100 || s.P50 != 50 || s.P90 != 90 || s.P99 != 99 || s.P999 != 100 || s.Max != 100 || s.Mean != 50.5 {
		t.Fatalf("summary of 1..100 ms: %+v", s)
	}
	if got := Summarize(nil); got != (Summary{}) {
		t.Fatalf("empty summary: %+v", got)
	}
	if got := Percentile([]time.Duration{7 * time.Millisecond}, 0.99); got != 7*time.Millisecond {
		t.Fatalf("p99 of one sample: %s", got)
	}
}

func TestQuarterMedianCountsMissingAsLatest(t *testing.T) {
	q := []time.Duration{10 * time.Millisecond, -1, -1}
	if got := quarterMedian(q); got != float64(time.Hour.Milliseconds()) {
		t.Fatalf("two of three missing: median %v ms, want an hour", got)
	}
	if got := quarterMedian([]time.Duration{30 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond}); got != 20 {
		t.Fatalf("median %v ms, want 20", got)
	}
}
