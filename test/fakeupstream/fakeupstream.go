// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fakeupstream is a real HTTP fake of the upstream mobile-money provider, speaking the
// protocol in docs/upstream-provider.md. Tests start one with New, point provider.NewUpstream (or
// the whole system) at URL(), script per-number outcomes and faults, and inspect what the fake
// received.
//
// Time: settlement (Scenario.SettleAfter) is evaluated lazily, on each request, against
// Options.Clock; there are no background timers for it. Callbacks are the exception: they are sent
// by goroutines — at POST time for an operation that settles at once, when a status query first
// observes the settlement by Clock, or, for a SettleAfter operation, after SettleAfter of REAL time
// has passed since the POST (whichever comes first; the automatic callback is sent once, plus
// DuplicateCallbacks copies). A test with a frozen injected Clock therefore still receives the
// callback of a SettleAfter operation after SettleAfter of wall time: keep SettleAfter small in
// callback tests, or large (and advance the Clock) when no callback should arrive on its own.
package fakeupstream

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/provider"
)

// Options configures a fake. Zero values get sensible defaults.
type Options struct {
	// Token is the bearer token the fake accepts; "" means a random one (read it from Server.Token).
	Token string
	// CallbackSecret signs callbacks; nil means a random one (read it from Server.CallbackSecret).
	CallbackSecret []byte
	// Clock drives settlement and callback timestamps; nil means time.Now. It must be safe for
	// concurrent use.
	Clock func() time.Time
}

// Scenario scripts what happens to every operation (collection or disbursement, with Script; refund,
// with ScriptRefunds) for one msisdn. The zero Scenario is the default for unscripted numbers:
// success at once.
type Scenario struct {
	// Outcome is the final status: provider.StatusSuccess (also for ""), StatusFailed,
	// StatusAmbiguous (stays ambiguous forever), or StatusPending (never resolves: INPROGRESS).
	Outcome provider.Status
	// Code is the failure code of a FAILED outcome; "" means PAYMENT_DECLINED.
	Code paygatev1.FailureCode
	// SettleAfter keeps the operation INPROGRESS until this long after the POST, by the fake's
	// Clock. 0 settles at once: the POST answer itself carries the outcome.
	SettleAfter time.Duration
	// AmbiguousFor answers AMBIGUOUS to the first N status queries made once the operation has
	// settled (queries while it is still INPROGRESS do not count), then the outcome. An operation
	// that settles at once also answers its POST with AMBIGUOUS when N > 0.
	AmbiguousFor int
	// PostLatency sleeps (real time) before answering each POST for this number; the operation is
	// recorded before the sleep, so a client that times out has still pushed.
	PostLatency time.Duration
	// PostError answers the POST that creates the operation with this HTTP status (e.g. 500) after
	// recording it: the provider got it but the answer was lost. Repeated POSTs with the same
	// reference answer normally. 0 for none.
	PostError int
	// DropPostConnection closes the connection without any answer, after recording the operation,
	// on the POST that creates it. Repeated POSTs answer normally.
	DropPostConnection bool
	// Callback sends a signed callback to the request's callback_url when the operation settles
	// (not for a PENDING outcome). It carries the outcome, regardless of AmbiguousFor.
	Callback bool
	// DuplicateCallbacks sends this many extra copies of that callback (each freshly stamped).
	DuplicateCallbacks int
	// CallbackDelay waits this much real time more before sending the callback.
	CallbackDelay time.Duration
	// NotFoundQueries answers 404 NOT_FOUND to the first N status queries about the operation
	// after accepting it, as real providers do for a while: the operation exists (a repeated POST
	// with its reference is de-duplicated and answers it, and it settles and calls back as
	// scripted), but status queries do not see it yet. Queries answered NOT_FOUND do not count
	// against AmbiguousFor.
	NotFoundQueries int
	// NotFoundFor answers 404 NOT_FOUND to every status query made within this long after the POST
	// that created the operation, by the fake's Clock, like NotFoundQueries. Both may be set: a
	// query is answered NOT_FOUND while either holds (a query inside NotFoundFor consumes one of
	// NotFoundQueries too). No callback is sent while the operation is hidden by NotFoundFor; it
	// goes out when the window ends.
	NotFoundFor time.Duration
}

