// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InvoicePhase is where an invoice stands (docs/billing.md, Invoice lifecycle).
// +kubebuilder:validation:Enum=open;paid;payment_failed;void
type InvoicePhase string

const (
	// InvoiceOpen: opened for its period, not paid; a charge may be on the customer's phone.
	InvoiceOpen InvoicePhase = "open"
	// InvoicePaid: a charge was approved and settled. Terminal.
	InvoicePaid InvoicePhase = "paid"
	// InvoicePaymentFailed: the latest charge failed; nextAttemptAt says when the next one goes
	// out, and there is none once the subscription is suspended.
	InvoicePaymentFailed InvoicePhase = "payment_failed"
	// InvoiceVoid: will never be charged (the subscription was cancelled, or resumed in a later
	// period). Terminal.
	InvoiceVoid InvoicePhase = "void"
)

// MaxInvoicePeriod is the largest period number an invoice can have.
const MaxInvoicePeriod = 100000

// MaxInvoicePayments is how many charge attempts an invoice lists (the newest ones).
const MaxInvoicePayments = 20

// SubscriptionReference names a Subscription in the same namespace.
type SubscriptionReference struct {
	// name of the Subscription: sub- and 24 characters of a-z and 2-7.
	// +kubebuilder:validation:Pattern=`^sub-[a-z2-7]{24}$`
	// +kubebuilder:validation:MaxLength=28
	// +required
	Name string `json:"name"`
}

// InvoiceSpec is what one period of a subscription costs. An invoice is issued once and never
// changes; its status follows the charges.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an invoice is immutable once issued"
// +kubebuilder:validation:XValidation:rule="self.periodStart < self.periodEnd",message="periodStart must be before periodEnd"
type InvoiceSpec struct {
	// merchantRef is the Merchant (same namespace) the invoice is for.
	// +required
	MerchantRef MerchantReference `json:"merchantRef"`

	// environment of the invoice: its subscription's.
	// +required
	Environment Environment `json:"environment"`

	// subscriptionRef is the Subscription billed.
	// +required
	SubscriptionRef SubscriptionReference `json:"subscriptionRef"`

	// planCode is the code of the subscription's plan.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	// +required
	PlanCode string `json:"planCode"`

	// period is the number of the billed period; the subscription's first period is 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +required
	Period int32 `json:"period"`

	// periodStart is when the period begins, on the subscription's clock.
	// +required
	PeriodStart metav1.Time `json:"periodStart"`

	// periodEnd is when the period ends and the next begins, on the subscription's clock.
	// +required
	PeriodEnd metav1.Time `json:"periodEnd"`

	// amount due, in currency units: the price the customer consented to.
	// +required
	Amount Decimal `json:"amount"`

	// currency of the amount.
	// +required
	Currency CurrencyCode `json:"currency"`
}

// InvoiceStatus is what the billing controller did. Its times are on the subscription's clock.
type InvoiceStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is open, paid, payment_failed or void.
	// +optional
	Phase InvoicePhase `json:"phase,omitempty"`

	// attemptCount counts the invoice's charges: each is a push Payment owned by the invoice,
	// recorded here before the Payment is created (write-ahead).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	AttemptCount int32 `json:"attemptCount,omitempty"`

	// payments are the trx_ids of the newest charges (at most 20), oldest first.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:Pattern=`^trx-[a-z2-7]{24}$`
	// +kubebuilder:validation:items:MaxLength=28
	// +optional
	Payments []string `json:"payments,omitempty"`

	// lastFailureReason is why the latest charge failed (INSUFFICIENT_FUNDS,
	// CUSTOMER_CANCELLED, ...; docs/payments.md).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	LastFailureReason string `json:"lastFailureReason,omitempty"`

	// nextAttemptAt is when the next charge goes out, inside the plan's charging window. Empty
	// while a charge is out, once paid or void, and when the subscription is suspended.
	// +optional
	NextAttemptAt *metav1.Time `json:"nextAttemptAt,omitempty"`

	// paidAt is when the paid charge settled, to the microsecond.
	// +optional
	PaidAt *metav1.MicroTime `json:"paidAt,omitempty"`

	// paidPayment is the trx_id of the charge that paid the invoice.
	// +kubebuilder:validation:MaxLength=28
	// +optional
	PaidPayment string `json:"paidPayment,omitempty"`

	// voidedAt is when the invoice was voided.
	// +optional
	VoidedAt *metav1.Time `json:"voidedAt,omitempty"`

	// conditions: Ready summarises the invoice.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Invoice is what one period of a Subscription costs and how its charges went. Its name is
// "inv-<subscription id>-<period>" (InvoiceName), so a period is invoiced at most once.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=inv,categories=paygate
// +kubebuilder:validation:XValidation:rule="self.spec.subscriptionRef.name.startsWith('sub-') && self.metadata.name.startsWith('inv-' + self.spec.subscriptionRef.name.substring(4) + '-') && self.metadata.name.matches('^inv-[a-z2-7]{24}-[1-9][0-9]{0,5}$') && int(self.metadata.name.substring(29)) == self.spec.period",message="an Invoice's name must be inv-<subscription id>-<period> (inv-<the 24 characters after sub->-1 for the first period): one invoice per period"
// +kubebuilder:printcolumn:name="Subscription",type=string,JSONPath=`.spec.subscriptionRef.name`
// +kubebuilder:printcolumn:name="Period",type=integer,JSONPath=`.spec.period`
// +kubebuilder:printcolumn:name="Amount",type=string,JSONPath=`.spec.amount`
// +kubebuilder:printcolumn:name="Currency",type=string,JSONPath=`.spec.currency`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.attemptCount`
// +kubebuilder:printcolumn:name="Next Attempt",type=date,JSONPath=`.status.nextAttemptAt`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.lastFailureReason`,priority=1
// +kubebuilder:printcolumn:name="Merchant",type=string,JSONPath=`.spec.merchantRef.name`,priority=1
// +kubebuilder:printcolumn:name="Env",type=string,JSONPath=`.spec.environment`,priority=1
// +kubebuilder:printcolumn:name="Period Start",type=date,JSONPath=`.spec.periodStart`,priority=1
// +kubebuilder:printcolumn:name="Period End",type=date,JSONPath=`.spec.periodEnd`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Invoice struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the invoice as issued.
	// +required
	Spec InvoiceSpec `json:"spec"`

	// status is what the controller did.
	// +optional
	Status InvoiceStatus `json:"status,omitempty"`
}

// InvoiceList contains a list of Invoice.
// +kubebuilder:object:root=true
type InvoiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Invoice `json:"items"`
}

// InvoiceName is the object name, and the API's id, of the invoice of a subscription's period:
// "inv-" + the subscription's id (its name without "sub-") + "-" + the period number
// ("inv-<24 characters>-3"). Creating it is what opens the period's invoice: the API server lets
// it be created once (docs/billing.md, Names and ids).
func InvoiceName(subscriptionName string, period int32) string {
	return "inv-" + strings.TrimPrefix(subscriptionName, SubscriptionNamePrefix) + "-" + strconv.FormatInt(int64(period), 10)
}

// Phase returns the invoice's phase; one no controller has touched yet is open.
func (i *Invoice) Phase() InvoicePhase {
	if i.Status.Phase == "" {
		return InvoiceOpen
	}
	return i.Status.Phase
}

// Terminal reports whether the invoice is paid or void, which never change.
func (i *Invoice) Terminal() bool {
	return i.Status.Phase == InvoicePaid || i.Status.Phase == InvoiceVoid
}

func init() {
	SchemeBuilder.Register(&Invoice{}, &InvoiceList{})
}
