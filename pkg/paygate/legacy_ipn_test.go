// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package paygate

import (
	"errors"
	"net/http"
	"testing"

	"github.com/paygate/paygate/pkg/paygate/signing"
)

func TestWebhookVerifierLegacyIPN(t *testing.T) {
	secret := []byte("sk_sandbox_legacy")
	body := []byte(`{"data":{"ref_trx":"order/1","trx_id":"trx_1","amount":37.5,"currency_code":"TZS","customer_name":"Zoë","customer_email":"","description":"","environment":"sandbox"},"message":"Payment completed successfully","status":"completed","timestamp":1764000000}`)
	failed := []byte(`{"data":{"ref_trx":"order/2","trx_id":"trx_2","amount":1500,"currency_code":"TZS"},"message":"Payment failed: EXPIRED_SESSION","status":"failed","timestamp":1764000000}`)
	v := WebhookVerifier{Secret: secret, Format: WebhookFormatLegacyIPN}
	header := func(sig string, id string) http.Header {
		h := http.Header{}
		if sig != "" {
			h.Set("X-Signature", sig)
		}
		if id != "" {
			h.Set("X-Paygate-Event-Id", id)
		}
		return h
	}

	e, err := v.Verify(header(signing.SignLegacyIPN(secret, body), "evt_abc"), body)
	if err != nil {
		t.Fatal(err)
	}
	if e.Type != EventPaymentCompleted || e.ID != "evt_abc" || e.Legacy == nil || e.Legacy.Data.TrxID != "trx_1" ||
		e.Legacy.Data.Amount.String() != "37.5" || e.Legacy.Data.CustomerName != "Zoë" || e.Legacy.Timestamp != 1764000000 {
		t.Fatalf("decoded %+v %+v", e, e.Legacy)
	}
	if e, err := v.Verify(header(signing.SignLegacyIPN(secret, failed), ""), failed); err != nil || e.Type != EventPaymentFailed {
		t.Fatalf("failed IPN: %+v, %v", e, err)
	}

	for _, tc := range []struct {
		name string
		h    http.Header
		body []byte
		want error
	}{
		{"no signature", header("", ""), body, ErrWebhookSignature},
		{"another key", header(signing.SignLegacyIPN([]byte("other"), body), ""), body, ErrWebhookSignature},
		{"standard signature in X-Signature", header(signing.SignWebhook(secret, "1764000000", body), ""), body, ErrWebhookSignature},
		{"body changed", header(signing.SignLegacyIPN(secret, body), ""), append([]byte(" "), body...), ErrWebhookSignature},
		{"not an IPN", header(signing.SignLegacyIPN(secret, []byte(`{"status":"paid","data":{"trx_id":"x"}}`)), ""), []byte(`{"status":"paid","data":{"trx_id":"x"}}`), ErrWebhookPayload},
		{"no trx_id", header(signing.SignLegacyIPN(secret, []byte(`{"status":"completed","data":{}}`)), ""), []byte(`{"status":"completed","data":{}}`), ErrWebhookPayload},
	} {
		if _, err := v.Verify(tc.h, tc.body); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// A standard verifier does not accept a legacy delivery, nor a legacy verifier a standard one.
	if _, err := (WebhookVerifier{Secret: secret}).Verify(header(signing.SignLegacyIPN(secret, body), ""), body); err == nil {
		t.Error("a standard verifier accepted a legacy IPN")
	}
}
