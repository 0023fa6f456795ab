// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/openapitest"
	"github.com/paygate/paygate/internal/pgtest"
	"github.com/paygate/paygate/pkg/paygate"
)

// The events API (events.go): its parameters, its cursor, the delivery index read backwards, and
// pages merged from live and archived events against the order computed by brute force.

func TestParseEventQuery(t *testing.T) {
	since := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		query   string
		want    eventQuery
		invalid []string // the parameters named by the 422
	}{
		{query: "", want: eventQuery{limit: 20}},
		{query: "limit=1", want: eventQuery{limit: 1}},
		{query: "limit=100&type=payment.completed", want: eventQuery{limit: 100, eventType: "payment.completed"}},
		{query: "after=evt_0123456789abcdef", want: eventQuery{limit: 20, after: "evt_0123456789abcdef"}},
		{query: "since=2026-03-01T09:30:00Z", want: eventQuery{limit: 20, since: since}},
		{query: "since=2026-03-01T12:30:00%2B03:00", want: eventQuery{limit: 20, since: since}},
		{query: "limit=0", invalid: []string{"limit"}},
		{query: "limit=101", invalid: []string{"limit"}},
		{query: "limit=ten", invalid: []string{"limit"}},
		{query: "after=whd-0123456789abcdef", invalid: []string{"after"}},
		{query: "after=evt_short", invalid: []string{"after"}},
		{query: "after=evt_0123456789ABCDEF", invalid: []string{"after"}},
		{query: "since=yesterday", invalid: []string{"since"}},
		{query: "since=2026-03-01", invalid: []string{"since"}},
		{query: "after=evt_0123456789abcdef&since=2026-03-01T09:30:00Z", invalid: []string{"since"}},
		{query: "type=Payment%20Completed", invalid: []string{"type"}},
		{query: "type=payment.", invalid: []string{"type"}},
		{query: "type=" + strings.Repeat("a", 65), invalid: []string{"type"}},
		{query: "limit=0&after=x&type=%20", invalid: []string{"after", "limit", "type"}},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		v := validation{}
		got := parseEventQuery(v, q)
		var named []string
		for k := range v {
			named = append(named, k)
		}
		slices.Sort(named)
		if !slices.Equal(named, tc.invalid) {
			t.Errorf("%q: invalid %v, want %v (%v)", tc.query, named, tc.invalid, v)
			continue
		}
		if len(tc.invalid) == 0 && (got.limit != tc.want.limit || got.after != tc.want.after ||
			!got.since.Equal(tc.want.since) || got.eventType != tc.want.eventType) {
			t.Errorf("%q: %+v, want %+v", tc.query, got, tc.want)
		}
	}
}

func testDelivery(sec int, name, uid string) paygatev1.WebhookDelivery {
	return paygatev1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid),
		CreationTimestamp: metav1.NewTime(harnessBase.Add(time.Duration(sec) * time.Second))}}
}

func TestEventCursor(t *testing.T) {
	at := testDelivery(10, "whd-m", "u-5")
	for _, tc := range []struct {
		cur  eventCursor
		d    paygatev1.WebhookDelivery
		want bool
	}{
		{eventCursor{}, at, true},
		{eventCursor{after: positionOf(&at)}, at, false},                              // the cursor's own event
		{eventCursor{after: positionOf(&at)}, testDelivery(11, "whd-a", "u-1"), true}, // a later second
		{eventCursor{after: positionOf(&at)}, testDelivery(9, "whd-z", "u-9"), false}, // an earlier one
		// Within a second the order is by name, then UID, descending (the delivery list's reversed).
		{eventCursor{after: positionOf(&at)}, testDelivery(10, "whd-a", "u-9"), true},
		{eventCursor{after: positionOf(&at)}, testDelivery(10, "whd-z", "u-1"), false},
		{eventCursor{after: positionOf(&at)}, testDelivery(10, "whd-m", "u-4"), true},
		{eventCursor{after: positionOf(&at)}, testDelivery(10, "whd-m", "u-6"), false},
		// since is inclusive, to the second the events carry.
		{eventCursor{since: harnessBase.Add(10 * time.Second)}, at, true},
		{eventCursor{since: harnessBase.Add(10 * time.Second)}, testDelivery(10, "whd-zzzz", "u"), true},
		{eventCursor{since: harnessBase.Add(10*time.Second + time.Millisecond)}, at, false},
		{eventCursor{since: harnessBase.Add(11 * time.Second)}, at, false},
		{eventCursor{since: harnessBase.Add(9 * time.Second)}, at, true},
	} {
		if got := tc.cur.admits(&tc.d); got != tc.want {
			t.Errorf("cursor %+v (after %+v), event %s %s %s: admitted %v, want %v", tc.cur, tc.cur.after,
				tc.d.CreationTimestamp.UTC().Format(time.TimeOnly), tc.d.Name, tc.d.UID, got, tc.want)
		}
	}
}

