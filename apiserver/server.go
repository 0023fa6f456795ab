// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package apiserver is Paygate's merchant REST API (docs/api.md): signed authentication, the
// payment endpoints, errors, limits and the OpenAPI document. It records intent as custom resources
// and answers reads from the informer cache; it never calls a provider or sends a webhook
// (controllers do).
package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/clientip"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/ratelimit"
)

// Options configure the apiserver.
type Options struct {
	// Cache answers reads (informer-backed); Writer creates and updates objects; APIReader reads
	// live, only when the cache has not seen our own write yet.
	Cache     client.Reader
	Writer    client.Writer
	APIReader client.Reader
	// Clock is the time source (default the real clock; tests pass a
	// k8s.io/utils/clock/testing fake).
	Clock clock.PassiveClock
	// SignatureTolerance is how far X-Timestamp may be from now (default 300 s).
	SignatureTolerance time.Duration
	// AllowUnsignedProduction is the administrator's consent to honour a merchant's
	// spec.unsignedRequests in production (sandbox needs only the merchant's switch).
	AllowUnsignedProduction bool
	// RateLimitPerMinute is the default request rate per business and client IP (default 120).
	RateLimitPerMinute int
	// Replicas counts the apiserver replicas the rate limits are shared by (internal/replicas):
	// this replica allows ceil(limit / Count()) per minute per business and client IP, so that
	// the replicas together allow about the limit. nil: this replica allows the whole limit.
	Replicas ReplicaCounter
	// TrustedProxies may set X-Forwarded-For.
	TrustedProxies []netip.Prefix
	// CheckoutKey signs checkout URLs; every replica must share it.
	CheckoutKey []byte
	// CheckoutLifetime is how long a checkout session lasts (default 30 minutes).
	CheckoutLifetime time.Duration
	// PublicURL is the base URL customers and merchants reach the apiserver at.
	PublicURL string
	// Site is the branding reported by site-info and used in webhook header names.
	Site SiteInfo
	// ReadHeaderTimeout is how long a client may take to send a request's headers before the
	// connection is closed (default DefaultReadHeaderTimeout); it bounds slow clients that hold
	// connections open by trickling headers. Used by Start.
	ReadHeaderTimeout time.Duration
	// Archive holds the settled objects moved out of etcd (docs/archive.md): reads, lists and
	// replays of creates fall back to it. nil: no archive, every read is live. A nil
	// *archive.Store counts as nil, so `opts.Archive = store` is right with or without one.
	Archive Archive
	// Gateways builds the pawaPay and Daraja adapters the provider callback routes verify and
	// confirm callbacks with (receive only: the apiserver never sends money). nil: New builds
	// one over Cache.
	Gateways *provider.Gateways
	// Console configures the merchant console served under /console (on unless disabled).
	Console ConsoleOptions
	// Log receives structured logs.
	Log logr.Logger
}

// +kubebuilder:rbac:groups=paygate.dev,resources=merchants;gateways;gatewayselections;balances,verbs=get;list;watch
// +kubebuilder:rbac:groups=paygate.dev,resources=payments,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=payouts,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=refunds,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=idempotencykeys,verbs=get;create;update;delete
// +kubebuilder:rbac:groups=paygate.dev,resources=billingplans,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=paygate.dev,resources=subscriptions,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=invoices,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// ReplicaCounter counts the apiserver replicas serving now, this one included (at least 1).
type ReplicaCounter interface {
	Count() int
}

// Server serves the merchant API.
type Server struct {
	opts Options
	// merchants is the Merchant informer's store with businessIDIndex (nil without an informer
	// cache).
	merchants toolscache.Indexer
	limiter   *ratelimit.Limiter
	ips       clientip.Resolver
	mux       *http.ServeMux
	// pawapayKeys caches the keys pawaPay signs callbacks with, per gateway.
	pawapayKeys pawapayKeyCache
	// lists are the list indexes (apiserver/listindex.go); nil without an informer cache.
	lists *listIndexes
	// listObserver, when set (tests), is told what each list request read.
	listObserver func(list string, st listStats)
	// claimWaitLimit, when set (tests), replaces the package's claimWaitLimit.
	claimWaitLimit time.Duration
	// console is the merchant console (nil when off).
	console http.Handler
	// eventIDs is the WebhookDelivery informer's store with eventIDIndex (apiserver/events.go);
	// nil without an informer cache.
	eventIDs toolscache.Indexer
}

