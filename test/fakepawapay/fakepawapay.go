// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fakepawapay is a real HTTP fake (net/http/httptest) of pawaPay's Merchant API v2, written
// from pawaPay's published documentation (https://docs.pawapay.io/v2/), for tests of a pawaPay
// adapter. Tests start one with New, point their client at URL() with Token, script outcomes per
// phone number or amount, inject faults, and inspect what the fake received through Counters.
//
// What it implements:
//
//   - Bearer authentication: no token answers 401 NO_AUTHENTICATION, a wrong one 403
//     AUTHENTICATION_ERROR, as the failure codes page lists them.
//   - Deposits: POST /v2/deposits (ACCEPTED, REJECTED with failureReason, DUPLICATE_IGNORED for a
//     repeated depositId; 400 for unparsable, missing, unsupported or invalid parameters),
//     GET /v2/deposits/{depositId} (FOUND with data, or NOT_FOUND), and
//     POST /v2/deposits/resend-callback/{depositId}.
//   - Payouts (POST /v2/payouts, GET /v2/payouts/{payoutId}, resend-callback) and refunds
//     (POST /v2/refunds, GET /v2/refunds/{refundId}, resend-callback) likewise. Refunds of a
//     COMPLETED deposit, full (no amount: what is left) or partial, several up to its amount
//     (beyond it, AMOUNT_TOO_LARGE; nothing left, DEPOSIT_ALREADY_REFUNDED), one at a time (a new
//     one while another is processing is REJECTED with REFUND_IN_PROGRESS).
//   - Statuses: ACCEPTED at initiation, then PROCESSING (ENQUEUED for payouts while the provider's
//     payouts are DELAYED), optionally IN_RECONCILIATION, and finally COMPLETED or FAILED with a
//     failureReason {failureCode, failureMessage}.
//   - Callbacks: the final deposit, payout or refund, POSTed to the callback URL configured per
//     operation type in Options (pawaPay configures callback URLs per account in its dashboard, not
//     per request), optionally signed (RFC 9421 + Content-Digest, ECDSA P-256; see sign.go), with
//     the public key at GET /v2/public-key/http.
//   - Toolkit and finances: GET /v2/active-conf, GET /v2/availability, POST /v2/predict-provider,
//     GET /v2/wallet-balances, for Tanzania and Kenya by default (DefaultProviders), with the
//     sandbox test numbers (DefaultSandboxNumbers).
//   - Faults on demand (InjectFault, Forget, Scenario's NotFound*, Callback* fields, SetAvailability).
//
// What it does not implement: signed requests (signatures on Merchant requests are accepted and
// ignored), pre-authorisation codes and redirect authorisation flows (preAuthorisationCode is
// accepted and ignored), bulk payouts, the fail-enqueued-payout action, checkouts, the payment
// page, remittances, split payments, statements, and v1 endpoints. Where the documentation read
// did not state a detail (the HTTP status of some rejections, the body of a 429, the failure code
// of a refused resend-callback), the fake's choice is marked in a comment.
//
// Time: settlement is evaluated lazily against Options.Clock — on each status check, on Tick, and
// at initiation — so tests are deterministic; there are no background timers for it. Callbacks are
// the exception: they are sent by goroutines, when an initiation settles at once, when a status
// check or Tick first observes the final status, or on ResendCallback, each after its
// Scenario.CallbackDelay of real time. With the real clock (Options.Clock nil) an operation whose
// Scenario.SettleAfter is positive also gets a goroutine that calls Tick once SettleAfter of real
// time has passed, so that its callback arrives without polling; with an injected clock, advance
// the clock and call Tick (or check the status) instead.
//
// Money amounts are decimal strings throughout, compared in hundredths with math/big.
package fakepawapay

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Payment statuses of the Merchant API v2.
// https://docs.pawapay.io/v2/api-reference/deposits/check-deposit-status
const (
	StatusAccepted         = "ACCEPTED"
	StatusRejected         = "REJECTED"
	StatusDuplicateIgnored = "DUPLICATE_IGNORED"
	StatusProcessing       = "PROCESSING"
	StatusEnqueued         = "ENQUEUED" // payouts only
	StatusInReconciliation = "IN_RECONCILIATION"
	StatusCompleted        = "COMPLETED"
	StatusFailed           = "FAILED"
)

// Routes, as the fake names them for InjectFault and Counters.Requests.
const (
	RouteInitiateDeposit       = "POST /v2/deposits"
	RouteDepositStatus         = "GET /v2/deposits/{depositId}"
	RouteResendDepositCallback = "POST /v2/deposits/resend-callback/{depositId}"
	RouteInitiatePayout        = "POST /v2/payouts"
	RoutePayoutStatus          = "GET /v2/payouts/{payoutId}"
	RouteResendPayoutCallback  = "POST /v2/payouts/resend-callback/{payoutId}"
	RouteInitiateRefund        = "POST /v2/refunds"
	RouteRefundStatus          = "GET /v2/refunds/{refundId}"
	RouteResendRefundCallback  = "POST /v2/refunds/resend-callback/{refundId}"
	RouteActiveConf            = "GET /v2/active-conf"
	RouteAvailability          = "GET /v2/availability"
	RoutePredictProvider       = "POST /v2/predict-provider"
	RouteWalletBalances        = "GET /v2/wallet-balances"
	RoutePublicKeys            = "GET /v2/public-key/http"
)

// Options configures a fake. Zero values get sensible defaults.
type Options struct {
	// Token is the API token the fake accepts; "" means a random one (read it from Server.Token).
	Token string
	// Clock drives created timestamps and settlement; nil means time.Now. It must be safe for
	// concurrent use.
	Clock func() time.Time
	// DepositCallbackURL, PayoutCallbackURL and RefundCallbackURL are the account's callback
	// URLs; "" means no callbacks for that operation type (the status must be polled).
	// https://docs.pawapay.io/v2/docs/how_to_start
	DepositCallbackURL, PayoutCallbackURL, RefundCallbackURL string
	// SignCallbacks signs callbacks (see sign.go); active-conf reports it in
	// signatureConfiguration.signedCallbacks.
	SignCallbacks bool
	// SigningKey signs callbacks; nil means a fresh P-256 key (read it from Server.SigningKey).
	SigningKey *ecdsa.PrivateKey
	// CompanyName is active-conf's companyName and providers' nameDisplayedToCustomer.
	CompanyName string
	// Providers configured on the account; nil means DefaultProviders().
	Providers []Provider
	// NoSandboxNumbers leaves out DefaultSandboxNumbers: every unscripted number completes.
	NoSandboxNumbers bool
	// Balances are the opening wallet balances per country (ISO alpha-3); a country of a
	// provider missing here opens with "0". nil means 10,000,000 in every country.
	Balances map[string]string
	// CallbackClient sends callbacks; nil means a client with a 5 s timeout.
	CallbackClient *http.Client
}

