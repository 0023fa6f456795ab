// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build dev

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/apiserver"
	"github.com/paygate/paygate/config"
	"github.com/paygate/paygate/console"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/controlplane"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/pgtest"
	"github.com/paygate/paygate/pkg/paygate"
)

// startDevArchive gives the local control plane its archive: the DSN of --archive-dsn-file or
// PAYGATE_ARCHIVE_DSN when given, else a PostgreSQL of its own under <state-dir>/postgres when
// the server binaries are installed (started clean, as etcd is), else none. It says which.
func startDevArchive(ctx context.Context, stateDir string, opts managerOptions) (*archive.Store, func() error, error) {
	none := func() error { return nil }
	if store, err := opts.archive.open(ctx, "paygate-dev"); err != nil || store != nil {
		if store != nil {
			fmt.Println("Archiving settled objects to the PostgreSQL given by --archive-dsn-file / " + EnvArchiveDSN)
			// Before the controllers start, as below; a database that does not answer yet is left to
			// the archiver, which retries.
			if err := store.Migrate(ctx); err != nil {
				fmt.Printf("Note: the archive's schema could not be migrated yet (%v); the archiver retries.\n", err)
			}
			return store, func() error { store.Close(); return nil }, nil
		}
		return nil, none, err
	}
	if _, err := pgtest.FindBinaries(); err != nil {
		fmt.Println("No PostgreSQL server binaries found (hack/install-postgres.sh installs them): running without an archive; settled objects stay in etcd.")
		return nil, none, nil
	}
	dir, _ := filepath.Abs(filepath.Join(stateDir, "postgres"))
	fmt.Println("Starting PostgreSQL for the archive in " + dir + " (kept, as etcd's data is) ...")
	srv, err := pgtest.StartServerIn(dir)
	if err != nil {
		return nil, none, fmt.Errorf("starting the archive's PostgreSQL: %w", err)
	}
	store, err := archive.Open(ctx, srv.DSN, archive.Options{MaxConns: int32(opts.archive.maxConns), ApplicationName: "paygate-dev"})
	if err != nil {
		return nil, none, errors.Join(err, srv.Stop())
	}
	// The schema is there before the controllers start: the balance controller reads the archive
	// at once, and the archiver, which migrates too, may not have run yet (a burst of errors at
	// start otherwise).
	if err := store.Migrate(ctx); err != nil {
		store.Close()
		return nil, none, errors.Join(fmt.Errorf("migrating the archive's schema: %w", err), srv.Stop())
	}
	fmt.Printf("Archiving objects %s after they settle to PostgreSQL: psql '%s'\n", opts.archiveRetention.Payments, srv.DSN)
	return store, func() error {
		store.Close()
		return srv.Stop()
	}, nil
}

// devNamespace holds the demo merchants.
const devNamespace = "demo"

// runDev starts a local control plane, installs the CRDs and the demo configuration, runs the
// controllers, and writes a kubeconfig and the demo credentials. Ctrl-C stops everything.
func runDev(args []string) int {
	fs := flag.NewFlagSet("paygate dev", flag.ContinueOnError)
	assets := fs.String("assets", "bin", "Directory holding the etcd, kube-apiserver and kube-controller-manager binaries (make controlplane builds them).")
	stateDir := fs.String("state-dir", ".paygate/dev", "Directory for the kubeconfig, the demo credentials, etcd's data and the archive's database (kept across restarts).")
	clean := fs.Bool("clean", false, "Start from nothing: remove the etcd data and the archive database kept in --state-dir first.")
	var opts managerOptions
	opts.bindFlags(fs, "0", "0")
	devLogDefaults(&opts.zapOptions) // readable lines; the --zap-* flags override (dev_log.go)
	logFramework := fs.Bool("log-framework", false, "Also show the framework's (controller-runtime's) info messages, such as its start-up lines; without it they are debug messages (--zap-log-level=debug).")
	var api apiserverOptions
	api.bindFlags(fs, "127.0.0.1:8443")
	// A development session archives what settled a few minutes ago, so that the archive is seen
	// at work; the flags override.
	for _, name := range []string{"archive-payments-after", "archive-payouts-after", "archive-invoices-after", "archive-webhook-deliveries-after", "archive-refunds-after"} {
		_ = fs.Set(name, "10m")
	}
	_ = fs.Set("archive-interval", "30s")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// The demo merchants' sandbox webhooks go to a receiver on this machine.
	opts.webhookAllowPrivate = true
	opts.brandWord = api.brandWord // one brand for the API and the webhooks
	ctrl.SetLogger(newDevLogger(opts.zapOptions, *logFramework))
	log := ctrl.Log.WithName("dev")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *clean {
		for _, d := range []string{"etcd", "postgres"} {
			if err := os.RemoveAll(filepath.Join(*stateDir, d)); err != nil {
				log.Error(err, "Removing the kept state")
				return 1
			}
		}
	}
	if err := dev(ctx, *assets, *stateDir, opts, api); err != nil {
		log.Error(err, "paygate dev failed")
		return 1
	}
	return 0
}

