// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/names"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/test/fakeupstream"
)

// Refunds (docs/refunds.md) in the run: flows that collect a payment, wait until it succeeded on
// both apiservers, then ask for refunds of it, full or in parts, some of them racing for the
// payment's amount; most through the live merchants' upstream gateway (the fake provider), a
// quarter in sandbox. The checks count what the provider received per refund reference.

// annotationIdempotencyKey is the annotation in which the apiserver records, on what it creates,
// the IdempotencyKey object that the request's Idempotency-Key claimed (the apiserver's own
// constant): one refund per claim.
const annotationIdempotencyKey = "paygate.dev/idempotency-key"

// refundDue is how long after its creation a refund may stay non-terminal: a refund hidden by
// the provider waits --payout-ambiguous-after (30 s) for the operator.
const refundDue = 120 * time.Second

// refundPhones are the production numbers the refund flows collect from (scripted in
// scriptUpstream for the payment; scriptRefunds scripts the refund back to each).
var refundPhones = []string{
	"+255713000101", // refund: success at once, callback
	"+255713000102", // refund: success after 1 s, ambiguous once, callback twice
	"+255713000104", // refund: the provider fails it after 300 ms
	"+255713000106", // refund: the connection drops on the POST, then "not found" once: sent again
	"+255713000109", // refund: accepted, then "not found" for 38 s: the operator resolves it
}

// hidingRefundPhone is the number whose refunds the provider hides past --payout-ambiguous-after.
const hidingRefundPhone = "+255713000109"

// scriptRefunds scripts the refunds to the production numbers of refundPhones.
func (h *harness) scriptRefunds() {
	f := h.fake
	f.ScriptRefunds("+255713000101", fakeupstream.Scenario{Callback: true})
	f.ScriptRefunds("+255713000102", fakeupstream.Scenario{SettleAfter: time.Second, AmbiguousFor: 1, Callback: true, DuplicateCallbacks: 1})
	f.ScriptRefunds("+255713000104", fakeupstream.Scenario{SettleAfter: 300 * time.Millisecond, Outcome: provider.StatusFailed, Code: paygatev1.FailurePaymentDeclined})
	f.ScriptRefunds("+255713000106", fakeupstream.Scenario{DropPostConnection: true, NotFoundQueries: 1, SettleAfter: 500 * time.Millisecond})
	f.ScriptRefunds(hidingRefundPhone, fakeupstream.Scenario{SettleAfter: 500 * time.Millisecond, NotFoundFor: hidingFor})
}

// The shapes of a refund flow.
const (
	refundFull     = iota // one request without an amount: all of it
	refundParts           // a part, then the rest (sometimes once the payment was archived)
	refundRace            // three concurrent requests of 60 % each: one fits
	refundRaceFull        // two concurrent requests for all of it and one of 30 %
	refundShapes
)

var refundShapeNames = []string{"full", "in parts", "race 3 x 60 %", "race full + full + 30 %"}

// refundCounters count the refund flows, for the table.
type refundCounters struct {
	flows       [refundShapes]atomic.Int64
	unsettled   atomic.Int64 // the payment did not succeed in time (or was refused): no refund asked
	archivedAsk atomic.Int64 // a later part asked once the payment had left etcd (or after its retention)
	wg          sync.WaitGroup
}

// runRefunds starts a refund flow every 3 to 7 s while ctx runs, at most three at a time.
func (h *harness) runRefunds(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, 3)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(3000+h.intn(4000)) * time.Millisecond):
		}
		select {
		case slots <- struct{}{}:
		default:
			continue
		}
		m := h.merchants[1+h.intn(len(h.merchants)-1)]
		if h.intn(4) == 0 {
			m = h.sandbox
		}
		shape := h.intn(refundShapes)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			h.refundFlow(context.WithoutCancel(ctx), m, shape)
		}()
	}
}

