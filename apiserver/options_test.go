// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/pkg/paygate"
)

// TestUnsignedRequests: a merchant's spec.unsignedRequests lets its requests of an environment
// come without X-Timestamp and X-Signature (production only with the administrator's
// --allow-unsigned-production), and nothing else: the environment, business ID and API key are
// still checked, a request that carries a signature is still verified, and each unsigned request
// is counted.
func TestUnsignedRequests(t *testing.T) {
	for _, tc := range []struct {
		name        string
		production  bool // the live merchant (production keys) instead of duka (sandbox keys)
		switchOn    []paygatev1.Environment
		adminAllows bool
		apiKey      string
		badSig      bool
		want        int
	}{
		{"sandbox, switch off", false, nil, false, "", false, http.StatusUnauthorized},
		{"sandbox, switch on", false, []paygatev1.Environment{"sandbox"}, false, "", false, http.StatusOK},
		{"sandbox, switch on for production only", false, []paygatev1.Environment{"production"}, true, "", false, http.StatusUnauthorized},
		{"sandbox, switch on, wrong API key", false, []paygatev1.Environment{"sandbox"}, false, "key-wrong", false, http.StatusUnauthorized},
		{"sandbox, switch on, a wrong signature is still refused", false, []paygatev1.Environment{"sandbox"}, false, "", true, http.StatusUnauthorized},
		{"production, switch on, administrator has not allowed it", true, []paygatev1.Environment{"production"}, false, "", false, http.StatusUnauthorized},
		{"production, switch on, administrator allows it", true, []paygatev1.Environment{"production"}, true, "", false, http.StatusOK},
		{"production, switch off, administrator allows it", true, nil, true, "", false, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newExchangeFixture(t, func(o *Options) { o.AllowUnsignedProduction = tc.adminAllows })
			creds, name := f.duka, "duka"
			if tc.production {
				creds, name = f.live, "live"
			}
			m := &paygatev1.Merchant{}
			if err := f.k8s.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: name}, m); err != nil {
				t.Fatal(err)
			}
			m.Spec.UnsignedRequests = tc.switchOn
			if err := f.k8s.Update(context.Background(), m); err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequest(http.MethodGet, f.srv.URL+"/api/v1/site-info", nil)
			if err != nil {
				t.Fatal(err)
			}
			key := creds.APIKey
			if tc.apiKey != "" {
				key = tc.apiKey
			}
			req.Header.Set("X-Environment", creds.Environment)
			req.Header.Set("X-Merchant-Key", creds.MerchantKey)
			req.Header.Set("X-API-Key", key)
			if tc.badSig {
				req.Header.Set("X-Timestamp", strconv.FormatInt(time.Now().Unix(), 10))
				req.Header.Set("X-Signature", "sha256="+strings.Repeat("0", 64))
			}
			counted := testutil.ToFloat64(metrics.UnsignedRequests.WithLabelValues(creds.Environment))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
			wantCount := counted
			if tc.want == http.StatusOK {
				wantCount++
			}
			if got := testutil.ToFloat64(metrics.UnsignedRequests.WithLabelValues(creds.Environment)); got != wantCount {
				t.Errorf("paygate_unsigned_requests_total = %v, want %v", got, wantCount)
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
