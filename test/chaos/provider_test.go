// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/controllers"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/test/fakeupstream"
)

// The provider's own faults: operations it hides for a while after accepting them, rounds in
// which it forgets everything, and the operator who resolves the payouts left in doubt.

// liveNS is the namespace of the live merchants, whose payments and payouts go through the fake.
const liveNS = "chaos-live"

// hidingSettlement is live-a's settlement number: every disbursement to it is accepted, then
// answers "not found" to status queries for hidingFor (longer than --payout-ambiguous-after, so
// that an operator is asked), and settles after 500 ms, as success or, one in three, failed.
const (
	hidingSettlement = "+255713000201"
	hidingFor        = 38 * time.Second
)

// hidingPhones are the production numbers whose pushes the provider hides after accepting them
// (scripts in scriptUpstream).
var hidingPhones = map[string]bool{"+255713000110": true, "+255713000111": true, "+255713000112": true}

// hidingDisbursement is the scenario of the next disbursement to hidingSettlement.
func hidingDisbursement(fails bool) fakeupstream.Scenario {
	sc := fakeupstream.Scenario{SettleAfter: 500 * time.Millisecond, NotFoundFor: hidingFor}
	if fails {
		sc.Outcome, sc.Code = provider.StatusFailed, paygatev1.FailurePaymentDeclined
	}
	return sc
}

// providerFaults is what the fake provider's faults and the operator did.
type providerFaults struct {
	mu        sync.Mutex
	forgets   int             // rounds in which the provider forgot everything
	postponed int             // looks at the system that found a send in doubt (the round waited)
	skipped   int             // rounds given up: a send was always in doubt
	verdicts  []verdict       // written by the operator
	asked     map[string]bool // reference/sends already resolved
}

// verdict is one operator's resolution, as written on a payout or a refund.
type verdict struct {
	kind                 string // payout, refund
	ns, name, ref, value string
	truth                provider.Status // what the provider's books said ("" for no operation)
	written              time.Time       // the patch had been answered by then
}

// forgetRounds makes the provider forget every operation now and then, while the load runs. It
// forgets only at a moment no production send is in doubt: no payment or payout in progress
// whose attempt is recorded but not acknowledged (Initiating) while the provider holds an
// operation with its reference. Such an attempt is re-sent with the same reference when the
// provider answers "not found" (docs/payments.md, The attempt protocol, rule 4), and a provider
// that forgot it would perform it twice: that double is the provider's, not Paygate's. An acknowledged attempt must never be sent again, whatever the
// provider forgot; the checks count operations per reference. The fake stops answering while
// the harness looks (fakeupstream.ForgetIf), so no send slips in between.
func (h *harness) forgetRounds(ctx context.Context) {
	next := time.Duration(8000+h.intn(4000)) * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
		next = time.Duration(12000+h.intn(8000)) * time.Millisecond
		forgot := false
		for try := 0; try < 100 && ctx.Err() == nil && !forgot; try++ {
			// A first look without stopping the fake (it answers while the harness lists): most
			// looks find a send in doubt, and a fake stopped through every one of them would
			// answer nothing for most of a round. Only a moment that looks quiet is looked at
			// again with the fake stopped, which decides.
			if h.noSendInDoubt(h.fakeHolds) {
				forgot = h.fake.ForgetIf(h.noSendInDoubt)
			}
			if !forgot {
				h.faults.mu.Lock()
				h.faults.postponed++
				h.faults.mu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
		}
		h.faults.mu.Lock()
		if forgot {
			h.faults.forgets++
		} else if ctx.Err() == nil {
			h.faults.skipped++
		}
		h.faults.mu.Unlock()
		if forgot {
			h.t.Logf("chaos: %s the provider forgot every operation", time.Now().Format("15:04:05.000"))
		}
	}
}

// fakeHolds reports whether the fake holds an operation with this reference now (without
// stopping it).
func (h *harness) fakeHolds(reference string) bool {
	_, ok := h.fake.Operation(reference)
	return ok
}

// noSendInDoubt reads the live payments, payouts and refunds from the API server (not a cache)
// and says whether none has an attempt recorded but not acknowledged that the provider holds
// (holds).
func (h *harness) noSendInDoubt(holds func(reference string) bool) bool {
	ctx, cancel := context.WithTimeout(h.ctx, 2*time.Second)
	defer cancel()
	var pl paygatev1.PaymentList
	var pol paygatev1.PayoutList
	var rl paygatev1.RefundList
	if h.k8s.List(ctx, &pl, client.InNamespace(liveNS)) != nil || h.k8s.List(ctx, &pol, client.InNamespace(liveNS)) != nil ||
		h.k8s.List(ctx, &rl, client.InNamespace(liveNS)) != nil {
		return false
	}
	for i := range rl.Items {
		r := &rl.Items[i]
		if a := r.Status.Attempt; !r.Terminal() && a != nil && a.Phase == paygatev1.AttemptInitiating && holds(a.Reference) {
			return false
		}
	}
	for i := range pl.Items {
		p := &pl.Items[i]
		if a := p.LatestAttempt(); !p.Terminal() && a != nil && a.Phase == paygatev1.AttemptInitiating && holds(a.Reference) {
			return false
		}
	}
	for i := range pol.Items {
		p := &pol.Items[i]
		if a := p.Status.Attempt; !p.Terminal() && a != nil && a.Phase == paygatev1.AttemptInitiating && holds(a.Reference) {
			return false
		}
	}
	return true
}

