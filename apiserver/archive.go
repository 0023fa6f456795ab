// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/metrics"
)

// Reads that fall back to the archive (docs/archive.md, Reads in the API server). Settled
// payments, payouts and invoices older than a retention are moved to PostgreSQL and then deleted
// from etcd; the merchant API serves them from there exactly as it served them live: the same
// records, the same lists, the same replays of creates.

// Archive is what the API server reads from the archive of settled objects; *archive.Store
// satisfies it. Options.Archive nil means there is no archive: every read is live.
type Archive interface {
	GetPayment(ctx context.Context, namespace, name string) (*paygatev1.Payment, error)
	GetPayout(ctx context.Context, namespace, name string) (*paygatev1.Payout, error)
	GetInvoice(ctx context.Context, namespace, name string) (*paygatev1.Invoice, error)
	ListPayments(ctx context.Context, f archive.PaymentFilter, limit, offset int) (archive.Page[paygatev1.Payment], error)
	ListPayouts(ctx context.Context, f archive.PayoutFilter, limit, offset int) (archive.Page[paygatev1.Payout], error)
	ListInvoices(ctx context.Context, f archive.InvoiceFilter, limit, offset int) (archive.Page[paygatev1.Invoice], error)
	GetRefund(ctx context.Context, namespace, name string) (*paygatev1.Refund, error)
	ListRefunds(ctx context.Context, f archive.RefundFilter, limit, offset int) (archive.Page[paygatev1.Refund], error)
	RefundsOfPayments(ctx context.Context, namespace string, trxIDs []string) (map[string][]paygatev1.Refund, error)
	GetWebhookDelivery(ctx context.Context, namespace, name string) (*paygatev1.WebhookDelivery, error)
	ListWebhookDeliveries(ctx context.Context, f archive.DeliveryFilter, limit, offset int) (archive.Page[paygatev1.WebhookDelivery], error)
	ListWebhookEvents(ctx context.Context, q archive.EventQuery, limit int) ([]paygatev1.WebhookDelivery, error)
	WebhookDeliveryByEvent(ctx context.Context, namespace, eventID string) (*paygatev1.WebhookDelivery, error)
	Archived(ctx context.Context, kind archive.Kind, uids []string) (map[string]bool, error)
	CreateUnlessArchived(ctx context.Context, key archive.NameKey, create func()) (archived bool, err error)
}

var _ Archive = (*archive.Store)(nil)

// noArchive turns a nil *archive.Store stored in the interface (a configuration without an
// archive, assigned as is) into no archive at all.
func noArchive(a Archive) Archive {
	if st, ok := a.(*archive.Store); ok && st == nil {
		return nil
	}
	return a
}

// archiveReadTimeout bounds one read of the archive: a database that does not answer (a network
// partition, not a refused connection) costs a request this long at most, then 503.
const archiveReadTimeout = 10 * time.Second

// archiveError is a read the archive could not answer (its database down, unreachable or
// failing). serverError answers it 503 SERVICE_UNAVAILABLE, never 500, and never "not found".
type archiveError struct {
	op  string
	err error
}

func (e *archiveError) Error() string { return "reading the archive (" + e.op + "): " + e.err.Error() }
func (e *archiveError) Unwrap() error { return e.err }

// errArchiveUnavailable answers a request that needs the archive while it cannot be read. The
// message does not say where records live: the merchant cannot tell an archived record from a
// live one, and retries.
var errArchiveUnavailable = &APIError{Status: http.StatusServiceUnavailable, Label: LabelServiceUnavailable,
	Message: "Records cannot be read at the moment; try again shortly."}

// fromArchive runs one read of the archive under archiveReadTimeout, measures it
// (paygate_archive_read_seconds{operation=op}) and wraps any error but archive.ErrNotFound in an
// archiveError.
func fromArchive[R any](ctx context.Context, op string, read func(context.Context) (R, error)) (R, error) {
	ctx, cancel := context.WithTimeout(ctx, archiveReadTimeout)
	defer cancel()
	start := time.Now()
	r, err := read(ctx)
	result := metrics.ArchiveReadOK
	switch {
	case errors.Is(err, archive.ErrNotFound):
		result = metrics.ArchiveReadNotFound
	case err != nil:
		result = metrics.ArchiveReadError
		err = &archiveError{op: op, err: err}
	}
	metrics.ArchiveReadSeconds.WithLabelValues(op, result).Observe(time.Since(start).Seconds())
	return r, err
}

