// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/billing"
	"github.com/paygate/paygate/internal/money"
)

// Decoder-level fuzz targets: one request decoder each, fed arbitrary bodies (or queries). Every
// refusal must be an APIError with a documented label and status (checkAPIError), and anything
// accepted must be something the API can store. FuzzPaymentRequest (fuzz_test.go) covers the
// payment create bodies, the legacy form included. The decoders whose code lives inside their
// handler (cancel, advance, list queries) are fuzzed through that one route, on the fuzz fixture.

var e164Pattern = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// checkAPIError fails unless e is a refusal docs/api.md documents: a known label with its status,
// a message, and per-field messages that are not empty.
func checkAPIError(t *testing.T, e *APIError) {
	t.Helper()
	if !slices.Contains(documentedErrors[e.Label], e.Status) || strings.TrimSpace(e.Message) == "" {
		t.Fatalf("an undocumented refusal: %d %+v", e.Status, e)
	}
	for field, msgs := range e.Errors {
		if field == "" || len(msgs) == 0 || slices.Contains(msgs, "") {
			t.Fatalf("errors[%q] = %q in %+v", field, msgs, e)
		}
	}
}

// checkValidation fails unless v, when not empty, makes a documented 422.
func checkValidation(t *testing.T, v validation) {
	t.Helper()
	if len(v) > 0 {
		checkAPIError(t, validationError(v))
	}
}

// FuzzPushRequest feeds arbitrary bodies to the push decoder and the push rules
// (pushPayment, addPushRequest) on a pending payment with or without a number, in one of three
// currencies: a refusal is documented; an accepted push has the next sequence and an E.164 number.
func FuzzPushRequest(f *testing.F) {
	for _, seed := range []string{
		`{"customer_phone":"+255712345678"}`, `{"customer_phone":"0712 345 678"}`, `{}`, ``, `{"customer_phone":null}`,
		`{"customer_phone":255712345678}`, `{"customer_phone":"+1"}`, `{"customer_phone":"07123456789012345678901234567890"}`,
		`{"customer_phone":"+256 712 345678","gateway":"x"}`, `[]`, `{"customer_phone":"\u0000"}`, "\xff",
	} {
		f.Add([]byte(seed), uint8(0))
		f.Add([]byte(seed), uint8(5))
	}
	s := New(Options{CheckoutKey: make([]byte, 32)})
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		p := rulesPayment(func(p *paygatev1.Payment) {
			p.Spec.Currency = []paygatev1.CurrencyCode{"TZS", "KES", "UGX"}[mode%3]
			p.Spec.ExpiresAt = metav1.NewTime(time.Now().Add(time.Hour))
			if mode&4 != 0 {
				p.Spec.Customer.Phone = "+255712345678"
			}
		})
		fields, apiErr := decodeObject(body)
		if apiErr != nil {
			checkAPIError(t, apiErr)
			return
		}
		v := validation{}
		raw, _ := fields.str(v, "customer_phone")
		if len(v) > 0 {
			checkValidation(t, v)
			return
		}
		if apiErr := s.addPushRequest(p, raw, ""); apiErr != nil {
			checkAPIError(t, apiErr)
			return
		}
		if pr := p.Spec.PushRequest; pr == nil || pr.Sequence != 1 || !e164Pattern.MatchString(string(pr.Phone)) {
			t.Fatalf("accepted push %+v", pr)
		}
	})
}

