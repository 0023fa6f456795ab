// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	webhookevents "github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/pkg/paygate"
)

// MerchantChange answer reasons (docs/configuration.md, MerchantChange).
const (
	ReasonChangeApplied          = "Applied"
	ReasonChangeMerchantMissing  = "MerchantNotFound"
	ReasonCredentialsNotIssued   = "CredentialsNotIssued"
	ReasonManagedElsewhere       = "ManagedElsewhere"
	ReasonInvalidWebhookURL      = "InvalidWebhookURL"
	ReasonNoWebhookURL           = "NoWebhookURL"
	ReasonNoOverlap              = "NoOverlap"
	ReasonWebhookURLChanged      = "WebhookURLChanged"
	merchantChangeControllerName = "merchant-change-controller"
)

// ChangeRetention is how long an answered MerchantChange is kept before the controller deletes
// it: long enough for the console to show its answer (and a new key once), short enough that
// answered requests do not pile up.
const ChangeRetention = time.Hour

// MerchantChangeReconciler answers MerchantChanges: it makes the one change each asks for, once,
// records the answer in its status, and deletes it ChangeRetention later. Changes to Secrets are
// stamped with the change's UID (credentials.AnnotationChange), read back live: a pass that
// crashed between the change and the answer finds it made and answers Applied without making it
// again.
type MerchantChangeReconciler struct {
	client.Client
	// APIReader reads Secrets live: the cache may not have the change's own write yet.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
}

// answer is a MerchantChange's answer before it is written.
type answer struct {
	phase           paygatev1.MerchantChangePhase
	reason, message string
	previousExpires *metav1.Time
	eventID         string
}

func applied(msg string, args ...any) answer {
	return answer{phase: paygatev1.ChangeApplied, reason: ReasonChangeApplied, message: fmt.Sprintf(msg, args...)}
}

func refused(reason, msg string, args ...any) answer {
	return answer{phase: paygatev1.ChangeRefused, reason: reason, message: fmt.Sprintf(msg, args...)}
}

// +kubebuilder:rbac:groups=paygate.dev,resources=merchantchanges,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=paygate.dev,resources=merchantchanges/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=merchants,verbs=patch
// +kubebuilder:rbac:groups=paygate.dev,resources=webhookdeliveries,verbs=create

// Reconcile answers one MerchantChange, or deletes it once its retention is over.
func (r *MerchantChangeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	change := &paygatev1.MerchantChange{}
	if err := r.Get(ctx, req.NamespacedName, change); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if change.IsAnswered() {
		return r.expire(ctx, change)
	}
	a, err := r.answer(ctx, change)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := metav1.NewTime(r.Clock.Now().Truncate(time.Second))
	before := change.DeepCopy()
	change.Status = paygatev1.MerchantChangeStatus{Phase: a.phase, Reason: a.reason, Message: a.message, AnsweredAt: &now,
		PreviousKeyExpiresAt: a.previousExpires, EventID: a.eventID}
	if err := r.Status().Patch(ctx, change, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("answering MerchantChange %s: %w", change.Name, err))
	}
	ctrl.LoggerFrom(ctx).Info("Answered a merchant change", "merchant", change.Spec.MerchantRef.Name,
		"action", change.Spec.Action, "phase", a.phase, "reason", a.reason)
	return ctrl.Result{RequeueAfter: ChangeRetention}, nil
}

