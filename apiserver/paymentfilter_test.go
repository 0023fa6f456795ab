// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/console"
)

// The payment list's filters of creation time and customer phone (paymentfilter.go): how they
// are read, and that the list index answers them exactly as the cache's list (listOwn) does,
// with the archive merged.

// merchantIn is a merchant of the currencies given.
func merchantIn(currencies ...paygatev1.CurrencyCode) *paygatev1.Merchant {
	m := costMerchant.DeepCopy()
	m.Spec.Currencies = currencies
	return m
}

func TestParsePaymentQuery(t *testing.T) {
	day := func(s string) time.Time {
		t.Helper()
		d, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return d.UTC()
	}
	tz, kenyaAndTanzania, usd := merchantIn("TZS"), merchantIn("KES", "TZS"), merchantIn("USD", "TZS")
	for _, tc := range []struct {
		query    string
		merchant *paygatev1.Merchant
		want     paymentQuery
		invalid  []string // the parameters named in the 422
	}{
		{query: "", merchant: tz},
		{query: "status=success&merchant_ref=order-1", merchant: tz, want: paymentQuery{status: "success", ref: "order-1"}},
		{query: "created_from=2026-11-27", merchant: tz, want: paymentQuery{created: timeSpan{from: day("2026-11-27T00:00:00Z")}}},
		{query: "created_to=2026-11-28", merchant: tz, want: paymentQuery{created: timeSpan{to: day("2026-11-28T00:00:00Z")}}},
		{query: "created_from=2026-11-27T10:00:00Z&created_to=2026-11-27T10:00:00.5Z", merchant: tz,
			want: paymentQuery{created: timeSpan{day("2026-11-27T10:00:00Z"), day("2026-11-27T10:00:00.5Z")}}},
		{query: "created_from=2026-11-27T13:00:00%2B03:00", merchant: tz, want: paymentQuery{created: timeSpan{from: day("2026-11-27T10:00:00Z")}}},
		{query: "created_from=2000-01-01&created_to=9999-12-31T23:59:59Z", merchant: tz,
			want: paymentQuery{created: timeSpan{day("2000-01-01T00:00:00Z"), day("9999-12-31T23:59:59Z")}}},
		{query: "created_from=1999-12-31T23:59:59Z", merchant: tz, invalid: []string{"created_from"}},
		{query: "created_to=9999-12-31T23:00:00-05:00", merchant: tz, invalid: []string{"created_to"}},
		{query: "created_from=2026-02-30", merchant: tz, invalid: []string{"created_from"}},
		{query: "created_from=27/11/2026", merchant: tz, invalid: []string{"created_from"}},
		{query: "created_from=2026-11-27T10:00:00", merchant: tz, invalid: []string{"created_from"}},
		{query: "created_to=1732700000", merchant: tz, invalid: []string{"created_to"}},
		{query: "created_from=2026-11-28&created_to=2026-11-28", merchant: tz, invalid: []string{"created_to"}},
		{query: "created_from=2026-11-28&created_to=2026-11-27", merchant: tz, invalid: []string{"created_to"}},
		{query: "created_from=2026-11-28T00:00:00Z&created_to=2026-11-28T00:00:00.000001Z", merchant: tz,
			want: paymentQuery{created: timeSpan{day("2026-11-28T00:00:00Z"), day("2026-11-28T00:00:00.000001Z")}}},
		{query: "customer_phone=%2B255712345678", merchant: tz, want: paymentQuery{phone: "+255712345678"}},
		{query: "customer_phone=%2B255+712+345+678", merchant: tz, want: paymentQuery{phone: "+255712345678"}},
		{query: "customer_phone=+255712345678", merchant: tz, want: paymentQuery{phone: "+255712345678"}}, // '+' unencoded: a space
		{query: "customer_phone=255712345678", merchant: tz, want: paymentQuery{phone: "+255712345678"}},
		{query: "customer_phone=00255712345678", merchant: tz, want: paymentQuery{phone: "+255712345678"}},
		{query: "customer_phone=0712345678", merchant: tz, want: paymentQuery{phone: "+255712345678"}},
		{query: "customer_phone=0712-345-678", merchant: usd, want: paymentQuery{phone: "+255712345678"}},
		{query: "customer_phone=%2B254712345678", merchant: tz, want: paymentQuery{phone: "+254712345678"}},
		{query: "customer_phone=0712345678", merchant: kenyaAndTanzania, invalid: []string{"customer_phone"}},
		{query: "customer_phone=%2B255712345678", merchant: kenyaAndTanzania, want: paymentQuery{phone: "+255712345678"}},
		{query: "customer_phone=0712345678", merchant: merchantIn(), invalid: []string{"customer_phone"}},
		{query: "customer_phone=%2B255222123456", merchant: tz, invalid: []string{"customer_phone"}}, // a landline
		{query: "customer_phone=not-a-phone", merchant: tz, invalid: []string{"customer_phone"}},
		{query: "status=paid&created_from=x&customer_phone=1", merchant: tz, invalid: []string{"created_from", "customer_phone", "status"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			values, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			v := validation{}
			got := parsePaymentQuery(v, values, tc.merchant)
			var named []string
			for k := range v {
				named = append(named, k)
			}
			slices.Sort(named)
			if !slices.Equal(named, tc.invalid) {
				t.Fatalf("invalid parameters %v, want %v (%v)", named, tc.invalid, v)
			}
			if len(tc.invalid) == 0 && (got.status != tc.want.status || got.ref != tc.want.ref || got.phone != tc.want.phone ||
				!got.created.from.Equal(tc.want.created.from) || !got.created.to.Equal(tc.want.created.to)) {
				t.Fatalf("query %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestPhoneFilterMessage: the 422 says the forms the merchant's list reads.
func TestPhoneFilterMessage(t *testing.T) {
	for _, tc := range []struct {
		merchant *paygatev1.Merchant
		region   string
		says     string
	}{
		{merchantIn("TZS"), "TZ", "Tanzanian (0"},
		{merchantIn("KES", "KES"), "KE", "Kenyan (0"},
		{merchantIn("USD", "UGX"), "UG", "Ugandan (0"},
		{merchantIn("KES", "TZS"), "", "international form"},
		{merchantIn("USD"), "", "international form"},
	} {
		if got := phoneRegionOf(tc.merchant); got != tc.region {
			t.Errorf("%v: region %q, want %q", tc.merchant.Spec.Currencies, got, tc.region)
		}
		if got := phoneFilterMessage(tc.merchant); !strings.Contains(got, tc.says) {
			t.Errorf("%v: %q does not say %q", tc.merchant.Spec.Currencies, got, tc.says)
		}
	}
}

// TestConsolePaymentQuery: the console's filter is refused as the API's would be, by the
// parameter's name.
func TestConsolePaymentQuery(t *testing.T) {
	at := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	m := merchantIn("TZS")
	q, err := consolePaymentQuery(m, console.PaymentFilter{Status: "failed", CreatedFrom: at, CreatedTo: at.Add(24 * time.Hour), CustomerPhone: "0712 345 678"})
	if err != nil || q.phone != "+255712345678" || q.status != "failed" || !q.created.to.Equal(at.Add(24*time.Hour)) {
		t.Fatalf("query %+v, %v", q, err)
	}
	for _, f := range []console.PaymentFilter{{CustomerPhone: "12"}, {CreatedFrom: at, CreatedTo: at}} {
		_, err := consolePaymentQuery(m, f)
		var refused *console.FilterRefused
		if !errors.As(err, &refused) {
			t.Fatalf("%+v: %v, want a FilterRefused", f, err)
		}
	}
}

// filterWorld is random payments of duka (and a few of others) over three days, with ties on
// times, every status, a few references and phones (one in four without a phone).
type filterWorld struct {
	r    *rand.Rand
	base time.Time
	n    int
}

var (
	filterRefs   = []string{"order-1", "order-2", "inv-shared"}
	filterPhones = []paygatev1.MobileNumber{"", "+255712345678", "+255713000001", "+254712345678"}
)

// at is one of a few instants of three days, whole seconds (the fake client keeps no more).
func (w *filterWorld) at() time.Time {
	return w.base.Add(time.Duration(w.r.IntN(72))*time.Hour + time.Duration(w.r.IntN(3))*time.Second)
}

func (w *filterWorld) payment(phase paygatev1.PaymentPhase) *paygatev1.Payment {
	w.n++
	merchant, env := "duka", paygatev1.EnvironmentSandbox
	if w.r.IntN(10) == 0 {
		merchant = "soko"
	}
	p := &paygatev1.Payment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "trx-" + base32ID(w.n),
		UID: types.UID(fmt.Sprintf("uid-%06d", w.n)), CreationTimestamp: metav1.NewTime(w.at()),
		Labels: map[string]string{paygatev1.LabelMerchant: merchant, paygatev1.LabelEnvironment: string(env)}}}
	p.Spec = paygatev1.PaymentSpec{MerchantRef: paygatev1.MerchantReference{Name: merchant}, Environment: env,
		MerchantReference: pick(w.r, filterRefs), Amount: "1500.00", Currency: "TZS", Mode: paygatev1.PaymentModeHosted,
		Customer: paygatev1.Customer{Phone: pick(w.r, filterPhones)}}
	w.settle(p, phase)
	return p
}

func (w *filterWorld) settle(p *paygatev1.Payment, phase paygatev1.PaymentPhase) {
	switch p.Status = (paygatev1.PaymentStatus{Phase: phase}); phase {
	case paygatev1.PaymentSuccess:
		p.Status.Fee, p.Status.NetAmount = "37.50", "1462.50"
	case paygatev1.PaymentFailed:
		p.Status.Reason = "INSUFFICIENT_FUNDS"
	}
}

// query is a random filter: each of status, merchant_ref, phone (in any form the merchant's list
// reads) and the two bounds (a date or an instant of the world, often a tie's) given or not.
func (w *filterWorld) query() string {
	q := url.Values{}
	if w.r.IntN(3) == 0 {
		q.Set("status", pick(w.r, []string{"pending", "success", "failed"}))
	}
	if w.r.IntN(4) == 0 {
		q.Set("merchant_ref", pick(w.r, slices.Concat(filterRefs, []string{"nothing"})))
	}
	if w.r.IntN(3) == 0 {
		q.Set("customer_phone", pick(w.r, []string{"+255712345678", "0712345678", "255713000001", "+254712345678", "+255799999999"}))
	}
	bound := func() string {
		if w.r.IntN(2) == 0 {
			return w.base.AddDate(0, 0, w.r.IntN(4)).Format(time.DateOnly)
		}
		return w.at().Add(time.Duration(w.r.IntN(2)) * time.Second / 2).Format(time.RFC3339Nano)
	}
	from, to := "", ""
	if w.r.IntN(2) == 0 {
		from = bound()
	}
	if w.r.IntN(2) == 0 {
		to = bound()
	}
	if from != "" && to != "" {
		f, _ := parseCreated(from)
		u, _ := parseCreated(to)
		if !f.Before(u) {
			from, to = to, from
		}
		if from == to {
			to = ""
		}
	}
	if from != "" {
		q.Set("created_from", from)
	}
	if to != "" {
		q.Set("created_to", to)
	}
	return q.Encode()
}

// answer is one list call's status and body for a merchant of TZS.
func answer(t *testing.T, s *Server, target string) (int, string) {
	t.Helper()
	ctx := context.WithValue(context.Background(), callerKey{}, &caller{merchant: merchantIn("TZS"), env: paygatev1.EnvironmentSandbox})
	rec := httptest.NewRecorder()
	s.listPayments(rec, httptest.NewRequest(http.MethodGet, target, nil).WithContext(ctx))
	return rec.Code, rec.Body.String()
}

// TestPaymentFiltersAnswerAsTheCache: over random payments, live and archived (some archived and
// still live, as after an archiver stopped between its commit and its deletes), every filter of
// the payment list and their combinations, pages of every size and offset (across the edge of a
// span of creation times and across the live and archived items), answer byte for byte the same
// from the list index as from the cache's list (listOwn), and their totals are the payments the
// filter selects, each counted once.
func TestPaymentFiltersAnswerAsTheCache(t *testing.T) {
	queries := 60
	if testing.Short() {
		queries = 20
	}
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			w := &filterWorld{r: rand.New(rand.NewPCG(seed, 29)), base: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
			a := &memArchive{}
			var live []*paygatev1.Payment
			for range 400 {
				live = append(live, w.payment(pick(w.r, []paygatev1.PaymentPhase{"", paygatev1.PaymentSuccess, paygatev1.PaymentFailed})))
			}
			var archived []paygatev1.Payment
			for range 150 {
				archived = append(archived, *w.payment(pick(w.r, []paygatev1.PaymentPhase{paygatev1.PaymentSuccess, paygatev1.PaymentFailed})))
			}
			for _, p := range live {
				if p.Terminal() && w.r.IntN(10) == 0 {
					archived = append(archived, *p.DeepCopy())
				}
			}
			a.add(archived...)
			objs := make([]client.Object, len(live))
			for i, p := range live {
				objs[i] = p.DeepCopy()
			}
			cached := costServer(t, a, objs...)
			cached.lists = nil // reads the cache: listOwn
			indexed := costServer(t, a)
			for _, p := range live {
				indexed.lists.payments.OnAdd(p, false)
			}

			for range queries {
				filter := w.query()
				values, _ := url.ParseQuery(filter)
				q := parsePaymentQuery(validation{}, values, merchantIn("TZS"))
				want := map[types.UID]bool{}
				for _, p := range live {
					if p.Spec.MerchantRef.Name == "duka" && q.matches(p) {
						want[p.UID] = true
					}
				}
				for i := range archived {
					if p := &archived[i]; p.Spec.MerchantRef.Name == "duka" && q.status != "pending" && q.matches(p) {
						want[p.UID] = true
					}
				}
				total := len(want)
				for _, page := range []struct{ limit, offset int }{{20, 0}, {7, w.r.IntN(total + 1)}, {3, max(total-2, 0)},
					{1 + w.r.IntN(100), total / 2}, {5, total + w.r.IntN(5)}} {
					target := fmt.Sprintf("/api/v1/payments?limit=%d&offset=%d&%s", page.limit, page.offset, filter)
					cs, cb := answer(t, cached, target)
					is, ib := answer(t, indexed, target)
					if cs != http.StatusOK || is != cs || ib != cb {
						t.Fatalf("GET %s:\nindex %d %s\ncache %d %s", target, is, ib, cs, cb)
					}
					var out struct {
						Data []struct {
							TrxID string `json:"trx_id"`
						}
						Pagination struct{ Total, Count int }
					}
					if err := json.Unmarshal([]byte(ib), &out); err != nil {
						t.Fatal(err)
					}
					if out.Pagination.Total != total || out.Pagination.Count != min(page.limit, max(total-page.offset, 0)) {
						t.Fatalf("GET %s: total %d, count %d; want %d payments", target, out.Pagination.Total, out.Pagination.Count, total)
					}
				}
			}
		})
	}
}

// TestPaymentIndexFollowsPhonesAndTimes: the phone facets and the spans of creation times follow
// every change an informer delivers (a payment settling, its phone, reference or creation time
// changing, deletes, tombstones, re-creations under a new UID): every query's items read from
// the index are the payments it selects, in the list's order.
func TestPaymentIndexFollowsPhonesAndTimes(t *testing.T) {
	w := &filterWorld{r: rand.New(rand.NewPCG(29, 1)), base: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	x := newListIndex(&paymentIndex)
	live := map[string]*paygatev1.Payment{}
	names := func() []string { return slices.Sorted(maps.Keys(live)) }
	bucket := bucketKey{"shop", "duka", paygatev1.EnvironmentSandbox}
	for step := range 1500 {
		switch op := w.r.IntN(10); {
		case len(live) == 0 || op < 4:
			p := w.payment(pick(w.r, []paygatev1.PaymentPhase{"", paygatev1.PaymentSuccess, paygatev1.PaymentFailed}))
			live[p.Name] = p
			x.OnAdd(p, false)
		case op < 8:
			old := live[pick(w.r, names())]
			p := old.DeepCopy()
			switch w.r.IntN(4) {
			case 0:
				w.settle(p, pick(w.r, []paygatev1.PaymentPhase{"", paygatev1.PaymentSuccess, paygatev1.PaymentFailed}))
			case 1:
				p.Spec.Customer.Phone = pick(w.r, filterPhones)
			case 2:
				p.CreationTimestamp = metav1.NewTime(w.at())
			default:
				p.Spec.MerchantReference = pick(w.r, filterRefs)
			}
			live[p.Name] = p
			x.OnUpdate(old, p)
		case op < 9:
			name := pick(w.r, names())
			if w.r.IntN(2) == 0 {
				x.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "shop/" + name, Obj: live[name]})
			} else {
				x.OnDelete(live[name])
			}
			delete(live, name)
		default:
			old := live[pick(w.r, names())]
			p := old.DeepCopy()
			p.UID = types.UID(fmt.Sprintf("uid-again-%d", step))
			live[p.Name] = p
			x.OnUpdate(old, p)
		}
		if step%10 != 0 {
			continue
		}
		for range 5 {
			values, _ := url.ParseQuery(w.query())
			q := parsePaymentQuery(validation{}, values, merchantIn("TZS"))
			var want []paygatev1.Payment
			for _, p := range live {
				if p.Spec.MerchantRef.Name == "duka" && q.matches(p) {
					want = append(want, *p)
				}
			}
			want = sortedByPointer(want, comparePayments)
			var got []paygatev1.Payment
			x.liveIn(bucket, paymentRanges(q), q.created, nil).read(nil, func(seq liveSeq[paygatev1.Payment]) {
				got = pageOf(seq, 0, seq.Len())
				for i := range want { // ranks and finds agree with the positions
					if r := seq.Rank(&want[i]); r != i {
						t.Fatalf("step %d, %s: rank of item %d is %d", step, values.Encode(), i, r)
					}
					if f := seq.Find(&want[i]); f != i {
						t.Fatalf("step %d, %s: item %d found at %d", step, values.Encode(), i, f)
					}
				}
			})
			if !slices.EqualFunc(got, want, func(a, b paygatev1.Payment) bool { return a.UID == b.UID }) {
				t.Fatalf("step %d, %s: index has %d payments, want %d", step, values.Encode(), len(got), len(want))
			}
		}
	}
	for _, name := range names() {
		x.OnDelete(live[name])
	}
	if len(x.buckets) != 0 {
		t.Fatalf("%d buckets left after every payment was deleted", len(x.buckets))
	}
}
