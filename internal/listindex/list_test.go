// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package listindex

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

type item struct{ key, id int }

func compareItems(a, b *item) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// check compares l with want (sorted) through every query.
func check(t *testing.T, step int, l *List[item], want []*item, r *rand.Rand) {
	t.Helper()
	if l.Len() != len(want) {
		t.Fatalf("step %d: Len %d, want %d", step, l.Len(), len(want))
	}
	total := 0
	for c, ch := range l.chunks {
		if len(ch) == 0 || len(ch) > maxChunk {
			t.Fatalf("step %d: chunk %d holds %d", step, c, len(ch))
		}
		if l.prefix(c) != total {
			t.Fatalf("step %d: prefix(%d) = %d, want %d", step, c, l.prefix(c), total)
		}
		total += len(ch)
	}
	for range 20 {
		if len(want) == 0 {
			break
		}
		i := r.IntN(len(want))
		if got := l.At(i); got != want[i] {
			t.Fatalf("step %d: At(%d) = %v, want %v", step, i, got, want[i])
		}
		probe := &item{key: r.IntN(1000), id: r.IntN(1000)}
		wantRank, _ := slices.BinarySearchFunc(want, probe, compareItems)
		calls := 0
		if got := l.Search(func(x *item) bool { calls++; return compareItems(x, probe) >= 0 }); got != wantRank {
			t.Fatalf("step %d: Search(>= %v) = %d, want %d", step, probe, got, wantRank)
		}
		if bound := 2 + bitLen(len(l.chunks)) + bitLen(maxChunk); calls > bound {
			t.Fatalf("step %d: Search called pred %d times (bound %d)", step, calls, bound)
		}
		var walked []*item
		from := r.IntN(len(want) + 2)
		l.Ascend(from, func(x *item) bool { walked = append(walked, x); return len(walked) < 7 })
		wantWalk := want[min(from, len(want)):min(from+7, len(want))]
		if !slices.Equal(walked, wantWalk) {
			t.Fatalf("step %d: Ascend(%d) = %v, want %v", step, from, walked, wantWalk)
		}
	}
}

func bitLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

// TestListMatchesASortedSlice: random inserts and deletes (seeded), every query checked against
// a sorted slice, through splits and merges.
func TestListMatchesASortedSlice(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		r := rand.New(rand.NewPCG(seed, 99))
		l := New(compareItems)
		var want []*item
		nextID := 0
		for step := range 20000 {
			grow := step < 8000 || (step >= 14000 && step < 16000)
			if len(want) == 0 || (grow && r.IntN(10) < 8) || (!grow && r.IntN(10) < 3) {
				x := &item{key: r.IntN(1000), id: nextID}
				if r.IntN(4) == 0 {
					x.key = 0 // many at the front: the order's newest-first pattern
				}
				nextID++
				l.Insert(x)
				i, _ := slices.BinarySearchFunc(want, x, compareItems)
				want = slices.Insert(want, i, x)
			} else {
				i := r.IntN(len(want))
				probe := *want[i] // an equal copy: Delete finds by the order
				got, ok := l.Delete(&probe)
				if !ok || got != want[i] {
					t.Fatalf("step %d: Delete(%v) = %v, %v", step, probe, got, ok)
				}
				want = slices.Delete(want, i, i+1)
				if _, ok := l.Delete(&probe); ok {
					t.Fatalf("step %d: deleted %v twice", step, probe)
				}
			}
			if step%97 == 0 || len(want) < 3 {
				check(t, step, l, want, r)
			}
		}
		check(t, -1, l, want, r)
	}
}

func TestListEdges(t *testing.T) {
	l := New(compareItems)
	if l.Len() != 0 || l.Search(func(*item) bool { return true }) != 0 {
		t.Fatal("empty list")
	}
	if _, ok := l.Delete(&item{}); ok {
		t.Fatal("deleted from an empty list")
	}
	l.Ascend(0, func(*item) bool { t.Fatal("walked an empty list"); return false })
	a, b := &item{1, 1}, &item{1, 1}
	l.Insert(a)
	l.Insert(b) // equal: replaces
	if l.Len() != 1 || l.At(0) != b {
		t.Fatalf("equal insert: len %d, at 0 %p", l.Len(), l.At(0))
	}
	if got := l.Search(func(*item) bool { return false }); got != 1 {
		t.Fatalf("Search(false) = %d", got)
	}
}

// TestInsertsInOrderKeepChunksSmall: items inserted in order (ascending, as a list by phone gets
// them, or descending, as a list newest first gets new items) leave no chunk in an array much
// larger than it: at most 2 pointers of room per item (3.1 for ascending inserts before a split
// gave each half an array of its own).
func TestInsertsInOrderKeepChunksSmall(t *testing.T) {
	for _, ascending := range []bool{true, false} {
		l := New(compareItems)
		const n = 100_000
		for i := range n {
			key := i
			if !ascending {
				key = n - i
			}
			l.Insert(&item{key: key, id: i})
		}
		room := 0
		for _, ch := range l.chunks {
			room += cap(ch)
		}
		if room > 2*n {
			t.Errorf("ascending %v: %d items in arrays of %d pointers", ascending, n, room)
		}
	}
}
