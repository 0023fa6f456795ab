// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// The list indexes (listindex.go) against what the lists did before them: list the merchant's
// objects by label, filter them as the handler did, sort them, slice the page.

// indexHarness drives one kind's index with random objects and knows the old handler's filter.
type indexHarness[T any] struct {
	gen    func(r *rand.Rand, i int) *T
	mutate func(r *rand.Rand, o *T) *T // a changed copy of o, same name and UID
	key    func(o *T) string           // the informer store's key: namespace/name
	reUID  func(o *T, uid string) *T   // a copy of o under another UID (deleted and created again)
	// match is the old list's selection for a caller of bucket b with the status and field
	// filters ("" for none): listOwn's labels and the handler's filter.
	match    func(o *T, b bucketKey, status, field string) bool
	compare  func(a, b *T) int
	statuses []string
	fields   []string
	uid      func(*T) types.UID
}

// Random worlds: two namespaces, two merchants, both environments; labels that usually say the
// spec's merchant and environment; times with many ties.
var (
	harnessNamespaces = []string{"shop", "mall"}
	harnessMerchants  = []string{"duka", "soko"}
	harnessEnvs       = []paygatev1.Environment{paygatev1.EnvironmentSandbox, paygatev1.EnvironmentProduction}
	harnessBase       = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
)

func pick[E any](r *rand.Rand, xs []E) E { return xs[r.IntN(len(xs))] }

func randomMeta(r *rand.Rand, i int, prefix string) (metav1.ObjectMeta, string, paygatev1.Environment) {
	merchant, env := pick(r, harnessMerchants), pick(r, harnessEnvs)
	labels := map[string]string{paygatev1.LabelMerchant: merchant, paygatev1.LabelEnvironment: string(env)}
	switch r.IntN(20) {
	case 0:
		labels[paygatev1.LabelMerchant] = "other"
	case 1:
		delete(labels, paygatev1.LabelEnvironment)
	}
	return metav1.ObjectMeta{Namespace: pick(r, harnessNamespaces), Name: fmt.Sprintf("%s-%05d", prefix, i),
		UID:               types.UID(fmt.Sprintf("uid-%s-%05d-%d", prefix, i, r.IntN(1000))),
		CreationTimestamp: metav1.NewTime(randomTime(r)), Labels: labels}, merchant, env
}

func randomTime(r *rand.Rand) time.Time {
	return harnessBase.Add(time.Duration(r.IntN(40)) * time.Second)
}

func randomMicro(r *rand.Rand) metav1.MicroTime {
	return metav1.NewMicroTime(randomTime(r).Add(time.Duration(r.IntN(3)) * time.Microsecond))
}

func labelsMatch(l map[string]string, b bucketKey) bool {
	return l[paygatev1.LabelMerchant] == b.merchant && l[paygatev1.LabelEnvironment] == string(b.env)
}

func maybeRelabel(r *rand.Rand, m *metav1.ObjectMeta, merchant string, env paygatev1.Environment) {
	if r.IntN(8) == 0 {
		m.Labels = map[string]string{paygatev1.LabelMerchant: merchant, paygatev1.LabelEnvironment: string(env)}
		if r.IntN(3) == 0 {
			m.Labels[paygatev1.LabelMerchant] = "other"
		}
	}
}