// Server is a running fake upstream provider. Its methods are safe for concurrent use.
type Server struct {
	// Token is the bearer token the fake accepts.
	Token string
	// CallbackSecret is the key the fake signs callbacks with.
	CallbackSecret []byte

	t        testing.TB
	srv      *httptest.Server
	clock    func() time.Time
	cbClient *http.Client
	ctx      context.Context // cancelled when the fake closes
	cancel   context.CancelFunc
	wg       sync.WaitGroup // callback goroutines

	mu                 sync.Mutex
	closed             bool
	scripts            map[string]Scenario
	refundScripts      map[string]Scenario
	ops                map[opKey]*operation
	posts              map[opKey]int
	postTimes          map[opKey][]time.Time
	created            map[opKey]int          // operations created per reference, forgotten ones included
	forgotten          map[opKey][]*operation // operations dropped by Forget, oldest first
	forgets            int
	pushes             int
	disbursements      int
	refunds            int
	seq                int
	failStatus         int
	latency            time.Duration
	callbacksDelivered int
	callbacksFailed    int
}

const (
	kindCollection   = provider.CallbackKindCollection
	kindDisbursement = provider.CallbackKindDisbursement
	// kindRefund is the refunds' kind, on the wire in callbacks (docs/upstream-provider.md).
	kindRefund = "refund"
)

// kinds are the operation kinds, each with its own namespace of references and its path.
var kinds = []struct{ kind, path string }{
	{kindCollection, "/v1/collections"},
	{kindDisbursement, "/v1/disbursements"},
	{kindRefund, "/v1/refunds"},
}

type opKey struct{ kind, reference string }

// The fake keeps its own encoding of the protocol on purpose: its wire types below, and the
// callback signature (signCallback), are written from docs/upstream-provider.md and share no code
// with internal/provider or pkg/paygate/signing, so that the tests check Paygate against the
// protocol rather than against itself. Keep them independent.

// wireRequest is the body of every POST: collections and disbursements leave the collection
// fields empty, refunds the description.
type wireRequest struct {
	Reference                   string `json:"reference"`
	CollectionReference         string `json:"collection_reference"`
	CollectionProviderReference string `json:"collection_provider_reference"`
	MSISDN                      string `json:"msisdn"`
	Amount                      string `json:"amount"`
	Currency                    string `json:"currency"`
	Gateway                     string `json:"gateway"`
	Description                 string `json:"description"`
	CallbackURL                 string `json:"callback_url"`
}

type wireResponse struct {
	Reference         string `json:"reference"`
	ProviderReference string `json:"provider_reference"`
	Status            string `json:"status"`
	Code              string `json:"code"`
	Message           string `json:"message"`
	Remark            string `json:"remark"`
}

type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type wireCallback struct {
	Reference         string `json:"reference"`
	ProviderReference string `json:"provider_reference"`
	Status            string `json:"status"`
	Code              string `json:"code"`
	Message           string `json:"message"`
	Kind              string `json:"kind"`
}

type operation struct {
	kind            string
	req             wireRequest
	providerRef     string
	scenario        Scenario
	created         time.Time // by the fake's Clock
	ambiguousLeft   int
	notFoundLeft    int
	callbackStarted bool
}

// New starts a fake upstream on a local port; it is closed (and its callback goroutines stopped)
// by t.Cleanup.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{
		Token:          opts.Token,
		CallbackSecret: opts.CallbackSecret,
		t:              t,
		clock:          opts.Clock,
		cbClient:       &http.Client{Timeout: 5 * time.Second},
		scripts:        map[string]Scenario{},
		refundScripts:  map[string]Scenario{},
		ops:            map[opKey]*operation{},
		posts:          map[opKey]int{},
		postTimes:      map[opKey][]time.Time{},
		created:        map[opKey]int{},
		forgotten:      map[opKey][]*operation{},
	}
	if s.Token == "" {
		s.Token = "fake-upstream-" + randomHex(t, 16)
	}
	if s.CallbackSecret == nil {
		s.CallbackSecret = []byte(randomHex(t, 32))
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(s.close)
	return s
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("fakeupstream: %v", err)
	}
	return hex.EncodeToString(b)
}

func (s *Server) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.srv.Close()
}

// URL is the fake's base URL (for provider.UpstreamConfig.BaseURL).
func (s *Server) URL() string { return s.srv.URL }

// Script sets the scenario for every later operation on msisdn (E.164, as sent). An operation
// keeps the scenario it was created with.
func (s *Server) Script(msisdn string, sc Scenario) {
	s.t.Helper()
	s.checkScenario("Script", msisdn, sc)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[msisdn] = sc
}

