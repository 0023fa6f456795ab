// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GatewayType tells whether a deposit method settles automatically or needs a person.
// +kubebuilder:validation:Enum=automatic;manual
type GatewayType string

const (
	// GatewayTypeAutomatic gateways settle by themselves (mobile-money push); only they appear
	// on hosted checkout.
	GatewayTypeAutomatic GatewayType = "automatic"
	// GatewayTypeManual gateways need a person to confirm the deposit.
	GatewayTypeManual GatewayType = "manual"
)

// ProviderKind names what carries a gateway's money.
// +kubebuilder:validation:Enum=sandbox;upstream;pawapay;daraja
type ProviderKind string

const (
	// ProviderSandbox is the in-process simulator; no money moves.
	ProviderSandbox ProviderKind = "sandbox"
	// ProviderUpstream is the upstream mobile-money provider, reached over HTTP.
	ProviderUpstream ProviderKind = "upstream"
	// ProviderPawapay is pawaPay's Merchant API v2 (spec.pawapay; docs/providers.md).
	ProviderPawapay ProviderKind = "pawapay"
	// ProviderDaraja is Safaricom's M-Pesa Daraja API (spec.daraja; docs/providers.md).
	ProviderDaraja ProviderKind = "daraja"
)

// IsRealProvider reports whether k is a provider that moves real money (every kind but sandbox).
func (k ProviderKind) IsRealProvider() bool { return k != "" && k != ProviderSandbox }

// GatewaySandboxRouting says where a gateway's sandbox payments go.
// +kubebuilder:validation:Enum=Simulator;Provider
type GatewaySandboxRouting string

const (
	// SandboxSimulator: sandbox payments go to the in-process simulator. The default.
	SandboxSimulator GatewaySandboxRouting = "Simulator"
	// SandboxProvider: sandbox payments go to the provider's own sandbox (a pawapay or daraja
	// gateway whose baseURL is sandbox, or an explicit URL).
	SandboxProvider GatewaySandboxRouting = "Provider"
)

// Named base URLs of spec.pawapay.baseURL and spec.daraja.baseURL.
const (
	// BaseURLSandbox names the provider's sandbox. A gateway on it serves no production payment.
	BaseURLSandbox = "sandbox"
	// BaseURLProduction names the provider's production API. The default.
	BaseURLProduction = "production"
)

// ConditionProviderReady on a pawapay or daraja Gateway says whether its credentials work and
// its provider is processing; while it is not True the gateway serves no payment that would go to
// the provider.
const ConditionProviderReady = "ProviderReady"

// PawapayCredentialsReference names the Secret holding a pawaPay API token.
type PawapayCredentialsReference struct {
	// namespace of the Secret (the manager's namespace, as for spec.upstream). The Secret must
	// carry the label paygate.dev/credential=pawapay.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Namespace string `json:"namespace"`

	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// key of the Secret holding the Merchant API token (default token).
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:default=token
	// +optional
	Key string `json:"key,omitempty"`
}

// PawapayConfig says how a gateway reaches pawaPay's Merchant API v2 (docs/providers.md).
type PawapayConfig struct {
	// baseURL is sandbox (https://api.sandbox.pawapay.io), production (https://api.pawapay.io, the
	// default) or an explicit https URL (http only to a loopback host, for tests). A gateway on the sandbox
	// serves no production payment.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self == 'sandbox' || self == 'production' || (isURL(self) && (self.startsWith('https://') || (self.startsWith('http://') && url(self).getHostname() in ['127.0.0.1', '::1', 'localhost'])))",message="pawapay.baseURL must be sandbox, production, an https URL, or an http URL of a loopback host"
	// +kubebuilder:default=production
	// +optional
	BaseURL string `json:"baseURL,omitempty"`

	// provider is the pawaPay provider (mobile-money operator) code, for example VODACOM_TZA.
	// +kubebuilder:validation:Pattern=`^[A-Z0-9_]{3,40}$`
	// +kubebuilder:validation:MaxLength=40
	// +required
	Provider string `json:"provider"`

	// country is the ISO 3166-1 alpha-3 country of the provider, for example TZA (optional: it
	// narrows pawaPay's configuration and availability answers).
	// +kubebuilder:validation:Pattern=`^[A-Z]{3}$`
	// +kubebuilder:validation:MaxLength=3
	// +optional
	Country string `json:"country,omitempty"`

	// credentialsSecretRef is the Secret with the Merchant API token.
	// +required
	CredentialsSecretRef PawapayCredentialsReference `json:"credentialsSecretRef"`

	// timeoutSeconds bounds each call to pawaPay (default 10).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=120
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// signedCallbacks says pawaPay signs this account's callbacks (enabled in pawaPay's
	// dashboard): the apiserver then refuses a callback without a valid signature. Without it a
	// signature that is present is still checked. A callback only wakes the payment's controller,
	// which asks pawaPay for the status before anything changes.
	// +optional
	SignedCallbacks bool `json:"signedCallbacks,omitempty"`
}

