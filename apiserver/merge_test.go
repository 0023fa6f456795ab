// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// mergeItem stands for a payment, payout or invoice of a merged list: its sort key (time, name),
// its UID, and the fields the lists filter on.
type mergeItem struct {
	ts     int // larger is newer
	name   string
	uid    string
	status string
	ref    string
}

func (m mergeItem) String() string { return fmt.Sprintf("%d/%s/%s", m.ts, m.name, m.uid) }

// compareMergeItems is the API's order: newest first, then name, then UID.
func compareMergeItems(a, b *mergeItem) int {
	if a.ts != b.ts {
		if a.ts > b.ts {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	return strings.Compare(a.uid, b.uid)
}

func sortItems(items []mergeItem) []mergeItem {
	out := slices.Clone(items)
	slices.SortFunc(out, func(a, b mergeItem) int { return compareMergeItems(&a, &b) })
	return out
}

// mergeCase is a world: live items, archived items (some in both: archived, not deleted yet) and a
// filter.
type mergeCase struct {
	live, archived []mergeItem
	keep           func(mergeItem) bool
}

// want is the oracle: the union, each object once, filtered, sorted, sliced.
func (w mergeCase) want(offset, limit int) ([]mergeItem, int) {
	seen := map[string]bool{}
	var all []mergeItem
	for _, it := range append(slices.Clone(w.archived), w.live...) {
		if !seen[it.uid] && w.keep(it) {
			seen[it.uid] = true
			all = append(all, it)
		}
	}
	all = sortItems(all)
	lo, hi := min(offset, len(all)), min(offset+limit, len(all))
	return all[lo:hi], len(all)
}

// got is what the API server does: the live items filtered and minus the archived UIDs (one
// Archived query), one archive page from archiveWindow, mergePage.
func (w mergeCase) got(offset, limit int) ([]mergeItem, int) {
	held := map[string]bool{}
	var archived []mergeItem
	for _, it := range w.archived {
		held[it.uid] = true
		if w.keep(it) {
			archived = append(archived, it)
		}
	}
	archived = sortItems(archived)
	var live []mergeItem
	for _, it := range w.live {
		if w.keep(it) && !held[it.uid] {
			live = append(live, it)
		}
	}
	live = sortItems(live)
	start, n := archiveWindow(offset, limit, len(live))
	window := archived[min(start, len(archived)):min(start+n, len(archived))]
	return mergePage(live, slices.Clone(window), start, len(archived), offset, limit, compareMergeItems)
}

// randomWorld splits n items at random between live only, archived only and both, with ties on
// time and on name, terminal or pending statuses (only terminal ones are archived) and two
// references.
func randomWorld(r *rand.Rand, n int) mergeCase {
	var w mergeCase
	for i := range n {
		it := mergeItem{
			ts:     r.IntN(max(1, n/3)), // many ties
			name:   string(rune('a' + r.IntN(4))),
			uid:    fmt.Sprintf("uid-%03d", i),
			status: []string{"success", "failed", "pending"}[r.IntN(3)],
			ref:    []string{"r1", "r2"}[r.IntN(2)],
		}
		switch where := r.IntN(3); {
		case it.status == "pending" || where == 0:
			w.live = append(w.live, it)
		case where == 1:
			w.archived = append(w.archived, it)
		default:
			w.live = append(w.live, it)
			w.archived = append(w.archived, it)
		}
	}
	r.Shuffle(len(w.live), func(i, j int) { w.live[i], w.live[j] = w.live[j], w.live[i] })
	return w
}

var mergeFilters = map[string]func(mergeItem) bool{
	"no filter":       func(mergeItem) bool { return true },
	"status success":  func(m mergeItem) bool { return m.status == "success" },
	"status failed":   func(m mergeItem) bool { return m.status == "failed" },
	"merchant_ref r2": func(m mergeItem) bool { return m.ref == "r2" },
	"success and r1":  func(m mergeItem) bool { return m.status == "success" && m.ref == "r1" },
	"nothing":         func(mergeItem) bool { return false },
}

// TestMergePageMatchesSortingTheUnion: over random splits of random worlds, every page (offsets
// up to past the end, limits 1 to 25) and total equal sorting the union and slicing it.
func TestMergePageMatchesSortingTheUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 2026))
	for round := range 300 {
		n := r.IntN(45)
		w := randomWorld(r, n)
		for name, keep := range mergeFilters {
			w.keep = keep
			for range 6 {
				offset, limit := r.IntN(n+8), 1+r.IntN(25)
				wantPage, wantTotal := w.want(offset, limit)
				gotPage, gotTotal := w.got(offset, limit)
				if gotTotal != wantTotal || !slices.Equal(gotPage, wantPage) {
					t.Fatalf("round %d, %s, offset %d, limit %d:\nlive %v\narchived %v\ngot  %v (total %d)\nwant %v (total %d)",
						round, name, offset, limit, sortItems(w.live), sortItems(w.archived), gotPage, gotTotal, wantPage, wantTotal)
				}
			}
		}
	}
}

