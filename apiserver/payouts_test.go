// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/openapitest"
	"github.com/paygate/paygate/pkg/paygate"
)

// payoutFixture is the exchange fixture with duka able to pay out: KYB approved, a settlement
// number, the TZS gateway disbursing (1.5 % plus 100, at least 1000) and 9750.00 available in
// sandbox.
func payoutFixture(t *testing.T, mods ...func(*Options)) *exchangeFixture {
	t.Helper()
	f := newExchangeFixture(t, mods...)
	f.enablePayouts(t)
	return f
}

// enablePayouts lets duka pay out, as payoutFixture describes.
func (f *exchangeFixture) enablePayouts(t testing.TB) {
	t.Helper()
	ctx := t.Context()
	m := &paygatev1.Merchant{}
	if err := f.k8s.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "duka"}, m); err != nil {
		t.Fatal(err)
	}
	m.Spec.KYBStatus, m.Spec.SettlementNumber = paygatev1.KYBApproved, "+255712345678"
	if err := f.k8s.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	gw := &paygatev1.Gateway{}
	if err := f.k8s.Get(ctx, client.ObjectKey{Name: "tz-mpesa"}, gw); err != nil {
		t.Fatal(err)
	}
	gw.Spec.Payouts = &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: "1.5", Fixed: "100"}, MinAmount: ptr.To(paygatev1.Decimal("1000"))}
	if err := f.k8s.Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	b := &paygatev1.Balance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: paygatev1.BalanceName("duka", paygatev1.EnvironmentSandbox)},
		Spec:       paygatev1.BalanceSpec{MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox},
	}
	if err := f.k8s.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	f.setAvailable(t, "9750.00")
}

// setAvailable writes what the balance controller would: the available TZS balance of duka's
// sandbox.
func (f *exchangeFixture) setAvailable(t testing.TB, available string) {
	t.Helper()
	b := &paygatev1.Balance{}
	if err := f.k8s.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: paygatev1.BalanceName("duka", paygatev1.EnvironmentSandbox)}, b); err != nil {
		t.Fatal(err)
	}
	b.Status.Currencies = []paygatev1.CurrencyBalance{{Currency: "TZS", Available: paygatev1.Decimal(available), Settled: "9750.00", SettledPayments: 1}}
	if err := f.k8s.Update(t.Context(), b); err != nil {
		t.Fatal(err)
	}
}

