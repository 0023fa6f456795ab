// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package ratelimit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// fakeClock is a manually advanced clock, safe for concurrent use.
func newFakeClock() *testingclock.FakeClock {
	return testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

// drain calls Allow until it is denied and returns how many were allowed
// and the retryAfter of the denial.
func drain(t *testing.T, l *Limiter, key string, perMinute int) (int, time.Duration) {
	t.Helper()
	for n := 0; n <= perMinute+1; n++ {
		if ok, retry := l.Allow(key, perMinute); !ok {
			return n, retry
		}
	}
	t.Fatalf("key %q at %d/min was never denied", key, perMinute)
	return 0, 0
}

func TestBurstThenDeny(t *testing.T) {
	tests := []struct {
		perMinute int
		wantRetry time.Duration
	}{
		{120, time.Second},      // 0.5 s to the next token
		{60, time.Second},       // exactly 1 s
		{1, time.Minute},        // 60 s
		{7, 9 * time.Second},    // 8.57 s rounds up
		{30, 2 * time.Second},   // exactly 2 s
		{6000, time.Second},     // 10 ms rounds up to the 1 s minimum
		{2, 30 * time.Second},   // 30 s
		{59, 2 * time.Second},   // 1.017 s rounds up
		{45, 2 * time.Second},   // 1.333 s
		{3, 20 * time.Second},   // 20 s
		{1000, 1 * time.Second}, // 60 ms
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/min", tt.perMinute), func(t *testing.T) {
			l := New(newFakeClock().Now, 100)
			n, retry := drain(t, l, "biz|198.51.100.7", tt.perMinute)
			if n != tt.perMinute {
				t.Errorf("allowed %d, want %d", n, tt.perMinute)
			}
			if retry != tt.wantRetry {
				t.Errorf("retryAfter = %v, want %v", retry, tt.wantRetry)
			}
		})
	}
}

func TestRefill(t *testing.T) {
	tests := []struct {
		name      string
		perMinute int
		advance   time.Duration
		wantAllow int
		wantRetry time.Duration
	}{
		{"120/min after 30s gives 60", 120, 30 * time.Second, 60, time.Second},
		{"120/min after 1m gives full", 120, time.Minute, 120, time.Second},
		{"120/min after 1h is capped at capacity", 120, time.Hour, 120, time.Second},
		{"120/min after 499ms gives none", 120, 499 * time.Millisecond, 0, time.Second},
		{"120/min after 500ms gives one", 120, 500 * time.Millisecond, 1, time.Second},
		{"60/min after 1s gives one", 60, time.Second, 1, time.Second},
		{"1/min after 30s gives none, 30s to wait", 1, 30 * time.Second, 0, 30 * time.Second},
		{"1/min after 59.5s rounds retry up to 1s", 1, 59500 * time.Millisecond, 0, time.Second},
		{"1/min after 60s gives one", 1, time.Minute, 1, time.Minute},
		{"10/min after 13s gives two", 10, 13 * time.Second, 2, 5 * time.Second}, // 2.1667 tokens, 0.8333 token = 5 s
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			l := New(clock.Now, 100)
			if n, _ := drain(t, l, "k", tt.perMinute); n != tt.perMinute {
				t.Fatalf("initial burst %d, want %d", n, tt.perMinute)
			}
			clock.Step(tt.advance)
			n, retry := drain(t, l, "k", tt.perMinute)
			if n != tt.wantAllow || retry != tt.wantRetry {
				t.Errorf("after %v: allowed %d retry %v, want %d retry %v", tt.advance, n, retry, tt.wantAllow, tt.wantRetry)
			}
		})
	}
}

func TestContinuousRefill(t *testing.T) {
	clock := newFakeClock()
	l := New(clock.Now, 10)
	drain(t, l, "k", 120)
	// Steady 2 requests per second are all allowed at 120/min.
	for i := range 100 {
		clock.Step(500 * time.Millisecond)
		if ok, _ := l.Allow("k", 120); !ok {
			t.Fatalf("request %d at the refill rate denied", i)
		}
		if ok, _ := l.Allow("k", 120); ok {
			t.Fatalf("request %d above the refill rate allowed", i)
		}
	}
}

