// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// fakeDeliveries answers the delivery pages' reads from a slice and records what it was asked.
type fakeDeliveries struct {
	Records // the other lists: not read by these pages
	items   []paygatev1.WebhookDelivery
	total   int
	// asked
	filter         DeliveryFilter
	limit, offset  int
	payloadAsked   bool
	merchant, name string
}

func (f *fakeDeliveries) ListWebhookDeliveries(_ context.Context, m *paygatev1.Merchant, _ paygatev1.Environment, filter DeliveryFilter,
	limit, offset int) ([]paygatev1.WebhookDelivery, int, error) {
	f.merchant, f.filter, f.limit, f.offset = m.Name, filter, limit, offset
	return f.items, f.total, nil
}

func (f *fakeDeliveries) GetWebhookDelivery(_ context.Context, m *paygatev1.Merchant, env paygatev1.Environment, name string,
	payload bool) (*paygatev1.WebhookDelivery, bool, error) {
	f.merchant, f.name, f.payloadAsked = m.Name, name, payload
	for i := range f.items {
		if d := &f.items[i]; d.Name == name && d.Spec.MerchantRef.Name == m.Name && d.Spec.Environment == env {
			out := d.DeepCopy()
			if !payload {
				out.Spec.Payload = "" // as the apiserver's cache keeps it
			}
			return out, true, nil
		}
	}
	return nil, false, nil
}

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

// testDeliveries: a payment's event delivered by its first attempt (no status), a payout's
// abandoned after two failed attempts, a subscription's with no endpoint, a refund's waiting for
// its retry.
func testDeliveries() []paygatev1.WebhookDelivery {
	meta := func(name string, sec int) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "shop", Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(sec) * time.Second))}
	}
	spec := func(typ, kind, src string) paygatev1.WebhookDeliverySpec {
		return paygatev1.WebhookDeliverySpec{EventID: "evt_" + strings.Repeat(src[len(src)-1:], 24), EventType: typ,
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Source: paygatev1.EventSource{Kind: kind, Name: src, UID: "uid-" + src}, URL: "https://duka.example/hooks?token=t0ps3cret",
			Payload: `{"id":"evt","type":"` + typ + `","data":{"trx_id":"` + src + `"}}`, LegacySigningKey: paygatev1.SigningKeyWebhookSecret}
	}
	first := spec("payment.completed", "Payment", "trx-aaaaaaaaaaaaaaaaaaaaaaa1")
	first.FirstAttempt = &paygatev1.FirstDeliveryAttempt{Result: paygatev1.FirstAttemptDelivered, At: metav1.NewMicroTime(t0.Add(3 * time.Second)),
		StatusCode: 204, DurationMillis: 41}
	next := metav1.NewTime(t0.Add(time.Hour))
	return []paygatev1.WebhookDelivery{
		{ObjectMeta: meta("whd-aaaaaaaaaaaaaaaaaaaaaaa1", 3), Spec: first},
		{ObjectMeta: meta("whd-aaaaaaaaaaaaaaaaaaaaaaa2", 2), Spec: spec("payout.failed", "Payout", "00000000-0000-4000-8000-000000000002"),
			Status: paygatev1.WebhookDeliveryStatus{Phase: paygatev1.DeliveryAbandoned, TotalAttempts: 2, Attempts: []paygatev1.DeliveryAttempt{
				{Number: 1, At: metav1.NewTime(t0.Add(2 * time.Second)), StatusCode: 500, Error: "HTTP 500", DurationMillis: 12},
				{Number: 2, At: metav1.NewTime(t0.Add(4 * time.Second)), Error: "connection refused", DurationMillis: 3}}}},
		{ObjectMeta: meta("whd-aaaaaaaaaaaaaaaaaaaaaaa3", 1), Spec: spec("subscription.created", "Subscription", "sub-bbbbbbbbbbbbbbbbbbbbbbb3"),
			Status: paygatev1.WebhookDeliveryStatus{Phase: paygatev1.DeliveryNoEndpoint}},
		{ObjectMeta: meta("whd-aaaaaaaaaaaaaaaaaaaaaaa4", 0), Spec: spec("refund.completed", "Refund", "00000000-0000-4000-9000-000000000004"),
			Status: paygatev1.WebhookDeliveryStatus{Phase: paygatev1.DeliveryPending, TotalAttempts: 1, NextAttemptAt: &next,
				Attempts: []paygatev1.DeliveryAttempt{{Number: 1, At: metav1.NewTime(t0), StatusCode: 503, Error: "HTTP 503"}}}},
	}
}

func testPrincipal(role paygatev1.ConsoleRole, merchant string) *principal {
	return &principal{token: "ns.token-of-the-test-session-0123456789",
		session:  &paygatev1.ConsoleSession{Spec: paygatev1.ConsoleSessionSpec{User: "user-1"}},
		user:     &paygatev1.ConsoleUser{Spec: paygatev1.ConsoleUserSpec{Email: "someone@duka.example", Role: role}},
		merchant: &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: merchant}, Spec: paygatev1.MerchantSpec{DisplayName: "Duka"}}}
}

