// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/console"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/pgtest"
)

// The console's webhook delivery list (deliveries.go): its index against the list as the cache
// answers it, its merge with the archive, and what a page reads.

var harnessEventTypes = []string{"payment.completed", "payment.failed", "payout.completed", "invoice.paid"}

// setDeliveryPhase gives d the effective phase, the way the webhook controllers record it: a
// delivery accepted at its first attempt keeps an empty status (spec.firstAttempt says it); one
// whose first attempt failed is pending until the controller writes its status.
func setDeliveryPhase(r *rand.Rand, d *paygatev1.WebhookDelivery, phase paygatev1.DeliveryPhase) {
	at := metav1.NewMicroTime(d.CreationTimestamp.Add(time.Second))
	d.Status, d.Spec.FirstAttempt = paygatev1.WebhookDeliveryStatus{}, nil
	attempt := func(code int32, msg string) paygatev1.DeliveryAttempt {
		return paygatev1.DeliveryAttempt{Number: 1, At: metav1.NewTime(at.Time), StatusCode: code, Error: msg, DurationMillis: 7}
	}
	switch phase {
	case paygatev1.DeliveryDelivered:
		if r.IntN(2) == 0 {
			d.Spec.FirstAttempt = &paygatev1.FirstDeliveryAttempt{Result: paygatev1.FirstAttemptDelivered, At: at, StatusCode: 200}
			return
		}
		delivered := metav1.NewTime(at.Time)
		d.Status = paygatev1.WebhookDeliveryStatus{Phase: phase, TotalAttempts: 1, DeliveredAt: &delivered, Attempts: []paygatev1.DeliveryAttempt{attempt(204, "")}}
	case paygatev1.DeliveryPending:
		switch r.IntN(3) {
		case 0: // created, not attempted yet
		case 1:
			d.Spec.FirstAttempt = &paygatev1.FirstDeliveryAttempt{Result: paygatev1.FirstAttemptFailed, At: at, StatusCode: 500, Error: "HTTP 500"}
		default:
			next := metav1.NewTime(at.Add(time.Minute))
			d.Status = paygatev1.WebhookDeliveryStatus{Phase: phase, TotalAttempts: 1, NextAttemptAt: &next, Attempts: []paygatev1.DeliveryAttempt{attempt(502, "HTTP 502")}}
		}
	case paygatev1.DeliveryAbandoned:
		d.Status = paygatev1.WebhookDeliveryStatus{Phase: phase, TotalAttempts: 5, Attempts: []paygatev1.DeliveryAttempt{attempt(0, "connection refused")}}
	case paygatev1.DeliveryNoEndpoint:
		d.Spec.URL = ""
		d.Status = paygatev1.WebhookDeliveryStatus{Phase: phase}
	}
}

var deliveryPhases = []paygatev1.DeliveryPhase{paygatev1.DeliveryPending, paygatev1.DeliveryDelivered, paygatev1.DeliveryAbandoned, paygatev1.DeliveryNoEndpoint}

