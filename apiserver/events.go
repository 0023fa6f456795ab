// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/kube"
)

// +kubebuilder:rbac:groups=paygate.dev,resources=webhookdeliveries,verbs=get;list;watch;patch

// The merchant's events (docs/api.md, Events): every webhook event of the merchant's environment,
// live and archived, oldest first, read from a cursor. An event is one WebhookDelivery; its
// position is (creationTimestamp, name, UID) in eventOrder, the exact reverse of the delivery
// list's order (compareDeliveries), so that the live side is the delivery index's range read
// backwards by position and the archived side a backward scan of the archive's ordered indexes
// (archive.EventOrder). A page is the first limit events strictly after the cursor's position of
// the merge of the two by that position. The cursor is a position, not an offset: an event
// archived between two pages keeps its position, and is listed once, from whichever side holds
// it when its page is read.
//
// The live side is read before the archive: the archiver commits a delivery's row before it
// deletes the delivery, so a delivery the cache no longer holds is in the archive by the time the
// archive is read. A live delivery the archive holds too (archived, not yet deleted) is one
// position: it is listed once, from the archive.

const (
	defaultEventLimit = 20
	maxEventLimit     = 100
	// eventPayloadReads bounds the concurrent live reads of a page's payloads.
	eventPayloadReads = 8
	// eventSettle is how old an event must be to be listed. Events are ordered by their creation
	// second and then by name, and an event reaches this replica's cache a moment after it is
	// created: without the wait, a page read in the second an event is created could end with a
	// cursor that sorts after an event of the same second not yet seen, or after a slightly older
	// one still on its way, and the next page would pass over it. Every event of a second is in
	// the cache long before the second is eventSettle old, so a cursor never passes an event that
	// can still appear before it.
	eventSettle = 5 * time.Second
	// eventIDIndex is the apiserver's index of the WebhookDelivery informer's store by
	// namespace and spec.eventID (eventIDKey).
	eventIDIndex = "paygate.dev/event-id"
)

// eventIDPattern is an event id (the WebhookDelivery CRD's spec.eventID pattern).
var eventIDPattern = regexp.MustCompile(`^evt_[a-z0-9]{16,64}$`)

// eventTypePattern is an event type as a filter: lower-case words joined by dots and underscores.
var eventTypePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)

// compareEvents is the events list's order: oldest first, the reverse of compareDeliveries.
func compareEvents(a, b *paygatev1.WebhookDelivery) int { return compareDeliveries(b, a) }

// eventQuery is a parsed GET /api/v1/events.
type eventQuery struct {
	limit     int
	after     string    // an event id, or ""
	since     time.Time // zero: none
	eventType string
}

// parseEventQuery reads the list's parameters; problems go to v, each under its parameter.
func parseEventQuery(v validation, q url.Values) eventQuery {
	var eq eventQuery
	eq.limit = queryInt(v, q.Get("limit"), "limit", defaultEventLimit, 1, maxEventLimit)
	if a := q.Get("after"); a != "" {
		if !eventIDPattern.MatchString(a) {
			v.add("after", "The after must be an event id (evt_ and 16 to 64 lower-case letters or digits).")
		}
		eq.after = a
	}
	if raw := q.Get("since"); raw != "" {
		t, err := time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			v.add("since", "The since must be an RFC 3339 time, such as 2026-01-31T09:00:00Z.")
		}
		eq.since = t
	}
	if eq.after != "" && q.Get("since") != "" {
		v.add("since", "Give after or since, not both.")
	}
	if t := q.Get("type"); t != "" {
		if len(t) > 64 || !eventTypePattern.MatchString(t) {
			v.add("type", "The type must be an event type, such as payment.completed.")
		}
		eq.eventType = t
	}
	return eq
}

// eventCursor is where a page starts: strictly after a position, or at a time (inclusive), or
// from the first event.
type eventCursor struct {
	after *archive.EventPosition
	since time.Time
}

func positionOf(d *paygatev1.WebhookDelivery) *archive.EventPosition {
	return &archive.EventPosition{Created: d.CreationTimestamp.Time, Name: d.Name, UID: string(d.UID)}
}

