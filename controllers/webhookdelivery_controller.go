// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/webhook"
)

// DefaultWebhookSchedule is the documented retry schedule (docs/webhooks.md): immediately, then after 3, 6, 12 and 24
// minutes; 5 attempts in all.
var DefaultWebhookSchedule = []time.Duration{0, 3 * time.Minute, 6 * time.Minute, 12 * time.Minute, 24 * time.Minute}

// Webhook delivery condition and event reasons (docs/webhooks.md, Conditions). A pass that
// failed sets Ready's reason from failureReason, or SigningSecretMissing.
const (
	ReasonWebhookDelivered     = "WebhookDelivered"
	ReasonWebhookAbandoned     = "WebhookAbandoned"
	ReasonWebhookNoTarget      = "WebhookNoEndpoint"
	ReasonFirstAttemptPending  = "FirstAttemptPending"
	ReasonRetryScheduled       = "RetryScheduled"
	ReasonSigningSecretMissing = "SigningSecretMissing"
)

// errNoSigningSecret: the merchant's webhook signing Secret does not exist or is empty (the
// merchant controller issues it; nothing is sent unsigned).
var errNoSigningSecret = errors.New("no webhook signing secret")

// WebhookDeliveryReconciler delivers each WebhookDelivery to its receiver, signed, on the retry
// schedule, and records every attempt.
type WebhookDeliveryReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Sandbox and Production send the webhooks of each environment; production's guard never
	// reaches private addresses, sandbox's may (for development) when configured.
	Sandbox, Production *webhook.Sender
	Clock               clock.PassiveClock
	// Schedule is the delay before each attempt after the previous one failed (the first entry is
	// the delay of the first attempt); its length is the number of attempts.
	Schedule []time.Duration

	first *WebhookFirstAttempts
}

// FirstAttempts is where the controllers that see occurrences hand their new events over for a
// first attempt before the delivery is created (WebhookFirstAttempts). SetupWithManager starts
// its workers.
func (r *WebhookDeliveryReconciler) FirstAttempts() *WebhookFirstAttempts {
	if r.first == nil {
		r.first = newWebhookFirstAttempts(r)
	}
	return r.first
}

// +kubebuilder:rbac:groups=paygate.dev,resources=webhookdeliveries,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=paygate.dev,resources=webhookdeliveries/status,verbs=get;update;patch

