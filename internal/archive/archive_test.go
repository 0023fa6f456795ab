// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/pgtest"
)

const (
	sandbox    = paygatev1.EnvironmentSandbox
	production = paygatev1.EnvironmentProduction
)

func TestMigrateFromEmptyIsIdempotentAndConcurrent(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	s, err := Open(context.Background(), dsn, Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx(t)); err != nil || v != 0 {
		t.Fatalf("empty database: version %d, %v", v, err)
	}
	// Several managers starting at once all migrate; the advisory lock orders them.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			o, err := Open(context.Background(), dsn, Options{MaxConns: 2})
			if err != nil {
				errs[i] = err
				return
			}
			defer o.Close()
			errs[i] = o.Migrate(ctx(t))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx(t)); err != nil { // again: nothing to do
		t.Fatal(err)
	}
	if v, err := s.SchemaVersion(ctx(t)); err != nil || v != 6 {
		t.Fatalf("migrated database: version %d, %v", v, err)
	}
	for _, k := range Kinds {
		if n, err := s.Count(ctx(t), k); err != nil || n != 0 {
			t.Fatalf("%s: %d rows, %v", k, n, err)
		}
	}
	if cf, err := s.AllCarriedForward(ctx(t)); err != nil || len(cf) != 0 {
		t.Fatalf("carried_forward: %v, %v", cf, err)
	}
	// The documented indexes exist.
	var idx []string
	rows, err := s.Pool().Query(ctx(t), "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		idx = append(idx, n)
	}
	for _, want := range []string{"payments_list_ordered", "payments_list_phase_ordered", "payments_reference", "payments_name", "payouts_list_ordered", "invoices_list_ordered", "invoices_subscription", "webhook_deliveries_event", "carried_forward_pkey", "archived_live_merchant", "refunds_list_ordered", "refunds_payment", "refunds_name", "payments_list_phone_ordered",
		"webhook_deliveries_list_ordered", "webhook_deliveries_list_phase_ordered", "webhook_deliveries_list_type_ordered", "webhook_delivery_counts_pkey"} {
		if !slices.Contains(idx, want) {
			t.Errorf("index %s missing: %v", want, idx)
		}
	}
}

