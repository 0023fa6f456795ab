// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/test/fakeupstream"
)

// The refund checks must be able to fail: each fault below, made in a world that otherwise
// passes, fails its figure (and only figures about it). No control plane: a fake provider and a
// world built by hand.

// refundWorld is one payment of 10,000 TZS of live-a with a successful refund of 4,000 that the
// provider performed once, a refund of 7,000 the ledger failed REFUND_EXCEEDS_PAYMENT (never
// sent), and the balance that goes with them.
func refundWorld() *world {
	now := time.Now()
	refund := func(name, amount string, phase paygatev1.RefundPhase, reason string, reserved bool) paygatev1.Refund {
		rf := paygatev1.Refund{
			ObjectMeta: metav1.ObjectMeta{Namespace: liveNS, Name: name, UID: types.UID("uid-" + name),
				Annotations: map[string]string{annotationIdempotencyKey: "key-" + name}},
			Spec: paygatev1.RefundSpec{MerchantRef: paygatev1.MerchantReference{Name: "live-a"}, Environment: paygatev1.EnvironmentProduction,
				Payment: paygatev1.RefundedPayment{TrxID: "trx-aaaaaaaaaaaaaaaaaaaaaaaa", Amount: "10000.00", AttemptReference: "chaos-live.trx-aaaaaaaaaaaaaaaaaaaaaaaa.1"},
				Amount:  paygatev1.Decimal(amount), Currency: "TZS", Destination: "+255713000101", Gateway: "tzs-upstream",
				CreatedAt: metav1.NewMicroTime(now.Add(-time.Minute))},
			Status: paygatev1.RefundStatus{Phase: phase, Reason: reason},
		}
		if reserved {
			rf.Status.ReservedAt = &metav1.MicroTime{Time: now.Add(-time.Minute)}
			rf.Status.Attempt = &paygatev1.DisbursementAttempt{Reference: rf.RefundReference(), Phase: paygatev1.AttemptSucceeded, Sends: 1}
		}
		return rf
	}
	return &world{
		payments: []paygatev1.Payment{{
			ObjectMeta: metav1.ObjectMeta{Namespace: liveNS, Name: "trx-aaaaaaaaaaaaaaaaaaaaaaaa", UID: "uid-trx"},
			Spec: paygatev1.PaymentSpec{MerchantRef: paygatev1.MerchantReference{Name: "live-a"}, Environment: paygatev1.EnvironmentProduction,
				Amount: "10000.00", Currency: "TZS"},
			Status: paygatev1.PaymentStatus{Phase: paygatev1.PaymentSuccess, NetAmount: "9750.00"},
		}},
		refunds: []paygatev1.Refund{
			refund("rf-ok", "4000.00", paygatev1.RefundSuccess, "", true),
			refund("rf-late", "7000.00", paygatev1.RefundFailed, string(paygatev1.RefundExceedsPayment), false),
		},
		deliveries: []paygatev1.WebhookDelivery{
			refundEvent("rf-ok", paygate.EventRefundCompleted), refundEvent("rf-late", paygate.EventRefundFailed),
			{ObjectMeta: metav1.ObjectMeta{Namespace: liveNS, Name: "whd-trx", UID: "uid-whd-trx"},
				Spec: paygatev1.WebhookDeliverySpec{EventID: "evt_trx", EventType: paygate.EventPaymentCompleted, URL: productionHookURL,
					Source: paygatev1.EventSource{Kind: "Payment", Name: "trx-aaaaaaaaaaaaaaaaaaaaaaaa", UID: "uid-trx"}},
				Status: paygatev1.WebhookDeliveryStatus{Phase: paygatev1.DeliveryAbandoned}},
		},
		balances: []paygatev1.Balance{{
			ObjectMeta: metav1.ObjectMeta{Namespace: liveNS, Name: "live-a-production"},
			Spec:       paygatev1.BalanceSpec{MerchantRef: paygatev1.MerchantReference{Name: "live-a"}, Environment: paygatev1.EnvironmentProduction},
			Status: paygatev1.BalanceStatus{Currencies: []paygatev1.CurrencyBalance{{Currency: "TZS", Settled: "9750.00", PaidOut: "0",
				Reserved: "0", Refunded: "4000.00", Available: "5750.00"}}},
		}},
	}
}

// refundEvent is the delivery of a refund's event to the production URL (refused by the sender).
func refundEvent(name, eventType string) paygatev1.WebhookDelivery {
	return paygatev1.WebhookDelivery{
		ObjectMeta: metav1.ObjectMeta{Namespace: liveNS, Name: "whd-" + name + "-" + eventType, UID: types.UID("uid-whd-" + name + eventType)},
		Spec: paygatev1.WebhookDeliverySpec{EventID: "evt_" + name + "_" + eventType, EventType: eventType, URL: productionHookURL,
			Source: paygatev1.EventSource{Kind: "Refund", Name: name, UID: "uid-" + name}},
		Status: paygatev1.WebhookDeliveryStatus{Phase: paygatev1.DeliveryAbandoned},
	}
}

