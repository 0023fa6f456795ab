// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/attempt"
	"github.com/paygate/paygate/internal/index"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/provider"
)

// managerOptions are the flags of `paygate manager` (and the manager inside `paygate dev`).
type managerOptions struct {
	metricsAddr   string
	pprofAddr     string
	metricsSecure bool
	probeAddr     string
	leaderElect   bool
	leaderNS      string
	zapOptions    zap.Options

	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration

	pollInterval time.Duration
	callbackURL  string
	darajaURL    string
	sandboxDelay time.Duration

	payoutAmbiguousAfter time.Duration
	attemptWatch         time.Duration

	webhookTimeout      time.Duration
	webhookConcurrency  int
	paymentConcurrency  int
	webhookAllowPrivate bool
	webhookSchedule     string
	brandWord           string

	archive          archiveOptions
	archiveRetention controllers.Retention
	archiveInterval  time.Duration
	archiveBatchSize int
	ledgerRecount    time.Duration
	shutdownTimeout  time.Duration
}

func (o *managerOptions) bindFlags(fs *flag.FlagSet, defaultMetrics, defaultProbe string) {
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", defaultMetrics, "Address the Prometheus metrics endpoint binds to; 0 disables it.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS to authenticated callers allowed to get /metrics (TokenReview and SubjectAccessReview, as kubebuilder projects do); false serves plain HTTP.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", defaultProbe, "Address the /healthz and /readyz probes bind to; 0 disables them.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "0", "Address net/http/pprof (CPU and heap profiles) binds to; 0 (the default) disables it. Bind it to loopback or a port no one else reaches.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader, so that only one manager replica reconciles at a time.")
	fs.StringVar(&o.leaderNS, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: the pod's namespace).")
	fs.DurationVar(&o.leaseDuration, "leader-election-lease-duration", 15*time.Second, "How long a standby replica waits after the leader's last renewal before it takes over.")
	fs.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew its lease before it gives leadership up.")
	fs.DurationVar(&o.retryPeriod, "leader-election-retry-period", 2*time.Second, "How often replicas try to acquire or renew the lease.")
	fs.DurationVar(&o.pollInterval, "provider-poll-interval", 2*time.Second, "How often a push in flight is queried at the provider.")
	fs.StringVar(&o.callbackURL, "provider-callback-url", "", "URL the upstream provider posts results to (the apiserver's /internal/provider/callbacks).")
	fs.StringVar(&o.darajaURL, "daraja-callback-url", "", "Base URL Daraja posts results to (each attempt gets its own unguessable path under it; register nothing: it is sent with each request). Default: --provider-callback-url with /daraja appended.")
	fs.DurationVar(&o.sandboxDelay, "sandbox-approve-after", 0, "How long a simulated sandbox customer takes to approve a push.")
	fs.DurationVar(&o.payoutAmbiguousAfter, "payout-ambiguous-after", 30*time.Minute, "How long a payout's disbursement may stay unconfirmed before the payout asks an operator to resolve it.")
	fs.DurationVar(&o.attemptWatch, "attempt-watch", attempt.DefaultWatch, "How long an attempt whose payment or payout ended without the provider's final answer is still asked about (late settlements).")
	fs.DurationVar(&o.webhookTimeout, "webhook-timeout", 10*time.Second, "Timeout of each webhook delivery attempt.")
	fs.IntVar(&o.webhookConcurrency, "webhook-concurrency", 16, "How many webhook deliveries run at once.")
	fs.IntVar(&o.paymentConcurrency, "payment-concurrency", 16, "How many payments reconcile at once (each pass may wait on the provider and on the Kubernetes API).")
	fs.BoolVar(&o.webhookAllowPrivate, "webhook-allow-private-sandbox", false, "Let sandbox webhooks reach loopback and private addresses (development only; production never may).")
	fs.StringVar(&o.webhookSchedule, "webhook-retry-schedule", "0s,3m,6m,12m,24m", "Delays before each webhook attempt; the count is the number of attempts.")
	o.archive.bindFlags(fs)
	fs.DurationVar(&o.archiveRetention.Payments, "archive-payments-after", controllers.DefaultRetention, "How long a terminal payment stays in etcd before it is archived; 0 keeps payments in etcd.")
	fs.DurationVar(&o.archiveRetention.Payouts, "archive-payouts-after", controllers.DefaultRetention, "How long a terminal payout stays in etcd before it is archived; 0 keeps payouts in etcd.")
	fs.DurationVar(&o.archiveRetention.Invoices, "archive-invoices-after", controllers.DefaultRetention, "How long a paid or void invoice stays in etcd before it is archived (a subscription's two latest stay); 0 keeps invoices in etcd.")
	fs.DurationVar(&o.archiveRetention.Refunds, "archive-refunds-after", controllers.DefaultRetention, "How long a terminal refund stays in etcd before it is archived (never before its payment leaves etcd); 0 keeps refunds in etcd.")
	fs.DurationVar(&o.archiveRetention.WebhookDeliveries, "archive-webhook-deliveries-after", controllers.DefaultRetention, "How long a finished webhook delivery whose owner is gone stays in etcd before it is archived (a delivery leaves with its owner, never before it); 0 keeps those in etcd.")
	fs.DurationVar(&o.archiveInterval, "archive-interval", time.Minute, "Pause between archiver passes.")
	fs.IntVar(&o.archiveBatchSize, "archive-batch-size", 100, "Most objects archived in one transaction.")
	fs.DurationVar(&o.shutdownTimeout, "graceful-shutdown-timeout", 25*time.Second, "How long, on SIGTERM, reconciles in progress may take to finish before the process exits (keep it below the pod's terminationGracePeriodSeconds).")
	fs.DurationVar(&o.ledgerRecount, "ledger-recount-interval", controllers.DefaultLedgerRecount, "How often each merchant's balance is recounted from every live payment to check the incremental sums.")
	o.zapOptions.BindFlags(fs)
}