// Reconcile makes the delivery's next attempt when it is due.
func (r *WebhookDeliveryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	d := &paygatev1.WebhookDelivery{}
	if err := r.Get(ctx, req.NamespacedName, d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if d.Status.Phase == "" && d.Spec.FirstAttempt.Delivered() && d.Annotations[paygatev1.AnnotationRedeliver] == "" {
		// Its create recorded its first attempt, which a receiver accepted (WebhookFirstAttempts):
		// the event is delivered and nothing is written unless it is redelivered (EffectiveStatus
		// reads the spec).
		return ctrl.Result{}, nil
	}
	patch := newStatusPatch(r.Client, d, func(d *paygatev1.WebhookDelivery) any { return &d.Status })
	defer func() {
		summarizeDelivery(d, retErr)
		if err := patch.Patch(ctx, d); err != nil {
			retErr = errors.Join(retErr, client.IgnoreNotFound(fmt.Errorf("patching webhook delivery status: %w", err)))
		}
	}()
	return r.deliver(ctx, d, patch, r.Clock.Now())
}

// summarizeDelivery sets the delivery's Ready condition and observedGeneration; reconcileErr is
// the pass's error.
func summarizeDelivery(d *paygatev1.WebhookDelivery, reconcileErr error) {
	st := &d.Status
	status, reason, msg := metav1.ConditionFalse, ReasonFirstAttemptPending, "Waiting for the first attempt"
	switch {
	case st.Phase == paygatev1.DeliveryDelivered:
		status, reason, msg = metav1.ConditionTrue, ReasonWebhookDelivered, "A receiver accepted the event"
	case st.Phase == paygatev1.DeliveryAbandoned:
		reason, msg = ReasonWebhookAbandoned, "Every attempt failed; annotate paygate.dev/redeliver to try again"
	case st.Phase == paygatev1.DeliveryNoEndpoint:
		reason, msg = ReasonWebhookNoTarget, "Neither the payment nor the merchant names a webhook URL"
	case len(st.Attempts) > 0:
		reason, msg = ReasonRetryScheduled, "The last attempt failed; the next one is scheduled"
	}
	if reconcileErr != nil && status != metav1.ConditionTrue {
		reason, msg = failureReason(reconcileErr)
		if errors.Is(reconcileErr, errNoSigningSecret) {
			reason, msg = ReasonSigningSecretMissing, "The merchant's webhook signing secret is missing or empty; retrying"
		}
	}
	setReady(&st.Conditions, d.Generation, status, reason, msg)
	if reconcileErr == nil {
		st.ObservedGeneration = d.Generation
	}
}

func (r *WebhookDeliveryReconciler) deliver(ctx context.Context, d *paygatev1.WebhookDelivery, patch *statusPatch[*paygatev1.WebhookDelivery], now time.Time) (ctrl.Result, error) {
	st := &d.Status
	want := d.Annotations[paygatev1.AnnotationRedeliver]
	if want != "" && st.Phase == "" && d.Spec.FirstAttempt.Delivered() {
		*st = d.EffectiveStatus() // delivered at its first attempt: status takes that attempt over
	}
	if want != "" && want != st.Redelivery && (st.Phase == paygatev1.DeliveryAbandoned || st.Phase == paygatev1.DeliveryDelivered) {
		// A new round for an abandoned or delivered event (the merchant's receiver lost it: the
		// events API's redeliver): same id, same payload, a fresh attempt budget.
		st.Phase, st.Attempts, st.Redelivery, st.NextAttemptAt = paygatev1.DeliveryPending, nil, want, metaTime(now)
	}
	switch st.Phase {
	case paygatev1.DeliveryDelivered, paygatev1.DeliveryAbandoned, paygatev1.DeliveryNoEndpoint:
		return ctrl.Result{}, nil
	case "":
		if d.Spec.URL == "" {
			st.Phase = paygatev1.DeliveryNoEndpoint
			patch.OnWrite(func() {
				r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonWebhookNoTarget, "Deliver", "No webhook URL for %s: neither the payment nor the merchant names one", d.Spec.EventType)
			})
			return ctrl.Result{}, nil
		}
		st.Phase = paygatev1.DeliveryPending
		st.NextAttemptAt = metaTime(d.CreationTimestamp.Add(r.schedule()[0]))
		if a := d.Spec.FirstAttempt; a != nil {
			// The first attempt was made before the create (WebhookFirstAttempts) and failed:
			// status takes it over, and the schedule goes on from it.
			st.Attempts, st.TotalAttempts = []paygatev1.DeliveryAttempt{a.Attempt()}, 1
			if r.abandonAfterLast(d, patch, describeAttempt(a.StatusCode, a.Error)) {
				return ctrl.Result{}, nil
			}
			st.NextAttemptAt = metaTime(a.At.Add(r.schedule()[1]))
		}
	}
	if st.NextAttemptAt != nil && st.NextAttemptAt.After(now) {
		return ctrl.Result{RequeueAfter: st.NextAttemptAt.Sub(now)}, nil
	}

	secret, err := r.signingSecret(ctx, d)
	if err != nil {
		return ctrl.Result{}, err
	}
	legacySecret, err := r.legacySecret(ctx, d, secret)
	if err != nil {
		return ctrl.Result{}, err
	}
	out := r.send(ctx, d, secret, legacySecret, now)
	st.TotalAttempts++
	st.Attempts = append(st.Attempts, paygatev1.DeliveryAttempt{
		Number: int32(len(st.Attempts) + 1), At: metav1.NewTime(now), StatusCode: int32(out.StatusCode),
		Error: out.Error, DurationMillis: out.Duration.Milliseconds(),
	})
	if len(st.Attempts) > 10 {
		st.Attempts = st.Attempts[len(st.Attempts)-10:]
	}
	switch {
	case out.Delivered:
		// Routine: the delivery's status records it (Ready WebhookDelivered, its attempts), and no
		// Kubernetes Event is written for it (docs/webhooks.md, Events).
		st.Phase, st.DeliveredAt, st.NextAttemptAt = paygatev1.DeliveryDelivered, metaTime(now), nil
		return ctrl.Result{}, nil
	case r.abandonAfterLast(d, patch, describeAttempt(int32(out.StatusCode), out.Error)):
		return ctrl.Result{}, nil
	default:
		delay := r.schedule()[len(st.Attempts)]
		st.NextAttemptAt = metaTime(now.Add(delay))
		return ctrl.Result{RequeueAfter: delay}, nil
	}
}

