// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "testing"

func TestGatewayServesEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name                string
		provider            ProviderKind
		simulation          GatewaySimulation
		sandbox, production bool
	}{
		{"simulator, defaults", "", "", true, false},
		{"simulator, sandbox only", ProviderSandbox, SimulationSandboxOnly, true, false},
		{"simulator opted in to simulate production", ProviderSandbox, SimulationSandboxAndProduction, true, true},
		{"simulator by default provider, opted in", "", SimulationSandboxAndProduction, true, true},
		{"upstream", ProviderUpstream, "", true, true},
		{"upstream, sandbox only", ProviderUpstream, SimulationSandboxOnly, true, true},
		// Refused at apply time; should one get through, the provider still carries production.
		{"upstream with the opt-in", ProviderUpstream, SimulationSandboxAndProduction, true, true},
	} {
		g := &Gateway{Spec: GatewaySpec{Provider: tc.provider, Simulation: tc.simulation}}
		if got := g.ServesEnvironment(EnvironmentSandbox); got != tc.sandbox {
			t.Errorf("%s: serves sandbox = %v, want %v", tc.name, got, tc.sandbox)
		}
		if got := g.ServesEnvironment(EnvironmentProduction); got != tc.production {
			t.Errorf("%s: serves production = %v, want %v", tc.name, got, tc.production)
		}
		if got := g.SimulatesProduction(); got != (tc.production && tc.provider != ProviderUpstream) {
			t.Errorf("%s: SimulatesProduction = %v", tc.name, got)
		}
		if g.ServesEnvironment("staging") {
			t.Errorf("%s: serves an unknown environment", tc.name)
		}
	}
}
