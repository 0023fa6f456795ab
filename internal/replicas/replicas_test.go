// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package replicas

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/paygate/paygate/internal/controlplane"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/ratelimit"
)

// The envtest tests share one control plane (etcd and kube-apiserver from bin/), started on first
// use; -short skips them.
var (
	cp    *controlplane.ControlPlane
	cpErr error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if cp != nil {
		if err := cp.Stop(); err != nil {
			code = 1
		}
	}
	os.Exit(code)
}

// moduleRoot is the directory of go.mod above the package directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// controlPlane starts the shared control plane on first use and returns a cluster
// administrator's client.
func controlPlane(t *testing.T) (client.Client, *rest.Config) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs etcd and kube-apiserver; skipped in -short mode")
	}
	if cp == nil && cpErr == nil {
		assets := os.Getenv("KUBEBUILDER_ASSETS")
		if assets == "" {
			assets = filepath.Join(moduleRoot(t), "bin")
		}
		cp, cpErr = controlplane.Start(controlplane.Options{AssetsDir: assets, Scheme: kube.Scheme()})
	}
	if cpErr != nil {
		t.Fatalf("starting the control plane (make controlplane builds it): %v", cpErr)
	}
	c, err := client.New(cp.Config, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c, cp.Config
}

// namespace creates a namespace for one test.
func namespace(t *testing.T, c client.Client, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

func newAnnouncer(t *testing.T, c client.Client, ns string, clk *testingclock.FakeClock) *Announcer {
	t.Helper()
	a, err := New(Options{Client: c, Namespace: ns, Clock: clk, Identity: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func syncAll(t *testing.T, as ...*Announcer) {
	t.Helper()
	for _, a := range as {
		if err := a.Sync(context.Background()); err != nil {
			t.Fatalf("Sync of %s: %v", a.Name(), err)
		}
	}
}

func wantCounts(t *testing.T, want int, as ...*Announcer) {
	t.Helper()
	for _, a := range as {
		if got := a.Count(); got != want {
			t.Errorf("%s counts %d replicas, want %d", a.Name(), got, want)
		}
	}
}

// TestAnnouncersCountReplicas: three replicas see 3; one stops renewing and, once its Lease has
// expired, the others see 2, and the share of the rate limit each allows follows; one stops
// gracefully and the last sees 1 at once.
func TestAnnouncersCountReplicas(t *testing.T) {
	c, _ := controlPlane(t)
	ns := namespace(t, c, "count-replicas")
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	a, b, d := newAnnouncer(t, c, ns, clk), newAnnouncer(t, c, ns, clk), newAnnouncer(t, c, ns, clk)
	wantCounts(t, 1, a, b, d) // before the first Sync

	// Leases that are not a replica's are not counted: another component's, and one in another
	// namespace.
	other := namespace(t, c, "count-replicas-other")
	for _, l := range []*coordinationv1.Lease{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "paygate-manager.paygate.dev"},
			Spec: coordinationv1.LeaseSpec{RenewTime: ptr.To(metav1.NewMicroTime(clk.Now())), LeaseDurationSeconds: ptr.To[int32](30)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: NamePrefix + "elsewhere", Labels: Labels()},
			Spec: coordinationv1.LeaseSpec{RenewTime: ptr.To(metav1.NewMicroTime(clk.Now())), LeaseDurationSeconds: ptr.To[int32](30)}},
	} {
		if err := c.Create(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}

	syncAll(t, a, b, d)
	syncAll(t, a, b, d) // a and b saw only the Leases written before theirs the first time
	wantCounts(t, 3, a, b, d)
	var leases coordinationv1.LeaseList
	if err := c.List(context.Background(), &leases, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/component": "apiserver"}); err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) != 3 {
		t.Fatalf("%d Leases labelled app.kubernetes.io/component=apiserver, want 3", len(leases.Items))
	}
	for _, l := range leases.Items {
		if !strings.HasPrefix(l.Name, NamePrefix) || ptr.Deref(l.Spec.LeaseDurationSeconds, 0) != 30 || ptr.Deref(l.Spec.HolderIdentity, "") != "test" {
			t.Errorf("Lease %s: %+v", l.Name, l.Spec)
		}
	}
	limiter := ratelimit.New(clk.Now, 100)
	allowed := func(key string) int {
		n := 0
		for ok := true; ok; n++ {
			ok, _ = limiter.Allow(key, ratelimit.Share(120, a.Count()))
		}
		return n - 1
	}
	if n := allowed("3 replicas"); n != 40 {
		t.Errorf("with 3 replicas a replica allowed %d of 120, want 40", n)
	}

	// d stops renewing (it died): it counts until its Lease expires 30 s after its renewal.
	clk.Step(20 * time.Second)
	syncAll(t, a, b)
	wantCounts(t, 3, a, b)
	clk.Step(11 * time.Second)
	syncAll(t, a, b)
	wantCounts(t, 2, a, b)
	if n := allowed("2 replicas"); n != 60 {
		t.Errorf("with 2 replicas a replica allowed %d of 120, want 60", n)
	}

	// b stops gracefully: a sees 1 at its next Sync.
	if err := b.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	syncAll(t, a)
	wantCounts(t, 1, a)
	if n := allowed("1 replica"); n != 120 {
		t.Errorf("alone, the replica allowed %d of 120, want 120", n)
	}

	// d's Lease stays until it has been expired for ForgetAfter; then a deletes it.
	clk.Step(DefaultForgetAfter - 5*time.Second)
	syncAll(t, a)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: d.Name()}, &coordinationv1.Lease{}); err != nil {
		t.Fatalf("the expired Lease went before ForgetAfter: %v", err)
	}
	clk.Step(10 * time.Second)
	syncAll(t, a)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: d.Name()}, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Lease of a replica gone for ForgetAfter is still there: %v", err)
	}
	// The other component's Lease, expired as long, is left alone.
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "paygate-manager.paygate.dev"}, &coordinationv1.Lease{}); err != nil {
		t.Fatalf("another component's Lease was deleted: %v", err)
	}

	// d comes back (it was only cut off): it writes its Lease afresh and is counted again.
	syncAll(t, d, a)
	wantCounts(t, 2, a, d)
}

