// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

var subscriptionsDesc = prometheus.NewDesc("paygate_subscriptions",
	"Subscriptions by environment and phase (pending, active, past_due, suspended, cancelled).",
	[]string{"environment", "phase"}, nil)

// subscriptionPhases are the phases a subscription may have (the CRD's enum); each is reported,
// at 0 when no subscription has it, so that a rate or a ratio over them has every series.
var subscriptionPhases = []paygatev1.SubscriptionPhase{
	paygatev1.SubscriptionPending, paygatev1.SubscriptionActive, paygatev1.SubscriptionPastDue,
	paygatev1.SubscriptionSuspended, paygatev1.SubscriptionCancelled,
}

// subscriptions counts, at each scrape, the subscriptions of the manager's cache by environment
// and phase (a subscription not yet reconciled is pending). Counting at scrape time keeps the
// gauge right across restarts and leader changes, where an incremented gauge drifts.
type subscriptions struct{ reader client.Reader }

func (c subscriptions) Describe(ch chan<- *prometheus.Desc) { ch <- subscriptionsDesc }

func (c subscriptions) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list paygatev1.SubscriptionList
	if err := c.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(subscriptionsDesc, err)
		return
	}
	type key struct {
		env   paygatev1.Environment
		phase paygatev1.SubscriptionPhase
	}
	counts := map[key]float64{}
	for _, env := range []paygatev1.Environment{paygatev1.EnvironmentSandbox, paygatev1.EnvironmentProduction} {
		for _, phase := range subscriptionPhases {
			counts[key{env, phase}] = 0
		}
	}
	for i := range list.Items {
		s := &list.Items[i]
		counts[key{s.Spec.Environment, s.Phase()}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(subscriptionsDesc, prometheus.GaugeValue, n, string(k.env), string(k.phase))
	}
}

// RegisterSubscriptions registers paygate_subscriptions, counted from reader (the manager's
// cache). A second registration keeps the first.
func RegisterSubscriptions(reader client.Reader) error {
	return registerOnce(subscriptions{reader: reader})
}
