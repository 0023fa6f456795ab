// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/paygate/paygate/apiserver"
	"github.com/paygate/paygate/console"
	"github.com/paygate/paygate/internal/clientip"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/replicas"
)

// apiserverOptions are the flags of `paygate apiserver` (and the apiserver inside `paygate dev`).
type apiserverOptions struct {
	addr               string
	metricsAddr        string
	pprofAddr          string
	publicURL          string
	checkoutKeyFile    string
	signatureTolerance time.Duration
	allowUnsignedProd  bool
	rateLimit          int
	trustedProxies     string
	checkoutLifetime   time.Duration
	siteName           string
	siteLogo           string
	siteURL            string
	gatewayName        string
	gatewayDescription string
	brandWord          string
	readHeaderTimeout  time.Duration
	// console, consoleIdle and consoleAbsolute are --console, --console-idle-timeout and
	// --console-absolute-timeout (docs/console.md).
	console                      bool
	consoleIdle, consoleAbsolute time.Duration
	// oidc* are --console-oidc-*: sign-in through an OpenID Connect provider (off without an
	// issuer).
	oidcIssuer, oidcClientID, oidcSecretFile, oidcMerchantClaim, oidcRoleClaim string
	// consoleSecretsNS is --console-secrets-namespace.
	consoleSecretsNS string
	// rateLimitScope is --rate-limit-scope (standalone apiserver only): "cluster", "replica" or
	// "" (cluster when the pod's namespace is known).
	rateLimitScope string
	// archive is where reads fall back to for settled objects moved out of etcd. bindFlags does
	// not bind its flags (the manager has the same ones): the standalone apiserver binds them
	// itself, and `paygate dev` may share the manager's (api.archive = opts.archive) or set
	// Options.Archive to the manager's store.
	archive archiveOptions
}

func (o *apiserverOptions) bindFlags(fs *flag.FlagSet, defaultAddr string) {
	fs.StringVar(&o.addr, "bind-address", defaultAddr, "Address the merchant API listens on.")
	fs.StringVar(&o.publicURL, "public-url", "", "Base URL merchants and customers reach the API at (default http://<bind-address>).")
	fs.StringVar(&o.checkoutKeyFile, "checkout-key-file", "", "File holding the hex key that signs checkout URLs; every replica must share it. Also read from PAYGATE_CHECKOUT_KEY.")
	fs.DurationVar(&o.signatureTolerance, "signature-tolerance", 300*time.Second, "How far X-Timestamp may be from the server's clock.")
	fs.BoolVar(&o.allowUnsignedProd, "allow-unsigned-production", false, "Administrator switch: honour a merchant's spec.unsignedRequests in production too (sandbox needs only the merchant's switch).")
	fs.IntVar(&o.rateLimit, "rate-limit", 120, "Default requests per minute per business and client IP.")
	fs.StringVar(&o.trustedProxies, "trusted-proxies", "", "Comma-separated CIDRs of proxies whose X-Forwarded-For is trusted.")
	fs.DurationVar(&o.checkoutLifetime, "checkout-lifetime", 30*time.Minute, "How long a checkout session lasts before the payment expires.")
	fs.StringVar(&o.siteName, "site-name", "Paygate", "Site name reported by site-info.")
	fs.StringVar(&o.siteLogo, "site-logo", "", "Logo URL reported by site-info (default: the logo the apiserver serves, <public-url>"+apiserver.LogoPath+").")
	fs.StringVar(&o.siteURL, "site-url", "", "Site URL reported by site-info and used as the default redirect.")
	fs.StringVar(&o.gatewayName, "gateway-name", "", "Gateway name reported by site-info (default: --site-name).")
	fs.StringVar(&o.gatewayDescription, "gateway-description", "", "Gateway description reported by site-info (default: "+apiserver.DefaultGatewayDescription+").")
	fs.StringVar(&o.brandWord, "brand-word", "Paygate", "Brand word in webhook header names (X-<brand>-Signature).")
	fs.DurationVar(&o.readHeaderTimeout, "read-header-timeout", apiserver.DefaultReadHeaderTimeout, "How long a client may take to send a request's headers before its connection is closed.")
	fs.BoolVar(&o.console, "console", true, "Serve the merchant console under /console.")
	fs.DurationVar(&o.consoleIdle, "console-idle-timeout", console.DefaultIdleTimeout, "A console session ends after this long without a request.")
	fs.DurationVar(&o.consoleAbsolute, "console-absolute-timeout", console.DefaultAbsoluteTimeout, "A console session ends this long after sign-in, however active.")
	fs.StringVar(&o.consoleSecretsNS, "console-secrets-namespace", "", "Namespace of the console users' credentials Secrets: the apiserver's own (default: $POD_NAMESPACE or the service account's, else paygate-system); it may write Secrets only there.")
	fs.StringVar(&o.oidcIssuer, "console-oidc-issuer", "", "OpenID Connect issuer URL: the console offers sign-in through it (off when empty).")
	fs.StringVar(&o.oidcClientID, "console-oidc-client-id", "", "The console's client id at the OpenID Connect provider.")
	fs.StringVar(&o.oidcSecretFile, "console-oidc-client-secret-file", "", "File holding the console's client secret at the OpenID Connect provider (or $PAYGATE_CONSOLE_OIDC_CLIENT_SECRET).")
	fs.StringVar(&o.oidcMerchantClaim, "console-oidc-merchant-claim", "paygate_merchant", "ID token claim naming the user's merchant as <namespace>/<name>.")
	fs.StringVar(&o.oidcRoleClaim, "console-oidc-role-claim", "paygate_role", "ID token claim naming the user's console role (owner, developer, finance or viewer).")
}

