// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/provider"
)

// TestPaymentIsNotDeclinedForAGatewayTheCacheHasNotSeen: the apiserver (its own cache) may accept
// a payment with a gateway the manager's cache has not seen yet. The controller confirms with the
// API server before it declines; only a gateway the API server does not have either declines.
func TestPaymentIsNotDeclinedForAGatewayTheCacheHasNotSeen(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	gw := &paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "mpesa-tz"},
		Spec: paygatev1.GatewaySpec{DisplayName: "M-Pesa", Currency: "TZS", Type: paygatev1.GatewayTypeAutomatic,
			Provider: paygatev1.ProviderSandbox, Fees: paygatev1.GatewayFees{Percent: "2.5", Fixed: "0"}},
	}
	payment := func() *paygatev1.Payment {
		return &paygatev1.Payment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "trx-a"},
			Spec: paygatev1.PaymentSpec{
				MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
				Amount: "1500", Currency: "TZS", Mode: paygatev1.PaymentModePush, Gateways: []paygatev1.GatewayCode{"mpesa-tz"},
				ExpiresAt:   metav1.NewTime(now.Add(30 * time.Minute)),
				PushRequest: &paygatev1.PushRequest{Sequence: 1, Phone: "+255712345678", RequestedAt: metav1.NewMicroTime(now)},
			},
		}
	}
	for _, tt := range []struct {
		name         string
		apiHas       []client.Object
		wantAttempts int
		wantPhase    paygatev1.PaymentPhase
	}{
		{"the API server has the gateway: pushed", []client.Object{gw}, 1, paygatev1.PaymentSuccess},
		{"nobody has it: declined", nil, 0, paygatev1.PaymentFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := payment()
			cache := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(p).WithStatusSubresource(p).Build()
			api := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(tt.apiHas...).Build()
			r := &PaymentReconciler{
				Client: cache, APIReader: api, Recorder: events.NewFakeRecorder(16),
				Providers: &provider.Registry{Sandbox: provider.NewSandbox(provider.SandboxOptions{Clock: func() time.Time { return now }})},
				Clock:     testingclock.NewFakePassiveClock(now),
			}
			for range 3 { // push, then learn the outcome
				if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}); err != nil {
					t.Fatalf("Reconcile: %v", err)
				}
			}
			got := &paygatev1.Payment{}
			if err := cache.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
				t.Fatal(err)
			}
			if len(got.Status.Attempts) != tt.wantAttempts || got.Status.Phase != tt.wantPhase {
				t.Fatalf("attempts %d, phase %q (%s); want %d, %q", len(got.Status.Attempts), got.Status.Phase, got.Status.Reason, tt.wantAttempts, tt.wantPhase)
			}
		})
	}
}
