// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package chaos is Paygate's fault harness (docs/reliability.md): it runs the real `paygate`
// binary, two managers with leader election and two apiservers, against a real kube-apiserver
// and etcd, a real PostgreSQL archive behind a proxy it can cut, the fake upstream provider over
// HTTP and a real webhook receiver; drives a steady mixed load through the REST API with the Go
// client (payments, payouts, subscriptions, and refunds of settled payments, some racing for a
// payment's amount); kills processes with SIGKILL (the leader at random moments and at every
// write-ahead and archiver failpoint, an apiserver under load; every failpoint must be reached
// or the run fails), takes the webhook receiver down and cuts the database (outages, not kills),
// makes the provider answer "not found" after accepting and forget everything now and then, and
// resolves the payouts and refunds left in doubt as an operator would; then checks, over etcd
// and the archive merged, that no money moved twice (pushes, disbursements and refunds per
// reference at the provider), no balance is wrong (and that the ledger check agrees), no
// payment was refunded beyond its amount, no request was lost or duplicated, no object is stuck
// or stored twice or lost between etcd and the archive, etcd holds only live and recent objects,
// every event went out once and arrived, nothing was sent after an operator's verdict, every
// late success was reported, and that no secret or phone number leaked into a log, an Event or a
// status. It prints the figures as a table and fails when a required one is off.
//
//	KUBEBUILDER_ASSETS=$PWD/bin go test -count=1 -v ./test/chaos/            # the short run (6 SIGKILLs asked)
//	make chaos                                                               # CHAOS_KILLS=120
package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/failpoint"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/test/fakeupstream"
	"github.com/paygate/paygate/test/testenv"
)

const (
	systemNS  = "paygate-system"
	leaseName = "paygate-manager.paygate.dev"
	planCode  = "chaos-monthly"
	planTerms = "Chaos plan: TZS 5,000 every month by USSD prompt. Cancel any time."

	// The manager's compressed schedules.
	// defaultLease is the manager's leader-election lease (CHAOS_LEASE overrides it); the renew
	// deadline is two thirds of it and the retry period a sixth. A shorter lease takes over
	// faster, but on a starved machine a leader that cannot renew in time gives up leadership
	// (and is restarted by the supervisor, as Kubernetes would).
	defaultLease    = 3 * time.Second
	webhookSchedule = "0s,500ms,1s,2s,4s,8s,16s"
	webhookSpan     = 31500 * time.Millisecond // the sum of webhookSchedule
	// receiverOutage is longer than several retry intervals (0.5 + 1 + 2 s).
	receiverOutage   = 6 * time.Second
	checkoutLifetime = 20 * time.Second
	// productionHookURL is the live merchants' webhook URL: production never delivers to
	// loopback, so these events are refused by the sender and end Abandoned, by design.
	productionHookURL = "https://localhost:9/hooks/paygate"
)

