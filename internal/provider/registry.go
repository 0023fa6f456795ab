// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"context"
	"errors"
	"fmt"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// SimulatedProductionRemark marks a production payment the simulator answered (docs/sandbox.md).
const SimulatedProductionRemark = paygatev1.RemarkSimulatedProduction

// ErrProductionNotSimulated is returned for a production payment through a gateway backed by the
// simulator that did not opt in to simulating production: no real provider would move its money.
var ErrProductionNotSimulated = errors.New("the gateway's provider is the sandbox simulator, which serves sandbox payments only (spec.simulation is not SandboxAndProduction)")

// Registry picks the provider of a payment: the sandbox environment uses the simulator (no real
// money moves in sandbox), or a pawapay or daraja gateway's provider sandbox when it opted in
// (spec.sandbox Provider); production uses the gateway's provider, and the simulator
// only for a gateway that opted in to simulating production (a demo).
type Registry struct {
	Sandbox *Sandbox
	// Upstream builds the adapter of an upstream gateway (its URL and token come from the
	// gateway's configuration). Nil means no upstream provider is configured.
	Upstream func(ctx context.Context, gw *paygatev1.Gateway) (Provider, error)
	// Gateways builds the adapters of pawapay and daraja gateways from their spec and Secret. Nil
	// means none is configured.
	Gateways *Gateways
}

// ErrProviderSandboxOnly is returned for a production payment through a pawapay or daraja gateway
// whose baseURL is the provider's sandbox: no money would move.
var ErrProviderSandboxOnly = errors.New("the gateway's baseURL is its provider's sandbox, which serves sandbox payments only")

// errNoGateways: the registry builds no pawapay or daraja adapter.
var errNoGateways = &GatewayError{Reason: ReasonProviderConfig, Message: "the manager has no pawapay or daraja provider configured"}

// CheckGateway makes a harmless live call to a pawapay or daraja gateway's provider (Gateways.Check).
func (r *Registry) CheckGateway(ctx context.Context, gw *paygatev1.Gateway) (GatewayCheck, error) {
	if r.Gateways == nil {
		return GatewayCheck{}, errNoGateways
	}
	return r.Gateways.Check(ctx, gw)
}

// PredictGatewayProvider asks pawaPay, with a pawapay gateway's account, which provider (mobile
// network) phone belongs to (Pawapay.PredictProvider): its code, e.g. VODACOM_TZA.
// https://docs.pawapay.io/v2/api-reference/toolkit/predict-provider
func (r *Registry) PredictGatewayProvider(ctx context.Context, gw *paygatev1.Gateway, phone string) (string, error) {
	if r.Gateways == nil {
		return "", errNoGateways
	}
	p, err := r.Gateways.Pawapay(ctx, gw)
	if err != nil {
		return "", err
	}
	pred, err := p.PredictProvider(ctx, phone)
	if err != nil {
		return "", err
	}
	return pred.Provider, nil
}

// GatewayWalletBalances reads the wallet balances of a pawapay gateway's pawaPay account
// (Pawapay.WalletBalances).
func (r *Registry) GatewayWalletBalances(ctx context.Context, gw *paygatev1.Gateway) (map[string]string, error) {
	if r.Gateways == nil {
		return nil, errNoGateways
	}
	p, err := r.Gateways.Pawapay(ctx, gw)
	if err != nil {
		return nil, err
	}
	return p.WalletBalances(ctx)
}

// RequestAccountBalance asks Daraja for a daraja gateway's M-Pesa account balances
// (Daraja.AccountBalance). The answer is only an acknowledgement: the balances arrive at the
// gateway's balance result URL, where the apiserver exports them. A gateway without an initiator
// (no B2C) cannot ask: ErrDarajaNotConfigured.
func (r *Registry) RequestAccountBalance(ctx context.Context, gw *paygatev1.Gateway) error {
	if r.Gateways == nil {
		return errNoGateways
	}
	d, err := r.Gateways.Daraja(ctx, gw)
	if err != nil {
		return err
	}
	_, err = d.AccountBalance(ctx)
	return err
}

