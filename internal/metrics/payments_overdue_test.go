// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

func TestPaymentsOverdue(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	payment := func(name string, env paygatev1.Environment, phase paygatev1.PaymentPhase, expiredAgo time.Duration) *paygatev1.Payment {
		return &paygatev1.Payment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec:       paygatev1.PaymentSpec{Environment: env, ExpiresAt: metav1.NewTime(now.Add(-expiredAgo))},
			Status:     paygatev1.PaymentStatus{Phase: phase},
		}
	}
	scheme := runtime.NewScheme()
	if err := paygatev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		payment("stuck", paygatev1.EnvironmentProduction, paygatev1.PaymentPending, 6*time.Minute),
		payment("stuck-too", paygatev1.EnvironmentProduction, "", time.Hour),
		payment("just-expired", paygatev1.EnvironmentProduction, paygatev1.PaymentPending, 4*time.Minute), // within the grace
		payment("open", paygatev1.EnvironmentSandbox, paygatev1.PaymentPending, -10*time.Minute),
		payment("failed", paygatev1.EnvironmentSandbox, paygatev1.PaymentFailed, time.Hour),
	).Build()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(paymentsOverdue{reader: c, now: func() time.Time { return now }})
	want := `
# HELP paygate_payments_overdue Payments still pending more than 5 minutes after their expiry (the controller should have failed them), by environment.
# TYPE paygate_payments_overdue gauge
paygate_payments_overdue{environment="production"} 2
paygate_payments_overdue{environment="sandbox"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "paygate_payments_overdue"); err != nil {
		t.Fatal(err)
	}
}
