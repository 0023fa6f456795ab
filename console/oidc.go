// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/consoleauth"
)

// Sign-in through the installation's OpenID Connect provider: the authorization code flow of
// OpenID Connect Core 1.0, 3.1, with PKCE (RFC 7636, S256) and a nonce. The provider says who the
// person is (a verified email) and, in two claims, which merchant they belong to and their role;
// the console creates or updates their ConsoleUser from that and starts a signed-in session.

// Defaults of OIDCOptions.
const (
	// DefaultOIDCMerchantClaim carries "<namespace>/<merchant name>".
	DefaultOIDCMerchantClaim = "paygate_merchant"
	// DefaultOIDCRoleClaim carries owner, developer, finance or viewer.
	DefaultOIDCRoleClaim = "paygate_role"
)

// DefaultOIDCScopes are the scopes asked for when OIDCOptions.Scopes is empty: openid (required,
// OpenID Connect Core 1.0, 3.1.2.1), email and profile (5.4, for email, email_verified and name).
func DefaultOIDCScopes() []string { return []string{oidc.ScopeOpenID, "email", "profile"} }

// Paths of the OpenID Connect sign-in.
const (
	oidcStartPath    = Prefix + "/oidc/start"
	oidcCallbackPath = Prefix + "/oidc/callback"
	// oidcCookieName keeps the state, the nonce and the PKCE verifier of one sign-in between
	// the start and the callback; only the callback's path sees it.
	oidcCookieName     = "paygate-console-oidc"
	oidcCookiePath     = Prefix + "/oidc"
	oidcCookieLifetime = 10 * time.Minute
	// oidcDiscoveryRetry is the least time between two failed discoveries: while the issuer is
	// down, sign-ins are refused at once rather than each waiting for it.
	oidcDiscoveryRetry = 5 * time.Second
	// oidcDiscoveryTimeout bounds one discovery.
	oidcDiscoveryTimeout = 10 * time.Second
)

// OIDCOptions configure sign-in through the installation's OpenID Connect provider.
type OIDCOptions struct {
	// IssuerURL is the provider's issuer identifier; its discovery document is at
	// IssuerURL/.well-known/openid-configuration.
	IssuerURL string
	// ClientID and ClientSecret are the console's client registration at the provider; the
	// redirect URI to register is PublicURL + /console/oidc/callback.
	ClientID, ClientSecret string
	// MerchantClaim names the ID token claim whose value is "<namespace>/<merchant name>"
	// (default DefaultOIDCMerchantClaim); RoleClaim the one whose value is the console role:
	// owner, developer, finance or viewer (default DefaultOIDCRoleClaim).
	MerchantClaim, RoleClaim string
	// Scopes are asked for in the authentication request (default DefaultOIDCScopes); openid is
	// added when missing.
	Scopes []string
}

// withDefaults fills o's empty fields.
func (o OIDCOptions) withDefaults() OIDCOptions {
	if o.MerchantClaim == "" {
		o.MerchantClaim = DefaultOIDCMerchantClaim
	}
	if o.RoleClaim == "" {
		o.RoleClaim = DefaultOIDCRoleClaim
	}
	if len(o.Scopes) == 0 {
		o.Scopes = DefaultOIDCScopes()
	}
	if !slices.Contains(o.Scopes, oidc.ScopeOpenID) {
		o.Scopes = append([]string{oidc.ScopeOpenID}, o.Scopes...)
	}
	return o
}

// validate checks o and the redirect URL.
func (o OIDCOptions) validate(redirectURL string) error {
	if err := absoluteHTTPURL(o.IssuerURL); err != nil {
		return fmt.Errorf("the OpenID Connect issuer URL: %w", err)
	}
	if err := absoluteHTTPURL(redirectURL); err != nil {
		return fmt.Errorf("the OpenID Connect redirect URL: %w", err)
	}
	if o.ClientID == "" {
		return errors.New("the OpenID Connect client ID is empty")
	}
	return nil
}