// gateway returns the adapter of a pawapay or daraja gateway, instrumented under its kind.
func (r *Registry) gateway(ctx context.Context, gw *paygatev1.Gateway) (Provider, error) {
	if r.Gateways == nil {
		return nil, fmt.Errorf("gateway %s: no %s provider is configured", gw.Name, gw.Spec.Provider)
	}
	p, err := r.Gateways.For(ctx, gw)
	if err != nil {
		return nil, err
	}
	return Instrument(string(gw.Spec.Provider), p), nil
}

// For returns the provider for gw in env. It refuses the simulator for a production payment
// unless gw simulates production, so a production payment never settles without a real provider
// by accident.
//
// A pawapay or daraja gateway's sandbox payments go to the simulator unless it sets spec.sandbox
// Provider; its production payments go to its provider, unless its baseURL is the provider's
// sandbox (ErrProviderSandboxOnly).
func (r *Registry) For(ctx context.Context, gw *paygatev1.Gateway, env paygatev1.Environment) (Provider, error) {
	if env == paygatev1.EnvironmentSandbox {
		if gw.SandboxToProvider() {
			return r.gateway(ctx, gw)
		}
		return Instrument("sandbox", r.Sandbox), nil
	}
	if gw.Spec.Provider == paygatev1.ProviderPawapay || gw.Spec.Provider == paygatev1.ProviderDaraja {
		if env != paygatev1.EnvironmentProduction {
			return nil, fmt.Errorf("gateway %s: unknown environment %q", gw.Name, env)
		}
		if gw.ProviderBaseURL() == paygatev1.BaseURLSandbox {
			return nil, fmt.Errorf("gateway %s in %s: %w", gw.Name, env, ErrProviderSandboxOnly)
		}
		return r.gateway(ctx, gw)
	}
	if gw.Spec.Provider == paygatev1.ProviderSandbox || gw.Spec.Provider == "" {
		if env != paygatev1.EnvironmentProduction || !gw.ServesEnvironment(env) {
			return nil, fmt.Errorf("gateway %s in %s: %w", gw.Name, env, ErrProductionNotSimulated)
		}
		return Instrument("sandbox", simulatedProductionRefunder{simulatedProduction{r.Sandbox}, r.Sandbox}), nil
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

// simulatedProduction is the simulator answering production payments: its results carry the
// remark SIMULATED_PRODUCTION instead of SANDBOX_TRANSACTION.
type simulatedProduction struct{ p Provider }

func mark(res Result, err error) (Result, error) {
	if err == nil {
		res.Remark = SimulatedProductionRemark
	}
	return res, err
}

func (s simulatedProduction) Capabilities() Capabilities { return s.p.Capabilities() }

func (s simulatedProduction) Push(ctx context.Context, req PushRequest) (Result, error) {
	return mark(s.p.Push(ctx, req))
}

func (s simulatedProduction) PushStatus(ctx context.Context, req PushRequest) (Result, error) {
	return mark(s.p.PushStatus(ctx, req))
}

func (s simulatedProduction) Disburse(ctx context.Context, req DisbursementRequest) (Result, error) {
	return mark(s.p.Disburse(ctx, req))
}

func (s simulatedProduction) DisbursementStatus(ctx context.Context, req DisbursementRequest) (Result, error) {
	return mark(s.p.DisbursementStatus(ctx, req))
}

// simulatedProductionRefunder is simulatedProduction of a simulator that refunds.
type simulatedProductionRefunder struct {
	simulatedProduction
	r Refunder
}

func (s simulatedProductionRefunder) RefundScope() RefundScope { return s.r.RefundScope() }

func (s simulatedProductionRefunder) Refund(ctx context.Context, req RefundRequest) (Result, error) {
	return mark(s.r.Refund(ctx, req))
}

func (s simulatedProductionRefunder) RefundStatus(ctx context.Context, req RefundRequest) (Result, error) {
	return mark(s.r.RefundStatus(ctx, req))
}
