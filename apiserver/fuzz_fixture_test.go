// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/index"
	"github.com/paygate/paygate/internal/kube"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/pkg/paygate"
)

// The fuzz targets' fixture: the exchange fixture's cluster (newExchangeCluster) with duka able
// to pay out (enablePayouts), and, made through the API itself, a pending hosted payment, a
// payout, a plan and a subscription; plus an upstream gateway whose callbacks can be signed.
// Every write the Server makes goes through recordingClient, so a target can tell what a request
// wrote.

// recordingClient counts the writes made through it (Create, Update, Patch, Delete, DeleteAllOf)
// that succeeded, by kind, in order: a create the API server refuses (the name is taken) writes
// nothing. Like the Kubernetes API server, and unlike the fake client, it gives every object it
// creates a UID (uid-fuzz-<n>: replayed inputs get the same ones).
type recordingClient struct {
	client.Client
	mu     sync.Mutex
	writes []string // "Create Payment shop/trx-…"
	uids   int
}

func (c *recordingClient) record(verb string, obj client.Object, err error) error {
	if err == nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.writes = append(c.writes, verb+" "+kindOf(obj)+" "+obj.GetNamespace()+"/"+obj.GetName())
	}
	return err
}

// since returns the writes recorded after the first n.
func (c *recordingClient) since(n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.writes[n:])
}

func (c *recordingClient) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.writes)
}

func (c *recordingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if obj.GetUID() == "" {
		c.mu.Lock()
		c.uids++
		obj.SetUID(types.UID(fmt.Sprintf("uid-fuzz-%d", c.uids)))
		c.mu.Unlock()
	}
	return c.record("Create", obj, c.Client.Create(ctx, obj, opts...))
}

func (c *recordingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.record("Update", obj, c.Client.Update(ctx, obj, opts...))
}

func (c *recordingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.record("Patch", obj, c.Client.Patch(ctx, obj, patch, opts...))
}

func (c *recordingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.record("Delete", obj, c.Client.Delete(ctx, obj, opts...))
}

func (c *recordingClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return c.record("DeleteAllOf", obj, c.Client.DeleteAllOf(ctx, obj, opts...))
}

func kindOf(obj client.Object) string {
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// fuzzFixture is the fixture of the apiserver's fuzz targets.
type fuzzFixture struct {
	*exchangeFixture
	rec *recordingClient
	// logs holds what the Server logged as errors (a panic's stack included), for the report.
	logs *bytes.Buffer
	// ids replace the tokens {pending}, {settled}, {payout}, {plan}, {sub} in a fuzzed target.
	ids map[string]string
	// pendingLink is the pending payment's signed checkout link (path and query).
	pendingLink string
	// callbackSecret signs provider callbacks; callbackRef is the pending payment's attempt.
	callbackSecret []byte
	callbackRef    string
}

const fuzzCallbackSecret = "cb-secret-fuzz"

// errorLog is a logger that keeps what is logged as an error (a panic's stack included) in buf.
func errorLog(buf *bytes.Buffer) logr.Logger {
	var mu sync.Mutex
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(args, `"error"`) || strings.Contains(args, "panic") {
			fmt.Fprintln(buf, prefix, args)
		}
	}, funcr.Options{})
}

var fuzzBase struct {
	once sync.Once
	f    *fuzzFixture
	objs []client.Object
	err  string
}

// fuzzKinds are the kinds the fuzz fixture's cluster holds.
var fuzzKinds = []client.ObjectList{&corev1.SecretList{}, &paygatev1.MerchantList{}, &paygatev1.GatewayList{},
	&paygatev1.GatewaySelectionList{}, &paygatev1.PaymentList{}, &paygatev1.PayoutList{}, &paygatev1.BalanceList{},
	&paygatev1.BillingPlanList{}, &paygatev1.SubscriptionList{}, &paygatev1.InvoiceList{}, &paygatev1.IdempotencyKeyList{}}

var fuzzScheme = kube.Scheme()

