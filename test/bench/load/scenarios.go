// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/apiserver"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/pkg/paygate"
)

// Scenarios the load tool runs.
const (
	CreateRaw    = "create-raw"   // Payment CR create through the Kubernetes API
	CreateREST   = "create-rest"  // signed POST /api/v1/payments (hosted)
	GetRaw       = "get-raw"      // GET of a Payment through the Kubernetes API
	Verify       = "verify"       // signed GET /api/v1/verify-payment/{trx_id}
	GetREST      = "get-rest"     // signed GET /api/v1/payments/{trx_id}
	List         = "list"         // signed GET /api/v1/payments?limit=100
	ListHalf     = "list-half"    // signed GET /api/v1/payments?limit=100&offset=<half the merchant's payments>
	ConsoleList  = "console-list" // GET /console/payments?env=sandbox (50 a page) in a signed-in console session
	Payout       = "payout"       // signed POST /api/v1/payouts (with an Idempotency-Key)
	Subscription = "subscription" // signed POST /api/v1/billing/subscriptions (with an Idempotency-Key)
	E2E          = "e2e"          // open-loop sandbox push payments, until the signed payment.completed webhook
	Seed         = "seed"         // settled Payment CRs through the Kubernetes API (create, then status)
	Absorb       = "absorb"       // one settled payment, until the merchant's Balance counts it
)

// SeedInvoiceLabel marks the payments the seed scenario writes: a payment with the invoice label
// sends no payment.* webhook (its invoice's events speak for it), so seeding 100,000 settled
// payments does not also deliver 100,000 webhooks. The balance counts them like any other.
const SeedInvoiceLabel = "bench-seed"

// Flags choose a scenario and its load.
type Flags struct {
	Scenario    string
	Merchant    string // role in Config.Merchants
	Concurrency int    // closed loop (Rate 0)
	Rate        float64
	Warmup      time.Duration
	Duration    time.Duration
	Max         int64 // operations (seed: payments to write; absorb: samples)
	// MaxOutstanding bounds the operations in flight of an open loop.
	MaxOutstanding int
	// Drain is how long the end-to-end scenario waits for webhooks after its last arrival.
	Drain time.Duration
	// Prefix makes the run's references unique.
	Prefix string
	// Via is how the seed writes: "api" (create, then status, through the Kubernetes API) or
	// "etcd" (one payment through the API, then copies of it straight into etcd).
	Via string
}

type runner struct {
	cfg  *Config
	f    Flags
	m    Merchant
	k8s  client.WithWatch
	rest *paygate.Client
}

// Run runs one scenario and returns its figures.
func Run(ctx context.Context, cfg *Config, f Flags) (*Result, error) {
	m, ok := cfg.Merchants[f.Merchant]
	if !ok {
		return nil, fmt.Errorf("no merchant %q in the config", f.Merchant)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	// As controller-runtime configures the servers' clients: no client-side rate limit (the API
	// server's priority and fairness applies).
	rc.QPS, rc.Burst = -1, -1
	k, err := client.NewWithWatch(rc, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		return nil, err
	}
	conns := max(f.Concurrency, f.MaxOutstanding, 64)
	c := paygate.New(cfg.APIURL, m.Credentials)
	c.HTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: 90 * time.Second,
	}}
	c.MaxRetries = -1 // a 429 or 503 is an error of the row, counted, never hidden in a retry
	r := &runner{cfg: cfg, f: f, m: m, k8s: k, rest: c}
	var res *Result
	switch f.Scenario {
	case E2E:
		res, err = r.e2e(ctx)
	case Absorb:
		res, err = r.absorb(ctx)
	case Seed:
		// Written as fast as the stack takes them: a closed loop bounded by the count.
		var (
			mu   sync.Mutex
			last []string
		)
		write, n := r.seedOne, f.Max
		if f.Via == "etcd" {
			s, err := r.newEtcdSeeder(ctx)
			if err != nil {
				return nil, fmt.Errorf("seeding through etcd: %w", err)
			}
			write, n = func(ctx context.Context, ref string, at time.Time) (string, error) { return s.seed(ctx, ref, at) }, f.Max-1
		}
		op := func(ctx context.Context, seq int64, at time.Time) error {
			name, err := write(ctx, r.ref(seq), at)
			if err == nil {
				mu.Lock()
				if last = append(last, name); len(last) > 2*max(f.Concurrency, 32) {
					last = last[1:]
				}
				mu.Unlock()
			}
			return err
		}
		if n > 0 {
			res = ClosedLoop(ctx, f.Concurrency, 0, 24*time.Hour, n, op)
		} else {
			res = &Result{}
		}
		res.Seeded = last
	default:
		op, err := r.op(f.Scenario)
		if err != nil {
			return nil, err
		}
		if f.Rate > 0 {
			res = OpenLoop(ctx, f.Rate, f.Warmup, f.Duration, f.Max, f.MaxOutstanding, op)
		} else {
			res = ClosedLoop(ctx, f.Concurrency, f.Warmup, f.Duration, f.Max, op)
		}
	}
	if err != nil {
		return nil, err
	}
	res.Scenario, res.Merchant = f.Scenario, f.Merchant
	return res, nil
}