// FuzzPayoutRequest feeds arbitrary bodies to the payout decoder (parsePayout: preview and
// create) for duka, which may pay out through the fixture's disbursing gateway: a refusal is
// documented; an accepted quote is in TZS, within the gateway's minimum, and amount = fee +
// payable with payable above zero.
func FuzzPayoutRequest(f *testing.F) {
	for _, seed := range []string{
		`{"amount":2003}`, `{"amount":"2003.00","currency_code":"TZS","destination":"0712 345 678"}`, `{"amount":2003.005}`,
		`{"amount":0}`, `{"amount":-1}`, `{"amount":999}`, `{"amount":1e30}`, `{"amount":"1e3"}`, `{"amount":true}`,
		`{"amount":1000,"currency_code":"KES"}`, `{"amount":1000,"destination":"+255700000000"}`, `{}`, ``, `[1]`, `{"amount":1000}{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fx := newFuzzFixture(t)
		m := &paygatev1.Merchant{}
		if err := fx.k8s.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: "duka"}, m); err != nil {
			t.Fatal(err)
		}
		req, apiErr := fx.api.parsePayout(t.Context(), &caller{merchant: m, env: paygatev1.EnvironmentSandbox, body: body})
		if apiErr != nil {
			if apiErr.Status >= 500 {
				t.Fatalf("a server error: %+v\n%s", apiErr, fx.logs)
			}
			checkAPIError(t, apiErr)
			return
		}
		q := req.quote
		if q.Currency.Code != "TZS" || q.Amount.Cmp(money.MustParseAmount("1000")) < 0 || q.Payable.IsZero() ||
			!q.Fee.Add(q.Payable).Equal(q.Amount) || money.ValidateForCurrency(q.Amount, q.Currency) != nil {
			t.Fatalf("accepted %s: quote %+v", body, q)
		}
	})
}

// FuzzPlanRequest feeds arbitrary bodies to the plan decoder (parsePlanRequest): a refusal is a
// documented 422 (INVALID_AMOUNT exactly when the amount is a number out of range); an accepted
// plan passes the billing rules and, in a currency Paygate knows, has a schedule the billing
// controller can follow and an amount that renders.
func FuzzPlanRequest(f *testing.F) {
	for _, seed := range []string{
		goldPlan,
		`{"code":"daily","name":"Daily","amount":"500.50","currency_code":"TZS","interval":"day","interval_count":2,"description":"x"}`,
		`{"code":"Gold","name":"","amount":0,"currency_code":"tzs","interval":"fortnight","interval_count":0}`,
		`{"code":"a","name":"A","amount":1e40,"currency_code":"UGX","interval":"year","interval_count":-1}`,
		`{"code":"a","name":"A","amount":1.001,"currency_code":"KWD","interval":"week","interval_count":1.5}`,
		`{"code":"-a-","name":"A","amount":"x","currency_code":"ZZZ","interval":"month","interval_count":9999999999999999999}`,
		`{"code":null,"name":null,"amount":null}`, `{}`, ``, `"x"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fields, apiErr := decodeObject(body)
		if apiErr != nil {
			checkAPIError(t, apiErr)
			return
		}
		req, v, outOfRange := parsePlanRequest(fields)
		if len(v) > 0 {
			checkValidation(t, v)
			if outOfRange && len(v["amount"]) == 0 {
				t.Fatalf("out of range without an amount message: %v", v)
			}
			return
		}
		if outOfRange {
			t.Fatalf("accepted an amount out of range: %s", body)
		}
		if errs := req.Validate(); len(errs) > 0 || billing.CheckPlanCode("code", req.Code) != nil ||
			req.Amount.Cmp(billing.MinimumPlanAmount) < 0 || req.Amount.Cmp(billing.MaximumPlanAmount) > 0 {
			t.Fatalf("accepted an invalid plan %+v: %v", req, errs)
		}
		if _, known := money.LookupCurrency(req.Currency.Code); !known {
			// Left to the handler: a merchant's currencies are limited to the known ones (the CRD's
			// enum), so it answers INVALID_CURRENCY.
			return
		}
		spec := req.Spec("duka", paygatev1.EnvironmentSandbox)
		if _, err := billing.PlanSchedule(&spec); err != nil {
			t.Fatalf("accepted a plan without a schedule %+v: %v", spec, err)
		}
		if _, err := money.JSONAmount(string(spec.Amount), string(spec.Currency)); err != nil {
			t.Fatalf("accepted a plan whose amount does not render: %+v: %v", spec, err)
		}
	})
}

