// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The merchant API's metrics, counted by the apiserver (docs/deploy.md, Metrics of the API
// server). Every label value comes from a fixed set: route is a registered route pattern (or
// "other"), never the path a client sent; method is a standard HTTP method (or "other"); code is
// a status class.

// Reasons an authentication failed (APIAuthFailures' reason label): one per failure branch of
// the authentication steps (docs/api.md, Authentication). Never a key, a business ID or a
// signature.
const (
	// AuthDuplicateHeaders: a credential or signature header sent more than once, or
	// X-Merchant-Key and X-Business-Key disagreeing.
	AuthDuplicateHeaders = "duplicate_headers"
	// AuthInvalidEnvironment: X-Environment missing or neither sandbox nor production.
	AuthInvalidEnvironment = "invalid_environment"
	// AuthMissingHeaders: no business ID or no API key.
	AuthMissingHeaders = "missing_headers"
	// AuthMalformedHeaders: a business ID or API key longer than allowed.
	AuthMalformedHeaders = "malformed_headers"
	// AuthLookupFailed: the merchant could not be looked up (503).
	AuthLookupFailed = "lookup_failed"
	// AuthUnknownKey: no business has that business ID in that environment (or it is not the
	// current one).
	AuthUnknownKey = "unknown_key"
	// AuthCredentialsUnavailable: the merchant's credentials Secret is missing, incomplete or not
	// controlled by the merchant.
	AuthCredentialsUnavailable = "credentials_unavailable"
	// AuthWrongAPIKey: the API key is not the business's current one.
	AuthWrongAPIKey = "wrong_api_key"
	// AuthMissingSignature: X-Timestamp or X-Signature absent or empty.
	AuthMissingSignature = "missing_signature"
	// AuthMalformedTimestamp: X-Timestamp is not Unix time in seconds.
	AuthMalformedTimestamp = "malformed_timestamp"
	// AuthStaleTimestamp: X-Timestamp outside the tolerance (--signature-tolerance).
	AuthStaleTimestamp = "stale_timestamp"
	// AuthMalformedSignature: X-Signature is not sha256=<hex>.
	AuthMalformedSignature = "malformed_signature"
	// AuthBadSignature: X-Signature does not match the request.
	AuthBadSignature = "bad_signature"
	// AuthSuspended: the business is rejected or disabled (403).
	AuthSuspended = "suspended"
	// AuthPendingApproval: a business not approved yet called production (403).
	AuthPendingApproval = "pending_approval"
)

// AuthFailureReasons are every value of APIAuthFailures' reason label.
var AuthFailureReasons = []string{
	AuthDuplicateHeaders, AuthInvalidEnvironment, AuthMissingHeaders, AuthMalformedHeaders,
	AuthLookupFailed, AuthUnknownKey, AuthCredentialsUnavailable, AuthWrongAPIKey,
	AuthMissingSignature, AuthMalformedTimestamp, AuthStaleTimestamp, AuthMalformedSignature,
	AuthBadSignature, AuthSuspended, AuthPendingApproval,
}

// Sources of a replayed response (APIIdempotentReplays' source label).
const (
	// ReplayIdempotencyKey: the client sent the same Idempotency-Key and body again.
	ReplayIdempotencyKey = "idempotency_key"
	// ReplaySignature: a keyless payout or subscription create sent again with the same
	// signature (docs/api.md, Replays): a proxy's retry, or a captured request replayed.
	ReplaySignature = "signature"
)

var (
	// APIRequests counts the merchant API's responses.
	APIRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_api_requests_total",
		Help: "Responses of the merchant API, by route pattern (other: no route), method and status class (2xx, 4xx, 5xx).",
	}, []string{"route", "method", "code"})

	// APIRequestDuration measures the merchant API's requests, from the first byte of the
	// request handled to the response written.
	APIRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "paygate_api_request_duration_seconds",
		Help:    "Time the merchant API took to answer, by route pattern and method.",
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"route", "method"})

	// APIRateLimited counts requests answered 429 RATE_LIMIT_EXCEEDED.
	APIRateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_api_rate_limited_total",
		Help: "Merchant API requests refused with 429 by the rate limit, by route pattern.",
	}, []string{"route"})

	// APIAuthFailures counts requests refused by authentication.
	APIAuthFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_api_auth_failures_total",
		Help: "Merchant API requests refused by authentication (401, 403, 503), by reason.",
	}, []string{"reason"})

	// APIIdempotentReplays counts responses replayed from a stored idempotency record.
	APIIdempotentReplays = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_api_idempotent_replays_total",
		Help: "Merchant API responses replayed from a stored idempotency record, by route pattern and source (idempotency_key, signature).",
	}, []string{"route", "source"})

	// APIRateLimitReplicas is how many apiserver replicas the rate limit is shared by: each
	// replica allows ceil(limit / this) per minute per business and client IP.
	APIRateLimitReplicas = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "paygate_api_rate_limit_replicas",
		Help: "Apiserver replicas the rate limit is divided among (1: per-replica limits).",
	})
)

func init() {
	APIRateLimitReplicas.Set(1)
	crmetrics.Registry.MustRegister(APIRequests, APIRequestDuration, APIRateLimited, APIAuthFailures,
		APIIdempotentReplays, APIRateLimitReplicas)
}
