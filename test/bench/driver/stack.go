// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package driver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/apiserver"
	"github.com/paygate/paygate/console"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/controlplane"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/pgtest"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/test/bench/load"
	"github.com/paygate/paygate/test/testenv"
)

// cmdArchiveDSNEnv is the variable the paygate commands read the archive's DSN from
// (cmd/paygate's EnvArchiveDSN).
const cmdArchiveDSNEnv = "PAYGATE_ARCHIVE_DSN"

// Namespaces and merchants of the run.
const (
	systemNS   = "paygate-system"
	gatewayTZS = "tzs-sandbox"
	planCode   = "bench-monthly"
	planTerms  = "Bench plan: TZS 5,000 every month by USSD prompt. Cancel any time."
	// successPhone succeeds at the first status query (docs/sandbox.md).
	successPhone = "+255712400100"
	// readSet is how many payments of the seeded merchant the read rows read.
	readSet = 100
)

// roles: shop takes the create rows; bulk is seeded (reads, list, balance, memory); flow takes
// the end-to-end rows, payouts and subscriptions; store the storage row. Each has its own
// namespace, so the figures of one do not depend on the payments of another (a balance recount
// is per merchant).
var roles = []struct{ role, namespace string }{
	{"shop", "bench-shop"}, {"bulk", "bench-bulk"}, {"flow", "bench-flow"}, {"store", "bench-store"},
}

type stack struct {
	s      Settings
	dir    string
	root   string
	binDir string

	paygateBin, loadBin string

	env        *envtest.Environment
	restCfg    *rest.Config
	k8s        client.Client
	kubeconfig string
	etcdURL    string

	sink      *load.Receiver
	apiserver *proc
	manager   *proc
	apiURL    string
	debug     map[string]string // process -> address of its --pprof-bind-address
	metrics   map[string]string // process -> address of /metrics

	// archiveDSN is the archive's database when Settings.Archive (postgres its server).
	archiveDSN string
	postgres   *pgtest.Server

	clients map[string]*paygate.Client
	cfg     *load.Config
	cfgPath string
	logs    []*os.File
}

func (st *stack) build(ctx context.Context) error {
	st.binDir = filepath.Join(st.dir, "bin")
	if err := os.MkdirAll(st.binDir, 0o755); err != nil {
		return err
	}
	st.paygateBin, st.loadBin = filepath.Join(st.binDir, "paygate"), filepath.Join(st.binDir, "paygate-load")
	for _, b := range [][]string{
		{"build", "-o", st.paygateBin, "./cmd/paygate"},
		{"build", "-o", st.loadBin, "./test/bench/cmd/paygate-load"},
	} {
		cmd := exec.CommandContext(ctx, "go", b...)
		cmd.Dir = st.root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %v: %w\n%s", b, err, out)
		}
	}
	return nil
}

