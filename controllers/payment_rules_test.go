// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	webhookevents "github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/internal/provider"
)

var rulesNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func rulesGateway(opts ...func(*paygatev1.Gateway)) *paygatev1.Gateway {
	gw := &paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "mpesa-tz"},
		Spec: paygatev1.GatewaySpec{DisplayName: "M-Pesa", Currency: "TZS", Type: paygatev1.GatewayTypeAutomatic,
			Provider: paygatev1.ProviderSandbox, Fees: paygatev1.GatewayFees{Percent: "2.5", Fixed: "0"}},
	}
	for _, o := range opts {
		o(gw)
	}
	return gw
}

func rulesPayment(opts ...func(*paygatev1.Payment)) *paygatev1.Payment {
	p := &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "trx-a", UID: types.UID("uid-1")},
		Spec: paygatev1.PaymentSpec{
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			MerchantReference: "order-1", Amount: "1500", Currency: "TZS", Mode: paygatev1.PaymentModePush,
			Gateways:    []paygatev1.GatewayCode{"mpesa-tz"},
			ExpiresAt:   metav1.NewTime(rulesNow.Add(30 * time.Minute)),
			PushRequest: &paygatev1.PushRequest{Sequence: 1, Phone: "+255712345678", RequestedAt: metav1.NewMicroTime(rulesNow)},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// rulesReconciler runs the payment controller on a fake API server holding objs.
func rulesReconciler(objs ...client.Object) (*PaymentReconciler, client.Client) {
	r, c, _, _ := countedReconciler(objs...)
	return r, c
}

func reconcilePayment(t *testing.T, r *PaymentReconciler, c client.Client, p *paygatev1.Payment, passes int) (*paygatev1.Payment, ctrl.Result, error) {
	t.Helper()
	var res ctrl.Result
	var err error
	for range passes {
		if res, err = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}); err != nil {
			break
		}
	}
	got := &paygatev1.Payment{}
	if gerr := c.Get(context.Background(), client.ObjectKeyFromObject(p), got); gerr != nil {
		t.Fatal(gerr)
	}
	return got, res, err
}

// TestPushGoesOnlyThroughAGatewayThatStillServes: the controller asks eligibility.Serves, as the
// apiserver and the checkout page do; a gateway turned manual, inactive, deleted or of another
// currency since the payment was accepted no longer carries it.
func TestPushGoesOnlyThroughAGatewayThatStillServes(t *testing.T) {
	for _, tt := range []struct {
		name      string
		gw        *paygatev1.Gateway
		wantPhase paygatev1.PaymentPhase
		attempts  int
	}{
		{"serves", rulesGateway(), paygatev1.PaymentSuccess, 1},
		{"turned manual", rulesGateway(func(g *paygatev1.Gateway) { g.Spec.Type = paygatev1.GatewayTypeManual }), paygatev1.PaymentFailed, 0},
		{"deactivated", rulesGateway(func(g *paygatev1.Gateway) { g.Spec.Active = new(bool) }), paygatev1.PaymentFailed, 0},
		{"other currency", rulesGateway(func(g *paygatev1.Gateway) { g.Spec.Currency = "KES" }), paygatev1.PaymentFailed, 0},
		{"being deleted", rulesGateway(func(g *paygatev1.Gateway) {
			g.DeletionTimestamp, g.Finalizers = &metav1.Time{Time: rulesNow}, []string{"test.paygate.dev/hold"}
		}), paygatev1.PaymentFailed, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := rulesPayment()
			r, c := rulesReconciler(p, tt.gw)
			got, _, err := reconcilePayment(t, r, c, p, 3)
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if got.Status.Phase != tt.wantPhase || len(got.Status.Attempts) != tt.attempts {
				t.Fatalf("phase %q (%s), %d attempts; want %q, %d", got.Status.Phase, got.Status.Reason, len(got.Status.Attempts), tt.wantPhase, tt.attempts)
			}
			if tt.wantPhase == paygatev1.PaymentFailed && got.Status.Reason != string(paygatev1.FailurePaymentDeclined) {
				t.Errorf("reason %q, want PAYMENT_DECLINED", got.Status.Reason)
			}
		})
	}
}