// probe is a delivery at the cursor's position in the delivery order: the deliveries that sort
// before it (newer) are the ones the page may list. From a time, the probe sorts after every
// delivery created at that second or later (its name sorts after every name).
func (c eventCursor) probe() *paygatev1.WebhookDelivery {
	switch {
	case c.after != nil:
		return &paygatev1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(c.after.Created),
			Name: c.after.Name, UID: types.UID(c.after.UID)}}
	case !c.since.IsZero():
		return &paygatev1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(c.since), Name: "\xff"}}
	}
	return nil
}

// admits reports whether d comes after the cursor (the events a page may list).
func (c eventCursor) admits(d *paygatev1.WebhookDelivery) bool {
	p := c.probe()
	return p == nil || compareDeliveries(d, p) < 0
}

// liveEvents is up to n of the caller's live events of eventType ("" any) after cur, in
// eventOrder: the delivery index's range read backwards from the cursor's rank, O(log n + n);
// the cache listed and sorted until the index has synced.
func (s *Server) liveEvents(ctx context.Context, c *caller, eventType string, cur eventCursor, n int) ([]paygatev1.WebhookDelivery, error) {
	if x := s.lists.deliveryIndex(); x.ready() {
		facet, key := facetOf("", eventType)
		st := &listStats{indexed: true}
		x.mu.RLock()
		r := x.rangeOf(callerBucket(c), facet, key, timeSpan{}, st, nil)
		end := r.Len()
		if p := cur.probe(); p != nil {
			end = r.Rank(p)
		}
		out := make([]paygatev1.WebhookDelivery, 0, min(n, end))
		for i := end - 1; i >= 0 && len(out) < n; i-- {
			out = append(out, *r.At(i)) // a shallow copy: only read
		}
		x.mu.RUnlock()
		s.observeList("events", st)
		return out, nil
	}
	var list paygatev1.WebhookDeliveryList
	if err := s.listOwn(ctx, c, &list); err != nil {
		return nil, err
	}
	items := list.Items[:0]
	for i := range list.Items {
		d := &list.Items[i]
		if d.Spec.MerchantRef.Name == c.merchant.Name && d.Spec.Environment == c.env &&
			(eventType == "" || d.Spec.EventType == eventType) && cur.admits(d) {
			items = append(items, *d)
		}
	}
	slices.SortFunc(items, func(a, b paygatev1.WebhookDelivery) int { return compareEvents(&a, &b) })
	s.observeList("events", &listStats{live: len(list.Items)})
	return items[:min(n, len(items))], nil
}

// mergeEvents merges live and archived events (each in eventOrder) by position, a position
// held by both listed once, from the archive, and keeps the first n.
func mergeEvents(live, archived []paygatev1.WebhookDelivery, n int) []paygatev1.WebhookDelivery {
	out := make([]paygatev1.WebhookDelivery, 0, min(n, len(live)+len(archived)))
	i, j := 0, 0
	for len(out) < n && (i < len(live) || j < len(archived)) {
		switch {
		case j == len(archived):
			out, i = append(out, live[i]), i+1
		case i == len(live):
			out, j = append(out, archived[j]), j+1
		default:
			c := compareEvents(&live[i], &archived[j])
			if c == 0 || live[i].UID == archived[j].UID {
				i++ // the same delivery, archived and not deleted yet
				continue
			}
			if c < 0 {
				out, i = append(out, live[i]), i+1
			} else {
				out, j = append(out, archived[j]), j+1
			}
		}
	}
	return out
}

