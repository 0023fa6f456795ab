// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A MerchantChange asks the merchant controller for one self-service change to a merchant's
// integration: new API credentials, the end of a rotation's overlap, a webhook signing secret
// rotation step, a default webhook URL, or a test event. The merchant console creates them (the
// apiserver may not change Merchants or Secrets itself); a platform engineer may create one with
// kubectl too. The controller answers each once, in its status, and deletes it an hour later
// (docs/configuration.md, MerchantChange).

// MerchantChangeAction is what a MerchantChange asks for.
// +kubebuilder:validation:Enum=RotateCredentials;EndCredentialsOverlap;PrepareWebhookSecret;ActivateWebhookSecret;SetWebhookURL;SendTestEvent
type MerchantChangeAction string

const (
	// ChangeRotateCredentials issues a new API key and secret for spec.environment; the ones it
	// replaces keep working for spec.overlap.
	ChangeRotateCredentials MerchantChangeAction = "RotateCredentials"
	// ChangeEndCredentialsOverlap ends spec.environment's rotation overlap now: the replaced key
	// stops working.
	ChangeEndCredentialsOverlap MerchantChangeAction = "EndCredentialsOverlap"
	// ChangePrepareWebhookSecret issues a pending webhook signing secret that does not sign yet.
	ChangePrepareWebhookSecret MerchantChangeAction = "PrepareWebhookSecret"
	// ChangeActivateWebhookSecret makes the pending webhook signing secret the one that signs.
	ChangeActivateWebhookSecret MerchantChangeAction = "ActivateWebhookSecret"
	// ChangeSetWebhookURL sets (or, empty, removes) spec.environment's default webhook URL. A
	// merchant managed elsewhere (AnnotationManagedBy) is refused.
	ChangeSetWebhookURL MerchantChangeAction = "SetWebhookURL"
	// ChangeSendTestEvent sends a webhook.test event to spec.environment's default webhook URL.
	ChangeSendTestEvent MerchantChangeAction = "SendTestEvent"
)

// MerchantChangeSpec is one change asked for. It cannot change once created.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a MerchantChange cannot change; create another"
// +kubebuilder:validation:XValidation:rule="!(self.action in ['RotateCredentials', 'EndCredentialsOverlap', 'SetWebhookURL', 'SendTestEvent']) || has(self.environment)",message="environment is required for this action"
// +kubebuilder:validation:XValidation:rule="!has(self.overlap) || self.action == 'RotateCredentials'",message="overlap applies to RotateCredentials only"
// +kubebuilder:validation:XValidation:rule="!has(self.webhookURL) || self.action == 'SetWebhookURL'",message="webhookURL applies to SetWebhookURL only"
type MerchantChangeSpec struct {
	// merchantRef is the Merchant to change, in this namespace.
	// +required
	MerchantRef MerchantReference `json:"merchantRef"`

	// action is the change asked for.
	// +required
	Action MerchantChangeAction `json:"action"`

	// environment the change applies to (credentials, webhook URL, test event).
	// +optional
	Environment Environment `json:"environment,omitempty"`

	// overlap is how long the credentials RotateCredentials replaces keep working, from 0s (they
	// stop at once) to 168h; default 24h.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('168h')",message="overlap must be between 0s and 168h"
	// +optional
	Overlap *metav1.Duration `json:"overlap,omitempty"`

	// webhookURL is the default webhook URL SetWebhookURL sets; empty removes it. The rules of a
	// payment's webhook_url apply: an absolute http or https URL (https in production), no user
	// information, a host among the merchant's allowedWebhookDomains when it has any.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	WebhookURL string `json:"webhookURL,omitempty"`

	// requestedBy names who asked (the console user's email, or a person's name); shown in the
	// Events the change records.
	// +kubebuilder:validation:MaxLength=254
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`
}

// MerchantChangePhase is where a MerchantChange stands.
// +kubebuilder:validation:Enum=Pending;Applied;Refused
type MerchantChangePhase string

const (
	// ChangePending: not answered yet.
	ChangePending MerchantChangePhase = "Pending"
	// ChangeApplied: the change was made.
	ChangeApplied MerchantChangePhase = "Applied"
	// ChangeRefused: the change was not made; reason and message say why.
	ChangeRefused MerchantChangePhase = "Refused"
)

// MerchantChangeStatus is the controller's answer.
type MerchantChangeStatus struct {
	// phase is Pending until the controller answers, then Applied or Refused.
	// +optional
	Phase MerchantChangePhase `json:"phase,omitempty"`

	// reason is a CamelCase word for the answer (for example BusinessNotApproved).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Reason string `json:"reason,omitempty"`

	// message says what was done, or why not, in a sentence. Never a secret.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`

	// answeredAt is when the controller answered; the change is deleted an hour later.
	// +optional
	AnsweredAt *metav1.Time `json:"answeredAt,omitempty"`

	// previousKeyExpiresAt is, for RotateCredentials with an overlap, when the replaced key stops
	// working.
	// +optional
	PreviousKeyExpiresAt *metav1.Time `json:"previousKeyExpiresAt,omitempty"`

	// eventID is, for SendTestEvent, the id of the webhook.test event sent.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	EventID string `json:"eventID,omitempty"`
}

// IsAnswered reports whether the controller has answered the change.
func (c *MerchantChange) IsAnswered() bool {
	return c.Status.Phase == ChangeApplied || c.Status.Phase == ChangeRefused
}

// MerchantChange is one self-service change to a merchant's integration, answered once by the
// merchant controller.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mchange,categories=paygate
// +kubebuilder:printcolumn:name="Merchant",type=string,JSONPath=`.spec.merchantRef.name`
// +kubebuilder:printcolumn:name="Action",type=string,JSONPath=`.spec.action`
// +kubebuilder:printcolumn:name="Env",type=string,JSONPath=`.spec.environment`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MerchantChange struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the change asked for.
	// +required
	Spec MerchantChangeSpec `json:"spec"`

	// status is the controller's answer.
	// +optional
	Status MerchantChangeStatus `json:"status,omitempty"`
}

// MerchantChangeList contains a list of MerchantChange.
// +kubebuilder:object:root=true
type MerchantChangeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MerchantChange `json:"items"`
}

func init() {
	SchemeBuilder.Register(&MerchantChange{}, &MerchantChangeList{})
}
