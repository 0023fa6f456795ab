// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package archive

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
)

// Batch is what one Archive call writes, in one transaction.
type Batch struct {
	Payments          []paygatev1.Payment
	Payouts           []paygatev1.Payout
	Invoices          []paygatev1.Invoice
	WebhookDeliveries []paygatev1.WebhookDelivery
	Refunds           []paygatev1.Refund
}

// Result says what an Archive call did, per kind.
type Result struct {
	// Inserted counts the objects archived by this call: their rows are new, and their money
	// was added to carried_forward.
	Inserted map[Kind]int
	// Refreshed counts the objects that were archived already (an earlier pass committed and
	// stopped before deleting them from etcd): their stored object was replaced by the one given,
	// and carried_forward was left as it was.
	Refreshed map[Kind]int
}

// ErrNotTerminal is returned for an object that has not reached a terminal phase: only settled
// history is archived (a pending payout's reservation, for one, is not carried forward).
var ErrNotTerminal = errors.New("archive: the object is not in a terminal phase")

// ErrMoneyChanged is returned when an object already archived is given again with a different
// effect on the balance (merchant, environment, currency, phase or amount). Terminal objects
// never change those; the archive keeps what it counted, and the caller must not delete the
// object from etcd.
var ErrMoneyChanged = errors.New("archive: the object's money differs from its archived row")

// ArchivePayments archives terminal payments (see Archive).
func (s *Store) ArchivePayments(ctx context.Context, ps []paygatev1.Payment) (Result, error) {
	return s.Archive(ctx, Batch{Payments: ps})
}

// ArchivePayouts archives terminal payouts (see Archive).
func (s *Store) ArchivePayouts(ctx context.Context, ps []paygatev1.Payout) (Result, error) {
	return s.Archive(ctx, Batch{Payouts: ps})
}

// ArchiveRefunds archives terminal refunds (see Archive).
func (s *Store) ArchiveRefunds(ctx context.Context, rs []paygatev1.Refund) (Result, error) {
	return s.Archive(ctx, Batch{Refunds: rs})
}

// ArchiveInvoices archives terminal (paid or void) invoices (see Archive).
func (s *Store) ArchiveInvoices(ctx context.Context, is []paygatev1.Invoice) (Result, error) {
	return s.Archive(ctx, Batch{Invoices: is})
}

// ArchiveWebhookDeliveries archives finished (Delivered, Abandoned or NoEndpoint) webhook
// deliveries (see Archive).
func (s *Store) ArchiveWebhookDeliveries(ctx context.Context, ds []paygatev1.WebhookDelivery) (Result, error) {
	return s.Archive(ctx, Batch{WebhookDeliveries: ds})
}

// Archive writes the batch in one transaction: each object's row is inserted by UID, and the
// money of each newly inserted payment, payout or refund is added to carried_forward, exactly once. An
// object whose UID is archived already adds nothing again: its row's object is refreshed, so a
// pass that committed and stopped before its deletes can simply be repeated, by the same or
// another archiver, concurrently or not. Once Archive returns nil every object of the batch is
// committed and may be deleted from etcd; on an error nothing of the batch is committed.
//
// An object whose name (in its namespace) is archived under another UID is an error: names are
// the API's ids. Every object must be terminal (ErrNotTerminal) with readable amounts.
func (s *Store) Archive(ctx context.Context, b Batch) (Result, error) {
	recs, err := records(b)
	if err != nil {
		return Result{}, err
	}
	var res Result
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		res = Result{Inserted: map[Kind]int{}, Refreshed: map[Kind]int{}}
		return archiveTx(ctx, tx, recs, &res)
	})
	if err != nil {
		if !strings.HasPrefix(err.Error(), "archive: ") {
			err = fmt.Errorf("archive: %w", err)
		}
		return Result{}, err
	}
	return res, nil
}