func TestKeysIndependent(t *testing.T) {
	l := New(newFakeClock().Now, 100)
	if n, _ := drain(t, l, "biz_1|203.0.113.1", 120); n != 120 {
		t.Fatalf("first key allowed %d", n)
	}
	for _, key := range []string{"biz_1|203.0.113.2", "biz_2|203.0.113.1", "", "biz_1|203.0.113.1 "} {
		if n, _ := drain(t, l, key, 120); n != 120 {
			t.Errorf("key %q allowed %d, want 120", key, n)
		}
	}
	if ok, _ := l.Allow("biz_1|203.0.113.1", 120); ok {
		t.Error("first key refilled by other keys")
	}
}

func TestPerMinuteChanges(t *testing.T) {
	t.Run("raised limit grants no instant tokens but refills faster", func(t *testing.T) {
		clock := newFakeClock()
		l := New(clock.Now, 10)
		drain(t, l, "k", 120)
		if ok, _ := l.Allow("k", 240); ok {
			t.Fatal("raising the limit granted a token")
		}
		clock.Step(30 * time.Second)
		if n, _ := drain(t, l, "k", 240); n != 120 {
			t.Errorf("after 30s at 240/min allowed %d, want 120", n)
		}
		clock.Step(time.Minute)
		if n, _ := drain(t, l, "k", 240); n != 240 {
			t.Errorf("after 1m at 240/min allowed %d, want 240 (new capacity)", n)
		}
	})
	t.Run("lowered limit caps saved tokens", func(t *testing.T) {
		l := New(newFakeClock().Now, 10)
		if ok, _ := l.Allow("k", 120); !ok {
			t.Fatal("first request denied")
		}
		if n, retry := drain(t, l, "k", 10); n != 10 || retry != 6*time.Second {
			t.Errorf("after lowering to 10/min allowed %d retry %v, want 10 and 6s", n, retry)
		}
	})
}

func TestShare(t *testing.T) {
	for _, tt := range []struct{ limit, replicas, want int }{
		{120, 1, 120}, {120, 0, 120}, {120, -3, 120},
		{120, 2, 60}, {120, 3, 40}, {120, 7, 18}, {100, 3, 34},
		{1, 3, 1}, {2, 3, 1}, {3, 3, 1}, {4, 3, 2},
		{0, 3, 0}, {-1, 3, -1},
		{MaxPerMinute, 3, MaxPerMinute/3 + 1},
	} {
		got := Share(tt.limit, tt.replicas)
		if got != tt.want {
			t.Errorf("Share(%d, %d) = %d, want %d", tt.limit, tt.replicas, got, tt.want)
		}
		if tt.limit >= 1 && tt.replicas >= 1 {
			// A pinned client never gets more than the limit; all replicas together allow at
			// least the limit and at most limit+replicas-1.
			if got > tt.limit || got*tt.replicas < tt.limit || got*tt.replicas > tt.limit+tt.replicas-1 {
				t.Errorf("Share(%d, %d) = %d is out of bounds", tt.limit, tt.replicas, got)
			}
		}
	}
}

// TestSharedLimitFollowsReplicas: a replica passes Allow its share of the limit; when the
// number of replicas changes, the bucket's rate and capacity follow at once.
func TestSharedLimitFollowsReplicas(t *testing.T) {
	clock := newFakeClock()
	l := New(clock.Now, 10)
	if n, _ := drain(t, l, "k", Share(120, 3)); n != 40 {
		t.Fatalf("3 replicas: allowed %d, want 40", n)
	}
	// One replica went: the share rises to 60, with no instant tokens; the bucket refills at
	// 60/min, up to 60.
	if ok, _ := l.Allow("k", Share(120, 2)); ok {
		t.Fatal("2 replicas: the raised share granted a token at once")
	}
	clock.Step(30 * time.Second)
	if n, _ := drain(t, l, "k", Share(120, 2)); n != 30 {
		t.Fatalf("2 replicas after 30s: allowed %d, want 30", n)
	}
	clock.Step(time.Minute)
	if n, _ := drain(t, l, "k", Share(120, 2)); n != 60 {
		t.Fatalf("2 replicas after a minute: allowed %d, want 60", n)
	}
	// A replica joined again: the share falls to 40 and the saved tokens are capped at once.
	clock.Step(time.Minute)
	if n, _ := drain(t, l, "k", Share(120, 3)); n != 40 {
		t.Fatalf("3 replicas again: allowed %d, want 40", n)
	}
}