// serveAs runs the console's mux (its routes) for a signed-in principal, without a session read.
func serveAs(c *Console, p *principal, target string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Prefix+"/webhooks", c.webhookDeliveries)
	mux.HandleFunc("GET "+Prefix+"/webhooks/{name}", c.webhookDelivery)
	mux.HandleFunc(Prefix+"/", c.notFound)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	return w
}

func newDeliveryConsole(f *fakeDeliveries) *Console {
	return &Console{pages: parsePages(), opts: Options{Records: f, Log: logr.Discard()}}
}

// TestDeliveryCells: what a delivery's row says of its status, last response and source, from its
// effective status (a delivery accepted at its first attempt has none stored).
func TestDeliveryCells(t *testing.T) {
	v := &view{lang: "en"}
	ds := testDeliveries()
	for i, want := range []struct {
		status, code, attempts, source, link string
	}{
		{"delivered", "204", "1", "Payment trx-aaaaaaaaaaaaaaaaaaaaaaa1", "/console/payments/trx-aaaaaaaaaaaaaaaaaaaaaaa1?env=sandbox"},
		{"failed", "—", "2", "Payout 00000000-0000-4000-8000-000000000002", ""},
		{"no_endpoint", "—", "0", "Subscription sub_bbbbbbbbbbbbbbbbbbbbbbb3", "/console/invoices?env=sandbox&subscription=sub_bbbbbbbbbbbbbbbbbbbbbbb3"},
		{"pending", "503", "1", "Refund 00000000-0000-4000-9000-000000000004", ""},
	} {
		d := &ds[i]
		st := d.EffectiveStatus()
		src := sourceCell(v, d, paygatev1.EnvironmentSandbox, true)
		if got := deliveryStatus(d); got != want.status {
			t.Errorf("%s: status %q, want %q", d.Name, got, want.status)
		}
		if got := lastCode(st); got != want.code {
			t.Errorf("%s: last response %q, want %q", d.Name, got, want.code)
		}
		row := deliveryRows(v, ds[i:i+1], paygatev1.EnvironmentSandbox)[0]
		if row[5].Text != want.attempts || row[4].Text != want.code || row[3].Text != v.T("st-"+want.status) {
			t.Errorf("%s: row %+v", d.Name, row)
		}
		if src.Text != want.source || src.Link != want.link {
			t.Errorf("%s: source %+v, want %q linked to %q", d.Name, src, want.source, want.link)
		}
		if _, id, _ := strings.Cut(want.source, " "); row[2].Text != id || row[2].Link != want.link {
			t.Errorf("%s: the row's source %+v, want %q linked to %q", d.Name, row[2], id, want.link)
		}
		if len(row) != len(deliveryColumns) {
			t.Fatalf("%d cells for %d columns", len(row), len(deliveryColumns))
		}
	}
}

// TestDeliveryListPage: the list renders every delivery's row in both languages, passes the
// filters it knows to the records (status failed is the abandoned phase) and drops the others,
// and pages.
func TestDeliveryListPage(t *testing.T) {
	for _, tc := range []struct {
		query, lang string
		want        DeliveryFilter
		offset      int
		texts       []string
	}{
		{"env=sandbox", "en", DeliveryFilter{}, 0, []string{"Webhook deliveries", "Delivered", "Failed", "No endpoint", "Pending", "204", "503"}},
		{"env=sandbox&lang=sw", "sw", DeliveryFilter{}, 0, []string{"Uwasilishaji wa webhook", "Imefika", "Imeshindwa", "Hakuna anwani ya kupokea", "Inasubiri"}},
		{"env=sandbox&status=failed&event_type=payout.failed", "en", DeliveryFilter{Phase: paygatev1.DeliveryAbandoned, EventType: "payout.failed"}, 0, nil},
		{"env=sandbox&status=delivered", "en", DeliveryFilter{Phase: paygatev1.DeliveryDelivered}, 0, nil},
		{"env=sandbox&status=Abandoned&event_type=payment.refunded&offset=-4", "en", DeliveryFilter{}, 0, nil},
		{"env=sandbox&offset=50", "en", DeliveryFilter{}, 50, nil},
	} {
		f := &fakeDeliveries{items: testDeliveries(), total: 120}
		c := newDeliveryConsole(f)
		w := serveAs(c, testPrincipal(paygatev1.ConsoleViewer, "duka"), "/console/webhooks?"+tc.query)
		body := w.Body.String()
		if w.Code != http.StatusOK || !strings.Contains(body, `<html lang="`+tc.lang+`">`) {
			t.Fatalf("%s: %d %s", tc.query, w.Code, body)
		}
		if f.filter != tc.want || f.limit != pageSize || f.offset != tc.offset || f.merchant != "duka" {
			t.Errorf("%s: asked %+v limit %d offset %d of %s, want %+v offset %d", tc.query, f.filter, f.limit, f.offset, f.merchant, tc.want, tc.offset)
		}
		for _, s := range tc.texts {
			if !strings.Contains(body, s) {
				t.Errorf("%s: no %q on the page", tc.query, s)
			}
		}
		for _, d := range f.items {
			if !strings.Contains(body, `href="/console/webhooks/`+d.Name+`?env=sandbox"`) {
				t.Errorf("%s: no link to %s", tc.query, d.Name)
			}
		}
		if strings.Contains(body, "t0ps3cret") || strings.Contains(body, `"data"`) {
			t.Errorf("%s: the list shows a receiver URL or a payload", tc.query)
		}
		if !strings.Contains(body, `id="next"`) || (tc.offset > 0) != strings.Contains(body, `id="prev"`) {
			t.Errorf("%s: pager wrong", tc.query)
		}
	}
}

