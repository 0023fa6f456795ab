// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package events

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

func legacyPayment(amount, name, description string, phase paygatev1.PaymentPhase, reason string) *paygatev1.Payment {
	return &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "trx_9k2j4h5g6f7d8s9a"},
		Spec: paygatev1.PaymentSpec{
			Environment: paygatev1.EnvironmentSandbox, MerchantReference: "order/1001", Amount: paygatev1.Decimal(amount),
			Currency: "TZS", Description: description,
			Customer: paygatev1.Customer{Name: name, Email: "asha@duka.example"},
		},
		Status: paygatev1.PaymentStatus{Phase: phase, Reason: reason},
	}
}

var legacyCases = []struct {
	name, amount, customer, description string
	phase                               paygatev1.PaymentPhase
	reason                              string
	want                                string
}{
	{"whole amount with zeros", "1500.00", "Asha", "Order 1001", paygatev1.PaymentSuccess, "",
		`{"data":{"ref_trx":"order/1001","trx_id":"trx_9k2j4h5g6f7d8s9a","amount":1500,"currency_code":"TZS","customer_name":"Asha","customer_email":"asha@duka.example","description":"Order 1001","environment":"sandbox"},"message":"Payment completed successfully","status":"completed","timestamp":1764000000}`},
	{"fraction", "37.50", "Zoë Ñandú 山田", "https://duka.example/orders/1001?x=1&y=<2>", paygatev1.PaymentSuccess, "",
		`{"data":{"ref_trx":"order/1001","trx_id":"trx_9k2j4h5g6f7d8s9a","amount":37.5,"currency_code":"TZS","customer_name":"Zoë Ñandú 山田","customer_email":"asha@duka.example","description":"https://duka.example/orders/1001?x=1&y=<2>","environment":"sandbox"},"message":"Payment completed successfully","status":"completed","timestamp":1764000000}`},
	{"escapes", "0.01", "\"Q\" \\ back\tslash\n\u0001\u2028\u2029", "", paygatev1.PaymentFailed, "EXPIRED_SESSION",
		`{"data":{"ref_trx":"order/1001","trx_id":"trx_9k2j4h5g6f7d8s9a","amount":0.01,"currency_code":"TZS","customer_name":"\"Q\" \\ back\tslash\n\u0001` + "\u2028\u2029" + `","customer_email":"asha@duka.example","description":"","environment":"sandbox"},"message":"Payment failed: EXPIRED_SESSION","status":"failed","timestamp":1764000000}`},
	{"large amount", "123456789012.50", "\b\f\u001f\u007f", "", paygatev1.PaymentSuccess, "",
		`{"data":{"ref_trx":"order/1001","trx_id":"trx_9k2j4h5g6f7d8s9a","amount":123456789012.5,"currency_code":"TZS","customer_name":"\b\f\u001f` + "\u007f" + `","customer_email":"asha@duka.example","description":"","environment":"sandbox"},"message":"Payment completed successfully","status":"completed","timestamp":1764000000}`},
}

func TestLegacyPaymentPayload(t *testing.T) {
	now := time.Unix(1764000000, 0)
	for _, tc := range legacyCases {
		got, err := LegacyPaymentPayload(legacyPayment(tc.amount, tc.customer, tc.description, tc.phase, tc.reason), now)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%s: not valid JSON", tc.name)
		}
	}
	if _, err := LegacyPaymentPayload(legacyPayment("1234567890123456.5", "", "", paygatev1.PaymentSuccess, ""), now); err == nil {
		t.Error("an amount JavaScript cannot print back digit for digit was accepted")
	}
}

// TestLegacyPayloadSurvivesJSONStringify hands every payload to Node.js: JSON.stringify of
// JSON.parse of the body must be the body, byte for byte, so that receivers that hash the
// re-serialised object compute the signature of the raw body.
func TestLegacyPayloadSurvivesJSONStringify(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is missing in CI")
		}
		t.Skip("node is not installed: the JSON.stringify round trip is not checked")
	}
	now := time.Unix(1764000000, 0)
	var bodies []string
	for _, tc := range legacyCases {
		body, err := LegacyPaymentPayload(legacyPayment(tc.amount, tc.customer, tc.description, tc.phase, tc.reason), now)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	in, _ := json.Marshal(bodies)
	cmd := exec.Command(node, "-e", `let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{
		const out=JSON.parse(s).map(b=>JSON.stringify(JSON.parse(b))===b?"same":"differs: "+JSON.stringify(JSON.parse(b)));
		process.stdout.write(JSON.stringify(out));});`)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var verdicts []string
	if err := json.Unmarshal(out, &verdicts); err != nil {
		t.Fatalf("node answered %q: %v", out, err)
	}
	for i, v := range verdicts {
		if v != "same" {
			t.Errorf("%s: JSON.stringify(JSON.parse(body)) %s\nbody: %s", legacyCases[i].name, v, bodies[i])
		}
	}
}
