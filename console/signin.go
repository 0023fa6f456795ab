// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/consoleauth"
)

// dummyHash is checked against when no user matches, so that an unknown email takes as long to
// refuse as a wrong password.
var dummyHash = func() string {
	h, err := consoleauth.HashPassword("not a password of anyone's")
	if err != nil {
		panic(err)
	}
	return h
}()

func (c *Console) signInForm(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "sign-in", &view{})
}

// signIn checks an email and password. Every refusal looks the same ("the email or password is
// not right") except a locked account's; a success starts a session that still owes the second
// factor when the user has one or must enrol one.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	email, password := normalEmail(r.PostFormValue("email")), r.PostFormValue("password")
	v := &view{Email: cut(email, 254)}
	if ok, _ := c.limiter.Allow("sign-in|"+c.address(r), signInsPerMinute); !ok {
		c.render(w, r, http.StatusTooManyRequests, "sign-in", v.withError("tooManyAttempts"))
		return
	}
	users, err := c.users.find(ctx, email)
	if err != nil {
		c.serverError(w, r, "Finding a console user", err)
		return
	}
	if len(users) != 1 || email == "" || len(password) > 1024 {
		_, _, _ = consoleauth.VerifyPassword(dummyHash, password)
		c.render(w, r, http.StatusUnauthorized, "sign-in", v.withError("wrongPassword"))
		return
	}
	u := users[0]
	now := c.opts.Clock.Now()
	if lockoutOf(u).Locked(now) {
		c.audit(ctx, r, u, "sign-in", "", paygatev1.ConsoleAuditRefused, "locked")
		c.render(w, r, http.StatusTooManyRequests, "sign-in", v.withError("locked"))
		return
	}
	cr, err := readCredentials(ctx, c.opts.APIReader, c.opts.SecretsNamespace, u)
	if err != nil {
		c.serverError(w, r, "Reading console credentials", err)
		return
	}
	hash := cr.get(keyPassword)
	if hash == "" || u.Spec.Disabled {
		hash = dummyHash
	}
	ok, _, _ := consoleauth.VerifyPassword(hash, password)
	if !ok || hash == dummyHash {
		locked, err := c.recordFailure(ctx, u)
		if err != nil {
			c.serverError(w, r, "Counting a failed sign-in", err)
			return
		}
		reason := "wrong password"
		if u.Spec.Disabled {
			reason = "user disabled"
		}
		c.audit(ctx, r, u, "sign-in", "", paygatev1.ConsoleAuditRefused, reason)
		key := "wrongPassword"
		if locked {
			key = "locked"
		}
		c.render(w, r, http.StatusUnauthorized, "sign-in", v.withError(key))
		return
	}
	c.afterPassword(w, r, u, u.Spec.Role.NeedsSecondFactor() || u.Status.TwoFactorEnrolled)
}

// afterPassword starts the session of a user who gave the right password: signed in at once, or
// (pending) sent to give their second factor, or to enrol one.
func (c *Console) afterPassword(w http.ResponseWriter, r *http.Request, u *paygatev1.ConsoleUser, pending bool) {
	if _, err := c.startSession(w, r, u, paygatev1.ConsoleSignInPassword, pending); err != nil {
		c.serverError(w, r, "Starting a console session", err)
		return
	}
	if !pending {
		c.signedInNow(r.Context(), r, u)
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
		return
	}
	if u.Status.TwoFactorEnrolled {
		http.Redirect(w, r, Prefix+"/second-factor", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Prefix+"/enrol", http.StatusSeeOther)
}

// signedInNow records a completed sign-in: the failure count reset, the time kept, the audit
// trail told.
func (c *Console) signedInNow(ctx context.Context, r *http.Request, u *paygatev1.ConsoleUser) {
	now := c.opts.Clock.Now()
	err := c.updateUserStatus(ctx, u, func(st *paygatev1.ConsoleUserStatus) bool {
		st.FailedSignIns, st.LockedUntil, st.LastSignInTime = 0, nil, &metav1.Time{Time: now}
		return true
	})
	if err != nil {
		c.opts.Log.Error(err, "Recording a console sign-in", "user", u.Name)
	}
	c.audit(ctx, r, u, "sign-in", "", paygatev1.ConsoleAuditSuccess, "")
}

func lockoutOf(u *paygatev1.ConsoleUser) consoleauth.Lockout {
	l := consoleauth.Lockout{Failures: int(u.Status.FailedSignIns)}
	if u.Status.LockedUntil != nil {
		l.LockedUntil = u.Status.LockedUntil.Time
	}
	return l
}

// recordFailure counts a failed sign-in on the user's status (shared by every replica: the
// count is written under the resourceVersion it was read at) and reports whether it locked them.
func (c *Console) recordFailure(ctx context.Context, u *paygatev1.ConsoleUser) (bool, error) {
	now, locked := c.opts.Clock.Now(), false
	err := c.updateUserStatus(ctx, u, func(st *paygatev1.ConsoleUserStatus) bool {
		l := consoleauth.Lockout{Failures: int(st.FailedSignIns)}
		if st.LockedUntil != nil {
			l.LockedUntil = st.LockedUntil.Time
		}
		l = l.Fail(now, c.opts.Lockout)
		st.FailedSignIns = int32(min(l.Failures, 1<<20))
		st.LockedUntil = nil
		if l.Locked(now) {
			st.LockedUntil, locked = &metav1.Time{Time: l.LockedUntil}, true
		}
		return true
	})
	return locked, err
}

// updateUserStatus applies change to the user's live status and writes it, again on a conflict.
func (c *Console) updateUserStatus(ctx context.Context, u *paygatev1.ConsoleUser, change func(*paygatev1.ConsoleUserStatus) bool) error {
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := c.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
				return err
			}
		}
		first = false
		if !change(&u.Status) {
			return nil
		}
		u.Status.ObservedGeneration = u.Generation
		return c.opts.Writer.Status().Update(ctx, u)
	})
}