func archiveTx(ctx context.Context, tx pgx.Tx, recs []*record, res *Result) error {
	// Rows in (kind, uid) order, so concurrent archivers of overlapping sets wait for each other
	// instead of deadlocking.
	batch := &pgx.Batch{}
	for _, r := range recs {
		batch.Queue(r.insertSQL(), r.vals...)
	}
	br := tx.SendBatch(ctx, batch)
	var existing []*record
	for _, r := range recs {
		var uid string
		switch err := br.QueryRow().Scan(&uid); {
		case errors.Is(err, pgx.ErrNoRows):
			existing = append(existing, r)
		case err != nil:
			_ = br.Close()
			return r.errorf("inserting", err)
		default:
			res.Inserted[r.kind]++
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("archive: inserting: %w", err)
	}

	deltas := map[cfKey]*cfDelta{}
	add := func(c *contribution) {
		d := deltas[c.key]
		if d == nil {
			d = &cfDelta{}
			deltas[c.key] = d
		}
		d.add(c.delta)
	}
	archivedBefore := map[*record]bool{}
	counts := map[countKey]int64{} // webhook_delivery_counts
	for _, r := range existing {
		archivedBefore[r] = true
		stored, err := refresh(ctx, tx, r)
		if err != nil {
			return err
		}
		if r.count != nil && stored != *r.count { // a delivery redelivered since: its row's phase moves
			counts[stored]--
			counts[*r.count]++
		}
		res.Refreshed[r.kind]++
	}
	live := &pgx.Batch{}
	for _, r := range recs {
		if !archivedBefore[r] && r.contrib != nil {
			add(r.contrib) // inserted by this transaction: counted once, here
		}
		if !archivedBefore[r] && r.count != nil {
			counts[*r.count]++
		}
		if r.contrib != nil {
			// Its object is still in etcd until the archiver deletes it: balances skip it there.
			live.Queue(`INSERT INTO archived_live (uid, kind, namespace, name, merchant, environment)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (uid) DO NOTHING`,
				r.uid, string(r.kind), r.namespace, r.name, r.contrib.key.Merchant, string(r.contrib.key.Environment))
		}
	}
	if live.Len() > 0 {
		if err := tx.SendBatch(ctx, live).Close(); err != nil {
			return fmt.Errorf("archive: recording archived objects still in etcd: %w", err)
		}
	}

	if err := countDeliveries(ctx, tx, counts); err != nil {
		return err
	}

	keys := make([]cfKey, 0, len(deltas))
	for k := range deltas {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cfKey.compare)
	for _, k := range keys {
		d := deltas[k]
		if _, err := tx.Exec(ctx, `
INSERT INTO carried_forward AS cf
    (namespace, merchant, environment, currency, settled, settled_payments, paid_out, paid_out_payouts, payments, payouts,
     refunded, refunded_refunds, refunds)
VALUES ($1, $2, $3, $4, $5::numeric, $6, $7::numeric, $8, $9, $10, $11::numeric, $12, $13)
ON CONFLICT (namespace, merchant, environment, currency) DO UPDATE SET
    settled = cf.settled + EXCLUDED.settled,
    settled_payments = cf.settled_payments + EXCLUDED.settled_payments,
    paid_out = cf.paid_out + EXCLUDED.paid_out,
    paid_out_payouts = cf.paid_out_payouts + EXCLUDED.paid_out_payouts,
    payments = cf.payments + EXCLUDED.payments,
    payouts = cf.payouts + EXCLUDED.payouts,
    refunded = cf.refunded + EXCLUDED.refunded,
    refunded_refunds = cf.refunded_refunds + EXCLUDED.refunded_refunds,
    refunds = cf.refunds + EXCLUDED.refunds,
    updated_at = now()`,
			k.Namespace, k.Merchant, string(k.Environment), string(k.Currency),
			d.Settled.String(), d.SettledPayments, d.PaidOut.String(), d.PaidOutPayouts, d.Payments, d.Payouts,
			d.Refunded.String(), d.RefundedRefunds, d.Refunds); err != nil {
			return fmt.Errorf("archive: carrying forward %s/%s %s %s: %w", k.Namespace, k.Merchant, k.Environment, k.Currency, err)
		}
	}
	return nil
}

// refresh replaces the stored object of an archived row, after checking that its money did not
// change. It returns the row's count key as it was stored (webhook deliveries; zero for the
// other kinds).
func refresh(ctx context.Context, tx pgx.Tx, r *record) (countKey, error) {
	var ns, merchant, env, currency, phase, amount string
	err := tx.QueryRow(ctx, r.identitySQL(), r.uid).Scan(&ns, &merchant, &env, &currency, &phase, &amount)
	if errors.Is(err, pgx.ErrNoRows) {
		// Rows are never deleted: unreachable unless someone deleted it by hand.
		return countKey{}, r.errorf("re-reading", errors.New("the row vanished"))
	}
	if err != nil {
		return countKey{}, r.errorf("re-reading", err)
	}
	if r.contrib != nil {
		old, err := contributionOf(r.kind, ns, merchant, paygatev1.Environment(env), paygatev1.CurrencyCode(currency), phase, amount)
		if err != nil {
			return countKey{}, r.errorf("re-reading", err)
		}
		if !old.equal(r.contrib) {
			return countKey{}, r.errorf("re-archiving", ErrMoneyChanged)
		}
	}
	if _, err := tx.Exec(ctx, r.updateSQL(), r.vals...); err != nil {
		return countKey{}, r.errorf("refreshing", err)
	}
	var stored countKey
	if r.kind == KindWebhookDelivery {
		stored = countKey{namespace: ns, merchant: merchant, environment: env, phase: phase, eventType: currency}
	}
	return stored, nil
}

// inTx runs fn in a transaction, again when PostgreSQL aborted it as a deadlock victim or for a
// serialization failure.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	for attempt := 0; ; attempt++ {
		err := pgx.BeginFunc(ctx, s.pool, fn)
		var pgErr *pgconn.PgError
		// Serialization failures and deadlocks are retried; so is a unique violation of a name
		// index: an archiver inserting the same object as a concurrent one can meet its
		// uncommitted name before its UID (only the UID is the conflict target), and the retry
		// finds the committed row and adds nothing. A name truly archived under another UID
		// fails the same way every time, and is returned.
		if err != nil && attempt < 5 && errors.As(err, &pgErr) &&
			(pgErr.Code == "40001" || pgErr.Code == "40P01" || (pgErr.Code == "23505" && strings.HasSuffix(pgErr.ConstraintName, "_name"))) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt+1) * 10 * time.Millisecond):
			}
			continue
		}
		return err
	}
}