// operate is the operator: every second it looks for production payouts and refunds with
// AmbiguousTooLong=True, asks the provider's books (the fake's truth, forgotten operations
// included) about the operation's reference, and annotates the object
// paygate.dev/resolve-payout (or resolve-refund) =success or failed accordingly, naming the send
// (/<sends>) when the operation was sent more than once. An operation the provider never
// performed is resolved failed; one still unsettled waits.
func (h *harness) operate(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		var pol paygatev1.PayoutList
		if err := h.k8s.List(ctx, &pol, client.InNamespace(liveNS)); err != nil {
			continue
		}
		for i := range pol.Items {
			p := &pol.Items[i]
			a := p.Status.Attempt
			if p.Terminal() || a == nil || !meta.IsStatusConditionTrue(p.Status.Conditions, paygatev1.ConditionAmbiguousTooLong) {
				continue
			}
			h.writeVerdict(ctx, p, "payout", a.Reference, a.Sends, paygatev1.AnnotationResolvePayout)
		}
		var rl paygatev1.RefundList
		if err := h.k8s.List(ctx, &rl, client.InNamespace(liveNS)); err == nil {
			h.resolveRefunds(ctx, rl.Items)
		}
	}
}

// writeVerdict writes the operator's verdict about the operation ref (sent sends times) on obj,
// a payout or a refund (kind), under annotation, once per reference and send.
func (h *harness) writeVerdict(ctx context.Context, obj client.Object, kind, ref string, sends int32, annotation string) {
	sends = max(sends, 1)
	key := fmt.Sprintf("%s/%d", ref, sends)
	h.faults.mu.Lock()
	done := h.faults.asked[key]
	h.faults.mu.Unlock()
	if done {
		return
	}
	value, truth := "failed", provider.Status("")
	if res, ok := h.fake.Truth(ref); ok {
		truth = res.Status
		switch res.Status {
		case provider.StatusSuccess:
			value = "success"
		case provider.StatusFailed:
		default:
			return // the provider does not know yet either: ask again later
		}
	}
	if sends > 1 {
		value += fmt.Sprintf("/%d", sends)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annotation: value}}})
	if err := h.k8s.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return
	}
	h.faults.mu.Lock()
	h.faults.asked[key] = true
	h.faults.verdicts = append(h.faults.verdicts, verdict{kind: kind, ns: obj.GetNamespace(), name: obj.GetName(), ref: ref, value: value, truth: truth, written: time.Now()})
	h.faults.mu.Unlock()
	h.t.Logf("chaos: %s the operator resolved %s %s: %s", time.Now().Format("15:04:05.000"), kind, obj.GetName(), value)
}