func TestArchivedObjectsReadBackExactly(t *testing.T) {
	s := newStore(t)
	pay := payment(1, "duka-online", sandbox, "TZS", paygatev1.PaymentSuccess, "1500.50", "1485.50", 0)
	pay.Status.Fee = "15.00"
	pay.TypeMeta = metav1.TypeMeta{APIVersion: "paygate.dev/v1alpha1", Kind: "Payment"}
	pay.Annotations = map[string]string{paygatev1.AnnotationProviderCallback: "success 2026-03-01T10:00:03Z"}
	pay.Finalizers = []string{"paygate.dev/test"}
	pay.Generation = 3
	pay.Spec.Customer = paygatev1.Customer{Name: "Amina Ñandú ☕", Email: "a@example.com", Phone: "+255712345678"}
	pay.Spec.Description = `quotes " and \ backslash, <tags> & unicode 🧾`
	pay.Spec.AllowPaymentMethods = []string{"mpesa", "tigo"}
	pay.Spec.Gateways = []paygatev1.GatewayCode{"mpesa-tz", "tigo-tz"}
	pay.Spec.PushRequest = &paygatev1.PushRequest{Sequence: 2, Phone: "+255712345678", Gateway: "mpesa-tz", RequestedAt: *micros(999_999)}
	pay.Status.Gateway = "mpesa-tz"
	pay.Status.Remark = paygatev1.RemarkSandboxTransaction
	pay.Status.ObservedGeneration = 3
	pay.Status.Attempts = []paygatev1.PushAttempt{
		{Sequence: 1, Reference: "demo.trx.1", Gateway: "mpesa-tz", Phase: paygatev1.AttemptFailed, Code: "CUSTOMER_CANCELLED", StartedAt: *micros(1), FinishedAt: micros(2)},
		{Sequence: 2, Reference: "demo.trx.2", Gateway: "mpesa-tz", Phase: paygatev1.AttemptSucceeded, ProviderReference: "MP123", StartedAt: *micros(1_000_001), FinishedAt: micros(4_000_007),
			Fees: paygatev1.GatewayFees{}},
	}
	pay.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Settled", Message: "ok", LastTransitionTime: secs(5), ObservedGeneration: 3}}

	po := payout(2, "duka-online", sandbox, "TZS", paygatev1.PayoutSuccess, "5000", 123_456_789)
	po.Spec.Fee, po.Spec.PayableAmount = "550.00", "4450.00"
	po.Status.ReservedAt = micros(123_456_790)
	po.Status.Attempt = &paygatev1.DisbursementAttempt{Reference: "demo.x", Phase: paygatev1.AttemptSucceeded, StartedAt: *micros(123_456_791), AmbiguousSince: micros(123_456_792), FinishedAt: micros(123_456_793)}
	inv := invoice(3, "duka-online", "sub-abcdefghijklmnopqrstuvwx", 4, paygatev1.InvoicePaid, 10)
	inv.Status.Payments = []string{"trx-aaaaaaaaaaaaaaaaaaaaaaaa"}
	inv.Status.PaidPayment = "trx-aaaaaaaaaaaaaaaaaaaaaaaa"
	voided := secs(11)
	inv.Status.VoidedAt = &voided
	next := secs(12)
	inv.Status.NextAttemptAt = &next
	whd := paygatev1.WebhookDelivery{
		ObjectMeta: metav1.ObjectMeta{Name: "whd-1", Namespace: "demo", UID: "whd-uid-1", CreationTimestamp: secs(20)},
		Spec: paygatev1.WebhookDeliverySpec{EventID: "evt_0123456789abcdef", EventType: "payment.completed",
			MerchantRef: paygatev1.MerchantReference{Name: "duka-online"}, Environment: sandbox,
			Source: paygatev1.EventSource{Kind: "Payment", Name: pay.Name, UID: string(pay.UID)}, URL: "https://example.com/hook",
			Payload: `{"event":"payment.completed","data":{"amount":"1500.50","nested":{"a":[1,2.50,"x"]}}}`},
		Status: paygatev1.WebhookDeliveryStatus{Phase: paygatev1.DeliveryDelivered, TotalAttempts: 2, DeliveredAt: &voided,
			Attempts: []paygatev1.DeliveryAttempt{{Number: 1, At: secs(21), StatusCode: 500, Error: "boom", DurationMillis: 12}, {Number: 2, At: secs(22), StatusCode: 200}}},
	}

	rf := refund(4, "duka-online", sandbox, "TZS", paygatev1.RefundSuccess, pay.Name, "400.25", 123_456_800)
	rf.Spec.Payment.Receipt, rf.Spec.Payment.ProviderReference = "QK12345678", "ws_CO_1"
	rf.Status.ReservedAt = micros(123_456_801)
	rf.Status.Attempt = &paygatev1.DisbursementAttempt{Reference: "demo.rf.1", Phase: paygatev1.AttemptSucceeded, StartedAt: *micros(123_456_802), FinishedAt: micros(123_456_803)}

	res, err := s.Archive(ctx(t), Batch{Payments: []paygatev1.Payment{pay}, Payouts: []paygatev1.Payout{po}, Invoices: []paygatev1.Invoice{inv},
		WebhookDeliveries: []paygatev1.WebhookDelivery{whd}, Refunds: []paygatev1.Refund{rf}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Kinds {
		if res.Inserted[k] != 1 || res.Refreshed[k] != 0 {
			t.Fatalf("result %+v", res)
		}
	}

	gotPay, err := s.GetPayment(ctx(t), "demo", pay.Name)
	if err != nil {
		t.Fatal(err)
	}
	same(t, &pay, gotPay)
	gotPo, err := s.GetPayout(ctx(t), "demo", po.Name)
	if err != nil {
		t.Fatal(err)
	}
	same(t, &po, gotPo)
	gotInv, err := s.GetInvoice(ctx(t), "demo", inv.Name)
	if err != nil {
		t.Fatal(err)
	}
	same(t, &inv, gotInv)
	gotWhd, err := s.GetWebhookDelivery(ctx(t), "demo", whd.Name)
	if err != nil {
		t.Fatal(err)
	}
	same(t, &whd, gotWhd)
	gotRf, err := s.GetRefund(ctx(t), "demo", rf.Name)
	if err != nil {
		t.Fatal(err)
	}
	same(t, &rf, gotRf)
	// Microseconds survive: the API's created_at and updated_at come from them.
	if got := gotPay.Spec.CreatedAt.Time; !got.Equal(pay.Spec.CreatedAt.Time) || got.Nanosecond()%1000 != 0 || got.Nanosecond() == 0 {
		t.Fatalf("createdAt %v, want %v", got, pay.Spec.CreatedAt.Time)
	}

	// The columns hold the exact amounts as NUMERIC, and the times to the microsecond.
	var amount, fee, net string
	var createdAt, settledAt time.Time
	if err := s.Pool().QueryRow(ctx(t), "SELECT amount::text, fee::text, net_amount::text, created_at, settled_at FROM payments WHERE uid = $1", string(pay.UID)).
		Scan(&amount, &fee, &net, &createdAt, &settledAt); err != nil {
		t.Fatal(err)
	}
	if amount != "1500.50" || fee != "15.00" || net != "1485.50" {
		t.Fatalf("amounts %s %s %s", amount, fee, net)
	}
	if !createdAt.Equal(pay.Spec.CreatedAt.Time) || !settledAt.Equal(pay.Status.SettledAt.Time) {
		t.Fatalf("times %v %v", createdAt, settledAt)
	}

	for _, k := range Kinds {
		uid := map[Kind]string{KindPayment: string(pay.UID), KindPayout: string(po.UID), KindInvoice: string(inv.UID), KindWebhookDelivery: string(whd.UID),
			KindRefund: string(rf.UID)}[k]
		if ok, err := s.Has(ctx(t), k, uid); err != nil || !ok {
			t.Fatalf("Has(%s, %s) = %v, %v", k, uid, ok, err)
		}
		if ok, err := s.Has(ctx(t), k, "no-such-uid"); err != nil || ok {
			t.Fatalf("Has(%s, no-such-uid) = %v, %v", k, ok, err)
		}
	}
	if _, err := s.GetPayment(ctx(t), "demo", "trx-missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing payment: %v", err)
	}
	if _, err := s.GetPayment(ctx(t), "other-namespace", pay.Name); !errors.Is(err, ErrNotFound) {
		t.Fatalf("payment of another namespace: %v", err)
	}
	if _, err := s.Has(ctx(t), "secrets; DROP TABLE payments", "x"); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
	cf, err := s.CarriedForward(ctx(t), "demo", "duka-online", sandbox)
	if err != nil {
		t.Fatal(err)
	}
	want := []CarriedForward{{Namespace: "demo", Merchant: "duka-online", Environment: sandbox, Currency: "TZS",
		Settled: money.MustParseAmount("1485.5"), SettledPayments: 1, PaidOut: money.MustParseAmount("5000"), PaidOutPayouts: 1, Payments: 1, Payouts: 1,
		Refunded: money.MustParseAmount("400.25"), RefundedRefunds: 1, Refunds: 1}}
	sameCarried(t, want, cf)
}

// same fails unless got is DeepEqual to want and encodes to the same JSON.
func same(t *testing.T, want, got any) {
	t.Helper()
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if string(wj) != string(gj) {
		t.Fatalf("JSON differs:\nwant %s\ngot  %s", wj, gj)
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("not DeepEqual (same JSON):\nwant %#v\ngot  %#v", want, got)
	}
}

func sameCarried(t *testing.T, want, got []CarriedForward) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("carried forward:\nwant %v\ngot  %v", want, got)
	}
	for i := range want {
		if !want[i].Equal(got[i]) {
			t.Fatalf("carried forward [%d]:\nwant %+v\ngot  %+v", i, want[i], got[i])
		}
	}
}

