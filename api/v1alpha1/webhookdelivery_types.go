// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeliveryPhase is where a webhook delivery stands.
// +kubebuilder:validation:Enum=Pending;Delivered;Abandoned;NoEndpoint
type DeliveryPhase string

const (
	// DeliveryPending: not delivered yet; attempts remain.
	DeliveryPending DeliveryPhase = "Pending"
	// DeliveryDelivered: a receiver answered 2xx.
	DeliveryDelivered DeliveryPhase = "Delivered"
	// DeliveryAbandoned: every attempt failed; redeliver with the annotation.
	DeliveryAbandoned DeliveryPhase = "Abandoned"
	// DeliveryNoEndpoint: neither the payment nor the merchant names a webhook URL.
	DeliveryNoEndpoint DeliveryPhase = "NoEndpoint"
)

// AnnotationRedeliver asks for an abandoned delivery to be tried again; set it to a new value
// each time. The event keeps its id.
const AnnotationRedeliver = "paygate.dev/redeliver"

// EventSource is the object an event is about.
type EventSource struct {
	// kind of the source (Payment, Subscription, Invoice).
	// +kubebuilder:validation:MaxLength=64
	// +required
	Kind string `json:"kind"`
	// name of the source object.
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// uid of the source object.
	// +kubebuilder:validation:MaxLength=64
	// +required
	UID string `json:"uid"`
}

// WebhookDeliverySpec is one event and where it goes. Written once by the controller that saw the
// occurrence.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a webhook delivery's event is immutable"
type WebhookDeliverySpec struct {
	// eventID is the event's id (evt_…), the same on every attempt; receivers de-duplicate on it.
	// +kubebuilder:validation:Pattern=`^evt_[a-z0-9]{16,64}$`
	// +required
	EventID string `json:"eventID"`

	// eventType is payment.completed, payment.failed, subscription.created, ...
	// +kubebuilder:validation:MaxLength=64
	// +required
	EventType string `json:"eventType"`

	// merchantRef is the Merchant the event is for.
	// +required
	MerchantRef MerchantReference `json:"merchantRef"`

	// environment of the event.
	// +required
	Environment Environment `json:"environment"`

	// source is the object the event is about.
	// +required
	Source EventSource `json:"source"`

	// url is the receiver; empty when there is none (phase NoEndpoint).
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	URL string `json:"url,omitempty"`

	// payload is the exact JSON body sent (and signed) on every attempt.
	// +kubebuilder:validation:MaxLength=65536
	// +required
	Payload string `json:"payload"`

	// format is how the payload is shaped and signed, fixed when the event is born from the
	// merchant's webhookFormat: Standard (the default) or LegacyIPN (payload in the older
	// gateway's IPN shape, with X-Signature too).
	// +optional
	Format WebhookFormat `json:"format,omitempty"`

	// legacySigningKey is the key of a LegacyIPN delivery's X-Signature (the merchant's
	// legacyIPNSigningKey when the event was born).
	// +optional
	LegacySigningKey WebhookSigningKey `json:"legacySigningKey,omitempty"`

	// firstAttempt is the event's first attempt, made before the delivery was created: the create
	// that stores the event stores that attempt's result too, so an event its receiver accepted at
	// once costs the one write. The delivery controller writes status only when more is needed (the
	// attempt failed and the schedule goes on from it); until then the delivery's status is empty
	// and EffectiveStatus reads this field. Absent when the first attempt was not made before the
	// create (no URL, no signing secret, a first attempt scheduled later, or a delivery created
	// before this field existed): the delivery controller makes it.
	// +optional
	FirstAttempt *FirstDeliveryAttempt `json:"firstAttempt,omitempty"`
}

// FirstAttemptResult is how a first attempt made before its delivery was created ended.
// +kubebuilder:validation:Enum=Delivered;Failed
type FirstAttemptResult string

const (
	// FirstAttemptDelivered: a receiver answered 2xx.
	FirstAttemptDelivered FirstAttemptResult = "Delivered"
	// FirstAttemptFailed: no 2xx; the retry schedule goes on from the attempt.
	FirstAttemptFailed FirstAttemptResult = "Failed"
)

// FirstDeliveryAttempt is the first POST of an event to its receiver, made before its delivery
// was created.
type FirstDeliveryAttempt struct {
	// result of the attempt.
	// +required
	Result FirstAttemptResult `json:"result"`
	// at is when the attempt was made, to the microsecond: the next attempt of a failed one is
	// due the schedule's second delay after it.
	// +required
	At metav1.MicroTime `json:"at"`
	// statusCode the receiver answered, if it answered.
	// +optional
	StatusCode int32 `json:"statusCode,omitempty"`
	// error when the attempt failed without an answer or with a non-2xx one.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Error string `json:"error,omitempty"`
	// durationMillis is how long the attempt took.
	// +optional
	DurationMillis int64 `json:"durationMillis,omitempty"`
}

// Delivered reports whether the attempt reached a receiver that accepted the event; false for a
// nil attempt.
func (a *FirstDeliveryAttempt) Delivered() bool { return a != nil && a.Result == FirstAttemptDelivered }