// TestExpiry: the controller expires with Payment.Expired and waits for Payment.TimeLeft.
func TestExpiry(t *testing.T) {
	noPush := func(p *paygatev1.Payment) { p.Spec.PushRequest = nil }
	expiresIn := func(d time.Duration) func(*paygatev1.Payment) {
		return func(p *paygatev1.Payment) { p.Spec.ExpiresAt = metav1.NewTime(rulesNow.Add(d)) }
	}
	attempt := func(phase paygatev1.AttemptPhase) func(*paygatev1.Payment) {
		return func(p *paygatev1.Payment) {
			p.Status.Attempts = []paygatev1.PushAttempt{{Sequence: 1, Reference: "shop.trx-a.1", Gateway: "mpesa-tz", Phase: phase, StartedAt: metav1.NewMicroTime(rulesNow.Add(-time.Hour))}}
		}
	}
	for _, tt := range []struct {
		name        string
		p           *paygatev1.Payment
		wantReason  string
		wantRequeue time.Duration
	}{
		{"a second left: pending, back in a second", rulesPayment(noPush, expiresIn(time.Second)), "", time.Second},
		{"at expiresAt exactly: expired", rulesPayment(noPush, expiresIn(0)), string(paygatev1.FailureExpiredSession), 0},
		{"a push asked for at expiresAt is not sent: expired", rulesPayment(expiresIn(0)), string(paygatev1.FailureExpiredSession), 0},
		{"an attempt the provider is unsure of ends at the deadline too (and is watched)", rulesPayment(noPush, expiresIn(-time.Minute), attempt(paygatev1.AttemptAmbiguous)), string(paygatev1.FailureExpiredSession), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, c := rulesReconciler(tt.p, rulesGateway())
			r.Providers = stuckProviders{}
			got, res, err := reconcilePayment(t, r, c, tt.p, 1)
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if got.Status.Reason != tt.wantReason || (tt.wantReason != "") != (got.Status.Phase == paygatev1.PaymentFailed) {
				t.Fatalf("phase %q reason %q; want reason %q", got.Status.Phase, got.Status.Reason, tt.wantReason)
			}
			if len(got.Status.Attempts) > 0 && got.Status.Attempts[0].Phase == paygatev1.AttemptInitiating {
				t.Errorf("a push was started after the session ended")
			}
			if tt.wantRequeue > 0 && res.RequeueAfter != tt.wantRequeue {
				t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, tt.wantRequeue)
			}
		})
	}
}

// stuckProviders answers every status query "ambiguous".
type stuckProviders struct{}

func (stuckProviders) For(context.Context, *paygatev1.Gateway, paygatev1.Environment) (provider.Provider, error) {
	return stuckProvider{}, nil
}

type stuckProvider struct{ provider.Provider }

func (stuckProvider) Capabilities() provider.Capabilities {
	return provider.Capabilities{Deduplicates: true}
}

func (stuckProvider) PushStatus(context.Context, provider.PushRequest) (provider.Result, error) {
	return provider.Result{Status: provider.StatusAmbiguous}, nil
}

func (stuckProvider) Push(context.Context, provider.PushRequest) (provider.Result, error) {
	return provider.Result{Status: provider.StatusAmbiguous}, nil
}

// TestEventIsEmittedOnce: a settled payment gets one event, under its derived name; an event an
// earlier version created under the name it gave events is found, not sent again; a stored amount
// that cannot be rendered exactly gives no event (and an error, so the pass is retried); an
// invoice's charge gives none at all.
func TestEventIsEmittedOnce(t *testing.T) {
	settled := func(p *paygatev1.Payment) {
		p.Status = paygatev1.PaymentStatus{Phase: paygatev1.PaymentSuccess, Fee: "37.50", NetAmount: "1462.50", SettledAt: &metav1.MicroTime{Time: rulesNow}}
	}
	const legacyName = "whd-9f639d96db92bc9084febe9981470131" // as versions before names.Derive named it
	legacy := &paygatev1.WebhookDelivery{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: legacyName},
		Spec: paygatev1.WebhookDeliverySpec{EventID: "evt_" + legacyName[len("whd-"):], EventType: webhookevents.PaymentCompleted}}
	for _, tt := range []struct {
		name     string
		p        *paygatev1.Payment
		existing []client.Object
		want     []string
		wantErr  bool
	}{
		{"new event", rulesPayment(settled), nil, []string{webhookevents.DeliveryName("uid-1", webhookevents.PaymentCompleted)}, false},
		{"event of an earlier version", rulesPayment(settled), []client.Object{legacy}, []string{legacyName}, false},
		{"a bad stored amount: no event", rulesPayment(settled, func(p *paygatev1.Payment) { p.Spec.Amount = "1500.555" }), nil, nil, true},
		{"an invoice's charge: no payment event (docs/billing.md, Events)", rulesPayment(settled, func(p *paygatev1.Payment) {
			p.Labels = map[string]string{paygatev1.LabelInvoice: "inv-qj33hpibayoahnbujh4loofg-1"}
		}), nil, nil, false},
		{"an invoice's failed charge: no payment event", rulesPayment(func(p *paygatev1.Payment) {
			p.Labels = map[string]string{paygatev1.LabelInvoice: "inv-qj33hpibayoahnbujh4loofg-1"}
			p.Status = paygatev1.PaymentStatus{Phase: paygatev1.PaymentFailed, Reason: "INSUFFICIENT_FUNDS", SettledAt: &metav1.MicroTime{Time: rulesNow}}
		}), nil, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, c := rulesReconciler(append([]client.Object{tt.p}, tt.existing...)...)
			_, _, err := reconcilePayment(t, r, c, tt.p, 2)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Reconcile error = %v, want an error: %v", err, tt.wantErr)
			}
			var list paygatev1.WebhookDeliveryList
			if err := c.List(context.Background(), &list); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range list.Items {
				got = append(got, d.Name)
			}
			if len(got) != len(tt.want) || (len(got) == 1 && got[0] != tt.want[0]) {
				t.Errorf("deliveries %q, want %q", got, tt.want)
			}
		})
	}
}
