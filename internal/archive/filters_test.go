// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package archive

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/pgtest"
)

// The payment list's filters of creation time and customer phone (docs/api.md, GET
// /api/v1/payments) on a real PostgreSQL: the archive selects what the API server's own filter
// selects, in its order, with exact totals.

var filterPhones = []paygatev1.MobileNumber{"", "+255712345678", "+255713000001", "+254712345678"}

// filteredPayments are random terminal payments of m (and of another merchant) over three days,
// several in a second, a quarter without a phone.
func filteredPayments(r *rand.Rand, n int) []paygatev1.Payment {
	var ps []paygatev1.Payment
	for i := range n {
		merchant := []string{"m", "m", "m", "other"}[i%4]
		phase := []paygatev1.PaymentPhase{paygatev1.PaymentSuccess, paygatev1.PaymentFailed}[r.IntN(2)]
		p := payment(i+1, merchant, sandbox, "TZS", phase, "10", "9", r.IntN(72)*3600+r.IntN(3))
		p.Spec.MerchantReference = fmt.Sprintf("ref-%d", i%3)
		p.Spec.Customer.Phone = filterPhones[r.IntN(len(filterPhones))]
		ps = append(ps, p)
	}
	return ps
}

// matches is the API server's filter (apiserver/paymentfilter.go) on f's fields.
func matches(f PaymentFilter, p *paygatev1.Payment) bool {
	return p.Namespace == f.Namespace && p.Spec.MerchantRef.Name == f.Merchant && p.Spec.Environment == f.Environment &&
		(f.Phase == "" || p.Status.Phase == f.Phase) && (f.MerchantReference == "" || p.Spec.MerchantReference == f.MerchantReference) &&
		(f.CustomerPhone == "" || string(p.Spec.Customer.Phone) == f.CustomerPhone) &&
		(f.CreatedFrom.IsZero() || !p.CreationTimestamp.Time.Before(f.CreatedFrom)) &&
		(f.CreatedTo.IsZero() || p.CreationTimestamp.Time.Before(f.CreatedTo))
}

// apiOrder is the payment list's order (apiserver/payments.go comparePayments).
func apiOrder(a, b paygatev1.Payment) int {
	if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(string(a.UID), string(b.UID))
}

func TestPaymentListFiltersOfDatesAndPhones(t *testing.T) {
	s := newStore(t)
	r := rand.New(rand.NewPCG(29, 11))
	ps := filteredPayments(r, 240)
	if _, err := s.Archive(ctx(t), Batch{Payments: ps}); err != nil {
		t.Fatal(err)
	}
	day := func(d int) time.Time { return time.Date(2026, 3, 1+d, 0, 0, 0, 0, time.UTC) }
	at := func(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }
	bucket := PaymentFilter{Namespace: "demo", Merchant: "m", Environment: sandbox}
	with := func(mod func(*PaymentFilter)) PaymentFilter { f := bucket; mod(&f); return f }
	filters := []PaymentFilter{
		with(func(f *PaymentFilter) { f.CustomerPhone = "+255712345678" }),
		with(func(f *PaymentFilter) { f.CustomerPhone = "+255799999999" }),
		with(func(f *PaymentFilter) { f.CustomerPhone = "+254712345678"; f.Phase = paygatev1.PaymentFailed }),
		with(func(f *PaymentFilter) { f.CreatedFrom, f.CreatedTo = day(1), day(2) }),
		with(func(f *PaymentFilter) { f.CreatedFrom = at(24*3600 + 1) }), // a tie's second: from is inclusive
		with(func(f *PaymentFilter) { f.CreatedTo = at(24*3600 + 1) }),   // and to exclusive
		with(func(f *PaymentFilter) { f.CreatedFrom, f.CreatedTo = at(10*3600), at(10*3600+1) }),
		with(func(f *PaymentFilter) { f.CreatedFrom, f.CreatedTo, f.Phase = day(0), day(1), paygatev1.PaymentSuccess }),
		with(func(f *PaymentFilter) {
			f.CreatedFrom, f.CreatedTo, f.CustomerPhone, f.MerchantReference = at(3600), day(2), "+255713000001", "ref-1"
		}),
		with(func(f *PaymentFilter) { f.CreatedFrom, f.CreatedTo = day(5), day(6) }),
		{Namespace: "demo", Merchant: "other", Environment: sandbox, CustomerPhone: "+255712345678", CreatedFrom: day(1)},
	}
	for _, f := range filters {
		want := slices.SortedFunc(slices.Values(slices.DeleteFunc(slices.Clone(ps), func(p paygatev1.Payment) bool { return !matches(f, &p) })), apiOrder)
		pages(t, fmt.Sprintf("payments %+v", f), want, func(limit, offset int) (Page[paygatev1.Payment], error) {
			return s.ListPayments(ctx(t), f, limit, offset)
		})
	}
	// A phone's payments are read through the index of 00005, in the list's order.
	plan := explain(t, s, with(func(f *PaymentFilter) { f.CustomerPhone = "+255712345678"; f.CreatedFrom = day(1) }))
	if !strings.Contains(plan, "payments_list_phone_ordered") || strings.Contains(plan, "Sort") {
		t.Errorf("a phone's page is not read in the order of payments_list_phone_ordered:\n%s", plan)
	}
}