// validateArchive checks the archiver's flags.
func (o *managerOptions) validateArchive() error {
	r := o.archiveRetention
	switch {
	case r.Payments < 0 || r.Payouts < 0 || r.Invoices < 0 || r.WebhookDeliveries < 0 || r.Refunds < 0:
		return fmt.Errorf("the --archive-*-after retentions cannot be negative")
	case o.archiveInterval < time.Second:
		return fmt.Errorf("--archive-interval must be at least 1s")
	case o.archiveBatchSize < 1 || o.archiveBatchSize > 1000:
		return fmt.Errorf("--archive-batch-size must be between 1 and 1000")
	case o.ledgerRecount < time.Second:
		return fmt.Errorf("--ledger-recount-interval must be at least 1s")
	}
	return nil
}

func runManager(args []string) int {
	fs := flag.NewFlagSet("paygate manager", flag.ContinueOnError)
	var opts managerOptions
	opts.bindFlags(fs, ":8443", ":8081")
	fs.StringVar(&opts.brandWord, "brand-word", "Paygate", "Brand word in webhook header names (X-<brand>-Signature).")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.zapOptions)))
	log := ctrl.Log.WithName("setup")
	if err := opts.validateLeaderElection(); err != nil {
		log.Error(err, "Invalid leader-election flags")
		return 2
	}
	if err := opts.validateArchive(); err != nil {
		log.Error(err, "Invalid archive flags")
		return 2
	}
	if err := opts.validateWorkers(); err != nil {
		log.Error(err, "Invalid concurrency flags")
		return 2
	}
	ctx := ctrl.SetupSignalHandler()
	store, err := opts.archive.open(ctx, "paygate-manager")
	if err != nil {
		log.Error(err, "Invalid archive configuration")
		return 2
	}
	if store != nil {
		defer store.Close()
		log.Info("Archiving settled objects to PostgreSQL")
	} else {
		log.Info("No archive configured (--archive-dsn-file, " + EnvArchiveDSN + "): settled objects stay in etcd")
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "Unable to load a kubeconfig")
		return 1
	}
	mgr, err := newManager(cfg, opts, store)
	if err != nil {
		log.Error(err, "Unable to set up the manager")
		return 1
	}
	log.Info("Starting the manager")
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "The manager stopped with an error")
		return 1
	}
	return 0
}