func (f *exchangeFixture) payouts(t *testing.T) []paygatev1.Payout {
	t.Helper()
	var list paygatev1.PayoutList
	if err := f.k8s.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestOpenAPIPayoutExchanges drives the payout routes through the validating transport: the Go
// client's requests and every answer, errors included, must match the document.
func TestOpenAPIPayoutExchanges(t *testing.T) {
	f := payoutFixture(t)
	ctx := t.Context()
	c := f.client(openapitest.NewValidator(t, openAPIDocument, nil).StrictRequests(), f.duka)
	lenient := openapitest.NewValidator(t, openAPIDocument, nil)

	quote, err := c.PreviewPayout(ctx, paygate.PayoutRequest{Amount: "2003", Destination: "0712 345 678", CurrencyCode: "TZS"})
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	if quote.Amount != "2003.00" || quote.Fee != "130.05" || quote.PayableAmount != "1872.95" || quote.Currency != "TZS" {
		t.Errorf("preview: %+v, want 2003.00 - 130.05 (1.5 %% half up, plus 100) = 1872.95 TZS", quote)
	}
	created, err := c.CreatePayout(ctx, paygate.PayoutRequest{Amount: "2003"}, "payout-1")
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.Status != "pending" || created.Amount != quote.Amount || created.Fee != quote.Fee || created.PayableAmount != quote.PayableAmount {
		t.Errorf("create charged %+v, the preview quoted %+v", created, quote)
	}
	resp, err := c.Do(ctx, http.MethodPost, "/api/v1/payouts", []byte(`{"amount":2003}`), http.Header{"Idempotency-Key": {"payout-1"}})
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %v %+v", err, resp)
	}
	if got, err := c.GetPayout(ctx, created.ID); err != nil || got.ID != created.ID {
		t.Errorf("get: %+v, %v", got, err)
	}
	for _, opts := range []paygate.ListOptions{{}, {Limit: 1, Offset: 1}, {Status: "pending"}, {Status: "failed"}} {
		if _, err := c.ListPayouts(ctx, opts); err != nil {
			t.Errorf("list %+v: %v", opts, err)
		}
	}

	for name, tc := range map[string]struct {
		creds  paygate.Credentials
		method string
		target string
		body   string
		header http.Header
		status int
		label  string
	}{
		"a pending business":            {f.newcomer, "POST", "/api/v1/payouts", `{"amount":2000}`, nil, 403, LabelPayoutRejected},
		"a pending business's preview":  {f.newcomer, "POST", "/api/v1/payouts/preview", `{"amount":2000}`, nil, 403, LabelPayoutRejected},
		"another destination":           {f.duka, "POST", "/api/v1/payouts", `{"amount":2000,"destination":"+255754000111"}`, nil, 422, LabelValidationFailed},
		"another currency":              {f.duka, "POST", "/api/v1/payouts/preview", `{"amount":2000,"currency_code":"KES"}`, nil, 422, LabelValidationFailed},
		"a negative amount":             {f.duka, "POST", "/api/v1/payouts", `{"amount":-2000}`, nil, 422, LabelValidationFailed},
		"below the payout minimum":      {f.duka, "POST", "/api/v1/payouts", `{"amount":999}`, nil, 422, LabelInvalidAmount},
		"above the balance":             {f.duka, "POST", "/api/v1/payouts", `{"amount":9750.01}`, nil, 422, LabelInsufficientBalance},
		"a reused key":                  {f.duka, "POST", "/api/v1/payouts", `{"amount":2004}`, http.Header{"Idempotency-Key": {"payout-1"}}, 409, LabelIdempotencyKeyReused},
		"an unknown id":                 {f.duka, "GET", "/api/v1/payouts/6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f", "", nil, 404, LabelNotFound},
		"a malformed id":                {f.duka, "GET", "/api/v1/payouts/trx-1", "", nil, 404, LabelNotFound},
		"another merchant's payout":     {f.slow, "GET", "/api/v1/payouts/" + created.ID, "", nil, 404, LabelNotFound},
		"an unknown status":             {f.duka, "GET", "/api/v1/payouts?status=paid", "", nil, 422, LabelValidationFailed},
		"a pending business's list":     {f.newcomer, "GET", "/api/v1/payouts", "", nil, 200, ""},
		"the production list of others": {f.live, "GET", "/api/v1/payouts", "", nil, 200, ""},
	} {
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		resp, err := f.client(lenient, tc.creds).Do(ctx, tc.method, tc.target, body, tc.header)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if resp.StatusCode != tc.status || (tc.label != "" && !strings.Contains(string(resp.Body), `"error":"`+tc.label+`"`)) {
			t.Errorf("%s: %d %s, want %d %s", name, resp.StatusCode, resp.Body, tc.status, tc.label)
		}
	}
	if n := len(f.payouts(t)); n != 1 {
		t.Errorf("%d payouts, want 1", n)
	}
}

// TestPayoutRetryWhileTheFirstIsInFlight: a request that repeats an Idempotency-Key while the
// first request has created its payout but not stored its answer yet runs the create again. By
// then the balance may already count the payout's reservation; the retry must answer with the
// payout, never 422 INSUFFICIENT_BALANCE (which the key would then replay for ever).
func TestPayoutRetryWhileTheFirstIsInFlight(t *testing.T) {
	f := payoutFixture(t)
	ctx := t.Context()
	c := f.client(openapitest.NewValidator(t, openAPIDocument, nil), f.duka)
	first, err := c.CreatePayout(ctx, paygate.PayoutRequest{Amount: "6000"}, "burst")
	if err != nil {
		t.Fatal(err)
	}
	// Back to the moment before the first answer was stored, after the balance controller
	// reserved the payout.
	var keys paygatev1.IdempotencyKeyList
	if err := f.k8s.List(ctx, &keys); err != nil || len(keys.Items) != 1 {
		t.Fatalf("idempotency keys: %d, %v", len(keys.Items), err)
	}
	keys.Items[0].Spec.Response = nil
	if err := f.k8s.Update(ctx, &keys.Items[0]); err != nil {
		t.Fatal(err)
	}
	f.setAvailable(t, "3750.00")

	again, err := c.CreatePayout(ctx, paygate.PayoutRequest{Amount: "6000"}, "burst")
	if err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if again.ID != first.ID {
		t.Errorf("the retry answered payout %s, the first %s", again.ID, first.ID)
	}
	if n := len(f.payouts(t)); n != 1 {
		t.Errorf("%d payouts, want 1", n)
	}
	replay, err := c.CreatePayout(ctx, paygate.PayoutRequest{Amount: "6000"}, "burst")
	if err != nil || replay.ID != first.ID {
		t.Errorf("the stored answer: %+v, %v", replay, err)
	}
}