// expire deletes an answered change once ChangeRetention has passed since its answer.
func (r *MerchantChangeReconciler) expire(ctx context.Context, change *paygatev1.MerchantChange) (ctrl.Result, error) {
	answered := change.CreationTimestamp.Time
	if change.Status.AnsweredAt != nil {
		answered = change.Status.AnsweredAt.Time
	}
	if left := answered.Add(ChangeRetention).Sub(r.Clock.Now()); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	err := r.Delete(ctx, change, client.Preconditions{UID: &change.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return ctrl.Result{}, fmt.Errorf("deleting answered MerchantChange %s: %w", change.Name, err)
	}
	return ctrl.Result{}, nil
}

// answer makes the change asked for and says how it went; an error means nothing is known yet
// (the next pass tries again).
func (r *MerchantChangeReconciler) answer(ctx context.Context, change *paygatev1.MerchantChange) (answer, error) {
	m := &paygatev1.Merchant{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: change.Namespace, Name: change.Spec.MerchantRef.Name}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return refused(ReasonChangeMerchantMissing, "Merchant %s does not exist in namespace %s.", change.Spec.MerchantRef.Name, change.Namespace), nil
		}
		return answer{}, fmt.Errorf("reading merchant %s: %w", change.Spec.MerchantRef.Name, err)
	}
	if !m.DeletionTimestamp.IsZero() {
		return refused(ReasonChangeMerchantMissing, "Merchant %s is being deleted.", m.Name), nil
	}
	env := change.Spec.Environment
	switch change.Spec.Action {
	case paygatev1.ChangeRotateCredentials:
		return r.rotateCredentials(ctx, m, change, env)
	case paygatev1.ChangeEndCredentialsOverlap:
		return r.endOverlap(ctx, m, change, env)
	case paygatev1.ChangePrepareWebhookSecret:
		return r.prepareWebhookSecret(ctx, m, change)
	case paygatev1.ChangeActivateWebhookSecret:
		return r.activateWebhookSecret(ctx, m, change)
	case paygatev1.ChangeSetWebhookURL:
		return r.setWebhookURL(ctx, m, change, env)
	case paygatev1.ChangeSendTestEvent:
		return r.sendTestEvent(ctx, m, change, env)
	}
	return refused("UnknownAction", "The action %q is not one Paygate knows.", change.Spec.Action), nil
}

// liveSecret reads one of m's Secrets past the cache; nil when it does not exist yet.
func (r *MerchantChangeReconciler) liveSecret(ctx context.Context, m *paygatev1.Merchant, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	if !metav1.IsControlledBy(s, m) {
		return nil, &secretNotOwnedError{name: name}
	}
	return s, nil
}

// writeSecret replaces s's data, stamped with the change's UID, under s's resourceVersion.
func (r *MerchantChangeReconciler) writeSecret(ctx context.Context, s *corev1.Secret, change *paygatev1.MerchantChange, data map[string][]byte, annotations map[string]string) error {
	s = s.DeepCopy()
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	maps.Copy(s.Annotations, annotations)
	s.Annotations[credentials.AnnotationChange] = string(change.UID)
	s.Data = data
	if err := r.Update(ctx, s); err != nil {
		return fmt.Errorf("updating Secret %s: %w", s.Name, err)
	}
	return nil
}

// made reports whether the change was already made to s (by an earlier pass whose answer was not
// written).
func made(s *corev1.Secret, change *paygatev1.MerchantChange) bool {
	return s.Annotations[credentials.AnnotationChange] == string(change.UID)
}

// rotateCredentials issues a new API key and secret for env; the replaced ones keep working for
// the change's overlap. Production needs an approved business.
func (r *MerchantChangeReconciler) rotateCredentials(ctx context.Context, m *paygatev1.Merchant, change *paygatev1.MerchantChange, env paygatev1.Environment) (answer, error) {
	if env == paygatev1.EnvironmentProduction && businessStatus(m) != paygatev1.BusinessApproved {
		return refused(ReasonBusinessNotApproved, "Production credentials are for approved businesses; %s is %s.", m.Name, businessStatus(m)), nil
	}
	s, err := r.liveSecret(ctx, m, credentials.SecretName(m.Name, env))
	if err != nil {
		return answer{}, err
	}
	current, complete := credentials.Set{}, false
	if s != nil {
		current, complete = credentials.SetFromData(s.Data)
	}
	businessID := credentials.BusinessID(string(m.UID), env)
	if !complete || current.BusinessID != businessID {
		return refused(ReasonCredentialsNotIssued, "The %s credentials are not issued yet; try again in a moment.", env), nil
	}
	if made(s, change) {
		return rotatedAnswer(env, current), nil
	}
	overlap := credentials.DefaultOverlap
	if change.Spec.Overlap != nil {
		overlap = change.Spec.Overlap.Duration
	}
	set, err := current.Rotated(env, overlap, r.Clock.Now())
	if err != nil {
		return answer{}, err
	}
	if err := r.writeSecret(ctx, s, change, set.Data(), nil); err != nil {
		return answer{}, err
	}
	how := "the old ones stopped working"
	if set.Previous != nil {
		how = "the old ones work until " + set.Previous.Expires.UTC().Format(time.RFC3339)
	}
	r.Recorder.Eventf(m, change, corev1.EventTypeNormal, ReasonCredentialsRotated, "RotateCredentials",
		"Rotated the %s API key and secret in Secret %s for %s (MerchantChange %s); %s", env, s.Name, requester(change), change.Name, how)
	return rotatedAnswer(env, set), nil
}