// absoluteHTTPURL checks that s is an absolute http or https URL.
func absoluteHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("parsing %q: %w", s, err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

// oidcRedirectURL is the callback URL to register at the provider for a console served at
// publicURL.
func oidcRedirectURL(publicURL string) string {
	return strings.TrimRight(publicURL, "/") + oidcCallbackPath
}

// oidcProvider signs console users in through one OpenID Connect provider. It is safe for
// concurrent use.
type oidcProvider struct {
	opts        OIDCOptions
	redirectURL string
	client      *http.Client
	retryAfter  time.Duration

	mu       sync.Mutex
	provider *oidc.Provider // nil until discovered
	err      error          // the last discovery's failure
	failedAt time.Time
}

// newOIDC builds the provider of o for a console whose callback is redirectURL (see
// oidcRedirectURL); httpClient (nil for one with a timeout) talks to the issuer. It refuses
// options that cannot work.
//
// Discovery is lazy on failure: newOIDC tries it once, bounded by ctx, and when the issuer does
// not answer it still returns the provider, to discover again on the next sign-in (at most every
// oidcDiscoveryRetry). An issuer that is down while the apiserver starts then refuses OpenID
// Connect sign-ins until it is back, and stops nothing else; discoveryError tells the caller, to
// log it.
func newOIDC(ctx context.Context, o OIDCOptions, redirectURL string, httpClient *http.Client) (*oidcProvider, error) {
	if err := o.validate(redirectURL); err != nil {
		return nil, err
	}
	if httpClient == nil {
		httpClient = &http.Client{Timeout: oidcDiscoveryTimeout}
	}
	p := &oidcProvider{opts: o.withDefaults(), redirectURL: redirectURL, client: httpClient, retryAfter: oidcDiscoveryRetry}
	_, _ = p.discovered(ctx)
	return p, nil
}

// discoveryError is the last discovery's failure, nil once the issuer is discovered.
func (o *oidcProvider) discoveryError() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// discovered is the issuer's provider, discovered now when it was not yet (OpenID Connect
// Discovery 1.0, 4; go-oidc checks that the document's issuer is IssuerURL, 4.3), bounded by ctx
// and oidcDiscoveryTimeout. One discovery runs at a time; handlers pass a context that their
// client's leaving does not cancel, so that one impatient browser does not fail it for others.
func (o *oidcProvider) discovered(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	if o.err != nil && time.Since(o.failedAt) < o.retryAfter {
		return nil, o.err
	}
	ctx, cancel := context.WithTimeout(ctx, oidcDiscoveryTimeout)
	defer cancel()
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, o.client), o.opts.IssuerURL)
	if err != nil {
		o.err, o.failedAt = fmt.Errorf("discovering the OpenID Connect issuer %s: %w", o.opts.IssuerURL, err), time.Now()
		return nil, o.err
	}
	o.provider, o.err = p, nil
	return p, nil
}

// config is the OAuth 2.0 client of provider p.
func (o *oidcProvider) config(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{ClientID: o.opts.ClientID, ClientSecret: o.opts.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: o.redirectURL, Scopes: o.opts.Scopes}
}

// oidcFlow is what one sign-in keeps in its cookie between the start and the callback.
type oidcFlow struct {
	state, nonce, verifier string
}

// cookieValueRE is what each part of the flow cookie is: unpadded base64url.
var cookieValueRE = regexp.MustCompile(`^[A-Za-z0-9_-]{20,128}$`)

// String hides the flow's secrets from any %v that meets it.
func (f oidcFlow) String() string { return "oidc flow" }

// value is the flow cookie's value: the three parts joined by dots.
func (f oidcFlow) value() string { return f.state + "." + f.nonce + "." + f.verifier }

// parseFlow reads a flow cookie's value; false when it is not one.
func parseFlow(v string) (oidcFlow, bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return oidcFlow{}, false
	}
	for _, p := range parts {
		if !cookieValueRE.MatchString(p) {
			return oidcFlow{}, false
		}
	}
	return oidcFlow{state: parts[0], nonce: parts[1], verifier: parts[2]}, true
}

