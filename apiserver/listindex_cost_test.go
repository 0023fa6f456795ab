// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/kube"
)

// What a list costs with the indexes: live objects read and archive rows read per call, at
// 1,000 and 100,000 live payments, for every filter, on the first page and at half the list.

// memArchive is an in-memory archive of payments that counts what it is asked (the other kinds
// are empty; what the lists do not read is the embedded nil Archive's).
type memArchive struct {
	Archive
	mu       sync.Mutex
	payments []paygatev1.Payment // sorted by comparePayments
	// asked
	archivedCalls, archivedUIDs, listCalls, rowsRead int
}

func (a *memArchive) add(ps ...paygatev1.Payment) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.payments = sortedByPointer(append(a.payments, ps...), comparePayments)
}

func (a *memArchive) counts() (archivedCalls, archivedUIDs, listCalls, rowsRead int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.archivedCalls, a.archivedUIDs, a.listCalls, a.rowsRead
}

func (a *memArchive) ListPayments(_ context.Context, f archive.PaymentFilter, limit, offset int) (archive.Page[paygatev1.Payment], error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.listCalls++
	var sel []paygatev1.Payment
	for _, p := range a.payments {
		if p.Namespace == f.Namespace && p.Spec.MerchantRef.Name == f.Merchant && p.Spec.Environment == f.Environment && archivedMatch(f, &p) {
			sel = append(sel, p)
		}
	}
	page := slices.Clone(sel[min(offset, len(sel)):min(offset+limit, len(sel))])
	a.rowsRead += len(page)
	return archive.Page[paygatev1.Payment]{Items: page, Total: len(sel)}, nil
}

// archivedMatch is the archive's filter besides the bucket (internal/archive's SQL).
func archivedMatch(f archive.PaymentFilter, p *paygatev1.Payment) bool {
	return (f.Phase == "" || p.Status.Phase == f.Phase) && (f.MerchantReference == "" || p.Spec.MerchantReference == f.MerchantReference) &&
		(f.CustomerPhone == "" || string(p.Spec.Customer.Phone) == f.CustomerPhone) &&
		(f.CreatedFrom.IsZero() || !p.CreationTimestamp.Time.Before(f.CreatedFrom)) &&
		(f.CreatedTo.IsZero() || p.CreationTimestamp.Time.Before(f.CreatedTo))
}

func (a *memArchive) Archived(_ context.Context, kind archive.Kind, uids []string) (map[string]bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.archivedCalls++
	a.archivedUIDs += len(uids)
	want := map[string]bool{}
	for _, u := range uids {
		want[u] = true
	}
	out := map[string]bool{}
	if kind == archive.KindPayment {
		for _, p := range a.payments {
			if want[string(p.UID)] {
				out[string(p.UID)] = true
			}
		}
	}
	return out, nil
}

func (a *memArchive) ListPayouts(context.Context, archive.PayoutFilter, int, int) (archive.Page[paygatev1.Payout], error) {
	return archive.Page[paygatev1.Payout]{Items: []paygatev1.Payout{}}, nil
}
func (a *memArchive) ListInvoices(context.Context, archive.InvoiceFilter, int, int) (archive.Page[paygatev1.Invoice], error) {
	return archive.Page[paygatev1.Invoice]{Items: []paygatev1.Invoice{}}, nil
}
func (a *memArchive) ListRefunds(context.Context, archive.RefundFilter, int, int) (archive.Page[paygatev1.Refund], error) {
	return archive.Page[paygatev1.Refund]{Items: []paygatev1.Refund{}}, nil
}
func (a *memArchive) RefundsOfPayments(context.Context, string, []string) (map[string][]paygatev1.Refund, error) {
	return map[string][]paygatev1.Refund{}, nil
}

var _ Archive = (*memArchive)(nil)

// costMerchant is the caller of the cost tests: duka, sandbox, in shop.
var costMerchant = &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "duka", UID: "uid-duka"}}