// newFuzzFixture is a fresh copy of the fuzz fixture. The fixture is made once per process
// (buildFuzzFixture, through the API); each copy is a new fake cluster holding its objects, with
// the indexes the apiserver's cache has, and a new Server with its own rate limiter. The copy's
// cluster uses the plain object tracker, without managed fields (which cost milliseconds a write).
func newFuzzFixture(t testing.TB) *fuzzFixture {
	t.Helper()
	fuzzBase.once.Do(func() {
		tb := &fixtureTB{TB: t}
		func() {
			defer func() {
				if p := recover(); p != nil && p != errFixtureFailed {
					panic(p)
				}
			}()
			fuzzBase.f = buildFuzzFixture(tb)
			for _, list := range fuzzKinds {
				if err := fuzzBase.f.k8s.List(context.Background(), list); err != nil {
					tb.Fatal(err)
				}
				items, err := meta.ExtractList(list)
				if err != nil {
					tb.Fatal(err)
				}
				for _, item := range items {
					obj := item.(client.Object)
					obj.SetResourceVersion("")
					fuzzBase.objs = append(fuzzBase.objs, obj)
				}
			}
		}()
		fuzzBase.err = tb.failure
	})
	if fuzzBase.err != "" {
		t.Fatalf("the fuzz fixture: %s", fuzzBase.err)
	}
	base := fuzzBase.f
	objs := make([]client.Object, len(fuzzBase.objs))
	for i, o := range fuzzBase.objs {
		objs[i] = o.DeepCopyObject().(client.Object)
	}
	byName := func(o client.Object) []string { return []string{o.GetName()} }
	fc := fake.NewClientBuilder().WithScheme(fuzzScheme).
		WithObjectTracker(clienttesting.NewObjectTracker(fuzzScheme, serializer.NewCodecFactory(fuzzScheme).UniversalDecoder())).
		WithObjects(objs...).
		WithIndex(&paygatev1.Merchant{}, index.MerchantBusinessID, index.MerchantBusinessIDs).
		WithIndex(&paygatev1.GatewaySelection{}, index.SelectionMerchant, func(o client.Object) []string {
			return []string{o.(*paygatev1.GatewaySelection).Spec.MerchantRef.Name}
		}).
		WithIndex(&paygatev1.Payment{}, index.PaymentName, byName).
		WithIndex(&paygatev1.Payment{}, "metadata.name", byName).Build()
	f := *base
	ex := *base.exchangeFixture
	f.exchangeFixture, ex.k8s = &ex, fc
	f.rec = &recordingClient{Client: fc, uids: base.rec.uids}
	f.logs = &bytes.Buffer{}
	opts := base.api.opts
	opts.Cache, opts.Writer, opts.APIReader, opts.Log = fc, f.rec, fc, errorLog(f.logs)
	ex.api = New(opts)
	return &f
}

// fixtureTB lets the fixture be built once for every input: a failure is kept, not reported on
// the input that happened to build it.
type fixtureTB struct {
	testing.TB
	failure string
}

var errFixtureFailed = errors.New("fixture failed")

func (tb *fixtureTB) Fatal(args ...any) { tb.failure = fmt.Sprint(args...); panic(errFixtureFailed) }
func (tb *fixtureTB) Fatalf(format string, args ...any) {
	tb.failure = fmt.Sprintf(format, args...)
	panic(errFixtureFailed)
}