// setFlowCookie keeps f for the callback. SameSite=Lax, not Strict: the callback is a top-level
// navigation from the issuer's site, which a Strict cookie would not be sent with.
func (o *oidcProvider) setFlowCookie(c *Console, w http.ResponseWriter, f oidcFlow) {
	http.SetCookie(w, &http.Cookie{Name: oidcCookieName, Value: f.value(), Path: oidcCookiePath, HttpOnly: true,
		Secure: c.secure, SameSite: http.SameSiteLaxMode, MaxAge: int(oidcCookieLifetime / time.Second),
		Expires: c.opts.Clock.Now().Add(oidcCookieLifetime)})
}

// clearFlowCookie ends the flow cookie.
func (o *oidcProvider) clearFlowCookie(c *Console, w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: oidcCookieName, Value: "", Path: oidcCookiePath, HttpOnly: true,
		Secure: c.secure, SameSite: http.SameSiteLaxMode, MaxAge: -1})
}

// start (GET /console/oidc/start) sends the browser to the issuer with an authentication
// request (OpenID Connect Core 1.0, 3.1.2.1): the code flow, a fresh state against cross-site
// request forgery, a fresh nonce against ID token replay (15.5.2) and a PKCE S256 challenge
// (RFC 7636, 4.2), all three kept in the flow cookie.
func (o *oidcProvider) start(c *Console, w http.ResponseWriter, r *http.Request) {
	p, err := o.discovered(context.WithoutCancel(r.Context()))
	if err != nil {
		c.opts.Log.Error(err, "Starting a console OpenID Connect sign-in")
		c.refuse(w, r, http.StatusServiceUnavailable, "oidcUnavailable")
		return
	}
	f, err := newFlow()
	if err != nil {
		c.serverError(w, r, "Starting a console OpenID Connect sign-in", err)
		return
	}
	o.setFlowCookie(c, w, f)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, o.config(p).AuthCodeURL(f.state, oauth2.S256ChallengeOption(f.verifier), oidc.Nonce(f.nonce)),
		http.StatusSeeOther)
}

// newFlow makes a fresh state, nonce and PKCE verifier (RFC 7636, 4.1: 32 random octets).
func newFlow() (oidcFlow, error) {
	state, _, err := consoleauth.NewToken()
	if err != nil {
		return oidcFlow{}, fmt.Errorf("making a state: %w", err)
	}
	nonce, _, err := consoleauth.NewToken()
	if err != nil {
		return oidcFlow{}, fmt.Errorf("making a nonce: %w", err)
	}
	return oidcFlow{state: state, nonce: nonce, verifier: oauth2.GenerateVerifier()}, nil
}

// oidcRefusal is why a callback did not sign anyone in: the status and message key answered,
// and a reason for the log and, when it concerns a user, their audit trail. Nothing in it is a
// token, a code, a state, a nonce or a verifier.
type oidcRefusal struct {
	status  int
	key     string
	reason  string
	err     error                  // logged; with status 500 the answer is serverError's
	user    *paygatev1.ConsoleUser // the user it concerns, if any: the refusal is audited
	subject string                 // the issuer's subject, once the ID token is verified
}

// refusal is a refusal with no error and no user.
func refusal(status int, key, reason string) *oidcRefusal {
	return &oidcRefusal{status: status, key: key, reason: reason}
}

// internalRefusal answers 500 and logs err as what failed.
func internalRefusal(what string, err error) *oidcRefusal {
	return &oidcRefusal{status: http.StatusInternalServerError, key: "serverError", reason: what, err: err}
}

// oidcIdentity is who the provider says signed in, and where they belong.
type oidcIdentity struct {
	subject, email, name string
	namespace, merchant  string
	role                 paygatev1.ConsoleRole
}