// checkProvider checks what the provider's faults and the operator's verdicts must leave:
// every payout resolved by a verdict has no disbursement the provider received after the
// verdict was written, and every failed payment whose attempt the provider settled has
// LateSettlement=True (or its attempt is still watched).
func (h *harness) checkProvider(w *world, f *figures, now time.Time) {
	h.faults.mu.Lock()
	forgets, postponed, skipped := h.faults.forgets, h.faults.postponed, h.faults.skipped
	verdicts := append([]verdict(nil), h.faults.verdicts...)
	h.faults.mu.Unlock()
	f.info("provider forgot every operation (Forget rounds, not kills)", "%d (%d looks postponed by a send in doubt, %d rounds given up)", forgets, postponed, skipped)

	forgot, hidden := map[string]int{}, 0
	for i := range w.payments {
		p := &w.payments[i]
		if c := meta.FindStatusCondition(p.Status.Conditions, paygatev1.ConditionProviderForgotAttempt); c != nil {
			forgot["payments"]++
		}
		if p.Spec.Environment == paygatev1.EnvironmentProduction {
			if a := p.LatestAttempt(); a != nil && hidingPhones[string(p.Spec.Customer.Phone)] {
				hidden++
			}
		}
	}
	for i := range w.payouts {
		if meta.FindStatusCondition(w.payouts[i].Status.Conditions, paygatev1.ConditionProviderForgotAttempt) != nil {
			forgot["payouts"]++
		}
	}
	for i := range w.refunds {
		if meta.FindStatusCondition(w.refunds[i].Status.Conditions, paygatev1.ConditionProviderForgotAttempt) != nil {
			forgot["refunds"]++
		}
	}
	f.info("objects the provider answered \"not found\" after accepting (ProviderForgotAttempt raised)", "%s; %d payments to numbers hidden after accepting", orNone(kindSummary(forgot)), hidden)

	// Verdicts.
	payouts := map[string]*paygatev1.Payout{}
	for i := range w.payouts {
		payouts[w.payouts[i].Namespace+"/"+w.payouts[i].Name] = &w.payouts[i]
	}
	refunds := map[string]*paygatev1.Refund{}
	for i := range w.refunds {
		refunds[w.refunds[i].Namespace+"/"+w.refunds[i].Name] = &w.refunds[i]
	}
	// A refund's verdict leaves its RefundResolved event (its condition and attempt look like a
	// late provider answer's once the watch hears from the provider).
	refundResolved := map[string]bool{}
	for _, e := range w.newEvents {
		if e.Reason == controllers.ReasonRefundResolved && e.Regarding.Kind == "Refund" {
			refundResolved[e.Regarding.Namespace+"/"+e.Regarding.Name] = true
		}
	}
	for _, e := range w.events {
		if e.Reason == controllers.ReasonRefundResolved && e.InvolvedObject.Kind == "Refund" {
			refundResolved[e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name] = true
		}
	}
	byValue := map[string]int{}
	var late, wrong []string
	resolved, resolvedRefunds := 0, 0
	for _, v := range verdicts {
		byValue[v.kind+" "+strings.SplitN(v.value, "/", 2)[0]+map[bool]string{true: " (naming the send)", false: ""}[strings.Contains(v.value, "/")]]++
		for _, at := range h.fake.PostTimes(v.ref) {
			if at.After(v.written) {
				late = append(late, fmt.Sprintf("%s sent at %s, verdict %s written by %s", v.ref, at.Format("15:04:05.000"), v.value, v.written.Format("15:04:05.000")))
			}
		}
		if v.kind == "refund" {
			rf := refunds[v.ns+"/"+v.name]
			if rf == nil {
				wrong = append(wrong, "refund "+v.name+" resolved by a verdict is not stored")
				continue
			}
			if refundResolved[v.ns+"/"+v.name] {
				resolvedRefunds++
			}
			if want := strings.HasPrefix(v.value, "success"); rf.Terminal() && (rf.Status.Phase == paygatev1.RefundSuccess) != want {
				wrong = append(wrong, fmt.Sprintf("refund %s is %s after the verdict %s", rf.Name, rf.Phase(), v.value))
			}
			continue
		}
		p := payouts[v.ns+"/"+v.name]
		if p == nil {
			wrong = append(wrong, "payout "+v.name+" resolved by a verdict is not stored")
			continue
		}
		if c := meta.FindStatusCondition(p.Status.Conditions, paygatev1.ConditionAmbiguousTooLong); c != nil && c.Reason == controllers.ReasonPayoutResolved {
			resolved++
		}
		if want := strings.HasPrefix(v.value, "success"); payoutTerminal(p) && (p.Status.Phase == paygatev1.PayoutSuccess) != want {
			wrong = append(wrong, fmt.Sprintf("payout %s is %s after the verdict %s", p.Name, p.Status.Phase, v.value))
		}
	}
	f.info("operator verdicts written (payouts and refunds AmbiguousTooLong, checked against the provider's books)",
		"%d: %s; %d payouts and %d refunds resolved by a verdict (the others by the provider's answer first)",
		len(verdicts), orNone(kindSummary(byValue)), resolved, resolvedRefunds)
	f.zero("payouts and refunds whose final phase contradicts the operator's verdict", len(wrong), wrong)
	f.zero("disbursements and refunds the provider received after a verdict was written on them", len(late), late)

	// Late settlements.
	var unreported []string
	raised, watched := 0, 0
	for i := range w.payments {
		p := &w.payments[i]
		if p.Spec.Environment != paygatev1.EnvironmentProduction || p.Status.Phase != paygatev1.PaymentFailed {
			continue
		}
		a := p.LatestAttempt()
		if a == nil {
			continue
		}
		res, ok := h.fake.Truth(a.Reference)
		if !ok || res.Status != provider.StatusSuccess {
			continue
		}
		switch {
		case meta.IsStatusConditionTrue(p.Status.Conditions, paygatev1.ConditionLateSettlement):
			raised++
		case p.Watched(now):
			watched++
		default:
			unreported = append(unreported, fmt.Sprintf("payment %s failed %s, the provider settled %s (attempt %s, watch until %v)",
				p.Name, p.Status.Reason, a.Reference, a.Phase, a.WatchUntil))
		}
	}
	f.info("failed payments the provider settled: LateSettlement raised / attempt still watched", "%d / %d", raised, watched)
	f.zero("failed payments the provider settled, without LateSettlement and no longer watched", len(unreported), unreported)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