// eventsPage is the first limit of the caller's events of eventType after cur, live and
// archived merged, and whether more follow. Each read side returns limit+1: the first limit+1
// positions of the merge are among them.
func (s *Server) eventsPage(ctx context.Context, c *caller, eventType string, cur eventCursor, limit int) ([]paygatev1.WebhookDelivery, bool, error) {
	live, err := s.liveEvents(ctx, c, eventType, cur, limit+1)
	if err != nil {
		return nil, false, err
	}
	var archived []paygatev1.WebhookDelivery
	if s.opts.Archive != nil {
		q := archive.EventQuery{Filter: archive.DeliveryFilter{Namespace: c.merchant.Namespace, Merchant: c.merchant.Name,
			Environment: c.env, EventType: eventType}, After: cur.after, Since: cur.since}
		archived, err = fromArchive(ctx, "list_webhook_events", func(ctx context.Context) ([]paygatev1.WebhookDelivery, error) {
			return s.opts.Archive.ListWebhookEvents(ctx, q, limit+1)
		})
		if err != nil {
			return nil, false, err
		}
		// A live event the archive holds too is listed once, from the archive, even when the
		// archived copy differs in a field the order reads (never expected: the position is the
		// creation time and name).
		archivedUIDs := make(map[string]bool, len(archived))
		for i := range archived {
			archivedUIDs[string(archived[i].UID)] = true
		}
		live = slices.DeleteFunc(live, func(d paygatev1.WebhookDelivery) bool { return archivedUIDs[string(d.UID)] })
	}
	page := settled(mergeEvents(live, archived, limit+1), s.opts.Clock.Now().Add(-eventSettle))
	if len(page) > limit {
		return page[:limit], true, nil
	}
	return page, false, nil
}

// settled is the start of page (in eventOrder) created before cutoff: the events a cursor may
// pass (eventSettle). The ones after wait for a later page.
func settled(page []paygatev1.WebhookDelivery, cutoff time.Time) []paygatev1.WebhookDelivery {
	if i := slices.IndexFunc(page, func(d paygatev1.WebhookDelivery) bool { return !d.CreationTimestamp.Time.Before(cutoff) }); i >= 0 {
		return page[:i]
	}
	return page
}

// eventByID finds the caller's delivery of an event id: live (the cache's eventIDIndex, then
// the Kubernetes API under the name the id derives from, for an event this replica's cache has
// not seen yet), then the archive. nil when there is none, or it is another merchant's or
// environment's.
func (s *Server) eventByID(ctx context.Context, c *caller, id string) (*paygatev1.WebhookDelivery, error) {
	if !eventIDPattern.MatchString(id) {
		return nil, nil
	}
	var found *paygatev1.WebhookDelivery
	if idx := s.eventIDs; idx != nil {
		objs, err := idx.ByIndex(eventIDIndex, eventIDKey(c.merchant.Namespace, id))
		if err != nil {
			return nil, fmt.Errorf("looking event %s up: %w", id, err)
		}
		for _, o := range objs {
			if d, ok := o.(*paygatev1.WebhookDelivery); ok && c.owns(d) {
				found = d
			}
		}
	} else {
		var list paygatev1.WebhookDeliveryList
		if err := s.listOwn(ctx, c, &list); err != nil {
			return nil, fmt.Errorf("looking event %s up: %w", id, err)
		}
		for i := range list.Items {
			if list.Items[i].Spec.EventID == id && c.owns(&list.Items[i]) {
				found = &list.Items[i]
			}
		}
	}
	if found != nil {
		return found.DeepCopy(), nil
	}
	if s.opts.APIReader != nil {
		d := &paygatev1.WebhookDelivery{}
		key := client.ObjectKey{Namespace: c.merchant.Namespace, Name: "whd-" + strings.TrimPrefix(id, "evt_")}
		err := s.opts.APIReader.Get(ctx, key, d)
		switch {
		case err == nil && d.Spec.EventID == id && c.owns(d):
			return d, nil
		case err != nil && !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading event %s: %w", id, err)
		}
	}
	if s.opts.Archive == nil {
		return nil, nil
	}
	d, err := fromArchive(ctx, "get_webhook_event", func(ctx context.Context) (*paygatev1.WebhookDelivery, error) {
		return s.opts.Archive.WebhookDeliveryByEvent(ctx, c.merchant.Namespace, id)
	})
	if errors.Is(err, archive.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ownedBy(d, c), nil
}

func eventIDKey(namespace, id string) string { return namespace + "/" + id }

// eventIDIndexer adds eventIDIndex to the WebhookDelivery informer of r when r is an informer
// cache (the running apiserver), and returns the store to ask; nil otherwise (a plain client in
// unit tests), when eventByID lists the merchant's deliveries.
func eventIDIndexer(r client.Reader) toolscache.Indexer {
	return kube.InformerIndexer(r, &paygatev1.WebhookDelivery{}, eventIDIndex, func(o any) ([]string, error) {
		if d, ok := o.(*paygatev1.WebhookDelivery); ok {
			return []string{eventIDKey(d.Namespace, d.Spec.EventID)}, nil
		}
		return nil, nil
	})
}

var errEventNotFound = &APIError{Status: http.StatusNotFound, Label: LabelNotFound, Message: "Event not found."}

// listEvents answers GET /api/v1/events.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	v := validation{}
	q := parseEventQuery(v, r.URL.Query())
	if len(v) > 0 {
		writeError(w, validationError(v))
		return
	}
	ctx := r.Context()
	cur := eventCursor{since: q.since}
	if q.after != "" {
		d, err := s.eventByID(ctx, c, q.after)
		if err != nil {
			s.serverError("Reading an event", err).write(w)
			return
		}
		if d == nil {
			writeError(w, &APIError{Status: http.StatusNotFound, Label: LabelNotFound,
				Message: "The after event " + q.after + " is not one of your events."})
			return
		}
		cur = eventCursor{after: positionOf(d)}
	}
	page, more, err := s.eventsPage(ctx, c, q.eventType, cur, q.limit)
	if err != nil {
		s.serverError("Listing events", err).write(w)
		return
	}
	recs, err := s.eventRecords(ctx, c, page)
	if err != nil {
		s.serverError("Reading event payloads", err).write(w)
		return
	}
	var next any // the last event's id; the request's after on an empty page; null without either
	switch {
	case len(recs) > 0:
		next = recs[len(recs)-1].ID
	case q.after != "":
		next = q.after
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"status":     "success",
		"data":       recs,
		"pagination": map[string]any{"limit": q.limit, "count": len(recs), "has_more": more, "next_after": next},
	})
}