// callback (GET /console/oidc/callback) completes a sign-in: it checks the authentication
// response (OpenID Connect Core 1.0, 3.1.2.7), redeems the code (3.1.3), validates the ID token
// (3.1.3.7) and its claims, then signs the user in, creating or updating their ConsoleUser. The
// flow cookie is cleared in every answer: a flow is tried once.
func (o *oidcProvider) callback(c *Console, w http.ResponseWriter, r *http.Request) {
	o.clearFlowCookie(c, w)
	if ok, _ := c.limiter.Allow("sign-in|"+c.address(r), signInsPerMinute); !ok {
		c.refuse(w, r, http.StatusTooManyRequests, "tooManyAttempts")
		return
	}
	u, f := o.signIn(c, r)
	if f != nil {
		o.refuse(c, w, r, f)
		return
	}
	// The identity provider is responsible for the second factor: a person it signed in has
	// passed whatever it requires, so the session is signed in at once (pending=false), whatever
	// the role; the console's own TOTP applies to password sign-ins only.
	if _, err := c.startSession(w, r, u, paygatev1.ConsoleSignInOIDC, false); err != nil {
		c.serverError(w, r, "Starting a console session", err)
		return
	}
	c.signedInNow(r.Context(), r, u)
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

// signIn is the user the callback signs in, or why it does not.
func (o *oidcProvider) signIn(c *Console, r *http.Request) (*paygatev1.ConsoleUser, *oidcRefusal) {
	flow, code, f := o.checkResponse(r)
	if f != nil {
		return nil, f
	}
	tok, f := o.redeem(r.Context(), c, flow, code)
	if f != nil {
		return nil, f
	}
	id, f := o.identity(tok)
	if f != nil {
		f.subject = tok.Subject
		return nil, f
	}
	if f := o.checkMerchant(r.Context(), c, id); f != nil {
		return nil, f
	}
	u, f := o.provision(c, r, id)
	if f != nil {
		f.subject = id.subject
	}
	return u, f
}

// checkResponse checks the authentication response against the flow cookie (OpenID Connect Core
// 1.0, 3.1.2.7; RFC 6749, 10.12): the cookie there, its state the response's (compared in
// constant time), no error (3.1.2.6), a code.
func (o *oidcProvider) checkResponse(r *http.Request) (oidcFlow, string, *oidcRefusal) {
	ck, err := r.Cookie(oidcCookieName)
	if err != nil {
		return oidcFlow{}, "", refusal(http.StatusBadRequest, "oidcRestart", "no flow cookie")
	}
	flow, ok := parseFlow(ck.Value)
	if !ok {
		return oidcFlow{}, "", refusal(http.StatusBadRequest, "oidcRestart", "malformed flow cookie")
	}
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(flow.state)) != 1 {
		return oidcFlow{}, "", refusal(http.StatusBadRequest, "oidcRestart", "state mismatch")
	}
	if e := q.Get("error"); e != "" {
		return oidcFlow{}, "", refusal(http.StatusUnauthorized, "oidcDenied", "the issuer answered "+cut(e, 64))
	}
	if q.Get("code") == "" {
		return oidcFlow{}, "", refusal(http.StatusBadRequest, "oidcRestart", "no code")
	}
	return flow, q.Get("code"), nil
}

// redeem exchanges the code, with the PKCE verifier, for the ID token (OpenID Connect Core 1.0,
// 3.1.3.1-3.1.3.5) and validates it (3.1.3.7: issuer, audience, signature by the issuer's keys,
// expiry, done by go-oidc against the console's clock) and its nonce (3.1.3.7 and 15.5.2: the
// value the flow sent, compared in constant time).
func (o *oidcProvider) redeem(ctx context.Context, c *Console, flow oidcFlow, code string) (*oidc.IDToken, *oidcRefusal) {
	p, err := o.discovered(context.WithoutCancel(ctx))
	if err != nil {
		return nil, &oidcRefusal{status: http.StatusServiceUnavailable, key: "oidcUnavailable", reason: "issuer unavailable", err: err}
	}
	ctx = oidc.ClientContext(ctx, o.client)
	tok, err := o.config(p).Exchange(ctx, code, oauth2.VerifierOption(flow.verifier))
	if err != nil {
		return nil, &oidcRefusal{status: http.StatusUnauthorized, key: "oidcFailed", reason: "code exchange failed", err: exchangeError(err)}
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, refusal(http.StatusUnauthorized, "oidcFailed", "no ID token in the token response")
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: o.opts.ClientID, Now: c.opts.Clock.Now}).Verify(ctx, raw)
	if err != nil {
		return nil, &oidcRefusal{status: http.StatusUnauthorized, key: "oidcFailed", reason: "ID token invalid", err: err}
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(flow.nonce)) != 1 {
		return nil, &oidcRefusal{status: http.StatusUnauthorized, key: "oidcFailed", reason: "nonce mismatch", subject: idt.Subject}
	}
	return idt, nil
}

