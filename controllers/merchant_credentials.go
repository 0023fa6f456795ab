// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

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

// ensureCredentialSet makes the Secret of env's credential set exist, hold a complete set for the
// merchant's business ID, and answer the latest rotation request. Nothing secret leaves it.
func (r *MerchantReconciler) ensureCredentialSet(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment) (paygatev1.CredentialSetStatus, error) {
	businessID := credentials.BusinessID(string(m.UID), env)
	status := paygatev1.CredentialSetStatus{BusinessID: businessID, SecretName: credentials.SecretName(m.Name, env)}
	rotation := m.Annotations[rotateAnnotation(env)]

	secret, err := r.getOwnedSecret(ctx, m, status.SecretName)
	if err != nil {
		return status, err
	}
	if secret == nil {
		set, err := credentials.NewSet(businessID, env)
		if err != nil {
			return status, err
		}
		secret = r.newSecret(m, status.SecretName, env, credentials.KindAPI, rotation, set.Data())
		if err := r.createSecret(ctx, secret); err != nil {
			return status, err
		}
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonCredentialsIssued, "IssueCredentials",
			"Issued %s credentials for business ID %s into Secret %s", env, businessID, secret.Name)
		return status, nil
	}

	current, complete := credentials.SetFromData(secret.Data)
	if complete && current.BusinessID == businessID && secret.Annotations[credentials.AnnotationRotation] == rotation {
		return status, nil
	}
	set, err := credentials.NewSet(businessID, env)
	if err != nil {
		return status, err
	}
	if err := r.replaceSecretData(ctx, secret, rotation, set.Data()); err != nil {
		return status, err
	}
	r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonCredentialsRotated, "RotateCredentials",
		"Rotated the %s API key and secret for business ID %s in Secret %s", env, businessID, secret.Name)
	return status, nil
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
// latest rotation request.
func (r *MerchantReconciler) ensureWebhookSigningSecret(ctx context.Context, m *paygatev1.Merchant) (string, error) {
	name := credentials.WebhookSecretName(m.Name)
	rotation := m.Annotations[paygatev1.AnnotationRotateWebhookSecret]
	secret, err := r.getOwnedSecret(ctx, m, name)
	if err != nil {
		return name, err
	}
	if secret != nil && len(secret.Data[credentials.KeySigningSecret]) > 0 && secret.Annotations[credentials.AnnotationRotation] == rotation {
		return name, nil
	}
	value, err := credentials.NewWebhookSigningSecret()
	if err != nil {
		return name, err
	}
	data := map[string][]byte{credentials.KeySigningSecret: []byte(value)}
	if secret == nil {
		if err := r.createSecret(ctx, r.newSecret(m, name, "", credentials.KindWebhookSigning, rotation, data)); err != nil {
			return name, err
		}
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonWebhookSecretIssued, "IssueWebhookSecret",
			"Issued the webhook signing secret into Secret %s", name)
		return name, nil
	}
	if err := r.replaceSecretData(ctx, secret, rotation, data); err != nil {
		return name, err
	}
	r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonCredentialsRotated, "RotateWebhookSecret",
		"Rotated the webhook signing secret in Secret %s", name)
	return name, nil
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

func (r *MerchantReconciler) replaceSecretData(ctx context.Context, secret *corev1.Secret, rotation string, data map[string][]byte) error {
	secret = secret.DeepCopy()
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Annotations[credentials.AnnotationRotation] = rotation
	secret.Data = data
	// Update (not patch) carries the resourceVersion we read: a concurrent change conflicts
	// instead of being overwritten.
	if err := r.Update(ctx, secret); err != nil {
		return fmt.Errorf("updating Secret %s: %w", secret.Name, err)
	}
	return nil
}