// newManager builds the controller manager: scheme, cache, indexes, reconcilers and checks.
// store, when not nil, is the archive.
func newManager(cfg *rest.Config, opts managerOptions, store *archive.Store) (ctrl.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  kube.Scheme(),
		Metrics:                 opts.metricsOptions(),
		HealthProbeBindAddress:  opts.probeAddr,
		PprofBindAddress:        opts.pprofAddr,
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        "paygate-manager.paygate.dev",
		LeaderElectionNamespace: opts.leaderNS,
		// On SIGTERM the leader finishes its reconciles and gives the Lease up, so a standby takes
		// over at once instead of after the lease duration. Every reconcile is safe to cut short
		// (writes ahead, idempotent names), and the process exits right after.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &opts.shutdownTimeout,
		LeaseDuration:                 &opts.leaseDuration,
		RenewDeadline:                 &opts.renewDeadline,
		RetryPeriod:                   &opts.retryPeriod,
		Cache:                         kube.CacheOptions(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := index.Setup(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return nil, fmt.Errorf("setting up field indexes: %w", err)
	}
	schedule, err := parseSchedule(opts.webhookSchedule)
	if err != nil {
		return nil, err
	}
	upstreams := &provider.Upstreams{Reader: mgr.GetClient()}
	gateways := &provider.Gateways{Reader: mgr.GetClient(), DarajaCallbackURL: opts.darajaCallbackURL()}
	copts := controllers.Options{
		Providers: &provider.Registry{
			Sandbox:  provider.NewSandbox(provider.SandboxOptions{ApproveAfter: opts.sandboxDelay}),
			Upstream: upstreams.For,
			Gateways: gateways,
		},
		PollInterval:         opts.pollInterval,
		CallbackURL:          opts.callbackURL,
		PayoutAmbiguousAfter: opts.payoutAmbiguousAfter,
		AttemptWatch:         opts.attemptWatch,
		PaymentConcurrency:   opts.paymentConcurrency,
		Webhooks: controllers.WebhookOptions{
			Schedule: schedule, Timeout: opts.webhookTimeout, Concurrency: opts.webhookConcurrency,
			AllowPrivateSandbox: opts.webhookAllowPrivate, BrandWord: opts.brandWord,
		},
		ArchiveRetention: opts.archiveRetention, ArchiveInterval: opts.archiveInterval, ArchiveBatchSize: opts.archiveBatchSize,
		LedgerRecount: opts.ledgerRecount,
	}
	if store != nil {
		copts.Archive = store
	}
	if err := controllers.SetupReconcilers(mgr, copts); err != nil {
		return nil, err
	}
	if err := setupChecks(mgr); err != nil {
		return nil, err
	}
	return mgr, nil
}

// darajaCallbackURL is --daraja-callback-url, or --provider-callback-url with /daraja appended.
func (o *managerOptions) darajaCallbackURL() string {
	if o.darajaURL != "" || o.callbackURL == "" {
		return o.darajaURL
	}
	return strings.TrimSuffix(o.callbackURL, "/") + "/daraja"
}

// metricsOptions serves the metrics endpoint over HTTPS behind authentication and authorization
// (a self-signed certificate unless one is configured), or over plain HTTP with --metrics-secure=false.
func (o *managerOptions) metricsOptions() metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.metricsSecure}
	if o.metricsSecure {
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return m
}

func setupChecks(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the ready check: %w", err)
	}
	return nil
}

// validateWorkers checks the controllers' concurrency flags.
func (o *managerOptions) validateWorkers() error {
	switch {
	case o.paymentConcurrency < 1 || o.paymentConcurrency > maxWorkers:
		return fmt.Errorf("--payment-concurrency must be between 1 and %d", maxWorkers)
	case o.webhookConcurrency < 1 || o.webhookConcurrency > maxWorkers:
		return fmt.Errorf("--webhook-concurrency must be between 1 and %d", maxWorkers)
	case o.attemptWatch < 0:
		return fmt.Errorf("--attempt-watch must not be negative")
	}
	return nil
}

// maxWorkers bounds the concurrency flags: more workers than this only queue on the API server
// and the provider.
const maxWorkers = 256

// validateLeaderElection checks what client-go's leader elector would otherwise refuse at start:
// lease duration > renew deadline > retry period (times 1.2, its jitter) > 0.
func (o *managerOptions) validateLeaderElection() error {
	switch {
	case o.retryPeriod <= 0:
		return fmt.Errorf("--leader-election-retry-period must be positive")
	case o.renewDeadline <= time.Duration(1.2*float64(o.retryPeriod)):
		return fmt.Errorf("--leader-election-renew-deadline must be more than 1.2 times --leader-election-retry-period")
	case o.leaseDuration <= o.renewDeadline:
		return fmt.Errorf("--leader-election-lease-duration must be more than --leader-election-renew-deadline")
	}
	return nil
}

// parseSchedule reads a comma-separated list of durations.
func parseSchedule(list string) ([]time.Duration, error) {
	var out []time.Duration
	for _, part := range strings.Split(list, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("--webhook-retry-schedule: %q is not a duration", part)
		}
		out = append(out, d)
	}
	if len(out) == 0 || len(out) > 10 {
		return nil, fmt.Errorf("--webhook-retry-schedule: between 1 and 10 attempts")
	}
	return out, nil
}
