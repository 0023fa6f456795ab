// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BillingInterval is the unit of a billing plan's period (docs/billing.md, Periods).
// +kubebuilder:validation:Enum=day;week;month;year
type BillingInterval string

const (
	// IntervalDay bills every intervalCount calendar days.
	IntervalDay BillingInterval = "day"
	// IntervalWeek bills every intervalCount weeks of seven calendar days.
	IntervalWeek BillingInterval = "week"
	// IntervalMonth bills every intervalCount calendar months, anchored on the day of the month
	// the subscription started (clamped to shorter months' last day).
	IntervalMonth BillingInterval = "month"
	// IntervalYear bills every year on the subscription's start date (29 February becomes 28
	// February in common years).
	IntervalYear BillingInterval = "year"
)

// MaxIntervalCount is the largest intervalCount of each interval: a period is at most one year
// long (docs/billing.md, Plans). internal/billing and the BillingPlan CEL rule use this table.
var MaxIntervalCount = map[BillingInterval]int32{
	IntervalDay:   365,
	IntervalWeek:  52,
	IntervalMonth: 12,
	IntervalYear:  1,
}

// Defaults of a plan's dunning policy and charging window (docs/billing.md, Dunning and Charging
// window). The CRD applies them at admission; internal/billing applies them to a zero value.
var DefaultRetryAfterDays = []int32{1, 3, 5}

const (
	// DefaultMaxFailures is how many failed charges in a row suspend a subscription.
	DefaultMaxFailures int32 = 4
	// DefaultWindowStart is the default start of the charging window, local time.
	DefaultWindowStart = "08:00"
	// DefaultWindowEnd is the default end of the charging window, local time.
	DefaultWindowEnd = "20:00"
	// DefaultTimeZone is the default time zone of a plan.
	DefaultTimeZone = "Africa/Dar_es_Salaam"
)

// DunningPolicy says when a failed charge is tried again and when the subscription gives up.
type DunningPolicy struct {
	// retryAfterDays are the waits, in calendar days of the plan's time zone, before each retry:
	// the first entry after the first failure, the second after the second, and so on; once the
	// list is used up its last entry repeats. A retry then waits for the charging window.
	// Entries after the (maxFailures-1)th are never used.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=30
	// +kubebuilder:default={1,3,5}
	// +optional
	RetryAfterDays []int32 `json:"retryAfterDays,omitempty"`

	// maxFailures is how many failed charges of one invoice in a row suspend the subscription.
	// The first charge counts like any other: a subscription whose charges keep failing ends
	// suspended. 1 means no retries.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:default=4
	// +optional
	MaxFailures int32 `json:"maxFailures,omitempty"`
}

