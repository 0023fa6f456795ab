// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package listindex is the sorted structure behind the API server's list indexes
// (docs/performance.md, List indexes): an order-statistic list of pointers. It finds an item's
// position (how many items sort before it) and the item at a position in O(log n), so a page of a
// list costs O(log n + limit) whatever the offset, and a total is O(1).
//
// The items are kept in chunks of at most maxChunk pointers, each sorted, the chunks in order,
// with a Fenwick tree over the chunks' lengths: a position is found in the tree (O(log chunks)),
// an item by a binary search over the chunks' last items and then inside one chunk (O(log n)
// comparisons). An insert or a delete moves at most maxChunk pointers inside one chunk and
// updates the tree; a chunk that grows past maxChunk splits in two and one that shrinks below
// minChunk merges with a neighbour, both rebuilding the tree (O(chunks), once per about
// maxChunk/2 changes). About 8 to 16 bytes per item.
package listindex

import "slices"

const (
	// maxChunk is the most items a chunk holds; a chunk that grows past it splits in halves.
	maxChunk = 256
	// minChunk: a chunk that shrinks below it merges with a neighbour when both fit in
	// maxChunk/2 (so that a split and a merge are at least maxChunk/4 changes apart).
	minChunk = 32
)

// List is a sorted sequence of pointers under a total order. It never dereferences its items
// except through the order and the predicates it is given, and never modifies them. Not safe
// for concurrent use: the caller locks.
type List[T any] struct {
	cmp    func(a, b *T) int
	chunks [][]*T
	fen    []int // Fenwick tree over len(chunks[i]), 1-based: fen[0] unused
	n      int
}

// New returns an empty list ordered by cmp, which must be a total order over the items it will
// hold (0 only for an item and itself).
func New[T any](cmp func(a, b *T) int) *List[T] {
	return &List[T]{cmp: cmp}
}

// Len is the number of items.
func (l *List[T]) Len() int { return l.n }

