// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
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
	"github.com/paygate/paygate/pkg/paygate"
)

var rulesNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func rulesPayment(mods ...func(*paygatev1.Payment)) *paygatev1.Payment {
	p := &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "trx-" + strings.Repeat("b", 24)},
		Spec: paygatev1.PaymentSpec{
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			MerchantReference: "order-1", Amount: "1500000.00", Currency: "TZS", Mode: paygatev1.PaymentModeHosted,
			ExpiresAt: metav1.NewTime(rulesNow.Add(30 * time.Minute)),
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func rulesGateway(code string, currency paygatev1.CurrencyCode, mods ...func(*paygatev1.Gateway)) *paygatev1.Gateway {
	g := &paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: code},
		Spec: paygatev1.GatewaySpec{DisplayName: "Gateway " + code, Currency: currency, Type: paygatev1.GatewayTypeAutomatic,
			Provider: paygatev1.ProviderSandbox},
	}
	for _, m := range mods {
		m(g)
	}
	return g
}

// checkoutServer serves hosted checkout over a fake cluster holding objs; it returns the server,
// its cluster and the signed link of p.
func checkoutServer(p *paygatev1.Payment, objs ...client.Object) (*Server, client.Client, string) {
	c := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(append(objs, p)...).
		WithIndex(&paygatev1.Payment{}, index.PaymentName, func(o client.Object) []string { return []string{o.GetName()} }).
		WithIndex(&paygatev1.Payment{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).Build()
	s := New(Options{Cache: c, APIReader: c, Writer: c, CheckoutKey: make([]byte, 32), Clock: testingclock.NewFakePassiveClock(rulesNow)})
	expires := strconv.FormatInt(p.Spec.ExpiresAt.Unix(), 10)
	return s, c, "/checkout/" + p.Name + "?expires=" + expires + "&signature=" + s.checkoutSignature(p.Name, expires)
}

func getPage(t *testing.T, s *Server, link string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, link, nil))
	return rec.Code, rec.Body.String()
}

var gatewayRadio = regexp.MustCompile(`name="gateway" value="([a-z0-9-]+)"`)

// TestCheckoutGateways: the page lists the payment's gateways in the order the payment recorded
// them (eligibility.Order), keeping only those that still serve the payment (eligibility.Serves).
func TestCheckoutGateways(t *testing.T) {
	p := rulesPayment(func(p *paygatev1.Payment) {
		p.Spec.Gateways = []paygatev1.GatewayCode{"tigo-tz", "mpesa-tz", "bank-tz", "mpesa-ke", "gone-tz", "halo-tz", "airtel-tz"}
	})
	s, _, link := checkoutServer(p,
		rulesGateway("airtel-tz", "TZS"), rulesGateway("mpesa-tz", "TZS"), rulesGateway("tigo-tz", "TZS"),
		rulesGateway("bank-tz", "TZS", func(g *paygatev1.Gateway) { g.Spec.Type = paygatev1.GatewayTypeManual }),
		rulesGateway("halo-tz", "TZS", func(g *paygatev1.Gateway) { g.Spec.Active = new(bool) }),
		rulesGateway("mpesa-ke", "KES"),
	)
	status, body := getPage(t, s, link)
	if status != http.StatusOK {
		t.Fatalf("GET: %d\n%s", status, body)
	}
	var got []string
	for _, m := range gatewayRadio.FindAllStringSubmatch(body, -1) {
		got = append(got, m[1])
	}
	if want := []string{"tigo-tz", "mpesa-tz", "airtel-tz"}; !slices.Equal(got, want) {
		t.Errorf("gateways shown %v, want %v", got, want)
	}
}

// TestCheckoutAmount: amounts are written as people in the currency's country read them.
func TestCheckoutAmount(t *testing.T) {
	for _, tt := range []struct {
		amount   paygatev1.Decimal
		currency paygatev1.CurrencyCode
		want     string
	}{
		{"1500000.00", "TZS", "TZS 1,500,000"},
		{"1500.50", "KES", "KES 1,500.50"},
		{"15000", "XOF", "XOF 15\u202f000"},
	} {
		t.Run(string(tt.currency), func(t *testing.T) {
			p := rulesPayment(func(p *paygatev1.Payment) { p.Spec.Amount, p.Spec.Currency = tt.amount, tt.currency })
			s, _, link := checkoutServer(p)
			_, body := getPage(t, s, link)
			if !strings.Contains(body, `<p class="amount">`+tt.want+`</p>`) {
				t.Errorf("the page does not show the amount as %q:\n%s", tt.want, body)
			}
			if !strings.Contains(body, tt.want+`</button>`) {
				t.Errorf("the Pay button does not show the amount as %q", tt.want)
			}
		})
	}
}

