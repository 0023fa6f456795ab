// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SubscriptionPhase is where a subscription stands (docs/billing.md, Subscription lifecycle).
// +kubebuilder:validation:Enum=pending;active;past_due;suspended;cancelled
type SubscriptionPhase string

const (
	// SubscriptionPending: consent recorded, the first charge not paid yet (retries included).
	SubscriptionPending SubscriptionPhase = "pending"
	// SubscriptionActive: the latest invoice is paid.
	SubscriptionActive SubscriptionPhase = "active"
	// SubscriptionPastDue: a renewal charge failed and is being retried (dunning).
	SubscriptionPastDue SubscriptionPhase = "past_due"
	// SubscriptionSuspended: maxFailures charges of one invoice failed in a row; no charge is
	// scheduled until the subscription is resumed (spec.resumeSequence).
	SubscriptionSuspended SubscriptionPhase = "suspended"
	// SubscriptionCancelled: cancelled by the merchant. Terminal.
	SubscriptionCancelled SubscriptionPhase = "cancelled"
)

// SubscriptionCancel is how a merchant cancels a subscription.
// +kubebuilder:validation:Enum=immediately;atPeriodEnd
type SubscriptionCancel string

const (
	// CancelImmediately cancels now: no further invoice, and an open invoice with no charge on
	// the customer's phone is voided. Final.
	CancelImmediately SubscriptionCancel = "immediately"
	// CancelAtPeriodEnd lets the current paid period run out and opens no further invoice. It
	// can be withdrawn (removed) until the period ends.
	CancelAtPeriodEnd SubscriptionCancel = "atPeriodEnd"
)

// Labels of billing objects, beside paygate.dev/merchant and paygate.dev/environment.
const (
	// LabelPlanCode on a Subscription names its plan's code.
	LabelPlanCode = "paygate.dev/plan-code"
	// LabelSubscription on an Invoice names its Subscription (the object name).
	LabelSubscription = "paygate.dev/subscription"
	// LabelInvoice on a Payment names the Invoice the payment is a charge attempt of.
	LabelInvoice = "paygate.dev/invoice"
)

// BillingPlanReference names a BillingPlan in the same namespace.
type BillingPlanReference struct {
	// name of the BillingPlan: <merchant>.<environment>.<code>.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=120
	// +required
	Name string `json:"name"`
}

// ConsentRecorder is which API credentials recorded a consent: the business ID (public, never
// a secret) and its environment.
type ConsentRecorder struct {
	// businessID is the X-Merchant-Key the request was signed with (test_mk_... or live_mk_...).
	// +kubebuilder:validation:Pattern=`^(test|live)_mk_[a-z2-7]{24}$`
	// +kubebuilder:validation:MaxLength=40
	// +required
	BusinessID string `json:"businessID"`

	// environment of the credentials.
	// +required
	Environment Environment `json:"environment"`
}

// SubscriptionConsent is the customer's consent as the API recorded it: what they were shown,
// when, from where, and the price at that moment (docs/billing.md, Consent). It is immutable.
type SubscriptionConsent struct {
	// termsShown are the recurring terms shown to the customer, verbatim (terms_shown).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +required
	TermsShown string `json:"termsShown"`

	// termsSHA256 is the lower-case hex SHA-256 of termsShown's UTF-8 bytes.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	// +kubebuilder:validation:MaxLength=64
	// +required
	TermsSHA256 string `json:"termsSHA256"`

	// recordedAt is when the API recorded the consent, to the microsecond. The first period
	// starts at this time, truncated to the second.
	// +required
	RecordedAt metav1.MicroTime `json:"recordedAt"`

	// clientIP is the IP address the subscription request came from.
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="consent.clientIP must be an IP address"
	// +required
	ClientIP string `json:"clientIP"`

	// userAgent is the User-Agent of the subscription request, cut to 512 characters.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	UserAgent string `json:"userAgent,omitempty"`

	// planAmount is the plan's amount when the customer consented.
	// +required
	PlanAmount Decimal `json:"planAmount"`

	// planCurrency is the plan's currency when the customer consented.
	// +required
	PlanCurrency CurrencyCode `json:"planCurrency"`

	// planInterval is the plan's interval when the customer consented.
	// +required
	PlanInterval BillingInterval `json:"planInterval"`

	// planIntervalCount is the plan's interval count when the customer consented.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=365
	// +required
	PlanIntervalCount int32 `json:"planIntervalCount"`

	// recordedBy is which API credentials recorded the consent.
	// +required
	RecordedBy ConsentRecorder `json:"recordedBy"`
}