// ScriptRefunds sets the scenario for every later refund to msisdn (E.164, as sent); refunds
// follow their own scripts, not Script's, and an unscripted number's refunds succeed at once. A
// refund the fake refuses (see the package's validation) is not created and follows no scenario.
func (s *Server) ScriptRefunds(msisdn string, sc Scenario) {
	s.t.Helper()
	s.checkScenario("ScriptRefunds", msisdn, sc)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refundScripts[msisdn] = sc
}

func (s *Server) checkScenario(what, msisdn string, sc Scenario) {
	s.t.Helper()
	switch sc.Outcome {
	case "", provider.StatusSuccess, provider.StatusFailed, provider.StatusAmbiguous, provider.StatusPending:
	default:
		s.t.Fatalf("fakeupstream: %s(%s): unknown outcome %q", what, msisdn, sc.Outcome)
	}
	if sc.PostError != 0 && (sc.PostError < 100 || sc.PostError > 999) {
		s.t.Fatalf("fakeupstream: %s(%s): PostError %d is not an HTTP status", what, msisdn, sc.PostError)
	}
	if sc.NotFoundQueries < 0 || sc.NotFoundFor < 0 {
		s.t.Fatalf("fakeupstream: %s(%s): negative NotFoundQueries or NotFoundFor", what, msisdn)
	}
}

// Fail makes every request answer with the HTTP status (and record nothing) until Recover.
func (s *Server) Fail(status int) {
	if status != 0 && (status < 100 || status > 999) {
		s.t.Helper()
		s.t.Fatalf("fakeupstream: Fail(%d): not an HTTP status", status)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failStatus = status
}

// Recover undoes Fail.
func (s *Server) Recover() { s.Fail(0) }

// SetLatency delays every answer by d (real time); 0 removes it.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// Pushes is the number of POST /v1/collections received (authenticated, not answered by Fail),
// repeats and invalid requests included.
func (s *Server) Pushes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushes
}

// Disbursements is the number of POST /v1/disbursements received, counted like Pushes.
func (s *Server) Disbursements() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disbursements
}

// Refunds is the number of POST /v1/refunds received, counted like Pushes (refused refunds
// included).
func (s *Server) Refunds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refunds
}

// RefundsFor is the number of POST /v1/refunds received with this reference.
func (s *Server) RefundsFor(reference string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posts[opKey{kindRefund, reference}]
}

// PushesFor is the number of POST /v1/collections received with this reference.
func (s *Server) PushesFor(reference string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posts[opKey{kindCollection, reference}]
}

// DisbursementsFor is the number of POST /v1/disbursements received with this reference.
func (s *Server) DisbursementsFor(reference string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posts[opKey{kindDisbursement, reference}]
}

// Forget drops every operation the fake has accepted, as a provider that lost its records
// would: status queries about them answer 404, and a POST with one of their references creates a
// new operation. The counts of pushes and disbursements received stay, and so does what the
// provider did (Truth, OperationsFor).
func (s *Server) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked()
}

// ForgetIf calls ok with the fake stopped (every request waits until ok returns) and forgets,
// as Forget, only if ok returns true; it reports whether it forgot. A test uses it to forget at
// a moment it chose by looking at the system under test: no request reaches the fake between
// the look and the forgetting. ok may ask holds whether the fake holds an operation with a
// reference (a collection, a disbursement or a refund); it must not call the Server's methods.
func (s *Server) ForgetIf(ok func(holds func(reference string) bool) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	holds := func(reference string) bool { return s.opLocked(reference) != nil }
	if !ok(holds) {
		return false
	}
	s.forgetLocked()
	return true
}

func (s *Server) forgetLocked() {
	for k, op := range s.ops {
		s.forgotten[k] = append(s.forgotten[k], op)
	}
	s.ops = map[opKey]*operation{}
	s.forgets++
}

// Forgets is the number of times the fake forgot everything (Forget, or ForgetIf that forgot).
func (s *Server) Forgets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.forgets
}

// OperationsFor is the number of operations created with this reference (collections,
// disbursements and refunds), forgotten ones included: more than one is money moved twice.
// Repeated POSTs the fake de-duplicated do not count (PushesFor, DisbursementsFor and RefundsFor
// count them).
func (s *Server) OperationsFor(reference string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, k := range kinds {
		n += s.created[opKey{k.kind, reference}]
	}
	return n
}

