// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
)

// rotateAnnotation is the Merchant annotation that asks for a new credential set in env.
func rotateAnnotation(env paygatev1.Environment) string {
	if env == paygatev1.EnvironmentProduction {
		return paygatev1.AnnotationRotateProductionCredentials
	}
	return paygatev1.AnnotationRotateSandboxCredentials
}

// endOverlapAnnotation is the Merchant annotation that ends env's rotation overlap now.
func endOverlapAnnotation(env paygatev1.Environment) string {
	if env == paygatev1.EnvironmentProduction {
		return paygatev1.AnnotationEndProductionOverlap
	}
	return paygatev1.AnnotationEndSandboxOverlap
}

// ensureCredentialSet makes the Secret of env's credential set exist, hold a complete set for the
// merchant's business ID, answer the latest rotation request, and keep the credentials a rotation
// replaced only for the rotation's overlap (docs/configuration.md, Rotating credentials). Nothing
// secret leaves it. The result asks for a pass when the overlap ends.
func (r *MerchantReconciler) ensureCredentialSet(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment) (paygatev1.CredentialSetStatus, ctrl.Result, error) {
	businessID := credentials.BusinessID(string(m.UID), env)
	status := paygatev1.CredentialSetStatus{BusinessID: businessID, SecretName: credentials.SecretName(m.Name, env)}
	rotation, endOverlap := m.Annotations[rotateAnnotation(env)], m.Annotations[endOverlapAnnotation(env)]

	secret, err := r.getOwnedSecret(ctx, m, status.SecretName)
	if err != nil {
		return status, ctrl.Result{}, err
	}
	if secret == nil {
		set, err := credentials.NewSet(businessID, env)
		if err != nil {
			return status, ctrl.Result{}, err
		}
		secret = r.newSecret(m, status.SecretName, env, credentials.KindAPI, rotation, set.Data())
		secret.Annotations[credentials.AnnotationOverlapEnded] = endOverlap
		if err := r.createSecret(ctx, secret); err != nil {
			return status, ctrl.Result{}, err
		}
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonCredentialsIssued, "IssueCredentials",
			"Issued %s credentials for business ID %s into Secret %s", env, businessID, secret.Name)
		return status, ctrl.Result{}, nil
	}

	now := r.now()
	current, complete := credentials.SetFromData(secret.Data)
	if complete && current.BusinessID == businessID && secret.Annotations[credentials.AnnotationRotation] == rotation {
		return r.keepOverlap(ctx, m, env, secret, current, status, now)
	}
	overlap, err := credentials.ParseOverlap(m.Annotations[paygatev1.AnnotationCredentialsOverlap])
	if err != nil {
		// Nothing rotates until the overlap reads: the old credentials keep working alone.
		return status, ctrl.Result{}, reconcile.TerminalError(&invalidAnnotationError{annotation: paygatev1.AnnotationCredentialsOverlap, err: err})
	}
	var set credentials.Set
	if complete && current.BusinessID == businessID {
		set, err = current.Rotated(env, overlap, now)
	} else {
		set, err = credentials.NewSet(businessID, env)
	}
	if err != nil {
		return status, ctrl.Result{}, err
	}
	if err := r.replaceSecretData(ctx, secret, map[string]string{credentials.AnnotationRotation: rotation, credentials.AnnotationOverlapEnded: endOverlap}, set.Data()); err != nil {
		return status, ctrl.Result{}, err
	}
	if set.Previous == nil {
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonCredentialsRotated, "RotateCredentials",
			"Rotated the %s API key and secret for business ID %s in Secret %s; the old ones stopped working", env, businessID, secret.Name)
		return status, ctrl.Result{}, nil
	}
	r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonCredentialsRotated, "RotateCredentials",
		"Rotated the %s API key and secret for business ID %s in Secret %s; the old ones work until %s",
		env, businessID, secret.Name, set.Previous.Expires.UTC().Format(time.RFC3339))
	status.PreviousKeyExpiresAt = &metav1.Time{Time: set.Previous.Expires}
	return status, ctrl.Result{RequeueAfter: set.Previous.Expires.Sub(now)}, nil
}

