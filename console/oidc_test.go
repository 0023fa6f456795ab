// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"golang.org/x/oauth2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/consoleauth"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/test/oidcissuer"
)

const testPublicURL = "http://console.test"

// noRedirects is a browser that stops at every redirect, so a test reads where it leads.
var noRedirects = &http.Client{Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// ada is the person the issuer signs in unless a test says otherwise: a developer of shop.
var ada = oidcissuer.User{Subject: "sub-ada", Email: "Ada@Example.com", EmailVerified: true, Name: "Ada Lovelace",
	Merchant: "shop-ns/shop", Role: "developer"}

const adaEmail = "ada@example.com"

// startIssuer starts an issuer that knows the test console's callback.
func startIssuer(t *testing.T) *oidcissuer.Issuer {
	return oidcissuer.Start(t, oidcissuer.Options{RedirectURIs: []string{oidcRedirectURL(testPublicURL)}})
}

func merchant(ns, name string) *paygatev1.Merchant {
	return &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func consoleUser(ns, merchant, email string, role paygatev1.ConsoleRole, disabled bool) *paygatev1.ConsoleUser {
	return &paygatev1.ConsoleUser{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: paygatev1.ConsoleUserName(email)},
		Spec: paygatev1.ConsoleUserSpec{Merchant: merchant, Email: email, Role: role, Disabled: disabled}}
}

// logSink keeps a console's log lines.
type logSink struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.b.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10})
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// oidcHarness is a console with the OpenID Connect sign-in over a fake cluster, and the issuer.
type oidcHarness struct {
	t    *testing.T
	iss  *oidcissuer.Issuer
	cl   client.Client
	c    *Console
	p    *oidcProvider
	mux  *http.ServeMux
	logs *logSink
}

// newHarness builds a console at publicURL over a fake cluster holding the merchants shop
// (shop-ns) and other (other-ns) and objs; the provider is discovered from iss.
func newHarness(t *testing.T, iss *oidcissuer.Issuer, publicURL string, objs ...client.Object) *oidcHarness {
	t.Helper()
	objs = append([]client.Object{merchant("shop-ns", "shop"), merchant("other-ns", "other")}, objs...)
	cl := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(objs...).
		WithStatusSubresource(&paygatev1.ConsoleUser{}, &paygatev1.ConsoleSession{}).Build()
	h := &oidcHarness{t: t, iss: iss, cl: cl, logs: &logSink{}}
	h.c = New(Options{Cache: cl, APIReader: cl, Writer: cl, PublicURL: publicURL, Log: h.logs.logger()})
	p, err := newOIDC(context.Background(), OIDCOptions{IssuerURL: iss.URL(), ClientID: iss.ClientID,
		ClientSecret: iss.ClientSecret}, oidcRedirectURL(publicURL), nil)
	if err != nil {
		t.Fatalf("newOIDC: %v", err)
	}
	h.p = p
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("GET "+oidcStartPath, func(w http.ResponseWriter, r *http.Request) { p.start(h.c, w, r) })
	h.mux.HandleFunc("GET "+oidcCallbackPath, func(w http.ResponseWriter, r *http.Request) { p.callback(h.c, w, r) })
	return h
}

func (h *oidcHarness) serve(r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.mux.ServeHTTP(rec, r)
	return rec
}

// begin starts a sign-in and follows it through the issuer: the flow cookie, and the callback
// URL the issuer sent the browser back to.
func (h *oidcHarness) begin() (*http.Cookie, *url.URL) {
	h.t.Helper()
	rec := h.serve(httptest.NewRequest(http.MethodGet, testPublicURL+oidcStartPath, nil))
	if rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), h.iss.URL()+"/authorize?") {
		h.t.Fatalf("start answered %d to %q", rec.Code, rec.Header().Get("Location"))
	}
	ck := cookieNamed(rec, oidcCookieName)
	if ck == nil {
		h.t.Fatal("start set no flow cookie")
	}
	resp, err := noRedirects.Get(rec.Header().Get("Location"))
	if err != nil {
		h.t.Fatal(err)
	}
	_ = resp.Body.Close()
	cb, err := resp.Location()
	if err != nil {
		h.t.Fatalf("the issuer answered %d without a redirect: %v", resp.StatusCode, err)
	}
	return ck, cb
}