func TestInvalidAndExtremeRates(t *testing.T) {
	l := New(newFakeClock().Now, 10)
	for _, pm := range []int{0, -1, math.MinInt} {
		if ok, retry := l.Allow("k", pm); ok || retry != time.Minute {
			t.Errorf("Allow(%d) = %v, %v; want false, 1m", pm, ok, retry)
		}
	}
	if l.Len() != 0 {
		t.Errorf("invalid rates created %d buckets", l.Len())
	}
	for _, pm := range []int{MaxPerMinute, MaxPerMinute + 1, math.MaxInt} {
		for range 1000 {
			if ok, _ := l.Allow(fmt.Sprint("big", pm), pm); !ok {
				t.Fatalf("Allow(%d) denied within capacity", pm)
			}
		}
	}
}

func TestMaxRateNoOverflow(t *testing.T) {
	clock := newFakeClock()
	l := New(clock.Now, 10)
	for _, step := range []time.Duration{0, time.Millisecond, time.Second, 59 * time.Second, 59*time.Second + 999*time.Millisecond, time.Minute, time.Hour} {
		clock.Step(step)
		for range 3 {
			if ok, _ := l.Allow("k", MaxPerMinute); !ok {
				t.Fatalf("denied at MaxPerMinute after %v", step)
			}
		}
	}
	// Lowering from the maximum to 1/min keeps exactly one token.
	if n, retry := drain(t, l, "k", 1); n != 1 || retry != time.Minute {
		t.Errorf("after lowering to 1/min: allowed %d retry %v, want 1 and 1m", n, retry)
	}
}

func TestClockGoingBackwards(t *testing.T) {
	clock := newFakeClock()
	l := New(clock.Now, 10)
	drain(t, l, "k", 60)
	clock.Step(-time.Hour)
	if ok, retry := l.Allow("k", 60); ok || retry != time.Second {
		t.Errorf("after clock went back: %v %v, want denied 1s", ok, retry)
	}
	clock.Step(time.Hour + time.Second)
	if n, _ := drain(t, l, "k", 60); n != 1 {
		t.Errorf("after clock recovered: allowed %d, want 1", n)
	}
}

func TestNilClockAndDefaults(t *testing.T) {
	l := New(nil, 0)
	if ok, _ := l.Allow("k", 1); !ok {
		t.Error("first request denied")
	}
	if total := shardBound(l); total != DefaultMaxKeys {
		t.Errorf("bound %d, want DefaultMaxKeys", total)
	}
}

func shardBound(l *Limiter) int {
	total := 0
	for i := range l.shards {
		total += l.shards[i].max
	}
	return total
}

func TestEvictionBound(t *testing.T) {
	for _, maxKeys := range []int{1, 3, 15, 16, 17, 100, 1000} {
		t.Run(fmt.Sprint(maxKeys), func(t *testing.T) {
			clock := newFakeClock()
			l := New(clock.Now, maxKeys)
			if b := shardBound(l); b != maxKeys {
				t.Fatalf("shard bounds add up to %d", b)
			}
			for i := range 20 * maxKeys {
				l.Allow(fmt.Sprintf("biz|10.0.%d.%d", i/256, i%256), 120)
				if i%7 == 0 {
					clock.Step(100 * time.Millisecond)
				}
				if n := l.Len(); n > maxKeys {
					t.Fatalf("after %d keys Len = %d > %d", i+1, n, maxKeys)
				}
			}
			checkInvariants(t, l)
		})
	}
}