// buildFuzzFixture makes the fuzz fixture through the API (newFuzzFixture copies it).
func buildFuzzFixture(t testing.TB) *fuzzFixture {
	t.Helper()
	f := &fuzzFixture{logs: &bytes.Buffer{}, callbackSecret: []byte(fuzzCallbackSecret)}
	f.exchangeFixture = newExchangeCluster(t, func(o *Options) {
		f.rec = &recordingClient{Client: o.Writer.(client.Client)}
		o.Writer = f.rec
		o.Log = errorLog(f.logs)
	})
	f.enablePayouts(t)
	ctx := t.Context()

	// An upstream gateway of TZS, its Secret, and the pending payment's push attempt through it.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "paygate-system", Name: "tz-upstream",
			Labels: map[string]string{paygatev1.LabelCredential: provider.CredentialKindUpstream}},
		Data: map[string][]byte{provider.UpstreamSecretToken: []byte("token"), provider.UpstreamSecretCallbackSecret: f.callbackSecret},
	}
	upstream := &paygatev1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "tz-upstream"},
		Spec: paygatev1.GatewaySpec{DisplayName: "Upstream money", Currency: "TZS", Type: paygatev1.GatewayTypeAutomatic,
			Provider: paygatev1.ProviderUpstream, Upstream: &paygatev1.UpstreamConfig{BaseURL: "http://127.0.0.1:9",
				SecretRef: paygatev1.SecretReference{Namespace: "paygate-system", Name: "tz-upstream"}}},
		Status: paygatev1.GatewayStatus{ID: 9},
	}
	for _, obj := range []client.Object{secret, upstream} {
		if err := f.k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	for _, step := range []struct{ target, body, key string }{
		{"/api/v1/payments", `{"payment_amount":1500,"currency_code":"TZS","ref_trx":"order-pending","customer_phone":"0712345678"}`, ""},
		{"/api/v1/payments", `{"payment_amount":2500,"currency_code":"TZS","ref_trx":"order-callback"}`, ""},
		{"/api/v1/payouts", `{"amount":2000}`, "payout-1"},
		{"/api/v1/billing/plans", goldPlan, ""},
		{"/api/v1/billing/subscriptions", `{"plan_code":"gold-monthly","customer_phone":"0712345678","terms_shown":"TZS 15,000 a month."}`, "sub-1"},
	} {
		h := http.Header{}
		if step.key != "" {
			h.Set("Idempotency-Key", step.key)
		}
		r := f.signedRequest(t, f.duka, http.MethodPost, step.target, h, []byte(step.body))
		w := httptest.NewRecorder()
		f.api.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("fixture: POST %s: %d %s", step.target, w.Code, w.Body)
		}
	}
	f.ids = map[string]string{
		"{pending}": TrxID("uid-duka", paygatev1.EnvironmentSandbox, "order-pending"),
		"{settled}": f.settledTrxID,
		"{plan}":    "gold-monthly",
	}
	var payouts paygatev1.PayoutList
	var subs paygatev1.SubscriptionList
	if err := f.k8s.List(ctx, &payouts); err != nil || len(payouts.Items) != 1 {
		t.Fatalf("fixture: payouts %v, %v", payouts.Items, err)
	}
	if err := f.k8s.List(ctx, &subs); err != nil || len(subs.Items) != 1 {
		t.Fatalf("fixture: subscriptions %v, %v", subs.Items, err)
	}
	f.ids["{payout}"] = payouts.Items[0].Name
	f.ids["{sub}"] = paygatev1.SubscriptionAPIID(subs.Items[0].Name)

	p := &paygatev1.Payment{}
	if err := f.k8s.Get(ctx, client.ObjectKey{Namespace: "shop", Name: f.ids["{pending}"]}, p); err != nil {
		t.Fatal(err)
	}
	f.pendingLink = strings.TrimPrefix(f.api.CheckoutURL(p), f.api.opts.PublicURL)
	// The other payment's push went to the upstream gateway, whose answer is not known yet.
	if err := f.k8s.Get(ctx, client.ObjectKey{Namespace: "shop", Name: TrxID("uid-duka", paygatev1.EnvironmentSandbox, "order-callback")}, p); err != nil {
		t.Fatal(err)
	}
	f.callbackRef = "shop." + p.Name + ".1"
	p.Spec.PushRequest = &paygatev1.PushRequest{Sequence: 1, Phone: "+255712345678", Gateway: upstream.Code(), RequestedAt: metav1.NewMicroTime(time.Now())}
	p.Status.Attempts = []paygatev1.PushAttempt{{Sequence: 1, Reference: f.callbackRef, Gateway: upstream.Code(),
		Phase: paygatev1.AttemptAmbiguous, StartedAt: metav1.NewMicroTime(time.Now())}}
	if err := f.k8s.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	return f
}

// expand replaces the fixture's tokens in s.
func (f *fuzzFixture) expand(s string) string {
	if !strings.Contains(s, "{") {
		return s
	}
	for k, v := range f.ids {
		s = strings.ReplaceAll(s, k, v)
	}
	return s
}

// signedRequest is a request signed with creds, Content-Type application/json when it has a body.
func (f *fuzzFixture) signedRequest(t testing.TB, creds paygate.Credentials, method, target string, h http.Header, body []byte) *http.Request {
	t.Helper()
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	h.Set("X-Environment", creds.Environment)
	h.Set("X-Merchant-Key", creds.MerchantKey)
	h.Set("X-API-Key", creds.APIKey)
	h.Set("X-Timestamp", ts)
	h.Set("X-Signature", paygate.Sign(creds.APISecret, ts, method, target, body))
	if len(body) > 0 && h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	r, err := wireRequest(method, target, h, body, false)
	if err != nil {
		t.Fatalf("fixture request %s %s: %v", method, target, err)
	}
	return r
}