// TestClock moves a sandbox subscription's own clock ahead of the real one, as the advance
// endpoint does (docs/billing.md, Test clock).
type TestClock struct {
	// offsetSeconds is how far the subscription's clock runs ahead of real time. Subscription
	// time is real time plus this offset; it only grows.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=315576000
	// +required
	OffsetSeconds int64 `json:"offsetSeconds"`
}

// SubscriptionSpec is a customer's recurring payment for a plan, with the consent the API
// recorded. Only webhookURL, cancel, resumeSequence and testClock change after creation.
// +kubebuilder:validation:XValidation:rule="self.merchantRef == oldSelf.merchantRef && self.environment == oldSelf.environment && self.planRef == oldSelf.planRef && self.planCode == oldSelf.planCode && self.customerPhone == oldSelf.customerPhone",message="a subscription's merchantRef, environment, plan and customerPhone are immutable: create a new subscription"
// +kubebuilder:validation:XValidation:rule="self.planRef.name == self.merchantRef.name + '.' + self.environment + '.' + self.planCode",message="planRef.name must be <merchantRef.name>.<environment>.<planCode>, the plan's object name"
// +kubebuilder:validation:XValidation:rule="self.consent.recordedBy.environment == self.environment",message="consent.recordedBy.environment must be the subscription's environment"
// +kubebuilder:validation:XValidation:rule="self.consent.planCurrency != 'TZS' || self.customerPhone.matches('^[+]255[67][0-9]{8}$')",message="customerPhone must be a Tanzanian mobile number in E.164 form for a TZS plan: +255 and 9 digits starting with 6 or 7"
// +kubebuilder:validation:XValidation:rule="self.consent.planCurrency != 'KES' || self.customerPhone.matches('^[+]254[17][0-9]{8}$')",message="customerPhone must be a Kenyan mobile number in E.164 form for a KES plan: +254 and 9 digits starting with 7 or 1"
// +kubebuilder:validation:XValidation:rule="!has(self.webhookURL) || self.environment != 'production' || self.webhookURL.startsWith('https://')",message="a production subscription's webhookURL must be an https:// URL"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.cancel) || oldSelf.cancel != 'immediately' || (has(self.cancel) && self.cancel == 'immediately')",message="cancel: immediately is final: a cancelled subscription cannot be resumed; create a new one"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.resumeSequence) || (has(self.resumeSequence) && self.resumeSequence >= oldSelf.resumeSequence)",message="resumeSequence only increases: raise it by one to resume a suspended subscription"
// +kubebuilder:validation:XValidation:rule="!has(self.testClock) || self.environment == 'sandbox'",message="testClock is for sandbox subscriptions only: a production subscription follows the real clock"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.testClock) || (has(self.testClock) && self.testClock.offsetSeconds >= oldSelf.testClock.offsetSeconds)",message="a test clock only moves forward: testClock.offsetSeconds cannot decrease or be removed"
type SubscriptionSpec struct {
	// merchantRef is the Merchant (same namespace) the customer pays.
	// +required
	MerchantRef MerchantReference `json:"merchantRef"`

	// environment of the subscription: the plan's and the credentials' environment.
	// +required
	Environment Environment `json:"environment"`

	// planRef is the BillingPlan subscribed to.
	// +required
	PlanRef BillingPlanReference `json:"planRef"`

	// planCode is the plan's code (plan_code in the API).
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	// +required
	PlanCode string `json:"planCode"`

	// customerPhone is the mobile number every charge's USSD prompt goes to, in E.164 form, of the
	// country of the plan's currency: a TZS plan charges a Tanzanian number (+255 and 9 digits
	// starting with 6 or 7), a KES plan a Kenyan one (+254 and 9 digits starting with 7 or 1).
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+][1-9][0-9]{7,14}$')",message="customerPhone must be a mobile number in E.164 form, such as +255712345678"
	// +required
	CustomerPhone MobileNumber `json:"customerPhone"`

	// webhookURL receives the subscription's and its invoices' events; empty means the
	// merchant's default for the environment.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (self.startsWith('https://') || self.startsWith('http://'))",message="webhookURL must be an http:// or https:// URL"
	// +optional
	WebhookURL string `json:"webhookURL,omitempty"`

	// consent is the customer's recorded consent. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="consent is immutable: it records what the customer agreed to"
	// +required
	Consent SubscriptionConsent `json:"consent"`

	// cancel, when set, cancels the subscription: immediately (final) or atPeriodEnd (can be
	// removed again until the period ends).
	// +optional
	Cancel SubscriptionCancel `json:"cancel,omitempty"`

	// resumeSequence resumes a suspended subscription each time it is raised: the controller
	// answers every value once (status.resumedSequence), clears the failure count and charges
	// the current period's invoice again. It only increases.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	ResumeSequence int32 `json:"resumeSequence,omitempty"`

	// testClock runs a sandbox subscription's clock ahead of real time, so renewals, dunning and
	// suspension can be watched in minutes. Sandbox only.
	// +optional
	TestClock *TestClock `json:"testClock,omitempty"`
}