// costServer is a Server whose list indexes are fed by hand (synced), over a fake client holding
// objs (what the handlers read besides the lists: a subscription filter's subscription).
func costServer(t testing.TB, a Archive, objs ...client.Object) *Server {
	t.Helper()
	fc := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(objs...).
		WithIndex(&paygatev1.Refund{}, refundPaymentIndex, refundPaymentKeys).Build()
	s := New(Options{Cache: fc, Writer: fc, APIReader: fc, CheckoutKey: []byte("checkout-key"), Archive: a})
	s.lists = newListIndexSet()
	for _, synced := range []*func() bool{&s.lists.payments.synced, &s.lists.payouts.synced, &s.lists.refunds.synced,
		&s.lists.invoices.synced, &s.lists.subscriptions.synced} {
		*synced = func() bool { return true }
	}
	return s
}

// listCall runs one list handler for the cost merchant in env and returns the answer's status,
// total, item count and what the list read.
func listCall(t testing.TB, s *Server, env paygatev1.Environment, handler func(http.ResponseWriter, *http.Request), target string) (status, total, count int, st listStats, body string) {
	t.Helper()
	s.listObserver = func(_ string, got listStats) { st = got }
	ctx := context.WithValue(context.Background(), callerKey{}, &caller{merchant: costMerchant, env: env})
	rec := httptest.NewRecorder()
	handler(rec, httptest.NewRequest(http.MethodGet, target, nil).WithContext(ctx))
	var out struct {
		Pagination struct{ Total, Count int }
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out.Pagination.Total, out.Pagination.Count, st, rec.Body.String()
}

// base32ID is 24 characters of the trx_id alphabet for i.
func base32ID(i int) string {
	const digits = "abcdefghijklmnopqrstuvwxyz234567"
	b := []byte(strings.Repeat("a", 24))
	for p := 23; i > 0 && p >= 0; p, i = p-1, i/32 {
		b[p] = digits[i%32]
	}
	return string(b)
}

func ownedMeta(name string, i int, ts time.Time) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID(fmt.Sprintf("uid-%s", name)),
		CreationTimestamp: metav1.NewTime(ts),
		Labels:            map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox"}}
}

// costPayments are n payments of duka in sandbox, three a second, a third each pending,
// successful and failed; one in 50 a charge of invoice "inv-shared" (merchant_ref shared), the
// others their own order-N; one in 100 (charges of inv-shared) from the customer costPhone, one
// in 7 of the others without a phone, the rest each from a phone of its own (costPhoneOf).
func costPayments(n int, from time.Time) []paygatev1.Payment {
	out := make([]paygatev1.Payment, n)
	r := rand.New(rand.NewPCG(uint64(n), 5))
	for i := range out {
		p := &out[i]
		p.ObjectMeta = ownedMeta(fmt.Sprintf("trx-%024d", r.Int64N(1e18)), i, from.Add(time.Duration(i/3)*time.Second))
		p.Spec.MerchantRef.Name, p.Spec.Environment = "duka", paygatev1.EnvironmentSandbox
		p.Spec.Amount, p.Spec.Currency, p.Spec.Mode = "1500.00", "TZS", paygatev1.PaymentModeHosted
		p.Spec.MerchantReference = fmt.Sprintf("order-%d", i)
		if i%50 == 0 {
			p.Spec.MerchantReference = "inv-shared"
		}
		switch {
		case i%100 == 0:
			p.Spec.Customer.Phone = costPhone
		case i%7 != 3:
			p.Spec.Customer.Phone = paygatev1.MobileNumber(costPhoneOf(i))
		}
		switch i % 3 {
		case 1:
			p.Status.Phase, p.Status.Fee, p.Status.NetAmount = paygatev1.PaymentSuccess, "37.50", "1462.50"
		case 2:
			p.Status.Phase, p.Status.Reason = paygatev1.PaymentFailed, "INSUFFICIENT_FUNDS"
		}
	}
	return out
}

var costStart = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)

// costPhone is the regular customer of costPayments.
const costPhone = "+255712345678"

// costPhoneOf is the phone of costPayments' payment i when it has one of its own.
func costPhoneOf(i int) string { return fmt.Sprintf("+255713%06d", i) }

// visitBound is what a page may read: limit + c*log2(n), c = 4 (two searches for the filter's
// range, the page's items by position; with an archive two rank queries and the split's binary
// search over the window).
func visitBound(limit, n int) int { return limit + 4*int(math.Ceil(math.Log2(float64(max(n, 2))))) }