// Scenario scripts what happens to an operation after it is ACCEPTED. The zero Scenario
// completes at once.
type Scenario struct {
	// Status is the final status: StatusCompleted (also for ""), StatusFailed, or
	// StatusProcessing, which never resolves (like the sandbox numbers stuck without a callback).
	Status string
	// FailureCode is the failureCode of a FAILED operation; "" means UNSPECIFIED_FAILURE.
	// https://docs.pawapay.io/v2/docs/failure_codes
	FailureCode string
	// PendingStatus is the status shown before settlement; "" means PROCESSING (ENQUEUED for a
	// payout while the provider's payouts are DELAYED).
	PendingStatus string
	// SettleAfterChecks keeps the operation pending for this many status checks.
	SettleAfterChecks int
	// SettleAfter keeps the operation pending until this long after its creation, by the Clock.
	SettleAfter time.Duration
	// ReconciliationChecks answers IN_RECONCILIATION to this many status checks made once the
	// operation has settled, before showing (and calling back) the final status.
	ReconciliationChecks int
	// NotFoundChecks answers NOT_FOUND to the first N status checks after acceptance.
	NotFoundChecks int
	// NotFoundFor answers NOT_FOUND to status checks until this long after creation, by the Clock.
	NotFoundFor time.Duration
	// NoCallback sends no automatic callback for this operation.
	NoCallback bool
	// DuplicateCallbacks sends this many extra copies of the callback.
	DuplicateCallbacks int
	// CallbackDelay waits this much real time before sending the callback.
	CallbackDelay time.Duration
}

// FaultKind says what an injected fault does.
type FaultKind int

const (
	// FaultTimeout holds the request and then drops the connection without an answer.
	FaultTimeout FaultKind = iota + 1
	// FaultHTTPStatus answers with Fault.Status (e.g. 429, 500, 503).
	FaultHTTPStatus
)

// Fault is injected into the next requests of a route (InjectFault).
type Fault struct {
	Kind FaultKind
	// Status is the HTTP status of a FaultHTTPStatus.
	Status int
	// Hold is how long a FaultTimeout holds the request before dropping the connection; 0 holds
	// it until the client gives up (its deadline) or the fake closes.
	Hold time.Duration
	// Process handles the request before the fault, so that its effect happens but the answer is
	// lost (a deposit is created, yet the client sees a timeout or a 5xx).
	Process bool
}

// Counters is what the fake received. Maps are keyed by the operation's id.
type Counters struct {
	// Requests counts every request per route, faulted and unauthenticated ones included.
	Requests map[string]int
	// DepositInitiations counts POST /v2/deposits that reached the API (authenticated, not
	// dropped by a fault before processing) per depositId: duplicates and rejections included.
	DepositInitiations map[string]int
	// DepositsCreated counts deposits created (ACCEPTED) per depositId; never more than 1 unless
	// the fake was made to Forget one.
	DepositsCreated map[string]int
	// DuplicatesIgnored counts DUPLICATE_IGNORED answers of every kind.
	DuplicatesIgnored int
	// PayoutInitiations, PayoutsCreated, RefundInitiations, RefundsCreated likewise.
	PayoutInitiations, PayoutsCreated, RefundInitiations, RefundsCreated map[string]int
	// StatusChecks counts status checks per operation type and id ("DEPOSIT" → id → n), unknown
	// ids included.
	StatusChecks map[Operation]map[string]int
	// CallbacksSent counts callback POSTs attempted; CallbacksDelivered those answered 2xx.
	CallbacksSent, CallbacksDelivered int
}

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	// Token is the bearer token the fake accepts.
	Token string
	// SigningKey signs callbacks; its public half is served by GET /v2/public-key/http.
	SigningKey *ecdsa.PrivateKey

	t        testing.TB
	srv      *httptest.Server
	clock    func() time.Time
	realTime bool
	opts     Options
	cbClient *http.Client
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu           sync.Mutex
	providers    map[string]Provider
	order        []string // provider codes in configuration order
	availability map[string]map[Operation]string
	sandbox      map[string]SandboxNumber
	phoneScripts map[string]Scenario
	amountScript map[string]Scenario
	ops          map[Operation]map[string]*operation
	balances     map[string]*big.Int // country → hundredths
	faults       map[string][]Fault
	counters     Counters
	seq          int
}

type accountDetails struct {
	PhoneNumber string `json:"phoneNumber"`
	Provider    string `json:"provider"`
}

type party struct {
	Type           string          `json:"type"`
	AccountDetails *accountDetails `json:"accountDetails,omitempty"`
}

type failureReason struct {
	FailureCode    string `json:"failureCode"`
	FailureMessage string `json:"failureMessage"`
}

type operation struct {
	kind         Operation
	id           string
	amount       string
	currency     string
	country      string
	provider     string
	phone        string
	customerMsg  string
	clientRef    string
	metadata     map[string]any
	depositID    string // refunds: the refunded deposit
	created      time.Time
	sc           Scenario
	checks       int // status checks that found it
	hiddenChecks int // NOT_FOUND answers still due
	reached      bool
	reconLeft    int
	final        bool
	status       string
	failure      *failureReason
	providerTxID string
	refunded     *big.Int // deposits: hundredths refunded or being refunded
	debited      bool     // payouts and refunds: the wallet was debited
	reserved     bool     // refunds: the amount is counted in the deposit's refunded
}

