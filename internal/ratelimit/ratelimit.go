// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package ratelimit implements the per-key token-bucket limiter behind
// "N requests per minute per business and client IP" (docs/api.md, Limits).
//
// Each key has a bucket of capacity N that refills continuously at N tokens
// per minute, so a client may burst N requests and then sustain N per
// minute. The number of buckets kept is bounded: when the bound is reached,
// a full bucket is dropped first (it carries no state, since a new bucket
// starts full), otherwise the least recently used one.
//
// Several apiserver replicas share a limit by each passing Allow its Share of it (the number of
// replicas comes from internal/replicas; docs/deploy.md, Rate limits across replicas).
package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"
)

const (
	// DefaultMaxKeys is the bucket bound used when New is given maxKeys < 1.
	DefaultMaxKeys = 1 << 16
	// MaxPerMinute is the largest rate honoured; larger values are clamped
	// to it (it keeps the fixed-point arithmetic within int64).
	MaxPerMinute = 100_000_000

	numShards = 16
	// unitsPerToken is the fixed-point scale of a bucket's level: one token
	// is time.Minute (6e10) units, so a bucket with rate perMinute refills
	// exactly perMinute units per nanosecond and takes exactly one minute to
	// fill from empty whatever the rate.
	unitsPerToken = int64(time.Minute)
)

// Limiter is a set of token buckets keyed by string, for example
// "<business id>|<client ip>". It is safe for concurrent use. Create it with
// New; the zero value is not usable.
type Limiter struct {
	clock  func() time.Time
	base   time.Time // bucket times are nanoseconds since base
	seed   maphash.Seed
	shards []shard
}

// shard is an independently locked part of a Limiter's buckets.
type shard struct {
	mu      sync.Mutex
	max     int                // most buckets this shard may hold
	buckets map[string]*bucket // all buckets of the shard
	head    *bucket            // most recently used
	tail    *bucket            // least recently used
	full    []heapEntry        // min-heap on fullAt
	_       [64]byte           // keep shards on separate cache lines
}

// bucket is the state of one key.
type bucket struct {
	key     string
	level   int64 // tokens * unitsPerToken
	last    int64 // latest time seen, ns since Limiter.base
	prev    *bucket
	next    *bucket
	heapIdx int // index in shard.full, -1 before the first push
}

// heapEntry is an element of a shard's heap. fullAt, the time the bucket is
// full again (ns since Limiter.base), is kept in the heap array rather than
// in the bucket so that sifting compares contiguous memory.
type heapEntry struct {
	fullAt int64
	b      *bucket
}

// New returns a Limiter that reads the time from clock (time.Now if nil) and
// keeps at most maxKeys buckets (DefaultMaxKeys if maxKeys < 1).
func New(clock func() time.Time, maxKeys int) *Limiter {
	return newLimiter(clock, maxKeys, numShards)
}

// newLimiter is New with a given number of shards (tests use 1 to observe
// eviction order).
func newLimiter(clock func() time.Time, maxKeys, shards int) *Limiter {
	if clock == nil {
		clock = time.Now
	}
	if maxKeys < 1 {
		maxKeys = DefaultMaxKeys
	}
	if shards > maxKeys {
		shards = maxKeys // every shard must be able to hold a bucket
	}
	l := &Limiter{clock: clock, base: clock(), seed: maphash.MakeSeed(), shards: make([]shard, shards)}
	for i := range l.shards {
		s := &l.shards[i]
		// Split maxKeys exactly: the shard bounds add up to maxKeys.
		s.max = maxKeys / shards
		if i < maxKeys%shards {
			s.max++
		}
		s.buckets = make(map[string]*bucket)
	}
	return l
}