// goRefundFlow runs a flow outside the load (a failpoint round's nudge); the run waits for it
// before it converges.
func (h *harness) goRefundFlow(m *merchant, shape int) {
	h.refundLoad.wg.Add(1)
	go func() {
		defer h.refundLoad.wg.Done()
		h.refundFlow(h.ctx, m, shape)
	}()
}

// refundFlow collects a payment from m's customer, waits until every apiserver shows it
// successful, then asks for refunds of it in the given shape.
func (h *harness) refundFlow(ctx context.Context, m *merchant, shape int) {
	phone, amount := "+255712400100", 1000+100*h.intn(400)
	if m.env == paygatev1.EnvironmentProduction {
		phone, amount = refundPhones[h.intn(len(refundPhones))], 2000+500*h.intn(40)
	}
	r := h.createPayment(ctx, m, phone, amount)
	if r.status != http.StatusOK || !h.waitPaymentSucceeded(ctx, m, r.id) {
		h.refundLoad.unsettled.Add(1)
		return
	}
	h.refundLoad.flows[shape].Add(1)
	trx := r.id
	part := func(percent int) string { return fmt.Sprint(amount * percent / 100) }
	switch shape {
	case refundFull:
		h.createRefund(ctx, m, "refund", trx, "")
	case refundParts:
		h.createRefund(ctx, m, "refund", trx, part(10+10*h.intn(5)))
		if h.intn(3) == 0 {
			// The rest once the payment is old enough to have left etcd: the apiserver reads it
			// from the archive.
			time.Sleep(h.arch.after + 2*archiveInterval + time.Duration(h.intn(3000))*time.Millisecond)
			h.refundLoad.archivedAsk.Add(1)
		}
		h.createRefund(ctx, m, "refund", trx, "")
	case refundRace, refundRaceFull:
		amounts := []string{part(60), part(60), part(60)}
		if shape == refundRaceFull {
			amounts = []string{"", "", part(30)}
		}
		var wg sync.WaitGroup
		for _, a := range amounts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h.createRefund(ctx, m, "refund race", trx, a)
			}()
		}
		wg.Wait()
	}
}

// waitPaymentSucceeded polls the payment on every apiserver until each shows it successful (a
// refund is refused while its apiserver's cache does not show the payment successful yet), for
// up to 60 s; false when it failed, or did not succeed in time. These reads are the harness's
// own look, not load: they are not in the ledger.
func (h *harness) waitPaymentSucceeded(ctx context.Context, m *merchant, trx string) bool {
	deadline := time.Now().Add(60 * time.Second)
	for _, c := range m.clients {
		for {
			rctx, cancel := context.WithTimeout(ctx, 4*time.Second)
			p, err := c.GetPayment(rctx, trx)
			cancel()
			switch {
			case err == nil && p.Status == string(paygatev1.PaymentSuccess):
			case err == nil && p.Status == string(paygatev1.PaymentFailed), time.Now().After(deadline):
				return false
			default:
				time.Sleep(300 * time.Millisecond)
				continue
			}
			break
		}
	}
	return true
}

// createRefund asks for a refund of trx (amount "" for all that is left) with a fresh
// Idempotency-Key; kind is "refund", or "refund race" for a request racing others of the same
// payment (it may be refused for what is left, or fail REFUND_EXCEEDS_PAYMENT).
func (h *harness) createRefund(ctx context.Context, m *merchant, kind, trx, amount string) *request {
	key := h.nextRef("rf")
	return h.send(ctx, m, kind, key, h.intn(8) == 0, func(ctx context.Context, c *paygate.Client) (string, error) {
		out, err := c.CreateRefund(ctx, trx, paygate.RefundRequest{Amount: json.Number(amount), Reason: "chaos " + kind}, key)
		if err != nil {
			return "", err
		}
		return out.ID, nil
	})
}

