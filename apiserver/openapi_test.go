// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/credentials"
	"github.com/paygate/paygate/internal/index"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/openapitest"
	"github.com/paygate/paygate/pkg/paygate"
)

// loadOpenAPIDocument parses and validates the embedded document.
func loadOpenAPIDocument(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openAPIDocument)
	if err != nil {
		t.Fatalf("loading openapi.json: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI document: %v", err)
	}
	return doc
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc := loadOpenAPIDocument(t)
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi is %q, want 3.0.3", doc.OpenAPI)
	}
	if len(doc.Security) == 0 {
		t.Error("no global security requirement")
	}
	if l := doc.Info.License; l == nil || l.Name != "Apache 2.0" {
		t.Errorf("info.license is %+v, want Apache 2.0 (the project's LICENSE)", l)
	}
	for _, h := range []string{"X-Environment", "X-Merchant-Key", "X-API-Key", "X-Timestamp", "X-Signature"} {
		found := false
		for _, s := range doc.Components.SecuritySchemes {
			found = found || (s.Value.Type == "apiKey" && s.Value.In == "header" && s.Value.Name == h)
		}
		if !found {
			t.Errorf("no apiKey security scheme for header %s", h)
		}
	}
}

// TestOpenAPINullableHasType checks, without the linter of `make lint-openapi`, an OpenAPI 3.0 rule
// that kin-openapi lets pass: `nullable` means something only beside a `type` in the same schema
// (a nullable anyOf or oneOf goes on each of its typed branches).
func TestOpenAPINullableHasType(t *testing.T) {
	var doc any
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	pointer := strings.NewReplacer("~", "~0", "/", "~1")
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			if nullable, _ := v["nullable"].(bool); nullable {
				if _, typed := v["type"]; !typed {
					t.Errorf("%s: nullable without type", at)
				}
			}
			for k, child := range v {
				if k == "example" || k == "examples" {
					continue // data, not schemas
				}
				walk(child, at+"/"+pointer.Replace(k))
			}
		case []any:
			for i, child := range v {
				walk(child, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	walk(doc, "#")
}

var (
	routesFuncPattern = regexp.MustCompile(`(?s)func \(s \*Server\) routes\(\) \{\n(.*?)\n\}\n`)
	handlePattern     = regexp.MustCompile(`s\.handle\(\s*"([^"]+)"\s*,\s*route\{([^}]*)\}\s*\)`)
	methodPattern     = regexp.MustCompile(`http\.Method([A-Za-z]+)\s*:`)
	muxPattern        = regexp.MustCompile(`s\.mux\.Handle(?:Func)?\(\s*"([^"]+)"`)
)

// registeredRoutes reads the patterns and methods that routes() in server.go registers with
// s.handle.
func registeredRoutes(t *testing.T) map[string][]string {
	t.Helper()
	src, err := os.ReadFile("server.go")
	if err != nil {
		t.Fatal(err)
	}
	m := routesFuncPattern.FindSubmatch(src)
	if m == nil {
		t.Fatal("server.go: func (s *Server) routes() not found")
	}
	body := string(m[1])
	routes := map[string][]string{}
	for _, h := range handlePattern.FindAllStringSubmatch(body, -1) {
		pattern := h[1]
		if strings.ContainsAny(pattern, " \t") {
			t.Errorf("route %q: a method in the pattern is not supported by this test; use route{http.MethodX: ...}", pattern)
		}
		var methods []string
		for _, mm := range methodPattern.FindAllStringSubmatch(h[2], -1) {
			methods = append(methods, strings.ToUpper(mm[1]))
		}
		if len(methods) == 0 {
			t.Errorf("route %q: no http.MethodX keys found in %q", pattern, h[2])
		}
		slices.Sort(methods)
		routes[pattern] = methods
	}
	if len(routes) == 0 || strings.Count(body, "s.handle(") != len(handlePattern.FindAllString(body, -1)) {
		t.Fatalf("server.go: could not parse every s.handle call of routes():\n%s", body)
	}
	// API routes registered on the mux directly would bypass authentication and this check.
	for _, mm := range muxPattern.FindAllStringSubmatch(body, -1) {
		if strings.Contains(mm[1], "/api/") {
			t.Errorf("route %q is registered on the mux directly; register API routes with s.handle", mm[1])
		}
	}
	return routes
}

func TestOpenAPIDocumentMatchesRoutes(t *testing.T) {
	doc := loadOpenAPIDocument(t)
	code := registeredRoutes(t)
	documented := map[string][]string{}
	for path, item := range doc.Paths.Map() {
		var methods []string
		for m := range item.Operations() {
			methods = append(methods, strings.ToUpper(m))
		}
		slices.Sort(methods)
		documented[path] = methods
	}
	for path, methods := range code {
		got, ok := documented[path]
		switch {
		case !ok:
			t.Errorf("route %s %v is served but not documented in openapi.json", path, methods)
		case !slices.Equal(got, methods):
			t.Errorf("route %s: the server handles %v, openapi.json documents %v", path, methods, got)
		}
	}
	for path, methods := range documented {
		if _, ok := code[path]; !ok {
			t.Errorf("openapi.json documents %s %v, which routes() does not register", path, methods)
		}
	}
}

// TestOpenAPIOperationsDocumentTheirErrors checks that every operation documents the statuses
// that authentication and the common code paths can return on any route.
func TestOpenAPIOperationsDocumentTheirErrors(t *testing.T) {
	doc := loadOpenAPIDocument(t)
	creates := map[string]bool{"POST /api/v1/payments": true, "POST /api/v1/initiate-payment": true, "POST /api/v1/payouts": true,
		"POST /api/v1/billing/plans": true, "POST /api/v1/billing/subscriptions": true, "POST /api/v1/payments/{trx_id}/refunds": true}
	// accepted: answered 202, with 409 and an optional Idempotency-Key like a create's.
	accepted := map[string]bool{"POST /api/v1/events/{id}/redeliver": true}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			want := []int{200, 400, 401, 403, 415, 422, 429, 500, 503}
			if accepted[name] {
				want[0] = 202
			}
			if strings.Contains(path, "{trx_id}") || strings.Contains(path, "{id}") || strings.Contains(path, "{code}") {
				want = append(want, 404)
			}
			if creates[name] || accepted[name] || strings.HasSuffix(path, "/push") {
				want = append(want, 409)
			}
			for _, status := range want {
				resp := op.Responses.Status(status)
				if resp == nil {
					t.Errorf("%s: status %d is not documented", name, status)
					continue
				}
				mt := resp.Value.Content.Get("application/json")
				if mt == nil || mt.Schema == nil {
					t.Errorf("%s: status %d has no application/json schema", name, status)
				}
				if status == 429 {
					h := resp.Value.Headers["Retry-After"]
					if h == nil || !h.Value.Required {
						t.Errorf("%s: 429 does not document a required Retry-After header", name)
					}
				}
			}
			idem := op.Parameters.GetByInAndName(openapi3.ParameterInHeader, "Idempotency-Key")
			switch {
			case (creates[name] || accepted[name]) && (idem == nil || idem.Required || idem.Schema.Value.MaxLength == nil || *idem.Schema.Value.MaxLength != 64):
				t.Errorf("%s: want an optional Idempotency-Key header parameter with maxLength 64", name)
			case !creates[name] && !accepted[name] && idem != nil:
				t.Errorf("%s: documents Idempotency-Key, which only the create routes read", name)
			}
		}
	}
}