// TestPayoutIdempotencyKeyExpires: after 24 hours an Idempotency-Key is forgotten (docs/api.md,
// Idempotency), so it makes a new payout instead of answering with the old one.
func TestPayoutIdempotencyKeyExpires(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	f := payoutFixture(t, func(o *Options) { o.Clock = clk })
	c := paygate.New(f.srv.URL, f.duka)
	c.Now = clk.Now
	ctx := context.Background()
	first, err := c.CreatePayout(ctx, paygate.PayoutRequest{Amount: "2000"}, "daily")
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(25 * time.Hour)
	second, err := c.CreatePayout(ctx, paygate.PayoutRequest{Amount: "2500"}, "daily")
	if err != nil {
		t.Fatalf("the key after 24 hours: %v", err)
	}
	if second.ID == first.ID || second.Amount != "2500.00" {
		t.Errorf("the key after 24 hours answered %+v, the first payout was %s", second, first.ID)
	}
}

// enableKES makes duka a TZS and KES business: a Kenyan settlement number in
// spec.settlementNumbers beside the Tanzanian settlementNumber, a KES gateway disbursing (1 %
// plus 10, at least 100) and 5000.00 KES available in sandbox beside the 9750.00 TZS.
func (f *exchangeFixture) enableKES(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	f.updateDuka(t, func(m *paygatev1.Merchant) {
		m.Spec.Currencies = []paygatev1.CurrencyCode{"TZS", "KES"}
		m.Spec.Wallets = []paygatev1.Wallet{{Currency: "TZS"}, {Currency: "KES"}}
		m.Spec.SettlementNumbers = []paygatev1.CurrencySettlementNumber{{Currency: "KES", Number: "+254712345678"}}
	})
	gw := &paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "ke-mpesa"},
		Spec: paygatev1.GatewaySpec{DisplayName: "M-Pesa Kenya", Currency: "KES", Type: paygatev1.GatewayTypeAutomatic, Provider: paygatev1.ProviderSandbox,
			Payouts: &paygatev1.PayoutSchedule{Fees: paygatev1.GatewayFees{Percent: "1", Fixed: "10"}, MinAmount: ptr.To(paygatev1.Decimal("100"))}},
	}
	if err := f.k8s.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	b := &paygatev1.Balance{}
	if err := f.k8s.Get(ctx, client.ObjectKey{Namespace: "shop", Name: paygatev1.BalanceName("duka", paygatev1.EnvironmentSandbox)}, b); err != nil {
		t.Fatal(err)
	}
	b.Status.Currencies = append(b.Status.Currencies, paygatev1.CurrencyBalance{Currency: "KES", Available: "5000.00", Settled: "5000.00", SettledPayments: 1})
	if err := f.k8s.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
}

// updateDuka changes duka's Merchant.
func (f *exchangeFixture) updateDuka(t *testing.T, mod func(*paygatev1.Merchant)) {
	t.Helper()
	m := &paygatev1.Merchant{}
	if err := f.k8s.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: "duka"}, m); err != nil {
		t.Fatal(err)
	}
	mod(m)
	if err := f.k8s.Update(t.Context(), m); err != nil {
		t.Fatal(err)
	}
}

