// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package oidcissuer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/paygate/paygate/test/oidcissuer"
)

const redirectURI = "http://client.test/callback"

// noRedirects is a browser that stops at every redirect, so a test reads where it leads.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func start(t *testing.T) *oidcissuer.Issuer {
	iss := oidcissuer.Start(t, oidcissuer.Options{RedirectURIs: []string{redirectURI}})
	iss.SetUser(oidcissuer.User{Subject: "sub-1", Email: "ada@example.com", EmailVerified: true, Name: "Ada",
		Merchant: "shop-ns/shop", Role: "developer"})
	return iss
}

func oauthConfig(iss *oidcissuer.Issuer) *oauth2.Config {
	return &oauth2.Config{ClientID: iss.ClientID, ClientSecret: iss.ClientSecret, RedirectURL: redirectURI,
		Endpoint: oauth2.Endpoint{AuthURL: iss.URL() + "/authorize", TokenURL: iss.URL() + "/token"},
		Scopes:   []string{oidc.ScopeOpenID, "email"}}
}

// authorize follows an authentication request and returns where the issuer sent the browser.
func authorize(t *testing.T, authURL string) *url.URL {
	t.Helper()
	resp, err := noRedirects.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize answered %d, want 302", resp.StatusCode)
	}
	loc, err := resp.Location()
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// flow runs the authorization request with a fresh verifier and returns the code and verifier.
func flow(t *testing.T, iss *oidcissuer.Issuer, nonce string) (code, verifier string) {
	t.Helper()
	verifier = oauth2.GenerateVerifier()
	loc := authorize(t, oauthConfig(iss).AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)))
	if got := loc.Query().Get("state"); got != "state-1" {
		t.Fatalf("state %q, want state-1", got)
	}
	if loc.Query().Get("code") == "" {
		t.Fatalf("no code in %s", loc)
	}
	return loc.Query().Get("code"), verifier
}

// tokenRequest posts a token request with client_secret_post and answers the status and error.
func tokenRequest(t *testing.T, iss *oidcissuer.Issuer, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(iss.URL()+"/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func redeemForm(iss *oidcissuer.Issuer, code, verifier string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI},
		"code_verifier": {verifier}, "client_id": {iss.ClientID}, "client_secret": {iss.ClientSecret}}
}

func TestDiscovery(t *testing.T) {
	iss := start(t)
	p, err := oidc.NewProvider(context.Background(), iss.URL())
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	if ep := p.Endpoint(); ep.AuthURL != iss.URL()+"/authorize" || ep.TokenURL != iss.URL()+"/token" {
		t.Errorf("endpoints %+v", ep)
	}
	var meta struct {
		JWKS       string   `json:"jwks_uri"`
		Challenges []string `json:"code_challenge_methods_supported"`
		Claims     []string `json:"claims_supported"`
	}
	if err := p.Claims(&meta); err != nil {
		t.Fatal(err)
	}
	if meta.JWKS != iss.URL()+"/keys" || strings.Join(meta.Challenges, ",") != "S256" ||
		!strings.Contains(strings.Join(meta.Claims, ","), "paygate_merchant") {
		t.Errorf("metadata %+v", meta)
	}
	resp, err := http.Get(meta.JWKS)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var jwks struct {
		Keys []struct{ Kty, Kid, Alg, Use, N, E string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&jwks); err != nil {
		t.Fatal(err)
	}
	if len(jwks.Keys) != 1 || jwks.Keys[0].Kty != "RSA" || jwks.Keys[0].Alg != "RS256" || len(jwks.Keys[0].N) < 340 {
		t.Errorf("JWKS %+v, want one RSA-2048 RS256 key", jwks)
	}
}

func TestCodeFlowIssuesAVerifiableIDToken(t *testing.T) {
	iss := start(t)
	ctx := context.Background()
	code, verifier := flow(t, iss, "nonce-1")
	tok, err := oauthConfig(iss).Exchange(ctx, code, oauth2.VerifierOption(verifier)) // client_secret_basic
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if tok.AccessToken == "" || raw == "" || raw != iss.LastIDToken() {
		t.Fatalf("token response without an access token or the ID token")
	}
	p, err := oidc.NewProvider(ctx, iss.URL())
	if err != nil {
		t.Fatal(err)
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: iss.ClientID}).Verify(ctx, raw)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	var c map[string]any
	if err := idt.Claims(&c); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"sub": "sub-1", "nonce": "nonce-1", "email": "ada@example.com", "email_verified": true,
		"name": "Ada", "paygate_merchant": "shop-ns/shop", "paygate_role": "developer", "iss": iss.URL(), "aud": iss.ClientID}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("claim %s = %v, want %v", k, c[k], v)
		}
	}
}

func TestCodeIsSingleUse(t *testing.T) {
	iss := start(t)
	code, verifier := flow(t, iss, "n")
	if status, body := tokenRequest(t, iss, redeemForm(iss, code, verifier)); status != http.StatusOK {
		t.Fatalf("first redemption: %d %v", status, body)
	}
	status, body := tokenRequest(t, iss, redeemForm(iss, code, verifier))
	if status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Fatalf("second redemption: %d %v, want 400 invalid_grant", status, body)
	}
}