// PostTimes are the times (by the fake's Clock) of every POST received with this reference
// (collections, then disbursements, then refunds), repeats included, oldest first within each.
func (s *Server) PostTimes(reference string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	for _, k := range kinds {
		out = append(out, s.postTimes[opKey{k.kind, reference}]...)
	}
	return out
}

// opLocked is the operation with this reference: a collection, else a disbursement, else a
// refund. Callers hold s.mu.
func (s *Server) opLocked(reference string) *operation {
	for _, k := range kinds {
		if op := s.ops[opKey{k.kind, reference}]; op != nil {
			return op
		}
	}
	return nil
}

// Operations is the number of distinct operations recorded (collections, disbursements and
// refunds).
func (s *Server) Operations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ops)
}

// Operation is the current state of the operation with this reference (a collection, else a
// disbursement, else a refund), as a status query would answer it now but without consuming
// AmbiguousFor.
func (s *Server) Operation(reference string) (provider.Result, bool) {
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	op := s.opLocked(reference)
	if op == nil {
		return provider.Result{}, false
	}
	r := s.view(op, now, false)
	st, err := provider.ParseUpstreamStatus(r.Status)
	if err != nil {
		s.t.Errorf("fakeupstream: %v", err)
	}
	return provider.Result{Status: st, ProviderReference: r.ProviderReference, Code: paygatev1.FailureCode(r.Code), Message: r.Message, Remark: r.Remark}, true
}

// Truth is what the provider did with the reference's newest operation (a collection, else a
// disbursement, else a refund), forgotten or not: its scripted outcome once settled by the fake's Clock
// (whatever AmbiguousFor, NotFoundQueries or NotFoundFor would answer a status query now),
// StatusPending before. It is what an operator learns by asking the provider's support, and
// consumes nothing. ok is false when no operation was ever created with the reference.
func (s *Server) Truth(reference string) (res provider.Result, ok bool) {
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	var op *operation
	for _, kd := range kinds {
		k := opKey{kd.kind, reference}
		if op = s.ops[k]; op != nil {
			break
		}
		if f := s.forgotten[k]; len(f) > 0 {
			op = f[len(f)-1]
			break
		}
	}
	if op == nil {
		return provider.Result{}, false
	}
	if !settled(op, now) {
		return provider.Result{Status: provider.StatusPending, ProviderReference: op.providerRef}, true
	}
	st, code, msg := finalWire(op.scenario)
	status, err := provider.ParseUpstreamStatus(st)
	if err != nil {
		s.t.Errorf("fakeupstream: %v", err)
	}
	return provider.Result{Status: status, ProviderReference: op.providerRef, Code: paygatev1.FailureCode(code), Message: msg}, true
}

// CallbacksDelivered is the number of callbacks the fake sent that were answered 2xx.
func (s *Server) CallbacksDelivered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callbacksDelivered
}

// CallbacksFailed is the number of callbacks that got a non-2xx answer or no answer.
func (s *Server) CallbacksFailed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callbacksFailed
}

// SendCallback sends (again) the signed callback for the operation with this reference (a
// collection, else a disbursement, else a refund) now, in a goroutine, whatever its scenario says.
// It carries the scripted outcome (INPROGRESS for a PENDING one). It fails the test if the
// reference is unknown or the operation has no callback_url.
func (s *Server) SendCallback(reference string) {
	s.t.Helper()
	s.mu.Lock()
	op := s.opLocked(reference)
	if op == nil || op.req.CallbackURL == "" {
		s.mu.Unlock()
		s.t.Fatalf("fakeupstream: SendCallback(%q): no such operation with a callback_url", reference)
		return
	}
	target, cb := op.req.CallbackURL, callbackFor(op)
	s.mu.Unlock()
	s.goCallbacks(target, cb, 0, 1)
}

// ---- HTTP ----