func (c *Console) secondFactorForm(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r)
	if !p.user.Status.TwoFactorEnrolled {
		http.Redirect(w, r, Prefix+"/enrol", http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "second-factor", &view{p: p})
}

// errReplayed is a second-factor code accepted once already (on any replica).
var errReplayed = errors.New("the code was used already")

// secondFactor checks a TOTP code or a recovery code, then replaces the pending session with a
// signed-in one under a new cookie.
func (c *Console) secondFactor(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	u := p.user
	if lockoutOf(u).Locked(c.opts.Clock.Now()) {
		c.render(w, r, http.StatusTooManyRequests, "second-factor", (&view{p: p}).withError("locked"))
		return
	}
	cr, err := readCredentials(ctx, c.opts.APIReader, c.opts.SecretsNamespace, u)
	if err != nil {
		c.serverError(w, r, "Reading console credentials", err)
		return
	}
	code := strings.TrimSpace(r.PostFormValue("code"))
	action, ok := "second-factor", false
	if len(code) <= 6+2 && cr.get(keyTOTP) != "" {
		ok, err = c.acceptTOTP(ctx, u, cr.get(keyTOTP), code)
	} else if len(code) <= 32 {
		action = "recovery-code"
		ok, err = c.useRecoveryCode(ctx, u, cr, code)
	}
	if err != nil && !errors.Is(err, errReplayed) {
		c.serverError(w, r, "Checking a second factor", err)
		return
	}
	if !ok {
		locked, ferr := c.recordFailure(ctx, u)
		if ferr != nil {
			c.serverError(w, r, "Counting a failed sign-in", ferr)
			return
		}
		c.audit(ctx, r, u, action, "", paygatev1.ConsoleAuditRefused, "wrong code")
		key := "wrongCode"
		if locked {
			key = "locked"
		}
		c.render(w, r, http.StatusUnauthorized, "second-factor", (&view{p: p}).withError(key))
		return
	}
	if action == "recovery-code" {
		c.audit(ctx, r, u, action, "", paygatev1.ConsoleAuditSuccess, fmt.Sprintf("%d left", u.Status.RecoveryCodesLeft))
	}
	c.completeSignIn(w, r, p)
}

// completeSignIn ends the pending session and starts a signed-in one.
func (c *Console) completeSignIn(w http.ResponseWriter, r *http.Request, p *principal) {
	if err := c.endSession(w, r, p.session); err != nil {
		c.serverError(w, r, "Ending a pending console session", err)
		return
	}
	if _, err := c.startSession(w, r, p.user, p.session.Spec.Method, false); err != nil {
		c.serverError(w, r, "Starting a console session", err)
		return
	}
	c.signedInNow(r.Context(), r, p.user)
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

// acceptTOTP checks code against secret and records its step on the user's status, so that the
// same code is refused on every replica afterwards.
func (c *Console) acceptTOTP(ctx context.Context, u *paygatev1.ConsoleUser, secret, code string) (bool, error) {
	step, ok := consoleauth.VerifyTOTP(secret, code, c.opts.Clock.Now(), u.Status.LastTOTPStep)
	if !ok {
		return false, nil
	}
	// An update under the resourceVersion the step was checked at: a second replica accepting
	// the same code at the same moment gets a conflict, and the re-read step refuses it.
	u.Status.LastTOTPStep = step
	if err := c.opts.Writer.Status().Update(ctx, u); err != nil {
		if isConflict(err) {
			return false, errReplayed
		}
		return false, fmt.Errorf("recording the second factor's step: %w", err)
	}
	return true, nil
}

// useRecoveryCode accepts an unused recovery code and strikes it out.
func (c *Console) useRecoveryCode(ctx context.Context, u *paygatev1.ConsoleUser, cr *userSecrets, code string) (bool, error) {
	hashes := cr.recoveryHashes()
	i := consoleauth.MatchRecoveryCode(hashes, code)
	if i < 0 {
		return false, nil
	}
	hashes = append(hashes[:i], hashes[i+1:]...)
	cr.set(keyRecoveryCodes, strings.Join(hashes, "\n"))
	if err := writeCredentials(ctx, c.opts.Writer, cr); err != nil {
		if isConflict(err) {
			return false, errReplayed
		}
		return false, err
	}
	left := int32(len(hashes))
	return true, c.updateUserStatus(ctx, u, func(st *paygatev1.ConsoleUserStatus) bool {
		st.RecoveryCodesLeft = left
		return true
	})
}

func (c *Console) signOut(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r)
	if err := c.endSession(w, r, p.session); err != nil {
		c.serverError(w, r, "Signing out", err)
		return
	}
	c.audit(r.Context(), r, p.user, "sign-out", "", paygatev1.ConsoleAuditSuccess, "")
	http.Redirect(w, r, Prefix+"/sign-in", http.StatusSeeOther)
}