// FuzzSubscriptionRequest feeds arbitrary bodies to the subscription decoder
// (parseSubscriptionRequest) in both environments: a refusal is a documented 422; an accepted
// request has a valid plan code, a Tanzanian E.164 mobile number, terms within the limit and a
// webhook URL that is empty or absolute http(s) (https in production).
func FuzzSubscriptionRequest(f *testing.F) {
	for _, seed := range []string{
		`{"plan_code":"gold-monthly","customer_phone":"0712 345 678","terms_shown":"TZS 15,000 a month.","webhook_url":"https://duka.example/b"}`,
		`{"plan_code":"gold-monthly","customer_phone":"+254712345678","terms_shown":""}`,
		`{"plan_code":"Gold","customer_phone":"0222123456","terms_shown":1,"webhook_url":"HTTP://duka.example"}`,
		`{"plan_code":"g","customer_phone":"0712345678","terms_shown":"t","webhook_url":"http://u:p@duka.example/"}`,
		`{"plan_code":"g","customer_phone":"0712345678","terms_shown":"t","webhook_url":"https://duka.example/a b"}`,
		`{"plan_code":["g"],"customer_phone":null}`, `{}`, ``, `{"a":1`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	s := New(Options{CheckoutKey: make([]byte, 32)})
	m := &paygatev1.Merchant{ObjectMeta: metav1.ObjectMeta{Name: "duka", Namespace: "shop"}}
	f.Fuzz(func(t *testing.T, body []byte, production bool) {
		env := paygatev1.EnvironmentSandbox
		if production {
			env = paygatev1.EnvironmentProduction
		}
		fields, apiErr := decodeObject(body)
		if apiErr != nil {
			checkAPIError(t, apiErr)
			return
		}
		req, v := s.parseSubscriptionRequest(fields, &caller{merchant: m, env: env, body: body})
		if len(v) > 0 {
			checkValidation(t, v)
			return
		}
		if billing.CheckPlanCode("plan_code", req.planCode) != nil || strings.TrimSpace(req.rawPhone) == "" ||
			billing.CheckTermsShown(req.termsShown) != nil {
			t.Fatalf("accepted %+v", req)
		}
		// The number is read for the plan's currency: a number of its country, or a message.
		for currency, prefix := range map[string]string{"TZS": "+255", "KES": "+254"} {
			if e164, msg := subscriberPhone(req.rawPhone, currency); msg == "" && (!strings.HasPrefix(e164, prefix) || !e164Pattern.MatchString(e164)) {
				t.Fatalf("accepted the phone %q as %q for %s", req.rawPhone, e164, currency)
			} else if msg != "" && e164 != "" {
				t.Fatalf("refused the phone %q with %q but returned %q", req.rawPhone, msg, e164)
			}
		}
		if u := req.webhookURL; u != "" && !strings.HasPrefix(u, "https://") && (production || !strings.HasPrefix(u, "http://")) {
			t.Fatalf("accepted the webhook URL %q in %s", u, env)
		}
	})
}

// FuzzCancelRequest posts arbitrary bodies to the cancel route of the fixture's subscription:
// checkExchange holds, and a 200 answers with the subscription set to be cancelled (at the
// period's end only when the body said so).
func FuzzCancelRequest(f *testing.F) {
	for _, seed := range []string{`{"at_period_end":true}`, `{"at_period_end":false}`, `{}`, ``, `{"at_period_end":null}`,
		`{"at_period_end":"true"}`, `{"at_period_end":1}`, `[]`, `{"at_period_end":true}{}`, "\xff"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fx := newFuzzFixture(t)
		target := "/api/v1/billing/subscriptions/" + fx.ids["{sub}"] + "/cancel"
		w := fx.serve(t, fx.signedRequest(t, fx.duka, http.MethodPost, target, nil, body))
		if w.Code != http.StatusOK {
			return
		}
		var out struct{ Data map[string]any }
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		var atEnd bool
		if fields, _ := decodeObject(body); fields["at_period_end"] != nil {
			_ = json.Unmarshal(fields["at_period_end"], &atEnd)
		}
		if out.Data["cancel_at_period_end"] != atEnd {
			t.Fatalf("cancel %q answered %s", body, w.Body)
		}
	})
}