// wireRequest writes the request as an HTTP/1.1 client would send it and reads it back as the
// server does (http.ReadRequest): what net/http itself refuses (a malformed method, target or
// header) never reaches a handler, so it is an error here. chunked sends the body chunked.
func wireRequest(method, target string, h http.Header, body []byte, chunked bool) (*http.Request, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: pay.example.com\r\n", method, target)
	for name, values := range h {
		if !validHeaderName(name) {
			return nil, fmt.Errorf("header name %q", name)
		}
		for _, v := range values {
			if !validHeaderValue(v) {
				return nil, fmt.Errorf("header value %q", v)
			}
			fmt.Fprintf(&b, "%s: %s\r\n", name, v)
		}
	}
	switch {
	case chunked:
		b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		if len(body) > 0 {
			fmt.Fprintf(&b, "%x\r\n%s\r\n", len(body), body)
		}
		b.WriteString("0\r\n\r\n")
	default:
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
		b.Write(body)
	}
	r, err := http.ReadRequest(bufio.NewReader(&b))
	if err != nil {
		return nil, err
	}
	// The origin form (/path?query) and the absolute form (http://host/path?query) reach
	// handlers; CONNECT's authority form and OPTIONS * do not.
	if r.Method == http.MethodConnect || r.Host == "" || strings.ContainsAny(r.RequestURI, " \t\r\n") ||
		!(strings.HasPrefix(r.RequestURI, "/") || r.URL.IsAbs() && strings.HasPrefix(r.URL.Path, "/")) {
		return nil, fmt.Errorf("request target %q", r.RequestURI)
	}
	r.RemoteAddr = "127.0.0.1:40000"
	return r, nil
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return strings.TrimSpace(s) == s
}

// documentedErrors are the error labels of docs/api.md (Errors) with their statuses.
var documentedErrors = map[string][]int{
	LabelBadRequest:                         {400},
	LabelInvalidCredentials:                 {401},
	LabelInvalidSignature:                   {401},
	LabelMerchantPendingApproval:            {403},
	LabelMerchantSuspended:                  {403},
	LabelPayoutRejected:                     {403},
	LabelRefundRejected:                     {403},
	LabelNotFound:                           {404},
	LabelMethodNotAllowed:                   {405},
	LabelDuplicateReference:                 {409},
	LabelDuplicatePlanCode:                  {409},
	LabelIdempotencyKeyReused:               {409},
	LabelPaymentNotPending:                  {409},
	LabelPushInProgress:                     {409},
	LabelPaymentNotRefundable:               {409},
	string(paygatev1.FailureExpiredSession): {409},
	LabelUnsupportedMediaType:               {415},
	LabelValidationFailed:                   {422},
	LabelInvalidAmount:                      {422},
	LabelInsufficientBalance:                {422},
	LabelNoPayoutMethod:                     {422},
	LabelRefundNotSupported:                 {422},
	LabelInvalidCurrency:                    {422},
	LabelWalletUnavailable:                  {422},
	LabelNoPaymentMethod:                    {422},
	LabelRateLimited:                        {429},
}

// idempotentRoutes take an Idempotency-Key (docs/api.md, Idempotency).
var idempotentRoutes = []string{"/api/v1/payments", "/api/v1/initiate-payment", "/api/v1/payouts",
	"/api/v1/billing/plans", "/api/v1/billing/subscriptions"}

// isRefundCreate reports whether path is a refund create (POST /api/v1/payments/{trx_id}/refunds),
// which takes an Idempotency-Key too.
func isRefundCreate(path string) bool {
	trx, ok := strings.CutSuffix(strings.TrimPrefix(path, "/api/v1/payments/"), "/refunds")
	return ok && strings.HasPrefix(path, "/api/v1/payments/") && trx != "" && !strings.Contains(trx, "/")
}

// errorBody is the error shape of docs/api.md (Errors), and nothing else.
type errorBody struct {
	Error   string              `json:"error"`
	Message string              `json:"message"`
	Errors  map[string][]string `json:"errors"`
}

