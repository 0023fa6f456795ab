// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/names"
)

// idempotencyRetention is how long an Idempotency-Key is kept (docs/api.md, Idempotency-Key).
const idempotencyRetention = 24 * time.Hour

// response is a computed HTTP response, kept whole so it can be stored and replayed.
type response struct {
	status int
	body   []byte
	err    *APIError
	// kept: the response is kept on the object the request created (keptResponse), so the key's
	// record need not store it: one write fewer per create (docs/api.md, Idempotency).
	kept bool
}

// annotationIdempotentResponse on a Payout, Refund or Subscription created under an
// Idempotency-Key (or the signature standing in for one) holds the body of the create's answer
// (status 200), written with the object itself. A replay finds the object through the key's
// record (its id derives from the record) and answers this body, byte for byte, without the
// record having stored it.
const annotationIdempotentResponse = "paygate.dev/idempotent-response"

// keepResponse renders the answer to a create of obj under an Idempotency-Key before obj is
// created, and keeps it on obj (annotationIdempotentResponse): the answer never depends on what
// the create adds (the records render from the spec and the name; the status is empty, pending).
func keepResponse(obj metav1.Object, resp response) response {
	if resp.status != http.StatusOK || resp.err != nil {
		return resp
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[annotationIdempotentResponse] = string(resp.body)
	obj.SetAnnotations(a)
	resp.kept = true
	return resp
}

// keptResponse is the answer kept on obj (a create's, found created), ok false when obj has none
// (created before answers were kept there).
func keptResponse(obj metav1.Object) (response, bool) {
	body, ok := obj.GetAnnotations()[annotationIdempotentResponse]
	if !ok {
		return response{}, false
	}
	return response{status: http.StatusOK, body: []byte(body), kept: true}, true
}

// keptLookup finds the object a claim created and the answer kept on it: found false while it is
// not created; resp.status 0 when it was created before answers were kept there (the request
// then runs, and answers from the object). idemKey is what do receives: the record's name. Each
// create route that keeps its answers has one; nil for the others.
type keptLookup func(ctx context.Context, idemKey string, rec *paygatev1.IdempotencyKey) (resp response, found bool, err error)

func jsonResponse(status int, v any) response {
	body, err := marshalJSON(v)
	if err != nil {
		return response{status: http.StatusInternalServerError, body: []byte(`{"error":"SERVER_ERROR","message":"The response could not be encoded."}`)}
	}
	return response{status: status, body: body}
}

func errorResponse(e *APIError) response {
	r := jsonResponse(e.Status, e)
	r.err = e
	return r
}

// serverError logs err and answers 500 SERVER_ERROR; or, when err is the archive failing to
// answer a read the request needs, 503 SERVICE_UNAVAILABLE (errArchiveUnavailable).
func (s *Server) serverError(what string, err error) response {
	if isArchiveError(err) {
		s.opts.Log.Error(err, what+": the archive cannot be read")
		return errorResponse(errArchiveUnavailable)
	}
	s.opts.Log.Error(err, what)
	return errorResponse(&APIError{Status: http.StatusInternalServerError, Label: LabelServerError, Message: "An internal error occurred; retry the request."})
}

func (r response) write(w http.ResponseWriter) {
	if r.err != nil && r.err.RetryAfter > 0 {
		writeError(w, r.err)
		return
	}
	writeBody(w, r.status, r.body)
}

// idempotent runs do once per Idempotency-Key (docs/api.md, Idempotency-Key). The key is
// claimed by creating an IdempotencyKey object whose name derives from the merchant, the
// environment and the key; the API server lets one request create it. A retry with the same body
// replays the stored response; with another body it is refused. A retry that arrives while the
// first request is still running waits for its answer (awaitClaim), and runs do in its place
// only when that request ended without a kept answer or died.
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, idemKey string) response) {
	s.runIdempotent(w, r, r.Header.Get("Idempotency-Key"), do, nil)
}

// replayProof is idempotent for the creates that have no unique reference of their own (payouts,
// subscriptions): without an Idempotency-Key, the request's signature stands in for one, so the
// same signed request replayed inside the timestamp tolerance (by an attacker who captured it, or
// by a proxy that retried it) gets the first answer instead of making a second payout or
// subscription (docs/api.md, Replays). Two keyless requests with the same body in the same second
// are the same request. The key is a digest of the signature, never the signature itself.
func (s *Server) replayProof(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, idemKey string) response, kept keptLookup) {
	key := r.Header.Get("Idempotency-Key")
	if sig := r.Header.Get("X-Signature"); key == "" && sig != "" {
		sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimPrefix(strings.TrimSpace(sig), "sha256="))))
		key = signatureKeyPrefix + hex.EncodeToString(sum[:20])
	}
	s.runIdempotent(w, r, key, do, kept)
}