// TestListReadsThePageNotTheHistory: at 1,000 and 100,000 live payments, for every filter of the
// payment list (a span of creation times and a phone included, alone and with the others), the
// first page and the page at half the filter's items read at most limit + 4*log2(n) live objects;
// a merchant_ref with a phone, which no one facet says, reads the shorter of their two ranges as
// well (residualFilters). With an archive (2,000 older payments archived), after the first list
// has checked which live payments the archive holds, each page asks the archive about no live
// payment, and reads the count and the window (limit + min(offset, live) rows).
func TestListReadsThePageNotTheHistory(t *testing.T) {
	sizes := []int{1000, 100000}
	if testing.Short() {
		sizes = []int{1000, 10000}
	}
	for _, n := range sizes {
		live := costPayments(n, costStart)
		filters := costFilters(n)
		for _, withArchive := range []bool{false, true} {
			var a *memArchive
			var arch Archive
			if withArchive {
				a = &memArchive{}
				old := costPayments(2000, costStart.Add(-24*time.Hour))
				for i := range old {
					old[i].Name, old[i].UID = fmt.Sprintf("trx-old-%06d", i), types.UID(fmt.Sprintf("uid-old-%06d", i))
					if old[i].Status.Phase == "" {
						old[i].Status.Phase, old[i].Status.Reason = paygatev1.PaymentFailed, "EXPIRED"
					}
				}
				a.add(old...)
				arch = a
			}
			s := costServer(t, arch)
			for i := range live {
				s.lists.payments.OnAdd(&live[i], false)
			}
			first := true
			for _, filter := range filters {
				_, total, _, _, _ := listCall(t, s, paygatev1.EnvironmentSandbox, s.listPayments, "/api/v1/payments?limit=1&"+filter)
				for _, offset := range []int{0, total / 2} {
					_, _, _, rows0 := countsOf(a)
					target := fmt.Sprintf("/api/v1/payments?limit=100&offset=%d&%s", offset, filter)
					status, gotTotal, count, st, body := listCall(t, s, paygatev1.EnvironmentSandbox, s.listPayments, target)
					_, _, _, rows1 := countsOf(a)
					if status != http.StatusOK || gotTotal != total || count != min(100, max(total-offset, 0)) {
						t.Fatalf("n=%d archive=%v %s: %d, total %d (want %d), count %d: %.300s", n, withArchive, target, status, gotTotal, total, count, body)
					}
					if !st.indexed {
						t.Fatalf("%s did not read the index", target)
					}
					bound := visitBound(100, n)
					if withArchive {
						bound = visitBound(100, n) + 2*int(math.Ceil(math.Log2(float64(offset+100))))
					}
					if residual, ok := residualFilters[filter]; ok {
						bound += visitBound(0, n) + shorterRange(live, residual)
					}
					t.Logf("n=%d archive=%v %-60s live objects read %4d (bound %d), archive rows read %d, UIDs asked %d",
						n, withArchive, target, st.live, bound, rows1-rows0, st.archiveUIDs)
					if st.live > bound {
						t.Errorf("n=%d %s: read %d live objects, bound %d", n, target, st.live, bound)
					}
					if withArchive {
						liveN := total - countArchived(a, filter)
						_, window := archiveWindow(offset, 100, liveN)
						if rows1-rows0 > window+1 {
							t.Errorf("n=%d %s: read %d archive rows, want at most the window %d and the count", n, target, rows1-rows0, window)
						}
						if !first && st.archiveUIDs != 0 {
							t.Errorf("n=%d %s: asked the archive about %d live payments after the first list", n, target, st.archiveUIDs)
						}
					}
					first = false
				}
			}
		}
	}
}