// New starts a fake on a local port; t.Cleanup closes it and stops its callback goroutines.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{
		Token:        opts.Token,
		SigningKey:   opts.SigningKey,
		t:            t,
		clock:        opts.Clock,
		realTime:     opts.Clock == nil,
		opts:         opts,
		cbClient:     opts.CallbackClient,
		providers:    map[string]Provider{},
		availability: map[string]map[Operation]string{},
		sandbox:      map[string]SandboxNumber{},
		phoneScripts: map[string]Scenario{},
		amountScript: map[string]Scenario{},
		ops:          map[Operation]map[string]*operation{OpDeposit: {}, OpPayout: {}, OpRefund: {}},
		balances:     map[string]*big.Int{},
		faults:       map[string][]Fault{},
	}
	if s.Token == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		s.Token = "fake-pawapay-" + hex.EncodeToString(b)
	}
	if s.SigningKey == nil {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatalf("fakepawapay: %v", err)
		}
		s.SigningKey = key
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.cbClient == nil {
		s.cbClient = &http.Client{Timeout: 5 * time.Second}
	}
	if s.opts.CompanyName == "" {
		s.opts.CompanyName = "Paygate Test Merchant"
	}
	providers := opts.Providers
	if providers == nil {
		providers = DefaultProviders()
	}
	for _, p := range providers {
		s.providers[p.Code] = p
		s.order = append(s.order, p.Code)
		s.availability[p.Code] = map[Operation]string{OpDeposit: AvailabilityOperational, OpPayout: AvailabilityOperational, OpRefund: AvailabilityOperational}
		if _, ok := s.balances[p.Country]; !ok {
			switch {
			case opts.Balances == nil:
				s.balances[p.Country] = mustCents("10000000")
			default:
				s.balances[p.Country] = mustCents(opts.Balances[p.Country])
			}
		}
	}
	if !opts.NoSandboxNumbers {
		for _, n := range DefaultSandboxNumbers() {
			s.sandbox[n.Phone] = n
		}
	}
	s.counters = Counters{
		Requests:           map[string]int{},
		DepositInitiations: map[string]int{}, DepositsCreated: map[string]int{},
		PayoutInitiations: map[string]int{}, PayoutsCreated: map[string]int{},
		RefundInitiations: map[string]int{}, RefundsCreated: map[string]int{},
		StatusChecks: map[Operation]map[string]int{OpDeposit: {}, OpPayout: {}, OpRefund: {}},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())

	mux := http.NewServeMux()
	handle := func(route string, h func(*http.Request) answer) { mux.Handle(route, s.wrap(route, h)) }
	handle(RouteInitiateDeposit, func(r *http.Request) answer { return s.initiate(r, OpDeposit) })
	handle(RouteDepositStatus, func(r *http.Request) answer { return s.status(OpDeposit, r.PathValue("depositId")) })
	handle(RouteResendDepositCallback, func(r *http.Request) answer { return s.resend(OpDeposit, r.PathValue("depositId")) })
	handle(RouteInitiatePayout, func(r *http.Request) answer { return s.initiate(r, OpPayout) })
	handle(RoutePayoutStatus, func(r *http.Request) answer { return s.status(OpPayout, r.PathValue("payoutId")) })
	handle(RouteResendPayoutCallback, func(r *http.Request) answer { return s.resend(OpPayout, r.PathValue("payoutId")) })
	handle(RouteInitiateRefund, func(r *http.Request) answer { return s.initiate(r, OpRefund) })
	handle(RouteRefundStatus, func(r *http.Request) answer { return s.status(OpRefund, r.PathValue("refundId")) })
	handle(RouteResendRefundCallback, func(r *http.Request) answer { return s.resend(OpRefund, r.PathValue("refundId")) })
	handle(RouteActiveConf, s.activeConf)
	handle(RouteAvailability, s.availabilityList)
	handle(RoutePredictProvider, s.predictProvider)
	handle(RouteWalletBalances, s.walletBalances)
	handle(RoutePublicKeys, s.publicKeys)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.close)
	return s
}

func (s *Server) close() {
	s.cancel()
	s.wg.Wait()
	s.srv.Close()
}

// URL is the fake's base URL (the equivalent of https://api.sandbox.pawapay.io).
func (s *Server) URL() string { return s.srv.URL }

// CallbackPublicKey is the public key callbacks verify with (see VerifyCallback).
func (s *Server) CallbackPublicKey() *ecdsa.PublicKey { return &s.SigningKey.PublicKey }

// Script sets the scenario of every later operation whose phone number (as sent, digits only)
// is phone. It takes precedence over ScriptAmount and the sandbox numbers. An operation keeps the
// scenario it was created with.
func (s *Server) Script(phone string, sc Scenario) {
	s.checkScenario(sc)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.phoneScripts[phone] = sc
}

// ScriptAmount sets the scenario of every later operation of exactly this amount string (for
// numbers Script does not cover). It takes precedence over the sandbox numbers.
func (s *Server) ScriptAmount(amount string, sc Scenario) {
	s.checkScenario(sc)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.amountScript[amount] = sc
}

func (s *Server) checkScenario(sc Scenario) {
	switch sc.Status {
	case "", StatusCompleted, StatusFailed, StatusProcessing:
	default:
		s.t.Helper()
		s.t.Fatalf("fakepawapay: scenario status %q: want COMPLETED, FAILED or PROCESSING", sc.Status)
	}
}

// InjectFault makes the next n requests to route (one of the Route constants) suffer f; faults
// queue in order. n <= 0 does nothing.
func (s *Server) InjectFault(route string, n int, f Fault) {
	if f.Kind == FaultHTTPStatus && (f.Status < 100 || f.Status > 999) {
		s.t.Helper()
		s.t.Fatalf("fakepawapay: InjectFault(%s): %d is not an HTTP status", route, f.Status)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[route] = append(s.faults[route], f)
	}
}

// ClearFaults drops every pending injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = map[string][]Fault{}
}

// SetAvailability sets a provider's status for one operation type: AvailabilityOperational,
// AvailabilityDelayed or AvailabilityClosed. CLOSED rejects new initiations with
// PROVIDER_TEMPORARILY_UNAVAILABLE; DELAYED keeps payouts ENQUEUED until the provider is
// OPERATIONAL again. Both show in GET /v2/availability and active-conf.
func (s *Server) SetAvailability(provider string, op Operation, status string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.availability[provider]; !ok {
		s.t.Fatalf("fakepawapay: SetAvailability: unknown provider %q", provider)
	}
	s.availability[provider][op] = status
}

// Forget drops an operation, as if pawaPay had lost it: status checks answer NOT_FOUND and a new
// initiation with the same id is accepted again.
func (s *Server) Forget(op Operation, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ops[op], id)
}

