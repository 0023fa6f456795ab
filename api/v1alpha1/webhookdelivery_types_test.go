// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEffectiveStatus: a delivery reads as its status once the controller wrote one, and as its
// first attempt (spec.firstAttempt) until then.
func TestEffectiveStatus(t *testing.T) {
	at := time.Date(2026, 11, 27, 9, 0, 0, 250_000_000, time.UTC)
	first := func(r FirstAttemptResult, code int32, msg string) *FirstDeliveryAttempt {
		return &FirstDeliveryAttempt{Result: r, At: metav1.NewMicroTime(at), StatusCode: code, Error: msg, DurationMillis: 12}
	}
	for _, tc := range []struct {
		name      string
		first     *FirstDeliveryAttempt
		status    WebhookDeliveryStatus
		phase     DeliveryPhase
		total     int32
		delivered bool
	}{
		{"created before the field, not attempted yet", nil, WebhookDeliveryStatus{}, "", 0, false},
		{"delivered by its first attempt: nothing stored", first(FirstAttemptDelivered, 204, ""), WebhookDeliveryStatus{}, DeliveryDelivered, 1, true},
		{"its first attempt failed, not folded yet", first(FirstAttemptFailed, 500, "HTTP 500"), WebhookDeliveryStatus{}, DeliveryPending, 1, false},
		{"folded and retried: the status", first(FirstAttemptFailed, 0, "timeout after 10s"),
			WebhookDeliveryStatus{Phase: DeliveryAbandoned, TotalAttempts: 5}, DeliveryAbandoned, 5, false},
		{"the delivery controller's own attempts", nil, WebhookDeliveryStatus{Phase: DeliveryDelivered, TotalAttempts: 2}, DeliveryDelivered, 2, false},
		{"no endpoint", nil, WebhookDeliveryStatus{Phase: DeliveryNoEndpoint}, DeliveryNoEndpoint, 0, false},
		{"redelivered: a new round", first(FirstAttemptDelivered, 200, ""),
			WebhookDeliveryStatus{Phase: DeliveryPending, TotalAttempts: 6, Redelivery: "1"}, DeliveryPending, 6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &WebhookDelivery{Spec: WebhookDeliverySpec{FirstAttempt: tc.first}, Status: tc.status}
			st := d.EffectiveStatus()
			if st.Phase != tc.phase || st.TotalAttempts != tc.total || (st.DeliveredAt != nil) != tc.delivered {
				t.Fatalf("effective status %+v, want phase %q after %d attempts, delivered %v", st, tc.phase, tc.total, tc.delivered)
			}
			if tc.status.Phase == "" && tc.first != nil {
				if len(st.Attempts) != 1 || st.Attempts[0] != tc.first.Attempt() || st.Attempts[0].Number != 1 || !st.Attempts[0].At.Time.Equal(at) {
					t.Fatalf("attempts %+v, want the first attempt", st.Attempts)
				}
			}
			if d.Status.Phase != tc.status.Phase || len(d.Status.Attempts) != 0 {
				t.Fatal("EffectiveStatus changed the stored status")
			}
			want := tc.phase
			if want == "" {
				want = DeliveryPending
			}
			if d.Phase() != want {
				t.Errorf("Phase() = %q, want the effective status's %q (Pending for none)", d.Phase(), want)
			}
			if finished := want != DeliveryPending; d.Finished() != finished {
				t.Errorf("Finished() = %v, want %v", d.Finished(), finished)
			}
		})
	}
}