func (st *stack) startControlPlane() error {
	assets, err := testenv.AssetsDir()
	if err != nil {
		return err
	}
	crds, err := controlplane.CRDs()
	if err != nil {
		return err
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return fmt.Errorf("%s is missing from %s: run make controlplane: %w", bin, assets, err)
		}
	}
	// envtest directly rather than testenv.Start: the storage row reads etcd, whose URL only the
	// envtest environment knows. Same binaries, same CRDs.
	st.env = &envtest.Environment{BinaryAssetsDirectory: assets, CRDs: crds, ErrorIfCRDPathMissing: true, Scheme: kube.Scheme()}
	// Their logs too go to the run's directory.
	for name, set := range map[string]func(w *os.File){
		"kube-apiserver": func(w *os.File) { st.env.ControlPlane.APIServer = &envtest.APIServer{Out: w, Err: w} },
		"etcd":           func(w *os.File) { st.env.ControlPlane.Etcd = &envtest.Etcd{Out: w, Err: w} },
	} {
		f, err := os.Create(filepath.Join(st.dir, name+".log"))
		if err != nil {
			return err
		}
		st.logs = append(st.logs, f)
		set(f)
	}
	cfg, err := st.env.Start()
	if err != nil {
		return errors.Join(fmt.Errorf("starting etcd and kube-apiserver: %w", err), st.env.Stop())
	}
	st.restCfg = cfg
	st.etcdURL = st.env.ControlPlane.Etcd.URL.String()
	if st.k8s, err = client.New(cfg, client.Options{Scheme: kube.Scheme()}); err != nil {
		return err
	}
	user, err := st.env.AddUser(envtest.User{Name: "paygate-bench", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	st.kubeconfig = filepath.Join(st.dir, "kubeconfig")
	return os.WriteFile(st.kubeconfig, kc, 0o600)
}

// startArchive starts PostgreSQL in the run's directory and migrates an empty archive, so that
// the servers find it ready (the manager migrates too, the apiserver does not).
func (st *stack) startArchive(ctx context.Context) error {
	srv, err := pgtest.StartServerIn(filepath.Join(st.dir, "postgres"))
	if err != nil {
		return fmt.Errorf("starting PostgreSQL for the archive (BENCH_ARCHIVE=0 runs without it): %w", err)
	}
	st.postgres = srv
	if st.archiveDSN, err = srv.NewDatabase(ctx); err != nil {
		return err
	}
	store, err := archive.Open(ctx, st.archiveDSN, archive.Options{MaxConns: 2, ApplicationName: "paygate-bench"})
	if err != nil {
		return err
	}
	defer store.Close()
	return store.Migrate(ctx)
}

func (st *stack) startServers(ctx context.Context) error {
	st.debug, st.metrics = map[string]string{}, map[string]string{}
	addrs := map[string]string{}
	for _, n := range []string{"api", "api-metrics", "api-debug", "mgr-metrics", "mgr-probe", "mgr-debug"} {
		a, err := freeAddr()
		if err != nil {
			return err
		}
		addrs[n] = a
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	var archiveEnv []string
	if st.archiveDSN != "" {
		archiveEnv = []string{cmdArchiveDSNEnv + "=" + st.archiveDSN}
	}
	st.apiURL = "http://" + addrs["api"]
	st.debug["apiserver"], st.debug["manager"] = addrs["api-debug"], addrs["mgr-debug"]
	st.metrics["apiserver"], st.metrics["manager"] = addrs["api-metrics"], addrs["mgr-metrics"]
	var err error
	st.apiserver, err = startProc("apiserver", st.paygateBin, []string{"apiserver",
		"--bind-address", addrs["api"], "--public-url", st.apiURL, "--metrics-bind-address", addrs["api-metrics"],
		// The limiter is per business and client IP; every bench client shares one IP.
		"--rate-limit", "1000000000",
		"--pprof-bind-address", addrs["api-debug"],
	}, append([]string{"KUBECONFIG=" + st.kubeconfig, "PAYGATE_CHECKOUT_KEY=" + hex.EncodeToString(key)}, archiveEnv...), st.dir)
	if err != nil {
		return err
	}
	st.manager, err = startProc("manager", st.paygateBin, []string{"manager",
		// Plain HTTP: the driver reads the work queues' depth between rows.
		"--metrics-bind-address", addrs["mgr-metrics"], "--metrics-secure=false", "--health-probe-bind-address", addrs["mgr-probe"],
		"--pprof-bind-address", addrs["mgr-debug"],
		"--provider-poll-interval", st.s.PollInterval.String(),
		"--provider-callback-url", st.apiURL + "/internal/provider/callbacks",
		"--webhook-allow-private-sandbox",
	}, append([]string{"KUBECONFIG=" + st.kubeconfig}, archiveEnv...), st.dir)
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, st.apiURL+"/healthz", 2*time.Minute, st.apiserver); err != nil {
		return err
	}
	if err := waitHTTP(ctx, "http://"+addrs["mgr-probe"]+"/healthz", 2*time.Minute, st.manager); err != nil {
		return err
	}
	for name, a := range st.debug {
		if err := waitHTTP(ctx, "http://"+a+"/debug/pprof/cmdline", 30*time.Second, nil); err != nil {
			return fmt.Errorf("the %s's pprof endpoint: %w", name, err)
		}
	}
	return nil
}

// eventually polls f every 100 ms until it succeeds, or fails after within.
func eventually(ctx context.Context, what string, within time.Duration, f func() error) error {
	return eventuallyEvery(ctx, what, 100*time.Millisecond, within, f)
}

// eventuallyEvery polls f every interval until it succeeds, or fails after within.
func eventuallyEvery(ctx context.Context, what string, interval, within time.Duration, f func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		time.Sleep(interval)
	}
}

