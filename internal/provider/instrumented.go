// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"context"
	"errors"
	"time"

	"github.com/paygate/paygate/internal/metrics"
)

// instrumented counts and times every call of a provider (paygate_provider_* metrics).
type instrumented struct {
	name string
	p    Provider
}

// Instrument wraps p so that its calls show in Prometheus under name (sandbox, upstream). The
// wrapper refunds when p does.
func Instrument(name string, p Provider) Provider {
	i := instrumented{name: name, p: p}
	if r, ok := p.(Refunder); ok {
		return instrumentedRefunder{i, r}
	}
	return i
}

// instrumentedRefunder is an instrumented Refunder.
type instrumentedRefunder struct {
	instrumented
	r Refunder
}

func (i instrumentedRefunder) RefundScope() RefundScope { return i.r.RefundScope() }

func (i instrumentedRefunder) Refund(ctx context.Context, req RefundRequest) (Result, error) {
	start := time.Now()
	res, err := i.r.Refund(ctx, req)
	i.observe("refund", start, res, err)
	return res, err
}

func (i instrumentedRefunder) RefundStatus(ctx context.Context, req RefundRequest) (Result, error) {
	start := time.Now()
	res, err := i.r.RefundStatus(ctx, req)
	i.observe("refund_status", start, res, err)
	return res, err
}

func (i instrumented) observe(op string, start time.Time, res Result, err error) {
	metrics.ProviderLatency.WithLabelValues(i.name, op).Observe(time.Since(start).Seconds())
	outcome := string(res.Status)
	switch {
	case errors.Is(err, ErrNotFound):
		outcome = "NOT_FOUND"
	case err != nil:
		outcome = "ERROR"
	}
	metrics.ProviderRequests.WithLabelValues(i.name, op, outcome).Inc()
}

func (i instrumented) Capabilities() Capabilities { return i.p.Capabilities() }

func (i instrumented) Push(ctx context.Context, req PushRequest) (Result, error) {
	start := time.Now()
	res, err := i.p.Push(ctx, req)
	i.observe("push", start, res, err)
	return res, err
}

func (i instrumented) PushStatus(ctx context.Context, req PushRequest) (Result, error) {
	start := time.Now()
	res, err := i.p.PushStatus(ctx, req)
	i.observe("push_status", start, res, err)
	return res, err
}

func (i instrumented) Disburse(ctx context.Context, req DisbursementRequest) (Result, error) {
	start := time.Now()
	res, err := i.p.Disburse(ctx, req)
	i.observe("disburse", start, res, err)
	return res, err
}

func (i instrumented) DisbursementStatus(ctx context.Context, req DisbursementRequest) (Result, error) {
	start := time.Now()
	res, err := i.p.DisbursementStatus(ctx, req)
	i.observe("disbursement_status", start, res, err)
	return res, err
}
