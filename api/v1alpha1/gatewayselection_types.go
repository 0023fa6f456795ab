// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MerchantReference names a Merchant in the same namespace.
type MerchantReference struct {
	// name of the Merchant.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +required
	Name string `json:"name"`
}

// GatewaySelectionSpec is a merchant's choice of gateways (the dashboard's Payment Gateway
// Controls). When a merchant has a selection, only the selected gateways are allowed, in every
// currency; with no selection (or an empty one) all active automatic gateways of a currency are.
type GatewaySelectionSpec struct {
	// merchantRef is the Merchant this selection belongs to. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="merchantRef is immutable"
	// +required
	MerchantRef MerchantReference `json:"merchantRef"`

	// gateways are the selected gateway codes, each listed once.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Gateways []GatewayCode `json:"gateways,omitempty"`
}

// GatewaySelection restricts which gateways a merchant's checkout may offer. At most one per
// merchant; the merchant's status reports a second one as invalid.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=gwsel,categories=paygate
// +kubebuilder:printcolumn:name="Merchant",type=string,JSONPath=`.spec.merchantRef.name`
// +kubebuilder:printcolumn:name="Gateways",type=string,JSONPath=`.spec.gateways`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GatewaySelection struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the selection.
	// +required
	Spec GatewaySelectionSpec `json:"spec"`
}

// GatewaySelectionList contains a list of GatewaySelection.
// +kubebuilder:object:root=true
type GatewaySelectionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GatewaySelection `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GatewaySelection{}, &GatewaySelectionList{})
}