var paymentHarness = indexHarness[paygatev1.Payment]{
	gen: func(r *rand.Rand, i int) *paygatev1.Payment {
		meta, merchant, env := randomMeta(r, i, "trx")
		p := &paygatev1.Payment{ObjectMeta: meta}
		p.Spec.MerchantRef.Name, p.Spec.Environment = merchant, env
		p.Spec.MerchantReference = pick(r, []string{"r1", "r2", "r3", "inv-9"})
		p.Status.Phase = pick(r, []paygatev1.PaymentPhase{"", paygatev1.PaymentSuccess, paygatev1.PaymentFailed})
		return p
	},
	mutate: func(r *rand.Rand, o *paygatev1.Payment) *paygatev1.Payment {
		p := o.DeepCopy()
		switch r.IntN(4) {
		case 0:
			p.Status.Phase = pick(r, []paygatev1.PaymentPhase{"", paygatev1.PaymentPending, paygatev1.PaymentSuccess, paygatev1.PaymentFailed})
		case 1:
			p.Spec.MerchantReference = pick(r, []string{"r1", "r2", "r3", "inv-9"})
		case 2:
			p.CreationTimestamp = metav1.NewTime(randomTime(r)) // a sort key moves
		default:
			maybeRelabel(r, &p.ObjectMeta, p.Spec.MerchantRef.Name, p.Spec.Environment)
			p.Status.Reason = "touched"
		}
		return p
	},
	key: func(o *paygatev1.Payment) string { return o.Namespace + "/" + o.Name },
	reUID: func(o *paygatev1.Payment, uid string) *paygatev1.Payment {
		p := o.DeepCopy()
		p.UID = types.UID(uid)
		return p
	},
	match: func(p *paygatev1.Payment, b bucketKey, status, ref string) bool {
		return p.Namespace == b.namespace && labelsMatch(p.Labels, b) && p.Spec.MerchantRef.Name == b.merchant && p.Spec.Environment == b.env &&
			(status == "" || string(p.Phase()) == status) && (ref == "" || p.Spec.MerchantReference == ref)
	},
	compare:  comparePayments,
	statuses: []string{"pending", "success", "failed"},
	fields:   []string{"r1", "r2", "inv-9", "nope"},
	uid:      func(p *paygatev1.Payment) types.UID { return p.UID },
}

var payoutHarness = indexHarness[paygatev1.Payout]{
	gen: func(r *rand.Rand, i int) *paygatev1.Payout {
		meta, merchant, env := randomMeta(r, i, "po")
		p := &paygatev1.Payout{ObjectMeta: meta}
		p.Spec.MerchantRef.Name, p.Spec.Environment, p.Spec.CreatedAt = merchant, env, randomMicro(r)
		p.Status.Phase = pick(r, []paygatev1.PayoutPhase{"", paygatev1.PayoutProcessing, paygatev1.PayoutSuccess, paygatev1.PayoutFailed})
		return p
	},
	mutate: func(r *rand.Rand, o *paygatev1.Payout) *paygatev1.Payout {
		p := o.DeepCopy()
		switch r.IntN(3) {
		case 0:
			p.Status.Phase = pick(r, []paygatev1.PayoutPhase{"", paygatev1.PayoutProcessing, paygatev1.PayoutSuccess, paygatev1.PayoutFailed})
		case 1:
			p.Spec.CreatedAt = randomMicro(r)
		default:
			maybeRelabel(r, &p.ObjectMeta, p.Spec.MerchantRef.Name, p.Spec.Environment)
		}
		return p
	},
	key: func(o *paygatev1.Payout) string { return o.Namespace + "/" + o.Name },
	reUID: func(o *paygatev1.Payout, uid string) *paygatev1.Payout {
		p := o.DeepCopy()
		p.UID = types.UID(uid)
		return p
	},
	match: func(p *paygatev1.Payout, b bucketKey, status, _ string) bool {
		return p.Namespace == b.namespace && labelsMatch(p.Labels, b) && p.Spec.MerchantRef.Name == b.merchant && p.Spec.Environment == b.env &&
			(status == "" || string(p.Phase()) == status)
	},
	compare:  comparePayouts,
	statuses: []string{"pending", "processing", "success", "failed"},
	uid:      func(p *paygatev1.Payout) types.UID { return p.UID },
}

