// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package e2e drives Paygate the way merchants do: signed HTTP requests against the real
// apiserver, with the real manager reconciling on a real kube-apiserver and etcd.
package e2e_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/apiserver"
	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/openapitest"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/test/testenv"
)

var (
	env     *testenv.Env
	k8s     client.Client
	ctx     context.Context
	cancel  context.CancelFunc
	baseURL string
	api     *apiserver.Runtime
	// identities are the chart's service accounts the manager and the apiserver act as.
	identities *testenv.Identities
	sandbox    = provider.NewSandbox(provider.SandboxOptions{})
)

func TestE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end tests need etcd and kube-apiserver; skipped in -short mode")
	}
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "End to end (REST API over HTTP, envtest)")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	// With kube-controller-manager's garbage collector and namespace controller: ownerReferences
	// cascade and deleted namespaces go away, as in a real cluster.
	env, err = testenv.Start(testenv.WithGarbageCollector())
	Expect(err).NotTo(HaveOccurred(), "starting the control plane (make controlplane builds it)")
	// Registered first, so the control plane stops even when a later step of the setup fails.
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	k8s = env.Client
	// Least privilege: the manager and the apiserver act as the chart's service accounts, with
	// only the roles the chart grants them, in every spec.
	identities, err = testenv.ChartIdentities(ctx, env.Config, k8s)
	Expect(err).NotTo(HaveOccurred(), "installing the chart's service accounts and roles")
	env.ManagerConfig = identities.Manager
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	var done <-chan error
	api, done, err = apiserver.Start(ctx, identities.APIServer, "127.0.0.1:0", apiserver.Options{
		CheckoutKey: key,
		PublicURL:   "http://checkout.paygate.test",
		Console:     apiserver.ConsoleOptions{SecretsNamespace: testenv.ChartNamespace},
		Log:         logf.Log.WithName("apiserver"),
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		cancel()
		Eventually(done).Should(Receive(BeNil()))
	})
	baseURL = "http://" + api.Listener.Addr().String()
	_, err = env.StartManager(managerOptions())
	Expect(err).NotTo(HaveOccurred())
})

// managerOptions are the options every manager of the suite runs with (restarts included):
// fast provider polling and a compressed webhook schedule (0, 0.2, 0.4, 0.8, 1.6 s).
func managerOptions() controllers.Options {
	return controllers.Options{
		Providers: &provider.Registry{
			Sandbox:  sandbox,
			Upstream: (&provider.Upstreams{Reader: k8s}).For,
			Gateways: &provider.Gateways{Reader: k8s, DarajaCallbackURL: baseURL + "/internal/provider/callbacks/daraja"},
		},
		PollInterval: 100 * time.Millisecond,
		CallbackURL:  baseURL + "/internal/provider/callbacks",
		Webhooks: controllers.WebhookOptions{
			Schedule:            []time.Duration{0, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond},
			Timeout:             time.Second,
			AllowPrivateSandbox: true,
		},
	}
}

// newNamespace creates a namespace for one test; the test deletes it (kube-controller-manager's
// namespace controller then empties it, as in a cluster; nothing depends on it being gone).
func newNamespace() string { return testenv.Namespace(ctx, k8s, "e2e") }

func uniqueName(prefix string) string { return testenv.UniqueName(prefix) }

// createGateway creates a cluster-scoped gateway for one test.
func createGateway(currency paygatev1.CurrencyCode, mods ...func(*paygatev1.Gateway)) *paygatev1.Gateway {
	g := testenv.Gateway(currency, mods...)
	Expect(k8s.Create(ctx, g)).To(Succeed())
	testenv.DeleteAfter(ctx, k8s, g)
	Eventually(func(gm Gomega) {
		gm.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(g), g)).To(Succeed())
		gm.Expect(g.Status.ID).NotTo(BeZero())
	}).Should(Succeed())
	return g
}

// merchantFixture is a Ready merchant with clients for its credential sets.
type merchantFixture struct {
	merchant   *paygatev1.Merchant
	sandbox    *paygate.Client
	production *paygate.Client
}

// createMerchant creates a merchant, waits for it to be Ready (and for production credentials
// when approved) and returns clients whose requests and responses are checked against the
// OpenAPI document.
func createMerchant(ns, name string, mods ...func(*paygatev1.Merchant)) *merchantFixture {
	m := testenv.Merchant(ns, name, func(m *paygatev1.Merchant) {
		m.Spec.BusinessStatus, m.Spec.KYBStatus = paygatev1.BusinessApproved, paygatev1.KYBApproved
		m.Spec.WebhookURLs = paygatev1.WebhookURLs{Sandbox: "http://127.0.0.1:9/hooks", Production: "https://duka.example/hooks"}
	})
	for _, mod := range mods {
		mod(m)
	}
	Expect(k8s.Create(ctx, m)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), m)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(m.Status.Conditions, paygatev1.ConditionReady)).To(BeTrue())
		if m.Spec.BusinessStatus == paygatev1.BusinessApproved {
			g.Expect(meta.IsStatusConditionTrue(m.Status.Conditions, paygatev1.ConditionProductionEnabled)).To(BeTrue())
		}
	}).Should(Succeed())
	f := &merchantFixture{merchant: m, sandbox: clientFor(m, paygatev1.EnvironmentSandbox)}
	if m.Spec.BusinessStatus == paygatev1.BusinessApproved {
		f.production = clientFor(m, paygatev1.EnvironmentProduction)
	}
	return f
}

// clientFor reads an environment's credentials from their Secret, as a merchant copies them from
// the dashboard, and builds a Go client with them.
func clientFor(m *paygatev1.Merchant, env paygatev1.Environment) *paygate.Client {
	return clientAt(baseURL, m, env)
}

// clientAt is clientFor against the apiserver instance at base (another replica).
func clientAt(base string, m *paygatev1.Merchant, env paygatev1.Environment) *paygate.Client {
	var secret corev1.Secret
	Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: credentials.SecretName(m.Name, env)}, &secret)
	}).Should(Succeed())
	set, ok := credentials.SetFromData(secret.Data)
	Expect(ok).To(BeTrue())
	c := paygate.New(base, paygate.Credentials{
		Environment: string(env), MerchantKey: set.BusinessID, APIKey: set.APIKey, APISecret: set.APISecret,
	})
	c.HTTP = &http.Client{Timeout: 30 * time.Second, Transport: openapitest.NewValidatingTransport(GinkgoT(), apiserver.OpenAPIDocument(), http.DefaultTransport)}
	// The apiserver's cache must know the merchant before its first request.
	Eventually(func(g Gomega) {
		resp, err := c.Do(ctx, http.MethodGet, "/api/v1/site-info", nil, nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(resp.Body))
	}).Should(Succeed())
	return c
}