// addRefund adds rf to w, with the event of its outcome when it ended.
func addRefund(w *world, rf paygatev1.Refund) {
	w.refunds = append(w.refunds, rf)
	switch rf.Status.Phase {
	case paygatev1.RefundSuccess:
		w.deliveries = append(w.deliveries, refundEvent(rf.Name, paygate.EventRefundCompleted))
	case paygatev1.RefundFailed:
		w.deliveries = append(w.deliveries, refundEvent(rf.Name, paygate.EventRefundFailed))
	}
}

// postRefund sends the fake provider a refund with this reference, as Paygate's upstream
// provider would.
func postRefund(t *testing.T, f *fakeupstream.Server, reference, amount string) {
	t.Helper()
	postRefundTo(t, f, reference, "+255713000101", amount)
}

func postRefundTo(t *testing.T, f *fakeupstream.Server, reference, msisdn, amount string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"reference": reference, "collection_reference": "chaos-live.trx-aaaaaaaaaaaaaaaaaaaaaaaa.1",
		"msisdn": msisdn, "amount": amount, "currency": "TZS", "gateway": "tzs-upstream"})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, f.URL()+"/v1/refunds", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// failedFigures runs the refund and balance checks on w and returns the figures that failed.
func failedFigures(t *testing.T, h *harness, w *world) map[string]string {
	t.Helper()
	var f figures
	h.checkRefunds(w, &f)
	h.checkBalances(w, &f)
	h.checkEvents(w, &f)
	out := map[string]string{}
	for _, r := range f {
		if r.ok != nil && !*r.ok {
			out[r.name] = r.value
		}
	}
	return out
}