// Counters is a copy of what the fake received so far.
func (s *Server) Counters() Counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counters
	cp := func(m map[string]int) map[string]int {
		out := make(map[string]int, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	c.Requests = cp(c.Requests)
	c.DepositInitiations, c.DepositsCreated = cp(c.DepositInitiations), cp(c.DepositsCreated)
	c.PayoutInitiations, c.PayoutsCreated = cp(c.PayoutInitiations), cp(c.PayoutsCreated)
	c.RefundInitiations, c.RefundsCreated = cp(c.RefundInitiations), cp(c.RefundsCreated)
	c.StatusChecks = map[Operation]map[string]int{}
	for k, m := range s.counters.StatusChecks {
		c.StatusChecks[k] = cp(m)
	}
	return c
}

// Status is the operation's status as last evaluated (at initiation, by a status check or by
// Tick), without counting as a status check; ok is false if the fake does not hold it.
func (s *Server) Status(op Operation, id string) (status string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.ops[op][id]
	if o == nil {
		return "", false
	}
	return o.status, true
}

// Settle forces an operation to a final status now (StatusCompleted, or StatusFailed with
// failureCode), whatever its scenario, and sends its callback as the scenario says. It fails the
// test if the operation is unknown or already final.
func (s *Server) Settle(op Operation, id, status, failureCode string) {
	s.t.Helper()
	s.mu.Lock()
	o := s.ops[op][id]
	if o == nil || o.final || (status != StatusCompleted && status != StatusFailed) {
		s.mu.Unlock()
		s.t.Fatalf("fakepawapay: Settle(%s, %s, %s): no such pending operation or not a final status", op, id, status)
		return
	}
	o.sc.Status, o.sc.FailureCode = status, failureCode
	o.reached, o.reconLeft = true, 0
	jobs := s.finalizeLocked(o)
	s.mu.Unlock()
	s.run(jobs)
}

// Tick evaluates every pending operation against the Clock and sends the callbacks of those that
// became final.
func (s *Server) Tick() {
	now := s.clock()
	s.mu.Lock()
	var jobs []callbackJob
	for _, m := range s.ops {
		for _, o := range m {
			jobs = append(jobs, s.evaluateLocked(o, now, false)...)
		}
	}
	s.mu.Unlock()
	s.run(jobs)
}

// ResendCallback sends the operation's callback again now (like the resend-callback endpoints,
// but without an HTTP call). It fails the test unless the operation is final.
func (s *Server) ResendCallback(op Operation, id string) {
	s.t.Helper()
	s.mu.Lock()
	o := s.ops[op][id]
	if o == nil || !o.final {
		s.mu.Unlock()
		s.t.Fatalf("fakepawapay: ResendCallback(%s, %s): no such final operation", op, id)
		return
	}
	job := s.callbackLocked(o, 0)
	s.mu.Unlock()
	s.run([]callbackJob{job})
}

// ---- HTTP plumbing ----

type answer struct {
	status int
	body   any
}

func failure(code, msg string) failureReason {
	return failureReason{FailureCode: code, FailureMessage: msg}
}

// errorBody is the body of an error that is not about a specific payment.
type errorBody struct {
	FailureReason failureReason `json:"failureReason"`
}

func (s *Server) wrap(route string, h func(*http.Request) answer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.counters.Requests[route]++
		var f *Fault
		if q := s.faults[route]; len(q) > 0 {
			f = &q[0]
			s.faults[route] = q[1:]
		}
		s.mu.Unlock()

		var a answer
		if f == nil || f.Process {
			a = s.authenticate(r)
			if a.status == 0 {
				a = h(r)
			}
		}
		if f != nil {
			switch f.Kind {
			case FaultTimeout:
				s.hold(r.Context(), f.Hold)
				if hj, ok := w.(http.Hijacker); ok {
					if conn, _, err := hj.Hijack(); err == nil {
						_ = conn.Close()
						return
					}
				}
				panic(http.ErrAbortHandler)
			case FaultHTTPStatus:
				// The body of a 429 or 5xx is not documented; the fake answers the generic shape with
				// UNKNOWN_ERROR (5xx) or a TOO_MANY_REQUESTS code of its own (429).
				code := "UNKNOWN_ERROR"
				if f.Status == http.StatusTooManyRequests {
					code = "TOO_MANY_REQUESTS"
				}
				a = answer{status: f.Status, body: errorBody{failure(code, "fakepawapay: injected fault")}}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_ = json.NewEncoder(w).Encode(a.body)
	})
}

// hold waits for d (0: forever), the client to go away, or the fake to close.
func (s *Server) hold(ctx context.Context, d time.Duration) {
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
	case <-ctx.Done():
	case <-s.ctx.Done():
	}
}

// authenticate checks the bearer token. The failure codes page lists NO_AUTHENTICATION (401) when
// no token is found and AUTHENTICATION_ERROR (403) when it is not valid.
// https://docs.pawapay.io/v2/docs/failure_codes
func (s *Server) authenticate(r *http.Request) answer {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return answer{http.StatusUnauthorized, errorBody{failure("NO_AUTHENTICATION", "We did not find the API token in the request headers.")}}
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(s.Token)) != 1 {
		return answer{http.StatusForbidden, errorBody{failure("AUTHENTICATION_ERROR", "The API token specified for authentication is not valid or missing.")}}
	}
	return answer{}
}