// refundHarness: the payment filter read the refunds-by-payment index (no labels), the others
// listOwn.
var refundHarness = indexHarness[paygatev1.Refund]{
	gen: func(r *rand.Rand, i int) *paygatev1.Refund {
		meta, merchant, env := randomMeta(r, i, "rf")
		f := &paygatev1.Refund{ObjectMeta: meta}
		f.Spec.MerchantRef.Name, f.Spec.Environment, f.Spec.CreatedAt = merchant, env, randomMicro(r)
		f.Spec.Payment.TrxID = pick(r, []string{"trx-a", "trx-b", "trx-c"})
		f.Status.Phase = pick(r, []paygatev1.RefundPhase{"", paygatev1.RefundProcessing, paygatev1.RefundSuccess, paygatev1.RefundFailed})
		return f
	},
	mutate: func(r *rand.Rand, o *paygatev1.Refund) *paygatev1.Refund {
		f := o.DeepCopy()
		switch r.IntN(3) {
		case 0:
			f.Status.Phase = pick(r, []paygatev1.RefundPhase{"", paygatev1.RefundProcessing, paygatev1.RefundSuccess, paygatev1.RefundFailed})
		case 1:
			f.Spec.CreatedAt = randomMicro(r)
		default:
			maybeRelabel(r, &f.ObjectMeta, f.Spec.MerchantRef.Name, f.Spec.Environment)
		}
		return f
	},
	key: func(o *paygatev1.Refund) string { return o.Namespace + "/" + o.Name },
	reUID: func(o *paygatev1.Refund, uid string) *paygatev1.Refund {
		f := o.DeepCopy()
		f.UID = types.UID(uid)
		return f
	},
	match: func(f *paygatev1.Refund, b bucketKey, status, payment string) bool {
		owned := f.Namespace == b.namespace && f.Spec.MerchantRef.Name == b.merchant && f.Spec.Environment == b.env &&
			(status == "" || string(f.Phase()) == status)
		if payment != "" {
			return owned && f.Spec.Payment.TrxID == payment
		}
		return owned && labelsMatch(f.Labels, b)
	},
	compare:  compareRefunds,
	statuses: []string{"pending", "processing", "success", "failed"},
	fields:   []string{"trx-a", "trx-c", "trx-z"},
	uid:      func(f *paygatev1.Refund) types.UID { return f.UID },
}

var invoiceHarness = indexHarness[paygatev1.Invoice]{
	gen: func(r *rand.Rand, i int) *paygatev1.Invoice {
		meta, merchant, env := randomMeta(r, i, "inv")
		inv := &paygatev1.Invoice{ObjectMeta: meta}
		inv.Spec.MerchantRef.Name, inv.Spec.Environment = merchant, env
		inv.Spec.SubscriptionRef.Name, inv.Spec.Period = pick(r, []string{"sub-a", "sub-b"}), int32(1+r.IntN(4))
		inv.Status.Phase = pick(r, []paygatev1.InvoicePhase{"", paygatev1.InvoicePaid, paygatev1.InvoicePaymentFailed, paygatev1.InvoiceVoid})
		return inv
	},
	mutate: func(r *rand.Rand, o *paygatev1.Invoice) *paygatev1.Invoice {
		inv := o.DeepCopy()
		switch r.IntN(3) {
		case 0:
			inv.Status.Phase = pick(r, []paygatev1.InvoicePhase{"", paygatev1.InvoicePaid, paygatev1.InvoicePaymentFailed, paygatev1.InvoiceVoid})
		case 1:
			inv.Spec.Period = int32(1 + r.IntN(4))
		default:
			maybeRelabel(r, &inv.ObjectMeta, inv.Spec.MerchantRef.Name, inv.Spec.Environment)
		}
		return inv
	},
	key: func(o *paygatev1.Invoice) string { return o.Namespace + "/" + o.Name },
	reUID: func(o *paygatev1.Invoice, uid string) *paygatev1.Invoice {
		i := o.DeepCopy()
		i.UID = types.UID(uid)
		return i
	},
	match: func(inv *paygatev1.Invoice, b bucketKey, status, sub string) bool {
		return inv.Namespace == b.namespace && labelsMatch(inv.Labels, b) && inv.Spec.MerchantRef.Name == b.merchant && inv.Spec.Environment == b.env &&
			(status == "" || string(inv.Phase()) == status) && (sub == "" || inv.Spec.SubscriptionRef.Name == sub)
	},
	compare:  compareInvoices,
	statuses: []string{"open", "paid", "payment_failed", "void"},
	fields:   []string{"sub-a", "sub-b", "sub-x"},
	uid:      func(i *paygatev1.Invoice) types.UID { return i.UID },
}