// setupWorld creates the gateway, the merchants, the plan, the templates, the funding and the
// read set, and writes the load tool's config.
func (st *stack) setupWorld(ctx context.Context) error {
	k := st.k8s
	var err error
	if st.sink, err = load.NewReceiver(); err != nil {
		return err
	}
	for _, ns := range append([]string{systemNS}, namespaces()...) {
		if err := k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	gw := testenv.Gateway("TZS", func(g *paygatev1.Gateway) {
		g.Name = gatewayTZS
		g.Spec.Payouts = &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: "1", Fixed: "500"}, MinAmount: ptr.To(paygatev1.Decimal("1000"))}
	})
	if err := k.Create(ctx, gw); err != nil {
		return err
	}
	if err := eventually(ctx, "the gateway gets its id", time.Minute, func() error {
		if err := k.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if gw.Status.ID == 0 {
			return errors.New("no id yet")
		}
		return nil
	}); err != nil {
		return err
	}

	st.cfg = &load.Config{Kubeconfig: st.kubeconfig, EtcdURL: st.etcdURL, APIURL: st.apiURL, Merchants: map[string]load.Merchant{},
		PlanCode: planCode, PlanTerms: planTerms, Phone: successPhone}
	st.clients = map[string]*paygate.Client{}
	for _, r := range roles {
		m, err := st.createMerchant(ctx, r.namespace, r.role)
		if err != nil {
			return err
		}
		st.cfg.Merchants[r.role] = m
		c := paygate.New(st.apiURL, m.Credentials)
		st.clients[r.role] = c
		if err := eventually(ctx, "the apiserver knows merchant "+r.role, time.Minute, func() error {
			_, err := c.SiteInfo(ctx)
			return err
		}); err != nil {
			return err
		}
	}
	if _, err := st.clients["flow"].CreatePlan(ctx, paygate.PlanRequest{Code: planCode, Name: "Bench monthly", Amount: "5000",
		CurrencyCode: "TZS", Interval: "month"}, ""); err != nil {
		return fmt.Errorf("creating the plan: %w", err)
	}
	if err := st.templates(ctx); err != nil {
		return err
	}
	if err := st.fund(ctx, "flow"); err != nil {
		return err
	}
	for i := range readSet {
		out, err := st.clients["bulk"].CreatePayment(ctx, load.HostedRequest(fmt.Sprintf("read-%d", i)), "")
		if err != nil {
			return fmt.Errorf("creating the read set: %w", err)
		}
		st.cfg.ReadIDs = append(st.cfg.ReadIDs, out.Data.TrxID)
	}
	// A viewer of the bulk merchant for the console's list rows.
	var bulk paygatev1.Merchant
	if err := k.Get(ctx, client.ObjectKey{Namespace: st.cfg.Merchants["bulk"].Namespace, Name: st.cfg.Merchants["bulk"].Name}, &bulk); err != nil {
		return err
	}
	viewer, err := console.EnsureDemoUser(ctx, k, apiserver.DefaultConsoleSecretsNamespace, &bulk, "viewer@bench.example", paygatev1.ConsoleViewer)
	if err != nil {
		return fmt.Errorf("making the console viewer: %w", err)
	}
	st.cfg.ConsoleEmail, st.cfg.ConsolePassword = viewer.Email, viewer.Password
	st.cfgPath = filepath.Join(st.dir, "load-config.json")
	return load.WriteConfig(st.cfgPath, st.cfg)
}

func namespaces() []string {
	out := make([]string, 0, len(roles))
	for _, r := range roles {
		out = append(out, r.namespace)
	}
	return out
}

