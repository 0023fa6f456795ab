// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
)

// ---- single objects ----

// GetPayment returns the archived payment namespace/name (name is its trx_id), or ErrNotFound.
func (s *Store) GetPayment(ctx context.Context, namespace, name string) (*paygatev1.Payment, error) {
	return get[paygatev1.Payment](ctx, s, KindPayment, namespace, name)
}

// GetPayout returns the archived payout namespace/name (name is its id), or ErrNotFound.
func (s *Store) GetPayout(ctx context.Context, namespace, name string) (*paygatev1.Payout, error) {
	return get[paygatev1.Payout](ctx, s, KindPayout, namespace, name)
}

// GetRefund returns the archived refund namespace/name (name is its id), or ErrNotFound.
func (s *Store) GetRefund(ctx context.Context, namespace, name string) (*paygatev1.Refund, error) {
	return get[paygatev1.Refund](ctx, s, KindRefund, namespace, name)
}

// GetInvoice returns the archived invoice namespace/name, or ErrNotFound.
func (s *Store) GetInvoice(ctx context.Context, namespace, name string) (*paygatev1.Invoice, error) {
	return get[paygatev1.Invoice](ctx, s, KindInvoice, namespace, name)
}

// GetWebhookDelivery returns the archived webhook delivery namespace/name, or ErrNotFound.
func (s *Store) GetWebhookDelivery(ctx context.Context, namespace, name string) (*paygatev1.WebhookDelivery, error) {
	return get[paygatev1.WebhookDelivery](ctx, s, KindWebhookDelivery, namespace, name)
}

func get[T any](ctx context.Context, s *Store, kind Kind, namespace, name string) (*T, error) {
	var js []byte
	err := s.pool.QueryRow(ctx, "SELECT object FROM "+string(kind)+" WHERE namespace = $1 AND name = $2", namespace, name).Scan(&js)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("archive: reading %s %s/%s: %w", kind, namespace, name, err)
	}
	obj := new(T)
	if err := json.Unmarshal(js, obj); err != nil {
		return nil, fmt.Errorf("archive: decoding %s %s/%s: %w", kind, namespace, name, err)
	}
	return obj, nil
}

// ---- lists ----

// Page is one page of a list: the items at [offset, offset+limit) of the ordered list, and how
// many items the whole list has, read in one snapshot.
type Page[T any] struct {
	Items []T
	Total int
}

// PaymentFilter selects payments; an empty field selects every value.
type PaymentFilter struct {
	Namespace   string
	Merchant    string
	Environment paygatev1.Environment
	// Phase is the API's status filter (success or failed: archived payments are terminal).
	Phase paygatev1.PaymentPhase
	// MerchantReference is the API's merchant_ref (ref_trx) filter.
	MerchantReference string
	// CustomerPhone is the API's customer_phone filter: spec.customer.phone, E.164.
	CustomerPhone string
	// CreatedFrom (inclusive) and CreatedTo (exclusive) bound metadata.creationTimestamp, the
	// list's order; a zero time is no bound.
	CreatedFrom, CreatedTo time.Time
}

// PayoutFilter selects payouts; an empty field selects every value.
type PayoutFilter struct {
	Namespace   string
	Merchant    string
	Environment paygatev1.Environment
	Phase       paygatev1.PayoutPhase
}

// RefundFilter selects refunds; an empty field selects every value.
type RefundFilter struct {
	Namespace   string
	Merchant    string
	Environment paygatev1.Environment
	Phase       paygatev1.RefundPhase
	// Payment is the refunded payment's trx_id.
	Payment string
}

// InvoiceFilter selects invoices; an empty field selects every value.
type InvoiceFilter struct {
	Namespace   string
	Merchant    string
	Environment paygatev1.Environment
	Phase       paygatev1.InvoicePhase
	// Subscription is the Subscription's name (sub-...), not the API id.
	Subscription string
}