// finish brings the browser back to the callback, with the flow cookie when ck is not nil.
func (h *oidcHarness) finish(ck *http.Cookie, cb *url.URL) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, cb.String(), nil)
	if ck != nil {
		r.AddCookie(ck)
	}
	return h.serve(r)
}

func (h *oidcHarness) signIn() *httptest.ResponseRecorder {
	h.t.Helper()
	return h.finish(h.begin())
}

func (h *oidcHarness) sessions() []paygatev1.ConsoleSession {
	h.t.Helper()
	var l paygatev1.ConsoleSessionList
	if err := h.cl.List(context.Background(), &l); err != nil {
		h.t.Fatal(err)
	}
	return l.Items
}

func (h *oidcHarness) users() []paygatev1.ConsoleUser {
	h.t.Helper()
	var l paygatev1.ConsoleUserList
	if err := h.cl.List(context.Background(), &l); err != nil {
		h.t.Fatal(err)
	}
	return l.Items
}

// audited is the reason of each audit record with action and result, "<namespace> <reason>".
func (h *oidcHarness) audited(action string, result paygatev1.ConsoleAuditResult) []string {
	h.t.Helper()
	var l paygatev1.ConsoleAuditRecordList
	if err := h.cl.List(context.Background(), &l); err != nil {
		h.t.Fatal(err)
	}
	slices.SortFunc(l.Items, func(a, b paygatev1.ConsoleAuditRecord) int { return strings.Compare(a.Name, b.Name) })
	var out []string
	for _, a := range l.Items {
		if a.Spec.Action == action && a.Spec.Result == result {
			out = append(out, a.Namespace+" "+a.Spec.Reason)
		}
	}
	return out
}

func cookieNamed(rec *httptest.ResponseRecorder, name string) *http.Cookie {
	for _, c := range rec.Result().Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// checkFlowCookieCleared fails t unless rec ends the flow cookie.
func checkFlowCookieCleared(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if ck := cookieNamed(rec, oidcCookieName); ck == nil || ck.MaxAge >= 0 || ck.Value != "" || ck.Path != oidcCookiePath {
		t.Errorf("the flow cookie is not cleared: %+v", ck)
	}
}

// checkRefused fails t unless rec is the error page of key with status.
func checkRefused(t *testing.T, rec *httptest.ResponseRecorder, status int, key string) {
	t.Helper()
	if rec.Code != status {
		t.Errorf("status %d, want %d", rec.Code, status)
	}
	if text := template.HTMLEscapeString(texts["en"][key]); key == "" || !strings.Contains(rec.Body.String(), text) {
		t.Errorf("the page does not say %s (%q)", key, texts["en"][key])
	}
}

func TestOIDCSignInCreatesTheUser(t *testing.T) {
	iss := startIssuer(t)
	for _, role := range []paygatev1.ConsoleRole{paygatev1.ConsoleDeveloper, paygatev1.ConsoleOwner, paygatev1.ConsoleFinance} {
		t.Run(string(role), func(t *testing.T) {
			h := newHarness(t, iss, testPublicURL)
			u := ada
			u.Role = string(role)
			iss.SetUser(u)
			rec := h.signIn()
			if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != Prefix+"/" {
				t.Fatalf("callback answered %d to %q, want 303 to /console/; body %s", rec.Code, rec.Header().Get("Location"), rec.Body)
			}
			checkFlowCookieCleared(t, rec)
			checkCreatedUser(t, h, role)
			checkOIDCSession(t, h, rec)
			if got := h.audited("sign-in", paygatev1.ConsoleAuditSuccess); len(got) != 1 || got[0] != "shop-ns " {
				t.Errorf("sign-in audit records %q, want one in shop-ns", got)
			}
			if got := h.audited("create-user", paygatev1.ConsoleAuditSuccess); len(got) != 1 || got[0] != "shop-ns oidc: role "+string(role) {
				t.Errorf("create-user audit records %q", got)
			}
		})
	}
}

// checkCreatedUser fails t unless Ada's ConsoleUser was created in shop-ns with role, and her
// sign-in recorded.
func checkCreatedUser(t *testing.T, h *oidcHarness, role paygatev1.ConsoleRole) {
	t.Helper()
	users := h.users()
	if len(users) != 1 {
		t.Fatalf("%d console users, want 1", len(users))
	}
	u := users[0]
	if u.Namespace != "shop-ns" || u.Name != paygatev1.ConsoleUserName(adaEmail) || u.Spec.Merchant != "shop" ||
		u.Spec.Email != adaEmail || u.Spec.Role != role || u.Spec.DisplayName != "Ada Lovelace" || u.Spec.Disabled {
		t.Errorf("created user %s/%s %+v", u.Namespace, u.Name, u.Spec)
	}
	if u.Status.LastSignInTime == nil {
		t.Error("the sign-in time is not recorded")
	}
}

// checkOIDCSession fails t unless one signed-in OIDC session of Ada exists, and rec's cookie
// is it.
func checkOIDCSession(t *testing.T, h *oidcHarness, rec *httptest.ResponseRecorder) {
	t.Helper()
	ss := h.sessions()
	if len(ss) != 1 {
		t.Fatalf("%d sessions, want 1", len(ss))
	}
	s := ss[0]
	if s.Namespace != "shop-ns" || s.Spec.User != paygatev1.ConsoleUserName(adaEmail) ||
		s.Spec.Method != paygatev1.ConsoleSignInOIDC || s.Spec.SecondFactorPending {
		t.Errorf("session %s/%s %+v", s.Namespace, s.Name, s.Spec)
	}
	ck := cookieNamed(rec, h.c.cookieName())
	if ck == nil {
		t.Fatal("no session cookie")
	}
	// The fake client sets no creationTimestamp, so principal would find the session idle: the
	// cookie is checked against the session's name instead.
	if !strings.HasPrefix(ck.Value, "shop-ns.") || paygatev1.ConsoleSessionName(consoleauth.TokenID(ck.Value)) != s.Name ||
		!ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Errorf("the session cookie is not the session's")
	}
}

