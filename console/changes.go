// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
)

// Self-service changes from the settings page (docs/console.md, Keys and webhook settings): new
// API credentials, the end of a rotation's overlap, the webhook signing secret's rotation, the
// default webhook URLs and a test event. The console may not change Merchants or Secrets (a
// compromised apiserver must not redirect money or forge credentials), so each change is a
// MerchantChange the merchant controller answers; the console then shows the answer, and a new
// key or signing secret once.

// changeActions are the settings forms' action values and what they ask for.
var changeActions = map[string]paygatev1.MerchantChangeAction{
	"rotate":          paygatev1.ChangeRotateCredentials,
	"end-overlap":     paygatev1.ChangeEndCredentialsOverlap,
	"prepare-secret":  paygatev1.ChangePrepareWebhookSecret,
	"activate-secret": paygatev1.ChangeActivateWebhookSecret,
	"webhook-url":     paygatev1.ChangeSetWebhookURL,
	"test-event":      paygatev1.ChangeSendTestEvent,
}

// auditActions name each change in the audit trail.
var auditActions = map[paygatev1.MerchantChangeAction]string{
	paygatev1.ChangeRotateCredentials:     "rotate-credentials",
	paygatev1.ChangeEndCredentialsOverlap: "end-credentials-overlap",
	paygatev1.ChangePrepareWebhookSecret:  "prepare-webhook-secret",
	paygatev1.ChangeActivateWebhookSecret: "activate-webhook-secret",
	paygatev1.ChangeSetWebhookURL:         "set-webhook-url",
	paygatev1.ChangeSendTestEvent:         "send-test-event",
}

// overlapChoices are the overlaps the rotation form offers (the default first).
var overlapChoices = []string{"24h", "0s", "1h", "72h", "168h"}

// revealable reports whether an applied change has a secret to show once.
func revealable(a paygatev1.MerchantChangeAction) bool {
	return a == paygatev1.ChangeRotateCredentials || a == paygatev1.ChangePrepareWebhookSecret
}

// answerWait is how long a change's form waits for the controller's answer before it shows the
// change as still being made.
const answerWait = 10 * time.Second

// changeView is what a change's page shows.
type changeView struct {
	Name, Action, Env, Phase, Reason, Message string
	Pending, Revealable                       bool
	// Revealed holds the new key and secret, or the pending signing secret, shown once.
	Revealed *revealedView
	// Gone: the change is no longer there (shown already, or answered over an hour ago).
	Gone bool
}

// revealedView is a new secret shown once.
type revealedView struct {
	BusinessID, APIKey, APISecret, SigningSecret string
	// Replaced: a later change replaced what this one made; nothing is shown.
	Replaced bool
}

// changeName is the MerchantChange a form asks for: one per form, user and change, so a form sent
// twice asks once.
func changeName(m *paygatev1.Merchant, u *paygatev1.ConsoleUser, key string, spec *paygatev1.MerchantChangeSpec) string {
	overlap := ""
	if spec.Overlap != nil {
		overlap = spec.Overlap.Duration.String()
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{string(m.UID), u.Name, key, string(spec.Action), string(spec.Environment), overlap, spec.WebhookURL}, "\x00")))
	return "console-" + hex.EncodeToString(sum[:12])
}

// requestChange asks for the change a settings form names, waits a moment for its answer and
// shows the change's page.
func (c *Console) requestChange(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	m := p.merchant
	key := r.PostFormValue("key")
	action, known := changeActions[r.PostFormValue("action")]
	if !formKeyPattern.MatchString(key) || !known {
		c.renderSettings(w, r, http.StatusUnprocessableEntity, &settingsView{ErrorKey: "changeInvalid"})
		return
	}
	spec, errKey, errText, status := c.changeSpec(r, m, action)
	if status != 0 {
		c.audit(ctx, r, p.user, auditActions[action], changeTarget(spec), paygatev1.ConsoleAuditRefused, cut(errKey+" "+errText, 200))
		c.renderSettings(w, r, status, &settingsView{ErrorKey: errKey, Error: errText})
		return
	}
	spec.RequestedBy = p.user.Spec.Email
	change := &paygatev1.MerchantChange{
		ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: changeName(m, p.user, key, spec),
			Labels: map[string]string{paygatev1.LabelMerchant: m.Name, paygatev1.LabelConsoleUser: p.user.Name}},
		Spec: *spec,
	}
	if err := c.opts.Writer.Create(ctx, change); err != nil && !apierrors.IsAlreadyExists(err) {
		c.serverError(w, r, "Asking for a merchant change", err)
		return
	} else if err == nil {
		c.audit(ctx, r, p.user, auditActions[action], changeTarget(spec), paygatev1.ConsoleAuditSuccess, "asked as MerchantChange "+change.Name)
	}
	c.awaitAnswer(ctx, change)
	http.Redirect(w, r, Prefix+"/settings/changes/"+change.Name, http.StatusSeeOther)
}

