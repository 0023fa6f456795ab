// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/webhook"
)

// Options configure the reconcilers that move money.
type Options struct {
	// Providers carries payments' money.
	Providers Providers
	// Clock is the controllers' time source (default the real clock; tests pass a
	// k8s.io/utils/clock/testing FakeClock).
	Clock clock.PassiveClock
	// PollInterval is how often an attempt in flight is queried (default 2 s).
	PollInterval time.Duration
	// CallbackURL is where the upstream provider posts results.
	CallbackURL string
	// PaymentConcurrency is how many payments reconcile at once (default 16: a pass may wait on
	// the provider and on two Kubernetes API writes, so few workers cap the rate long before the
	// CPU does).
	PaymentConcurrency int
	// PayoutAmbiguousAfter is how long a disbursement may stay unconfirmed before the payout asks
	// an operator to resolve it (default DefaultPayoutAmbiguousAfter, 30 minutes).
	PayoutAmbiguousAfter time.Duration
	// AttemptWatch is how long an attempt whose object ended without the provider's final answer
	// is still asked about (default attempt.DefaultWatch, 72 hours).
	AttemptWatch time.Duration
	// ChargeLifetime is how long a subscription charge's prompt waits for the customer when the
	// merchant sets no checkout lifetime (default DefaultChargeLifetime, 30 minutes).
	ChargeLifetime time.Duration

	// Webhooks configure event delivery.
	Webhooks WebhookOptions

	// Archive, when set, is where settled history goes (docs/archive.md): the archiver runs on
	// the leader and balances add the archive's carried-forward sums. Nil keeps everything in etcd.
	Archive ArchiveStore
	// ArchiveRetention is how long terminal objects stay in etcd before they are archived.
	ArchiveRetention Retention
	// ArchiveInterval is the pause between archiver passes (default 1 minute).
	ArchiveInterval time.Duration
	// ArchiveBatchSize bounds the objects of one archive transaction (default 100).
	ArchiveBatchSize int
	// LedgerRecount is how often each merchant's balance is recounted from every live payment to
	// check the incremental sums (default DefaultLedgerRecount).
	LedgerRecount time.Duration
}

// WebhookOptions configure webhook delivery.
type WebhookOptions struct {
	// Schedule is the retry schedule (default DefaultWebhookSchedule: 0, 3, 6, 12, 24 minutes).
	Schedule []time.Duration
	// Timeout bounds each attempt (default 10 s).
	Timeout time.Duration
	// Concurrency is how many deliveries run at once (default 16).
	Concurrency int
	// AllowPrivateSandbox lets sandbox webhooks reach loopback and private addresses
	// (development); production webhooks never may.
	AllowPrivateSandbox bool
	// BrandWord names the headers: X-<BrandWord>-Signature (default Paygate).
	BrandWord string
}

