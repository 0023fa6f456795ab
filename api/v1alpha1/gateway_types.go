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
// +kubebuilder:validation:Enum=sandbox;upstream
type ProviderKind string

const (
	// ProviderSandbox is the in-process simulator; no money moves.
	ProviderSandbox ProviderKind = "sandbox"
	// ProviderUpstream is the upstream mobile-money provider, reached over HTTP.
	ProviderUpstream ProviderKind = "upstream"
)

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

	// provider carries the money: sandbox (the in-process simulator) or upstream (the
	// mobile-money provider).
	// +kubebuilder:default=sandbox
	// +optional
	Provider ProviderKind `json:"provider,omitempty"`

	// upstream configures the upstream provider; required when provider is upstream.
	// +optional
	Upstream *UpstreamConfig `json:"upstream,omitempty"`

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

	// conditions: Ready (False with reason ConfigInvalid when the spec cannot work), and
	// SimulatingProduction (a warning, True) while production payments are simulated.
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
	return g.Spec.Provider != ProviderUpstream && g.Spec.Simulation == SimulationSandboxAndProduction
}

// ServesEnvironment reports whether the gateway may carry payments of env. Every gateway serves
// sandbox (the simulator answers). In production an upstream gateway serves, and a gateway backed
// by the simulator only when it simulates production: a production payment never settles
// through the simulator unless its gateway opted in (docs/sandbox.md).
func (g *Gateway) ServesEnvironment(env Environment) bool {
	switch env {
	case EnvironmentSandbox:
		return true
	case EnvironmentProduction:
		return g.Spec.Provider == ProviderUpstream || g.SimulatesProduction()
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
