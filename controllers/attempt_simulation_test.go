// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/billing"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/provider"
)

// The controllers' simulation (docs/reliability.md, The attempt engine's simulation): the
// Reconcile methods the manager registers for payments and payouts, run over a simulated API
// server (the fake client: objects with resource versions and optimistic-lock conflicts) read
// through a cache that lags a random number of writes behind, with a simulated clock and a
// simulated provider that accepts, rejects, times out (having received the send or not), answers
// "not found" for a while after accepting, forgets, settles late or never, with and without
// de-duplication. The process crashes between any two writes and at every failpoint of the
// written-ahead protocol (what it had not written is lost; a fresh reconciler takes over), the
// clock jumps past deadlines, callbacks wake payments at any moment, and operators write verdicts
// on payouts. After every step the invariants are checked. A failing seed prints itself and its
// steps; replay it with `make simulate-controllers SEED=n`.
var (
	ctrlSimSeed  = flag.Uint64("ctrl-seed", 0, "replay this seed of the controllers' simulation only")
	ctrlSimSeeds = flag.Int("ctrl-seeds", 150, "how many seeds the controllers' simulation runs")
	ctrlSimSteps = flag.Int("ctrl-steps", 150, "steps per seed of the controllers' simulation")
)

func TestControllersSimulation(t *testing.T) {
	if testing.Short() && *ctrlSimSeed == 0 {
		t.Skip("the controllers' simulation runs without -short")
	}
	run := func(seed uint64) *ctrlWorld {
		w := newCtrlWorld(seed)
		for i := 0; i < *ctrlSimSteps && w.violation == ""; i++ {
			w.step()
		}
		return w
	}
	if *ctrlSimSeed != 0 {
		w := run(*ctrlSimSeed)
		for _, l := range w.log {
			t.Log(l)
		}
		if w.violation != "" {
			t.Fatalf("seed %d: %s", *ctrlSimSeed, w.violation)
		}
		t.Logf("seed %d: %d steps, %d faults, %d invariant checks", *ctrlSimSeed, w.steps, w.faults, w.checks)
		return
	}
	var steps, faults, checks, sends int
	for i := 1; i <= *ctrlSimSeeds; i++ {
		w := run(uint64(i))
		steps, faults, checks, sends = steps+w.steps, faults+w.faults, checks+w.checks, sends+w.prov.totalSends()
		if w.violation != "" {
			t.Fatalf("seed %d violates an invariant: %s\nreplay: make simulate-controllers SEED=%d\n%s", i, w.violation, i, strings.Join(w.log, "\n"))
		}
	}
	t.Logf("%d seeds, %d steps, %d faults injected, %d sends, %d invariant checks", *ctrlSimSeeds, steps, faults, sends, checks)
}

// errCrashed is what every call of a process that crashed answers.
var errCrashed = errors.New("simulated crash: the process is gone")

// simCrash is the panic a crash unwinds the reconcile pass with.
type simCrash struct{}

// ctrlWorld is one seed's world.
type ctrlWorld struct {
	rng   *rand.Rand
	clock *testingclock.FakeClock
	api   client.WithWatch // the API server
	cache *laggingCache
	prov  *simProvider
	dedup bool
	// byCallback: the provider has no status query (Daraja's B2C, or an M-Pesa Express push whose
	// acceptance was lost): its answers are what the apiserver recorded from its callbacks.
	byCallback bool
	payments   []string
	payouts    []string
	refunds    []string                 // refunds of settled payments, reserved when created
	looked     map[string]lookedVerdict // payout → what the operator saw
	sub        *paygatev1.Subscription  // the subscription billed in this world, if any
	window     billing.Window           // its plan's charging window
	charges    map[string]bool          // charge payments seen
	first      string                   // the subscription's first charge (sent at once, whatever the hour)
	endedAt    map[string]time.Time
	crashNext  int // crash at the n-th write or failpoint from now (0: none)
	dead       bool
	steps      int
	faults     int
	checks     int
	violation  string
	log        []string
}

type lookedVerdict struct {
	at    time.Time
	sends int32
}