// Allow takes one token from key's bucket and reports whether the request
// may proceed. The bucket's capacity is perMinute and it refills at
// perMinute tokens per minute, continuously; perMinute is the value in force
// now and may differ from earlier calls for the same key (a lowered limit
// caps the tokens already saved). When the request is denied, retryAfter is
// the time until one token is available, rounded up to whole seconds and at
// least one second. A perMinute below 1 denies every request with a
// retryAfter of one minute; one above MaxPerMinute is clamped.
func (l *Limiter) Allow(key string, perMinute int) (ok bool, retryAfter time.Duration) {
	if perMinute < 1 {
		return false, time.Minute
	}
	rate := int64(min(perMinute, MaxPerMinute))
	capacity := rate * unitsPerToken
	now := int64(l.clock().Sub(l.base))

	s := &l.shards[0]
	if len(l.shards) > 1 {
		s = &l.shards[maphash.String(l.seed, key)%uint64(len(l.shards))]
	}
	s.mu.Lock()
	defer s.mu.Unlock()

	b := s.buckets[key]
	if b == nil {
		b = s.add(key, now)
		b.level, b.last = capacity, now
	} else {
		s.touch(b)
		b.level = min(b.level, capacity) // the limit may have been lowered
		if elapsed := now - b.last; elapsed > 0 {
			// A minute fills any bucket. Below that, elapsed*rate < 6e18
			// and is compared with the room left rather than added
			// blindly, so nothing overflows even at MaxPerMinute.
			if elapsed >= int64(time.Minute) || elapsed*rate >= capacity-b.level {
				b.level = capacity
			} else {
				b.level += elapsed * rate
			}
			b.last = now
		} // a clock that went backwards refills nothing
	}
	if b.level >= unitsPerToken {
		b.level -= unitsPerToken
		ok = true
	} else {
		wait := ceilDiv(unitsPerToken-b.level, rate) // nanoseconds
		secs := max(ceilDiv(wait, int64(time.Second)), 1)
		retryAfter = time.Duration(secs) * time.Second
	}
	fullAt := b.last + ceilDiv(capacity-b.level, rate)
	if b.heapIdx < 0 {
		b.heapIdx = len(s.full)
		s.full = append(s.full, heapEntry{fullAt, b})
		s.up(b.heapIdx)
	} else {
		s.full[b.heapIdx].fullAt = fullAt
		s.fix(b.heapIdx)
	}
	return ok, retryAfter
}

// Share is one replica's part of a limit shared by replicas that each see an even part of the
// traffic: ⌈limit/replicas⌉ per minute. Rounding up keeps every share at least 1 (a limit below
// the number of replicas still lets a client through), so the replicas together allow at most
// limit+replicas-1; a client whose requests all reach one replica gets that replica's share,
// never more than limit. A limit below 1 (which Allow denies) and replicas below 2 leave limit
// as it is.
func Share(limit, replicas int) int {
	if limit < 1 || replicas < 2 {
		return limit
	}
	return limit/replicas + min(limit%replicas, 1)
}

// Len returns the number of buckets currently held.
func (l *Limiter) Len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.buckets)
		s.mu.Unlock()
	}
	return n
}

// ceilDiv returns ⌈a/b⌉ for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// add returns a new bucket for key, most recently used, evicting one first
// if the shard is at its bound: a full bucket if there is one (the one full
// the longest), else the least recently used. The caller sets the level and
// then pushes the bucket on the heap.
func (s *shard) add(key string, now int64) *bucket {
	var b *bucket
	if len(s.buckets) >= s.max {
		victim := s.tail
		if len(s.full) > 0 && s.full[0].fullAt <= now {
			victim = s.full[0].b
		}
		s.remove(victim)
		b = victim // reuse the allocation
		*b = bucket{}
	} else {
		b = &bucket{}
	}
	b.key = key
	s.buckets[key] = b
	b.next = s.head
	if s.head != nil {
		s.head.prev = b
	}
	s.head = b
	if s.tail == nil {
		s.tail = b
	}
	b.heapIdx = -1 // Allow pushes it once fullAt is known
	return b
}

// remove deletes b from the shard's map, list and heap.
func (s *shard) remove(b *bucket) {
	delete(s.buckets, b.key)
	s.unlink(b)
	last := len(s.full) - 1
	i := b.heapIdx
	if i != last {
		s.swap(i, last)
	}
	s.full[last] = heapEntry{}
	s.full = s.full[:last]
	if i != last {
		s.down(i)
		s.up(i)
	}
}

// touch makes b the most recently used bucket.
func (s *shard) touch(b *bucket) {
	if s.head == b {
		return
	}
	s.unlink(b)
	b.next = s.head
	s.head.prev = b
	s.head = b
}

// unlink removes b from the recency list.
func (s *shard) unlink(b *bucket) {
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		s.head = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		s.tail = b.prev
	}
	b.prev, b.next = nil, nil
}

// fix restores the heap order after the fullAt of element i changed.
func (s *shard) fix(i int) {
	if !s.down(i) {
		s.up(i)
	}
}

func (s *shard) swap(i, j int) {
	s.full[i], s.full[j] = s.full[j], s.full[i]
	s.full[i].b.heapIdx = i
	s.full[j].b.heapIdx = j
}

func (s *shard) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if s.full[p].fullAt <= s.full[i].fullAt {
			return
		}
		s.swap(i, p)
		i = p
	}
}

// down sifts element i down and reports whether it moved.
func (s *shard) down(i int) bool {
	start, n := i, len(s.full)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && s.full[r].fullAt < s.full[c].fullAt {
			c = r
		}
		if s.full[i].fullAt <= s.full[c].fullAt {
			break
		}
		s.swap(i, c)
		i = c
	}
	return i > start
}
