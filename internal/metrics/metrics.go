// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package metrics holds Paygate's Prometheus metrics. They are registered with
// controller-runtime's registry, so the manager's /metrics endpoint serves them with the
// controller-runtime ones. Labels are bounded: environments, phases, reason codes, operations.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// PaymentsSettled counts payments reaching a terminal phase.
	PaymentsSettled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_payments_settled_total",
		Help: "Payments that reached a terminal phase, by environment, phase and failure reason.",
	}, []string{"environment", "phase", "reason"})

	// ProviderRequests counts calls to the mobile-money provider.
	ProviderRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_provider_requests_total",
		Help: "Calls to the mobile-money provider, by provider, operation and outcome (PENDING, SUCCESS, FAILED, AMBIGUOUS, NOT_FOUND, ERROR).",
	}, []string{"provider", "operation", "outcome"})

	// ProviderLatency measures calls to the mobile-money provider.
	ProviderLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "paygate_provider_request_duration_seconds",
		Help:    "Duration of calls to the mobile-money provider.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
	}, []string{"provider", "operation"})

	// LateSettlements counts attempts the provider settled after their payment had failed.
	LateSettlements = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_late_settlements_total",
		Help: "Push attempts the provider settled after their payment had failed (money to refund or reconcile), by environment.",
	}, []string{"environment"})

	// WebhookAttempts counts webhook delivery attempts.
	WebhookAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_webhook_attempts_total",
		Help: "Webhook delivery attempts, by environment and result (delivered, failed).",
	}, []string{"environment", "result"})

	// WebhooksAbandoned counts events abandoned after their last attempt.
	WebhooksAbandoned = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_webhooks_abandoned_total",
		Help: "Webhook events abandoned after every attempt failed, by environment.",
	}, []string{"environment"})

	// Payouts counts payouts reaching a terminal status.
	Payouts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_payouts_total",
		Help: "Payouts that reached a terminal status (success, failed), by environment, status and failure reason.",
	}, []string{"environment", "status", "reason"})

	// Refunds counts refunds that reached a terminal status.
	Refunds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_refunds_total",
		Help: "Refunds that reached a terminal status (success, failed), by environment, status and failure reason.",
	}, []string{"environment", "status", "reason"})

	// DisbursementLatency measures payouts from the disbursement recorded to the money paid.
	DisbursementLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "paygate_disbursement_duration_seconds",
		Help:    "Time from a payout's disbursement recorded to the provider confirming it paid, by environment.",
		Buckets: prometheus.ExponentialBuckets(0.05, 3, 10),
	}, []string{"environment"})

	// AttemptWatches counts what happens to attempts watched after their object ended without the
	// provider's final answer: started, answered (a final answer that agrees with the object),
	// settled_late, failed_late, window_closed. started minus the others is how many are watched.
	AttemptWatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_attempt_watches_total",
		Help: "Attempts watched after their object ended without the provider's final answer, by operation (push, disbursement), environment and event (started, answered, settled_late, failed_late, window_closed).",
	}, []string{"operation", "environment", "event"})

	// ForgottenAttempts counts attempts a provider had accepted and then said it did not know.
	ForgottenAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_provider_forgotten_attempts_total",
		Help: "Attempts the provider had accepted and later answered it knows nothing of (an operator checks them), by operation (push, disbursement) and environment.",
	}, []string{"operation", "environment"})

	// InvoiceCharges counts invoice charges whose outcome their invoice recorded.
	InvoiceCharges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_invoice_charges_total",
		Help: "Invoice charges whose outcome their invoice recorded, by environment, outcome (success, failed) and failure reason.",
	}, []string{"environment", "outcome", "reason"})

	// Invoices counts invoices reaching a terminal phase.
	Invoices = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_invoices_total",
		Help: "Invoices that reached a terminal phase (paid, void), by environment and phase.",
	}, []string{"environment", "phase"})

	// DunningRetries counts the retries of failed invoice charges the dunning policies scheduled.
	DunningRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_dunning_retries_scheduled_total",
		Help: "Retries of a failed invoice charge scheduled by the plan's dunning policy, by environment.",
	}, []string{"environment"})

	// UnsignedRequests counts API requests accepted without a signature (a merchant's
	// spec.unsignedRequests), in the apiserver.
	UnsignedRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_unsigned_requests_total",
		Help: "Merchant API requests accepted without X-Timestamp and X-Signature (the merchant's unsignedRequests switch), by environment.",
	}, []string{"environment"})

	// PreviousCredentialsRequests counts API requests authenticated with credentials a rotation
	// replaced, during the rotation's overlap, in the apiserver: the integrations still to move.
	PreviousCredentialsRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_api_previous_credentials_requests_total",
		Help: "Merchant API requests authenticated with the API key a rotation replaced, during the rotation's overlap, by environment.",
	}, []string{"environment"})
)

func init() {
	crmetrics.Registry.MustRegister(PaymentsSettled, LateSettlements, ProviderRequests, ProviderLatency, WebhookAttempts, WebhooksAbandoned,
		Payouts, Refunds, DisbursementLatency, ForgottenAttempts, AttemptWatches, InvoiceCharges, Invoices, DunningRetries, UnsignedRequests,
		PreviousCredentialsRequests)
}
