// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package v1alpha1 contains the API types of the paygate.dev group: the configuration that
// platform teams write (Gateway, Merchant, GatewaySelection) and the bookkeeping objects the
// controllers own (IDClaim).
//
// +kubebuilder:object:generate=true
// +groupName=paygate.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "paygate.dev", Version: "v1alpha1"}

	// SchemeBuilder is used to add Go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
