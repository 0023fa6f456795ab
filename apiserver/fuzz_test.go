// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// FuzzPaymentRequest feeds arbitrary bodies through decoding and validation: they must never
// panic, and anything accepted must be a payment the API can store.
func FuzzPaymentRequest(f *testing.F) {
	for _, seed := range []string{
		`{"payment_amount":1500,"currency_code":"TZS","ref_trx":"order-1"}`,
		`{"payment_amount":"1500.00","currency_code":"TZS","ref_trx":"order-1","payment_mode":"push","customer_phone":"0712345678"}`,
		`{"payment_amount":1.5e3,"currency_code":"KES","ref_trx":"r","allow_payment_methods":"mpesa, airtel"}`,
		`{"payment_amount":null,"currency_code":null,"ref_trx":null,"webhook_url":null}`,
		`{"payment_amount":-1,"currency_code":"tzs","ref_trx":""}`,
		`{"payment_amount":1e400,"currency_code":"UGX","ref_trx":"x","allow_payment_methods":["a",1]}`,
		`[]`, `{`, `{"a":1}{"b":2}`, "\xff\xfe", ``, `null`, `{"customer_email":"a@b.c","customer_name":"\u0000"}`,
		`{"payment_amount":1500,"currency_code":"TZS","ref_trx":"r","success_redirect":"https://user@evil.example/","webhook_url":"javascript:alert(1)"}`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	s := New(Options{CheckoutKey: make([]byte, 32)})
	m := &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Name: "duka", Namespace: "demo"}, Spec: paygatev1.MerchantSpec{
		Currencies:             []paygatev1.CurrencyCode{"TZS", "KES"},
		WebhookURLs:            paygatev1.WebhookURLs{Sandbox: "http://127.0.0.1/hook"},
		AllowedRedirectDomains: []paygatev1.DomainName{"duka.example"},
	}}
	f.Fuzz(func(t *testing.T, body []byte, legacy bool) {
		for _, env := range paygatev1.Environments {
			c := &caller{merchant: m, env: env, body: body}
			fields, apiErr := decodeObject(body)
			if apiErr != nil {
				if apiErr.Status != 422 || len(apiErr.Errors) == 0 {
					t.Fatalf("decode error must be a validation error, got %+v", apiErr)
				}
				continue
			}
			req, v := s.parsePaymentRequest(fields, c, legacy)
			if len(v) > 0 {
				continue
			}
			if req.RefTrx == "" || len([]rune(req.RefTrx)) > 60 || req.Amount.Cmp(minimumAmount) < 0 || req.Amount.Cmp(maximumAmount) > 0 || req.AmountOutOfRange {
				t.Fatalf("accepted an invalid request: %+v", req)
			}
			if req.Mode == paygatev1.PaymentModePush && req.CustomerPhone == "" {
				t.Fatalf("accepted push mode without a phone")
			}
			if env == paygatev1.EnvironmentProduction && req.WebhookURL != "" && req.WebhookURL[:8] != "https://" {
				t.Fatalf("accepted a non-HTTPS production webhook %q", req.WebhookURL)
			}
		}
	})
}