type harness struct {
	t      *testing.T
	ctx    context.Context
	runID  string
	dir    string
	bin    string
	k8s    client.Client
	env    *testenv.Env
	fake   *fakeupstream.Server
	rcv    *receiver
	sigs   *sigRecorder
	ledger ledger
	load   loadCounters
	// refundLoad counts the refund flows; its wait group holds the flows a failpoint round
	// started outside the load.
	refundLoad refundCounters

	managers []*proc
	apis     []*proc
	apiURLs  []string

	merchants []*merchant
	sandbox   *merchant
	secrets   map[string]string // value -> what it is

	lease time.Duration

	rngMu sync.Mutex
	rng   *mrand.Rand

	arch   *archiveRig
	faults providerFaults

	billingKick     chan struct{}
	failpointRounds int
	archiveRounds   int

	// Reads of earlier payments and payouts (the load's history reads), and what the load
	// created, to read it back.
	readMu  sync.Mutex
	reads   []readObservation
	created []createdRecord

	mu         sync.Mutex
	takeovers  []time.Duration
	kills      map[string]int // SIGKILLs, by kind
	outages    map[string]int // the receiver taken down, the database cut: not kills
	armed      map[string]int // failpoint -> rounds that armed it
	fired      map[string]int // failpoint -> times it killed its manager
	notReached map[string]int // failpoint armed but not reached in time
	selfExits  map[string]int // processes that ended on their own, by kind and reason
	// leaseLost counts the rounds of a failpoint whose armed manager gave the lease up (its
	// renewal missed the deadline on a starved machine) and exited before reaching it.
	leaseLost map[string]int
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault harness runs the real binary against etcd and kube-apiserver; skipped in -short mode")
	}
	kills := envInt("CHAOS_KILLS", 6)
	workers := envInt("CHAOS_WORKERS", 2)
	seed := uint64(envInt("CHAOS_SEED", int(time.Now().UnixNano()%1_000_000_007)))
	t.Logf("chaos: %d kills (SIGKILL), %d load workers, seed %d (CHAOS_SEED reproduces the choices)", kills, workers, seed)

	h := &harness{t: t, ctx: context.Background(), rng: mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		kills: map[string]int{}, outages: map[string]int{}, armed: map[string]int{}, fired: map[string]int{}, notReached: map[string]int{},
		leaseLost: map[string]int{},
		selfExits: map[string]int{}, secrets: map[string]string{}, billingKick: make(chan struct{}, 1)}
	h.faults.asked = map[string]bool{}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	h.runID = hex.EncodeToString(b)
	h.lease = defaultLease
	if d, err := time.ParseDuration(os.Getenv("CHAOS_LEASE")); err == nil && d >= 600*time.Millisecond {
		h.lease = d
	}
	t.Logf("chaos: leader election: lease %s, renew deadline %s, retry period %s", h.lease, h.lease*2/3, h.lease/6)
	h.setup()

	sampleCtx, stopSampling := context.WithCancel(h.ctx)
	defer stopSampling()
	h.sample(sampleCtx)
	operatorCtx, stopOperator := context.WithCancel(h.ctx)
	defer stopOperator()
	var operatorWG sync.WaitGroup
	operatorWG.Add(1)
	go func() {
		defer operatorWG.Done()
		h.operate(operatorCtx)
	}()
	loadCtx, stopLoad := context.WithCancel(h.ctx)
	var loadWG sync.WaitGroup
	h.runLoad(loadCtx, workers, &loadWG)
	loadWG.Add(1)
	go func() {
		defer loadWG.Done()
		h.forgetRounds(loadCtx)
	}()
	started := time.Now()

	h.killLoop(kills)

	t.Log("chaos: kills done; stopping the load")
	h.restoreAll()
	stopLoad()
	loadWG.Wait()
	h.refundLoad.wg.Wait()
	h.restoreAll()
	t.Logf("chaos: load stopped after %s; converging", time.Since(started).Round(time.Second))

	h.converge(6 * time.Minute)
	ran := time.Since(started)
	stopOperator()
	operatorWG.Wait()
	h.drainArchive()
	stopSampling()
	h.arch.sampling.Wait()
	figs := h.check(ran)
	h.report(figs)
}

// ---- setup ----

