// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package chaos

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/pkg/paygate"
)

// world is everything stored at the end of the run: in etcd, and in the archive (an archived
// object no longer in etcd is in the lists as it was archived; archive says which).
type world struct {
	payments      []paygatev1.Payment
	payouts       []paygatev1.Payout
	refunds       []paygatev1.Refund
	invoices      []paygatev1.Invoice
	subscriptions []paygatev1.Subscription
	deliveries    []paygatev1.WebhookDelivery
	balances      []paygatev1.Balance
	merchants     []paygatev1.Merchant
	gateways      []paygatev1.Gateway
	plans         []paygatev1.BillingPlan
	events        []corev1.Event
	newEvents     []eventsv1.Event
	archive       *archiveView
}

func (h *harness) snapshot() (*world, error) {
	w := &world{}
	var (
		pl  paygatev1.PaymentList
		pol paygatev1.PayoutList
		rl  paygatev1.RefundList
		il  paygatev1.InvoiceList
		sl  paygatev1.SubscriptionList
		dl  paygatev1.WebhookDeliveryList
		bl  paygatev1.BalanceList
		ml  paygatev1.MerchantList
		gl  paygatev1.GatewayList
		bpl paygatev1.BillingPlanList
		el  corev1.EventList
		nel eventsv1.EventList
	)
	for _, l := range []client.ObjectList{&pl, &pol, &rl, &il, &sl, &dl, &bl, &ml, &gl, &bpl, &el, &nel} {
		if err := h.k8s.List(h.ctx, l); err != nil {
			return nil, err
		}
	}
	w.payments, w.payouts, w.invoices, w.subscriptions, w.deliveries = pl.Items, pol.Items, il.Items, sl.Items, dl.Items
	w.refunds = rl.Items
	w.balances, w.merchants, w.gateways, w.plans, w.events, w.newEvents = bl.Items, ml.Items, gl.Items, bpl.Items, el.Items, nel.Items
	if h.arch != nil {
		if err := h.mergeArchive(w); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Deadlines: how long an object may stay non-terminal.
const (
	paymentGrace  = 60 * time.Second  // past expires_at
	payoutDue     = 120 * time.Second // after creation
	deliveryGrace = 60 * time.Second  // past the whole retry schedule
	invoiceGrace  = 60 * time.Second  // past the next attempt, on the subscription's clock
)

func paymentTerminal(p *paygatev1.Payment) bool {
	return p.Status.Phase == paygatev1.PaymentSuccess || p.Status.Phase == paygatev1.PaymentFailed
}

func payoutTerminal(p *paygatev1.Payout) bool {
	return p.Status.Phase == paygatev1.PayoutSuccess || p.Status.Phase == paygatev1.PayoutFailed
}

// deliveryTerminal reads the delivery's effective status: one its first attempt delivered (made
// before its create, docs/webhooks.md) has no status stored.
func deliveryTerminal(d *paygatev1.WebhookDelivery) bool {
	phase := d.EffectiveStatus().Phase
	return phase == paygatev1.DeliveryDelivered || phase == paygatev1.DeliveryAbandoned || phase == paygatev1.DeliveryNoEndpoint
}

// unsettled lists what is still moving; stuck only what is past its deadline.
func (w *world) unsettled(now time.Time, subOffset map[string]time.Duration) (moving, stuck []string) {
	announced := map[string]bool{}
	for i := range w.deliveries {
		announced[w.deliveries[i].Spec.Source.UID] = true
	}
	for i := range w.payments {
		p := &w.payments[i]
		if paymentTerminal(p) {
			if !announced[string(p.UID)] && p.Labels[paygatev1.LabelInvoice] == "" {
				moving = append(moving, "the event of payment "+p.Namespace+"/"+p.Name)
			}
			continue
		}
		moving = append(moving, "payment "+p.Namespace+"/"+p.Name)
		if now.After(p.Spec.ExpiresAt.Add(paymentGrace)) {
			stuck = append(stuck, fmt.Sprintf("payment %s/%s %q (expired %s)", p.Namespace, p.Name, p.Status.Phase, p.Spec.ExpiresAt.Format(time.TimeOnly)))
		}
	}
	for i := range w.payouts {
		p := &w.payouts[i]
		if payoutTerminal(p) {
			if !announced[string(p.UID)] {
				moving = append(moving, "the event of payout "+p.Namespace+"/"+p.Name)
			}
			continue
		}
		moving = append(moving, "payout "+p.Namespace+"/"+p.Name)
		if now.After(p.Spec.CreatedAt.Add(payoutDue)) {
			stuck = append(stuck, fmt.Sprintf("payout %s/%s %q (created %s)", p.Namespace, p.Name, p.Status.Phase, p.Spec.CreatedAt.Format(time.TimeOnly)))
		}
	}
	for i := range w.refunds {
		r := &w.refunds[i]
		if r.Terminal() {
			if !announced[string(r.UID)] {
				moving = append(moving, "the event of refund "+r.Namespace+"/"+r.Name)
			}
			continue
		}
		moving = append(moving, "refund "+r.Namespace+"/"+r.Name)
		if now.After(r.Spec.CreatedAt.Add(refundDue)) {
			stuck = append(stuck, fmt.Sprintf("refund %s/%s %q (created %s)", r.Namespace, r.Name, r.Phase(), r.Spec.CreatedAt.Format(time.TimeOnly)))
		}
	}
	for i := range w.deliveries {
		d := &w.deliveries[i]
		if deliveryTerminal(d) {
			continue
		}
		moving = append(moving, "webhook delivery "+d.Namespace+"/"+d.Name)
		if now.After(d.CreationTimestamp.Add(webhookSpan + deliveryGrace)) {
			stuck = append(stuck, fmt.Sprintf("webhook delivery %s/%s %s %q", d.Namespace, d.Name, d.Spec.EventType, d.EffectiveStatus().Phase))
		}
	}
	for i := range w.invoices {
		inv := &w.invoices[i]
		if inv.Status.Phase != paygatev1.InvoiceOpen && inv.Status.Phase != "" {
			continue
		}
		subNow := now.Add(subOffset[inv.Namespace+"/"+inv.Spec.SubscriptionRef.Name])
		if inv.Status.NextAttemptAt != nil && subNow.After(inv.Status.NextAttemptAt.Add(invoiceGrace)) {
			moving = append(moving, "invoice "+inv.Namespace+"/"+inv.Name)
			stuck = append(stuck, fmt.Sprintf("invoice %s/%s open, next attempt %s was due", inv.Namespace, inv.Name, inv.Status.NextAttemptAt.Format(time.RFC3339)))
		}
	}
	return moving, stuck
}

func (w *world) subscriptionOffsets() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, s := range w.subscriptions {
		if s.Spec.TestClock != nil {
			out[s.Namespace+"/"+s.Name] = time.Duration(s.Spec.TestClock.OffsetSeconds) * time.Second
		}
	}
	return out
}

// converge waits until nothing moves any more (or within passes).
func (h *harness) converge(within time.Duration) {
	start := time.Now()
	deadline, nextLog := start.Add(within), start.Add(30*time.Second)
	for {
		w, err := h.snapshot()
		var moving []string
		if err == nil {
			moving, _ = w.unsettled(time.Now(), w.subscriptionOffsets())
			if len(moving) == 0 {
				return
			}
		}
		switch {
		case time.Now().After(deadline) && err != nil:
			h.t.Logf("chaos: still no snapshot after %s: %v", within, err)
			return
		case time.Now().After(deadline):
			h.t.Logf("chaos: still moving after %s: %d objects%s", within, len(moving), examples(moving))
			return
		case time.Now().After(nextLog):
			nextLog = nextLog.Add(30 * time.Second)
			if err != nil {
				h.t.Logf("chaos: converging for %s: reading the state: %v", time.Since(start).Round(time.Second), err)
			} else {
				h.t.Logf("chaos: converging for %s: %d objects still moving%s", time.Since(start).Round(time.Second), len(moving), examples(moving))
			}
		}
		time.Sleep(2 * time.Second)
	}
}

// ---- figures ----

type figure struct {
	name, value, required string
	ok                    *bool // nil: informational
}

type figures []figure

func (f *figures) info(name string, format string, args ...any) {
	*f = append(*f, figure{name: name, value: fmt.Sprintf(format, args...)})
}

func (f *figures) need(name string, ok bool, required string, format string, args ...any) {
	*f = append(*f, figure{name: name, value: fmt.Sprintf(format, args...), required: required, ok: &ok})
}

func (f *figures) zero(name string, n int, examples []string) {
	v := fmt.Sprint(n)
	if n > 0 && len(examples) > 0 {
		v += " (e.g. " + strings.Join(examples[:min(3, len(examples))], "; ") + ")"
	}
	*f = append(*f, figure{name: name, value: v, required: "0", ok: ptrBool(n == 0)})
}

func ptrBool(b bool) *bool { return &b }

func rat(d paygatev1.Decimal) *big.Rat {
	r, ok := new(big.Rat).SetString(string(d))
	if !ok {
		return new(big.Rat)
	}
	return r
}

func ratString(r *big.Rat) string { return r.FloatString(2) }

func (h *harness) check(ran time.Duration) figures {
	t := h.t
	w, err := h.snapshot()
	if err != nil {
		t.Fatalf("reading the final state: %v", err)
	}
	now := time.Now()
	var f figures

	// Kills, outages, failpoints and leadership.
	h.mu.Lock()
	total, kinds := 0, []string{}
	for k, n := range h.kills {
		total += n
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	outages := 0
	for _, n := range h.outages {
		outages += n
	}
	outageKinds := kindSummary(h.outages)
	var fired, missed, never []string
	for _, p := range h.coveredPoints() {
		fired = append(fired, fmt.Sprintf("%s %d/%d", p, h.fired[p], h.armed[p]))
		if n := h.notReached[p]; n > 0 {
			missed = append(missed, fmt.Sprintf("%s %d", p, n))
		}
		if h.fired[p] == 0 {
			never = append(never, fmt.Sprintf("%s (armed %d times)", p, h.armed[p]))
		}
	}
	takeovers := append([]time.Duration(nil), h.takeovers...)
	selfExits := kindSummary(h.selfExits)
	h.mu.Unlock()
	if selfExits == "" {
		selfExits = "none"
	}
	wantKills := envInt("CHAOS_KILLS", 6)
	f.need("kills (SIGKILL only)", total >= wantKills, fmt.Sprintf(">= %d", wantKills), "%d: %s", total, strings.Join(kinds, ", "))
	f.info("outages (the receiver down, the database cut: not kills)", "%d: %s", outages, orNone(outageKinds))
	f.info("failpoints that killed the leader / rounds that armed them", "%s (armed but not reached in time: %s)", strings.Join(fired, ", "), orNone(strings.Join(missed, ", ")))
	f.zero("failpoints never reached", len(never), never)
	for _, p := range never {
		t.Errorf("failpoint %s was never reached: the run must kill a manager at every failpoint", p)
	}
	f.info("processes that ended on their own (restarted by the harness)", "%s", selfExits)
	f.info("run time (load and kills)", "%s", ran.Round(time.Second))
	f.info("leader takeover after a kill, p50 / p99 / max", "%s / %s / %s over %d takeovers (lease %s)",
		percentile(takeovers, 0.5).Round(time.Millisecond), percentile(takeovers, 0.99).Round(time.Millisecond),
		percentile(takeovers, 1).Round(time.Millisecond), len(takeovers), h.lease)

	// Requests.
	reqs := h.ledger.all()
	var lost, retried, shortened, mutations []string
	byKind := map[string]int{}
	unexpected := []string{}
	for _, r := range reqs {
		byKind[r.kind]++
		if r.kind != "read" && r.kind != "history" {
			mutations = append(mutations, r.key)
		}
		if !r.definitive {
			lost = append(lost, fmt.Sprintf("%s %s %s after %d tries", r.kind, r.merchant, r.key, r.tries))
		}
		if r.tries > 1 {
			retried = append(retried, r.key)
		}
		if r.shortFirst {
			shortened = append(shortened, r.key)
		}
		if r.definitive && r.status != http.StatusOK {
			switch {
			case r.kind == "payout" && r.label == "INSUFFICIENT_BALANCE":
			case r.kind == "push" && (r.label == "PUSH_IN_PROGRESS" || r.label == "EXPIRED_SESSION"):
			case refundRefusalExpected(r):
			default:
				unexpected = append(unexpected, fmt.Sprintf("%s %s %s: %d %s: %s", r.kind, r.merchant, r.key, r.status, r.label, r.detail))
			}
		}
	}
	f.info("client requests", "%d (%s); %d retried after a timeout or server error, %d sent first with a client timeout of a few ms",
		len(reqs), kindSummary(byKind), len(retried), len(shortened))
	f.zero("client requests lost (no definitive answer within 60 s)", len(lost), lost)
	f.zero("client requests refused unexpectedly", len(unexpected), unexpected)

	// Duplicates: objects per idempotency key.
	answered := map[string]*request{} // id -> request
	for _, r := range reqs {
		if r.status == http.StatusOK && r.kind != "read" && r.kind != "history" && r.kind != "push" && r.kind != "advance" {
			answered[r.id] = r
		}
	}
	var dup, missing []string
	refs := map[string]int{}
	seenIDs := map[string]bool{}
	for i := range w.payments {
		p := &w.payments[i]
		if p.Labels[paygatev1.LabelInvoice] != "" {
			continue
		}
		k := p.Namespace + "/" + string(p.Spec.Environment) + "/" + p.Spec.MerchantReference
		refs[k]++
		if refs[k] > 1 {
			dup = append(dup, "payment ref "+k)
		}
		if r := answered[p.Name]; r == nil || r.key != p.Spec.MerchantReference {
			dup = append(dup, "payment "+p.Name+" answered to no request")
		}
		seenIDs[p.Name] = true
	}
	for i := range w.payouts {
		p := &w.payouts[i]
		if answered[p.Name] == nil {
			dup = append(dup, "payout "+p.Name+" answered to no request")
		}
		seenIDs[p.Name] = true
	}
	refundKeys := map[string]string{} // the IdempotencyKey object the apiserver recorded -> refund
	refundAsks := h.refundAsks(reqs)
	for i := range w.refunds {
		rf := &w.refunds[i]
		if rf.Labels[paygatev1.LabelLateSettlement] != "" {
			continue // the payment controller's, of a late settlement: no request
		}
		if r := answered[rf.Name]; r == nil || !strings.HasPrefix(r.kind, "refund") {
			why := "no request of the run claimed its Idempotency-Key"
			if r := refundAsks[rf.Namespace+"/"+rf.Annotations[annotationIdempotencyKey]]; r != nil {
				why = fmt.Sprintf("its request %s (%s) was answered %d %s %s after %d tries (%d without an answer)",
					r.key, r.kind, r.status, r.label, r.detail, r.tries, r.timeouts)
			}
			dup = append(dup, "refund "+rf.Namespace+"/"+rf.Name+" answered to no request: "+why)
		}
		if k := rf.Namespace + "/" + rf.Annotations[annotationIdempotencyKey]; rf.Annotations[annotationIdempotencyKey] == "" {
			dup = append(dup, "refund "+rf.Namespace+"/"+rf.Name+" records no Idempotency-Key")
		} else if o := refundKeys[k]; o != "" {
			dup = append(dup, "refunds "+o+" and "+rf.Name+" made with one Idempotency-Key")
		} else {
			refundKeys[k] = rf.Name
		}
		seenIDs[rf.Name] = true
	}
	for i := range w.subscriptions {
		s := &w.subscriptions[i]
		id := "sub_" + strings.TrimPrefix(s.Name, "sub-")
		if answered[id] == nil {
			dup = append(dup, "subscription "+s.Name+" answered to no request")
		}
		seenIDs[id] = true
	}
	for id, r := range answered {
		if !seenIDs[id] {
			missing = append(missing, fmt.Sprintf("%s %s answered %s", r.kind, r.key, id))
		}
	}
	f.zero("client requests duplicated (objects per Idempotency-Key beyond one)", len(dup), dup)
	f.zero("answers naming an object that is not stored", len(missing), missing)

	// Payments and the provider's pushes.
	phase := map[string]int{}
	var double, unpushed, expiredUnsent []string
	known, resent := 0, 0
	for i := range w.payments {
		p := &w.payments[i]
		phase[string(p.Spec.Environment)+" "+string(p.Status.Phase)+reasonSuffix(p.Status.Reason)]++
		if p.Spec.Environment != paygatev1.EnvironmentProduction {
			continue
		}
		for _, a := range p.Status.Attempts {
			// POSTs received; a push sent again with the same reference (a send whose answer was
			// lost, then "not found") is de-duplicated by the provider: one operation.
			n := h.fake.PushesFor(a.Reference)
			known += n
			resent += max(0, n-1)
			switch ops := h.fake.OperationsFor(a.Reference); {
			case ops > 1:
				double = append(double, fmt.Sprintf("%s performed %d times (%d pushes)", a.Reference, ops, n))
			case n == 0 && p.Status.Reason == string(paygatev1.FailureExpiredSession) && a.InFlight():
				// Recorded, then the manager died before sending, and the checkout's deadline passed
				// before its successor's pass: nothing is sent after a deadline (docs/payments.md,
				// The attempt protocol); the attempt stays watched.
				expiredUnsent = append(expiredUnsent, a.Reference)
			case n == 0:
				unpushed = append(unpushed, a.Reference)
			}
		}
	}
	f.info("payments by environment and outcome", "%d: %s", len(w.payments), kindSummary(phase))
	f.zero("provider operations per push attempt reference above 1 (double pushes)", len(double), double)
	f.info("pushes sent again with the same reference (de-duplicated by the provider)", "%d", resent)
	f.info("attempts recorded and never sent before their payment's deadline (expired, watched)", "%d", len(expiredUnsent))
	f.zero("attempt references never pushed (other than those)", len(unpushed), unpushed)
	f.zero("pushes with a reference no attempt recorded", h.fake.Pushes()-known, nil)

	// Payouts and disbursements.
	var doubleD, undisbursed, resolvedUnsent, mismatch []string
	knownD, resentD := 0, 0
	requested, paid := map[string]int{}, map[string]int{}
	paidAmount := map[string]*big.Rat{}
	for i := range w.payouts {
		p := &w.payouts[i]
		k := string(p.Spec.Environment)
		requested[k]++
		if p.Status.Phase == paygatev1.PayoutSuccess {
			paid[k]++
			if paidAmount[k] == nil {
				paidAmount[k] = new(big.Rat)
			}
			paidAmount[k].Add(paidAmount[k], rat(p.Spec.Amount))
		}
		if p.Spec.Environment != paygatev1.EnvironmentProduction || p.Status.Attempt == nil {
			continue
		}
		ref := p.Status.Attempt.Reference
		n := h.fake.DisbursementsFor(ref)
		knownD += n
		resentD += max(0, n-1)
		switch ops := h.fake.OperationsFor(ref); {
		case ops > 1:
			doubleD = append(doubleD, fmt.Sprintf("%s disbursed %d times (%d requests)", ref, ops, n))
		case n == 0 && p.Status.Phase == paygatev1.PayoutFailed && p.Status.Reason == string(paygatev1.PayoutResolvedFailed):
			// Recorded by a manager that died before sending, then never confirmed "not found"
			// within --payout-ambiguous-after (the provider out of reach): the operator, asked,
			// found no such disbursement at the provider and resolved it failed. No money moved.
			resolvedUnsent = append(resolvedUnsent, ref)
		case n == 0:
			undisbursed = append(undisbursed, ref)
		}
		// What the provider did, forgotten or not; an operation not settled yet decides nothing.
		if res, ok := h.fake.Truth(ref); ok && res.Status != provider.StatusPending {
			if (res.Status == provider.StatusSuccess) != (p.Status.Phase == paygatev1.PayoutSuccess) {
				mismatch = append(mismatch, fmt.Sprintf("payout %s is %s, the provider says %s", p.Name, p.Status.Phase, res.Status))
			}
		}
	}
	for _, env := range sortedKeys(requested) {
		amt := "0.00"
		if paidAmount[env] != nil {
			amt = ratString(paidAmount[env])
		}
		f.info("payouts paid / requested ("+env+")", "%d / %d, TZS %s paid", paid[env], requested[env], amt)
	}
	f.zero("provider disbursements per payout reference above 1 (double disbursements)", len(doubleD), doubleD)
	f.info("disbursements sent again with the same reference (de-duplicated by the provider)", "%d", resentD)
	f.info("payouts recorded and never sent, resolved failed by the operator (the provider never had them)", "%d", len(resolvedUnsent))
	f.zero("payout references never disbursed (other than those)", len(undisbursed), undisbursed)
	f.zero("disbursements with a reference no payout recorded", h.fake.Disbursements()-knownD, nil)
	f.zero("payouts whose outcome differs from the provider's", len(mismatch), mismatch)

	// Refunds and the provider's refunds.
	h.checkRefunds(w, &f)

	// The provider's faults and the operator's verdicts.
	h.checkProvider(w, &f, now)

	// Balances.
	h.checkBalances(w, &f)

	// Events.
	h.checkEvents(w, &f)

	// Stuck objects.
	_, stuck := w.unsettled(now, w.subscriptionOffsets())
	f.zero("objects stuck non-terminal past their deadline", len(stuck), stuck)

	// Billing.
	subPhase := map[string]int{}
	for _, s := range w.subscriptions {
		subPhase[string(s.Status.Phase)]++
	}
	invPhase := map[string]int{}
	for _, inv := range w.invoices {
		invPhase[string(inv.Status.Phase)]++
	}
	f.info("subscriptions / invoices", "%d (%s) / %d (%s)", len(w.subscriptions), kindSummary(subPhase), len(w.invoices), kindSummary(invPhase))
	f.info("billing flows: renewed / suspended by dunning / unfinished", "%d / %d / %d of %d",
		h.load.flowsRenewed.Load(), h.load.flowsSuspend.Load(), h.load.flowsUnfinish.Load(), h.load.flowsStarted.Load())

	// The archive.
	if h.arch != nil {
		h.checkArchive(w, &f, now)
	}

	// Leaks.
	h.checkLeaks(w, &f)
	return f
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return " " + r
}

func kindSummary(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkBalances recomputes every balance from the stored payments, payouts and refunds
// (docs/ledger.md): available = settled - paidOut - reserved - refunded - refundsReserved >= 0,
// with nothing reserved once every payout and refund is terminal.
func (h *harness) checkBalances(w *world, f *figures) {
	type key struct{ merchant, ns, env, currency string }
	settled, paidOut, refunded := map[key]*big.Rat{}, map[key]*big.Rat{}, map[key]*big.Rat{}
	add := func(m map[key]*big.Rat, k key, d paygatev1.Decimal) {
		if m[k] == nil {
			m[k] = new(big.Rat)
		}
		m[k].Add(m[k], rat(d))
	}
	for i := range w.payments {
		p := &w.payments[i]
		if p.Status.Phase == paygatev1.PaymentSuccess {
			add(settled, key{p.Spec.MerchantRef.Name, p.Namespace, string(p.Spec.Environment), string(p.Spec.Currency)}, p.Status.NetAmount)
		}
	}
	for i := range w.payouts {
		p := &w.payouts[i]
		if p.Status.Phase == paygatev1.PayoutSuccess {
			add(paidOut, key{p.Spec.MerchantRef.Name, p.Namespace, string(p.Spec.Environment), string(p.Spec.Currency)}, p.Spec.Amount)
		}
	}
	for i := range w.refunds {
		r := &w.refunds[i]
		if r.Status.Phase == paygatev1.RefundSuccess {
			add(refunded, key{r.Spec.MerchantRef.Name, r.Namespace, string(r.Spec.Environment), string(r.Spec.Currency)}, r.Spec.Amount)
		}
	}
	var wrong, overdrawn []string
	checked := 0
	seen := map[key]bool{}
	for i := range w.balances {
		b := &w.balances[i]
		for _, c := range b.Status.Currencies {
			k := key{b.Spec.MerchantRef.Name, b.Namespace, string(b.Spec.Environment), string(c.Currency)}
			seen[k] = true
			checked++
			s, po, rf := orZero(settled[k]), orZero(paidOut[k]), orZero(refunded[k])
			want := new(big.Rat).Sub(s, po)
			want.Sub(want, rf)
			if rat(c.Settled).Cmp(s) != 0 || rat(c.PaidOut).Cmp(po) != 0 || rat(c.Refunded).Cmp(rf) != 0 || rat(c.Reserved).Sign() != 0 ||
				rat(c.RefundsReserved).Sign() != 0 || rat(c.Available).Cmp(want) != 0 {
				wrong = append(wrong, fmt.Sprintf("%s/%s %s: stored settled %s paid out %s refunded %s reserved %s refunds reserved %s available %s; "+
					"payments, payouts and refunds say %s - %s - %s = %s",
					k.ns, b.Name, k.currency, c.Settled, c.PaidOut, orZeroText(c.Refunded), c.Reserved, orZeroText(c.RefundsReserved), c.Available,
					ratString(s), ratString(po), ratString(rf), ratString(want)))
			}
			if want.Sign() < 0 || rat(c.Available).Sign() < 0 {
				overdrawn = append(overdrawn, fmt.Sprintf("%s/%s %s available %s", k.ns, b.Name, k.currency, c.Available))
			}
		}
		if len(b.Status.PayoutReservations) > 0 || len(b.Status.RefundReservations) > 0 {
			wrong = append(wrong, fmt.Sprintf("%s/%s keeps %d payout and %d refund reservations with every payout and refund terminal",
				b.Namespace, b.Name, len(b.Status.PayoutReservations), len(b.Status.RefundReservations)))
		}
	}
	for k := range settled {
		if !seen[k] {
			wrong = append(wrong, fmt.Sprintf("%s %s %s %s has settled payments but no balance", k.ns, k.merchant, k.env, k.currency))
		}
	}
	f.info("balances checked (merchant, environment, currency)", "%d", checked)
	f.zero("balances != settled net - payouts - refunds (or reservations left)", len(wrong), wrong)
	f.zero("balances overdrawn", len(overdrawn), overdrawn)
}

// orZeroText is a stored amount as written, "0" for the empty field (a zero left out).
func orZeroText(d paygatev1.Decimal) string {
	if d == "" {
		return "0"
	}
	return string(d)
}

func orZero(r *big.Rat) *big.Rat {
	if r == nil {
		return new(big.Rat)
	}
	return r
}

// checkEvents: one event per terminal payment, payout, refund and invoice outcome; every delivered event
// reached the receiver at least once; nothing abandoned; nothing unknown or forged received.
func (h *harness) checkEvents(w *world, f *figures) {
	bySource := map[string][]*paygatev1.WebhookDelivery{}
	byID := map[string]*paygatev1.WebhookDelivery{}
	var dupIDs []string
	phases := map[string]int{}
	for i := range w.deliveries {
		d := &w.deliveries[i]
		bySource[d.Spec.Source.UID] = append(bySource[d.Spec.Source.UID], d)
		if o := byID[d.Spec.EventID]; o != nil {
			dupIDs = append(dupIDs, fmt.Sprintf("%s %s of %s %s stored twice (deliveries %s and %s)",
				d.Spec.EventType, d.Spec.EventID, d.Spec.Source.Kind, d.Spec.Source.Name, o.UID, d.UID))
		}
		byID[d.Spec.EventID] = d
		phases[string(d.EffectiveStatus().Phase)]++
	}
	count := func(uid string, types ...string) int {
		n := 0
		for _, d := range bySource[uid] {
			for _, t := range types {
				if d.Spec.EventType == t {
					n++
				}
			}
		}
		return n
	}
	var wrong []string
	// oneOutcome: a terminal object has exactly one event of its kind, the one its outcome names.
	oneOutcome := func(kind, name, uid, phase string, failed bool, completed, failedType string) {
		want := completed
		if failed {
			want = failedType
		}
		if n := count(uid, completed, failedType); n != 1 || count(uid, want) != 1 {
			wrong = append(wrong, fmt.Sprintf("%s %s (%s) has %d %s events", kind, name, phase, n, kind))
		}
	}
	for i := range w.payments {
		p := &w.payments[i]
		if !paymentTerminal(p) || p.Labels[paygatev1.LabelInvoice] != "" {
			// An invoice's charge has no payment.* event: invoice.paid or invoice.payment_failed
			// carry it (docs/billing.md, Events), counted below.
			continue
		}
		oneOutcome("payment", p.Name, string(p.UID), string(p.Status.Phase), p.Status.Phase == paygatev1.PaymentFailed,
			paygate.EventPaymentCompleted, paygate.EventPaymentFailed)
	}
	for i := range w.payouts {
		if p := &w.payouts[i]; payoutTerminal(p) {
			oneOutcome("payout", p.Name, string(p.UID), string(p.Status.Phase), p.Status.Phase == paygatev1.PayoutFailed,
				paygate.EventPayoutCompleted, paygate.EventPayoutFailed)
		}
	}
	for i := range w.refunds {
		if r := &w.refunds[i]; r.Terminal() {
			oneOutcome("refund", r.Name, string(r.UID), string(r.Status.Phase), r.Status.Phase == paygatev1.RefundFailed,
				paygate.EventRefundCompleted, paygate.EventRefundFailed)
		}
	}
	failedCharges := map[string]int{}
	for i := range w.payments {
		p := &w.payments[i]
		if inv := p.Labels[paygatev1.LabelInvoice]; inv != "" && p.Status.Phase == paygatev1.PaymentFailed {
			failedCharges[p.Namespace+"/"+inv]++
		}
	}
	for i := range w.invoices {
		inv := &w.invoices[i]
		paidWant := 0
		if inv.Status.Phase == paygatev1.InvoicePaid {
			paidWant = 1
		}
		if n := count(string(inv.UID), paygate.EventInvoicePaid); n != paidWant {
			wrong = append(wrong, fmt.Sprintf("invoice %s (%s) has %d invoice.paid events", inv.Name, inv.Status.Phase, n))
		}
		if n, want := count(string(inv.UID), paygate.EventInvoicePaymentFailed), failedCharges[inv.Namespace+"/"+inv.Name]; n != want {
			wrong = append(wrong, fmt.Sprintf("invoice %s has %d invoice.payment_failed events for %d failed charges", inv.Name, n, want))
		}
	}
	rv := h.rcv.view()
	var notArrived, unknown []string
	dups := 0
	for i := range w.deliveries {
		d := &w.deliveries[i]
		if d.EffectiveStatus().Phase == paygatev1.DeliveryDelivered && rv.byID[d.Spec.EventID] == 0 {
			notArrived = append(notArrived, d.Spec.EventType+" "+d.Spec.EventID)
		}
	}
	received := 0
	for id, n := range rv.byID {
		received += n
		if n > 1 {
			dups += n - 1
		}
		if byID[id] == nil {
			unknown = append(unknown, rv.types[id]+" "+id)
		}
	}
	var abandoned []string
	refused := 0
	for i := range w.deliveries {
		d := &w.deliveries[i]
		switch {
		case d.Spec.URL == productionHookURL:
			refused++
			if d.EffectiveStatus().Phase == paygatev1.DeliveryDelivered {
				abandoned = append(abandoned, "production event delivered to loopback: "+d.Name)
			}
		case d.EffectiveStatus().Phase == paygatev1.DeliveryAbandoned:
			abandoned = append(abandoned, d.Spec.EventType+" "+d.Name)
		}
	}
	f.info("webhook events (deliveries by phase)", "%d: %s; %d deliveries received for %d event ids, %d of them repeats (receivers dedupe on the id)",
		len(w.deliveries), kindSummary(phases), received, len(rv.byID), dups)
	f.zero("terminal payments, payouts, refunds, invoices without exactly one event per outcome", len(wrong)+len(dupIDs), append(dupIDs, wrong...))
	f.zero("delivered events the receiver never got", len(notArrived), notArrived)
	f.info("production events (to a loopback URL: refused by the sender, by design)", "%d", refused)
	f.zero("sandbox events abandoned (receiver reachable but for its outages)", len(abandoned), abandoned)
	f.zero("received events with a bad signature or an unknown id", rv.badSig+len(unknown), unknown)
}

// ---- leaks ----

var (
	hex64    = regexp.MustCompile(`[0-9a-f]{64}`)
	digitRun = regexp.MustCompile(`[0-9]{9,}`)
)

// checkLeaks greps every child's log, every Kubernetes Event and every object's status for the
// merchants' API keys and secrets, webhook signing secrets, the upstream token and callback
// secret, the checkout key, every X-Signature the clients sent and every webhook signature the
// receiver got, and the customers' full phone numbers.
func (h *harness) checkLeaks(w *world, f *figures) {
	sigs := map[string]string{}
	for _, s := range h.sigs.values() {
		sigs[s] = "request signature"
	}
	for _, s := range h.rcv.view().signatures {
		sigs[s] = "webhook signature"
	}
	phones := map[string]bool{} // the 9 significant digits
	addPhone := func(p string) { phones[p[len(p)-9:]] = true }
	for _, p := range sandboxPhones {
		addPhone(p.phone)
	}
	for _, p := range livePhones {
		addPhone(p)
	}
	for _, p := range []string{subscriberPhone, dunningPhone} {
		addPhone(p)
	}
	for _, m := range h.merchants {
		addPhone(m.settlement)
	}

	var secretHits, phoneHits []string
	scanned := 0
	scan := func(where, text string) {
		scanned++
		for s, what := range h.secrets {
			if s != "" && strings.Contains(text, s) {
				secretHits = append(secretHits, what+" in "+where)
			}
		}
		for _, m := range hex64.FindAllString(text, -1) {
			if what, ok := sigs[m]; ok {
				secretHits = append(secretHits, what+" in "+where)
			}
		}
		for _, m := range digitRun.FindAllString(text, -1) {
			if (len(m) == 9 || (len(m) == 10 && m[0] == '0') || (len(m) == 12 && strings.HasPrefix(m, "255"))) && phones[m[len(m)-9:]] {
				phoneHits = append(phoneHits, "…"+m[len(m)-3:]+" in "+where)
			}
		}
	}
	logs, _ := filepath.Glob(filepath.Join(h.dir, "*.log"))
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			h.t.Errorf("reading %s: %v", l, err)
			continue
		}
		for i, line := range strings.Split(string(b), "\n") {
			if line != "" {
				scan(fmt.Sprintf("%s:%d", filepath.Base(l), i+1), line)
			}
		}
	}
	for _, e := range w.events {
		scan("Event "+e.Namespace+"/"+e.Name, e.Reason+" "+e.Message+" "+e.Action)
	}
	for _, e := range w.newEvents {
		scan("Event "+e.Namespace+"/"+e.Name, e.Reason+" "+e.Note+" "+e.Action)
	}
	status := func(kind, ns, name string, s any) {
		b, _ := json.Marshal(s)
		scan(kind+" "+ns+"/"+name+" status", string(b))
	}
	for _, o := range w.payments {
		status("Payment", o.Namespace, o.Name, o.Status)
	}
	for _, o := range w.payouts {
		status("Payout", o.Namespace, o.Name, o.Status)
	}
	for _, o := range w.refunds {
		status("Refund", o.Namespace, o.Name, o.Status)
	}
	for _, o := range w.invoices {
		status("Invoice", o.Namespace, o.Name, o.Status)
	}
	for _, o := range w.subscriptions {
		status("Subscription", o.Namespace, o.Name, o.Status)
	}
	for _, o := range w.deliveries {
		status("WebhookDelivery", o.Namespace, o.Name, o.Status)
	}
	for _, o := range w.balances {
		status("Balance", o.Namespace, o.Name, o.Status)
	}
	for _, o := range w.merchants {
		status("Merchant", o.Namespace, o.Name, o.Status)
	}
	for _, o := range w.gateways {
		status("Gateway", o.Namespace, o.Name, o.Status)
	}
	for _, o := range w.plans {
		status("BillingPlan", o.Namespace, o.Name, o.Status)
	}
	f.info("texts grepped for secrets and phone numbers", "%d log lines, Events and statuses; %d secrets, %d signatures, %d phone numbers",
		scanned, len(h.secrets), len(sigs), len(phones))
	f.zero("secrets, API keys or signatures in a log, Event or status", len(secretHits), secretHits)
	f.zero("full phone numbers in a log, Event or status", len(phoneHits), phoneHits)
}

// report prints the figures as a table (and writes it to figures.md in the run's directory, and
// to $CHAOS_FIGURES when set), and fails the test when a required figure is off.
func (h *harness) report(f figures) {
	var b strings.Builder
	b.WriteString("| figure | value | required |\n|---|---|---|\n")
	failed := 0
	for _, r := range f {
		req := r.required
		if r.ok != nil && !*r.ok {
			req += " **FAILED**"
			failed++
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.name, strings.ReplaceAll(r.value, "|", "/"), req)
	}
	table := b.String()
	h.t.Log("chaos figures:\n" + table)
	_ = os.WriteFile(filepath.Join(h.dir, "figures.md"), []byte(table), 0o600)
	if p := os.Getenv("CHAOS_FIGURES"); p != "" {
		_ = os.WriteFile(p, []byte(table), 0o644)
	}
	if failed > 0 {
		h.t.Errorf("%d required figures are off (logs in %s)", failed, h.dir)
	}
}
