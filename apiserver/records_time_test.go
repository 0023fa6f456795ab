// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// stored is p as a reader gets it back from the Kubernetes API: through JSON.
func stored(t *testing.T, p *paygatev1.Payment) *paygatev1.Payment {
	t.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	out := &paygatev1.Payment{}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestUpdatedAtMovesWithinTheSecond: a sandbox payment settles within the second it was created;
// updated_at must still be later than created_at, to the microsecond, once the payment has been
// stored and read back.
func TestUpdatedAtMovesWithinTheSecond(t *testing.T) {
	created := time.Date(2026, 11, 22, 10, 0, 0, 100_000_000, time.UTC)
	at := func(d time.Duration) metav1.MicroTime { return metav1.NewMicroTime(created.Add(d)) }
	micro := func(d time.Duration) *metav1.MicroTime { mt := at(d); return &mt }

	fresh := &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "trx-a", CreationTimestamp: metav1.NewTime(created)},
		Spec: paygatev1.PaymentSpec{Amount: "1500", Currency: "TZS", Mode: paygatev1.PaymentModePush,
			ExpiresAt: metav1.NewTime(created.Add(30 * time.Minute)), CreatedAt: micro(0)},
	}
	pushed := fresh.DeepCopy()
	pushed.Spec.PushRequest = &paygatev1.PushRequest{Sequence: 1, Phone: "+255712345678", RequestedAt: at(50 * time.Millisecond)}
	started := pushed.DeepCopy()
	started.Status = paygatev1.PaymentStatus{Phase: paygatev1.PaymentPending, Attempts: []paygatev1.PushAttempt{{
		Sequence: 1, Reference: "shop.trx-a.1", Gateway: "mpesa-tz", Phase: paygatev1.AttemptPending, StartedAt: at(120 * time.Millisecond),
	}}}
	settled := started.DeepCopy()
	settled.Status.Phase, settled.Status.Fee, settled.Status.NetAmount = paygatev1.PaymentSuccess, "37.50", "1462.50"
	settled.Status.Attempts[0].Phase, settled.Status.Attempts[0].FinishedAt = paygatev1.AttemptSucceeded, micro(300*time.Millisecond)
	settled.Status.SettledAt = micro(300*time.Millisecond + 1234*time.Nanosecond)
	settled.Status.Conditions = []metav1.Condition{{Type: paygatev1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: "PaymentSucceeded", LastTransitionTime: metav1.NewTime(created.Add(time.Second))}}

	tests := []struct {
		name        string
		p           *paygatev1.Payment
		wantUpdated string
	}{
		{"created", fresh, "2026-11-22T10:00:00.100000Z"},
		{"push requested", pushed, "2026-11-22T10:00:00.150000Z"},
		{"attempt started", started, "2026-11-22T10:00:00.220000Z"},
		// Settled 300.001234 ms after creation: the microsecond is kept; the Ready condition's
		// whole-second time is not the payment's.
		{"settled", settled, "2026-11-22T10:00:00.400001Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{opts: Options{PublicURL: "https://pay.example", CheckoutKey: []byte("k")}}
			p := stored(t, tt.p)
			rec, err := s.paymentRecord(p)
			if err != nil {
				t.Fatal(err)
			}
			v, err := verificationRecord(p)
			if err != nil {
				t.Fatal(err)
			}
			if rec.CreatedAt != "2026-11-22T10:00:00.100000Z" || v.CreatedAt != rec.CreatedAt {
				t.Errorf("created_at %s / %s, want 2026-11-22T10:00:00.100000Z", rec.CreatedAt, v.CreatedAt)
			}
			if rec.UpdatedAt != tt.wantUpdated || v.UpdatedAt != tt.wantUpdated {
				t.Errorf("updated_at %s / %s, want %s", rec.UpdatedAt, v.UpdatedAt, tt.wantUpdated)
			}
		})
	}
}