func TestMergeEvents(t *testing.T) {
	a, b, c, d := testDelivery(1, "whd-b", "1"), testDelivery(1, "whd-a", "2"), testDelivery(2, "whd-x", "3"), testDelivery(3, "whd-y", "4")
	names := func(ds []paygatev1.WebhookDelivery) string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Name)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		live, archived []paygatev1.WebhookDelivery
		n              int
		want           string
	}{
		{nil, nil, 3, ""},
		{[]paygatev1.WebhookDelivery{a, c}, []paygatev1.WebhookDelivery{b, d}, 10, "whd-b,whd-a,whd-x,whd-y"},
		{[]paygatev1.WebhookDelivery{a, c}, []paygatev1.WebhookDelivery{b, d}, 3, "whd-b,whd-a,whd-x"},
		{[]paygatev1.WebhookDelivery{a, b, c}, []paygatev1.WebhookDelivery{b, d}, 10, "whd-b,whd-a,whd-x,whd-y"}, // b twice: once
		{nil, []paygatev1.WebhookDelivery{a, b}, 1, "whd-b"},
	} {
		if got := names(mergeEvents(tc.live, tc.archived, tc.n)); got != tc.want {
			t.Errorf("merge %s + %s (%d): %s, want %s", names(tc.live), names(tc.archived), tc.n, got, tc.want)
		}
	}
}

// eventWorld is a cluster (the fake client), the apiserver's delivery index fed as its informer
// would feed it (with the cache's transform: no payload), and a real archive.
type eventWorld struct {
	t       testing.TB
	r       *rand.Rand
	fc      client.Client
	store   *archive.Store
	s       *Server
	n       int
	live    map[types.UID]*paygatev1.WebhookDelivery
	gone    map[types.UID]bool // archived, then deleted
	held    map[types.UID]bool // archived (deleted or not)
	deleted map[types.UID]bool // deleted without being archived
	all     []paygatev1.WebhookDelivery
	duka    *caller
	spread  int // one event in spread/8 is another merchant's or environment's
}

func newEventWorld(t testing.TB, seed uint64, indexed bool) *eventWorld {
	store := openArchive(t.(*testing.T), pgtest.NewDatabase(t.(*testing.T)))
	fc := fake.NewClientBuilder().WithScheme(kube.Scheme()).Build()
	s := New(Options{Cache: fc, Writer: fc, APIReader: fc, CheckoutKey: []byte("checkout-key"), Archive: store})
	if indexed {
		s.lists = newListIndexSet()
		s.lists.deliveries.synced = func() bool { return true }
	}
	return &eventWorld{t: t, r: rand.New(rand.NewPCG(seed, 30)), fc: fc, store: store, s: s,
		spread: 8, live: map[types.UID]*paygatev1.WebhookDelivery{}, gone: map[types.UID]bool{}, held: map[types.UID]bool{}, deleted: map[types.UID]bool{},
		duka: &caller{merchant: &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "duka"}}, env: paygatev1.EnvironmentSandbox}}
}

// create makes one event; most are duka's in sandbox, many in the same second.
func (w *eventWorld) create(span int) *paygatev1.WebhookDelivery {
	return w.createAt(w.r.IntN(span))
}