func TestOIDCSignInUpdatesTheRole(t *testing.T) {
	iss := startIssuer(t)
	h := newHarness(t, iss, testPublicURL, consoleUser("shop-ns", "shop", adaEmail, paygatev1.ConsoleViewer, false))
	u := ada
	u.Role = string(paygatev1.ConsoleFinance)
	iss.SetUser(u)
	if rec := h.signIn(); rec.Code != http.StatusSeeOther {
		t.Fatalf("first sign-in answered %d: %s", rec.Code, rec.Body)
	}
	u.Role = string(paygatev1.ConsoleDeveloper)
	iss.SetUser(u)
	if rec := h.signIn(); rec.Code != http.StatusSeeOther {
		t.Fatalf("second sign-in answered %d: %s", rec.Code, rec.Body)
	}
	users := h.users()
	if len(users) != 1 || users[0].Spec.Role != paygatev1.ConsoleDeveloper || users[0].Spec.DisplayName != "Ada Lovelace" {
		t.Fatalf("users %+v, want Ada alone, a developer", users)
	}
	if n := len(h.sessions()); n != 2 {
		t.Errorf("%d sessions, want 2", n)
	}
	got := h.audited("change-role", paygatev1.ConsoleAuditSuccess)
	if strings.Join(got, "|") != "shop-ns oidc: viewer to finance|shop-ns oidc: finance to developer" {
		t.Errorf("change-role audit records %q", got)
	}
}

// oidcRefusalCase is a sign-in the callback refuses.
type oidcRefusalCase struct {
	name   string
	user   func(*oidcissuer.User)
	faults oidcissuer.Faults
	objs   []client.Object
	// tamper changes what the browser brings back to the callback.
	tamper  func(t *testing.T, ck *http.Cookie, cb *url.URL) *http.Cookie
	status  int
	key     string
	audited string // "<namespace> <reason>" of the refused sign-in's audit record, if any
}

