// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package console is the merchant console (docs/console.md): server-rendered pages under /console
// where a merchant's people sign in (password and a TOTP second factor, or the installation's
// OpenID Connect provider) and see their own account. It keeps its people, sessions and audit
// trail as custom resources (ConsoleUser, ConsoleSession, ConsoleAuditRecord), with every secret
// in each user's credentials Secret, so every apiserver replica shares them. It reads the
// merchant's records through Records, which the merchant API implements, so a page is the same
// list the API answers.
package console

import (
	"context"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/clientip"
	"github.com/paygate/paygate/internal/consoleauth"
	"github.com/paygate/paygate/internal/ratelimit"
	"github.com/paygate/paygate/pkg/paygate"
)

// Prefix is where the console is served.
const Prefix = "/console"

// Defaults of Options.
const (
	DefaultIdleTimeout     = 30 * time.Minute
	DefaultAbsoluteTimeout = 12 * time.Hour
	DefaultInviteLifetime  = 72 * time.Hour
	// pendingLifetime is how long a session that has passed the password may take to give (or
	// enrol) the second factor.
	pendingLifetime = 10 * time.Minute
	// signInsPerMinute is how many sign-in attempts one client address may make a minute on a
	// replica, whoever they name.
	signInsPerMinute = 20
)

// PaymentFilter narrows a payment list (the merchant API's list filters). CreatedFrom (inclusive)
// and CreatedTo (exclusive) bound the creation time, a zero time is no bound; CustomerPhone is as
// typed: the list normalizes it, or refuses it (FilterRefused).
type PaymentFilter struct {
	Status, MerchantRef    string
	CreatedFrom, CreatedTo time.Time
	CustomerPhone          string
}

// Records are the merchant's records as the merchant API renders them: the console's lists are
// the API's lists (live and archived alike, through the same indexes).
type Records interface {
	// ListPayments is a page of m's payments in env, newest first, and how many match.
	ListPayments(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment, f PaymentFilter, limit, offset int) ([]paygate.Payment, int, error)
	// GetPayment is one of m's payments in env, with its object (live or archived); found is
	// false when m has no such payment in env.
	GetPayment(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment, trxID string) (rec paygate.Payment, obj *paygatev1.Payment, found bool, err error)
	// WebhookDeliveries are the deliveries of one payment's events.
	WebhookDeliveries(ctx context.Context, m *paygatev1.Merchant, p *paygatev1.Payment) ([]paygatev1.WebhookDelivery, error)

	// APIList answers one of the merchant API's lists ("payouts", "refunds", "subscriptions",
	// "invoices") for m in env with the API's query parameters, decoding the page into items (a
	// pointer to a slice of the pkg/paygate type), and returns how many match.
	APIList(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment, list string, query url.Values, items any) (int, error)
	// APIWrite runs one of the merchant API's writes for m in env, exactly as a signed request of
	// the merchant would: APIRefund (trxID names the payment), APIPayoutPreview or APIPayout, with
	// body (the API's JSON) and idempotencyKey; it returns the API's status and answer.
	APIWrite(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment, write APIWrite, trxID string, body []byte, idempotencyKey string) (int, []byte, error)

	DeliveryRecords // webhooks.go
}

// APIWrite names one of the merchant API's writes the console makes.
type APIWrite string

const (
	// APIRefund is POST /api/v1/payments/{trx_id}/refunds.
	APIRefund APIWrite = "refund"
	// APIPayoutPreview is POST /api/v1/payouts/preview.
	APIPayoutPreview APIWrite = "payout-preview"
	// APIPayout is POST /api/v1/payouts.
	APIPayout APIWrite = "payout"
	// APIRedeliver is POST /api/v1/events/{id}/redeliver (the id passed as trxID).
	APIRedeliver APIWrite = "redeliver"
)

// ListRefused is an API list's refusal of a query (a filter it does not accept).
type ListRefused struct {
	Status int
	Body   string
}

func (e *ListRefused) Error() string {
	return fmt.Sprintf("the list answered %d: %s", e.Status, e.Body)
}

