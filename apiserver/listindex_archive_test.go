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
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/pgtest"
	"github.com/paygate/paygate/pkg/paygate"
)

// The lists read from the indexes answer byte for byte as the lists read from the cache, with a
// real archive: two Servers on one cluster and one archive, one reading the cache as before
// (the fake client is no informer cache), the other reading list indexes fed from the cluster
// before each round of requests, as the informers would.

// indexFeeder replays the cluster's objects into a Server's list indexes: adds, updates (a new
// resourceVersion or UID) and deletes, as an informer's handler sees them.
type indexFeeder struct {
	mu    sync.Mutex
	k8s   client.Client
	lists *listIndexes
	seen  map[string]any // kind/namespace/name → the object last fed
}

func syncedIndexSet() *listIndexes {
	l := newListIndexSet()
	always := func() bool { return true }
	l.payments.synced, l.payouts.synced, l.refunds.synced, l.invoices.synced, l.subscriptions.synced = always, always, always, always, always
	return l
}

func (f *indexFeeder) sync(t testing.TB) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx := context.Background()
	var (
		payments      paygatev1.PaymentList
		payouts       paygatev1.PayoutList
		refunds       paygatev1.RefundList
		invoices      paygatev1.InvoiceList
		subscriptions paygatev1.SubscriptionList
	)
	for _, l := range []client.ObjectList{&payments, &payouts, &refunds, &invoices, &subscriptions} {
		if err := f.k8s.List(ctx, l); err != nil {
			t.Error(err)
			return
		}
	}
	now := map[string]bool{}
	feedKind(f, now, "payment", f.lists.payments, payments.Items)
	feedKind(f, now, "payout", f.lists.payouts, payouts.Items)
	feedKind(f, now, "refund", f.lists.refunds, refunds.Items)
	feedKind(f, now, "invoice", f.lists.invoices, invoices.Items)
	feedKind(f, now, "subscription", f.lists.subscriptions, subscriptions.Items)
	for key, prev := range f.seen {
		if now[key] {
			continue
		}
		switch o := prev.(type) {
		case *paygatev1.Payment:
			f.lists.payments.OnDelete(o)
		case *paygatev1.Payout:
			f.lists.payouts.OnDelete(o)
		case *paygatev1.Refund:
			f.lists.refunds.OnDelete(o)
		case *paygatev1.Invoice:
			f.lists.invoices.OnDelete(o)
		case *paygatev1.Subscription:
			f.lists.subscriptions.OnDelete(o)
		}
		delete(f.seen, key)
	}
}

func feedKind[T any](f *indexFeeder, now map[string]bool, kind string, x *listIndex[T], items []T) {
	for i := range items {
		o := &items[i]
		m := any(o).(metav1.Object)
		key := kind + "/" + m.GetNamespace() + "/" + m.GetName()
		now[key] = true
		prev, _ := f.seen[key].(*T)
		switch {
		case prev == nil:
			x.OnAdd(o, false)
		case any(prev).(metav1.Object).GetResourceVersion() != m.GetResourceVersion() || any(prev).(metav1.Object).GetUID() != m.GetUID():
			x.OnUpdate(prev, o)
		default:
			continue
		}
		f.seen[key] = o
	}
}

// equivalenceWorld builds random objects of duka (and a few of others) straight into the
// cluster: payments, payouts, refunds, subscriptions and invoices, with ties on times, every
// phase, shared references.
type equivalenceWorld struct {
	t     *testing.T
	r     *rand.Rand
	k8s   client.Client
	store *archive.Store
	base  time.Time
	n     int
	// objects in the cluster, by kind, for the mutations
	live []client.Object
}

