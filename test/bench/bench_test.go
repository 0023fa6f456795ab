// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package bench measures Paygate. The benchmark table of docs/performance.md (`make bench`) is
// built by the driver in test/bench/driver and the load generator in test/bench/cmd/paygate-load,
// which run the real binary and the load as separate processes; TestBenchQuick runs its quick mode
// as a smoke test when PAYGATE_BENCH_QUICK=1.
//
// The Go benchmarks below are quicker and coarser: signed HTTP requests against an apiserver and
// a manager started inside the test process (so the load shares their scheduler and garbage
// collector), on a real kube-apiserver and etcd. Run:
//
//	make controlplane && go test ./test/bench/ -run '^$' -bench . -benchtime 2000x
//
// The control plane starts only when a benchmark runs; `go test` without -bench does nothing here.
package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/apiserver"
	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/test/testenv"
)

var (
	setupOnce sync.Once
	setupErr  error
	merchant  *paygate.Client
	env       *testenv.Env
)

func setup(b *testing.B) *paygate.Client {
	setupOnce.Do(func() { setupErr = start() })
	if setupErr != nil {
		b.Fatalf("starting Paygate: %v", setupErr)
	}
	return merchant
}

func start() error {
	var err error
	if env, err = testenv.Start(); err != nil {
		return err
	}
	if _, err = env.StartManager(controllers.Options{
		Providers:    &provider.Registry{Sandbox: provider.NewSandbox(provider.SandboxOptions{})},
		PollInterval: 200 * time.Millisecond,
	}); err != nil {
		return err
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	rt, _, err := apiserver.Start(context.Background(), env.Config, "127.0.0.1:0", apiserver.Options{
		CheckoutKey: key, RateLimitPerMinute: 100_000_000,
	})
	if err != nil {
		return err
	}
	ctx := context.Background()
	k := env.Client
	if err := k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}); err != nil {
		return err
	}
	gw := &paygatev1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "bench-tz"}, Spec: paygatev1.GatewaySpec{
		DisplayName: "Bench", Currency: "TZS", Type: paygatev1.GatewayTypeAutomatic, Provider: paygatev1.ProviderSandbox,
		Fees: paygatev1.GatewayFees{Percent: "2.5", Fixed: "0"}}}
	if err := k.Create(ctx, gw); err != nil {
		return err
	}
	m := &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "shop"}, Spec: paygatev1.MerchantSpec{
		DisplayName: "Bench shop", Owner: "bench@example.com", Currencies: []paygatev1.CurrencyCode{"TZS"},
		Wallets: []paygatev1.Wallet{{Currency: "TZS"}}, BusinessStatus: paygatev1.BusinessApproved,
		WebhookURLs: paygatev1.WebhookURLs{Sandbox: "http://127.0.0.1:9/none"}}}
	if err := k.Create(ctx, m); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if err := k.Get(ctx, client.ObjectKeyFromObject(m), m); err == nil && meta.IsStatusConditionTrue(m.Status.Conditions, paygatev1.ConditionReady) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("merchant not Ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var s corev1.Secret
	if err := k.Get(ctx, client.ObjectKey{Namespace: "bench", Name: credentials.SecretName("shop", paygatev1.EnvironmentSandbox)}, &s); err != nil {
		return err
	}
	set, _ := credentials.SetFromData(s.Data)
	merchant = paygate.New("http://"+rt.Listener.Addr().String(), paygate.Credentials{
		Environment: "sandbox", MerchantKey: set.BusinessID, APIKey: set.APIKey, APISecret: set.APISecret})
	for time.Now().Before(deadline) { // the apiserver's cache must know the merchant
		if _, err := merchant.SiteInfo(ctx); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the apiserver never accepted the merchant")
}

// TestMain stops the control plane the benchmarks started: its processes outlive the test binary
// otherwise.
func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		_ = env.Stop()
	}
	os.Exit(code)
}

var seq atomic.Int64

// BenchmarkCreatePayment: signed POST /api/v1/payments over HTTP, 8 clients in parallel; each
// creates a Payment object in etcd. Reports p50 and p99 latency.
func BenchmarkCreatePayment(b *testing.B) {
	c := setup(b)
	ctx := context.Background()
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(4) // × GOMAXPROCS (2) = 8 clients
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			start := time.Now()
			_, err := c.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS",
				RefTrx: fmt.Sprintf("bench-%d", seq.Add(1))}, "")
			d := time.Since(start)
			if err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}
	})
	b.StopTimer()
	reportLatency(b, lat)
}

// BenchmarkVerifyPayment: signed GET /api/v1/verify-payment/{trx_id}, answered from the cache.
func BenchmarkVerifyPayment(b *testing.B) {
	c := setup(b)
	ctx := context.Background()
	created, err := c.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS",
		RefTrx: fmt.Sprintf("bench-verify-%d", seq.Add(1))}, "")
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			start := time.Now()
			if _, err := c.VerifyPayment(ctx, created.TrxID); err != nil {
				b.Error(err)
				return
			}
			d := time.Since(start)
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}
	})
	b.StopTimer()
	reportLatency(b, lat)
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