func TestRefundChecksFail(t *testing.T) {
	const (
		double     = "provider refund operations per refund reference above 1 (double refunds)"
		notOnce    = "succeeded refunds the provider did not perform exactly once"
		unsent     = "refund references recorded and never sent (other than those)"
		unreserved = "refunds never reserved (REFUND_EXCEEDS_PAYMENT, INSUFFICIENT_BALANCE) that reached the provider or succeeded"
		unknown    = "refund requests with a reference no refund recorded"
		mismatch   = "refunds whose outcome differs from the provider's"
		refused    = "refunds the provider refused as exceeding their payment"
		overCap    = "payments whose successful refunds exceed their amount"
		open       = "refunds accepted and not terminal at the end"
		balance    = "balances != settled net - payouts - refunds (or reservations left)"
		events     = "terminal payments, payouts, refunds, invoices without exactly one event per outcome"
	)
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, f *fakeupstream.Server, w *world)
		want  []string
	}{
		{"none", func(*testing.T, *fakeupstream.Server, *world) {}, nil},
		{"the provider refunded one reference twice (it forgot the first and got it again)", func(t *testing.T, f *fakeupstream.Server, _ *world) {
			f.Forget()
			postRefund(t, f, "chaos-live.rf-ok.r", "4000.00")
		}, []string{double}},
		{"the ledger's refusal reached the provider", func(t *testing.T, f *fakeupstream.Server, _ *world) {
			postRefund(t, f, "chaos-live.rf-late.r", "7000.00")
		}, []string{unreserved, mismatch}},
		{"the provider got a refund no refund recorded", func(t *testing.T, f *fakeupstream.Server, _ *world) {
			postRefund(t, f, "chaos-live.rf-nobody.r", "100.00")
		}, []string{unknown}},
		{"a refund succeeded that the provider never performed", func(_ *testing.T, _ *fakeupstream.Server, w *world) {
			rf := w.refunds[0]
			rf.Name, rf.UID = "rf-ghost", "uid-rf-ghost"
			rf.Spec.Amount = "1000.00"
			rf.Status.Attempt = &paygatev1.DisbursementAttempt{Reference: rf.RefundReference(), Phase: paygatev1.AttemptSucceeded, Sends: 1}
			addRefund(w, rf)
			w.balances[0].Status.Currencies[0].Refunded, w.balances[0].Status.Currencies[0].Available = "5000.00", "4750.00"
		}, []string{notOnce}},
		{"a refund recorded its attempt and was never sent", func(_ *testing.T, _ *fakeupstream.Server, w *world) {
			rf := w.refunds[0]
			rf.Name, rf.UID = "rf-unsent", "uid-rf-unsent"
			rf.Status.Phase = paygatev1.RefundProcessing
			rf.Status.Attempt = &paygatev1.DisbursementAttempt{Reference: rf.RefundReference(), Phase: paygatev1.AttemptInitiating}
			addRefund(w, rf)
			w.balances[0].Status.Currencies[0].RefundsReserved, w.balances[0].Status.Currencies[0].Available = "4000.00", "1750.00"
		}, []string{unsent, open, balance}},
		{"a refund the provider failed is stored successful", func(t *testing.T, f *fakeupstream.Server, w *world) {
			f.ScriptRefunds("+255713000102", fakeupstream.Scenario{Outcome: provider.StatusFailed})
			rf := w.refunds[0]
			rf.Name, rf.UID, rf.Spec.Destination = "rf-declined", "uid-rf-declined", "+255713000102"
			rf.Spec.Amount = "1000.00"
			rf.Status.Attempt = &paygatev1.DisbursementAttempt{Reference: rf.RefundReference(), Phase: paygatev1.AttemptSucceeded, Sends: 1}
			addRefund(w, rf)
			postRefundTo(t, f, rf.RefundReference(), "+255713000102", "1000.00")
			w.balances[0].Status.Currencies[0].Refunded, w.balances[0].Status.Currencies[0].Available = "5000.00", "4750.00"
		}, []string{mismatch}},
		{"a refund recorded and never sent that the operator resolved failed is no fault", func(_ *testing.T, _ *fakeupstream.Server, w *world) {
			rf := w.refunds[0]
			rf.Name, rf.UID = "rf-resolved", "uid-rf-resolved"
			rf.Status.Phase, rf.Status.Reason = paygatev1.RefundFailed, string(paygatev1.RefundResolvedFailed)
			rf.Status.Attempt = &paygatev1.DisbursementAttempt{Reference: rf.RefundReference(), Phase: paygatev1.AttemptInitiating, Sends: 1}
			addRefund(w, rf)
		}, nil},
		{"the provider refused a refund as exceeding its payment", func(_ *testing.T, _ *fakeupstream.Server, w *world) {
			rf := w.refunds[1]
			rf.Name, rf.UID = "rf-refused", "uid-rf-refused"
			rf.Status.ReservedAt = &metav1.MicroTime{Time: time.Now()}
			rf.Status.Attempt = &paygatev1.DisbursementAttempt{Reference: rf.RefundReference(), Phase: paygatev1.AttemptFailed, Sends: 1}
			addRefund(w, rf)
		}, []string{refused, unsent}},
		{"a payment refunded beyond its amount", func(t *testing.T, f *fakeupstream.Server, w *world) {
			rf := w.refunds[0]
			rf.Name, rf.UID, rf.Spec.Amount = "rf-more", "uid-rf-more", "7000.00"
			rf.Status.Attempt = &paygatev1.DisbursementAttempt{Reference: rf.RefundReference(), Phase: paygatev1.AttemptSucceeded, Sends: 1}
			addRefund(w, rf)
			postRefund(t, f, rf.RefundReference(), "7000.00")
			w.balances[0].Status.Currencies[0].Refunded, w.balances[0].Status.Currencies[0].Available = "11000.00", "-1250.00"
		}, []string{overCap, "balances overdrawn"}},
		{"a balance counts a refund twice", func(_ *testing.T, _ *fakeupstream.Server, w *world) {
			w.balances[0].Status.Currencies[0].Refunded, w.balances[0].Status.Currencies[0].Available = "8000.00", "1750.00"
		}, []string{balance}},
		{"a refund's event is missing", func(_ *testing.T, _ *fakeupstream.Server, w *world) {
			w.deliveries = append(w.deliveries[:1], w.deliveries[2:]...) // rf-late's
		}, []string{events}},
		{"a refund's event was born twice", func(_ *testing.T, _ *fakeupstream.Server, w *world) {
			again := w.deliveries[0]
			again.UID = "uid-again"
			w.deliveries = append(w.deliveries, again)
		}, []string{events}},
		{"a successful refund's event says it failed", func(_ *testing.T, _ *fakeupstream.Server, w *world) {
			w.deliveries[0] = refundEvent("rf-ok", paygate.EventRefundFailed)
		}, []string{events}},
		{"a balance keeps a refund reservation", func(_ *testing.T, _ *fakeupstream.Server, w *world) {
			w.balances[0].Status.RefundReservations = []paygatev1.RefundReservation{{Refund: "rf-ok", TrxID: "trx-aaaaaaaaaaaaaaaaaaaaaaaa", Amount: "4000.00", Currency: "TZS"}}
		}, []string{balance}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fakeupstream.New(t, fakeupstream.Options{})
			postRefund(t, f, "chaos-live.rf-ok.r", "4000.00")
			rcv, err := newReceiver()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(rcv.down)
			h := &harness{t: t, ctx: context.Background(), fake: f, rcv: rcv}
			w := refundWorld()
			tc.fault(t, f, w)
			got := failedFigures(t, h, w)
			for _, name := range tc.want {
				if _, ok := got[name]; !ok {
					t.Errorf("figure %q did not fail", name)
				}
				delete(got, name)
			}
			for name, value := range got {
				t.Errorf("figure %q failed too: %s", name, value)
			}
		})
	}
}