func (w *equivalenceWorld) meta(kind string, merchant string, env paygatev1.Environment) metav1.ObjectMeta {
	w.n++
	return metav1.ObjectMeta{Namespace: "shop", UID: types.UID(fmt.Sprintf("%s-%08d-0000-4000-8000-%012d", kind, w.n, w.r.IntN(1e6))),
		CreationTimestamp: metav1.NewTime(w.base.Add(time.Duration(w.r.IntN(25)) * time.Second)),
		Labels:            map[string]string{paygatev1.LabelMerchant: merchant, paygatev1.LabelEnvironment: string(env)}}
}

func (w *equivalenceWorld) owner() (string, paygatev1.Environment) {
	switch w.r.IntN(8) {
	case 0:
		return "duka", paygatev1.EnvironmentProduction
	case 1:
		return "slow", paygatev1.EnvironmentSandbox
	}
	return "duka", paygatev1.EnvironmentSandbox
}

func (w *equivalenceWorld) micro(m metav1.ObjectMeta) metav1.MicroTime {
	return metav1.NewMicroTime(m.CreationTimestamp.Add(time.Duration(w.r.IntN(3)) * time.Microsecond))
}

func (w *equivalenceWorld) create(o client.Object) {
	w.t.Helper()
	if err := w.k8s.Create(context.Background(), o); err != nil {
		w.t.Fatal(err)
	}
	w.live = append(w.live, o)
}

var (
	equivalenceRefs   = []string{"order-1", "order-2", "inv-shared", "order-3"}
	equivalencePhones = []paygatev1.MobileNumber{"", "+255712345678", "+255713000001"}
)

func (w *equivalenceWorld) payment() *paygatev1.Payment {
	merchant, env := w.owner()
	p := &paygatev1.Payment{ObjectMeta: w.meta("pay", merchant, env)}
	p.Name = fmt.Sprintf("trx-%s", base32ID(w.n))
	p.Spec = paygatev1.PaymentSpec{MerchantRef: paygatev1.MerchantReference{Name: merchant}, Environment: env,
		MerchantReference: pick(w.r, equivalenceRefs), Amount: "1500.00", Currency: "TZS", Mode: paygatev1.PaymentModeHosted,
		Customer: paygatev1.Customer{Name: "Asha", Phone: pick(w.r, equivalencePhones)}, ExpiresAt: metav1.NewTime(w.base.Add(time.Hour))}
	w.settlePayment(p, pick(w.r, []paygatev1.PaymentPhase{"", paygatev1.PaymentSuccess, paygatev1.PaymentFailed}))
	return p
}

func (w *equivalenceWorld) settlePayment(p *paygatev1.Payment, phase paygatev1.PaymentPhase) {
	at := metav1.NewMicroTime(p.CreationTimestamp.Add(5 * time.Second))
	switch phase {
	case paygatev1.PaymentSuccess:
		p.Status = paygatev1.PaymentStatus{Phase: phase, Gateway: "tz-mpesa", Fee: "37.50", NetAmount: "1462.50", SettledAt: &at}
	case paygatev1.PaymentFailed:
		p.Status = paygatev1.PaymentStatus{Phase: phase, Gateway: "tz-mpesa", Reason: "INSUFFICIENT_FUNDS", SettledAt: &at}
	}
}

func (w *equivalenceWorld) payout() *paygatev1.Payout {
	merchant, env := w.owner()
	p := &paygatev1.Payout{ObjectMeta: w.meta("po", merchant, env)}
	p.Name = fmt.Sprintf("00000000-0000-4000-8000-%012d", w.n)
	p.Spec = paygatev1.PayoutSpec{MerchantRef: paygatev1.MerchantReference{Name: merchant}, Environment: env, Amount: "1000.00",
		Fee: "0.00", PayableAmount: "1000.00", Currency: "TZS", Destination: "+255712345678", Gateway: "tz-mpesa", CreatedAt: w.micro(p.ObjectMeta)}
	w.finishPayout(p, pick(w.r, []paygatev1.PayoutPhase{"", paygatev1.PayoutProcessing, paygatev1.PayoutSuccess, paygatev1.PayoutFailed}))
	return p
}

