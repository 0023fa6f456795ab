// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"net/url"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BusinessStatus is where a business stands with the platform.
// +kubebuilder:validation:Enum=pending;approved;rejected;disabled
type BusinessStatus string

const (
	// BusinessPending may use sandbox only.
	BusinessPending BusinessStatus = "pending"
	// BusinessApproved may use production; its production credentials are issued.
	BusinessApproved BusinessStatus = "approved"
	// BusinessRejected is blocked in both environments.
	BusinessRejected BusinessStatus = "rejected"
	// BusinessDisabled is blocked in both environments.
	BusinessDisabled BusinessStatus = "disabled"
)

// KYBStatus is the state of the business's know-your-business review.
// +kubebuilder:validation:Enum=pending;approved;rejected
type KYBStatus string

const (
	// KYBPending is under review.
	KYBPending KYBStatus = "pending"
	// KYBApproved passed the review; needed for live collection and payouts.
	KYBApproved KYBStatus = "approved"
	// KYBRejected failed the review.
	KYBRejected KYBStatus = "rejected"
)

// Wallet is a merchant owner's receiver wallet in one currency.
type Wallet struct {
	// currency of the wallet; must be one of the merchant's supported currencies.
	// +required
	Currency CurrencyCode `json:"currency"`

	// active wallets receive payments; an inactive wallet blocks payments in its currency.
	// +kubebuilder:default=true
	// +optional
	Active *bool `json:"active,omitempty"`
}

// IsActive reports whether the wallet receives payments (active defaults to true).
func (w Wallet) IsActive() bool { return w.Active == nil || *w.Active }

// WebhookURLs are the merchant's default webhook (IPN) URLs, one per environment, used when a
// payment names none.
// +kubebuilder:validation:XValidation:rule="!has(self.production) || self.production.startsWith('https://')",message="webhookURLs.production must be an https:// URL"
type WebhookURLs struct {
	// sandbox is the default webhook URL for sandbox payments.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (self.startsWith('https://') || self.startsWith('http://'))",message="webhookURLs.sandbox must be an http:// or https:// URL"
	// +optional
	Sandbox string `json:"sandbox,omitempty"`

	// production is the default webhook URL for live payments; it must be HTTPS.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self)",message="webhookURLs.production must be a URL"
	// +optional
	Production string `json:"production,omitempty"`
}

// The rules of CurrencySettlementNumber list the currencies that have a phone region in
// internal/money's currency table, with their countries' calling codes;
// TestSettlementNumberRulesMatchPhoneRegions (internal/payouts) keeps them in step.

// CurrencySettlementNumber is where payouts in one currency go: a mobile-money number of the
// currency's country. A currency can have one when Paygate knows its country's mobile numbers:
// GHS, KES, MWK, NGN, RWF, TZS, UGX and ZMW.
// +kubebuilder:validation:XValidation:rule="self.currency in ['GHS', 'KES', 'MWK', 'NGN', 'RWF', 'TZS', 'UGX', 'ZMW']",message="a settlement number can be set per currency only for GHS, KES, MWK, NGN, RWF, TZS, UGX and ZMW, whose countries' mobile numbers Paygate knows"
// +kubebuilder:validation:XValidation:rule="!(self.currency in ['GHS', 'KES', 'MWK', 'NGN', 'RWF', 'TZS', 'UGX', 'ZMW']) || (self.currency + self.number.substring(0, 4)) in ['GHS+233', 'KES+254', 'MWK+265', 'NGN+234', 'RWF+250', 'TZS+255', 'UGX+256', 'ZMW+260']",message="a settlement number must be of its currency's country: +233 for GHS, +254 for KES, +265 for MWK, +234 for NGN, +250 for RWF, +255 for TZS, +256 for UGX, +260 for ZMW"
type CurrencySettlementNumber struct {
	// currency of the payouts that go to this number; must be one of the merchant's currencies.
	// +required
	Currency CurrencyCode `json:"currency"`

	// number is the approved mobile number payouts in currency go to, in E.164 form, of the
	// currency's country (+254... for KES, +255... for TZS).
	// +required
	Number MobileNumber `json:"number"`
}

