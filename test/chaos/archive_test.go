// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/failpoint"
	"github.com/paygate/paygate/internal/pgtest"
)

// The archive of the run (docs/archive.md): a real PostgreSQL behind a proxy the harness can
// cut, short retentions so that settled objects leave etcd while the load runs, small batches so
// that a pass commits many.
const (
	// defaultArchiveAfter is every kind's retention in etcd (CHAOS_ARCHIVE_AFTER overrides it).
	defaultArchiveAfter = 20 * time.Second
	archiveInterval     = 2 * time.Second
	archiveBatchSize    = 20
	// archiveSlack is how long past its retention a terminal object may still be in etcd at the
	// end: a pass every archiveInterval, the pass itself on a starved machine, a retry.
	archiveSlack = 15 * time.Second
	// archiveOutage is how long the database is cut (plus up to 3 s).
	archiveOutage = 3 * time.Second
)

// archiveRig is the run's archive: the server, the proxy the processes reach it through, and a
// store of the harness's own that reads it directly (the checks are not cut by an outage).
type archiveRig struct {
	srv   *pgtest.Server
	proxy *pgtest.Proxy
	store *archive.Store
	dsn   string // through the proxy, with a password: what the processes get
	after time.Duration
	// deliveriesAfter is the webhook deliveries' retention (0: those of a live object stay in
	// etcd; those of an archived object leave with it).
	deliveriesAfter time.Duration

	down    atomic.Bool
	outages sync.WaitGroup

	mu      sync.Mutex
	count   int           // outages survived
	downFor time.Duration // in total
	seen    map[types.UID]seenObject
	gone    []goneWhileDown // objects that left etcd while the database was cut
	// leftLive counts, after each archive-committed crash, the objects committed to the
	// archive and still in etcd (the next leader archives them again, counting nothing twice,
	// and deletes them).
	leftLive []int
	sampling sync.WaitGroup
}

// seenObject is an archivable object the harness saw in etcd at some point of the run.
type seenObject struct {
	kind      archive.Kind
	namespace string
	name      string
}

// goneWhileDown is an object in etcd when an outage began and gone when it ended.
type goneWhileDown struct {
	seenObject
	uid    types.UID
	downAt time.Time
}