func (w *equivalenceWorld) finishPayout(p *paygatev1.Payout, phase paygatev1.PayoutPhase) {
	at := metav1.NewMicroTime(p.Spec.CreatedAt.Add(7 * time.Second))
	p.Status = paygatev1.PayoutStatus{Phase: phase, UpdatedAt: &at}
	if phase == paygatev1.PayoutFailed {
		p.Status.Reason = string(paygatev1.PayoutRejected)
	}
}

func (w *equivalenceWorld) refund(trx string) *paygatev1.Refund {
	merchant, env := w.owner()
	f := &paygatev1.Refund{ObjectMeta: w.meta("rf", merchant, env)}
	f.Name = fmt.Sprintf("00000000-0000-4000-9000-%012d", w.n)
	f.Labels[paygatev1.LabelPayment] = trx
	f.Spec = paygatev1.RefundSpec{MerchantRef: paygatev1.MerchantReference{Name: merchant}, Environment: env,
		Payment: paygatev1.RefundedPayment{TrxID: trx, Amount: "1500.00", AttemptReference: "shop." + trx + ".1"},
		Amount:  "100.00", Currency: "TZS", Destination: "+255712345678", Gateway: "tz-mpesa", Reason: "returned", CreatedAt: w.micro(f.ObjectMeta)}
	w.finishRefund(f, pick(w.r, []paygatev1.RefundPhase{"", paygatev1.RefundProcessing, paygatev1.RefundSuccess, paygatev1.RefundFailed}))
	return f
}

func (w *equivalenceWorld) finishRefund(f *paygatev1.Refund, phase paygatev1.RefundPhase) {
	at := metav1.NewMicroTime(f.Spec.CreatedAt.Add(7 * time.Second))
	f.Status = paygatev1.RefundStatus{Phase: phase, UpdatedAt: &at}
	if phase == paygatev1.RefundFailed {
		f.Status.Reason = string(paygatev1.RefundExceedsPayment)
	}
}

var equivalenceSubs = []string{"sub-aaaaaaaaaaaaaaaaaaaaaaaa", "sub-bbbbbbbbbbbbbbbbbbbbbbbb"}

func (w *equivalenceWorld) subscription(name string) *paygatev1.Subscription {
	s := &paygatev1.Subscription{ObjectMeta: w.meta("sub", "duka", paygatev1.EnvironmentSandbox)}
	s.Name = name
	s.Spec = paygatev1.SubscriptionSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
		PlanCode: pick(w.r, []string{"gold-monthly", "silver-weekly"}), CustomerPhone: "+255712345678"}
	s.Spec.Consent = paygatev1.SubscriptionConsent{TermsShown: "15,000 TZS a month", TermsSHA256: strings.Repeat("ab", 32),
		RecordedAt: w.micro(s.ObjectMeta), ClientIP: "192.0.2.7", UserAgent: "test", PlanAmount: "15000.00", PlanCurrency: "TZS",
		PlanInterval: "month", PlanIntervalCount: 1,
		RecordedBy: paygatev1.ConsentRecorder{BusinessID: "biz", Environment: paygatev1.EnvironmentSandbox}}
	s.Status.Phase = pick(w.r, []paygatev1.SubscriptionPhase{"", paygatev1.SubscriptionActive, paygatev1.SubscriptionPastDue, paygatev1.SubscriptionCancelled})
	return s
}

