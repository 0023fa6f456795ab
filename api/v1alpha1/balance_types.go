// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BalanceSpec names whose balance it is.
type BalanceSpec struct {
	// merchantRef is the Merchant (same namespace).
	// +required
	MerchantRef MerchantReference `json:"merchantRef"`

	// environment of the balance: sandbox and production money never mix.
	// +required
	Environment Environment `json:"environment"`
}

// CurrencyBalance is the balance in one currency.
type CurrencyBalance struct {
	// currency of the balance.
	// +required
	Currency CurrencyCode `json:"currency"`

	// available is what the merchant may still pay out: settled - paidOut - reserved.
	// +required
	Available Decimal `json:"available"`

	// settled is the sum of the net amounts of the merchant's successful payments in this
	// currency and environment.
	// +optional
	Settled Decimal `json:"settled,omitempty"`

	// reserved is the sum of the payouts reserved and not yet paid or failed.
	// +optional
	Reserved Decimal `json:"reserved,omitempty"`

	// paidOut is the sum of the payouts that succeeded.
	// +optional
	PaidOut Decimal `json:"paidOut,omitempty"`

	// refunded is the sum of the refunds that succeeded.
	// +optional
	Refunded Decimal `json:"refunded,omitempty"`

	// refundsReserved is the sum of the refunds reserved and not yet paid or failed (reserved
	// counts the payouts only).
	// +optional
	RefundsReserved Decimal `json:"refundsReserved,omitempty"`

	// settledPayments counts the successful payments summed.
	// +required
	SettledPayments int64 `json:"settledPayments"`
}

// PayoutReservation holds a payout's amount against the balance until the payout succeeds (it
// then counts as paid out) or fails (it is released).
type PayoutReservation struct {
	// payout is the Payout's name (its id).
	// +kubebuilder:validation:MaxLength=63
	// +required
	Payout string `json:"payout"`

	// currency of the amount.
	// +required
	Currency CurrencyCode `json:"currency"`

	// amount reserved: the payout's amount.
	// +required
	Amount Decimal `json:"amount"`
}

// RefundReservation holds a refund's amount against the balance, and against its payment's
// amount, until the refund succeeds (it then counts as refunded) or fails (it is released).
type RefundReservation struct {
	// refund is the Refund's name (its id).
	// +kubebuilder:validation:MaxLength=63
	// +required
	Refund string `json:"refund"`

	// trxID is the refunded payment.
	// +kubebuilder:validation:MaxLength=64
	// +required
	TrxID string `json:"trxID"`

	// currency of the amount.
	// +required
	Currency CurrencyCode `json:"currency"`

	// amount reserved: the refund's amount.
	// +required
	Amount Decimal `json:"amount"`
}

// BalanceStatus is derived from the payments and payouts on every pass; it is never incremented,
// so it can always be recomputed and a repeated or crashed reconcile can never credit twice.
type BalanceStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// currencies, one entry per currency with settled payments.
	// +listType=map
	// +listMapKey=currency
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Currencies []CurrencyBalance `json:"currencies,omitempty"`

	// observedPayments is how many payments of the merchant and environment the last pass read.
	// +optional
	ObservedPayments int64 `json:"observedPayments,omitempty"`

	// payoutReservations are the payouts whose amounts the balance holds: the balance controller,
	// the single writer of this list, adds a payout here (with an optimistic lock on the Balance)
	// before it may be disbursed, in creation order and only while the balance covers it. It is
	// the one status field carried from pass to pass: two writers can never both reserve from the
	// same balance (docs/ledger.md). Each payout also records its own reservedAt, from which the
	// list is rebuilt if the Balance is lost.
	// +listType=map
	// +listMapKey=payout
	// +kubebuilder:validation:MaxItems=100
	// +optional
	PayoutReservations []PayoutReservation `json:"payoutReservations,omitempty"`

	// refundReservations are the refunds whose amounts the balance holds, decided like the
	// payouts' (the same pass, the same order, the same optimistic lock), and only while the
	// refunds of the payment stay within its amount.
	// +listType=map
	// +listMapKey=refund
	// +kubebuilder:validation:MaxItems=100
	// +optional
	RefundReservations []RefundReservation `json:"refundReservations,omitempty"`

	// conditions: Ready is True when the balance was derived from the merchant's payments on the
	// last pass, False (with the reason) when it could not be.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Balance is a merchant's wallet balances in one environment, owned by the Merchant and kept by
// the balance controller.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bal,categories=paygate
// +kubebuilder:printcolumn:name="Merchant",type=string,JSONPath=`.spec.merchantRef.name`
// +kubebuilder:printcolumn:name="Env",type=string,JSONPath=`.spec.environment`
// +kubebuilder:printcolumn:name="Currency",type=string,JSONPath=`.status.currencies[0].currency`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.currencies[0].available`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Balance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the merchant and environment.
	// +required
	Spec BalanceSpec `json:"spec"`

	// status holds the balances.
	// +optional
	Status BalanceStatus `json:"status,omitempty"`
}

// BalanceList contains a list of Balance.
// +kubebuilder:object:root=true
type BalanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Balance `json:"items"`
}

// BalanceName is the name of a merchant's Balance in env.
func BalanceName(merchant string, env Environment) string { return merchant + "-" + string(env) }

func init() {
	SchemeBuilder.Register(&Balance{}, &BalanceList{})
}
