// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package archivescale is the archive's scale run (a benchmark, not a unit test): one merchant with
// a million archived payments and ten thousand live ones, on a real PostgreSQL, a real
// kube-apiserver and etcd, the real manager and the real merchant API. It reports how fast the
// archive fills, how long reads of archived records take, and how long the balance controller
// takes to absorb one new settled payment with all that history. Run:
//
//	make bench-archive        # ARCHIVE_SCALE_ARCHIVED=1000000 ARCHIVE_SCALE_LIVE=10000
//
// It runs only when ARCHIVE_SCALE=1 (the make target sets it); `go test ./...` skips it.
package archivescale

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/apiserver"
	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/pgtest"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/test/testenv"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// row is one line of the report.
type row struct{ what, value string }

type report struct {
	mu   sync.Mutex
	rows []row
}

func (r *report) add(what, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, row{what, fmt.Sprintf(format, args...)})
	fmt.Printf("archivescale: %s: %s\n", what, r.rows[len(r.rows)-1].value) // kept if a later step fails
}

func (r *report) print(t *testing.T) {
	w := 0
	for _, x := range r.rows {
		w = max(w, len(x.what))
	}
	out := "\n"
	for _, x := range r.rows {
		out += fmt.Sprintf("| %-*s | %s\n", w, x.what, x.value)
	}
	t.Log(out)
	fmt.Print(out)
}

// latencies summarises durations.
type latencies []time.Duration

func (l latencies) pct(p float64) time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func (l latencies) String() string {
	return fmt.Sprintf("p50 %s, p99 %s (n=%d)", l.pct(0.50).Round(10*time.Microsecond), l.pct(0.99).Round(10*time.Microsecond), len(l))
}

