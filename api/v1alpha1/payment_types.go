// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PaymentMode is how the customer pays.
// +kubebuilder:validation:Enum=hosted;push
type PaymentMode string

const (
	// PaymentModeHosted sends the customer to the hosted checkout page.
	PaymentModeHosted PaymentMode = "hosted"
	// PaymentModePush sends a mobile-money USSD prompt to the customer's phone.
	PaymentModePush PaymentMode = "push"
)

// PaymentPhase is the state of a payment (docs/payments.md).
// +kubebuilder:validation:Enum=pending;success;failed
type PaymentPhase string

const (
	// PaymentPending: created, not settled.
	PaymentPending PaymentPhase = "pending"
	// PaymentSuccess: settled. Terminal.
	PaymentSuccess PaymentPhase = "success"
	// PaymentFailed: failed, cancelled or expired. Terminal.
	PaymentFailed PaymentPhase = "failed"
)

// FailureCode says why a payment or a push attempt failed. A failed payment reports it as its
// reason (status.reason, the API's reason, the payment.failed webhook's data.reason); docs/payments.md
// lists them. Providers map their answers to these codes (internal/provider); a code an upstream
// provider names that is not listed here is passed through as it is (docs/upstream-provider.md).
type FailureCode string

// Failure codes.
const (
	// FailureInsufficientFunds: the customer's mobile-money account lacks the funds.
	FailureInsufficientFunds FailureCode = "INSUFFICIENT_FUNDS"
	// FailurePaymentDeclined: the provider or network declined the payment, or no gateway was left
	// to carry it.
	FailurePaymentDeclined FailureCode = "PAYMENT_DECLINED"
	// FailureCustomerCancelled: the customer cancelled the prompt on the phone.
	FailureCustomerCancelled FailureCode = "CUSTOMER_CANCELLED"
	// FailureExpiredSession: the checkout session ended while the payment was pending.
	FailureExpiredSession FailureCode = "EXPIRED_SESSION"
	// FailureInvalidAccount: the number is not a mobile-money account the provider can charge.
	FailureInvalidAccount FailureCode = "INVALID_ACCOUNT"
	// FailureProviderError: the provider reported a failure without saying why.
	FailureProviderError FailureCode = "PROVIDER_ERROR"
)

// Customer is who pays.
type Customer struct {
	// name of the customer.
	// +kubebuilder:validation:MaxLength=100
	// +optional
	Name string `json:"name,omitempty"`

	// email of the customer.
	// +kubebuilder:validation:MaxLength=100
	// +optional
	Email string `json:"email,omitempty"`

	// phone is the mobile number the USSD push goes to, in E.164 form.
	// +optional
	Phone MobileNumber `json:"phone,omitempty"`
}

// PushRequest asks the controller to send the customer a USSD prompt. The apiserver (push
// endpoint, hosted checkout) records one by raising sequence; the controller answers each
// sequence once.
type PushRequest struct {
	// sequence counts push requests; the controller pushes once per value.
	// +kubebuilder:validation:Minimum=1
	// +required
	Sequence int32 `json:"sequence"`

	// phone to push to, in E.164 form.
	// +required
	Phone MobileNumber `json:"phone"`

	// gateway the customer chose (a code); empty lets the controller pick (docs/payments.md, The
	// gateway of a push).
	// +optional
	Gateway GatewayCode `json:"gateway,omitempty"`

	// requestedAt is when the push was asked for, to the microsecond (the API reports it, and
	// updated_at moves with it).
	// +required
	RequestedAt metav1.MicroTime `json:"requestedAt"`
}