func newCtrlWorld(seed uint64) *ctrlWorld {
	rng := rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15+1))
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	w := &ctrlWorld{rng: rng, clock: testingclock.NewFakeClock(start), dedup: rng.IntN(2) == 0,
		looked: map[string]lookedVerdict{}, endedAt: map[string]time.Time{}, charges: map[string]bool{}}
	merchant := &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "duka"},
		Spec: paygatev1.MerchantSpec{KYBStatus: paygatev1.KYBApproved, BusinessStatus: paygatev1.BusinessApproved, SettlementNumber: "+255712345678",
			DisplayName: "Duka", Owner: "owner@duka.example", Currencies: []paygatev1.CurrencyCode{"TZS"}, Wallets: []paygatev1.Wallet{{Currency: "TZS"}}}}
	// A plain object tracker: the default one builds a REST mapper on every write (a second per
	// seed), and the simulation needs resource versions and conflicts, not managed fields.
	tracker := clienttesting.NewObjectTracker(kube.Scheme(), serializer.NewCodecFactory(kube.Scheme()).UniversalDecoder())
	w.api = fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjectTracker(tracker).WithObjects(merchant, rulesGateway()).
		WithStatusSubresource(&paygatev1.Payment{}, &paygatev1.Payout{}, &paygatev1.Refund{}, &paygatev1.Subscription{}, &paygatev1.Invoice{}, &paygatev1.BillingPlan{}).Build()
	w.cache = &laggingCache{api: w.api, rng: rng, history: map[types.NamespacedName][]client.Object{}}
	w.prov = &simProvider{w: w, ops: map[string]*simOperation{}, deadlines: map[string]time.Time{}}
	if rng.IntN(2) == 0 {
		// Renewals come at the anchor's time of day: start the world minutes before the charging
		// window closes (20:00 in Dar es Salaam, 17:00 UTC), where a prompt could outlive it.
		w.clock.SetTime(time.Date(2026, 11, 27, 16, 30+rng.IntN(29), 0, 0, time.UTC))
		w.subscribe()
	}
	w.byCallback = !w.dedup && rng.IntN(2) == 0
	w.logf("seed %d: dedup=%v byCallback=%v subscription=%v", seed, w.dedup, w.byCallback, w.sub != nil)
	return w
}

// subscribe creates a monthly plan (charging window 08:00 to 20:00 in Dar es Salaam) and a
// customer's subscription to it with the consent the API would record, billed from now on.
func (w *ctrlWorld) subscribe() {
	ctx := context.Background()
	plan := &paygatev1.BillingPlan{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: paygatev1.BillingPlanName("duka", paygatev1.EnvironmentSandbox, "gold"),
			Labels: map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox"}},
		Spec: paygatev1.BillingPlanSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Code: "gold", Name: "Gold", Amount: "15000.00", Currency: "TZS", Interval: paygatev1.IntervalDay},
	}
	consent, err := billing.BuildConsent(billing.ConsentInput{TermsShown: "Gold: TZS 15,000 by USSD prompt each period. Cancel any time.", RecordedAt: w.clock.Now(), ClientIP: "196.249.1.7",
		UserAgent: "duka-backend/2.1", Plan: &plan.Spec, BusinessID: "test_mk_qj33hpibayoahnbujh4loofg", Environment: paygatev1.EnvironmentSandbox})
	if err != nil {
		w.fail("building the consent: %v", err)
		return
	}
	window, err := billing.NewWindow(plan.Spec.ChargingWindow)
	if err != nil {
		w.fail("the charging window: %v", err)
		return
	}
	sub := &paygatev1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: paygatev1.SubscriptionName("qj33hpibayoahnbujh4loofg"),
			Labels: map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox", paygatev1.LabelPlanCode: "gold"}},
		Spec: paygatev1.SubscriptionSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			PlanRef: paygatev1.BillingPlanReference{Name: plan.Name}, PlanCode: "gold", CustomerPhone: "+255712345678", Consent: consent},
	}
	plan.UID, sub.UID = "uid-plan", "uid-sub"
	for _, o := range []client.Object{plan, sub} {
		if err := w.api.Create(ctx, o); err != nil {
			w.fail("creating %s: %v", o.GetName(), err)
			return
		}
		w.cache.record(o)
	}
	w.sub, w.window = sub, window
}

// discoverCharges adds the charge payments the subscription controller created to the payments
// the world reconciles, with their deadlines.
func (w *ctrlWorld) discoverCharges() {
	var list paygatev1.PaymentList
	if err := w.api.List(context.Background(), &list, client.MatchingLabels{paygatev1.LabelSubscription: w.sub.Name}); err != nil {
		w.fail("listing charges: %v", err)
		return
	}
	for _, p := range list.Items {
		if w.charges[p.Name] {
			continue
		}
		w.charges[p.Name] = true
		if w.first == "" {
			w.first = p.Name
		}
		w.payments = append(w.payments, p.Name)
		w.prov.deadlines["shop."+p.Name+".1"] = p.Spec.ExpiresAt.Time
		w.logf("charge %s created, expires %s", p.Name, p.Spec.ExpiresAt.Format("Jan 2 15:04:05"))
	}
}