func (w *equivalenceWorld) invoice(period int32) *paygatev1.Invoice {
	sub := pick(w.r, equivalenceSubs)
	inv := &paygatev1.Invoice{ObjectMeta: w.meta("inv", "duka", paygatev1.EnvironmentSandbox)}
	inv.Name = fmt.Sprintf("inv-%s-%d", sub[4:], period)
	inv.Labels[paygatev1.LabelSubscription] = sub
	inv.Spec = paygatev1.InvoiceSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
		SubscriptionRef: paygatev1.SubscriptionReference{Name: sub}, PlanCode: "gold-monthly", Period: period,
		PeriodStart: metav1.NewTime(w.base), PeriodEnd: metav1.NewTime(w.base.Add(time.Hour)), Amount: "15000.00", Currency: "TZS"}
	switch phase := pick(w.r, []paygatev1.InvoicePhase{"", paygatev1.InvoicePaid, paygatev1.InvoicePaymentFailed, paygatev1.InvoiceVoid}); phase {
	case paygatev1.InvoicePaid:
		paid := metav1.NewMicroTime(w.base.Add(time.Minute))
		inv.Status = paygatev1.InvoiceStatus{Phase: phase, AttemptCount: 1, PaidAt: &paid, PaidPayment: "trx-" + base32ID(int(period))}
	case paygatev1.InvoiceVoid:
		voided := metav1.NewTime(w.base.Add(time.Hour))
		inv.Status = paygatev1.InvoiceStatus{Phase: phase, AttemptCount: 3, LastFailureReason: "INSUFFICIENT_FUNDS", VoidedAt: &voided}
	default:
		inv.Status = paygatev1.InvoiceStatus{Phase: phase}
	}
	return inv
}

func terminalObject(o client.Object) bool {
	switch o := o.(type) {
	case *paygatev1.Payment:
		return o.Terminal()
	case *paygatev1.Payout:
		return o.Terminal()
	case *paygatev1.Refund:
		return o.Terminal()
	case *paygatev1.Invoice:
		return o.Terminal()
	}
	return false
}

// archive archives objs (read back from the cluster) in one transaction, as the archiver does,
// and deletes those del says from the cluster.
func (w *equivalenceWorld) archive(objs []client.Object, del func(client.Object) bool) {
	w.t.Helper()
	ctx := context.Background()
	var b archive.Batch
	for _, o := range objs {
		if err := w.k8s.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			w.t.Fatal(err)
		}
		switch o := o.(type) {
		case *paygatev1.Payment:
			b.Payments = append(b.Payments, *o)
		case *paygatev1.Payout:
			b.Payouts = append(b.Payouts, *o)
		case *paygatev1.Refund:
			b.Refunds = append(b.Refunds, *o)
		case *paygatev1.Invoice:
			b.Invoices = append(b.Invoices, *o)
		}
	}
	if _, err := w.store.Archive(ctx, b); err != nil {
		w.t.Fatal(err)
	}
	for _, o := range objs {
		if del(o) {
			w.remove(o)
		}
	}
}

func (w *equivalenceWorld) remove(o client.Object) {
	w.t.Helper()
	if err := w.k8s.Delete(context.Background(), o); err != nil {
		w.t.Fatal(err)
	}
	for i, l := range w.live {
		if l == o {
			w.live = append(w.live[:i], w.live[i+1:]...)
			break
		}
	}
}