// ownedObject is a pointer to an object kind T that belongs to one merchant and environment.
type ownedObject[T any] interface {
	*T
	merchantObject
}

// archivedObject reads the caller's object name from the archive, when there is one: nil when
// it is not archived, or belongs to another merchant or environment (the caller cannot tell the
// two apart, as with live objects); an archiveError when the archive cannot answer.
func archivedObject[T any, PT ownedObject[T]](ctx context.Context, s *Server, c *caller, op, name string,
	get func(context.Context, string, string) (*T, error)) (PT, error) {
	if s.opts.Archive == nil {
		return nil, nil
	}
	obj, err := fromArchive(ctx, op, func(ctx context.Context) (*T, error) { return get(ctx, c.merchant.Namespace, name) })
	if errors.Is(err, archive.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ownedBy(PT(obj), c), nil
}

// readArchivable reads the caller's object name of a kind the archive holds (payments, payouts).
// From the cache first. When the cache does not have it, the archive is asked before the
// Kubernetes API server: a settled object archived long ago then costs one indexed query, not a
// live read as well (a verify of an archived payment took 19 ms, most of it the live read that
// found nothing). live reads the API server first (after a write conflict). The order keeps every
// answer of the live-first one:
//   - an object created a moment ago, which the cache has not seen yet, is not archived: the live
//     read finds it, even while the archive cannot be read;
//   - the archiver commits an object's row before it deletes the object from etcd, so an object
//     that was in neither the archive's answer nor the live read may have been archived between
//     the two: the archive is asked once more before the answer is "no such object";
//   - when the archive cannot answer and the live read finds nothing, the answer is the archive's
//     error (503), as it was.
//
// An object of another merchant or environment is not found (nil), wherever it is.
func readArchivable[T any, PT ownedObject[T]](ctx context.Context, s *Server, c *caller, name string, live bool,
	op string, get func(context.Context, string, string) (*T, error), cacheOpts ...client.GetOption) (PT, error) {
	key := client.ObjectKey{Namespace: c.merchant.Namespace, Name: name}
	obj := PT(new(T))
	var archiveErr error // the first archive read's, when it could not answer
	if !live {
		err := s.opts.Cache.Get(ctx, key, obj, cacheOpts...)
		if err == nil {
			return ownedBy(obj, c), nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
		archived, err := archivedObject[T, PT](ctx, s, c, op, name, get)
		if err == nil && archived != nil {
			return archived, nil
		}
		archiveErr = err
	}
	err := s.opts.APIReader.Get(ctx, key, obj)
	if err == nil {
		return ownedBy(obj, c), nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	if archiveErr != nil { // not asked twice: a database that hangs would hold the answer twice as long
		return nil, archiveErr
	}
	return archivedObject[T, PT](ctx, s, c, op, name, get)
}

// ownedBy is obj when it belongs to the caller's merchant and environment, else nil.
func ownedBy[PT merchantObject](obj PT, c *caller) PT {
	if !c.owns(obj) {
		var none PT
		return none
	}
	return obj
}

// createOnce creates obj, a payment or payout whose name is deterministic (the API's idempotency
// rests on it), unless an object with that name exists: live, or archived and deleted from etcd.
// Then it returns an AlreadyExists error, as the Kubernetes API server would for a live one, and
// the caller answers as it does for a duplicate; a second object with the name is never created.
//
// Without an archive it is Writer.Create. With one it asks the archive, then creates, holding the
// archive's shared lock on the name across both (archive.Store.CreateUnlessArchived); the archiver
// deletes an archived object from etcd only under the exclusive lock on its name. So either the
// archive holds the name (AlreadyExists, nothing created), or the object, if it exists, is still in
// etcd when the create runs, and the Kubernetes API server refuses it. This costs the create no
// live read: one database round trip for the lock and the archive's answer, one for the commit.
// An archive that cannot answer creates nothing (503).
func createOnce[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, s *Server, obj PT, kind archive.Kind, resource, op string) error {
	if s.opts.Archive == nil {
		return s.opts.Writer.Create(ctx, obj)
	}
	var created error
	archived, err := fromArchive(ctx, op, func(actx context.Context) (bool, error) {
		return s.opts.Archive.CreateUnlessArchived(actx, archive.NameKey{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()},
			func() { created = s.opts.Writer.Create(ctx, obj) })
	})
	switch {
	case err != nil:
		return err
	case archived:
		return apierrors.NewAlreadyExists(schema.GroupResource{Group: paygatev1.GroupVersion.Group, Resource: resource}, obj.GetName())
	}
	return created
}

// isArchiveError reports whether err is the archive failing to answer.
func isArchiveError(err error) bool {
	var ae *archiveError
	return errors.As(err, &ae)
}

// listKind describes one merged list (docs/archive.md, Merged lists): how its items are
// identified and ordered, and how to read a page of the archived ones the request's filter
// selects.
type listKind[T any] struct {
	kind archive.Kind
	// uid identifies an item; terminal says whether it may be archived.
	uid      func(*T) string
	terminal func(*T) bool
	// compare is the list's order, total: the API's order with the UID last.
	compare func(a, b *T) int
	// archived reads the page [offset, offset+limit) of the archived items the filter selects,
	// in the list's order, with their total; nil when the filter selects nothing the archive can
	// hold (a status no archived object has), so the archive is not asked.
	archived func(ctx context.Context, limit, offset int) (archive.Page[T], error)
}

// mergedPage returns the page [offset, offset+limit) of the merged list and its total: live,
// the live items the request's filter selects (a list index's range, or the cache's items
// sorted), and the archived ones (docs/archive.md, Merged lists). It asks the archive which of
// the live terminal items it holds already (an archiver stopped between its commit and its
// delete; they are counted once, from the archive: live.archivedLive, which an index answers
// from what it knows, asking only about what changed), then reads one page whatever the offset.
// The live items are read twice, for the window and for the merge; when more arrived in between
// than the window allows for, the window is read again, the third time from a copy. live's items
// may be the cache's own objects: they are only read, and the page is what the caller copies.
func mergedPage[T any](ctx context.Context, s *Server, k listKind[T], live liveItems[T], limit, offset int) ([]T, int, error) {
	if s.opts.Archive == nil || k.archived == nil {
		var page []T
		total := 0
		live.read(nil, func(seq liveSeq[T]) { page, total = pageOf(seq, offset, limit), seq.Len() })
		return page, total, nil
	}
	held, err := live.archivedLive(ctx, s, k)
	if err != nil {
		return nil, 0, err
	}
	for attempt := 0; ; attempt++ {
		nLive := 0
		live.read(held, func(seq liveSeq[T]) { nLive = seq.Len() })
		start, n := archiveWindow(offset, limit, nLive)
		window, err := fromArchive(ctx, "list_"+string(k.kind), func(ctx context.Context) (archive.Page[T], error) {
			return k.archived(ctx, n, start)
		})
		if err != nil {
			return nil, 0, err
		}
		st := live.stats()
		st.archiveQueries++
		st.archiveRows += len(window.Items)
		var page []T
		total, merged := 0, false
		live.read(held, func(seq liveSeq[T]) {
			if s, _ := archiveWindow(offset, limit, seq.Len()); s < start {
				return // more live items than a moment ago: the window must start earlier
			}
			page, total = mergeLive(seq, window.Items, start, window.Total, offset, limit, k.compare)
			merged = true
		})
		if merged {
			return page, total, nil
		}
		if attempt == 1 {
			live = live.frozen(held)
		}
	}
}

// sortedByPointer returns live sorted by compare. It sorts pointers and copies each item once:
// sorting the items themselves would copy two of them for every comparison (a Payment is some
// 700 bytes), which made a list of 10,000 payments cost a third of a second of CPU.
func sortedByPointer[T any](live []T, compare func(a, b *T) int) []T {
	ptrs := make([]*T, len(live))
	for i := range live {
		ptrs[i] = &live[i]
	}
	slices.SortFunc(ptrs, compare)
	sorted := make([]T, len(live))
	for i, p := range ptrs {
		sorted[i] = *p
	}
	return sorted
}