// refundAsks maps the IdempotencyKey object each refund request claimed (namespace/name, as the
// apiserver names it: names.PurposeIdempotency over the merchant's UID, the environment and the
// key) to the request, so that a refund can be traced to the request that made it.
func (h *harness) refundAsks(reqs []*request) map[string]*request {
	out := map[string]*request{}
	for _, r := range reqs {
		if !strings.HasPrefix(r.kind, "refund") {
			continue
		}
		for _, m := range h.merchants {
			if m.name == r.merchant && m.env == r.env {
				out[m.ns+"/idem-"+names.Derive(names.PurposeIdempotency, string(m.obj.UID), string(m.env), r.key)] = r
			}
		}
	}
	return out
}

// refundRefusalExpected reports whether a refusal of a refund request is one the load may get:
// the balance does not cover it, or (for a request racing others of its payment) the apiserver
// saw that nothing, or less, is left.
func refundRefusalExpected(r *request) bool {
	switch {
	case !strings.HasPrefix(r.kind, "refund"):
		return false
	case r.label == "INSUFFICIENT_BALANCE":
		return true
	case r.kind == "refund race" && r.status == http.StatusUnprocessableEntity && r.label == "Validation failed":
		return strings.Contains(r.detail, "left to refund")
	}
	return false
}