// ChargingWindow is the part of the day, in the customer's local time, in which scheduled
// charges (renewals and dunning retries) may send a USSD prompt: a prompt needs a person awake
// to enter the PIN.
// +kubebuilder:validation:XValidation:rule="self.start < self.end",message="chargingWindow.start must be before chargingWindow.end: a window cannot cross midnight (use end 24:00 for the end of the day)"
type ChargingWindow struct {
	// start of the window, local time, "HH:MM" on a 24-hour clock.
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:default="08:00"
	// +optional
	Start string `json:"start,omitempty"`

	// end of the window, local time, "HH:MM"; the window ends just before it. "24:00" is the end
	// of the day.
	// +kubebuilder:validation:Pattern=`^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$`
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:default="20:00"
	// +optional
	End string `json:"end,omitempty"`

	// timeZone is the IANA time zone of the plan's customers ("Africa/Dar_es_Salaam"). It is the
	// plan's time zone: it sets the window and the calendar the billing periods follow. An
	// unknown zone makes the plan not Ready.
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:default="Africa/Dar_es_Salaam"
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// BillingPlanSpec is a price a merchant charges on a schedule. The price (amount, currency,
// interval and intervalCount) is immutable: customers consented to it; create a new plan for
// another price.
// +kubebuilder:validation:XValidation:rule="self.merchantRef == oldSelf.merchantRef && self.environment == oldSelf.environment && self.code == oldSelf.code",message="a billing plan's merchantRef, environment and code are immutable"
// +kubebuilder:validation:XValidation:rule="self.amount == oldSelf.amount && self.currency == oldSelf.currency && self.interval == oldSelf.interval && self.intervalCount == oldSelf.intervalCount",message="a billing plan's price (amount, currency, interval, intervalCount) is immutable: customers consented to it; create a new plan"
// +kubebuilder:validation:XValidation:rule="quantity(self.amount).compareTo(quantity('1')) >= 0 && quantity(self.amount).compareTo(quantity('999999999999999999')) <= 0",message="amount must be at least 1 and at most 999999999999999999"
// +kubebuilder:validation:XValidation:rule="self.interval == 'day' ? self.intervalCount <= 365 : self.interval == 'week' ? self.intervalCount <= 52 : self.interval == 'month' ? self.intervalCount <= 12 : self.intervalCount == 1",message="a billing period is at most one year: intervalCount is at most 365 for day, 52 for week, 12 for month and 1 for year"
type BillingPlanSpec struct {
	// merchantRef is the Merchant (same namespace) that sells the plan.
	// +required
	MerchantRef MerchantReference `json:"merchantRef"`

	// environment the plan is sold in; sandbox and production plans are separate.
	// +required
	Environment Environment `json:"environment"`

	// code is the merchant's identifier of the plan (plan_code in the API), unique per merchant
	// and environment: lower-case letters, digits and dashes, like a DNS label.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	// +required
	Code string `json:"code"`

	// name of the plan as customers see it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	// +required
	Name string `json:"name"`

	// description of the plan.
	// +kubebuilder:validation:MaxLength=500
	// +optional
	Description string `json:"description,omitempty"`

	// amount charged each period, in currency units, exact; at least 1. Immutable.
	// +required
	Amount Decimal `json:"amount"`

	// currency of the amount. Immutable.
	// +required
	Currency CurrencyCode `json:"currency"`

	// interval is the unit of a period: day, week, month or year. Immutable.
	// +required
	Interval BillingInterval `json:"interval"`

	// intervalCount is how many intervals make one period (3 with month: quarterly). A period is
	// at most one year: at most 365 days, 52 weeks, 12 months or 1 year. Immutable.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=365
	// +kubebuilder:default=1
	// +optional
	IntervalCount int32 `json:"intervalCount,omitempty"`

	// dunning is when failed charges are retried and when a subscription is suspended
	// (default: retries 1, 3 and 5 days after each failure, suspended at the 4th failure).
	// +kubebuilder:default={retryAfterDays:{1,3,5},maxFailures:4}
	// +optional
	Dunning DunningPolicy `json:"dunning,omitempty"`

	// chargingWindow is when scheduled charges may prompt the customer (default 08:00 to 20:00,
	// Africa/Dar_es_Salaam).
	// +kubebuilder:default={start:"08:00",end:"20:00",timeZone:"Africa/Dar_es_Salaam"}
	// +optional
	ChargingWindow ChargingWindow `json:"chargingWindow,omitempty"`
}

// BillingPlanStatus is what the billing controller found.
type BillingPlanStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// subscriptions counts the plan's subscriptions that are not cancelled.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Subscriptions int32 `json:"subscriptions,omitempty"`

	// conditions: Ready says whether new subscriptions can use the plan (False with
	// ConfigInvalid for an amount the currency cannot hold or an unknown time zone).
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BillingPlan is a merchant's recurring price. Its name is <merchant>.<environment>.<code>
// (BillingPlanName), so the API server itself keeps codes unique per merchant and environment.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bplan,categories=paygate
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.merchantRef.name + '.' + self.spec.environment + '.' + self.spec.code",message="a BillingPlan's name must be <merchantRef.name>.<environment>.<code> (for example duka.sandbox.gold-monthly): that keeps a code unique per merchant and environment"
// +kubebuilder:printcolumn:name="Merchant",type=string,JSONPath=`.spec.merchantRef.name`
// +kubebuilder:printcolumn:name="Env",type=string,JSONPath=`.spec.environment`
// +kubebuilder:printcolumn:name="Code",type=string,JSONPath=`.spec.code`
// +kubebuilder:printcolumn:name="Amount",type=string,JSONPath=`.spec.amount`
// +kubebuilder:printcolumn:name="Currency",type=string,JSONPath=`.spec.currency`
// +kubebuilder:printcolumn:name="Every",type=integer,JSONPath=`.spec.intervalCount`
// +kubebuilder:printcolumn:name="Interval",type=string,JSONPath=`.spec.interval`
// +kubebuilder:printcolumn:name="Subscriptions",type=integer,JSONPath=`.status.subscriptions`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Window",type=string,JSONPath=`.spec.chargingWindow.start`,priority=1
// +kubebuilder:printcolumn:name="Until",type=string,JSONPath=`.spec.chargingWindow.end`,priority=1
// +kubebuilder:printcolumn:name="Time Zone",type=string,JSONPath=`.spec.chargingWindow.timeZone`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BillingPlan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the plan.
	// +required
	Spec BillingPlanSpec `json:"spec"`

	// status is what the controller found.
	// +optional
	Status BillingPlanStatus `json:"status,omitempty"`
}

// BillingPlanList contains a list of BillingPlan.
// +kubebuilder:object:root=true
type BillingPlanList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BillingPlan `json:"items"`
}

// BillingPlanName is the object name of a merchant's plan: "<merchant>.<environment>.<code>"
// (duka.sandbox.gold-monthly). Neither a code nor an environment contains a dot, so different
// (merchant, environment, code) triples never share a name, and creating the name is what
// claims the code (docs/billing.md, Names and ids).
func BillingPlanName(merchant string, env Environment, code string) string {
	return merchant + "." + string(env) + "." + code
}

func init() {
	SchemeBuilder.Register(&BillingPlan{}, &BillingPlanList{})
}