// setupArchive starts PostgreSQL (internal/pgtest: skipped without the binaries, failed under
// CI=true) with a database of the run, and the proxy in front of it.
func (h *harness) setupArchive() {
	t := h.t
	a := &archiveRig{after: defaultArchiveAfter, seen: map[types.UID]seenObject{}}
	if d, err := time.ParseDuration(os.Getenv("CHAOS_ARCHIVE_AFTER")); err == nil && d >= time.Second {
		a.after = d
	}
	a.deliveriesAfter = a.after
	if d, err := time.ParseDuration(os.Getenv("CHAOS_ARCHIVE_DELIVERIES_AFTER")); err == nil && d >= 0 {
		a.deliveriesAfter = d
	}
	a.srv = pgtest.Start(t)
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	dsn, err := a.srv.NewDatabase(ctx)
	if err != nil {
		t.Fatalf("creating the archive's database: %v\n%s", err, a.srv.Log())
	}
	if a.proxy, err = pgtest.NewProxy(fmt.Sprintf("127.0.0.1:%d", a.srv.Port)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.proxy.Close)
	// The server trusts loopback and never asks for it, but the processes get a DSN with a
	// password, as in production: the leak check greps every log for it.
	pw := make([]byte, 12)
	_, _ = rand.Read(pw)
	password := "pg" + hex.EncodeToString(pw)
	h.secrets[password] = "archive DSN password"
	if !strings.Contains(dsn, "//postgres@") {
		t.Fatalf("unexpected DSN form from pgtest (no user postgres)")
	}
	a.dsn = a.proxy.DSN(strings.Replace(dsn, "//postgres@", "//postgres:"+password+"@", 1))
	if a.store, err = archive.Open(h.ctx, dsn, archive.Options{MaxConns: 4, ApplicationName: "paygate-chaos"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.store.Close)
	h.arch = a
	t.Logf("chaos: archive on PostgreSQL (port %d, proxy %s); retention %s (webhook deliveries %s), a pass every %s, batches of %d",
		a.srv.Port, a.proxy.Addr, a.after, a.deliveriesAfter, archiveInterval, archiveBatchSize)
}

// archiveArgs are the managers' archive flags.
func (a *archiveRig) archiveArgs() []string {
	after := a.after.String()
	return []string{"--archive-payments-after", after, "--archive-payouts-after", after,
		"--archive-invoices-after", after, "--archive-refunds-after", after, "--archive-webhook-deliveries-after", a.deliveriesAfter.String(),
		"--archive-interval", archiveInterval.String(), "--archive-batch-size", fmt.Sprint(archiveBatchSize)}
}

// waitMigrated waits until a manager migrated the archive's schema (the apiservers do not).
func (h *harness) waitMigrated() {
	h.eventually("a manager migrates the archive", 90*time.Second, func() error {
		v, err := h.arch.store.SchemaVersion(h.ctx)
		if err != nil {
			return err
		}
		if v < 1 {
			return fmt.Errorf("schema version %d", v)
		}
		return nil
	})
}

// archivable lists the archivable kinds' objects in etcd, metadata only.
var archivable = []struct {
	kind archive.Kind
	list string
}{
	{archive.KindPayment, "PaymentList"},
	{archive.KindPayout, "PayoutList"},
	{archive.KindInvoice, "InvoiceList"},
	{archive.KindWebhookDelivery, "WebhookDeliveryList"},
	{archive.KindRefund, "RefundList"},
}

// etcdObjects reads the UIDs of every archivable object in etcd (metadata only: cheap).
func (h *harness) etcdObjects(ctx context.Context) (map[types.UID]seenObject, error) {
	out := map[types.UID]seenObject{}
	for _, k := range archivable {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(paygatev1.GroupVersion.WithKind(k.list))
		if err := h.k8s.List(ctx, l); err != nil {
			return nil, err
		}
		for _, o := range l.Items {
			out[o.UID] = seenObject{kind: k.kind, namespace: o.Namespace, name: o.Name}
		}
	}
	return out, nil
}

func (a *archiveRig) remember(objs map[types.UID]seenObject) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uid, o := range objs {
		a.seen[uid] = o
	}
}