// TestRunAnnouncesAndReleases: Run writes the Lease at once, renews it at every tick of the clock
// and deletes it when its context ends.
func TestRunAnnouncesAndReleases(t *testing.T) {
	c, _ := controlPlane(t)
	ns := namespace(t, c, "run-replica")
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	a := newAnnouncer(t, c, ns, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	key := client.ObjectKey{Namespace: ns, Name: a.Name()}
	renewTime := func() time.Time {
		l := &coordinationv1.Lease{}
		if err := c.Get(context.Background(), key, l); err != nil || l.Spec.RenewTime == nil {
			return time.Time{}
		}
		return l.Spec.RenewTime.Time
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	start := clk.Now()
	waitFor("the Lease", func() bool { return renewTime().Equal(start) })
	waitFor("the ticker", clk.HasWaiters)
	clk.Step(DefaultRenewInterval)
	waitFor("the renewal", func() bool { return renewTime().Equal(start.Add(DefaultRenewInterval)) })

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := c.Get(context.Background(), key, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Lease is still there after Run ended: %v", err)
	}
}

// TestRoleAllowsEnough: the Role of config/rbac/apiserver is enough for everything an Announcer
// does in its namespace, and allows nothing in another one.
func TestRoleAllowsEnough(t *testing.T) {
	c, cfg := controlPlane(t)
	ns := namespace(t, c, "paygate-system")
	other := namespace(t, c, "not-paygate")
	dir := filepath.Join(moduleRoot(t), "config", "rbac", "apiserver")
	var role rbacv1.Role
	var binding rbacv1.RoleBinding
	for file, obj := range map[string]client.Object{"replicas_role.yaml": &role, "replicas_role_binding.yaml": &binding} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(b, obj); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if obj.GetNamespace() != ns {
			t.Fatalf("%s is in namespace %q, want %s", file, obj.GetNamespace(), ns)
		}
		if err := c.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	sa := binding.Subjects[0]
	asAPIServer := rest.CopyConfig(cfg)
	asAPIServer.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + sa.Namespace + ":" + sa.Name}
	sac, err := client.New(asAPIServer, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}

	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	// RBAC takes a moment to reach the authorizer.
	a := newAnnouncer(t, sac, ns, clk)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err := a.Sync(context.Background())
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Sync as the apiserver's service account: %v", err)
		}
	}
	b := newAnnouncer(t, sac, ns, clk)
	syncAll(t, b, a)
	wantCounts(t, 2, a, b)
	// Every verb: the take-over after a create that looked failed (get, update), forgetting a
	// replica gone (delete with preconditions), and a graceful stop (delete).
	a.lease = nil
	syncAll(t, a)
	clk.Step(DefaultLeaseDuration + DefaultForgetAfter + time.Second)
	syncAll(t, a)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: b.Name()}, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Lease of a replica gone is still there: %v", err)
	}
	if err := a.Release(context.Background()); err != nil {
		t.Fatal(err)
	}

	stranger, err := New(Options{Client: sac, Namespace: other, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := stranger.Sync(context.Background()); !apierrors.IsForbidden(err) {
		t.Fatalf("Sync in another namespace: %v, want forbidden", err)
	}
}

// TestFailuresKeepTheLastCount: when Kubernetes refuses (no RBAC for Leases) or fails, Count
// stays where it was: 1 from the start, the last count after a success.
func TestFailuresKeepTheLastCount(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "x", errors.New("RBAC"))
	var fail error
	base := fake.NewClientBuilder().WithScheme(kube.Scheme()).Build()
	c := interceptor.NewClient(base, interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if fail != nil {
				return fail
			}
			return cl.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if fail != nil {
				return fail
			}
			return cl.Update(ctx, obj, opts...)
		},
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if fail != nil {
				return fail
			}
			return cl.List(ctx, list, opts...)
		},
	})
	var observed []int
	mk := func() *Announcer {
		a, err := New(Options{Client: c, Namespace: "paygate-system", Clock: clk, OnCount: func(n int) { observed = append(observed, n) }})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a, b := mk(), mk()

	fail = forbidden
	if err := a.Sync(context.Background()); !apierrors.IsForbidden(err) {
		t.Fatalf("Sync without RBAC: %v", err)
	}
	wantCounts(t, 1, a)

	fail = nil
	syncAll(t, a, b, a)
	wantCounts(t, 2, a, b)

	fail = apierrors.NewServiceUnavailable("etcd is down")
	clk.Step(time.Hour)
	if err := a.Sync(context.Background()); err == nil {
		t.Fatal("Sync succeeded against a failing API server")
	}
	wantCounts(t, 2, a)
	if len(observed) != 3 || observed[2] != 2 {
		t.Errorf("OnCount saw %v, want a count per successful Sync", observed)
	}

	// A nil Announcer counts this replica alone.
	if n := (*Announcer)(nil).Count(); n != 1 {
		t.Errorf("nil Announcer counts %d, want 1", n)
	}
}