// costFilters are the payment list's filters the cost test reads: each filter alone and with the
// others, a span of creation times holding the middle third of costPayments(n), a day (the live
// payments' first) and the day before it (only archived ones).
func costFilters(n int) []string {
	span := "created_from=" + costStart.Add(time.Duration(n/9)*time.Second).Format(time.RFC3339) +
		"&created_to=" + costStart.Add(time.Duration(2*n/9)*time.Second).Format(time.RFC3339)
	phone := "customer_phone=" + url.QueryEscape(costPhone)
	return []string{"", "status=pending", "status=success", "status=failed", "merchant_ref=inv-shared",
		"merchant_ref=order-7", "merchant_ref=inv-shared&status=success", "merchant_ref=nothing",
		span, "status=failed&" + span, "merchant_ref=inv-shared&" + span, span[:strings.Index(span, "&")], span[strings.Index(span, "&")+1:],
		"created_from=2026-10-01&created_to=2026-10-02", "created_from=2026-09-30&created_to=2026-10-01&status=success",
		phone, phone + "&status=success", phone + "&" + span, phone + "&status=failed&" + span,
		"customer_phone=" + url.QueryEscape(costPhoneOf(7)), "customer_phone=%2B255799999999",
		phone + "&merchant_ref=inv-shared", phone + "&merchant_ref=inv-shared&status=success",
		"customer_phone=" + url.QueryEscape(costPhoneOf(7)) + "&merchant_ref=order-7"}
}

// residualFilters are the cost filters no one facet says, by the two filters whose ranges they
// choose between (paymentRanges).
var residualFilters = map[string][2]string{
	"customer_phone=%2B255712345678&merchant_ref=inv-shared": {"customer_phone=%2B255712345678", "merchant_ref=inv-shared"},
	"customer_phone=%2B255712345678&merchant_ref=inv-shared&status=success": {"customer_phone=%2B255712345678&status=success",
		"merchant_ref=inv-shared&status=success"},
	"customer_phone=%2B255713000007&merchant_ref=order-7": {"customer_phone=%2B255713000007", "merchant_ref=order-7"},
}

// shorterRange is how many live payments the shorter of two filters' ranges holds.
func shorterRange(live []paygatev1.Payment, filters [2]string) int {
	count := func(filter string) int {
		values, err := url.ParseQuery(filter)
		if err != nil {
			panic(err)
		}
		q := parsePaymentQuery(validation{}, values, costMerchant)
		n := 0
		for i := range live {
			if q.matches(&live[i]) {
				n++
			}
		}
		return n
	}
	return min(count(filters[0]), count(filters[1]))
}

func countsOf(a *memArchive) (int, int, int, int) {
	if a == nil {
		return 0, 0, 0, 0
	}
	return a.counts()
}

// countArchived is how many archived payments filter (a query string) selects.
func countArchived(a *memArchive, filter string) int {
	values, err := url.ParseQuery(filter)
	if err != nil {
		panic(err)
	}
	q := parsePaymentQuery(validation{}, values, costMerchant)
	if q.status == "pending" {
		return 0
	}
	f := q.archiveFilter(&caller{merchant: costMerchant, env: paygatev1.EnvironmentSandbox})
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for i := range a.payments {
		if archivedMatch(f, &a.payments[i]) {
			n++
		}
	}
	return n
}