// The orders of the API server's lists (apiserver/payments.go, payouts.go, billing.go), with the
// UID last so that the order is total even across namespaces.
const (
	// PaymentOrder: newest first by metadata.creationTimestamp, then by name (trx_id).
	PaymentOrder = "creation_timestamp DESC, name, uid"
	// PayoutOrder: newest first by spec.createdAt, then by name (id).
	PayoutOrder = "created_at DESC, name, uid"
	// RefundOrder is the payouts' order.
	RefundOrder = PayoutOrder
	// InvoiceOrder: newest first by metadata.creationTimestamp, then by subscription, then
	// latest period first.
	InvoiceOrder = "creation_timestamp DESC, subscription, period DESC, uid"
)

// ListPayments returns a page of the archived payments f selects, in the API's order.
func (s *Store) ListPayments(ctx context.Context, f PaymentFilter, limit, offset int) (Page[paygatev1.Payment], error) {
	var w where
	w.eq("namespace", f.Namespace)
	w.eq("merchant", f.Merchant)
	w.eq("environment", string(f.Environment))
	w.eq("phase", string(f.Phase))
	w.eq("merchant_reference", f.MerchantReference)
	w.eq("customer_phone", f.CustomerPhone)
	w.since("creation_timestamp", f.CreatedFrom)
	w.before("creation_timestamp", f.CreatedTo)
	if f.MerchantReference == "" && f.CustomerPhone == "" && f.CreatedFrom.IsZero() && f.CreatedTo.IsZero() {
		w.total = carriedCount(f.Namespace, f.Merchant, f.Environment, string(f.Phase), "payments", "settled_payments", "success")
	}
	return list[paygatev1.Payment](ctx, s, KindPayment, w, PaymentOrder, limit, offset)
}

// ListPayouts returns a page of the archived payouts f selects, in the API's order.
func (s *Store) ListPayouts(ctx context.Context, f PayoutFilter, limit, offset int) (Page[paygatev1.Payout], error) {
	var w where
	w.eq("namespace", f.Namespace)
	w.eq("merchant", f.Merchant)
	w.eq("environment", string(f.Environment))
	w.eq("phase", string(f.Phase))
	w.total = carriedCount(f.Namespace, f.Merchant, f.Environment, string(f.Phase), "payouts", "paid_out_payouts", "success")
	return list[paygatev1.Payout](ctx, s, KindPayout, w, PayoutOrder, limit, offset)
}

// ListRefunds returns a page of the archived refunds f selects, in the API's order.
func (s *Store) ListRefunds(ctx context.Context, f RefundFilter, limit, offset int) (Page[paygatev1.Refund], error) {
	var w where
	w.eq("namespace", f.Namespace)
	w.eq("merchant", f.Merchant)
	w.eq("environment", string(f.Environment))
	w.eq("phase", string(f.Phase))
	w.eq("payment", f.Payment)
	if f.Payment == "" {
		w.total = carriedCount(f.Namespace, f.Merchant, f.Environment, string(f.Phase), "refunds", "refunded_refunds", "success")
	}
	return list[paygatev1.Refund](ctx, s, KindRefund, w, RefundOrder, limit, offset)
}

// RefundsOfPayments returns, by trx_id, the archived refunds of the payments trxIDs in namespace
// (one indexed query; a payment has a few refunds at most).
func (s *Store) RefundsOfPayments(ctx context.Context, namespace string, trxIDs []string) (map[string][]paygatev1.Refund, error) {
	out := map[string][]paygatev1.Refund{}
	if len(trxIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, "SELECT object FROM refunds WHERE namespace = $1 AND payment = ANY($2) ORDER BY "+RefundOrder, namespace, trxIDs)
	if err != nil {
		return nil, fmt.Errorf("archive: reading the refunds of payments: %w", err)
	}
	objs, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("archive: reading the refunds of payments: %w", err)
	}
	for _, js := range objs {
		var f paygatev1.Refund
		if err := json.Unmarshal(js, &f); err != nil {
			return nil, fmt.Errorf("archive: decoding a refund: %w", err)
		}
		out[f.Spec.Payment.TrxID] = append(out[f.Spec.Payment.TrxID], f)
	}
	return out, nil
}

