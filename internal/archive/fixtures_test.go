// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package archive

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := pgtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping PostgreSQL:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// newStore opens a migrated archive on a new database of the shared test server.
func newStore(t *testing.T) *Store {
	t.Helper()
	return openMigrated(t, pgtest.NewDatabase(t))
}

func openMigrated(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, Options{MaxConns: 8, ApplicationName: "paygate-archive-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	return s
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// base is a time as a Kubernetes object carries it after a JSON round trip: in the local zone.
var base = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC).Local()

func secs(n int) metav1.Time { return metav1.NewTime(base.Add(time.Duration(n) * time.Second)) }

func micros(n int64) *metav1.MicroTime {
	t := metav1.NewMicroTime(base.Add(time.Duration(n) * time.Microsecond))
	return &t
}

func uid(kind string, n int) types.UID {
	return types.UID(fmt.Sprintf("%s-%08d-0000-4000-8000", kind, n))
}

// payment is a terminal payment: phase success credits net, failed nothing.
func payment(n int, merchant string, env paygatev1.Environment, cur paygatev1.CurrencyCode, phase paygatev1.PaymentPhase, amount, net paygatev1.Decimal, created int) paygatev1.Payment {
	p := paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("trx-%024d", n),
			Namespace:         "demo",
			UID:               uid("pay", n),
			ResourceVersion:   fmt.Sprint(1000 + n),
			CreationTimestamp: secs(created),
			Labels:            map[string]string{paygatev1.LabelMerchant: merchant, paygatev1.LabelEnvironment: string(env)},
		},
		Spec: paygatev1.PaymentSpec{
			MerchantRef:       paygatev1.MerchantReference{Name: merchant},
			Environment:       env,
			MerchantReference: fmt.Sprintf("order-%d", n),
			Amount:            amount,
			Currency:          cur,
			Mode:              paygatev1.PaymentModePush,
			ExpiresAt:         secs(created + 900),
			CreatedAt:         micros(int64(created)*1_000_000 + int64(n)),
		},
		Status: paygatev1.PaymentStatus{Phase: phase, SettledAt: micros(int64(created+5)*1_000_000 + 1)},
	}
	if phase == paygatev1.PaymentSuccess {
		fee, _ := subtract(string(amount), string(net))
		p.Status.Fee, p.Status.NetAmount = paygatev1.Decimal(fee), net
	} else {
		p.Status.Reason = string(paygatev1.FailureInsufficientFunds)
	}
	return p
}

func payout(n int, merchant string, env paygatev1.Environment, cur paygatev1.CurrencyCode, phase paygatev1.PayoutPhase, amount paygatev1.Decimal, createdMicros int64) paygatev1.Payout {
	p := paygatev1.Payout{
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("00000000-0000-4000-8000-%012d", n),
			Namespace:         "demo",
			UID:               uid("po", n),
			CreationTimestamp: metav1.NewTime(base.Add(time.Duration(createdMicros) * time.Microsecond).Truncate(time.Second)),
		},
		Spec: paygatev1.PayoutSpec{
			MerchantRef:   paygatev1.MerchantReference{Name: merchant},
			Environment:   env,
			Amount:        amount,
			Fee:           "0",
			PayableAmount: amount,
			Currency:      cur,
			Destination:   "+255712345678",
			Gateway:       "mpesa-tz",
			CreatedAt:     *micros(createdMicros),
		},
		Status: paygatev1.PayoutStatus{Phase: phase, UpdatedAt: micros(createdMicros + 7)},
	}
	if phase == paygatev1.PayoutFailed {
		p.Status.Reason = string(paygatev1.PayoutRejected)
	}
	return p
}

func refund(n int, merchant string, env paygatev1.Environment, cur paygatev1.CurrencyCode, phase paygatev1.RefundPhase, trxID string, amount paygatev1.Decimal, createdMicros int64) paygatev1.Refund {
	f := paygatev1.Refund{
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("00000000-0000-4000-9000-%012d", n),
			Namespace:         "demo",
			UID:               uid("rf", n),
			CreationTimestamp: metav1.NewTime(base.Add(time.Duration(createdMicros) * time.Microsecond).Truncate(time.Second)),
			Labels:            map[string]string{paygatev1.LabelPayment: trxID},
		},
		Spec: paygatev1.RefundSpec{
			MerchantRef: paygatev1.MerchantReference{Name: merchant},
			Environment: env,
			Payment:     paygatev1.RefundedPayment{TrxID: trxID, Amount: "1000", AttemptReference: "demo." + trxID + ".1"},
			Amount:      amount,
			Currency:    cur,
			Destination: "+255712345678",
			Gateway:     "mpesa-tz",
			Reason:      "out of stock",
			CreatedAt:   *micros(createdMicros),
		},
		Status: paygatev1.RefundStatus{Phase: phase, UpdatedAt: micros(createdMicros + 7)},
	}
	if phase == paygatev1.RefundFailed {
		f.Status.Reason = string(paygatev1.RefundExceedsPayment)
	}
	return f
}

func invoice(n int, merchant string, sub string, period int32, phase paygatev1.InvoicePhase, created int) paygatev1.Invoice {
	return paygatev1.Invoice{
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("inv-%s-%d", sub[4:], period),
			Namespace:         "demo",
			UID:               uid("inv", n),
			CreationTimestamp: secs(created),
		},
		Spec: paygatev1.InvoiceSpec{
			MerchantRef:     paygatev1.MerchantReference{Name: merchant},
			Environment:     paygatev1.EnvironmentSandbox,
			SubscriptionRef: paygatev1.SubscriptionReference{Name: sub},
			PlanCode:        "gold-monthly",
			Period:          period,
			PeriodStart:     secs(created),
			PeriodEnd:       secs(created + 3600),
			Amount:          "15000",
			Currency:        "TZS",
		},
		Status: paygatev1.InvoiceStatus{Phase: phase, AttemptCount: 1, PaidAt: micros(int64(created) * 1_000_000)},
	}
}

func subtract(a, b string) (string, error) {
	x, err := money.ParseAmount(a)
	if err != nil {
		return "", err
	}
	y, err := money.ParseAmount(b)
	if err != nil {
		return "", err
	}
	d, err := x.Sub(y)
	return d.String(), err
}