// createAt makes one event created sec seconds after harnessBase.
func (w *eventWorld) createAt(sec int) *paygatev1.WebhookDelivery {
	w.n++
	merchant, env := "duka", paygatev1.EnvironmentSandbox
	switch w.r.IntN(w.spread) {
	case 0:
		env = paygatev1.EnvironmentProduction
	case 1:
		merchant = "soko"
	}
	// Names in no relation to creation order: within a second the order is the names'.
	name := fmt.Sprintf("whd-%x%020d", w.r.IntN(1<<16), w.n)
	d := &paygatev1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name,
		UID:               types.UID(fmt.Sprintf("%08d-0000-4000-8000-%012d", w.n, w.r.IntN(1e6))),
		CreationTimestamp: metav1.NewTime(harnessBase.Add(time.Duration(sec) * time.Second)),
		Labels:            map[string]string{paygatev1.LabelMerchant: merchant, paygatev1.LabelEnvironment: string(env)}},
		Spec: paygatev1.WebhookDeliverySpec{EventID: "evt_" + strings.TrimPrefix(name, "whd-"), EventType: pick(w.r, harnessEventTypes),
			MerchantRef: paygatev1.MerchantReference{Name: merchant}, Environment: env, URL: "https://duka.example/hooks",
			Source: paygatev1.EventSource{Kind: "Payment", Name: fmt.Sprintf("trx-%d", w.n), UID: fmt.Sprintf("src-%d", w.n)}}}
	d.Spec.Payload = fmt.Sprintf(`{"id":%q,"type":%q,"data":{"n":%d}}`, d.Spec.EventID, d.Spec.EventType, w.n)
	setDeliveryPhase(w.r, d, pick(w.r, deliveryPhases[:2]))
	if w.r.IntN(4) > 0 {
		setDeliveryPhase(w.r, d, paygatev1.DeliveryDelivered)
	}
	if err := w.fc.Create(context.Background(), d); err != nil {
		w.t.Fatal(err)
	}
	w.live[d.UID] = d
	w.all = append(w.all, *d.DeepCopy())
	w.feed(d)
	return d
}

// feed hands the index the object as the apiserver's cache holds it (without its payload).
func (w *eventWorld) feed(d *paygatev1.WebhookDelivery) {
	if w.s.lists == nil {
		return
	}
	c, err := kube.CompactWebhookDeliveryForLists(d.DeepCopy())
	if err != nil {
		w.t.Fatal(err)
	}
	w.s.lists.deliveries.OnAdd(c, false)
}

// archive archives k finished live events; linger of them stay live (archived, not deleted yet).
func (w *eventWorld) archive(k, linger int) {
	var batch []paygatev1.WebhookDelivery
	for _, d := range w.live {
		if len(batch) == k {
			break
		}
		if d.Finished() {
			batch = append(batch, *d)
		}
	}
	if len(batch) == 0 {
		return
	}
	if _, err := w.store.ArchiveWebhookDeliveries(context.Background(), batch); err != nil {
		w.t.Fatal(err)
	}
	for i := range batch {
		w.held[batch[i].UID] = true
	}
	for i := range batch[min(linger, len(batch)):] {
		w.remove(&batch[min(linger, len(batch))+i], true)
	}
}

func (w *eventWorld) remove(d *paygatev1.WebhookDelivery, archived bool) {
	if err := w.fc.Delete(context.Background(), d); err != nil {
		w.t.Fatal(err)
	}
	if w.s.lists != nil {
		w.s.lists.deliveries.OnDelete(w.live[d.UID])
	}
	delete(w.live, d.UID)
	if archived {
		w.gone[d.UID] = true
	} else {
		w.deleted[d.UID] = true
	}
}

// expected is duka's sandbox events of eventType ("" any) that exist (live or archived), in
// eventOrder, by brute force.
func (w *eventWorld) expected(eventType string) []paygatev1.WebhookDelivery {
	var out []paygatev1.WebhookDelivery
	for _, d := range w.all {
		if d.Spec.MerchantRef.Name == "duka" && d.Spec.Environment == paygatev1.EnvironmentSandbox && !w.deleted[d.UID] &&
			(eventType == "" || d.Spec.EventType == eventType) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b paygatev1.WebhookDelivery) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		if c := strings.Compare(b.Name, a.Name); c != 0 {
			return c
		}
		return strings.Compare(string(b.UID), string(a.UID))
	})
	return out
}

// get calls GET /api/v1/events as duka in sandbox.
func (w *eventWorld) get(query string) (int, eventPage) {
	req := httptest.NewRequest(http.MethodGet, "/api/v1/events?"+query, nil)
	req = req.WithContext(context.WithValue(req.Context(), callerKey{}, w.duka))
	rec := httptest.NewRecorder()
	w.s.listEvents(rec, req)
	var page eventPage
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			w.t.Fatal(err)
		}
	}
	return rec.Code, page
}