func oidcRefusalCases() []oidcRefusalCase {
	query := func(k, v string) func(*testing.T, *http.Cookie, *url.URL) *http.Cookie {
		return func(_ *testing.T, ck *http.Cookie, cb *url.URL) *http.Cookie {
			q := cb.Query()
			q.Set(k, v)
			cb.RawQuery = q.Encode()
			return ck
		}
	}
	return []oidcRefusalCase{
		{name: "no flow cookie", tamper: func(*testing.T, *http.Cookie, *url.URL) *http.Cookie { return nil },
			status: http.StatusBadRequest, key: "oidcRestart"},
		{name: "malformed flow cookie", tamper: func(_ *testing.T, ck *http.Cookie, _ *url.URL) *http.Cookie {
			return &http.Cookie{Name: ck.Name, Value: "not-a-flow"}
		}, status: http.StatusBadRequest, key: "oidcRestart"},
		{name: "state mismatch", tamper: query("state", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
			status: http.StatusBadRequest, key: "oidcRestart"},
		{name: "error from the issuer", faults: oidcissuer.Faults{AuthorizeError: "access_denied"},
			status: http.StatusUnauthorized, key: "oidcDenied"},
		{name: "unknown code", tamper: query("code", "not-a-code"), status: http.StatusUnauthorized, key: "oidcFailed"},
		{name: "another PKCE verifier", tamper: func(t *testing.T, ck *http.Cookie, _ *url.URL) *http.Cookie {
			f, ok := parseFlow(ck.Value)
			if !ok {
				t.Fatal("unreadable flow cookie")
			}
			f.verifier = oauth2.GenerateVerifier()
			return &http.Cookie{Name: ck.Name, Value: f.value()}
		}, status: http.StatusUnauthorized, key: "oidcFailed"},
		{name: "wrong audience", faults: oidcissuer.Faults{WrongAudience: true}, status: http.StatusUnauthorized, key: "oidcFailed"},
		{name: "expired ID token", faults: oidcissuer.Faults{Expired: true}, status: http.StatusUnauthorized, key: "oidcFailed"},
		{name: "bad signature", faults: oidcissuer.Faults{BadSignature: true}, status: http.StatusUnauthorized, key: "oidcFailed"},
		{name: "nonce mismatch", faults: oidcissuer.Faults{Nonce: "someone-elses-nonce"}, status: http.StatusUnauthorized, key: "oidcFailed"},
		{name: "email not verified", user: func(u *oidcissuer.User) { u.EmailVerified = false },
			status: http.StatusUnauthorized, key: "oidcEmailUnverified"},
		{name: "email_verified missing", user: func(u *oidcissuer.User) { u.Extra = map[string]any{"email_verified": nil} },
			status: http.StatusUnauthorized, key: "oidcEmailUnverified"},
		{name: "merchant claim missing", user: func(u *oidcissuer.User) { u.Merchant = "" },
			status: http.StatusUnauthorized, key: "oidcNoAccess"},
		{name: "merchant claim malformed", user: func(u *oidcissuer.User) { u.Merchant = "shop" },
			status: http.StatusUnauthorized, key: "oidcNoAccess"},
		{name: "merchant claim not a string", user: func(u *oidcissuer.User) {
			u.Extra = map[string]any{"paygate_merchant": []string{"shop-ns/shop"}}
		}, status: http.StatusUnauthorized, key: "oidcNoAccess"},
		{name: "role outside the four", user: func(u *oidcissuer.User) { u.Role = "admin" },
			status: http.StatusUnauthorized, key: "oidcNoAccess"},
		{name: "role missing", user: func(u *oidcissuer.User) { u.Role = "" },
			status: http.StatusUnauthorized, key: "oidcNoAccess"},
		{name: "merchant does not exist", user: func(u *oidcissuer.User) { u.Merchant = "shop-ns/ghost" },
			status: http.StatusUnauthorized, key: "oidcNoAccess"},
		{name: "email of another merchant's user", objs: []client.Object{consoleUser("other-ns", "other", adaEmail, paygatev1.ConsoleOwner, false)},
			status: http.StatusUnauthorized, key: "oidcNotAllowed", audited: "other-ns oidc: email belongs to another merchant's user"},
		{name: "disabled user", objs: []client.Object{consoleUser("shop-ns", "shop", adaEmail, paygatev1.ConsoleDeveloper, true)},
			status: http.StatusUnauthorized, key: "oidcNotAllowed", audited: "shop-ns oidc: user disabled"},
	}
}

func TestOIDCCallbackRefusals(t *testing.T) {
	iss := startIssuer(t)
	for _, tc := range oidcRefusalCases() {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, iss, testPublicURL, tc.objs...)
			u := ada
			if tc.user != nil {
				tc.user(&u)
			}
			iss.SetUser(u)
			iss.SetFaults(tc.faults)
			defer iss.SetFaults(oidcissuer.Faults{})
			ck, cb := h.begin()
			if tc.tamper != nil {
				ck = tc.tamper(t, ck, cb)
			}
			rec := h.finish(ck, cb)
			checkRefused(t, rec, tc.status, tc.key)
			checkFlowCookieCleared(t, rec)
			if n := len(h.sessions()); n != 0 || cookieNamed(rec, h.c.cookieName()) != nil {
				t.Errorf("%d sessions made, or a session cookie set", n)
			}
			if n := len(h.users()); n != len(tc.objs) {
				t.Errorf("%d console users, want %d", n, len(tc.objs))
			}
			got := h.audited("sign-in", paygatev1.ConsoleAuditRefused)
			if (tc.audited == "" && len(got) != 0) || (tc.audited != "" && (len(got) != 1 || got[0] != tc.audited)) {
				t.Errorf("refused sign-ins audited %q, want %q", got, tc.audited)
			}
		})
	}
}

