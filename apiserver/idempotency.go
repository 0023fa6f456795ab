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
}

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
// first request is still running runs do as well: do is idempotent itself (the payment's name
// derives from ref_trx, and the payment remembers the key), so both answer with one payment.
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, idemKey string) response) {
	s.runIdempotent(w, r, r.Header.Get("Idempotency-Key"), do)
}

// replayProof is idempotent for the creates that have no unique reference of their own (payouts,
// subscriptions): without an Idempotency-Key, the request's signature stands in for one, so the
// same signed request replayed inside the timestamp tolerance (by an attacker who captured it, or
// by a proxy that retried it) gets the first answer instead of making a second payout or
// subscription (docs/api.md, Replays). Two keyless requests with the same body in the same second
// are the same request. The key is a digest of the signature, never the signature itself.
func (s *Server) replayProof(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, idemKey string) response) {
	key := r.Header.Get("Idempotency-Key")
	if sig := r.Header.Get("X-Signature"); key == "" && sig != "" {
		sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimPrefix(strings.TrimSpace(sig), "sha256="))))
		key = signatureKeyPrefix + hex.EncodeToString(sum[:20])
	}
	s.runIdempotent(w, r, key, do)
}

// signatureKeyPrefix starts the key replayProof derives from a signature.
const signatureKeyPrefix = "signature "

// createTimeout bounds a create once it has started: it goes on when the client leaves.
const createTimeout = 30 * time.Second

func (s *Server) runIdempotent(w http.ResponseWriter, r *http.Request, key string, do func(ctx context.Context, idemKey string) response) {
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
	rec, replay, apiErr := s.claimIdempotencyKey(ctx, c, key, hash)
	if apiErr != nil {
		writeError(w, apiErr)
		return
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
	case strings.HasPrefix(key, signatureKeyPrefix) && resp.status >= 300:
		// A refused request leaves nothing behind: the key a signature stood in for goes, and a
		// replay of the refusal is refused afresh.
		if err := s.opts.Writer.Delete(ctx, rec); client.IgnoreNotFound(err) != nil {
			s.opts.Log.Error(err, "Forgetting the signature key of a refused request", "idempotencyKey", rec.Name)
		}
	case resp.status < 500 && resp.status != http.StatusTooManyRequests:
		s.storeIdempotentResponse(ctx, rec, resp)
	}
	resp.write(w)
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

// claimIdempotencyKey creates the key's record, or finds the existing one: it returns the stored
// response to replay, or an error when the key was used for another request.
func (s *Server) claimIdempotencyKey(ctx context.Context, c *caller, key, hash string) (*paygatev1.IdempotencyKey, *paygatev1.StoredResponse, *APIError) {
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
			return rec, nil, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, nil, s.serverError("Recording an idempotency key", err).err
		}
		existing := &paygatev1.IdempotencyKey{}
		if err := s.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(rec), existing); err != nil {
			if apierrors.IsNotFound(err) {
				continue // expired and deleted meanwhile
			}
			return nil, nil, s.serverError("Reading an idempotency key", err).err
		}
		if existing.Spec.ExpiresAt.Time.Before(now) {
			uid := existing.UID
			if err := s.opts.Writer.Delete(ctx, existing, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
				return nil, nil, s.serverError("Deleting an expired idempotency key", err).err
			}
			continue
		}
		if existing.Spec.RequestHash != hash {
			return nil, nil, &APIError{Status: http.StatusConflict, Label: LabelIdempotencyKeyReused,
				Message: "This Idempotency-Key was already used with a different request."}
		}
		return existing, existing.Spec.Response, nil
	}
	return nil, nil, &APIError{Status: http.StatusConflict, Label: LabelIdempotencyKeyReused, Message: "This Idempotency-Key is busy; retry the request."}
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