// TestCheckoutExpiry: the page shows a payment as expired exactly when the payment controller
// expires it (Payment.Expired).
func TestCheckoutExpiry(t *testing.T) {
	expiresIn := func(d time.Duration) func(*paygatev1.Payment) {
		return func(p *paygatev1.Payment) { p.Spec.ExpiresAt = metav1.NewTime(rulesNow.Add(d)) }
	}
	attempt := func(phase paygatev1.AttemptPhase) func(*paygatev1.Payment) {
		return func(p *paygatev1.Payment) {
			p.Spec.PushRequest = &paygatev1.PushRequest{Sequence: 1, Phone: "+255712345678", RequestedAt: metav1.NewMicroTime(rulesNow.Add(-time.Hour))}
			p.Status.Attempts = []paygatev1.PushAttempt{{Sequence: 1, Reference: "r", Gateway: "mpesa-tz", Phase: phase}}
		}
	}
	for _, tt := range []struct {
		name   string
		p      *paygatev1.Payment
		status int
		marker string
	}{
		{"a second left: the form", rulesPayment(expiresIn(time.Second)), http.StatusOK, `name="phone"`},
		{"at expiresAt exactly: expired", rulesPayment(expiresIn(0)), http.StatusGone, "has expired"},
		{"prompt with the customer after the end: expired, as the controller fails it", rulesPayment(expiresIn(-time.Second), attempt(paygatev1.AttemptPending)), http.StatusGone, "has expired"},
		{"provider unsure after the end: expired too (the attempt is watched; docs/payments.md)", rulesPayment(expiresIn(-time.Minute), attempt(paygatev1.AttemptAmbiguous)), http.StatusGone, "has expired"},
		{"failed with EXPIRED_SESSION", rulesPayment(func(p *paygatev1.Payment) {
			p.Status.Phase, p.Status.Reason = paygatev1.PaymentFailed, string(paygatev1.FailureExpiredSession)
		}), http.StatusGone, "has expired"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _, link := checkoutServer(tt.p)
			status, body := getPage(t, s, link)
			if status != tt.status || !strings.Contains(body, tt.marker) {
				t.Errorf("GET: %d, want %d with %q:\n%s", status, tt.status, tt.marker, body)
			}
		})
	}
}

// TestPushAtTheEndOfTheSession: a push asked for when the session has ended (at expiresAt
// exactly, as the controller counts it) is refused, not recorded for a push that never comes.
func TestPushAtTheEndOfTheSession(t *testing.T) {
	for _, tt := range []struct {
		left      time.Duration
		wantLabel string
	}{
		{time.Second, ""},
		{0, string(paygatev1.FailureExpiredSession)},
		{-time.Second, string(paygatev1.FailureExpiredSession)},
	} {
		p := rulesPayment(func(p *paygatev1.Payment) {
			p.Spec.ExpiresAt = metav1.NewTime(rulesNow.Add(tt.left))
			p.Spec.Gateways = []paygatev1.GatewayCode{"mpesa-tz"}
		})
		s, c, _ := checkoutServer(p)
		_, apiErr := s.requestPush(context.Background(), func(bool) (*paygatev1.Payment, error) {
			cur := &paygatev1.Payment{}
			return cur, c.Get(context.Background(), client.ObjectKeyFromObject(p), cur)
		}, "+255712345678", "mpesa-tz")
		label := ""
		if apiErr != nil {
			label = apiErr.Label
		}
		if label != tt.wantLabel {
			t.Errorf("%v left: push answered %v, want label %q", tt.left, apiErr, tt.wantLabel)
		}
	}
}

// TestABadStoredAmountIsAServerError: a stored amount that cannot be rendered exactly (here one
// that rounding would change) is never answered as another amount: reads answer SERVER_ERROR.
func TestABadStoredAmountIsAServerError(t *testing.T) {
	var writer client.Writer
	f := newExchangeFixture(t, func(o *Options) { writer = o.Writer })
	ctx := context.Background()
	trx := TrxID("uid-duka", paygatev1.EnvironmentSandbox, "order-bad")
	if err := writer.Create(ctx, &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: trx,
			Labels: map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox"}},
		Spec: paygatev1.PaymentSpec{
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			MerchantReference: "order-bad", Amount: "1500.555", Currency: "TZS", Mode: paygatev1.PaymentModeHosted,
			ExpiresAt: metav1.NewTime(time.Now().Add(time.Hour)),
		},
	}); err != nil {
		t.Fatal(err)
	}
	c := paygate.New(f.srv.URL, f.duka)
	for what, call := range map[string]func() error{
		"get":    func() error { _, err := c.GetPayment(ctx, trx); return err },
		"verify": func() error { _, err := c.VerifyPayment(ctx, trx); return err },
		"list":   func() error { _, err := c.ListPayments(ctx, paygate.ListOptions{}); return err },
	} {
		var e *paygate.Error
		if err := call(); !errors.As(err, &e) || e.StatusCode != http.StatusInternalServerError || e.Label != LabelServerError {
			t.Errorf("%s: %v, want a 500 %s", what, err, LabelServerError)
		}
	}
	// The settled payment beside it still reads.
	if _, err := c.GetPayment(ctx, f.settledTrxID); err != nil {
		t.Errorf("get the settled payment: %v", err)
	}
}