func (c *Console) signOutEverywhere(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r)
	c.clearCookie(w)
	if err := c.endAllSessions(r.Context(), p.user); err != nil {
		c.serverError(w, r, "Signing out everywhere", err)
		return
	}
	c.audit(r.Context(), r, p.user, "sign-out-everywhere", "", paygatev1.ConsoleAuditSuccess, "")
	http.Redirect(w, r, Prefix+"/sign-in", http.StatusSeeOther)
}

// inviteUser reads the user an invitation link names, and whether the link's token is its
// pending invitation.
func (c *Console) inviteUser(ctx context.Context, r *http.Request) (*paygatev1.ConsoleUser, *userSecrets, string, bool, error) {
	ref, token := r.FormValue("user"), r.FormValue("token")
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 || len(token) < 20 || len(token) > 100 {
		return nil, nil, "", false, nil
	}
	u, err := c.user(ctx, ns, name)
	if err != nil || u == nil || u.Spec.Disabled {
		return nil, nil, "", false, err
	}
	cr, err := readCredentials(ctx, c.opts.APIReader, c.opts.SecretsNamespace, u)
	if err != nil {
		return nil, nil, "", false, err
	}
	return u, cr, token, cr.invitationValid(token, c.opts.Clock.Now()), nil
}

func (c *Console) inviteForm(w http.ResponseWriter, r *http.Request) {
	u, _, token, ok, err := c.inviteUser(r.Context(), r)
	if err != nil {
		c.serverError(w, r, "Reading an invitation", err)
		return
	}
	if !ok {
		c.refuse(w, r, http.StatusNotFound, "invitationInvalid")
		return
	}
	c.render(w, r, http.StatusOK, "invite", &view{Email: u.Spec.Email, InviteUser: u.Namespace + "/" + u.Name, InviteToken: token})
}

// acceptInvite sets the invited user's password, spends the invitation and signs them in (to
// enrol a second factor when their role needs one).
func (c *Console) acceptInvite(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	u, cr, token, ok, err := c.inviteUser(ctx, r)
	if err != nil {
		c.serverError(w, r, "Reading an invitation", err)
		return
	}
	if !ok {
		c.refuse(w, r, http.StatusNotFound, "invitationInvalid")
		return
	}
	v := &view{Email: u.Spec.Email, InviteUser: u.Namespace + "/" + u.Name, InviteToken: token}
	password := r.PostFormValue("password")
	if password != r.PostFormValue("confirm") {
		c.render(w, r, http.StatusUnprocessableEntity, "invite", v.withError("passwordsDiffer"))
		return
	}
	if err := consoleauth.CheckPasswordPolicy(password, u.Spec.Email); err != nil {
		c.render(w, r, http.StatusUnprocessableEntity, "invite", v.withError(policyKey(err)))
		return
	}
	hash, err := consoleauth.HashPassword(password)
	if err != nil {
		c.serverError(w, r, "Hashing a password", err)
		return
	}
	cr.set(keyPassword, hash)
	cr.set(keyInvitation, "")
	if err := writeCredentials(ctx, c.opts.Writer, cr); err != nil {
		if isConflict(err) { // the same link used twice at once: one of them wins
			c.refuse(w, r, http.StatusNotFound, "invitationInvalid")
			return
		}
		c.serverError(w, r, "Setting a password", err)
		return
	}
	if err := c.updateUserStatus(ctx, u, func(st *paygatev1.ConsoleUserStatus) bool {
		st.PasswordSet, st.InvitationExpires = true, nil
		return true
	}); err != nil {
		c.serverError(w, r, "Recording a password", err)
		return
	}
	c.audit(ctx, r, u, "accept-invitation", "", paygatev1.ConsoleAuditSuccess, "")
	c.afterPassword(w, r, u, u.Spec.Role.NeedsSecondFactor())
}

