// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/listindex"
)

// List indexes (docs/performance.md, List indexes). The merchant lists (payments, payouts,
// refunds, invoices, subscriptions) read their live items from indexes the informers' event
// handlers keep, instead of listing and sorting every object of the merchant on each page: per
// namespace, merchant and environment (a bucket), one order-statistic list (internal/listindex)
// per filter the list offers, sorted by (the filter's key, the list's order). A filter's items
// are one contiguous range of its list, found by two searches; a page is the range's items at
// [offset, offset+limit), reached by position; a total is the range's length. So a page touches
// O(log n + limit) live objects and its total is O(log n), whatever the offset. In a list ordered
// newest first (payments) the items of one key are sorted by creation time, so those created in a
// span are a sub-range of the key's range, found by the same two searches.
//
// The lists hold the informer's own objects (the cache's pointers: read, never modified; a page is
// copied by writeItems as before). An object is in the bucket of its spec's merchant and
// environment; a list that listed through the merchant and environment labels (listOwn) takes it
// only when its labels say the same (facetSpec.in), so every filter selects exactly what the
// label selector and the handler's filter did.
//
// Until an index's handler has seen the informer's initial list (and with a reader that is not an
// informer cache: the unit tests' fake client), the list reads the cache as before (listOwn).

// facetKey is an item's key in one of its bucket's lists: the values of the filter's fields
// (status, merchant_ref, ...), compared in order. The unfiltered list's key is empty.
type facetKey struct{ a, b string }

func (k facetKey) compare(o facetKey) int {
	if c := strings.Compare(k.a, o.a); c != 0 {
		return c
	}
	return strings.Compare(k.b, o.b)
}

// facetSpec is one filter of a list: which of a bucket's objects its list holds, and their key.
type facetSpec[T any] struct {
	// key is the object's values of the filter's fields; nil: the unfiltered list.
	key func(*T) facetKey
	// in says whether the list holds the object.
	in func(*T) bool
}

// indexSpec describes the index of one kind.
type indexSpec[T any] struct {
	object   func() client.Object // an empty object of the kind (GetInformer)
	bucket   func(*T) bucketKey
	uid      func(*T) types.UID
	terminal func(*T) bool // nil: never archived
	compare  func(a, b *T) int
	facets   []facetSpec[T]
	// created is the time compare puts newest first (within a facet's key), so that a span of
	// creation times is a sub-range of a facet's range; nil: the list has no created filter.
	created func(*T) time.Time
}

// bucketKey is a merchant's environment in a namespace: the objects one caller lists.
type bucketKey struct {
	namespace, merchant string
	env                 paygatev1.Environment
}

func callerBucket(c *caller) bucketKey {
	return bucketKey{namespace: c.merchant.Namespace, merchant: c.merchant.Name, env: c.env}
}

// labelled reports whether an object's merchant and environment labels name its spec's: listOwn
// selected by the labels and the handlers filtered by the spec.
func labelled(labels map[string]string, merchant string, env paygatev1.Environment) bool {
	return labels[paygatev1.LabelMerchant] == merchant && labels[paygatev1.LabelEnvironment] == string(env)
}

// listBucket is the index of one bucket.
type listBucket[T any] struct {
	byUID  map[types.UID]*T
	facets []*listindex.List[T]
	// terminal counts the objects that may be archived (spec.terminal).
	terminal int
	// held is what the API server knows of which live objects the archive holds (archivedLive);
	// nil until a list with an archive asks.
	held *heldState
	// version counts the bucket's changes: a request that reads a range twice searches it once.
	version uint64
}

// listIndex is the index of one kind, kept by the kind's informer's event handler
// (toolscache.ResourceEventHandler).
type listIndex[T any] struct {
	spec    *indexSpec[T]
	mu      sync.RWMutex
	buckets map[bucketKey]*listBucket[T]
	// synced reports whether the handler has seen the informer's initial list; nil: never.
	synced func() bool
}