type answer struct {
	status int
	body   any
	delay  time.Duration // extra real-time delay (PostLatency)
	drop   bool          // hijack and close instead of answering
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	fail, latency := s.failStatus, s.latency
	s.mu.Unlock()

	var a answer
	switch {
	case fail != 0:
		a = answer{status: fail, body: wireError{"PROVIDER_ERROR", "fake upstream: failing on purpose"}}
	case !s.authorized(r):
		a = answer{status: http.StatusUnauthorized, body: wireError{"UNAUTHORIZED", "missing or invalid bearer token"}}
	default:
		a = s.route(r)
	}

	if !s.sleep(r.Context(), latency+a.delay) {
		panic(http.ErrAbortHandler) // client gone or fake closing: no answer at all
	}
	if a.drop {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // fallback: aborts the response without an answer
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_ = json.NewEncoder(w).Encode(a.body)
}

func (s *Server) authorized(r *http.Request) bool {
	got := r.Header.Get("Authorization")
	want := "Bearer " + s.Token
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (s *Server) route(r *http.Request) answer {
	for _, k := range kinds {
		kind, base := k.kind, k.path
		switch {
		case r.URL.Path == base:
			if r.Method != http.MethodPost {
				return answer{status: http.StatusMethodNotAllowed, body: wireError{"METHOD_NOT_ALLOWED", "use POST"}}
			}
			return s.create(r, kind)
		case strings.HasPrefix(r.URL.Path, base+"/"):
			if r.Method != http.MethodGet {
				return answer{status: http.StatusMethodNotAllowed, body: wireError{"METHOD_NOT_ALLOWED", "use GET"}}
			}
			// r.URL.Path is unescaped: an escaped "/" in the reference is part of it.
			return s.get(kind, strings.TrimPrefix(r.URL.Path, base+"/"))
		}
	}
	return answer{status: http.StatusNotFound, body: wireError{"NOT_FOUND", "no such endpoint"}}
}

var (
	msisdnRE   = regexp.MustCompile(`^\+[1-9][0-9]{7,14}$`)
	amountRE   = regexp.MustCompile(`^[0-9]{1,15}(\.[0-9]{1,4})?$`)
	currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)
)

func invalid(msg string) answer {
	return answer{status: http.StatusBadRequest, body: wireError{"INVALID_REQUEST", msg}}
}

func (s *Server) create(r *http.Request, kind string) answer {
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	now := s.clock()

	s.mu.Lock()
	defer s.mu.Unlock()
	switch kind {
	case kindCollection:
		s.pushes++
	case kindDisbursement:
		s.disbursements++
	case kindRefund:
		s.refunds++
	}
	if err != nil {
		return invalid("unreadable body")
	}
	var req wireRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return invalid("malformed JSON")
	}
	if req.Reference == "" {
		return invalid("reference is required")
	}
	key := opKey{kind, req.Reference}
	s.posts[key]++
	s.postTimes[key] = append(s.postTimes[key], now)

	if op := s.ops[key]; op != nil {
		if op.req.MSISDN != req.MSISDN || op.req.Amount != req.Amount || op.req.Currency != req.Currency || op.req.Gateway != req.Gateway ||
			op.req.CollectionReference != req.CollectionReference {
			return answer{status: http.StatusConflict, body: wireError{"DUPLICATE_REFERENCE", "reference already used for a different request"}}
		}
		// Idempotent repeat: the existing operation, nothing pushed again.
		return answer{status: http.StatusOK, body: s.view(op, now, false), delay: op.scenario.PostLatency}
	}

	switch {
	case !msisdnRE.MatchString(req.MSISDN):
		return answer{status: http.StatusBadRequest, body: wireError{string(paygatev1.FailureInvalidAccount), "msisdn is not an E.164 number"}}
	case !amountRE.MatchString(req.Amount) || strings.Trim(req.Amount, "0.") == "":
		return invalid("amount must be a positive decimal string")
	case !currencyRE.MatchString(req.Currency):
		return invalid("currency must be an ISO 4217 code")
	case req.Gateway == "":
		return invalid("gateway is required")
	case req.CallbackURL != "" && !absoluteHTTP(req.CallbackURL):
		return invalid("callback_url must be an absolute http(s) URL")
	case kind == kindRefund && req.CollectionReference == "":
		return invalid("collection_reference is required")
	}
	if kind == kindRefund {
		if a, refused := s.refuseRefundLocked(req, now); refused {
			return a
		}
	}

	sc := s.scripts[req.MSISDN]
	prefix := "FKC"
	switch kind {
	case kindDisbursement:
		prefix = "FKD"
	case kindRefund:
		sc, prefix = s.refundScripts[req.MSISDN], "FKR"
	}
	s.seq++
	op := &operation{
		kind:          kind,
		req:           req,
		providerRef:   fmt.Sprintf("%s%06d", prefix, s.seq),
		scenario:      sc,
		created:       now,
		ambiguousLeft: sc.AmbiguousFor,
		notFoundLeft:  sc.NotFoundQueries,
	}
	s.ops[key] = op
	s.created[key]++

	if sc.Callback && req.CallbackURL != "" && outcome(sc) != provider.StatusPending {
		if sc.SettleAfter <= 0 && sc.NotFoundFor <= 0 {
			op.callbackStarted = true
			s.goCallbacksLocked(req.CallbackURL, callbackFor(op), sc.CallbackDelay, 1+sc.DuplicateCallbacks)
		} else {
			s.goSettleCallbackLocked(op)
		}
	}

	switch {
	case sc.DropPostConnection:
		return answer{drop: true, delay: sc.PostLatency}
	case sc.PostError != 0:
		return answer{status: sc.PostError, body: wireError{"PROVIDER_ERROR", "fake upstream: answer lost on purpose"}, delay: sc.PostLatency}
	}
	v := s.view(op, now, false)
	status := http.StatusCreated
	if v.Status == provider.UpstreamInProgress {
		status = http.StatusAccepted
	}
	return answer{status: status, body: v, delay: sc.PostLatency}
}