// New builds a Server, filling defaults.
func New(opts Options) *Server {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.SignatureTolerance <= 0 {
		opts.SignatureTolerance = 300 * time.Second
	}
	if opts.RateLimitPerMinute <= 0 {
		opts.RateLimitPerMinute = 120
	}
	if opts.CheckoutLifetime <= 0 {
		opts.CheckoutLifetime = 30 * time.Minute
	}
	if opts.PublicURL == "" {
		opts.PublicURL = "http://127.0.0.1:8443"
	}
	opts.Site = opts.Site.withDefaults(opts.PublicURL)
	opts.Archive = noArchive(opts.Archive)
	if opts.Gateways == nil && opts.Cache != nil {
		opts.Gateways = &provider.Gateways{Reader: opts.Cache, ReceiveOnly: true}
	}
	s := &Server{
		opts:    opts,
		limiter: ratelimit.New(opts.Clock.Now, 100_000),
		ips:     clientip.Resolver{TrustedProxies: opts.TrustedProxies},
		mux:     http.NewServeMux(),
	}
	s.merchants = merchantIndex(opts.Cache)
	s.eventIDs = eventIDIndexer(opts.Cache)
	s.lists = startListIndexes(opts.Cache, opts.Log)
	s.routes()
	return s
}

// route is one path's handlers by method.
type route map[string]http.HandlerFunc

func (s *Server) routes() {
	s.handle("/api/v1/payments", route{http.MethodPost: s.collects(s.createPayment), http.MethodGet: s.listPayments})
	s.handle("/api/v1/payments/{trx_id}", route{http.MethodGet: s.getPayment})
	s.handle("/api/v1/payments/{trx_id}/push", route{http.MethodPost: s.collects(s.pushPayment)})
	s.handle("/api/v1/payments/{trx_id}/refunds", route{http.MethodPost: s.createRefund})
	s.handle("/api/v1/balance", route{http.MethodGet: s.getBalance})
	s.handle("/api/v1/initiate-payment", route{http.MethodPost: s.collects(s.initiatePayment)})
	s.handle("/api/v1/verify-payment/{trx_id}", route{http.MethodGet: s.verifyPayment})
	s.handle("/api/v1/site-info", route{http.MethodGet: s.siteInfo})
	s.handle("/api/v1/payouts/preview", route{http.MethodPost: s.previewPayout})
	s.handle("/api/v1/payouts", route{http.MethodPost: s.createPayout, http.MethodGet: s.listPayouts})
	s.handle("/api/v1/payouts/{id}", route{http.MethodGet: s.getPayout})
	s.handle("/api/v1/refunds", route{http.MethodGet: s.listRefunds})
	s.handle("/api/v1/refunds/{id}", route{http.MethodGet: s.getRefund})
	s.handle("/api/v1/billing/plans", route{http.MethodPost: s.createPlan, http.MethodGet: s.listPlans})
	s.handle("/api/v1/billing/plans/{code}", route{http.MethodGet: s.getPlan})
	s.handle("/api/v1/billing/subscriptions", route{http.MethodPost: s.collects(s.createSubscription), http.MethodGet: s.listSubscriptions})
	s.handle("/api/v1/billing/subscriptions/{id}", route{http.MethodGet: s.getSubscription})
	s.handle("/api/v1/billing/subscriptions/{id}/cancel", route{http.MethodPost: s.cancelSubscription})
	s.handle("/api/v1/billing/subscriptions/{id}/advance", route{http.MethodPost: s.advanceTestClock})
	s.handle("/api/v1/billing/invoices", route{http.MethodGet: s.listInvoices})
	s.handle("/api/v1/events", route{http.MethodGet: s.listEvents})
	s.handle("/api/v1/events/{id}/redeliver", route{http.MethodPost: s.redeliverEvent})
	s.handle("/api/v1/openapi.json", route{http.MethodGet: s.openAPI})
	s.mux.HandleFunc("POST /internal/provider/callbacks", s.providerCallback)
	s.mux.HandleFunc("POST /internal/provider/callbacks/pawapay", s.pawapayCallback)
	s.mux.HandleFunc("POST /internal/provider/callbacks/daraja/{gateway}/{token}", s.darajaCallback)
	s.mux.HandleFunc("POST /internal/provider/callbacks/daraja/{gateway}/{token}/{kind}", s.darajaCallback)
	s.checkoutRoutes()
	s.mux.HandleFunc("GET "+LogoPath, s.logo) // the default site_logo (siteinfo.go)
	s.mountConsole()
	s.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("/", s.noRoute)
}

// replicas is how many replicas share the rate limit (1 without Options.Replicas).
func (s *Server) replicas() int {
	if s.opts.Replicas == nil {
		return 1
	}
	return max(s.opts.Replicas.Count(), 1)
}