// DarajaTransactionType is the M-Pesa Express transaction type.
// +kubebuilder:validation:Enum=CustomerPayBillOnline;CustomerBuyGoodsOnline
type DarajaTransactionType string

// DarajaConfig says how a gateway reaches Safaricom's M-Pesa Daraja API (docs/providers.md).
type DarajaConfig struct {
	// baseURL is sandbox (https://sandbox.safaricom.co.ke), production
	// (https://api.safaricom.co.ke, the default) or an explicit https URL (http only to a loopback
	// host, for tests). A gateway on the sandbox serves no production payment.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self == 'sandbox' || self == 'production' || (isURL(self) && (self.startsWith('https://') || (self.startsWith('http://') && url(self).getHostname() in ['127.0.0.1', '::1', 'localhost'])))",message="daraja.baseURL must be sandbox, production, an https URL, or an http URL of a loopback host"
	// +kubebuilder:default=production
	// +optional
	BaseURL string `json:"baseURL,omitempty"`

	// shortCode is the M-Pesa Express BusinessShortCode: the pay bill number, or the till's head
	// office shortcode.
	// +kubebuilder:validation:Pattern=`^[0-9]{5,7}$`
	// +kubebuilder:validation:MaxLength=7
	// +required
	ShortCode string `json:"shortCode"`

	// tillNumber receives Buy Goods payments (PartyB); empty means shortCode.
	// +kubebuilder:validation:Pattern=`^[0-9]{5,7}$`
	// +kubebuilder:validation:MaxLength=7
	// +optional
	TillNumber string `json:"tillNumber,omitempty"`

	// transactionType is CustomerPayBillOnline (the default) or CustomerBuyGoodsOnline.
	// +kubebuilder:default=CustomerPayBillOnline
	// +optional
	TransactionType DarajaTransactionType `json:"transactionType,omitempty"`

	// b2cShortCode is the B2C organisation shortcode that pays payouts (optional; needs the
	// Secret's initiatorName, initiatorPassword and certificate).
	// +kubebuilder:validation:Pattern=`^[0-9]{5,7}$`
	// +kubebuilder:validation:MaxLength=7
	// +optional
	B2CShortCode string `json:"b2cShortCode,omitempty"`

	// credentialsSecretRef is a Secret labelled paygate.dev/credential=daraja with the keys
	// consumerKey, consumerSecret, passkey and callbackSecret (at least 16 bytes), and for B2C and
	// queries initiatorName, initiatorPassword and certificate (Safaricom's PEM certificate).
	// +required
	CredentialsSecretRef SecretReference `json:"credentialsSecretRef"`

	// timeoutSeconds bounds each call to Daraja (default 20).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=120
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
}

// ProviderLimits are what the provider accepts, as the gateway controller last read them.
type ProviderLimits struct {
	// minAmount is the provider's smallest deposit, in currency units (absent: no minimum known).
	// +optional
	MinAmount *Decimal `json:"minAmount,omitempty"`

	// maxAmount is the provider's largest deposit, in currency units (absent: no maximum known).
	// +optional
	MaxAmount *Decimal `json:"maxAmount,omitempty"`

	// decimals is how many decimal places an amount may carry (0: whole units only).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4
	Decimals int32 `json:"decimals"`
}

// GatewaySimulation says which environments the in-process simulator answers for a gateway.
// +kubebuilder:validation:Enum=SandboxOnly;SandboxAndProduction
type GatewaySimulation string

const (
	// SimulationSandboxOnly: the simulator answers sandbox payments only. A gateway whose provider
	// is sandbox then serves no production payment. The default.
	SimulationSandboxOnly GatewaySimulation = "SandboxOnly"
	// SimulationSandboxAndProduction: a gateway whose provider is sandbox also simulates
	// production payments, for demos. They settle with no money moved and carry the remark
	// SIMULATED_PRODUCTION; the gateway shows the SimulatingProduction condition. Refused on an
	// upstream gateway.
	SimulationSandboxAndProduction GatewaySimulation = "SandboxAndProduction"
)