func TestPKCEVerifierRefused(t *testing.T) {
	iss := start(t)
	code, _ := flow(t, iss, "n")
	status, body := tokenRequest(t, iss, redeemForm(iss, code, oauth2.GenerateVerifier()))
	if status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Fatalf("wrong verifier: %d %v, want 400 invalid_grant", status, body)
	}
	code, verifier := flow(t, iss, "n")
	if status, _ := tokenRequest(t, iss, redeemForm(iss, code, "")); status != http.StatusBadRequest {
		t.Fatalf("no verifier: %d, want 400", status)
	}
	// The code was spent by the failed attempt.
	if status, _ := tokenRequest(t, iss, redeemForm(iss, code, verifier)); status != http.StatusBadRequest {
		t.Fatalf("code after a failed attempt: %d, want 400", status)
	}
}

func TestAuthorizeRequiresS256(t *testing.T) {
	iss := start(t)
	base := url.Values{"client_id": {iss.ClientID}, "redirect_uri": {redirectURI}, "response_type": {"code"},
		"scope": {"openid"}, "state": {"s"}}
	for name, extra := range map[string]url.Values{
		"none":  {},
		"plain": {"code_challenge": {oauth2.GenerateVerifier()}, "code_challenge_method": {"plain"}},
	} {
		q := url.Values{}
		for k, v := range base {
			q[k] = v
		}
		for k, v := range extra {
			q[k] = v
		}
		loc := authorize(t, iss.URL()+"/authorize?"+q.Encode())
		if loc.Query().Get("error") != "invalid_request" || loc.Query().Get("code") != "" || loc.Query().Get("state") != "s" {
			t.Errorf("%s: redirected to %s, want error=invalid_request with the state", name, loc)
		}
	}
}

func TestUnknownRedirectURIIsNotRedirectedTo(t *testing.T) {
	iss := start(t)
	cfg := oauthConfig(iss)
	cfg.RedirectURL = "http://evil.test/callback"
	resp, err := noRedirects.Get(cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
		t.Fatalf("answered %d to %q, want 400 and no redirect", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestClientMustAuthenticate(t *testing.T) {
	iss := start(t)
	code, verifier := flow(t, iss, "n")
	form := redeemForm(iss, code, verifier)
	form.Set("client_secret", "not-the-secret")
	if status, body := tokenRequest(t, iss, form); status != http.StatusUnauthorized || body["error"] != "invalid_client" {
		t.Fatalf("wrong secret: %d %v, want 401 invalid_client", status, body)
	}
	if status, body := tokenRequest(t, iss, redeemForm(iss, code, verifier)); status != http.StatusOK {
		t.Fatalf("client_secret_post after a refused client: %d %v", status, body)
	}
}

func TestFaults(t *testing.T) {
	iss := start(t)
	ctx := context.Background()
	p, err := oidc.NewProvider(ctx, iss.URL())
	if err != nil {
		t.Fatal(err)
	}
	verify := p.Verifier(&oidc.Config{ClientID: iss.ClientID})
	for name, f := range map[string]oidcissuer.Faults{
		"wrong audience": {WrongAudience: true},
		"expired":        {Expired: true},
		"bad signature":  {BadSignature: true},
	} {
		iss.SetFaults(f)
		code, verifier := flow(t, iss, "n")
		tok, err := oauthConfig(iss).Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("%s: exchange: %v", name, err)
		}
		if _, err := verify.Verify(ctx, tok.Extra("id_token").(string)); err == nil {
			t.Errorf("%s: the ID token verified", name)
		}
	}
	iss.SetFaults(oidcissuer.Faults{Nonce: "other"})
	code, verifier := flow(t, iss, "n")
	tok, err := oauthConfig(iss).Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if idt, err := verify.Verify(ctx, tok.Extra("id_token").(string)); err != nil || idt.Nonce != "other" {
		t.Errorf("nonce fault: %v, %v", idt, err)
	}
}

func TestAuthorizeErrorAndUnavailable(t *testing.T) {
	iss := start(t)
	iss.SetFaults(oidcissuer.Faults{AuthorizeError: "access_denied"})
	loc := authorize(t, oauthConfig(iss).AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if loc.Query().Get("error") != "access_denied" || loc.Query().Get("code") != "" {
		t.Errorf("redirected to %s, want error=access_denied", loc)
	}
	iss.SetFaults(oidcissuer.Faults{})
	iss.SignOut()
	loc = authorize(t, oauthConfig(iss).AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if loc.Query().Get("error") != "access_denied" {
		t.Errorf("nobody signed in: redirected to %s, want error=access_denied", loc)
	}
	iss.SetFaults(oidcissuer.Faults{Unavailable: true})
	if _, err := oidc.NewProvider(context.Background(), iss.URL()); err == nil {
		t.Error("discovery of an unavailable issuer succeeded")
	}
}
