// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"context"
	"encoding/csv"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/pkg/paygate"
)

func TestPaymentFormFilter(t *testing.T) {
	day := func(s string) time.Time {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		form     paymentForm
		from, to time.Time
		bad      string
	}{
		{form: paymentForm{}},
		{form: paymentForm{From: "2026-11-27"}, from: day("2026-11-27")},
		{form: paymentForm{To: "2026-11-27"}, to: day("2026-11-28")}, // the whole To day
		{form: paymentForm{From: "2026-11-27", To: "2026-11-27"}, from: day("2026-11-27"), to: day("2026-11-28")},
		{form: paymentForm{From: "2026-12-31", To: "2027-01-01"}, from: day("2026-12-31"), to: day("2027-01-02")},
		{form: paymentForm{From: "2024-02-29", To: "2024-02-29"}, from: day("2024-02-29"), to: day("2024-03-01")},
		{form: paymentForm{From: "2026-11-28", To: "2026-11-27"}, bad: "dateOrder"},
		{form: paymentForm{From: "2026-02-30"}, bad: "dateInvalid"},
		{form: paymentForm{To: "27.11.2026"}, bad: "dateInvalid"},
		{form: paymentForm{From: "1999-12-31"}, bad: "dateInvalid"},
		{form: paymentForm{From: "2026-11-27T10:00"}, bad: "dateInvalid"},
	} {
		f, bad := tc.form.filter()
		if bad != tc.bad || (bad == "" && (!f.CreatedFrom.Equal(tc.from) || !f.CreatedTo.Equal(tc.to))) {
			t.Errorf("%+v: filter %v to %v, %q; want %v to %v, %q", tc.form, f.CreatedFrom, f.CreatedTo, bad, tc.from, tc.to, tc.bad)
		}
	}
}

// filterRecords answers ListPayments with one payment and remembers the filter it was given; a
// phone of "refused" is refused as the API server refuses one.
type filterRecords struct {
	Records
	got []PaymentFilter
}

func (r *filterRecords) ListPayments(_ context.Context, _ *paygatev1.Merchant, _ paygatev1.Environment, f PaymentFilter, limit, offset int) ([]paygate.Payment, int, error) {
	r.got = append(r.got, f)
	if f.CustomerPhone == "refused" {
		return nil, 0, &FilterRefused{Param: "customer_phone", Message: "The customer_phone must be a valid mobile number."}
	}
	if offset > 0 {
		return []paygate.Payment{}, 120, nil
	}
	return []paygate.Payment{{TrxID: "trx-1", MerchantRef: "order-1", Status: "success", Amount: "1500", Currency: "TZS",
		Customer: paygate.Customer{Phone: "+255*******78"}, CreatedAt: "2026-11-27T10:00:00Z"}}, 120, nil
}