type eventPage struct {
	Status string `json:"status"`
	Data   []struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		CreatedAt string          `json:"created_at"`
		Payload   json.RawMessage `json:"payload"`
		Delivery  struct {
			Status   string `json:"status"`
			Attempts int    `json:"attempts"`
		} `json:"delivery"`
	} `json:"data"`
	Pagination struct {
		Limit     int     `json:"limit"`
		Count     int     `json:"count"`
		HasMore   bool    `json:"has_more"`
		NextAfter *string `json:"next_after"`
	} `json:"pagination"`
}

func ids(ds []paygatev1.WebhookDelivery) []string {
	out := make([]string, len(ds))
	for i := range ds {
		out[i] = ds[i].Spec.EventID
	}
	return out
}

// TestEventsPagesMatchTheBruteForceOrder: every cursor (after each event, since each second),
// type filter and limit, through the index and through the cache, against the order computed
// over every live and archived event, as events are archived (some lingering live) and deleted.
func TestEventsPagesMatchTheBruteForceOrder(t *testing.T) {
	for _, indexed := range []bool{true, false} {
		t.Run(fmt.Sprintf("indexed=%v", indexed), func(t *testing.T) {
			w := newEventWorld(t, 7, indexed)
			check := func(stage string) {
				t.Helper()
				for _, eventType := range []string{"", "payment.failed"} {
					want := w.expected(eventType)
					typeQ := ""
					if eventType != "" {
						typeQ = "&type=" + eventType
					}
					for _, limit := range []int{1, 3, 100} {
						// From the start, after each event, since a few seconds.
						queries := map[string][]paygatev1.WebhookDelivery{"": want}
						for i := range want {
							queries["after="+want[i].Spec.EventID] = want[i+1:]
						}
						for sec := -1; sec <= 31; sec += 4 {
							at := harnessBase.Add(time.Duration(sec) * time.Second)
							i := slices.IndexFunc(want, func(d paygatev1.WebhookDelivery) bool { return !d.CreationTimestamp.Time.Before(at) })
							if i < 0 {
								i = len(want)
							}
							queries["since="+url.QueryEscape(at.Format(time.RFC3339))] = want[i:]
						}
						for q, rest := range queries {
							code, page := w.get(fmt.Sprintf("limit=%d%s&%s", limit, typeQ, q))
							if code != http.StatusOK {
								t.Fatalf("%s: %s: %d", stage, q, code)
							}
							var got []string
							for _, e := range page.Data {
								got = append(got, e.ID)
							}
							wantIDs := ids(rest[:min(limit, len(rest))])
							if !slices.Equal(got, wantIDs) || page.Pagination.HasMore != (len(rest) > limit) || page.Pagination.Count != len(got) {
								t.Fatalf("%s, type %q, limit %d, %s: %v (more %v), want %v (more %v)", stage, eventType, limit, q,
									got, page.Pagination.HasMore, wantIDs, len(rest) > limit)
							}
						}
					}
				}
			}
			for range 40 {
				w.create(30)
			}
			check("live")
			for round := range 4 {
				w.archive(6, 2)
				check(fmt.Sprintf("round %d archived", round))
				for range 5 {
					w.create(30)
				}
				for _, d := range w.live {
					if d.Finished() && !w.held[d.UID] && w.r.IntN(8) == 0 {
						w.remove(d, false)
						break
					}
				}
				check(fmt.Sprintf("round %d changed", round))
			}
		})
	}
}

