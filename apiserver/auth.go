// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/index"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/ratelimit"
	"github.com/paygate/paygate/pkg/paygate/signing"
)

// caller is the authenticated merchant and environment of a request.
type caller struct {
	merchant *paygatev1.Merchant
	env      paygatev1.Environment
	body     []byte
}

type callerKey struct{}

func callerFrom(ctx context.Context) *caller { return ctx.Value(callerKey{}).(*caller) }

// authenticated runs the authentication checks (docs/api.md, Authentication), then the rate
// limit and the merchant's availability (the first two steps of the runtime decision order),
// before h.
func (s *Server) authenticated(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, apiErr := readBody(r)
		if apiErr == nil {
			var c *caller
			c, apiErr = s.authenticate(r, body)
			if apiErr == nil {
				h(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
				return
			}
		}
		writeError(w, apiErr)
	}
}

func (s *Server) authenticate(r *http.Request, body []byte) (*caller, *APIError) {
	// Each credential header counts once: a header sent twice, and X-Merchant-Key and its alias
	// X-Business-Key disagreeing, are refused, never resolved by picking one of the values (a proxy
	// in front may have read the other).
	rawEnv, envOK := singleHeader(r.Header, "X-Environment")
	merchantKey, merchantOK := singleHeader(r.Header, "X-Merchant-Key")
	aliasKey, aliasOK := singleHeader(r.Header, "X-Business-Key")
	apiKey, apiKeyOK := singleHeader(r.Header, "X-API-Key")
	if !envOK || !merchantOK || !aliasOK || !apiKeyOK || (merchantKey != "" && aliasKey != "" && merchantKey != aliasKey) {
		return nil, authFailed(metrics.AuthDuplicateHeaders, errInvalidCredentials)
	}
	env := paygatev1.Environment(rawEnv)
	if env != paygatev1.EnvironmentSandbox && env != paygatev1.EnvironmentProduction {
		return nil, authFailed(metrics.AuthInvalidEnvironment, errInvalidCredentials)
	}
	businessID := merchantKey
	if businessID == "" {
		businessID = aliasKey
	}
	if businessID == "" || apiKey == "" {
		return nil, authFailed(metrics.AuthMissingHeaders, errInvalidCredentials)
	}
	if len(businessID) > 64 || len(apiKey) > 128 {
		return nil, authFailed(metrics.AuthMalformedHeaders, errInvalidCredentials)
	}

	// The rate limit counts every attempt, failed ones too, per claimed business and client IP.
	merchant, err := s.merchantByBusinessID(r.Context(), env, businessID)
	// keysEnv is the environment of the credential set the request is checked against. A business
	// that is not approved has no production keys yet: its sandbox keys and signature, sent to
	// production, identify it, and it hears 403 Merchant Pending Approval, not 401 (docs/api.md,
	// Authentication). Business IDs are per environment, so the sandbox one is looked up apart.
	keysEnv := env
	if err == nil && merchant == nil && env == paygatev1.EnvironmentProduction {
		var m *paygatev1.Merchant
		if m, err = s.merchantByBusinessID(r.Context(), paygatev1.EnvironmentSandbox, businessID); m != nil && m.Spec.BusinessStatus != paygatev1.BusinessApproved {
			merchant, keysEnv = m, paygatev1.EnvironmentSandbox
		}
	}
	limit := s.opts.RateLimitPerMinute
	if merchant != nil && merchant.Spec.RateLimit != nil {
		limit = int(merchant.Spec.RateLimit.RequestsPerMinute)
	}
	// The limit holds across the replicas: this one allows its share (docs/deploy.md, Rate limits
	// across replicas). The message names the limit the merchant was given.
	if ok, retry := s.limiter.Allow(businessID+"|"+s.ips.ClientIP(r).String(), ratelimit.Share(limit, s.replicas())); !ok {
		return nil, &APIError{Status: http.StatusTooManyRequests, Label: LabelRateLimited,
			Message: "Rate limit exceeded: at most " + strconv.Itoa(limit) + " requests per minute.", RetryAfter: retry}
	}
	if err != nil {
		s.opts.Log.Error(err, "Looking up a merchant by business ID")
		return nil, authFailed(metrics.AuthLookupFailed,
			&APIError{Status: http.StatusServiceUnavailable, Label: LabelServiceUnavailable, Message: "Try again shortly."})
	}
	if merchant == nil {
		return nil, authFailed(metrics.AuthUnknownKey, errInvalidCredentials)
	}
	set, err := s.credentialSet(r.Context(), merchant, keysEnv)
	if err != nil {
		s.opts.Log.Error(err, "Reading merchant credentials", "merchant", client.ObjectKeyFromObject(merchant).String())
		return nil, authFailed(metrics.AuthCredentialsUnavailable, errInvalidCredentials)
	}
	if set.BusinessID != businessID {
		return nil, authFailed(metrics.AuthUnknownKey, errInvalidCredentials)
	}
	// The current key, or during a rotation's overlap the one it replaced, with its own secret.
	match, apiSecret := set.Check(apiKey, s.opts.Clock.Now())
	if match == credentials.NoMatch {
		return nil, authFailed(metrics.AuthWrongAPIKey, errInvalidCredentials)
	}
	if s.acceptsUnsigned(r, merchant, env) {
		metrics.UnsignedRequests.WithLabelValues(string(env)).Inc()
	} else if apiErr, reason := s.checkSignature(r, body, []byte(apiSecret)); apiErr != nil {
		return nil, authFailed(reason, apiErr)
	}
	if match == credentials.MatchPrevious {
		metrics.PreviousCredentialsRequests.WithLabelValues(string(keysEnv)).Inc()
	}
	switch merchant.Spec.BusinessStatus {
	case paygatev1.BusinessRejected, paygatev1.BusinessDisabled:
		return nil, authFailed(metrics.AuthSuspended, errSuspended)
	case paygatev1.BusinessApproved:
	default:
		if env == paygatev1.EnvironmentProduction {
			return nil, authFailed(metrics.AuthPendingApproval, errPendingApproval)
		}
	}
	return &caller{merchant: merchant, env: env, body: body}, nil
}