// createMerchant creates an approved merchant with a settlement number whose default sandbox
// webhook URL is the driver's receiver, and reads its credentials.
func (st *stack) createMerchant(ctx context.Context, ns, name string) (load.Merchant, error) {
	k := st.k8s
	m := testenv.Merchant(ns, name, func(m *paygatev1.Merchant) {
		m.Spec.BusinessStatus, m.Spec.KYBStatus = paygatev1.BusinessApproved, paygatev1.KYBApproved
		m.Spec.SettlementNumber = "+255712400300"
		m.Spec.WebhookURLs = paygatev1.WebhookURLs{Sandbox: st.sink.URL}
	})
	if err := k.Create(ctx, m); err != nil {
		return load.Merchant{}, err
	}
	if err := eventually(ctx, "merchant "+name+" is ready", time.Minute, func() error {
		if err := k.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(m.Status.Conditions, paygatev1.ConditionReady) {
			return errors.New("not ready")
		}
		return nil
	}); err != nil {
		return load.Merchant{}, err
	}
	out := load.Merchant{Name: name, Namespace: ns, UID: string(m.UID)}
	var s, ws corev1.Secret
	if err := eventually(ctx, "credentials of "+name, time.Minute, func() error {
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: credentials.SecretName(name, paygatev1.EnvironmentSandbox)}, &s); err != nil {
			return err
		}
		return k.Get(ctx, client.ObjectKey{Namespace: ns, Name: credentials.WebhookSecretName(name)}, &ws)
	}); err != nil {
		return load.Merchant{}, err
	}
	set, ok := credentials.SetFromData(s.Data)
	if !ok {
		return load.Merchant{}, fmt.Errorf("incomplete credentials for %s", name)
	}
	out.Credentials = paygate.Credentials{Environment: "sandbox", MerchantKey: set.BusinessID, APIKey: set.APIKey, APISecret: set.APISecret}
	out.WebhookSecret = ws.Data[credentials.KeySigningSecret]
	st.sink.Trust(out.WebhookSecret)
	return out, nil
}

// templates creates, through the REST API, the hosted payment raw creates copy and a push
// payment the manager settles, which seeded payments copy.
func (st *stack) templates(ctx context.Context) error {
	k := st.k8s
	hosted, err := st.clients["shop"].CreatePayment(ctx, load.HostedRequest("template-hosted"), "")
	if err != nil {
		return fmt.Errorf("creating the hosted template: %w", err)
	}
	p := &paygatev1.Payment{}
	if err := k.Get(ctx, client.ObjectKey{Namespace: st.cfg.Merchants["shop"].Namespace, Name: hosted.Data.TrxID}, p); err != nil {
		return err
	}
	st.cfg.Hosted = &paygatev1.Payment{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Labels: p.Labels}, Spec: p.Spec}

	pushed, err := st.clients["flow"].CreatePayment(ctx, load.PushRequest("template-settled", successPhone, ""), "")
	if err != nil {
		return fmt.Errorf("creating the settled template: %w", err)
	}
	key := client.ObjectKey{Namespace: st.cfg.Merchants["flow"].Namespace, Name: pushed.Data.TrxID}
	if err := eventually(ctx, "the template push payment settles", time.Minute, func() error {
		if err := k.Get(ctx, key, p); err != nil {
			return err
		}
		if p.Status.Phase != paygatev1.PaymentSuccess {
			return fmt.Errorf("phase %q", p.Status.Phase)
		}
		return nil
	}); err != nil {
		return err
	}
	st.cfg.Settled = &paygatev1.Payment{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Labels: p.Labels}, Spec: p.Spec, Status: p.Status}
	return nil
}

// fund settles one large payment for the merchant, so payouts have a balance to draw on.
func (st *stack) fund(ctx context.Context, role string) error {
	m := st.cfg.Merchants[role]
	p, status := load.SettledCopy(st.cfg.Settled, m, "funding", time.Now())
	p.Spec.Amount = "1000000000.00"
	status.Fee, status.NetAmount = "0.00", "1000000000.00"
	if err := st.k8s.Create(ctx, p); err != nil {
		return err
	}
	if err := load.Settle(ctx, st.k8s, p, status); err != nil {
		return err
	}
	return eventually(ctx, "the funding is in the balance", time.Minute, func() error {
		b := &paygatev1.Balance{}
		if err := st.k8s.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: paygatev1.BalanceName(m.Name, paygatev1.EnvironmentSandbox)}, b); err != nil {
			return err
		}
		for _, c := range b.Status.Currencies {
			if c.Currency == "TZS" && c.SettledPayments > 0 {
				return nil
			}
		}
		return errors.New("not counted yet")
	})
}

func (st *stack) stop() {
	for _, p := range []*proc{st.manager, st.apiserver} {
		if p != nil {
			p.stop()
		}
	}
	if st.sink != nil {
		st.sink.Close()
	}
	if st.env != nil {
		_ = st.env.Stop()
	}
	if st.postgres != nil {
		_ = st.postgres.Stop()
	}
	for _, f := range st.logs {
		_ = f.Close()
	}
}