func rotatedAnswer(env paygatev1.Environment, set credentials.Set) answer {
	if set.Previous == nil {
		return applied("New %s credentials are issued; the old ones stopped working.", env)
	}
	a := applied("New %s credentials are issued; the old ones work until %s.", env, set.Previous.Expires.UTC().Format(time.RFC3339))
	a.previousExpires = &metav1.Time{Time: set.Previous.Expires}
	return a
}

// endOverlap makes the credentials env's last rotation replaced stop working now.
func (r *MerchantChangeReconciler) endOverlap(ctx context.Context, m *paygatev1.Merchant, change *paygatev1.MerchantChange, env paygatev1.Environment) (answer, error) {
	s, err := r.liveSecret(ctx, m, credentials.SecretName(m.Name, env))
	if err != nil {
		return answer{}, err
	}
	if s != nil && made(s, change) {
		return applied("The %s credentials the last rotation replaced stopped working.", env), nil
	}
	set, complete := credentials.Set{}, false
	if s != nil {
		set, complete = credentials.SetFromData(s.Data)
	}
	if !complete || set.Previous == nil || !r.Clock.Now().Before(set.Previous.Expires) {
		return refused(ReasonNoOverlap, "No replaced %s credentials are working: there is no overlap to end.", env), nil
	}
	set.Previous = nil
	if err := r.writeSecret(ctx, s, change, set.Data(), nil); err != nil {
		return answer{}, err
	}
	r.Recorder.Eventf(m, change, corev1.EventTypeNormal, ReasonCredentialsOverlapEnded, "EndCredentialsOverlap",
		"The %s API key and secret replaced by the last rotation stopped working: %s ended the overlap early (MerchantChange %s)", env, requester(change), change.Name)
	return applied("The %s credentials the last rotation replaced stopped working.", env), nil
}

// prepareWebhookSecret issues a pending webhook signing secret beside the one that signs.
func (r *MerchantChangeReconciler) prepareWebhookSecret(ctx context.Context, m *paygatev1.Merchant, change *paygatev1.MerchantChange) (answer, error) {
	s, err := r.liveSecret(ctx, m, credentials.WebhookSecretName(m.Name))
	if err != nil {
		return answer{}, err
	}
	if s == nil || len(s.Data[credentials.KeySigningSecret]) == 0 {
		return refused(ReasonCredentialsNotIssued, "The webhook signing secret is not issued yet; try again in a moment."), nil
	}
	if made(s, change) {
		return applied("A pending webhook signing secret is ready: install it on the receiver beside the current one, then activate it."), nil
	}
	data, since, err := credentials.WithPendingSigningSecret(s.Data, r.Clock.Now())
	if err != nil {
		return answer{}, err
	}
	if err := r.writeSecret(ctx, s, change, data, map[string]string{credentials.AnnotationPendingSince: since}); err != nil {
		return answer{}, err
	}
	r.Recorder.Eventf(m, change, corev1.EventTypeNormal, ReasonWebhookSecretPrepared, "PrepareWebhookSecret",
		"Prepared a pending webhook signing secret in Secret %s for %s (MerchantChange %s); it signs once activated", s.Name, requester(change), change.Name)
	return applied("A pending webhook signing secret is ready: install it on the receiver beside the current one, then activate it."), nil
}

// activateWebhookSecret makes the pending signing secret the one that signs.
func (r *MerchantChangeReconciler) activateWebhookSecret(ctx context.Context, m *paygatev1.Merchant, change *paygatev1.MerchantChange) (answer, error) {
	s, err := r.liveSecret(ctx, m, credentials.WebhookSecretName(m.Name))
	if err != nil {
		return answer{}, err
	}
	if s != nil && made(s, change) {
		return applied("The pending webhook signing secret signs from now on."), nil
	}
	var data map[string][]byte
	activated := false
	if s != nil {
		data, activated = credentials.ActivatedSigningSecret(s.Data)
	}
	if !activated {
		return refused(ReasonNoPendingWebhookSecret, "There is no pending webhook signing secret to activate: prepare one first."), nil
	}
	if err := r.writeSecret(ctx, s, change, data, map[string]string{credentials.AnnotationPendingSince: ""}); err != nil {
		return answer{}, err
	}
	r.Recorder.Eventf(m, change, corev1.EventTypeNormal, ReasonWebhookSecretActivated, "ActivateWebhookSecret",
		"Activated the pending webhook signing secret in Secret %s for %s (MerchantChange %s): it signs from now on", s.Name, requester(change), change.Name)
	return applied("The pending webhook signing secret signs from now on."), nil
}

