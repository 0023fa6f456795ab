// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IDClaimKind names the kind of object an integer id belongs to.
// +kubebuilder:validation:Enum=Gateway;Merchant
type IDClaimKind string

const (
	// IDClaimGateway ids are deposit method ids.
	IDClaimGateway IDClaimKind = "Gateway"
	// IDClaimMerchant ids are merchant ids.
	IDClaimMerchant IDClaimKind = "Merchant"
)

// IDClaimName is the object name that holds integer id n of a kind: "merchant-12". Creating it
// is what claims the id: the API server lets only one writer create a name.
func IDClaimName(kind IDClaimKind, n int64) string {
	if kind == IDClaimGateway {
		return fmt.Sprintf("gateway-%d", n)
	}
	return fmt.Sprintf("merchant-%d", n)
}

// IDClaimOwner is the object an id was assigned to.
type IDClaimOwner struct {
	// namespace of the owner; empty for cluster-scoped owners.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// name of the owner.
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// uid of the owner: the id belongs to this one object, not to a later one of the same name.
	// +kubebuilder:validation:MaxLength=64
	// +required
	UID string `json:"uid"`
}

// IDClaimSpec records that an integer id belongs to an object.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an IDClaim is immutable"
type IDClaimSpec struct {
	// kind of the owner.
	// +required
	Kind IDClaimKind `json:"kind"`

	// id is the integer id.
	// +kubebuilder:validation:Minimum=1
	// +required
	ID int64 `json:"id"`

	// owner is the object the id belongs to.
	// +required
	Owner IDClaimOwner `json:"owner"`
}

// IDClaim holds one integer id of a Gateway or Merchant. Ids are never reused: a claim stays
// after its owner is deleted.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=paygate
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.kind`
// +kubebuilder:printcolumn:name="ID",type=integer,JSONPath=`.spec.id`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.owner.namespace`
// +kubebuilder:printcolumn:name="Owner",type=string,JSONPath=`.spec.owner.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type IDClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the claim.
	// +required
	Spec IDClaimSpec `json:"spec"`
}

// IDClaimList contains a list of IDClaim.
// +kubebuilder:object:root=true
type IDClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IDClaim `json:"items"`
}

func init() {
	SchemeBuilder.Register(&IDClaim{}, &IDClaimList{})
}