// Search returns the first position whose item satisfies pred, or Len() when none does. pred
// must be false for a prefix of the list and true for the rest (as sort.Search). It is called
// about log2(Len()) + 1 times.
func (l *List[T]) Search(pred func(*T) bool) int {
	c := l.chunkWhere(pred)
	if c == len(l.chunks) {
		return l.n
	}
	ch := l.chunks[c]
	lo, hi := 0, len(ch)-1 // pred(ch[len-1]) holds
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if pred(ch[mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return l.prefix(c) + lo
}

// chunkWhere is the first chunk whose last item satisfies pred, or len(chunks).
func (l *List[T]) chunkWhere(pred func(*T) bool) int {
	lo, hi := 0, len(l.chunks)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		ch := l.chunks[mid]
		if pred(ch[len(ch)-1]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// At returns the item at position i, 0 <= i < Len().
func (l *List[T]) At(i int) *T {
	c, off := l.find(i)
	return l.chunks[c][off]
}

// Ascend calls fn with the items from position i on, in order, until fn returns false or the
// list ends.
func (l *List[T]) Ascend(i int, fn func(*T) bool) {
	if i < 0 {
		i = 0
	}
	if i >= l.n {
		return
	}
	c, off := l.find(i)
	for ; c < len(l.chunks); c, off = c+1, 0 {
		for _, x := range l.chunks[c][off:] {
			if !fn(x) {
				return
			}
		}
	}
}

// Insert adds x. An item equal to x (cmp 0) is replaced by x, never held twice.
func (l *List[T]) Insert(x *T) {
	if len(l.chunks) == 0 {
		l.chunks = [][]*T{{x}}
		l.n = 1
		l.rebuild()
		return
	}
	c := l.chunkWhere(func(y *T) bool { return l.cmp(y, x) >= 0 })
	if c == len(l.chunks) {
		c-- // after every item: the last chunk's end
	}
	ch := l.chunks[c]
	i, found := slices.BinarySearchFunc(ch, x, l.cmp)
	if found {
		ch[i] = x
		return
	}
	l.chunks[c] = slices.Insert(ch, i, x)
	l.n++
	if len(l.chunks[c]) > maxChunk {
		l.split(c)
		return
	}
	l.add(c, 1)
}

// Delete removes the item equal to x (cmp 0) and returns it; false when there is none.
func (l *List[T]) Delete(x *T) (*T, bool) {
	c := l.chunkWhere(func(y *T) bool { return l.cmp(y, x) >= 0 })
	if c == len(l.chunks) {
		return nil, false
	}
	ch := l.chunks[c]
	i, found := slices.BinarySearchFunc(ch, x, l.cmp)
	if !found {
		return nil, false
	}
	old := ch[i]
	ch = slices.Delete(ch, i, i+1)
	l.chunks[c] = ch
	l.n--
	switch {
	case len(ch) == 0:
		l.chunks = slices.Delete(l.chunks, c, c+1)
		l.rebuild()
	case len(ch) < minChunk && l.merge(c):
	default:
		l.add(c, -1)
	}
	return old, true
}

// split cuts chunk c in halves, each in an array of its own with room for 64 more items: the
// left half keeping the array the chunk grew into (slices.Insert doubles it) would hold 128 items
// in 384 or 512 pointers for good where inserts come in order, as a list by time or by phone gets
// them.
func (l *List[T]) split(c int) {
	ch := l.chunks[c]
	half := len(ch) / 2
	left := make([]*T, half, maxChunk/2+maxChunk/4)
	right := make([]*T, len(ch)-half, maxChunk/2+maxChunk/4)
	copy(left, ch[:half])
	copy(right, ch[half:])
	l.chunks[c] = left
	l.chunks = slices.Insert(l.chunks, c+1, right)
	l.rebuild()
}

// merge joins the small chunk c with a neighbour when both fit in maxChunk/2, and reports
// whether it did (the tree is then rebuilt).
func (l *List[T]) merge(c int) bool {
	for _, d := range []int{c + 1, c - 1} {
		if d < 0 || d >= len(l.chunks) || len(l.chunks[c])+len(l.chunks[d]) > maxChunk/2 {
			continue
		}
		a, b := min(c, d), max(c, d)
		joined := make([]*T, 0, len(l.chunks[a])+len(l.chunks[b])+maxChunk/4)
		joined = append(append(joined, l.chunks[a]...), l.chunks[b]...)
		l.chunks[a] = joined
		l.chunks = slices.Delete(l.chunks, b, b+1)
		l.rebuild()
		return true
	}
	return false
}

// ---- Fenwick tree over the chunks' lengths ----

func (l *List[T]) rebuild() {
	n := len(l.chunks)
	if cap(l.fen) >= n+1 {
		l.fen = l.fen[:n+1]
		clear(l.fen)
	} else {
		l.fen = make([]int, n+1, n+1+n/4)
	}
	for i := 1; i <= n; i++ {
		l.fen[i] += len(l.chunks[i-1])
		if j := i + i&-i; j <= n {
			l.fen[j] += l.fen[i]
		}
	}
}

func (l *List[T]) add(c, d int) {
	for i := c + 1; i < len(l.fen); i += i & -i {
		l.fen[i] += d
	}
}

// prefix is the number of items in chunks [0, c).
func (l *List[T]) prefix(c int) int {
	s := 0
	for i := c; i > 0; i -= i & -i {
		s += l.fen[i]
	}
	return s
}

// find returns the chunk and the offset in it of position i, 0 <= i < Len().
func (l *List[T]) find(i int) (chunk, off int) {
	if i < 0 || i >= l.n {
		panic("listindex: position out of range")
	}
	n := len(l.chunks)
	pos := 0
	step := 1
	for step*2 <= n {
		step *= 2
	}
	for ; step > 0; step >>= 1 {
		if next := pos + step; next <= n && l.fen[next] <= i {
			pos = next
			i -= l.fen[next]
		}
	}
	return pos, i
}