// changeTarget is what the audit trail names as a change's target.
func changeTarget(spec *paygatev1.MerchantChangeSpec) string {
	parts := []string{string(spec.Environment)}
	if spec.Action == paygatev1.ChangeSetWebhookURL {
		parts = append(parts, cmp.Or(spec.WebhookURL, "(none)"))
	}
	if spec.Overlap != nil {
		parts = append(parts, "overlap "+spec.Overlap.Duration.String())
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

// changeSpec reads and checks a settings form; a refusal comes back as a text key or the API's
// words, with the status to answer.
func (c *Console) changeSpec(r *http.Request, m *paygatev1.Merchant, action paygatev1.MerchantChangeAction) (spec *paygatev1.MerchantChangeSpec, errKey, errText string, status int) {
	spec = &paygatev1.MerchantChangeSpec{MerchantRef: paygatev1.MerchantReference{Name: m.Name}, Action: action}
	if action != paygatev1.ChangePrepareWebhookSecret && action != paygatev1.ChangeActivateWebhookSecret {
		env := paygatev1.Environment(r.PostFormValue("env"))
		if env != paygatev1.EnvironmentSandbox && env != paygatev1.EnvironmentProduction {
			return spec, "changeInvalid", "", http.StatusUnprocessableEntity
		}
		spec.Environment = env
	}
	switch action {
	case paygatev1.ChangeRotateCredentials:
		overlap := r.PostFormValue("overlap")
		if !slices.Contains(overlapChoices, overlap) {
			return spec, "changeInvalid", "", http.StatusUnprocessableEntity
		}
		d, _ := time.ParseDuration(overlap)
		spec.Overlap = &metav1.Duration{Duration: d}
		if spec.Environment == paygatev1.EnvironmentProduction && m.Spec.BusinessStatus != paygatev1.BusinessApproved {
			return spec, "productionNotApproved", "", http.StatusForbidden
		}
	case paygatev1.ChangeSetWebhookURL:
		if managedBy(m) != "" {
			return spec, "managedElsewhere", "", http.StatusConflict
		}
		spec.WebhookURL = strings.TrimSpace(r.PostFormValue("webhook_url"))
		if spec.WebhookURL != "" {
			if msg := paygatev1.URLProblem("webhook URL", spec.WebhookURL, spec.Environment, m.Spec.AllowedWebhookDomains); msg != "" {
				return spec, "", msg, http.StatusUnprocessableEntity
			}
		}
	case paygatev1.ChangeSendTestEvent:
		if m.Spec.WebhookURLs.For(spec.Environment) == "" {
			return spec, "noWebhookURL", "", http.StatusUnprocessableEntity
		}
	}
	return spec, "", "", 0
}

// awaitAnswer waits up to answerWait for the controller to answer change (read live).
func (c *Console) awaitAnswer(ctx context.Context, change *paygatev1.MerchantChange) {
	ctx, cancel := context.WithTimeout(ctx, answerWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		got := &paygatev1.MerchantChange{}
		if err := c.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(change), got); err != nil || got.IsAnswered() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// userChange reads one of the user's own changes live; nil when there is none by that name (or
// it is someone else's).
func (c *Console) userChange(ctx context.Context, p *principal, name string) (*paygatev1.MerchantChange, error) {
	if len(name) > 63 || !strings.HasPrefix(name, "console-") {
		return nil, nil
	}
	change := &paygatev1.MerchantChange{}
	err := c.opts.APIReader.Get(ctx, client.ObjectKey{Namespace: p.merchant.Namespace, Name: name}, change)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if change.Spec.MerchantRef.Name != p.merchant.Name || change.Labels[paygatev1.LabelConsoleUser] != p.user.Name {
		return nil, nil
	}
	return change, nil
}

// changePage shows one of the user's changes: still being made, applied or refused, and for a
// new key or signing secret the button that shows it once.
func (c *Console) changePage(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r)
	change, err := c.userChange(r.Context(), p, r.PathValue("name"))
	if err != nil {
		c.serverError(w, r, "Reading a merchant change", err)
		return
	}
	if change == nil {
		c.render(w, r, http.StatusNotFound, "change", &view{p: p, Change: &changeView{Gone: true}})
		return
	}
	c.render(w, r, http.StatusOK, "change", &view{p: p, Change: viewOfChange(change)})
}

func viewOfChange(change *paygatev1.MerchantChange) *changeView {
	return &changeView{Name: change.Name, Action: auditActions[change.Spec.Action], Env: string(change.Spec.Environment),
		Phase: string(change.Status.Phase), Reason: change.Status.Reason, Message: change.Status.Message, Pending: !change.IsAnswered(),
		Revealable: change.Status.Phase == paygatev1.ChangeApplied && revealable(change.Spec.Action)}
}

// revealChange shows a new key and secret, or a pending signing secret, once: the change is
// deleted first (under its UID, so of two concurrent clicks on any replicas one shows it), then
// the Secret is read live and shown only if it still holds what this change made.
func (c *Console) revealChange(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	change, err := c.userChange(ctx, p, r.PathValue("name"))
	if err != nil {
		c.serverError(w, r, "Reading a merchant change", err)
		return
	}
	if change == nil || change.Status.Phase != paygatev1.ChangeApplied || !revealable(change.Spec.Action) {
		c.render(w, r, http.StatusNotFound, "change", &view{p: p, Change: &changeView{Gone: true}})
		return
	}
	err = c.opts.Writer.Delete(ctx, change, client.Preconditions{UID: &change.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		c.render(w, r, http.StatusNotFound, "change", &view{p: p, Change: &changeView{Gone: true}})
		return
	}
	if err != nil {
		c.serverError(w, r, "Taking a merchant change", err)
		return
	}
	revealed, err := c.revealed(ctx, p.merchant, change)
	if err != nil {
		c.serverError(w, r, "Reading the new secret", err)
		return
	}
	what := "reveal-credentials"
	if change.Spec.Action == paygatev1.ChangePrepareWebhookSecret {
		what = "reveal-webhook-secret"
	}
	result, reason := paygatev1.ConsoleAuditSuccess, ""
	if revealed.Replaced {
		result, reason = paygatev1.ConsoleAuditFailed, "replaced by a later change"
	}
	c.audit(ctx, r, p.user, what, strings.TrimSpace(string(change.Spec.Environment)+" "+change.Name), result, reason)
	cv := viewOfChange(change)
	cv.Revealable, cv.Revealed = false, revealed
	c.render(w, r, http.StatusOK, "change", &view{p: p, Change: cv})
}

// revealed reads what change made from its Secret, live.
func (c *Console) revealed(ctx context.Context, m *paygatev1.Merchant, change *paygatev1.MerchantChange) (*revealedView, error) {
	name := credentials.WebhookSecretName(m.Name)
	if change.Spec.Action == paygatev1.ChangeRotateCredentials {
		name = credentials.SecretName(m.Name, change.Spec.Environment)
	}
	s := &corev1.Secret{}
	if err := c.opts.APIReader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return &revealedView{Replaced: true}, nil
		}
		return nil, err
	}
	if s.Annotations[credentials.AnnotationChange] != string(change.UID) {
		return &revealedView{Replaced: true}, nil
	}
	if change.Spec.Action == paygatev1.ChangePrepareWebhookSecret {
		pending := string(s.Data[credentials.KeyPendingSigningSecret])
		if pending == "" {
			return &revealedView{Replaced: true}, nil
		}
		return &revealedView{SigningSecret: pending}, nil
	}
	set, ok := credentials.SetFromData(s.Data)
	if !ok {
		return nil, errors.New("the credentials Secret is incomplete")
	}
	return &revealedView{BusinessID: set.BusinessID, APIKey: set.APIKey, APISecret: set.APISecret}, nil
}