// ListInvoices returns a page of the archived invoices f selects, in the API's order.
func (s *Store) ListInvoices(ctx context.Context, f InvoiceFilter, limit, offset int) (Page[paygatev1.Invoice], error) {
	var w where
	w.eq("namespace", f.Namespace)
	w.eq("merchant", f.Merchant)
	w.eq("environment", string(f.Environment))
	w.eq("phase", string(f.Phase))
	w.eq("subscription", f.Subscription)
	return list[paygatev1.Invoice](ctx, s, KindInvoice, w, InvoiceOrder, limit, offset)
}

// where is a conjunction of conditions on columns (equal to a value, or a bound of a time).
type where struct {
	conds []string
	args  []any
	// total, when set, counts the selected rows from carried_forward instead of the rows
	// themselves: O(currencies) instead of O(rows) (its counts equal the rows', an invariant
	// SumArchived checks).
	total *countQuery
}

type countQuery struct {
	sql  string
	args []any
}

// carriedCount is the carried_forward count of a merchant's archived payments, payouts or refunds in env
// with phase ("" for all): all counts every row, success the successful ones, failed the rest.
// Nil when the filter does not name a merchant and environment.
func carriedCount(namespace, merchant string, env paygatev1.Environment, phase, all, success, successPhase string) *countQuery {
	if namespace == "" || merchant == "" || env == "" {
		return nil
	}
	expr := all
	switch phase {
	case "":
	case successPhase:
		expr = success
	case "failed":
		expr = all + " - " + success
	default:
		expr = "0" // only terminal objects are archived
	}
	return &countQuery{
		sql:  "SELECT coalesce(sum(" + expr + "), 0) FROM carried_forward WHERE namespace = $1 AND merchant = $2 AND environment = $3",
		args: []any{namespace, merchant, string(env)},
	}
}

func (w *where) eq(col, val string) {
	if val == "" {
		return
	}
	w.args = append(w.args, val)
	w.conds = append(w.conds, fmt.Sprintf("%s = $%d", col, len(w.args)))
}

// since adds col >= t, unless t is zero.
func (w *where) since(col string, t time.Time) {
	if t.IsZero() {
		return
	}
	w.args = append(w.args, t)
	w.conds = append(w.conds, fmt.Sprintf("%s >= $%d", col, len(w.args)))
}

// before adds col < t, unless t is zero.
func (w *where) before(col string, t time.Time) {
	if t.IsZero() {
		return
	}
	w.args = append(w.args, t)
	w.conds = append(w.conds, fmt.Sprintf("%s < $%d", col, len(w.args)))
}

func (w *where) sql() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

func list[T any](ctx context.Context, s *Store, kind Kind, w where, order string, limit, offset int) (Page[T], error) {
	if limit < 1 || offset < 0 {
		return Page[T]{}, fmt.Errorf("archive: listing %s: limit must be positive and offset not negative (got %d, %d)", kind, limit, offset)
	}
	page := Page[T]{Items: []T{}}
	// One snapshot for the page and the total.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		count, countArgs := "SELECT count(*) FROM "+string(kind)+w.sql(), w.args
		if w.total != nil {
			count, countArgs = w.total.sql, w.total.args
		}
		if err := tx.QueryRow(ctx, count, countArgs...).Scan(&page.Total); err != nil {
			return err
		}
		args := append(slices.Clone(w.args), limit, offset)
		rows, err := tx.Query(ctx, fmt.Sprintf("SELECT object FROM %s%s ORDER BY %s LIMIT $%d OFFSET $%d",
			kind, w.sql(), order, len(args)-1, len(args)), args...)
		if err != nil {
			return err
		}
		objs, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if err != nil {
			return err
		}
		for _, js := range objs {
			var obj T
			if err := json.Unmarshal(js, &obj); err != nil {
				return fmt.Errorf("decoding: %w", err)
			}
			page.Items = append(page.Items, obj)
		}
		return nil
	})
	if err != nil {
		return Page[T]{}, fmt.Errorf("archive: listing %s: %w", kind, err)
	}
	return page, nil
}