// TestMergedPagesConcatenateToTheList: walking a list page by page with any page size gives
// every item once, in order, with one total.
func TestMergedPagesConcatenateToTheList(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 13))
	for round := range 60 {
		w := randomWorld(r, 5+r.IntN(60))
		w.keep = mergeFilters["no filter"]
		whole, total := w.want(0, 1000)
		for _, limit := range []int{1, 2, 3, 7, 20, 100} {
			var walked []mergeItem
			for offset := 0; offset <= total; offset += limit {
				page, n := w.got(offset, limit)
				if n != total {
					t.Fatalf("round %d, limit %d, offset %d: total %d, want %d", round, limit, offset, n, total)
				}
				walked = append(walked, page...)
			}
			if !slices.Equal(walked, whole) {
				t.Fatalf("round %d, limit %d: pages give\n%v\nwant\n%v", round, limit, walked, whole)
			}
		}
	}
}

// TestMergePageCases pins the edges by hand.
func TestMergePageCases(t *testing.T) {
	it := func(ts int, name, uid string) mergeItem { return mergeItem{ts: ts, name: name, uid: uid} }
	a, b, c, d, e := it(9, "a", "1"), it(8, "b", "2"), it(8, "b", "3"), it(7, "a", "4"), it(5, "z", "5")
	for _, tc := range []struct {
		name          string
		live, window  []mergeItem
		start, total  int
		offset, limit int
		want          []mergeItem
		wantTotal     int
	}{
		{"nothing at all", nil, nil, 0, 0, 0, 20, []mergeItem{}, 0},
		{"live only", []mergeItem{a, c}, nil, 0, 0, 0, 20, []mergeItem{a, c}, 2},
		{"archive only", nil, []mergeItem{b, d}, 0, 2, 0, 20, []mergeItem{b, d}, 2},
		{"interleaved", []mergeItem{a, c, e}, []mergeItem{b, d}, 0, 2, 0, 20, []mergeItem{a, b, c, d, e}, 5},
		{"a tie on time and name, broken by UID", []mergeItem{c}, []mergeItem{b}, 0, 1, 0, 2, []mergeItem{b, c}, 2},
		{"second page", []mergeItem{a, c, e}, []mergeItem{b, d}, 0, 2, 2, 2, []mergeItem{c, d}, 5},
		{"offset past the end", []mergeItem{a}, nil, 9, 2, 12, 5, []mergeItem{}, 3},
		{"offset at the end", []mergeItem{a, e}, nil, 1, 1, 3, 5, []mergeItem{}, 3},
		// Live item a sorts before the window [d, e] (archive positions 2 and 3 of 4): it sits
		// before them, so the page at 3 starts with d at 2 + 1.
		{"live items before the window", []mergeItem{a}, []mergeItem{d, e}, 2, 4, 3, 2, []mergeItem{d, e}, 5},
		// A window that stops before the archive does: the live item after its end is not placed
		// (unread archived items may come before it); it is past the page.
		{"cut after the window", []mergeItem{e}, []mergeItem{a, b}, 0, 4, 0, 1, []mergeItem{a}, 5},
		// An object archived while the request read (still live, not in the Archived answer):
		// once, from the archive.
		{"live and in the window: once", []mergeItem{b, e}, []mergeItem{a, b}, 0, 2, 0, 20, []mergeItem{a, b, e}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, total := mergePage(tc.live, tc.window, tc.start, tc.total, tc.offset, tc.limit, compareMergeItems)
			if total != tc.wantTotal || !slices.Equal(got, tc.want) {
				t.Errorf("got %v (total %d), want %v (total %d)", got, total, tc.want, tc.wantTotal)
			}
		})
	}
}

func TestArchiveWindow(t *testing.T) {
	for _, tc := range []struct{ offset, limit, live, start, n int }{
		{0, 20, 0, 0, 20},
		{0, 20, 5, 0, 20}, // the first page: no archived item past it can be in it
		{3, 20, 5, 0, 23},
		{40, 20, 5, 35, 25},
		{1_000_000, 100, 3, 999_997, 103},
	} {
		if start, n := archiveWindow(tc.offset, tc.limit, tc.live); start != tc.start || n != tc.n {
			t.Errorf("archiveWindow(%d, %d, %d) = %d, %d; want %d, %d", tc.offset, tc.limit, tc.live, start, n, tc.start, tc.n)
		}
	}
}