var deliveryHarness = indexHarness[paygatev1.WebhookDelivery]{
	gen: func(r *rand.Rand, i int) *paygatev1.WebhookDelivery {
		meta, merchant, env := randomMeta(r, i, "whd")
		d := &paygatev1.WebhookDelivery{ObjectMeta: meta}
		d.Spec = paygatev1.WebhookDeliverySpec{EventID: fmt.Sprintf("evt_%024d", i), EventType: pick(r, harnessEventTypes),
			MerchantRef: paygatev1.MerchantReference{Name: merchant}, Environment: env, URL: "https://duka.example/hooks",
			Source: paygatev1.EventSource{Kind: "Payment", Name: fmt.Sprintf("trx-%d", i), UID: fmt.Sprintf("src-%d", i)}}
		setDeliveryPhase(r, d, pick(r, deliveryPhases))
		return d
	},
	mutate: func(r *rand.Rand, o *paygatev1.WebhookDelivery) *paygatev1.WebhookDelivery {
		d := o.DeepCopy()
		switch r.IntN(3) {
		case 0, 1: // the controller's next attempt, an abandonment, a redelivery
			setDeliveryPhase(r, d, pick(r, deliveryPhases))
		default:
			maybeRelabel(r, &d.ObjectMeta, d.Spec.MerchantRef.Name, d.Spec.Environment)
		}
		return d
	},
	key: func(o *paygatev1.WebhookDelivery) string { return o.Namespace + "/" + o.Name },
	reUID: func(o *paygatev1.WebhookDelivery, uid string) *paygatev1.WebhookDelivery {
		d := o.DeepCopy()
		d.UID = types.UID(uid)
		return d
	},
	match: func(d *paygatev1.WebhookDelivery, b bucketKey, status, eventType string) bool {
		return d.Namespace == b.namespace && labelsMatch(d.Labels, b) && d.Spec.MerchantRef.Name == b.merchant && d.Spec.Environment == b.env &&
			(status == "" || string(d.EffectiveStatus().Phase) == status || (status == "Pending" && d.EffectiveStatus().Phase == "")) &&
			(eventType == "" || d.Spec.EventType == eventType)
	},
	compare:  compareDeliveries,
	statuses: []string{"Pending", "Delivered", "Abandoned", "NoEndpoint"},
	fields:   append(slices.Clone(harnessEventTypes), "no.such.event"),
	uid:      func(d *paygatev1.WebhookDelivery) types.UID { return d.UID },
}

// TestDeliveryIndexAnswersAsTheOldList: every page of every status (the effective phase, read as
// EffectiveStatus reads it) and event type filter, over random adds, attempts, abandonments,
// redeliveries, relabels, deletes and re-creations, is what filtering, sorting and slicing the
// cache's deliveries gives.
func TestDeliveryIndexAnswersAsTheOldList(t *testing.T) {
	steps := 600
	if testing.Short() {
		steps = 200
	}
	for _, seed := range []uint64{1, 2} {
		deliveryHarness.runOn(t, rand.New(rand.NewPCG(seed, 29)), steps)
	}
}

