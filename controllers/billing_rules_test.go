// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// TestDunningFailures: the failures counted toward dunning are the invoice's failed charges after
// the latest resume, whichever of them the status still lists.
func TestDunningFailures(t *testing.T) {
	failed := &paygatev1.Payment{Status: paygatev1.PaymentStatus{Phase: paygatev1.PaymentFailed}}
	pending := &paygatev1.Payment{Status: paygatev1.PaymentStatus{Phase: paygatev1.PaymentPending}}
	charges := func(ps ...*paygatev1.Payment) []*paygatev1.Payment { return ps }
	for _, tt := range []struct {
		name     string
		attempts int32
		since    int // -1: no annotation
		charges  []*paygatev1.Payment
		want     int32
	}{
		{"no charge", 0, -1, nil, 0},
		{"one failed", 1, -1, charges(failed), 1},
		{"a retry on the phone", 2, -1, charges(failed, pending), 1},
		{"four failed", 4, -1, charges(failed, failed, failed, failed), 4},
		{"resumed after four: none counts", 4, 4, charges(failed, failed, failed, failed), 0},
		{"resumed after four, one more failed", 5, 4, charges(failed, failed, failed, failed, failed), 1},
		{"a charge recorded and not found counts for nothing", 2, -1, charges(failed, nil), 1},
		{"the list keeps the newest: numbers follow attemptCount", 25, 22, charges(
			failed, failed, failed, failed, failed, failed, failed, failed, failed, failed,
			failed, failed, failed, failed, failed, failed, failed, failed, failed, failed), 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inv := &paygatev1.Invoice{Status: paygatev1.InvoiceStatus{AttemptCount: tt.attempts}}
			if tt.since >= 0 {
				inv.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{AnnotationDunningSince: strconv.Itoa(tt.since)}}
			}
			if got := dunningFailures(inv, tt.charges); got != tt.want {
				t.Errorf("dunningFailures = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestSummarizeInvoice: Ready follows the invoice's phase and whether a charge is out.
func TestSummarizeInvoice(t *testing.T) {
	next := &metav1.Time{}
	for _, tt := range []struct {
		name     string
		status   paygatev1.InvoiceStatus
		inFlight bool
		want     metav1.ConditionStatus
		reason   string
	}{
		{"opened", paygatev1.InvoiceStatus{Phase: paygatev1.InvoiceOpen}, false, metav1.ConditionFalse, ReasonAwaitingCharge},
		{"charging", paygatev1.InvoiceStatus{Phase: paygatev1.InvoiceOpen, AttemptCount: 1}, true, metav1.ConditionFalse, ReasonChargeInFlight},
		{"retry scheduled", paygatev1.InvoiceStatus{Phase: paygatev1.InvoicePaymentFailed, NextAttemptAt: next}, false, metav1.ConditionFalse, ReasonChargeFailed},
		{"retry on the phone", paygatev1.InvoiceStatus{Phase: paygatev1.InvoicePaymentFailed}, true, metav1.ConditionFalse, ReasonChargeInFlight},
		{"paid", paygatev1.InvoiceStatus{Phase: paygatev1.InvoicePaid, PaidPayment: "trx-a"}, false, metav1.ConditionTrue, ReasonInvoicePaid},
		{"void", paygatev1.InvoiceStatus{Phase: paygatev1.InvoiceVoid}, false, metav1.ConditionFalse, ReasonInvoiceVoid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inv := &paygatev1.Invoice{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Status: tt.status}
			summarizeInvoice(inv, tt.inFlight)
			if c := inv.Status.Conditions; len(c) != 1 || c[0].Status != tt.want || c[0].Reason != tt.reason || c[0].ObservedGeneration != 1 {
				t.Errorf("conditions %+v, want Ready %s %s", c, tt.want, tt.reason)
			}
			if inv.Status.ObservedGeneration != 1 {
				t.Errorf("observedGeneration %d", inv.Status.ObservedGeneration)
			}
		})
	}
}
