// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

func TestBalanceChanges(t *testing.T) {
	pending := &paygatev1.Payment{
		Spec:   paygatev1.PaymentSpec{Environment: paygatev1.EnvironmentSandbox, Currency: "TZS", Amount: "1500"},
		Status: paygatev1.PaymentStatus{Phase: paygatev1.PaymentPending},
	}
	tests := []struct {
		name   string
		change func(p *paygatev1.Payment)
		want   bool
	}{
		{"a push request", func(p *paygatev1.Payment) {
			p.Spec.PushRequest = &paygatev1.PushRequest{Sequence: 1, Phone: "+255712345678"}
		}, false},
		{"an attempt written ahead", func(p *paygatev1.Payment) {
			p.Status.Attempts = append(p.Status.Attempts, paygatev1.PushAttempt{Sequence: 1})
		}, false},
		{"a condition", func(p *paygatev1.Payment) {
			p.Status.Conditions = []metav1.Condition{{Type: paygatev1.ConditionReady, Status: metav1.ConditionFalse}}
		}, false},
		{"settled", func(p *paygatev1.Payment) {
			p.Status.Phase, p.Status.NetAmount = paygatev1.PaymentSuccess, "1462.50"
		}, true},
		{"failed", func(p *paygatev1.Payment) { p.Status.Phase = paygatev1.PaymentFailed }, true},
		{"a net amount", func(p *paygatev1.Payment) { p.Status.NetAmount = "1462.50" }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := pending.DeepCopy()
			tt.change(changed)
			if got := balanceChanges.Update(event.UpdateEvent{ObjectOld: pending, ObjectNew: changed}); got != tt.want {
				t.Fatalf("recount on %s = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
	if !balanceChanges.Create(event.CreateEvent{Object: pending}) || !balanceChanges.Delete(event.DeleteEvent{Object: pending}) {
		t.Fatal("a payment created or deleted changes the observed count: it must recount")
	}
}