// Options configure the console.
type Options struct {
	// Cache answers reads of merchants and users (informer-backed); APIReader reads sessions and
	// credentials live, so a sign-out on one replica holds on every other at once; Writer writes.
	Cache     client.Reader
	APIReader client.Reader
	Writer    client.Client
	// Records renders the merchant's records.
	Records Records
	// Clock is the time source (tests pass a fake).
	Clock clock.PassiveClock
	// PublicURL is where browsers reach the apiserver: over https, cookies are Secure and carry
	// the __Host- prefix.
	PublicURL string
	// TrustedProxies may set X-Forwarded-For.
	TrustedProxies []netip.Prefix
	// IdleTimeout ends a session after that long without a request; AbsoluteTimeout ends it
	// however active it is.
	IdleTimeout, AbsoluteTimeout time.Duration
	// SecretsNamespace is where the users' credentials Secrets are kept: the apiserver's own
	// namespace, the only one where it may write Secrets.
	SecretsNamespace string
	// Lockout is when repeated failed sign-ins lock a user.
	Lockout consoleauth.LockoutPolicy
	// OIDC, when set, adds sign-in through the installation's OpenID Connect provider.
	OIDC *OIDCOptions
	// Log receives structured logs (never a password, code, cookie or token).
	Log logr.Logger
}

// Console serves the merchant console.
type Console struct {
	opts    Options
	mux     *http.ServeMux
	pages   map[string]*template.Template
	ips     clientip.Resolver
	limiter *ratelimit.Limiter
	users   usersByEmail
	secure  bool
	cop     *http.CrossOriginProtection
	oidc    *oidcProvider
}

//go:embed templates/*.html static/*
var assets embed.FS

// New builds the console.
func New(opts Options) *Console {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.AbsoluteTimeout <= 0 {
		opts.AbsoluteTimeout = DefaultAbsoluteTimeout
	}
	if opts.Lockout.Threshold <= 0 {
		opts.Lockout = consoleauth.DefaultLockoutPolicy
	}
	c := &Console{
		opts:    opts,
		mux:     http.NewServeMux(),
		pages:   parsePages(),
		ips:     clientip.Resolver{TrustedProxies: opts.TrustedProxies},
		limiter: ratelimit.New(opts.Clock.Now, 10_000),
		users:   newUsersByEmail(opts.Cache),
		secure:  strings.HasPrefix(opts.PublicURL, "https://"),
		cop:     http.NewCrossOriginProtection(),
	}
	if opts.OIDC != nil {
		p, err := newOIDC(context.Background(), *opts.OIDC, oidcRedirectURL(opts.PublicURL), nil)
		if err != nil {
			opts.Log.Error(err, "OpenID Connect sign-in is off")
		} else {
			if derr := p.discoveryError(); derr != nil {
				opts.Log.Error(derr, "OpenID Connect issuer not reachable yet; retried at the next sign-in")
			}
			c.oidc = p
		}
	}
	c.routes()
	return c
}