// policyKey is the message key of a password-policy refusal.
func policyKey(err error) string {
	switch {
	case errors.Is(err, consoleauth.ErrPasswordTooShort):
		return "passwordTooShort"
	case errors.Is(err, consoleauth.ErrPasswordTooLong):
		return "passwordTooLong"
	}
	return "passwordWeak"
}

// enrolForm shows a new TOTP secret to add to an authenticator app. The secret waits in the
// credentials Secret until a code from it confirms it.
func (c *Console) enrolForm(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	if p.user.Status.TwoFactorEnrolled {
		http.Redirect(w, r, Prefix+"/second-factor", http.StatusSeeOther)
		return
	}
	cr, err := readCredentials(ctx, c.opts.APIReader, c.opts.SecretsNamespace, p.user)
	if err != nil {
		c.serverError(w, r, "Reading console credentials", err)
		return
	}
	secret := cr.get(keyTOTPPending)
	if secret == "" {
		if secret, err = consoleauth.NewTOTPSecret(); err != nil {
			c.serverError(w, r, "Making a TOTP secret", err)
			return
		}
		cr.set(keyTOTPPending, secret)
		if err := writeCredentials(ctx, c.opts.Writer, cr); err != nil {
			c.serverError(w, r, "Keeping a TOTP secret", err)
			return
		}
	}
	c.render(w, r, http.StatusOK, "enrol", &view{p: p, TOTPSecret: groupSecret(secret),
		TOTPURI: consoleauth.OTPAuthURI("Paygate", p.user.Spec.Email, secret)})
}

// enrol confirms the pending TOTP secret with a code from it, makes the recovery codes, shows
// them once and completes the sign-in.
func (c *Console) enrol(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	cr, err := readCredentials(ctx, c.opts.APIReader, c.opts.SecretsNamespace, p.user)
	if err != nil {
		c.serverError(w, r, "Reading console credentials", err)
		return
	}
	secret := cr.get(keyTOTPPending)
	if p.user.Status.TwoFactorEnrolled || secret == "" {
		http.Redirect(w, r, Prefix+"/enrol", http.StatusSeeOther)
		return
	}
	step, ok := consoleauth.VerifyTOTP(secret, r.PostFormValue("code"), c.opts.Clock.Now(), 0)
	if !ok {
		c.audit(ctx, r, p.user, "enrol-second-factor", "", paygatev1.ConsoleAuditRefused, "wrong code")
		c.render(w, r, http.StatusUnprocessableEntity, "enrol", (&view{p: p, TOTPSecret: groupSecret(secret),
			TOTPURI: consoleauth.OTPAuthURI("Paygate", p.user.Spec.Email, secret)}).withError("wrongCode"))
		return
	}
	codes, hashes, err := consoleauth.NewRecoveryCodes(consoleauth.RecoveryCodeCount)
	if err != nil {
		c.serverError(w, r, "Making recovery codes", err)
		return
	}
	cr.set(keyTOTP, secret)
	cr.set(keyTOTPPending, "")
	cr.set(keyRecoveryCodes, strings.Join(hashes, "\n"))
	if err := writeCredentials(ctx, c.opts.Writer, cr); err != nil {
		c.serverError(w, r, "Keeping a second factor", err)
		return
	}
	if err := c.updateUserStatus(ctx, p.user, func(st *paygatev1.ConsoleUserStatus) bool {
		st.TwoFactorEnrolled, st.RecoveryCodesLeft, st.LastTOTPStep = true, int32(len(codes)), step
		return true
	}); err != nil {
		c.serverError(w, r, "Recording a second factor", err)
		return
	}
	c.audit(ctx, r, p.user, "enrol-second-factor", "", paygatev1.ConsoleAuditSuccess, "")
	if err := c.endSession(w, r, p.session); err != nil {
		c.serverError(w, r, "Ending a pending console session", err)
		return
	}
	np, err := c.startSession(w, r, p.user, p.session.Spec.Method, false)
	if err != nil {
		c.serverError(w, r, "Starting a console session", err)
		return
	}
	np.merchant = p.merchant
	c.signedInNow(ctx, r, p.user)
	c.render(w, r, http.StatusOK, "recovery-codes", &view{p: np, RecoveryCodes: codes})
}

// groupSecret writes a base32 secret in groups of four, as authenticator apps show it.
func groupSecret(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && i%4 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// serverError logs err and answers 500 with the console's error page (nothing of err shown).
func (c *Console) serverError(w http.ResponseWriter, r *http.Request, what string, err error) {
	c.opts.Log.Error(err, what, "path", r.URL.Path)
	c.refuse(w, r, http.StatusInternalServerError, "serverError")
}
