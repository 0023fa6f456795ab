// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package load

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Op is one operation of a scenario; seq numbers the operations of a run from 1, and at is when
// it was scheduled (open loop) or sent (closed loop).
type Op func(ctx context.Context, seq int64, at time.Time) error

// recorder collects the latencies and errors of the operations that started in the window.
type recorder struct {
	total   atomic.Int64 // successful operations, warm-up included
	mu      sync.Mutex
	lat     []time.Duration
	errs    int64
	samples []string
}

func (r *recorder) add(d time.Duration, err error) {
	if err == nil {
		r.total.Add(1)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errs++
		if len(r.samples) < 5 {
			r.samples = append(r.samples, err.Error())
		}
		return
	}
	r.lat = append(r.lat, d)
}

func (r *recorder) result(window time.Duration) *Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := &Result{Window: window.Seconds(), Count: int64(len(r.lat)), Total: r.total.Load(), Errors: r.errs, ErrorSamples: r.samples}
	if window > 0 {
		res.Throughput = float64(res.Count) / window.Seconds()
	}
	res.Latency = Summarize(r.lat)
	return res
}

// ClosedLoop runs op on concurrency workers, each sending its next operation when the previous
// one answered, for warmup then duration (or until limit operations started, when limit > 0). Only
// the operations that start after the warm-up and before the end count; the window ends at the
// end of the duration, or at the last answer when the limit stopped the run first.
func ClosedLoop(ctx context.Context, concurrency int, warmup, duration time.Duration, limit int64, op Op) *Result {
	var (
		rec     recorder
		seq     atomic.Int64
		wg      sync.WaitGroup
		lastMu  sync.Mutex
		lastEnd time.Time
	)
	start := time.Now()
	from, until := start.Add(warmup), start.Add(warmup+duration)
	for range max(1, concurrency) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t := time.Now()
				if !t.Before(until) {
					return
				}
				n := seq.Add(1)
				if limit > 0 && n > limit {
					return
				}
				err := op(ctx, n, t)
				end := time.Now()
				if t.Before(from) && err == nil {
					rec.total.Add(1)
				}
				if !t.Before(from) {
					rec.add(end.Sub(t), err)
					lastMu.Lock()
					if end.After(lastEnd) {
						lastEnd = end
					}
					lastMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	window := until.Sub(from)
	if limit > 0 && seq.Load() > limit && lastEnd.Before(until) {
		window = lastEnd.Sub(from)
	}
	res := rec.result(window)
	res.Concurrency = concurrency
	return res
}

// OpenLoop sends op at a fixed rate, whatever the answers: arrival i is scheduled at
// start + i/rate, for warmup then duration (or limit arrivals when limit > 0). An arrival finds its
// own goroutine, unless maxOutstanding operations are in flight already: then it is dropped and
// counted. Latency runs from the scheduled arrival, so a late send counts against the system (no
// coordinated omission). It returns when every operation sent has answered.
func OpenLoop(ctx context.Context, rate float64, warmup, duration time.Duration, limit int64, maxOutstanding int, op Op) *Result {
	var (
		rec         recorder
		wg          sync.WaitGroup
		outstanding atomic.Int64
		dropped     int64
		maxLag      time.Duration
		lastAt      time.Time
	)
	start := time.Now()
	from, until := start.Add(warmup), start.Add(warmup+duration)
	interval := float64(time.Second) / rate
	for i := int64(0); ctx.Err() == nil; i++ {
		at := start.Add(time.Duration(float64(i) * interval))
		if !at.Before(until) || (limit > 0 && i >= limit) {
			break
		}
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		} else if -d > maxLag {
			maxLag = -d
		}
		if maxOutstanding > 0 && outstanding.Load() >= int64(maxOutstanding) {
			if !at.Before(from) {
				dropped++
			}
			continue
		}
		lastAt = at
		outstanding.Add(1)
		wg.Add(1)
		go func(seq int64, at time.Time) {
			defer wg.Done()
			defer outstanding.Add(-1)
			err := op(ctx, seq, at)
			if !at.Before(from) {
				rec.add(time.Since(at), err)
			} else if err == nil {
				rec.total.Add(1)
			}
		}(i+1, at)
	}
	wg.Wait()
	window := until.Sub(from)
	if end := lastAt.Add(time.Duration(interval)); limit > 0 && end.Before(until) {
		window = end.Sub(from)
	}
	res := rec.result(window)
	res.Rate, res.Dropped, res.MaxSendLagM = rate, dropped, ms(maxLag)
	return res
}