func (r *runner) ref(seq int64) string { return fmt.Sprintf("%s-%d", r.f.Prefix, seq) }

func (r *runner) readID(seq int64) string { return r.cfg.ReadIDs[int(seq)%len(r.cfg.ReadIDs)] }

func (r *runner) op(scenario string) (Op, error) {
	switch scenario {
	case CreateRaw:
		return func(ctx context.Context, seq int64, _ time.Time) error {
			return r.k8s.Create(ctx, r.hosted(r.ref(seq), time.Now()))
		}, nil
	case CreateREST:
		return func(ctx context.Context, seq int64, _ time.Time) error {
			_, err := r.rest.CreatePayment(ctx, HostedRequest(r.ref(seq)), "")
			return err
		}, nil
	case GetRaw, Verify, GetREST:
		if len(r.cfg.ReadIDs) == 0 {
			return nil, errors.New("the config names no payments to read")
		}
		return func(ctx context.Context, seq int64, _ time.Time) error {
			id := r.readID(seq)
			switch scenario {
			case GetRaw:
				return r.k8s.Get(ctx, client.ObjectKey{Namespace: r.m.Namespace, Name: id}, &paygatev1.Payment{})
			case Verify:
				_, err := r.rest.VerifyPayment(ctx, id)
				return err
			default:
				_, err := r.rest.GetPayment(ctx, id)
				return err
			}
		}, nil
	case List:
		return func(ctx context.Context, _ int64, _ time.Time) error {
			l, err := r.rest.ListPayments(ctx, paygate.ListOptions{Limit: 100})
			if err == nil && len(l.Data) != 100 {
				err = fmt.Errorf("a page of %d payments, not 100", len(l.Data))
			}
			return err
		}, nil
	case ConsoleList:
		return r.consoleList(), nil
	case ListHalf:
		// The page at half the merchant's payments: the total read once, from a first page.
		var once sync.Once
		var half int
		var totalErr error
		return func(ctx context.Context, _ int64, _ time.Time) error {
			once.Do(func() {
				l, err := r.rest.ListPayments(ctx, paygate.ListOptions{Limit: 1})
				if totalErr = err; err == nil {
					half = l.Pagination.Total / 2
				}
			})
			if totalErr != nil {
				return totalErr
			}
			l, err := r.rest.ListPayments(ctx, paygate.ListOptions{Limit: 100, Offset: half})
			if err == nil && len(l.Data) != 100 {
				err = fmt.Errorf("a page of %d payments at offset %d, not 100", len(l.Data), half)
			}
			return err
		}, nil
	case Payout:
		return func(ctx context.Context, seq int64, _ time.Time) error {
			_, err := r.rest.CreatePayout(ctx, paygate.PayoutRequest{Amount: "1000"}, r.ref(seq))
			return err
		}, nil
	case Subscription:
		return func(ctx context.Context, seq int64, _ time.Time) error {
			_, err := r.rest.CreateSubscription(ctx, paygate.SubscriptionRequest{PlanCode: r.cfg.PlanCode,
				CustomerPhone: fmt.Sprintf("+25571240%04d", seq%10000), TermsShown: r.cfg.PlanTerms}, r.ref(seq))
			return err
		}, nil
	}
	return nil, fmt.Errorf("unknown scenario %q", scenario)
}