// uuidV4 is a lower- or upper-case UUID of version 4 and the RFC 4122 variant.
var uuidV4 = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$`)

// decodeStrict decodes a JSON body, reporting unknown fields separately (UNSUPPORTED_PARAMETER).
func decodeStrict(r *http.Request, v any) (code, msg string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return "INVALID_INPUT", "We were unable to read the request body."
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			return "UNSUPPORTED_PARAMETER", "The request contains a parameter the endpoint does not support: " + strings.TrimPrefix(err.Error(), "json: ")
		}
		return "INVALID_INPUT", "We were unable to parse the payload of the request."
	}
	return "", ""
}

func (s *Server) fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// ---- initiation ----

// initiationRequest is the union of the deposit, payout and refund request bodies.
// https://docs.pawapay.io/v2/api-reference/deposits/initiate-deposit
// https://docs.pawapay.io/v2/api-reference/payouts/initiate-payout
// https://docs.pawapay.io/v2/api-reference/refunds/initiate-refund
type initiationRequest struct {
	DepositID            string           `json:"depositId"`
	PayoutID             string           `json:"payoutId"`
	RefundID             string           `json:"refundId"`
	Amount               string           `json:"amount"`
	Currency             string           `json:"currency"`
	Payer                *party           `json:"payer"`
	Recipient            *party           `json:"recipient"`
	PreAuthorisationCode string           `json:"preAuthorisationCode"`
	ClientReferenceID    string           `json:"clientReferenceId"`
	CustomerMessage      string           `json:"customerMessage"`
	Metadata             []map[string]any `json:"metadata"`
}

// initiationAnswer is the body of an initiation response: ACCEPTED/DUPLICATE_IGNORED with
// created, or REJECTED with failureReason.
type initiationAnswer struct {
	DepositID     string         `json:"depositId,omitempty"`
	PayoutID      string         `json:"payoutId,omitempty"`
	RefundID      string         `json:"refundId,omitempty"`
	Status        string         `json:"status"`
	Created       string         `json:"created,omitempty"`
	FailureReason *failureReason `json:"failureReason,omitempty"`
}

func idAnswer(kind Operation, id string) initiationAnswer {
	switch kind {
	case OpPayout:
		return initiationAnswer{PayoutID: id}
	case OpRefund:
		return initiationAnswer{RefundID: id}
	default:
		return initiationAnswer{DepositID: id}
	}
}

func idField(kind Operation) string {
	switch kind {
	case OpPayout:
		return "payoutId"
	case OpRefund:
		return "refundId"
	default:
		return "depositId"
	}
}

// reject answers REJECTED with a failureReason. Technical failures carry HTTP 400 (INVALID_INPUT,
// MISSING_PARAMETER, UNSUPPORTED_PARAMETER, INVALID_PARAMETER), AMOUNT_OUT_OF_BOUNDS 200, per the
// failure codes page; the fake also answers 200 for the other rejections (INVALID_AMOUNT,
// INVALID_CURRENCY, INVALID_PROVIDER, INVALID_PHONE_NUMBER, PROVIDER_TEMPORARILY_UNAVAILABLE,
// ..._NOT_ALLOWED), whose HTTP status the pages read did not show.
// https://docs.pawapay.io/v2/docs/failure_codes
func reject(kind Operation, id, code, msg string) answer {
	a := idAnswer(kind, id)
	a.Status = StatusRejected
	a.FailureReason = &failureReason{FailureCode: code, FailureMessage: msg}
	status := http.StatusOK
	switch code {
	case "INVALID_INPUT", "MISSING_PARAMETER", "UNSUPPORTED_PARAMETER", "INVALID_PARAMETER":
		status = http.StatusBadRequest
	}
	return answer{status, a}
}

func (s *Server) initiate(r *http.Request, kind Operation) answer {
	var req initiationRequest
	code, msg := decodeStrict(r, &req)
	id := map[Operation]string{OpDeposit: req.DepositID, OpPayout: req.PayoutID, OpRefund: req.RefundID}[kind]
	s.mu.Lock()
	switch kind {
	case OpDeposit:
		s.counters.DepositInitiations[id]++
	case OpPayout:
		s.counters.PayoutInitiations[id]++
	case OpRefund:
		s.counters.RefundInitiations[id]++
	}
	s.mu.Unlock()
	if code != "" {
		return reject(kind, id, code, msg)
	}
	// Fields of the other operation types are not part of this endpoint's body.
	var foreign bool
	switch kind {
	case OpDeposit:
		foreign = req.PayoutID != "" || req.RefundID != "" || req.Recipient != nil
	case OpPayout:
		foreign = req.DepositID != "" || req.RefundID != "" || req.Payer != nil
	case OpRefund:
		foreign = req.PayoutID != "" || req.Payer != nil || req.Recipient != nil
	}
	if foreign {
		return reject(kind, id, "UNSUPPORTED_PARAMETER", "The request contains a parameter this endpoint does not support.")
	}
	if id == "" {
		return reject(kind, id, "MISSING_PARAMETER", idField(kind)+" is missing.")
	}
	if !uuidV4.MatchString(id) {
		return reject(kind, id, "INVALID_PARAMETER", idField(kind)+" must be a UUIDv4.")
	}

	now := s.clock()
	s.mu.Lock()
	if o := s.ops[kind][id]; o != nil {
		// https://docs.pawapay.io/v2/api-reference/deposits/initiate-deposit: duplicates of an
		// accepted request are ignored with DUPLICATE_IGNORED; duplication relies on the id.
		s.counters.DuplicatesIgnored++
		a := idAnswer(kind, id)
		a.Status, a.Created = StatusDuplicateIgnored, s.fmtTime(o.created)
		s.mu.Unlock()
		return answer{http.StatusOK, a}
	}
	var settledJobs []callbackJob
	if kind == OpRefund {
		// Settle, by the clock, the refunds that are due: a refund still in progress keeps the
		// next one of its deposit out (validateLocked).
		for _, r := range s.ops[OpRefund] {
			settledJobs = append(settledJobs, s.evaluateLocked(r, now, false)...)
		}
	}
	o, rej := s.validateLocked(kind, id, &req)
	if rej != nil {
		s.mu.Unlock()
		s.run(settledJobs)
		return *rej
	}
	o.created = now
	o.sc = s.scenarioLocked(kind, o.phone, o.amount)
	o.hiddenChecks = o.sc.NotFoundChecks
	o.status = o.sc.PendingStatus
	if o.status == "" {
		o.status = StatusProcessing
	}
	amt := mustCents(o.amount)
	if kind == OpRefund {
		dep := s.ops[OpDeposit][o.depositID]
		remaining := new(big.Int).Sub(mustCents(dep.amount), dep.refunded)
		switch {
		case remaining.Sign() <= 0:
			o.sc = Scenario{Status: StatusFailed, FailureCode: "DEPOSIT_ALREADY_REFUNDED", NoCallback: o.sc.NoCallback}
		case amt.Cmp(remaining) > 0:
			o.sc = Scenario{Status: StatusFailed, FailureCode: "AMOUNT_TOO_LARGE", NoCallback: o.sc.NoCallback}
		default:
			dep.refunded.Add(dep.refunded, amt)
			o.reserved = true
		}
	}
	if kind == OpPayout || kind == OpRefund {
		// The fake debits the wallet when it accepts a payout or refund, and credits it back if
		// the payment fails; a wallet short of funds fails the payment.
		if s.balances[o.country].Cmp(amt) < 0 {
			o.sc = Scenario{Status: StatusFailed, FailureCode: "PAWAPAY_WALLET_OUT_OF_FUNDS", NoCallback: o.sc.NoCallback}
		} else {
			s.balances[o.country].Sub(s.balances[o.country], amt)
			o.debited = true
		}
	}
	s.ops[kind][id] = o
	switch kind {
	case OpDeposit:
		s.counters.DepositsCreated[id]++
	case OpPayout:
		s.counters.PayoutsCreated[id]++
	case OpRefund:
		s.counters.RefundsCreated[id]++
	}
	jobs := append(settledJobs, s.evaluateLocked(o, now, false)...)
	if s.realTime && o.sc.SettleAfter > 0 {
		s.wg.Add(1)
		go func(d time.Duration) {
			defer s.wg.Done()
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				s.Tick()
			case <-s.ctx.Done():
			}
		}(o.sc.SettleAfter)
	}
	s.mu.Unlock()
	s.run(jobs)
	a := idAnswer(kind, id)
	a.Status, a.Created = StatusAccepted, s.fmtTime(now)
	return answer{http.StatusOK, a}
}

// validateLocked checks an initiation and builds the operation, or answers the rejection.
func (s *Server) validateLocked(kind Operation, id string, req *initiationRequest) (*operation, *answer) {
	rej := func(code, msg string) (*operation, *answer) {
		a := reject(kind, id, code, msg)
		return nil, &a
	}
	if req.CustomerMessage != "" && (len(req.CustomerMessage) < 4 || len(req.CustomerMessage) > 22) {
		return rej("INVALID_PARAMETER", "customerMessage must be between 4 and 22 characters.")
	}
	o := &operation{kind: kind, id: id, amount: req.Amount, currency: req.Currency, customerMsg: req.CustomerMessage, clientRef: req.ClientReferenceID, refunded: new(big.Int)}
	if len(req.Metadata) > 0 {
		o.metadata = map[string]any{}
		for _, m := range req.Metadata {
			for k, v := range m {
				if k == "isPII" {
					continue
				}
				if _, dup := o.metadata[k]; dup {
					return rej("DUPLICATE_METADATA_FIELD", "metadata field "+k+" is specified more than once.")
				}
				o.metadata[k] = v
			}
		}
	}

	var p Provider
	if kind == OpRefund {
		if req.DepositID == "" {
			return rej("MISSING_PARAMETER", "depositId is missing.")
		}
		dep := s.ops[OpDeposit][req.DepositID]
		// The refunded deposit must exist and be COMPLETED; the fake answers INVALID_PARAMETER
		// otherwise (the documentation read does not name the code).
		if dep == nil || !dep.final || dep.status != StatusCompleted {
			return rej("INVALID_PARAMETER", "depositId does not refer to a COMPLETED deposit.")
		}
		// https://docs.pawapay.io/v2/docs/refunds, "One refund at a time": while a refund of the
		// deposit is processing, a new one is rejected. The code is the failure codes page's
		// REFUND_IN_PROGRESS; the HTTP status (200, like the other rejections) is the fake's choice.
		for _, r := range s.ops[OpRefund] {
			if r.depositID == dep.id && !r.final {
				return rej("REFUND_IN_PROGRESS", "Another refund of this deposit is being processed.")
			}
		}
		o.depositID, o.phone, o.provider = dep.id, dep.phone, dep.provider
		if o.amount == "" { // https://docs.pawapay.io/v2/docs/refunds: amount may be left out for a full refund
			o.amount = formatCents(new(big.Int).Sub(mustCents(dep.amount), dep.refunded))
		}
		if o.currency == "" {
			o.currency = dep.currency
		}
		p = s.providers[dep.provider]
	} else {
		if req.Amount == "" {
			return rej("MISSING_PARAMETER", "amount is missing.")
		}
		if req.Currency == "" {
			return rej("MISSING_PARAMETER", "currency is missing.")
		}
		pt, name := req.Payer, "payer"
		if kind == OpPayout {
			pt, name = req.Recipient, "recipient"
		}
		if pt == nil || pt.AccountDetails == nil {
			return rej("MISSING_PARAMETER", name+" is missing.")
		}
		if pt.Type != "MMO" {
			return rej("INVALID_PARAMETER", name+".type must be MMO.")
		}
		o.phone, o.provider = pt.AccountDetails.PhoneNumber, pt.AccountDetails.Provider
		if o.phone == "" || o.provider == "" {
			return rej("MISSING_PARAMETER", name+".accountDetails.phoneNumber and provider are required.")
		}
		var ok bool
		if p, ok = s.providers[o.provider]; !ok {
			return rej("INVALID_PROVIDER", "The provider "+o.provider+" is not configured on the account.")
		}
	}
	o.country = p.Country
	if o.currency != p.Currency {
		return rej("INVALID_CURRENCY", "The currency "+o.currency+" is not supported by "+p.Code+".")
	}
	if !validPhoneFor(p, o.phone) {
		return rej("INVALID_PHONE_NUMBER", "The phone number is not valid for "+p.Code+".")
	}
	lim := p.limits(kind)
	amt, ok := cents(o.amount)
	if !ok {
		return rej("INVALID_AMOUNT", "The amount "+o.amount+" is not a valid amount.")
	}
	if lim.Decimals != DecimalsTwoPlaces && hasDecimals(o.amount) {
		return rej("INVALID_AMOUNT", p.Code+" does not support decimals in the amount.")
	}
	if amt.Cmp(mustCents(lim.Min)) < 0 || amt.Cmp(mustCents(lim.Max)) > 0 {
		return rej("AMOUNT_OUT_OF_BOUNDS", fmt.Sprintf("The amount must be between %s and %s %s.", lim.Min, lim.Max, p.Currency))
	}
	if s.availability[p.Code][kind] == AvailabilityClosed {
		return rej("PROVIDER_TEMPORARILY_UNAVAILABLE", p.Code+" is temporarily unavailable.")
	}
	return o, nil
}

func (s *Server) scenarioLocked(kind Operation, phone, amount string) Scenario {
	if sc, ok := s.phoneScripts[phone]; ok {
		return sc
	}
	if sc, ok := s.amountScript[amount]; ok {
		return sc
	}
	if n, ok := s.sandbox[phone]; ok {
		sc := n.Payout
		if kind == OpDeposit {
			sc = n.Deposit
		}
		if sc != nil {
			return *sc
		}
	}
	return Scenario{}
}

// ---- settlement and callbacks ----

type callbackJob struct {
	url    string
	body   []byte
	delay  time.Duration
	copies int
}

// evaluateLocked advances o by the clock; check is true for a status check (which consumes
// ReconciliationChecks). It returns the callbacks to send.
func (s *Server) evaluateLocked(o *operation, now time.Time, check bool) []callbackJob {
	if o.final {
		return nil
	}
	if !o.reached {
		if o.sc.Status == StatusProcessing || o.checks < o.sc.SettleAfterChecks || now.Before(o.created.Add(o.sc.SettleAfter)) {
			return nil
		}
		if o.kind == OpPayout && s.availability[o.provider][OpPayout] == AvailabilityDelayed {
			o.status = StatusEnqueued
			return nil
		}
		o.reached, o.reconLeft = true, o.sc.ReconciliationChecks
	}
	if o.reconLeft > 0 {
		o.status = StatusInReconciliation
		if check {
			o.reconLeft--
		}
		return nil
	}
	return s.finalizeLocked(o)
}

func (s *Server) finalizeLocked(o *operation) []callbackJob {
	o.final = true
	s.seq++
	if o.sc.Status == StatusFailed {
		o.status = StatusFailed
		code := o.sc.FailureCode
		if code == "" {
			code = "UNSPECIFIED_FAILURE"
		}
		o.failure = &failureReason{FailureCode: code, FailureMessage: failureMessages[code]}
		if o.failure.FailureMessage == "" {
			o.failure.FailureMessage = "The payment failed (" + code + ")."
		}
		if o.debited { // credit back the debit of a failed payout or refund
			b := s.balances[o.country]
			b.Add(b, mustCents(o.amount))
		}
		if o.reserved {
			if dep := s.ops[OpDeposit][o.depositID]; dep != nil {
				dep.refunded.Sub(dep.refunded, mustCents(o.amount))
			}
		}
	} else {
		o.status = StatusCompleted
		o.providerTxID = fmt.Sprintf("FAKE-%s-%06d", o.kind, s.seq)
		if o.kind == OpDeposit {
			b := s.balances[o.country]
			b.Add(b, mustCents(o.amount))
		}
	}
	if o.sc.NoCallback {
		return nil
	}
	return []callbackJob{s.callbackLocked(o, o.sc.DuplicateCallbacks)}
}

// failureMessages are the fake's messages for the transaction failure codes.
// https://docs.pawapay.io/v2/docs/failure_codes
var failureMessages = map[string]string{
	"PAYMENT_NOT_APPROVED":        "The customer did not approve the payment.",
	"INSUFFICIENT_BALANCE":        "The customer does not have enough funds.",
	"PAYER_NOT_FOUND":             "The phone number does not belong to a mobile money customer of the provider.",
	"RECIPIENT_NOT_FOUND":         "The phone number does not belong to a mobile money customer of the provider.",
	"PAYMENT_IN_PROGRESS":         "The customer has another payment in progress.",
	"WALLET_LIMIT_REACHED":        "The customer's wallet has reached a limit.",
	"PAWAPAY_WALLET_OUT_OF_FUNDS": "The pawaPay wallet does not have enough funds.",
	"DEPOSIT_ALREADY_REFUNDED":    "The deposit has already been refunded.",
	"AMOUNT_TOO_LARGE":            "The amount is larger than what can still be refunded.",
	"MANUALLY_CANCELLED":          "The payment was cancelled.",
	"UNSPECIFIED_FAILURE":         "The provider failed the payment without stating a reason.",
	"UNKNOWN_ERROR":               "Unable to process the payment due to an unknown problem.",
}

func (s *Server) callbackLocked(o *operation, extra int) callbackJob {
	url := map[Operation]string{OpDeposit: s.opts.DepositCallbackURL, OpPayout: s.opts.PayoutCallbackURL, OpRefund: s.opts.RefundCallbackURL}[o.kind]
	body, _ := json.Marshal(s.dataLocked(o))
	return callbackJob{url: url, body: body, delay: o.sc.CallbackDelay, copies: 1 + extra}
}

// run sends callback jobs, each in a goroutine.
func (s *Server) run(jobs []callbackJob) {
	for _, j := range jobs {
		if j.url == "" {
			continue
		}
		s.wg.Add(1)
		go func(j callbackJob) {
			defer s.wg.Done()
			if j.delay > 0 {
				t := time.NewTimer(j.delay)
				select {
				case <-t.C:
				case <-s.ctx.Done():
					t.Stop()
					return
				}
			}
			for range j.copies {
				s.post(j.url, j.body)
			}
		}(j)
	}
}

// post sends one callback: the payment as the status check shows it, POSTed as JSON.
// https://docs.pawapay.io/v2/api-reference/deposits/deposit-callback
func (s *Server) post(url string, body []byte) {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	if s.opts.SignCallbacks {
		if err := signCallback(req, body, s.SigningKey, s.clock()); err != nil {
			return
		}
	}
	s.mu.Lock()
	s.counters.CallbacksSent++
	s.mu.Unlock()
	resp, err := s.cbClient.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		s.mu.Lock()
		s.counters.CallbacksDelivered++
		s.mu.Unlock()
	}
}

// ---- status checks and resend ----

// paymentData is a deposit, payout or refund as check-status and callbacks show it.
// https://docs.pawapay.io/v2/api-reference/deposits/check-deposit-status
type paymentData struct {
	DepositID             string         `json:"depositId,omitempty"`
	PayoutID              string         `json:"payoutId,omitempty"`
	RefundID              string         `json:"refundId,omitempty"`
	Status                string         `json:"status"`
	Amount                string         `json:"amount"`
	Currency              string         `json:"currency"`
	Country               string         `json:"country"`
	Payer                 *party         `json:"payer,omitempty"`
	Recipient             *party         `json:"recipient,omitempty"`
	CustomerMessage       string         `json:"customerMessage,omitempty"`
	ClientReferenceID     string         `json:"clientReferenceId,omitempty"`
	Created               string         `json:"created"`
	ProviderTransactionID string         `json:"providerTransactionId,omitempty"`
	FailureReason         *failureReason `json:"failureReason,omitempty"`
	Metadata              map[string]any `json:"metadata,omitempty"`
}

func (s *Server) dataLocked(o *operation) paymentData {
	d := paymentData{
		Status: o.status, Amount: o.amount, Currency: o.currency, Country: o.country,
		CustomerMessage: o.customerMsg, ClientReferenceID: o.clientRef, Created: s.fmtTime(o.created),
		ProviderTransactionID: o.providerTxID, FailureReason: o.failure, Metadata: o.metadata,
	}
	acct := &party{Type: "MMO", AccountDetails: &accountDetails{PhoneNumber: o.phone, Provider: o.provider}}
	switch o.kind {
	case OpDeposit:
		d.DepositID, d.Payer = o.id, acct
	case OpPayout:
		d.PayoutID, d.Recipient = o.id, acct
	case OpRefund:
		d.RefundID, d.Recipient = o.id, acct
	}
	return d
}

type statusAnswer struct {
	Status string       `json:"status"`
	Data   *paymentData `json:"data,omitempty"`
}

// status answers GET /v2/{deposits,payouts,refunds}/{id}: FOUND with data, or NOT_FOUND.
// https://docs.pawapay.io/v2/api-reference/deposits/check-deposit-status
// https://docs.pawapay.io/v2/api-reference/payouts/check-payout-status
// https://docs.pawapay.io/v2/api-reference/refunds/check-refund-status
func (s *Server) status(kind Operation, id string) answer {
	now := s.clock()
	s.mu.Lock()
	s.counters.StatusChecks[kind][id]++
	o := s.ops[kind][id]
	if o == nil {
		s.mu.Unlock()
		return answer{http.StatusOK, statusAnswer{Status: "NOT_FOUND"}}
	}
	if o.hiddenChecks > 0 || now.Before(o.created.Add(o.sc.NotFoundFor)) {
		if o.hiddenChecks > 0 {
			o.hiddenChecks--
		}
		s.mu.Unlock()
		return answer{http.StatusOK, statusAnswer{Status: "NOT_FOUND"}}
	}
	jobs := s.evaluateLocked(o, now, true)
	o.checks++
	d := s.dataLocked(o)
	s.mu.Unlock()
	s.run(jobs)
	return answer{http.StatusOK, statusAnswer{Status: "FOUND", Data: &d}}
}

// resend answers POST /v2/{deposits,payouts,refunds}/resend-callback/{id}: ACCEPTED and the
// callback is sent again, if the payment is final. The fake rejects an unknown or not yet final
// payment with REJECTED and failureCode NOT_FOUND or INVALID_STATE, codes of its own (v1 answered
// REJECTED with a rejectionReason).
// https://docs.pawapay.io/v2/api-reference/deposits/resend-deposit-callback
func (s *Server) resend(kind Operation, id string) answer {
	s.mu.Lock()
	o := s.ops[kind][id]
	switch {
	case o == nil:
		s.mu.Unlock()
		return reject(kind, id, "NOT_FOUND", fmt.Sprintf("%s %s was not found.", idField(kind), id))
	case !o.final:
		s.mu.Unlock()
		return reject(kind, id, "INVALID_STATE", fmt.Sprintf("%s %s has not reached a final status.", idField(kind), id))
	}
	job := s.callbackLocked(o, 0)
	job.delay = 0
	s.mu.Unlock()
	s.run([]callbackJob{job})
	a := idAnswer(kind, id)
	a.Status = StatusAccepted
	return answer{http.StatusOK, a}
}

// ---- toolkit and finances ----

type opConf struct {
	AuthType         string `json:"authType,omitempty"`
	PinPrompt        string `json:"pinPrompt,omitempty"`
	MinAmount        string `json:"minAmount"`
	MaxAmount        string `json:"maxAmount"`
	DecimalsInAmount string `json:"decimalsInAmount"`
	Status           string `json:"status"`
	CallbackURL      string `json:"callbackUrl,omitempty"`
}

type currencyConf struct {
	Currency       string                `json:"currency"`
	DisplayName    string                `json:"displayName"`
	OperationTypes map[Operation]*opConf `json:"operationTypes"`
}

type providerConf struct {
	Provider                string         `json:"provider"`
	DisplayName             string         `json:"displayName"`
	NameDisplayedToCustomer string         `json:"nameDisplayedToCustomer"`
	Currencies              []currencyConf `json:"currencies"`
}

type countryConf struct {
	Country     string            `json:"country"`
	DisplayName map[string]string `json:"displayName"`
	Prefix      string            `json:"prefix"`
	Providers   []providerConf    `json:"providers"`
}

type activeConf struct {
	CompanyName            string          `json:"companyName"`
	SignatureConfiguration map[string]bool `json:"signatureConfiguration"`
	Countries              []countryConf   `json:"countries"`
}

// activeConf answers GET /v2/active-conf, optionally filtered by ?country= and ?operationType=.
// https://docs.pawapay.io/v2/api-reference/toolkit/active-configuration
func (s *Server) activeConf(r *http.Request) answer {
	country, opType := r.URL.Query().Get("country"), Operation(r.URL.Query().Get("operationType"))
	s.mu.Lock()
	defer s.mu.Unlock()
	out := activeConf{
		CompanyName:            s.opts.CompanyName,
		SignatureConfiguration: map[string]bool{"signedRequestsOnly": false, "signedCallbacks": s.opts.SignCallbacks},
		Countries:              []countryConf{},
	}
	idx := map[string]int{}
	for _, code := range s.order {
		p := s.providers[code]
		if country != "" && p.Country != country {
			continue
		}
		cc := currencyConf{Currency: p.Currency, DisplayName: p.Currency, OperationTypes: map[Operation]*opConf{}}
		for _, op := range []Operation{OpDeposit, OpPayout, OpRefund} {
			if opType != "" && op != opType {
				continue
			}
			lim := p.limits(op)
			c := &opConf{MinAmount: lim.Min, MaxAmount: lim.Max, DecimalsInAmount: lim.Decimals, Status: s.availability[code][op]}
			switch op {
			case OpDeposit:
				c.AuthType, c.PinPrompt, c.CallbackURL = "PROVIDER_AUTH", "AUTOMATIC", s.opts.DepositCallbackURL
			case OpPayout:
				c.CallbackURL = s.opts.PayoutCallbackURL
			case OpRefund:
				c.CallbackURL = s.opts.RefundCallbackURL
			}
			cc.OperationTypes[op] = c
		}
		i, ok := idx[p.Country]
		if !ok {
			i = len(out.Countries)
			idx[p.Country] = i
			out.Countries = append(out.Countries, countryConf{Country: p.Country, DisplayName: map[string]string{"en": p.CountryName}, Prefix: p.CallingCode})
		}
		out.Countries[i].Providers = append(out.Countries[i].Providers, providerConf{
			Provider: code, DisplayName: p.DisplayName, NameDisplayedToCustomer: s.opts.CompanyName, Currencies: []currencyConf{cc},
		})
	}
	return answer{http.StatusOK, out}
}

type availabilityOp struct {
	OperationType Operation `json:"operationType"`
	Status        string    `json:"status"`
}

type availabilityProvider struct {
	Provider       string           `json:"provider"`
	OperationTypes []availabilityOp `json:"operationTypes"`
}

type availabilityCountry struct {
	Country   string                 `json:"country"`
	Providers []availabilityProvider `json:"providers"`
}

// availabilityList answers GET /v2/availability, optionally filtered by ?country= and
// ?operationType=.
// https://docs.pawapay.io/v2/api-reference/toolkit/availability
func (s *Server) availabilityList(r *http.Request) answer {
	country, opType := r.URL.Query().Get("country"), Operation(r.URL.Query().Get("operationType"))
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []availabilityCountry{}
	idx := map[string]int{}
	for _, code := range s.order {
		p := s.providers[code]
		if country != "" && p.Country != country {
			continue
		}
		ap := availabilityProvider{Provider: code}
		for _, op := range []Operation{OpDeposit, OpPayout, OpRefund} {
			if opType == "" || op == opType {
				ap.OperationTypes = append(ap.OperationTypes, availabilityOp{op, s.availability[code][op]})
			}
		}
		i, ok := idx[p.Country]
		if !ok {
			i = len(out)
			idx[p.Country] = i
			out = append(out, availabilityCountry{Country: p.Country})
		}
		out[i].Providers = append(out[i].Providers, ap)
	}
	return answer{http.StatusOK, out}
}

// predictProvider answers POST /v2/predict-provider: the phone number is sanitised (leading +,
// whitespace and non-numeric characters removed), then matched against the sandbox numbers and
// the providers' national prefixes. A number no provider matches answers 400 INVALID_PHONE_NUMBER
// (the fake's choice: the documentation read shows only the successful answer).
// https://docs.pawapay.io/v2/api-reference/toolkit/predict-provider
func (s *Server) predictProvider(r *http.Request) answer {
	var req struct {
		PhoneNumber string `json:"phoneNumber"`
	}
	if code, msg := decodeStrict(r, &req); code != "" {
		return answer{http.StatusBadRequest, errorBody{failure(code, msg)}}
	}
	if req.PhoneNumber == "" {
		return answer{http.StatusBadRequest, errorBody{failure("MISSING_PARAMETER", "phoneNumber is missing.")}}
	}
	phone := sanitizePhone(req.PhoneNumber)
	s.mu.Lock()
	defer s.mu.Unlock()
	found := func(p Provider) answer {
		return answer{http.StatusOK, map[string]string{"country": p.Country, "provider": p.Code, "phoneNumber": phone}}
	}
	if n, ok := s.sandbox[phone]; ok {
		if p, ok := s.providers[n.Provider]; ok && validPhoneFor(p, phone) {
			return found(p)
		}
	}
	for _, code := range s.order {
		p := s.providers[code]
		if !validPhoneFor(p, phone) {
			continue
		}
		national := phone[len(p.CallingCode):]
		for _, pre := range p.Prefixes {
			if strings.HasPrefix(national, pre) {
				return found(p)
			}
		}
	}
	return answer{http.StatusBadRequest, errorBody{failure("INVALID_PHONE_NUMBER", "The phone number could not be matched to a provider.")}}
}

// walletBalances answers GET /v2/wallet-balances, optionally filtered by ?country=.
// https://docs.pawapay.io/v2/api-reference/finances/wallet-balances
func (s *Server) walletBalances(r *http.Request) answer {
	country := r.URL.Query().Get("country")
	s.mu.Lock()
	defer s.mu.Unlock()
	type balance struct {
		Country  string `json:"country"`
		Balance  string `json:"balance"`
		Currency string `json:"currency"`
		Provider string `json:"provider"`
	}
	currency := map[string]string{}
	for _, code := range s.order {
		p := s.providers[code]
		currency[p.Country] = p.Currency
	}
	countries := make([]string, 0, len(s.balances))
	for c := range s.balances {
		countries = append(countries, c)
	}
	sort.Strings(countries)
	out := struct {
		Balances []balance `json:"balances"`
	}{Balances: []balance{}}
	for _, c := range countries {
		if country == "" || c == country {
			out.Balances = append(out.Balances, balance{Country: c, Balance: formatCents(s.balances[c]), Currency: currency[c]})
		}
	}
	return answer{http.StatusOK, out}
}

// publicKeys answers GET /v2/public-key/http with the key callbacks are signed with.
// https://docs.pawapay.io/v2/api-reference/toolkit/public-keys
func (s *Server) publicKeys(*http.Request) answer {
	key, err := publicKeyPEM(&s.SigningKey.PublicKey)
	if err != nil {
		return answer{http.StatusInternalServerError, errorBody{failure("UNKNOWN_ERROR", err.Error())}}
	}
	return answer{http.StatusOK, []map[string]string{{"id": CallbackKeyID, "key": key}}}
}