func (c *Console) routes() {
	c.mux.HandleFunc("GET "+Prefix+"/static/{file}", c.static)
	c.mux.HandleFunc("GET "+Prefix+"/sign-in", c.signInForm)
	c.mux.HandleFunc("POST "+Prefix+"/sign-in", c.signIn)
	if c.oidc != nil {
		c.mux.HandleFunc("GET "+oidcStartPath, func(w http.ResponseWriter, r *http.Request) { c.oidc.start(c, w, r) })
		c.mux.HandleFunc("GET "+oidcCallbackPath, func(w http.ResponseWriter, r *http.Request) { c.oidc.callback(c, w, r) })
	}
	c.mux.HandleFunc("GET "+Prefix+"/invite", c.inviteForm)
	c.mux.HandleFunc("POST "+Prefix+"/invite", c.acceptInvite)
	c.mux.HandleFunc("GET "+Prefix+"/second-factor", c.pending(c.secondFactorForm))
	c.mux.HandleFunc("POST "+Prefix+"/second-factor", c.pending(c.secondFactor))
	c.mux.HandleFunc("GET "+Prefix+"/enrol", c.pending(c.enrolForm))
	c.mux.HandleFunc("POST "+Prefix+"/enrol", c.pending(c.enrol))
	c.mux.HandleFunc("POST "+Prefix+"/sign-out", c.signedIn(c.signOut))
	c.mux.HandleFunc("POST "+Prefix+"/sign-out-everywhere", c.signedIn(c.signOutEverywhere))
	c.mux.HandleFunc("GET "+Prefix+"/{$}", c.signedIn(c.overview))
	c.mux.HandleFunc("GET "+Prefix+"/payments", c.signedIn(c.payments))
	c.mux.HandleFunc("GET "+Prefix+"/payments/{trx_id}", c.signedIn(c.payment))
	c.mux.HandleFunc("GET "+Prefix+"/payments.csv", c.signedIn(c.exportPayments))
	c.mux.HandleFunc("POST "+Prefix+"/payments/{trx_id}/refund", c.signedIn(c.roles(c.refundPayment, paygatev1.ConsoleOwner, paygatev1.ConsoleFinance)))
	for kind := range listPages {
		c.mux.HandleFunc("GET "+Prefix+"/"+kind, c.signedIn(c.apiListPage(kind)))
	}
	c.mux.HandleFunc("GET "+Prefix+"/webhooks", c.signedIn(c.webhookDeliveries))
	c.mux.HandleFunc("GET "+Prefix+"/webhooks/{name}", c.signedIn(c.webhookDelivery))
	c.mux.HandleFunc("POST "+Prefix+"/webhooks/{name}/redeliver", c.signedIn(c.roles(c.redeliverWebhook, paygatev1.ConsoleOwner, paygatev1.ConsoleDeveloper)))
	c.mux.HandleFunc("GET "+Prefix+"/settings", c.signedIn(c.roles(c.settings, paygatev1.ConsoleOwner, paygatev1.ConsoleDeveloper)))
	c.mux.HandleFunc("POST "+Prefix+"/settings/changes", c.signedIn(c.roles(c.requestChange, paygatev1.ConsoleOwner, paygatev1.ConsoleDeveloper)))
	c.mux.HandleFunc("GET "+Prefix+"/settings/changes/{name}", c.signedIn(c.roles(c.changePage, paygatev1.ConsoleOwner, paygatev1.ConsoleDeveloper)))
	c.mux.HandleFunc("POST "+Prefix+"/settings/changes/{name}/reveal", c.signedIn(c.roles(c.revealChange, paygatev1.ConsoleOwner, paygatev1.ConsoleDeveloper)))
	c.mux.HandleFunc("POST "+Prefix+"/webhooks/redeliver-failed", c.signedIn(c.roles(c.redeliverFailed, paygatev1.ConsoleOwner, paygatev1.ConsoleDeveloper)))
	c.mux.HandleFunc("GET "+Prefix+"/payouts/new", c.signedIn(c.roles(c.payoutForm, paygatev1.ConsoleOwner, paygatev1.ConsoleFinance)))
	c.mux.HandleFunc("POST "+Prefix+"/payouts/preview", c.signedIn(c.roles(c.previewPayout, paygatev1.ConsoleOwner, paygatev1.ConsoleFinance)))
	c.mux.HandleFunc("POST "+Prefix+"/payouts/create", c.signedIn(c.roles(c.createPayout, paygatev1.ConsoleOwner, paygatev1.ConsoleFinance)))
	c.mux.HandleFunc("GET "+Prefix+"/gateways", c.signedIn(c.owners(c.gateways)))
	c.mux.HandleFunc("POST "+Prefix+"/gateways", c.signedIn(c.owners(c.chooseGateways)))
	c.mux.HandleFunc("GET "+Prefix+"/people", c.signedIn(c.owners(c.people)))
	c.mux.HandleFunc("POST "+Prefix+"/people/invite", c.signedIn(c.owners(c.invitePerson)))
	c.mux.HandleFunc("POST "+Prefix+"/people/remove", c.signedIn(c.owners(c.removePerson)))
	c.mux.HandleFunc("GET "+Prefix+"/audit", c.signedIn(c.owners(c.auditPage)))
	c.mux.HandleFunc(Prefix+"/", c.notFound)
}

// ServeHTTP serves a console request with the console's security headers; an unsafe request a
// browser sent from another origin (Sec-Fetch-Site, or an Origin that is not the Host) is refused
// before anything else is looked at. Forms of a session also carry its CSRF proof (session.go).
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
	if c.secure {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
	if r.URL.Path == Prefix {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
		return
	}
	if err := c.cop.Check(r); err != nil {
		c.refuse(w, r, http.StatusForbidden, "crossOrigin")
		return
	}
	c.mux.ServeHTTP(w, r)
}

func (c *Console) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	ctype := map[string]string{"console.css": "text/css; charset=utf-8", "console.js": "text/javascript; charset=utf-8"}[name]
	b, err := assets.ReadFile("static/" + name)
	if ctype == "" || err != nil {
		c.notFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(b)
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	c.refuse(w, r, http.StatusNotFound, "notFound")
}

// refuse renders the error page with status and the message of key.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, status int, key string) {
	c.render(w, r, status, "error", &view{Message: key})
}
