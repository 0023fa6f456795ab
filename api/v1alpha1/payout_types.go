// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PayoutPhase is where a payout stands (docs/payouts.md).
// +kubebuilder:validation:Enum=pending;processing;success;failed
type PayoutPhase string

const (
	// PayoutPending: recorded; the balance controller has not reserved its amount yet.
	PayoutPending PayoutPhase = "pending"
	// PayoutProcessing: the amount is reserved on the balance and the disbursement is under way.
	PayoutProcessing PayoutPhase = "processing"
	// PayoutSuccess: the money reached the settlement number. Terminal.
	PayoutSuccess PayoutPhase = "success"
	// PayoutFailed: no money moved; the reservation, if any, is released. Terminal.
	PayoutFailed PayoutPhase = "failed"
)

// PayoutFailureCode says why a payout failed.
type PayoutFailureCode string

const (
	// PayoutInsufficientBalance: the balance could not cover the amount when the balance
	// controller decided, in creation order.
	PayoutInsufficientBalance PayoutFailureCode = "INSUFFICIENT_BALANCE"
	// PayoutRejected: a payout gate closed before the money moved (KYB, business status or
	// settlement number changed).
	PayoutRejected PayoutFailureCode = "PAYOUT_REJECTED"
	// PayoutResolvedFailed: an operator resolved an ambiguous disbursement as not paid.
	PayoutResolvedFailed PayoutFailureCode = "RESOLVED_FAILED"
)

// PayoutSpec is a merchant's request to pay its balance out, as the apiserver accepted it. It is
// immutable.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a payout's spec is immutable"
type PayoutSpec struct {
	// merchantRef is the Merchant (same namespace) whose balance pays.
	// +required
	MerchantRef MerchantReference `json:"merchantRef"`

	// environment the payout was requested in; sandbox payouts move no money.
	// +required
	Environment Environment `json:"environment"`

	// amount debited from the balance, in currency units, exact.
	// +required
	Amount Decimal `json:"amount"`

	// fee kept from the amount, from the disbursing gateway's payout fee schedule.
	// +required
	Fee Decimal `json:"fee"`

	// payableAmount is amount minus fee: what reaches the destination.
	// +required
	PayableAmount Decimal `json:"payableAmount"`

	// currency of the amounts.
	// +required
	Currency CurrencyCode `json:"currency"`

	// destination is the merchant's approved settlement number when the payout was accepted.
	// +required
	Destination MobileNumber `json:"destination"`

	// gateway disburses the money: a Gateway of the currency with a payout schedule.
	// +required
	Gateway GatewayCode `json:"gateway"`

	// createdAt is when the apiserver accepted the payout, to the microsecond. Reservations are
	// decided in (createdAt, name) order.
	// +required
	CreatedAt metav1.MicroTime `json:"createdAt"`
}

// DisbursementAttempt is the one disbursement of a payout, recorded before the provider is
// called (written ahead).
type DisbursementAttempt struct {
	// reference is the idempotency reference sent to the provider: <namespace>.<payout>.
	// +kubebuilder:validation:MaxLength=128
	// +required
	Reference string `json:"reference"`

	// phase of the attempt.
	// +required
	Phase AttemptPhase `json:"phase"`

	// providerReference is the provider's id for the disbursement.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ProviderReference string `json:"providerReference,omitempty"`

	// code says why a failed attempt failed.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Code string `json:"code,omitempty"`

	// startedAt is when the attempt was recorded.
	// +required
	StartedAt metav1.MicroTime `json:"startedAt"`

	// ambiguousSince is when the provider first answered AMBIGUOUS or INPROGRESS: the payout asks
	// an operator (condition AmbiguousTooLong) once it has stayed without a final answer for the
	// manager's --payout-ambiguous-after. Kept after the final answer, as a record.
	// +optional
	AmbiguousSince *metav1.MicroTime `json:"ambiguousSince,omitempty"`

	// finishedAt is when the attempt reached Succeeded or Failed.
	// +optional
	FinishedAt *metav1.MicroTime `json:"finishedAt,omitempty"`
	// sends counts the sends of this attempt written ahead: 1 after the first; a re-send with the
	// same reference (only to a provider that de-duplicates by it, only before the deadline) adds
	// one. An operator's verdict names the send it resolves.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Sends int32 `json:"sends,omitempty"`

	// lastSentAt is when the newest send was written ahead, to the microsecond.
	// +optional
	LastSentAt *metav1.MicroTime `json:"lastSentAt,omitempty"`

	// watchUntil: the attempt's object ended without the provider's final answer (its deadline
	// passed, or an operator resolved it); the controller keeps asking the provider about it until
	// this time, and a late final answer is reported (condition LateSettlement).
	// +optional
	WatchUntil *metav1.MicroTime `json:"watchUntil,omitempty"`
}