// RateLimit overrides the API's default request rate for one merchant.
type RateLimit struct {
	// requestsPerMinute allowed per business and client IP (the default is 120).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +required
	RequestsPerMinute int32 `json:"requestsPerMinute"`
}

// MerchantSpec is a business that takes payments through Paygate.
// +kubebuilder:validation:XValidation:rule="!has(self.wallets) || self.wallets.all(w, w.currency in self.currencies)",message="every wallet must be in one of the merchant's currencies"
// +kubebuilder:validation:XValidation:rule="!has(self.settlementNumbers) || self.settlementNumbers.all(s, s.currency in self.currencies)",message="every settlement number in settlementNumbers must be in one of the merchant's currencies"
type MerchantSpec struct {
	// displayName is the business's name as customers and merchants see it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	// +required
	DisplayName string `json:"displayName"`

	// owner is the person or account that owns the business and its wallets (an e-mail
	// address or a user name).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	// +required
	Owner string `json:"owner"`

	// currencies the merchant is enabled for (layer 1 of checkout options).
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +required
	Currencies []CurrencyCode `json:"currencies"`

	// wallets of the owner, at most one per currency (layer 2 of checkout options).
	// +listType=map
	// +listMapKey=currency
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Wallets []Wallet `json:"wallets,omitempty"`

	// businessStatus: pending businesses use sandbox only; approved ones get production
	// credentials; rejected and disabled ones are blocked.
	// +kubebuilder:default=pending
	// +optional
	BusinessStatus BusinessStatus `json:"businessStatus,omitempty"`

	// kybStatus is the know-your-business review; approved is needed for live collection and
	// payouts.
	// +kubebuilder:default=pending
	// +optional
	KYBStatus KYBStatus `json:"kybStatus,omitempty"`

	// settlementNumber is the approved mobile number that payouts go to, in E.164 form. Payouts
	// through it are made in the currency of its country (+255... in TZS, +254... in KES), which
	// is also the currency of a payout request that names none. settlementNumbers overrides it for
	// the currencies it lists.
	// +optional
	SettlementNumber MobileNumber `json:"settlementNumber,omitempty"`

	// settlementNumbers are approved mobile numbers per currency, for a merchant paid out in
	// several: payouts in a listed currency go to its number instead of settlementNumber
	// (docs/payouts.md). Each currency must be one of the merchant's currencies and each number
	// of its currency's country.
	// +listType=map
	// +listMapKey=currency
	// +kubebuilder:validation:MaxItems=8
	// +optional
	SettlementNumbers []CurrencySettlementNumber `json:"settlementNumbers,omitempty"`

	// webhookURLs are the default webhook URLs per environment.
	// +optional
	WebhookURLs WebhookURLs `json:"webhookURLs,omitempty"`

	// allowedRedirectDomains, when set, limit the hosts of success and cancel redirects; an
	// entry matches itself and its subdomains.
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +optional
	AllowedRedirectDomains []DomainName `json:"allowedRedirectDomains,omitempty"`

	// allowedWebhookDomains, when set, limit the hosts of webhook URLs; an entry matches itself
	// and its subdomains.
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +optional
	AllowedWebhookDomains []DomainName `json:"allowedWebhookDomains,omitempty"`

	// rateLimit overrides the default request rate for this merchant.
	// +optional
	RateLimit *RateLimit `json:"rateLimit,omitempty"`

	// checkoutLifetimeMinutes is how long this merchant's checkout sessions last before a pending
	// payment fails with EXPIRED_SESSION (default: the apiserver's --checkout-lifetime, 30).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1440
	// +optional
	CheckoutLifetimeMinutes int32 `json:"checkoutLifetimeMinutes,omitempty"`

	// webhookFormat is how this merchant's payment webhooks are shaped and signed: Standard
	// (the default: the event envelope, signed over "<timestamp>.<body>") or LegacyIPN (the
	// older gateway's IPN: {"data", "message", "status", "timestamp"} with X-Signature over the
	// raw body, for receivers written for it; docs/migrating.md). A change applies to events
	// created after it.
	// +kubebuilder:default=Standard
	// +optional
	WebhookFormat WebhookFormat `json:"webhookFormat,omitempty"`

	// legacyIPNSigningKey is the key of LegacyIPN's X-Signature: WebhookSecret (the default:
	// the merchant's webhook signing secret) or APISecret (the environment's API secret, as the
	// older gateway signed).
	// +kubebuilder:default=WebhookSecret
	// +optional
	LegacyIPNSigningKey WebhookSigningKey `json:"legacyIPNSigningKey,omitempty"`

	// unsignedRequests lists the environments in which this merchant's API requests may come
	// without X-Timestamp and X-Signature, for integrations that cannot sign (the older gateway's
	// plugin). The API key is still checked, and a request that does carry a signature is still
	// verified. Off by default; production is honoured only when the apiserver also runs with
	// --allow-unsigned-production (docs/migrating.md).
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	// +optional
	UnsignedRequests []Environment `json:"unsignedRequests,omitempty"`

	// lateSettlement is what happens to money the provider settled after its payment had failed
	// (condition LateSettlement=True, SettledAfterFailure; docs/ledger.md): Flag (the default:
	// the payment is only flagged, nothing is counted, an operator refunds or reconciles it),
	// Credit (the payment's net amount, its fee taken as on a success, counts in the balance) or
	// Refund (the whole amount counts in the balance, without a fee, and a Refund of it to the
	// customer is created once, so the merchant ends with nothing). The policy in force when the
	// late settlement is found applies; a change does not revisit payments already settled late.
	// +kubebuilder:default=Flag
	// +optional
	LateSettlement LateSettlementPolicy `json:"lateSettlement,omitempty"`
}