// exchangeFixture is an in-memory cluster with one approved merchant (sandbox credentials), a
// pending one (production credentials), a rate-limited one, a pending newcomer (sandbox
// credentials only), two approved ones in production (KYB pending, KYB approved), a TZS gateway
// (sandbox only) and a settled payment.
type exchangeFixture struct {
	srv                      *httptest.Server
	api                      *Server
	k8s                      client.Client
	duka, pending, slow      paygate.Credentials
	newcomer, unvetted, live paygate.Credentials
	settledTrxID, settledRef string
}

func newExchangeFixture(t *testing.T, mods ...func(*Options)) *exchangeFixture {
	t.Helper()
	f := newExchangeCluster(t, mods...)
	f.srv = httptest.NewServer(f.api)
	t.Cleanup(f.srv.Close)
	return f
}

// newExchangeCluster is the exchange fixture's cluster and Server, without an HTTP listener:
// f.srv is nil, requests go to f.api.ServeHTTP (the fuzz targets send thousands).
func newExchangeCluster(t testing.TB, mods ...func(*Options)) *exchangeFixture {
	t.Helper()
	const ns = "shop"
	now := time.Now().UTC().Truncate(time.Second)
	var objs []client.Object
	merchant := func(name string, env paygatev1.Environment, mod func(*paygatev1.Merchant)) paygate.Credentials {
		m := &paygatev1.Merchant{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
			Spec: paygatev1.MerchantSpec{
				DisplayName: "Duka " + name, Owner: "owner@duka.example",
				Currencies: []paygatev1.CurrencyCode{"TZS"}, Wallets: []paygatev1.Wallet{{Currency: "TZS"}},
				BusinessStatus: paygatev1.BusinessApproved,
				WebhookURLs:    paygatev1.WebhookURLs{Sandbox: "http://127.0.0.1:9/hooks", Production: "https://duka.example/hooks"},
			},
			Status: paygatev1.MerchantStatus{ID: 42},
		}
		set := credentials.Set{BusinessID: credentials.BusinessID(string(m.UID), env), APIKey: "key-" + name, APISecret: "secret-" + name}
		if env == paygatev1.EnvironmentProduction {
			m.Status.Production.BusinessID = set.BusinessID
		} else {
			m.Status.Sandbox.BusinessID = set.BusinessID
		}
		if mod != nil {
			mod(m)
		}
		controller := true
		objs = append(objs, m, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: credentials.SecretName(name, env),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: paygatev1.GroupVersion.String(), Kind: "Merchant",
					Name: name, UID: m.UID, Controller: &controller}}},
			Data: set.Data(),
		})
		return paygate.Credentials{Environment: string(env), MerchantKey: set.BusinessID, APIKey: set.APIKey, APISecret: set.APISecret}
	}
	f := &exchangeFixture{settledRef: "order-settled"}
	f.settledTrxID = TrxID("uid-duka", paygatev1.EnvironmentSandbox, f.settledRef)
	f.duka = merchant("duka", paygatev1.EnvironmentSandbox, nil)
	f.pending = merchant("pending", paygatev1.EnvironmentProduction, func(m *paygatev1.Merchant) {
		m.Spec.BusinessStatus = paygatev1.BusinessPending
	})
	f.slow = merchant("slow", paygatev1.EnvironmentSandbox, func(m *paygatev1.Merchant) {
		m.Spec.RateLimit = &paygatev1.RateLimit{RequestsPerMinute: 1}
	})
	f.newcomer = merchant("newcomer", paygatev1.EnvironmentSandbox, func(m *paygatev1.Merchant) {
		m.Spec.BusinessStatus = paygatev1.BusinessPending
	})
	f.unvetted = merchant("unvetted", paygatev1.EnvironmentProduction, func(m *paygatev1.Merchant) {
		m.Spec.KYBStatus = paygatev1.KYBPending
	})
	f.live = merchant("live", paygatev1.EnvironmentProduction, func(m *paygatev1.Merchant) {
		m.Spec.KYBStatus = paygatev1.KYBApproved
	})
	gw := &paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "tz-mpesa"},
		Spec: paygatev1.GatewaySpec{DisplayName: "M-Pesa Tanzania", Currency: "TZS",
			Type: paygatev1.GatewayTypeAutomatic, Provider: paygatev1.ProviderSandbox},
		Status: paygatev1.GatewayStatus{ID: 7},
	}
	settledAt := metav1.NewMicroTime(now.Add(-time.Minute))
	settled := &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: f.settledTrxID, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
			Labels: map[string]string{paygatev1.LabelMerchant: "duka", paygatev1.LabelEnvironment: "sandbox"}},
		Spec: paygatev1.PaymentSpec{
			MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
			MerchantReference: f.settledRef, Amount: "1500.00", Currency: "TZS", Mode: paygatev1.PaymentModeHosted,
			Customer:  paygatev1.Customer{Name: "Asha", Email: "asha@example.com", Phone: "+255712345678"},
			ExpiresAt: metav1.NewTime(now.Add(-30 * time.Minute)),
		},
		Status: paygatev1.PaymentStatus{Phase: paygatev1.PaymentSuccess, Gateway: "tz-mpesa", Fee: "37.50",
			NetAmount: "1462.50", SettledAt: &settledAt},
	}
	objs = append(objs, gw, settled)

	fc := fake.NewClientBuilder().WithScheme(kube.Scheme()).WithObjects(objs...).
		WithIndex(&paygatev1.Merchant{}, index.MerchantBusinessID, index.MerchantBusinessIDs).
		WithIndex(&paygatev1.GatewaySelection{}, index.SelectionMerchant, func(o client.Object) []string {
			return []string{o.(*paygatev1.GatewaySelection).Spec.MerchantRef.Name}
		}).
		WithIndex(&paygatev1.Refund{}, refundPaymentIndex, refundPaymentKeys).Build()
	f.k8s = fc
	opts := Options{Cache: fc, Writer: fc, APIReader: fc, CheckoutKey: []byte("checkout-key")}
	for _, mod := range mods {
		mod(&opts)
	}
	f.api = New(opts)
	return f
}