// PayoutStatus is what the controllers did.
type PayoutStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is pending, processing, success or failed.
	// +optional
	Phase PayoutPhase `json:"phase,omitempty"`

	// reason says why a failed payout failed.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Reason string `json:"reason,omitempty"`

	// reservedAt is when the balance controller reserved the amount (it then counts against the
	// available balance until the payout fails).
	// +optional
	ReservedAt *metav1.MicroTime `json:"reservedAt,omitempty"`

	// attempt is the disbursement, recorded before the provider hears of it.
	// +optional
	Attempt *DisbursementAttempt `json:"attempt,omitempty"`

	// remark is the provider's annotation; sandbox payouts carry SANDBOX_TRANSACTION.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Remark string `json:"remark,omitempty"`

	// updatedAt is when the status last changed, to the microsecond.
	// +optional
	UpdatedAt *metav1.MicroTime `json:"updatedAt,omitempty"`

	// conditions: Ready summarises the payout; AmbiguousTooLong asks an operator to resolve it.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AnnotationResolvePayout on a Payout whose disbursement stays ambiguous lets an operator who
// confirmed the outcome with the provider end it: "success" or "failed" (docs/payouts.md).
const AnnotationResolvePayout = "paygate.dev/resolve-payout"

// ConditionAmbiguousTooLong on a Payout: the provider has not given a final answer within the
// configured time; an operator should check with the provider and resolve it.
const ConditionAmbiguousTooLong = "AmbiguousTooLong"

// Payout pays part of a merchant's settled balance out to its settlement number. Its name is
// its id, a UUID.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=po,categories=paygate
// +kubebuilder:printcolumn:name="Merchant",type=string,JSONPath=`.spec.merchantRef.name`
// +kubebuilder:printcolumn:name="Env",type=string,JSONPath=`.spec.environment`
// +kubebuilder:printcolumn:name="Amount",type=string,JSONPath=`.spec.amount`
// +kubebuilder:printcolumn:name="Currency",type=string,JSONPath=`.spec.currency`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Payout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the accepted payout request.
	// +required
	Spec PayoutSpec `json:"spec"`

	// status is what the controllers did.
	// +optional
	Status PayoutStatus `json:"status,omitempty"`
}

// PayoutList contains a list of Payout.
// +kubebuilder:object:root=true
type PayoutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Payout `json:"items"`
}

// Phase returns the payout's phase; a payout no controller has touched yet is pending.
func (p *Payout) Phase() PayoutPhase {
	if p.Status.Phase == "" {
		return PayoutPending
	}
	return p.Status.Phase
}

// Terminal reports whether the payout reached success or failed, which never change.
func (p *Payout) Terminal() bool {
	return p.Status.Phase == PayoutSuccess || p.Status.Phase == PayoutFailed
}

// Reserved reports whether the payout's amount counts against the balance: it was reserved and
// has not failed. A failed payout releases its reservation by no longer counting, so the release
// happens exactly once whatever passes repeat.
func (p *Payout) Reserved() bool {
	return p.Status.ReservedAt != nil && p.Status.Phase != PayoutFailed
}

// MerchantRemark is the remark merchants see on the payout (the rule payments follow).
func (p *Payout) MerchantRemark() string { return merchantRemark(p.Spec.Environment, p.Status.Remark) }

// Watched reports whether the payout ended without the provider's final answer about its
// disbursement (an operator resolved it) and the controller still asks about it: it is not
// archived while it is.
func (p *Payout) Watched(now time.Time) bool {
	a := p.Status.Attempt
	return p.Terminal() && a != nil && a.Phase != AttemptSucceeded && a.Phase != AttemptFailed &&
		a.WatchUntil != nil && now.Before(a.WatchUntil.Time)
}

// DisbursementReference is the provider reference of a payout's disbursement: one per payout.
func (p *Payout) DisbursementReference() string { return p.Namespace + "." + p.Name }

func init() {
	SchemeBuilder.Register(&Payout{}, &PayoutList{})
}