// SubscriptionStatus is what the billing controller did. Its times are on the subscription's
// clock: real time plus spec.testClock.offsetSeconds (the same as real time without a test
// clock).
type SubscriptionStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is pending, active, past_due, suspended or cancelled.
	// +optional
	Phase SubscriptionPhase `json:"phase,omitempty"`

	// currentPeriod is the number of the latest invoice's period (the first period is 1).
	// +kubebuilder:validation:Minimum=0
	// +optional
	CurrentPeriod int32 `json:"currentPeriod,omitempty"`

	// currentPeriodStart is when the current period began.
	// +optional
	CurrentPeriodStart *metav1.Time `json:"currentPeriodStart,omitempty"`

	// currentPeriodEnd is when the current period ends and the next one begins.
	// +optional
	CurrentPeriodEnd *metav1.Time `json:"currentPeriodEnd,omitempty"`

	// latestInvoice is the name of the invoice of the current period.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	LatestInvoice string `json:"latestInvoice,omitempty"`

	// nextChargeAt is when the controller will next prompt the customer: a renewal or a dunning
	// retry, inside the charging window. Empty while a prompt is out, and when suspended or
	// cancelled.
	// +optional
	NextChargeAt *metav1.Time `json:"nextChargeAt,omitempty"`

	// consecutiveFailures counts the current invoice's failed charges in a row; a paid charge or
	// a resume sets it back to 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`

	// confirmedAt is when the customer first approved a charge with their PIN: the customer's
	// confirmation of the consent. Set once.
	// +optional
	ConfirmedAt *metav1.MicroTime `json:"confirmedAt,omitempty"`

	// confirmedInvoice is the invoice whose paid charge confirmed the subscription.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ConfirmedInvoice string `json:"confirmedInvoice,omitempty"`

	// confirmedPayment is the trx_id of that paid charge.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ConfirmedPayment string `json:"confirmedPayment,omitempty"`

	// suspendedAt is when the subscription was last suspended.
	// +optional
	SuspendedAt *metav1.Time `json:"suspendedAt,omitempty"`

	// resumedSequence is the latest spec.resumeSequence the controller answered.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ResumedSequence int32 `json:"resumedSequence,omitempty"`

	// cancelledAt is when the subscription was cancelled.
	// +optional
	CancelledAt *metav1.Time `json:"cancelledAt,omitempty"`

	// conditions: Ready summarises the subscription.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subscription is a customer's recurring payment for a BillingPlan. Its name is "sub-" and 24
