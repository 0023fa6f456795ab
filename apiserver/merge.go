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
	total = len(live) + archived
	var run []T // consecutive items of the merged list
	pos := archived
	if len(window) > 0 {
		skip := 0
		if start > 0 {
			skip, _ = slices.BinarySearchFunc(live, &window[0], func(l T, w *T) int { return compare(&l, w) })
		}
		pos = start + skip
		full := start+len(window) < archived // the archive goes on after the window
		run = make([]T, 0, len(live)-skip+len(window))
		i, j := skip, 0
		for i < len(live) || j < len(window) {
			switch {
			case j == len(window):
				if full {
					i = len(live) // may sort after archived items the window does not hold
					continue
				}
				run = append(run, live[i])
				i++
			case i == len(live):
				run = append(run, window[j])
				j++
			default:
				switch c := compare(&live[i], &window[j]); {
				case c < 0:
					run = append(run, live[i])
					i++
				case c > 0:
					run = append(run, window[j])
					j++
				default: // one object, live and archived: once
					total--
					i++
				}
			}
		}
	} else {
		run = live
	}
	lo, hi := max(offset-pos, 0), max(offset+limit-pos, 0)
	lo, hi = min(lo, len(run)), min(hi, len(run))
	return slices.Clone(run[lo:hi]), total
}
