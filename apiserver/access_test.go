// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

const liveCreate = `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"live-1","webhook_url":"https://duka.example/hooks"}`

// TestLiveCollectionNeedsKYBApproval: an approved business whose KYB review is not approved may
// read in production but not create or push a payment; the refusal records nothing, not even
// the Idempotency-Key, so the same request succeeds once KYB is approved.
func TestLiveCollectionNeedsKYBApproval(t *testing.T) {
	f := newExchangeFixture(t)
	simulatedGateway(t, f)
	idem := http.Header{"Idempotency-Key": {"kyb-1"}}
	legacy := strings.TrimSuffix(liveCreate, "}") + `,"success_redirect":"https://duka.example/ok","cancel_redirect":"https://duka.example/no"}`
	for _, tc := range []struct{ method, target, body string }{
		{"POST", "/api/v1/payments", liveCreate},
		{"POST", "/api/v1/initiate-payment", legacy},
		{"POST", "/api/v1/payments/trx-7kq2m4xv5z3hbd5ntw6ycfa2/push", `{"customer_phone":"+255712345678"}`},
	} {
		status, out := f.signedExchange(t, f.unvetted, tc.method, tc.target, tc.body, "application/json", idem)
		if status != http.StatusForbidden || out["error"] != "Merchant Pending Approval" || !strings.Contains(out["message"].(string), "KYB approval") {
			t.Errorf("%s %s with KYB pending: %d %v", tc.method, tc.target, status, out)
		}
	}
	for _, target := range []string{"/api/v1/payments", "/api/v1/site-info"} {
		if status, out := f.signedExchange(t, f.unvetted, "GET", target, "", "", nil); status != http.StatusOK {
			t.Errorf("GET %s with KYB pending: %d %v", target, status, out)
		}
	}
	if status, out := f.signedExchange(t, f.unvetted, "GET", "/api/v1/verify-payment/trx-7kq2m4xv5z3hbd5ntw6ycfa2", "", "", nil); status != http.StatusNotFound {
		t.Errorf("verify with KYB pending: %d %v, want 404", status, out)
	}
	if n := f.payments(t); n != 1 {
		t.Errorf("%d payments, want only the fixture's", n)
	}

	m := &paygatev1.Merchant{}
	if err := f.k8s.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: "unvetted"}, m); err != nil {
		t.Fatal(err)
	}
	m.Spec.KYBStatus = paygatev1.KYBApproved
	if err := f.k8s.Update(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	if status, out := f.signedExchange(t, f.unvetted, "POST", "/api/v1/payments", liveCreate, "application/json", idem); status != http.StatusOK {
		t.Errorf("the same request once KYB is approved: %d %v", status, out)
	}
	// Sandbox is not affected by KYB.
	if status, out := f.signedExchange(t, f.duka, "POST", "/api/v1/payments", `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"sbx-1"}`, "application/json", nil); status != http.StatusOK {
		t.Errorf("sandbox create with KYB unset: %d %v", status, out)
	}
}

// TestProductionNeedsAGatewayThatServesIt: a gateway backed by the simulator serves sandbox only
// unless it opted in to simulating production; a production payment then finds no payment method.
func TestProductionNeedsAGatewayThatServesIt(t *testing.T) {
	f := newExchangeFixture(t)
	status, out := f.signedExchange(t, f.live, "POST", "/api/v1/payments", liveCreate, "application/json", nil)
	if status != http.StatusUnprocessableEntity || out["error"] != LabelNoPaymentMethod {
		t.Fatalf("production through a sandbox-only gateway: %d %v, want 422 %s", status, out, LabelNoPaymentMethod)
	}
	if n := f.payments(t); n != 1 {
		t.Errorf("%d payments, want only the fixture's", n)
	}
	gw := simulatedGateway(t, f)
	status, out = f.signedExchange(t, f.live, "POST", "/api/v1/payments", liveCreate, "application/json", nil)
	if status != http.StatusOK {
		t.Fatalf("production through a gateway that simulates it: %d %v", status, out)
	}
	p := &paygatev1.Payment{}
	trx := out["trx_id"].(string)
	if err := f.k8s.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: trx}, p); err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.Gateways) != 1 || p.Spec.Gateways[0] != gw.Code() {
		t.Errorf("production payment gateways %v, want only %s", p.Spec.Gateways, gw.Name)
	}
	// In sandbox both gateways serve.
	status, out = f.signedExchange(t, f.duka, "POST", "/api/v1/payments", `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"sbx-2"}`, "application/json", nil)
	if status != http.StatusOK {
		t.Fatalf("sandbox create: %d %v", status, out)
	}
	if err := f.k8s.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: out["trx_id"].(string)}, p); err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.Gateways) != 2 {
		t.Errorf("sandbox payment gateways %v, want both", p.Spec.Gateways)
	}
}

// TestPendingBusinessWithSandboxKeysInProduction: a business never approved has sandbox keys
// only; sent to production with a valid signature they identify it, so it hears 403 Merchant
// Pending Approval. Wrong keys or signatures are still 401.
func TestPendingBusinessWithSandboxKeysInProduction(t *testing.T) {
	f := newExchangeFixture(t)
	prod := f.newcomer
	prod.Environment = "production"
	if status, out := f.signedExchange(t, prod, "GET", "/api/v1/payments", "", "", nil); status != http.StatusForbidden || out["error"] != "Merchant Pending Approval" {
		t.Errorf("sandbox keys of a pending business in production: %d %v, want 403", status, out)
	}
	wrongKey, wrongSecret, approved := prod, prod, f.duka
	wrongKey.APIKey, wrongSecret.APISecret, approved.Environment = "wrong", "wrong", "production"
	for name, tc := range map[string]struct {
		creds paygate.Credentials
		label string
	}{
		"a wrong API key":                     {wrongKey, LabelInvalidCredentials},
		"a wrong secret":                      {wrongSecret, LabelInvalidSignature},
		"an approved business's sandbox keys": {approved, LabelInvalidCredentials},
	} {
		if status, out := f.signedExchange(t, tc.creds, "GET", "/api/v1/payments", "", "", nil); status != http.StatusUnauthorized || out["error"] != tc.label {
			t.Errorf("%s: %d %v, want 401 %s", name, status, out, tc.label)
		}
	}
}

// simulatedGateway adds a TZS gateway that simulates production to the fixture's cluster.
func simulatedGateway(t *testing.T, f *exchangeFixture) *paygatev1.Gateway {
	t.Helper()
	gw := &paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "tz-demo"},
		Spec: paygatev1.GatewaySpec{DisplayName: "Demo money", Currency: "TZS", Type: paygatev1.GatewayTypeAutomatic,
			Provider: paygatev1.ProviderSandbox, Simulation: paygatev1.SimulationSandboxAndProduction},
		Status: paygatev1.GatewayStatus{ID: 8},
	}
	if err := f.k8s.Create(t.Context(), gw); err != nil {
		t.Fatal(err)
	}
	return gw
}
