// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/webhook"
)

// wantReady checks an object's Ready condition and that it was computed from the object's
// generation.
func wantReady(t *testing.T, what string, conds []metav1.Condition, observed, generation int64, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(conds, paygatev1.ConditionReady)
	if c == nil || c.Status != status || c.Reason != reason {
		t.Errorf("%s: Ready %+v, want %s with reason %s", what, c, status, reason)
		return
	}
	if c.ObservedGeneration != generation || observed != generation {
		t.Errorf("%s: observedGeneration %d (condition %d), want %d", what, observed, c.ObservedGeneration, generation)
	}
}

// TestBalanceReady: each environment's Balance says whether it could be derived, and one that
// cannot be does not hold back the other.
func TestBalanceReady(t *testing.T) {
	m := &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "duka", UID: "uid-duka"}}
	payment := func(name string, env paygatev1.Environment, net paygatev1.Decimal) *paygatev1.Payment {
		return &paygatev1.Payment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{paygatev1.LabelMerchant: "duka"}},
			Spec:       paygatev1.PaymentSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: env, Amount: "100", Currency: "TZS"},
			Status:     paygatev1.PaymentStatus{Phase: paygatev1.PaymentSuccess, NetAmount: net},
		}
	}
	// Sandbox is summed first: its unreadable payment must not keep production from its balance.
	bad, good := payment("trx-bad", paygatev1.EnvironmentSandbox, "not-a-number"), payment("trx-good", paygatev1.EnvironmentProduction, "97.50")
	bad.UID, good.UID = "uid-bad", "uid-good"
	c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithStatusSubresource(&paygatev1.Balance{}).WithObjects(m, bad, good).Build()
	r := &BalanceReconciler{Client: c}
	seedLedger(r, bad, good)
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)}); err == nil {
		t.Fatal("an unreadable payment: no error")
	}
	get := func(env paygatev1.Environment) *paygatev1.Balance {
		b := &paygatev1.Balance{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: paygatev1.BalanceName("duka", env)}, b); err != nil {
			t.Fatalf("balance %s: %v", env, err)
		}
		return b
	}
	sandbox, production := get(paygatev1.EnvironmentSandbox), get(paygatev1.EnvironmentProduction)
	wantReady(t, "sandbox", sandbox.Status.Conditions, sandbox.Status.ObservedGeneration, sandbox.Generation, metav1.ConditionFalse, ReasonLedgerUnreadable)
	if len(sandbox.Status.Currencies) != 0 {
		t.Errorf("sandbox currencies %+v, want none summed", sandbox.Status.Currencies)
	}
	wantReady(t, "production", production.Status.Conditions, production.Status.ObservedGeneration, production.Generation, metav1.ConditionTrue, ReasonBalanceComputed)
	if len(production.Status.Currencies) != 1 || production.Status.Currencies[0].Available != "97.50" {
		t.Errorf("production currencies %+v, want TZS 97.50", production.Status.Currencies)
	}
}

// TestWebhookDeliveryReady: Ready is True once a receiver accepted the event and says why not
// otherwise.
func TestWebhookDeliveryReady(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	accept := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer accept.Close()
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	defer refuse.Close()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: credentials.WebhookSecretName("duka")},
		Data:       map[string][]byte{credentials.KeySigningSecret: []byte("whsec-test")},
	}
	tests := []struct {
		name       string
		url        string
		objs       []client.Object
		wantErr    bool
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"delivered", accept.URL, []client.Object{secret}, false, metav1.ConditionTrue, ReasonWebhookDelivered},
		{"refused: retry scheduled", refuse.URL, []client.Object{secret}, false, metav1.ConditionFalse, ReasonRetryScheduled},
		{"no endpoint", "", nil, false, metav1.ConditionFalse, ReasonWebhookNoTarget},
		{"no signing secret", accept.URL, nil, true, metav1.ConditionFalse, ReasonSigningSecretMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &paygatev1.WebhookDelivery{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "whd-a", Generation: 1, CreationTimestamp: metav1.NewTime(now)},
				Spec: paygatev1.WebhookDeliverySpec{EventID: "evt_0123456789abcdef", EventType: "payment.completed",
					MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
					URL: tt.url, Payload: `{"id":"evt_0123456789abcdef"}`},
			}
			c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(append(tt.objs, d)...).WithStatusSubresource(d).Build()
			sender := webhook.NewSender(webhook.Options{Timeout: 5 * time.Second, Guard: webhook.Guard{AllowPrivate: true}})
			r := &WebhookDeliveryReconciler{Client: c, Recorder: events.NewFakeRecorder(16), Sandbox: sender, Production: sender,
				Clock: testingclock.NewFakePassiveClock(now)}
			_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(d)})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want an error: %v", err, tt.wantErr)
			}
			got := &paygatev1.WebhookDelivery{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(d), got); err != nil {
				t.Fatal(err)
			}
			observed := got.Status.ObservedGeneration
			if tt.wantErr {
				observed = got.Generation // a failed pass leaves observedGeneration as it was
			}
			wantReady(t, tt.name, got.Status.Conditions, observed, got.Generation, tt.wantStatus, tt.wantReason)
		})
	}
}
