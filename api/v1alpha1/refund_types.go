// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RefundPhase is where a refund stands (docs/refunds.md): the payout phases.
// +kubebuilder:validation:Enum=pending;processing;success;failed
type RefundPhase string

const (
	// RefundPending: recorded; the balance controller has not reserved its amount yet.
	RefundPending RefundPhase = "pending"
	// RefundProcessing: the amount is reserved on the balance and the refund is under way at the
	// provider.
	RefundProcessing RefundPhase = "processing"
	// RefundSuccess: the money went back to the customer. Terminal.
	RefundSuccess RefundPhase = "success"
	// RefundFailed: no money moved; the reservation, if any, is released. Terminal.
	RefundFailed RefundPhase = "failed"
)

// RefundFailureCode says why a refund failed before the provider heard of it.
type RefundFailureCode string

const (
	// RefundExceedsPayment: with the refunds of the payment reserved or paid before it (in
	// creation order), this one would return more than the payment's amount.
	RefundExceedsPayment RefundFailureCode = "REFUND_EXCEEDS_PAYMENT"
	// RefundInsufficientBalance: the merchant's available balance could not cover the amount when
	// the balance controller decided, in creation order with the payouts.
	RefundInsufficientBalance RefundFailureCode = "INSUFFICIENT_BALANCE"
	// RefundNotSupported: the payment's gateway can no longer refund this (its provider changed).
	RefundNotSupported RefundFailureCode = "REFUND_NOT_SUPPORTED"
	// RefundResolvedFailed: an operator resolved an ambiguous refund as not paid.
	RefundResolvedFailed RefundFailureCode = "RESOLVED_FAILED"
)

// RefundedPayment names the payment a refund returns money from, and what its provider knows it
// by.
type RefundedPayment struct {
	// trxID is the payment's id (its name).
	// +kubebuilder:validation:Pattern=`^trx-[a-z0-9]{24}$`
	// +required
	TrxID string `json:"trxID"`

	// amount is the payment's amount: the refunds of the payment never return more.
	// +required
	Amount Decimal `json:"amount"`

	// attemptReference is the reference of the push attempt that collected the money.
	// +kubebuilder:validation:MaxLength=128
	// +required
	AttemptReference string `json:"attemptReference"`

	// providerReference is the provider's id for that collection (pawaPay's depositId, Daraja's
	// CheckoutRequestID), when it gave one.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ProviderReference string `json:"providerReference,omitempty"`

	// receipt is the provider's receipt of the collection (M-Pesa's receipt number, which a
	// reversal names), when it gave one.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Receipt string `json:"receipt,omitempty"`
}

// RefundSpec is a merchant's request to return money of one payment to its customer, as the
// apiserver accepted it. It is immutable.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a refund's spec is immutable"
type RefundSpec struct {
	// merchantRef is the Merchant (same namespace) whose balance pays the refund.
	// +required
	MerchantRef MerchantReference `json:"merchantRef"`

	// environment of the payment and the refund; sandbox refunds move no money.
	// +required
	Environment Environment `json:"environment"`

	// payment is the payment refunded.
	// +required
	Payment RefundedPayment `json:"payment"`

	// amount returned to the customer and debited from the balance, in currency units, exact.
	// The payment's fee is not given back (docs/ledger.md).
	// +required
	Amount Decimal `json:"amount"`

	// currency of the amounts: the payment's.
	// +required
	Currency CurrencyCode `json:"currency"`

	// destination is the customer's number the payment was collected from.
	// +required
	Destination MobileNumber `json:"destination"`

	// gateway is the payment's gateway, which carries the refund.
	// +required
	Gateway GatewayCode `json:"gateway"`

	// reason is the merchant's reason, as given (at most 255 characters).
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Reason string `json:"reason,omitempty"`

	// createdAt is when the apiserver accepted the refund, to the microsecond. Reservations are
	// decided in (createdAt, name) order, together with the payouts.
	// +required
	CreatedAt metav1.MicroTime `json:"createdAt"`
}

