// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
)

var planNow = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func planMeta(name string, owner types.UID) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(planNow.Add(-30 * 24 * time.Hour))}
	if owner != "" {
		m.OwnerReferences = []metav1.OwnerReference{{UID: owner, Name: string(owner)}}
	}
	return m
}

func planPayment(name string, phase paygatev1.PaymentPhase, settledAgo time.Duration, owner types.UID) paygatev1.Payment {
	p := paygatev1.Payment{ObjectMeta: planMeta(name, owner)}
	p.Status.Phase = phase
	if phase == paygatev1.PaymentSuccess || phase == paygatev1.PaymentFailed {
		t := metav1.NewMicroTime(planNow.Add(-settledAgo))
		p.Status.SettledAt = &t
	}
	return p
}

// planCharge is a charge of invoice inv, tied to it by label only (as charges are created now).
func planCharge(name, inv string, phase paygatev1.PaymentPhase, settledAgo time.Duration) paygatev1.Payment {
	p := planPayment(name, phase, settledAgo, "")
	p.Labels = map[string]string{paygatev1.LabelInvoice: inv}
	return p
}

// watchedPayment failed settledAgo with its last attempt still watched.
func watchedPayment(name string, settledAgo time.Duration) paygatev1.Payment {
	p := planPayment(name, paygatev1.PaymentFailed, settledAgo, "")
	until := metav1.NewMicroTime(planNow.Add(time.Hour))
	p.Status.Attempts = []paygatev1.PushAttempt{{Phase: paygatev1.AttemptPending, WatchUntil: &until}}
	return p
}

func planPayout(name string, phase paygatev1.PayoutPhase, ago time.Duration) paygatev1.Payout {
	p := paygatev1.Payout{ObjectMeta: planMeta(name, "")}
	p.Status.Phase = phase
	t := metav1.NewMicroTime(planNow.Add(-ago))
	p.Status.UpdatedAt = &t
	return p
}

func planRefund(name, trxID string, phase paygatev1.RefundPhase, ago time.Duration) paygatev1.Refund {
	f := paygatev1.Refund{ObjectMeta: planMeta(name, "")}
	f.Spec.Payment.TrxID = trxID
	f.Status.Phase = phase
	t := metav1.NewMicroTime(planNow.Add(-ago))
	f.Status.UpdatedAt = &t
	return f
}

func planInvoice(name, sub string, period int32, phase paygatev1.InvoicePhase, paidAgo time.Duration) paygatev1.Invoice {
	inv := paygatev1.Invoice{ObjectMeta: planMeta(name, "")}
	inv.Spec.SubscriptionRef.Name, inv.Spec.Period = sub, period
	inv.Status.Phase = phase
	if phase == paygatev1.InvoicePaid {
		t := metav1.NewMicroTime(planNow.Add(-paidAgo))
		inv.Status.PaidAt = &t
	}
	return inv
}

func planDelivery(name string, owner types.UID, phase paygatev1.DeliveryPhase, ago time.Duration) paygatev1.WebhookDelivery {
	d := paygatev1.WebhookDelivery{ObjectMeta: planMeta(name, owner)}
	d.Status.Phase = phase
	if phase == paygatev1.DeliveryDelivered {
		t := metav1.NewTime(planNow.Add(-ago))
		d.Status.DeliveredAt = &t
	}
	return d
}

// unitNames renders plan's units as "kind:name,name,…" (objects in delete order).
func unitNames(units []archiveUnit) []string {
	var out []string
	for _, u := range units {
		s := string(u.kind) + ":"
		for i, o := range u.objects {
			if i > 0 {
				s += ","
			}
			s += o.GetName()
		}
		out = append(out, s)
	}
	return out
}

