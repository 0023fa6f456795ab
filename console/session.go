// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/consoleauth"
)

// cookieName is the session cookie's name: with the __Host- prefix over HTTPS, so the browser
// keeps it to this host, Secure and on every path.
func (c *Console) cookieName() string {
	if c.secure {
		return "__Host-paygate-console"
	}
	return "paygate-console"
}

// principal is who a request comes from: the session, its user and their merchant.
type principal struct {
	token    string
	session  *paygatev1.ConsoleSession
	user     *paygatev1.ConsoleUser
	merchant *paygatev1.Merchant
}

// csrf is the proof a form of this session carries: an HMAC of a fixed label under the session's
// own token, which another site cannot read or compute.
func (p *principal) csrf() string { return csrfFor(p.token) }

func csrfFor(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("paygate console form"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

type principalKey struct{}

func principalFrom(r *http.Request) *principal { return r.Context().Value(principalKey{}).(*principal) }

// signedIn serves h to a signed-in session (second factor done); others are sent to sign in. An
// unsafe request must carry the session's CSRF proof.
func (c *Console) signedIn(h http.HandlerFunc) http.HandlerFunc {
	return c.withSession(false, h)
}

// pending serves h to a session that has passed the password and still owes the second factor.
func (c *Console) pending(h http.HandlerFunc) http.HandlerFunc {
	return c.withSession(true, h)
}

// owners serves h to owners only.
func (c *Console) owners(h http.HandlerFunc) http.HandlerFunc {
	return c.roles(h, paygatev1.ConsoleOwner)
}

// roles serves h to the roles named only; others get 403 (and nothing is done).
func (c *Console) roles(h http.HandlerFunc, allowed ...paygatev1.ConsoleRole) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(allowed, principalFrom(r).user.Spec.Role) {
			c.refuse(w, r, http.StatusForbidden, "notYourRole")
			return
		}
		h(w, r)
	}
}

func (c *Console) withSession(wantPending bool, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := c.principal(r)
		if err != nil {
			c.opts.Log.Error(err, "Reading a console session")
			c.refuse(w, r, http.StatusServiceUnavailable, "unavailable")
			return
		}
		if p == nil || p.session.Spec.SecondFactorPending != wantPending {
			c.clearCookie(w)
			if r.Method == http.MethodGet && !wantPending {
				http.Redirect(w, r, Prefix+"/sign-in", http.StatusSeeOther)
				return
			}
			c.refuse(w, r, http.StatusUnauthorized, "signInAgain")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead &&
			subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(p.csrf())) != 1 {
			c.refuse(w, r, http.StatusForbidden, "crossOrigin")
			return
		}
		c.touch(r.Context(), p.session)
		h(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}

// principal reads the request's session live (a session deleted on another replica a moment ago
// is gone here too), and its user and merchant; nil when there is no usable session: no cookie,
// an unknown one, expired, idle too long, or its user disabled or removed.
func (c *Console) principal(r *http.Request) (*principal, error) {
	ck, err := r.Cookie(c.cookieName())
	if err != nil || len(ck.Value) < 20 || len(ck.Value) > 100 {
		return nil, nil
	}
	ctx, now := r.Context(), c.opts.Clock.Now()
	ns, _, ok := splitCookie(ck.Value)
	if !ok {
		return nil, nil
	}
	token := ck.Value
	s := &paygatev1.ConsoleSession{}
	if err := c.opts.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: paygatev1.ConsoleSessionName(consoleauth.TokenID(token))}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the session: %w", err)
	}
	last := s.CreationTimestamp.Time
	if s.Status.LastSeen != nil {
		last = s.Status.LastSeen.Time
	}
	if !now.Before(s.Spec.Expires.Time) || now.Sub(last) > time.Duration(s.Spec.IdleTimeoutSeconds)*time.Second {
		_ = c.opts.Writer.Delete(ctx, s)
		return nil, nil
	}
	u, err := c.user(ctx, ns, s.Spec.User)
	if err != nil || u == nil || u.Spec.Disabled {
		return nil, err
	}
	m := &paygatev1.Merchant{}
	if err := c.opts.Cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: u.Spec.Merchant}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the merchant: %w", err)
	}
	return &principal{token: token, session: s, user: u, merchant: m}, nil
}

