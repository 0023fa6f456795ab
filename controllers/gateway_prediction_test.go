// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/test/fakepawapay"
)

// pawapayGateway is a TZS gateway carried by pawaPay provider code, through the account whose
// token is in Secret pawapay/pawapay.
func pawapayGateway(name, code, baseURL string) *paygatev1.Gateway {
	return &paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: paygatev1.GatewaySpec{DisplayName: name, Currency: "TZS", Type: paygatev1.GatewayTypeAutomatic,
			Provider: paygatev1.ProviderPawapay, Fees: paygatev1.GatewayFees{Percent: "2.5", Fixed: "0"},
			Pawapay: &paygatev1.PawapayConfig{BaseURL: baseURL, Provider: code, Country: "TZA",
				CredentialsSecretRef: paygatev1.PawapayCredentialsReference{Namespace: "pawapay", Name: "pawapay"}}},
	}
}

func productionPush(now time.Time, phone string, gateways ...paygatev1.GatewayCode) *paygatev1.Payment {
	return &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "trx-" + phone[len(phone)-4:]},
		Spec: paygatev1.PaymentSpec{
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentProduction,
			Amount: "20000", Currency: "TZS", Mode: paygatev1.PaymentModePush, Gateways: gateways,
			ExpiresAt:   metav1.NewTime(now.Add(30 * time.Minute)),
			PushRequest: &paygatev1.PushRequest{Sequence: 1, Phone: paygatev1.MobileNumber(phone), RequestedAt: metav1.NewMicroTime(now)},
		},
	}
}

// TestPredictedProviderPicksTheGateway runs two pawapay gateways in service on one account of the
// pawaPay fake (over HTTP, through the real adapter): A carries VODACOM_TZA and sorts first in the
// payment's gateways, B carries AIRTEL_TZA. A push without a requested gateway goes through the
// gateway of the network pawaPay predicts for the customer's phone. The fake predicts by national
// prefix (test/fakepawapay DefaultProviders: 74-76 Vodacom, 68, 69 and 78 Airtel).
//
// The gateways are made ProviderReady by the gateway controller's own check against the same
// fake. This runs on a fake Kubernetes client rather than the envtest suite: the suite's manager
// has no pawaPay adapters, and its payment controller would race this one for the push (writing
// ahead an attempt through A, the order's first, before failing for want of a provider).
func TestPredictedProviderPicksTheGateway(t *testing.T) {
	ctx := context.Background()
	pp := fakepawapay.New(t, fakepawapay.Options{})
	for _, tt := range []struct {
		name, phone string
		want        paygatev1.GatewayCode
	}{
		{"an Airtel number goes through B, although A sorts first", "+255684000001", "b-airtel"},
		{"a Vodacom number goes through A", "+255754000002", "a-vodacom"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Now()
			a, b := pawapayGateway("a-vodacom", "VODACOM_TZA", pp.URL()), pawapayGateway("b-airtel", "AIRTEL_TZA", pp.URL())
			p := productionPush(now, tt.phone, "a-vodacom", "b-airtel")
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "pawapay", Name: "pawapay",
				Labels: map[string]string{paygatev1.LabelCredential: provider.CredentialKindPawapay}},
				Data: map[string][]byte{provider.PawapaySecretToken: []byte(pp.Token)}}
			c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(a, b, p, secret).
				WithStatusSubresource(a, b, p).Build()
			registry := &provider.Registry{Sandbox: provider.NewSandbox(provider.SandboxOptions{}),
				Gateways: &provider.Gateways{Reader: c}}

			gr := &GatewayReconciler{Client: c, Recorder: events.NewFakeRecorder(16), IDs: &IDAllocator{Client: c, APIReader: c},
				Checker: GatewayCheckerOf(registry)}
			for _, gw := range []*paygatev1.Gateway{a, b} {
				if _, err := gr.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gw)}); err != nil {
					t.Fatalf("checking gateway %s: %v", gw.Name, err)
				}
				got := &paygatev1.Gateway{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(gw), got); err != nil {
					t.Fatal(err)
				}
				if !meta.IsStatusConditionTrue(got.Status.Conditions, paygatev1.ConditionProviderReady) {
					t.Fatalf("gateway %s is not in service: %+v", gw.Name, got.Status.Conditions)
				}
			}

			predictions := pp.Counters().Requests[fakepawapay.RoutePredictProvider]
			pr := &PaymentReconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(16), Providers: registry,
				Clock: testingclock.NewFakePassiveClock(now)}
			got := &paygatev1.Payment{}
			for range 4 { // push, then learn the outcome by status checks
				if _, err := pr.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}); err != nil {
					t.Fatalf("Reconcile: %v", err)
				}
				if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
					t.Fatal(err)
				}
				if got.Terminal() {
					break
				}
			}
			if got.Status.Phase != paygatev1.PaymentSuccess || got.Status.Gateway != tt.want ||
				len(got.Status.Attempts) != 1 || got.Status.Attempts[0].Gateway != tt.want {
				t.Fatalf("phase %q (%s), gateway %q, attempts %+v; want success through %s", got.Status.Phase, got.Status.Reason,
					got.Status.Gateway, got.Status.Attempts, tt.want)
			}
			if n := pp.Counters().Requests[fakepawapay.RoutePredictProvider] - predictions; n != 1 {
				t.Errorf("%d predictions asked; want 1", n)
			}
			if _, ok := pp.Status(fakepawapay.OpDeposit, provider.PawapayDepositID(got.Status.Attempts[0].Reference)); !ok {
				t.Errorf("pawaPay has no deposit for attempt %s", got.Status.Attempts[0].Reference)
			}
		})
	}
}