// TestOtherListsReadThePage: payouts, refunds, invoices and subscriptions at 10,000 live objects,
// each filter, first page and half: at most limit + 4*log2(n) live objects read.
func TestOtherListsReadThePage(t *testing.T) {
	const n = 10000
	s := costServer(t, nil, &paygatev1.Subscription{ObjectMeta: ownedMeta("sub-aaaaaaaaaaaaaaaaaaaaaaaa", 0, costStart),
		Spec: paygatev1.SubscriptionSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox}})
	for i := range n {
		ts := costStart.Add(time.Duration(i/3) * time.Second)
		po := &paygatev1.Payout{ObjectMeta: ownedMeta(fmt.Sprintf("po-%06d", i), i, ts)}
		po.Spec.MerchantRef.Name, po.Spec.Environment, po.Spec.CreatedAt = "duka", paygatev1.EnvironmentSandbox, metav1.NewMicroTime(ts)
		po.Spec.Amount, po.Spec.Fee, po.Spec.PayableAmount, po.Spec.Currency = "1000.00", "0.00", "1000.00", "TZS"
		po.Status.Phase = []paygatev1.PayoutPhase{"", paygatev1.PayoutProcessing, paygatev1.PayoutSuccess, paygatev1.PayoutFailed}[i%4]
		s.lists.payouts.OnAdd(po, false)

		rf := &paygatev1.Refund{ObjectMeta: ownedMeta(fmt.Sprintf("rf-%06d", i), i, ts)}
		rf.Spec.MerchantRef.Name, rf.Spec.Environment, rf.Spec.CreatedAt = "duka", paygatev1.EnvironmentSandbox, metav1.NewMicroTime(ts)
		rf.Spec.Amount, rf.Spec.Currency = "100.00", "TZS"
		rf.Spec.Payment.TrxID = "trx-" + base32ID(i%(n/4))
		rf.Status.Phase = []paygatev1.RefundPhase{"", paygatev1.RefundProcessing, paygatev1.RefundSuccess, paygatev1.RefundFailed}[i%4]
		s.lists.refunds.OnAdd(rf, false)

		sub := fmt.Sprintf("sub-%024d", i%100)
		if i%100 == 0 {
			sub = "sub-aaaaaaaaaaaaaaaaaaaaaaaa"
		}
		inv := &paygatev1.Invoice{ObjectMeta: ownedMeta(fmt.Sprintf("%s-%d", sub, i), i, ts)}
		inv.Spec.MerchantRef.Name, inv.Spec.Environment = "duka", paygatev1.EnvironmentSandbox
		inv.Spec.SubscriptionRef.Name, inv.Spec.Period, inv.Spec.Amount, inv.Spec.Currency = sub, int32(1+i/100), "15000.00", "TZS"
		inv.Status.Phase = []paygatev1.InvoicePhase{"", paygatev1.InvoicePaid, paygatev1.InvoicePaymentFailed, paygatev1.InvoiceVoid}[i%4]
		s.lists.invoices.OnAdd(inv, false)

		su := &paygatev1.Subscription{ObjectMeta: ownedMeta(fmt.Sprintf("sub-%024d", 1_000_000+i), i, ts)}
		su.Spec.MerchantRef.Name, su.Spec.Environment = "duka", paygatev1.EnvironmentSandbox
		su.Spec.PlanCode = []string{"gold", "silver"}[i%2]
		su.Spec.Consent.RecordedAt, su.Spec.Consent.PlanAmount, su.Spec.Consent.PlanCurrency = metav1.NewMicroTime(ts), "15000.00", "TZS"
		su.Status.Phase = []paygatev1.SubscriptionPhase{"", paygatev1.SubscriptionActive, paygatev1.SubscriptionPastDue, paygatev1.SubscriptionCancelled}[i%4]
		s.lists.subscriptions.OnAdd(su, false)
	}
	for _, tc := range []struct {
		handler func(http.ResponseWriter, *http.Request)
		path    string
		filters []string
	}{
		{s.listPayouts, "/api/v1/payouts", []string{"", "status=pending", "status=success"}},
		{s.listRefunds, "/api/v1/refunds", []string{"", "status=failed", "payment=trx-" + base32ID(7), "payment=trx-" + base32ID(7) + "&status=failed"}},
		{s.listInvoices, "/api/v1/billing/invoices", []string{"", "status=void", "subscription=sub_aaaaaaaaaaaaaaaaaaaaaaaa", "subscription=sub_aaaaaaaaaaaaaaaaaaaaaaaa&status=open"}},
		{s.listSubscriptions, "/api/v1/billing/subscriptions", []string{"", "status=active", "plan_code=gold", "plan_code=silver&status=cancelled"}},
	} {
		for _, filter := range tc.filters {
			_, total, _, _, body := listCall(t, s, paygatev1.EnvironmentSandbox, tc.handler, tc.path+"?limit=1&"+filter)
			if total == 0 {
				t.Fatalf("%s?%s selects nothing: %.300s", tc.path, filter, body)
			}
			for _, offset := range []int{0, total / 2} {
				target := fmt.Sprintf("%s?limit=100&offset=%d&%s", tc.path, offset, filter)
				status, gotTotal, count, st, body := listCall(t, s, paygatev1.EnvironmentSandbox, tc.handler, target)
				if status != http.StatusOK || gotTotal != total || count != min(100, total-offset) || !st.indexed {
					t.Fatalf("%s: %d, total %d (want %d), count %d, indexed %v: %.300s", target, status, gotTotal, total, count, st.indexed, body)
				}
				t.Logf("n=%d %-90s live objects read %4d (bound %d)", n, target, st.live, visitBound(100, n))
				if st.live > visitBound(100, n) {
					t.Errorf("%s: read %d live objects, bound %d", target, st.live, visitBound(100, n))
				}
			}
		}
	}
}