// The manager's metrics endpoint authenticates and authorizes its callers (--metrics-secure).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// SetupReconcilers registers every Paygate reconciler with the manager. The manager's field
// indexes (internal/index) must be set up first.
func SetupReconcilers(mgr ctrl.Manager, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.PaymentConcurrency == 0 {
		opts.PaymentConcurrency = 16
	}
	ids := &IDAllocator{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}
	wh := opts.Webhooks
	if wh.Concurrency == 0 {
		wh.Concurrency = 16
	}
	sender := func(allowPrivate bool) *webhook.Sender {
		return webhook.NewSender(webhook.Options{Timeout: wh.Timeout, BrandWord: wh.BrandWord, Guard: webhook.Guard{AllowPrivate: allowPrivate}})
	}
	// The webhook delivery controller makes the first attempt of every new event before its
	// delivery is created: the controllers that announce events hand them over (FirstAttempts).
	webhooks := &WebhookDeliveryReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("webhook-controller"),
		Sandbox: sender(wh.AllowPrivateSandbox), Production: sender(false),
		Clock: opts.Clock, Schedule: wh.Schedule,
	}
	first := webhooks.FirstAttempts()
	if err := (&GatewayReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("gateway-controller"), IDs: ids,
		Checker: GatewayCheckerOf(opts.Providers),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the gateway controller: %w", err)
	}
	if err := (&MerchantReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(merchantControllerName), IDs: ids, Clock: opts.Clock,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the merchant controller: %w", err)
	}
	if err := (&MerchantChangeReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(merchantChangeControllerName), Clock: opts.Clock,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the merchant change controller: %w", err)
	}
	if err := (&PaymentReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("payment-controller"),
		Providers: opts.Providers, Clock: opts.Clock, PollInterval: opts.PollInterval, CallbackURL: opts.CallbackURL, AttemptWatch: opts.AttemptWatch,
		FirstAttempts: first,
	}).SetupWithManager(mgr, opts.PaymentConcurrency); err != nil {
		return fmt.Errorf("setting up the payment controller: %w", err)
	}
	balances := &BalanceReconciler{Client: mgr.GetClient(), Clock: opts.Clock, RecountEvery: opts.LedgerRecount,
		Recorder: mgr.GetEventRecorder("balance-controller")}
	if err := balances.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the balance controller: %w", err)
	}
	if err := (&PayoutReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("payout-controller"), Providers: opts.Providers,
		Clock: opts.Clock, PollInterval: opts.PollInterval, AmbiguousAfter: opts.PayoutAmbiguousAfter, CallbackURL: opts.CallbackURL, AttemptWatch: opts.AttemptWatch,
		FirstAttempts: first,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the payout controller: %w", err)
	}
	if err := (&RefundReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("refund-controller"), Providers: opts.Providers,
		Clock: opts.Clock, PollInterval: opts.PollInterval, AmbiguousAfter: opts.PayoutAmbiguousAfter, CallbackURL: opts.CallbackURL, AttemptWatch: opts.AttemptWatch,
		FirstAttempts: first,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the refund controller: %w", err)
	}
	if opts.Archive != nil {
		balances.Archive, balances.Gate = opts.Archive, &sync.RWMutex{}
		a := &Archiver{
			Client: mgr.GetClient(), Store: opts.Archive, Clock: opts.Clock, Retention: opts.ArchiveRetention,
			Interval: opts.ArchiveInterval, BatchSize: opts.ArchiveBatchSize, Log: mgr.GetLogger().WithName("archiver"),
			Gate: balances.Gate,
		}
		a.Counted = func(e archive.LiveEntry) bool {
			if e.Kind == archive.KindPayment {
				return balances.payments.Has(types.UID(e.UID))
			}
			return a.inView(context.Background())(e)
		}
		if err := mgr.Add(a); err != nil {
			return fmt.Errorf("adding the archiver: %w", err)
		}
	}
	if err := metrics.RegisterPayoutsAmbiguous(mgr.GetCache()); err != nil {
		return fmt.Errorf("registering the ambiguous payouts metric: %w", err)
	}
	if err := metrics.RegisterRefundsAmbiguous(mgr.GetCache()); err != nil {
		return fmt.Errorf("registering the ambiguous refunds metric: %w", err)
	}
	if err := metrics.RegisterPaymentsOverdue(mgr.GetCache(), opts.Clock.Now); err != nil {
		return fmt.Errorf("registering the overdue payments metric: %w", err)
	}
	if err := metrics.RegisterSubscriptions(mgr.GetCache()); err != nil {
		return fmt.Errorf("registering the subscriptions metric: %w", err)
	}
	if err := (&BillingPlanReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the billing plan controller: %w", err)
	}
	if err := (&SubscriptionReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("billing-controller"),
		Clock: opts.Clock, ChargeLifetime: opts.ChargeLifetime,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the subscription controller: %w", err)
	}
	if err := (&IdempotencyKeyReconciler{Client: mgr.GetClient(), Clock: opts.Clock}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the idempotency key controller: %w", err)
	}
	if err := webhooks.SetupWithManager(mgr, wh.Concurrency); err != nil {
		return fmt.Errorf("setting up the webhook delivery controller: %w", err)
	}
	return nil
}

func controllerOptions(concurrency int) controller.Options {
	if concurrency < 1 {
		concurrency = 1
	}
	return controller.Options{MaxConcurrentReconciles: concurrency}
}
