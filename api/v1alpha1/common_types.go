// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// CurrencyCode is an ISO 4217 alphabetic currency code in upper case, limited to the currencies
// Paygate knows the minor-unit scale of (internal/money holds the same table; a unit test keeps
// the two in step).
// +kubebuilder:validation:Enum=AED;AUD;BHD;BIF;BWP;CAD;CDF;CHF;CNY;DJF;EGP;ETB;EUR;GBP;GHS;GNF;HKD;INR;IQD;JOD;JPY;KES;KMF;KRW;KWD;LYD;MAD;MUR;MWK;MZN;NGN;OMR;QAR;RWF;SAR;SOS;SSP;TND;TZS;UGX;USD;XAF;XOF;ZAR;ZMW
type CurrencyCode string

// Environment is one of the two worlds a merchant works in; each has its own credential set.
// +kubebuilder:validation:Enum=sandbox;production
type Environment string

const (
	// EnvironmentSandbox is the test environment: no real money moves.
	EnvironmentSandbox Environment = "sandbox"
	// EnvironmentProduction is the live environment.
	EnvironmentProduction Environment = "production"
)

// Environments lists both environments in a stable order.
var Environments = []Environment{EnvironmentSandbox, EnvironmentProduction}

// Decimal is an exact, non-negative decimal amount written as text ("1500", "0.5", "2.75").
// Money is never a float in Paygate's API.
// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]{0,17})(\.[0-9]{1,9})?$`
// +kubebuilder:validation:MaxLength=28
type Decimal string

// GatewayCode is the code of a Gateway, which is the Gateway's object name: a DNS label.
// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`
// +kubebuilder:validation:MaxLength=63
type GatewayCode string

// MobileNumber is a mobile (MSISDN) number in E.164 form with its leading plus: +255712345678.
// +kubebuilder:validation:Pattern=`^\+[1-9][0-9]{7,14}$`
// +kubebuilder:validation:MaxLength=16
type MobileNumber string

// DomainName is a lower-case DNS name. As an allow-list entry it matches itself and its
// subdomains.
// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`
// +kubebuilder:validation:MaxLength=253
type DomainName string

// Labels and annotations shared by every Paygate object.
const (
	// LabelMerchant names the Merchant an object belongs to.
	LabelMerchant = "paygate.dev/merchant"
	// LabelEnvironment names the environment (sandbox or production) of an object.
	LabelEnvironment = "paygate.dev/environment"
	// LabelCredential tells what a Secret issued by the merchant controller holds.
	LabelCredential = "paygate.dev/credential"

	// ConditionReady summarises an object's health.
	ConditionReady = "Ready"
	// ConditionProviderForgotAttempt on a Payment or Payout: the provider had accepted the
	// attempt and now answers that it knows no operation with its reference. Money may or may
	// not have moved; an operator checks with the provider (docs/payments.md, docs/payouts.md).
	ConditionProviderForgotAttempt = "ProviderForgotAttempt"
)

// Owner is the merchant and environment a payment belongs to; the apiserver shows an object only
// to the credentials of that merchant and environment.
func (p *Payment) Owner() (string, Environment) { return p.Spec.MerchantRef.Name, p.Spec.Environment }

// Owner is the merchant and environment a payout belongs to.
func (p *Payout) Owner() (string, Environment) { return p.Spec.MerchantRef.Name, p.Spec.Environment }

// Owner is the merchant and environment a refund belongs to.
func (r *Refund) Owner() (string, Environment) { return r.Spec.MerchantRef.Name, r.Spec.Environment }

// Owner is the merchant and environment a billing plan belongs to.
func (p *BillingPlan) Owner() (string, Environment) {
	return p.Spec.MerchantRef.Name, p.Spec.Environment
}

// Owner is the merchant and environment a subscription belongs to.
func (s *Subscription) Owner() (string, Environment) {
	return s.Spec.MerchantRef.Name, s.Spec.Environment
}

// Owner is the merchant and environment an invoice belongs to.
func (i *Invoice) Owner() (string, Environment) { return i.Spec.MerchantRef.Name, i.Spec.Environment }

// Owner is the merchant and environment a webhook delivery belongs to.
func (d *WebhookDelivery) Owner() (string, Environment) {
	return d.Spec.MerchantRef.Name, d.Spec.Environment
}