// consoleSecretsNamespace is --console-secrets-namespace, else the pod's namespace, else
// apiserver.DefaultConsoleSecretsNamespace.
func (o *apiserverOptions) consoleSecretsNamespace() string {
	if o.consoleSecretsNS != "" {
		return o.consoleSecretsNS
	}
	if ns, _ := replicas.Namespace(); ns != "" {
		return ns
	}
	return apiserver.DefaultConsoleSecretsNamespace
}

// consoleOIDC is the console's OpenID Connect configuration from the flags (nil: off).
func (o *apiserverOptions) consoleOIDC() (*console.OIDCOptions, error) {
	if o.oidcIssuer == "" {
		return nil, nil
	}
	secret := os.Getenv("PAYGATE_CONSOLE_OIDC_CLIENT_SECRET")
	if o.oidcSecretFile != "" {
		b, err := os.ReadFile(o.oidcSecretFile)
		if err != nil {
			return nil, fmt.Errorf("reading --console-oidc-client-secret-file: %w", err)
		}
		secret = strings.TrimSpace(string(b))
	}
	if o.oidcClientID == "" {
		return nil, errors.New("--console-oidc-issuer needs --console-oidc-client-id")
	}
	return &console.OIDCOptions{IssuerURL: o.oidcIssuer, ClientID: o.oidcClientID, ClientSecret: secret,
		MerchantClaim: o.oidcMerchantClaim, RoleClaim: o.oidcRoleClaim}, nil
}

// openArchive opens the archive the archive flags configure and sets it as opts.Archive (nil:
// no archive, reads stay live). The returned function closes it; it is never nil. The pool does
// not connect here: an archive that is down at start is reported, and reads that need it answer
// 503 until it is back.
func (o *apiserverOptions) openArchive(ctx context.Context, opts *apiserver.Options) (closeArchive func(), err error) {
	store, err := o.archive.open(ctx, "paygate-apiserver")
	if err != nil {
		return func() {}, fmt.Errorf("opening the archive: %w", err)
	}
	if store == nil {
		return func() {}, nil
	}
	opts.Archive = store
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := store.Ping(pingCtx); err != nil {
		opts.Log.Error(err, "The archive does not answer yet; reads that need it answer 503 until it does")
	}
	return store.Close, nil
}