func TestArchiveScale(t *testing.T) {
	if os.Getenv("ARCHIVE_SCALE") != "1" {
		t.Skip("the archive scale run is a benchmark: make bench-archive (ARCHIVE_SCALE=1)")
	}
	archived, live := envInt("ARCHIVE_SCALE_ARCHIVED", 1_000_000), envInt("ARCHIVE_SCALE_LIVE", 10_000)
	ctx := context.Background()
	var rep report
	rep.add("machine", "%s", machine())
	rep.add("archived payments / live payments", "%d / %d (one merchant, sandbox, TZS)", archived, live)

	pg := pgtest.Start(t)
	store, err := archive.Open(ctx, pg.DSN, archive.Options{MaxConns: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}

	env, err := testenv.Start()
	if err != nil {
		t.Fatalf("starting the control plane (make controlplane): %v", err)
	}
	defer env.Stop()
	k := env.Client
	if _, err := env.StartManager(controllers.Options{
		Providers: &provider.Registry{Sandbox: provider.NewSandbox(provider.SandboxOptions{})},
		Archive:   store, // retention 0: the manager archives nothing during the run
	}); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	rt, _, err := apiserver.Start(ctx, env.Config, "127.0.0.1:0", apiserver.Options{
		CheckoutKey: key, RateLimitPerMinute: 100_000_000, Archive: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	ns, m, gw := setupMerchant(t, k)
	creds := merchantClient(t, k, ns, m, "http://"+rt.Listener.Addr().String())

	// 1. The archive: settled payments through Store.Archive, as the archiver writes them (a
	// sample that measures the write rate), the rest of the million copied in (COPY) with their
	// carried_forward sums computed from the rows: the same rows, faster.
	sample := min(archived, envInt("ARCHIVE_SCALE_SAMPLE", 50_000))
	start := time.Now()
	names := seedArchive(t, store, ns, m, gw, sample)
	took := time.Since(start)
	rep.add("archive write (Store.Archive, 4 writers, batches of 1000)", "%d payments in %s: %.0f rows/s", sample, took.Round(time.Second), float64(sample)/took.Seconds())
	if archived > sample {
		start = time.Now()
		names = append(names, copyArchive(t, store, ns, m, gw, sample, archived)...)
		rep.add("archive bulk load (COPY, then carried_forward from the rows)", "%d payments in %s", archived-sample, time.Since(start).Round(time.Second))
	}
	// The history is of payments the archiver deleted from etcd long ago: their archived_live
	// entries are gone, as the archiver's passes leave them.
	start = time.Now()
	forgetSeeded(t, store)
	rep.add("archived_live cleared for the seeded history", "in %s", time.Since(start).Round(time.Millisecond))
	var dbSize string
	_ = store.Pool().QueryRow(ctx, "SELECT pg_size_pretty(pg_database_size(current_database()))").Scan(&dbSize)
	rep.add("database size", "%s (rows, indexes; about %d bytes per archived payment)", dbSize, dbBytes(ctx, store)/int64(archived))

	// 2. The live objects: settled payments in etcd.
	start = time.Now()
	seedLive(t, k, ns, m, gw, live)
	rep.add("live payments created and settled", "%d in %s", live, time.Since(start).Round(time.Second))
	wantSettled := int64(archived + live)
	start = time.Now()
	waitSettledPayments(t, k, ns, m.Name, wantSettled, 10*time.Minute)
	rep.add("first balance with all of it", "settledPayments %d after %s", wantSettled, time.Since(start).Round(time.Millisecond))

	// 3. Absorbing one more settled payment.
	var absorb latencies
	for i := range 30 {
		p := livePayment(ns, m, gw, fmt.Sprintf("absorb-%d", i))
		if err := k.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		settle(t, k, p)
		wantSettled++
		waitSettledPayments(t, k, ns, m.Name, wantSettled, time.Minute)
		absorb = append(absorb, time.Since(t0))
	}
	rep.add("balance absorbs one settled payment (status write to Balance updated)", "%s", absorb)

	// 4. Reads of archived records.
	pick := func() string { return names[mrand.IntN(len(names))] }
	var get latencies
	for range 2000 {
		t0 := time.Now()
		if _, err := store.GetPayment(ctx, ns, pick()); err != nil {
			t.Fatal(err)
		}
		get = append(get, time.Since(t0))
	}
	rep.add("Store.GetPayment of a random archived payment", "%s", get)
	var view latencies
	for range 200 {
		t0 := time.Now()
		if _, err := store.LedgerView(ctx, ns, m.Name, paygatev1.EnvironmentSandbox, archive.LedgerQuery{}); err != nil {
			t.Fatal(err)
		}
		view = append(view, time.Since(t0))
	}
	rep.add("Store.LedgerView (carried forward, one snapshot)", "%s", view)

	verify := func(id string) time.Duration {
		t0 := time.Now()
		resp, err := creds.Do(ctx, http.MethodGet, "/api/v1/verify-payment/"+id, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("verify %s: HTTP %d", id, resp.StatusCode)
		}
		return time.Since(t0)
	}
	var verifyArchived, verifyLive latencies
	for range 2000 {
		verifyArchived = append(verifyArchived, verify(pick()))
	}
	liveName := livePayment(ns, m, gw, "absorb-0").Name
	for range 2000 {
		verifyLive = append(verifyLive, verify(liveName))
	}
	rep.add("GET /verify-payment of an archived payment (signed, over HTTP)", "%s", verifyArchived)
	rep.add("GET /verify-payment of a live payment (same run)", "%s", verifyLive)
	var list latencies
	for _, q := range []string{"limit=100", fmt.Sprintf("limit=100&offset=%d", archived/2), fmt.Sprintf("limit=100&status=success&offset=%d", archived*9/10)} {
		failures := 0
		for range 50 {
			t0 := time.Now()
			resp, err := creds.Do(ctx, http.MethodGet, "/api/v1/payments?"+q, nil, nil)
			if err != nil || resp.StatusCode != http.StatusOK {
				failures++
				continue
			}
			list = append(list, time.Since(t0))
		}
		rep.add("GET /payments?"+q+" (live merged with archive)", "%s, %d failed", list, failures)
		list = nil
	}
	rep.print(t)
}

func machine() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s, %d CPUs", host, numCPU())
}

func dbBytes(ctx context.Context, store *archive.Store) int64 {
	var n int64
	_ = store.Pool().QueryRow(ctx, "SELECT pg_total_relation_size('payments')").Scan(&n)
	return n
}

func setupMerchant(t *testing.T, k client.Client) (string, *paygatev1.Merchant, *paygatev1.Gateway) {
	ctx := context.Background()
	ns := "scale"
	if err := k.Create(ctx, namespace(ns)); err != nil {
		t.Fatal(err)
	}
	gw := testenv.Gateway("TZS")
	if err := k.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	m := testenv.Merchant(ns, "duka")
	if err := k.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := k.Get(ctx, client.ObjectKeyFromObject(m), m); err == nil && meta.IsStatusConditionTrue(m.Status.Conditions, paygatev1.ConditionReady) {
			return ns, m, gw
		}
		if time.Now().After(deadline) {
			t.Fatal("the merchant did not become ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// merchantClient signs requests with the merchant's sandbox credentials, once the API server's
// cache knows the merchant.
func merchantClient(t *testing.T, k client.Client, ns string, m *paygatev1.Merchant, baseURL string) *paygate.Client {
	ctx := context.Background()
	var s corev1.Secret
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: credentials.SecretName(m.Name, paygatev1.EnvironmentSandbox)}, &s); err != nil {
		t.Fatal(err)
	}
	set, _ := credentials.SetFromData(s.Data)
	c := paygate.New(baseURL, paygate.Credentials{Environment: "sandbox", MerchantKey: set.BusinessID, APIKey: set.APIKey, APISecret: set.APISecret})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err := c.SiteInfo(ctx); err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal("the API server never accepted the merchant")
		}
	}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func numCPU() int { return runtime.NumCPU() }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func mustUnmarshal(s string, v any) {
	if err := json.Unmarshal([]byte(s), v); err != nil {
		panic(err)
	}
}

// template is a settled sandbox payment as the API server and the payment controller write it.
func template(ns string, m *paygatev1.Merchant, gw *paygatev1.Gateway, ref string, at time.Time) paygatev1.Payment {
	settled := metav1.NewMicroTime(at.Add(3 * time.Second))
	p := paygatev1.Payment{
		TypeMeta: metav1.TypeMeta{APIVersion: paygatev1.GroupVersion.String(), Kind: "Payment"},
		ObjectMeta: metav1.ObjectMeta{
			Name: apiserver.TrxID(string(m.UID), paygatev1.EnvironmentSandbox, ref), Namespace: ns,
			Labels:            map[string]string{paygatev1.LabelMerchant: m.Name, paygatev1.LabelEnvironment: "sandbox"},
			CreationTimestamp: metav1.NewTime(at.Truncate(time.Second)),
		},
		Spec: paygatev1.PaymentSpec{
			MerchantRef: paygatev1.MerchantReference{Name: m.Name}, Environment: paygatev1.EnvironmentSandbox,
			MerchantReference: ref, Amount: "1000", Currency: "TZS", Mode: paygatev1.PaymentModePush,
			Customer:    paygatev1.Customer{Name: "Asha", Phone: "+255713000100"},
			Description: "Order " + ref, Gateways: []paygatev1.GatewayCode{gw.Code()},
			ExpiresAt: metav1.NewTime(at.Add(30 * time.Minute).Truncate(time.Second)), CreatedAt: ptrMicro(at),
			PushRequest: &paygatev1.PushRequest{Sequence: 1, Phone: "+255713000100", RequestedAt: metav1.NewMicroTime(at)},
		},
	}
	p.Status = paygatev1.PaymentStatus{
		Phase: paygatev1.PaymentSuccess, Gateway: gw.Code(), Fee: "25.00", NetAmount: "975.00", SettledAt: &settled,
		Remark: provider.SandboxRemark,
		Attempts: []paygatev1.PushAttempt{{Sequence: 1, Gateway: gw.Code(), Phase: paygatev1.AttemptSucceeded,
			Reference: ns + "." + ref, StartedAt: metav1.NewMicroTime(at), FinishedAt: &settled}},
	}
	return p
}

func ptrMicro(t time.Time) *metav1.MicroTime { m := metav1.NewMicroTime(t); return &m }

// seedArchive archives n payments through Store.Archive with four writers and returns their names.
func seedArchive(t *testing.T, store *archive.Store, ns string, m *paygatev1.Merchant, gw *paygatev1.Gateway, n int) []string {
	const batch, writers = 1000, 4
	names := make([]string, n)
	base := time.Now().Add(-30 * 24 * time.Hour)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				from := int(next.Add(batch)) - batch
				if from >= n {
					return
				}
				ps := make([]paygatev1.Payment, 0, batch)
				for i := from; i < min(from+batch, n); i++ {
					p := template(ns, m, gw, fmt.Sprintf("order-%07d", i), base.Add(time.Duration(i)*time.Second))
					p.UID = types.UID(uuid.NewString())
					names[i] = p.Name
					ps = append(ps, p)
				}
				if _, err := store.ArchivePayments(context.Background(), ps); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	return names
}

func forgetSeeded(t *testing.T, store *archive.Store) {
	entries, err := store.ArchivedLive(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	uids := make([]string, 0, len(entries))
	for _, e := range entries {
		uids = append(uids, e.UID)
	}
	for len(uids) > 0 {
		n := min(len(uids), 50_000)
		if err := store.ForgetLive(context.Background(), uids[:n]); err != nil {
			t.Fatal(err)
		}
		uids = uids[n:]
	}
}

// copyArchive loads payments [from, to) with COPY and adds their sums to carried_forward, as
// Store.Archive would have; it returns their names.
func copyArchive(t *testing.T, store *archive.Store, ns string, m *paygatev1.Merchant, gw *paygatev1.Gateway, from, to int) []string {
	ctx := context.Background()
	base := time.Now().Add(-30 * 24 * time.Hour)
	names := make([]string, 0, to-from)
	cols := []string{"uid", "namespace", "name", "merchant", "environment", "merchant_reference", "phase", "reason", "currency",
		"amount", "fee", "net_amount", "creation_timestamp", "created_at", "settled_at", "object"}
	i := from
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i >= to {
			return nil, nil
		}
		p := template(ns, m, gw, fmt.Sprintf("order-%07d", i), base.Add(time.Duration(i)*time.Second))
		p.UID = types.UID(uuid.NewString())
		names = append(names, p.Name)
		i++
		js, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		return []any{string(p.UID), ns, p.Name, m.Name, "sandbox", p.Spec.MerchantReference, "success", "", "TZS",
			"1000", "25.00", "975.00", p.CreationTimestamp.Time, p.Spec.CreatedAt.Time, p.Status.SettledAt.Time, string(js)}, nil
	})
	if _, err := store.Pool().CopyFrom(ctx, pgx.Identifier{"payments"}, cols, src); err != nil {
		t.Fatal(err)
	}
	n := int64(to - from)
	if _, err := store.Pool().Exec(ctx, `UPDATE carried_forward SET settled = settled + $1::numeric,
settled_payments = settled_payments + $2, payments = payments + $2 WHERE namespace = $3 AND merchant = $4 AND environment = 'sandbox' AND currency = 'TZS'`,
		fmt.Sprintf("%d", 975*n), n, ns, m.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pool().Exec(ctx, "ANALYZE payments"); err != nil {
		t.Fatal(err)
	}
	return names
}

func livePayment(ns string, m *paygatev1.Merchant, gw *paygatev1.Gateway, ref string) *paygatev1.Payment {
	p := template(ns, m, gw, "live-"+ref, time.Now())
	p.CreationTimestamp = metav1.Time{}
	// A hosted payment waits for its customer: the payment controller leaves it pending, and
	// the run settles it as the controller would.
	p.Spec.Mode, p.Spec.PushRequest = paygatev1.PaymentModeHosted, nil
	st := p.Status
	p.Status = paygatev1.PaymentStatus{}
	p.Annotations = map[string]string{"scale.paygate.dev/status": mustJSON(st)}
	return &p
}

// settle writes the payment's settled status, as the payment controller does when the provider
// confirms.
func settle(t *testing.T, k client.Client, p *paygatev1.Payment) {
	if err := settleErr(k, p); err != nil {
		t.Fatal(err)
	}
}

// settleErr writes the settled status on the latest version of the payment (the payment
// controller may have written its own status first).
func settleErr(k client.Client, p *paygatev1.Payment) error {
	var st paygatev1.PaymentStatus
	mustUnmarshal(p.Annotations["scale.paygate.dev/status"], &st)
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur := &paygatev1.Payment{}
		if err := k.Get(context.Background(), client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		cur.Status = st
		cur.Status.SettledAt = &now
		return k.Status().Update(context.Background(), cur)
	})
}

func seedLive(t *testing.T, k client.Client, ns string, m *paygatev1.Merchant, gw *paygatev1.Gateway, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				p := livePayment(ns, m, gw, fmt.Sprintf("%07d", i))
				if err := k.Create(context.Background(), p); err != nil {
					failed.Store(err)
					return
				}
				if err := settleErr(k, p); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		t.Fatal(err)
	}
}

func waitSettledPayments(t *testing.T, k client.Client, ns, merchant string, want int64, within time.Duration) {
	deadline := time.Now().Add(within)
	for {
		var b paygatev1.Balance
		if err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: paygatev1.BalanceName(merchant, paygatev1.EnvironmentSandbox)}, &b); err == nil {
			for _, c := range b.Status.Currencies {
				if c.SettledPayments == want {
					expect := new(big.Rat).Mul(big.NewRat(975, 1), big.NewRat(want, 1))
					if got, ok := new(big.Rat).SetString(string(c.Settled)); !ok || got.Cmp(expect) != 0 {
						t.Fatalf("settled %s, want %s", c.Settled, expect.FloatString(2))
					}
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the balance did not reach %d settled payments within %s", want, within)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
