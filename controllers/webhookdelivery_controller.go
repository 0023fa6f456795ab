// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/webhook"
)

// DefaultWebhookSchedule is the spec's retry schedule: immediately, then after 3, 6, 12 and 24
// minutes; 5 attempts in all.
var DefaultWebhookSchedule = []time.Duration{0, 3 * time.Minute, 6 * time.Minute, 12 * time.Minute, 24 * time.Minute}

// Webhook delivery event reasons.
const (
	ReasonWebhookDelivered = "WebhookDelivered"
	ReasonWebhookAbandoned = "WebhookAbandoned"
	ReasonWebhookNoTarget  = "WebhookNoEndpoint"
)

// WebhookDeliveryReconciler delivers each WebhookDelivery to its receiver, signed, on the retry
// schedule, and records every attempt.
type WebhookDeliveryReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Sandbox and Production send the webhooks of each environment; production's guard never
	// reaches private addresses, sandbox's may (for development) when configured.
	Sandbox, Production *webhook.Sender
	Clock               func() time.Time
	// Schedule is the delay before each attempt after the previous one failed (the first entry is
	// the delay of the first attempt); its length is the number of attempts.
	Schedule []time.Duration
}

// +kubebuilder:rbac:groups=paygate.dev,resources=webhookdeliveries,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=webhookdeliveries/status,verbs=get;update;patch

// Reconcile makes the delivery's next attempt when it is due.
func (r *WebhookDeliveryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	d := &paygatev1.WebhookDelivery{}
	if err := r.Get(ctx, req.NamespacedName, d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	base := d.DeepCopy()
	now := r.Clock()
	result, err := r.deliver(ctx, d, now)
	if !equality.Semantic.DeepEqual(base.Status, d.Status) {
		if perr := r.Status().Patch(ctx, d, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); perr != nil {
			return ctrl.Result{}, errors.Join(err, client.IgnoreNotFound(fmt.Errorf("patching webhook delivery status: %w", perr)))
		}
	}
	return result, err
}

func (r *WebhookDeliveryReconciler) deliver(ctx context.Context, d *paygatev1.WebhookDelivery, now time.Time) (ctrl.Result, error) {
	st := &d.Status
	if want := d.Annotations[paygatev1.AnnotationRedeliver]; want != "" && want != st.Redelivery && st.Phase == paygatev1.DeliveryAbandoned {
		// A new round for an abandoned event: same id, same payload, a fresh attempt budget.
		st.Phase, st.Attempts, st.Redelivery, st.NextAttemptAt = paygatev1.DeliveryPending, nil, want, ptrTime(now)
	}
	switch st.Phase {
	case paygatev1.DeliveryDelivered, paygatev1.DeliveryAbandoned, paygatev1.DeliveryNoEndpoint:
		return ctrl.Result{}, nil
	case "":
		if d.Spec.URL == "" {
			st.Phase = paygatev1.DeliveryNoEndpoint
			r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonWebhookNoTarget, "Deliver", "No webhook URL for %s: neither the payment nor the merchant names one", d.Spec.EventType)
			return ctrl.Result{}, nil
		}
		st.Phase = paygatev1.DeliveryPending
		st.NextAttemptAt = ptrTime(d.CreationTimestamp.Add(r.schedule()[0]))
	}
	if st.NextAttemptAt != nil && st.NextAttemptAt.After(now) {
		return ctrl.Result{RequeueAfter: st.NextAttemptAt.Sub(now)}, nil
	}

	secret, err := r.signingSecret(ctx, d)
	if err != nil {
		return ctrl.Result{}, err
	}
	sender := r.Sandbox
	if d.Spec.Environment == paygatev1.EnvironmentProduction {
		sender = r.Production
	}
	out := sender.Send(ctx, webhook.Delivery{
		URL: d.Spec.URL, EventID: d.Spec.EventID, EventType: d.Spec.EventType, Environment: string(d.Spec.Environment),
		Body: []byte(d.Spec.Payload), Secret: secret, Production: d.Spec.Environment == paygatev1.EnvironmentProduction,
	}, now)
	st.TotalAttempts++
	result := "failed"
	if out.Delivered {
		result = "delivered"
	}
	metrics.WebhookAttempts.WithLabelValues(string(d.Spec.Environment), result).Inc()
	st.Attempts = append(st.Attempts, paygatev1.DeliveryAttempt{
		Number: int32(len(st.Attempts) + 1), At: metav1.NewTime(now), StatusCode: int32(out.StatusCode),
		Error: out.Error, DurationMillis: out.Duration.Milliseconds(),
	})
	if len(st.Attempts) > 10 {
		st.Attempts = st.Attempts[len(st.Attempts)-10:]
	}
	switch {
	case out.Delivered:
		st.Phase, st.DeliveredAt, st.NextAttemptAt = paygatev1.DeliveryDelivered, ptrTime(now), nil
		r.Recorder.Eventf(d, nil, corev1.EventTypeNormal, ReasonWebhookDelivered, "Deliver", "Delivered %s %s (attempt %d, HTTP %d)", d.Spec.EventType, d.Spec.EventID, len(st.Attempts), out.StatusCode)
		return ctrl.Result{}, nil
	case len(st.Attempts) >= len(r.schedule()):
		st.Phase, st.NextAttemptAt = paygatev1.DeliveryAbandoned, nil
		metrics.WebhooksAbandoned.WithLabelValues(string(d.Spec.Environment)).Inc()
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonWebhookAbandoned, "Deliver", "Abandoned %s %s after %d attempts; last: %s", d.Spec.EventType, d.Spec.EventID, len(st.Attempts), describeOutcome(out))
		return ctrl.Result{}, nil
	default:
		delay := r.schedule()[len(st.Attempts)]
		st.NextAttemptAt = ptrTime(now.Add(delay))
		return ctrl.Result{RequeueAfter: delay}, nil
	}
}

func describeOutcome(out webhook.Outcome) string {
	if out.Error != "" {
		return out.Error
	}
	return fmt.Sprintf("HTTP %d", out.StatusCode)
}

func (r *WebhookDeliveryReconciler) signingSecret(ctx context.Context, d *paygatev1.WebhookDelivery) ([]byte, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: d.Namespace, Name: credentials.WebhookSecretName(d.Spec.MerchantRef.Name)}
	if err := r.Get(ctx, key, secret); err != nil {
		return nil, fmt.Errorf("reading the webhook signing secret of merchant %s: %w", d.Spec.MerchantRef.Name, err)
	}
	value := secret.Data[credentials.KeySigningSecret]
	if len(value) == 0 {
		return nil, fmt.Errorf("the webhook signing secret of merchant %s is empty", d.Spec.MerchantRef.Name)
	}
	return value, nil
}

func (r *WebhookDeliveryReconciler) schedule() []time.Duration {
	if len(r.Schedule) > 0 {
		return r.Schedule
	}
	return DefaultWebhookSchedule
}

// SetupWithManager watches WebhookDeliveries; concurrency bounds how many receivers are called at
// once, so a slow receiver holds one worker for at most its timeout.
func (r *WebhookDeliveryReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.WebhookDelivery{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WithOptions(controllerOptions(concurrency)).
		Named("webhookdelivery").
		Complete(quietConflicts(r))
}