// ConditionSimulatingProduction on a Gateway warns that its production payments are simulated:
// they settle and no money moves.
const ConditionSimulatingProduction = "SimulatingProduction"

// GatewayFees is a gateway's fee schedule: fee = amount × percent / 100 + fixed, rounded half-up
// to the currency's scale.
// +kubebuilder:validation:XValidation:rule="!has(self.percent) || quantity(self.percent).compareTo(quantity('100')) <= 0",message="fees.percent must be at most 100"
type GatewayFees struct {
	// percent is the proportional part of the fee, in percent of the amount ("2.5" is 2.5 %),
	// with at most 4 decimal places.
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]{0,2})(\.[0-9]{1,4})?$`
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:default="0"
	// +optional
	Percent string `json:"percent,omitempty"`

	// fixed is the flat part of the fee, in currency units; at most the currency's decimal
	// places (checked by the gateway controller, reported in the Ready condition).
	// +kubebuilder:default="0"
	// +optional
	Fixed Decimal `json:"fixed,omitempty"`
}

// SecretReference names a Secret.
type SecretReference struct {
	// namespace of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Namespace string `json:"namespace"`

	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}

// UpstreamConfig says how to reach the upstream mobile-money provider of a gateway.
type UpstreamConfig struct {
	// baseURL of the provider's API (docs/upstream-provider.md).
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (self.startsWith('https://') || self.startsWith('http://'))",message="upstream.baseURL must be an http(s) URL"
	// +required
	BaseURL string `json:"baseURL"`

	// secretRef is a Secret labelled paygate.dev/credential=upstream with the keys token (the
	// bearer token) and callbackSecret (verifies the provider's callbacks).
	// +required
	SecretRef SecretReference `json:"secretRef"`

	// timeoutSeconds bounds each call to the provider (default 10).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=120
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
}

// GatewaySpec is a deposit method that platform teams offer to merchants.
// +kubebuilder:validation:XValidation:rule="!has(self.provider) || self.provider != 'upstream' || has(self.upstream)",message="an upstream gateway needs spec.upstream"
// +kubebuilder:validation:XValidation:rule="(has(self.provider) && self.provider == 'pawapay') == has(self.pawapay)",message="spec.pawapay is required with provider pawapay and allowed only with it"
// +kubebuilder:validation:XValidation:rule="(has(self.provider) && self.provider == 'daraja') == has(self.daraja)",message="spec.daraja is required with provider daraja and allowed only with it"
// +kubebuilder:validation:XValidation:rule="!has(self.upstream) || (has(self.provider) && self.provider == 'upstream') || (has(self.provider) && self.provider == 'sandbox')",message="spec.upstream is not allowed with provider pawapay or daraja"
// +kubebuilder:validation:XValidation:rule="!has(self.sandbox) || self.sandbox != 'Provider' || (has(self.provider) && (self.provider == 'pawapay' || self.provider == 'daraja'))",message="sandbox Provider needs provider pawapay or daraja"
// +kubebuilder:validation:XValidation:rule="!has(self.sandbox) || self.sandbox != 'Provider' || !has(self.pawapay) || !has(self.pawapay.baseURL) || self.pawapay.baseURL != 'production'",message="sandbox Provider would send sandbox payments to pawaPay production: set pawapay.baseURL to sandbox"
// +kubebuilder:validation:XValidation:rule="!has(self.sandbox) || self.sandbox != 'Provider' || !has(self.daraja) || !has(self.daraja.baseURL) || self.daraja.baseURL != 'production'",message="sandbox Provider would send sandbox payments to Daraja production: set daraja.baseURL to sandbox"
// +kubebuilder:validation:XValidation:rule="!has(self.daraja) || self.currency == 'KES'",message="a daraja gateway collects KES"
// +kubebuilder:validation:XValidation:rule="!has(self.minAmount) || !has(self.maxAmount) || quantity(self.minAmount).compareTo(quantity(self.maxAmount)) <= 0",message="minAmount must not be above maxAmount"
// +kubebuilder:validation:XValidation:rule="self.currency == oldSelf.currency",message="currency is immutable: create a new Gateway for another currency"
// +kubebuilder:validation:XValidation:rule="!has(self.simulation) || self.simulation != 'SandboxAndProduction' || !has(self.provider) || self.provider == 'sandbox'",message="simulation SandboxAndProduction needs provider sandbox: an upstream gateway's production payments always go to the provider"
type GatewaySpec struct {
	// displayName is what customers see on hosted checkout, for example "M-Pesa Tanzania".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	// +required
	DisplayName string `json:"displayName"`

	// currency is the one ISO 4217 currency this gateway collects. A gateway never serves
	// another currency.
	// +required
	Currency CurrencyCode `json:"currency"`

	// type is automatic (settles by itself; can appear on hosted checkout) or manual.
	// +kubebuilder:default=automatic
	// +optional
	Type GatewayType `json:"type,omitempty"`

	// active takes the gateway in or out of service without deleting it.
	// +kubebuilder:default=true
	// +optional
	Active *bool `json:"active,omitempty"`

	// fees is the fee schedule charged to the merchant on each settled payment.
	// +kubebuilder:default={}
	// +optional
	Fees GatewayFees `json:"fees,omitempty"`

	// minAmount is the smallest payment this gateway accepts, in currency units.
	// +optional
	MinAmount *Decimal `json:"minAmount,omitempty"`

	// maxAmount is the largest payment this gateway accepts, in currency units.
	// +optional
	MaxAmount *Decimal `json:"maxAmount,omitempty"`

	// provider carries the money: sandbox (the in-process simulator), upstream (the upstream
	// mobile-money provider), pawapay (pawaPay, spec.pawapay) or daraja (M-Pesa Daraja,
	// spec.daraja).
	// +kubebuilder:default=sandbox
	// +optional
	Provider ProviderKind `json:"provider,omitempty"`

	// upstream configures the upstream provider; required when provider is upstream.
	// +optional
	Upstream *UpstreamConfig `json:"upstream,omitempty"`

	// pawapay configures pawaPay; required when provider is pawapay, refused otherwise.
	// +optional
	Pawapay *PawapayConfig `json:"pawapay,omitempty"`

	// daraja configures M-Pesa Daraja; required when provider is daraja, refused otherwise.
	// +optional
	Daraja *DarajaConfig `json:"daraja,omitempty"`

	// sandbox says where sandbox payments through this gateway go: Simulator (the default, the
	// in-process simulator) or Provider (the provider's own sandbox; only with provider pawapay
	// or daraja whose baseURL is not production).
	// +kubebuilder:default=Simulator
	// +optional
	Sandbox GatewaySandboxRouting `json:"sandbox,omitempty"`

	// simulation says which environments the in-process simulator answers for this gateway.
	// SandboxOnly (the default): sandbox payments only, so a gateway whose provider is sandbox
	// serves no production payment. SandboxAndProduction: a sandbox-provider gateway also
	// simulates production payments, for demos only: they settle with no money moved and carry
	// the remark SIMULATED_PRODUCTION (docs/sandbox.md). Not allowed with provider upstream.
	// +kubebuilder:default=SandboxOnly
	// +optional
	Simulation GatewaySimulation `json:"simulation,omitempty"`

	// payouts, when set, makes this gateway the disbursement method of its currency: merchants'
	// payouts in the currency go through it, with this fee schedule and these limits
	// (docs/payouts.md).
	// +optional
	Payouts *PayoutSchedule `json:"payouts,omitempty"`
}

// PayoutSchedule is what a gateway charges for disbursing a payout, and the amounts it pays out.
// +kubebuilder:validation:XValidation:rule="!has(self.minAmount) || !has(self.maxAmount) || quantity(self.minAmount).compareTo(quantity(self.maxAmount)) <= 0",message="payouts.minAmount must not be above payouts.maxAmount"
type PayoutSchedule struct {
	// fees is kept from each payout: fee = amount x percent / 100 + fixed, half up at the
	// currency's scale; the settlement number receives amount - fee.
	// +kubebuilder:default={}
	// +optional
	Fees GatewayFees `json:"fees,omitempty"`

	// minAmount is the smallest payout, in currency units.
	// +optional
	MinAmount *Decimal `json:"minAmount,omitempty"`

	// maxAmount is the largest payout, in currency units.
	// +optional
	MaxAmount *Decimal `json:"maxAmount,omitempty"`
}

// GatewayStatus is what the gateway controller observed.
type GatewayStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// id is the gateway's stable integer id, reported to merchants as a deposit method id.
	// Assigned once, never reused (see docs/decisions.md).
	// +optional
	ID int64 `json:"id,omitempty"`

	// providerLimits are the provider's limits and decimal places, as last read from it
	// (pawapay: its active configuration; daraja: whole shillings). The apiserver refuses an
	// amount outside them.
	// +optional
	ProviderLimits *ProviderLimits `json:"providerLimits,omitempty"`

	// conditions: Ready (False with reason ConfigInvalid when the spec cannot work, or while the
	// provider is unusable), ProviderReady (pawapay and daraja gateways: credentials work and the
	// provider is processing), and SimulatingProduction (a warning, True) while production
	// payments are simulated.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// IsActive reports whether the gateway is in service (active defaults to true).
func (g *Gateway) IsActive() bool { return g.Spec.Active == nil || *g.Spec.Active }

// Code is the gateway's code: its object name.
func (g *Gateway) Code() GatewayCode { return GatewayCode(g.Name) }

// SimulatesProduction reports whether the simulator answers the gateway's production payments:
// a sandbox-provider gateway that opted in with simulation SandboxAndProduction.
func (g *Gateway) SimulatesProduction() bool {
	return !g.Spec.Provider.IsRealProvider() && g.Spec.Simulation == SimulationSandboxAndProduction
}

// ServesEnvironment reports whether the gateway may carry payments of env. Every gateway serves
// sandbox (the simulator answers). In production an upstream gateway serves, and a gateway backed
// by the simulator only when it simulates production: a production payment never settles
// through the simulator unless its gateway opted in (docs/sandbox.md).
//
// A pawapay or daraja gateway serves production unless its baseURL is the provider's sandbox, and
// only while its ProviderReady condition is True; its sandbox payments go to the simulator, or with
// spec.sandbox Provider to the provider (then they too need ProviderReady).
func (g *Gateway) ServesEnvironment(env Environment) bool {
	switch env {
	case EnvironmentSandbox:
		if g.SandboxToProvider() {
			return g.ProviderReady()
		}
		return true
	case EnvironmentProduction:
		switch g.Spec.Provider {
		case ProviderUpstream:
			return true
		case ProviderPawapay, ProviderDaraja:
			return g.ProviderBaseURL() != BaseURLSandbox && g.ProviderReady()
		}
		return g.SimulatesProduction()
	}
	return false
}

// SandboxToProvider reports whether the gateway's sandbox payments go to its provider (spec.sandbox
// Provider on a pawapay or daraja gateway) instead of the simulator.
func (g *Gateway) SandboxToProvider() bool {
	return g.Spec.Sandbox == SandboxProvider && (g.Spec.Provider == ProviderPawapay || g.Spec.Provider == ProviderDaraja)
}

// ProviderBaseURL is the configured baseURL of a pawapay or daraja gateway (production when unset),
// "" for other gateways.
func (g *Gateway) ProviderBaseURL() string {
	var u string
	switch {
	case g.Spec.Provider == ProviderPawapay && g.Spec.Pawapay != nil:
		u = g.Spec.Pawapay.BaseURL
	case g.Spec.Provider == ProviderDaraja && g.Spec.Daraja != nil:
		u = g.Spec.Daraja.BaseURL
	default:
		return ""
	}
	if u == "" {
		return BaseURLProduction
	}
	return u
}

// ProviderReady reports whether the gateway controller found the gateway's provider usable for
// the current generation (ConditionProviderReady True). Gateways of other providers are always
// ready.
func (g *Gateway) ProviderReady() bool {
	if g.Spec.Provider != ProviderPawapay && g.Spec.Provider != ProviderDaraja {
		return true
	}
	for _, c := range g.Status.Conditions {
		if c.Type == ConditionProviderReady {
			return c.Status == metav1.ConditionTrue && c.ObservedGeneration == g.Generation
		}
	}
	return false
}

// Gateway is a deposit method (a mobile-money network in one currency). Its name is its code.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=gw,categories=paygate
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$')",message="a Gateway's name is its code: a DNS label of at most 63 characters"
// +kubebuilder:printcolumn:name="Currency",type=string,JSONPath=`.spec.currency`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`
// +kubebuilder:printcolumn:name="Simulation",type=string,JSONPath=`.spec.simulation`
// +kubebuilder:printcolumn:name="Active",type=boolean,JSONPath=`.spec.active`
// +kubebuilder:printcolumn:name="Fee %",type=string,JSONPath=`.spec.fees.percent`
// +kubebuilder:printcolumn:name="ID",type=integer,JSONPath=`.status.id`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Gateway struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired gateway.
	// +required
	Spec GatewaySpec `json:"spec"`

	// status is what the controller observed.
	// +optional
	Status GatewayStatus `json:"status,omitempty"`
}

// GatewayList contains a list of Gateway.
// +kubebuilder:object:root=true
type GatewayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gateway `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Gateway{}, &GatewayList{})
}
