// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// roles are the roles an owner may give, in the order the form offers them.
var roles = []paygatev1.ConsoleRole{paygatev1.ConsoleViewer, paygatev1.ConsoleDeveloper, paygatev1.ConsoleFinance, paygatev1.ConsoleOwner}

// merchantUsers lists the console users of the principal's merchant, by email.
func (c *Console) merchantUsers(r *http.Request, p *principal) ([]paygatev1.ConsoleUser, error) {
	var list paygatev1.ConsoleUserList
	if err := c.opts.Cache.List(r.Context(), &list, client.InNamespace(p.merchant.Namespace)); err != nil {
		return nil, err
	}
	out := list.Items[:0]
	for _, u := range list.Items {
		if u.Spec.Merchant == p.merchant.Name {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b paygatev1.ConsoleUser) int { return strings.Compare(a.Spec.Email, b.Spec.Email) })
	return out, nil
}

// people shows an owner the merchant's console users, with a form to invite another.
func (c *Console) people(w http.ResponseWriter, r *http.Request) {
	c.renderPeople(w, r, http.StatusOK, &view{})
}

func (c *Console) renderPeople(w http.ResponseWriter, r *http.Request, status int, v *view) {
	p := principalFrom(r)
	users, err := c.merchantUsers(r, p)
	if err != nil {
		c.serverError(w, r, "Listing console users", err)
		return
	}
	v.p, v.People = p, users
	c.render(w, r, status, "people", v)
}

// invitePerson creates an invitation and shows its link once.
func (c *Console) invitePerson(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	email, role := normalEmail(r.PostFormValue("email")), paygatev1.ConsoleRole(r.PostFormValue("role"))
	v := &view{Email: cut(email, 254)}
	if !slices.Contains(roles, role) || len(email) > 254 || !strings.Contains(email, "@") {
		c.renderPeople(w, r, http.StatusUnprocessableEntity, v.withError("inviteInvalid"))
		return
	}
	inv, err := Invite(ctx, c.opts.Writer, c.opts.SecretsNamespace, p.merchant, email, role, "", c.opts.PublicURL, DefaultInviteLifetime, c.opts.Clock.Now())
	if err != nil {
		var known []*paygatev1.ConsoleUser
		if known, _ = c.users.find(ctx, email); len(known) > 0 || apierrors.IsInvalid(err) {
			c.audit(ctx, r, p.user, "invite-user", email, paygatev1.ConsoleAuditRefused, "address not available")
			c.renderPeople(w, r, http.StatusUnprocessableEntity, v.withError("inviteInvalid"))
			return
		}
		c.serverError(w, r, "Inviting a console user", err)
		return
	}
	c.audit(ctx, r, p.user, "invite-user", email+" as "+string(role), paygatev1.ConsoleAuditSuccess, "")
	v.InviteLink = inv.Link
	c.renderPeople(w, r, http.StatusOK, v)
}

// removePerson deletes another console user of the merchant (their credentials Secret goes with
// them, and their sessions). The last owner cannot be removed.
func (c *Console) removePerson(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	users, err := c.merchantUsers(r, p)
	if err != nil {
		c.serverError(w, r, "Listing console users", err)
		return
	}
	name := r.PostFormValue("user")
	i := slices.IndexFunc(users, func(u paygatev1.ConsoleUser) bool { return u.Name == name })
	if i < 0 {
		c.renderPeople(w, r, http.StatusNotFound, (&view{}).withError("noSuchUser"))
		return
	}
	u := &users[i]
	owners := 0
	for _, x := range users {
		if x.Spec.Role == paygatev1.ConsoleOwner && !x.Spec.Disabled {
			owners++
		}
	}
	if u.Spec.Role == paygatev1.ConsoleOwner && owners <= 1 {
		c.audit(ctx, r, p.user, "remove-user", u.Spec.Email, paygatev1.ConsoleAuditRefused, "last owner")
		c.renderPeople(w, r, http.StatusUnprocessableEntity, (&view{}).withError("lastOwner"))
		return
	}
	if err := c.opts.Writer.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
		c.serverError(w, r, "Removing a console user", err)
		return
	}
	if err := c.endAllSessions(ctx, u); err != nil {
		c.serverError(w, r, "Ending a removed user's sessions", err)
		return
	}
	if err := deleteCredentials(ctx, c.opts.Writer, c.opts.SecretsNamespace, u); err != nil {
		c.serverError(w, r, "Deleting a removed user's credentials", err)
		return
	}
	c.audit(ctx, r, p.user, "remove-user", u.Spec.Email, paygatev1.ConsoleAuditSuccess, "")
	if u.Name == p.user.Name {
		c.clearCookie(w)
		http.Redirect(w, r, Prefix+"/sign-in", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Prefix+"/people", http.StatusSeeOther)
}