// characters of lower-case base32; the API's id is "sub_" and the same characters
// (SubscriptionAPIID).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sub,categories=paygate
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^sub-[a-z2-7]{24}$')",message="a Subscription's name is sub- and 24 characters of a-z and 2-7 (its API id is sub_ and the same characters)"
// +kubebuilder:printcolumn:name="Merchant",type=string,JSONPath=`.spec.merchantRef.name`
// +kubebuilder:printcolumn:name="Env",type=string,JSONPath=`.spec.environment`
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.spec.planCode`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Period",type=integer,JSONPath=`.status.currentPeriod`
// +kubebuilder:printcolumn:name="Period End",type=date,JSONPath=`.status.currentPeriodEnd`
// +kubebuilder:printcolumn:name="Next Charge",type=date,JSONPath=`.status.nextChargeAt`
// +kubebuilder:printcolumn:name="Failures",type=integer,JSONPath=`.status.consecutiveFailures`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Cancel",type=string,JSONPath=`.spec.cancel`,priority=1
// +kubebuilder:printcolumn:name="Clock Offset",type=integer,JSONPath=`.spec.testClock.offsetSeconds`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Subscription struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the subscription and its consent.
	// +required
	Spec SubscriptionSpec `json:"spec"`

	// status is what the controller did.
	// +optional
	Status SubscriptionStatus `json:"status,omitempty"`
}

// SubscriptionList contains a list of Subscription.
// +kubebuilder:object:root=true
type SubscriptionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Subscription `json:"items"`
}

// Prefixes of a subscription's object name and of its id in the API (docs/billing.md, Names and
// ids): object names cannot hold "_", the API's ids use it.
const (
	SubscriptionNamePrefix  = "sub-"
	SubscriptionAPIIDPrefix = "sub_"
)

// SubscriptionName is the object name of subscription id (the 24 characters after the prefix):
// "sub-" + id.
func SubscriptionName(id string) string { return SubscriptionNamePrefix + id }

// SubscriptionAPIID is the API's id of the subscription named name: "sub_" and the characters
// after "sub-". A name without the prefix is returned unchanged.
func SubscriptionAPIID(name string) string {
	if id, ok := strings.CutPrefix(name, SubscriptionNamePrefix); ok {
		return SubscriptionAPIIDPrefix + id
	}
	return name
}

// SubscriptionNameFromAPIID is the object name of the subscription the API calls apiID
// ("sub_<id>"), or false when apiID does not have that form: 24 characters of lower-case
// base32 after "sub_". Such an id names no subscription (the API answers 404).
func SubscriptionNameFromAPIID(apiID string) (string, bool) {
	id, ok := strings.CutPrefix(apiID, SubscriptionAPIIDPrefix)
	if !ok || len(id) != 24 {
		return "", false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('a' <= c && c <= 'z') && !('2' <= c && c <= '7') {
			return "", false
		}
	}
	return SubscriptionName(id), true
}

// APIID is the subscription's id in the API: "sub_<id>".
func (s *Subscription) APIID() string { return SubscriptionAPIID(s.Name) }

// Phase returns the subscription's phase; one no controller has touched yet is pending.
func (s *Subscription) Phase() SubscriptionPhase {
	if s.Status.Phase == "" {
		return SubscriptionPending
	}
	return s.Status.Phase
}

// ClockOffsetSeconds is how far the subscription's clock runs ahead of real time (0 without a
// test clock).
func (s *Subscription) ClockOffsetSeconds() int64 {
	if s.Spec.TestClock == nil {
		return 0
	}
	return s.Spec.TestClock.OffsetSeconds
}

func init() {
	SchemeBuilder.Register(&Subscription{}, &SubscriptionList{})
}