// equivalenceTargets are every list's first page under every filter and two random pages of
// each (offsets up to past the end). The payments' spans of creation times are of the world's
// (base and the 25 seconds after it) and its day.
func equivalenceTargets(r *rand.Rand, trx string, base time.Time) []string {
	at := func(sec int) string {
		return url.QueryEscape(base.Add(time.Duration(sec) * time.Second).UTC().Format(time.RFC3339))
	}
	span := "created_from=" + at(5) + "&created_to=" + at(15)
	day := "created_from=" + base.UTC().Format(time.DateOnly) + "&created_to=" + base.UTC().AddDate(0, 0, 2).Format(time.DateOnly)
	lists := []struct {
		path    string
		filters []string
	}{
		{"/api/v1/payments", []string{"", "status=success", "status=failed", "status=pending", "merchant_ref=inv-shared",
			"merchant_ref=inv-shared&status=success", "merchant_ref=order-9", span, span + "&status=success", "created_from=" + at(12),
			"created_to=" + at(12) + "&status=failed", day, "customer_phone=%2B255712345678", "customer_phone=0713000001&status=success",
			"customer_phone=%2B255712345678&" + span, "customer_phone=%2B255712345678&merchant_ref=inv-shared",
			"customer_phone=%2B255713000001&merchant_ref=order-2&status=failed&" + day}},
		{"/api/v1/payouts", []string{"", "status=success", "status=failed", "status=processing"}},
		{"/api/v1/refunds", []string{"", "status=success", "status=pending", "payment=" + trx, "payment=" + trx + "&status=failed", "payment=nope"}},
		{"/api/v1/billing/invoices", []string{"", "status=paid", "status=open", "subscription=sub_aaaaaaaaaaaaaaaaaaaaaaaa",
			"subscription=sub_bbbbbbbbbbbbbbbbbbbbbbbb&status=void"}},
		{"/api/v1/billing/subscriptions", []string{"", "status=active", "plan_code=gold-monthly", "plan_code=silver-weekly&status=cancelled"}},
	}
	var out []string
	for _, l := range lists {
		for _, filter := range l.filters {
			out = append(out, l.path+"?"+filter) // the first page, limit 20
			for range 2 {
				limit := pick(r, []int{1, 2, 3, 7, 20, 1 + r.IntN(100)})
				out = append(out, fmt.Sprintf("%s?limit=%d&offset=%d&%s", l.path, limit, limit*r.IntN(15), filter))
			}
		}
	}
	return out
}