// exchangeError is a failed exchange without what the token endpoint's body said (it is the
// issuer's text, and no business of the log): the status and the error code (RFC 6749, 5.2).
func exchangeError(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return fmt.Errorf("exchanging the code: %w", err)
	}
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
	}
	return fmt.Errorf("the token endpoint answered %d %s", status, cut(re.ErrorCode, 64))
}

// emailRE is the ConsoleUser email pattern (its CRD's).
var emailRE = regexp.MustCompile(`^[a-z0-9._%+\-]+@[a-z0-9.\-]+\.[a-z]{2,}$`)

// identity reads the claims the console needs (OpenID Connect Core 1.0, 5.1): a verified email
// (email_verified must be true: an address the provider has not confirmed could be someone
// else's console account), the name, and the merchant and role claims.
func (o *oidcProvider) identity(tok *oidc.IDToken) (*oidcIdentity, *oidcRefusal) {
	var claims map[string]json.RawMessage
	if err := tok.Claims(&claims); err != nil {
		return nil, &oidcRefusal{status: http.StatusUnauthorized, key: "oidcFailed", reason: "claims unreadable", err: err}
	}
	id := &oidcIdentity{subject: tok.Subject, email: normalEmail(stringClaim(claims, "email")),
		name: cut(strings.TrimSpace(stringClaim(claims, "name")), 100)}
	if !emailVerified(claims["email_verified"]) {
		return nil, refusal(http.StatusUnauthorized, "oidcEmailUnverified", "email not verified")
	}
	if len(id.email) > 254 || !emailRE.MatchString(id.email) {
		return nil, refusal(http.StatusUnauthorized, "oidcNoAccess", "email missing or malformed")
	}
	ns, name, ok := strings.Cut(stringClaim(claims, o.opts.MerchantClaim), "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, refusal(http.StatusUnauthorized, "oidcNoAccess", "merchant claim missing or malformed")
	}
	id.namespace, id.merchant = ns, name
	id.role = paygatev1.ConsoleRole(stringClaim(claims, o.opts.RoleClaim))
	switch id.role {
	case paygatev1.ConsoleOwner, paygatev1.ConsoleDeveloper, paygatev1.ConsoleFinance, paygatev1.ConsoleViewer:
		return id, nil
	}
	return nil, refusal(http.StatusUnauthorized, "oidcNoAccess", "role claim missing or unknown")
}

// stringClaim is claim name as a string ("" when missing or not a string).
func stringClaim(claims map[string]json.RawMessage, name string) string {
	var s string
	if err := json.Unmarshal(claims[name], &s); err != nil {
		return ""
	}
	return s
}

// emailVerified reads email_verified: true, or "true" from providers that send a string.
func emailVerified(raw json.RawMessage) bool {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return false
	}
	return v == true || v == "true"
}

// checkMerchant refuses a merchant claim naming no merchant.
func (o *oidcProvider) checkMerchant(ctx context.Context, c *Console, id *oidcIdentity) *oidcRefusal {
	m := &paygatev1.Merchant{}
	err := c.opts.Cache.Get(ctx, client.ObjectKey{Namespace: id.namespace, Name: id.merchant}, m)
	if apierrors.IsNotFound(err) || (err == nil && m.DeletionTimestamp != nil) {
		return &oidcRefusal{status: http.StatusUnauthorized, key: "oidcNoAccess", subject: id.subject,
			reason: "no merchant " + id.namespace + "/" + id.merchant}
	}
	if err != nil {
		return internalRefusal("Reading a merchant", err)
	}
	return nil
}