// signatureKeyPrefix starts the key replayProof derives from a signature.
const signatureKeyPrefix = "signature "

// createTimeout bounds a create once it has started: it goes on when the client leaves.
const createTimeout = 30 * time.Second

func (s *Server) runIdempotent(w http.ResponseWriter, r *http.Request, key string, do func(ctx context.Context, idemKey string) response, kept keptLookup) {
	// A create that has started finishes even when the client hangs up (a client-side timeout):
	// its writes are not cut in the middle, and the client's retry with the same key finds them
	// done instead of half done.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), createTimeout)
	defer cancel()
	c := callerFrom(ctx)
	if key == "" {
		do(ctx, "").write(w)
		return
	}
	if len(key) > 64 || hasControlChars(key) {
		writeError(w, validationError(map[string][]string{"Idempotency-Key": {"The Idempotency-Key header must be at most 64 printable characters."}}))
		return
	}
	sum := sha256.Sum256([]byte(r.Method + " " + r.URL.Path + "\n" + string(c.body)))
	hash := hex.EncodeToString(sum[:])
	rec, claimed, replay, apiErr := s.claimIdempotencyKey(ctx, c, key, hash)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if replay == nil && !claimed {
		// Claimed by an earlier request whose answer the record does not hold: kept on the object
		// it created, or the earlier request is still running, gave up (an answer not kept) or
		// died. Wait for its answer, or hold the key in its place.
		rec, replay, apiErr = s.awaitClaim(ctx, c, key, hash, rec, kept)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
	}
	if replay != nil {
		source := metrics.ReplayIdempotencyKey
		if strings.HasPrefix(key, signatureKeyPrefix) {
			source = metrics.ReplaySignature
		}
		metrics.APIIdempotentReplays.WithLabelValues(routeLabel(r.Pattern), source).Inc()
		w.Header().Set("Idempotent-Replayed", "true")
		writeBody(w, int(replay.StatusCode), []byte(replay.Body))
		return
	}
	resp := do(context.WithValue(ctx, idempotencyRecordKey{}, rec), rec.Name)
	switch {
	case resp.status >= 500 || resp.status == http.StatusTooManyRequests:
		// Not kept: the next request with the key runs the create again, at once.
		s.releaseClaim(ctx, rec)
	case strings.HasPrefix(key, signatureKeyPrefix) && resp.status >= 300:
		// A refused request leaves nothing behind: the key a signature stood in for goes, and a
		// replay of the refusal is refused afresh. (A refusal never follows a create: the
		// object a later claim of the key makes is the first.)
		uid := rec.UID
		if err := s.opts.Writer.Delete(ctx, rec, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			s.opts.Log.Error(err, "Forgetting the signature key of a refused request", "idempotencyKey", rec.Name)
		}
	case resp.kept:
		// Kept on the object the request created: a replay reads it there.
	default:
		s.storeIdempotentResponse(ctx, rec, resp)
	}
	resp.write(w)
}

// The request running a key's create holds the key's record: the request that created it, or
// one that took it over (annotationClaimedAt) once it was released or stale. At most one request
// runs a key's create at a time, so a create never decides from a view its twin is changing (a
// retry that refused a refund from the cache while the first try was creating it would have kept,
// and replayed for ever, a refusal of a refund that exists).
const (
	// annotationClaimedAt on an IdempotencyKey is when the request holding it took it over
	// (RFC 3339, the API server's clock); without it, the record's creation (spec.expiresAt less
	// the key's retention).
	annotationClaimedAt = "paygate.dev/claimed-at"
	// annotationClaimReleased on an IdempotencyKey: the request holding it ended with an answer
	// that is not kept (500 or more, 429); the next request with the key runs the create.
	annotationClaimReleased = "paygate.dev/claim-released"
)

// claimWaitLimit bounds how long a request waits for the request holding its key; it then
// answers 409 (busy, retry). A holder that stops answering is taken over sooner: its claim is
// stale createTimeout after it was made, when its create's context has ended.
const claimWaitLimit = 20 * time.Second