func (w *ctrlWorld) logf(format string, args ...any) {
	w.log = append(w.log, w.clock.Now().Format("Jan 2 15:04:05 ")+fmt.Sprintf(format, args...))
}

func (w *ctrlWorld) fail(format string, args ...any) {
	if w.violation == "" {
		w.violation = fmt.Sprintf(format, args...)
		w.logf("VIOLATION: %s", w.violation)
	}
}

// maybeCrash is called at every write and failpoint of a pass: it kills the process when the
// schedule says so.
func (w *ctrlWorld) maybeCrash(where string) {
	if w.dead {
		panic(simCrash{})
	}
	if w.crashNext == 0 {
		return
	}
	w.crashNext--
	if w.crashNext == 0 {
		w.dead = true
		w.faults++
		w.logf("crash at %s", where)
		panic(simCrash{})
	}
}

// step is one thing happening.
func (w *ctrlWorld) step() {
	w.steps++
	switch n := w.rng.IntN(100); {
	case n < 8 && len(w.payments) < 6:
		w.createPayment()
	case n < 12 && len(w.payouts) < 3:
		w.createPayout()
	case n < 15 && len(w.refunds) < 3:
		w.createRefund()
	case n < 64:
		w.reconcileOne()
	case n < 80:
		d := time.Duration(w.rng.IntN(90)) * time.Second
		if w.rng.IntN(5) == 0 {
			d = time.Duration(1+w.rng.IntN(30)) * time.Hour
			w.faults++
		}
		w.clock.Step(d)
		w.logf("clock +%s", d)
	case n < 84:
		w.faults++
		w.prov.outageUntil = w.clock.Now().Add(time.Duration(w.rng.IntN(1800)) * time.Second)
		w.logf("provider down until %s", w.prov.outageUntil.Format("15:04:05"))
	case n < 88:
		w.callback()
	case n < 94:
		w.operator()
	default:
		w.faults++
		w.cache.lag = w.rng.IntN(4)
		w.logf("cache lags up to %d writes", w.cache.lag)
	}
	w.check()
}

func (w *ctrlWorld) createPayment() {
	name := fmt.Sprintf("trx-%d", len(w.payments)+1)
	now := w.clock.Now()
	p := rulesPayment(func(p *paygatev1.Payment) {
		p.Name, p.UID = name, types.UID("uid-"+name)
		p.Spec.ExpiresAt = metav1.NewTime(now.Add(time.Duration(1+w.rng.IntN(30)) * time.Minute).Truncate(time.Second))
		p.Spec.PushRequest.RequestedAt = metav1.NewMicroTime(now)
	})
	if err := w.api.Create(context.Background(), p); err != nil {
		w.fail("creating %s: %v", name, err)
		return
	}
	w.cache.record(p)
	w.payments = append(w.payments, name)
	w.prov.deadlines["shop."+name+".1"] = p.Spec.ExpiresAt.Time
	w.logf("payment %s created, expires %s", name, p.Spec.ExpiresAt.Format("15:04:05"))
}

// createRefund refunds part of a payment that succeeded, reserved at once (the balance controller's
// decision is the ledger's tests' business; here the refund's provider protocol is).
func (w *ctrlWorld) createRefund() {
	var list paygatev1.PaymentList
	if err := w.api.List(context.Background(), &list); err != nil {
		return
	}
	var paid []*paygatev1.Payment
	for i := range list.Items {
		if p := &list.Items[i]; p.Status.Phase == paygatev1.PaymentSuccess {
			paid = append(paid, p)
		}
	}
	if len(paid) == 0 {
		return
	}
	p := paid[w.rng.IntN(len(paid))]
	a := p.LatestAttempt()
	name := fmt.Sprintf("rf-%d", len(w.refunds)+1)
	now := w.clock.Now()
	rf := &paygatev1.Refund{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name)},
		Spec: paygatev1.RefundSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Payment: paygatev1.RefundedPayment{TrxID: p.Name, Amount: p.Spec.Amount, AttemptReference: a.Reference},
			Amount:  "500.00", Currency: "TZS", Destination: "+255712345678", Gateway: a.Gateway, CreatedAt: metav1.NewMicroTime(now)},
	}
	if err := w.api.Create(context.Background(), rf); err != nil {
		w.fail("creating %s: %v", name, err)
		return
	}
	rf.Status = paygatev1.RefundStatus{Phase: paygatev1.RefundPending, ReservedAt: ptrTime(now)}
	if err := w.api.Status().Update(context.Background(), rf); err != nil {
		w.fail("reserving %s: %v", name, err)
		return
	}
	w.cache.record(rf)
	w.refunds = append(w.refunds, name)
	w.logf("refund %s of %s created and reserved", name, p.Name)
}