// TestDeliveryIndexFacets: which of a bucket's lists hold a delivery, and under which key.
func TestDeliveryIndexFacets(t *testing.T) {
	mk := func(name string, merchantLabel string, typ string, set func(*paygatev1.WebhookDelivery)) *paygatev1.WebhookDelivery {
		d := &paygatev1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(harnessBase),
			Labels:            map[string]string{paygatev1.LabelMerchant: merchantLabel, paygatev1.LabelEnvironment: "sandbox"}},
			Spec: paygatev1.WebhookDeliverySpec{EventType: typ, MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox}}
		if set != nil {
			set(d)
		}
		return d
	}
	first := func(r paygatev1.FirstAttemptResult) func(*paygatev1.WebhookDelivery) {
		return func(d *paygatev1.WebhookDelivery) {
			d.Spec.FirstAttempt = &paygatev1.FirstDeliveryAttempt{Result: r, At: metav1.NewMicroTime(harnessBase), StatusCode: 200}
		}
	}
	phase := func(p paygatev1.DeliveryPhase) func(*paygatev1.WebhookDelivery) {
		return func(d *paygatev1.WebhookDelivery) { d.Status.Phase, d.Status.TotalAttempts = p, 3 }
	}
	ds := []*paygatev1.WebhookDelivery{
		mk("whd-new", "duka", "payment.completed", nil),                                         // not attempted: pending
		mk("whd-first-ok", "duka", "payment.completed", first(paygatev1.FirstAttemptDelivered)), // no status: delivered
		mk("whd-first-failed", "duka", "payment.failed", first(paygatev1.FirstAttemptFailed)),   // no status: pending
		mk("whd-abandoned", "duka", "payment.failed", phase(paygatev1.DeliveryAbandoned)),       // abandoned
		mk("whd-redelivered", "duka", "payment.completed", func(d *paygatev1.WebhookDelivery) { // delivered at first, then
			first(paygatev1.FirstAttemptDelivered)(d) // redelivered: the status
			phase(paygatev1.DeliveryPending)(d)       // says pending
		}),
		mk("whd-none", "duka", "invoice.paid", phase(paygatev1.DeliveryNoEndpoint)),
		mk("whd-mislabelled", "soko", "payment.completed", phase(paygatev1.DeliveryDelivered)), // listOwn never selected it
	}
	x := newListIndex(&deliveryIndex)
	for _, d := range ds {
		x.OnAdd(d, false)
	}
	b := bucketKey{"shop", "duka", paygatev1.EnvironmentSandbox}
	for _, tc := range []struct {
		status, eventType string
		want              []string
	}{
		{"", "", []string{"whd-abandoned", "whd-first-failed", "whd-first-ok", "whd-new", "whd-none", "whd-redelivered"}},
		{"Pending", "", []string{"whd-first-failed", "whd-new", "whd-redelivered"}},
		{"Delivered", "", []string{"whd-first-ok"}},
		{"Abandoned", "", []string{"whd-abandoned"}},
		{"NoEndpoint", "", []string{"whd-none"}},
		{"", "payment.completed", []string{"whd-first-ok", "whd-new", "whd-redelivered"}},
		{"Pending", "payment.failed", []string{"whd-first-failed"}},
		{"Delivered", "invoice.paid", nil},
	} {
		facet, key := facetOf(tc.status, tc.eventType)
		var got []string
		x.live(b, facet, key, nil).read(nil, func(seq liveSeq[paygatev1.WebhookDelivery]) {
			for _, d := range pageOf(seq, 0, 100) {
				got = append(got, d.Name)
			}
		})
		if !slices.Equal(got, tc.want) {
			t.Errorf("status %q, event type %q: %v, want %v", tc.status, tc.eventType, got, tc.want)
		}
	}
	// The bucket's terminal count is what the archive may hold: delivered, abandoned, no endpoint
	// (the mislabelled one too: the bucket is the spec's).
	if n := x.buckets[b].terminal; n != 4 {
		t.Errorf("%d finished deliveries counted, want 4", n)
	}
	// A failed first attempt followed by the controller's abandonment moves the delivery.
	abandoned := ds[2].DeepCopy()
	phase(paygatev1.DeliveryAbandoned)(abandoned)
	x.OnUpdate(ds[2], abandoned)
	facet, key := facetOf("Abandoned", "payment.failed")
	x.live(b, facet, key, nil).read(nil, func(seq liveSeq[paygatev1.WebhookDelivery]) {
		if seq.Len() != 2 {
			t.Errorf("after an abandonment: %d abandoned payment.failed deliveries, want 2", seq.Len())
		}
	})
}

// deliveryWorld is a fake cluster's deliveries and a real archive.
type deliveryWorld struct {
	t     *testing.T
	r     *rand.Rand
	fc    client.Client
	store *archive.Store
	n     int
	live  []*paygatev1.WebhookDelivery
}

func (w *deliveryWorld) create() {
	w.t.Helper()
	w.n++
	merchant, env := "duka", paygatev1.EnvironmentSandbox
	switch w.r.IntN(6) {
	case 0:
		env = paygatev1.EnvironmentProduction
	case 1:
		merchant = "soko"
	}
	d := &paygatev1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("whd-%024d", w.n),
		UID:               types.UID(fmt.Sprintf("%08d-0000-4000-8000-%012d", w.n, w.r.IntN(1e6))),
		CreationTimestamp: metav1.NewTime(harnessBase.Add(time.Duration(w.r.IntN(30)) * time.Second)),
		Labels:            map[string]string{paygatev1.LabelMerchant: merchant, paygatev1.LabelEnvironment: string(env)}},
		Spec: paygatev1.WebhookDeliverySpec{EventID: fmt.Sprintf("evt_%024d", w.n), EventType: pick(w.r, harnessEventTypes),
			MerchantRef: paygatev1.MerchantReference{Name: merchant}, Environment: env, URL: "https://duka.example/hooks",
			Source:  paygatev1.EventSource{Kind: "Payment", Name: fmt.Sprintf("trx-%d", w.n), UID: fmt.Sprintf("src-%d", w.n)},
			Payload: fmt.Sprintf(`{"id":"evt_%024d"}`, w.n)}}
	setDeliveryPhase(w.r, d, pick(w.r, deliveryPhases))
	if err := w.fc.Create(context.Background(), d); err != nil {
		w.t.Fatal(err)
	}
	w.live = append(w.live, d)
}

