// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package oidcissuer is a small but real OpenID Connect issuer for tests, served by an
// httptest.Server on a local port: discovery (OpenID Connect Discovery 1.0, section 4), a JWKS
// with an RSA-2048 key made at start, the authorization endpoint of the authorization code flow
// (OpenID Connect Core 1.0, 3.1.2) with PKCE S256 required (RFC 7636) and the token endpoint
// (3.1.3) answering RS256 ID tokens.
//
// It has no login page: /authorize signs in the user the test chose with SetUser and redirects
// straight back to the client. SetFaults makes it misbehave (a wrong audience, an expired token,
// a bad signature, another nonce, an error answer, being down) so that a client's refusals can be
// tested.
//
// New and Close work from any test framework (Ginkgo included); Start ties the issuer to a
// testing.TB.
package oidcissuer

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Defaults of Options.
const (
	DefaultClientID      = "paygate-console"
	DefaultMerchantClaim = "paygate_merchant"
	DefaultRoleClaim     = "paygate_role"
	DefaultTokenLifetime = 5 * time.Minute
	// codeLifetime is how long an authorization code may wait to be redeemed (RFC 6749, 4.1.2
	// recommends at most 10 minutes).
	codeLifetime = time.Minute
	// keyID names the signing key in the JWKS and in every token's header.
	keyID = "oidcissuer-1"
)

// Options configure an issuer. Zero values get defaults.
type Options struct {
	// ClientID is the one client the issuer knows (DefaultClientID when empty); ClientSecret
	// its secret (random when empty: read it from Issuer.ClientSecret).
	ClientID, ClientSecret string
	// RedirectURIs are the client's registered redirection URIs, compared exactly (OpenID
	// Connect Core 1.0, 3.1.2.1). At least one is required.
	RedirectURIs []string
	// MerchantClaim and RoleClaim name the claims that carry User.Merchant and User.Role
	// (DefaultMerchantClaim and DefaultRoleClaim when empty).
	MerchantClaim, RoleClaim string
	// TokenLifetime is how long an ID token is valid (DefaultTokenLifetime when zero).
	TokenLifetime time.Duration
	// Now is the issuer's clock (time.Now when nil).
	Now func() time.Time
}

// User is who /authorize signs in. An empty Merchant or Role leaves that claim out; Name too.
type User struct {
	Subject, Email string
	EmailVerified  bool
	Name           string
	// Merchant is the merchant claim's value ("<namespace>/<merchant name>"), Role the role
	// claim's.
	Merchant, Role string
	// Extra claims are set last, over the others; a nil value removes a claim.
	Extra map[string]any
}

// Faults make the issuer misbehave; the zero Faults is a well-behaved issuer.
type Faults struct {
	// WrongAudience issues ID tokens for another client.
	WrongAudience bool
	// Expired issues ID tokens that expired an hour ago.
	Expired bool
	// BadSignature signs ID tokens with another key under the published key's ID.
	BadSignature bool
	// Nonce, when set, is put in ID tokens instead of the request's nonce.
	Nonce string
	// AuthorizeError, when set, answers every authentication request with this error code
	// (OpenID Connect Core 1.0, 3.1.2.6), e.g. "access_denied".
	AuthorizeError string
	// Unavailable answers every request 503, discovery included.
	Unavailable bool
}

// Issuer is a running test issuer. Its methods are safe for concurrent use.
type Issuer struct {
	// ClientID and ClientSecret are the client's credentials.
	ClientID, ClientSecret string

	opts  Options
	srv   *httptest.Server
	key   *rsa.PrivateKey
	rogue *rsa.PrivateKey // made on first use by Faults.BadSignature

	mu          sync.Mutex
	user        *User
	faults      Faults
	codes       map[string]*grant
	lastIDToken string
	redemptions int
}

// grant is what an authorization code stands for until it is redeemed.
type grant struct {
	redirectURI, challenge, nonce string
	user                          User
	expires                       time.Time
}