// LateSettlementPolicy is what a merchant makes of a late settlement.
// +kubebuilder:validation:Enum=Flag;Credit;Refund
type LateSettlementPolicy string

const (
	// LateSettlementFlag only flags the payment: nothing is counted, an operator decides.
	LateSettlementFlag LateSettlementPolicy = "Flag"
	// LateSettlementCredit counts the payment's net amount (amount - fee) in the balance.
	LateSettlementCredit LateSettlementPolicy = "Credit"
	// LateSettlementRefund counts the payment's whole amount and refunds it to the customer.
	LateSettlementRefund LateSettlementPolicy = "Refund"
)

// LateSettlementPolicy is the merchant's policy for late settlements, Flag when unset.
func (s *MerchantSpec) LateSettlementPolicy() LateSettlementPolicy {
	if s.LateSettlement == "" {
		return LateSettlementFlag
	}
	return s.LateSettlement
}

// AcceptsUnsigned tells whether the merchant lets requests of env come unsigned.
func (s *MerchantSpec) AcceptsUnsigned(env Environment) bool {
	for _, e := range s.UnsignedRequests {
		if e == env {
			return true
		}
	}
	return false
}

// WebhookFormat is the shape and signature of a merchant's webhooks.
// +kubebuilder:validation:Enum=Standard;LegacyIPN
type WebhookFormat string

const (
	// WebhookFormatStandard is Paygate's event envelope, signed over "<timestamp>.<body>".
	WebhookFormatStandard WebhookFormat = "Standard"
	// WebhookFormatLegacyIPN is the older gateway's IPN payload with X-Signature over the body.
	WebhookFormatLegacyIPN WebhookFormat = "LegacyIPN"
)

// WebhookSigningKey names the key a legacy IPN is signed with.
// +kubebuilder:validation:Enum=WebhookSecret;APISecret
type WebhookSigningKey string

const (
	// SigningKeyWebhookSecret is the merchant's webhook signing secret.
	SigningKeyWebhookSecret WebhookSigningKey = "WebhookSecret"
	// SigningKeyAPISecret is the API secret of the event's environment.
	SigningKeyAPISecret WebhookSigningKey = "APISecret"
)