// eventRecord is an event as the API answers it (docs/api.md, Events).
type eventRecord struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt string          `json:"created_at"`
	Payload   json.RawMessage `json:"payload"`
	Delivery  eventDelivery   `json:"delivery"`
}

type eventDelivery struct {
	Status           paygatev1.DeliveryPhase `json:"status"`
	Attempts         int32                   `json:"attempts"`
	LastResponseCode *int32                  `json:"last_response_code"`
	DeliveredAt      *string                 `json:"delivered_at"`
	NextAttemptAt    *string                 `json:"next_attempt_at"`
}

func eventRecordOf(d *paygatev1.WebhookDelivery) (eventRecord, error) {
	if !json.Valid([]byte(d.Spec.Payload)) {
		return eventRecord{}, fmt.Errorf("event %s: the payload is not JSON", d.Spec.EventID)
	}
	st := d.EffectiveStatus()
	rec := eventRecord{ID: d.Spec.EventID, Type: d.Spec.EventType, CreatedAt: formatTime(d.CreationTimestamp.Time),
		Payload: json.RawMessage(d.Spec.Payload), Delivery: eventDelivery{Status: d.Phase(), Attempts: st.TotalAttempts}}
	if n := len(st.Attempts); n > 0 && st.Attempts[n-1].StatusCode != 0 {
		code := st.Attempts[n-1].StatusCode
		rec.Delivery.LastResponseCode = &code
	}
	if st.DeliveredAt != nil {
		at := formatTime(st.DeliveredAt.Time)
		rec.Delivery.DeliveredAt = &at
	}
	if st.NextAttemptAt != nil && d.Phase() == paygatev1.DeliveryPending {
		at := formatTime(st.NextAttemptAt.Time)
		rec.Delivery.NextAttemptAt = &at
	}
	return rec, nil
}