func (w *deliveryWorld) remove(d *paygatev1.WebhookDelivery) {
	w.t.Helper()
	if err := w.fc.Delete(context.Background(), d); err != nil {
		w.t.Fatal(err)
	}
	w.live = slices.DeleteFunc(w.live, func(l *paygatev1.WebhookDelivery) bool { return l == d })
}

// expected is the merged list as it must read: the live deliveries of duka in sandbox and the
// archived ones, each once, filtered, in the list's order.
func (w *deliveryWorld) expected(phase paygatev1.DeliveryPhase, eventType string) []paygatev1.WebhookDelivery {
	w.t.Helper()
	byUID := map[types.UID]paygatev1.WebhookDelivery{}
	var list paygatev1.WebhookDeliveryList
	if err := w.fc.List(context.Background(), &list); err != nil {
		w.t.Fatal(err)
	}
	for _, d := range list.Items {
		byUID[d.UID] = d
	}
	archived, err := w.store.ListWebhookDeliveries(context.Background(), archive.DeliveryFilter{Namespace: "shop"}, 100000, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, d := range archived.Items {
		byUID[d.UID] = d
	}
	var out []paygatev1.WebhookDelivery
	for _, d := range byUID {
		if d.Spec.MerchantRef.Name == "duka" && d.Spec.Environment == paygatev1.EnvironmentSandbox &&
			(phase == "" || d.Phase() == phase) && (eventType == "" || d.Spec.EventType == eventType) {
			out = append(out, d)
		}
	}
	return sortedByPointer(out, compareDeliveries)
}

func deliveryNames(ds []paygatev1.WebhookDelivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name
	}
	return out
}