// checkExchange checks the properties every answer must have, whatever the request:
//   - never a 5xx (a panic is answered 500 by ServeHTTP, so it fails here too);
//   - every answer that is not 2xx is the error shape with a documented label and its status
//     (a 405 with Allow, a 429 with Retry-After), except hosted checkout's HTML pages and its
//     redirect after Pay (docs/checkout.md);
//   - a GET, a payout preview and a refused (4xx) request write nothing, except the
//     Idempotency-Key's own record, which a create's client errors keep (docs/api.md,
//     Idempotency), never on an authentication failure.
func (f *fuzzFixture) checkExchange(t *testing.T, r *http.Request, w *httptest.ResponseRecorder, writes []string) {
	t.Helper()
	path := r.URL.Path
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s %s (%d, %q): %s\nbody: %.2000s\nwrites: %v\nserver errors: %.4000s",
			r.Method, r.RequestURI, w.Code, w.Header().Get("Content-Type"), fmt.Sprintf(format, args...), w.Body.String(), writes, f.logs.String())
	}
	if w.Code >= 500 {
		fail("a server error")
	}
	checkout := strings.HasPrefix(path, "/checkout/")
	var label string
	switch {
	case w.Code >= 200 && w.Code < 300:
	case checkout && w.Code == http.StatusSeeOther && r.Method == http.MethodPost:
		if loc := w.Header().Get("Location"); !strings.HasPrefix(loc, "/checkout/") {
			fail("the redirect after Pay goes to %q", loc)
		}
	case checkout && w.Header().Get("Content-Type") == "text/html; charset=utf-8" &&
		slices.Contains([]int{400, 404, 410, 422}, w.Code):
		if !strings.Contains(w.Body.String(), "<html") {
			fail("not the checkout page")
		}
	default:
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			fail("an error that is not JSON")
		}
		var e errorBody
		dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			fail("not the error shape: %v", err)
		}
		if _, err := dec.Token(); err != io.EOF {
			fail("more than one JSON value")
		}
		label = e.Error
		statuses := documentedErrors[label]
		if path == "/internal/provider/callbacks" && label == LabelInvalidSignature {
			statuses = []int{400, 401} // docs/upstream-provider.md, Callbacks
		}
		if !slices.Contains(statuses, w.Code) {
			fail("label %q is not documented with status %d", label, w.Code)
		}
		if strings.TrimSpace(e.Message) == "" {
			fail("no message")
		}
		for field, msgs := range e.Errors {
			if field == "" || len(msgs) == 0 || slices.Contains(msgs, "") {
				fail("errors[%q] = %q", field, msgs)
			}
		}
		if w.Code == http.StatusMethodNotAllowed && w.Header().Get("Allow") == "" {
			fail("405 without Allow")
		}
		if w.Code == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "" {
			fail("429 without Retry-After")
		}
	}

	readOnly := r.Method == http.MethodGet || r.Method == http.MethodHead || path == "/api/v1/payouts/preview"
	refused := w.Code >= 400
	if !readOnly && !refused {
		return
	}
	keyMayBeKept := refused && r.Method == http.MethodPost && (slices.Contains(idempotentRoutes, path) || isRefundCreate(path)) &&
		r.Header.Get("Idempotency-Key") != "" && !slices.Contains([]int{401, 404, 405, 415, 429}, w.Code) &&
		label != LabelMerchantSuspended && label != LabelMerchantPendingApproval
	for _, wr := range netWrites(writes) {
		if keyMayBeKept && strings.Contains(wr, " IdempotencyKey ") {
			continue
		}
		fail("wrote %q", wr)
	}
}

// netWrites drops the objects a request created and then deleted itself (the key a keyless
// payout or subscription create claims with its signature is deleted again when the request is
// refused): what is left is what the request leaves behind.
func netWrites(writes []string) []string {
	var out []string
	for _, wr := range writes {
		if obj, ok := strings.CutPrefix(wr, "Delete "); ok {
			if i := slices.Index(out, "Create "+obj); i >= 0 {
				out = slices.Delete(out, i, i+1)
				continue
			}
		}
		out = append(out, wr)
	}
	return out
}

// serve sends r to the Server and checks the exchange.
func (f *fuzzFixture) serve(t *testing.T, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	before := f.rec.count()
	w := httptest.NewRecorder()
	f.api.ServeHTTP(w, r)
	f.checkExchange(t, r, w, f.rec.since(before))
	return w
}