// abandonAfterLast abandons the delivery when its last attempt failed and the schedule has no
// attempt left: phase Abandoned, and once the write holding it sticks, a Warning event and the
// counter. last describes that attempt.
func (r *WebhookDeliveryReconciler) abandonAfterLast(d *paygatev1.WebhookDelivery, patch *statusPatch[*paygatev1.WebhookDelivery], last string) bool {
	st := &d.Status
	if len(st.Attempts) < len(r.schedule()) {
		return false
	}
	st.Phase, st.NextAttemptAt = paygatev1.DeliveryAbandoned, nil
	msg := fmt.Sprintf("Abandoned %s %s after %d attempts; last: %s", d.Spec.EventType, d.Spec.EventID, len(st.Attempts), last)
	patch.OnWrite(func() {
		metrics.WebhooksAbandoned.WithLabelValues(string(d.Spec.Environment)).Inc()
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, ReasonWebhookAbandoned, "Deliver", "%s", msg)
	})
	return true
}

// send makes one attempt of d (signed with secret, and legacySecret for a LegacyIPN delivery) and
// counts it.
func (r *WebhookDeliveryReconciler) send(ctx context.Context, d *paygatev1.WebhookDelivery, secret, legacySecret []byte, now time.Time) webhook.Outcome {
	sender := r.Sandbox
	if d.Spec.Environment == paygatev1.EnvironmentProduction {
		sender = r.Production
	}
	out := sender.Send(ctx, webhook.Delivery{
		URL: d.Spec.URL, EventID: d.Spec.EventID, EventType: d.Spec.EventType, Environment: string(d.Spec.Environment),
		Body: []byte(d.Spec.Payload), Secret: secret, LegacySecret: legacySecret,
		Production: d.Spec.Environment == paygatev1.EnvironmentProduction,
	}, now)
	result := "failed"
	if out.Delivered {
		result = "delivered"
	}
	metrics.WebhookAttempts.WithLabelValues(string(d.Spec.Environment), result).Inc()
	return out
}

func describeAttempt(statusCode int32, err string) string {
	if err != "" {
		return err
	}
	return fmt.Sprintf("HTTP %d", statusCode)
}

func (r *WebhookDeliveryReconciler) signingSecret(ctx context.Context, d *paygatev1.WebhookDelivery) ([]byte, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: d.Namespace, Name: credentials.WebhookSecretName(d.Spec.MerchantRef.Name)}
	if err := r.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			err = errNoSigningSecret
		}
		return nil, fmt.Errorf("reading the webhook signing secret of merchant %s: %w", d.Spec.MerchantRef.Name, err)
	}
	value := secret.Data[credentials.KeySigningSecret]
	if len(value) == 0 {
		return nil, fmt.Errorf("the webhook signing secret of merchant %s is empty: %w", d.Spec.MerchantRef.Name, errNoSigningSecret)
	}
	return value, nil
}

// legacySecret is the key of a LegacyIPN delivery's X-Signature (nil for a standard delivery):
// the webhook signing secret, or the API secret of the delivery's environment.
func (r *WebhookDeliveryReconciler) legacySecret(ctx context.Context, d *paygatev1.WebhookDelivery, webhookSecret []byte) ([]byte, error) {
	if d.Spec.Format != paygatev1.WebhookFormatLegacyIPN {
		return nil, nil
	}
	if d.Spec.LegacySigningKey != paygatev1.SigningKeyAPISecret {
		return webhookSecret, nil
	}
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: d.Namespace, Name: credentials.SecretName(d.Spec.MerchantRef.Name, d.Spec.Environment)}
	if err := r.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			err = errNoSigningSecret
		}
		return nil, fmt.Errorf("reading the %s API secret of merchant %s: %w", d.Spec.Environment, d.Spec.MerchantRef.Name, err)
	}
	set, ok := credentials.SetFromData(secret.Data)
	if !ok || set.APISecret == "" {
		return nil, fmt.Errorf("the %s API secret of merchant %s is empty: %w", d.Spec.Environment, d.Spec.MerchantRef.Name, errNoSigningSecret)
	}
	return []byte(set.APISecret), nil
}

// metaTime is t as a webhook delivery records it (whole seconds: the merchant API does not
// report delivery times).
func metaTime(t time.Time) *metav1.Time { mt := metav1.NewTime(t); return &mt }

func (r *WebhookDeliveryReconciler) schedule() []time.Duration {
	if len(r.Schedule) > 0 {
		return r.Schedule
	}
	return DefaultWebhookSchedule
}

// SetupWithManager watches WebhookDeliveries, and starts the first attempts of new events
// (FirstAttempts); concurrency bounds how many receivers each of the two calls at once, so a slow
// receiver holds one worker for at most its timeout.
func (r *WebhookDeliveryReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	if err := r.FirstAttempts().setup(mgr, concurrency); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&paygatev1.WebhookDelivery{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WithOptions(controllerOptions(concurrency)).
		Named("webhookdelivery").
		Complete(quietConflicts(r))
}