// acceptsUnsigned tells whether r may skip the signature: it carries neither X-Timestamp nor
// X-Signature, the merchant's spec.unsignedRequests lists env, and for production the
// administrator allowed it too (--allow-unsigned-production). A request that carries a signature
// is always verified.
func (s *Server) acceptsUnsigned(r *http.Request, m *paygatev1.Merchant, env paygatev1.Environment) bool {
	if len(r.Header.Values(signing.TimestampHeader)) > 0 || len(r.Header.Values(signing.SignatureHeader)) > 0 {
		return false
	}
	return m.Spec.AcceptsUnsigned(env) && (env != paygatev1.EnvironmentProduction || s.opts.AllowUnsignedProduction)
}

func (s *Server) verifySignature(r *http.Request, body, secret []byte) *APIError {
	apiErr, _ := s.checkSignature(r, body, secret)
	return apiErr
}

// checkSignature is verifySignature that also says why a signature was refused (a reason of
// paygate_api_auth_failures_total).
func (s *Server) checkSignature(r *http.Request, body, secret []byte) (apiErr *APIError, reason string) {
	ts, tsOK := singleHeader(r.Header, signing.TimestampHeader)
	sig, sigOK := singleHeader(r.Header, signing.SignatureHeader)
	if !tsOK || !sigOK {
		return &APIError{Status: http.StatusUnauthorized, Label: LabelInvalidSignature,
			Message: "X-Timestamp and X-Signature must each be sent once."}, metrics.AuthDuplicateHeaders
	}
	if ts == "" || sig == "" {
		return &APIError{Status: http.StatusUnauthorized, Label: LabelInvalidSignature,
			Message: "X-Timestamp and X-Signature are required."}, metrics.AuthMissingSignature
	}
	err := signing.VerifyRequest(secret, sig, ts, r.Method, requestTarget(r), body, s.opts.Clock.Now(), s.opts.SignatureTolerance)
	if err == nil {
		return nil, ""
	}
	msg, reason := "X-Signature does not match the request.", metrics.AuthBadSignature
	switch {
	case errors.Is(err, signing.ErrTimestampMalformed):
		msg, reason = "X-Timestamp must be Unix time in seconds.", metrics.AuthMalformedTimestamp
	case errors.Is(err, signing.ErrTimestampOutsideTolerance):
		msg, reason = "X-Timestamp is outside the allowed window of "+strconv.Itoa(int(s.opts.SignatureTolerance.Seconds()))+" seconds.", metrics.AuthStaleTimestamp
	case errors.Is(err, signing.ErrSignatureMalformed):
		msg, reason = "X-Signature must be sha256=<hex HMAC-SHA256>.", metrics.AuthMalformedSignature
	}
	return &APIError{Status: http.StatusUnauthorized, Label: LabelInvalidSignature, Message: msg}, reason
}