func TestNewValidates(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(kube.Scheme()).Build()
	for _, tt := range []struct {
		name string
		opts Options
	}{
		{"no client", Options{Namespace: "ns"}},
		{"no namespace", Options{Client: c}},
		{"duration shorter than the interval", Options{Client: c, Namespace: "ns", RenewInterval: time.Minute, LeaseDuration: time.Second}},
	} {
		if _, err := New(tt.opts); err == nil {
			t.Errorf("%s: New accepted %+v", tt.name, tt.opts)
		}
	}
	a, err := New(Options{Client: c, Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(Options{Client: c, Namespace: "ns"})
	if !strings.HasPrefix(a.Name(), NamePrefix) || len(a.Name()) != len(NamePrefix)+10 || a.Name() == b.Name() {
		t.Errorf("Lease names %q and %q", a.Name(), b.Name())
	}
}

func TestNamespaceFrom(t *testing.T) {
	file := func(content string, err error) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if name != ServiceAccountNamespaceFile {
				t.Errorf("read %s", name)
			}
			return []byte(content), err
		}
	}
	env := func(v string) func(string) string {
		return func(name string) string {
			if name != "POD_NAMESPACE" {
				t.Errorf("getenv %s", name)
			}
			return v
		}
	}
	for _, tt := range []struct {
		name             string
		getenv           func(string) string
		readFile         func(string) ([]byte, error)
		wantNS, wantFrom string
	}{
		{"downward API first", env("payments"), file("paygate-system", nil), "payments", "POD_NAMESPACE"},
		{"service account file", env(""), file("paygate-system\n", nil), "paygate-system", ServiceAccountNamespaceFile},
		{"blank variable", env("  "), file("paygate-system", nil), "paygate-system", ServiceAccountNamespaceFile},
		{"outside a pod", env(""), file("", fs.ErrNotExist), "", ""},
		{"empty file", env(""), file("\n", nil), "", ""},
	} {
		ns, from := namespaceFrom(tt.getenv, tt.readFile)
		if ns != tt.wantNS || from != tt.wantFrom {
			t.Errorf("%s: %q from %q, want %q from %q", tt.name, ns, from, tt.wantNS, tt.wantFrom)
		}
	}
}