// TestIndexedListsAnswerAsTheCache: over seeded random worlds and their changes (objects
// created, settled, archived and deleted, archived and left live as an archiver stopped between
// its commit and its deletes, deleted without being archived), every list page of every filter
// answers byte for byte the same from the indexes as from the cache, with the archive merged.
func TestIndexedListsAnswerAsTheCache(t *testing.T) {
	store := openArchive(t, pgtest.NewDatabase(t))
	clk := testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	var opts Options
	f := payoutFixture(t, func(o *Options) {
		o.Clock, o.RateLimitPerMinute, o.Archive = clk, 1_000_000, store
	}, func(o *Options) { opts = *o })
	indexed := New(opts)
	indexed.lists = syncedIndexSet()
	feeder := &indexFeeder{k8s: f.k8s, lists: indexed.lists, seen: map[string]any{}}
	var reads listStats
	var readsMu sync.Mutex
	indexed.listObserver = func(_ string, st listStats) {
		readsMu.Lock()
		defer readsMu.Unlock()
		reads.live += st.live
		if !st.indexed && st.live > 0 { // a payment filter that is no trx_id reads nothing
			t.Error("a list of the indexed server read the cache")
		}
	}
	srv := httptest.NewServer(indexed)
	t.Cleanup(srv.Close)
	clientOf := func(url string) *paygate.Client {
		c := paygate.New(url, f.duka)
		c.HTTP = &http.Client{Timeout: 30 * time.Second}
		c.Now = clk.Now
		return c
	}
	fromCache, fromIndex := clientOf(f.srv.URL), clientOf(srv.URL)

	r := rand.New(rand.NewPCG(2026, 28))
	w := &equivalenceWorld{t: t, r: r, k8s: f.k8s, store: store, base: clk.Now().Add(-48 * time.Hour)}
	var trxs []string
	for range 30 {
		p := w.payment()
		w.create(p)
		trxs = append(trxs, p.Name)
	}
	for range 12 {
		w.create(w.payout())
	}
	for range 14 {
		w.create(w.refund(pick(r, trxs[:4])))
	}
	for _, name := range append([]string{}, equivalenceSubs...) {
		w.create(w.subscription(name))
	}
	for i := range 8 {
		w.create(w.subscription(fmt.Sprintf("sub-%s", base32ID(100+i))))
	}
	for period := range int32(12) {
		w.create(w.invoice(period + 1))
	}

	selected := map[string]int{} // what the filters of dates and phones selected, over every stage
	compare := func(stage string) {
		t.Helper()
		feeder.sync(t) // what the informers would have delivered by now
		for _, target := range equivalenceTargets(r, trxs[0], w.base) {
			want := do(t, fromCache, http.MethodGet, target, "", nil)
			got := do(t, fromIndex, http.MethodGet, target, "", nil)
			if got != want {
				t.Fatalf("%s: GET %s:\nindex %s\ncache %s", stage, target, got, want)
			}
			if got.status != http.StatusOK {
				t.Fatalf("%s: GET %s: %d %s", stage, target, got.status, got.body)
			}
			if strings.Contains(target, "created_") || strings.Contains(target, "customer_phone") {
				var page struct{ Pagination struct{ Total int } }
				_ = json.Unmarshal([]byte(got.body), &page)
				u, _ := url.Parse(target)
				filter := u.Query()
				filter.Del("limit")
				filter.Del("offset")
				selected[filter.Encode()] += page.Pagination.Total
			}
		}
	}
	compare("all live")

	terminalLive := func() []client.Object {
		var out []client.Object
		for _, o := range w.live {
			if terminalObject(o) {
				out = append(out, o)
			}
		}
		return out
	}
	var lingering []client.Object // archived, not deleted
	for round := range 8 {
		// Archive a random third of what may be archived: most deleted, some left live.
		var batch []client.Object
		for _, o := range terminalLive() {
			if r.IntN(3) == 0 && !containsObject(lingering, o) {
				batch = append(batch, o)
			}
		}
		if len(batch) > 0 {
			w.archive(batch, func(o client.Object) bool {
				if r.IntN(4) == 0 {
					lingering = append(lingering, o)
					return false
				}
				return true
			})
		}
		compare(fmt.Sprintf("round %d: archived %d", round, len(batch)))

		// The archiver's deletes of some lingering ones; new objects; pending ones settle; an
		// object deleted without being archived.
		for _, o := range slices.Clone(lingering) {
			if r.IntN(2) == 0 {
				w.remove(o)
				lingering = removeObject(lingering, o)
			}
		}
		for range 3 {
			w.create(w.payment())
		}
		w.create(w.payout())
		w.create(w.refund(pick(r, trxs[:4])))
		for _, o := range w.live {
			if terminalObject(o) || r.IntN(3) != 0 {
				continue
			}
			switch o := o.(type) {
			case *paygatev1.Payment:
				w.settlePayment(o, pick(r, []paygatev1.PaymentPhase{paygatev1.PaymentSuccess, paygatev1.PaymentFailed}))
			case *paygatev1.Payout:
				w.finishPayout(o, paygatev1.PayoutSuccess)
			case *paygatev1.Refund:
				w.finishRefund(o, paygatev1.RefundSuccess)
			default:
				continue
			}
			if err := f.k8s.Update(context.Background(), o); err != nil {
				t.Fatal(err)
			}
		}
		if nonArchived := terminalLive(); len(nonArchived) > 0 {
			if o := pick(r, nonArchived); !containsObject(lingering, o) {
				w.remove(o)
			}
		}
		compare(fmt.Sprintf("round %d: changed", round))
	}
	t.Logf("live objects read by the indexed lists: %d", reads.live)
	empty := 0
	for target, n := range selected {
		if n == 0 {
			empty++
			t.Logf("%s selected nothing in any stage", target)
		}
	}
	if empty > len(selected)/4 {
		t.Errorf("%d of %d filters of dates and phones selected nothing in any stage: the world does not test them", empty, len(selected))
	}
}

func containsObject(list []client.Object, o client.Object) bool {
	for _, l := range list {
		if l == o {
			return true
		}
	}
	return false
}

func removeObject(list []client.Object, o client.Object) []client.Object {
	for i, l := range list {
		if l == o {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}
