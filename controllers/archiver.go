// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	webhookevents "github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/internal/failpoint"
	"github.com/paygate/paygate/internal/metrics"
)

// ArchiveStore is what the manager needs of the archive (internal/archive's Store): the
// archiver writes to it, the balance controller reads its part of the ledgers.
type ArchiveStore interface {
	LedgerArchive
	Migrate(ctx context.Context) error
	Archive(ctx context.Context, b archive.Batch) (archive.Result, error)
	Count(ctx context.Context, kind archive.Kind) (int64, error)
	ArchivedLive(ctx context.Context) ([]archive.LiveEntry, error)
	ForgetLive(ctx context.Context, uids []string) error
	WithNamesLocked(ctx context.Context, keys []archive.NameKey, fn func()) error
	Ping(ctx context.Context) error
}

// Retention is how long a terminal object of each kind stays in etcd before it is archived; 0
// keeps that kind's objects in etcd. Objects owned by an archived object (a payment's webhook
// deliveries, an invoice's charges) leave with their owner, whatever their own kind's retention:
// Kubernetes would otherwise collect them unarchived.
type Retention struct {
	Payments          time.Duration
	Payouts           time.Duration
	Invoices          time.Duration
	WebhookDeliveries time.Duration
	// Refunds: a terminal refund is archived once it is this old and its payment has left etcd.
	Refunds time.Duration
}

// DefaultRetention keeps every kind a week in etcd.
const DefaultRetention = 7 * 24 * time.Hour

// Archiver moves settled history out of etcd (docs/archive.md): each pass lists the terminal
// Payments, Payouts, Invoices, Refunds and finished WebhookDeliveries older than their retention
// (a refund only once its payment has left etcd, so that a payment still in etcd has all its
// refunds there too), writes
// them to the archive in batches, and only after a batch is committed deletes its objects from
// etcd, each with a precondition on its UID and resourceVersion. A crash between the commit and
// the deletes leaves rows and objects: the next pass archives them again, which counts nothing
// twice, and deletes them. Nothing is deleted that is not committed.
//
// It runs on the elected leader only.
type Archiver struct {
	// Client reads from the manager's cache and deletes.
	Client client.Client
	Store  ArchiveStore
	// Clock decides ages (tests pass a fake clock); the interval between passes is real time.
	Clock     clock.PassiveClock
	Retention Retention
	// Interval is the pause between passes (default 1 minute); a failed pass is retried sooner,
	// backing off from 1 s up to Interval.
	Interval time.Duration
	// BatchSize bounds the objects of one transaction (default 100); an object and the objects
	// it owns always share one.
	BatchSize int
	// Namespace limits the archiver to one namespace ("" archives every namespace).
	Namespace string
	Log       logr.Logger
	// Gate is the balance controller's (BalanceReconciler.Gate): commits wait for the balance
	// passes reading the archive and the live objects, and the other way round.
	Gate *sync.RWMutex
	// Counted reports whether a balance may still count an archived object live (the payment
	// ledger has it); default: the object is still in the client's view. The archiver forgets an
	// object's archived_live entry once it is not.
	Counted func(archive.LiveEntry) bool
}

// +kubebuilder:rbac:groups=paygate.dev,resources=payments;payouts;invoices;webhookdeliveries;refunds,verbs=get;list;watch;delete

// NeedLeaderElection makes the archiver run on the leader only.
func (a *Archiver) NeedLeaderElection() bool { return true }