func TestOIDCCodeReplayIsRefused(t *testing.T) {
	iss := startIssuer(t)
	iss.SetUser(ada)
	h := newHarness(t, iss, testPublicURL)
	ck, cb := h.begin()
	if rec := h.finish(ck, cb); rec.Code != http.StatusSeeOther {
		t.Fatalf("sign-in answered %d", rec.Code)
	}
	checkRefused(t, h.finish(ck, cb), http.StatusUnauthorized, "oidcFailed")
	if n := len(h.sessions()); n != 1 {
		t.Errorf("%d sessions, want the first sign-in's alone", n)
	}
}

func TestOIDCStartSendsAnAuthenticationRequest(t *testing.T) {
	iss := startIssuer(t)
	for _, publicURL := range []string{testPublicURL, "https://console.test"} {
		t.Run(publicURL, func(t *testing.T) {
			h := newHarness(t, iss, publicURL)
			rec := h.serve(httptest.NewRequest(http.MethodGet, publicURL+oidcStartPath, nil))
			ck := cookieNamed(rec, oidcCookieName)
			if rec.Code != http.StatusSeeOther || ck == nil {
				t.Fatalf("start answered %d, flow cookie %v", rec.Code, ck)
			}
			if !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/console/oidc" || ck.MaxAge != 600 ||
				ck.Secure != strings.HasPrefix(publicURL, "https://") {
				t.Errorf("flow cookie attributes %+v", ck)
			}
			f, ok := parseFlow(ck.Value)
			if !ok {
				t.Fatalf("unreadable flow cookie")
			}
			loc, err := url.Parse(rec.Header().Get("Location"))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(f.verifier))
			want := url.Values{"response_type": {"code"}, "client_id": {iss.ClientID}, "scope": {"openid email profile"},
				"redirect_uri": {publicURL + "/console/oidc/callback"}, "state": {f.state}, "nonce": {f.nonce},
				"code_challenge_method": {"S256"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}}
			if got := loc.Query(); got.Encode() != want.Encode() {
				t.Errorf("authentication request\n%s\nwant\n%s", got.Encode(), want.Encode())
			}
		})
	}
}