// ---- carried forward ----

// CarriedForward is what a merchant's archived payments, payouts and refunds add to its balance
// in one environment and currency: add it to the sums over the live objects (docs/ledger.md).
type CarriedForward struct {
	Namespace   string
	Merchant    string
	Environment paygatev1.Environment
	Currency    paygatev1.CurrencyCode
	// Settled is the sum of the net amounts of the archived successful payments.
	Settled money.Amount
	// SettledPayments counts the archived successful payments.
	SettledPayments int64
	// PaidOut is the sum of the amounts of the archived successful payouts.
	PaidOut money.Amount
	// PaidOutPayouts counts the archived successful payouts.
	PaidOutPayouts int64
	// Payments and Payouts count every archived payment and payout, whatever its phase.
	Payments int64
	Payouts  int64
	// Refunded is the sum of the amounts of the archived successful refunds.
	Refunded money.Amount
	// RefundedRefunds counts the archived successful refunds.
	RefundedRefunds int64
	// Refunds counts every archived refund, whatever its phase.
	Refunds int64
}

// Equal reports whether two carried-forward entries are for the same key with the same sums.
func (c CarriedForward) Equal(o CarriedForward) bool {
	return c.key() == o.key() && c.delta().equal(o.delta())
}

func (c CarriedForward) key() cfKey {
	return cfKey{Namespace: c.Namespace, Merchant: c.Merchant, Environment: c.Environment, Currency: c.Currency}
}

func (c CarriedForward) delta() cfDelta {
	return cfDelta{Settled: c.Settled, SettledPayments: c.SettledPayments, PaidOut: c.PaidOut,
		PaidOutPayouts: c.PaidOutPayouts, Payments: c.Payments, Payouts: c.Payouts,
		Refunded: c.Refunded, RefundedRefunds: c.RefundedRefunds, Refunds: c.Refunds}
}

// CarriedForward returns the carried-forward amounts of a merchant in env, one per currency
// that has archived payments, payouts or refunds, by currency.
func (s *Store) CarriedForward(ctx context.Context, namespace, merchant string, env paygatev1.Environment) ([]CarriedForward, error) {
	return s.carriedForward(ctx, " WHERE namespace = $1 AND merchant = $2 AND environment = $3", namespace, merchant, string(env))
}