// RefundStatus is what the controllers did.
type RefundStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is pending, processing, success or failed.
	// +optional
	Phase RefundPhase `json:"phase,omitempty"`

	// reason says why a failed refund failed.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Reason string `json:"reason,omitempty"`

	// reservedAt is when the balance controller reserved the amount (it then counts against the
	// available balance, and against the payment's amount, until the refund fails).
	// +optional
	ReservedAt *metav1.MicroTime `json:"reservedAt,omitempty"`

	// attempt is the refund at the provider, recorded before the provider hears of it.
	// +optional
	Attempt *DisbursementAttempt `json:"attempt,omitempty"`

	// remark is the provider's annotation; sandbox refunds carry SANDBOX_TRANSACTION.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Remark string `json:"remark,omitempty"`

	// updatedAt is when the status last changed, to the microsecond.
	// +optional
	UpdatedAt *metav1.MicroTime `json:"updatedAt,omitempty"`

	// conditions: Ready summarises the refund; AmbiguousTooLong asks an operator to resolve it.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AnnotationResolveRefund on a Refund whose attempt stays ambiguous lets an operator who
// confirmed the outcome with the provider end it: "success" or "failed" (docs/refunds.md).
const AnnotationResolveRefund = "paygate.dev/resolve-refund"

// LabelPayment on a Refund names the payment it refunds (its trx id).
const LabelPayment = "paygate.dev/payment"

// LabelLateSettlement ("true") marks the Refund the payment controller makes of a late
// settlement under the merchant's lateSettlement Refund: the balance controller never rejects it
// for the balance, it waits until the late money counts (docs/ledger.md).
const LabelLateSettlement = "paygate.dev/late-settlement"

// Refund returns money of one successful payment to its customer. Its name is its id, a UUID. It
// is not owned by its payment: deleting or archiving the payment never takes its refunds.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rf,categories=paygate
// +kubebuilder:printcolumn:name="Merchant",type=string,JSONPath=`.spec.merchantRef.name`
// +kubebuilder:printcolumn:name="Env",type=string,JSONPath=`.spec.environment`
// +kubebuilder:printcolumn:name="Payment",type=string,JSONPath=`.spec.payment.trxID`
// +kubebuilder:printcolumn:name="Amount",type=string,JSONPath=`.spec.amount`
// +kubebuilder:printcolumn:name="Currency",type=string,JSONPath=`.spec.currency`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Refund struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the accepted refund request.
	// +required
	Spec RefundSpec `json:"spec"`

	// status is what the controllers did.
	// +optional
	Status RefundStatus `json:"status,omitempty"`
}

// RefundList contains a list of Refund.
// +kubebuilder:object:root=true
type RefundList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Refund `json:"items"`
}

// Phase returns the refund's phase; a refund no controller has touched yet is pending.
func (r *Refund) Phase() RefundPhase {
	if r.Status.Phase == "" {
		return RefundPending
	}
	return r.Status.Phase
}

// Terminal reports whether the refund reached success or failed, which never change.
func (r *Refund) Terminal() bool {
	return r.Status.Phase == RefundSuccess || r.Status.Phase == RefundFailed
}

// Reserved reports whether the refund's amount counts against the balance and the payment: it was
// reserved and has not failed.
func (r *Refund) Reserved() bool {
	return r.Status.ReservedAt != nil && r.Status.Phase != RefundFailed
}

// MerchantRemark is the remark merchants see on the refund (the rule payments follow).
func (r *Refund) MerchantRemark() string { return merchantRemark(r.Spec.Environment, r.Status.Remark) }

// Watched reports whether the refund ended without the provider's final answer (an operator
// resolved it) and the controller still asks about it.
func (r *Refund) Watched(now time.Time) bool {
	a := r.Status.Attempt
	return r.Terminal() && a != nil && a.Phase != AttemptSucceeded && a.Phase != AttemptFailed &&
		a.WatchUntil != nil && now.Before(a.WatchUntil.Time)
}

// RefundReference is the provider reference of a refund: one per refund, "<namespace>.<name>.r"
// (the suffix keeps it apart from a payout's "<namespace>.<name>" at the callback routes).
func (r *Refund) RefundReference() string { return r.Namespace + "." + r.Name + ".r" }

func init() {
	SchemeBuilder.Register(&Refund{}, &RefundList{})
}