// checkSums fails unless carried_forward equals the sums recomputed from the archived rows.
func checkSums(t *testing.T, s *Store) []CarriedForward {
	t.Helper()
	cf, err := s.AllCarriedForward(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	sums, err := s.SumArchived(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	sameCarried(t, sums, cf)
	return cf
}

func TestRepeatedArchiveDoesNotCountTwice(t *testing.T) {
	s := newStore(t)
	ps := []paygatev1.Payment{
		payment(1, "m", sandbox, "TZS", paygatev1.PaymentSuccess, "1000", "990", 0),
		payment(2, "m", sandbox, "TZS", paygatev1.PaymentFailed, "700", "", 1),
		payment(3, "m", sandbox, "KES", paygatev1.PaymentSuccess, "10.5", "10.25", 2),
	}
	pos := []paygatev1.Payout{payout(1, "m", sandbox, "TZS", paygatev1.PayoutSuccess, "300", 5), payout(2, "m", sandbox, "TZS", paygatev1.PayoutFailed, "400", 6)}
	if _, err := s.Archive(ctx(t), Batch{Payments: ps, Payouts: pos}); err != nil {
		t.Fatal(err)
	}
	first := checkSums(t, s)

	// The archiver stopped after its commit, before deleting: the objects are still in etcd, and
	// may have changed a little meanwhile (a condition). The next pass archives them again, with
	// one new payment.
	ps[1].Status.Conditions = []metav1.Condition{{Type: paygatev1.ConditionLateSettlement, Status: metav1.ConditionTrue, Reason: "Late", LastTransitionTime: secs(30)}}
	again := append(slices.Clone(ps), payment(4, "m", sandbox, "TZS", paygatev1.PaymentSuccess, "5", "5", 3))
	for range 3 {
		res, err := s.Archive(ctx(t), Batch{Payments: again, Payouts: pos})
		if err != nil {
			t.Fatal(err)
		}
		_ = res
	}
	cf := checkSums(t, s)
	if !cf[0].Settled.Equal(first[0].Settled) || !cf[1].Settled.Equal(money.MustParseAmount("995")) || cf[1].Payments != 3 || cf[1].SettledPayments != 2 ||
		!cf[1].PaidOut.Equal(money.MustParseAmount("300")) || cf[1].Payouts != 2 || cf[1].PaidOutPayouts != 1 {
		t.Fatalf("carried forward after repeats: %+v (first %+v)", cf, first)
	}
	res, err := s.Archive(ctx(t), Batch{Payments: again, Payouts: pos})
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted[KindPayment] != 0 || res.Refreshed[KindPayment] != 4 || res.Refreshed[KindPayout] != 2 {
		t.Fatalf("result of a repeat: %+v", res)
	}
	got, err := s.GetPayment(ctx(t), "demo", ps[1].Name)
	if err != nil {
		t.Fatal(err)
	}
	same(t, &ps[1], got) // the refreshed object, condition included

	// A repeat whose money differs is refused whole: nothing of its batch is committed.
	changed := ps[0]
	changed.Status.NetAmount = "991"
	_, err = s.Archive(ctx(t), Batch{Payments: []paygatev1.Payment{payment(5, "m", sandbox, "TZS", paygatev1.PaymentSuccess, "1", "1", 9), changed}})
	if !errors.Is(err, ErrMoneyChanged) {
		t.Fatalf("changed money: %v", err)
	}
	if ok, err := s.Has(ctx(t), KindPayment, string(uid("pay", 5))); err != nil || ok {
		t.Fatalf("the batch of a refused object was committed: %v %v", ok, err)
	}
	sameCarried(t, cf, checkSums(t, s))
}

func TestArchiveRefusesWhatItCannotKeep(t *testing.T) {
	s := newStore(t)
	ok := payment(1, "m", sandbox, "TZS", paygatev1.PaymentSuccess, "100", "99", 0)
	if _, err := s.ArchivePayments(ctx(t), []paygatev1.Payment{ok}); err != nil {
		t.Fatal(err)
	}
	before := checkSums(t, s)

	pending := payment(2, "m", sandbox, "TZS", paygatev1.PaymentSuccess, "100", "99", 0)
	pending.Status.Phase = paygatev1.PaymentPending
	processing := payout(3, "m", sandbox, "TZS", paygatev1.PayoutProcessing, "10", 1)
	open := invoice(4, "m", "sub-abcdefghijklmnopqrstuvwx", 1, paygatev1.InvoicePaymentFailed, 0)
	waiting := paygatev1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "demo", UID: "w"}, Status: paygatev1.WebhookDeliveryStatus{Phase: paygatev1.DeliveryPending}}
	unreadable := payment(5, "m", sandbox, "TZS", paygatev1.PaymentSuccess, "100", "99", 0)
	unreadable.Status.NetAmount = "1e2"
	noNet := payment(6, "m", sandbox, "TZS", paygatev1.PaymentSuccess, "100", "99", 0)
	noNet.Status.NetAmount = ""
	noUID := payment(7, "m", sandbox, "TZS", paygatev1.PaymentFailed, "100", "", 0)
	noUID.UID = ""
	// Same namespace and name as an archived payment, another UID: names are the API's ids.
	sameName := payment(8, "m", sandbox, "TZS", paygatev1.PaymentSuccess, "100", "99", 0)
	sameName.Name = ok.Name

	for name, b := range map[string]Batch{
		"pending payment":     {Payments: []paygatev1.Payment{pending}},
		"processing payout":   {Payouts: []paygatev1.Payout{processing}},
		"unpaid invoice":      {Invoices: []paygatev1.Invoice{open}},
		"pending delivery":    {WebhookDeliveries: []paygatev1.WebhookDelivery{waiting}},
		"unreadable amount":   {Payments: []paygatev1.Payment{unreadable}},
		"success with no net": {Payments: []paygatev1.Payment{noNet}},
		"no UID":              {Payments: []paygatev1.Payment{noUID}},
		"name taken":          {Payments: []paygatev1.Payment{sameName}},
	} {
		_, err := s.Archive(ctx(t), b)
		if err == nil {
			t.Errorf("%s: archived", name)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
	for _, n := range []int{2, 5, 6, 8} {
		if has, err := s.Has(ctx(t), KindPayment, string(uid("pay", n))); err != nil || has {
			t.Fatalf("payment %d archived: %v %v", n, has, err)
		}
	}
	sameCarried(t, before, checkSums(t, s))
}

// TestConcurrentArchiversCountEachObjectOnce runs several archivers (as several managers, or a
// pass that overlaps a retried one) over overlapping sets.
func TestConcurrentArchiversCountEachObjectOnce(t *testing.T) {
	s := newStore(t)
	var ps []paygatev1.Payment
	var pos []paygatev1.Payout
	want := money.Amount{}
	for i := range 300 {
		phase := paygatev1.PaymentSuccess
		if i%7 == 0 {
			phase = paygatev1.PaymentFailed
		}
		net := fmt.Sprintf("%d.%02d", i, i%100)
		p := payment(i, []string{"a", "b"}[i%2], sandbox, "TZS", phase, paygatev1.Decimal(net), paygatev1.Decimal(net), i)
		if phase == paygatev1.PaymentSuccess {
			want = want.Add(money.MustParseAmount(net))
		}
		ps = append(ps, p)
		if i%10 == 0 {
			pos = append(pos, payout(i, []string{"a", "b"}[i%2], sandbox, "TZS", paygatev1.PayoutSuccess, "1.01", int64(i)))
		}
	}
	const archivers = 6
	var wg sync.WaitGroup
	inserted := make([]int, archivers)
	errs := make([]error, archivers)
	for a := range archivers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(a), 7))
			for round := range 10 {
				var b Batch
				for i := range ps {
					if rng.IntN(3) == 0 || round == 9 {
						b.Payments = append(b.Payments, ps[i])
					}
				}
				for i := range pos {
					if rng.IntN(2) == 0 || round == 9 {
						b.Payouts = append(b.Payouts, pos[i])
					}
				}
				rng.Shuffle(len(b.Payments), func(i, j int) { b.Payments[i], b.Payments[j] = b.Payments[j], b.Payments[i] })
				res, err := s.Archive(context.Background(), b)
				if err != nil {
					errs[a] = err
					return
				}
				inserted[a] += res.Inserted[KindPayment] + res.Inserted[KindPayout]
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range inserted {
		total += n
	}
	if total != len(ps)+len(pos) {
		t.Fatalf("%d objects inserted in all, want %d", total, len(ps)+len(pos))
	}
	cf := checkSums(t, s)
	got := money.Amount{}
	var settled, payments, paidOut int64
	for _, c := range cf {
		got = got.Add(c.Settled)
		settled += c.SettledPayments
		payments += c.Payments
		paidOut += c.PaidOutPayouts
	}
	if !got.Equal(want) || payments != int64(len(ps)) || paidOut != int64(len(pos)) || settled != int64(len(ps)-len(ps)/7-1) {
		t.Fatalf("settled %s (want %s), %d payments, %d settled, %d paid out", got, want, payments, settled, paidOut)
	}
}

func TestCentsSumExactly(t *testing.T) {
	s := newStore(t)
	const n = 1000
	var ps []paygatev1.Payment
	var pos []paygatev1.Payout
	for i := range n {
		ps = append(ps, payment(i, "m", production, "USD", paygatev1.PaymentSuccess, "0.01", "0.01", i))
		ps = append(ps, payment(n+i, "m", production, "KES", paygatev1.PaymentSuccess, "0.1", "0.1", i))
		if i%10 == 0 {
			pos = append(pos, payout(i, "m", production, "USD", paygatev1.PayoutSuccess, "0.03", int64(i)))
		}
	}
	// In small batches, as an archiver does.
	for i := 0; i < len(ps); i += 97 {
		if _, err := s.ArchivePayments(ctx(t), ps[i:min(i+97, len(ps))]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ArchivePayouts(ctx(t), pos); err != nil {
		t.Fatal(err)
	}
	cf, err := s.CarriedForward(ctx(t), "demo", "m", production)
	if err != nil {
		t.Fatal(err)
	}
	if len(cf) != 2 || cf[0].Currency != "KES" || cf[0].Settled.String() != "100" || cf[1].Currency != "USD" ||
		cf[1].Settled.String() != "10" || cf[1].PaidOut.String() != "3" || cf[1].SettledPayments != n || cf[1].PaidOutPayouts != n/10 {
		t.Fatalf("carried forward %+v", cf)
	}
	// And in the database, as NUMERIC text.
	var settled string
	if err := s.Pool().QueryRow(ctx(t), "SELECT settled::text FROM carried_forward WHERE currency = 'USD'").Scan(&settled); err != nil {
		t.Fatal(err)
	}
	if settled != "10.00" {
		t.Fatalf("settled %s", settled)
	}
	if other, err := s.CarriedForward(ctx(t), "demo", "m", sandbox); err != nil || len(other) != 0 {
		t.Fatalf("sandbox: %v %v", other, err)
	}
	checkSums(t, s)
}

func TestListsFollowTheAPIOrderAndPagesAreStable(t *testing.T) {
	s := newStore(t)
	var ps []paygatev1.Payment
	var pos []paygatev1.Payout
	var invs []paygatev1.Invoice
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 120 {
		merchant := []string{"m", "m", "other"}[i%3]
		env := sandbox
		if merchant == "other" {
			env = production
		}
		phase := []paygatev1.PaymentPhase{paygatev1.PaymentSuccess, paygatev1.PaymentFailed}[rng.IntN(2)]
		// Many share a second: the name breaks the tie.
		p := payment(rng.IntN(1_000_000), merchant, env, "TZS", phase, "10", "9", rng.IntN(8))
		p.Spec.MerchantReference = fmt.Sprintf("ref-%d", i%5)
		ps = append(ps, p)
		po := payout(i, merchant, env, "TZS", []paygatev1.PayoutPhase{paygatev1.PayoutSuccess, paygatev1.PayoutFailed}[rng.IntN(2)], "1", int64(rng.IntN(5))*1_000_000+int64(rng.IntN(3)))
		pos = append(pos, po)
		sub := fmt.Sprintf("sub-%024d", rng.IntN(4))
		invs = append(invs, invoice(i, merchant, sub, int32(i+1), []paygatev1.InvoicePhase{paygatev1.InvoicePaid, paygatev1.InvoiceVoid}[rng.IntN(2)], rng.IntN(3)))
	}
	ps = slices.CompactFunc(slices.SortedFunc(slices.Values(ps), func(a, b paygatev1.Payment) int { return strings.Compare(a.Name, b.Name) }),
		func(a, b paygatev1.Payment) bool { return a.Name == b.Name })
	if _, err := s.Archive(ctx(t), Batch{Payments: ps, Payouts: pos, Invoices: invs}); err != nil {
		t.Fatal(err)
	}

	// The API server's comparators (apiserver/payments.go, payouts.go, billing.go).
	payOrder := func(a, b paygatev1.Payment) int {
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	}
	poOrder := func(a, b paygatev1.Payout) int {
		if c := b.Spec.CreatedAt.Compare(a.Spec.CreatedAt.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	}
	invOrder := func(a, b paygatev1.Invoice) int {
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		if c := strings.Compare(a.Spec.SubscriptionRef.Name, b.Spec.SubscriptionRef.Name); c != 0 {
			return c
		}
		return int(b.Spec.Period - a.Spec.Period)
	}

	for _, f := range []PaymentFilter{
		{Namespace: "demo", Merchant: "m", Environment: sandbox},
		{Namespace: "demo", Merchant: "m", Environment: sandbox, Phase: paygatev1.PaymentSuccess},
		{Namespace: "demo", Merchant: "other", Environment: production, Phase: paygatev1.PaymentFailed},
		{Namespace: "demo", Merchant: "m", Environment: sandbox, MerchantReference: "ref-1"},
		{Namespace: "elsewhere", Merchant: "m", Environment: sandbox},
	} {
		want := slices.SortedFunc(slices.Values(slices.DeleteFunc(slices.Clone(ps), func(p paygatev1.Payment) bool {
			return p.Namespace != f.Namespace || p.Spec.MerchantRef.Name != f.Merchant || p.Spec.Environment != f.Environment ||
				(f.Phase != "" && p.Status.Phase != f.Phase) || (f.MerchantReference != "" && p.Spec.MerchantReference != f.MerchantReference)
		})), payOrder)
		pages(t, fmt.Sprintf("payments %+v", f), want, func(limit, offset int) (Page[paygatev1.Payment], error) {
			return s.ListPayments(ctx(t), f, limit, offset)
		})
	}
	for _, f := range []PayoutFilter{
		{Namespace: "demo", Merchant: "m", Environment: sandbox},
		{Namespace: "demo", Merchant: "other", Environment: production, Phase: paygatev1.PayoutSuccess},
	} {
		want := slices.SortedFunc(slices.Values(slices.DeleteFunc(slices.Clone(pos), func(p paygatev1.Payout) bool {
			return p.Spec.MerchantRef.Name != f.Merchant || p.Spec.Environment != f.Environment || (f.Phase != "" && p.Status.Phase != f.Phase)
		})), poOrder)
		pages(t, fmt.Sprintf("payouts %+v", f), want, func(limit, offset int) (Page[paygatev1.Payout], error) {
			return s.ListPayouts(ctx(t), f, limit, offset)
		})
	}
	for _, f := range []InvoiceFilter{
		{Namespace: "demo", Merchant: "m", Environment: sandbox},
		{Namespace: "demo", Merchant: "m", Environment: sandbox, Subscription: fmt.Sprintf("sub-%024d", 2)},
		{Namespace: "demo", Merchant: "m", Environment: sandbox, Phase: paygatev1.InvoiceVoid},
	} {
		want := slices.SortedFunc(slices.Values(slices.DeleteFunc(slices.Clone(invs), func(i paygatev1.Invoice) bool {
			return i.Spec.MerchantRef.Name != f.Merchant || i.Spec.Environment != f.Environment ||
				(f.Phase != "" && i.Status.Phase != f.Phase) || (f.Subscription != "" && i.Spec.SubscriptionRef.Name != f.Subscription)
		})), invOrder)
		pages(t, fmt.Sprintf("invoices %+v", f), want, func(limit, offset int) (Page[paygatev1.Invoice], error) {
			return s.ListInvoices(ctx(t), f, limit, offset)
		})
	}
	if _, err := s.ListPayments(ctx(t), PaymentFilter{}, 0, 0); err == nil {
		t.Fatal("limit 0 accepted")
	}
}

// pages reads the whole list in pages of several sizes and checks each against want.
func pages[T any](t *testing.T, what string, want []T, list func(limit, offset int) (Page[T], error)) {
	t.Helper()
	for _, limit := range []int{1, 7, 20, 100} {
		var all []T
		for offset := 0; ; offset += limit {
			p, err := list(limit, offset)
			if err != nil {
				t.Fatal(err)
			}
			if p.Total != len(want) {
				t.Fatalf("%s: total %d, want %d", what, p.Total, len(want))
			}
			if len(p.Items) == 0 {
				break
			}
			all = append(all, p.Items...)
		}
		if len(all) != len(want) {
			t.Fatalf("%s, pages of %d: %d items, want %d", what, limit, len(all), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(all[i], want[i]) {
				wj, _ := json.Marshal(want[i])
				gj, _ := json.Marshal(all[i])
				t.Fatalf("%s, pages of %d: item %d\nwant %s\ngot  %s", what, limit, i, wj, gj)
			}
		}
	}
	if len(want) == 0 {
		t.Logf("%s: empty", what)
	}
}

func TestDatabaseDownReturnsErrors(t *testing.T) {
	srv := pgtest.Start(t)
	s := openMigrated(t, srv.DSN)
	p := payment(1, "m", sandbox, "TZS", paygatev1.PaymentSuccess, "100", "99", 0)
	if _, err := s.ArchivePayments(ctx(t), []paygatev1.Payment{p}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}

	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	calls := map[string]func() error{
		"Ping":    func() error { return s.Ping(c) },
		"Migrate": func() error { return s.Migrate(c) },
		"Archive": func() error {
			_, err := s.ArchivePayments(c, []paygatev1.Payment{payment(2, "m", sandbox, "TZS", paygatev1.PaymentSuccess, "1", "1", 0)})
			return err
		},
		"Has": func() error {
			ok, err := s.Has(c, KindPayment, string(p.UID))
			if ok {
				return errors.New("Has said yes")
			}
			return err
		},
		"GetPayment":        func() error { _, err := s.GetPayment(c, "demo", p.Name); return err },
		"ListPayments":      func() error { _, err := s.ListPayments(c, PaymentFilter{Namespace: "demo"}, 10, 0); return err },
		"ListPayouts":       func() error { _, err := s.ListPayouts(c, PayoutFilter{Namespace: "demo"}, 10, 0); return err },
		"ListInvoices":      func() error { _, err := s.ListInvoices(c, InvoiceFilter{Namespace: "demo"}, 10, 0); return err },
		"CarriedForward":    func() error { _, err := s.CarriedForward(c, "demo", "m", sandbox); return err },
		"AllCarriedForward": func() error { _, err := s.AllCarriedForward(c); return err },
		"SumArchived":       func() error { _, err := s.SumArchived(c); return err },
		"Count":             func() error { _, err := s.Count(c, KindPayout); return err },
		"SchemaVersion":     func() error { _, err := s.SchemaVersion(c); return err },
	}
	for name, call := range calls {
		start := time.Now()
		err := call()
		if err == nil {
			t.Errorf("%s: no error with the database down", name)
			continue
		}
		if errors.Is(err, ErrNotFound) {
			t.Errorf("%s: a down database reads as not found: %v", name, err)
		}
		t.Logf("%s (%v): %v", name, time.Since(start).Round(time.Millisecond), err)
	}
}

func TestLedgerViewAndArchivedLive(t *testing.T) {
	s := newStore(t)
	paid := payment(1, "duka", paygatev1.EnvironmentSandbox, "TZS", paygatev1.PaymentSuccess, "1000", "975.00", 1)
	failed := payment(2, "duka", paygatev1.EnvironmentSandbox, "TZS", paygatev1.PaymentFailed, "1000", "", 2)
	other := payment(3, "kahawa", paygatev1.EnvironmentSandbox, "TZS", paygatev1.PaymentSuccess, "500", "487.50", 3)
	po := payout(1, "duka", paygatev1.EnvironmentSandbox, "TZS", paygatev1.PayoutSuccess, "300", 1)
	if _, err := s.Archive(ctx(t), Batch{Payments: []paygatev1.Payment{paid, failed, other}, Payouts: []paygatev1.Payout{po}}); err != nil {
		t.Fatal(err)
	}
	v, err := s.LedgerView(ctx(t), paid.Namespace, "duka", paygatev1.EnvironmentSandbox, LedgerQuery{Payouts: []string{po.Name, "never-archived"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Carried) != 1 || !v.Carried[0].Settled.Equal(money.MustParseAmount("975")) || !v.Carried[0].PaidOut.Equal(money.MustParseAmount("300")) || v.Carried[0].Payments != 2 {
		t.Fatalf("carried = %+v", v.Carried)
	}
	// Archived and not yet deleted from etcd: every one of the merchant's, and only those.
	if !v.Payments[string(paid.UID)] || !v.Payments[string(failed.UID)] || v.Payments[string(other.UID)] || len(v.Payments) != 2 {
		t.Fatalf("live payments = %v", v.Payments)
	}
	if !v.Payouts[string(po.UID)] || len(v.Payouts) != 1 {
		t.Fatalf("live payouts = %v", v.Payouts)
	}
	if !v.PayoutNames[po.Name] || v.PayoutNames["never-archived"] {
		t.Fatalf("payout names = %v", v.PayoutNames)
	}
	entries, err := s.ArchivedLive(ctx(t))
	if err != nil || len(entries) != 4 {
		t.Fatalf("archived_live = %v, %v", entries, err)
	}
	// Forgotten once gone from etcd; archiving again (a pass that stopped before its deletes)
	// records it again, and counts nothing twice.
	if err := s.ForgetLive(ctx(t), []string{string(paid.UID), string(po.UID)}); err != nil {
		t.Fatal(err)
	}
	v, err = s.LedgerView(ctx(t), paid.Namespace, "duka", paygatev1.EnvironmentSandbox, LedgerQuery{})
	if err != nil || len(v.Payments) != 1 || len(v.Payouts) != 0 || len(v.PayoutNames) != 0 {
		t.Fatalf("after forgetting: %+v, %v", v, err)
	}
	if _, err := s.ArchivePayments(ctx(t), []paygatev1.Payment{paid}); err != nil {
		t.Fatal(err)
	}
	v, err = s.LedgerView(ctx(t), paid.Namespace, "duka", paygatev1.EnvironmentSandbox, LedgerQuery{})
	if err != nil || !v.Payments[string(paid.UID)] || !v.Carried[0].Settled.Equal(money.MustParseAmount("975")) {
		t.Fatalf("after archiving again: %+v, %v", v, err)
	}
	checkSums(t, s)
	if err := s.ForgetLive(ctx(t), nil); err != nil {
		t.Fatal(err)
	}
}

// Refunds: archived with their money carried forward once, listed in the API's order (by payment
// too), and in the ledger view: the archived_live entries, the archived names asked about, and what
// a payment's archived successful refunds returned.
func TestArchivedRefunds(t *testing.T) {
	s := newStore(t)
	paid := payment(1, "duka", sandbox, "TZS", paygatev1.PaymentSuccess, "1000", "975.00", 1)
	other := payment(2, "duka", sandbox, "TZS", paygatev1.PaymentSuccess, "1000", "975.00", 2)
	first := refund(1, "duka", sandbox, "TZS", paygatev1.RefundSuccess, paid.Name, "250.50", 10)
	second := refund(2, "duka", sandbox, "TZS", paygatev1.RefundSuccess, paid.Name, "100", 20)
	lost := refund(3, "duka", sandbox, "TZS", paygatev1.RefundFailed, paid.Name, "900", 30)
	elsewhere := refund(4, "duka", sandbox, "TZS", paygatev1.RefundSuccess, other.Name, "75", 40)
	kahawa := refund(5, "kahawa", sandbox, "TZS", paygatev1.RefundSuccess, paid.Name, "1", 50)
	pending := refund(6, "duka", sandbox, "TZS", paygatev1.RefundPending, paid.Name, "1", 60)
	if _, err := s.ArchiveRefunds(ctx(t), []paygatev1.Refund{pending}); !errors.Is(err, ErrNotTerminal) {
		t.Fatalf("a pending refund: %v", err)
	}
	all := []paygatev1.Refund{first, second, lost, elsewhere, kahawa}
	res, err := s.Archive(ctx(t), Batch{Payments: []paygatev1.Payment{paid, other}, Refunds: all})
	if err != nil || res.Inserted[KindRefund] != 5 {
		t.Fatalf("archiving: %+v, %v", res, err)
	}
	// Again (a pass that stopped before its deletes): nothing counted twice.
	if res, err := s.ArchiveRefunds(ctx(t), all); err != nil || res.Refreshed[KindRefund] != 5 || res.Inserted[KindRefund] != 0 {
		t.Fatalf("archiving again: %+v, %v", res, err)
	}
	changed := first
	changed.Spec.Amount = "251"
	if _, err := s.ArchiveRefunds(ctx(t), []paygatev1.Refund{changed}); !errors.Is(err, ErrMoneyChanged) {
		t.Fatalf("a refund whose money changed: %v", err)
	}
	cf, err := s.CarriedForward(ctx(t), "demo", "duka", sandbox)
	if err != nil {
		t.Fatal(err)
	}
	sameCarried(t, []CarriedForward{{Namespace: "demo", Merchant: "duka", Environment: sandbox, Currency: "TZS",
		Settled: money.MustParseAmount("1950"), SettledPayments: 2, Payments: 2,
		Refunded: money.MustParseAmount("425.5"), RefundedRefunds: 3, Refunds: 4}}, cf)
	checkSums(t, s)

	page, err := s.ListRefunds(ctx(t), RefundFilter{Namespace: "demo", Merchant: "duka", Environment: sandbox}, 2, 1)
	if err != nil || page.Total != 4 || len(page.Items) != 2 || page.Items[0].Name != lost.Name || page.Items[1].Name != second.Name {
		t.Fatalf("page = %+v, %v", page, err)
	}
	page, err = s.ListRefunds(ctx(t), RefundFilter{Namespace: "demo", Merchant: "duka", Environment: sandbox, Phase: paygatev1.RefundSuccess, Payment: paid.Name}, 10, 0)
	if err != nil || page.Total != 2 || page.Items[0].Name != second.Name || page.Items[1].Name != first.Name {
		t.Fatalf("the payment's successful refunds = %+v, %v", page, err)
	}
	page, err = s.ListRefunds(ctx(t), RefundFilter{Namespace: "demo", Merchant: "duka", Environment: sandbox, Phase: paygatev1.RefundFailed}, 10, 0)
	if err != nil || page.Total != 1 || page.Items[0].Name != lost.Name {
		t.Fatalf("failed refunds = %+v, %v", page, err)
	}
	byPayment, err := s.RefundsOfPayments(ctx(t), "demo", []string{paid.Name, "trx-none"})
	if err != nil || len(byPayment) != 1 || len(byPayment[paid.Name]) != 4 { // kahawa's names the same trx_id in its fixture
		t.Fatalf("refunds of payments = %v, %v", byPayment, err)
	}

	v, err := s.LedgerView(ctx(t), "demo", "duka", sandbox, LedgerQuery{Refunds: []string{first.Name, pending.Name}, Payments: []string{paid.Name, other.Name, "trx-none"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Refunds) != 4 || !v.Refunds[string(first.UID)] || v.Refunds[string(kahawa.UID)] {
		t.Fatalf("live refunds = %v", v.Refunds)
	}
	if !v.RefundNames[first.Name] || v.RefundNames[pending.Name] || len(v.RefundNames) != 1 {
		t.Fatalf("refund names = %v", v.RefundNames)
	}
	// Only the merchant's own successful refunds count against a payment.
	if len(v.RefundedOf) != 2 || !v.RefundedOf[paid.Name].Equal(money.MustParseAmount("350.5")) || !v.RefundedOf[other.Name].Equal(money.MustParseAmount("75")) {
		t.Fatalf("refunded of = %v", v.RefundedOf)
	}
	if len(v.Carried) != 1 || !v.Carried[0].Refunded.Equal(money.MustParseAmount("425.5")) {
		t.Fatalf("carried = %+v", v.Carried)
	}
}