func dev(ctx context.Context, assets, stateDir string, opts managerOptions, api apiserverOptions) (retErr error) {
	etcdDir, _ := filepath.Abs(filepath.Join(stateDir, "etcd"))
	kcmLog, _ := filepath.Abs(filepath.Join(stateDir, "kube-controller-manager.log"))
	if _, err := os.Stat(etcdDir); err == nil {
		fmt.Println("Starting etcd and kube-apiserver on loopback with the state kept in " + etcdDir + " (--clean starts from nothing) ...")
	} else {
		fmt.Println("Starting etcd and kube-apiserver on loopback ...")
	}
	fmt.Println("Then kube-controller-manager with only its garbage collector and namespace controller (log: " + kcmLog + ") ...")
	cp, err := controlplane.Start(controlplane.Options{AssetsDir: assets, Scheme: kube.Scheme(), EtcdDataDir: etcdDir,
		// Owner references cascade and deleted namespaces go away, as in a real cluster.
		ControllerManager: true, ControllerManagerLog: kcmLog})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("Stopping the control plane ...")
		retErr = errors.Join(retErr, cp.Stop())
	}()
	kubeconfig, _ := filepath.Abs(filepath.Join(stateDir, "kubeconfig"))
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}

	store, stopArchive, err := startDevArchive(ctx, stateDir, opts)
	if err != nil {
		return err
	}
	defer func() { retErr = errors.Join(retErr, stopArchive()) }()
	if err := opts.validateArchive(); err != nil {
		return err
	}
	if err := opts.validateWorkers(); err != nil {
		return err
	}
	// The fakes of pawaPay and Daraja carry the provider-backed demo gateways (dev_providers.go).
	// Their callbacks go to the apiserver on this machine; the manager sends Daraja the callback
	// URLs unless --daraja-callback-url or --provider-callback-url says otherwise.
	localAPI := devLocalURL(api.addr)
	if opts.darajaCallbackURL() == "" {
		opts.darajaURL = localAPI + devDarajaCallbackPath
	}
	fakes, err := startDevFakes(ctrl.Log.WithName("fakes"), localAPI+devPawapayCallbackPath, opts.darajaCallbackURL())
	if err != nil {
		return err
	}
	defer fakes.Close()
	mgr, err := newManager(cp.Config, opts, store)
	if err != nil {
		return err
	}
	mgrCtx, stopManager := context.WithCancel(ctx)
	defer stopManager()
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	defer func() {
		stopManager()
		retErr = errors.Join(retErr, <-mgrDone)
	}()

	c, err := client.New(cp.Config, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	samples, err := config.Samples()
	if err != nil {
		return err
	}
	if err := controlplane.Apply(ctx, c, "paygate-dev", samples...); err != nil {
		return fmt.Errorf("applying the demo configuration: %w", err)
	}
	if err := applyProviderDemo(ctx, c, fakes.Demo); err != nil {
		return fmt.Errorf("applying the provider-backed demo gateways: %w", err)
	}
	merchants, err := waitForMerchantsReady(ctx, c, 2*time.Minute)
	if err != nil {
		return err
	}
	providerGateways, err := waitForProviderGateways(ctx, c, time.Minute, devPawapayGateway, devDarajaGateway)
	if err != nil {
		return err
	}
	baseURL, apiDone, err := startDevAPIServer(ctx, cp.Config, api, store)
	if err != nil {
		return err
	}
	owner, err := demoConsoleOwner(ctx, c, merchants)
	if err != nil {
		return err
	}
	credsFile, _ := filepath.Abs(filepath.Join(stateDir, "credentials.env"))
	creds := &credentialsFile{c: c, path: credsFile, baseURL: baseURL, owner: owner}
	if _, err := creds.refresh(ctx); err != nil {
		return err
	}
	if err := startDemoReceiver(ctx, c, merchants); err != nil {
		return err
	}
	simulated, err := productionSimulators(ctx, c)
	if err != nil {
		return err
	}
	printWelcome(kubeconfig, credsFile, baseURL, merchants, simulated, owner)
	printProviderGateways(fakes.Demo, providerGateways)
	fmt.Println("\nPress Ctrl-C to stop everything.")
	// credentials.env follows the credentials while this runs (dev_credentials.go).
	credsCtx, stopCreds := context.WithCancel(ctx)
	credsDone := make(chan struct{})
	go func() {
		defer close(credsDone)
		creds.keepFresh(credsCtx, os.Stdout, ctrl.Log.WithName("dev"))
	}()
	defer func() { stopCreds(); <-credsDone }()
	defer func() { retErr = errors.Join(retErr, <-apiDone) }()

	select {
	case <-ctx.Done():
		return nil
	case err := <-mgrDone:
		mgrDone <- err // the deferred stop reads it again
		return fmt.Errorf("the manager stopped: %w", err)
	}
}