// stubPredictor is Providers that predicts what it is told to, counting the questions.
type stubPredictor struct {
	code  string
	err   error
	asked []string // gateway asked with
	phone string
	// deadline is how long the question had.
	deadline time.Duration
}

func (s *stubPredictor) For(context.Context, *paygatev1.Gateway, paygatev1.Environment) (provider.Provider, error) {
	return nil, errors.New("stubPredictor carries no payment")
}

func (s *stubPredictor) PredictGatewayProvider(ctx context.Context, gw *paygatev1.Gateway, phone string) (string, error) {
	s.asked = append(s.asked, gw.Name)
	s.phone = phone
	if d, ok := ctx.Deadline(); ok {
		s.deadline = time.Until(d)
	}
	return s.code, s.err
}

// TestPredictionFallsBackToTheGatewayOrder: a prediction that fails, or names a provider none of
// the gateways carries, leaves the payment's order (never failing the payment); nothing is asked
// without ambiguity (fewer than two pawapay gateways in service), when the customer chose a
// gateway, or for a sandbox payment the simulator carries.
func TestPredictionFallsBackToTheGatewayOrder(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	inService := func(gw *paygatev1.Gateway) *paygatev1.Gateway {
		gw.Status.Conditions = []metav1.Condition{{Type: paygatev1.ConditionProviderReady, Status: metav1.ConditionTrue,
			Reason: ReasonProviderReady, LastTransitionTime: metav1.NewTime(now)}}
		return gw
	}
	const url = "http://127.0.0.1:1"
	upstream := &paygatev1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "c-upstream"},
		Spec: paygatev1.GatewaySpec{DisplayName: "c", Currency: "TZS", Type: paygatev1.GatewayTypeAutomatic,
			Provider: paygatev1.ProviderUpstream, Fees: paygatev1.GatewayFees{Percent: "1", Fixed: "0"}}}
	for _, tt := range []struct {
		name      string
		predictor stubPredictor
		gateways  []paygatev1.GatewayCode
		requested paygatev1.GatewayCode
		sandbox   bool
		want      paygatev1.GatewayCode
		asks      bool
	}{
		{name: "prediction fails: the first", predictor: stubPredictor{err: errors.New("pawaPay answered HTTP 503")},
			gateways: []paygatev1.GatewayCode{"a-vodacom", "b-airtel"}, want: "a-vodacom", asks: true},
		{name: "prediction names no gateway's provider: the first", predictor: stubPredictor{code: "HALOTEL_TZA"},
			gateways: []paygatev1.GatewayCode{"a-vodacom", "b-airtel"}, want: "a-vodacom", asks: true},
		{name: "prediction matches the second", predictor: stubPredictor{code: "AIRTEL_TZA"},
			gateways: []paygatev1.GatewayCode{"a-vodacom", "b-airtel"}, want: "b-airtel", asks: true},
		{name: "prediction matches a pawapay gateway after an upstream one", predictor: stubPredictor{code: "AIRTEL_TZA"},
			gateways: []paygatev1.GatewayCode{"c-upstream", "a-vodacom", "b-airtel"}, want: "b-airtel", asks: true},
		{name: "one pawapay gateway: no question", predictor: stubPredictor{code: "VODACOM_TZA"},
			gateways: []paygatev1.GatewayCode{"c-upstream", "a-vodacom"}, want: "c-upstream"},
		{name: "the other pawapay gateway is out of service: no question", predictor: stubPredictor{code: "AIRTEL_TZA"},
			gateways: []paygatev1.GatewayCode{"a-vodacom", "d-airtel-down"}, want: "a-vodacom"},
		{name: "the customer chose a gateway: no question", predictor: stubPredictor{code: "AIRTEL_TZA"},
			gateways: []paygatev1.GatewayCode{"a-vodacom", "b-airtel"}, requested: "a-vodacom", want: "a-vodacom"},
		{name: "a sandbox payment goes to the simulator: no question", predictor: stubPredictor{code: "AIRTEL_TZA"},
			gateways: []paygatev1.GatewayCode{"a-vodacom", "b-airtel"}, sandbox: true, want: "a-vodacom"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := productionPush(now, "+255684000001", tt.gateways...)
			p.Spec.PushRequest.Gateway = tt.requested
			if tt.sandbox {
				p.Spec.Environment = paygatev1.EnvironmentSandbox
			}
			c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(
				inService(pawapayGateway("a-vodacom", "VODACOM_TZA", url)), inService(pawapayGateway("b-airtel", "AIRTEL_TZA", url)),
				pawapayGateway("d-airtel-down", "AIRTEL_TZA", url), upstream.DeepCopy()).Build()
			pred := tt.predictor
			r := &PaymentReconciler{Client: c, Providers: &pred, Clock: testingclock.NewFakePassiveClock(now)}
			gw, err := r.chooseGateway(ctx, c, p, tt.requested)
			if err != nil || gw == nil {
				t.Fatalf("chooseGateway: %v, %v", gw, err)
			}
			if gw.Code() != tt.want {
				t.Errorf("chose %s; want %s", gw.Code(), tt.want)
			}
			switch {
			case !tt.asks && len(pred.asked) > 0:
				t.Errorf("asked pawaPay with %v; want no question", pred.asked)
			case tt.asks && (len(pred.asked) != 1 || pred.asked[0] != "a-vodacom" || pred.phone != "+255684000001"):
				t.Errorf("asked with %v about %q; want one question with the first pawapay gateway about the push's phone", pred.asked, pred.phone)
			case tt.asks && (pred.deadline <= 0 || pred.deadline > PredictTimeout):
				t.Errorf("the question had %s; want at most %s", pred.deadline, PredictTimeout)
			}
		})
	}
}