// refuseRefundLocked answers a refund the provider refuses, as a provider that knows the
// collection would: one in another currency (400 INVALID_REQUEST), of a collection that did not
// succeed (422 PAYMENT_NOT_REFUNDABLE), or one that, with the collection's refunds not failed,
// would return more than its amount (422 REFUND_EXCEEDS_PAYMENT). A collection the fake does not
// hold (made elsewhere, or forgotten) cannot be checked: the refund is accepted. Callers hold s.mu.
func (s *Server) refuseRefundLocked(req wireRequest, now time.Time) (answer, bool) {
	col := s.ops[opKey{kindCollection, req.CollectionReference}]
	if col == nil {
		return answer{}, false
	}
	if col.req.Currency != req.Currency {
		return invalid("currency differs from the collection's"), true
	}
	if !settled(col, now) || outcome(col.scenario) != provider.StatusSuccess {
		return answer{status: http.StatusUnprocessableEntity, body: wireError{provider.UpstreamPaymentNotRefundable, "the collection did not succeed"}}, true
	}
	left := decimal(col.req.Amount)
	for k, op := range s.ops {
		if k.kind == kindRefund && op.req.CollectionReference == req.CollectionReference &&
			!(settled(op, now) && outcome(op.scenario) == provider.StatusFailed) {
			left.Sub(left, decimal(op.req.Amount))
		}
	}
	if decimal(req.Amount).Cmp(left) > 0 {
		return answer{status: http.StatusUnprocessableEntity, body: wireError{provider.UpstreamRefundExceedsPayment,
			"the amount is more than what is left of the collection (" + left.FloatString(4) + ")"}}, true
	}
	return answer{}, false
}

// decimal parses an amount the fake validated (amountRE).
func decimal(amount string) *big.Rat {
	r, ok := new(big.Rat).SetString(amount)
	if !ok {
		return new(big.Rat)
	}
	return r
}