// HostedRequest is the create request of the create rows (and of the driver's template).
func HostedRequest(ref string) paygate.CreatePaymentRequest {
	return paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: ref, Description: "Bench order"}
}

// PushRequest is the create request of the end-to-end rows: a sandbox push to phone that
// succeeds at the first status query, its webhook to webhookURL.
func PushRequest(ref, phone, webhookURL string) paygate.CreatePaymentRequest {
	req := HostedRequest(ref)
	req.PaymentMode, req.CustomerPhone, req.WebhookURL = "push", phone, webhookURL
	return req
}

// ownedBy makes a copy of a template Payment the merchant's payment named after ref, created at
// now.
func ownedBy(tmpl *paygatev1.Payment, m Merchant, ref string, now time.Time) *paygatev1.Payment {
	p := &paygatev1.Payment{Spec: *tmpl.Spec.DeepCopy()}
	env := tmpl.Spec.Environment
	lifetime := tmpl.Spec.ExpiresAt.Sub(tmpl.Spec.CreatedAt.Time).Round(time.Second)
	p.Namespace, p.Name = m.Namespace, apiserver.TrxID(m.UID, env, ref)
	p.Labels = map[string]string{}
	for k, v := range tmpl.Labels {
		p.Labels[k] = v
	}
	p.Labels[paygatev1.LabelMerchant] = m.Name
	p.Spec.MerchantRef.Name = m.Name
	p.Spec.MerchantReference = ref
	created := metav1.NewMicroTime(now.UTC().Truncate(time.Microsecond))
	p.Spec.CreatedAt = &created
	p.Spec.ExpiresAt = metav1.NewTime(now.Add(lifetime).Truncate(time.Second))
	return p
}

// hosted is the Payment the apiserver's doCreate would write for HostedRequest(ref).
func (r *runner) hosted(ref string, now time.Time) *paygatev1.Payment {
	return ownedBy(r.cfg.Hosted, r.m, ref, now)
}

// settled is a settled payment of the merchant like the config's template, and the status to
// write after the create.
func (r *runner) settled(ref string, now time.Time) (*paygatev1.Payment, paygatev1.PaymentStatus) {
	return SettledCopy(r.cfg.Settled, r.m, ref, now)
}

// SettledCopy is a settled payment of m like tmpl (a real sandbox push payment), with the seed's
// invoice label, and the status to write after the create (a create leaves status out). The push
// request is left out: the manager would push a payment whose request no attempt answers yet.
func SettledCopy(tmpl *paygatev1.Payment, m Merchant, ref string, now time.Time) (*paygatev1.Payment, paygatev1.PaymentStatus) {
	p := ownedBy(tmpl, m, ref, now)
	p.Labels[paygatev1.LabelInvoice] = SeedInvoiceLabel
	p.Spec.PushRequest = nil
	st := *tmpl.Status.DeepCopy()
	at := metav1.NewMicroTime(now.UTC().Truncate(time.Microsecond))
	st.SettledAt = &at
	for i := range st.Attempts {
		a := &st.Attempts[i]
		a.Reference = fmt.Sprintf("%s.%s.%d", p.Namespace, p.Name, a.Sequence)
		a.ProviderReference = "sbx-" + a.Reference
		a.StartedAt, a.FinishedAt = at, &at
	}
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
		st.Conditions[i].ObservedGeneration = 1
	}
	st.ObservedGeneration = 1
	return p, st
}