// TestHeldStateAsksOnlyWhatChanged: the index asks the archive about every live terminal payment
// once, then only about those that became terminal or left since, and counts a payment the
// archive holds and the cache still has (an archiver between its commit and its delete) once.
func TestHeldStateAsksOnlyWhatChanged(t *testing.T) {
	a := &memArchive{}
	s := costServer(t, a)
	ps := costPayments(300, costStart)
	for i := range ps {
		s.lists.payments.OnAdd(&ps[i], false)
	}
	terminal := 200 // two thirds
	list := func(what string, wantTotal, wantUIDs int) {
		t.Helper()
		status, total, _, st, body := listCall(t, s, paygatev1.EnvironmentSandbox, s.listPayments, "/api/v1/payments?limit=100")
		if status != http.StatusOK || total != wantTotal || st.archiveUIDs != wantUIDs {
			t.Fatalf("%s: %d, total %d (want %d), asked about %d UIDs (want %d): %.200s", what, status, total, wantTotal, st.archiveUIDs, wantUIDs, body)
		}
	}
	list("first list: every terminal payment asked", 300, terminal)
	list("nothing changed: none asked", 300, 0)

	// A pending payment settles: only it is asked.
	settled := ps[0].DeepCopy()
	settled.Status.Phase, settled.Status.Fee, settled.Status.NetAmount = paygatev1.PaymentSuccess, "37.50", "1462.50"
	s.lists.payments.OnUpdate(&ps[0], settled)
	list("one settled: it alone asked", 300, 1)
	list("then none", 300, 0)

	// The archiver commits two live payments and has not deleted them yet: rows the state cannot
	// account for, so every terminal payment is asked again; they count once.
	a.add(*ps[1].DeepCopy(), *ps[2].DeepCopy())
	list("archived, not deleted: a full check", 300, terminal+1)
	list("then none", 300, 0)

	// Their deletes arrive: held ones are forgotten, nothing asked.
	s.lists.payments.OnDelete(&ps[1])
	s.lists.payments.OnDelete(&ps[2])
	list("held ones deleted", 300, 0)

	// The archiver commits and deletes one more before the list: it left, found archived, and
	// accounts for the new row: only it is asked.
	a.add(*ps[4].DeepCopy())
	s.lists.payments.OnDelete(&ps[4])
	list("archived and deleted: it alone asked", 300, 1)

	// A payment deleted without being archived: asked, not found, no new row.
	s.lists.payments.OnDelete(&ps[5])
	list("deleted, never archived", 299, 1)
	list("then none", 299, 0)
}

// informerCache is a reader with informers (the shape of controller-runtime's cache): the fake
// client answers reads, fake informers deliver events.
type informerCache struct {
	client.Reader
	*informertest.FakeInformers
}

func (c informerCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c informerCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.Reader.List(ctx, list, opts...)
}