func TestArchiverPlan(t *testing.T) {
	week := 7 * 24 * time.Hour
	all := Retention{Payments: week, Payouts: week, Invoices: week, WebhookDeliveries: week, Refunds: week}
	tests := []struct {
		name        string
		retention   Retention
		snap        archiveSnapshot
		wantUnits   []string
		wantBlocked []archive.Kind
	}{
		{
			name:      "settled payments past the retention leave with their deliveries, oldest first; recent and pending ones stay",
			retention: all,
			snap: archiveSnapshot{
				payments: []paygatev1.Payment{
					planPayment("newer", paygatev1.PaymentSuccess, 8*24*time.Hour, ""),
					planPayment("older", paygatev1.PaymentFailed, 9*24*time.Hour, ""),
					planPayment("recent", paygatev1.PaymentSuccess, 6*24*time.Hour, ""),
					planPayment("pending", paygatev1.PaymentPending, 0, ""),
				},
				deliveries: []paygatev1.WebhookDelivery{
					planDelivery("newer-completed", "uid-newer", paygatev1.DeliveryDelivered, 6*24*time.Hour),
					planDelivery("older-failed", "uid-older", paygatev1.DeliveryDelivered, 9*24*time.Hour),
				},
			},
			wantUnits: []string{"payments:older,older-failed", "payments:newer,newer-completed"}, // owner first
		},
		{
			name:      "a settled payment or payout whose webhook event is not born yet waits for it, and counts in the lag",
			retention: all,
			snap: archiveSnapshot{
				payments: []paygatev1.Payment{planPayment("p", paygatev1.PaymentSuccess, 8*24*time.Hour, "")},
				payouts:  []paygatev1.Payout{planPayout("po", paygatev1.PayoutSuccess, 30*24*time.Hour)},
			},
			wantBlocked: []archive.Kind{archive.KindPayment, archive.KindPayout},
		},
		{
			name:      "charges name their invoice by label and leave with it; a charge whose invoice was deleted leaves alone; a watched payment and a counted late settlement stay",
			retention: all,
			snap: archiveSnapshot{
				invoices: []paygatev1.Invoice{
					planInvoice("inv-1", "sub-1", 1, paygatev1.InvoicePaid, 9*24*time.Hour),
					planInvoice("inv-2", "sub-1", 2, paygatev1.InvoiceOpen, 0),
					planInvoice("inv-3", "sub-1", 3, paygatev1.InvoiceOpen, 0),
				},
				payments: []paygatev1.Payment{
					planCharge("inv-1-charge", "inv-1", paygatev1.PaymentSuccess, 9*24*time.Hour),
					planCharge("orphan-charge", "inv-gone", paygatev1.PaymentSuccess, 9*24*time.Hour),
					watchedPayment("watched", 9*24*time.Hour),
					creditedLate("credited-late", 9*24*time.Hour),
				},
				deliveries: []paygatev1.WebhookDelivery{
					planDelivery("watched-failed", "uid-watched", paygatev1.DeliveryDelivered, 9*24*time.Hour),
					planDelivery("credited-late-failed", "uid-credited-late", paygatev1.DeliveryDelivered, 9*24*time.Hour),
				},
			},
			wantUnits: []string{"invoices:inv-1,inv-1-charge", "payments:orphan-charge"},
		},
		{
			name:      "a payment whose delivery is still retrying waits, and counts in the lag",
			retention: all,
			snap: archiveSnapshot{
				payments:   []paygatev1.Payment{planPayment("p", paygatev1.PaymentSuccess, 8*24*time.Hour, "")},
				deliveries: []paygatev1.WebhookDelivery{planDelivery("p-completed", "uid-p", paygatev1.DeliveryPending, 0)},
			},
			wantBlocked: []archive.Kind{archive.KindPayment},
		},
		{
			name:      "a retention of 0 keeps the kind; deliveries of an archived owner leave with it whatever their own retention",
			retention: Retention{Payments: week},
			snap: archiveSnapshot{
				payments: []paygatev1.Payment{planPayment("p", paygatev1.PaymentSuccess, 8*24*time.Hour, "")},
				payouts:  []paygatev1.Payout{planPayout("po", paygatev1.PayoutSuccess, 30*24*time.Hour)},
				deliveries: []paygatev1.WebhookDelivery{
					planDelivery("p-completed", "uid-p", paygatev1.DeliveryDelivered, 8*24*time.Hour),
					planDelivery("po-completed", "uid-po", paygatev1.DeliveryDelivered, 30*24*time.Hour),
				},
			},
			wantUnits: []string{"payments:p,p-completed"},
		},
		{
			name:      "payouts leave only when terminal; a delivery stays while its owner is live, and leaves alone once it is gone",
			retention: all,
			snap: archiveSnapshot{
				payouts: []paygatev1.Payout{
					planPayout("paid", paygatev1.PayoutSuccess, 10*24*time.Hour),
					planPayout("processing", paygatev1.PayoutProcessing, 10*24*time.Hour),
				},
				deliveries: []paygatev1.WebhookDelivery{
					planDelivery("paid-completed", "uid-paid", paygatev1.DeliveryDelivered, 9*24*time.Hour),
					planDelivery("processing-started", "uid-processing", paygatev1.DeliveryDelivered, 9*24*time.Hour),
					planDelivery("orphan-completed", "uid-gone", paygatev1.DeliveryDelivered, 9*24*time.Hour),
					planDelivery("sub-created", "uid-sub", paygatev1.DeliveryDelivered, 90*24*time.Hour),
				},
				owners: map[types.UID]bool{"uid-sub": true},
			},
			wantUnits: []string{"payouts:paid,paid-completed", "webhook_deliveries:orphan-completed"},
		},
		{
			name:      "a subscription's two latest invoices stay; an older one leaves with its charges and their deliveries",
			retention: all,
			snap: archiveSnapshot{
				invoices: []paygatev1.Invoice{
					planInvoice("sub-1", "sub", 1, paygatev1.InvoicePaid, 60*24*time.Hour),
					planInvoice("sub-2", "sub", 2, paygatev1.InvoicePaid, 30*24*time.Hour),
					planInvoice("sub-3", "sub", 3, paygatev1.InvoicePaid, 8*24*time.Hour),
				},
				payments: []paygatev1.Payment{
					planPayment("c1a", paygatev1.PaymentFailed, 61*24*time.Hour, "uid-sub-1"),
					planPayment("c1b", paygatev1.PaymentSuccess, 60*24*time.Hour, "uid-sub-1"),
					planPayment("c2", paygatev1.PaymentSuccess, 30*24*time.Hour, "uid-sub-2"),
				},
				deliveries: []paygatev1.WebhookDelivery{
					planDelivery("c1b-completed", "uid-c1b", paygatev1.DeliveryDelivered, 60*24*time.Hour),
					planDelivery("sub-1-paid", "uid-sub-1", paygatev1.DeliveryDelivered, 60*24*time.Hour),
				},
			},
			wantUnits: []string{"invoices:sub-1,sub-1-paid,c1b,c1b-completed,c1a"}, // owner first
		},
		{
			name:      "an invoice with a charge still pending waits",
			retention: all,
			snap: archiveSnapshot{
				invoices: []paygatev1.Invoice{
					planInvoice("sub-1", "sub", 1, paygatev1.InvoicePaid, 60*24*time.Hour),
					planInvoice("sub-2", "sub", 2, paygatev1.InvoicePaid, 30*24*time.Hour),
					planInvoice("sub-3", "sub", 3, paygatev1.InvoicePaid, 8*24*time.Hour),
				},
				payments: []paygatev1.Payment{planPayment("c1", paygatev1.PaymentPending, 0, "uid-sub-1")},
			},
			wantBlocked: []archive.Kind{archive.KindInvoice},
		},
		{
			name:      "a settled refund leaves with its deliveries once its payment has left etcd; a payment in etcd keeps its refunds",
			retention: all,
			snap: archiveSnapshot{
				payments: []paygatev1.Payment{planPayment("trx-kept", paygatev1.PaymentSuccess, 2*24*time.Hour, "")},
				refunds: []paygatev1.Refund{
					planRefund("gone-ok", "trx-gone", paygatev1.RefundSuccess, 9*24*time.Hour),
					planRefund("gone-failed", "trx-gone", paygatev1.RefundFailed, 8*24*time.Hour),
					planRefund("gone-recent", "trx-gone", paygatev1.RefundSuccess, 6*24*time.Hour),
					planRefund("gone-open", "trx-gone", paygatev1.RefundProcessing, 30*24*time.Hour),
					planRefund("kept", "trx-kept", paygatev1.RefundSuccess, 30*24*time.Hour),
				},
				deliveries: []paygatev1.WebhookDelivery{
					planDelivery("gone-ok-completed", "uid-gone-ok", paygatev1.DeliveryDelivered, 9*24*time.Hour),
					planDelivery("gone-failed-failed", "uid-gone-failed", paygatev1.DeliveryDelivered, 8*24*time.Hour),
					planDelivery("kept-completed", "uid-kept", paygatev1.DeliveryDelivered, 30*24*time.Hour),
				},
			},
			wantUnits: []string{"refunds:gone-ok,gone-ok-completed", "refunds:gone-failed,gone-failed-failed"},
		},
		{
			name:      "a settled refund whose webhook event is not born yet waits for it; a retention of 0 keeps refunds",
			retention: Retention{Payments: week},
			snap: archiveSnapshot{
				refunds: []paygatev1.Refund{planRefund("r", "trx-gone", paygatev1.RefundSuccess, 9*24*time.Hour)},
			},
		},
		{
			name:      "a settled refund whose webhook event is not born yet waits for it",
			retention: all,
			snap: archiveSnapshot{
				refunds: []paygatev1.Refund{planRefund("r", "trx-gone", paygatev1.RefundSuccess, 9*24*time.Hour)},
			},
			wantBlocked: []archive.Kind{archive.KindRefund},
		},
		{
			name:      "an open invoice stays whatever its age",
			retention: all,
			snap: archiveSnapshot{
				invoices: []paygatev1.Invoice{
					planInvoice("sub-1", "sub", 1, paygatev1.InvoicePaymentFailed, 0),
					planInvoice("sub-2", "sub", 2, paygatev1.InvoicePaid, 30*24*time.Hour),
					planInvoice("sub-3", "sub", 3, paygatev1.InvoicePaid, 8*24*time.Hour),
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Archiver{Retention: tt.retention}
			units, blocked := a.plan(&tt.snap, planNow)
			if got := unitNames(units); !slices.Equal(got, tt.wantUnits) {
				t.Errorf("units = %q, want %q", got, tt.wantUnits)
			}
			var kinds []archive.Kind
			for _, b := range blocked {
				kinds = append(kinds, b.kind)
			}
			if !slices.Equal(kinds, tt.wantBlocked) {
				t.Errorf("blocked = %v, want %v", kinds, tt.wantBlocked)
			}
			seen := map[types.UID]bool{}
			for _, u := range units {
				for _, o := range u.objects {
					if seen[o.GetUID()] {
						t.Errorf("%s is in two units", o.GetName())
					}
					seen[o.GetUID()] = true
				}
			}
		})
	}
}

func TestTopTwo(t *testing.T) {
	var top []int32
	for _, p := range []int32{3, 1, 5, 5, 2, 4} {
		top = topTwo(top, p)
	}
	if !slices.Equal(top, []int32{5, 4}) {
		t.Fatalf("topTwo = %v, want [5 4]", top)
	}
}

// creditedLate is a failed payment whose late settlement the balance counts (lateSettlement Credit).
func creditedLate(name string, ago time.Duration) paygatev1.Payment {
	p := planPayment(name, paygatev1.PaymentFailed, ago, "")
	p.Status.NetAmount = "1462.50"
	p.Status.Conditions = []metav1.Condition{{Type: paygatev1.ConditionLateSettlement, Status: metav1.ConditionTrue, Reason: "SettledAfterFailure"}}
	return p
}
