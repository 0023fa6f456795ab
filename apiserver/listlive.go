// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/paygate/paygate/internal/archive"
)

// The live side of a list (docs/archive.md, Merged lists): the items the request's filter
// selects, from a list index (indexLive) or, until the index has synced or without an informer
// cache, from the cache as before (sliceLive), and which of them the archive holds already.

// listStats counts what one list request read: live objects (an index counts every object it
// compares or returns; a slice counts every item the handler filtered), archived rows decoded,
// UIDs asked of the archive (Archived) and archive queries.
type listStats struct {
	indexed        bool
	live           int
	archiveRows    int
	archiveUIDs    int
	archiveQueries int
}

// liveItems is the live side of a list, for mergedPage.
type liveItems[T any] interface {
	// archivedLive returns the UIDs of the live terminal items the archive holds already (an
	// archiver stopped between its commit and its deletes): mergedPage counts them once, from
	// the archive. nil when there are none.
	archivedLive(ctx context.Context, s *Server, k listKind[T]) (map[string]bool, error)
	// read calls fn with the live items, sorted, without held's terminal ones. fn must not keep
	// the sequence: an index is read under its lock, and may change between two reads.
	read(held map[string]bool, fn func(liveSeq[T]))
	// frozen is a copy of the live items without held's that no event changes.
	frozen(held map[string]bool) liveItems[T]
	stats() *listStats
}

// sliceLive is the live items listed from the cache (listOwn) and filtered by the handler, as
// lists read them before the indexes: sorted here (sortedByPointer).
type sliceLive[T any] struct {
	items []T
	k     listKind[T]
	st    *listStats
}

func newSliceLive[T any](k listKind[T], items []T, scanned int) *sliceLive[T] {
	return &sliceLive[T]{items: sortedByPointer(items, k.compare), k: k, st: &listStats{live: scanned}}
}

func (l *sliceLive[T]) stats() *listStats { return l.st }

// archivedLive asks the archive about every live terminal item (one Archived query; none when
// there is no such item).
func (l *sliceLive[T]) archivedLive(ctx context.Context, s *Server, k listKind[T]) (map[string]bool, error) {
	var uids []string
	for i := range l.items {
		if k.terminal(&l.items[i]) {
			uids = append(uids, k.uid(&l.items[i]))
		}
	}
	if len(uids) == 0 {
		return nil, nil
	}
	l.st.archiveQueries++
	l.st.archiveUIDs += len(uids)
	return fromArchive(ctx, "archived_"+string(k.kind), func(ctx context.Context) (map[string]bool, error) {
		return s.opts.Archive.Archived(ctx, k.kind, uids)
	})
}

func (l *sliceLive[T]) read(held map[string]bool, fn func(liveSeq[T])) {
	items := l.items
	if len(held) > 0 {
		items = slices.DeleteFunc(slices.Clone(items), func(x T) bool { return held[l.k.uid(&x)] })
	}
	fn(sortedSlice[T]{items: items, compare: l.k.compare})
}

func (l *sliceLive[T]) frozen(map[string]bool) liveItems[T] { return l }

// indexLive is a filter's live items in a list index: the items of a facet's range created in a
// span. A filter no one facet says in full (a payment list's phone and merchant_ref) names a few
// facets' ranges, each with the rest of the filter (facetQuery): the read takes the shortest
// range, found by its searches, and keeps the items of it that pass its rest.
type indexLive[T any] struct {
	x      *listIndex[T]
	bucket bucketKey
	ranges []facetQuery[T]
	span   timeSpan
	// count reads how many objects of the bucket the archive holds (any filter's page's total),
	// for heldState.
	count func(ctx context.Context) (archive.Page[T], error)
	st    *listStats
	seen  []rangeBounds
	kept  keptItems[T]
}

// facetQuery is a facet's range that holds a filter's items, and rest, what the filter says that
// the facet does not (nil: nothing).
type facetQuery[T any] struct {
	facet int
	key   facetKey
	rest  func(*T) bool
}