// Start migrates the archive's schema, then runs a pass every Interval until ctx ends. A database
// that is down is retried with backoff; live traffic does not wait for it.
func (a *Archiver) Start(ctx context.Context) error {
	a.defaults()
	backoff, migrated := time.Second, false
	for {
		var err error
		if !migrated {
			if err = a.Store.Migrate(ctx); err == nil {
				migrated = true
			} else {
				metrics.ArchiveErrors.WithLabelValues("migrate").Inc()
			}
		}
		if migrated {
			_, err = a.Pass(ctx)
		}
		wait := a.Interval
		if err != nil && ctx.Err() == nil {
			a.Log.Error(err, "Archiver pass failed; retrying", "retryIn", backoff.String())
			wait, backoff = backoff, min(2*backoff, a.Interval)
		} else {
			backoff = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

func (a *Archiver) defaults() {
	if a.Clock == nil {
		a.Clock = clock.RealClock{}
	}
	if a.Interval <= 0 {
		a.Interval = time.Minute
	}
	if a.BatchSize <= 0 {
		a.BatchSize = 100
	}
}

// PassResult is what one pass did, per kind.
type PassResult struct {
	Archived map[archive.Kind]int
	Deleted  map[archive.Kind]int
}

// archiveUnit is an object due for the archive with the objects it owns: archived in one
// transaction, then deleted owner first. A controller that sees an owned delivery disappear
// reconciles its owner; it must find the owner gone (its live read says so), or it would send
// that event again.
type archiveUnit struct {
	kind  archive.Kind
	since time.Time
	// objects in delete order: the owner first, then what it owns.
	objects []client.Object
}

// archiveSnapshot is one pass's view of the archivable kinds, from the cache.
type archiveSnapshot struct {
	payments   []paygatev1.Payment
	payouts    []paygatev1.Payout
	invoices   []paygatev1.Invoice
	deliveries []paygatev1.WebhookDelivery
	refunds    []paygatev1.Refund
	// owners are the UIDs of the live objects that own deliveries and are never archived
	// (subscriptions).
	owners map[types.UID]bool
}

// Pass archives every object due now, in batches; it stops at the first batch the archive
// refuses or cannot commit (nothing of it is deleted) and returns that error.
func (a *Archiver) Pass(ctx context.Context) (PassResult, error) {
	a.defaults()
	res := PassResult{Archived: map[archive.Kind]int{}, Deleted: map[archive.Kind]int{}}
	snap, err := a.snapshot(ctx)
	if err != nil {
		metrics.ArchivePasses.WithLabelValues("error").Inc()
		return res, err
	}
	now := a.Clock.Now()
	units, blocked := a.plan(snap, now)
	waiting := map[archive.Kind]time.Time{} // the oldest since of each kind still in etcd
	note := func(k archive.Kind, since time.Time) {
		if t, ok := waiting[k]; !ok || since.Before(t) {
			waiting[k] = since
		}
	}
	for _, u := range blocked {
		note(u.kind, u.since)
	}
	var passErr error
	for start := 0; start < len(units); {
		end, size := start, 0
		for end < len(units) && (end == start || size+len(units[end].objects) <= a.BatchSize) {
			size += len(units[end].objects)
			end++
		}
		batch := units[start:end]
		if err := a.archiveBatch(ctx, batch, &res); err != nil {
			var refused []archiveUnit
			batch, refused, err = a.archiveOneByOne(ctx, batch, err, &res)
			for _, u := range refused {
				note(u.kind, u.since)
			}
			if err != nil {
				passErr = err
				for _, u := range units[end:] {
					note(u.kind, u.since)
				}
				break
			}
		}
		if err := a.deleteBatch(ctx, batch, &res, note); err != nil {
			passErr = err
			for _, u := range units[end:] {
				note(u.kind, u.since)
			}
			break
		}
		hitFailpoint(failpoint.ArchiveDeleted)
		start = end
	}
	for _, k := range archive.Kinds {
		lag := 0.0
		if since, ok := waiting[k]; ok {
			lag = max(0, now.Sub(since.Add(a.retentionOf(k))).Seconds())
		}
		metrics.ArchiveLag.WithLabelValues(string(k)).Set(lag)
	}
	if passErr == nil {
		passErr = a.forgetGone(ctx)
	}
	a.countRows(ctx)
	if passErr != nil {
		metrics.ArchivePasses.WithLabelValues("error").Inc()
		return res, passErr
	}
	metrics.ArchivePasses.WithLabelValues("ok").Inc()
	if total := sumCounts(res.Deleted); total > 0 {
		a.Log.Info("Archived settled objects", "payments", res.Deleted[archive.KindPayment], "payouts", res.Deleted[archive.KindPayout],
			"invoices", res.Deleted[archive.KindInvoice], "webhookDeliveries", res.Deleted[archive.KindWebhookDelivery],
			"refunds", res.Deleted[archive.KindRefund])
	}
	return res, nil
}

func (a *Archiver) snapshot(ctx context.Context) (*archiveSnapshot, error) {
	// Read-only: the objects are marshalled into the archive, never modified, so the cache's
	// objects are read without copies.
	var (
		payments      paygatev1.PaymentList
		payouts       paygatev1.PayoutList
		invoices      paygatev1.InvoiceList
		deliveries    paygatev1.WebhookDeliveryList
		subscriptions paygatev1.SubscriptionList
		refunds       paygatev1.RefundList
	)
	for _, l := range []client.ObjectList{&payments, &payouts, &invoices, &deliveries, &subscriptions, &refunds} {
		if err := a.Client.List(ctx, l, client.InNamespace(a.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	owners := map[types.UID]bool{}
	for i := range subscriptions.Items {
		owners[subscriptions.Items[i].UID] = true
	}
	return &archiveSnapshot{payments: payments.Items, payouts: payouts.Items, invoices: invoices.Items, deliveries: deliveries.Items,
		refunds: refunds.Items, owners: owners}, nil
}

func (a *Archiver) retentionOf(k archive.Kind) time.Duration {
	switch k {
	case archive.KindPayment:
		return a.Retention.Payments
	case archive.KindPayout:
		return a.Retention.Payouts
	case archive.KindInvoice:
		return a.Retention.Invoices
	case archive.KindRefund:
		return a.Retention.Refunds
	default:
		return a.Retention.WebhookDeliveries
	}
}

// plan lists the units due at now, oldest first, and the objects due whose owned objects are
// not finished yet (blocked: they wait, and count in the archive lag).
func (a *Archiver) plan(s *archiveSnapshot, now time.Time) (units, blocked []archiveUnit) {
	deliveriesOf := map[types.UID][]*paygatev1.WebhookDelivery{}
	for i := range s.deliveries {
		d := &s.deliveries[i]
		for _, o := range d.OwnerReferences {
			deliveriesOf[o.UID] = append(deliveriesOf[o.UID], d)
		}
	}
	live := map[types.UID]bool{} // every live object that may own deliveries
	for uid := range s.owners {
		live[uid] = true
	}
	for i := range s.payments {
		live[s.payments[i].UID] = true
	}
	for i := range s.payouts {
		live[s.payouts[i].UID] = true
	}
	for i := range s.invoices {
		live[s.invoices[i].UID] = true
	}
	for i := range s.refunds {
		live[s.refunds[i].UID] = true
	}
	livePayments := map[string]bool{} // namespace/trx_id
	for i := range s.payments {
		livePayments[s.payments[i].Namespace+"/"+s.payments[i].Name] = true
	}
	invoiceUIDs := map[types.UID]bool{}
	invoiceByName := map[string]types.UID{}
	latest := map[string][]int32{} // namespace/subscription → its two highest periods
	for i := range s.invoices {
		inv := &s.invoices[i]
		invoiceUIDs[inv.UID] = true
		invoiceByName[inv.Namespace+"/"+inv.Name] = inv.UID
		key := inv.Namespace + "/" + inv.Spec.SubscriptionRef.Name
		latest[key] = topTwo(latest[key], inv.Spec.Period)
	}
	// A charge belongs to the live invoice its label names (charges carry no owner reference, so
	// that deleting a subscription or an invoice never takes money with it: docs/billing.md), or,
	// for one created before that, the invoice that owns it.
	chargesOf := map[types.UID][]*paygatev1.Payment{}
	invoiceOf := func(p *paygatev1.Payment) (types.UID, bool) {
		if uid, ok := invoiceByName[p.Namespace+"/"+p.Labels[paygatev1.LabelInvoice]]; ok && p.Labels[paygatev1.LabelInvoice] != "" {
			return uid, true
		}
		for _, o := range p.OwnerReferences {
			if invoiceUIDs[o.UID] {
				return o.UID, true
			}
		}
		return "", false
	}
	ownedByInvoice := func(p *paygatev1.Payment) bool { _, ok := invoiceOf(p); return ok }
	for i := range s.payments {
		p := &s.payments[i]
		if uid, ok := invoiceOf(p); ok {
			chargesOf[uid] = append(chargesOf[uid], p)
		}
	}
	claimed := map[types.UID]bool{}
	due := func(k archive.Kind, since time.Time) bool {
		r := a.retentionOf(k)
		return r > 0 && !now.Before(since.Add(r))
	}
	// withDeliveries adds the deliveries an object owns before it; false when one is unfinished.
	withDeliveries := func(u *archiveUnit, owner types.UID) bool {
		for _, d := range deliveriesOf[owner] {
			if !archive.DeliveryFinished(d) {
				return false
			}
			u.objects = append(u.objects, d)
		}
		return true
	}
	// announced reports whether the outcome's webhook event of a payment or payout exists: one that
	// ended is not archived before its event is born (the pass that stored the outcome may have
	// died before creating it, and the next creates it from the live object; archiving first would
	// leave the event owned by an object that is gone, which the garbage collector deletes).
	announced := func(o client.Object) bool {
		switch o := o.(type) {
		case *paygatev1.Payment:
			if _, ok := webhookevents.PaymentEventType(o); !ok || o.Labels[paygatev1.LabelInvoice] != "" {
				return true // no payment.* event: an invoice's charge, or no outcome
			}
		case *paygatev1.Payout, *paygatev1.Refund:
		default:
			return true
		}
		return len(deliveriesOf[o.GetUID()]) > 0
	}
	add := func(u archiveUnit, ok bool) {
		if !ok {
			blocked = append(blocked, archiveUnit{kind: u.kind, since: u.since})
			return
		}
		for _, o := range u.objects {
			claimed[o.GetUID()] = true
		}
		slices.Reverse(u.objects) // built owned-first; deleted owner-first
		units = append(units, u)
	}

	for i := range s.invoices {
		inv := &s.invoices[i]
		since := firstTime(microTimeOf(inv.Status.PaidAt), timeOf(inv.Status.VoidedAt), inv.CreationTimestamp.Time)
		if !inv.Terminal() || !due(archive.KindInvoice, since) ||
			slices.Contains(latest[inv.Namespace+"/"+inv.Spec.SubscriptionRef.Name], inv.Spec.Period) {
			continue
		}
		u, ok := archiveUnit{kind: archive.KindInvoice, since: since}, true
		for _, p := range chargesOf[inv.UID] {
			ok = ok && p.Terminal() && !p.Watched(now) && !countedLate(p) && withDeliveries(&u, p.UID)
			u.objects = append(u.objects, p)
		}
		ok = ok && withDeliveries(&u, inv.UID)
		u.objects = append(u.objects, inv)
		add(u, ok)
	}
	for i := range s.payments {
		p := &s.payments[i]
		since := firstTime(microTimeOf(p.Status.SettledAt), p.CreationTimestamp.Time)
		// A payment whose last attempt is still watched stays live until its watch ends; a late
		// settlement the balance counts stays live (the archive carries successful payments only).
		if claimed[p.UID] || !p.Terminal() || p.Watched(now) || countedLate(p) || ownedByInvoice(p) || !due(archive.KindPayment, since) {
			continue
		}
		u := archiveUnit{kind: archive.KindPayment, since: since}
		ok := announced(p) && withDeliveries(&u, p.UID)
		u.objects = append(u.objects, p)
		add(u, ok)
	}
	for i := range s.payouts {
		p := &s.payouts[i]
		since := firstTime(microTimeOf(p.Status.UpdatedAt), p.CreationTimestamp.Time)
		if !p.Terminal() || p.Watched(now) || !due(archive.KindPayout, since) {
			continue
		}
		u := archiveUnit{kind: archive.KindPayout, since: since}
		ok := announced(p) && withDeliveries(&u, p.UID)
		u.objects = append(u.objects, p)
		add(u, ok)
	}
	for i := range s.refunds {
		f := &s.refunds[i]
		since := firstTime(microTimeOf(f.Status.UpdatedAt), f.CreationTimestamp.Time)
		// A refund waits for its payment to leave etcd: a payment in etcd has all its refunds
		// there, so its record counts its refunds from the API server's cache alone.
		if !f.Terminal() || f.Watched(now) || !due(archive.KindRefund, since) || livePayments[f.Namespace+"/"+f.Spec.Payment.TrxID] {
			continue
		}
		u := archiveUnit{kind: archive.KindRefund, since: since}
		ok := announced(f) && withDeliveries(&u, f.UID)
		u.objects = append(u.objects, f)
		add(u, ok)
	}
	for i := range s.deliveries {
		d := &s.deliveries[i]
		since := deliveryFinishedAt(d)
		if claimed[d.UID] || !archive.DeliveryFinished(d) || !due(archive.KindWebhookDelivery, since) || ownedByLive(d, live) {
			continue // a delivery leaves with its owner; alone only once its owner is gone
		}
		add(archiveUnit{kind: archive.KindWebhookDelivery, since: since, objects: []client.Object{d}}, true)
	}
	slices.SortStableFunc(units, func(x, y archiveUnit) int { return x.since.Compare(y.since) })
	return units, blocked
}

// archiveBatch commits the units' objects (without their managed fields) in one transaction.
func (a *Archiver) archiveBatch(ctx context.Context, units []archiveUnit, res *PassResult) error {
	var b archive.Batch
	for _, u := range units {
		for _, o := range u.objects {
			c := o.DeepCopyObject().(client.Object) // the cache's object is never modified
			c.SetManagedFields(nil)
			switch c := c.(type) {
			case *paygatev1.Payment:
				b.Payments = append(b.Payments, *c)
			case *paygatev1.Payout:
				b.Payouts = append(b.Payouts, *c)
			case *paygatev1.Invoice:
				b.Invoices = append(b.Invoices, *c)
			case *paygatev1.WebhookDelivery:
				b.WebhookDeliveries = append(b.WebhookDeliveries, *c)
			case *paygatev1.Refund:
				b.Refunds = append(b.Refunds, *c)
			}
		}
	}
	if a.Gate != nil {
		a.Gate.Lock()
	}
	r, err := a.Store.Archive(ctx, b)
	if a.Gate != nil {
		a.Gate.Unlock()
	}
	if err != nil {
		metrics.ArchiveErrors.WithLabelValues("archive").Inc()
		return fmt.Errorf("archiving %d objects: %w", len(b.Payments)+len(b.Payouts)+len(b.Invoices)+len(b.WebhookDeliveries)+len(b.Refunds), err)
	}
	hitFailpoint(failpoint.ArchiveCommitted)
	for k, n := range r.Inserted {
		res.Archived[k] += n
		metrics.ArchivedObjects.WithLabelValues(string(k)).Add(float64(n))
	}
	return nil
}

// archiveOneByOne handles a batch the archive did not commit. When the database does not answer,
// it returns the error: the pass stops and backs off, nothing deleted. When it answers, the batch
// held an object the archive refuses (a name archived under another UID, money that changed): the
// units are archived one by one, and those refused wait in etcd, logged and counted, instead of
// stopping every later pass at the same batch.
func (a *Archiver) archiveOneByOne(ctx context.Context, batch []archiveUnit, batchErr error, res *PassResult) (written, refused []archiveUnit, err error) {
	if pingErr := a.Store.Ping(ctx); pingErr != nil || ctx.Err() != nil {
		return nil, batch, batchErr
	}
	for _, u := range batch {
		if err := a.archiveBatch(ctx, []archiveUnit{u}, res); err != nil {
			metrics.ArchiveErrors.WithLabelValues("refused").Inc()
			first := u.objects[0]
			a.Log.Error(err, "The archive refuses an object; it stays in etcd", "kind", string(u.kind),
				"namespace", first.GetNamespace(), "name", first.GetName())
			refused = append(refused, u)
			continue
		}
		written = append(written, u)
	}
	return written, refused, nil
}

// deleteBatch deletes the committed units' objects from etcd holding the archive's locks on the
// payments' and payouts' names (archive.Store.WithNamesLocked): the API server creates those names
// only after asking the archive under the same lock, so a name never leaves etcd between its
// answer and its create (docs/archive.md). When the locks cannot be taken nothing is deleted: the
// units wait for the next pass.
func (a *Archiver) deleteBatch(ctx context.Context, batch []archiveUnit, res *PassResult, note func(archive.Kind, time.Time)) error {
	var keys []archive.NameKey
	for _, u := range batch {
		for _, o := range u.objects {
			if k := kindOf(o); k == archive.KindPayment || k == archive.KindPayout {
				keys = append(keys, archive.NameKey{Kind: k, Namespace: o.GetNamespace(), Name: o.GetName()})
			}
		}
	}
	err := a.Store.WithNamesLocked(ctx, keys, func() {
		for _, u := range batch {
			if !a.deleteUnit(ctx, u, res) {
				note(u.kind, u.since)
			}
		}
	})
	if err != nil {
		metrics.ArchiveErrors.WithLabelValues("delete").Inc()
		for _, u := range batch {
			note(u.kind, u.since)
		}
		return fmt.Errorf("locking the names of %d archived objects before deleting them: %w", len(keys), err)
	}
	return nil
}

// deleteUnit deletes a committed unit's objects from etcd, owned objects first, each only if it
// is still the object archived (its UID and resourceVersion); an object that changed since is
// archived again by a later pass. It reports whether the whole unit is gone.
func (a *Archiver) deleteUnit(ctx context.Context, u archiveUnit, res *PassResult) bool {
	for _, o := range u.objects {
		uid, rv := o.GetUID(), o.GetResourceVersion()
		target := o.DeepCopyObject().(client.Object)
		err := a.Client.Delete(ctx, target, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		switch {
		case err == nil:
			k := kindOf(o)
			res.Deleted[k]++
			metrics.ArchiveDeletes.WithLabelValues(string(k)).Inc()
		case apierrors.IsNotFound(err):
		default:
			if !apierrors.IsConflict(err) {
				metrics.ArchiveErrors.WithLabelValues("delete").Inc()
				a.Log.Error(err, "Deleting an archived object", "kind", string(kindOf(o)), "namespace", o.GetNamespace(), "name", o.GetName())
			}
			return false // the owner stays until every object it owns is archived and gone
		}
	}
	return true
}

// forgetGone removes the archived_live entries of archived objects no balance can count live any
// more: they left etcd and the manager's view.
func (a *Archiver) forgetGone(ctx context.Context) error {
	entries, err := a.Store.ArchivedLive(ctx)
	if err != nil {
		metrics.ArchiveErrors.WithLabelValues("forget").Inc()
		return err
	}
	counted := a.Counted
	if counted == nil {
		counted = a.inView(ctx)
	}
	var gone []string
	for _, e := range entries {
		if a.Namespace != "" && e.Namespace != a.Namespace {
			continue
		}
		if !counted(e) {
			gone = append(gone, e.UID)
		}
	}
	if err := a.Store.ForgetLive(ctx, gone); err != nil {
		metrics.ArchiveErrors.WithLabelValues("forget").Inc()
		return err
	}
	return nil
}

// inView reports whether an archived object is still in the client's view (an error counts as
// yes: the entry stays, which only costs a lookup).
func (a *Archiver) inView(ctx context.Context) func(archive.LiveEntry) bool {
	return func(e archive.LiveEntry) bool {
		var obj client.Object = &paygatev1.Payment{}
		switch e.Kind {
		case archive.KindPayout:
			obj = &paygatev1.Payout{}
		case archive.KindRefund:
			obj = &paygatev1.Refund{}
		}
		err := a.Client.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			return false
		case err != nil:
			return true
		}
		return string(obj.GetUID()) == e.UID
	}
}

func (a *Archiver) countRows(ctx context.Context) {
	for _, k := range archive.Kinds {
		n, err := a.Store.Count(ctx, k)
		if err != nil {
			metrics.ArchiveErrors.WithLabelValues("count").Inc()
			return
		}
		metrics.ArchiveRows.WithLabelValues(string(k)).Set(float64(n))
	}
}

func kindOf(o client.Object) archive.Kind {
	switch o.(type) {
	case *paygatev1.Payment:
		return archive.KindPayment
	case *paygatev1.Payout:
		return archive.KindPayout
	case *paygatev1.Invoice:
		return archive.KindInvoice
	case *paygatev1.Refund:
		return archive.KindRefund
	default:
		return archive.KindWebhookDelivery
	}
}

// ownedByLive reports whether a delivery's owner is still live: the delivery stays with it (the
// owner's controller reads it to know the event was sent).
func ownedByLive(d *paygatev1.WebhookDelivery, live map[types.UID]bool) bool {
	for _, o := range d.OwnerReferences {
		if live[o.UID] {
			return true
		}
	}
	return false
}

// topTwo keeps the two highest distinct periods.
func topTwo(top []int32, period int32) []int32 {
	if slices.Contains(top, period) {
		return top
	}
	top = append(top, period)
	slices.SortFunc(top, func(a, b int32) int { return cmp.Compare(b, a) })
	if len(top) > 2 {
		top = top[:2]
	}
	return top
}

// deliveryFinishedAt is when a delivery finished: delivered, else its last attempt, else its
// creation (its effective status: a delivery its first attempt delivered has no status).
func deliveryFinishedAt(d *paygatev1.WebhookDelivery) time.Time {
	st := d.EffectiveStatus()
	var last time.Time
	if n := len(st.Attempts); n > 0 {
		last = st.Attempts[n-1].At.Time
	}
	return firstTime(timeOf(st.DeliveredAt), last, d.CreationTimestamp.Time)
}

func microTimeOf(t *metav1.MicroTime) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// firstTime returns the first non-zero time.
func firstTime(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

func sumCounts(m map[archive.Kind]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// countedLate reports whether p is a failed payment whose late settlement the balance counts (the
// merchant's lateSettlement is Credit or Refund): the archive's carried-forward sums count
// successful payments only, so such a payment is never archived.
func countedLate(p *paygatev1.Payment) bool {
	return p.SettledLate() && p.Status.NetAmount != ""
}