var subscriptionHarness = indexHarness[paygatev1.Subscription]{
	gen: func(r *rand.Rand, i int) *paygatev1.Subscription {
		meta, merchant, env := randomMeta(r, i, "sub")
		s := &paygatev1.Subscription{ObjectMeta: meta}
		s.Spec.MerchantRef.Name, s.Spec.Environment, s.Spec.Consent.RecordedAt = merchant, env, randomMicro(r)
		s.Spec.PlanCode = pick(r, []string{"gold", "silver"})
		s.Status.Phase = pick(r, []paygatev1.SubscriptionPhase{"", paygatev1.SubscriptionActive, paygatev1.SubscriptionPastDue, paygatev1.SubscriptionCancelled})
		return s
	},
	mutate: func(r *rand.Rand, o *paygatev1.Subscription) *paygatev1.Subscription {
		s := o.DeepCopy()
		switch r.IntN(3) {
		case 0:
			s.Status.Phase = pick(r, []paygatev1.SubscriptionPhase{"", paygatev1.SubscriptionActive, paygatev1.SubscriptionPastDue, paygatev1.SubscriptionSuspended, paygatev1.SubscriptionCancelled})
		case 1:
			s.Spec.PlanCode = pick(r, []string{"gold", "silver"})
		default:
			maybeRelabel(r, &s.ObjectMeta, s.Spec.MerchantRef.Name, s.Spec.Environment)
		}
		return s
	},
	key: func(o *paygatev1.Subscription) string { return o.Namespace + "/" + o.Name },
	reUID: func(o *paygatev1.Subscription, uid string) *paygatev1.Subscription {
		s := o.DeepCopy()
		s.UID = types.UID(uid)
		return s
	},
	match: func(s *paygatev1.Subscription, b bucketKey, status, plan string) bool {
		return s.Namespace == b.namespace && labelsMatch(s.Labels, b) && s.Spec.MerchantRef.Name == b.merchant && s.Spec.Environment == b.env &&
			(status == "" || string(s.Phase()) == status) && (plan == "" || s.Spec.PlanCode == plan)
	},
	compare:  compareSubscriptions,
	statuses: []string{"pending", "active", "past_due", "suspended", "cancelled"},
	fields:   []string{"gold", "silver", "bronze"},
	uid:      func(s *paygatev1.Subscription) types.UID { return s.UID },
}

// oldList is what a list answered before the indexes: filter and sort (then slice the page).
func (h indexHarness[T]) oldList(live map[string]*T, b bucketKey, status, field string) []types.UID {
	var items []T
	for _, o := range live {
		if h.match(o, b, status, field) {
			items = append(items, *o)
		}
	}
	return h.uids(sortedByPointer(items, h.compare))
}

func (h indexHarness[T]) uids(items []T) []types.UID {
	out := make([]types.UID, len(items))
	for i := range items {
		out[i] = h.uid(&items[i])
	}
	return out
}

// indexList is the same page read from the index.
func (h indexHarness[T]) indexList(x *listIndex[T], b bucketKey, status, field string, offset, limit int) ([]types.UID, int) {
	facet, key := facetOf(status, field)
	var page []T
	total := 0
	x.live(b, facet, key, nil).read(nil, func(seq liveSeq[T]) { page, total = pageOf(seq, offset, limit), seq.Len() })
	return h.uids(page), total
}