// TestPaymentsPageFilters: the payments page passes its dates (To inclusive) and phone to the
// list, keeps every filter in its pager and export links, and says what is wrong with a filter
// (422) instead of listing; the export streams the same filter.
func TestPaymentsPageFilters(t *testing.T) {
	rec := &filterRecords{}
	fc := fake.NewClientBuilder().WithScheme(kube.Scheme()).Build()
	c := &Console{pages: parsePages(), opts: Options{Records: rec, Writer: fc, Clock: fakeClock{}}}
	p := &principal{session: &paygatev1.ConsoleSession{Spec: paygatev1.ConsoleSessionSpec{User: "user-1"}},
		user:     &paygatev1.ConsoleUser{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "user-1"}, Spec: paygatev1.ConsoleUserSpec{Email: "owner@duka.example", Role: paygatev1.ConsoleOwner, Merchant: "duka"}},
		merchant: &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "duka"}, Spec: paygatev1.MerchantSpec{DisplayName: "Duka"}}}
	get := func(h http.HandlerFunc, target string) (int, string) {
		t.Helper()
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, target, nil)
		h(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
		return w.Code, w.Body.String()
	}

	code, body := get(c.payments, "/console/payments?env=sandbox&status=success&from=2026-11-01&to=2026-11-27&customer_phone=0712+345+678&lang=en")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	f := rec.got[len(rec.got)-1]
	if !f.CreatedFrom.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) || !f.CreatedTo.Equal(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)) ||
		f.CustomerPhone != "0712 345 678" || f.Status != "success" {
		t.Fatalf("the list was asked %+v", f)
	}
	for _, want := range []string{`id="from" name="from" type="date"`, `value="2026-11-01"`, `value="2026-11-27"`, `value="0712 345 678"`,
		`<label for="from">From (UTC)</label>`, `<label for="to">To (UTC)</label>`, `<label for="customer_phone">Customer phone</label>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page has no %s", want)
		}
	}
	links := map[string]string{}
	for _, id := range []string{"export", "next"} {
		i := strings.Index(body, `id="`+id+`"`)
		if id == "next" {
			i = strings.Index(body, `" id="next"`)
			start := strings.LastIndex(body[:i], `href="`) + len(`href="`)
			links[id] = html.UnescapeString(body[start:i])
			continue
		}
		start := strings.Index(body[i:], `href="`) + i + len(`href="`)
		links[id] = html.UnescapeString(body[start : start+strings.Index(body[start:], `"`)])
	}
	for id, link := range links {
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if q.Get("from") != "2026-11-01" || q.Get("to") != "2026-11-27" || q.Get("customer_phone") != "0712 345 678" || q.Get("status") != "success" {
			t.Errorf("the %s link %s does not keep the filters", id, link)
		}
	}
	if !strings.HasPrefix(links["export"], "/console/payments.csv?") || !strings.Contains(links["next"], "offset=50") {
		t.Errorf("links %v", links)
	}

	for target, says := range map[string]string{
		"/console/payments?env=sandbox&from=2026-11-28&to=2026-11-27": "The To date is before the From date.",
		"/console/payments?env=sandbox&from=2026-13-01":               "Give dates as YYYY-MM-DD",
		"/console/payments?env=sandbox&customer_phone=refused":        "That is not a mobile number.",
		"/console/payments?env=sandbox&to=1999-01-01&lang=sw":         "Andika tarehe kama YYYY-MM-DD",
	} {
		asked := len(rec.got)
		code, body := get(c.payments, target)
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, `role="alert"`) || !strings.Contains(body, says) ||
			strings.Contains(body, `id="export"`) {
			t.Errorf("%s: %d, want 422 saying %q: %s", target, code, says, body)
		}
		if strings.Contains(target, "from=") || strings.Contains(target, "to=") {
			if len(rec.got) != asked {
				t.Errorf("%s: the list was asked with dates that are none", target)
			}
		}
	}

	code, body = get(c.exportPayments, "/console/payments.csv?env=sandbox&from=2026-11-27&to=2026-11-27&customer_phone=%2B255712345678")
	if code != http.StatusOK {
		t.Fatalf("export: %d %s", code, body)
	}
	f = rec.got[len(rec.got)-1]
	if !f.CreatedFrom.Equal(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)) || !f.CreatedTo.Equal(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)) ||
		f.CustomerPhone != "+255712345678" {
		t.Fatalf("the export asked %+v", f)
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || len(rows) != 2 || rows[1][0] != "trx-1" {
		t.Fatalf("export rows %v, %v", rows, err)
	}
	for _, target := range []string{"/console/payments.csv?env=sandbox&from=2026-11-28&to=2026-11-27", "/console/payments.csv?env=sandbox&customer_phone=refused"} {
		if code, body := get(c.exportPayments, target); code != http.StatusUnprocessableEntity || strings.Contains(body, "trx_id") {
			t.Errorf("export %s: %d %s", target, code, body)
		}
	}
}

// fakeClock is a fixed time.
type fakeClock struct{}

func (fakeClock) Now() time.Time                  { return time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) }
func (fakeClock) Since(t time.Time) time.Duration { return fakeClock{}.Now().Sub(t) }