// noRoute answers a path that is not a route: 404 in the error shape (docs/api.md, Endpoints).
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	writeError(w, &APIError{Status: http.StatusNotFound, Label: LabelNotFound, Message: "No route matches " + r.Method + " " + r.URL.Path + "."})
}

// cleanPath is the path http.ServeMux routes a request by ("/a//b/../c" is "/a/c"); the mux
// answers a path that is not already clean with a redirect in HTML.
func cleanPath(p string) string {
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if strings.HasSuffix(p, "/") && np != "/" {
		np += "/"
	}
	return np
}

// handle registers an authenticated path; other methods get 405 in the error shape, and a body
// that is not JSON gets 415 before anything else is looked at.
func (s *Server) handle(pattern string, methods route) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		h, ok := methods[r.Method]
		if !ok {
			allow := ""
			for m := range methods {
				if allow != "" {
					allow += ", "
				}
				allow += m
			}
			w.Header().Set("Allow", allow)
			writeError(w, &APIError{Status: http.StatusMethodNotAllowed, Label: LabelMethodNotAllowed,
				Message: "Method " + r.Method + " is not allowed on " + r.URL.Path + "."})
			return
		}
		if apiErr := requireJSON(r); apiErr != nil {
			writeError(w, apiErr)
			return
		}
		s.authenticated(h).ServeHTTP(w, r)
	})
}

// LabelUnsupportedMediaType answers a request body that is not declared application/json.
const LabelUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"

var (
	errUnsupportedMediaType = &APIError{Status: http.StatusUnsupportedMediaType, Label: LabelUnsupportedMediaType,
		Message: "Content-Type must be application/json."}
	errKYBNotApproved = &APIError{Status: http.StatusForbidden, Label: LabelMerchantPendingApproval,
		Message: "Live collection needs KYB approval: this business's KYB review is not approved yet."}
)

// requireJSON refuses a request whose body is not declared application/json (docs/api.md,
// Requests): 415, before authentication and before anything is recorded. Parameters such as
// charset are fine and the media type is compared case-insensitively. A request without a body
// may send any Content-Type, or none. Accept is not checked: every response is JSON.
func requireJSON(r *http.Request) *APIError {
	mediaType, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	if strings.EqualFold(strings.TrimSpace(mediaType), "application/json") || !hasBody(r) {
		return nil
	}
	return errUnsupportedMediaType
}

// hasBody reports whether the request carries at least one byte of body, leaving the body to be
// read whole afterwards (a chunked body of unknown length is peeked at).
func hasBody(r *http.Request) bool {
	switch {
	case r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0:
		return false
	case r.ContentLength > 0:
		return true
	}
	var first [1]byte
	n, _ := io.ReadFull(r.Body, first[:])
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(first[:n]), r.Body), r.Body}
	return n > 0
}

// collects guards the collection routes (create, initiate, push): live collection needs an
// approved KYB review as well as an approved business, so in production a business whose
// kybStatus is not approved gets 403 Merchant Pending Approval (docs/api.md, Authentication). It
// runs after authentication and before anything is recorded, the Idempotency-Key included;
// reads, verification and lists in production, and sandbox, are not affected.
func (s *Server) collects(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c := callerFrom(r.Context()); c.env == paygatev1.EnvironmentProduction && c.merchant.Spec.KYBStatus != paygatev1.KYBApproved {
			writeError(w, errKYBNotApproved)
			return
		}
		h(w, r)
	}
}

// ServeHTTP serves the API, turning any panic into a 500 in the error shape, and counts every
// response in the API's metrics (metrics.APIRequests and the others, by route pattern).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := s.opts.Clock.Now()
	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		// The mux records the pattern it matched on r (empty when none did, or for a path it
		// refused): routing the request once more for its metrics label would cost every request.
		route := routeLabel(r.Pattern)
		if p := recover(); p != nil {
			s.opts.Log.Error(nil, "Handler panicked", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			if rec.status == 0 {
				writeError(rec, &APIError{Status: http.StatusInternalServerError, Label: LabelServerError, Message: "An internal error occurred."})
			}
		}
		elapsed := s.opts.Clock.Since(start)
		status := rec.status
		if status == 0 {
			status = http.StatusOK // what net/http sends for a handler that wrote nothing
		}
		observeRequest(route, r.Method, status, elapsed)
		if log := s.opts.Log.V(1); log.Enabled() { // the arguments cost allocations on every request
			log.Info("Request", "method", r.Method, "path", r.URL.Path, "route", route, "status", status,
				"durationMs", elapsed.Milliseconds())
		}
	}()
	if r.Method != http.MethodConnect && cleanPath(r.URL.Path) != r.URL.Path {
		// Not a route: no path is served under another spelling (a signature covers the path as
		// sent), and every answer is JSON, never the mux's HTML redirect.
		s.noRoute(rec, r)
		return
	}
	s.mux.ServeHTTP(rec, r)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// merchantObject is an object that belongs to one merchant and environment.
