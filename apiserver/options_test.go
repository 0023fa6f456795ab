// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/paygate/paygate/pkg/paygate"
)

// TestSignaturesDisabled: the administrator switch drops X-Timestamp and X-Signature, and nothing
// else: the environment, business ID and API key are still checked.
func TestSignaturesDisabled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		disabled bool
		apiKey   string
		want     int
	}{
		{"unsigned, signatures on", false, "", http.StatusUnauthorized},
		{"unsigned, signatures off", true, "", http.StatusOK},
		{"wrong key, signatures off", true, "key-wrong", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newExchangeFixture(t, func(o *Options) { o.SignaturesDisabled = tc.disabled })
			req, err := http.NewRequest(http.MethodGet, f.srv.URL+"/api/v1/site-info", nil)
			if err != nil {
				t.Fatal(err)
			}
			key := f.duka.APIKey
			if tc.apiKey != "" {
				key = tc.apiKey
			}
			req.Header.Set("X-Environment", f.duka.Environment)
			req.Header.Set("X-Merchant-Key", f.duka.MerchantKey)
			req.Header.Set("X-API-Key", key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// TestIdempotencyKeyExpires: within 24 hours a key belongs to its first request; after that it
// may serve another one.
func TestIdempotencyKeyExpires(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	f := newExchangeFixture(t, func(o *Options) { o.Clock = clk })
	c := paygate.New(f.srv.URL, f.duka)
	c.Now = clk.Now
	create := func(ref string) error {
		_, err := c.CreatePayment(context.Background(), paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: ref}, "day-key")
		return err
	}
	if err := create("first"); err != nil {
		t.Fatal(err)
	}
	clk.Step(23 * time.Hour)
	if err := create("second"); err == nil || !strings.Contains(err.Error(), LabelIdempotencyKeyReused) {
		t.Fatalf("the key was reused within 24 hours: %v", err)
	}
	clk.Step(2 * time.Hour)
	if err := create("second"); err != nil {
		t.Fatalf("the key was not free after 24 hours: %v", err)
	}
}