// TestDeliveryDetailPage: every role sees the attempts; owners and developers see the receiver
// and the payload, read with it; others do not, and it is not read for them; a delivery the
// records do not find for the merchant (another's, or none) is the not-found page.
func TestDeliveryDetailPage(t *testing.T) {
	for _, tc := range []struct {
		role     paygatev1.ConsoleRole
		merchant string
		name     string
		status   int
		sees     bool
		want     []string
	}{
		{paygatev1.ConsoleOwner, "duka", "whd-aaaaaaaaaaaaaaaaaaaaaaa2", http.StatusOK, true,
			[]string{"payout.failed", "HTTP 500", "connection refused", "Failed", `id="total-attempts">2<`, "t0ps3cret", "&#34;type&#34;: &#34;payout.failed&#34;"}},
		{paygatev1.ConsoleDeveloper, "duka", "whd-aaaaaaaaaaaaaaaaaaaaaaa4", http.StatusOK, true,
			[]string{"refund.completed", "HTTP 503", `id="next-attempt">2026-11-27 11:00:00<`, "Pending"}},
		{paygatev1.ConsoleViewer, "duka", "whd-aaaaaaaaaaaaaaaaaaaaaaa1", http.StatusOK, false,
			[]string{"payment.completed", `id="code">204<`, `id="delivered-at">2026-11-27 10:00:03<`, `href="/console/payments/trx-aaaaaaaaaaaaaaaaaaaaaaa1?env=sandbox"`, `id="payload-hidden"`}},
		{paygatev1.ConsoleFinance, "duka", "whd-aaaaaaaaaaaaaaaaaaaaaaa3", http.StatusOK, false, []string{"No attempt has been made yet."}},
		{paygatev1.ConsoleOwner, "soko", "whd-aaaaaaaaaaaaaaaaaaaaaaa2", http.StatusNotFound, true, []string{"There is nothing here."}},
		{paygatev1.ConsoleOwner, "duka", "whd-nope", http.StatusNotFound, true, nil},
		{paygatev1.ConsoleOwner, "duka", strings.Repeat("x", 200), http.StatusNotFound, true, nil},
	} {
		f := &fakeDeliveries{items: testDeliveries()}
		c := newDeliveryConsole(f)
		w := serveAs(c, testPrincipal(tc.role, tc.merchant), "/console/webhooks/"+url.PathEscape(tc.name)+"?env=sandbox")
		body := w.Body.String()
		if w.Code != tc.status {
			t.Fatalf("%s of %s as %s: %d, want %d: %s", tc.name, tc.merchant, tc.role, w.Code, tc.status, body)
		}
		if len(tc.name) <= 128 && f.payloadAsked != tc.sees {
			t.Errorf("%s as %s: payload asked %v, want %v", tc.name, tc.role, f.payloadAsked, tc.sees)
		}
		for _, s := range tc.want {
			if !strings.Contains(body, s) {
				t.Errorf("%s as %s: no %q on the page:\n%s", tc.name, tc.role, s, body)
			}
		}
		if tc.status == http.StatusOK && !tc.sees && (strings.Contains(body, "t0ps3cret") || strings.Contains(body, `id="payload"`)) {
			t.Errorf("%s as %s: the receiver URL or the payload is shown", tc.name, tc.role)
		}
		if strings.Contains(body, string(paygatev1.SigningKeyWebhookSecret)) {
			t.Errorf("%s: the page names the signing key", tc.name)
		}
	}
}

// deliveryTestView is the detail page's view for TestPagesRender.
func deliveryTestView(p *principal) *view {
	d := testDeliveries()[1]
	v := &view{p: p, Env: paygatev1.EnvironmentSandbox, lang: "en"}
	st := d.EffectiveStatus()
	v.Delivery = &deliveryView{Name: d.Name, EventType: d.Spec.EventType, EventID: d.Spec.EventID, Status: deliveryStatus(&d), Code: lastCode(st),
		Source: sourceCell(v, &d, v.Env, true), Created: d.CreationTimestamp.Time, TotalAttempts: st.TotalAttempts, Sees: true,
		URL: d.Spec.URL, Payload: indented(d.Spec.Payload), Attempts: []attemptRow{{Number: 1, At: t0, Code: "500", Error: "HTTP 500"}}}
	return v
}