func absoluteHTTP(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func (s *Server) get(kind, reference string) answer {
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	op := s.ops[opKey{kind, reference}]
	if op == nil {
		return answer{status: http.StatusNotFound, body: wireError{"NOT_FOUND", "no operation with this reference"}}
	}
	hiddenFor := now.Before(op.created.Add(op.scenario.NotFoundFor))
	if hiddenFor || op.notFoundLeft > 0 {
		// Accepted, but not visible to status queries yet (Scenario.NotFoundQueries, NotFoundFor).
		if op.notFoundLeft > 0 {
			op.notFoundLeft--
		}
		return answer{status: http.StatusNotFound, body: wireError{"NOT_FOUND", "no operation with this reference"}}
	}
	v := s.view(op, now, true)
	if settled(op, now) && op.scenario.Callback && !op.callbackStarted && op.req.CallbackURL != "" {
		op.callbackStarted = true
		s.goCallbacksLocked(op.req.CallbackURL, callbackFor(op), op.scenario.CallbackDelay, 1+op.scenario.DuplicateCallbacks)
	}
	return answer{status: http.StatusOK, body: v}
}

// ---- settlement ----

func outcome(sc Scenario) provider.Status {
	if sc.Outcome == "" {
		return provider.StatusSuccess
	}
	return sc.Outcome
}

func failureCode(sc Scenario) string {
	if sc.Code == "" {
		return string(paygatev1.FailurePaymentDeclined)
	}
	return string(sc.Code)
}

// settled: the operation has reached its scripted outcome by the fake's clock.
func settled(op *operation, now time.Time) bool {
	return outcome(op.scenario) != provider.StatusPending && !now.Before(op.created.Add(op.scenario.SettleAfter))
}

// view is the operation as the fake reports it at now; consume counts a status query against
// AmbiguousFor. Callers hold s.mu.
func (s *Server) view(op *operation, now time.Time, consume bool) wireResponse {
	r := wireResponse{Reference: op.req.Reference, ProviderReference: op.providerRef}
	switch {
	case !settled(op, now):
		r.Status, r.Message = provider.UpstreamInProgress, "waiting for the customer"
	case op.ambiguousLeft > 0:
		if consume {
			op.ambiguousLeft--
		}
		r.Status, r.Message = provider.UpstreamAmbiguous, "outcome not known yet"
	default:
		r.Status, r.Code, r.Message = finalWire(op.scenario)
	}
	return r
}

func finalWire(sc Scenario) (status, code, message string) {
	switch o := outcome(sc); o {
	case provider.StatusFailed:
		return provider.UpstreamFailed, failureCode(sc), "failed: " + failureCode(sc)
	case provider.StatusAmbiguous:
		return provider.UpstreamAmbiguous, string(sc.Code), "outcome not known"
	case provider.StatusPending:
		return provider.UpstreamInProgress, "", "waiting for the customer"
	default:
		return provider.UpstreamSuccess, "", "completed"
	}
}

// ---- callbacks ----

func callbackFor(op *operation) wireCallback {
	st, code, msg := finalWire(op.scenario)
	return wireCallback{
		Reference:         op.req.Reference,
		ProviderReference: op.providerRef,
		Status:            st,
		Code:              code,
		Message:           msg,
		Kind:              op.kind,
	}
}

func (s *Server) goCallbacks(target string, cb wireCallback, delay time.Duration, copies int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.goCallbacksLocked(target, cb, delay, copies)
}

// goCallbacksLocked sends copies of cb after delay, in a goroutine. Callers hold s.mu.
func (s *Server) goCallbacksLocked(target string, cb wireCallback, delay time.Duration, copies int) {
	if s.closed {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if !s.sleep(s.ctx, delay) {
			return
		}
		for range copies {
			s.deliver(target, cb)
		}
	}()
}

// goSettleCallbackLocked waits SettleAfter (or NotFoundFor, when longer) of real time, then
// sends the operation's callbacks unless a status query already started them. Callers hold s.mu.
func (s *Server) goSettleCallbackLocked(op *operation) {
	if s.closed {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if !s.sleep(s.ctx, max(op.scenario.SettleAfter, op.scenario.NotFoundFor)) {
			return
		}
		s.mu.Lock()
		if op.callbackStarted {
			s.mu.Unlock()
			return
		}
		op.callbackStarted = true
		target, cb, sc := op.req.CallbackURL, callbackFor(op), op.scenario
		s.mu.Unlock()
		if !s.sleep(s.ctx, sc.CallbackDelay) {
			return
		}
		for range 1 + sc.DuplicateCallbacks {
			s.deliver(target, cb)
		}
	}()
}

// signCallback is the X-Provider-Signature of a callback: the lower-case hex HMAC-SHA256 of
// "<timestamp>.<raw body>" keyed with the callback secret. Computed here, not with
// provider.SignCallback: see the note on the wire types.
func signCallback(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp + "."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func (s *Server) deliver(target string, cb wireCallback) {
	body, err := json.Marshal(cb)
	if err != nil {
		return
	}
	ts := strconv.FormatInt(s.clock().Unix(), 10)
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, target, bytes.NewReader(body))
	ok := false
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(provider.CallbackTimestampHeader, ts)
		req.Header.Set(provider.CallbackSignatureHeader, signCallback(s.CallbackSecret, ts, body))
		if resp, err := s.cbClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			ok = resp.StatusCode >= 200 && resp.StatusCode < 300
		}
	}
	s.mu.Lock()
	if ok {
		s.callbacksDelivered++
	} else {
		s.callbacksFailed++
	}
	s.mu.Unlock()
}

// sleep waits d, or until ctx is done or the fake closes; it reports whether the full wait passed.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil && s.ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.ctx.Done():
		return false
	}
}
