// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// OverdueGrace is how long past its expiry a pending payment may stay before it counts as stuck:
// the payment controller expires it at spec.expiresAt, so one still pending this much later means
// the controller is not getting to it.
const OverdueGrace = 5 * time.Minute

var paymentsOverdueDesc = prometheus.NewDesc("paygate_payments_overdue",
	"Payments still pending more than 5 minutes after their expiry (the controller should have failed them), by environment.",
	[]string{"environment"}, nil)

// paymentsOverdue counts, at each scrape, the pending payments of the manager's cache whose
// expiry passed more than OverdueGrace ago.
type paymentsOverdue struct {
	reader client.Reader
	now    func() time.Time
}

func (c paymentsOverdue) Describe(ch chan<- *prometheus.Desc) { ch <- paymentsOverdueDesc }

func (c paymentsOverdue) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list paygatev1.PaymentList
	if err := c.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(paymentsOverdueDesc, err)
		return
	}
	cutoff := c.now().Add(-OverdueGrace)
	counts := map[paygatev1.Environment]float64{paygatev1.EnvironmentSandbox: 0, paygatev1.EnvironmentProduction: 0}
	for i := range list.Items {
		p := &list.Items[i]
		if !p.Terminal() && !p.Spec.ExpiresAt.IsZero() && p.Spec.ExpiresAt.Time.Before(cutoff) {
			counts[p.Spec.Environment]++
		}
	}
	for env, n := range counts {
		ch <- prometheus.MustNewConstMetric(paymentsOverdueDesc, prometheus.GaugeValue, n, string(env))
	}
}

// RegisterPaymentsOverdue registers paygate_payments_overdue, counted from reader (the manager's
// cache) against now. A second registration keeps the first.
func RegisterPaymentsOverdue(reader client.Reader, now func() time.Time) error {
	return registerOnce(paymentsOverdue{reader: reader, now: now})
}

// registerOnce registers a collector of the manager's cache. A second registration (tests start
// several managers in one process) keeps the first.
func registerOnce(c prometheus.Collector) error {
	err := crmetrics.Registry.Register(c)
	if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
		return nil
	}
	return err
}