// ---- records ----

// record is one object's row.
type record struct {
	kind                 Kind
	uid, namespace, name string
	cols                 []string // cols[0] is uid
	vals                 []any
	contrib              *contribution // nil: no money (invoices, webhook deliveries)
	count                *countKey     // a webhook delivery's row of webhook_delivery_counts
}

func (r *record) errorf(doing string, err error) error {
	return fmt.Errorf("archive: %s %s %s/%s (uid %s): %w", doing, r.kind, r.namespace, r.name, r.uid, err)
}

func (r *record) insertSQL() string {
	ph := make([]string, len(r.cols))
	for i := range r.cols {
		ph[i] = fmt.Sprintf("$%d", i+1)
	}
	return "INSERT INTO " + string(r.kind) + " (" + strings.Join(r.cols, ", ") + ") VALUES (" +
		strings.Join(ph, ", ") + ") ON CONFLICT (uid) DO NOTHING RETURNING uid"
}

func (r *record) updateSQL() string {
	set := make([]string, 0, len(r.cols)-1)
	for i, c := range r.cols[1:] {
		set = append(set, fmt.Sprintf("%s = $%d", c, i+2))
	}
	return "UPDATE " + string(r.kind) + " SET " + strings.Join(set, ", ") + " WHERE uid = $1"
}

func (r *record) identitySQL() string {
	amount := "''"
	switch r.kind {
	case KindPayment:
		amount = "coalesce(net_amount::text, '')"
	case KindPayout, KindRefund:
		amount = "amount::text"
	}
	currency := "currency"
	if r.kind == KindWebhookDelivery {
		currency = "event_type" // a delivery has no money; its count's key has the event type
	}
	return "SELECT namespace, merchant, environment, " + currency + ", phase, " + amount +
		" FROM " + string(r.kind) + " WHERE uid = $1 FOR UPDATE"
}