// claimedAt is when the request holding rec took it.
func claimedAt(rec *paygatev1.IdempotencyKey) time.Time {
	if at, err := time.Parse(time.RFC3339Nano, rec.Annotations[annotationClaimedAt]); err == nil {
		return at
	}
	return rec.Spec.ExpiresAt.Add(-idempotencyRetention)
}

// awaitClaim waits while another request holds rec (the key claimed, its answer neither stored
// nor kept): it returns the answer to replay once the holder has one, or rec taken over (held by
// this request, which then runs the create) once the holder released it or its claim is stale.
func (s *Server) awaitClaim(ctx context.Context, c *caller, key, hash string, rec *paygatev1.IdempotencyKey, kept keptLookup) (*paygatev1.IdempotencyKey, *paygatev1.StoredResponse, *APIError) {
	deadline := time.Now().Add(s.claimWait())
	pause := 10 * time.Millisecond
	for {
		if rec.Spec.Response != nil {
			return rec, rec.Spec.Response, nil
		}
		if kept != nil {
			resp, found, err := kept(ctx, rec.Name, rec)
			if err != nil {
				return nil, nil, s.serverError("Reading the object of an idempotency key", err).err
			}
			switch {
			case found && resp.status != 0:
				return rec, &paygatev1.StoredResponse{StatusCode: int32(resp.status), Body: string(resp.body)}, nil
			case found:
				return rec, nil, nil // created, its answer not kept on it: the create answers from it
			}
		}
		now := s.opts.Clock.Now()
		if _, released := rec.Annotations[annotationClaimReleased]; released || !now.Before(claimedAt(rec).Add(createTimeout)) {
			next := rec.DeepCopy()
			delete(next.Annotations, annotationClaimReleased)
			metav1.SetMetaDataAnnotation(&next.ObjectMeta, annotationClaimedAt, now.UTC().Format(time.RFC3339Nano))
			err := s.opts.Writer.Update(ctx, next)
			if err == nil {
				return next, nil, nil
			}
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return nil, nil, s.serverError("Taking over an idempotency key", err).err
			}
			// Another request took it over, stored an answer or deleted it: look again.
		} else if time.Now().After(deadline) {
			return nil, nil, &APIError{Status: http.StatusConflict, Label: LabelIdempotencyKeyReused,
				Message: "A request with this Idempotency-Key is still running; retry the request."}
		} else {
			t := time.NewTimer(pause)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, nil, s.serverError("Waiting for a request with the same idempotency key", ctx.Err()).err
			case <-t.C:
			}
			pause = min(2*pause, 200*time.Millisecond)
		}
		fresh := &paygatev1.IdempotencyKey{}
		err := s.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(rec), fresh)
		switch {
		case apierrors.IsNotFound(err):
			// The holder's refusal forgot a signature's key: claim it afresh.
			var claimed bool
			var replay *paygatev1.StoredResponse
			var apiErr *APIError
			fresh, claimed, replay, apiErr = s.claimIdempotencyKey(ctx, c, key, hash)
			if apiErr != nil || replay != nil || claimed {
				return fresh, replay, apiErr
			}
		case err != nil:
			return nil, nil, s.serverError("Reading an idempotency key", err).err
		case fresh.Spec.RequestHash != hash:
			return nil, nil, &APIError{Status: http.StatusConflict, Label: LabelIdempotencyKeyReused,
				Message: "This Idempotency-Key was already used with a different request."}
		}
		rec = fresh
	}
}

// claimWait is claimWaitLimit, or the test's own.
func (s *Server) claimWait() time.Duration {
	if s.claimWaitLimit > 0 {
		return s.claimWaitLimit
	}
	return claimWaitLimit
}

// releaseClaim marks rec released after an answer that is not kept, so the next request with the
// key runs at once instead of waiting for the claim to go stale; nothing when another request
// holds it now. A failed release only delays the next request until then.
func (s *Server) releaseClaim(ctx context.Context, rec *paygatev1.IdempotencyKey) {
	held := rec.Annotations[annotationClaimedAt]
	cur := rec // as this request holds it; read again only after a conflict
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if cur == nil {
			cur = &paygatev1.IdempotencyKey{}
			if err := s.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(rec), cur); err != nil {
				return client.IgnoreNotFound(err)
			}
		}
		if cur.Spec.Response != nil || cur.Annotations[annotationClaimedAt] != held {
			return nil
		}
		next := cur.DeepCopy()
		metav1.SetMetaDataAnnotation(&next.ObjectMeta, annotationClaimReleased, "true")
		err := s.opts.Writer.Update(ctx, next)
		if apierrors.IsConflict(err) {
			cur = nil
		}
		return client.IgnoreNotFound(err)
	})
	if err != nil {
		s.opts.Log.Error(err, "Releasing an idempotency key", "idempotencyKey", rec.Name)
	}
}

