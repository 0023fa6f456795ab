// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

func TestRegistryNeverSimulatesProductionUnlessTheGatewayOptedIn(t *testing.T) {
	ctx := context.Background()
	upstream := NewSandbox(SandboxOptions{}) // stands in for an upstream adapter
	r := &Registry{Sandbox: NewSandbox(SandboxOptions{}), Upstream: func(context.Context, *paygatev1.Gateway) (Provider, error) {
		return upstream, nil
	}}
	gw := func(provider paygatev1.ProviderKind, sim paygatev1.GatewaySimulation) *paygatev1.Gateway {
		return &paygatev1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "mpesa-tz"},
			Spec: paygatev1.GatewaySpec{Provider: provider, Simulation: sim}}
	}
	for _, tc := range []struct {
		name       string
		gw         *paygatev1.Gateway
		env        paygatev1.Environment
		refused    bool
		remark     string
		toUpstream bool
	}{
		{"sandbox payment, simulator gateway", gw(paygatev1.ProviderSandbox, ""), paygatev1.EnvironmentSandbox, false, SandboxRemark, false},
		{"sandbox payment, upstream gateway", gw(paygatev1.ProviderUpstream, ""), paygatev1.EnvironmentSandbox, false, SandboxRemark, false},
		{"production, simulator gateway by default", gw("", ""), paygatev1.EnvironmentProduction, true, "", false},
		{"production, simulator gateway, sandbox only", gw(paygatev1.ProviderSandbox, paygatev1.SimulationSandboxOnly), paygatev1.EnvironmentProduction, true, "", false},
		{"production, simulator gateway opted in", gw(paygatev1.ProviderSandbox, paygatev1.SimulationSandboxAndProduction), paygatev1.EnvironmentProduction, false, SimulatedProductionRemark, false},
		{"production, upstream gateway", gw(paygatev1.ProviderUpstream, ""), paygatev1.EnvironmentProduction, false, SandboxRemark, true},
		{"an unknown environment, simulator gateway", gw(paygatev1.ProviderSandbox, paygatev1.SimulationSandboxAndProduction), "staging", true, "", false},
	} {
		p, err := r.For(ctx, tc.gw, tc.env)
		if tc.refused {
			if !errors.Is(err, ErrProductionNotSimulated) || p != nil {
				t.Errorf("%s: For = %v, %v; want ErrProductionNotSimulated", tc.name, p, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		ref := "demo.trx-" + tc.name + ".1"
		res, err := p.Push(ctx, PushRequest{Reference: ref, Phone: "+255712345678", Amount: "1500.00", Currency: "TZS"})
		if err != nil || res.Remark != tc.remark {
			t.Errorf("%s: push = %+v, %v; want remark %q", tc.name, res, err, tc.remark)
		}
		if res, err = p.PushStatus(ctx, PushRequest{Reference: ref, Phone: "+255712345678"}); err != nil || res.Remark != tc.remark || res.Status != StatusSuccess {
			t.Errorf("%s: push status = %+v, %v; want success with remark %q", tc.name, res, err, tc.remark)
		}
		if got := upstream.Pushes(ref) == 1; got != tc.toUpstream {
			t.Errorf("%s: reached the upstream provider = %v, want %v", tc.name, got, tc.toUpstream)
		}
	}
	if SandboxRemark != paygatev1.RemarkSandboxTransaction {
		t.Errorf("the simulator's remark %q is not the API's %q", SandboxRemark, paygatev1.RemarkSandboxTransaction)
	}
}
