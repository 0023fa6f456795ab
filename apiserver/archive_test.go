// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/billing"
	"github.com/paygate/paygate/internal/openapitest"
	"github.com/paygate/paygate/internal/pgtest"
	"github.com/paygate/paygate/pkg/paygate"
)

// The archive tests run the API server on the exchange fixture's in-memory cluster with a real
// archive: PostgreSQL from internal/pgtest, migrated, written with archive.Store.Archive as the
// archiver writes it. Objects are archived, then deleted from the cluster as the archiver
// deletes them, and every read route must answer byte for byte as it did before.

func TestMain(m *testing.M) {
	code := m.Run()
	if err := pgtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping PostgreSQL:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// stampingWriter gives each object it creates a UID and a creationTimestamp (whole seconds of
// now), as the Kubernetes API server does and the fake client does not: the archive keys rows by
// UID and the lists order by creation time.
type stampingWriter struct {
	client.Writer
	now func() time.Time
}

func (w stampingWriter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if obj.GetUID() == "" {
		obj.SetUID(types.UID(uuid.NewString()))
	}
	if ts := obj.GetCreationTimestamp(); ts.IsZero() {
		obj.SetCreationTimestamp(metav1.NewTime(w.now().Truncate(time.Second)))
	}
	return w.Writer.Create(ctx, obj, opts...)
}

// logBuffer keeps everything the Server logs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// archiveFixture is the payout fixture (duka can pay out) with an archive, a fake clock that the
// Go clients sign with, and the server's logs.
type archiveFixture struct {
	*exchangeFixture
	store *archive.Store
	clock *testingclock.FakeClock
	logs  *logBuffer
}

// openArchive opens a migrated archive on dsn.
func openArchive(t *testing.T, dsn string) *archive.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := archive.Open(ctx, dsn, archive.Options{MaxConns: 4, ApplicationName: "paygate-apiserver-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return store
}

func newArchiveFixture(t *testing.T, store *archive.Store) *archiveFixture {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	logs := &logBuffer{}
	f := payoutFixture(t, func(o *Options) {
		o.Clock = clk
		o.Writer = stampingWriter{Writer: o.Writer, now: clk.Now}
		o.RateLimitPerMinute = 1_000_000
		o.Archive = store
		o.Log = funcr.New(func(prefix, args string) {
			logs.mu.Lock()
			defer logs.mu.Unlock()
			fmt.Fprintln(&logs.buf, prefix, args)
		}, funcr.Options{})
	})
	return &archiveFixture{exchangeFixture: f, store: store, clock: clk, logs: logs}
}

// as is a client of creds that signs with the fixture's clock and checks every exchange against
// the OpenAPI document.
func (f *archiveFixture) as(t *testing.T, creds paygate.Credentials) *paygate.Client {
	c := f.client(openapitest.NewValidator(t, openAPIDocument, nil), creds)
	c.Now = f.clock.Now
	return c
}

// exchange is one answer: status and body, byte for byte.
type exchange struct {
	status int
	body   string
}

func (e exchange) String() string { return strconv.Itoa(e.status) + " " + e.body }

func do(t *testing.T, c *paygate.Client, method, target, body string, header http.Header) exchange {
	t.Helper()
	var raw []byte
	if body != "" {
		raw = []byte(body)
	}
	resp, err := c.Do(context.Background(), method, target, raw, header)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("%s %s: %d %s", method, target, resp.StatusCode, resp.Body)
	}
	return exchange{resp.StatusCode, string(resp.Body)}
}

// render GETs every target.
func render(t *testing.T, c *paygate.Client, targets []string) map[string]exchange {
	t.Helper()
	out := map[string]exchange{}
	for _, target := range targets {
		out[target] = do(t, c, http.MethodGet, target, "", nil)
	}
	return out
}

// sameAnswers fails for every target whose answer differs from before.
func sameAnswers(t *testing.T, stage string, before, after map[string]exchange) {
	t.Helper()
	for target, want := range before {
		if got := after[target]; got != want {
			t.Errorf("%s: GET %s changed:\nbefore %s\nafter  %s", stage, target, want, got)
		}
	}
}

// archiveObjects archives objs as the archiver does (one transaction), then, when del, deletes
// them from the cluster (after the commit, with a precondition on the UID).
func (f *archiveFixture) archiveObjects(t *testing.T, del bool, objs ...client.Object) {
	t.Helper()
	ctx := context.Background()
	var b archive.Batch
	for _, o := range objs {
		if err := f.k8s.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		switch o := o.(type) {
		case *paygatev1.Payment:
			b.Payments = append(b.Payments, *o)
		case *paygatev1.Payout:
			b.Payouts = append(b.Payouts, *o)
		case *paygatev1.Invoice:
			b.Invoices = append(b.Invoices, *o)
		default:
			t.Fatalf("cannot archive a %T", o)
		}
	}
	if _, err := f.store.Archive(ctx, b); err != nil {
		t.Fatal(err)
	}
	if !del {
		return
	}
	for _, o := range objs {
		uid := o.GetUID()
		if err := f.k8s.Delete(ctx, o, client.Preconditions{UID: &uid}); err != nil {
			t.Fatal(err)
		}
	}
}

// createPayment creates a hosted payment of duka with ref through the API and returns it.
func (f *archiveFixture) createPayment(t *testing.T, c *paygate.Client, ref, amount string) *paygatev1.Payment {
	t.Helper()
	body := fmt.Sprintf(`{"payment_amount":%s,"currency_code":"TZS","ref_trx":%q,"customer_name":"Asha","customer_email":"asha@example.com","customer_phone":"+255712345678","description":"Order %s"}`, amount, ref, ref)
	if got := do(t, c, http.MethodPost, "/api/v1/payments", body, nil); got.status != http.StatusOK {
		t.Fatalf("create %s: %s", ref, got)
	}
	return f.payment(t, TrxID("uid-duka", paygatev1.EnvironmentSandbox, ref))
}

func (f *archiveFixture) payment(t *testing.T, trxID string) *paygatev1.Payment {
	t.Helper()
	p := &paygatev1.Payment{}
	if err := f.k8s.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: trxID}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// settle writes what the payment controller would: success (with fee and net amount) or failed.
func (f *archiveFixture) settle(t *testing.T, p *paygatev1.Payment, success bool) {
	t.Helper()
	at := metav1.NewMicroTime(f.clock.Now().Add(1500 * time.Microsecond))
	p.Status.Gateway, p.Status.SettledAt = "tz-mpesa", &at
	if success {
		p.Status.Phase, p.Status.Fee, p.Status.NetAmount = paygatev1.PaymentSuccess, "37.50", paygatev1.Decimal(mustSub(t, string(p.Spec.Amount), "37.50"))
	} else {
		p.Status.Phase, p.Status.Reason = paygatev1.PaymentFailed, "INSUFFICIENT_FUNDS"
	}
	if err := f.k8s.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

func mustSub(t *testing.T, a, b string) string {
	t.Helper()
	// Amounts in these tests are whole TZS with two decimals; compute in cents.
	cents := func(s string) int64 {
		whole, frac, _ := strings.Cut(s, ".")
		frac = (frac + "00")[:2]
		n, err := strconv.ParseInt(whole+frac, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	d := cents(a) - cents(b)
	return fmt.Sprintf("%d.%02d", d/100, d%100)
}

// createPayout creates a payout of duka through the API and returns it.
func (f *archiveFixture) createPayout(t *testing.T, c *paygate.Client, amount, key string) *paygatev1.Payout {
	t.Helper()
	var h http.Header
	if key != "" {
		h = http.Header{"Idempotency-Key": {key}}
	}
	got := do(t, c, http.MethodPost, "/api/v1/payouts", `{"amount":`+amount+`}`, h)
	var out struct{ ID string }
	if got.status != http.StatusOK || json.Unmarshal([]byte(got.body), &out) != nil {
		t.Fatalf("payout %s: %s", amount, got)
	}
	p := &paygatev1.Payout{}
	if err := f.k8s.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: out.ID}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// finishPayout writes what the payout controller would.
func (f *archiveFixture) finishPayout(t *testing.T, p *paygatev1.Payout, success bool) {
	t.Helper()
	at := metav1.NewMicroTime(f.clock.Now())
	p.Status.Phase, p.Status.UpdatedAt = paygatev1.PayoutFailed, &at
	p.Status.Reason = "INVALID_ACCOUNT"
	if success {
		p.Status.Phase, p.Status.Reason = paygatev1.PayoutSuccess, ""
	}
	if err := f.k8s.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// createInvoices creates a subscription of duka and its invoices, as the billing controller does:
// the given phases, periods 1, 2, ...
func (f *archiveFixture) createInvoices(t *testing.T, phases ...paygatev1.InvoicePhase) (subID string, invoices []*paygatev1.Invoice) {
	t.Helper()
	ctx := context.Background()
	id, err := billing.NewSubscriptionID()
	if err != nil {
		t.Fatal(err)
	}
	name := paygatev1.SubscriptionName(id)
	sub := &paygatev1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID(uuid.NewString()),
			Labels: map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox"}},
		Spec: paygatev1.SubscriptionSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			PlanCode: "gold-monthly", CustomerPhone: "+255712345678"},
	}
	if err := f.k8s.Create(ctx, sub); err != nil {
		t.Fatal(err)
	}
	start := f.clock.Now().AddDate(0, -len(phases), 0)
	for i, phase := range phases {
		period := int32(i + 1)
		inv := &paygatev1.Invoice{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: paygatev1.InvoiceName(name, period), UID: types.UID(uuid.NewString()),
				CreationTimestamp: metav1.NewTime(f.clock.Now().Truncate(time.Second)), // one second for all: ties
				Labels:            map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox", paygatev1.LabelSubscription: name}},
			Spec: paygatev1.InvoiceSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
				SubscriptionRef: paygatev1.SubscriptionReference{Name: name}, PlanCode: "gold-monthly", Period: period,
				PeriodStart: metav1.NewTime(start.AddDate(0, i, 0)), PeriodEnd: metav1.NewTime(start.AddDate(0, i+1, 0)),
				Amount: "15000.00", Currency: "TZS"},
		}
		switch phase {
		case paygatev1.InvoicePaid:
			paid := metav1.NewMicroTime(start.AddDate(0, i, 0).Add(4*time.Second + 250*time.Microsecond))
			trx := TrxID("uid-duka", paygatev1.EnvironmentSandbox, name+"-"+strconv.Itoa(i))
			inv.Status = paygatev1.InvoiceStatus{Phase: phase, AttemptCount: 1, Payments: []string{trx}, PaidAt: &paid, PaidPayment: trx}
		case paygatev1.InvoiceVoid:
			voided := metav1.NewTime(start.AddDate(0, i+1, 0))
			inv.Status = paygatev1.InvoiceStatus{Phase: phase, AttemptCount: 3, LastFailureReason: "INSUFFICIENT_FUNDS", VoidedAt: &voided}
		default:
			inv.Status = paygatev1.InvoiceStatus{Phase: phase}
		}
		if err := f.k8s.Create(ctx, inv); err != nil {
			t.Fatal(err)
		}
		invoices = append(invoices, inv)
	}
	return paygatev1.SubscriptionAPIID(name), invoices
}

// listTargets are the pages of a list route: every page for each limit, one past the end, with
// and without each filter.
func listTargets(path string, filters []string, total int) []string {
	var out []string
	for _, filter := range filters {
		for _, limit := range []int{1, 2, 3, 20} {
			for offset := 0; offset <= total+limit; offset += limit {
				q := fmt.Sprintf("?limit=%d&offset=%d", limit, offset)
				if filter != "" {
					q += "&" + filter
				}
				out = append(out, path+q)
			}
		}
	}
	return append(out, path)
}

// TestArchivedRecordsReadExactlyAsLive: payments, payouts and invoices are read through every
// route, then archived and deleted from the cluster in stages (part of them; more archived but not
// deleted yet, counted once; the rest), and every route answers byte for byte as before.
func TestArchivedRecordsReadExactlyAsLive(t *testing.T) {
	f := newArchiveFixture(t, openArchive(t, pgtest.NewDatabase(t)))
	c := f.as(t, f.duka)

	// Payments: nine settled (some in the same second, so the name breaks the tie), two pending,
	// one with a reference used twice in the list filter's sense (refs differ, one is filtered).
	var settled []client.Object
	var trxIDs []string
	for i := range 11 {
		if i%3 != 0 {
			f.clock.Step(time.Second)
		}
		p := f.createPayment(t, c, fmt.Sprintf("order-%02d", i), strconv.Itoa(1000+100*i))
		trxIDs = append(trxIDs, p.Name)
		if i == 4 || i == 9 {
			continue // pending: stays live
		}
		f.settle(t, p, i%4 != 1)
		settled = append(settled, p)
	}
	trxIDs = append(trxIDs, f.settledTrxID) // the fixture's own settled payment (no UID: never archived)

	// Payouts: four finished, one pending.
	var finished []client.Object
	var payoutIDs []string
	for i := range 5 {
		f.clock.Step(time.Duration(i%2) * time.Second)
		p := f.createPayout(t, c, strconv.Itoa(1000+10*i), "payout-"+strconv.Itoa(i))
		payoutIDs = append(payoutIDs, p.Name)
		if i == 2 {
			continue
		}
		f.finishPayout(t, p, i != 3)
		finished = append(finished, p)
	}

	// Invoices: two subscriptions, paid, void and open ones.
	subA, invA := f.createInvoices(t, paygatev1.InvoicePaid, paygatev1.InvoiceVoid, paygatev1.InvoicePaid, paygatev1.InvoiceOpen)
	f.clock.Step(time.Second)
	subB, invB := f.createInvoices(t, paygatev1.InvoicePaid, paygatev1.InvoicePaymentFailed)
	closed := []client.Object{invA[0], invA[1], invA[2], invB[0]}

	var targets []string
	for _, id := range append(trxIDs, "trx-"+strings.Repeat("z", 24)) {
		targets = append(targets, "/api/v1/payments/"+id, "/api/v1/verify-payment/"+id)
	}
	for _, id := range append(payoutIDs, uuid.NewString()) {
		targets = append(targets, "/api/v1/payouts/"+id)
	}
	targets = append(targets, listTargets("/api/v1/payments", []string{"", "status=success", "status=failed", "status=pending", "merchant_ref=order-03", "merchant_ref=order-05&status=failed"}, 12)...)
	targets = append(targets, listTargets("/api/v1/payouts", []string{"", "status=success", "status=failed", "status=pending"}, 5)...)
	targets = append(targets, listTargets("/api/v1/billing/invoices", []string{"", "status=paid", "status=void", "status=open", "subscription=" + subA, "subscription=" + subB + "&status=paid"}, 6)...)

	before := render(t, c, targets)
	if got := before["/api/v1/payments?limit=20&offset=0"].body; !strings.Contains(got, `"total":12`) {
		t.Fatalf("the live payment list: %s", got)
	}

	// 1. Every other settled object archived and deleted: the lists merge.
	var half, rest []client.Object
	for i, o := range append(append(append([]client.Object{}, settled...), finished...), closed...) {
		if i%2 == 0 {
			half = append(half, o)
		} else {
			rest = append(rest, o)
		}
	}
	f.archiveObjects(t, true, half...)
	sameAnswers(t, "half archived", before, render(t, c, targets))

	// 2. The rest archived, not deleted yet (an archiver between its commit and its deletes):
	// each counted once.
	f.archiveObjects(t, false, rest...)
	sameAnswers(t, "archived, not deleted", before, render(t, c, targets))

	// 3. The rest deleted: everything settled is in the archive only.
	for _, o := range rest {
		if err := f.k8s.Delete(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	var live paygatev1.PaymentList
	if err := f.k8s.List(context.Background(), &live); err != nil || len(live.Items) != 3 {
		t.Fatalf("live payments: %d (want the two pending and the fixture's), %v", len(live.Items), err)
	}
	sameAnswers(t, "all archived", before, render(t, c, targets))

	// The reads were measured.
	for _, op := range []string{"get_payment", "get_payout", "list_payments", "list_payouts", "list_invoices", "archived_payments"} {
		if n := archiveReads(t, op, "ok"); n == 0 {
			t.Errorf("paygate_archive_read_seconds{operation=%q,result=\"ok\"} has no observation", op)
		}
	}
	if n := archiveReads(t, "get_payment", "not_found"); n == 0 {
		t.Errorf("no not_found observation for get_payment")
	}
}

// archiveReads is how many reads paygate_archive_read_seconds observed for op and result.
func archiveReads(t *testing.T, op, result string) uint64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != "paygate_archive_read_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["operation"] == op && labels["result"] == result {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

// TestCreatesReplayArchivedObjects: a create whose payment (by ref_trx) or payout (by
// Idempotency-Key) was archived and deleted from the cluster answers exactly as it did while the
// object was live, and creates nothing: a keyless duplicate is DUPLICATE_REFERENCE, a retry with
// the key runs the create again and answers with the payment (or payout), the legacy
// initiate-payment likewise, and a push on the settled payment is PAYMENT_NOT_PENDING.
func TestCreatesReplayArchivedObjects(t *testing.T) {
	f := newArchiveFixture(t, openArchive(t, pgtest.NewDatabase(t)))
	c := f.as(t, f.duka)
	const (
		keyless = `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"order-keyless","customer_phone":"+255712345678"}`
		keyed   = `{"payment_amount":2500,"currency_code":"TZS","ref_trx":"order-keyed","payment_mode":"push","customer_phone":"+255712345678"}`
		legacy  = `{"payment_amount":1200,"currency_code":"TZS","ref_trx":"order-legacy","success_redirect":"https://duka.example/ok","cancel_redirect":"https://duka.example/cancel","ipn_url":"https://duka.example/ipn"}`
	)
	key := func(k string) http.Header { return http.Header{"Idempotency-Key": {k}} }
	requests := []struct {
		name, method, target, body string
		header                     http.Header
	}{
		{"duplicate ref_trx", http.MethodPost, "/api/v1/payments", keyless, nil},
		{"the key again", http.MethodPost, "/api/v1/payments", keyed, key("key-keyed")},
		{"legacy duplicate", http.MethodPost, "/api/v1/initiate-payment", legacy, nil},
		{"legacy with its key", http.MethodPost, "/api/v1/initiate-payment", legacy, key("key-legacy")},
		{"push on a settled payment", http.MethodPost, "/api/v1/payments/" + TrxID("uid-duka", paygatev1.EnvironmentSandbox, "order-keyless") + "/push", `{"customer_phone":"+255712345678"}`, nil},
		{"payout retried with its key", http.MethodPost, "/api/v1/payouts", `{"amount":2000}`, key("payout-key")},
	}

	// First creates. The legacy payment with a key is created with it; the keyless legacy
	// duplicate then collides with it.
	for _, r := range []struct {
		target, body string
		header       http.Header
	}{{"/api/v1/payments", keyless, nil}, {"/api/v1/payments", keyed, key("key-keyed")}, {"/api/v1/initiate-payment", legacy, key("key-legacy")}} {
		if got := do(t, c, http.MethodPost, r.target, r.body, r.header); got.status != http.StatusOK {
			t.Fatalf("create %s: %s", r.body, got)
		}
	}
	payout := f.createPayout(t, c, "2000", "payout-key")
	var payments paygatev1.PaymentList
	if err := f.k8s.List(context.Background(), &payments, client.InNamespace("shop")); err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for i := range payments.Items {
		p := &payments.Items[i]
		if p.Name == f.settledTrxID {
			continue
		}
		f.settle(t, p, i%2 == 0)
		objs = append(objs, p)
	}
	f.finishPayout(t, payout, true)
	objs = append(objs, payout)

	// answers sends every request, each Idempotency-Key's record without its stored answer and
	// released (the first request ended without one), so each runs its create again.
	answers := func() map[string]exchange {
		clearStoredAnswers(t, f.k8s)
		out := map[string]exchange{}
		for _, r := range requests {
			out[r.name] = do(t, c, r.method, r.target, r.body, r.header)
		}
		return out
	}
	live := answers()
	for name, want := range map[string]int{"duplicate ref_trx": 409, "the key again": 200, "legacy duplicate": 409,
		"legacy with its key": 200, "push on a settled payment": 409, "payout retried with its key": 200} {
		if live[name].status != want {
			t.Fatalf("%s, live: %s, want %d", name, live[name], want)
		}
	}

	f.archiveObjects(t, true, objs...)
	archived := answers()
	for _, r := range requests {
		if archived[r.name] != live[r.name] {
			t.Errorf("%s: archived answers\n%s\nlive answered\n%s", r.name, archived[r.name], live[r.name])
		}
	}
	var left paygatev1.PaymentList
	if err := f.k8s.List(context.Background(), &left); err != nil || len(left.Items) != 1 {
		t.Errorf("payments in the cluster after the replays: %d (want only the fixture's), %v", len(left.Items), err)
	}
	if n := len(f.payouts(t)); n != 0 {
		t.Errorf("payouts in the cluster after the retry: %d, want 0", n)
	}

	// A payment with a new reference is still created.
	if got := do(t, c, http.MethodPost, "/api/v1/payments", strings.Replace(keyless, "order-keyless", "order-new", 1), nil); got.status != http.StatusOK {
		t.Errorf("a new reference: %s", got)
	}
}

// TestArchivedRecordsAreTheirMerchants: an archived payment or payout is another merchant's, or
// another environment's, exactly as a live one: not found, and in no one else's list.
func TestArchivedRecordsAreTheirMerchants(t *testing.T) {
	f := newArchiveFixture(t, openArchive(t, pgtest.NewDatabase(t)))
	c := f.as(t, f.duka)
	p := f.createPayment(t, c, "order-mine", "1500")
	f.settle(t, p, true)
	po := f.createPayout(t, c, "2000", "")
	f.finishPayout(t, po, true)
	// duka's production payment, archived: not duka's sandbox's.
	prodRef := "order-prod"
	prod := &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: TrxID("uid-duka", paygatev1.EnvironmentProduction, prodRef),
			Labels: map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "production"}},
		Spec: paygatev1.PaymentSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentProduction,
			MerchantReference: prodRef, Amount: "1500.00", Currency: "TZS", Mode: paygatev1.PaymentModeHosted,
			ExpiresAt: metav1.NewTime(f.clock.Now())},
	}
	if err := (stampingWriter{Writer: f.k8s, now: f.clock.Now}).Create(context.Background(), prod); err != nil {
		t.Fatal(err)
	}
	f.settle(t, prod, true)

	others := f.as(t, f.newcomer) // another merchant of the namespace, in sandbox
	unknownPayment := do(t, others, http.MethodGet, "/api/v1/payments/trx-"+strings.Repeat("q", 24), "", nil)
	unknownPayout := do(t, others, http.MethodGet, "/api/v1/payouts/"+uuid.NewString(), "", nil)
	emptyPayments := do(t, others, http.MethodGet, "/api/v1/payments", "", nil)
	emptyPayouts := do(t, others, http.MethodGet, "/api/v1/payouts", "", nil)
	if unknownPayment.status != 404 || unknownPayout.status != 404 || !strings.Contains(emptyPayments.body, `"total":0`) {
		t.Fatalf("the other merchant's baseline: %s %s %s", unknownPayment, unknownPayout, emptyPayments)
	}
	f.archiveObjects(t, true, p, po, prod)

	for _, tc := range []struct {
		name   string
		c      *paygate.Client
		target string
		want   exchange
	}{
		{"another merchant's payment", others, "/api/v1/payments/" + p.Name, unknownPayment},
		{"another merchant's verification", others, "/api/v1/verify-payment/" + p.Name, unknownPayment},
		{"another merchant's payout", others, "/api/v1/payouts/" + po.Name, unknownPayout},
		{"another merchant's payment list", others, "/api/v1/payments", emptyPayments},
		{"another merchant's payout list", others, "/api/v1/payouts", emptyPayouts},
		{"the production payment from sandbox", c, "/api/v1/payments/" + prod.Name, unknownPayment},
	} {
		if got := do(t, tc.c, http.MethodGet, tc.target, "", nil); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	mine := do(t, c, http.MethodGet, "/api/v1/payments", "", nil)
	if !strings.Contains(mine.body, `"total":2`) || strings.Contains(mine.body, prodRef) {
		t.Errorf("duka's sandbox list: %s, want its payment and the fixture's, not the production one", mine)
	}
}

// TestArchiveDown: with the archive's database stopped, what is live is answered as usual; what
// needs the archive (an id not live, a list that may hold archived records, a create that must
// know whether its name is taken) answers 503 SERVICE_UNAVAILABLE in the error shape, never 500,
// never not found, and creates nothing; the logs say why without the DSN's password.
func TestArchiveDown(t *testing.T) {
	srv := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, err := srv.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const password = "hunter2-not-logged"
	dsn = strings.Replace(dsn, "postgres://postgres@", "postgres://postgres:"+password+"@", 1) // trust authentication ignores it
	f := newArchiveFixture(t, openArchive(t, dsn))
	c := f.as(t, f.duka)
	archived := f.createPayment(t, c, "order-archived", "1500")
	f.settle(t, archived, true)
	settledLive := f.createPayment(t, c, "order-settled-live", "1600")
	f.settle(t, settledLive, false)
	pending := f.createPayment(t, c, "order-pending", "1700")
	po := f.createPayout(t, c, "2000", "")
	f.finishPayout(t, po, true)
	pendingPayout := f.createPayout(t, c, "2100", "")
	f.archiveObjects(t, true, archived, po)
	if got := do(t, c, http.MethodGet, "/api/v1/payments/"+archived.Name, "", nil); got.status != 200 {
		t.Fatalf("the archived payment while the archive is up: %s", got)
	}

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	unavailable := exchange{503, `{"error":"SERVICE_UNAVAILABLE","message":"Records cannot be read at the moment; try again shortly."}`}
	for _, tc := range []struct {
		name, method, target, body string
		status                     int
	}{
		{"a live pending payment", "GET", "/api/v1/payments/" + pending.Name, "", 200},
		{"a live settled payment", "GET", "/api/v1/verify-payment/" + settledLive.Name, "", 200},
		{"a live payout", "GET", "/api/v1/payouts/" + pendingPayout.Name, "", 200},
		{"the pending payments", "GET", "/api/v1/payments?status=pending", "", 200},
		{"the pending payouts", "GET", "/api/v1/payouts?status=pending", "", 200},
		{"the open invoices", "GET", "/api/v1/billing/invoices?status=open", "", 200},
		{"a push on a live payment", "POST", "/api/v1/payments/" + pending.Name + "/push", `{"customer_phone":"+255712345678"}`, 200},
		{"the balance", "GET", "/api/v1/balance", "", 200},
		{"an archived payment", "GET", "/api/v1/payments/" + archived.Name, "", 503},
		{"an archived verification", "GET", "/api/v1/verify-payment/" + archived.Name, "", 503},
		{"an archived payout", "GET", "/api/v1/payouts/" + po.Name, "", 503},
		{"an unknown payment", "GET", "/api/v1/payments/trx-" + strings.Repeat("q", 24), "", 503},
		{"a push on an archived payment", "POST", "/api/v1/payments/" + archived.Name + "/push", `{"customer_phone":"+255712345678"}`, 503},
		{"the payment list", "GET", "/api/v1/payments", "", 503},
		{"the settled payments", "GET", "/api/v1/payments?status=success", "", 503},
		{"the payout list", "GET", "/api/v1/payouts", "", 503},
		{"the invoice list", "GET", "/api/v1/billing/invoices", "", 503},
		{"a new payment", "POST", "/api/v1/payments", `{"payment_amount":1800,"currency_code":"TZS","ref_trx":"order-new"}`, 503},
		{"an archived payment's duplicate", "POST", "/api/v1/payments", `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"order-archived"}`, 503},
		{"a payout (its signature is its key)", "POST", "/api/v1/payouts", `{"amount":2200}`, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := do(t, c, tc.method, tc.target, tc.body, nil)
			if got.status != tc.status || (tc.status == 503 && got != unavailable) {
				t.Errorf("%s %s: %s, want %d", tc.method, tc.target, got, tc.status)
			}
		})
	}
	var payments paygatev1.PaymentList
	if err := f.k8s.List(context.Background(), &payments); err != nil || len(payments.Items) != 3 {
		t.Errorf("payments in the cluster: %d, want the fixture's and the two live ones (nothing created), %v", len(payments.Items), err)
	}
	if n := len(f.payouts(t)); n != 1 {
		t.Errorf("payouts in the cluster: %d, want the pending one (nothing created)", n)
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "the archive cannot be read") {
		t.Errorf("no log says the archive cannot be read:\n%s", logs)
	}
	if strings.Contains(logs, password) || strings.Contains(logs, "panic") {
		t.Errorf("the logs hold the DSN's password or a panic:\n%s", logs)
	}
	if archiveReads(t, "get_payment", "error") == 0 || archiveReads(t, "list_payments", "error")+archiveReads(t, "archived_payments", "error") == 0 {
		t.Errorf("the failed reads were not measured")
	}
}

