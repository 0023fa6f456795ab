// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/events"
)

// TestRecordsAndWebhooksReportOneSettlement: the verification record, the payment record and the
// webhook payload report the same fee, net amount and remark for a payment in every phase.
func TestRecordsAndWebhooksReportOneSettlement(t *testing.T) {
	s := New(Options{CheckoutKey: make([]byte, 32)})
	num := func(n *json.Number) string {
		if n == nil {
			return "null"
		}
		return n.String()
	}
	for _, tc := range []struct {
		name                      string
		env                       paygatev1.Environment
		status                    paygatev1.PaymentStatus
		verifyFee, verifyNet      string
		recordFee, recordNet      string
		remark                    string
		webhook, webhookFee, net  string
		webhookStatus, webhookWhy string
	}{
		{name: "pending sandbox payment", env: paygatev1.EnvironmentSandbox, status: paygatev1.PaymentStatus{Phase: paygatev1.PaymentPending},
			verifyFee: "0.00", verifyNet: "1500.00", recordFee: "null", recordNet: "null", remark: "SANDBOX_TRANSACTION"},
		{name: "settled sandbox payment", env: paygatev1.EnvironmentSandbox,
			status:    paygatev1.PaymentStatus{Phase: paygatev1.PaymentSuccess, Fee: "37.50", NetAmount: "1462.50", Remark: "SANDBOX_TRANSACTION"},
			verifyFee: "37.50", verifyNet: "1462.50", recordFee: "37.50", recordNet: "1462.50", remark: "SANDBOX_TRANSACTION",
			webhook: events.PaymentCompleted, webhookFee: "37.50", net: "1462.50", webhookStatus: "completed"},
		{name: "failed sandbox payment", env: paygatev1.EnvironmentSandbox,
			status:    paygatev1.PaymentStatus{Phase: paygatev1.PaymentFailed, Reason: "INSUFFICIENT_FUNDS", Remark: "SANDBOX_TRANSACTION"},
			verifyFee: "0.00", verifyNet: "0.00", recordFee: "0.00", recordNet: "0.00", remark: "SANDBOX_TRANSACTION",
			webhook: events.PaymentFailed, webhookFee: "0.00", net: "0.00", webhookStatus: "failed", webhookWhy: "INSUFFICIENT_FUNDS"},
		{name: "expired production payment, never pushed", env: paygatev1.EnvironmentProduction,
			status:    paygatev1.PaymentStatus{Phase: paygatev1.PaymentFailed, Reason: "EXPIRED_SESSION"},
			verifyFee: "0.00", verifyNet: "0.00", recordFee: "0.00", recordNet: "0.00",
			webhook: events.PaymentFailed, webhookFee: "0.00", net: "0.00", webhookStatus: "failed", webhookWhy: "EXPIRED_SESSION"},
		{name: "simulated production payment", env: paygatev1.EnvironmentProduction,
			status:    paygatev1.PaymentStatus{Phase: paygatev1.PaymentSuccess, Fee: "37.50", NetAmount: "1462.50", Remark: "SIMULATED_PRODUCTION"},
			verifyFee: "37.50", verifyNet: "1462.50", recordFee: "37.50", recordNet: "1462.50", remark: "SIMULATED_PRODUCTION",
			webhook: events.PaymentCompleted, webhookFee: "37.50", net: "1462.50", webhookStatus: "completed"},
		{name: "production payment with a provider's remark", env: paygatev1.EnvironmentProduction,
			status:    paygatev1.PaymentStatus{Phase: paygatev1.PaymentSuccess, Fee: "37.50", NetAmount: "1462.50", Remark: "hub-7"},
			verifyFee: "37.50", verifyNet: "1462.50", recordFee: "37.50", recordNet: "1462.50",
			webhook: events.PaymentCompleted, webhookFee: "37.50", net: "1462.50", webhookStatus: "completed"},
	} {
		p := &paygatev1.Payment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "trx-7kq2m4xv5z3hbd5ntw6ycfa2", UID: "uid-1"},
			Spec: paygatev1.PaymentSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: tc.env,
				MerchantReference: "order-1", Amount: "1500.00", Currency: "TZS", ExpiresAt: metav1.NewTime(time.Now())},
			Status: tc.status,
		}
		v, err := verificationRecord(p)
		if err != nil {
			t.Fatalf("%s: verificationRecord: %v", tc.name, err)
		}
		if v.Fee.String() != tc.verifyFee || v.NetAmount.String() != tc.verifyNet || v.Remark != tc.remark {
			t.Errorf("%s: verification fee %s net %s remark %q, want %s %s %q", tc.name, v.Fee, v.NetAmount, v.Remark, tc.verifyFee, tc.verifyNet, tc.remark)
		}
		rec, err := s.paymentRecord(p)
		if err != nil {
			t.Fatalf("%s: paymentRecord: %v", tc.name, err)
		}
		if num(rec.Fee) != tc.recordFee || num(rec.NetAmount) != tc.recordNet || rec.Remark != tc.remark {
			t.Errorf("%s: record fee %s net %s remark %q, want %s %s %q", tc.name, num(rec.Fee), num(rec.NetAmount), rec.Remark, tc.recordFee, tc.recordNet, tc.remark)
		}
		eventType, ok := events.PaymentEventType(p)
		if eventType != tc.webhook || ok != (tc.webhook != "") {
			t.Errorf("%s: event %q, want %q", tc.name, eventType, tc.webhook)
		}
		if !ok {
			continue
		}
		d, err := events.NewPaymentData(p)
		if err != nil {
			t.Fatalf("%s: NewPaymentData: %v", tc.name, err)
		}
		if d.Settlement.Fees.Value.String() != tc.webhookFee || d.Settlement.Net.Value.String() != tc.net || d.Remark != tc.remark ||
			d.Status != tc.webhookStatus || d.Reason != tc.webhookWhy || d.Settlement.Gross.Value.String() != "1500.00" {
			t.Errorf("%s: webhook data %+v", tc.name, d)
		}
		// What the verify endpoint says and what the webhook says agree.
		if v.Fee.String() != d.Settlement.Fees.Value.String() || v.NetAmount.String() != d.Settlement.Net.Value.String() {
			t.Errorf("%s: verify says fee %s net %s, the webhook fee %s net %s", tc.name, v.Fee, v.NetAmount, d.Settlement.Fees.Value, d.Settlement.Net.Value)
		}
	}
}