// TestPayoutCurrencyChoosesSettlementNumber: a business with a settlement number per currency
// chooses the payout's currency with currency_code, and the payout goes to that currency's
// number; without currency_code it is made as before, in the currency of settlementNumber.
func TestPayoutCurrencyChoosesSettlementNumber(t *testing.T) {
	f := payoutFixture(t)
	f.enableKES(t)
	ctx := t.Context()
	c := f.client(openapitest.NewValidator(t, openAPIDocument, nil).StrictRequests(), f.duka)

	quote, err := c.PreviewPayout(ctx, paygate.PayoutRequest{Amount: "1000", CurrencyCode: "KES", Destination: "0712 345 678"})
	if err != nil {
		t.Fatalf("KES preview: %v", err)
	}
	if quote.Amount != "1000.00" || quote.Fee != "20.00" || quote.PayableAmount != "980.00" || quote.Currency != "KES" {
		t.Errorf("KES preview: %+v, want 1000.00 - 20.00 (1 %% plus 10, the KES gateway's) = 980.00 KES", quote)
	}
	kes, err := c.CreatePayout(ctx, paygate.PayoutRequest{Amount: "1000", CurrencyCode: "KES"}, "kes-1")
	if err != nil {
		t.Fatalf("KES create: %v", err)
	}
	tzs, err := c.CreatePayout(ctx, paygate.PayoutRequest{Amount: "2000"}, "tzs-1")
	if err != nil {
		t.Fatalf("create without currency_code: %v", err)
	}
	tzsNamed, err := c.CreatePayout(ctx, paygate.PayoutRequest{Amount: "2000", CurrencyCode: "TZS", Destination: "0712 345 678"}, "tzs-2")
	if err != nil {
		t.Fatalf("TZS create: %v", err)
	}
	for _, tc := range []struct {
		id, currency, fee string
		dest              paygatev1.MobileNumber
	}{
		{kes.ID, "KES", "20.00", "+254712345678"},
		{tzs.ID, "TZS", "130.00", "+255712345678"},
		{tzsNamed.ID, "TZS", "130.00", "+255712345678"},
	} {
		p := &paygatev1.Payout{}
		if err := f.k8s.Get(ctx, client.ObjectKey{Namespace: "shop", Name: tc.id}, p); err != nil {
			t.Fatal(err)
		}
		if string(p.Spec.Currency) != tc.currency || p.Spec.Destination != tc.dest || string(p.Spec.Fee) != tc.fee {
			t.Errorf("payout %s: %s to %s, fee %s; want %s to %s, fee %s", tc.id, p.Spec.Currency, p.Spec.Destination, p.Spec.Fee, tc.currency, tc.dest, tc.fee)
		}
	}
	if kes.Destination != "+254*******78" || kes.Currency != "KES" {
		t.Errorf("the KES payout record shows %s %s, want KES to +254*******78", kes.Currency, kes.Destination)
	}

	lenient := f.client(openapitest.NewValidator(t, openAPIDocument, nil), f.duka)
	for name, tc := range map[string]struct {
		body   string
		status int
		label  string
		field  string // the errors field a 422 names, and its message's start
		msg    string
	}{
		"the Tanzanian number as a KES destination": {`{"amount":1000,"currency_code":"KES","destination":"+255712345678"}`, 422, LabelValidationFailed,
			"destination", "The destination must be the approved settlement number for KES."},
		"the Kenyan number as a TZS destination": {`{"amount":2000,"destination":"+254712345678"}`, 422, LabelValidationFailed,
			"destination", "The destination must be the approved settlement number for TZS."},
		"a currency the business is not enabled for": {`{"amount":1000,"currency_code":"UGX"}`, 422, LabelValidationFailed,
			"currency_code", "The currency_code must be one of this business's currencies: TZS and KES."},
		"a lower-case currency": {`{"amount":1000,"currency_code":"kes"}`, 422, LabelValidationFailed,
			"currency_code", "The currency_code must be one of this business's currencies: TZS and KES."},
		"a currency that is not a string": {`{"amount":1000,"currency_code":404}`, 422, LabelValidationFailed,
			"currency_code", "The currency_code field must be a string."},
		"too many decimals for KES": {`{"amount":1000.001,"currency_code":"KES"}`, 422, LabelValidationFailed,
			"amount", "The amount has too many decimal places for KES."},
		"below the KES gateway's minimum": {`{"amount":99,"currency_code":"KES"}`, 422, LabelInvalidAmount, "amount", "The amount is below the minimum payout of 100.00 KES"},
		// Less than the TZS balance, more than the KES one: each currency has its own.
		"above the KES balance": {`{"amount":5000.01,"currency_code":"KES"}`, 422, LabelInsufficientBalance, "amount", "The amount is more than the available balance."},
	} {
		resp, err := lenient.Do(ctx, http.MethodPost, "/api/v1/payouts", []byte(tc.body), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if resp.StatusCode != tc.status || !strings.Contains(string(resp.Body), `"error":"`+tc.label+`"`) ||
			!strings.Contains(string(resp.Body), `"`+tc.field+`":["`+tc.msg) {
			t.Errorf("%s: %d %s, want %d %s with errors.%s %q", name, resp.StatusCode, resp.Body, tc.status, tc.label, tc.field, tc.msg)
		}
	}
	if n := len(f.payouts(t)); n != 3 {
		t.Errorf("%d payouts, want 3", n)
	}
}

// TestPayoutCurrencyGates: the settlement-number gate is asked for the payout's currency.
func TestPayoutCurrencyGates(t *testing.T) {
	f := payoutFixture(t)
	f.enableKES(t)
	ctx := t.Context()
	c := f.client(openapitest.NewValidator(t, openAPIDocument, nil), f.duka)
	post := func(target, body string) *paygate.Response {
		t.Helper()
		resp, err := c.Do(ctx, http.MethodPost, target, []byte(body), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	expect := func(what string, resp *paygate.Response, status int, want string) {
		t.Helper()
		if resp.StatusCode != status || !strings.Contains(string(resp.Body), want) {
			t.Errorf("%s: %d %s, want %d with %q", what, resp.StatusCode, resp.Body, status, want)
		}
	}

	// Only the Tanzanian number: KES is enabled, but has no settlement number.
	f.updateDuka(t, func(m *paygatev1.Merchant) { m.Spec.SettlementNumbers = nil })
	for _, target := range []string{"/api/v1/payouts/preview", "/api/v1/payouts"} {
		expect(target+" in KES without a Kenyan number", post(target, `{"amount":1000,"currency_code":"KES"}`), 403,
			`"error":"Payout Rejected","message":"Payouts in KES need a settlement number for KES on file; ask the platform team to add one."`)
		expect(target+" in TZS", post(target, `{"amount":2000,"currency_code":"TZS"}`), 200, `"currency":"TZS"`)
	}

	// Only per-currency numbers, in both currencies: currency_code must choose.
	f.updateDuka(t, func(m *paygatev1.Merchant) {
		m.Spec.SettlementNumber = ""
		m.Spec.SettlementNumbers = []paygatev1.CurrencySettlementNumber{{Currency: "KES", Number: "+254712345678"}, {Currency: "TZS", Number: "+255754000111"}}
	})
	expect("no currency_code among several numbers", post("/api/v1/payouts/preview", `{"amount":2000}`), 422,
		`"currency_code":["This business has settlement numbers in TZS and KES; the currency_code must name one."]`)
	expect("TZS to its per-currency number", post("/api/v1/payouts/preview", `{"amount":2000,"currency_code":"TZS","destination":"0754 000 111"}`), 200, `"currency":"TZS"`)
	expect("TZS to the former single number", post("/api/v1/payouts/preview", `{"amount":2000,"currency_code":"TZS","destination":"0712 345 678"}`), 422,
		`"destination":["The destination must be the approved settlement number for TZS."]`)

	// Only a Kenyan per-currency number: the payout defaults to KES.
	f.updateDuka(t, func(m *paygatev1.Merchant) {
		m.Spec.SettlementNumbers = []paygatev1.CurrencySettlementNumber{{Currency: "KES", Number: "+254712345678"}}
	})
	expect("no currency_code with one Kenyan number", post("/api/v1/payouts/preview", `{"amount":1000}`), 200, `"currency":"KES"`)
	expect("TZS without a Tanzanian number", post("/api/v1/payouts/preview", `{"amount":2000,"currency_code":"TZS"}`), 403,
		"Payouts in TZS need a settlement number for TZS on file")

	// No settlement number at all: the gate answers before the body is read, as before.
	f.updateDuka(t, func(m *paygatev1.Merchant) { m.Spec.SettlementNumbers = nil })
	expect("no settlement number", post("/api/v1/payouts", `{"amount":"not a number","currency_code":"KES"}`), 403,
		"Payouts need a settlement number on file; ask the platform team to add one.")
	if n := len(f.payouts(t)); n != 1 {
		t.Errorf("%d payouts, want 1 (the TZS create)", n)
	}
}