// checkRefunds: every refund the API accepted ended; the provider performed each refund at most
// once (forgotten operations included) and every succeeded one exactly once; a refund the
// ledger never reserved (REFUND_EXCEEDS_PAYMENT, INSUFFICIENT_BALANCE) never reached the
// provider; every outcome agrees with the provider's books; no payment's successful refunds
// exceed its amount, and every payment record says what was refunded.
func (h *harness) checkRefunds(w *world, f *figures) {
	payments := map[string]*paygatev1.Payment{}
	for i := range w.payments {
		payments[w.payments[i].Namespace+"/"+w.payments[i].Name] = &w.payments[i]
	}
	phase := map[string]int{}
	var notTerminal, double, notOnce, unsent, resolvedUnsent, unreservedSent, mismatch, refusedByProvider, wrongAmount []string
	known, resent, reachedProvider := 0, 0, 0
	refunded, capOf := map[string]*big.Rat{}, map[string]*big.Rat{}
	merchantOf := map[string]*merchant{}
	for i := range w.refunds {
		rf := &w.refunds[i]
		phase[string(rf.Spec.Environment)+" "+string(rf.Phase())+reasonSuffix(rf.Status.Reason)]++
		if !rf.Terminal() {
			notTerminal = append(notTerminal, fmt.Sprintf("refund %s/%s %s (created %s)", rf.Namespace, rf.Name, rf.Phase(), rf.Spec.CreatedAt.Format(time.TimeOnly)))
		}
		k := rf.Namespace + "/" + rf.Spec.Payment.TrxID
		if capOf[k] == nil {
			capOf[k], refunded[k] = rat(rf.Spec.Payment.Amount), new(big.Rat)
			for _, m := range h.merchants {
				if m.ns == rf.Namespace && m.name == rf.Spec.MerchantRef.Name && m.env == rf.Spec.Environment {
					merchantOf[k] = m
				}
			}
		}
		if p := payments[k]; p != nil && rat(p.Spec.Amount).Cmp(capOf[k]) != 0 {
			wrongAmount = append(wrongAmount, fmt.Sprintf("refund %s names payment %s of %s, stored %s", rf.Name, p.Name, rf.Spec.Payment.Amount, p.Spec.Amount))
		}
		if rf.Status.Phase == paygatev1.RefundSuccess {
			refunded[k].Add(refunded[k], rat(rf.Spec.Amount))
		}
		ref := rf.RefundReference()
		posts := 0
		if rf.Spec.Environment == paygatev1.EnvironmentProduction {
			posts = h.fake.RefundsFor(ref)
		}
		if rf.Status.ReservedAt == nil && (rf.Status.Attempt != nil || posts > 0 || rf.Status.Phase == paygatev1.RefundSuccess) {
			unreservedSent = append(unreservedSent, fmt.Sprintf("refund %s %s %s never reserved: attempt %v, %d requests at the provider",
				rf.Name, rf.Phase(), rf.Status.Reason, rf.Status.Attempt != nil, posts))
		}
		if rf.Spec.Environment != paygatev1.EnvironmentProduction {
			continue
		}
		if posts > 0 {
			reachedProvider++
		}
		known += posts
		resent += max(0, posts-1)
		ops := h.fake.OperationsFor(ref)
		switch {
		case ops > 1:
			double = append(double, fmt.Sprintf("%s refunded %d times (%d requests)", ref, ops, posts))
		case rf.Status.Phase == paygatev1.RefundSuccess && ops != 1:
			notOnce = append(notOnce, fmt.Sprintf("refund %s succeeded, the provider performed %s %d times", rf.Name, ref, ops))
		case rf.Status.Attempt != nil && posts == 0 && rf.Status.Phase == paygatev1.RefundFailed && rf.Status.Reason == string(paygatev1.RefundResolvedFailed):
			// Recorded by a manager that died before sending, then never confirmed "not found"
			// within --payout-ambiguous-after (the provider out of reach): the operator, asked,
			// found no such refund at the provider and resolved it failed. No money moved.
			resolvedUnsent = append(resolvedUnsent, ref)
		case rf.Status.Attempt != nil && posts == 0:
			unsent = append(unsent, fmt.Sprintf("%s (%s %s)", ref, rf.Phase(), rf.Status.Reason))
		}
		if rf.Status.Attempt != nil && rf.Status.Reason == string(paygatev1.RefundExceedsPayment) {
			refusedByProvider = append(refusedByProvider, fmt.Sprintf("refund %s of %s (%s of %s)", rf.Name, rf.Spec.Payment.TrxID, rf.Spec.Amount, rf.Spec.Payment.Amount))
		}
		if res, ok := h.fake.Truth(ref); ok && res.Status != provider.StatusPending && rf.Terminal() {
			if (res.Status == provider.StatusSuccess) != (rf.Status.Phase == paygatev1.RefundSuccess) {
				mismatch = append(mismatch, fmt.Sprintf("refund %s is %s, the provider says %s", rf.Name, rf.Phase(), res.Status))
			}
		}
	}
	var over []string
	full, partly := 0, 0
	for k, capAmount := range capOf {
		switch c := refunded[k].Cmp(capAmount); {
		case c > 0:
			over = append(over, fmt.Sprintf("payment %s of %s refunded %s", k, ratString(capAmount), ratString(refunded[k])))
		case c == 0:
			full++
		case refunded[k].Sign() > 0:
			partly++
		}
	}
	records, wrongRecords := h.checkRefundRecords(capOf, refunded, merchantOf)
	events := map[string]int{}
	for i := range w.deliveries {
		if d := &w.deliveries[i]; d.Spec.Source.Kind == "Refund" {
			where := "in etcd"
			if w.archive != nil && !w.archive.liveUIDs[d.UID] {
				where = "archived"
			}
			events[where]++
		}
	}

	var byKind []string
	asked := map[string]int{}
	traced, asks := 0, h.refundAsks(h.ledger.all())
	for i := range w.refunds {
		if r := asks[w.refunds[i].Namespace+"/"+w.refunds[i].Annotations[annotationIdempotencyKey]]; r != nil && r.id == w.refunds[i].Name {
			traced++
		}
	}
	for _, r := range h.ledger.all() {
		if strings.HasPrefix(r.kind, "refund") {
			switch {
			case r.status == http.StatusOK:
				asked[r.kind+" accepted"]++
			case r.definitive:
				asked[r.kind+" refused "+r.label]++
			}
		}
	}
	for i, n := range refundShapeNames {
		byKind = append(byKind, fmt.Sprintf("%s %d", n, h.refundLoad.flows[i].Load()))
	}
	f.info("refund flows (payments collected, then refunded)", "%s; %d later parts asked past the payment's retention; %d payments not settled in time (no refund asked)",
		strings.Join(byKind, ", "), h.refundLoad.archivedAsk.Load(), h.refundLoad.unsettled.Load())
	f.info("refund requests by answer", "%s; %d refunds traced to the request that named them by its Idempotency-Key", orNone(kindSummary(asked)), traced)
	f.info("refunds by environment and outcome", "%d: %s; their webhook events %s", len(w.refunds), orNone(kindSummary(phase)), orNone(kindSummary(events)))
	f.info("payments refunded: in full / in part (by successful refunds)", "%d / %d of %d payments with refunds", full, partly, len(capOf))
	f.zero("refunds accepted and not terminal at the end", len(notTerminal), notTerminal)
	f.info("production refunds that reached the provider", "%d (%d refund requests received)", reachedProvider, h.fake.Refunds())
	f.zero("provider refund operations per refund reference above 1 (double refunds)", len(double), double)
	f.info("refunds sent again with the same reference (de-duplicated by the provider)", "%d", resent)
	f.zero("succeeded refunds the provider did not perform exactly once", len(notOnce), notOnce)
	f.info("refunds recorded and never sent, resolved failed by the operator (the provider never had them)", "%d", len(resolvedUnsent))
	f.zero("refund references recorded and never sent (other than those)", len(unsent), unsent)
	f.zero("refunds never reserved (REFUND_EXCEEDS_PAYMENT, INSUFFICIENT_BALANCE) that reached the provider or succeeded", len(unreservedSent), unreservedSent)
	f.zero("refund requests with a reference no refund recorded", h.fake.Refunds()-known, nil)
	f.zero("refunds whose outcome differs from the provider's", len(mismatch), mismatch)
	f.zero("refunds the provider refused as exceeding their payment", len(refusedByProvider), refusedByProvider)
	f.zero("payments whose successful refunds exceed their amount", len(over)+len(wrongAmount), append(over, wrongAmount...))
	f.zero(fmt.Sprintf("payment records whose amount_refunded differs from their successful refunds (of %d read)", records), len(wrongRecords), wrongRecords)
}