// explain is the plan of a page of f's payments, with the table's statistics and sequential scans
// off (the table is small).
func explain(t *testing.T, s *Store, f PaymentFilter) string {
	t.Helper()
	if _, err := s.pool.Exec(ctx(t), "ANALYZE payments"); err != nil {
		t.Fatal(err)
	}
	var w where
	w.eq("namespace", f.Namespace)
	w.eq("merchant", f.Merchant)
	w.eq("environment", string(f.Environment))
	w.eq("customer_phone", f.CustomerPhone)
	w.since("creation_timestamp", f.CreatedFrom)
	args := append(slices.Clone(w.args), 20, 0)
	var lines []string
	err := pgx.BeginFunc(ctx(t), s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx(t), "SET LOCAL enable_seqscan = off"); err != nil {
			return err
		}
		rows, err := tx.Query(ctx(t), fmt.Sprintf("EXPLAIN SELECT object FROM payments%s ORDER BY %s LIMIT $%d OFFSET $%d",
			w.sql(), PaymentOrder, len(args)-1, len(args)), args...)
		if err != nil {
			return err
		}
		lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestPhonesOfPaymentsArchivedBeforeTheColumn: rows archived by a schema without customer_phone
// (and by an archiver of that release) are found by their phone once 00005 is applied.
func TestPhonesOfPaymentsArchivedBeforeTheColumn(t *testing.T) {
	s, err := Open(ctx(t), pgtest.NewDatabase(t), Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	db := stdlib.OpenDBFromPool(s.pool)
	t.Cleanup(func() { _ = db.Close() })
	migrateTo(t, s, db, 4)
	ps := filteredPayments(rand.New(rand.NewPCG(5, 29)), 40)
	if _, err := s.Archive(ctx(t), Batch{Payments: ps}); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	f := PaymentFilter{Namespace: "demo", Merchant: "m", Environment: sandbox, CustomerPhone: "+255712345678"}
	want := slices.SortedFunc(slices.Values(slices.DeleteFunc(slices.Clone(ps), func(p paygatev1.Payment) bool { return !matches(f, &p) })), apiOrder)
	if len(want) == 0 {
		t.Fatal("the fixture has no payment of the phone")
	}
	pages(t, "payments archived before 00005", want, func(limit, offset int) (Page[paygatev1.Payment], error) {
		return s.ListPayments(ctx(t), f, limit, offset)
	})
	var empty int
	if err := s.pool.QueryRow(ctx(t), "SELECT count(*) FROM payments WHERE customer_phone = ''").Scan(&empty); err != nil {
		t.Fatal(err)
	}
	if n := len(slices.DeleteFunc(slices.Clone(ps), func(p paygatev1.Payment) bool { return p.Spec.Customer.Phone != "" })); empty != n {
		t.Errorf("%d rows without a phone, want %d", empty, n)
	}
}

// migrateTo applies the migrations up to version.
func migrateTo(t *testing.T, s *Store, db *sql.DB, version int64) {
	t.Helper()
	p, err := s.provider(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx(t), version); err != nil {
		t.Fatal(err)
	}
}