func TestOIDCDiscoveryIsLazy(t *testing.T) {
	iss := startIssuer(t)
	iss.SetUser(ada)
	iss.SetFaults(oidcissuer.Faults{Unavailable: true})
	h := newHarness(t, iss, testPublicURL)
	if h.p.discoveryError() == nil {
		t.Fatal("no discovery error while the issuer is down")
	}
	start := func() *httptest.ResponseRecorder {
		return h.serve(httptest.NewRequest(http.MethodGet, testPublicURL+oidcStartPath, nil))
	}
	rec := start()
	checkRefused(t, rec, http.StatusServiceUnavailable, "oidcUnavailable")
	if cookieNamed(rec, oidcCookieName) != nil {
		t.Error("a flow cookie was set without an issuer")
	}
	iss.SetFaults(oidcissuer.Faults{})
	h.p.retryAfter = time.Hour
	checkRefused(t, start(), http.StatusServiceUnavailable, "oidcUnavailable") // not retried yet
	h.p.retryAfter = 0
	if rec := h.finish(h.begin()); rec.Code != http.StatusSeeOther {
		t.Fatalf("sign-in after the issuer came back answered %d", rec.Code)
	}
	if h.p.discoveryError() != nil {
		t.Errorf("discovery error %v after discovery", h.p.discoveryError())
	}
}

func TestNewOIDCOptions(t *testing.T) {
	ok := OIDCOptions{IssuerURL: "https://id.example.com", ClientID: "console"}
	for name, tc := range map[string]struct {
		o        OIDCOptions
		redirect string
	}{
		"no issuer":         {OIDCOptions{ClientID: "console"}, oidcRedirectURL(testPublicURL)},
		"relative issuer":   {OIDCOptions{IssuerURL: "id.example.com", ClientID: "console"}, oidcRedirectURL(testPublicURL)},
		"not http":          {OIDCOptions{IssuerURL: "ftp://id.example.com", ClientID: "console"}, oidcRedirectURL(testPublicURL)},
		"no client ID":      {OIDCOptions{IssuerURL: "https://id.example.com"}, oidcRedirectURL(testPublicURL)},
		"relative redirect": {ok, oidcCallbackPath},
	} {
		if _, err := newOIDC(context.Background(), tc.o, tc.redirect, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	d := OIDCOptions{Scopes: []string{"email"}}.withDefaults()
	if d.MerchantClaim != "paygate_merchant" || d.RoleClaim != "paygate_role" || strings.Join(d.Scopes, " ") != "openid email" {
		t.Errorf("defaults %+v", d)
	}
	if s := (OIDCOptions{}).withDefaults().Scopes; strings.Join(s, " ") != "openid email profile" {
		t.Errorf("default scopes %q", s)
	}
}

func TestOIDCNeverShowsOrLogsSecrets(t *testing.T) {
	iss := startIssuer(t)
	iss.SetUser(ada)
	h := newHarness(t, iss, testPublicURL)
	secrets := []string{iss.ClientSecret}
	var seen strings.Builder
	show := func(rec *httptest.ResponseRecorder) {
		body, _ := io.ReadAll(rec.Result().Body)
		seen.Write(body)
		seen.WriteString(rec.Header().Get("Location"))
	}
	for _, f := range []oidcissuer.Faults{{}, {WrongAudience: true}, {Nonce: "someone-elses-nonce"}} {
		iss.SetFaults(f)
		ck, cb := h.begin()
		flow, _ := parseFlow(ck.Value)
		show(h.finish(ck, cb))
		show(h.finish(ck, cb)) // the code again: the exchange fails
		secrets = append(secrets, cb.Query().Get("code"), flow.state, flow.nonce, flow.verifier, iss.LastIDToken())
	}
	iss.SetFaults(oidcissuer.Faults{})
	logs := h.logs.String()
	seen.WriteString(logs)
	for _, reason := range []string{"ID token invalid", "nonce mismatch", "code exchange failed"} {
		if !strings.Contains(logs, reason) {
			t.Errorf("%q was not logged:\n%s", reason, logs)
		}
	}
	for _, s := range secrets {
		if s == "" || strings.Contains(seen.String(), s) {
			t.Errorf("a secret (%d characters) is missing or shown or logged", len(s))
		}
	}
}

func TestOIDCTextsInBothLanguages(t *testing.T) {
	for key := range oidcTexts["en"] {
		en, sw := texts["en"][key], texts["sw"][key]
		if en == "" || sw == "" || en == sw {
			t.Errorf("%s: en %q, sw %q", key, en, sw)
		}
	}
	if len(oidcTexts["en"]) != len(oidcTexts["sw"]) {
		t.Errorf("%d English texts, %d Swahili", len(oidcTexts["en"]), len(oidcTexts["sw"]))
	}
}