// keepOverlap keeps the credentials a rotation replaced until their overlap ends (at its expiry,
// or now when the merchant's end-overlap annotation has a value the Secret has not answered), and
// then removes them from the Secret.
func (r *MerchantReconciler) keepOverlap(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment, secret *corev1.Secret,
	set credentials.Set, status paygatev1.CredentialSetStatus, now time.Time) (paygatev1.CredentialSetStatus, ctrl.Result, error) {
	endOverlap := m.Annotations[endOverlapAnnotation(env)]
	endAsked := secret.Annotations[credentials.AnnotationOverlapEnded] != endOverlap
	if set.Previous == nil && !endAsked {
		return status, ctrl.Result{}, nil
	}
	if set.Previous != nil && now.Before(set.Previous.Expires) && !endAsked {
		status.PreviousKeyExpiresAt = &metav1.Time{Time: set.Previous.Expires}
		return status, ctrl.Result{RequeueAfter: set.Previous.Expires.Sub(now)}, nil
	}
	hadPrevious := set.Previous != nil
	set.Previous = nil
	if err := r.replaceSecretData(ctx, secret, map[string]string{credentials.AnnotationOverlapEnded: endOverlap}, set.Data()); err != nil {
		return status, ctrl.Result{}, err
	}
	if hadPrevious {
		how := "its overlap ended"
		if endAsked {
			how = "the overlap was ended early"
		}
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonCredentialsOverlapEnded, "EndCredentialsOverlap",
			"The %s API key and secret replaced by the last rotation stopped working: %s", env, how)
	}
	return status, ctrl.Result{}, nil
}

// existingCredentialSet reports env's credential set if its Secret exists, issuing nothing.
func (r *MerchantReconciler) existingCredentialSet(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment) (paygatev1.CredentialSetStatus, error) {
	name := credentials.SecretName(m.Name, env)
	secret, err := r.getOwnedSecret(ctx, m, name)
	if err != nil || secret == nil {
		return paygatev1.CredentialSetStatus{}, err
	}
	return paygatev1.CredentialSetStatus{BusinessID: credentials.BusinessID(string(m.UID), env), SecretName: name}, nil
}

// ensureWebhookSigningSecret makes the merchant's webhook signing Secret exist and answer the
// latest requests: rotate (a new secret signs at once), prepare (a pending secret that does not
// sign yet) and activate (the pending secret signs from now on). It returns the Secret's name and,
// when a secret is pending, since when.
func (r *MerchantReconciler) ensureWebhookSigningSecret(ctx context.Context, m *paygatev1.Merchant) (string, *metav1.Time, error) {
	name := credentials.WebhookSecretName(m.Name)
	rotation := m.Annotations[paygatev1.AnnotationRotateWebhookSecret]
	prepare, activate := m.Annotations[paygatev1.AnnotationPrepareWebhookSecret], m.Annotations[paygatev1.AnnotationActivateWebhookSecret]
	secret, err := r.getOwnedSecret(ctx, m, name)
	if err != nil {
		return name, nil, err
	}
	if secret == nil || len(secret.Data[credentials.KeySigningSecret]) == 0 || secret.Annotations[credentials.AnnotationRotation] != rotation {
		// Issued or rotated at once (a leaked secret): a pending one is dropped, and the requests
		// to prepare and activate standing now are taken as answered.
		return name, nil, r.issueWebhookSecret(ctx, m, secret, map[string]string{credentials.AnnotationRotation: rotation,
			credentials.AnnotationPrepared: prepare, credentials.AnnotationActivated: activate, credentials.AnnotationPendingSince: ""})
	}
	switch {
	case secret.Annotations[credentials.AnnotationPrepared] != prepare:
		since, err := r.prepareWebhookSecret(ctx, m, secret, prepare)
		return name, since, err
	case secret.Annotations[credentials.AnnotationActivated] != activate:
		return name, nil, r.activateWebhookSecret(ctx, m, secret, activate)
	}
	return name, pendingSince(secret), nil
}

// pendingSince is when the Secret's pending signing secret was prepared; nil when none is.
func pendingSince(secret *corev1.Secret) *metav1.Time {
	t, err := time.Parse(time.RFC3339, secret.Annotations[credentials.AnnotationPendingSince])
	if err != nil || len(secret.Data[credentials.KeyPendingSigningSecret]) == 0 {
		return nil
	}
	return &metav1.Time{Time: t}
}

// issueWebhookSecret creates the webhook signing Secret (secret nil) or replaces its secret at once.
func (r *MerchantReconciler) issueWebhookSecret(ctx context.Context, m *paygatev1.Merchant, secret *corev1.Secret, answered map[string]string) error {
	value, err := credentials.NewWebhookSigningSecret()
	if err != nil {
		return err
	}
	data := map[string][]byte{credentials.KeySigningSecret: []byte(value)}
	if secret == nil {
		secret = r.newSecret(m, credentials.WebhookSecretName(m.Name), "", credentials.KindWebhookSigning, "", data)
		maps.Copy(secret.Annotations, answered)
		if err := r.createSecret(ctx, secret); err != nil {
			return err
		}
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonWebhookSecretIssued, "IssueWebhookSecret",
			"Issued the webhook signing secret into Secret %s", secret.Name)
		return nil
	}
	if err := r.replaceSecretData(ctx, secret, answered, data); err != nil {
		return err
	}
	r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonCredentialsRotated, "RotateWebhookSecret",
		"Rotated the webhook signing secret in Secret %s: the new secret signs from now on", secret.Name)
	return nil
}

