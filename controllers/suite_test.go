// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/pgtest"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/test/testenv"
)

// The suite runs the real manager against a real etcd and kube-apiserver.
var (
	env *testenv.Env
	k8s client.Client // uncached: reads what the API server stores
	ctx = context.Background()

	// clock drives the payment controller and the sandbox simulator: tests advance it instead of
	// sleeping through checkout lifetimes.
	clock   = testenv.NewClock()
	sandbox = provider.NewSandbox(provider.SandboxOptions{Clock: clock.Now, SlowAfter: 20 * time.Second, AmbiguousFor: 5 * time.Second})

	// payoutAmbiguousAfter is the manager's --payout-ambiguous-after.
	payoutAmbiguousAfter = 5 * time.Minute

	// archiveServer is a real PostgreSQL holding the suite's archive, behind archiveProxy (specs
	// take the database away and bring it back); archiveStore is the manager's. Both are nil
	// when PostgreSQL is not installed (outside CI): the archive specs skip, and every other spec
	// runs without an archive.
	archiveServer *pgtest.Server
	archiveProxy  *pgtest.Proxy
	archiveStore  *archive.Store
	archiveDSN    string
	archiveSkip   error
)

// managerOptions are the options every manager of the suite runs with (restarts included).
func managerOptions() controllers.Options {
	opts := controllers.Options{
		Providers:    &provider.Registry{Sandbox: sandbox, Upstream: (&provider.Upstreams{Reader: k8s}).For},
		Clock:        clock,
		PollInterval: 100 * time.Millisecond,
		// Payout specs step the clock past it instead of waiting the default 30 minutes.
		PayoutAmbiguousAfter: payoutAmbiguousAfter,
		// The manager's archiver keeps everything (the specs step the shared clock by months);
		// the archive specs run archivers of their own, scoped to their namespace. Balances read
		// the archive in every spec.
		ArchiveRetention: controllers.Retention{},
	}
	if archiveStore != nil {
		opts.Archive = archiveStore
	}
	return opts
}

// startArchive starts the suite's PostgreSQL and migrates its archive, unless PostgreSQL is not
// installed outside CI.
func startArchive() {
	srv, err := pgtest.StartServer()
	if errors.Is(err, pgtest.ErrNoBinaries) && os.Getenv("CI") != "true" {
		archiveSkip = err
		return
	}
	Expect(err).NotTo(HaveOccurred(), "starting PostgreSQL (hack/install-postgres.sh installs it)")
	archiveServer = srv
	dsn, err := srv.NewDatabase(ctx)
	Expect(err).NotTo(HaveOccurred())
	archiveProxy, err = pgtest.NewProxy(fmt.Sprintf("127.0.0.1:%d", srv.Port))
	Expect(err).NotTo(HaveOccurred())
	archiveDSN = archiveProxy.DSN(dsn)
	archiveStore, err = archive.Open(ctx, archiveDSN, archive.Options{MaxConns: 8})
	Expect(err).NotTo(HaveOccurred())
	Expect(archiveStore.Migrate(ctx)).To(Succeed())
}

// needArchive skips a spec that needs PostgreSQL when it is not installed (never under CI=true).
func needArchive() {
	if archiveStore == nil {
		Skip(fmt.Sprintf("no archive: %v", archiveSkip))
	}
}

func TestControllers(t *testing.T) {
	if testing.Short() {
		t.Skip("the envtest suite needs etcd and kube-apiserver; skipped in -short mode")
	}
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Controllers (envtest)")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = testenv.Start()
	Expect(err).NotTo(HaveOccurred(), "starting the control plane (make controlplane builds it)")
	k8s = env.Client
	startArchive()
	_, err = env.StartManager(managerOptions())
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
	if archiveStore != nil {
		archiveStore.Close()
		archiveProxy.Close()
		Expect(archiveServer.Stop()).To(Succeed())
	}
})

// newNamespace creates a namespace for one test and deletes it afterwards. envtest has no
// garbage collector and no namespace controller: objects in it are deleted explicitly.
func newNamespace() string { return testenv.Namespace(ctx, k8s, "paygate-test") }

// uniqueName gives cluster-scoped objects of different tests different names.
func uniqueName(prefix string) string { return testenv.UniqueName(prefix) }

// deleteAfter deletes a cluster-scoped object at the end of the test.
func deleteAfter(obj client.Object) { testenv.DeleteAfter(ctx, k8s, obj) }