// authFailed counts a refused authentication under reason (one of metrics.AuthFailureReasons)
// and returns apiErr.
func authFailed(reason string, apiErr *APIError) *APIError {
	metrics.APIAuthFailures.WithLabelValues(reason).Inc()
	return apiErr
}

// singleHeader is the value of a header that may be sent at most once: ok is false when the
// request has it more than once (header names are case-insensitive, so "x-api-key" and
// "X-API-Key" are the same header). An absent header is "", ok.
func singleHeader(h http.Header, name string) (value string, ok bool) {
	switch v := h.Values(name); len(v) {
	case 0:
		return "", true
	case 1:
		return v[0], true
	default:
		return "", false
	}
}

// requestTarget is the path and query exactly as the client sent them (still percent-encoded),
// which is what clients sign.
func requestTarget(r *http.Request) string {
	t := r.RequestURI
	if t == "" || t[0] == '/' {
		return t
	}
	if u, err := url.Parse(t); err == nil { // absolute form: http://host/path?q
		return u.RequestURI()
	}
	return t
}

// merchantByBusinessID finds the merchant of a business ID in env through the cache index. A
// business ID that matches no merchant, or (never expected) more than one, is nil.
func (s *Server) merchantByBusinessID(ctx context.Context, env paygatev1.Environment, businessID string) (*paygatev1.Merchant, error) {
	// Every signed request asks: the cache's own Merchant, not a copy of it (the apiserver never
	// modifies a merchant it read).
	key := index.BusinessIDIndexKey(env, businessID)
	if s.merchants != nil {
		objs, err := s.merchants.ByIndex(businessIDIndex, key)
		if err != nil || len(objs) != 1 {
			return nil, err
		}
		m, _ := objs[0].(*paygatev1.Merchant)
		return m, nil
	}
	var list paygatev1.MerchantList
	if err := s.opts.Cache.List(ctx, &list, client.MatchingFields{index.MerchantBusinessID: key}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	if len(list.Items) != 1 {
		return nil, nil
	}
	return &list.Items[0], nil
}

// businessIDIndex is the apiserver's own index of the Merchant informer's store by
// index.MerchantBusinessIDs. Asked through the store, a lookup is one map read; asked through the
// cache's List (the field index, the same keys), it costs a list built by reflection, a tenth of
// a signed request's CPU.
const businessIDIndex = "paygate.dev/business-id"

// merchantIndex adds businessIDIndex to the Merchant informer of r when r is an informer cache
// (the running apiserver), and returns the store to ask; nil otherwise (a plain client in unit
// tests), when merchantByBusinessID lists through the field index.
func merchantIndex(r client.Reader) toolscache.Indexer {
	return kube.InformerIndexer(r, &paygatev1.Merchant{}, businessIDIndex, func(o any) ([]string, error) {
		if m, ok := o.(*paygatev1.Merchant); ok {
			return index.MerchantBusinessIDs(m), nil
		}
		return nil, nil
	})
}

func (s *Server) credentialSet(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment) (credentials.Set, error) {
	// Every signed request reads it: the cache's own Secret (its Data map shared, never modified
	// here), not a deep copy.
	var secret corev1.Secret
	key := client.ObjectKey{Namespace: m.Namespace, Name: credentials.SecretName(m.Name, env)}
	if err := s.opts.Cache.Get(ctx, key, &secret, client.UnsafeDisableDeepCopy); err != nil {
		return credentials.Set{}, err
	}
	if !metav1.IsControlledBy(&secret, m) {
		return credentials.Set{}, errors.New("credentials Secret is not controlled by the merchant")
	}
	set, ok := credentials.SetFromData(secret.Data)
	if !ok {
		return credentials.Set{}, errors.New("credentials Secret is incomplete")
	}
	return set, nil
}