// TestListIndexesFollowTheInformers: New registers the indexes' handlers on the cache's
// informers; until a handler has seen the informer's initial list the list reads the cache
// (listOwn), then the index, which follows adds, updates (a status change moves a payment
// between the status filters) and deletes.
func TestListIndexesFollowTheInformers(t *testing.T) {
	ps := costPayments(30, costStart)
	objs := make([]client.Object, len(ps))
	for i := range ps {
		objs[i] = &ps[i]
	}
	fc := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(objs...).
		WithIndex(&paygatev1.Refund{}, refundPaymentIndex, refundPaymentKeys).Build()
	fi := &informertest.FakeInformers{Scheme: kube.Scheme(), InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{}}
	unsynced := controllertest.NewFakeInformer()
	fi.InformersByGVK[paygatev1.GroupVersion.WithKind("Payment")] = unsynced
	s := New(Options{Cache: informerCache{fc, fi}, Writer: fc, APIReader: fc, CheckoutKey: []byte("checkout-key")})
	if s.lists == nil || s.lists.payments.synced == nil {
		t.Fatal("New registered no list index on the informers")
	}

	list := func(target string) (int, bool, string) {
		t.Helper()
		status, total, _, st, body := listCall(t, s, paygatev1.EnvironmentSandbox, s.listPayments, target)
		if status != http.StatusOK {
			t.Fatalf("%s: %d %s", target, status, body)
		}
		return total, st.indexed, body
	}
	total, indexed, before := list("/api/v1/payments?limit=7&offset=3&status=success")
	if total != 10 || indexed {
		t.Fatalf("before the informer synced: total %d (want 10), indexed %v (want the cache)", total, indexed)
	}
	for i := range ps {
		unsynced.Add(&ps[i])
	}
	unsynced.Synced()
	total, indexed, after := list("/api/v1/payments?limit=7&offset=3&status=success")
	if total != 10 || !indexed || after != before {
		t.Fatalf("after the sync: total %d, indexed %v; answer\n%s\nwant\n%s", total, indexed, after, before)
	}

	settled := ps[0].DeepCopy() // pending
	settled.Status.Phase, settled.Status.Fee, settled.Status.NetAmount = paygatev1.PaymentSuccess, "37.50", "1462.50"
	unsynced.Update(&ps[0], settled)
	if total, _, _ := list("/api/v1/payments?status=success"); total != 11 {
		t.Errorf("after a payment settled: %d successful, want 11", total)
	}
	if total, _, _ := list("/api/v1/payments?status=pending"); total != 9 {
		t.Errorf("after a payment settled: %d pending, want 9", total)
	}
	unsynced.Delete(settled)
	s.lists.payments.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "shop/" + ps[1].Name, Obj: &ps[1]})
	if total, _, _ := list("/api/v1/payments"); total != 28 {
		t.Errorf("after two deletes: %d payments, want 28", total)
	}
}

// TestListsWhileEventsArrive: lists (with an archive, so the held state's checks run too) while
// the handler adds, settles and deletes payments; run with -race. Every answer is a 200 whose
// page holds what its total allows.
func TestListsWhileEventsArrive(t *testing.T) {
	a := &memArchive{}
	s := costServer(t, a)
	ps := costPayments(3000, costStart)
	for i := range ps[:1000] {
		s.lists.payments.OnAdd(&ps[i], false)
	}
	a.add(*ps[1].DeepCopy(), *ps[2].DeepCopy())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1000; i < len(ps); i++ {
			s.lists.payments.OnAdd(&ps[i], false)
			if i%7 == 0 {
				settled := ps[i-500].DeepCopy()
				settled.Status.Phase, settled.Status.Fee, settled.Status.NetAmount = paygatev1.PaymentSuccess, "37.50", "1462.50"
				s.lists.payments.OnUpdate(&ps[i-500], settled)
			}
			if i%11 == 0 {
				s.lists.payments.OnDelete(&ps[i-900])
			}
		}
	}()
	ctx := context.WithValue(context.Background(), callerKey{}, &caller{merchant: costMerchant, env: paygatev1.EnvironmentSandbox})
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				target := fmt.Sprintf("/api/v1/payments?limit=%d&offset=%d&%s", 1+i%100, (i*37)%3500, []string{"", "status=success", "merchant_ref=inv-shared"}[g])
				rec := httptest.NewRecorder()
				s.listPayments(rec, httptest.NewRequest(http.MethodGet, target, nil).WithContext(ctx))
				var out struct{ Pagination struct{ Total, Count int } }
				_ = json.Unmarshal(rec.Body.Bytes(), &out)
				status, total, count, body := rec.Code, out.Pagination.Total, out.Pagination.Count, rec.Body.String()
				if status != http.StatusOK || count > 100 || count > total {
					t.Errorf("%s: %d, total %d, count %d: %.200s", target, status, total, count, body)
					return
				}
			}
		}()
	}
	wg.Wait()
}