// prepareWebhookSecret issues a pending signing secret beside the one that signs (replacing an
// earlier pending one).
func (r *MerchantReconciler) prepareWebhookSecret(ctx context.Context, m *paygatev1.Merchant, secret *corev1.Secret, prepare string) (*metav1.Time, error) {
	data, since, err := credentials.WithPendingSigningSecret(secret.Data, r.now())
	if err != nil {
		return nil, err
	}
	answered := map[string]string{credentials.AnnotationPrepared: prepare, credentials.AnnotationPendingSince: since}
	if err := r.replaceSecretData(ctx, secret, answered, data); err != nil {
		return nil, err
	}
	r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonWebhookSecretPrepared, "PrepareWebhookSecret",
		"Prepared a pending webhook signing secret (%s in Secret %s): install it on the receiver beside the current one, then activate it with %s",
		credentials.KeyPendingSigningSecret, secret.Name, paygatev1.AnnotationActivateWebhookSecret)
	return pendingSince(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: answered}, Data: data}), nil
}

// activateWebhookSecret makes the pending signing secret the one that signs. Without a pending
// secret the request is answered and nothing changes (a Warning says so).
func (r *MerchantReconciler) activateWebhookSecret(ctx context.Context, m *paygatev1.Merchant, secret *corev1.Secret, activate string) error {
	data, activated := credentials.ActivatedSigningSecret(secret.Data)
	if err := r.replaceSecretData(ctx, secret, map[string]string{credentials.AnnotationActivated: activate, credentials.AnnotationPendingSince: ""}, data); err != nil {
		return err
	}
	if !activated {
		r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, ReasonNoPendingWebhookSecret, "ActivateWebhookSecret",
			"No pending webhook signing secret to activate: prepare one first with %s; nothing changed", paygatev1.AnnotationPrepareWebhookSecret)
		return nil
	}
	r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonWebhookSecretActivated, "ActivateWebhookSecret",
		"Activated the pending webhook signing secret in Secret %s: it signs from now on; keep the old one on the receiver a while for deliveries in flight", secret.Name)
	return nil
}

// getOwnedSecret returns the named Secret, nil when it does not exist, or an error when it exists
// but belongs to someone else (Paygate never overwrites a Secret it did not issue).
func (r *MerchantReconciler) getOwnedSecret(ctx context.Context, m *paygatev1.Merchant, name string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, secret)
	if apierrors.IsNotFound(err) {
		// The cache may not have our own write yet: ask the API server before issuing again.
		err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, secret)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	if !metav1.IsControlledBy(secret, m) {
		return nil, &secretNotOwnedError{name: name}
	}
	return secret, nil
}

func (r *MerchantReconciler) newSecret(m *paygatev1.Merchant, name string, env paygatev1.Environment, kind, rotation string, data map[string][]byte) *corev1.Secret {
	labels := map[string]string{paygatev1.LabelMerchant: m.Name, paygatev1.LabelCredential: kind}
	if env != "" {
		labels[paygatev1.LabelEnvironment] = string(env)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: m.Namespace, Labels: labels,
			Annotations: map[string]string{credentials.AnnotationRotation: rotation},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	// The owner reference makes Kubernetes delete the Secrets with the Merchant.
	_ = controllerutil.SetControllerReference(m, secret, r.Scheme())
	return secret
}

func (r *MerchantReconciler) createSecret(ctx context.Context, secret *corev1.Secret) error {
	if err := r.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating Secret %s: %w", secret.Name, err)
	}
	return nil
}

// replaceSecretData replaces a Secret's data and sets the annotations given (the requests it
// answers).
func (r *MerchantReconciler) replaceSecretData(ctx context.Context, secret *corev1.Secret, annotations map[string]string, data map[string][]byte) error {
	secret = secret.DeepCopy()
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	maps.Copy(secret.Annotations, annotations)
	secret.Data = data
	// Update (not patch) carries the resourceVersion we read: a concurrent change conflicts
	// instead of being overwritten.
	if err := r.Update(ctx, secret); err != nil {
		return fmt.Errorf("updating Secret %s: %w", secret.Name, err)
	}
	return nil
}