func (r *runner) seedOne(ctx context.Context, ref string, at time.Time) (string, error) {
	p, st := r.settled(ref, at)
	if err := r.k8s.Create(ctx, p); err != nil {
		return "", err
	}
	return p.Name, r.settle(ctx, p, st)
}

// settle writes st as p's status with a merge patch (no optimistic lock: the manager may have
// written its first status meanwhile; this one wins, and the manager's later pass conflicts and
// sees a settled payment).
func (r *runner) settle(ctx context.Context, p *paygatev1.Payment, st paygatev1.PaymentStatus) error {
	return Settle(ctx, r.k8s, p, st)
}

// Settle writes st as p's status with a merge patch.
func Settle(ctx context.Context, k client.Client, p *paygatev1.Payment, st paygatev1.PaymentStatus) error {
	body, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	return k.Status().Patch(ctx, p, client.RawPatch("application/merge-patch+json", body))
}

// ---- end to end ----

type e2eArrival struct {
	seq int64
	at  time.Time
	trx string
}

func (r *runner) e2e(ctx context.Context) (*Result, error) {
	rcv, err := NewReceiver(r.m.WebhookSecret)
	if err != nil {
		return nil, err
	}
	defer rcv.Close()
	var (
		mu       sync.Mutex
		arrivals []e2eArrival
		createD  []time.Duration
		errs     int64
	)
	op := func(ctx context.Context, seq int64, at time.Time) error {
		sent := time.Now()
		out, err := r.rest.CreatePayment(ctx, PushRequest(r.ref(seq), r.cfg.Phone, rcv.URL), "")
		d := time.Since(sent)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs++
			return err
		}
		createD = append(createD, d)
		arrivals = append(arrivals, e2eArrival{seq: seq, at: at, trx: out.Data.TrxID})
		return nil
	}
	res := OpenLoop(ctx, r.f.Rate, 0, r.f.Duration, r.f.Max, r.f.MaxOutstanding, op)
	lastArrival := time.Now()
	pending := func() int {
		n := 0
		for _, a := range arrivals {
			if _, ok := rcv.Completed(a.trx); !ok && !rcv.FailedEvent(a.trx) {
				n++
			}
		}
		return n
	}
	for pending() > 0 && time.Since(lastArrival) < r.f.Drain && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	e := &E2EResult{Arrivals: int64(len(arrivals)) + errs + res.Dropped, Created: int64(len(arrivals)), CreateErrors: errs,
		CreateLatency: Summarize(createD), DrainSeconds: time.Since(lastArrival).Seconds()}
	if res.Window > 0 {
		e.AchievedRate = float64(e.Created) / res.Window
	}
	slices.SortFunc(arrivals, func(a, b e2eArrival) int { return int(a.seq - b.seq) })
	var all []time.Duration
	byOrder := make([]time.Duration, 0, len(arrivals)) // -1: not received
	for _, a := range arrivals {
		t, ok := rcv.Completed(a.trx)
		switch {
		case ok:
			e.Received++
			all = append(all, t.Sub(a.at))
			byOrder = append(byOrder, t.Sub(a.at))
		case rcv.FailedEvent(a.trx):
			e.Failed++
			byOrder = append(byOrder, -1)
		default:
			e.Missing++
			byOrder = append(byOrder, -1)
		}
	}
	e.Latency = Summarize(all)
	q := len(byOrder) / 4
	if q > 0 {
		e.EarlyP50 = quarterMedian(byOrder[:q])
		e.LateP50 = quarterMedian(byOrder[len(byOrder)-q:])
	}
	counts := rcv.Counts()
	e.Deliveries, e.Redeliveries, e.EmittedTwice, e.BadSignatures = counts.Deliveries, counts.Redeliveries, counts.EmittedTwice, counts.BadSigs
	res.E2E = e
	res.Latency = e.Latency
	res.Count, res.Errors = e.Received, errs+e.Missing+e.Failed
	if res.Window > 0 {
		res.Throughput = float64(e.Received) / res.Window
	}
	return res, nil
}