// runOn replays seeded random adds, updates (sort keys and filter fields moving), deletes (half
// as tombstones), re-creations under a new UID and resyncs, and compares every filter's pages.
func (h indexHarness[T]) runOn(t *testing.T, r *rand.Rand, steps int) {
	t.Helper()
	x := newListIndex(specFor[T]())
	live := map[string]*T{}
	keys := func() []string {
		ks := make([]string, 0, len(live))
		for k := range live {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	next := 0
	for step := range steps {
		switch op := r.IntN(20); {
		case len(live) == 0 || op < 8:
			o := h.gen(r, next)
			next++
			live[h.key(o)] = o
			x.OnAdd(o, false)
		case op < 14:
			k := pick(r, keys())
			o := h.mutate(r, live[k])
			x.OnUpdate(live[k], o)
			live[k] = o
		case op < 17:
			k := pick(r, keys())
			if r.IntN(2) == 0 {
				x.OnDelete(toolscache.DeletedFinalStateUnknown{Key: k, Obj: live[k]})
			} else {
				x.OnDelete(live[k])
			}
			delete(live, k)
		case op < 19:
			k := pick(r, keys())
			o := h.reUID(live[k], fmt.Sprintf("uid-again-%d", step))
			x.OnUpdate(live[k], o)
			live[k] = o
		default:
			k := pick(r, keys())
			x.OnUpdate(live[k], live[k]) // a resync
		}
		if step%25 != 0 && step != steps-1 {
			continue
		}
		last := step == steps-1
		for _, ns := range harnessNamespaces {
			for _, m := range append(slices.Clone(harnessMerchants), "ghost") {
				for _, env := range harnessEnvs {
					b := bucketKey{ns, m, env}
					for _, status := range append([]string{""}, h.statuses...) {
						for _, field := range append([]string{""}, h.fields...) {
							all := h.oldList(live, b, status, field)
							total := len(all)
							var limits []int
							if last {
								for l := 1; l <= 100; l++ {
									limits = append(limits, l)
								}
							} else {
								limits = []int{1 + r.IntN(100), pick(r, []int{1, 2, 3, 20, 100})}
							}
							for _, limit := range limits {
								for _, offset := range []int{0, r.IntN(total + 1), total / 2, max(total-1, 0), total, total + 1 + r.IntN(50)} {
									wantPage, wantTotal := all[min(offset, total):min(offset+limit, total)], total
									gotPage, gotTotal := h.indexList(x, b, status, field, offset, limit)
									if gotTotal != wantTotal || !slices.Equal(gotPage, wantPage) {
										t.Fatalf("step %d, bucket %v, status %q, field %q, offset %d, limit %d:\ngot  %v (total %d)\nwant %v (total %d)",
											step, b, status, field, offset, limit, gotPage, gotTotal, wantPage, wantTotal)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	// Nothing is left behind: deleting everything empties the index.
	for _, k := range keys() {
		x.OnDelete(live[k])
	}
	if len(x.buckets) != 0 {
		t.Fatalf("%d buckets left after every object was deleted", len(x.buckets))
	}
}

func specFor[T any]() *indexSpec[T] {
	var v any
	switch any(new(T)).(type) {
	case *paygatev1.Payment:
		v = &paymentIndex
	case *paygatev1.Payout:
		v = &payoutIndex
	case *paygatev1.Refund:
		v = &refundIndex
	case *paygatev1.Invoice:
		v = &invoiceIndex
	case *paygatev1.Subscription:
		v = &subscriptionIndex
	case *paygatev1.WebhookDelivery:
		v = &deliveryIndex
	}
	return v.(*indexSpec[T])
}

// TestListIndexesAnswerAsTheOldLists: for every kind and every filter its list offers (and their
// combinations), over seeded random adds, updates, deletes, tombstones, re-creations and
// resyncs, every page (limits 1 to 100, offsets from 0 to past the end) and total read from the
// index equals filtering, sorting and slicing what the cache holds.
func TestListIndexesAnswerAsTheOldLists(t *testing.T) {
	steps := 600
	if testing.Short() {
		steps = 200
	}
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("payments/seed%d", seed), func(t *testing.T) { paymentHarness.runOn(t, rand.New(rand.NewPCG(seed, 1)), steps) })
		t.Run(fmt.Sprintf("payouts/seed%d", seed), func(t *testing.T) { payoutHarness.runOn(t, rand.New(rand.NewPCG(seed, 2)), steps) })
		t.Run(fmt.Sprintf("refunds/seed%d", seed), func(t *testing.T) { refundHarness.runOn(t, rand.New(rand.NewPCG(seed, 3)), steps) })
		t.Run(fmt.Sprintf("invoices/seed%d", seed), func(t *testing.T) { invoiceHarness.runOn(t, rand.New(rand.NewPCG(seed, 4)), steps) })
		t.Run(fmt.Sprintf("subscriptions/seed%d", seed), func(t *testing.T) {
			subscriptionHarness.runOn(t, rand.New(rand.NewPCG(seed, 5)), steps)
		})
	}
}

// oldMergePage is mergePage as it was before the indexes (commit 7c6808b), the reference
// mergeLive must answer exactly as, whatever its inputs.
func oldMergePage[T any](live, window []T, start, archived, offset, limit int, compare func(a, b *T) int) (page []T, total int) {
	total = len(live) + archived
	var run []T
	pos := archived
	if len(window) > 0 {
		skip := 0
		if start > 0 {
			skip, _ = slices.BinarySearchFunc(live, &window[0], func(l T, w *T) int { return compare(&l, w) })
		}
		pos = start + skip
		full := start+len(window) < archived
		run = make([]T, 0, len(live)-skip+len(window))
		i, j := skip, 0
		for i < len(live) || j < len(window) {
			switch {
			case j == len(window):
				if full {
					i = len(live)
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
				default:
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

// TestMergeLiveMatchesTheOldMerge: over random live lists and archives that share items
// anywhere (inside the window or not: an object archived while the request read), random
// windows (any start, any length) and pages, mergeLive over a slice and over a list index's
// range answers exactly as the old mergePage did.
func TestMergeLiveMatchesTheOldMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 2026))
	spec := &paymentIndex
	for round := range 3000 {
		n := r.IntN(60)
		var all []paygatev1.Payment
		for i := range n {
			p := paygatev1.Payment{}
			p.Namespace, p.Name, p.UID = "shop", fmt.Sprintf("trx-%c", 'a'+r.IntN(4)), types.UID(fmt.Sprintf("u%03d", i))
			p.CreationTimestamp = metav1.NewTime(harnessBase.Add(time.Duration(r.IntN(max(1, n/3))) * time.Second))
			p.Spec.MerchantRef.Name, p.Spec.Environment = "duka", paygatev1.EnvironmentSandbox
			p.Labels = map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox"}
			p.Status.Phase = paygatev1.PaymentSuccess
			all = append(all, p)
		}
		var live, archived []paygatev1.Payment
		for _, p := range all {
			switch r.IntN(5) {
			case 0, 1:
				live = append(live, p)
			case 2, 3:
				archived = append(archived, p)
			default:
				live, archived = append(live, p), append(archived, p)
			}
		}
		live, archived = sortedByPointer(live, comparePayments), sortedByPointer(archived, comparePayments)
		start := r.IntN(len(archived) + 2)
		end := min(len(archived), start+r.IntN(len(archived)+3))
		var window []paygatev1.Payment
		if start < len(archived) {
			window = archived[start:end]
		}
		offset, limit := r.IntN(n+10), 1+r.IntN(25)
		wantPage, wantTotal := oldMergePage(live, window, start, len(archived), offset, limit, comparePayments)

		gotPage, gotTotal := mergeLive[paygatev1.Payment](sortedSlice[paygatev1.Payment]{items: live, compare: comparePayments},
			window, start, len(archived), offset, limit, comparePayments)
		if gotTotal != wantTotal || !slices.Equal(payNames(gotPage), payNames(wantPage)) {
			t.Fatalf("round %d (slice), start %d, window %d, archived %d, offset %d, limit %d:\ngot  %v (%d)\nwant %v (%d)",
				round, start, len(window), len(archived), offset, limit, payNames(gotPage), gotTotal, payNames(wantPage), wantTotal)
		}

		x := newListIndex(spec)
		for i := range live {
			x.OnAdd(&live[i], false)
		}
		st := &listStats{}
		x.mu.RLock()
		seq := x.rangeOf(bucketKey{"shop", "duka", paygatev1.EnvironmentSandbox}, facetAll, facetKey{}, timeSpan{}, st, nil)
		gotPage, gotTotal = mergeLive[paygatev1.Payment](seq, window, start, len(archived), offset, limit, comparePayments)
		x.mu.RUnlock()
		if gotTotal != wantTotal || !slices.Equal(payNames(gotPage), payNames(wantPage)) {
			t.Fatalf("round %d (index), start %d, window %d, archived %d, offset %d, limit %d:\ngot  %v (%d)\nwant %v (%d)",
				round, start, len(window), len(archived), offset, limit, payNames(gotPage), gotTotal, payNames(wantPage), wantTotal)
		}
	}
}

func payNames(ps []paygatev1.Payment) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.CreationTimestamp.Format("05") + "/" + p.Name + "/" + string(p.UID)
	}
	return out
}