func TestEvictionOrder(t *testing.T) {
	clock := newFakeClock()
	l := newLimiter(clock.Now, 3, 1)
	has := func(key string) bool { _, ok := l.shards[0].buckets[key]; return ok }

	// "a" is least recently used and drained; "b" took one token at
	// 10/min and is full again 6 s later; "c" is drained and recent.
	drain(t, l, "a", 10)
	l.Allow("b", 10)
	drain(t, l, "c", 10)
	clock.Step(10 * time.Second)

	l.Allow("d", 10) // must evict the full "b", not the LRU "a"
	if has("b") || !has("a") || !has("c") || !has("d") {
		t.Fatalf("full bucket not evicted first: a=%v b=%v c=%v d=%v", has("a"), has("b"), has("c"), has("d"))
	}
	// "a" kept its state: 10 s at 10/min refilled only 1 token.
	if n, _ := drain(t, l, "a", 10); n != 1 {
		t.Errorf("a allowed %d after eviction round, want 1 (state kept)", n)
	}

	// Now nothing is full: "c" is least recently used ("a" was just used,
	// "d" is newer than "c").
	l.Allow("e", 10)
	if has("c") || !has("a") || !has("d") || !has("e") {
		t.Fatalf("LRU not evicted: a=%v c=%v d=%v e=%v", has("a"), has("c"), has("d"), has("e"))
	}
	// An evicted key comes back with a full bucket.
	if n, _ := drain(t, l, "c", 10); n != 10 {
		t.Errorf("re-created bucket allowed %d, want 10", n)
	}
	checkInvariants(t, l)
}

func TestRandomOperationsKeepInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	clock := newFakeClock()
	l := newLimiter(clock.Now, 37, 4)
	for i := range 20000 {
		key := fmt.Sprint("k", rng.IntN(120))
		l.Allow(key, 1+rng.IntN(200))
		if rng.IntN(10) == 0 {
			clock.Step(time.Duration(rng.Int64N(int64(3 * time.Second))))
		}
		if i%500 == 0 {
			checkInvariants(t, l)
		}
	}
	checkInvariants(t, l)
}

// checkInvariants verifies each shard's map, recency list and heap agree.
func checkInvariants(t *testing.T, l *Limiter) {
	t.Helper()
	for si := range l.shards {
		s := &l.shards[si]
		s.mu.Lock()
		if len(s.buckets) > s.max {
			t.Errorf("shard %d holds %d > %d", si, len(s.buckets), s.max)
		}
		n := 0
		var prev *bucket
		for b := s.head; b != nil; b = b.next {
			if b.prev != prev || s.buckets[b.key] != b {
				t.Fatalf("shard %d: broken list at %q", si, b.key)
			}
			prev, n = b, n+1
		}
		if prev != s.tail || n != len(s.buckets) || len(s.full) != n {
			t.Fatalf("shard %d: list %d, map %d, heap %d", si, n, len(s.buckets), len(s.full))
		}
		for i, e := range s.full {
			if e.b.heapIdx != i || s.buckets[e.b.key] != e.b {
				t.Fatalf("shard %d: heap index %d wrong", si, i)
			}
			if i > 0 && s.full[(i-1)/2].fullAt > e.fullAt {
				t.Fatalf("shard %d: heap order broken at %d", si, i)
			}
		}
		s.mu.Unlock()
	}
}

func TestConcurrentSameKey(t *testing.T) {
	l := New(newFakeClock().Now, 100)
	const goroutines, each, perMinute = 16, 200, 1000
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				if ok, _ := l.Allow("biz|192.0.2.1", perMinute); ok {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != perMinute {
		t.Errorf("allowed %d across goroutines, want exactly %d", got, perMinute)
	}
}

func TestConcurrentManyKeysWithEviction(t *testing.T) {
	clock := newFakeClock()
	l := New(clock.Now, 64)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				l.Allow(fmt.Sprintf("biz_%d|10.1.%d.%d", g%3, g, i%300), 1+i%150)
				if i%100 == 0 {
					clock.Step(time.Second)
				}
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			if n := l.Len(); n > 64 {
				t.Errorf("Len = %d > 64", n)
				return
			}
		}
	})
	wg.Wait()
	checkInvariants(t, l)
}

func BenchmarkAllow(b *testing.B) {
	cases := []struct {
		name          string
		keys, maxKeys int
	}{
		{"keys=10k", 10_000, 100_000},
		{"keys=200k/maxKeys=50k", 200_000, 50_000}, // constant eviction
		{"keys=1", 1, 100},                         // one hot key: worst contention
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			keys := make([]string, bc.keys)
			for i := range keys {
				keys[i] = fmt.Sprintf("biz_%d|10.%d.%d.%d", i%50, i>>16&255, i>>8&255, i&255)
			}
			l := New(time.Now, bc.maxKeys)
			var seq atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(seq.Add(1) * 7919)
				for pb.Next() {
					l.Allow(keys[i%len(keys)], 120)
					i++
				}
			})
		})
	}
}