// Attempt is the first attempt as status records attempts (number 1, whole seconds).
func (a *FirstDeliveryAttempt) Attempt() DeliveryAttempt {
	return DeliveryAttempt{Number: 1, At: metav1.NewTime(a.At.Time), StatusCode: a.StatusCode, Error: a.Error, DurationMillis: a.DurationMillis}
}

// DeliveryAttempt is one POST to the receiver.
type DeliveryAttempt struct {
	// number of the attempt, from 1.
	// +required
	Number int32 `json:"number"`
	// at is when the attempt was made.
	// +required
	At metav1.Time `json:"at"`
	// statusCode the receiver answered, if it answered.
	// +optional
	StatusCode int32 `json:"statusCode,omitempty"`
	// error when the attempt failed without an answer or with a non-2xx one.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Error string `json:"error,omitempty"`
	// durationMillis is how long the attempt took.
	// +optional
	DurationMillis int64 `json:"durationMillis,omitempty"`
}

// WebhookDeliveryStatus is what the delivery controller did.
type WebhookDeliveryStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase of the delivery.
	// +optional
	Phase DeliveryPhase `json:"phase,omitempty"`
	// attempts made in the current round (a redelivery starts a new round), newest last.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Attempts []DeliveryAttempt `json:"attempts,omitempty"`
	// nextAttemptAt is when the next attempt is due.
	// +optional
	NextAttemptAt *metav1.Time `json:"nextAttemptAt,omitempty"`
	// deliveredAt is when a receiver accepted the event.
	// +optional
	DeliveredAt *metav1.Time `json:"deliveredAt,omitempty"`
	// redelivery is the value of the redeliver annotation the current round answers.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Redelivery string `json:"redelivery,omitempty"`
	// totalAttempts counts attempts over every round.
	// +optional
	TotalAttempts int32 `json:"totalAttempts,omitempty"`
	// conditions: Ready is True once a receiver accepted the event, False (with the reason) while
	// it waits for an attempt or after it was abandoned or had no endpoint.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WebhookDelivery is one webhook event for a merchant, delivered and retried by its controller.
// Its name derives from the source object's UID and the event type, so an occurrence has exactly
// one event.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=whd,categories=paygate
// +kubebuilder:printcolumn:name="Event",type=string,JSONPath=`.spec.eventType`
// +kubebuilder:printcolumn:name="Merchant",type=string,JSONPath=`.spec.merchantRef.name`
// +kubebuilder:printcolumn:name="Env",type=string,JSONPath=`.spec.environment`
// +kubebuilder:printcolumn:name="First",type=string,JSONPath=`.spec.firstAttempt.result`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.totalAttempts`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="ID",type=string,JSONPath=`.spec.eventID`,priority=1
// +kubebuilder:printcolumn:name="Format",type=string,JSONPath=`.spec.format`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WebhookDelivery struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the event.
	// +required
	Spec WebhookDeliverySpec `json:"spec"`

	// status is the delivery.
	// +optional
	Status WebhookDeliveryStatus `json:"status,omitempty"`
}

// EffectiveStatus is the delivery as its readers take it: its status, or, while the delivery
// controller has written none, what spec.firstAttempt says (phase Delivered, or Pending after a
// failed first attempt, with that attempt). A delivery whose receiver accepted its first attempt
// keeps an empty status for good: the create recorded everything (docs/webhooks.md). Conditions
// and nextAttemptAt are only ever what the controller wrote.
func (d *WebhookDelivery) EffectiveStatus() WebhookDeliveryStatus {
	st := d.Status
	a := d.Spec.FirstAttempt
	if a == nil || st.Phase != "" || st.TotalAttempts > 0 {
		return st
	}
	first := a.Attempt()
	st.Attempts, st.TotalAttempts, st.Phase = []DeliveryAttempt{first}, 1, DeliveryPending
	if a.Delivered() {
		st.Phase, st.DeliveredAt = DeliveryDelivered, &first.At
	}
	return st
}

// Phase is the delivery's phase as EffectiveStatus says it, without building the status: Pending
// while nothing is recorded yet (no status, no first attempt). The list indexes sort by it.
func (d *WebhookDelivery) Phase() DeliveryPhase {
	st := &d.Status
	if a := d.Spec.FirstAttempt; a != nil && st.Phase == "" && st.TotalAttempts == 0 {
		if a.Delivered() {
			return DeliveryDelivered
		}
		return DeliveryPending
	}
	if st.Phase == "" {
		return DeliveryPending
	}
	return st.Phase
}

// Finished reports whether the delivery is delivered, abandoned or without an endpoint: nothing
// more will be attempted unless it is redelivered.
func (d *WebhookDelivery) Finished() bool {
	switch d.Phase() {
	case DeliveryDelivered, DeliveryAbandoned, DeliveryNoEndpoint:
		return true
	}
	return false
}

// WebhookDeliveryList contains a list of WebhookDelivery.
// +kubebuilder:object:root=true
type WebhookDeliveryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebhookDelivery `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WebhookDelivery{}, &WebhookDeliveryList{})
}
