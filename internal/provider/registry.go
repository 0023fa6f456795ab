// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"context"
	"errors"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Registry picks the provider of a payment: the sandbox environment always uses the simulator
// (no real money moves in sandbox); production uses the gateway's provider.
type Registry struct {
	Sandbox *Sandbox
	// Upstream builds the adapter of an upstream gateway (its URL and token come from the
	// gateway's configuration). Nil means no upstream provider is configured.
	Upstream func(ctx context.Context, gw *paygatev1.Gateway) (Provider, error)
}

// For returns the provider for gw in env.
func (r *Registry) For(ctx context.Context, gw *paygatev1.Gateway, env paygatev1.Environment) (Provider, error) {
	if env == paygatev1.EnvironmentSandbox || gw.Spec.Provider == paygatev1.ProviderSandbox || gw.Spec.Provider == "" {
		return Instrument("sandbox", r.Sandbox), nil
	}
	if r.Upstream == nil {
		return nil, errors.New("no upstream provider is configured")
	}
	p, err := r.Upstream(ctx, gw)
	if err != nil {
		return nil, err
	}
	return Instrument("upstream", p), nil
}