// Format is the merchant's webhook format, Standard when unset.
func (s *MerchantSpec) Format() WebhookFormat {
	if s.WebhookFormat == "" {
		return WebhookFormatStandard
	}
	return s.WebhookFormat
}

// CredentialSetStatus tells where one environment's credentials are. It holds nothing secret.
type CredentialSetStatus struct {
	// businessID is the X-Merchant-Key of this environment. It identifies the merchant and is
	// not a secret.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	BusinessID string `json:"businessID,omitempty"`

	// secretName is the Secret (in the merchant's namespace) holding businessID, apiKey and
	// apiSecret.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// previousKeyExpiresAt is, during a rotation's overlap, when the API key and secret the
	// rotation replaced stop working; absent when only the current ones work.
	// +optional
	PreviousKeyExpiresAt *metav1.Time `json:"previousKeyExpiresAt,omitempty"`
}

// CurrencyGateways are the gateways that can appear on hosted checkout for one currency, after
// the three layers: currency enabled, active wallet, and the merchant's selection.
type CurrencyGateways struct {
	// currency of the checkout.
	// +required
	Currency CurrencyCode `json:"currency"`

	// gateways are the codes that can appear, in code order; empty when none can.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Gateways []GatewayCode `json:"gateways"`

	// reason says why no gateway can appear, when none can: WalletMissing, WalletInactive,
	// NoActiveGateway or NoneSelected.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Reason string `json:"reason,omitempty"`
}

// MerchantStatus is what the merchant controller observed and issued.
type MerchantStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// id is the merchant's stable integer id (info.merchant_id). Assigned once, never reused.
	// +optional
	ID int64 `json:"id,omitempty"`

	// sandbox credentials: issued always.
	// +optional
	Sandbox CredentialSetStatus `json:"sandbox,omitempty"`

	// production credentials: issued once the business is approved.
	// +optional
	Production CredentialSetStatus `json:"production,omitempty"`

	// webhookSigningSecretName is the Secret holding the webhook signing secret.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	WebhookSigningSecretName string `json:"webhookSigningSecretName,omitempty"`

	// webhookSigningSecretPendingSince is when the pending webhook signing secret (prepared, not
	// yet signing) was issued; absent when there is none.
	// +optional
	WebhookSigningSecretPendingSince *metav1.Time `json:"webhookSigningSecretPendingSince,omitempty"`

	// checkoutGateways lists, per supported currency, the gateways hosted checkout can show.
	// +listType=map
	// +listMapKey=currency
	// +kubebuilder:validation:MaxItems=16
	// +optional
	CheckoutGateways []CurrencyGateways `json:"checkoutGateways,omitempty"`

	// conditions: Ready, SandboxCredentialsIssued, ProductionEnabled, WebhookSecretIssued, and
	// InvalidGatewaySelection when the selection names a gateway that cannot serve.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Merchant condition types and reasons.
const (
	ConditionSandboxCredentialsIssued = "SandboxCredentialsIssued"
	ConditionProductionEnabled        = "ProductionEnabled"
	ConditionWebhookSecretIssued      = "WebhookSecretIssued"
	ConditionInvalidGatewaySelection  = "InvalidGatewaySelection"
	// ConditionUnsignedRequestsAccepted is True while spec.unsignedRequests lets requests come
	// without a signature in some environment (its message names them).
	ConditionUnsignedRequestsAccepted = "UnsignedRequestsAccepted"
)