// client returns a Go client for creds whose exchanges are validated against the document.
func (f *exchangeFixture) client(v *openapitest.Validator, creds paygate.Credentials) *paygate.Client {
	c := paygate.New(f.srv.URL, creds)
	c.HTTP = &http.Client{Timeout: 30 * time.Second, Transport: v}
	return c
}

// TestOpenAPIExchangesWithServer drives the real handlers (on an in-memory fake cluster) through
// the validating transport: every success and error response the server produced must match the
// document, and every request the Go client sends for a successful call must match it too.
func TestOpenAPIExchangesWithServer(t *testing.T) {
	f := newExchangeFixture(t)
	ctx := context.Background()
	// strict: the Go client's well-formed requests must match the document as well.
	strict := openapitest.NewValidator(t, openAPIDocument, nil).StrictRequests()
	c := f.client(strict, f.duka)
	// lenient: deliberately invalid requests, and unknown routes, answered 4xx.
	lenient := openapitest.NewValidator(t, openAPIDocument, nil).AllowUnknownRoutes()
	bad := f.client(lenient, f.duka)

	expectStatus := func(what string, resp *paygate.Response, err error, status int) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if resp.StatusCode != status {
			t.Errorf("%s: status %d, want %d: %s", what, resp.StatusCode, status, resp.Body)
		}
	}
	expectAPIError := func(what string, err error, status int) {
		t.Helper()
		e, ok := err.(*paygate.Error)
		if !ok || e.StatusCode != status {
			t.Errorf("%s: got %v, want a %d API error", what, err, status)
		}
	}

	// Creates: hosted, push, legacy, with an idempotent replay.
	first := paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: "order-1",
		CustomerName: "Asha", CustomerEmail: "asha@example.com", Description: "Two loaves"}
	hosted, err := c.CreatePayment(ctx, first, "key-1")
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	resp, err := c.Do(ctx, http.MethodPost, "/api/v1/payments", first, http.Header{"Idempotency-Key": {"key-1"}})
	expectStatus("idempotent replay", resp, err, 200)
	if resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the replay has no Idempotent-Replayed header")
	}
	push, err := c.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "2500.50", CurrencyCode: "TZS", RefTrx: "order-2",
		PaymentMode: "push", CustomerPhone: "+255712345678"}, "")
	if err != nil {
		t.Fatalf("create push: %v", err)
	}
	if _, err := c.InitiatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "1000", CurrencyCode: "TZS", RefTrx: "order-3",
		SuccessRedirect: "https://shop.example/ok", CancelRedirect: "https://shop.example/cancel", IPNURL: "https://shop.example/ipn",
		AllowPaymentMethods: []string{"mpesa"}}, ""); err != nil {
		t.Fatalf("initiate: %v", err)
	}
	// Clients send null for optional fields and amounts as strings.
	resp, err = c.Do(ctx, http.MethodPost, "/api/v1/initiate-payment", []byte(`{"payment_amount":"1200.00","currency_code":"TZS",
		"ref_trx":"order-4","success_redirect":"https://shop.example/ok","cancel_redirect":"https://shop.example/cancel",
		"webhook_url":"https://shop.example/ipn","description":null,"customer_name":null,"customer_email":null,
		"allow_payment_methods":"mpesa, tigo","payment_mode":null,"unknown_field":{"kept":"ignored"}}`), nil)
	expectStatus("initiate with nulls", resp, err, 200)

	// Reads: pending and settled records, list, verify, push, site info, the document.
	for _, id := range []string{hosted.TrxID, push.Data.TrxID, f.settledTrxID} {
		if _, err := c.GetPayment(ctx, id); err != nil {
			t.Errorf("get %s: %v", id, err)
		}
		if _, err := c.VerifyPayment(ctx, id); err != nil {
			t.Errorf("verify %s: %v", id, err)
		}
	}
	if list, err := c.ListPayments(ctx, paygate.ListOptions{}); err != nil || list.Pagination.Total != 5 || list.Pagination.Limit != 20 {
		t.Errorf("list: %+v, %v", list, err)
	}
	if _, err := c.ListPayments(ctx, paygate.ListOptions{Limit: 2, Offset: 1, Status: "pending"}); err != nil {
		t.Errorf("list page: %v", err)
	}
	if _, err := c.ListPayments(ctx, paygate.ListOptions{MerchantRef: "no-such-order"}); err != nil {
		t.Errorf("empty list: %v", err)
	}
	dayStart := time.Now().UTC().Truncate(24 * time.Hour)
	if _, err := c.ListPayments(ctx, paygate.ListOptions{Status: "pending", CreatedFrom: dayStart.Add(-48 * time.Hour),
		CreatedTo: dayStart.Add(48*time.Hour + time.Millisecond), CustomerPhone: "+255712345678"}); err != nil {
		t.Errorf("list by dates and phone: %v", err)
	}
	for _, q := range []string{"created_from=2026-11-27&created_to=2026-11-28", "created_from=2026-11-27T10:00:00%2B03:00",
		"customer_phone=0712345678", "customer_phone=%2B255712345678&merchant_ref=order-2"} {
		resp, err = c.Do(ctx, http.MethodGet, "/api/v1/payments?"+q, nil, nil)
		expectStatus("list ?"+q, resp, err, 200)
	}
	for _, q := range []string{"created_from=2026-02-30", "created_to=1999-12-31", "created_from=2026-11-28&created_to=2026-11-28",
		"customer_phone=not-a-phone", "created_from=tomorrow"} {
		resp, err = bad.Do(ctx, http.MethodGet, "/api/v1/payments?"+q, nil, nil)
		expectStatus("list ?"+q, resp, err, 422)
	}
	// The push-mode payment already has a prompt waiting: a second push is refused (409).
	if _, err := c.PushPayment(ctx, push.Data.TrxID, ""); err == nil || !strings.Contains(err.Error(), "PUSH_IN_PROGRESS") {
		t.Errorf("push while a prompt waits: %v", err)
	}
	if _, err := c.PushPayment(ctx, hosted.TrxID, "0712345678"); err != nil {
		t.Errorf("push with a phone: %v", err)
	}
	if _, err := c.SiteInfo(ctx); err != nil {
		t.Errorf("site-info: %v", err)
	}
	resp, err = c.Do(ctx, http.MethodGet, "/api/v1/openapi.json", nil, nil)
	expectStatus("openapi.json", resp, err, 200)

	// Errors, each validated against the operation's documented response.
	_, err = bad.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "1500", CurrencyCode: "TZS", RefTrx: "order-1"}, "")
	expectAPIError("duplicate ref_trx", err, 409)
	_, err = bad.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "9", CurrencyCode: "TZS", RefTrx: "order-9"}, "key-1")
	expectAPIError("reused Idempotency-Key", err, 409)
	_, err = bad.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "0.5", CurrencyCode: "tzs"}, "")
	expectAPIError("invalid create", err, 422)
	_, err = bad.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "10", CurrencyCode: "KES", RefTrx: "order-kes"}, "")
	expectAPIError("currency not enabled", err, 422)
	_, err = bad.CreatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "10", CurrencyCode: "TZS", RefTrx: "order-x"}, strings.Repeat("k", 65))
	expectAPIError("long Idempotency-Key", err, 422)
	_, err = bad.InitiatePayment(ctx, paygate.CreatePaymentRequest{PaymentAmount: "10", CurrencyCode: "TZS", RefTrx: "order-y"}, "")
	expectAPIError("legacy without redirects", err, 422)
	resp, err = bad.Do(ctx, http.MethodPost, "/api/v1/payments", []byte(`[1,2]`), nil)
	expectStatus("non-object body", resp, err, 422)
	resp, err = bad.Do(ctx, http.MethodGet, "/api/v1/payments?limit=500", nil, nil)
	expectStatus("limit too large", resp, err, 422)
	_, err = bad.GetPayment(ctx, "trx-missing")
	expectAPIError("get missing", err, 404)
	_, err = bad.VerifyPayment(ctx, "trx-missing")
	expectAPIError("verify missing", err, 404)
	_, err = bad.PushPayment(ctx, "trx-missing", "")
	expectAPIError("push missing", err, 404)
	_, err = bad.PushPayment(ctx, f.settledTrxID, "")
	expectAPIError("push settled", err, 409)
	_, err = bad.PushPayment(ctx, push.Data.TrxID, "not-a-phone")
	expectAPIError("push bad phone", err, 422)

	wrongKey := f.duka
	wrongKey.APIKey = "wrong"
	_, err = f.client(lenient, wrongKey).SiteInfo(ctx)
	expectAPIError("wrong API key", err, 401)
	badSig := f.client(lenient, f.duka)
	badSig.Now = func() time.Time { return time.Now().Add(-time.Hour) }
	_, err = badSig.ListPayments(ctx, paygate.ListOptions{})
	expectAPIError("stale timestamp", err, 401)
	_, err = f.client(lenient, f.pending).SiteInfo(ctx)
	expectAPIError("pending business in production", err, 403)
	slow := f.client(lenient, f.slow)
	if _, err := slow.SiteInfo(ctx); err != nil {
		t.Errorf("first rate-limited call: %v", err)
	}
	resp, err = slow.Do(ctx, http.MethodGet, "/api/v1/site-info", nil, nil)
	expectStatus("rate limited", resp, err, 429)

	resp, err = bad.Do(ctx, http.MethodDelete, "/api/v1/payments", nil, nil)
	expectStatus("wrong method", resp, err, 405)
	resp, err = bad.Do(ctx, http.MethodGet, "/api/v1/nothing-here", nil, nil)
	expectStatus("unknown route", resp, err, 404)
}