// checkRefundRecords reads every refunded payment's record through the API (live or archived)
// and compares its amount_refunded with the sum of its successful refunds.
func (h *harness) checkRefundRecords(capOf, refunded map[string]*big.Rat, merchantOf map[string]*merchant) (int, []string) {
	var wrong []string
	read := 0
	for _, k := range sortedKeys(capOf) {
		m := merchantOf[k]
		if m == nil {
			continue
		}
		trx := k[strings.LastIndex(k, "/")+1:]
		got := ""
		if _, ok := h.read(h.ctx, m, func(ctx context.Context, c *paygate.Client) (string, error) {
			p, err := c.GetPayment(ctx, trx)
			if err == nil {
				got = string(p.AmountRefunded)
			}
			return trx, err
		}); !ok {
			wrong = append(wrong, "payment "+k+" could not be read")
			continue
		}
		read++
		if g, ok := new(big.Rat).SetString(got); !ok || g.Cmp(refunded[k]) != 0 {
			wrong = append(wrong, fmt.Sprintf("payment %s: amount_refunded %q, its successful refunds %s", k, got, ratString(refunded[k])))
		}
	}
	return read, wrong
}

// resolveRefunds resolves, as the operator, the production refunds with AmbiguousTooLong=True
// (the payouts' rule: the provider's books decide; an operation it never performed is failed;
// one it has not settled waits).
func (h *harness) resolveRefunds(ctx context.Context, refunds []paygatev1.Refund) {
	for i := range refunds {
		rf := &refunds[i]
		a := rf.Status.Attempt
		if rf.Terminal() || a == nil || !meta.IsStatusConditionTrue(rf.Status.Conditions, paygatev1.ConditionAmbiguousTooLong) {
			continue
		}
		h.writeVerdict(ctx, rf, "refund", a.Reference, a.Sends, paygatev1.AnnotationResolveRefund)
	}
}