// PaymentSpec is a merchant's request for money, as the apiserver accepted it. It is written once
// by the apiserver; only pushRequest changes afterwards.
// +kubebuilder:validation:XValidation:rule="self.merchantRef == oldSelf.merchantRef && self.environment == oldSelf.environment && self.merchantReference == oldSelf.merchantReference && self.amount == oldSelf.amount && self.currency == oldSelf.currency",message="a payment's merchant, environment, reference, amount and currency are immutable"
type PaymentSpec struct {
	// merchantRef is the Merchant (same namespace) the payment is for.
	// +required
	MerchantRef MerchantReference `json:"merchantRef"`

	// environment the payment was created in.
	// +required
	Environment Environment `json:"environment"`

	// merchantReference is the merchant's order reference (ref_trx), unique per merchant and
	// environment.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=60
	// +required
	MerchantReference string `json:"merchantReference"`

	// amount in currency units, exact.
	// +required
	Amount Decimal `json:"amount"`

	// currency of the amount.
	// +required
	Currency CurrencyCode `json:"currency"`

	// mode is hosted (checkout page) or push (USSD prompt to customer.phone).
	// +kubebuilder:default=hosted
	// +optional
	Mode PaymentMode `json:"mode,omitempty"`

	// customer who pays.
	// +optional
	Customer Customer `json:"customer,omitempty"`

	// description shown in the merchant's transaction context.
	// +kubebuilder:validation:MaxLength=500
	// +optional
	Description string `json:"description,omitempty"`

	// webhookURL receives this payment's events; empty means the merchant's default.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	WebhookURL string `json:"webhookURL,omitempty"`

	// successRedirect is where hosted checkout sends the customer after success.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	SuccessRedirect string `json:"successRedirect,omitempty"`

	// cancelRedirect is where hosted checkout sends the customer after failure or cancel.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	CancelRedirect string `json:"cancelRedirect,omitempty"`

	// allowPaymentMethods are keywords that narrow the gateways (allow_payment_methods).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=64
	// +optional
	AllowPaymentMethods []string `json:"allowPaymentMethods,omitempty"`

	// gateways eligible when the payment was accepted, in order; the controller pushes through
	// one of them.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Gateways []GatewayCode `json:"gateways,omitempty"`

	// expiresAt ends the checkout session; a payment still pending then fails with
	// EXPIRED_SESSION.
	// +required
	ExpiresAt metav1.Time `json:"expiresAt"`

	// createdAt is when the apiserver accepted the payment, to the microsecond (the API reports
	// created_at with microseconds; metadata.creationTimestamp has seconds only).
	// +optional
	CreatedAt *metav1.MicroTime `json:"createdAt,omitempty"`

	// pushRequest is the latest request for a USSD push.
	// +optional
	PushRequest *PushRequest `json:"pushRequest,omitempty"`
}

// PaymentStatus is what the payment controller did.
type PaymentStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is pending, success or failed.
	// +optional
	Phase PaymentPhase `json:"phase,omitempty"`

	// reason is the API's code for a failure (INSUFFICIENT_FUNDS, PAYMENT_DECLINED,
	// EXPIRED_SESSION, ...).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Reason string `json:"reason,omitempty"`

	// gateway that carried the payment.
	// +optional
	Gateway GatewayCode `json:"gateway,omitempty"`

	// fee charged to the merchant, in currency units.
	// +optional
	Fee Decimal `json:"fee,omitempty"`

	// netAmount is amount minus fee, credited to the merchant's wallet.
	// +optional
	NetAmount Decimal `json:"netAmount,omitempty"`

	// settledAt is when the payment reached a terminal phase, to the microsecond (the API's
	// updated_at reports it; a sandbox payment may settle within a second of its creation).
	// +optional
	SettledAt *metav1.MicroTime `json:"settledAt,omitempty"`

	// remark is the provider's annotation: the simulator marks sandbox transactions
	// SANDBOX_TRANSACTION and simulated production ones SIMULATED_PRODUCTION.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Remark string `json:"remark,omitempty"`

	// attempts are the USSD pushes, newest last. Each is recorded (phase Initiating) before the
	// provider is called, so after a crash the controller asks the provider about that attempt
	// instead of pushing again.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	// +optional
	Attempts []PushAttempt `json:"attempts,omitempty"`

	// conditions: Ready summarises the payment.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AnnotationProviderCallback on a Payment records the latest verified provider callback
// ("<status> <RFC 3339 time>"), written by the apiserver. It only wakes the payment controller,
// which then asks the provider: the callback is a hint, the status query the authority.
const AnnotationProviderCallback = "paygate.dev/provider-callback"

// AnnotationProviderResult on a Payment or Payout records the result of a verified callback from
// a provider whose results arrive only by callback ("<reference> <STATUS> [<CODE>]": the attempt's
// reference, SUCCESS, FAILED, PENDING or AMBIGUOUS, and a failure code), written by the apiserver.
// The controller takes it as the provider's answer only for that attempt, and only where the
// provider has no status query to confirm it (provider.ErrAnswersByCallback).
const AnnotationProviderResult = "paygate.dev/provider-result"

// AnnotationProviderReference on a Payment records the provider's own id for an attempt, learnt
// from a verified callback ("<reference> <provider reference>", written by the apiserver): the
// M-Pesa Express CheckoutRequestID of a push whose acceptance was lost. The controller queries the
// provider with it, so the callback's claim is confirmed by a query before anything changes.
const AnnotationProviderReference = "paygate.dev/provider-reference"

// ParseProviderReference reads an AnnotationProviderReference value.
func ParseProviderReference(v string) (reference, providerReference string, ok bool) {
	fields := strings.Fields(v)
	if len(fields) != 2 {
		return "", "", false
	}
	return fields[0], fields[1], true
}