// TestEventsWaitToSettle: a poller reading in the second events are being created does not move
// its cursor past an event of that second that arrives after the read (events of a second are
// ordered by name, not by arrival): the list holds events back until they are eventSettle old.
func TestEventsWaitToSettle(t *testing.T) {
	w := newEventWorld(t, 11, true)
	w.spread = 1 << 20 // every event is duka's, in sandbox
	clk := testingclock.NewFakeClock(harnessBase.Add(10*time.Second + 500*time.Millisecond))
	w.s.opts.Clock = clk
	for range 60 {
		w.create(11) // seconds 0 to 10; the clock is in second 10
	}
	seen := map[string]bool{}
	var order []string
	after := ""
	poll := func() {
		t.Helper()
		for range 100 {
			q := "limit=5"
			if after != "" {
				q += "&after=" + after
			}
			code, page := w.get(q)
			if code != http.StatusOK {
				t.Fatalf("%s: %d", q, code)
			}
			for _, e := range page.Data {
				if seen[e.ID] {
					t.Fatalf("%s listed twice", e.ID)
				}
				seen[e.ID] = true
				order = append(order, e.ID)
			}
			if page.Pagination.NextAfter != nil {
				after = *page.Pagination.NextAfter
			}
			if !page.Pagination.HasMore {
				return
			}
		}
		t.Fatal("no end of the list")
	}
	poll()
	for _, d := range w.expected("") {
		young := !d.CreationTimestamp.Time.Before(clk.Now().Add(-eventSettle))
		if seen[d.Spec.EventID] == young {
			t.Errorf("%s created %s: listed %v at %s", d.Spec.EventID, d.CreationTimestamp.Format(time.TimeOnly), seen[d.Spec.EventID], clk.Now().Format(time.TimeOnly))
		}
	}
	// More events of second 10 reach the cache after that read, their names anywhere in the order.
	for range 20 {
		w.createAt(10)
	}
	clk.Step(20 * time.Second)
	poll()
	if want := ids(w.expected("")); !slices.Equal(order, want) {
		t.Fatalf("read %d events %v,\nwant %d %v", len(order), order, len(want), want)
	}
}

// TestEventsPageThroughTenThousand is the events API's proof: 10,000 events of one merchant,
// live and archived mixed, paged through with limit=100 while events are archived between pages
// (some archived and still live for a while), read exactly once each, in order: no gap, no
// repeat, every payload the one created. Through the handler, the delivery index fed with the
// cache's payload-less objects, the fake client as the Kubernetes API and a real PostgreSQL.
func TestEventsPageThroughTenThousand(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 events")
	}
	w := newEventWorld(t, 30, true)
	w.spread = 80 // one event in 40 is another merchant's or environment's
	start := time.Now()
	for w.n < 10_300 {
		w.create(3_000)
	}
	created := time.Since(start)
	// A third archived before the first page.
	w.archive(len(w.live)/3, 50)
	archivedIn := time.Since(start) - created
	want := w.expected("")
	if len(want) < 10_000 {
		t.Fatalf("%d events of duka, want at least 10,000", len(want))
	}
	payloads := map[string]string{}
	for _, d := range want {
		payloads[d.Spec.EventID] = d.Spec.Payload
	}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 200 {
			t.Fatal("more than 200 pages")
		}
		q := "limit=100"
		if after != "" {
			q += "&after=" + after
		}
		code, page := w.get(q)
		if code != http.StatusOK {
			t.Fatalf("page %d: %d", pages, code)
		}
		for _, e := range page.Data {
			got = append(got, e.ID)
			var p, want any
			if json.Unmarshal(e.Payload, &p) != nil || json.Unmarshal([]byte(payloads[e.ID]), &want) != nil || fmt.Sprint(p) != fmt.Sprint(want) {
				t.Fatalf("event %s: payload %s, want %s", e.ID, e.Payload, payloads[e.ID])
			}
		}
		if page.Pagination.Count != len(page.Data) || (page.Pagination.HasMore && len(page.Data) != 100) {
			t.Fatalf("page %d: %+v with %d events", pages, page.Pagination, len(page.Data))
		}
		if !page.Pagination.HasMore {
			break
		}
		after = *page.Pagination.NextAfter
		// Between pages: archive a few hundred events on either side of the cursor, a few of
		// them left live for a page (archived, not deleted yet).
		if pages%3 == 0 {
			w.archive(300, 10)
		}
	}
	wantIDs := ids(want)
	if !slices.Equal(got, wantIDs) {
		seen := map[string]int{}
		for _, id := range got {
			seen[id]++
		}
		var missing, repeated int
		for _, id := range wantIDs {
			switch seen[id] {
			case 0:
				missing++
			case 1:
			default:
				repeated++
			}
		}
		t.Fatalf("paged %d events, want %d: %d missing, %d repeated", len(got), len(wantIDs), missing, repeated)
	}
	archived := 0
	for _, d := range want {
		if w.gone[d.UID] {
			archived++
		}
	}
	t.Logf("%d events in %d pages: %d archived and deleted, %d live (created in %v, archived in %v, paged in %v)", len(got),
		(len(got)+99)/100, archived, len(got)-archived, created, archivedIn, time.Since(start)-created-archivedIn)
}

