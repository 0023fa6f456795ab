// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"bytes"
	"html/template"
	"net/http"
	"strings"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// view is what a page template renders.
type view struct {
	p    *principal
	lang string

	// Error is the message key of a form's refusal; Message the error page's.
	Error, Message string

	Email, InviteUser, InviteToken string
	TOTPSecret, TOTPURI            string
	RecoveryCodes                  []string

	Env      paygatev1.Environment
	Balances []balanceRow

	Form             paymentForm
	Payments         []paygate.Payment
	Total, Offset    int
	PrevURL, NextURL string

	Payment  *paygate.Payment
	Timeline []timelineEntry
	// RefundKey is the refund form's idempotency key; RefundError (the API's words) or
	// RefundErrorKey (a text's key) why a refund was refused; RefundedID the refund just asked for.
	RefundKey, RefundError, RefundErrorKey, RefundedID string
	// RedeliverError (the API's words) or RedeliverErrorKey (a text's key): why a redelivery was
	// refused.
	RedeliverError, RedeliverErrorKey string

	Audit []paygatev1.ConsoleAuditRecord

	Table    *table
	Delivery *deliveryView
	Settings *settingsView
	Change   *changeView
	Gateways *gatewaysView
	Payout   *payoutView
	People   []paygatev1.ConsoleUser
	// InviteLink is an invitation just made, shown once.
	InviteLink string
	// OIDC is true when the sign-in page offers the identity provider.
	OIDC bool
}

func (v *view) withError(key string) *view { v.Error = key; return v }

// T is the text of key in the page's language (the key itself when there is none, which a test
// catches).
func (v *view) T(key string) string {
	if s, ok := texts[v.lang][key]; ok {
		return s
	}
	if s, ok := texts["en"][key]; ok {
		return s
	}
	return key
}

// Lang is the page's language; OtherLang the one the switch offers.
func (v *view) Lang() string { return v.lang }

func (v *view) OtherLang() string {
	if v.lang == "sw" {
		return "en"
	}
	return "sw"
}

// SignedIn reports whether the page belongs to a signed-in session (the navigation shows).
func (v *view) SignedIn() bool {
	return v.p != nil && !v.p.session.Spec.SecondFactorPending && v.p.merchant != nil
}

// CSRF is the proof the page's forms carry ("" without a session).
func (v *view) CSRF() string {
	if v.p == nil {
		return ""
	}
	return v.p.csrf()
}

// User is the signed-in user (nil without one).
func (v *view) User() *paygatev1.ConsoleUser {
	if v.p == nil {
		return nil
	}
	return v.p.user
}

// Merchant is the signed-in user's merchant (nil without one).
func (v *view) Merchant() *paygatev1.Merchant {
	if v.p == nil {
		return nil
	}
	return v.p.merchant
}

// SeesSettings reports whether the signed-in user may see the integration's settings (owners and
// developers).
func (v *view) SeesSettings() bool {
	return v.p != nil && (v.p.user.Spec.Role == paygatev1.ConsoleOwner || v.p.user.Spec.Role == paygatev1.ConsoleDeveloper)
}

// Roles are the roles an owner may give.
func (v *view) Roles() []paygatev1.ConsoleRole { return roles }

// IsOwner reports whether the signed-in user is an owner.
func (v *view) IsOwner() bool { return v.p != nil && v.p.user.Spec.Role == paygatev1.ConsoleOwner }

// When renders a time for a table cell, in UTC.
func (v *view) When(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// WhenText renders an API timestamp for a table cell.
func (v *view) WhenText(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return v.When(t)
}

// StatusText is a payment status in the page's language.
func (v *view) StatusText(s string) string { return v.T("status-" + s) }

// language picks the page's language: ?lang=, then the language cookie, then Accept-Language;
// English unless Swahili is asked for.
func language(w http.ResponseWriter, r *http.Request) string {
	if l := r.URL.Query().Get("lang"); l == "en" || l == "sw" {
		http.SetCookie(w, &http.Cookie{Name: "paygate-console-lang", Value: l, Path: Prefix, MaxAge: 365 * 24 * 3600,
			HttpOnly: true, SameSite: http.SameSiteLaxMode})
		return l
	}
	if ck, err := r.Cookie("paygate-console-lang"); err == nil && (ck.Value == "en" || ck.Value == "sw") {
		return ck.Value
	}
	for _, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		tag, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		switch strings.ToLower(tag) {
		case "sw", "sw-tz", "sw-ke":
			return "sw"
		case "en", "en-gb", "en-us":
			return "en"
		}
	}
	return "en"
}

func parsePages() map[string]*template.Template {
	base := template.Must(template.ParseFS(assets, "templates/layout.html"))
	pages := map[string]*template.Template{}
	for _, name := range []string{"sign-in", "invite", "second-factor", "enrol", "recovery-codes", "overview",
		"payments", "payment", "audit", "error", "list", "settings", "people", "webhook", "gateways", "payout", "change"} {
		pages[name] = template.Must(template.Must(base.Clone()).ParseFS(assets, "templates/"+name+".html"))
	}
	return pages
}

// render writes page with status. Pages are never cached (they hold a merchant's data).
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, v *view) {
	v.lang = language(w, r)
	v.OIDC = c.oidc != nil
	if v.p == nil && r.Context().Value(principalKey{}) != nil {
		v.p = principalFrom(r)
	}
	var buf bytes.Buffer
	if err := c.pages[page].ExecuteTemplate(&buf, "layout", v); err != nil {
		c.opts.Log.Error(err, "Rendering a console page", "page", page)
		status, buf = http.StatusInternalServerError, *bytes.NewBufferString("An internal error occurred.")
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// Statuses are the payment statuses a list filters by.
func (v *view) Statuses() []string { return []string{"pending", "success", "failed"} }

// Envs are the environments, in the order pages list them.
func (v *view) Envs() []string {
	return []string{string(paygatev1.EnvironmentSandbox), string(paygatev1.EnvironmentProduction)}
}