// serverOptions turns flags into apiserver options.
func (o *apiserverOptions) serverOptions() (apiserver.Options, error) {
	var proxies []netip.Prefix
	if o.trustedProxies != "" {
		var err error
		if proxies, err = clientip.ParsePrefixes(o.trustedProxies); err != nil {
			return apiserver.Options{}, fmt.Errorf("--trusted-proxies: %w", err)
		}
	}
	key, err := o.checkoutKey()
	if err != nil {
		return apiserver.Options{}, err
	}
	public := o.publicURL
	if public == "" {
		host := o.addr
		if strings.HasPrefix(host, ":") {
			host = "127.0.0.1" + host
		}
		public = "http://" + host
	}
	oidc, err := o.consoleOIDC()
	if err != nil {
		return apiserver.Options{}, err
	}
	return apiserver.Options{
		SignatureTolerance:      o.signatureTolerance,
		AllowUnsignedProduction: o.allowUnsignedProd,
		RateLimitPerMinute:      o.rateLimit,
		TrustedProxies:          proxies,
		CheckoutKey:             key,
		CheckoutLifetime:        o.checkoutLifetime,
		ReadHeaderTimeout:       o.readHeaderTimeout,
		PublicURL:               strings.TrimSuffix(public, "/"),
		Site: apiserver.SiteInfo{SiteName: o.siteName, SiteLogo: o.siteLogo, SiteURL: o.siteURL,
			GatewayName: o.gatewayName, GatewayDescription: o.gatewayDescription, BrandWord: o.brandWord},
		Console: apiserver.ConsoleOptions{Disabled: !o.console, IdleTimeout: o.consoleIdle, AbsoluteTimeout: o.consoleAbsolute,
			OIDC: oidc, SecretsNamespace: o.consoleSecretsNamespace()},
		Log: ctrl.Log.WithName("apiserver"),
	}, nil
}

func (o *apiserverOptions) checkoutKey() ([]byte, error) {
	raw := os.Getenv("PAYGATE_CHECKOUT_KEY")
	if o.checkoutKeyFile != "" {
		b, err := os.ReadFile(o.checkoutKeyFile)
		if err != nil {
			return nil, fmt.Errorf("reading --checkout-key-file: %w", err)
		}
		raw = string(b)
	}
	key, err := hex.DecodeString(strings.TrimSpace(raw))
	if err != nil || len(key) < 32 {
		return nil, errors.New("the checkout key must be at least 32 bytes, hex-encoded (--checkout-key-file or PAYGATE_CHECKOUT_KEY)")
	}
	return key, nil
}