// FuzzAdvanceRequest posts arbitrary bodies to the test clock route of the fixture's
// subscription, in sandbox or production: checkExchange holds, and a 200 moves the clock by
// exactly the seconds sent, never beyond ten years.
func FuzzAdvanceRequest(f *testing.F) {
	for _, seed := range []string{`{"seconds":86400}`, `{"seconds":1}`, `{"seconds":0}`, `{"seconds":-1}`, `{"seconds":315576000}`,
		`{"seconds":315576001}`, `{"seconds":9223372036854775807}`, `{"seconds":9223372036854775808}`, `{"seconds":1.5}`,
		`{"seconds":1e3}`, `{"seconds":"60"}`, `{}`, ``, `{"seconds":null}`} {
		f.Add([]byte(seed), false)
	}
	f.Add([]byte(`{"seconds":86400}`), true)
	f.Fuzz(func(t *testing.T, body []byte, production bool) {
		fx := newFuzzFixture(t)
		creds := fx.duka
		if production {
			creds = fx.live
		}
		target := "/api/v1/billing/subscriptions/" + fx.ids["{sub}"] + "/advance"
		w := fx.serve(t, fx.signedRequest(t, creds, http.MethodPost, target, nil, body))
		if w.Code != http.StatusOK {
			return
		}
		var out struct {
			Data struct {
				Offset int64 `json:"test_clock_offset_seconds"`
			}
		}
		var in struct{ Seconds int64 }
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || json.Unmarshal(body, &in) != nil {
			t.Fatalf("advance %q answered %s", body, w.Body)
		}
		if production || out.Data.Offset != in.Seconds || in.Seconds < 1 || out.Data.Offset > billing.MaxTestClockOffsetSeconds {
			t.Fatalf("advance %q answered %s", body, w.Body)
		}
	})
}

// listRoutes are the list endpoints whose query parameters FuzzListQuery fuzzes.
var listRoutes = []string{"/api/v1/payments", "/api/v1/payouts", "/api/v1/billing/plans", "/api/v1/billing/subscriptions",
	"/api/v1/billing/invoices"}

// FuzzListQuery sends arbitrary query strings to every list (payments, payouts, plans,
// subscriptions, invoices), signed: checkExchange holds (a list never writes), and a 200 has a
// page within the documented bounds.
func FuzzListQuery(f *testing.F) {
	for _, seed := range []string{"limit=5&offset=1&status=pending&merchant_ref=order-pending", "limit=0", "limit=101",
		"limit=-1", "offset=1000001", "limit=9999999999999999999999", "limit=+5", "limit=5&limit=6", "limit=1%00",
		"status=processing", "status=active&plan_code=gold-monthly", "plan_code=Gold", "subscription={sub}",
		"subscription=sub_aaaaaaaaaaaaaaaaaaaaaaaa", "subscription=sub_x&status=void", "%zz", "a=%", ";", "offset=1000000",
		"merchant_ref=%E2%82%AC", "status="} {
		for i := range listRoutes {
			f.Add(uint8(i), seed)
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, query string) {
		fx := newFuzzFixture(t)
		target := listRoutes[int(route)%len(listRoutes)] + "?" + fx.expand(query)
		h := http.Header{}
		r, err := wireRequest(http.MethodGet, target, h, nil, false)
		if err != nil {
			return
		}
		r = fx.signedRequest(t, fx.duka, http.MethodGet, target, h, nil)
		w := fx.serve(t, r)
		if w.Code != http.StatusOK {
			return
		}
		var out struct {
			Data       []json.RawMessage
			Pagination struct{ Limit, Offset, Total, Count int }
		}
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		p := out.Pagination
		if p.Limit < 1 || p.Limit > maxListLimit || p.Offset < 0 || p.Offset > 1_000_000 || p.Count != len(out.Data) ||
			p.Count > p.Limit || p.Count != max(0, min(p.Limit, p.Total-p.Offset)) {
			t.Fatalf("%s: pagination %+v with %d items", target, p, len(out.Data))
		}
	})
}

// FuzzCallbackReference feeds arbitrary callback bodies to the reference decoder
// (callbackReference, splitReference), which runs before the callback is verified: anything it
// accepts names a namespace and a Paygate trx_id.
func FuzzCallbackReference(f *testing.F) {
	for _, seed := range []string{`{"reference":"shop.trx-aaaaaaaaaaaaaaaaaaaaaaaa.1"}`, `{"reference":"a.b.c"}`,
		`{"reference":"..."}`, `{"reference":1}`, `{"reference":"shop.trx-aaaaaaaaaaaaaaaaaaaaaaaa.1.2"}`, `{}`, `x`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ns, trx, ok := splitReference(callbackReference(body))
		if ok && (ns == "" || len(ns) > 63 || !trxIDPattern.MatchString(trx) || strings.Contains(ns, ".")) {
			t.Fatalf("accepted namespace %q, trx_id %q", ns, trx)
		}
	})
}