func records(b Batch) ([]*record, error) {
	var recs []*record
	for i := range b.Payments {
		r, err := paymentRecord(&b.Payments[i])
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	for i := range b.Payouts {
		r, err := payoutRecord(&b.Payouts[i])
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	for i := range b.Invoices {
		r, err := invoiceRecord(&b.Invoices[i])
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	for i := range b.WebhookDeliveries {
		r, err := deliveryRecord(&b.WebhookDeliveries[i])
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	for i := range b.Refunds {
		r, err := refundRecord(&b.Refunds[i])
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	order := map[Kind]int{}
	for i, k := range Kinds {
		order[k] = i
	}
	slices.SortStableFunc(recs, func(a, b *record) int {
		return cmp.Or(cmp.Compare(order[a.kind], order[b.kind]), strings.Compare(a.uid, b.uid))
	})
	return recs, nil
}

func newRecord(kind Kind, meta *metav1.ObjectMeta, obj any) (*record, error) {
	r := &record{kind: kind, uid: string(meta.UID), namespace: meta.Namespace, name: meta.Name}
	if r.uid == "" || r.namespace == "" || r.name == "" {
		return nil, r.errorf("archiving", errors.New("an archived object needs a UID, a namespace and a name"))
	}
	js, err := json.Marshal(obj)
	if err != nil {
		return nil, r.errorf("encoding", err)
	}
	r.set("uid", r.uid)
	r.set("namespace", r.namespace)
	r.set("name", r.name)
	r.set("creation_timestamp", meta.CreationTimestamp.Time)
	r.set("object", string(js))
	return r, nil
}

func (r *record) set(col string, val any) {
	r.cols = append(r.cols, col)
	r.vals = append(r.vals, val)
}

// decimal checks an amount and returns it as NUMERIC text, nil (NULL) when empty and optional.
func (r *record) decimal(field string, d paygatev1.Decimal, required bool) (any, error) {
	if d == "" && !required {
		return nil, nil
	}
	if _, err := money.ParseAmount(string(d)); err != nil {
		return nil, r.errorf("archiving", fmt.Errorf("%s: %w", field, err))
	}
	return string(d), nil
}

func microTime(t *metav1.MicroTime) any {
	if t == nil {
		return nil
	}
	return t.Time
}

func metaTime(t *metav1.Time) any {
	if t == nil {
		return nil
	}
	return t.Time
}

func paymentRecord(p *paygatev1.Payment) (*record, error) {
	r, err := newRecord(KindPayment, &p.ObjectMeta, p)
	if err != nil {
		return nil, err
	}
	if !p.Terminal() {
		return nil, r.errorf("archiving", ErrNotTerminal)
	}
	amount, err := r.decimal("spec.amount", p.Spec.Amount, true)
	if err != nil {
		return nil, err
	}
	fee, err := r.decimal("status.fee", p.Status.Fee, false)
	if err != nil {
		return nil, err
	}
	net, err := r.decimal("status.netAmount", p.Status.NetAmount, p.Status.Phase == paygatev1.PaymentSuccess)
	if err != nil {
		return nil, err
	}
	r.set("merchant", p.Spec.MerchantRef.Name)
	r.set("environment", string(p.Spec.Environment))
	r.set("merchant_reference", p.Spec.MerchantReference)
	r.set("phase", string(p.Phase()))
	r.set("reason", p.Status.Reason)
	r.set("currency", string(p.Spec.Currency))
	r.set("amount", amount)
	r.set("fee", fee)
	r.set("net_amount", net)
	r.set("created_at", microTime(p.Spec.CreatedAt))
	r.set("settled_at", microTime(p.Status.SettledAt))
	r.contrib, err = contributionOf(KindPayment, p.Namespace, p.Spec.MerchantRef.Name, p.Spec.Environment, p.Spec.Currency, string(p.Phase()), string(p.Status.NetAmount))
	if err != nil {
		return nil, r.errorf("archiving", err)
	}
	return r, nil
}

func payoutRecord(p *paygatev1.Payout) (*record, error) {
	r, err := newRecord(KindPayout, &p.ObjectMeta, p)
	if err != nil {
		return nil, err
	}
	if !p.Terminal() {
		return nil, r.errorf("archiving", ErrNotTerminal)
	}
	amount, err := r.decimal("spec.amount", p.Spec.Amount, true)
	if err != nil {
		return nil, err
	}
	fee, err := r.decimal("spec.fee", p.Spec.Fee, true)
	if err != nil {
		return nil, err
	}
	payable, err := r.decimal("spec.payableAmount", p.Spec.PayableAmount, true)
	if err != nil {
		return nil, err
	}
	r.set("merchant", p.Spec.MerchantRef.Name)
	r.set("environment", string(p.Spec.Environment))
	r.set("phase", string(p.Phase()))
	r.set("reason", p.Status.Reason)
	r.set("currency", string(p.Spec.Currency))
	r.set("amount", amount)
	r.set("fee", fee)
	r.set("payable_amount", payable)
	r.set("destination", string(p.Spec.Destination))
	r.set("gateway", string(p.Spec.Gateway))
	r.set("created_at", p.Spec.CreatedAt.Time)
	r.set("finished_at", microTime(p.Status.UpdatedAt))
	r.contrib, err = contributionOf(KindPayout, p.Namespace, p.Spec.MerchantRef.Name, p.Spec.Environment, p.Spec.Currency, string(p.Phase()), string(p.Spec.Amount))
	if err != nil {
		return nil, r.errorf("archiving", err)
	}
	return r, nil
}

func refundRecord(f *paygatev1.Refund) (*record, error) {
	r, err := newRecord(KindRefund, &f.ObjectMeta, f)
	if err != nil {
		return nil, err
	}
	if !f.Terminal() {
		return nil, r.errorf("archiving", ErrNotTerminal)
	}
	amount, err := r.decimal("spec.amount", f.Spec.Amount, true)
	if err != nil {
		return nil, err
	}
	r.set("merchant", f.Spec.MerchantRef.Name)
	r.set("environment", string(f.Spec.Environment))
	r.set("payment", f.Spec.Payment.TrxID)
	r.set("phase", string(f.Phase()))
	r.set("reason", string(f.Status.Reason))
	r.set("currency", string(f.Spec.Currency))
	r.set("amount", amount)
	r.set("gateway", string(f.Spec.Gateway))
	r.set("created_at", f.Spec.CreatedAt.Time)
	r.set("finished_at", microTime(f.Status.UpdatedAt))
	r.contrib, err = contributionOf(KindRefund, f.Namespace, f.Spec.MerchantRef.Name, f.Spec.Environment, f.Spec.Currency, string(f.Phase()), string(f.Spec.Amount))
	if err != nil {
		return nil, r.errorf("archiving", err)
	}
	return r, nil
}

func invoiceRecord(inv *paygatev1.Invoice) (*record, error) {
	r, err := newRecord(KindInvoice, &inv.ObjectMeta, inv)
	if err != nil {
		return nil, err
	}
	if !inv.Terminal() {
		return nil, r.errorf("archiving", ErrNotTerminal)
	}
	amount, err := r.decimal("spec.amount", inv.Spec.Amount, true)
	if err != nil {
		return nil, err
	}
	r.set("merchant", inv.Spec.MerchantRef.Name)
	r.set("environment", string(inv.Spec.Environment))
	r.set("subscription", inv.Spec.SubscriptionRef.Name)
	r.set("plan_code", inv.Spec.PlanCode)
	r.set("period", inv.Spec.Period)
	r.set("phase", string(inv.Phase()))
	r.set("currency", string(inv.Spec.Currency))
	r.set("amount", amount)
	r.set("period_start", inv.Spec.PeriodStart.Time)
	r.set("period_end", inv.Spec.PeriodEnd.Time)
	r.set("paid_at", microTime(inv.Status.PaidAt))
	r.set("paid_payment", inv.Status.PaidPayment)
	r.set("voided_at", metaTime(inv.Status.VoidedAt))
	return r, nil
}

// DeliveryFinished reports whether a webhook delivery is finished: delivered, abandoned or
// without an endpoint. It reads the delivery's effective status: a delivery whose first attempt,
// made before its create, was accepted has none stored (spec.firstAttempt says it).
func DeliveryFinished(d *paygatev1.WebhookDelivery) bool {
	switch d.EffectiveStatus().Phase {
	case paygatev1.DeliveryDelivered, paygatev1.DeliveryAbandoned, paygatev1.DeliveryNoEndpoint:
		return true
	}
	return false
}

func deliveryRecord(d *paygatev1.WebhookDelivery) (*record, error) {
	r, err := newRecord(KindWebhookDelivery, &d.ObjectMeta, d)
	if err != nil {
		return nil, err
	}
	if !DeliveryFinished(d) {
		return nil, r.errorf("archiving", ErrNotTerminal)
	}
	r.set("merchant", d.Spec.MerchantRef.Name)
	r.set("environment", string(d.Spec.Environment))
	r.set("event_id", d.Spec.EventID)
	r.set("event_type", d.Spec.EventType)
	r.set("source_kind", d.Spec.Source.Kind)
	r.set("source_name", d.Spec.Source.Name)
	r.set("source_uid", d.Spec.Source.UID)
	st := d.EffectiveStatus()
	r.set("phase", string(st.Phase))
	r.set("total_attempts", st.TotalAttempts)
	r.set("delivered_at", metaTime(st.DeliveredAt))
	r.count = &countKey{namespace: d.Namespace, merchant: d.Spec.MerchantRef.Name, environment: string(d.Spec.Environment),
		phase: string(st.Phase), eventType: d.Spec.EventType}
	return r, nil
}

// ---- carried forward ----

type cfKey struct {
	Namespace, Merchant string
	Environment         paygatev1.Environment
	Currency            paygatev1.CurrencyCode
}

func (k cfKey) compare(o cfKey) int {
	return cmp.Or(strings.Compare(k.Namespace, o.Namespace), strings.Compare(k.Merchant, o.Merchant),
		strings.Compare(string(k.Environment), string(o.Environment)), strings.Compare(string(k.Currency), string(o.Currency)))
}

// cfDelta is an addition to one carried_forward row.
type cfDelta struct {
	Settled         money.Amount
	SettledPayments int64
	PaidOut         money.Amount
	PaidOutPayouts  int64
	Payments        int64
	Payouts         int64
	Refunded        money.Amount
	RefundedRefunds int64
	Refunds         int64
}

func (d *cfDelta) add(o cfDelta) {
	d.Settled = d.Settled.Add(o.Settled)
	d.PaidOut = d.PaidOut.Add(o.PaidOut)
	d.SettledPayments += o.SettledPayments
	d.PaidOutPayouts += o.PaidOutPayouts
	d.Payments += o.Payments
	d.Payouts += o.Payouts
	d.Refunded = d.Refunded.Add(o.Refunded)
	d.RefundedRefunds += o.RefundedRefunds
	d.Refunds += o.Refunds
}

func (d cfDelta) equal(o cfDelta) bool {
	return d.Settled.Equal(o.Settled) && d.PaidOut.Equal(o.PaidOut) && d.SettledPayments == o.SettledPayments &&
		d.PaidOutPayouts == o.PaidOutPayouts && d.Payments == o.Payments && d.Payouts == o.Payouts &&
		d.Refunded.Equal(o.Refunded) && d.RefundedRefunds == o.RefundedRefunds && d.Refunds == o.Refunds
}

// contribution is what one archived payment, payout or refund adds to carried_forward: the rule of
// ComputeLedger (controllers/ledger.go), so that carried forward + live objects is the balance.
type contribution struct {
	key   cfKey
	delta cfDelta
}

func (c *contribution) equal(o *contribution) bool {
	return c.key == o.key && c.delta.equal(o.delta)
}

// contributionOf a payment (amount: its net amount), a payout or a refund (amount: its amount) in
// phase: a successful payment adds its net amount to settled, a successful payout its amount to
// paid out, a successful refund its amount to refunded; every one counts. A failed one adds no
// money: it never counted in the balance.
func contributionOf(kind Kind, namespace, merchant string, env paygatev1.Environment, currency paygatev1.CurrencyCode, phase, amount string) (*contribution, error) {
	c := &contribution{key: cfKey{Namespace: namespace, Merchant: merchant, Environment: env, Currency: currency}}
	switch kind {
	case KindPayment:
		c.delta.Payments = 1
		if phase == string(paygatev1.PaymentSuccess) {
			a, err := money.ParseAmount(amount)
			if err != nil {
				return nil, fmt.Errorf("net amount: %w", err)
			}
			c.delta.Settled, c.delta.SettledPayments = a, 1
		}
	case KindPayout:
		c.delta.Payouts = 1
		if phase == string(paygatev1.PayoutSuccess) {
			a, err := money.ParseAmount(amount)
			if err != nil {
				return nil, fmt.Errorf("amount: %w", err)
			}
			c.delta.PaidOut, c.delta.PaidOutPayouts = a, 1
		}
	case KindRefund:
		c.delta.Refunds = 1
		if phase == string(paygatev1.RefundSuccess) {
			a, err := money.ParseAmount(amount)
			if err != nil {
				return nil, fmt.Errorf("amount: %w", err)
			}
			c.delta.Refunded, c.delta.RefundedRefunds = a, 1
		}
	default:
		return nil, nil
	}
	return c, nil
}