// ParseProviderResult reads an AnnotationProviderResult value.
func ParseProviderResult(v string) (reference, status, code string, ok bool) {
	fields := strings.Fields(v)
	if len(fields) < 2 || len(fields) > 3 {
		return "", "", "", false
	}
	switch fields[1] {
	case "SUCCESS", "FAILED", "PENDING", "AMBIGUOUS":
	default:
		return "", "", "", false
	}
	if len(fields) == 3 {
		code = fields[2]
	}
	return fields[0], fields[1], code, true
}

// ConditionLateSettlement on a failed Payment reports that the provider settled its last attempt
// after the payment failed: money to refund or reconcile.
const ConditionLateSettlement = "LateSettlement"

// AttemptPhase is where one push attempt stands.
// +kubebuilder:validation:Enum=Initiating;Pending;Ambiguous;Succeeded;Failed
type AttemptPhase string

const (
	// AttemptInitiating: recorded, the provider may or may not have received it.
	AttemptInitiating AttemptPhase = "Initiating"
	// AttemptPending: the provider accepted it; waiting for the customer.
	AttemptPending AttemptPhase = "Pending"
	// AttemptAmbiguous: the provider cannot tell yet; resolved by status queries only.
	AttemptAmbiguous AttemptPhase = "Ambiguous"
	// AttemptSucceeded: money moved.
	AttemptSucceeded AttemptPhase = "Succeeded"
	// AttemptFailed: money did not move.
	AttemptFailed AttemptPhase = "Failed"
)

// PushAttempt is one USSD push of a payment.
type PushAttempt struct {
	// sequence is the push request this attempt answers.
	// +required
	Sequence int32 `json:"sequence"`

	// reference is the idempotency reference sent to the provider: <namespace>.<trx_id>.<sequence>.
	// +kubebuilder:validation:MaxLength=128
	// +required
	Reference string `json:"reference"`

	// gateway the push went through.
	// +required
	Gateway GatewayCode `json:"gateway"`

	// phase of the attempt.
	// +required
	Phase AttemptPhase `json:"phase"`

	// providerReference is the provider's id for the push.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ProviderReference string `json:"providerReference,omitempty"`

	// code says why a failed attempt failed.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Code string `json:"code,omitempty"`

	// fees is the gateway's fee schedule when the attempt started; the fee of a successful
	// attempt is computed from it, whatever happens to the gateway later.
	// +optional
	Fees GatewayFees `json:"fees,omitempty"`

	// startedAt is when the attempt was recorded, to the microsecond.
	// +required
	StartedAt metav1.MicroTime `json:"startedAt"`

	// finishedAt is when the attempt reached Succeeded or Failed, to the microsecond.
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

// Payment is one payment session of a merchant. Its name is its trx_id.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pay,categories=paygate
// +kubebuilder:printcolumn:name="Merchant",type=string,JSONPath=`.spec.merchantRef.name`
// +kubebuilder:printcolumn:name="Env",type=string,JSONPath=`.spec.environment`
// +kubebuilder:printcolumn:name="Reference",type=string,JSONPath=`.spec.merchantReference`
// +kubebuilder:printcolumn:name="Amount",type=string,JSONPath=`.spec.amount`
// +kubebuilder:printcolumn:name="Currency",type=string,JSONPath=`.spec.currency`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Payment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the accepted payment request.
	// +required
	Spec PaymentSpec `json:"spec"`

	// status is what the controller did.
	// +optional
	Status PaymentStatus `json:"status,omitempty"`
}

// PaymentList contains a list of Payment.
// +kubebuilder:object:root=true
type PaymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Payment `json:"items"`
}

// Terminal reports whether the payment reached success or failed, which never change.
func (p *Payment) Terminal() bool {
	return p.Status.Phase == PaymentSuccess || p.Status.Phase == PaymentFailed
}

// MaxPushAttempts is the most push attempts a payment records (the CRD's bound on
// status.attempts).
const MaxPushAttempts = 20

// LatestAttempt returns the newest push attempt, or nil.
func (p *Payment) LatestAttempt() *PushAttempt {
	if len(p.Status.Attempts) == 0 {
		return nil
	}
	return &p.Status.Attempts[len(p.Status.Attempts)-1]
}

// PushUnanswered reports whether the latest push request has no attempt yet.
func (p *Payment) PushUnanswered() bool {
	last := p.LatestAttempt()
	return p.Spec.PushRequest != nil && (last == nil || last.Sequence < p.Spec.PushRequest.Sequence)
}

// AwaitingCustomer reports whether a prompt is on its way to the customer or waiting for them:
// a push request not yet answered, or an attempt that may still move money. While it is, no
// second push may start.
func (p *Payment) AwaitingCustomer() bool {
	return !p.Terminal() && (p.PushUnanswered() || p.LatestAttempt().InFlight())
}