func (x *listIndex[T]) live(bucket bucketKey, facet int, key facetKey,
	count func(ctx context.Context) (archive.Page[T], error)) *indexLive[T] {
	return x.liveIn(bucket, []facetQuery[T]{{facet: facet, key: key}}, timeSpan{}, count)
}

// liveIn is the live items of bucket that the shortest of ranges holds, created in span.
func (x *listIndex[T]) liveIn(bucket bucketKey, ranges []facetQuery[T], span timeSpan,
	count func(ctx context.Context) (archive.Page[T], error)) *indexLive[T] {
	return &indexLive[T]{x: x, bucket: bucket, ranges: ranges, span: span, count: count,
		st: &listStats{indexed: true}, seen: make([]rangeBounds, len(ranges))}
}

func (l *indexLive[T]) stats() *listStats { return l.st }

func (l *indexLive[T]) read(held map[string]bool, fn func(liveSeq[T])) {
	l.x.mu.RLock()
	defer l.x.mu.RUnlock()
	fn(l.items().without(held))
}

// items is the filter's items: the shortest of the ranges, or what passes its rest. The caller
// holds l.x.mu (read).
func (l *indexLive[T]) items() heldSeq[T] {
	var best *indexRange[T]
	var q facetQuery[T]
	for i := range l.ranges {
		r := l.x.rangeOf(l.bucket, l.ranges[i].facet, l.ranges[i].key, l.span, l.st, &l.seen[i])
		if best == nil || r.Len() < best.Len() {
			best, q = r, l.ranges[i]
		}
	}
	if q.rest == nil {
		return best
	}
	return l.kept.of(q.facet, best, q.rest)
}

func (l *indexLive[T]) frozen(held map[string]bool) liveItems[T] {
	var items []T
	l.read(held, func(seq liveSeq[T]) { items = pageOf(seq, 0, seq.Len()) })
	return &sliceLive[T]{items: items, k: listKind[T]{compare: l.x.spec.compare,
		uid: func(o *T) string { return string(l.x.spec.uid(o)) }}, st: l.st}
}

// smallRange: a filter's range this short is scanned for terminal items before the archive is
// asked which it holds (a merchant_ref, a payment's refunds, a subscription's invoices).
const smallRange = 64

func (l *indexLive[T]) archivedLive(ctx context.Context, s *Server, k listKind[T]) (map[string]bool, error) {
	if l.x.spec.terminal == nil {
		return nil, nil
	}
	l.x.mu.RLock()
	b := l.x.buckets[l.bucket]
	none := b == nil || b.terminal == 0
	if !none {
		r := l.items()
		if r.Len() <= smallRange {
			none = true
			for i := range r.Len() {
				if l.x.spec.terminal(r.At(i)) {
					none = false
					break
				}
			}
		}
	}
	l.x.mu.RUnlock()
	if none {
		return nil, nil // no live item the archive may hold: it is not asked
	}
	return l.x.archivedLive(ctx, s, l.bucket, k.kind, l.count, l.st)
}

// heldSeq is a filter's live items, which can leave out the ones the archive holds.
type heldSeq[T any] interface {
	liveSeq[T]
	without(held map[string]bool) liveSeq[T]
}

// keptItems are the items of a range that pass a filter's rest, kept while the bucket does not
// change: a request reads its live items two or three times, and filters them once.
type keptItems[T any] struct {
	facet  int
	bounds rangeBounds
	items  []*T
}

// of is the items of r that pass rest, in r's order. The caller holds the index's lock (read).
func (k *keptItems[T]) of(facet int, r *indexRange[T], rest func(*T) bool) *keptRange[T] {
	bounds := rangeBounds{bucket: r.bucket, version: r.version, lo: r.lo, hi: r.hi}
	if k.bounds.bucket == nil || k.bounds != bounds || k.facet != facet {
		k.items = k.items[:0]
		left := r.Len()
		if left > 0 {
			r.list.Ascend(r.lo, func(e *T) bool {
				r.st.live++
				if rest(e) {
					k.items = append(k.items, e)
				}
				left--
				return left > 0
			})
		}
		k.facet, k.bounds = facet, bounds
	}
	return &keptRange[T]{r: r, items: k.items}
}