func (w *ctrlWorld) createPayout() {
	name := fmt.Sprintf("po-%d", len(w.payouts)+1)
	now := w.clock.Now()
	p := &paygatev1.Payout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name)},
		Spec: paygatev1.PayoutSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Amount: "1000.00", Fee: "10.00", PayableAmount: "990.00", Currency: "TZS", Destination: "+255712345678", Gateway: "mpesa-tz",
			CreatedAt: metav1.NewMicroTime(now)},
	}
	if err := w.api.Create(context.Background(), p); err != nil {
		w.fail("creating %s: %v", name, err)
		return
	}
	p.Status = paygatev1.PayoutStatus{Phase: paygatev1.PayoutPending, ReservedAt: ptrTime(now)} // the balance reserved it
	if err := w.api.Status().Update(context.Background(), p); err != nil {
		w.fail("reserving %s: %v", name, err)
		return
	}
	w.cache.record(p)
	w.payouts = append(w.payouts, name)
	w.logf("payout %s created and reserved", name)
}

// reconcileOne runs one pass of the payment or payout reconciler (a fresh one: the memory a
// process has does not survive it), crashing at a random write or failpoint.
func (w *ctrlWorld) reconcileOne() {
	var (
		key  types.NamespacedName
		kind string
	)
	all := len(w.payments) + len(w.payouts) + len(w.refunds)
	if w.sub != nil {
		all += 4 // the subscription gets its share of passes
	}
	if all == 0 {
		return
	}
	switch i := w.rng.IntN(all); {
	case i < len(w.payments):
		key, kind = types.NamespacedName{Namespace: "shop", Name: w.payments[i]}, "payment"
	case i < len(w.payments)+len(w.payouts):
		key, kind = types.NamespacedName{Namespace: "shop", Name: w.payouts[i-len(w.payments)]}, "payout"
	case i < len(w.payments)+len(w.payouts)+len(w.refunds):
		key, kind = types.NamespacedName{Namespace: "shop", Name: w.refunds[i-len(w.payments)-len(w.payouts)]}, "refund"
	default:
		key, kind = client.ObjectKeyFromObject(w.sub), "subscription"
	}
	w.dead, w.crashNext = false, 0
	if w.rng.IntN(5) == 0 {
		w.crashNext = 1 + w.rng.IntN(5)
	}
	c := w.cache.client(w)
	rec := events.NewFakeRecorder(100)
	go func() { // drain: events are not what the simulation checks
		for range rec.Events {
		}
	}()
	defer close(rec.Events)
	var r interface {
		Reconcile(context.Context, ctrl.Request) (ctrl.Result, error)
	}
	providers := stubProviders{w.prov}
	switch kind {
	case "subscription":
		r = &SubscriptionReconciler{Client: c, APIReader: w.liveReader(), Recorder: rec, Clock: w.clock, RetryAfter: time.Minute}
		defer w.discoverCharges()
	case "refund":
		r = &RefundReconciler{Client: c, APIReader: w.liveReader(), Recorder: rec, Providers: providers, Clock: w.clock,
			PollInterval: 2 * time.Second, AmbiguousAfter: 30 * time.Minute, AttemptWatch: 72 * time.Hour}
	case "payment":
		r = &PaymentReconciler{Client: c, APIReader: w.liveReader(), Recorder: rec, Providers: providers, Clock: w.clock,
			PollInterval: 2 * time.Second, AttemptWatch: 72 * time.Hour}
	default:
		r = &PayoutReconciler{Client: c, APIReader: w.liveReader(), Recorder: rec, Providers: providers, Clock: w.clock,
			PollInterval: 2 * time.Second, AmbiguousAfter: 30 * time.Minute, AttemptWatch: 72 * time.Hour}
	}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(simCrash); !ok {
					panic(v)
				}
			}
		}()
		restore := setSimFailpoint(func(point string) { w.maybeCrash(point) })
		defer restore()
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
		if err != nil && !w.dead && !onlyConflicts(err) && !strings.Contains(err.Error(), "provider") && !errors.Is(err, errCrashed) {
			w.logf("%s %s: pass error %v", kind, key.Name, err)
		}
	}()
	w.dead = false
}