// TestArchivedRefundsReadExactlyAsLive: refunds, and the payments they refund, read through every
// route, then archived (committed, then deleted from the cluster) and read again byte for byte;
// a refund of an archived payment counts its archived refunds against what is left.
func TestArchivedRefundsReadExactlyAsLive(t *testing.T) {
	store := openArchive(t, pgtest.NewDatabase(t))
	f := newRefundFixture(t, func(o *Options) { o.Archive = store })
	ctx := t.Context()
	c := f.as(t, f.duka, true)

	trxA := f.payment(t, "duka", paygatev1.EnvironmentSandbox, "order-a", "1000", paygatev1.PaymentSuccess, "tz-mpesa")
	trxB := f.payment(t, "duka", paygatev1.EnvironmentSandbox, "order-b", "2000", paygatev1.PaymentSuccess, "tz-mpesa")
	var ids []string
	for i, r := range []struct {
		trx, amount string
		phase       paygatev1.RefundPhase
	}{{trxA, "300", paygatev1.RefundSuccess}, {trxA, "200", paygatev1.RefundFailed}, {trxB, "2000", paygatev1.RefundSuccess}, {trxA, "100", paygatev1.RefundSuccess}} {
		f.clock.Step(time.Duration(i%2) * time.Second)
		rf, err := c.CreateRefund(ctx, r.trx, paygate.RefundRequest{Amount: json.Number(r.amount)}, "refund-"+strconv.Itoa(i))
		if err != nil {
			t.Fatalf("refund %d: %v", i, err)
		}
		reason := ""
		if r.phase == paygatev1.RefundFailed {
			reason = string(paygatev1.RefundInsufficientBalance)
		}
		f.setPhase(t, rf.ID, r.phase, reason)
		ids = append(ids, rf.ID)
	}

	targets := listTargets("/api/v1/refunds", []string{"", "status=success", "status=failed", "status=pending", "payment=" + trxA,
		"payment=" + trxA + "&status=success", "payment=" + trxB, "payment=trx-" + strings.Repeat("z", 24)}, 4)
	for _, id := range append(slices.Clone(ids), uuid.NewString()) {
		targets = append(targets, "/api/v1/refunds/"+id)
	}
	for _, trx := range []string{trxA, trxB} {
		targets = append(targets, "/api/v1/payments/"+trx, "/api/v1/verify-payment/"+trx)
	}
	targets = append(targets, "/api/v1/payments", "/api/v1/payments?status=success")
	before := render(t, c, targets)
	if got := before["/api/v1/payments/"+trxA].body; !strings.Contains(got, `"amount_refunded":400.00`) || !strings.Contains(got, `"refund_state":"partial"`) {
		t.Fatalf("payment A before: %s", got)
	}
	if got := before["/api/v1/refunds?limit=20&offset=0"].body; !strings.Contains(got, `"total":4`) {
		t.Fatalf("the live refund list: %s", got)
	}

	// The payments and their refunds archived, not deleted yet: each counted once.
	var b archive.Batch
	var objs []client.Object
	for _, trx := range []string{trxA, trxB} {
		p := &paygatev1.Payment{}
		if err := f.k8s.Get(ctx, client.ObjectKey{Namespace: "shop", Name: trx}, p); err != nil {
			t.Fatal(err)
		}
		p.UID = types.UID("uid-" + trx) // the fake cluster leaves UIDs empty
		if err := f.k8s.Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		b.Payments = append(b.Payments, *p)
		objs = append(objs, p)
	}
	for _, id := range ids {
		rf := f.stored(t, id)
		rf.UID = types.UID("uid-" + id)
		if err := f.k8s.Update(ctx, rf); err != nil {
			t.Fatal(err)
		}
		b.Refunds = append(b.Refunds, *rf)
		objs = append(objs, rf)
	}
	if _, err := store.Archive(ctx, b); err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, "archived, not deleted", before, render(t, c, targets))

	// Deleted: served from the archive alone.
	for _, o := range objs {
		if err := f.k8s.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.refunds(t)); n != 0 {
		t.Fatalf("%d refunds still live", n)
	}
	sameAnswers(t, "all archived", before, render(t, c, targets))

	// A refund of the archived payment A: 400.00 of its 1000.00 went back (the failed one does not
	// count), so 600.00 is left.
	_, err := c.CreateRefund(ctx, trxA, paygate.RefundRequest{Amount: "600.01"}, "")
	expectRefusal(t, "more than is left of an archived payment", err, http.StatusUnprocessableEntity, LabelValidationFailed, "amount")
	rest, err := c.CreateRefund(ctx, trxA, paygate.RefundRequest{}, "")
	if err != nil || rest.Amount != "600.00" {
		t.Fatalf("the rest of an archived payment: %+v, %v", rest, err)
	}
	_, err = c.CreateRefund(ctx, trxB, paygate.RefundRequest{Amount: "1"}, "")
	expectRefusal(t, "a payment refunded in full, in the archive", err, http.StatusUnprocessableEntity, LabelValidationFailed, "amount")
	for _, op := range []string{"get_refund", "list_refunds", "refunds_of_payments"} {
		if n := archiveReads(t, op, "ok"); n == 0 {
			t.Errorf("paygate_archive_read_seconds{operation=%q,result=\"ok\"} has no observation", op)
		}
	}
}