type merchantObject interface {
	client.Object
	Owner() (merchant string, env paygatev1.Environment)
}

// read gets the caller's object named name into obj: from the cache, then live when the cache does
// not have it (read-your-writes after our own create), or live only when asked (after a write
// conflict). found is false for an object that does not exist, or that belongs to another
// merchant or environment: the caller cannot tell the two apart. cacheOpts apply to the cache read
// (client.UnsafeDisableDeepCopy for a caller that only renders obj).
func (s *Server) read(ctx context.Context, c *caller, name string, obj merchantObject, live bool, cacheOpts ...client.GetOption) (found bool, err error) {
	key := client.ObjectKey{Namespace: c.merchant.Namespace, Name: name}
	if !live {
		err = s.opts.Cache.Get(ctx, key, obj, cacheOpts...)
	}
	if live || apierrors.IsNotFound(err) {
		err = s.opts.APIReader.Get(ctx, key, obj)
	}
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return c.owns(obj), nil
}

// owns reports whether obj belongs to the caller's merchant and environment: the one rule every
// read of a merchant's object applies, live or archived. An object that fails it is "not found".
func (c *caller) owns(obj merchantObject) bool {
	merchant, env := obj.Owner()
	return merchant == c.merchant.Name && env == c.env
}

// answerRecord answers a read of one of the caller's objects: SERVER_ERROR when reading it failed
// (err), notFound when there is none (obj nil), else 200 with the body render builds. A body render
// cannot build (a stored amount that does not render exactly) is SERVER_ERROR, never a wrong
// record. what names the kind in the logs ("payment", "payout", ...).
func answerRecord[T any](s *Server, w http.ResponseWriter, what string, obj *T, err error, notFound *APIError, render func(*T) (any, error)) {
	if err != nil {
		s.serverError("Reading a "+what, err).write(w)
		return
	}
	if obj == nil {
		writeError(w, notFound)
		return
	}
	body, err := render(obj)
	if err != nil {
		s.serverError("Rendering a "+what, namedError(what, obj, err)).write(w)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// dataBody is the body of a single record: {"status": "success", "data": record}.
func dataBody[R any](rec R, err error) (any, error) {
	return map[string]any{"status": "success", "data": rec}, err
}

// pageParams reads a list's limit and offset (defaults and bounds in docs/api.md, Lists).
func pageParams(v validation, r *http.Request) (limit, offset int) {
	q := r.URL.Query()
	return queryInt(v, q.Get("limit"), "limit", defaultListLimit, 1, maxListLimit),
		queryInt(v, q.Get("offset"), "offset", 0, 0, 1_000_000)
}

// writePage answers one page of items, rendered, with the pagination object of every list.
func writePage[T any, PT copyable[T], R any](s *Server, w http.ResponseWriter, what string, items []T, limit, offset int, render func(PT) (R, error)) {
	lo, hi := min(offset, len(items)), min(offset+limit, len(items))
	writeItems(s, w, what, items[lo:hi], limit, offset, len(items), render)
}

// copyable is a pointer to an API object with its generated DeepCopy.
type copyable[T any] interface {
	*T
	DeepCopy() *T
}

// writeItems answers the page [offset, offset+limit) of a list of total items: page holds those
// items, rendered here, each from a deep copy (the items may be the cache's own: listOwn).
func writeItems[T any, PT copyable[T], R any](s *Server, w http.ResponseWriter, what string, page []T, limit, offset, total int, render func(PT) (R, error)) {
	recs := []R{}
	for i := range page {
		rec, err := render(PT(PT(&page[i]).DeepCopy()))
		if err != nil {
			s.serverError("Rendering a "+what, namedError(what, &page[i], err)).write(w)
			return
		}
		recs = append(recs, rec)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"status":     "success",
		"data":       recs,
		"pagination": map[string]int{"limit": limit, "offset": offset, "total": total, "count": len(recs)},
	})
}

// namedError says which object err is about, for the log.
func namedError(what string, obj any, err error) error {
	if named, ok := obj.(interface{ GetName() string }); ok {
		return fmt.Errorf("%s %s: %w", what, named.GetName(), err)
	}
	return err
}