// user reads a console user from the cache, and live when the cache has not seen it (a user
// invited a moment ago through another replica); nil when there is none.
func (c *Console) user(ctx context.Context, ns, name string) (*paygatev1.ConsoleUser, error) {
	u := &paygatev1.ConsoleUser{}
	err := c.opts.Cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		err = c.opts.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the console user: %w", err)
	}
	return u, nil
}

// touch records the session's use at most once a minute (its idle timeout counts from it).
func (c *Console) touch(ctx context.Context, s *paygatev1.ConsoleSession) {
	now := c.opts.Clock.Now()
	if s.Status.LastSeen != nil && now.Sub(s.Status.LastSeen.Time) < time.Minute {
		return
	}
	patch := client.MergeFrom(s.DeepCopy())
	s.Status.LastSeen = &metav1.Time{Time: now}
	if err := c.opts.Writer.Status().Patch(ctx, s, patch); err != nil && !apierrors.IsNotFound(err) {
		c.opts.Log.Error(err, "Recording a console session's use", "user", s.Spec.User)
	}
}

// startSession creates a session for u and sets its cookie. The cookie is the namespace, a dot
// and a fresh random token (a new one at every step of signing in: a session id fixed by someone
// else before sign-in never becomes signed in).
func (c *Console) startSession(w http.ResponseWriter, r *http.Request, u *paygatev1.ConsoleUser, method paygatev1.ConsoleSignInMethod, pending bool) (*principal, error) {
	random, _, err := consoleauth.NewToken()
	if err != nil {
		return nil, fmt.Errorf("making a session token: %w", err)
	}
	token := u.Namespace + "." + random
	now := c.opts.Clock.Now()
	expires, idle := now.Add(c.opts.AbsoluteTimeout), c.opts.IdleTimeout
	if pending {
		expires, idle = now.Add(pendingLifetime), pendingLifetime
	}
	s := &paygatev1.ConsoleSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: u.Namespace, Name: paygatev1.ConsoleSessionName(consoleauth.TokenID(token)),
			Labels: map[string]string{paygatev1.LabelConsoleUser: u.Name, paygatev1.LabelConsoleMerchant: u.Spec.Merchant}},
		Spec: paygatev1.ConsoleSessionSpec{User: u.Name, Method: method, SecondFactorPending: pending,
			Expires: metav1.Time{Time: expires}, IdleTimeoutSeconds: int32(max(idle, time.Minute) / time.Second),
			Address: c.address(r), UserAgent: cut(r.UserAgent(), 200)},
	}
	if err := c.opts.Writer.Create(r.Context(), s); err != nil {
		return nil, fmt.Errorf("creating the session: %w", err)
	}
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(), Value: token, Path: "/", HttpOnly: true, Secure: c.secure,
		SameSite: http.SameSiteStrictMode, Expires: expires})
	return &principal{token: token, session: s, user: u}, nil
}

// endSession deletes the request's session, if any, and clears its cookie.
func (c *Console) endSession(w http.ResponseWriter, r *http.Request, s *paygatev1.ConsoleSession) error {
	c.clearCookie(w)
	if err := c.opts.Writer.Delete(r.Context(), s); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the session: %w", err)
	}
	return nil
}

func (c *Console) clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(), Value: "", Path: "/", HttpOnly: true, Secure: c.secure,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
}

// endAllSessions deletes every session of u (sign out everywhere, a removed or disabled user).
func (c *Console) endAllSessions(ctx context.Context, u *paygatev1.ConsoleUser) error {
	err := c.opts.Writer.DeleteAllOf(ctx, &paygatev1.ConsoleSession{}, client.InNamespace(u.Namespace),
		client.MatchingLabels{paygatev1.LabelConsoleUser: u.Name})
	if err != nil {
		return fmt.Errorf("deleting the sessions of a console user: %w", err)
	}
	return nil
}

// splitCookie splits a session cookie into the namespace and the random part; a cookie whose
// namespace is not a namespace's name is no session (and is never sent to the Kubernetes API).
func splitCookie(v string) (ns, random string, ok bool) {
	ns, random, found := strings.Cut(v, ".")
	if !found || len(validation.IsDNS1123Label(ns)) > 0 || len(random) < 20 {
		return "", "", false
	}
	return ns, random, true
}

func (c *Console) address(r *http.Request) string {
	ip := c.ips.ClientIP(r)
	if !ip.IsValid() {
		return ""
	}
	return ip.String()
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		n--
	}
	return s[:n]
}