// liveReader reads the API server, and dies with the process.
func (w *ctrlWorld) liveReader() client.Reader {
	return interceptor.NewClient(w.api, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if w.dead {
			return errCrashed
		}
		return c.Get(ctx, key, obj, opts...)
	}})
}

func (w *ctrlWorld) callback() {
	if w.byCallback {
		w.recordResult()
		return
	}
	if len(w.payments) == 0 {
		return
	}
	name := w.payments[w.rng.IntN(len(w.payments))]
	p := &paygatev1.Payment{}
	if err := w.api.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: name}, p); err != nil {
		return
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[paygatev1.AnnotationProviderCallback] = fmt.Sprintf("SUCCESS %d", w.steps)
	if err := w.api.Update(context.Background(), p); err == nil {
		w.cache.record(p)
		w.logf("callback for %s", name)
	}
}

// recordResult is the apiserver receiving a provider's callback for a payment's or a payout's
// attempt and recording its confirmed answer (paygatev1.AnnotationProviderResult), as its
// callback routes do: only what the provider says at that moment (SUCCESS once the money moved,
// FAILED once it failed, else PENDING, or AMBIGUOUS for a queue time-out), sometimes about an
// older attempt, never replacing a final answer with one that is not, never on an object that
// ended unless a failed one hears of success.
func (w *ctrlWorld) recordResult() {
	ctx := context.Background()
	var obj client.Object
	var ref string
	var failed, terminal bool
	if i := w.rng.IntN(len(w.payments) + len(w.payouts) + len(w.refunds) + 1); i < len(w.payments) {
		p := &paygatev1.Payment{}
		if w.api.Get(ctx, client.ObjectKey{Namespace: "shop", Name: w.payments[i]}, p) != nil || p.LatestAttempt() == nil {
			return
		}
		obj, ref, failed, terminal = p, p.Status.Attempts[w.rng.IntN(len(p.Status.Attempts))].Reference, p.Status.Phase == paygatev1.PaymentFailed, p.Terminal()
	} else if i < len(w.payments)+len(w.payouts) {
		p := &paygatev1.Payout{}
		if w.api.Get(ctx, client.ObjectKey{Namespace: "shop", Name: w.payouts[i-len(w.payments)]}, p) != nil || p.Status.Attempt == nil {
			return
		}
		obj, ref, failed, terminal = p, p.Status.Attempt.Reference, p.Status.Phase == paygatev1.PayoutFailed, p.Terminal()
	} else if i < len(w.payments)+len(w.payouts)+len(w.refunds) {
		rf := &paygatev1.Refund{}
		if w.api.Get(ctx, client.ObjectKey{Namespace: "shop", Name: w.refunds[i-len(w.payments)-len(w.payouts)]}, rf) != nil || rf.Status.Attempt == nil {
			return
		}
		obj, ref, failed, terminal = rf, rf.Status.Attempt.Reference, rf.Status.Phase == paygatev1.RefundFailed, rf.Terminal()
	} else {
		return
	}
	op := w.prov.ops[ref]
	if op == nil {
		return // nothing reached the provider: no callback
	}
	now := w.clock.Now()
	status := "PENDING"
	switch {
	case op.moved(now):
		status = "SUCCESS"
	case op.final == provider.StatusFailed && !now.Before(op.settleAt):
		status = "FAILED INSUFFICIENT_FUNDS"
	case w.rng.IntN(3) == 0:
		status = "AMBIGUOUS"
	}
	if terminal && !(failed && status == "SUCCESS") {
		return
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	if r, st, _, ok := paygatev1.ParseProviderResult(ann[paygatev1.AnnotationProviderResult]); ok && r == ref &&
		provider.Status(st).Terminal() && !provider.Status(strings.Fields(status)[0]).Terminal() {
		return
	}
	ann[paygatev1.AnnotationProviderResult] = ref + " " + status
	ann[paygatev1.AnnotationProviderCallback] = fmt.Sprintf("%s %d", strings.Fields(status)[0], w.steps)
	obj.SetAnnotations(ann)
	if err := w.api.Update(ctx, obj); err == nil {
		w.cache.record(obj)
		w.logf("callback for %s recorded: %s", ref, status)
	}
}

// operator looks at an ambiguous payout (noting the send it shows) or writes the verdict of an
// earlier look: what the provider said then.
func (w *ctrlWorld) operator() {
	if len(w.payouts) == 0 {
		return
	}
	name := w.payouts[w.rng.IntN(len(w.payouts))]
	p := &paygatev1.Payout{}
	if err := w.api.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: name}, p); err != nil || p.Terminal() || p.Status.Attempt == nil {
		return
	}
	looked, ok := w.looked[name]
	if !ok {
		w.looked[name] = lookedVerdict{at: w.clock.Now(), sends: disbursementRecord(p.Status.Attempt).SendCount()}
		w.logf("operator checks payout %s (send %d)", name, w.looked[name].sends)
		return
	}
	op := w.prov.ops[p.DisbursementReference()]
	verdict := "failed"
	if op != nil && op.moved(looked.at) {
		verdict = "success"
	}
	if w.rng.IntN(2) == 0 {
		verdict = fmt.Sprintf("%s/%d", verdict, looked.sends)
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[paygatev1.AnnotationResolvePayout] = verdict
	if err := w.api.Update(context.Background(), p); err == nil {
		w.cache.record(p)
		w.faults++
		w.logf("operator resolves payout %s: %s", name, verdict)
	}
}