func (h *harness) setup() {
	t := h.t
	h.dir = os.Getenv("CHAOS_DIR")
	if h.dir == "" {
		h.dir = filepath.Join(os.TempDir(), "paygate-chaos-"+h.runID)
	}
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chaos: the logs of every process are kept in %s", h.dir)
		} else if os.Getenv("CHAOS_KEEP") == "" {
			_ = os.RemoveAll(h.dir)
		}
	})

	t.Log("chaos: building the paygate binary")
	h.bin = filepath.Join(h.dir, "paygate")
	build := exec.Command("go", "build", "-o", h.bin, "./cmd/paygate")
	build.Dir = moduleRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	logf.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	var err error
	// With kube-controller-manager's garbage collector and namespace controller, as in a cluster.
	h.env, err = testenv.Start(testenv.WithGarbageCollector())
	if err != nil {
		t.Fatalf("starting the control plane (make controlplane builds it): %v", err)
	}
	t.Cleanup(func() { _ = h.env.Stop() })
	h.k8s = h.env.Client
	kubeconfig := filepath.Join(h.dir, "kubeconfig")
	if err := h.env.ControlPlane.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{systemNS, "chaos-shop", "chaos-live"} {
		h.must(h.k8s.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}

	// The fake upstream provider and the webhook receiver.
	h.fake = fakeupstream.New(t, fakeupstream.Options{})
	h.secrets[h.fake.Token] = "upstream token"
	h.secrets[string(h.fake.CallbackSecret)] = "upstream callback secret"
	h.scriptUpstream()
	if h.rcv, err = newReceiver(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.rcv.down)

	// The archive, and the processes' way to it (through the proxy the outages cut).
	h.setupArchive()
	archiveEnv := "PAYGATE_ARCHIVE_DSN=" + h.arch.dsn

	// Processes: two apiservers, two managers.
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	checkoutKey := hex.EncodeToString(key)
	h.secrets[checkoutKey] = "checkout key"
	for i := range 2 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		h.apiURLs = append(h.apiURLs, base)
		h.apis = append(h.apis, &proc{name: fmt.Sprintf("apiserver-%d", i), bin: h.bin, logDir: h.dir,
			env: []string{"KUBECONFIG=" + kubeconfig, "PAYGATE_CHECKOUT_KEY=" + checkoutKey, archiveEnv},
			args: []string{"apiserver", "--bind-address", fmt.Sprintf("127.0.0.1:%d", port), "--public-url", base,
				"--checkout-lifetime", checkoutLifetime.String(), "--rate-limit", "1000000"}})
	}
	for i := range 2 {
		h.managers = append(h.managers, &proc{name: fmt.Sprintf("manager-%c", 'a'+i), bin: h.bin, logDir: h.dir,
			env: []string{"KUBECONFIG=" + kubeconfig, archiveEnv},
			args: append([]string{"manager", "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
				"--leader-elect", "--leader-election-namespace", systemNS,
				"--leader-election-lease-duration", h.lease.String(), "--leader-election-renew-deadline", (h.lease * 2 / 3).String(),
				"--leader-election-retry-period", (h.lease / 6).String(),
				"--provider-poll-interval", "200ms", "--provider-callback-url", h.apiURLs[0] + "/internal/provider/callbacks",
				"--webhook-retry-schedule", webhookSchedule, "--webhook-timeout", "2s", "--webhook-allow-private-sandbox",
				"--payout-ambiguous-after", "30s"}, h.arch.archiveArgs()...)})
	}
	all := append(append([]*proc(nil), h.apis...), h.managers...)
	t.Cleanup(func() {
		for _, p := range all {
			p.kill()
		}
	})
	for i, p := range h.apis {
		h.must(p.start(""))
		h.must(waitHealthy(h.ctx, h.apiURLs[i]+"/healthz", 60*time.Second))
	}
	for _, p := range h.managers {
		h.must(p.start(""))
	}
	if h.leader(60*time.Second) == nil {
		t.Fatalf("no manager became leader; logs in %s", h.dir)
	}
	h.waitMigrated()
	superviseCtx, stopSupervising := context.WithCancel(h.ctx)
	supervised := make(chan struct{})
	go func() {
		defer close(supervised)
		h.supervise(superviseCtx)
	}()
	t.Cleanup(func() {
		stopSupervising()
		<-supervised
	})

	// Gateways: a sandbox one, and one through the fake upstream; both pay out.
	payouts := &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: "1", Fixed: "500"}, MinAmount: ptr.To(paygatev1.Decimal("1000"))}
	h.must(h.k8s.Create(h.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: systemNS, Name: "mno", Labels: map[string]string{paygatev1.LabelCredential: provider.CredentialKindUpstream}},
		Data:       map[string][]byte{provider.UpstreamSecretToken: []byte(h.fake.Token), provider.UpstreamSecretCallbackSecret: h.fake.CallbackSecret},
	}))
	sandboxGW := testenv.Gateway("TZS", func(g *paygatev1.Gateway) { g.Name = "tzs-sandbox"; g.Spec.Payouts = payouts })
	upstreamGW := testenv.Gateway("TZS", func(g *paygatev1.Gateway) {
		g.Name = "tzs-upstream"
		g.Spec.Provider = paygatev1.ProviderUpstream
		g.Spec.Upstream = &paygatev1.UpstreamConfig{BaseURL: h.fake.URL(), SecretRef: paygatev1.SecretReference{Namespace: systemNS, Name: "mno"}, TimeoutSeconds: 1}
		g.Spec.Payouts = payouts
	})
	for _, g := range []*paygatev1.Gateway{sandboxGW, upstreamGW} {
		h.must(h.k8s.Create(h.ctx, g))
	}
	h.eventually("gateways get their ids", 60*time.Second, func() error {
		for _, g := range []*paygatev1.Gateway{sandboxGW, upstreamGW} {
			if err := h.k8s.Get(h.ctx, client.ObjectKeyFromObject(g), g); err != nil {
				return err
			}
			if g.Status.ID == 0 {
				return fmt.Errorf("gateway %s has no id yet", g.Name)
			}
		}
		return nil
	})

	// Merchants: one selling in sandbox (payments, payouts, subscriptions), two live through
	// the fake upstream.
	h.sandbox = h.createMerchant("chaos-shop", "shop", paygatev1.EnvironmentSandbox, "+255712400300")
	h.merchants = []*merchant{h.sandbox,
		h.createMerchant("chaos-live", "live-a", paygatev1.EnvironmentProduction, "+255713000201"),
		h.createMerchant("chaos-live", "live-b", paygatev1.EnvironmentProduction, "+255713000202")}
	h.createPlan()
	h.fund()
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func (h *harness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// eventually polls f until it succeeds or within passes (then the test fails).
func (h *harness) eventually(what string, within time.Duration, f func() error) {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: %v (logs in %s)", what, err, h.dir)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scriptUpstream scripts the production numbers (livePhones) and the live settlement numbers.
func (h *harness) scriptUpstream() {
	f := h.fake
	f.Script("+255713000101", fakeupstream.Scenario{Callback: true})
	f.Script("+255713000102", fakeupstream.Scenario{SettleAfter: time.Second, Callback: true, DuplicateCallbacks: 1})
	f.Script("+255713000103", fakeupstream.Scenario{Outcome: provider.StatusFailed, Code: paygatev1.FailureInsufficientFunds, Callback: true})
	f.Script("+255713000104", fakeupstream.Scenario{SettleAfter: 300 * time.Millisecond, AmbiguousFor: 3})
	f.Script("+255713000105", fakeupstream.Scenario{PostError: http.StatusInternalServerError, SettleAfter: 500 * time.Millisecond})
	f.Script("+255713000106", fakeupstream.Scenario{DropPostConnection: true, SettleAfter: 500 * time.Millisecond, Callback: true})
	f.Script("+255713000107", fakeupstream.Scenario{Outcome: provider.StatusPending})
	f.Script("+255713000108", fakeupstream.Scenario{PostLatency: 1500 * time.Millisecond, SettleAfter: 500 * time.Millisecond})
	// Accepted, then "not found" for a while, as real providers answer: for 3 s (the payment
	// learns the provider forgot, then that it knows again); for two queries after a dropped
	// answer (the push is sent again with the same reference, which the provider de-duplicates);
	// for 30 s, past the payment's 20 s deadline (the payment expires, its attempt is watched, and
	// the late success raises LateSettlement).
	f.Script("+255713000110", fakeupstream.Scenario{NotFoundFor: 3 * time.Second, SettleAfter: 500 * time.Millisecond, Callback: true})
	f.Script("+255713000111", fakeupstream.Scenario{DropPostConnection: true, NotFoundQueries: 2, SettleAfter: 500 * time.Millisecond})
	f.Script("+255713000112", fakeupstream.Scenario{NotFoundFor: checkoutLifetime + 10*time.Second, SettleAfter: time.Second})
	// Settlement numbers: live-a's disbursements hide for longer than --payout-ambiguous-after,
	// so that the operator resolves them (hidingDisbursement, scripted again before each payout);
	// live-b's lose the connection on the POST and answer ambiguously twice before success.
	f.Script(hidingSettlement, hidingDisbursement(false))
	f.Script("+255713000202", fakeupstream.Scenario{DropPostConnection: true, SettleAfter: 500 * time.Millisecond, AmbiguousFor: 2})
	h.scriptRefunds()
}

// createMerchant creates an approved, KYB-approved merchant with a settlement number whose
// sandbox webhooks go to the receiver, and clients of env for both apiservers.
func (h *harness) createMerchant(ns, name string, env paygatev1.Environment, settlement string) *merchant {
	m := testenv.Merchant(ns, name, func(m *paygatev1.Merchant) {
		m.Spec.BusinessStatus, m.Spec.KYBStatus = paygatev1.BusinessApproved, paygatev1.KYBApproved
		m.Spec.SettlementNumber = paygatev1.MobileNumber(settlement)
		// Production deliveries may not reach loopback (docs/webhooks.md, Safety): localhost is
		// refused before any connection, so they end Abandoned without leaving the machine.
		m.Spec.WebhookURLs = paygatev1.WebhookURLs{Sandbox: h.rcv.url(), Production: productionHookURL}
	})
	h.must(h.k8s.Create(h.ctx, m))
	h.eventually("merchant "+name+" is ready", 60*time.Second, func() error {
		if err := h.k8s.Get(h.ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(m.Status.Conditions, paygatev1.ConditionReady) ||
			!meta.IsStatusConditionTrue(m.Status.Conditions, paygatev1.ConditionProductionEnabled) {
			return fmt.Errorf("not ready")
		}
		return nil
	})
	out := &merchant{name: name, ns: ns, env: env, obj: m, settlement: settlement}
	for _, e := range []paygatev1.Environment{paygatev1.EnvironmentSandbox, paygatev1.EnvironmentProduction} {
		var s corev1.Secret
		h.eventually("credentials of "+name, 30*time.Second, func() error {
			return h.k8s.Get(h.ctx, client.ObjectKey{Namespace: ns, Name: credentials.SecretName(name, e)}, &s)
		})
		set, ok := credentials.SetFromData(s.Data)
		if !ok {
			h.t.Fatalf("incomplete credentials for %s in %s", name, e)
		}
		h.secrets[set.APIKey] = "API key of " + name
		h.secrets[set.APISecret] = "API secret of " + name
		if e == env {
			out.set = set
		}
	}
	var ws corev1.Secret
	h.eventually("webhook secret of "+name, 30*time.Second, func() error {
		return h.k8s.Get(h.ctx, client.ObjectKey{Namespace: ns, Name: credentials.WebhookSecretName(name)}, &ws)
	})
	secret := ws.Data[credentials.KeySigningSecret]
	h.secrets[string(secret)] = "webhook signing secret of " + name
	h.rcv.trust(secret)
	if h.sigs == nil {
		h.sigs = &sigRecorder{seen: map[string]bool{}, next: http.DefaultTransport}
	}
	for _, base := range h.apiURLs {
		c := paygate.New(base, paygate.Credentials{Environment: string(env), MerchantKey: out.set.BusinessID,
			APIKey: out.set.APIKey, APISecret: out.set.APISecret})
		c.HTTP = &http.Client{Timeout: 4 * time.Second, Transport: h.sigs}
		// The harness retries itself, against the other replica, and counts every try
		// (harness.send): the client's own retries would hide tries from that count.
		c.MaxRetries = -1
		out.clients = append(out.clients, c)
		h.eventually("apiserver "+base+" knows "+name, 60*time.Second, func() error {
			_, err := c.SiteInfo(h.ctx)
			return err
		})
	}
	return out
}

// createPlan creates the sandbox plan through the API, then opens its charging window all day
// and shortens its dunning (one retry a day later, suspended at the second failure), as a
// platform team may with kubectl.
func (h *harness) createPlan() {
	m := h.sandbox
	if _, err := m.clients[0].CreatePlan(h.ctx, paygate.PlanRequest{Code: planCode, Name: "Chaos", Amount: "5000", CurrencyCode: "TZS", Interval: "month"}, ""); err != nil {
		h.t.Fatal(err)
	}
	plan := &paygatev1.BillingPlan{}
	key := client.ObjectKey{Namespace: m.ns, Name: m.name + ".sandbox." + planCode}
	h.must(h.k8s.Get(h.ctx, key, plan))
	h.must(h.k8s.Patch(h.ctx, plan, client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"chargingWindow":{"start":"00:00","end":"24:00"},"dunning":{"retryAfterDays":[1],"maxFailures":2}}}`))))
	h.eventually("the plan is observed", 60*time.Second, func() error {
		if err := h.k8s.Get(h.ctx, key, plan); err != nil {
			return err
		}
		if plan.Status.ObservedGeneration != plan.Generation {
			return fmt.Errorf("plan generation %d not observed yet", plan.Generation)
		}
		return nil
	})
}

// fund settles one large payment per merchant so payouts have a balance to draw on.
func (h *harness) fund() {
	for _, m := range h.merchants {
		phone := "+255712400100"
		if m.env == paygatev1.EnvironmentProduction {
			phone = "+255713000109"
		}
		r := h.createPayment(h.ctx, m, phone, 5_000_000)
		if r.status != http.StatusOK {
			h.t.Fatalf("funding %s: %d %s: %s", m.name, r.status, r.label, r.detail)
		}
		h.eventually("funding of "+m.name+" settles", 90*time.Second, func() error {
			var p paygatev1.Payment
			if err := h.k8s.Get(h.ctx, client.ObjectKey{Namespace: m.ns, Name: r.id}, &p); err != nil {
				return err
			}
			if p.Status.Phase != paygatev1.PaymentSuccess {
				return fmt.Errorf("funding payment is %q", p.Status.Phase)
			}
			return nil
		})
	}
}

// ---- leadership ----

// leader is the running manager that holds the lease (it logged the acquisition; a manager that
// loses the lease exits), waiting up to within for one.
func (h *harness) leader(within time.Duration) *proc {
	deadline := time.Now().Add(within)
	for {
		for _, p := range h.managers {
			if p.alive() && p.logContains("cquired lease") {
				return p
			}
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h *harness) leaseHolder() string {
	var l coordinationv1.Lease
	if err := h.k8s.Get(h.ctx, client.ObjectKey{Namespace: systemNS, Name: leaseName}, &l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// measureTakeover waits until the lease names a holder other than old and records how long it
// took from since.
func (h *harness) measureTakeover(old string, since time.Time) {
	deadline := since.Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if now := h.leaseHolder(); now != "" && now != old {
			h.mu.Lock()
			h.takeovers = append(h.takeovers, time.Since(since))
			h.mu.Unlock()
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	h.t.Errorf("no manager took the lease over within 60 s of %s", since.Format(time.TimeOnly))
}

// countKill counts a SIGKILL.
func (h *harness) countKill(kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kills[kind]++
}

// countOutage counts an outage (the receiver down, the database cut): not a kill.
func (h *harness) countOutage(kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.outages[kind]++
}

func (h *harness) totalOutages() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, k := range h.outages {
		n += k
	}
	return n
}

func (h *harness) totalKills() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, k := range h.kills {
		n += k
	}
	return n
}

// ---- kills ----

// The kinds of round, and the order of the first rounds: each kind once, so that the short run
// covers them all (it goes on until they are done, whatever CHAOS_KILLS says). Leader, failpoint,
// apiserver and archive failpoint rounds SIGKILL processes; receiver and archive outage rounds
// take something off the network and kill nothing.
const (
	kindLeader = iota
	kindFailpoint
	kindAPIServer
	kindReceiver
	kindArchiveOutage
	kindArchiveFailpoint
)

var kindNames = []string{"leader", "failpoint", "apiserver", "receiver", "archive outage", "archive failpoint"}

var firstRounds = []int{kindLeader, kindFailpoint, kindAPIServer, kindReceiver, kindArchiveOutage, kindArchiveFailpoint}

// maxPointTries is how many rounds arm one failpoint before the run gives up on it (and fails);
// rounds whose armed manager lost the lease on its own before reaching the point do not count,
// up to maxLeaseLost of them.
const (
	maxPointTries = 3
	maxLeaseLost  = 3
)

// coveredPoints are the failpoints the run must reach: every write-ahead one, and the
// archiver's when the archive is on.
func (h *harness) coveredPoints() []string {
	points := slices.Clone(failpoint.Points)
	if h.arch != nil {
		points = append(points, failpoint.ArchivePoints...)
	}
	return points
}

// uncovered are the points of points not reached yet that may still be armed again.
func (h *harness) uncovered(points []string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, p := range points {
		if h.fired[p] == 0 && h.armed[p]-min(h.leaseLost[p], maxLeaseLost) < maxPointTries {
			out = append(out, p)
		}
	}
	return out
}

// nextPoint is the failpoint a round of points arms: the first not reached yet (a point armed
// but not reached in time gets the next round), then each in turn.
func (h *harness) nextPoint(points []string, rounds int) string {
	if u := h.uncovered(points); len(u) > 0 {
		return u[0]
	}
	return points[rounds%len(points)]
}

// killLoop runs rounds until kills SIGKILLs were counted, every kind had its turn and every
// failpoint was reached (or armed maxPointTries times): the first rounds take every kind once,
// then failpoint rounds arm each point not reached yet, then kinds are drawn at random;
// failpoints take their turn in order, every third failpoint round one of the archiver's.
func (h *harness) killLoop(kills int) {
	for round := 0; ; round++ {
		uncovered := h.uncovered(h.coveredPoints())
		if round >= len(firstRounds) && len(uncovered) == 0 && h.totalKills() >= kills {
			return
		}
		time.Sleep(time.Duration(300+h.intn(1700)) * time.Millisecond)
		kind := kindLeader
		switch {
		case round < len(firstRounds):
			kind = firstRounds[round]
		case len(uncovered) > 0:
			kind = kindFailpoint
			if slices.Contains(failpoint.ArchivePoints, uncovered[0]) {
				kind = kindArchiveFailpoint
			}
		default:
			switch n := h.intn(100); {
			case n < 35:
				kind = kindLeader
			case n < 75:
				kind = kindFailpoint
				if (h.failpointRounds+h.archiveRounds)%3 == 2 {
					kind = kindArchiveFailpoint
				}
			case n < 88:
				kind = kindAPIServer
			case n < 94:
				kind = kindReceiver
			default:
				kind = kindArchiveOutage
			}
		}
		switch kind {
		case kindLeader:
			h.killLeader()
		case kindFailpoint:
			h.failpointRound(h.nextPoint(failpoint.Points, h.failpointRounds))
			h.failpointRounds++
		case kindArchiveFailpoint:
			h.failpointRound(h.nextPoint(failpoint.ArchivePoints, h.archiveRounds))
			h.archiveRounds++
		case kindAPIServer:
			h.killAPIServer()
		case kindReceiver:
			if h.rcv.isUp() {
				h.countOutage("webhook receiver down")
				go h.receiverOutage()
			}
		case kindArchiveOutage:
			if h.archiveOutage() {
				h.countOutage("archive outage")
			}
		}
		h.t.Logf("chaos: %s %d/%d kills, %d outages (%s)", time.Now().Format("15:04:05.000"), h.totalKills(), kills, h.totalOutages(), kindNames[kind])
	}
}

// killLeader SIGKILLs the leader at a random moment, restarts it as a standby and measures how
// long the lease takes to move.
func (h *harness) killLeader() {
	l := h.leader(30 * time.Second)
	if l == nil {
		h.t.Errorf("no leader to kill")
		h.restoreAll()
		return
	}
	old := h.leaseHolder()
	at := time.Now()
	l.ctl.Lock()
	l.kill()
	h.countKill("leader manager")
	err := l.start("")
	l.ctl.Unlock()
	h.must(err)
	h.measureTakeover(old, at)
}

// failpointRound restarts the standby with point armed, hands it the lease by killing the
// leader, and waits for it to kill itself at the write-ahead boundary.
func (h *harness) failpointRound(point string) {
	l := h.leader(30 * time.Second)
	if l == nil {
		h.t.Errorf("no leader")
		h.restoreAll()
		return
	}
	var s *proc
	for _, p := range h.managers {
		if p != l {
			s = p
		}
	}
	hit := 1 + h.intn(3)
	switch {
	case point == failpoint.ChargeRecorded || strings.HasPrefix(point, "payout-") || slices.Contains(failpoint.RefundPoints, point):
		// Rarer than pushes: the first one the armed leader reaches.
		hit = 1
	case slices.Contains(failpoint.ArchivePoints, point):
		// Reached once per batch committed (or deleted): many per pass, with objects settling
		// all the time and batches of archiveBatchSize.
		hit = 1 + h.intn(2)
	}
	armed := fmt.Sprintf("%s:%d", point, hit)
	h.mu.Lock()
	h.armed[point]++
	h.mu.Unlock()
	// The armed standby is the harness's until the round ends: the supervisor leaves it alone.
	s.ctl.Lock()
	s.kill()
	err := s.start(armed)
	s.held.Store(true)
	died := s.exited()
	s.ctl.Unlock()
	h.must(err)
	defer func() {
		s.ctl.Lock()
		s.kill()
		err := s.start("")
		s.held.Store(false)
		s.ctl.Unlock()
		h.must(err)
	}()
	time.Sleep(time.Duration(500+h.intn(1000)) * time.Millisecond) // let it start and wait for the lease
	old := h.leaseHolder()
	at := time.Now()
	// The leader stays down until the armed standby holds the lease.
	l.ctl.Lock()
	l.kill()
	h.countKill("leader manager")
	h.measureTakeover(old, at)
	took := h.leader(10*time.Second) == s
	err = l.start("")
	l.ctl.Unlock()
	h.must(err)
	if !took {
		// The armed standby did not take over (still starting, or it lost the lease): go on.
		h.mu.Lock()
		h.notReached[point]++
		h.mu.Unlock()
		return
	}
	h.stimulate(point)
	select {
	case <-died:
		at := time.Now()
		if s.killedBySignal() {
			h.countKill("failpoint " + point)
			h.mu.Lock()
			h.fired[point]++
			h.mu.Unlock()
			if point == failpoint.ArchiveCommitted {
				// Before the next leader runs: what the crash left committed and still in etcd.
				h.noteCommittedLive()
			}
			h.measureTakeover(h.leaseHolder(), at) // the lease still names the dead process
		} else {
			// It ended on its own before the point. One that lost the lease (its renewal missed
			// the deadline on a starved machine) does not count against the point's tries; the
			// figure of processes that ended on their own shows either.
			why, lost := "exited", s.logContains("leader election lost")
			if lost {
				why = "lost the lease (renewal missed its deadline)"
			}
			h.mu.Lock()
			h.notReached[point]++
			if lost {
				h.leaseLost[point]++
			}
			h.selfExits["manager armed with "+point+" "+why]++
			h.mu.Unlock()
			// Not a kill: the lease may have moved already (it gave the lease up, and the other
			// manager may hold it by now), so no takeover is measured; the next round waits for
			// a leader.
		}
	case <-time.After(40 * time.Second):
		h.mu.Lock()
		h.notReached[point]++
		h.mu.Unlock()
		if s.alive() && h.leader(0) == s {
			old := h.leaseHolder()
			at := time.Now()
			s.kill()
			h.countKill("leader manager")
			h.measureTakeover(old, at)
		}
	}
}

// stimulate makes the load reach point soon: payouts, refunds and subscription charges are rarer
// than payments.
func (h *harness) stimulate(point string) {
	switch {
	case strings.HasPrefix(point, "payout-"):
		go h.createPayout(h.ctx, h.sandbox, "1000")
		go h.createPayout(h.ctx, h.merchants[1], "1000")
	case slices.Contains(failpoint.RefundPoints, point):
		// A payment collected and refunded in full, through the fake provider and in sandbox.
		h.goRefundFlow(h.merchants[1+h.intn(len(h.merchants)-1)], refundFull)
		h.goRefundFlow(h.sandbox, refundFull)
	case point == failpoint.ChargeRecorded:
		select {
		case h.billingKick <- struct{}{}:
		default:
		}
	}
}

// killAPIServer SIGKILLs one apiserver under load and restarts it on the same port.
func (h *harness) killAPIServer() {
	i := h.intn(len(h.apis))
	if !h.apis[1-i].alive() {
		return
	}
	p := h.apis[i]
	p.ctl.Lock()
	p.kill()
	h.countKill("apiserver")
	time.Sleep(time.Duration(300+h.intn(1700)) * time.Millisecond)
	err := p.start("")
	p.ctl.Unlock()
	h.must(err)
	if err := waitHealthy(h.ctx, h.apiURLs[i]+"/healthz", 60*time.Second); err != nil {
		h.t.Error(err)
	}
}

// receiverOutage takes the webhook receiver off the network for longer than several retry
// intervals, then back on the same port.
func (h *harness) receiverOutage() {
	h.rcv.down()
	time.Sleep(receiverOutage + time.Duration(h.intn(2000))*time.Millisecond)
	if err := h.rcv.up(); err != nil {
		h.t.Error(err)
	}
}

// supervise restarts, as Kubernetes would restart the pod, a process that ended on its own (a
// manager whose lease renewal missed its deadline exits; so may anything on a starved machine),
// and counts it. Processes the harness is working on are left alone.
func (h *harness) supervise(ctx context.Context) {
	for ctx.Err() == nil {
		for _, p := range append(append([]*proc(nil), h.managers...), h.apis...) {
			if !p.ctl.TryLock() {
				continue
			}
			if !p.held.Load() && !p.alive() {
				why := "exited"
				if p.logContains("leader election lost") {
					why = "lost the lease (renewal missed its deadline)"
				}
				h.mu.Lock()
				h.selfExits[strings.TrimRight(p.name, "-ab01")+" "+why]++
				h.mu.Unlock()
				if err := p.start(""); err != nil {
					h.t.Errorf("restarting %s: %v", p.name, err)
				}
			}
			p.ctl.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// restoreAll makes sure both managers (unarmed), both apiservers and the receiver run.
func (h *harness) restoreAll() {
	for _, p := range h.managers {
		p.ctl.Lock()
		if p.alive() && p.armedWith() != "" {
			p.kill()
		}
		if !p.alive() {
			h.must(p.start(""))
		}
		p.held.Store(false)
		p.ctl.Unlock()
	}
	for i, p := range h.apis {
		p.ctl.Lock()
		if !p.alive() {
			h.must(p.start(""))
		}
		p.ctl.Unlock()
		h.must(waitHealthy(h.ctx, h.apiURLs[i]+"/healthz", 60*time.Second))
	}
	for !h.rcv.isUp() {
		time.Sleep(200 * time.Millisecond)
	}
	h.restoreArchive()
}

// percentile of sorted durations.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}