// setWebhookURL sets env's default webhook URL on the Merchant, under the rules of a payment's
// webhook_url. A merchant whose configuration is managed elsewhere is refused: the next sync
// would undo it.
func (r *MerchantChangeReconciler) setWebhookURL(ctx context.Context, m *paygatev1.Merchant, change *paygatev1.MerchantChange, env paygatev1.Environment) (answer, error) {
	if who := m.Annotations[paygatev1.AnnotationManagedBy]; who != "" {
		return refused(ReasonManagedElsewhere, "The merchant's configuration is managed by %s: change the webhook URL there.", who), nil
	}
	u := change.Spec.WebhookURL
	if u != "" {
		if msg := paygatev1.URLProblem("webhook URL", u, env, m.Spec.AllowedWebhookDomains); msg != "" {
			return refused(ReasonInvalidWebhookURL, "%s", msg), nil
		}
	}
	if m.Spec.WebhookURLs.For(env) != u {
		before := m.DeepCopy()
		if env == paygatev1.EnvironmentProduction {
			m.Spec.WebhookURLs.Production = u
		} else {
			m.Spec.WebhookURLs.Sandbox = u
		}
		// Under the Merchant's resourceVersion: an edit made meanwhile conflicts and the next pass
		// decides again on the merchant as it is then.
		if err := r.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsInvalid(err) {
				return refused(ReasonInvalidWebhookURL, "The Merchant refused the URL: %s", apiReason(err)), nil
			}
			return answer{}, fmt.Errorf("setting the %s webhook URL of merchant %s: %w", env, m.Name, err)
		}
		r.Recorder.Eventf(m, change, corev1.EventTypeNormal, ReasonWebhookURLChanged, "SetWebhookURL",
			"%s set the %s default webhook URL (MerchantChange %s)", requester(change), env, change.Name)
	}
	if u == "" {
		return applied("The %s default webhook URL is removed.", env), nil
	}
	return applied("The %s default webhook URL is set.", env), nil
}

// apiReason is an Invalid error's causes, without the object dump.
func apiReason(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil && len(status.Status().Details.Causes) > 0 {
		return status.Status().Details.Causes[0].Message
	}
	return "invalid"
}

// sendTestEvent sends a webhook.test event to env's default webhook URL, as a webhook delivery of
// its own (signed, retried and listed like every event). Its name derives from the change: a
// second pass finds it and sends nothing more.
func (r *MerchantChangeReconciler) sendTestEvent(ctx context.Context, m *paygatev1.Merchant, change *paygatev1.MerchantChange, env paygatev1.Environment) (answer, error) {
	target := m.Spec.WebhookURLs.For(env)
	if target == "" {
		return refused(ReasonNoWebhookURL, "There is no %s default webhook URL to send a test event to: set one first.", env), nil
	}
	src := webhookevents.Source{Kind: "MerchantChange", Object: change, Merchant: m.Name, Env: env, TargetURL: target,
		Format: m.Spec.Format(), SigningKey: m.Spec.LegacyIPNSigningKey}
	data := paygate.TestEventData{Environment: string(env), Message: "A test event: your receiver is reachable and verifies Paygate's signature."}
	d, err := webhookevents.NewDelivery(src, webhookevents.WebhookTest, data, r.Clock.Now())
	if err != nil {
		return answer{}, err
	}
	if err := r.Create(ctx, d); err != nil && !apierrors.IsAlreadyExists(err) {
		return answer{}, fmt.Errorf("creating the test event of MerchantChange %s: %w", change.Name, err)
	}
	a := applied("A webhook.test event is on its way to the %s default webhook URL.", env)
	a.eventID = d.Spec.EventID
	return a, nil
}

func requester(change *paygatev1.MerchantChange) string {
	if change.Spec.RequestedBy == "" {
		return "someone"
	}
	return change.Spec.RequestedBy
}

// SetupWithManager watches MerchantChanges.
func (r *MerchantChangeReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.MerchantChange{}).
		Named("merchantchange").
		Complete(quietConflicts(r))
}