// provision is the ConsoleUser of id: created when the email has none, else the one user of
// that email, who must belong to the claimed merchant and not be disabled, their role (and
// name) updated to the claims'.
func (o *oidcProvider) provision(c *Console, r *http.Request, id *oidcIdentity) (*paygatev1.ConsoleUser, *oidcRefusal) {
	users, err := c.users.find(r.Context(), id.email)
	if err != nil {
		return nil, internalRefusal("Finding a console user", err)
	}
	switch len(users) {
	case 0:
		return o.createUser(c, r, id)
	case 1:
		return o.admit(c, r, users[0], id)
	}
	return nil, refusal(http.StatusUnauthorized, "oidcNotAllowed", "several console users have the email")
}

// createUser creates id's ConsoleUser; one created a moment ago elsewhere (the cache has not
// seen it) is read live and admitted instead.
func (o *oidcProvider) createUser(c *Console, r *http.Request, id *oidcIdentity) (*paygatev1.ConsoleUser, *oidcRefusal) {
	ctx := r.Context()
	u := &paygatev1.ConsoleUser{ObjectMeta: metav1.ObjectMeta{Namespace: id.namespace, Name: paygatev1.ConsoleUserName(id.email)},
		Spec: paygatev1.ConsoleUserSpec{Merchant: id.merchant, Email: id.email, Role: id.role, DisplayName: id.name}}
	err := c.opts.Writer.Create(ctx, u)
	if apierrors.IsAlreadyExists(err) {
		live, err := c.user(ctx, u.Namespace, u.Name)
		if err == nil && live == nil {
			err = errors.New("the console user exists and cannot be read")
		}
		if err != nil {
			return nil, internalRefusal("Reading a console user", err)
		}
		return o.admit(c, r, live, id)
	}
	if err != nil {
		return nil, internalRefusal("Creating a console user", err)
	}
	c.audit(ctx, r, u, "create-user", u.Spec.Email, paygatev1.ConsoleAuditSuccess, "oidc: role "+string(u.Spec.Role))
	return u, nil
}

// admit checks that u may sign in as id and brings their role and name to the claims'.
func (o *oidcProvider) admit(c *Console, r *http.Request, u *paygatev1.ConsoleUser, id *oidcIdentity) (*paygatev1.ConsoleUser, *oidcRefusal) {
	if u.Namespace != id.namespace || u.Spec.Merchant != id.merchant {
		return nil, &oidcRefusal{status: http.StatusUnauthorized, key: "oidcNotAllowed", user: u,
			reason: "email belongs to another merchant's user"}
	}
	if u.Spec.Disabled {
		return nil, &oidcRefusal{status: http.StatusUnauthorized, key: "oidcNotAllowed", user: u, reason: "user disabled"}
	}
	if u.Spec.Role == id.role && (id.name == "" || u.Spec.DisplayName == id.name) {
		return u, nil
	}
	ctx, old := r.Context(), u.Spec.Role
	patch := client.MergeFrom(u.DeepCopy())
	u.Spec.Role = id.role
	if id.name != "" {
		u.Spec.DisplayName = id.name
	}
	if err := c.opts.Writer.Patch(ctx, u, patch); err != nil {
		return nil, internalRefusal("Updating a console user's role", err)
	}
	if old != u.Spec.Role {
		c.audit(ctx, r, u, "change-role", u.Spec.Email, paygatev1.ConsoleAuditSuccess,
			fmt.Sprintf("oidc: %s to %s", old, u.Spec.Role))
	}
	return u, nil
}

// refuse answers f: audited when it concerns a user, logged otherwise (never with a token, a
// code, a state, a nonce or a verifier), then the error page.
func (o *oidcProvider) refuse(c *Console, w http.ResponseWriter, r *http.Request, f *oidcRefusal) {
	if f.status == http.StatusInternalServerError {
		c.serverError(w, r, f.reason, f.err)
		return
	}
	if f.user != nil {
		c.audit(r.Context(), r, f.user, "sign-in", "", paygatev1.ConsoleAuditRefused, "oidc: "+f.reason)
	} else {
		kv := []any{"reason", f.reason, "address", c.address(r)}
		if f.subject != "" {
			kv = append(kv, "subject", cut(f.subject, 255))
		}
		if f.err != nil {
			kv = append(kv, "error", f.err.Error())
		}
		c.opts.Log.Info("Refused a console OpenID Connect sign-in", kv...)
	}
	c.refuse(w, r, f.status, f.key)
}