type idempotencyRecordKey struct{}

// idempotencyRecordFrom is the IdempotencyKey object the request claimed (or found claimed by a
// concurrent request with the same key and body); nil without an Idempotency-Key.
func idempotencyRecordFrom(ctx context.Context) *paygatev1.IdempotencyKey {
	rec, _ := ctx.Value(idempotencyRecordKey{}).(*paygatev1.IdempotencyKey)
	return rec
}

// idempotencyName is the IdempotencyKey object of a key: "idem-" and 24 characters of lower-case
// base32 derived from the merchant, the environment and the key (names.Derive).
func idempotencyName(c *caller, key string) string {
	return "idem-" + names.Derive(names.PurposeIdempotency, string(c.merchant.UID), string(c.env), key)
}

// claimIdempotencyKey creates the key's record (claimed), or finds the existing one: it returns
// the stored response to replay, or an error when the key was used for another request.
func (s *Server) claimIdempotencyKey(ctx context.Context, c *caller, key, hash string) (_ *paygatev1.IdempotencyKey, claimed bool, _ *paygatev1.StoredResponse, _ *APIError) {
	now := s.opts.Clock.Now()
	for attempt := 0; attempt < 3; attempt++ {
		rec := &paygatev1.IdempotencyKey{
			ObjectMeta: metav1.ObjectMeta{Name: idempotencyName(c, key), Namespace: c.merchant.Namespace,
				Labels: map[string]string{paygatev1.LabelMerchant: c.merchant.Name, paygatev1.LabelEnvironment: string(c.env)}},
			Spec: paygatev1.IdempotencyKeySpec{
				MerchantRef: paygatev1.MerchantReference{Name: c.merchant.Name}, Environment: c.env,
				RequestHash: hash, ExpiresAt: metav1.NewTime(now.Add(idempotencyRetention)),
			},
		}
		err := s.opts.Writer.Create(ctx, rec)
		if err == nil {
			return rec, true, nil, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, false, nil, s.serverError("Recording an idempotency key", err).err
		}
		existing := &paygatev1.IdempotencyKey{}
		if err := s.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(rec), existing); err != nil {
			if apierrors.IsNotFound(err) {
				continue // expired and deleted meanwhile
			}
			return nil, false, nil, s.serverError("Reading an idempotency key", err).err
		}
		if existing.Spec.ExpiresAt.Time.Before(now) {
			uid := existing.UID
			if err := s.opts.Writer.Delete(ctx, existing, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
				return nil, false, nil, s.serverError("Deleting an expired idempotency key", err).err
			}
			continue
		}
		if existing.Spec.RequestHash != hash {
			return nil, false, nil, &APIError{Status: http.StatusConflict, Label: LabelIdempotencyKeyReused,
				Message: "This Idempotency-Key was already used with a different request."}
		}
		return existing, false, existing.Spec.Response, nil
	}
	return nil, false, nil, &APIError{Status: http.StatusConflict, Label: LabelIdempotencyKeyReused, Message: "This Idempotency-Key is busy; retry the request."}
}

// storeIdempotentResponse keeps the first response for replay. A concurrent request that stored
// first wins; both responses name the same payment.
func (s *Server) storeIdempotentResponse(ctx context.Context, rec *paygatev1.IdempotencyKey, resp response) {
	stored := &paygatev1.StoredResponse{StatusCode: int32(resp.status), Body: string(resp.body)}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if rec.Spec.Response != nil {
			return nil
		}
		next := rec.DeepCopy()
		next.Spec.Response = stored
		err := s.opts.Writer.Update(ctx, next)
		switch {
		case err == nil:
			*rec = *next
		case apierrors.IsConflict(err):
			// Read what is stored now, into a fresh object: decoding into rec would keep the
			// response this try set even when the stored object has none.
			fresh := &paygatev1.IdempotencyKey{}
			if err := s.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(rec), fresh); err != nil {
				return err
			}
			*rec = *fresh
		}
		return err
	})
	if err != nil {
		s.opts.Log.Error(err, "Storing an idempotent response", "idempotencyKey", rec.Name)
	}
}