// keptRange is the items of a range that pass a filter's rest (keptItems), a liveSeq in the
// list's order.
type keptRange[T any] struct {
	r     *indexRange[T]
	items []*T
}

func (k *keptRange[T]) Len() int { return len(k.items) }

func (k *keptRange[T]) At(i int) *T {
	k.r.st.live++
	return k.items[i]
}

func (k *keptRange[T]) Rank(x *T) int {
	i, _ := k.search(x)
	return i
}

// Find looks x's UID up and checks that the live object is one of the items and equal to x.
func (k *keptRange[T]) Find(x *T) int {
	o := k.r.byUID[k.r.spec.uid(x)]
	if o == nil {
		return -1
	}
	i, found := k.search(o)
	if !found || k.items[i] != o {
		return -1
	}
	k.r.st.live++
	if k.r.spec.compare(o, x) != 0 {
		return -1
	}
	return i
}

// search is the position of the first item that does not sort before x, and whether it is x's
// equal (same UID) in the list's order.
func (k *keptRange[T]) search(x *T) (int, bool) {
	return slices.BinarySearchFunc(k.items, x, func(e, x *T) int {
		k.r.st.live++
		if c := k.r.spec.compare(e, x); c != 0 {
			return c
		}
		return strings.Compare(string(k.r.spec.uid(e)), string(k.r.spec.uid(x)))
	})
}

// without is the items without the terminal objects of held (counted once, from the archive).
func (k *keptRange[T]) without(held map[string]bool) liveSeq[T] {
	if len(held) == 0 {
		return k
	}
	var drop []int
	for uid := range held {
		if o := k.r.byUID[types.UID(uid)]; o != nil && k.r.spec.terminal != nil && k.r.spec.terminal(o) {
			if i := k.Find(o); i >= 0 {
				drop = append(drop, i)
			}
		}
	}
	return withoutPositions[T](k, drop)
}

// heldState is what the API server knows of which of a bucket's live terminal objects the
// archive holds, so that a list does not ask the archive about every one of them on every page
// (docs/performance.md, List indexes). It rests on two facts of the archive (internal/archive):
// its rows are never deleted, and a list's total without a filter but the bucket's (namespace,
// merchant, environment) is exactly how many rows the bucket has (carried_forward's counts for
// payments, payouts and refunds, which equal the rows'; count(*) for invoices). So the rows only
// grow, and equal counts at two moments mean the same rows.
//
// Let R(t) be the bucket's archived UIDs at t. The state holds gen = |R(t0)| for a moment t0 and:
//   - held: live objects known to be in R;
//   - unverified: live terminal objects not checked since they appeared or became terminal;
//   - gone: objects deleted since t0 that were checked and not in R(t0);
//   - every other live terminal object is not in R(t0) ("verified").
//
// A list's check (one at a time per bucket) asks Archived about unverified and gone only, then
// reads the count g. The objects of gone it finds were not in R(t0): they are new rows. When it
// finds none of unverified and g - gen equals the number of gone found, those are every new row,
// so no verified or unverified object is in R: gen = g, the asked objects are verified. Else (an
// archiver committed objects that are still live, or rows appeared the state cannot account for)
// it checks every live terminal object: the count first, then Archived with all their UIDs, as
// every list did before. The answer is never a guess: an unexplained row costs a full check.
//
// The event handler keeps the sets: an object that becomes terminal is unverified; a verified
// one that is deleted goes to gone; a held one that is deleted is forgotten.
type heldState struct {
	sem                    chan struct{} // one check at a time
	valid                  bool
	gen                    int
	held, unverified, gone map[types.UID]struct{}
}

func newHeldState() *heldState {
	return &heldState{sem: make(chan struct{}, 1), held: map[types.UID]struct{}{},
		unverified: map[types.UID]struct{}{}, gone: map[types.UID]struct{}{}}
}