// check is the invariants, after every step.
func (w *ctrlWorld) check() {
	w.checks++
	ctx := context.Background()
	now := w.clock.Now()
	var payments paygatev1.PaymentList
	var payouts paygatev1.PayoutList
	if err := w.api.List(ctx, &payments); err != nil {
		w.fail("listing payments: %v", err)
		return
	}
	if err := w.api.List(ctx, &payouts); err != nil {
		w.fail("listing payouts: %v", err)
		return
	}
	credited := money.Amount{}
	for i := range payments.Items {
		p := &payments.Items[i]
		a := p.LatestAttempt()
		if p.Status.Phase == paygatev1.PaymentSuccess {
			// Money counted once, and only money that moved: a successful payment's attempt is one
			// the provider settled.
			if op := w.prov.ops[a.Reference]; op == nil || !op.moved(now) {
				w.fail("payment %s succeeded but the provider moved no money for %s", p.Name, a.Reference)
			}
			credited = credited.Add(money.MustParseAmount(string(p.Status.NetAmount)))
		}
		w.checkWatched(p.Name, p.Terminal(), a != nil && a.InFlight(), a != nil && a.WatchUntil != nil, now)
	}
	ledger, err := ComputeLedger("duka", paygatev1.EnvironmentSandbox, payments.Items, nil, nil, nil)
	if err != nil {
		w.fail("the ledger: %v", err)
	} else {
		got := money.Amount{}
		for _, c := range ledger.Status.Currencies {
			if c.Currency == "TZS" && c.Settled != "" {
				got = money.MustParseAmount(string(c.Settled))
			}
		}
		if got.Cmp(credited) != 0 {
			w.fail("the ledger counts %s settled, the successful payments %s", got.StringFixed(2), credited.StringFixed(2))
		}
	}
	var refunds paygatev1.RefundList
	if err := w.api.List(ctx, &refunds); err != nil {
		w.fail("listing refunds: %v", err)
		return
	}
	for i := range refunds.Items {
		rf := &refunds.Items[i]
		if rf.Status.Phase == paygatev1.RefundSuccess {
			// A refund succeeded only where the provider returned the money, under its own reference.
			if op := w.prov.ops[rf.RefundReference()]; op == nil || !op.moved(now) {
				w.fail("refund %s succeeded but the provider returned nothing", rf.Name)
			}
		}
		if rf.Status.Attempt != nil && rf.Status.ReservedAt == nil {
			w.fail("refund %s was sent without a reservation", rf.Name)
		}
	}
	for i := range payouts.Items {
		p := &payouts.Items[i]
		a := p.Status.Attempt
		if a == nil {
			continue
		}
		resolved := p.Annotations[paygatev1.AnnotationResolvePayout] != "" && (p.Status.Reason == string(paygatev1.PayoutResolvedFailed) ||
			(p.Status.Phase == paygatev1.PayoutSuccess && attemptInFlight(a.Phase)))
		if p.Status.Phase == paygatev1.PayoutSuccess && !resolved {
			if op := w.prov.ops[p.DisbursementReference()]; op == nil || !op.moved(now) {
				w.fail("payout %s succeeded but the provider paid nothing", p.Name)
			}
		}
		if resolved {
			// No verdict contradicts a newer send: nothing was sent after the operator looked.
			if last := w.prov.lastSend[p.DisbursementReference()]; last.After(w.looked[p.Name].at) {
				w.fail("payout %s was resolved on a check at %s, but sent again at %s", p.Name, w.looked[p.Name].at.Format("15:04:05"), last.Format("15:04:05"))
			}
		}
		w.checkWatched(p.Name, p.Terminal(), attemptInFlight(a.Phase), a.WatchUntil != nil, now)
	}
}