// New starts an issuer on a local port. Close it when done.
func New(o Options) (*Issuer, error) {
	if len(o.RedirectURIs) == 0 {
		return nil, errors.New("oidcissuer: no redirect URI registered")
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("oidcissuer: making the signing key: %w", err)
	}
	o = withDefaults(o)
	i := &Issuer{ClientID: o.ClientID, ClientSecret: o.ClientSecret, opts: o, key: key, codes: map[string]*grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", i.discovery)
	mux.HandleFunc("GET /keys", i.keys)
	mux.HandleFunc("GET /authorize", i.authorize)
	mux.HandleFunc("POST /token", i.token)
	i.srv = httptest.NewServer(i.unlessUnavailable(mux))
	return i, nil
}

// Start starts an issuer that t's cleanup closes; it fails t when the issuer cannot start.
func Start(t testing.TB, o Options) *Issuer {
	t.Helper()
	i, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(i.Close)
	return i
}

func withDefaults(o Options) Options {
	if o.ClientID == "" {
		o.ClientID = DefaultClientID
	}
	if o.ClientSecret == "" {
		o.ClientSecret = "secret-" + random()
	}
	if o.MerchantClaim == "" {
		o.MerchantClaim = DefaultMerchantClaim
	}
	if o.RoleClaim == "" {
		o.RoleClaim = DefaultRoleClaim
	}
	if o.TokenLifetime <= 0 {
		o.TokenLifetime = DefaultTokenLifetime
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// URL is the issuer identifier (the "iss" of its tokens) and the base of its endpoints.
func (i *Issuer) URL() string { return i.srv.URL }

// Close stops the issuer.
func (i *Issuer) Close() { i.srv.Close() }

// SetUser makes u the user that every later authentication request signs in.
func (i *Issuer) SetUser(u User) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.user = &u
}

// SignOut makes later authentication requests fail with access_denied (nobody signs in).
func (i *Issuer) SignOut() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.user = nil
}

// SetFaults makes the issuer misbehave as f says from now on (Faults{} to behave again).
func (i *Issuer) SetFaults(f Faults) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.faults = f
}

// LastIDToken is the last ID token the token endpoint issued ("" before any), for tests that
// check a client never shows or logs it.
func (i *Issuer) LastIDToken() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.lastIDToken
}

// Redemptions counts the token requests that redeemed a code, successfully or not.
func (i *Issuer) Redemptions() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.redemptions
}

func (i *Issuer) unlessUnavailable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i.mu.Lock()
		down := i.faults.Unavailable
		i.mu.Unlock()
		if down {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// discovery answers the provider metadata (OpenID Connect Discovery 1.0, 3 and 4.2).
func (i *Issuer) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                i.URL(),
		"authorization_endpoint":                i.URL() + "/authorize",
		"token_endpoint":                        i.URL() + "/token",
		"jwks_uri":                              i.URL() + "/keys",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{string(jose.RS256)},
		"scopes_supported":                      []string{"openid", "email", "profile"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		"code_challenge_methods_supported":      []string{"S256"},
		"grant_types_supported":                 []string{"authorization_code"},
		"claims_supported": []string{"iss", "sub", "aud", "exp", "iat", "nonce", "email", "email_verified", "name",
			i.opts.MerchantClaim, i.opts.RoleClaim},
	})
}

// keys answers the JWKS with the public signing key (RFC 7517, 5).
func (i *Issuer) keys(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &i.key.PublicKey, KeyID: keyID, Algorithm: string(jose.RS256), Use: "sig"},
	}})
}

// authorize handles an authentication request (OpenID Connect Core 1.0, 3.1.2.1-3.1.2.6). A
// request from an unknown client or redirect URI is answered here, never redirected (RFC 6749,
// 4.1.2.1); any other error goes back to the client with the state.
func (i *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect := q.Get("redirect_uri")
	if q.Get("client_id") != i.ClientID || !slices.Contains(i.opts.RedirectURIs, redirect) {
		http.Error(w, "unknown client_id or redirect_uri", http.StatusBadRequest)
		return
	}
	if code := i.authorizeError(q); code != "" {
		redirectBack(w, r, redirect, url.Values{"error": {code}, "state": {q.Get("state")}})
		return
	}
	code := i.issueCode(q, redirect)
	if code == "" {
		redirectBack(w, r, redirect, url.Values{"error": {"access_denied"}, "state": {q.Get("state")}})
		return
	}
	redirectBack(w, r, redirect, url.Values{"code": {code}, "state": {q.Get("state")}})
}

// issueCode makes an authorization code for the signed-in user ("" when nobody is).
func (i *Issuer) issueCode(q url.Values, redirect string) string {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.user == nil {
		return ""
	}
	code := random()
	i.codes[code] = &grant{redirectURI: redirect, challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), user: *i.user,
		expires: i.opts.Now().Add(codeLifetime)}
	return code
}

// authorizeError is the error code an authentication request is refused with ("" when it is
// granted): the code flow only, the openid scope, a PKCE S256 challenge, and a signed-in user.
func (i *Issuer) authorizeError(q url.Values) string {
	i.mu.Lock()
	defer i.mu.Unlock()
	switch {
	case q.Get("response_type") != "code":
		return "unsupported_response_type"
	case !slices.Contains(strings.Fields(q.Get("scope")), "openid"):
		return "invalid_scope"
	case q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43: // RFC 7636, 4.2 and 4.4.1
		return "invalid_request"
	case i.faults.AuthorizeError != "":
		return i.faults.AuthorizeError
	case i.user == nil:
		return "access_denied"
	}
	return ""
}