// TestDeliveryListIndexAndCacheAgree: over a seeded random world of deliveries (every phase, four
// event types, two merchants and both environments), archived in rounds (most deleted from the
// cluster after, some left live as an archiver stopped between its commit and its deletes, some
// deleted without being archived) while new ones arrive and pending ones finish, every page of
// every filter reads the same from the index as from the cache, and both are the union of the
// live and the archived deliveries, each once, in the list's order, with its total.
func TestDeliveryListIndexAndCacheAgree(t *testing.T) {
	store := openArchive(t, pgtest.NewDatabase(t))
	fc := fake.NewClientBuilder().WithScheme(kube.Scheme()).Build()
	opts := Options{Cache: fc, Writer: fc, APIReader: fc, CheckoutKey: []byte("checkout-key"), Archive: store}
	fromCache, fromIndex := New(opts), New(opts)
	if fromCache.lists != nil {
		t.Fatal("a fake client has list indexes")
	}
	fromIndex.lists = newListIndexSet()
	fromIndex.lists.deliveries.synced = func() bool { return true }
	var indexed, cached bool
	fromIndex.listObserver = func(_ string, st listStats) { indexed = st.indexed }
	fromCache.listObserver = func(_ string, st listStats) { cached = !st.indexed }
	feeder := &indexFeeder{k8s: fc, lists: fromIndex.lists, seen: map[string]any{}}
	feed := func() {
		var list paygatev1.WebhookDeliveryList
		if err := fc.List(context.Background(), &list); err != nil {
			t.Fatal(err)
		}
		now := map[string]bool{}
		feedKind(feeder, now, "delivery", fromIndex.lists.deliveries, list.Items)
		for key, prev := range feeder.seen {
			if !now[key] {
				fromIndex.lists.deliveries.OnDelete(prev)
				delete(feeder.seen, key)
			}
		}
	}
	r := rand.New(rand.NewPCG(2026, 29))
	w := &deliveryWorld{t: t, r: r, fc: fc, store: store}
	for range 60 {
		w.create()
	}
	duka := &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "duka"}}
	ctx := context.Background()
	compare := func(stage string) {
		t.Helper()
		feed()
		for _, phase := range append([]paygatev1.DeliveryPhase{""}, deliveryPhases...) {
			for _, eventType := range append([]string{"", "no.such.event"}, harnessEventTypes[:2]...) {
				want := w.expected(phase, eventType)
				for _, pg := range [][2]int{{50, 0}, {1 + r.IntN(20), r.IntN(len(want) + 3)}, {7, 7}} {
					limit, offset := pg[0], pg[1]
					f := console.DeliveryFilter{Phase: phase, EventType: eventType}
					a, at, err := consoleRecords{fromCache}.ListWebhookDeliveries(ctx, duka, paygatev1.EnvironmentSandbox, f, limit, offset)
					if err != nil {
						t.Fatal(err)
					}
					b, bt, err := consoleRecords{fromIndex}.ListWebhookDeliveries(ctx, duka, paygatev1.EnvironmentSandbox, f, limit, offset)
					if err != nil {
						t.Fatal(err)
					}
					if !indexed || !cached {
						t.Fatalf("indexed %v, cached %v: a server read the other path", indexed, cached)
					}
					aj, _ := json.Marshal(a)
					bj, _ := json.Marshal(b)
					if at != bt || string(aj) != string(bj) {
						t.Fatalf("%s, %+v, limit %d offset %d: the index answers (total %d)\n%s\nthe cache (total %d)\n%s", stage, f, limit, offset, bt, bj, at, aj)
					}
					page := want[min(offset, len(want)):min(offset+limit, len(want))]
					if at != len(want) || !slices.Equal(deliveryNames(a), deliveryNames(page)) {
						t.Fatalf("%s, %+v, limit %d offset %d: %v (total %d), want %v (total %d)", stage, f, limit, offset,
							deliveryNames(a), at, deliveryNames(page), len(want))
					}
				}
			}
		}
	}
	compare("all live")
	var lingering []*paygatev1.WebhookDelivery
	for round := range 6 {
		var batch []paygatev1.WebhookDelivery
		var chosen []*paygatev1.WebhookDelivery
		for _, d := range w.live {
			if d.Finished() && r.IntN(2) == 0 && !slices.Contains(lingering, d) {
				batch, chosen = append(batch, *d), append(chosen, d)
			}
		}
		if len(batch) > 0 {
			if _, err := store.ArchiveWebhookDeliveries(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		for _, d := range chosen {
			if r.IntN(4) == 0 {
				lingering = append(lingering, d)
			} else {
				w.remove(d)
			}
		}
		compare(fmt.Sprintf("round %d: archived %d", round, len(batch)))
		for _, d := range slices.Clone(lingering) {
			if r.IntN(2) == 0 {
				w.remove(d)
				lingering = slices.DeleteFunc(lingering, func(l *paygatev1.WebhookDelivery) bool { return l == d })
			}
		}
		for range 8 {
			w.create()
		}
		for _, d := range w.live {
			if d.Phase() == paygatev1.DeliveryPending && r.IntN(2) == 0 {
				setDeliveryPhase(r, d, pick(r, deliveryPhases[1:]))
				if err := fc.Update(ctx, d); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, d := range w.live {
			if d.Finished() && !slices.Contains(lingering, d) && r.IntN(10) == 0 {
				w.remove(d) // deleted without being archived
				break
			}
		}
		compare(fmt.Sprintf("round %d: changed", round))
	}

	// One delivery: the merchant's own, live or archived; another merchant's, another
	// environment's, a missing one and a malformed name are not found.
	var archivedOne, livePending, sokos *paygatev1.WebhookDelivery
	all := w.expected("", "")
	for i := range all {
		d := &all[i]
		var probe paygatev1.WebhookDelivery
		gone := fc.Get(ctx, client.ObjectKeyFromObject(d), &probe) != nil
		if gone && archivedOne == nil {
			archivedOne = d
		}
		if !gone && d.Phase() == paygatev1.DeliveryPending && livePending == nil {
			livePending = d
		}
	}
	for _, d := range w.live {
		if d.Spec.MerchantRef.Name == "soko" {
			sokos = d
		}
	}
	if archivedOne == nil || livePending == nil || sokos == nil {
		t.Fatal("the world lacks an archived delivery, a live pending one or one of soko's")
	}
	for _, tc := range []struct {
		name    string
		env     paygatev1.Environment
		payload bool
		found   bool
	}{
		{archivedOne.Name, paygatev1.EnvironmentSandbox, true, true},
		{livePending.Name, paygatev1.EnvironmentSandbox, false, true},
		{livePending.Name, paygatev1.EnvironmentSandbox, true, true},
		{livePending.Name, paygatev1.EnvironmentProduction, true, false},
		{sokos.Name, sokos.Spec.Environment, true, false},
		{"whd-" + fmt.Sprintf("%024d", 999999), paygatev1.EnvironmentSandbox, false, false},
		{"../whd-1", paygatev1.EnvironmentSandbox, false, false},
	} {
		d, found, err := consoleRecords{fromIndex}.GetWebhookDelivery(ctx, duka, tc.env, tc.name, tc.payload)
		if err != nil || found != tc.found || (found && (d.Name != tc.name || (tc.payload && d.Spec.Payload == ""))) {
			t.Errorf("GetWebhookDelivery(%s, %s, payload %v) = %v, %v, %v; want found %v with its payload", tc.name, tc.env, tc.payload, d, found, err, tc.found)
		}
	}
}

// memDeliveryArchive is an in-memory archive of deliveries that counts what it is asked.
type memDeliveryArchive struct {
	Archive
	mu        sync.Mutex
	items     []paygatev1.WebhookDelivery // sorted by compareDeliveries
	uidsAsked int
	rowsRead  int
}

func (a *memDeliveryArchive) ListWebhookDeliveries(_ context.Context, f archive.DeliveryFilter, limit, offset int) (archive.Page[paygatev1.WebhookDelivery], error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var sel []paygatev1.WebhookDelivery
	for _, d := range a.items {
		if d.Namespace == f.Namespace && d.Spec.MerchantRef.Name == f.Merchant && d.Spec.Environment == f.Environment &&
			(f.Phase == "" || d.Phase() == f.Phase) && (f.EventType == "" || d.Spec.EventType == f.EventType) {
			sel = append(sel, d)
		}
	}
	page := slices.Clone(sel[min(offset, len(sel)):min(offset+limit, len(sel))])
	a.rowsRead += len(page)
	return archive.Page[paygatev1.WebhookDelivery]{Items: page, Total: len(sel)}, nil
}

func (a *memDeliveryArchive) Archived(_ context.Context, _ archive.Kind, uids []string) (map[string]bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.uidsAsked += len(uids)
	out := map[string]bool{}
	for _, d := range a.items {
		if slices.Contains(uids, string(d.UID)) {
			out[string(d.UID)] = true
		}
	}
	return out, nil
}

func (a *memDeliveryArchive) counts() (uids, rows int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.uidsAsked, a.rowsRead
}

// costDeliveries are n deliveries of duka in sandbox, three a second: a quarter each pending,
// delivered (half of those by their first attempt), abandoned and without an endpoint, the event
// types in turn.
func costDeliveries(n int, from time.Time, prefix string) []paygatev1.WebhookDelivery {
	r := rand.New(rand.NewPCG(uint64(n), 29))
	out := make([]paygatev1.WebhookDelivery, n)
	for i := range out {
		d := &out[i]
		d.ObjectMeta = ownedMeta(fmt.Sprintf("whd-%s%018d", prefix, r.Int64N(1e18)), i, from.Add(time.Duration(i/3)*time.Second))
		d.Spec = paygatev1.WebhookDeliverySpec{EventID: fmt.Sprintf("evt_%024d", i), EventType: harnessEventTypes[i%len(harnessEventTypes)],
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox, URL: "https://duka.example/hooks",
			Source: paygatev1.EventSource{Kind: "Payment", Name: fmt.Sprintf("trx-%d", i), UID: fmt.Sprintf("src-%d", i)}}
		setDeliveryPhase(r, d, deliveryPhases[(i/len(harnessEventTypes))%len(deliveryPhases)])
	}
	return out
}

// TestDeliveryListReadsThePage: with 1,000 and 100,000 live deliveries (10,000 in -short), for
// every filter, the first page and the page at half read at most limit + 4*log2(n) live objects
// (plus 2*log2(offset+limit) with an archive); with 2,000 archived deliveries, after the first
// list no live delivery is asked about, and the archive rows read are the window and the count.
func TestDeliveryListReadsThePage(t *testing.T) {
	sizes := []int{1000, 100000}
	if testing.Short() {
		sizes = []int{1000, 10000}
	}
	filters := []console.DeliveryFilter{{}, {Phase: paygatev1.DeliveryPending}, {Phase: paygatev1.DeliveryDelivered},
		{Phase: paygatev1.DeliveryAbandoned}, {EventType: "payment.failed"}, {Phase: paygatev1.DeliveryNoEndpoint, EventType: "invoice.paid"},
		{EventType: "no.such.event"}}
	ctx := context.Background()
	for _, n := range sizes {
		live := costDeliveries(n, costStart, "")
		for _, withArchive := range []bool{false, true} {
			var a *memDeliveryArchive
			var arch Archive
			if withArchive {
				a = &memDeliveryArchive{}
				for _, d := range costDeliveries(2000, costStart.Add(-24*time.Hour), "old") {
					if d.Finished() {
						a.items = append(a.items, d)
					}
				}
				a.items = sortedByPointer(a.items, compareDeliveries)
				arch = a
			}
			s := costServer(t, arch)
			s.lists.deliveries.synced = func() bool { return true }
			for i := range live {
				s.lists.deliveries.OnAdd(&live[i], false)
			}
			var st listStats
			s.listObserver = func(_ string, got listStats) { st = got }
			first := true
			for _, f := range filters {
				_, total, err := consoleRecords{s}.ListWebhookDeliveries(ctx, costMerchant, paygatev1.EnvironmentSandbox, f, 1, 0)
				if err != nil {
					t.Fatal(err)
				}
				liveN := total
				if a != nil && f.Phase != paygatev1.DeliveryPending {
					p, _ := a.ListWebhookDeliveries(ctx, archive.DeliveryFilter{Namespace: "shop", Merchant: "duka",
						Environment: paygatev1.EnvironmentSandbox, Phase: f.Phase, EventType: f.EventType}, 1, 0)
					liveN -= p.Total
				}
				for _, offset := range []int{0, total / 2} {
					uids0, rows0 := 0, 0
					if a != nil {
						uids0, rows0 = a.counts()
					}
					page, gotTotal, err := consoleRecords{s}.ListWebhookDeliveries(ctx, costMerchant, paygatev1.EnvironmentSandbox, f, 100, offset)
					if err != nil || gotTotal != total || len(page) != min(100, max(total-offset, 0)) || !st.indexed {
						t.Fatalf("n=%d archive=%v %+v offset %d: %d items, total %d (want %d), indexed %v, %v", n, withArchive, f, offset,
							len(page), gotTotal, total, st.indexed, err)
					}
					bound := visitBound(100, n)
					if withArchive {
						bound += 2 * int(math.Ceil(math.Log2(float64(offset+100))))
					}
					uids, rows := 0, 0
					if a != nil {
						uids1, rows1 := a.counts()
						uids, rows = uids1-uids0, rows1-rows0
					}
					t.Logf("n=%d archive=%v %-45v offset %6d: live objects read %4d (bound %d), archive rows read %d, UIDs asked %d",
						n, withArchive, fmt.Sprintf("%+v", f), offset, st.live, bound, rows, uids)
					if st.live > bound {
						t.Errorf("n=%d %+v offset %d: read %d live objects, bound %d", n, f, offset, st.live, bound)
					}
					if withArchive {
						_, window := archiveWindow(offset, 100, liveN)
						if rows > window+1 {
							t.Errorf("n=%d %+v offset %d: read %d archive rows, want at most the window %d and the count", n, f, offset, rows, window)
						}
						if !first && uids != 0 {
							t.Errorf("n=%d %+v offset %d: asked the archive about %d live deliveries after the first list", n, f, offset, uids)
						}
					}
					first = false
				}
			}
		}
	}
}