// sample remembers every archivable object in etcd every second until ctx ends, so that the
// checks can prove that every object that ever was in etcd ended in etcd or in the archive
// (nothing deleted before it was committed).
func (h *harness) sample(ctx context.Context) {
	a := h.arch
	a.sampling.Add(1)
	go func() {
		defer a.sampling.Done()
		for ctx.Err() == nil {
			if objs, err := h.etcdObjects(ctx); err == nil {
				a.remember(objs)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
}

// archiveOutage cuts the database for a few seconds under load (every process's connections
// drop and new ones are refused), then brings it back. Objects that leave etcd meanwhile are
// noted: each must have been committed before the cut.
func (h *harness) archiveOutage() bool {
	a := h.arch
	if !a.down.CompareAndSwap(false, true) {
		return false
	}
	a.outages.Add(1)
	go func() {
		defer a.outages.Done()
		before, err := h.etcdObjects(h.ctx)
		at := time.Now()
		a.proxy.Down()
		time.Sleep(archiveOutage + time.Duration(h.intn(3000))*time.Millisecond)
		after, err2 := h.etcdObjects(h.ctx)
		a.proxy.Up()
		took := time.Since(at)
		a.down.Store(false)
		a.remember(before)
		a.remember(after)
		a.mu.Lock()
		defer a.mu.Unlock()
		a.count++
		a.downFor += took
		if err != nil || err2 != nil {
			h.t.Logf("chaos: reading etcd around an archive outage: %v %v", err, err2)
			return
		}
		for uid, o := range before {
			if _, ok := after[uid]; !ok {
				a.gone = append(a.gone, goneWhileDown{seenObject: o, uid: uid, downAt: at})
			}
		}
	}()
	return true
}

// noteCommittedLive counts the objects both archived and in etcd, right after an
// archive-committed crash.
func (h *harness) noteCommittedLive() {
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	objs, err := h.etcdObjects(ctx)
	if err != nil {
		h.t.Logf("chaos: reading etcd after an archive-committed crash: %v", err)
		return
	}
	uids := make([]string, 0, len(objs))
	for uid := range objs {
		uids = append(uids, string(uid))
	}
	n, total := 0, 0
	for _, k := range archive.Kinds {
		if err := h.arch.store.Pool().QueryRow(ctx, "SELECT count(*) FROM "+string(k)+" WHERE uid = ANY($1)", uids).Scan(&n); err != nil {
			h.t.Logf("chaos: reading the archive after an archive-committed crash: %v", err)
			return
		}
		total += n
	}
	h.arch.remember(objs)
	h.arch.mu.Lock()
	h.arch.leftLive = append(h.arch.leftLive, total)
	h.arch.mu.Unlock()
}

// restoreArchive waits for an outage in progress to end.
func (h *harness) restoreArchive() {
	h.arch.outages.Wait()
}

// ---- the world: etcd and the archive ----

// archivedRow is one archive row's identity.
type archivedRow struct {
	kind       archive.Kind
	namespace  string
	name       string
	archivedAt time.Time
}

// archiveView is the archive's side of the world.
type archiveView struct {
	rows         map[types.UID]archivedRow
	byKind       map[archive.Kind]int
	live         map[archive.Kind]int // objects of each kind in etcd
	liveUIDs     map[types.UID]bool
	both         map[archive.Kind][]string // archived and still in etcd
	clash        []string                  // a name stored live and archived under two UIDs
	archivedLive map[string]bool
}

// readRows reads every row of kind, decoding its object into T.
func readRows[T any](ctx context.Context, s *archive.Store, kind archive.Kind, each func(uid types.UID, row archivedRow, obj *T)) error {
	rows, err := s.Pool().Query(ctx, "SELECT uid, namespace, name, archived_at, object FROM "+string(kind)+" ORDER BY uid")
	if err != nil {
		return fmt.Errorf("reading the archived %s: %w", kind, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			uid string
			r   = archivedRow{kind: kind}
			js  []byte
		)
		if err := rows.Scan(&uid, &r.namespace, &r.name, &r.archivedAt, &js); err != nil {
			return fmt.Errorf("reading the archived %s: %w", kind, err)
		}
		obj := new(T)
		if err := json.Unmarshal(js, obj); err != nil {
			return fmt.Errorf("decoding archived %s %s/%s: %w", kind, r.namespace, r.name, err)
		}
		each(types.UID(uid), r, obj)
	}
	return rows.Err()
}

// mergeArchive adds to w, read from etcd just before, every archived object no longer in etcd,
// so that every check covers the archived objects too: each object once, by UID (an object
// archived but still in etcd, a crash between the commit and the delete, is taken from etcd).
// etcd is read first: an object deleted after that read was committed before it was deleted,
// so it is in the archive read after.
func (h *harness) mergeArchive(w *world) error {
	ctx, cancel := context.WithTimeout(h.ctx, 60*time.Second)
	defer cancel()
	v := &archiveView{rows: map[types.UID]archivedRow{}, byKind: map[archive.Kind]int{}, live: map[archive.Kind]int{},
		liveUIDs: map[types.UID]bool{}, both: map[archive.Kind][]string{}, archivedLive: map[string]bool{}}
	type liveObject struct {
		uid     types.UID
		created time.Time
	}
	liveNames := map[string]liveObject{}
	addLive := func(kind archive.Kind, o metav1.Object) {
		v.live[kind]++
		v.liveUIDs[o.GetUID()] = true
		liveNames[string(kind)+"/"+o.GetNamespace()+"/"+o.GetName()] = liveObject{o.GetUID(), o.GetCreationTimestamp().Time}
	}
	for i := range w.payments {
		addLive(archive.KindPayment, &w.payments[i])
	}
	for i := range w.payouts {
		addLive(archive.KindPayout, &w.payouts[i])
	}
	for i := range w.invoices {
		addLive(archive.KindInvoice, &w.invoices[i])
	}
	for i := range w.deliveries {
		addLive(archive.KindWebhookDelivery, &w.deliveries[i])
	}
	for i := range w.refunds {
		addLive(archive.KindRefund, &w.refunds[i])
	}
	// keep reports whether an archived row is added to the world (not in etcd any more).
	keep := func(uid types.UID, r archivedRow, what string) bool {
		v.rows[uid] = r
		v.byKind[r.kind]++
		if live, ok := liveNames[string(r.kind)+"/"+r.namespace+"/"+r.name]; ok && live.uid != uid {
			v.clash = append(v.clash, fmt.Sprintf("%s %s/%s%s archived at %s as %s, in etcd as %s created at %s", r.kind, r.namespace, r.name, what,
				r.archivedAt.Format("15:04:05.000"), uid, live.uid, live.created.Format(time.TimeOnly)))
		}
		if v.liveUIDs[uid] {
			v.both[r.kind] = append(v.both[r.kind], r.namespace+"/"+r.name)
			return false
		}
		return true
	}
	err := readRows(ctx, h.arch.store, archive.KindPayment, func(uid types.UID, r archivedRow, p *paygatev1.Payment) {
		if keep(uid, r, "") {
			w.payments = append(w.payments, *p)
		}
	})
	if err == nil {
		err = readRows(ctx, h.arch.store, archive.KindPayout, func(uid types.UID, r archivedRow, p *paygatev1.Payout) {
			if keep(uid, r, "") {
				w.payouts = append(w.payouts, *p)
			}
		})
	}
	if err == nil {
		err = readRows(ctx, h.arch.store, archive.KindInvoice, func(uid types.UID, r archivedRow, inv *paygatev1.Invoice) {
			if keep(uid, r, " (period "+fmt.Sprint(inv.Spec.Period)+" of "+inv.Spec.SubscriptionRef.Name+")") {
				w.invoices = append(w.invoices, *inv)
			}
		})
	}
	if err == nil {
		err = readRows(ctx, h.arch.store, archive.KindWebhookDelivery, func(uid types.UID, r archivedRow, d *paygatev1.WebhookDelivery) {
			if keep(uid, r, " ("+d.Spec.EventType+" of "+d.Spec.Source.Kind+" "+d.Spec.Source.Name+")") {
				w.deliveries = append(w.deliveries, *d)
			}
		})
	}
	if err == nil {
		err = readRows(ctx, h.arch.store, archive.KindRefund, func(uid types.UID, r archivedRow, rf *paygatev1.Refund) {
			if keep(uid, r, " (of payment "+rf.Spec.Payment.TrxID+")") {
				w.refunds = append(w.refunds, *rf)
			}
		})
	}
	if err != nil {
		return err
	}
	entries, err := h.arch.store.ArchivedLive(ctx)
	if err != nil {
		return err
	}
	for _, e := range entries {
		v.archivedLive[e.UID] = true
	}
	w.archive = v
	return nil
}

// ---- etcd holds only live and recent objects ----

func firstNonZero(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

func microOf(t *metav1.MicroTime) time.Time {
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

// oldInEtcd lists the terminal objects in etcd that finished before cutoff and that the archiver
// should have moved (docs/archive.md, The archiver): a subscription's two latest invoices and
// the charges of an invoice still in etcd stay, whatever their age, and so does a payment,
// payout or refund whose attempt is still watched at now, and a refund whose payment is still in
// etcd. Finished is the archiver's own clock: a payment's settledAt, a payout's or refund's
// updatedAt, an invoice's paidAt or voidedAt, a delivery's deliveredAt or last attempt, else the
// creation. With deliveries false, deliveries stay (their retention is 0).
func oldInEtcd(w *world, cutoff, now time.Time, deliveries bool) []string {
	live := func(uid types.UID) bool { return w.archive == nil || w.archive.liveUIDs[uid] }
	latest := map[string][]int32{}
	liveInvoices := map[types.UID]bool{}
	liveInvoiceNames := map[string]bool{} // namespace/name: charges name their invoice by label
	for i := range w.invoices {
		inv := &w.invoices[i]
		if !live(inv.UID) {
			continue
		}
		liveInvoices[inv.UID] = true
		liveInvoiceNames[inv.Namespace+"/"+inv.Name] = true
		k := inv.Namespace + "/" + inv.Spec.SubscriptionRef.Name
		latest[k] = append(latest[k], inv.Spec.Period)
	}
	for k, ps := range latest {
		slices.Sort(ps)
		ps = slices.Compact(ps)
		latest[k] = ps[max(0, len(ps)-2):]
	}
	liveOwners := map[types.UID]bool{}
	for i := range w.subscriptions {
		liveOwners[w.subscriptions[i].UID] = true
	}
	for i := range w.payments {
		if live(w.payments[i].UID) {
			liveOwners[w.payments[i].UID] = true
		}
	}
	for i := range w.payouts {
		if live(w.payouts[i].UID) {
			liveOwners[w.payouts[i].UID] = true
		}
	}
	for uid := range liveInvoices {
		liveOwners[uid] = true
	}
	livePayments := map[string]bool{} // namespace/trx_id
	for i := range w.payments {
		if live(w.payments[i].UID) {
			livePayments[w.payments[i].Namespace+"/"+w.payments[i].Name] = true
		}
	}
	for i := range w.refunds {
		if live(w.refunds[i].UID) {
			liveOwners[w.refunds[i].UID] = true
		}
	}
	ownerLive := func(d *paygatev1.WebhookDelivery) bool {
		for _, o := range d.OwnerReferences {
			if liveOwners[o.UID] {
				return true
			}
		}
		return false
	}
	var old []string
	note := func(what string, o metav1.Object, at time.Time) {
		old = append(old, fmt.Sprintf("%s %s/%s finished %s", what, o.GetNamespace(), o.GetName(), at.Format(time.TimeOnly)))
	}
	for i := range w.payments {
		p := &w.payments[i]
		if !live(p.UID) || !p.Terminal() || p.Watched(now) {
			continue
		}
		owned := liveInvoiceNames[p.Namespace+"/"+p.Labels[paygatev1.LabelInvoice]]
		for _, o := range p.OwnerReferences {
			owned = owned || liveInvoices[o.UID]
		}
		if at := firstNonZero(microOf(p.Status.SettledAt), p.CreationTimestamp.Time); !owned && at.Before(cutoff) {
			note("payment", p, at)
		}
	}
	for i := range w.payouts {
		p := &w.payouts[i]
		if at := firstNonZero(microOf(p.Status.UpdatedAt), p.CreationTimestamp.Time); live(p.UID) && p.Terminal() && !p.Watched(now) && at.Before(cutoff) {
			note("payout", p, at)
		}
	}
	for i := range w.refunds {
		r := &w.refunds[i]
		if at := firstNonZero(microOf(r.Status.UpdatedAt), r.CreationTimestamp.Time); live(r.UID) && r.Terminal() && !r.Watched(now) &&
			!livePayments[r.Namespace+"/"+r.Spec.Payment.TrxID] && at.Before(cutoff) {
			note("refund", r, at)
		}
	}
	for i := range w.invoices {
		inv := &w.invoices[i]
		at := firstNonZero(microOf(inv.Status.PaidAt), timeOf(inv.Status.VoidedAt), inv.CreationTimestamp.Time)
		if live(inv.UID) && inv.Terminal() && at.Before(cutoff) &&
			!slices.Contains(latest[inv.Namespace+"/"+inv.Spec.SubscriptionRef.Name], inv.Spec.Period) {
			note("invoice", inv, at)
		}
	}
	for i := range w.deliveries {
		d := &w.deliveries[i]
		st := d.EffectiveStatus() // a delivery its first attempt delivered has no status stored
		var last time.Time
		if n := len(st.Attempts); n > 0 {
			last = st.Attempts[n-1].At.Time
		}
		at := firstNonZero(timeOf(st.DeliveredAt), last, d.CreationTimestamp.Time)
		// A delivery stays in etcd with its live owner (the owner's controller reads it to know
		// the event went out; docs/archive.md): a subscription's, or one whose owner waits itself.
		if deliveries && live(d.UID) && archive.DeliveryFinished(d) && at.Before(cutoff) && !ownerLive(d) {
			note("webhook delivery", d, at)
		}
	}
	return old
}

// drainArchive waits, once nothing moves, one retention and a few passes more: then every
// settled object but those the archiver keeps on purpose has left etcd. It returns when etcd
// holds nothing the archiver should have moved, or when that is overdue.
func (h *harness) drainArchive() {
	start := time.Now()
	deadline := start.Add(max(h.arch.after, h.arch.deliveriesAfter) + archiveSlack + 30*time.Second)
	for {
		w, err := h.etcdSnapshot()
		var left []string
		if err == nil {
			left = oldInEtcd(w, time.Now().Add(time.Hour), time.Now(), h.arch.deliveriesAfter > 0)
		}
		if err == nil && len(left) == 0 {
			h.t.Logf("chaos: the archiver moved every settled object within %s", time.Since(start).Round(time.Second))
			return
		}
		if time.Now().After(deadline) {
			h.t.Logf("chaos: %d settled objects still in etcd %s after the run converged%s", len(left), time.Since(start).Round(time.Second), examples(left))
			return
		}
		time.Sleep(2 * time.Second)
	}
}

// ---- checks ----

// checkArchive adds the archive's figures: what was archived, what etcd holds at the end, every
// object once across etcd and the archive, nothing deleted before it was committed, and the
// ledger check.
func (h *harness) checkArchive(w *world, f *figures, now time.Time) {
	a, v := h.arch, w.archive
	var perKind, inEtcd []string
	for _, k := range archive.Kinds {
		perKind = append(perKind, fmt.Sprintf("%s %d", k, v.byKind[k]))
		inEtcd = append(inEtcd, fmt.Sprintf("%s %d / %d", k, v.live[k], v.live[k]+v.byKind[k]-len(v.both[k])))
	}
	f.info("objects archived to PostgreSQL (rows per table)", "%s", strings.Join(perKind, ", "))
	f.info("objects left in etcd at the end / stored (etcd and archive)", "%s", strings.Join(inEtcd, ", "))
	old := oldInEtcd(w, now.Add(-(max(a.after, a.deliveriesAfter) + archiveSlack)), now, a.deliveriesAfter > 0)
	f.zero(fmt.Sprintf("settled objects in etcd past retention + %s (etcd holds only live and recent objects)", archiveSlack), len(old), old)

	var both, doubled []string
	for _, k := range archive.Kinds {
		for _, o := range v.both[k] {
			both = append(both, string(k)+" "+o)
		}
	}
	for uid, r := range v.rows {
		if v.liveUIDs[uid] && (r.kind == archive.KindPayment || r.kind == archive.KindPayout || r.kind == archive.KindRefund) && !v.archivedLive[string(uid)] {
			doubled = append(doubled, fmt.Sprintf("%s %s/%s", r.kind, r.namespace, r.name))
		}
	}
	sorted := func(s []string) []string { slices.Sort(s); return s }
	f.info("archived objects still in etcd at the end (a crash between commit and delete)", "%d%s", len(both), examples(sorted(both)))
	f.zero("archived payments, payouts and refunds in etcd without an archived_live entry (counted twice)", len(doubled), sorted(doubled))
	f.zero("names stored twice, in etcd and in the archive under another UID", len(v.clash), v.clash)

	a.mu.Lock()
	var lost []string
	for uid, o := range a.seen {
		if _, archived := v.rows[uid]; !archived && !v.liveUIDs[uid] {
			lost = append(lost, fmt.Sprintf("%s %s/%s", o.kind, o.namespace, o.name))
		}
	}
	var early []string
	for _, g := range a.gone {
		r, ok := v.rows[g.uid]
		if !ok || !r.archivedAt.Before(g.downAt) {
			early = append(early, fmt.Sprintf("%s %s/%s left etcd during the outage of %s", g.kind, g.namespace, g.name, g.downAt.Format(time.TimeOnly)))
		}
	}
	seen, outages, downFor, gone := len(a.seen), a.count, a.downFor, len(a.gone)
	leftLive := fmt.Sprint(a.leftLive)
	a.mu.Unlock()
	f.zero(fmt.Sprintf("objects seen in etcd during the run that are in neither etcd nor the archive (of %d seen)", seen), len(lost), sorted(lost))
	unavailable := 0
	for _, r := range h.ledger.all() {
		unavailable += r.unavailable
	}
	f.info("archive outages survived (database cut under load)", "%d, %s in all; %d answers 503 (retried); %d objects left etcd meanwhile, committed before the cut",
		outages, downFor.Round(100*time.Millisecond), unavailable, gone-len(early))
	f.zero("objects deleted from etcd during an outage that were not committed before it", len(early), early)

	h.mu.Lock()
	var fired, missed []string
	for _, p := range failpoint.ArchivePoints {
		fired = append(fired, fmt.Sprintf("%s %d", p, h.fired[p]))
		missed = append(missed, fmt.Sprintf("%s %d", p, h.notReached[p]))
	}
	h.mu.Unlock()
	f.info("archive failpoints that killed the leader", "%s (armed but not reached in time: %s); objects committed and still in etcd after each archive-committed crash: %s",
		strings.Join(fired, ", "), strings.Join(missed, ", "), leftLive)

	f.info("archiver passes that failed (managers' logs)", "%s", h.archiverFailures())

	h.checkReads(w, f)

	// The ledger check (paygate ledger check): carried forward against the archived rows, every
	// Balance against carried forward plus the live objects, the invariant.
	var res controllers.LedgerCheck
	var err error
	runs := 0
	for runs < 3 {
		runs++
		ctx, cancel := context.WithTimeout(h.ctx, 60*time.Second)
		res, err = controllers.CheckLedgers(ctx, h.k8s, a.store)
		cancel()
		if err == nil && len(res.Differences) == 0 {
			break
		}
		// A balance pass may still be catching up with the archiver's last pass.
		time.Sleep(3 * time.Second)
	}
	var diffs []string
	for _, d := range res.Differences {
		diffs = append(diffs, d.String())
	}
	if err != nil {
		diffs = append(diffs, "the check failed: "+err.Error())
	}
	f.need("ledger check (paygate ledger check: carried forward vs rows, balances vs carried forward + live)", len(diffs) == 0, "0 differences",
		"%d differences over %d balances and %d carried-forward entries (%d runs)%s", len(diffs), res.Balances, res.CarriedForward, runs, examples(diffs))
}

// archiverFailures sums up the managers' "Archiver pass failed" lines: the database out of
// reach (outages, a killed leader's connections) or refused by it (a product defect: every later
// check says what it cost).
func (h *harness) archiverFailures() string {
	logs, _ := filepath.Glob(filepath.Join(h.dir, "manager-*.log"))
	why := map[string]int{}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "Archiver pass failed") {
				continue
			}
			var e struct {
				Error string `json:"error"`
			}
			_ = json.Unmarshal([]byte(line), &e)
			k := "the database out of reach"
			if i := strings.Index(e.Error, "ERROR: "); i >= 0 {
				k = e.Error[i+len("ERROR: "):]
				k = strings.NewReplacer("\"", "'").Replace(k[:min(len(k), 110)])
			}
			why[k]++
		}
	}
	if len(why) == 0 {
		return "none"
	}
	return kindSummary(why)
}

func examples(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return " (e.g. " + strings.Join(s[:min(3, len(s))], "; ") + ")"
}

// checkReads compares every read of an earlier payment or payout (most of them archived by
// then) with the stored object: a read never contradicts the record, and a list by merchant_ref
// finds the payment exactly once.
func (h *harness) checkReads(w *world, f *figures) {
	payments, payouts := map[string]*paygatev1.Payment{}, map[string]*paygatev1.Payout{}
	for i := range w.payments {
		payments[w.payments[i].Namespace+"/"+w.payments[i].Name] = &w.payments[i]
	}
	for i := range w.payouts {
		payouts[w.payouts[i].Namespace+"/"+w.payouts[i].Name] = &w.payouts[i]
	}
	h.readMu.Lock()
	obs := slices.Clone(h.reads)
	h.readMu.Unlock()
	var wrong []string
	byWhat, archivedThen := map[string]int{}, 0
	for _, o := range obs {
		byWhat[o.what]++
		if _, ok := w.archive.rows[o.uidAtEnd(payments, payouts)]; ok {
			archivedThen++
		}
		switch o.what {
		case "get payment", "list payments by merchant_ref":
			p := payments[o.ns+"/"+o.id]
			switch {
			case p == nil:
				wrong = append(wrong, fmt.Sprintf("%s %s: not stored", o.what, o.id))
			case o.what == "list payments by merchant_ref" && (o.total != 1 || o.gotID != o.id):
				wrong = append(wrong, fmt.Sprintf("list by merchant_ref %s: total %d, first %q, want exactly %s", o.ref, o.total, o.gotID, o.id))
			case o.gotID != o.id || o.gotRef != p.Spec.MerchantReference:
				wrong = append(wrong, fmt.Sprintf("%s %s answered %s (ref %s)", o.what, o.id, o.gotID, o.gotRef))
			case terminalStatus(o.status) && o.status != string(p.Status.Phase):
				wrong = append(wrong, fmt.Sprintf("%s %s answered %s, stored %s", o.what, o.id, o.status, p.Status.Phase))
			}
		case "get payout":
			p := payouts[o.ns+"/"+o.id]
			switch {
			case p == nil:
				wrong = append(wrong, fmt.Sprintf("payout %s: not stored", o.id))
			case o.gotID != o.id:
				wrong = append(wrong, fmt.Sprintf("get payout %s answered %s", o.id, o.gotID))
			case terminalStatus(o.status) && o.status != string(p.Status.Phase):
				wrong = append(wrong, fmt.Sprintf("get payout %s answered %s, stored %s", o.id, o.status, p.Status.Phase))
			}
		}
	}
	f.info("reads of earlier payments and payouts", "%d (%s); %d of records archived by the end", len(obs), kindSummary(byWhat), archivedThen)
	f.zero("reads contradicting the stored record (live or archived)", len(wrong), wrong)
}

func terminalStatus(s string) bool { return s == "success" || s == "failed" }

// readObservation is one answered read of an earlier payment or payout.
type readObservation struct {
	what, ns, id, ref string
	gotID, gotRef     string
	status            string
	total             int
}

func (o readObservation) uidAtEnd(payments map[string]*paygatev1.Payment, payouts map[string]*paygatev1.Payout) types.UID {
	if o.what == "get payout" {
		if p := payouts[o.ns+"/"+o.id]; p != nil {
			return p.UID
		}
		return ""
	}
	if p := payments[o.ns+"/"+o.id]; p != nil {
		return p.UID
	}
	return ""
}

// etcdSnapshot is the world as etcd holds it, without the archive.
func (h *harness) etcdSnapshot() (*world, error) {
	w := &world{}
	var (
		pl  paygatev1.PaymentList
		pol paygatev1.PayoutList
		il  paygatev1.InvoiceList
		dl  paygatev1.WebhookDeliveryList
		rl  paygatev1.RefundList
	)
	for _, l := range []client.ObjectList{&pl, &pol, &il, &dl, &rl} {
		if err := h.k8s.List(h.ctx, l); err != nil {
			return nil, err
		}
	}
	w.payments, w.payouts, w.invoices, w.deliveries, w.refunds = pl.Items, pol.Items, il.Items, dl.Items, rl.Items
	return w, nil
}