// eventRecords renders a page. The cache holds no payloads: each live event's delivery is read
// from the Kubernetes API (eventPayloadReads at a time), an event deleted since the page was read
// from the archive, and one that is in neither (deleted without being archived) is left out.
// Archived events carry their payload.
func (s *Server) eventRecords(ctx context.Context, c *caller, page []paygatev1.WebhookDelivery) ([]eventRecord, error) {
	full := make([]*paygatev1.WebhookDelivery, len(page))
	errs := make([]error, len(page))
	sem := make(chan struct{}, eventPayloadReads)
	var wg sync.WaitGroup
	for i := range page {
		if page[i].Spec.Payload != "" {
			full[i] = &page[i]
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			full[i], errs[i] = s.eventWithPayload(ctx, c, &page[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	recs := make([]eventRecord, 0, len(page))
	for _, d := range full {
		if d == nil {
			continue
		}
		rec, err := eventRecordOf(d)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// eventWithPayload reads the cached delivery d with its payload: live, else archived; nil when
// it is in neither under its UID.
func (s *Server) eventWithPayload(ctx context.Context, c *caller, d *paygatev1.WebhookDelivery) (*paygatev1.WebhookDelivery, error) {
	full := &paygatev1.WebhookDelivery{}
	err := s.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(d), full)
	switch {
	case err == nil && full.UID == d.UID:
		return full, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading webhook delivery %s: %w", d.Name, err)
	}
	if s.opts.Archive == nil {
		return nil, nil
	}
	archived, err := archivedObject[paygatev1.WebhookDelivery](ctx, s, c, "get_webhook_delivery", d.Name, s.archiveGetWebhookDelivery)
	if err != nil || archived == nil || archived.UID != d.UID {
		return nil, err
	}
	return archived, nil
}

// redeliverEvent answers POST /api/v1/events/{id}/redeliver: a new round of attempts for a live
// event (the redeliver annotation, set to redeliveryValue), 202 with the event. An archived
// event, or one without a receiver, is 409.
func (s *Server) redeliverEvent(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	ctx := r.Context()
	id := r.PathValue("id")
	d, err := s.eventByID(ctx, c, id)
	if err != nil {
		s.serverError("Reading an event", err).write(w)
		return
	}
	if d == nil {
		writeError(w, errEventNotFound)
		return
	}
	live := &paygatev1.WebhookDelivery{}
	err = s.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(d), live)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && live.UID != d.UID):
		writeError(w, &APIError{Status: http.StatusConflict, Label: LabelEventArchived,
			Message: "Event " + id + " is archived and can no longer be redelivered; its payload is in the events list."})
		return
	case err != nil:
		s.serverError("Reading an event", fmt.Errorf("reading webhook delivery %s: %w", d.Name, err)).write(w)
		return
	}
	switch live.Phase() {
	case paygatev1.DeliveryNoEndpoint:
		writeError(w, &APIError{Status: http.StatusConflict, Label: LabelEventNotRedeliverable,
			Message: "Event " + id + " has no webhook URL to deliver to."})
		return
	case paygatev1.DeliveryPending:
		writeError(w, &APIError{Status: http.StatusConflict, Label: LabelEventNotRedeliverable,
			Message: "Event " + id + " is still being delivered; it can be redelivered once it is delivered or abandoned."})
		return
	}
	value := redeliveryValue(r, id, s.opts.Clock.Now())
	if live.Annotations[paygatev1.AnnotationRedeliver] != value && live.Status.Redelivery != value {
		patch := client.MergeFrom(live.DeepCopy())
		if live.Annotations == nil {
			live.Annotations = map[string]string{}
		}
		live.Annotations[paygatev1.AnnotationRedeliver] = value
		if err := s.opts.Writer.Patch(ctx, live, patch); err != nil {
			s.serverError("Redelivering an event", fmt.Errorf("annotating webhook delivery %s: %w", live.Name, err)).write(w)
			return
		}
		s.opts.Log.Info("Event redelivery requested", "event", id, "delivery", live.Name, "merchant", c.merchant.Name, "environment", c.env)
	}
	rec, err := eventRecordOf(live)
	if err != nil {
		s.serverError("Rendering an event", err).write(w)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"status": "success", "data": rec})
}

// redeliveryValue is the redeliver annotation a request sets: derived from its Idempotency-Key,
// else its signature, so a replayed request sets the value already set and starts no second
// round; a request with neither (an unsigned sandbox request) gets the time's.
func redeliveryValue(r *http.Request, id string, now time.Time) string {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		key = "signature " + strings.ToLower(strings.TrimPrefix(strings.TrimSpace(r.Header.Get("X-Signature")), "sha256="))
		if key == "signature " {
			return "api-t" + strconv.FormatInt(now.UnixNano(), 10)
		}
	}
	sum := sha256.Sum256([]byte(id + "\x00" + key))
	return "api-" + hex.EncodeToString(sum[:16])
}
