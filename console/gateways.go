// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/eligibility"
)

// The merchant's payment gateway controls (docs/console.md, Gateways): an owner chooses which of
// the gateways that can serve the merchant's currencies its checkout offers. The choice is the
// merchant's GatewaySelection, the same object a platform engineer edits with kubectl; a merchant
// whose configuration is managed elsewhere (paygatev1.AnnotationManagedBy) sees it read-only.

// gatewayChoice is one gateway the owner may choose.
type gatewayChoice struct {
	Code, Name, Currency string
	Chosen               bool
}

// gatewaysView is what the gateways page shows.
type gatewaysView struct {
	Choices []gatewayChoice
	// Restricted: a selection exists (otherwise every gateway is offered).
	Restricted bool
	// ManagedBy names who manages the merchant's configuration; the page is read-only then.
	ManagedBy string
	Saved     bool
}

// gateways shows the gateway controls.
func (c *Console) gateways(w http.ResponseWriter, r *http.Request) {
	c.renderGateways(w, r, http.StatusOK, &view{Gateways: &gatewaysView{Saved: r.URL.Query().Get("saved") == "1"}})
}

func (c *Console) renderGateways(w http.ResponseWriter, r *http.Request, status int, v *view) {
	p := principalFrom(r)
	choices, sel, err := c.gatewayChoices(r.Context(), p.merchant)
	if err != nil {
		c.serverError(w, r, "Reading gateways", err)
		return
	}
	gv := &gatewaysView{Choices: choices, Restricted: sel != nil, ManagedBy: managedBy(p.merchant)}
	if v.Gateways != nil {
		gv.Saved = v.Gateways.Saved
	}
	v.p, v.Gateways = p, gv
	c.render(w, r, status, "gateways", v)
}

// managedBy is who manages the merchant's configuration, "" when the console may change it.
func managedBy(m *paygatev1.Merchant) string {
	return strings.TrimSpace(m.Annotations[paygatev1.AnnotationManagedBy])
}

// gatewayChoices are the gateways that can serve the merchant's currencies (active, automatic),
// with the ones its selection names chosen; sel is the selection that applies (nil: none).
func (c *Console) gatewayChoices(ctx context.Context, m *paygatev1.Merchant) ([]gatewayChoice, *paygatev1.GatewaySelection, error) {
	sel, err := c.selectionOf(ctx, m)
	if err != nil {
		return nil, nil, err
	}
	var gws paygatev1.GatewayList
	if err := c.opts.Cache.List(ctx, &gws); err != nil {
		return nil, nil, fmt.Errorf("listing gateways: %w", err)
	}
	var out []gatewayChoice
	for i := range gws.Items {
		g := &gws.Items[i]
		if !slices.Contains(m.Spec.Currencies, g.Spec.Currency) || !eligibility.Serves(g, eligibility.Request{Currency: g.Spec.Currency}) {
			continue
		}
		chosen := sel == nil || slices.Contains(sel.Spec.Gateways, g.Code())
		out = append(out, gatewayChoice{Code: string(g.Code()), Name: g.Spec.DisplayName, Currency: string(g.Spec.Currency), Chosen: chosen})
	}
	slices.SortFunc(out, func(a, b gatewayChoice) int {
		if c := strings.Compare(a.Currency, b.Currency); c != 0 {
			return c
		}
		return strings.Compare(a.Name+a.Code, b.Name+b.Code)
	})
	return out, sel, nil
}

// selectionOf is the GatewaySelection that applies to m (the oldest of its selections), nil when
// it has none.
func (c *Console) selectionOf(ctx context.Context, m *paygatev1.Merchant) (*paygatev1.GatewaySelection, error) {
	var list paygatev1.GatewaySelectionList
	if err := c.opts.Cache.List(ctx, &list, client.InNamespace(m.Namespace)); err != nil {
		return nil, fmt.Errorf("listing gateway selections: %w", err)
	}
	mine := slices.DeleteFunc(list.Items, func(s paygatev1.GatewaySelection) bool { return s.Spec.MerchantRef.Name != m.Name })
	if len(mine) == 0 {
		return nil, nil
	}
	return &eligibility.OrderSelections(mine)[0], nil
}

// selectionName is the name of the GatewaySelection the console creates for a merchant.
func selectionName(m *paygatev1.Merchant) string { return m.Name + "-gateways" }

// chooseGateways writes the owner's choice: the gateways ticked, each one the page offered. With
// none ticked, nothing changes (a selection of none would offer no gateway at all).
func (c *Console) chooseGateways(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	if who := managedBy(p.merchant); who != "" {
		c.audit(ctx, r, p.user, "choose-gateways", p.merchant.Name, paygatev1.ConsoleAuditRefused, "managed by "+cut(who, 100))
		c.renderGateways(w, r, http.StatusConflict, (&view{}).withError("managedElsewhere"))
		return
	}
	if err := r.ParseForm(); err != nil {
		c.renderGateways(w, r, http.StatusBadRequest, (&view{}).withError("gatewaysInvalid"))
		return
	}
	choices, sel, err := c.gatewayChoices(ctx, p.merchant)
	if err != nil {
		c.serverError(w, r, "Reading gateways", err)
		return
	}
	var chosen []paygatev1.GatewayCode
	for _, code := range r.PostForm["gateway"] {
		if !slices.ContainsFunc(choices, func(g gatewayChoice) bool { return g.Code == code }) {
			c.audit(ctx, r, p.user, "choose-gateways", cut(code, 64), paygatev1.ConsoleAuditRefused, "not a gateway of the merchant's currencies")
			c.renderGateways(w, r, http.StatusUnprocessableEntity, (&view{}).withError("gatewaysInvalid"))
			return
		}
		if !slices.Contains(chosen, paygatev1.GatewayCode(code)) {
			chosen = append(chosen, paygatev1.GatewayCode(code))
		}
	}
	if len(chosen) == 0 || len(chosen) > 64 {
		c.renderGateways(w, r, http.StatusUnprocessableEntity, (&view{}).withError("gatewaysNone"))
		return
	}
	if err := c.writeSelection(ctx, p.merchant, sel, chosen); err != nil {
		c.serverError(w, r, "Writing the gateway selection", err)
		return
	}
	names := make([]string, len(chosen))
	for i, g := range chosen {
		names[i] = string(g)
	}
	c.audit(ctx, r, p.user, "choose-gateways", strings.Join(names, ", "), paygatev1.ConsoleAuditSuccess, "")
	http.Redirect(w, r, Prefix+"/gateways?saved=1", http.StatusSeeOther)
}

// writeSelection updates the selection that applies (under its resourceVersion: a change made
// meanwhile elsewhere conflicts instead of being overwritten) or creates the merchant's.
func (c *Console) writeSelection(ctx context.Context, m *paygatev1.Merchant, sel *paygatev1.GatewaySelection, chosen []paygatev1.GatewayCode) error {
	if sel == nil {
		return c.opts.Writer.Create(ctx, &paygatev1.GatewaySelection{
			ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: selectionName(m)},
			Spec:       paygatev1.GatewaySelectionSpec{MerchantRef: paygatev1.MerchantReference{Name: m.Name}, Gateways: chosen},
		})
	}
	updated := sel.DeepCopy()
	updated.Spec.Gateways = chosen
	return c.opts.Writer.Update(ctx, updated)
}