func redirectBack(w http.ResponseWriter, r *http.Request, to string, params url.Values) {
	u, err := url.Parse(to)
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// token redeems an authorization code (OpenID Connect Core 1.0, 3.1.3.1-3.1.3.4): the client
// authenticated, the code known, unexpired, not used before (RFC 6749, 4.1.2: a code is
// single-use, so it is spent by any attempt), for the same redirect URI, and the PKCE verifier
// matching the challenge (RFC 7636, 4.6).
func (i *Issuer) token(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if err := r.ParseForm(); err != nil {
		tokenError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	if !i.clientAuthenticated(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="oidcissuer"`)
		tokenError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	if r.PostForm.Get("grant_type") != "authorization_code" {
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	g := i.spend(r.PostForm.Get("code"))
	if g == nil || g.redirectURI != r.PostForm.Get("redirect_uri") || !pkceMatches(g.challenge, r.PostForm.Get("code_verifier")) {
		tokenError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	idToken, err := i.idToken(g)
	if err != nil {
		tokenError(w, http.StatusInternalServerError, "server_error")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": "at-" + random(), "token_type": "Bearer",
		"expires_in": int(i.opts.TokenLifetime / time.Second), "id_token": idToken})
}

// clientAuthenticated checks client_secret_basic (the id and secret form-encoded, RFC 6749,
// 2.3.1) or client_secret_post.
func (i *Issuer) clientAuthenticated(r *http.Request) bool {
	id, secret, basic := r.BasicAuth()
	if basic {
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return false
		}
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	return id == i.ClientID && subtle.ConstantTimeCompare([]byte(secret), []byte(i.ClientSecret)) == 1
}

// spend takes code out of the issued codes: nil when it is unknown, used or expired.
func (i *Issuer) spend(code string) *grant {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.redemptions++
	g, ok := i.codes[code]
	delete(i.codes, code)
	if !ok || !i.opts.Now().Before(g.expires) {
		return nil
	}
	return g
}

// pkceMatches checks BASE64URL(SHA256(verifier)) == challenge (RFC 7636, 4.6).
func pkceMatches(challenge, verifier string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}

// idToken signs g's ID token (OpenID Connect Core 1.0, 2), faults applied.
func (i *Issuer) idToken(g *grant) (string, error) {
	i.mu.Lock()
	f := i.faults
	i.mu.Unlock()
	payload, err := json.Marshal(i.claims(g, f))
	if err != nil {
		return "", fmt.Errorf("oidcissuer: encoding claims: %w", err)
	}
	key, err := i.signingKey(f.BadSignature)
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: keyID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("oidcissuer: making a signer: %w", err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("oidcissuer: signing: %w", err)
	}
	raw, err := jws.CompactSerialize()
	if err != nil {
		return "", fmt.Errorf("oidcissuer: serializing: %w", err)
	}
	i.mu.Lock()
	i.lastIDToken = raw
	i.mu.Unlock()
	return raw, nil
}

// claims are g's ID token claims under faults f.
func (i *Issuer) claims(g *grant, f Faults) map[string]any {
	now, u := i.opts.Now(), g.user
	iat, exp, aud, nonce := now, now.Add(i.opts.TokenLifetime), i.ClientID, g.nonce
	if f.Expired {
		iat, exp = now.Add(-2*time.Hour), now.Add(-time.Hour)
	}
	if f.WrongAudience {
		aud = "another-client"
	}
	if f.Nonce != "" {
		nonce = f.Nonce
	}
	c := map[string]any{"iss": i.URL(), "sub": u.Subject, "aud": aud, "iat": iat.Unix(), "exp": exp.Unix(),
		"auth_time": iat.Unix(), "nonce": nonce, "email": u.Email, "email_verified": u.EmailVerified}
	for claim, v := range map[string]string{"name": u.Name, i.opts.MerchantClaim: u.Merchant, i.opts.RoleClaim: u.Role} {
		if v != "" {
			c[claim] = v
		}
	}
	for claim, v := range u.Extra {
		if v == nil {
			delete(c, claim)
			continue
		}
		c[claim] = v
	}
	return c
}

// signingKey is the published key, or (bad) another key made once.
func (i *Issuer) signingKey(bad bool) (*rsa.PrivateKey, error) {
	if !bad {
		return i.key, nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.rogue == nil {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, fmt.Errorf("oidcissuer: making the rogue key: %w", err)
		}
		i.rogue = k
	}
	return i.rogue, nil
}

// tokenError answers a token request's error (RFC 6749, 5.2).
func tokenError(w http.ResponseWriter, status int, code string) {
	writeJSON(w, status, map[string]string{"error": code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// random is 32 random bytes in unpadded base64url (crypto/rand.Read never fails).
func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
