// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// TestRefundsAmbiguous counts the refunds still in flight whose AmbiguousTooLong is True, per
// environment; an ended refund or one whose condition is False does not count.
func TestRefundsAmbiguous(t *testing.T) {
	refund := func(name string, env paygatev1.Environment, phase paygatev1.RefundPhase, ambiguous metav1.ConditionStatus) *paygatev1.Refund {
		r := &paygatev1.Refund{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec:       paygatev1.RefundSpec{Environment: env},
			Status:     paygatev1.RefundStatus{Phase: phase},
		}
		if ambiguous != "" {
			r.Status.Conditions = []metav1.Condition{{Type: paygatev1.ConditionAmbiguousTooLong, Status: ambiguous}}
		}
		return r
	}
	scheme := runtime.NewScheme()
	if err := paygatev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		refund("waiting", paygatev1.EnvironmentProduction, paygatev1.RefundProcessing, metav1.ConditionTrue),
		refund("waiting-too", paygatev1.EnvironmentProduction, paygatev1.RefundProcessing, metav1.ConditionTrue),
		refund("answered", paygatev1.EnvironmentProduction, paygatev1.RefundProcessing, metav1.ConditionFalse),
		refund("resolved", paygatev1.EnvironmentProduction, paygatev1.RefundSuccess, metav1.ConditionTrue),
		refund("fresh", paygatev1.EnvironmentSandbox, paygatev1.RefundProcessing, ""),
		refund("sandbox", paygatev1.EnvironmentSandbox, paygatev1.RefundProcessing, metav1.ConditionTrue),
	).Build()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(refundsAmbiguous{reader: c})
	want := `
# HELP paygate_refunds_ambiguous Refunds the provider has not confirmed within the configured time (condition AmbiguousTooLong), by environment.
# TYPE paygate_refunds_ambiguous gauge
paygate_refunds_ambiguous{environment="production"} 2
paygate_refunds_ambiguous{environment="sandbox"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "paygate_refunds_ambiguous"); err != nil {
		t.Fatal(err)
	}
}
