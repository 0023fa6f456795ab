// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/index"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/money"
)

// TestCheckoutPageReadsPastAStaleCacheAfterPay: the page the customer lands on after "Pay" must
// show the waiting state even when this replica's cache has not seen the push request yet; a
// plain visit keeps answering from the cache.
func TestCheckoutPageReadsPastAStaleCacheAfterPay(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	trx := "trx-" + strings.Repeat("a", 24)
	pending := &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: trx},
		Spec: paygatev1.PaymentSpec{
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Amount: "15000", Currency: "TZS", ExpiresAt: metav1.NewTime(now.Add(30 * time.Minute)),
		},
	}
	pushed := pending.DeepCopy()
	pushed.Spec.PushRequest = &paygatev1.PushRequest{Sequence: 1, Phone: "+255712345678", RequestedAt: metav1.NewMicroTime(now)}

	build := func(p *paygatev1.Payment, field string) client.Client {
		return fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(p).
			WithIndex(&paygatev1.Payment{}, field, func(o client.Object) []string { return []string{o.GetName()} }).Build()
	}
	s := New(Options{
		Cache: build(pending, index.PaymentName), APIReader: build(pushed, "metadata.name"),
		CheckoutKey: make([]byte, 32), Clock: testingclock.NewFakePassiveClock(now),
	})
	expires := strconv.FormatInt(pending.Spec.ExpiresAt.Unix(), 10)
	link := "/checkout/" + trx + "?expires=" + expires + "&signature=" + s.checkoutSignature(trx, expires)

	for _, tc := range []struct {
		name, query, want string
	}{
		{"a visit answers from the cache", "", `name="phone"`},
		{"the page after Pay reads past a stale cache", "&pushed=1", "data-status-url="},
		{"a bad pushed parameter is ignored", "&pushed=x", `name="phone"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, link+tc.query, nil))
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), tc.want) {
				t.Fatalf("GET %s: %d, want a page with %s:\n%s", tc.query, rec.Code, tc.want, rec.Body)
			}
		})
	}
}

// TestPaymentIsNotRefusedForAGatewayTheCacheHasNotSeen: a gateway created or activated a moment
// ago may not be in this replica's cache yet; the payment request reads past the cache before it
// answers NO_PAYMENT_METHOD, and keeps the merchant's own selection when it does.
func TestPaymentIsNotRefusedForAGatewayTheCacheHasNotSeen(t *testing.T) {
	gateway := func(code string) *paygatev1.Gateway {
		return &paygatev1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Name: code},
			Spec: paygatev1.GatewaySpec{DisplayName: code, Currency: "TZS", Type: paygatev1.GatewayTypeAutomatic,
				Provider: paygatev1.ProviderSandbox, Fees: paygatev1.GatewayFees{Percent: "0", Fixed: "0"}},
		}
	}
	duka := &paygatev1.Merchant{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "duka"},
		Spec:       paygatev1.MerchantSpec{Currencies: []paygatev1.CurrencyCode{"TZS"}, Wallets: []paygatev1.Wallet{{Currency: "TZS"}}},
	}
	selection := func(merchant string, codes ...paygatev1.GatewayCode) *paygatev1.GatewaySelection {
		return &paygatev1.GatewaySelection{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: merchant + "-selection"},
			Spec:       paygatev1.GatewaySelectionSpec{MerchantRef: paygatev1.MerchantReference{Name: merchant}, Gateways: codes},
		}
	}
	live := []client.Object{gateway("mpesa-tz"), gateway("tigo-tz"), selection("duka", "tigo-tz"), selection("kahawa", "mpesa-tz")}
	emptyCache := fake.NewClientBuilder().WithScheme(kube.Scheme()).
		WithIndex(&paygatev1.GatewaySelection{}, index.SelectionMerchant, func(o client.Object) []string {
			return []string{o.(*paygatev1.GatewaySelection).Spec.MerchantRef.Name}
		}).Build()
	tzs, _ := money.LookupCurrency("TZS")
	req := &paymentRequest{Amount: money.MustParseAmount("1500"), Currency: tzs}
	c := &caller{merchant: duka, env: paygatev1.EnvironmentSandbox}

	for _, tt := range []struct {
		name    string
		api     []client.Object
		want    []string
		wantErr string
	}{
		{"read past the cache, keeping the merchant's own selection", live, []string{"tigo-tz"}, ""},
		{"nothing anywhere: refused", nil, nil, LabelNoPaymentMethod},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Options{Cache: emptyCache, APIReader: fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(tt.api...).Build(),
				CheckoutKey: make([]byte, 32)})
			got, _, apiErr := s.resolveGateways(context.Background(), c, req)
			if tt.wantErr != "" {
				if apiErr == nil || apiErr.Label != tt.wantErr {
					t.Fatalf("error %+v, want %s", apiErr, tt.wantErr)
				}
				return
			}
			if apiErr != nil {
				t.Fatalf("refused: %+v", apiErr)
			}
			var codes []string
			for _, g := range got {
				codes = append(codes, g.Name)
			}
			if !slices.Equal(codes, tt.want) {
				t.Fatalf("gateways %v, want %v", codes, tt.want)
			}
		})
	}
}

// TestAPushRefusalIsConfirmedPastAStaleCache: a second push a moment after the first, reusing its
// phone, must answer PUSH_IN_PROGRESS even when this replica's cache has not seen the first push
// yet (it would otherwise answer that the payment has no phone); nothing is written.
func TestAPushRefusalIsConfirmedPastAStaleCache(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	pending := &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "trx-" + strings.Repeat("b", 24)},
		Spec: paygatev1.PaymentSpec{
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			Amount: "15000", Currency: "TZS", ExpiresAt: metav1.NewTime(now.Add(30 * time.Minute)),
		},
	}
	pushed := pending.DeepCopy()
	pushed.Spec.PushRequest = &paygatev1.PushRequest{Sequence: 1, Phone: "+255712345678", RequestedAt: metav1.NewMicroTime(now)}
	writer := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(pushed.DeepCopy()).Build()
	s := New(Options{Writer: writer, CheckoutKey: make([]byte, 32), Clock: testingclock.NewFakePassiveClock(now)})
	var reads []bool
	load := func(live bool) (*paygatev1.Payment, error) {
		reads = append(reads, live)
		if live {
			return pushed.DeepCopy(), nil
		}
		return pending.DeepCopy(), nil // the cache, before the first push
	}
	out, refused := s.requestPush(context.Background(), load, "", "")
	if out != nil || refused == nil || refused.Label != LabelPushInProgress || refused.Status != http.StatusConflict {
		t.Fatalf("pushed %v, refused %+v; want 409 %s", out != nil, refused, LabelPushInProgress)
	}
	if !slices.Equal(reads, []bool{false, true}) {
		t.Errorf("reads %v, want the cache then past it", reads)
	}
	var got paygatev1.Payment
	if err := writer.Get(context.Background(), client.ObjectKeyFromObject(pushed), &got); err != nil || got.Spec.PushRequest.Sequence != 1 {
		t.Errorf("the payment after the refusal: %+v, %v", got.Spec.PushRequest, err)
	}
}