// Annotations that ask the merchant controller to rotate a credential set. Set the value to
// anything new (a timestamp is usual); the controller rotates once per distinct value.
const (
	AnnotationRotateSandboxCredentials    = "paygate.dev/rotate-sandbox-credentials"
	AnnotationRotateProductionCredentials = "paygate.dev/rotate-production-credentials"
	AnnotationRotateWebhookSecret         = "paygate.dev/rotate-webhook-secret"
	// AnnotationCredentialsOverlap is how long the API key and secret a rotation replaces keep
	// working beside the new ones: a Go duration from 0s to 168h, 24h when absent. Read when a
	// rotation is answered.
	AnnotationCredentialsOverlap = "paygate.dev/credentials-overlap"
	// AnnotationEndSandboxOverlap and AnnotationEndProductionOverlap end a rotation's overlap now:
	// set to anything new, and the replaced credentials stop working at once.
	AnnotationEndSandboxOverlap    = "paygate.dev/end-sandbox-credentials-overlap"
	AnnotationEndProductionOverlap = "paygate.dev/end-production-credentials-overlap"
	// AnnotationPrepareWebhookSecret issues a pending webhook signing secret (set to anything new)
	// that does not sign yet; AnnotationActivateWebhookSecret (set to anything new) makes the
	// pending secret the one that signs. Between the two the merchant installs the pending secret
	// on the receiver beside the current one, so the receiver can verify every delivery.
	AnnotationPrepareWebhookSecret  = "paygate.dev/prepare-webhook-secret"
	AnnotationActivateWebhookSecret = "paygate.dev/activate-webhook-secret"
	// AnnotationManagedBy says who manages the merchant's configuration (for example "Argo CD,
	// platform team"): the console shows the pages that would change it (gateways, webhook URLs)
	// read-only, naming who to ask. Keys and secrets, which live in Secrets, stay self-service.
	AnnotationManagedBy = "paygate.dev/managed-by"
)

// Merchant is a business that takes payments. Its controller issues its credentials.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mch,categories=paygate
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40",message="a Merchant's name is at most 40 characters (its Secrets are named after it)"
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="Business",type=string,JSONPath=`.spec.businessStatus`
// +kubebuilder:printcolumn:name="KYB",type=string,JSONPath=`.spec.kybStatus`
// +kubebuilder:printcolumn:name="ID",type=integer,JSONPath=`.status.id`
// +kubebuilder:printcolumn:name="Sandbox Key",type=string,JSONPath=`.status.sandbox.businessID`,priority=1
// +kubebuilder:printcolumn:name="Production",type=string,JSONPath=`.status.conditions[?(@.type=="ProductionEnabled")].status`
// +kubebuilder:printcolumn:name="Webhooks",type=string,JSONPath=`.spec.webhookFormat`
// +kubebuilder:printcolumn:name="Unsigned",type=string,JSONPath=`.status.conditions[?(@.type=="UnsignedRequestsAccepted")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Merchant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired merchant.
	// +required
	Spec MerchantSpec `json:"spec"`

	// status is what the controller observed and issued.
	// +optional
	Status MerchantStatus `json:"status,omitempty"`
}

// MerchantList contains a list of Merchant.
// +kubebuilder:object:root=true
type MerchantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Merchant `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Merchant{}, &MerchantList{})
}

// For is the default webhook URL of env ("" when none is set).
func (w WebhookURLs) For(env Environment) string {
	if env == EnvironmentProduction {
		return w.Production
	}
	return w.Sandbox
}

// URLProblem checks a webhook or redirect URL a merchant gives as field, in env, against the
// merchant's allowed domains (none: any host). It returns "" when the URL is acceptable, else the
// sentence the merchant API answers for it: the URL must be absolute http or https without user
// information, at most 2048 bytes, HTTPS in production, and of an allowed host. Where a webhook
// may then be sent is also limited when it is sent (private addresses are refused).
func URLProblem(field, raw string, env Environment, allowed []DomainName) string {
	u, err := url.Parse(raw)
	if len(raw) > 2048 || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Sprintf("The %s must be an absolute http or https URL.", field)
	}
	if env == EnvironmentProduction && u.Scheme != "https" {
		return fmt.Sprintf("The %s must use HTTPS in production.", field)
	}
	if len(allowed) > 0 && !HostAllowed(u.Hostname(), allowed) {
		return fmt.Sprintf("The %s host is not in the merchant's allowed domains.", field)
	}
	return ""
}

// HostAllowed reports whether host is one of the domains or a subdomain of one.
func HostAllowed(host string, domains []DomainName) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, d := range domains {
		if host == string(d) || strings.HasSuffix(host, "."+string(d)) {
			return true
		}
	}
	return false
}
