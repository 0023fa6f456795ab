// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
)

// credentialRow is one environment's API credentials as the settings page shows them: the
// business id (not secret) and the API key masked; the API secret is never shown.
type credentialRow struct {
	Environment, BusinessID, APIKey string
	Issued                          bool
	// PreviousAPIKey (masked) and PreviousUntil: during a rotation's overlap, the key the
	// rotation replaced and when it stops working.
	PreviousAPIKey string
	PreviousUntil  time.Time
}

// gatewayRow is one gateway the merchant's checkout may offer.
type gatewayRow struct{ Code, Name, Currency string }

// settingsView is what the settings page shows.
type settingsView struct {
	Credentials       []credentialRow
	WebhookSandbox    string
	WebhookProduction string
	WebhookFormat     string
	WebhookSecretSet  bool
	// WebhookSecretPendingSince: a pending signing secret waits for activation since then.
	WebhookSecretPendingSince time.Time
	Gateways                  []gatewayRow
	Selected                  bool
	AllowedRedirectDomains    string
	AllowedWebhookDomains     string
	SettlementNumber, Status  string

	// The forms that ask for changes (changes.go): their idempotency key, whether production
	// credentials may be rotated, who manages the configuration ("" when the console may change
	// the webhook URLs), the overlaps offered.
	FormKey            string
	ProductionApproved bool
	ManagedBy          string
	Overlaps           []string
	// ErrorKey (a text's key) or Error (the API's words): why a form was refused. Redelivered:
	// how many failed deliveries a redelivery form sent again, shown when ShowRedelivered.
	ErrorKey, Error string
	ShowRedelivered bool
	Redelivered     int
}

// mask shows a key's first 7 and last 4 characters, nothing in between.
func mask(key string) string {
	if len(key) <= 14 {
		return strings.Repeat("•", len(key))
	}
	return key[:7] + "…" + key[len(key)-4:]
}

// settings shows the integration's settings to owners and developers: credentials masked, the
// webhook URLs and format, the gateways in use. Nothing secret is on the page.
func (c *Console) settings(w http.ResponseWriter, r *http.Request) {
	sv := &settingsView{}
	if n, err := strconv.Atoi(r.URL.Query().Get("redelivered")); err == nil && n >= 0 {
		sv.ShowRedelivered, sv.Redelivered = true, n
	}
	c.renderSettings(w, r, http.StatusOK, sv)
}

// renderSettings renders the settings page with status and the form state in form.
func (c *Console) renderSettings(w http.ResponseWriter, r *http.Request, status int, form *settingsView) {
	ctx, p := r.Context(), principalFrom(r)
	m := p.merchant
	sv := &settingsView{WebhookSandbox: m.Spec.WebhookURLs.Sandbox, WebhookProduction: m.Spec.WebhookURLs.Production,
		WebhookFormat: string(m.Spec.WebhookFormat), SettlementNumber: string(m.Spec.SettlementNumber), Status: string(m.Spec.BusinessStatus),
		AllowedRedirectDomains: joinDomains(m.Spec.AllowedRedirectDomains), AllowedWebhookDomains: joinDomains(m.Spec.AllowedWebhookDomains)}
	for _, env := range []paygatev1.Environment{paygatev1.EnvironmentSandbox, paygatev1.EnvironmentProduction} {
		s := &corev1.Secret{}
		err := c.opts.Cache.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: credentials.SecretName(m.Name, env)}, s)
		if err != nil && !apierrors.IsNotFound(err) {
			c.serverError(w, r, "Reading credentials", err)
			return
		}
		row := credentialRow{Environment: string(env)}
		if set, ok := credentials.SetFromData(s.Data); err == nil && ok {
			row.BusinessID, row.APIKey, row.Issued = set.BusinessID, mask(set.APIKey), true
			if prev := set.Previous; prev != nil && c.opts.Clock.Now().Before(prev.Expires) {
				row.PreviousAPIKey, row.PreviousUntil = mask(prev.APIKey), prev.Expires
			}
		}
		sv.Credentials = append(sv.Credentials, row)
	}
	ws := &corev1.Secret{}
	if err := c.opts.Cache.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: credentials.WebhookSecretName(m.Name)}, ws); err == nil {
		sv.WebhookSecretSet = len(ws.Data) > 0
		if m.Status.WebhookSigningSecretPendingSince != nil {
			sv.WebhookSecretPendingSince = m.Status.WebhookSigningSecretPendingSince.Time
		}
	} else if !apierrors.IsNotFound(err) {
		c.serverError(w, r, "Reading the webhook signing secret", err)
		return
	}
	gws, selected, err := c.gatewaysInUse(r, m)
	if err != nil {
		c.serverError(w, r, "Reading gateways", err)
		return
	}
	sv.Gateways, sv.Selected = gws, selected
	sv.FormKey, sv.ProductionApproved, sv.ManagedBy, sv.Overlaps = newFormKey(), m.Spec.BusinessStatus == paygatev1.BusinessApproved, managedBy(m), overlapChoices
	sv.ErrorKey, sv.Error, sv.ShowRedelivered, sv.Redelivered = form.ErrorKey, form.Error, form.ShowRedelivered, form.Redelivered
	c.render(w, r, status, "settings", &view{p: p, Settings: sv})
}

func joinDomains(ds []paygatev1.DomainName) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d)
	}
	return strings.Join(out, ", ")
}

// gatewaysInUse are the gateways of the merchant's currencies, narrowed by its GatewaySelection
// when it has one (selected is then true).
func (c *Console) gatewaysInUse(r *http.Request, m *paygatev1.Merchant) ([]gatewayRow, bool, error) {
	ctx := r.Context()
	var sels paygatev1.GatewaySelectionList
	if err := c.opts.Cache.List(ctx, &sels, client.InNamespace(m.Namespace)); err != nil {
		return nil, false, err
	}
	var chosen []paygatev1.GatewayCode
	selected := false
	for _, s := range sels.Items {
		if s.Spec.MerchantRef.Name == m.Name {
			chosen, selected = s.Spec.Gateways, true
		}
	}
	var gws paygatev1.GatewayList
	if err := c.opts.Cache.List(ctx, &gws); err != nil {
		return nil, false, err
	}
	var out []gatewayRow
	for _, g := range gws.Items {
		if !slices.Contains(m.Spec.Currencies, g.Spec.Currency) || (selected && !slices.Contains(chosen, g.Code())) {
			continue
		}
		out = append(out, gatewayRow{Code: string(g.Code()), Name: g.Spec.DisplayName, Currency: string(g.Spec.Currency)})
	}
	slices.SortFunc(out, func(a, b gatewayRow) int { return strings.Compare(a.Currency+a.Name, b.Currency+b.Name) })
	return out, selected, nil
}
