// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

var payoutsAmbiguousDesc = prometheus.NewDesc("paygate_payouts_ambiguous",
	"Payouts whose disbursement the provider has not confirmed within the configured time (condition AmbiguousTooLong), by environment.",
	[]string{"environment"}, nil)

// payoutsAmbiguous counts, at each scrape, the payouts of the manager's cache whose
// AmbiguousTooLong condition is True: what an operator must resolve now. Counting at scrape time
// keeps the gauge right across restarts and leader changes, where an incremented gauge drifts.
type payoutsAmbiguous struct{ reader client.Reader }

func (c payoutsAmbiguous) Describe(ch chan<- *prometheus.Desc) { ch <- payoutsAmbiguousDesc }

func (c payoutsAmbiguous) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list paygatev1.PayoutList
	if err := c.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(payoutsAmbiguousDesc, err)
		return
	}
	counts := map[paygatev1.Environment]float64{paygatev1.EnvironmentSandbox: 0, paygatev1.EnvironmentProduction: 0}
	for i := range list.Items {
		p := &list.Items[i]
		if !p.Terminal() && meta.IsStatusConditionTrue(p.Status.Conditions, paygatev1.ConditionAmbiguousTooLong) {
			counts[p.Spec.Environment]++
		}
	}
	for env, n := range counts {
		ch <- prometheus.MustNewConstMetric(payoutsAmbiguousDesc, prometheus.GaugeValue, n, string(env))
	}
}

// RegisterPayoutsAmbiguous registers paygate_payouts_ambiguous, counted from reader (the
// manager's cache). A second registration (tests start several managers in one process) keeps
// the first.
func RegisterPayoutsAmbiguous(reader client.Reader) error {
	return registerOnce(payoutsAmbiguous{reader: reader})
}

var refundsAmbiguousDesc = prometheus.NewDesc("paygate_refunds_ambiguous",
	"Refunds the provider has not confirmed within the configured time (condition AmbiguousTooLong), by environment.",
	[]string{"environment"}, nil)

// refundsAmbiguous counts, at each scrape, the refunds of the manager's cache whose
// AmbiguousTooLong condition is True, as payoutsAmbiguous counts payouts.
type refundsAmbiguous struct{ reader client.Reader }

func (c refundsAmbiguous) Describe(ch chan<- *prometheus.Desc) { ch <- refundsAmbiguousDesc }

func (c refundsAmbiguous) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list paygatev1.RefundList
	if err := c.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(refundsAmbiguousDesc, err)
		return
	}
	counts := map[paygatev1.Environment]float64{paygatev1.EnvironmentSandbox: 0, paygatev1.EnvironmentProduction: 0}
	for i := range list.Items {
		r := &list.Items[i]
		if !r.Terminal() && meta.IsStatusConditionTrue(r.Status.Conditions, paygatev1.ConditionAmbiguousTooLong) {
			counts[r.Spec.Environment]++
		}
	}
	for env, n := range counts {
		ch <- prometheus.MustNewConstMetric(refundsAmbiguousDesc, prometheus.GaugeValue, n, string(env))
	}
}

// RegisterRefundsAmbiguous registers paygate_refunds_ambiguous, counted from reader (the
// manager's cache); a second registration keeps the first.
func RegisterRefundsAmbiguous(reader client.Reader) error {
	return registerOnce(refundsAmbiguous{reader: reader})
}