// archivedLive runs a check of the bucket's heldState (above) and returns its held UIDs.
func (x *listIndex[T]) archivedLive(ctx context.Context, s *Server, bucket bucketKey, kind archive.Kind,
	count func(context.Context) (archive.Page[T], error), st *listStats) (map[string]bool, error) {
	x.mu.Lock()
	b := x.buckets[bucket]
	if b == nil {
		x.mu.Unlock()
		return nil, nil
	}
	if b.held == nil {
		b.held = newHeldState()
	}
	h := b.held
	x.mu.Unlock()

	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done(): // waiting for another list's check: answered as the archive's own reads are
		return nil, &archiveError{op: "archived_" + string(kind), err: ctx.Err()}
	}
	defer func() { <-h.sem }()

	asked := func(uids []types.UID) (map[string]bool, error) {
		if len(uids) == 0 {
			return map[string]bool{}, nil
		}
		strs := make([]string, len(uids))
		for i, u := range uids {
			strs[i] = string(u)
		}
		st.archiveQueries++
		st.archiveUIDs += len(strs)
		return fromArchive(ctx, "archived_"+string(kind), func(ctx context.Context) (map[string]bool, error) {
			return s.opts.Archive.Archived(ctx, kind, strs)
		})
	}
	counted := func() (int, error) {
		st.archiveQueries++
		page, err := fromArchive(ctx, "list_"+string(kind), count)
		st.archiveRows += len(page.Items)
		return page.Total, err
	}
	heldUIDs := func() map[string]bool {
		out := make(map[string]bool, len(h.held))
		for u := range h.held {
			out[string(u)] = true
		}
		return out
	}

	x.mu.RLock()
	valid, gen := h.valid, h.gen
	unverified, gone := keysOf(h.unverified), keysOf(h.gone)
	x.mu.RUnlock()

	var g int
	if valid {
		found, err := asked(append(slices.Clone(unverified), gone...))
		if err != nil {
			return nil, err
		}
		if g, err = counted(); err != nil {
			return nil, err
		}
		newRows, unverifiedHeld := 0, false
		for _, u := range gone {
			if found[string(u)] {
				newRows++
			}
		}
		for _, u := range unverified {
			unverifiedHeld = unverifiedHeld || found[string(u)]
		}
		if !unverifiedHeld && g-gen == newRows {
			x.mu.Lock()
			defer x.mu.Unlock()
			h.gen = g
			for _, u := range unverified {
				delete(h.unverified, u)
			}
			for _, u := range gone {
				delete(h.gone, u)
			}
			return heldUIDs(), nil
		}
	} else {
		var err error
		if g, err = counted(); err != nil {
			return nil, err
		}
	}

	// The full check: every live terminal object, asked after the count was read.
	x.mu.RLock()
	var all []types.UID
	for uid, o := range b.byUID {
		if x.terminal(o) {
			all = append(all, uid)
		}
	}
	x.mu.RUnlock()
	found, err := asked(all)
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	checked := make(map[types.UID]bool, len(all))
	h.held, h.gone = map[types.UID]struct{}{}, map[types.UID]struct{}{}
	for _, u := range all {
		checked[u] = true
		switch live := b.byUID[u] != nil; {
		case found[string(u)] && live:
			h.held[u] = struct{}{}
		case !found[string(u)] && !live: // deleted during the check
			h.gone[u] = struct{}{}
		}
	}
	h.unverified = map[types.UID]struct{}{}
	for u, o := range b.byUID {
		if x.terminal(o) && !checked[u] {
			h.unverified[u] = struct{}{} // terminal since the list above
		}
	}
	h.valid, h.gen = true, g
	return heldUIDs(), nil
}

func keysOf(m map[types.UID]struct{}) []types.UID {
	out := make([]types.UID, 0, len(m))
	for u := range m {
		out = append(out, u)
	}
	return out
}

// observeList reports what a list request read to Server.listObserver (tests).
func (s *Server) observeList(list string, st *listStats) {
	if s.listObserver != nil && st != nil {
		s.listObserver(list, *st)
	}
}