// Watched reports whether the payment ended without the provider's final answer about its last
// attempt and the controller still asks about it (status.attempts[].watchUntil): it is not
// archived while it is.
func (p *Payment) Watched(now time.Time) bool {
	a := p.LatestAttempt()
	return p.Terminal() && a.InFlight() && a.WatchUntil != nil && now.Before(a.WatchUntil.Time)
}

// InFlight reports whether an attempt may still move money.
func (a *PushAttempt) InFlight() bool {
	return a != nil && a.Phase != AttemptSucceeded && a.Phase != AttemptFailed
}

// TimeLeft is how long the payment's checkout session still runs at now; zero or less once it
// has ended (at expiresAt exactly, the session has ended).
func (p *Payment) TimeLeft(now time.Time) time.Duration {
	return p.Spec.ExpiresAt.Sub(now)
}

// Expired reports whether the payment has expired at now: it failed with EXPIRED_SESSION, or it
// is pending and its session has ended (TimeLeft <= 0). The session is the collection's deadline:
// nothing is pushed at or after it, whatever the last attempt's phase, and an attempt whose
// outcome was still unknown is watched after it (docs/payments.md, The attempt protocol). The
// payment controller fails an expired pending payment with EXPIRED_SESSION, and the hosted
// checkout page shows it as expired: both decide with this method, so they agree.
func (p *Payment) Expired(now time.Time) bool {
	switch p.Phase() {
	case PaymentFailed:
		return FailureCode(p.Status.Reason) == FailureExpiredSession
	case PaymentPending:
		return p.TimeLeft(now) <= 0
	default:
		return false
	}
}

// Phase returns the payment's phase; a payment no controller has touched yet is pending.
func (p *Payment) Phase() PaymentPhase {
	if p.Status.Phase == "" {
		return PaymentPending
	}
	return p.Status.Phase
}

// Remarks that mark payments no real money moved for. Merchants see them as remark in payment
// records and webhooks (docs/sandbox.md).
const (
	// RemarkSandboxTransaction marks every sandbox payment.
	RemarkSandboxTransaction = "SANDBOX_TRANSACTION"
	// RemarkSimulatedProduction marks a production payment the simulator answered, through a
	// gateway with simulation SandboxAndProduction (a demo).
	RemarkSimulatedProduction = "SIMULATED_PRODUCTION"
)

// MerchantRemark is the remark merchants see: SANDBOX_TRANSACTION on every sandbox payment,
// SIMULATED_PRODUCTION on a production payment the simulator answered, else nothing (a provider's
// own remark is not passed on).
func (p *Payment) MerchantRemark() string { return merchantRemark(p.Spec.Environment, p.Status.Remark) }

// merchantRemark is the remark a merchant sees on a payment or payout of env whose provider
// stored remark: SANDBOX_TRANSACTION on everything in sandbox, SIMULATED_PRODUCTION on money a
// simulating gateway did not move in production, and nothing otherwise (a provider's own remark
// is for operators: the provider is never exposed to merchants).
func merchantRemark(env Environment, stored string) string {
	switch {
	case env == EnvironmentSandbox:
		return RemarkSandboxTransaction
	case stored == RemarkSimulatedProduction:
		return RemarkSimulatedProduction
	}
	return ""
}

// Settlement is the fee a payment charges the merchant and the net amount it credits them. It is
// the one rule that payment records, verification records and webhooks report
// (docs/payments.md, Fees and net amount):
//   - success: the fee and net amount stored when the payment settled;
//   - failed: fee 0 and net 0, as nothing was charged and nothing credited;
//   - pending: fee 0 and net equal to the amount, as nothing has been charged yet.
//
// Values are decimal text; callers render them at the currency's scale.
func (p *Payment) Settlement() (fee, net Decimal) {
	switch p.Phase() {
	case PaymentSuccess:
		if p.Status.Fee != "" && p.Status.NetAmount != "" {
			return p.Status.Fee, p.Status.NetAmount
		}
		return "0", p.Spec.Amount // settled without a recorded fee (never expected)
	case PaymentFailed:
		return "0", "0"
	}
	return "0", p.Spec.Amount
}

// SettledLate reports whether the provider settled p's last attempt after p failed: p is failed and
// its condition LateSettlement is True with reason SettledAfterFailure. What the money counts for
// is the merchant's policy when it was found (MerchantSpec.LateSettlement): under Credit and
// Refund the controller stores status.fee and status.netAmount as for a success, and the ledger
// counts the net amount; under Flag it stores none and nothing is counted.
func (p *Payment) SettledLate() bool {
	if p.Status.Phase != PaymentFailed {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == ConditionLateSettlement {
			return c.Status == metav1.ConditionTrue && c.Reason == "SettledAfterFailure"
		}
	}
	return false
}

func init() {
	SchemeBuilder.Register(&Payment{}, &PaymentList{})
}