// TestEventsThroughTheClientMatchTheDocument drives the events API with the Go client through the
// validating transport: the pages, the cursor, redelivery (once per Idempotency-Key), and the
// errors (another merchant's event, an archived-looking missing one, bad parameters), each
// answer matching openapi.json.
func TestEventsThroughTheClientMatchTheDocument(t *testing.T) {
	f := newExchangeFixture(t)
	ctx := context.Background()
	strict := openapitest.NewValidator(t, openAPIDocument, nil).StrictRequests()
	c := f.client(strict, f.duka)
	lenient := openapitest.NewValidator(t, openAPIDocument, nil)
	bad := f.client(lenient, f.duka)

	mk := func(i int, merchant string, env paygatev1.Environment, phase paygatev1.DeliveryPhase) *paygatev1.WebhookDelivery {
		id := fmt.Sprintf("%024d", i)
		d := &paygatev1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "whd-" + id, UID: types.UID(fmt.Sprintf("uid-%d", i)),
			CreationTimestamp: metav1.NewTime(harnessBase.Add(time.Duration(i) * time.Second)),
			Labels:            map[string]string{paygatev1.LabelMerchant: merchant, paygatev1.LabelEnvironment: string(env)}},
			Spec: paygatev1.WebhookDeliverySpec{EventID: "evt_" + id, EventType: "payment.completed",
				MerchantRef: paygatev1.MerchantReference{Name: merchant}, Environment: env, URL: "https://duka.example/hooks",
				Source:  paygatev1.EventSource{Kind: "Payment", Name: "trx", UID: "src"},
				Payload: fmt.Sprintf(`{"id":"evt_%s","type":"payment.completed","data":{"i":%d}}`, id, i)}}
		setDeliveryPhase(rand.New(rand.NewPCG(uint64(i), 1)), d, phase)
		if err := f.k8s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	var mine []*paygatev1.WebhookDelivery
	for i := range 5 {
		mine = append(mine, mk(10+i, "duka", paygatev1.EnvironmentSandbox, paygatev1.DeliveryDelivered))
	}
	mine = append(mine, mk(20, "duka", paygatev1.EnvironmentSandbox, paygatev1.DeliveryPending))
	other := mk(30, "pending", paygatev1.EnvironmentSandbox, paygatev1.DeliveryDelivered)
	otherEnv := mk(31, "duka", paygatev1.EnvironmentProduction, paygatev1.DeliveryDelivered)

	var got []string
	after := ""
	for range 10 {
		page, err := c.ListEvents(ctx, paygate.EventListOptions{Limit: 2, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Data {
			got = append(got, e.ID)
			if !strings.Contains(string(e.Payload), e.ID) || e.Delivery.Status == "" {
				t.Errorf("event %+v", e)
			}
		}
		if !page.Pagination.HasMore {
			break
		}
		after = page.Pagination.NextAfter
	}
	var want []string
	for _, d := range mine {
		want = append(want, d.Spec.EventID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged %v, want %v", got, want)
	}
	page, err := c.ListEvents(ctx, paygate.EventListOptions{Since: harnessBase.Add(14 * time.Second), Type: "payment.completed"})
	if err != nil || len(page.Data) != 2 || page.Data[0].ID != mine[4].Spec.EventID {
		t.Fatalf("since: %+v, %v", page, err)
	}
	page, err = c.ListEvents(ctx, paygate.EventListOptions{After: mine[5].Spec.EventID})
	if err != nil || len(page.Data) != 0 || page.Pagination.NextAfter != mine[5].Spec.EventID || page.Pagination.HasMore {
		t.Fatalf("after the last: %+v, %v", page, err)
	}

	// Redelivery: once per Idempotency-Key.
	ev, err := c.RedeliverEvent(ctx, mine[0].Spec.EventID, "redeliver-1")
	if err != nil || ev.ID != mine[0].Spec.EventID {
		t.Fatalf("redeliver: %+v, %v", ev, err)
	}
	var d paygatev1.WebhookDelivery
	if err := f.k8s.Get(ctx, client.ObjectKeyFromObject(mine[0]), &d); err != nil {
		t.Fatal(err)
	}
	first := d.Annotations[paygatev1.AnnotationRedeliver]
	if first == "" {
		t.Fatal("no redeliver annotation")
	}
	if _, err := c.RedeliverEvent(ctx, mine[0].Spec.EventID, "redeliver-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RedeliverEvent(ctx, mine[1].Spec.EventID, "redeliver-1"); err != nil {
		t.Fatal(err)
	}
	if err := f.k8s.Get(ctx, client.ObjectKeyFromObject(mine[0]), &d); err != nil || d.Annotations[paygatev1.AnnotationRedeliver] != first {
		t.Fatalf("the replay changed the redelivery: %q, was %q (%v)", d.Annotations[paygatev1.AnnotationRedeliver], first, err)
	}
	if _, err := c.RedeliverEvent(ctx, mine[0].Spec.EventID, "redeliver-2"); err != nil {
		t.Fatal(err)
	}
	if err := f.k8s.Get(ctx, client.ObjectKeyFromObject(mine[0]), &d); err != nil || d.Annotations[paygatev1.AnnotationRedeliver] == first {
		t.Fatalf("a new key set no new redelivery: %q (%v)", d.Annotations[paygatev1.AnnotationRedeliver], err)
	}

	expectAPIError := func(what string, err error, status int, label string) {
		t.Helper()
		e, ok := err.(*paygate.Error)
		if !ok || e.StatusCode != status || e.Label != label {
			t.Errorf("%s: got %v, want a %d %s", what, err, status, label)
		}
	}
	_, err = c.RedeliverEvent(ctx, mine[5].Spec.EventID, "")
	expectAPIError("a pending event", err, http.StatusConflict, LabelEventNotRedeliverable)
	_, err = c.RedeliverEvent(ctx, other.Spec.EventID, "")
	expectAPIError("another merchant's event", err, http.StatusNotFound, LabelNotFound)
	_, err = c.RedeliverEvent(ctx, otherEnv.Spec.EventID, "")
	expectAPIError("another environment's event", err, http.StatusNotFound, LabelNotFound)
	_, err = c.RedeliverEvent(ctx, "evt_000000000000000000000099", "")
	expectAPIError("a missing event", err, http.StatusNotFound, LabelNotFound)
	_, err = c.ListEvents(ctx, paygate.EventListOptions{After: other.Spec.EventID})
	expectAPIError("after another merchant's event", err, http.StatusNotFound, LabelNotFound)
	for _, q := range []string{"limit=0", "after=evt_x", "since=today", "type=A", "after=" + mine[0].Spec.EventID + "&since=2026-01-01T00:00:00Z"} {
		resp, err := bad.Do(ctx, http.MethodGet, "/api/v1/events?"+q, nil, nil)
		if err != nil || resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s: %v %v", q, resp, err)
		}
	}
}

// TestRedeliverArchivedEvent: an archived event is found (it is the caller's) but cannot be sent
// again: 409 EVENT_ARCHIVED; another merchant's archived event is 404.
func TestRedeliverArchivedEvent(t *testing.T) {
	w := newEventWorld(t, 11, true)
	for range 30 {
		w.create(10)
	}
	w.archive(30, 0)
	var mine, theirs *paygatev1.WebhookDelivery
	for i := range w.all {
		d := &w.all[i]
		if !w.gone[d.UID] {
			continue
		}
		if d.Spec.MerchantRef.Name == "duka" && d.Spec.Environment == paygatev1.EnvironmentSandbox {
			mine = d
		} else {
			theirs = d
		}
	}
	if mine == nil || theirs == nil {
		t.Fatal("no archived event of duka's and of another")
	}
	redeliver := func(id string) (int, string) {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/events/"+id+"/redeliver", nil)
		req.SetPathValue("id", id)
		req = req.WithContext(context.WithValue(req.Context(), callerKey{}, w.duka))
		rec := httptest.NewRecorder()
		w.s.redeliverEvent(rec, req)
		var body struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		return rec.Code, body.Error
	}
	if code, label := redeliver(mine.Spec.EventID); code != http.StatusConflict || label != LabelEventArchived {
		t.Errorf("an archived event: %d %s, want 409 %s", code, label, LabelEventArchived)
	}
	if code, label := redeliver(theirs.Spec.EventID); code != http.StatusNotFound || label != LabelNotFound {
		t.Errorf("another's archived event: %d %s, want 404", code, label)
	}
	if code, _ := w.get("after=" + theirs.Spec.EventID); code != http.StatusNotFound {
		t.Errorf("after another's archived event: %d, want 404", code)
	}
}
