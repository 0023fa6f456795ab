// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import "slices"

// Merged lists (docs/archive.md, Merged lists): a list's items are the live ones L and the
// archived ones A, each sorted in the list's order, with no item in both. A page is
// [offset, offset+limit) of the merge of the two, read with one page of A whatever the offset.
//
// An archived item A[j] sits in the merged list at j + |{l in L: l before A[j]}|, at least j and
// at most j + len(L). So the page needs no archived item before offset-len(L), nor from
// offset+limit on: the window [archiveWindow(offset, limit, len(L))) holds every one it needs,
// limit + min(offset, len(L)) items: the first page reads limit archived items however many are
// live.

// archiveWindow is the archive page a merged page needs: the archived items [start, start+n).
func archiveWindow(offset, limit, nLive int) (start, n int) {
	start = max(0, offset-nLive)
	return start, offset + limit - start
}

// mergePage returns the page [offset, offset+limit) of the merged list, and its total.
//
// live is every live item, sorted by compare; window is the archived items [start,
// start+len(window)) sorted by compare, start and the window's length at least those of
// archiveWindow (a window that starts earlier or reaches further is fine); archived is how many
// archived items there are. compare is a total order: it says 0 only for one object (the API's
// order with the UID last).
//
// The window merges with the live items that do not sort before its first item (all of them
// when start is 0): the merged run starts at start + |{l in live: l before window[0]}|. Where the
// window ends before the archive does, the run is cut after its last archived item (a live item
// after it may have unread archived items before it). When the window is empty, live item i sits
// at i + archived (the page is then past the end, or the archive is empty). A live item equal to
// one of the window's (archived while the request read, before its live copy was deleted) is
// counted once, from the window.
func mergePage[T any](live, window []T, start, archived, offset, limit int, compare func(a, b *T) int) (page []T, total int) {
	return mergeLive[T](sortedSlice[T]{items: live, compare: compare}, window, start, archived, offset, limit, compare)
}

// liveSeq is the live items of a list, sorted in the list's order: a sorted slice
// (sortedSlice) or a range of a list index (indexRange, apiserver/listindex.go). Positions are
// 0 to Len()-1.
type liveSeq[T any] interface {
	Len() int
	// At is the item at position i, 0 <= i < Len().
	At(i int) *T
	// Rank is how many items sort before x (x need not be one of them).
	Rank(x *T) int
	// Find is the position of the item equal to x (compare 0: the same object), or -1.
	Find(x *T) int
}

// mergeLive is mergePage over any liveSeq, reading O(log n + limit + len(window)) of it: a
// position is a rank query, and the page's first item is found by a binary search over the
// window instead of walking the run from its start.
//
// The run of mergePage is the merge of two sorted sequences without equal items once the live
// items equal to a window's are dropped (they count once, from the window): X, the live items
// from the first that does not sort before window[0] (all of them when start is 0) up to the
// last that sorts before the window's last item when the archive goes on after the window (to
// the end otherwise), and the window. Its first lo items are X[:i] and window[:j] for the one
// split i+j = lo where window[j-1] sorts before X[i] and X[i-1] before window[j].
func mergeLive[T any](live liveSeq[T], window []T, start, archived, offset, limit int, compare func(a, b *T) int) (page []T, total int) {
	if len(window) == 0 {
		return pageOf(live, offset-archived, limit), live.Len() + archived
	}
	var dups []int
	for j := range window {
		if i := live.Find(&window[j]); i >= 0 {
			dups = append(dups, i)
		}
	}
	seq := withoutPositions(live, dups)
	total = seq.Len() + archived
	skip, end := 0, seq.Len()
	if start > 0 {
		skip = seq.Rank(&window[0])
	}
	if start+len(window) < archived { // the archive goes on after the window
		end = seq.Rank(&window[len(window)-1])
	}
	m, pos := end-skip, start+skip
	n := m + len(window)
	lo, hi := min(max(offset-pos, 0), n), min(max(offset+limit-pos, 0), n)
	if lo >= hi {
		return []T{}, total
	}
	x := func(i int) *T { return seq.At(skip + i) }
	jlo, jhi := max(0, lo-m), min(lo, len(window))
	for jlo < jhi {
		j := int(uint(jlo+jhi) >> 1)
		if i := lo - j; i > 0 && compare(&window[j], x(i-1)) < 0 {
			jlo = j + 1 // window[j] is among the first lo
		} else {
			jhi = j
		}
	}
	i, j := lo-jlo, jlo
	page = make([]T, 0, hi-lo)
	var next *T // X[i], read once
	for len(page) < hi-lo {
		if i < m && next == nil {
			next = x(i)
		}
		if j == len(window) || (i < m && compare(next, &window[j]) < 0) {
			page = append(page, *next)
			i, next = i+1, nil
		} else {
			page = append(page, window[j])
			j++
		}
	}
	return page, total
}

// pageOf is the items [offset, offset+limit) of live that exist (offset may be negative: the
// page then starts at 0 and ends at offset+limit).
func pageOf[T any](live liveSeq[T], offset, limit int) []T {
	lo, hi := min(max(offset, 0), live.Len()), min(max(offset+limit, 0), live.Len())
	page := make([]T, 0, hi-lo)
	for i := lo; i < hi; i++ {
		page = append(page, *live.At(i))
	}
	return page
}

// sortedSlice is a liveSeq over a slice sorted by compare.
type sortedSlice[T any] struct {
	items   []T
	compare func(a, b *T) int
}

func (s sortedSlice[T]) Len() int      { return len(s.items) }
func (s sortedSlice[T]) At(i int) *T   { return &s.items[i] }
func (s sortedSlice[T]) Rank(x *T) int { i, _ := s.search(x); return i }
func (s sortedSlice[T]) Find(x *T) int {
	if i, ok := s.search(x); ok {
		return i
	}
	return -1
}

func (s sortedSlice[T]) search(x *T) (int, bool) {
	return slices.BinarySearchFunc(s.items, x, func(l T, x *T) int { return s.compare(&l, x) })
}

// withoutPositions is live without the items at positions drop (unsorted, each at most once).
func withoutPositions[T any](live liveSeq[T], drop []int) liveSeq[T] {
	if len(drop) == 0 {
		return live
	}
	drop = slices.Clone(drop)
	slices.Sort(drop)
	drop = slices.Compact(drop)
	return dropped[T]{live: live, drop: drop}
}

// dropped is a liveSeq without a few positions of another (sorted, distinct).
type dropped[T any] struct {
	live liveSeq[T]
	drop []int
}

func (d dropped[T]) Len() int { return d.live.Len() - len(d.drop) }

func (d dropped[T]) At(i int) *T {
	for _, p := range d.drop {
		if p > i {
			break
		}
		i++
	}
	return d.live.At(i)
}

func (d dropped[T]) Rank(x *T) int {
	r := d.live.Rank(x)
	n, _ := slices.BinarySearch(d.drop, r)
	return r - n
}

func (d dropped[T]) Find(x *T) int {
	i := d.live.Find(x)
	if i < 0 {
		return -1
	}
	n, found := slices.BinarySearch(d.drop, i)
	if found {
		return -1
	}
	return i - n
}