// checkWatched: an object that ended while its attempt had no final answer keeps it watched until
// the window closes.
func (w *ctrlWorld) checkWatched(name string, ended, open, watched bool, now time.Time) {
	if !ended || !open {
		return
	}
	at, seen := w.endedAt[name]
	if !seen {
		w.endedAt[name] = now
		at = now
	}
	if !watched && now.Before(at.Add(72*time.Hour)) {
		w.fail("%s ended without the provider's final answer and its attempt is not watched", name)
	}
}

// laggingCache is the reconcilers' cached client: reads return an object as it was up to lag
// writes ago; writes go to the API server (and conflict when stale).
type laggingCache struct {
	api     client.WithWatch
	rng     *rand.Rand
	lag     int
	uids    int
	mu      sync.Mutex
	history map[types.NamespacedName][]client.Object
}

func (c *laggingCache) record(obj client.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := client.ObjectKeyFromObject(obj)
	c.history[k] = append(c.history[k], obj.DeepCopyObject().(client.Object))
}

func (c *laggingCache) client(w *ctrlWorld) client.Client {
	write := func(where string, do func() error, obj client.Object) error {
		if w.dead {
			return errCrashed
		}
		w.maybeCrash("before " + where)
		if err := do(); err != nil {
			return err
		}
		c.record(obj)
		w.maybeCrash("after " + where) // stored; the answer is lost
		return nil
	}
	return interceptor.NewClient(c.api, interceptor.Funcs{
		Get: func(ctx context.Context, api client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if w.dead {
				return errCrashed
			}
			c.mu.Lock()
			h := c.history[key]
			var stale client.Object
			if lag := c.rng.IntN(c.lag + 1); lag > 0 && len(h) > lag {
				stale = h[len(h)-1-lag]
			}
			c.mu.Unlock()
			if stale != nil {
				if err := api.Get(ctx, key, obj, opts...); err != nil {
					return err
				}
				return api.Scheme().Convert(stale.DeepCopyObject(), obj, nil)
			}
			return api.Get(ctx, key, obj, opts...)
		},
		Update: func(ctx context.Context, api client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return write("update", func() error { return api.Update(ctx, obj, opts...) }, obj)
		},
		Patch: func(ctx context.Context, api client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return write("patch", func() error { return api.Patch(ctx, obj, patch, opts...) }, obj)
		},
		Create: func(ctx context.Context, api client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetUID() == "" { // as the API server does (the plain tracker does not)
				c.uids++
				obj.SetUID(types.UID(fmt.Sprintf("sim-uid-%d", c.uids)))
			}
			return write("create", func() error { return api.Create(ctx, obj, opts...) }, obj)
		},
		SubResourceUpdate: func(ctx context.Context, api client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return write("status write", func() error { return api.SubResource(sub).Update(ctx, obj, opts...) }, obj)
		},
	})
}

// simOperation is the provider's record of one reference.
type simOperation struct {
	acceptedAt time.Time
	visibleAt  time.Time // status queries answer "not found" before it
	settleAt   time.Time
	final      provider.Status
	forgotten  bool
}

func (o *simOperation) moved(at time.Time) bool {
	return o.final == provider.StatusSuccess && !at.Before(o.settleAt)
}

// simProvider is the simulated provider.
type simProvider struct {
	w           *ctrlWorld
	mu          sync.Mutex
	ops         map[string]*simOperation
	sends       map[string]int
	lastSend    map[string]time.Time
	deadlines   map[string]time.Time
	outageUntil time.Time
}

func (p *simProvider) totalSends() int {
	n := 0
	for _, s := range p.sends {
		n += s
	}
	return n
}

