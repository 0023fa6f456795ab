// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IdempotencyKeySpec records the first request made with a merchant's Idempotency-Key. Its name
// is derived from the merchant, the environment, the route and the key, so the API server lets
// exactly one request claim a key.
// +kubebuilder:validation:XValidation:rule="self.requestHash == oldSelf.requestHash && self.expiresAt == oldSelf.expiresAt",message="an idempotency key's request is immutable"
type IdempotencyKeySpec struct {
	// merchantRef is the Merchant that sent the key.
	// +required
	MerchantRef MerchantReference `json:"merchantRef"`

	// environment the key was used in.
	// +required
	Environment Environment `json:"environment"`

	// requestHash is the SHA-256 (hex) of the method, route and body of the first request.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	// +required
	RequestHash string `json:"requestHash"`

	// expiresAt is when the key may be used again for another request (24 hours after first use).
	// +required
	ExpiresAt metav1.Time `json:"expiresAt"`

	// response is the first request's response, replayed to retries; empty while it is being
	// processed.
	// +optional
	Response *StoredResponse `json:"response,omitempty"`
}

// StoredResponse is an HTTP response kept for replay.
type StoredResponse struct {
	// statusCode of the response.
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=599
	// +required
	StatusCode int32 `json:"statusCode"`

	// body of the response (JSON).
	// +kubebuilder:validation:MaxLength=65536
	// +required
	Body string `json:"body"`
}

// IdempotencyKey holds one merchant Idempotency-Key for 24 hours.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=idem,categories=paygate
// +kubebuilder:printcolumn:name="Merchant",type=string,JSONPath=`.spec.merchantRef.name`
// +kubebuilder:printcolumn:name="Env",type=string,JSONPath=`.spec.environment`
// +kubebuilder:printcolumn:name="Status",type=integer,JSONPath=`.spec.response.statusCode`
// +kubebuilder:printcolumn:name="Expires",type=date,JSONPath=`.spec.expiresAt`
type IdempotencyKey struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the recorded request and response.
	// +required
	Spec IdempotencyKeySpec `json:"spec"`
}

// IdempotencyKeyList contains a list of IdempotencyKey.
// +kubebuilder:object:root=true
type IdempotencyKeyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IdempotencyKey `json:"items"`
}

func init() {
	SchemeBuilder.Register(&IdempotencyKey{}, &IdempotencyKeyList{})
}