func newListIndex[T any](spec *indexSpec[T]) *listIndex[T] {
	return &listIndex[T]{spec: spec, buckets: map[bucketKey]*listBucket[T]{}}
}

// ready reports whether lists may read the index.
func (x *listIndex[T]) ready() bool {
	return x != nil && x.synced != nil && x.synced()
}

// register adds the index's handler to the kind's informer, without waiting for it to sync.
func (x *listIndex[T]) register(informers crcache.Informers) error {
	inf, err := informers.GetInformer(context.Background(), x.spec.object(), crcache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(x)
	if err != nil {
		return err
	}
	x.synced = reg.HasSynced
	return nil
}

// OnAdd implements toolscache.ResourceEventHandler.
func (x *listIndex[T]) OnAdd(obj any, _ bool) {
	o, ok := obj.(*T)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.put(o)
}

// OnUpdate implements toolscache.ResourceEventHandler: the new object replaces the old one in
// every list (moving where a sort key or a filter's field changed). An old object of another UID
// (deleted and created again while the watch was down) or bucket is removed first.
func (x *listIndex[T]) OnUpdate(oldObj, newObj any) {
	o, ok := newObj.(*T)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := oldObj.(*T); ok && old != o &&
		(x.spec.uid(old) != x.spec.uid(o) || x.spec.bucket(old) != x.spec.bucket(o)) {
		x.remove(old)
	}
	x.put(o)
}

// OnDelete implements toolscache.ResourceEventHandler, tombstones included.
func (x *listIndex[T]) OnDelete(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(*T)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.remove(o)
}

// put indexes o, replacing the object of its UID.
func (x *listIndex[T]) put(o *T) {
	key, uid := x.spec.bucket(o), x.spec.uid(o)
	b := x.buckets[key]
	if b == nil {
		b = &listBucket[T]{byUID: map[types.UID]*T{}}
		for _, f := range x.spec.facets {
			b.facets = append(b.facets, listindex.New(x.facetOrder(f)))
		}
		x.buckets[key] = b
	}
	old := b.byUID[uid]
	if old == o {
		return // a resync: the same object
	}
	if old != nil {
		x.unindex(b, old)
	}
	b.byUID[uid] = o
	x.index(b, o)
	b.version++
	if h := b.held; h != nil && x.terminal(o) && (old == nil || !x.terminal(old)) {
		if _, held := h.held[uid]; !held {
			h.unverified[uid] = struct{}{} // terminal since the last check: asked next time
		}
	} else if h != nil && !x.terminal(o) {
		delete(h.unverified, uid)
	}
}

// remove drops the object of o's UID from o's bucket.
func (x *listIndex[T]) remove(o *T) {
	key, uid := x.spec.bucket(o), x.spec.uid(o)
	b := x.buckets[key]
	if b == nil {
		return
	}
	stored := b.byUID[uid]
	if stored == nil {
		return
	}
	x.unindex(b, stored)
	delete(b.byUID, uid)
	b.version++
	if h := b.held; h != nil {
		_, held := h.held[uid]
		_, unverified := h.unverified[uid]
		delete(h.held, uid)
		delete(h.unverified, uid)
		if !held && !unverified && x.terminal(stored) {
			h.gone[uid] = struct{}{} // checked not archived; may be now (heldState)
		}
	}
	if len(b.byUID) == 0 {
		delete(x.buckets, key)
	}
}

func (x *listIndex[T]) index(b *listBucket[T], o *T) {
	for i, f := range x.spec.facets {
		if f.in(o) {
			b.facets[i].Insert(o)
		}
	}
	if x.terminal(o) {
		b.terminal++
	}
}

func (x *listIndex[T]) unindex(b *listBucket[T], o *T) {
	for i, f := range x.spec.facets {
		if f.in(o) {
			b.facets[i].Delete(o)
		}
	}
	if x.terminal(o) {
		b.terminal--
	}
}

func (x *listIndex[T]) terminal(o *T) bool {
	return x.spec.terminal != nil && x.spec.terminal(o)
}

// facetOrder is the order of a facet's list: by the filter's key, then the list's order, then
// the UID (the subscriptions' order ends with the name, one object's at a time, but a list must
// never take two objects for one).
func (x *listIndex[T]) facetOrder(f facetSpec[T]) func(a, b *T) int {
	return func(a, b *T) int {
		if f.key != nil {
			if c := f.key(a).compare(f.key(b)); c != 0 {
				return c
			}
		}
		if c := x.spec.compare(a, b); c != 0 {
			return c
		}
		return strings.Compare(string(x.spec.uid(a)), string(x.spec.uid(b)))
	}
}

// rangeOf is the live items of a bucket that facet selects with key and that were created in
// span (an open span for a list without a created filter), as a liveSeq. The caller holds x.mu
// (read) while it uses the range. seen, when not nil, keeps the range's bounds for the next call
// of the same request while the bucket does not change.
func (x *listIndex[T]) rangeOf(bucket bucketKey, facet int, key facetKey, span timeSpan, st *listStats, seen *rangeBounds) *indexRange[T] {
	r := &indexRange[T]{spec: x.spec, facet: x.spec.facets[facet], key: key, span: span, st: st}
	b := x.buckets[bucket]
	if b == nil {
		return r
	}
	r.list, r.byUID, r.bucket, r.version = b.facets[facet], b.byUID, b, b.version
	r.hi = r.list.Len()
	switch {
	case r.facet.key == nil && span.open():
	case seen != nil && seen.bucket == b && seen.version == b.version:
		r.lo, r.hi = seen.lo, seen.hi
	default:
		// Inside the key the items are newest first: those created at or after span.to come
		// before the span's, those created before span.from after them.
		r.lo = r.list.Search(func(e *T) bool {
			st.live++
			c := r.keyOrder(e)
			return c > 0 || c == 0 && (span.to.IsZero() || x.spec.created(e).Before(span.to))
		})
		r.hi = r.list.Search(func(e *T) bool {
			st.live++
			c := r.keyOrder(e)
			return c > 0 || c == 0 && !span.from.IsZero() && x.spec.created(e).Before(span.from)
		})
		if seen != nil {
			*seen = rangeBounds{bucket: b, version: b.version, lo: r.lo, hi: r.hi}
		}
	}
	return r
}

// indexedRefundsOf reads a payment's live refunds from the refund index (a shallow copy of each: the
// caller only reads them); ok is false when the index cannot answer (not synced). A payment list
// renders each payment's refund fields: through the index a payment without refunds costs a map
// lookup, not a cache list (which allocated a list per payment and was a third of a page's CPU at
// 100,000 payments).
func indexedRefundsOf(idx *listIndex[paygatev1.Refund], bucket bucketKey, trxID string) (refunds []paygatev1.Refund, ok bool) {
	if !idx.ready() {
		return nil, false
	}
	idx.mu.RLock()
	defer idx.mu.RUnlock()
	b := idx.buckets[bucket]
	if b == nil || len(b.byUID) == 0 {
		return nil, true
	}
	r := idx.rangeOf(bucket, facetField, facetKey{a: trxID}, timeSpan{}, &listStats{}, nil)
	for i := range r.Len() {
		refunds = append(refunds, *r.At(i))
	}
	return refunds, true
}

// indexedLive reports whether the payment index holds p (a live payment); ok is false when the
// index cannot say (not synced). A payment created a moment ago may be live and not indexed yet:
// a caller that then asks the archive too asks once more than it needed, nothing worse.
func indexedLive(x *listIndex[paygatev1.Payment], p *paygatev1.Payment) (live, ok bool) {
	if !x.ready() {
		return false, false
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	b := x.buckets[x.spec.bucket(p)]
	if b == nil {
		return false, true
	}
	_, live = b.byUID[p.UID]
	return live, true
}

// rangeBounds are a range's bounds in one version of a bucket.
type rangeBounds struct {
	bucket  any
	version uint64
	lo, hi  int
}

// indexRange is the items [lo, hi) of a bucket's facet list: those whose key is key, created in
// span. It counts the objects it reads in st.live.
type indexRange[T any] struct {
	spec   *indexSpec[T]
	facet  facetSpec[T]
	key    facetKey
	span   timeSpan
	list   *listindex.List[T] // nil: an empty bucket
	byUID  map[types.UID]*T
	lo, hi int
	st     *listStats
	// bucket and version identify the bucket's state the range was found in (keptItems).
	bucket  any
	version uint64
}

func (r *indexRange[T]) Len() int { return r.hi - r.lo }

func (r *indexRange[T]) At(i int) *T {
	r.st.live++
	return r.list.At(r.lo + i)
}

func (r *indexRange[T]) Rank(x *T) int {
	if r.list == nil {
		return 0
	}
	i := r.list.Search(func(e *T) bool {
		r.st.live++
		if c := r.keyOrder(e); c != 0 {
			return c > 0
		}
		return r.spec.compare(e, x) >= 0
	})
	return min(max(i, r.lo), r.hi) - r.lo
}

// keyOrder compares e's key with the range's (0 in the unfiltered list).
func (r *indexRange[T]) keyOrder(e *T) int {
	if r.facet.key == nil {
		return 0
	}
	return r.facet.key(e).compare(r.key)
}

// Find looks x's UID up (no object read unless it is live) and checks that the live object is
// in the range and equal to x.
func (r *indexRange[T]) Find(x *T) int {
	if r.list == nil {
		return -1
	}
	o := r.byUID[r.spec.uid(x)]
	if o == nil || !r.holds(o) {
		return -1
	}
	r.st.live++
	if r.spec.compare(o, x) != 0 {
		return -1
	}
	return r.Rank(o)
}

// holds reports whether the range holds the bucket's object o.
func (r *indexRange[T]) holds(o *T) bool {
	return r.facet.in(o) && (r.facet.key == nil || r.facet.key(o) == r.key) && (r.span.open() || r.span.holds(r.spec.created(o)))
}

// without is the range without the terminal objects of held (the archive holds them: they are
// counted once, from the archive).
func (r *indexRange[T]) without(held map[string]bool) liveSeq[T] {
	if r.list == nil || len(held) == 0 {
		return r
	}
	var drop []int
	for uid := range held {
		if o := r.byUID[types.UID(uid)]; o != nil && r.spec.terminal != nil && r.spec.terminal(o) && r.holds(o) {
			drop = append(drop, r.Rank(o))
		}
	}
	return withoutPositions[T](r, drop)
}

// listIndexes are the API server's list indexes; nil without an informer cache.
type listIndexes struct {
	payments      *listIndex[paygatev1.Payment]
	payouts       *listIndex[paygatev1.Payout]
	refunds       *listIndex[paygatev1.Refund]
	invoices      *listIndex[paygatev1.Invoice]
	subscriptions *listIndex[paygatev1.Subscription]
	deliveries    *listIndex[paygatev1.WebhookDelivery] // apiserver/deliveries.go
}

func newListIndexSet() *listIndexes {
	return &listIndexes{
		payments:      newListIndex(&paymentIndex),
		payouts:       newListIndex(&payoutIndex),
		refunds:       newListIndex(&refundIndex),
		invoices:      newListIndex(&invoiceIndex),
		subscriptions: newListIndex(&subscriptionIndex),
		deliveries:    newListIndex(&deliveryIndex),
	}
}

// startListIndexes registers the list indexes' handlers on r's informers; nil when r is not an
// informer cache. An index whose handler cannot be registered is left unsynced (its list reads
// the cache as before) and logged.
func startListIndexes(r client.Reader, log logr.Logger) *listIndexes {
	informers, ok := r.(crcache.Informers)
	if !ok || r == nil {
		return nil
	}
	l := newListIndexSet()
	for _, x := range []interface {
		register(crcache.Informers) error
	}{l.payments, l.payouts, l.refunds, l.invoices, l.subscriptions, l.deliveries} {
		if err := x.register(informers); err != nil {
			log.Error(err, "List index not started; its list reads the cache")
		}
	}
	return l
}

func (l *listIndexes) paymentIndex() *listIndex[paygatev1.Payment] {
	if l == nil {
		return nil
	}
	return l.payments
}

func (l *listIndexes) payoutIndex() *listIndex[paygatev1.Payout] {
	if l == nil {
		return nil
	}
	return l.payouts
}

func (l *listIndexes) refundIndex() *listIndex[paygatev1.Refund] {
	if l == nil {
		return nil
	}
	return l.refunds
}

func (l *listIndexes) invoiceIndex() *listIndex[paygatev1.Invoice] {
	if l == nil {
		return nil
	}
	return l.invoices
}

func (l *listIndexes) subscriptionIndex() *listIndex[paygatev1.Subscription] {
	if l == nil {
		return nil
	}
	return l.subscriptions
}

// ---- The kinds ----

// Facets of each list, in the order of its indexSpec.facets.
const (
	facetAll = iota
	facetStatus
	facetField          // merchant_ref, payment, subscription or plan_code
	facetFieldAndStatus // that field and status
)

// facetOf picks the facet and key of a request's filter: status and field, each "" when absent.
func facetOf(status, field string) (int, facetKey) {
	switch {
	case field != "" && status != "":
		return facetFieldAndStatus, facetKey{field, status}
	case field != "":
		return facetField, facetKey{a: field}
	case status != "":
		return facetStatus, facetKey{a: status}
	}
	return facetAll, facetKey{}
}

// fourFacets are the facets of a list filtered by status and one field: in says which objects
// the unfiltered and status lists hold, fieldIn which the field's.
func fourFacets[T any](phase, field func(*T) string, in, fieldIn func(*T) bool) []facetSpec[T] {
	return []facetSpec[T]{
		facetAll:            {in: in},
		facetStatus:         {in: in, key: func(o *T) facetKey { return facetKey{a: phase(o)} }},
		facetField:          {in: fieldIn, key: func(o *T) facetKey { return facetKey{a: field(o)} }},
		facetFieldAndStatus: {in: fieldIn, key: func(o *T) facetKey { return facetKey{field(o), phase(o)} }},
	}
}

// The payment list's facets after the four of status and merchant_ref: the customer's phone, and
// the phone and status. Only payments with a phone are in them.
const (
	facetPhone = facetFieldAndStatus + 1 + iota
	facetPhoneAndStatus
)

var paymentIndex = indexSpec[paygatev1.Payment]{
	object: func() client.Object { return &paygatev1.Payment{} },
	bucket: func(p *paygatev1.Payment) bucketKey {
		return bucketKey{p.Namespace, p.Spec.MerchantRef.Name, p.Spec.Environment}
	},
	uid:      func(p *paygatev1.Payment) types.UID { return p.UID },
	terminal: (*paygatev1.Payment).Terminal,
	compare:  comparePayments,
	created:  paymentCreated,
	facets: append(fourFacets(paymentStatus, func(p *paygatev1.Payment) string { return p.Spec.MerchantReference },
		paymentListed, paymentListed),
		facetSpec[paygatev1.Payment]{in: phoneListed, key: func(p *paygatev1.Payment) facetKey {
			return facetKey{a: string(p.Spec.Customer.Phone)}
		}},
		facetSpec[paygatev1.Payment]{in: phoneListed, key: func(p *paygatev1.Payment) facetKey {
			return facetKey{string(p.Spec.Customer.Phone), paymentStatus(p)}
		}}),
}

func paymentListed(p *paygatev1.Payment) bool {
	return labelled(p.Labels, p.Spec.MerchantRef.Name, p.Spec.Environment)
}

// phoneListed: a payment without a phone (a hosted one whose customer was not named) costs the
// phone lists nothing; no phone filter selects it.
func phoneListed(p *paygatev1.Payment) bool {
	return p.Spec.Customer.Phone != "" && paymentListed(p)
}

func paymentStatus(p *paygatev1.Payment) string { return string(p.Phase()) }

var payoutIndex = indexSpec[paygatev1.Payout]{
	object: func() client.Object { return &paygatev1.Payout{} },
	bucket: func(p *paygatev1.Payout) bucketKey {
		return bucketKey{p.Namespace, p.Spec.MerchantRef.Name, p.Spec.Environment}
	},
	uid:      func(p *paygatev1.Payout) types.UID { return p.UID },
	terminal: (*paygatev1.Payout).Terminal,
	compare:  comparePayouts,
	facets: []facetSpec[paygatev1.Payout]{
		facetAll: {in: payoutListed},
		facetStatus: {in: payoutListed, key: func(p *paygatev1.Payout) facetKey {
			return facetKey{a: string(p.Phase())}
		}},
	},
}

func payoutListed(p *paygatev1.Payout) bool {
	return labelled(p.Labels, p.Spec.MerchantRef.Name, p.Spec.Environment)
}

// refundIndex: a payment's refunds were read through the refunds-by-payment field index, without
// the labels (refundsOf): its facets hold every refund of the bucket.
var refundIndex = indexSpec[paygatev1.Refund]{
	object: func() client.Object { return &paygatev1.Refund{} },
	bucket: func(f *paygatev1.Refund) bucketKey {
		return bucketKey{f.Namespace, f.Spec.MerchantRef.Name, f.Spec.Environment}
	},
	uid:      func(f *paygatev1.Refund) types.UID { return f.UID },
	terminal: (*paygatev1.Refund).Terminal,
	compare:  compareRefunds,
	facets: fourFacets(func(f *paygatev1.Refund) string { return string(f.Phase()) },
		func(f *paygatev1.Refund) string { return f.Spec.Payment.TrxID },
		func(f *paygatev1.Refund) bool { return labelled(f.Labels, f.Spec.MerchantRef.Name, f.Spec.Environment) },
		func(f *paygatev1.Refund) bool { return f.Spec.Payment.TrxID != "" }),
}

var invoiceIndex = indexSpec[paygatev1.Invoice]{
	object: func() client.Object { return &paygatev1.Invoice{} },
	bucket: func(i *paygatev1.Invoice) bucketKey {
		return bucketKey{i.Namespace, i.Spec.MerchantRef.Name, i.Spec.Environment}
	},
	uid:      func(i *paygatev1.Invoice) types.UID { return i.UID },
	terminal: (*paygatev1.Invoice).Terminal,
	compare:  compareInvoices,
	facets: fourFacets(func(i *paygatev1.Invoice) string { return string(i.Phase()) },
		func(i *paygatev1.Invoice) string { return i.Spec.SubscriptionRef.Name },
		invoiceListed, invoiceListed),
}

func invoiceListed(i *paygatev1.Invoice) bool {
	return labelled(i.Labels, i.Spec.MerchantRef.Name, i.Spec.Environment)
}

var subscriptionIndex = indexSpec[paygatev1.Subscription]{
	object: func() client.Object { return &paygatev1.Subscription{} },
	bucket: func(s *paygatev1.Subscription) bucketKey {
		return bucketKey{s.Namespace, s.Spec.MerchantRef.Name, s.Spec.Environment}
	},
	uid:     func(s *paygatev1.Subscription) types.UID { return s.UID },
	compare: compareSubscriptions,
	facets: fourFacets(func(s *paygatev1.Subscription) string { return string(s.Phase()) },
		func(s *paygatev1.Subscription) string { return s.Spec.PlanCode },
		subscriptionListed, subscriptionListed),
}

func subscriptionListed(s *paygatev1.Subscription) bool {
	return labelled(s.Labels, s.Spec.MerchantRef.Name, s.Spec.Environment)
}
