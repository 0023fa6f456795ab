// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package kube holds what every Paygate process that talks to Kubernetes shares: the scheme and
// the cache configuration. It depends on no controller, so the apiserver can use it too.
package kube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Scheme knows the built-in kinds and Paygate's.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("registering built-in kinds: %v", err))
	}
	if err := paygatev1.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("registering paygate.dev kinds: %v", err))
	}
	return s
}

// CacheOptions keep only the Secrets Paygate issues in the cache, not every Secret of the cluster,
// and compact every object before it is cached (compact.go).
func CacheOptions() cache.Options {
	issued, err := labels.NewRequirement(paygatev1.LabelCredential, selection.Exists, nil)
	if err != nil {
		panic(fmt.Sprintf("building the Secret selector: %v", err))
	}
	return cache.Options{
		DefaultTransform: compactObject,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}:     {Label: labels.NewSelector().Add(*issued)},
			&paygatev1.Payment{}: {Transform: compactPayment},
		},
	}
}