// TestOpenAPIRejectsWrongResponses makes sure the document is strict enough to notice a
// response that drifts from records.go.
func TestOpenAPIRejectsWrongResponses(t *testing.T) {
	doc := loadOpenAPIDocument(t)
	schema := func(name string) *openapi3.Schema { return doc.Components.Schemas[name].Value }
	good := map[string]any{
		"status": "pending", "trx_id": "trx-7kq2m4xv5z3hbd5ntw6ycfa2", "merchant_ref": "order-1", "amount": 1500.0, "fee": 0.0,
		"currency": "TZS", "net_amount": 1500.0, "customer": map[string]any{"name": "", "email": ""},
		"description": "", "environment": "sandbox",
		"created_at": "2026-01-15T09:30:00.000000Z", "updated_at": "2026-01-15T09:30:00.000000Z",
		"amount_refunded": 0.0, "refund_state": "none",
	}
	if err := schema("VerificationRecord").VisitJSON(good); err != nil {
		t.Fatalf("a good verification record is rejected: %v", err)
	}
	cases := map[string]func(map[string]any){
		"amount as a string":       func(m map[string]any) { m["amount"] = "1500.00" },
		"missing net_amount":       func(m map[string]any) { delete(m, "net_amount") },
		"null fee":                 func(m map[string]any) { m["fee"] = nil },
		"unknown status":           func(m map[string]any) { m["status"] = "completed" },
		"missing refund_state":     func(m map[string]any) { delete(m, "refund_state") },
		"unknown refund_state":     func(m map[string]any) { m["refund_state"] = "some" },
		"amount_refunded as text":  func(m map[string]any) { m["amount_refunded"] = "0.00" },
		"timestamp without micros": func(m map[string]any) { m["created_at"] = "2026-01-15T09:30:00Z" },
		"undocumented field":       func(m map[string]any) { m["secret"] = "x" },
	}
	for name, mutate := range cases {
		m := map[string]any{}
		for k, v := range good {
			m[k] = v
		}
		mutate(m)
		if err := schema("VerificationRecord").VisitJSON(m); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// The payment record allows null fee and net_amount before settlement.
	rec := map[string]any{
		"trx_id": "trx-7kq2m4xv5z3hbd5ntw6ycfa2", "merchant_ref": "o", "status": "pending", "amount": 1.0, "fee": nil, "net_amount": nil,
		"currency": "TZS", "payment_mode": "hosted", "customer": map[string]any{"name": "", "email": ""},
		"description": "", "environment": "sandbox", "checkout_url": "http://x/checkout/trx-7kq2m4xv5z3hbd5ntw6ycfa2",
		"expires_at": "2026-01-15T09:30:00.000000Z", "created_at": "2026-01-15T09:30:00.000000Z", "updated_at": "2026-01-15T09:30:00.000000Z",
		"amount_refunded": 0.0, "refund_state": "none",
	}
	if err := schema("PaymentRecord").VisitJSON(rec); err != nil {
		t.Errorf("a pending payment record is rejected: %v", err)
	}
	// Request bodies: numbers or numeric strings, nulls, unknown fields.
	for _, body := range []map[string]any{
		{"payment_amount": 1500.0, "currency_code": "TZS", "ref_trx": "a"},
		{"payment_amount": "1500.50", "currency_code": "TZS", "ref_trx": "a", "webhook_url": nil, "customer_phone": nil,
			"payment_mode": nil, "allow_payment_methods": nil, "extra": true},
		{"payment_amount": 2.0, "currency_code": "TZS", "ref_trx": "a", "allow_payment_methods": []any{"mpesa"}, "payment_mode": ""},
	} {
		if err := schema("PaymentCreateRequest").VisitJSON(body); err != nil {
			t.Errorf("create body %v is rejected: %v", body, err)
		}
	}
	for _, body := range []map[string]any{
		{"payment_amount": true, "currency_code": "TZS", "ref_trx": "a"},
		{"payment_amount": "1,500", "currency_code": "TZS", "ref_trx": "a"},
		{"currency_code": "TZS", "ref_trx": "a"},
		{"payment_amount": 10.0, "currency_code": "TZS", "ref_trx": "a", "allow_payment_methods": 5.0},
	} {
		if err := schema("PaymentCreateRequest").VisitJSON(body); err == nil {
			t.Errorf("create body %v is accepted", body)
		}
	}
	legacy := map[string]any{"payment_amount": 10.0, "currency_code": "TZS", "ref_trx": "a",
		"success_redirect": "https://s.example/ok", "cancel_redirect": "https://s.example/no"}
	if err := schema("LegacyPaymentCreateRequest").VisitJSON(legacy); err == nil {
		t.Error("a legacy body without ipn_url or webhook_url is accepted")
	}
	legacy["webhook_url"] = "https://s.example/ipn"
	if err := schema("LegacyPaymentCreateRequest").VisitJSON(legacy); err != nil {
		t.Errorf("a legacy body with webhook_url instead of ipn_url is rejected: %v", err)
	}
}