// waitForMerchantsReady waits until every demo merchant is Ready.
func waitForMerchantsReady(ctx context.Context, c client.Client, timeout time.Duration) ([]paygatev1.Merchant, error) {
	deadline := time.Now().Add(timeout)
	for {
		var list paygatev1.MerchantList
		if err := c.List(ctx, &list, client.InNamespace(devNamespace)); err != nil {
			return nil, fmt.Errorf("listing the demo merchants: %w", err)
		}
		ready := len(list.Items) > 0
		for _, m := range list.Items {
			ready = ready && meta.IsStatusConditionTrue(m.Status.Conditions, paygatev1.ConditionReady) &&
				m.Status.ObservedGeneration == m.Generation
		}
		if ready {
			return list.Items, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the demo merchants were not Ready within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// demoConsoleOwner makes the console owner of the first approved demo merchant (a new password
// and TOTP secret at each start; docs/console.md).
func demoConsoleOwner(ctx context.Context, c client.Client, merchants []paygatev1.Merchant) (*console.DemoUser, error) {
	for i := range merchants {
		if merchants[i].Spec.BusinessStatus == paygatev1.BusinessApproved {
			owner, err := console.EnsureDemoUser(ctx, c, apiserver.DefaultConsoleSecretsNamespace, &merchants[i], "owner@"+merchants[i].Name+".example", paygatev1.ConsoleOwner)
			if err != nil {
				return nil, fmt.Errorf("making the demo console owner: %w", err)
			}
			return owner, nil
		}
	}
	return nil, nil
}

// productionSimulators are the demo gateways that simulate production payments
// (simulation: SandboxAndProduction in config/samples).
func productionSimulators(ctx context.Context, c client.Client) ([]string, error) {
	var list paygatev1.GatewayList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing the demo gateways: %w", err)
	}
	var out []string
	for _, g := range list.Items {
		if g.SimulatesProduction() {
			out = append(out, g.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func printWelcome(kubeconfig, credsFile, baseURL string, merchants []paygatev1.Merchant, simulated []string, owner *console.DemoUser) {
	fmt.Printf(`
Paygate is running on a local control plane.

  merchant API: %s/api/v1   (OpenAPI: %s/api/v1/openapi.json)
  kubeconfig:   %s
  credentials:  %s   (source it; mode 0600)

Try, in another terminal (this one stays in the foreground and shows what Paygate does):
  export KUBECONFIG=%s
  kubectl get paygate -A
  kubectl get merchants,gateways -A
  kubectl get merchant -n demo duka-online -o yaml
  kubectl annotate merchant -n demo duka-online paygate.dev/rotate-sandbox-credentials="$(date +%%s)" --overwrite

Webhooks of duka-online's sandbox payments are received and verified here, on `+demoReceiverAddr+`.

Call the API (hack/paygate-curl.sh signs requests with the sourced credentials):
  . %s
  hack/paygate-curl.sh POST /api/v1/payments '{"payment_amount":1500,"currency_code":"TZS","ref_trx":"order-1"}'
  hack/paygate-curl.sh GET '/api/v1/payments?limit=5'

Demo merchants:
`, baseURL, baseURL, kubeconfig, credsFile, kubeconfig, credsFile)
	for _, m := range merchants {
		fmt.Printf("  %-14s %-12s id %-3d sandbox key %s\n", m.Name, m.Spec.BusinessStatus, m.Status.ID, m.Status.Sandbox.BusinessID)
	}
	if owner != nil {
		fmt.Printf("\nMerchant console: %s/console/  sign in as %s; the password is PAYGATE_CONSOLE_PASSWORD in\n"+
			"%s, and `bin/paygate console code` (after sourcing it) prints the second factor's current code.\n",
			baseURL, owner.Email, credsFile)
	}
	if len(simulated) > 0 {
		fmt.Printf("\nNo real provider is configured. Production payments are simulated (no money moves, remark\n"+
			"SIMULATED_PRODUCTION) through the demo gateways %s only (simulation: SandboxAndProduction).\n",
			strings.Join(simulated, ", "))
	}
}

// startDevAPIServer serves the merchant API against the local control plane, with a checkout key
// made for this run.
func startDevAPIServer(ctx context.Context, cfg *rest.Config, api apiserverOptions, store *archive.Store) (string, <-chan error, error) {
	if os.Getenv("PAYGATE_CHECKOUT_KEY") == "" && api.checkoutKeyFile == "" {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return "", nil, fmt.Errorf("making a checkout key: %w", err)
		}
		if err := os.Setenv("PAYGATE_CHECKOUT_KEY", hex.EncodeToString(key)); err != nil {
			return "", nil, err
		}
	}
	serverOpts, err := api.serverOptions()
	if err != nil {
		return "", nil, err
	}
	if store != nil {
		serverOpts.Archive = store // the manager's pool: archived records read as live ones
	}
	_, done, err := apiserver.Start(ctx, cfg, api.addr, serverOpts)
	if err != nil {
		return "", nil, err
	}
	return serverOpts.PublicURL, done, nil
}

// demoReceiverAddr is where the demo merchant's sandbox webhook URL points (config/samples).
const demoReceiverAddr = "127.0.0.1:9099"

// startDemoReceiver plays the demo merchant's webhook endpoint: it verifies each delivery with
// the merchant's signing secret, as a merchant's receiver would, and prints it.
func startDemoReceiver(ctx context.Context, c client.Client, merchants []paygatev1.Merchant) error {
	var secret corev1.Secret
	var merchant *paygatev1.Merchant
	for i := range merchants {
		if merchants[i].Spec.WebhookURLs.Sandbox == "http://"+demoReceiverAddr+"/webhooks/paygate" {
			merchant = &merchants[i]
		}
	}
	if merchant == nil {
		return nil
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: merchant.Namespace, Name: credentials.WebhookSecretName(merchant.Name)}, &secret); err != nil {
		return fmt.Errorf("reading the demo webhook secret: %w", err)
	}
	verifier := paygate.WebhookVerifier{Secret: secret.Data[credentials.KeySigningSecret]}
	mux := http.NewServeMux()
	mux.Handle("/webhooks/paygate", verifier.Handler(func(_ context.Context, e *paygate.WebhookEvent) error {
		fmt.Printf("Webhook received by %s: %s %s (signature verified)\n", merchant.Name, e.Type, e.ID)
		return nil
	}))
	ln, err := net.Listen("tcp", demoReceiverAddr)
	if err != nil {
		fmt.Printf("Note: the demo webhook receiver could not listen on %s (%v); deliveries will retry.\n", demoReceiverAddr, err)
		return nil
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	return nil
}