func (p *simProvider) Capabilities() provider.Capabilities {
	return provider.Capabilities{Deduplicates: p.w.dedup}
}

func (p *simProvider) send(ref string) (provider.Result, error) {
	w := p.w
	if w.dead {
		panic(simCrash{})
	}
	now := w.clock.Now()
	if p.sends == nil {
		p.sends, p.lastSend = map[string]int{}, map[string]time.Time{}
	}
	if d, ok := p.deadlines[ref]; ok && !now.Before(d) {
		w.fail("%s sent at %s, at or after its deadline %s", ref, now.Format("15:04:05"), d.Format("15:04:05"))
	}
	if name := strings.TrimSuffix(strings.TrimPrefix(ref, "shop."), ".1"); w.charges[name] && name != w.first && !w.window.Contains(now) {
		w.fail("charge %s pushed at %s (%s in Dar es Salaam), outside the charging window", name, now.Format("15:04:05"), now.In(w.window.Location()).Format("15:04"))
	}
	down := now.Before(p.outageUntil)
	if down && w.rng.IntN(2) == 0 {
		return provider.Result{}, errors.New("connection refused") // never arrived
	}
	p.sends[ref]++
	p.lastSend[ref] = now
	if !w.dedup && p.sends[ref] > 1 {
		w.fail("the provider, which does not de-duplicate, received %d sends of %s", p.sends[ref], ref)
	}
	op, ok := p.ops[ref]
	if !ok || (op.forgotten && !w.dedup) {
		op = &simOperation{acceptedAt: now, visibleAt: now, settleAt: now.Add(time.Duration(w.rng.IntN(1200)) * time.Second), final: provider.StatusSuccess}
		if w.rng.IntN(2) == 0 {
			op.visibleAt = now.Add(time.Duration(w.rng.IntN(120)) * time.Second) // "not found" for a while after accepting
		}
		switch w.rng.IntN(5) {
		case 0:
			op.final = provider.StatusFailed
		case 1:
			op.settleAt = now.Add(100 * 24 * time.Hour) // never, as far as the simulation runs
		}
		if w.rng.IntN(25) == 0 {
			op.forgotten = true
		}
		p.ops[ref] = op
	}
	if down || w.rng.IntN(4) == 0 {
		w.faults++
		return provider.Result{}, errors.New("timeout") // arrived; the answer is lost
	}
	w.logf("provider accepted %s", ref)
	return provider.Result{Status: provider.StatusPending}, nil
}

func (p *simProvider) status(ref string) (provider.Result, error) {
	w := p.w
	if w.dead {
		panic(simCrash{})
	}
	now := w.clock.Now()
	if now.Before(p.outageUntil) {
		return provider.Result{}, errors.New("connection refused")
	}
	if w.byCallback {
		return provider.Result{}, fmt.Errorf("%w: the simulated provider has no status query", provider.ErrAnswersByCallback)
	}
	op := p.ops[ref]
	if op == nil || op.forgotten || now.Before(op.visibleAt) {
		return provider.Result{}, provider.ErrNotFound
	}
	if now.Before(op.settleAt) {
		return provider.Result{Status: provider.StatusPending}, nil
	}
	if op.final == provider.StatusFailed {
		return provider.Result{Status: provider.StatusFailed, Code: paygatev1.FailureInsufficientFunds}, nil
	}
	return provider.Result{Status: provider.StatusSuccess}, nil
}

func (p *simProvider) Push(_ context.Context, req provider.PushRequest) (provider.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.send(req.Reference)
}

func (p *simProvider) PushStatus(_ context.Context, req provider.PushRequest) (provider.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status(req.Reference)
}

func (p *simProvider) Disburse(_ context.Context, req provider.DisbursementRequest) (provider.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.send(req.Reference)
}

func (p *simProvider) DisbursementStatus(_ context.Context, req provider.DisbursementRequest) (provider.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status(req.Reference)
}

func (p *simProvider) RefundScope() provider.RefundScope { return provider.RefundsPartial }

func (p *simProvider) Refund(_ context.Context, req provider.RefundRequest) (provider.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.send(req.Reference)
}

func (p *simProvider) RefundStatus(_ context.Context, req provider.RefundRequest) (provider.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status(req.Reference)
}

// setSimFailpoint makes the controllers' failpoints call hit instead of killing the process.
func setSimFailpoint(hit func(point string)) (restore func()) {
	old := hitFailpoint
	hitFailpoint = hit
	return func() { hitFailpoint = old }
}
