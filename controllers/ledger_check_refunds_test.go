// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
)

// TestCheckLedgersCountsRefunds: `paygate ledger check` recomputes the refunded amount from the
// live refunds and checks available = settled - paidOut - reserved - refunded - refundsReserved on
// every stored entry.
func TestCheckLedgersCountsRefunds(t *testing.T) {
	payment := ledgerPayment("trx-1", paygatev1.PaymentSuccess, "975.00")
	refunds := []paygatev1.Refund{
		ledgerRefund("rf-paid", "trx-1", "300.00", "1000.00", 0, paygatev1.RefundSuccess),
		ledgerRefund("rf-flight", "trx-1", "200.00", "1000.00", time.Second, paygatev1.RefundProcessing),
	}
	held := []paygatev1.RefundReservation{refundHeld("rf-flight", "trx-1", "200.00")}
	right := paygatev1.CurrencyBalance{Currency: "TZS", Available: "475.00", Settled: "975.00", Reserved: "0.00", PaidOut: "0.00",
		Refunded: "300.00", RefundsReserved: "200.00", SettledPayments: 1}

	tests := []struct {
		name   string
		stored func(c *paygatev1.CurrencyBalance)
		want   []string // the fields that differ
	}{
		{name: "a balance that counts its refunds agrees", stored: func(*paygatev1.CurrencyBalance) {}},
		{name: "a stored refunded amount is recomputed", stored: func(c *paygatev1.CurrencyBalance) {
			c.Refunded, c.Available = "100.00", "675.00"
		}, want: []string{"refunded"}},
		{name: "a balance that forgot its refunds breaks the invariant", stored: func(c *paygatev1.CurrencyBalance) {
			c.Available = "775.00"
		}, want: []string{"available"}},
		{name: "refunds reserved count in the invariant", stored: func(c *paygatev1.CurrencyBalance) {
			c.RefundsReserved = ""
		}, want: []string{"available"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entry := right
			tt.stored(&entry)
			b := &paygatev1.Balance{Spec: paygatev1.BalanceSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox}}
			b.Namespace, b.Name = "shop", paygatev1.BalanceName("duka", paygatev1.EnvironmentSandbox)
			b.Status = paygatev1.BalanceStatus{ObservedPayments: 1, Currencies: []paygatev1.CurrencyBalance{entry}, RefundReservations: held}
			objs := []client.Object{b, inNamespace(payment.DeepCopy(), "shop")}
			for i := range refunds {
				objs = append(objs, inNamespace(refunds[i].DeepCopy(), "shop"))
			}
			c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(objs...).Build()
			res, err := CheckLedgers(context.Background(), c, nil)
			if err != nil {
				t.Fatal(err)
			}
			var fields []string
			for _, d := range res.Differences {
				fields = append(fields, d.Field)
			}
			if res.Balances != 1 || !slices.Equal(fields, tt.want) {
				t.Fatalf("checked %d balances, differences %v; want 1 and fields %q", res.Balances, res.Differences, tt.want)
			}
		})
	}
}

func inNamespace[T client.Object](o T, ns string) T {
	o.SetNamespace(ns)
	return o
}