// quarterMedian is the median of the received latencies of a quarter, a missing webhook counting
// as the largest (it is later than every received one).
func quarterMedian(d []time.Duration) float64 {
	s := slices.Clone(d)
	for i, x := range s {
		if x < 0 {
			s[i] = time.Hour
		}
	}
	slices.Sort(s)
	return ms(Percentile(s, 0.5))
}

// ---- balance ----

func (r *runner) balance(ctx context.Context) (*paygatev1.Balance, error) {
	b := &paygatev1.Balance{}
	key := client.ObjectKey{Namespace: r.m.Namespace, Name: paygatev1.BalanceName(r.m.Name, paygatev1.EnvironmentSandbox)}
	return b, r.k8s.Get(ctx, key, b)
}

func settledCount(b *paygatev1.Balance, cur paygatev1.CurrencyCode) int64 {
	for _, c := range b.Status.Currencies {
		if c.Currency == cur {
			return c.SettledPayments
		}
	}
	return 0
}

// watchBalance opens a watch on the merchant's Balance; once it returns, the watch is
// established and sees every later change.
func (r *runner) watchBalance(ctx context.Context) (watch.Interface, error) {
	return r.k8s.Watch(ctx, &paygatev1.BalanceList{}, client.InNamespace(r.m.Namespace),
		client.MatchingFields{"metadata.name": paygatev1.BalanceName(r.m.Name, paygatev1.EnvironmentSandbox)})
}

// waitBalance reads w until cond holds of the Balance, and returns when it first did.
func waitBalance(ctx context.Context, w watch.Interface, within time.Duration, cond func(*paygatev1.Balance) bool) (time.Time, error) {
	defer w.Stop()
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return time.Time{}, errors.New("the balance watch ended")
			}
			if b, isBalance := ev.Object.(*paygatev1.Balance); isBalance && cond(b) {
				return time.Now(), nil
			}
		case <-timeout.C:
			return time.Time{}, fmt.Errorf("the balance did not change within %s", within)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// absorb measures, Max times, how long the balance reconciler takes to count one new settled
// payment: a pending payment is created (and waited for: its create triggers a recount too),
// then settled with one status write; the time runs from that write to the Balance that counts
// it, seen through a watch opened before the write.
func (r *runner) absorb(ctx context.Context) (*Result, error) {
	out := &AbsorbResult{}
	var created []time.Duration
	cur := r.cfg.Settled.Spec.Currency
	for i := int64(1); i <= max(1, r.f.Max); i++ {
		b, err := r.balance(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the balance: %w", err)
		}
		observed, settled := b.Status.ObservedPayments, settledCount(b, cur)
		p, st := r.settled(r.ref(i), time.Now())
		w, err := r.watchBalance(ctx)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := r.k8s.Create(ctx, p); err != nil {
			w.Stop()
			return nil, err
		}
		seen, err := waitBalance(ctx, w, 10*time.Minute, func(b *paygatev1.Balance) bool { return b.Status.ObservedPayments > observed })
		if err != nil {
			return nil, fmt.Errorf("waiting for the create to be counted: %w", err)
		}
		created = append(created, seen.Sub(t0))
		if w, err = r.watchBalance(ctx); err != nil {
			return nil, err
		}
		t1 := time.Now()
		if err := r.settle(ctx, p, st); err != nil {
			w.Stop()
			return nil, err
		}
		seen, err = waitBalance(ctx, w, 10*time.Minute, func(b *paygatev1.Balance) bool { return settledCount(b, cur) > settled })
		if err != nil {
			return nil, fmt.Errorf("waiting for the settlement to be counted: %w", err)
		}
		out.Samples = append(out.Samples, ms(seen.Sub(t1)))
		out.Payments = observed + 1
	}
	d := make([]time.Duration, len(out.Samples))
	for i, s := range out.Samples {
		d[i] = time.Duration(s * float64(time.Millisecond))
	}
	s := Summarize(d)
	out.Median, out.Max = s.P50, s.Max
	out.CreateObserved = Summarize(created).P50
	return &Result{Count: int64(len(out.Samples)), Latency: s, Absorb: out}, nil
}