func runAPIServer(args []string) int {
	fs := flag.NewFlagSet("paygate apiserver", flag.ContinueOnError)
	var opts apiserverOptions
	opts.bindFlags(fs, ":8443")
	opts.archive.bindFlagsWithPool(fs, defaultApiserverArchiveMaxConns)
	// Only the standalone apiserver: in `paygate dev` the manager's endpoint serves the same registry.
	fs.StringVar(&opts.metricsAddr, "metrics-bind-address", "0", "Address the Prometheus /metrics endpoint listens on, apart from the merchant API; 0 disables it.")
	fs.StringVar(&opts.pprofAddr, "pprof-bind-address", "0", "Address net/http/pprof (CPU and heap profiles) listens on, apart from the merchant API; 0 (the default) disables it. Bind it to loopback or a port no one else reaches.")
	// Only the standalone apiserver: `paygate dev` runs one replica.
	fs.StringVar(&opts.rateLimitScope, "rate-limit-scope", "", "cluster: rate limits hold across the apiserver replicas, each allowing its share, counted with Leases in the pod's namespace; "+
		"replica: each replica allows the whole limit. Default: cluster when the pod's namespace is known ($POD_NAMESPACE or the service account's), else replica.")
	var zapOpts zap.Options
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")
	serverOpts, err := opts.serverOptions()
	if err != nil {
		log.Error(err, "Invalid apiserver options")
		return 2
	}
	namespace, namespaceSource := replicas.Namespace()
	scope, why, err := rateLimitScope(opts.rateLimitScope, namespace)
	if err != nil {
		log.Error(err, "Invalid apiserver options")
		return 2
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "Unable to load a kubeconfig")
		return 1
	}
	var announcer *replicas.Announcer
	if scope == scopeCluster {
		if announcer, err = newAnnouncer(cfg, namespace); err != nil {
			log.Error(err, "Unable to count the apiserver replicas")
			return 1
		}
		serverOpts.Replicas = announcer
		log.Info("Rate limits hold across the apiserver replicas", "rateLimitScope", scope, "namespace", namespace,
			"namespaceFrom", namespaceSource, "lease", announcer.Name())
	} else if why != "" {
		log.Info("Warning: rate limits are per apiserver replica: N replicas allow N times the limit", "rateLimitScope", scope, "reason", why)
	} else {
		log.Info("Rate limits are per apiserver replica", "rateLimitScope", scope)
	}
	ctx := ctrl.SetupSignalHandler()
	closeArchive, err := opts.openArchive(ctx, &serverOpts)
	if err != nil {
		log.Error(err, "Invalid archive options")
		return 2
	}
	defer closeArchive()
	rt, done, err := apiserver.Start(ctx, cfg, opts.addr, serverOpts)
	if err != nil {
		log.Error(err, "Unable to start the apiserver")
		return 1
	}
	log.Info("Serving the merchant API", "address", rt.Listener.Addr().String(), "publicURL", serverOpts.PublicURL,
		"archive", serverOpts.Archive != nil)
	announced := make(chan struct{})
	if announcer != nil {
		go func() {
			defer close(announced)
			_ = announcer.Run(ctx) // deletes this replica's Lease when ctx ends
		}()
	} else {
		close(announced)
	}
	if opts.metricsAddr != "0" && opts.metricsAddr != "" {
		ln, err := net.Listen("tcp", opts.metricsAddr)
		if err != nil {
			log.Error(err, "Unable to serve metrics", "address", opts.metricsAddr)
			return 1
		}
		go serveMetrics(ctx, ln)
		log.Info("Serving metrics", "address", ln.Addr().String())
	}
	if opts.pprofAddr != "0" && opts.pprofAddr != "" {
		ln, err := net.Listen("tcp", opts.pprofAddr)
		if err != nil {
			log.Error(err, "Unable to serve pprof", "address", opts.pprofAddr)
			return 1
		}
		go serveMux(ctx, ln, pprofMux())
		log.Info("Serving pprof", "address", ln.Addr().String())
	}
	err = <-done
	select {
	case <-announced:
	case <-time.After(10 * time.Second):
	}
	if err != nil {
		log.Error(err, "The apiserver stopped with an error")
		return 1
	}
	return 0
}

// Values of --rate-limit-scope.
const (
	scopeCluster = "cluster"
	scopeReplica = "replica"
)

// rateLimitScope resolves --rate-limit-scope (flag) given the pod's namespace ("" outside a
// pod): cluster needs the namespace, so without one the scope is replica and why says so.
func rateLimitScope(flag, namespace string) (scope, why string, err error) {
	switch flag {
	case scopeReplica:
		return scopeReplica, "", nil
	case scopeCluster, "":
		if namespace == "" {
			return scopeReplica, "the pod's namespace is unknown (set POD_NAMESPACE from metadata.namespace, or mount the service account)", nil
		}
		return scopeCluster, "", nil
	}
	return "", "", fmt.Errorf("--rate-limit-scope must be cluster or replica, not %q", flag)
}

// newAnnouncer counts the apiserver replicas with Leases in namespace, through a client that
// reads live (the apiserver may read Leases only there), and reports the count as
// paygate_api_rate_limit_replicas.
func newAnnouncer(cfg *rest.Config, namespace string) (*replicas.Announcer, error) {
	c, err := client.New(cfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("creating a Kubernetes client: %w", err)
	}
	return replicas.New(replicas.Options{
		Client: c, Namespace: namespace, Identity: os.Getenv("POD_NAME"),
		OnCount: func(n int) { metrics.APIRateLimitReplicas.Set(float64(n)) },
		Log:     ctrl.Log.WithName("replicas"),
	})
}

// serveMetrics serves the Prometheus registry the apiserver counts in (paygate_* metrics such as
// paygate_unsigned_requests_total, and the Go runtime's) on ln until ctx ends.
func serveMetrics(ctx context.Context, ln net.Listener) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(crmetrics.Registry, promhttp.HandlerOpts{}))
	serveMux(ctx, ln, mux)
}

// pprofMux serves net/http/pprof under /debug/pprof/, as the manager's --pprof-bind-address does
// (controller-runtime's).
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

func serveMux(ctx context.Context, ln net.Listener, mux *http.ServeMux) {
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	_ = srv.Serve(ln)
}
