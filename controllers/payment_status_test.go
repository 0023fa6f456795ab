// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/provider"
)

// stubProvider answers every push and status query alike.
type stubProvider struct {
	res provider.Result
	err func() error
}

func (s stubProvider) answer() (provider.Result, error) {
	if s.err != nil {
		return provider.Result{}, s.err()
	}
	return s.res, nil
}

func (s stubProvider) Capabilities() provider.Capabilities {
	return provider.Capabilities{Deduplicates: true}
}

func (s stubProvider) Push(context.Context, provider.PushRequest) (provider.Result, error) {
	return s.answer()
}

func (s stubProvider) PushStatus(context.Context, provider.PushRequest) (provider.Result, error) {
	return s.answer()
}

func (s stubProvider) Disburse(context.Context, provider.DisbursementRequest) (provider.Result, error) {
	return provider.Result{}, errors.New("not used")
}

func (s stubProvider) DisbursementStatus(context.Context, provider.DisbursementRequest) (provider.Result, error) {
	return provider.Result{}, errors.New("not used")
}

type stubProviders struct{ p provider.Provider }

func (s stubProviders) For(context.Context, *paygatev1.Gateway, paygatev1.Environment) (provider.Provider, error) {
	return s.p, nil
}

// paymentInFlight is a payment whose one attempt the provider accepted and the customer has not
// answered yet.
func paymentInFlight(now time.Time, env paygatev1.Environment, fees paygatev1.GatewayFees) *paygatev1.Payment {
	return &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "trx-a", Generation: 1},
		Spec: paygatev1.PaymentSpec{
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: env,
			Amount: "1500", Currency: "TZS", Mode: paygatev1.PaymentModePush, Gateways: []paygatev1.GatewayCode{"mpesa-tz"},
			ExpiresAt:   metav1.NewTime(now.Add(30 * time.Minute)),
			PushRequest: &paygatev1.PushRequest{Sequence: 1, Phone: "+255712345678", RequestedAt: metav1.NewMicroTime(now)},
		},
		Status: paygatev1.PaymentStatus{Phase: paygatev1.PaymentPending, Gateway: "mpesa-tz", Attempts: []paygatev1.PushAttempt{{
			Sequence: 1, Reference: "shop.trx-a.1", Gateway: "mpesa-tz", Phase: paygatev1.AttemptPending, Fees: fees,
			StartedAt: metav1.NewMicroTime(now),
		}}},
	}
}

// TestPaymentReadyReasons: a failed pass says on Ready whether the provider or the Kubernetes API
// failed, in words that do not change from one retry to the next, so retries do not rewrite
// status.
func TestPaymentReadyReasons(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tries := 0
	// Each failure's text differs on every try, as real ones do (addresses, times, ids).
	changing := func(what string) func() error {
		return func() error {
			tries++
			return fmt.Errorf("%s (try %d at %s)", what, tries, time.Now().Format(time.RFC3339Nano))
		}
	}
	gatewayGetFails := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*paygatev1.Gateway); ok {
			return apierrors.NewInternalError(changing("etcdserver: request timed out")())
		}
		return c.Get(ctx, key, obj, opts...)
	}}
	tests := []struct {
		name       string
		env        paygatev1.Environment
		provider   stubProvider
		funcs      interceptor.Funcs
		wantReason string
	}{
		{"the provider does not answer", paygatev1.EnvironmentSandbox, stubProvider{err: changing("dial tcp 10.0.0.7:443: connection refused")}, interceptor.Funcs{}, ReasonProviderUnreachable},
		{"the Kubernetes API fails", paygatev1.EnvironmentProduction, stubProvider{res: provider.Result{Status: provider.StatusPending}}, gatewayGetFails, ReasonKubernetesAPIError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := paymentInFlight(now, tt.env, paygatev1.GatewayFees{Percent: "2.5"})
			writes := 0
			funcs := tt.funcs
			funcs.SubResourceUpdate = func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				writes++
				return c.SubResource(sub).Update(ctx, obj, opts...)
			}
			c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(p).WithStatusSubresource(p).WithInterceptorFuncs(funcs).Build()
			r := &PaymentReconciler{Client: c, Recorder: events.NewFakeRecorder(16), Providers: stubProviders{tt.provider},
				Clock: testingclock.NewFakePassiveClock(now)}
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}
			for pass := 1; pass <= 3; pass++ {
				if _, err := r.Reconcile(context.Background(), req); err == nil {
					t.Fatalf("pass %d: no error", pass)
				}
			}
			got := &paygatev1.Payment{}
			if err := c.Get(context.Background(), req.NamespacedName, got); err != nil {
				t.Fatal(err)
			}
			ready := meta.FindStatusCondition(got.Status.Conditions, paygatev1.ConditionReady)
			if ready == nil || ready.Reason != tt.wantReason || ready.Status != metav1.ConditionFalse {
				t.Fatalf("Ready %+v, want False with reason %s", ready, tt.wantReason)
			}
			if strings.Contains(ready.Message, "(try") || strings.ContainsAny(ready.Message, "0123456789") {
				t.Errorf("Ready message %q carries the error's text", ready.Message)
			}
			if writes != 1 {
				t.Errorf("%d status writes over 3 failing passes, want 1: a retry must not rewrite status", writes)
			}
		})
	}
}

// TestFeeNotComputedHasItsOwnReason: a payment settled without a fee says so with a Warning event
// of its own reason; a normal settlement records no Event at all.
func TestFeeNotComputedHasItsOwnReason(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	p := paymentInFlight(now, paygatev1.EnvironmentSandbox, paygatev1.GatewayFees{Percent: "not-a-number"})
	c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(p).WithStatusSubresource(p).Build()
	rec := events.NewFakeRecorder(16)
	r := &PaymentReconciler{Client: c, Recorder: rec, Clock: testingclock.NewFakePassiveClock(now),
		Providers: stubProviders{stubProvider{res: provider.Result{Status: provider.StatusSuccess}}}}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}); err != nil {
		t.Fatal(err)
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "Warning "+ReasonFeeNotComputed+" ") {
		t.Fatalf("events %q, want one FeeNotComputed warning (a settlement records no Event)", got)
	}
}