// AllCarriedForward returns every carried-forward entry, by namespace, merchant, environment
// and currency (the ledger check).
func (s *Store) AllCarriedForward(ctx context.Context) ([]CarriedForward, error) {
	return s.carriedForward(ctx, "")
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (s *Store) carriedForward(ctx context.Context, where string, args ...any) ([]CarriedForward, error) {
	return carriedForwardIn(ctx, s.pool, where, args...)
}

func carriedForwardIn(ctx context.Context, q querier, where string, args ...any) ([]CarriedForward, error) {
	rows, err := q.Query(ctx, `
SELECT namespace, merchant, environment, currency, settled::text, settled_payments, paid_out::text, paid_out_payouts, payments, payouts,
       refunded::text, refunded_refunds, refunds
FROM carried_forward`+where+`
ORDER BY namespace, merchant, environment, currency`, args...)
	if err != nil {
		return nil, fmt.Errorf("archive: reading carried_forward: %w", err)
	}
	out, err := collectCarried(rows)
	if err != nil {
		return nil, fmt.Errorf("archive: reading carried_forward: %w", err)
	}
	return out, nil
}

func collectCarried(rows pgx.Rows) ([]CarriedForward, error) {
	out := []CarriedForward{}
	for rows.Next() {
		var c CarriedForward
		var env, currency, settled, paid, refunded string
		if err := rows.Scan(&c.Namespace, &c.Merchant, &env, &currency, &settled, &c.SettledPayments, &paid, &c.PaidOutPayouts, &c.Payments, &c.Payouts,
			&refunded, &c.RefundedRefunds, &c.Refunds); err != nil {
			rows.Close()
			return nil, err
		}
		c.Environment, c.Currency = paygatev1.Environment(env), paygatev1.CurrencyCode(currency)
		var err error
		if c.Settled, err = money.ParseAmount(settled); err != nil {
			rows.Close()
			return nil, err
		}
		if c.PaidOut, err = money.ParseAmount(paid); err != nil {
			rows.Close()
			return nil, err
		}
		if c.Refunded, err = money.ParseAmount(refunded); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// SumArchived recomputes the carried-forward entries from the archived rows themselves, in one
// snapshot, in AllCarriedForward's order: the ledger check compares the two, and both with the
// Balances.
func (s *Store) SumArchived(ctx context.Context) ([]CarriedForward, error) {
	var out []CarriedForward
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
SELECT namespace, merchant, environment, currency,
       coalesce(sum(net_amount) FILTER (WHERE phase = 'success'), 0)::text, count(*) FILTER (WHERE phase = 'success'),
       '0', 0, count(*), 0, '0', 0, 0
FROM payments GROUP BY 1, 2, 3, 4
UNION ALL
SELECT namespace, merchant, environment, currency,
       '0', 0,
       coalesce(sum(amount) FILTER (WHERE phase = 'success'), 0)::text, count(*) FILTER (WHERE phase = 'success'),
       0, count(*), '0', 0, 0
FROM payouts GROUP BY 1, 2, 3, 4
UNION ALL
SELECT namespace, merchant, environment, currency,
       '0', 0, '0', 0, 0, 0,
       coalesce(sum(amount) FILTER (WHERE phase = 'success'), 0)::text, count(*) FILTER (WHERE phase = 'success'),
       count(*)
FROM refunds GROUP BY 1, 2, 3, 4`)
		if err != nil {
			return err
		}
		parts, err := collectCarried(rows)
		if err != nil {
			return err
		}
		sums := map[cfKey]*cfDelta{}
		for _, p := range parts {
			d := sums[p.key()]
			if d == nil {
				d = &cfDelta{}
				sums[p.key()] = d
			}
			d.add(p.delta())
		}
		for k, d := range sums {
			out = append(out, CarriedForward{Namespace: k.Namespace, Merchant: k.Merchant, Environment: k.Environment, Currency: k.Currency,
				Settled: d.Settled, SettledPayments: d.SettledPayments, PaidOut: d.PaidOut, PaidOutPayouts: d.PaidOutPayouts,
				Payments: d.Payments, Payouts: d.Payouts, Refunded: d.Refunded, RefundedRefunds: d.RefundedRefunds, Refunds: d.Refunds})
		}
		slices.SortFunc(out, func(a, b CarriedForward) int { return a.key().compare(b.key()) })
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive: summing the archived rows: %w", err)
	}
	if out == nil {
		out = []CarriedForward{}
	}
	return out, nil
}

// LedgerView is the archive's part of one merchant's ledger in one environment, read in one
// snapshot: what the archived objects carry forward, and which archived objects may still be in
// etcd (archived_live: committed, not yet seen deleted), so that the balance counts each object
// exactly once, whatever the archiver commits meanwhile.
type LedgerView struct {
	// Carried is the carried-forward entry of each currency.
	Carried []CarriedForward
	// Payments, Payouts and Refunds are the UIDs of the merchant's archived objects that may still
	// be live.
	Payments, Payouts, Refunds map[string]bool
	// PayoutNames and RefundNames are the names, among those the query asked about, that are
	// archived.
	PayoutNames, RefundNames map[string]bool
	// RefundedOf is, by trx_id among the query's Payments, the sum of the payment's archived
	// successful refunds: what its refunds already returned from the archive's side.
	RefundedOf map[string]money.Amount
}

// LedgerQuery is what a ledger asks the archive about besides its sums.
type LedgerQuery struct {
	// Payouts and Refunds are the names the Balance's reservations hold.
	Payouts, Refunds []string
	// Payments are the trx_ids whose archived refunds count against their payment's amount.
	Payments []string
}

// LedgerView reads, in one read-only repeatable-read transaction, the carried-forward entries
// of a merchant in env, its archived_live entries, which of the payouts and refunds q names are
// archived, and what the archived refunds of q's payments returned. Its cost does not depend on
// how many objects are archived or live.
func (s *Store) LedgerView(ctx context.Context, namespace, merchant string, env paygatev1.Environment, q LedgerQuery) (LedgerView, error) {
	v := LedgerView{Payments: map[string]bool{}, Payouts: map[string]bool{}, Refunds: map[string]bool{}, RefundedOf: map[string]money.Amount{}}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if v.Carried, err = carriedForwardIn(ctx, tx, " WHERE namespace = $1 AND merchant = $2 AND environment = $3", namespace, merchant, string(env)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT uid, kind FROM archived_live WHERE namespace = $1 AND merchant = $2 AND environment = $3",
			namespace, merchant, string(env))
		if err != nil {
			return err
		}
		var uid, kind string
		if _, err := pgx.ForEachRow(rows, []any{&uid, &kind}, func() error {
			switch Kind(kind) {
			case KindPayout:
				v.Payouts[uid] = true
			case KindRefund:
				v.Refunds[uid] = true
			default:
				v.Payments[uid] = true
			}
			return nil
		}); err != nil {
			return err
		}
		if v.PayoutNames, err = column(ctx, tx, "SELECT name FROM payouts WHERE namespace = $2 AND name = ANY($1)", q.Payouts, namespace); err != nil {
			return err
		}
		if v.RefundNames, err = column(ctx, tx, "SELECT name FROM refunds WHERE namespace = $2 AND name = ANY($1)", q.Refunds, namespace); err != nil {
			return err
		}
		if len(q.Payments) == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, `SELECT payment, sum(amount)::text FROM refunds
WHERE namespace = $1 AND payment = ANY($2) AND merchant = $3 AND environment = $4 AND phase = 'success' GROUP BY payment`,
			namespace, q.Payments, merchant, string(env))
		if err != nil {
			return err
		}
		var trx, sum string
		_, err = pgx.ForEachRow(rows, []any{&trx, &sum}, func() error {
			a, err := money.ParseAmount(sum)
			v.RefundedOf[trx] = a
			return err
		})
		return err
	})
	if err != nil {
		return LedgerView{}, fmt.Errorf("archive: reading the ledger of %s/%s in %s: %w", namespace, merchant, env, err)
	}
	return v, nil
}

// LiveEntry is an archived object that may still be in etcd.
type LiveEntry struct {
	UID, Namespace, Name string
	Kind                 Kind
}

// ArchivedLive lists every archived_live entry (the archiver checks which objects are gone).
func (s *Store) ArchivedLive(ctx context.Context) ([]LiveEntry, error) {
	rows, err := s.pool.Query(ctx, "SELECT uid, kind, namespace, name FROM archived_live ORDER BY uid")
	if err != nil {
		return nil, fmt.Errorf("archive: reading archived_live: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LiveEntry, error) {
		var e LiveEntry
		var kind string
		err := row.Scan(&e.UID, &kind, &e.Namespace, &e.Name)
		e.Kind = Kind(kind)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("archive: reading archived_live: %w", err)
	}
	return out, nil
}

// ForgetLive removes archived_live entries: their objects are gone from etcd and from every
// balance's view.
func (s *Store) ForgetLive(ctx context.Context, uids []string) error {
	if len(uids) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, "DELETE FROM archived_live WHERE uid = ANY($1)", uids); err != nil {
		return fmt.Errorf("archive: forgetting archived_live entries: %w", err)
	}
	return nil
}

// column runs a query of one text column over a list and returns the values as a set; an empty
// list asks nothing.
func column(ctx context.Context, q querier, query string, list []string, args ...any) (map[string]bool, error) {
	out := map[string]bool{}
	if len(list) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, query, append([]any{list}, args...)...)
	if err != nil {
		return nil, err
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	for _, v := range found {
		out[v] = true
	}
	return out, nil
}
