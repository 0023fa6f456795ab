// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fakedaraja is a real HTTP fake (net/http/httptest) of Safaricom's M-Pesa Daraja API, for
// the tests of Paygate's Daraja adapter. It is written from Safaricom's published Daraja 3.0
// documentation (https://developer.safaricom.co.ke/apis/...; each behaviour cites its page) and
// shares no code with the adapter, so that the adapter is checked against the documentation rather
// than against itself.
//
// What it implements, on the documented paths:
//
//   - Authorization: GET /oauth/v1/generate?grant_type=client_credentials with HTTP Basic consumer
//     key and secret, answering {access_token, expires_in}. Every other call needs
//     "Authorization: Bearer <token>". Tokens expire after Options.TokenLifetime by Options.Clock,
//     or at once with ExpireTokens; a new token invalidates the previous ones, as the page says
//     (Options.KeepOldTokens turns that off).
//   - M-Pesa Express (STK push): POST /mpesa/stkpush/v1/processrequest, with the documented
//     validation (Password = base64(BusinessShortCode+Passkey+Timestamp) checked against the
//     configured passkey, whole-shilling Amount, AccountReference of at most 12 characters, ...),
//     the synchronous acknowledgement, and the result POSTed only to the CallBackURL
//     (Body.stkCallback). Every accepted request is a new push with a new CheckoutRequestID: the
//     fake does not de-duplicate, it counts (STKPushCount*).
//   - M-Pesa Express Query: POST /mpesa/stkpushquery/v1/query by CheckoutRequestID only, answering
//     "The transaction is being processed" (500.001.1001) until the customer has answered.
//   - B2C: POST /mpesa/b2c/v3/paymentrequest (the documented path) and the older
//     /mpesa/b2c/v1/paymentrequest; the Result is POSTed to ResultURL, or a queue time-out notice to
//     QueueTimeOutURL on demand. Not de-duplicated by default (B2CCountFor counts per
//     OriginatorConversationID); Options.RejectDuplicateOriginatorConversationID answers the
//     documented 500.002.1001 instead.
//   - Transaction Status (POST /mpesa/transactionstatus/v1/query), Reversal
//     (POST /mpesa/reversal/v1/request) and Account Balance (POST /mpesa/accountbalance/v1/query):
//     acknowledgement, then the Result at ResultURL, in the documented shapes (the AccountBalance
//     parameter "Working Account|KES|...&Utility Account|KES|...").
//   - SecurityCredential: the fake makes its own RSA key and self-signed certificate (test-only,
//     CertificatePEM), decrypts the credential (RSA PKCS#1 v1.5, base64) and checks the initiator
//     name and password; a wrong one gives the documented result code 2001 at the ResultURL.
//   - Faults on demand, safe for concurrent use: the next N requests to a path hang, drop the
//     connection, or answer 429/5xx with Daraja's error body, before or after processing
//     (FailNext); token expiry now; callbacks late, twice or never (Delivery, CallbackDelay); STK
//     queries answering "being processed" for a while; customer outcomes per phone number
//     (ScriptPhone: success, 1032 cancelled, 1 insufficient funds, 1037 unreachable, 2001 wrong
//     PIN, ...) and per B2C destination (ScriptB2C).
//
// What it does not implement: C2B (register URL, validation/confirmation), B2B, Business Pay
// Bill/Buy Goods, Tax Remittance, Dynamic QR, Pull Transactions, Ratiba and the other Daraja
// products; TLS; real tariffs and charges; IP allow-listing of callbacks. Where the documentation
// is silent the fake makes a choice and says so in a comment (e.g. the queue time-out body, which
// Safaricom does not publish).
//
// Money: amounts in the fake's types are int64 whole shillings (requests) or int64 cents
// (balances), never float64. Requests are decoded key by key with exact (case-sensitive) key
// names; numbers are taken from their JSON text, so "1", 1, "1.5" and 1.5 are told apart and a
// decimal Amount is rejected ("Bad Request - Invalid Amount"): "Only whole numbers are
// supported". The fake is strict: 10.00 is rejected too.
//
// Time: every timestamp and token expiry, and when an STK customer answers (STKScript.RespondAfter),
// are read from Options.Clock, lazily on each request; there are no background timers for them.
// Callbacks and results are the exception: they are POSTed by goroutines. An STK callback is sent
// when the customer has answered: at once for RespondAfter 0, otherwise after RespondAfter of REAL
// time or when a query first observes the answer by Clock, whichever comes first. Asynchronous
// results (B2C, status, reversal, balance) are sent right after the acknowledgement. Each waits
// its script's CallbackDelay (real time) first and is sent once, twice or never (Delivery).
// Daraja does not retry a callback that fails, and neither does the fake. Close (run by
// t.Cleanup) stops the goroutines and waits for them.
package fakedaraja

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Documented sandbox values.
const (
	// SandboxShortCode is the M-Pesa Express sandbox shortcode used throughout the
	// documentation's examples (https://developer.safaricom.co.ke/apis/MpesaExpressSimulate).
	SandboxShortCode = "174379"
	// SandboxPasskey is the sandbox passkey of SandboxShortCode: it is what the documented sample
	// Password of the MpesaExpressSimulate page decodes to, between the shortcode and the
	// timestamp (base64("174379" + passkey + "20210628092408")).
	SandboxPasskey = "bfb279f9aa9bdbcf158e97dd71a467cd2e0c893059b10f78e6b72ada1ed2c919"
	// SandboxMSISDN is the sandbox test phone number of the documented samples (STK callback
	// PhoneNumber; https://developer.safaricom.co.ke/apis/TransactionStatus).
	SandboxMSISDN = "254708374149"
	// SandboxB2CShortCode is the B2C organisation shortcode of the documented B2C samples
	// (https://developer.safaricom.co.ke/apis/BusinessToCustomer).
	SandboxB2CShortCode = "600997"
	// SandboxInitiatorName is the API user of the documented B2C sample request.
	SandboxInitiatorName = "testapi"
)

// Paths the fake serves (https://developer.safaricom.co.ke/apis/...: the "POST/GET <url>" line of
// each page).
const (
	PathOAuth             = "/oauth/v1/generate"
	PathSTKPush           = "/mpesa/stkpush/v1/processrequest"
	PathSTKQuery          = "/mpesa/stkpushquery/v1/query"
	PathB2C               = "/mpesa/b2c/v3/paymentrequest"
	PathB2CV1             = "/mpesa/b2c/v1/paymentrequest"
	PathTransactionStatus = "/mpesa/transactionstatus/v1/query"
	PathReversal          = "/mpesa/reversal/v1/request"
	PathAccountBalance    = "/mpesa/accountbalance/v1/query"
)

// eat is Kenya time: M-Pesa's timestamps (TransactionDate, TransCompletedTime, ...) are local.
var eat = time.FixedZone("EAT", 3*60*60)

// Options configures a fake. Zero values get the defaults said on each field.
type Options struct {
	// ConsumerKey and ConsumerSecret are the app credentials the OAuth endpoint accepts; ""
	// means "fake-consumer-key" / "fake-consumer-secret".
	ConsumerKey, ConsumerSecret string
	// ShortCode is the M-Pesa Express BusinessShortCode the fake knows ("" = SandboxShortCode),
	// and Passkey its passkey ("" = SandboxPasskey).
	ShortCode, Passkey string
	// InitiatorName and InitiatorPassword are the API user that B2C, Transaction Status, Reversal
	// and Account Balance must present (the password encrypted into SecurityCredential). "" means
	// SandboxInitiatorName and "fake-initiator-password".
	InitiatorName, InitiatorPassword string
	// TokenLifetime is the lifetime of an access token by Clock; 0 means the documented 3600 s
	// (https://developer.safaricom.co.ke/apis/Authorization). expires_in is one second less, as
	// in the documented sample (3599).
	TokenLifetime time.Duration
	// ExpiresInString sends expires_in as a JSON string ("3599"), as older samples show, instead
	// of the number of the current Authorization page.
	ExpiresInString bool
	// KeepOldTokens keeps earlier tokens valid when a new one is generated. By default a new
	// token invalidates the previous ones: "Can I generate multiple tokens? Yes, but each request
	// invalidates the previous token." (Authorization page, FAQ 3).
	KeepOldTokens bool
	// RejectDuplicateOriginatorConversationID answers a B2C request whose
	// OriginatorConversationID was seen before with the documented error 500.002.1001
	// "Duplicate OriginatorConversationID." (BusinessToCustomer page, sample error). By default
	// the fake accepts it as a new payment: it never de-duplicates.
	RejectDuplicateOriginatorConversationID bool
	// LockSubscriber answers an STK push to a phone number that still has a push awaiting the
	// customer with 500.001.1001 "Unable to lock subscriber, a transaction is already in process
	// for the current subscriber" (MpesaExpressSimulate page, error codes). Off by default: every
	// accepted push is a new prompt.
	LockSubscriber bool
	// UtilityAccountCents, WorkingAccountCents and ChargesPaidAccountCents are the opening
	// balances (in cents) of the organisation's accounts, reported by Account Balance and in B2C
	// results. STK payments credit the utility account; B2C payments and reversals debit it.
	// 0 means KES 10,000,000.00, KES 1,000,000.00 and 0.00.
	UtilityAccountCents, WorkingAccountCents, ChargesPaidAccountCents int64
	// Clock drives every timestamp, token expiry and STKScript.RespondAfter; nil means time.Now.
	// It must be safe for concurrent use.
	Clock func() time.Time
	// CallbackTimeout bounds each callback POST; 0 means 5 s.
	CallbackTimeout time.Duration
}

// Server is a running fake Daraja. Its methods are safe for concurrent use.
type Server struct {
	opts     Options
	t        testing.TB
	srv      *httptest.Server
	clock    func() time.Time
	cbClient *http.Client
	ctx      context.Context // cancelled when the fake closes
	cancel   context.CancelFunc
	wg       sync.WaitGroup // callback goroutines
	cred     *credentialKey

	seq atomic.Int64 // ids; not under mu

	mu        sync.Mutex
	closed    bool
	tokens    map[string]time.Time // token -> expiry by clock
	lifetime  time.Duration
	latency   time.Duration
	faults    map[string][]Fault
	requests  map[string]int
	tokensOut int

	phoneScripts    map[string]STKScript
	b2cScripts      map[string]ResultScript
	statusScripts   map[string]ResultScript
	reversalScripts map[string]ResultScript
	balanceScripts  map[string]ResultScript

	pushes      []*stkTxn
	pushByID    map[string]*stkTxn
	stkQueries  int
	b2cTxns     []*b2cTxn
	b2cByOCID   map[string]int
	statusCount int
	reversals   int
	balances    int
	reversed    map[string]bool

	utility, working, charges int64 // cents

	callbacks []CallbackRecord
}

// New starts a fake Daraja on a local port; it is closed (and its callback goroutines stopped)
// by t.Cleanup.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.ConsumerKey == "" {
		opts.ConsumerKey = "fake-consumer-key"
	}
	if opts.ConsumerSecret == "" {
		opts.ConsumerSecret = "fake-consumer-secret"
	}
	if opts.ShortCode == "" {
		opts.ShortCode = SandboxShortCode
	}
	if opts.Passkey == "" {
		opts.Passkey = SandboxPasskey
	}
	if opts.InitiatorName == "" {
		opts.InitiatorName = SandboxInitiatorName
	}
	if opts.InitiatorPassword == "" {
		opts.InitiatorPassword = "fake-initiator-password"
	}
	if opts.TokenLifetime <= 0 {
		opts.TokenLifetime = time.Hour
	}
	if opts.UtilityAccountCents == 0 {
		opts.UtilityAccountCents = 10_000_000_00
	}
	if opts.WorkingAccountCents == 0 {
		opts.WorkingAccountCents = 1_000_000_00
	}
	if opts.CallbackTimeout <= 0 {
		opts.CallbackTimeout = 5 * time.Second
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	cred, err := testCredentialKey()
	if err != nil {
		t.Fatalf("fakedaraja: %v", err)
	}
	s := &Server{
		opts:            opts,
		t:               t,
		clock:           clock,
		cbClient:        &http.Client{Timeout: opts.CallbackTimeout},
		cred:            cred,
		tokens:          map[string]time.Time{},
		lifetime:        opts.TokenLifetime,
		faults:          map[string][]Fault{},
		requests:        map[string]int{},
		phoneScripts:    map[string]STKScript{},
		b2cScripts:      map[string]ResultScript{},
		statusScripts:   map[string]ResultScript{},
		reversalScripts: map[string]ResultScript{},
		balanceScripts:  map[string]ResultScript{},
		pushByID:        map[string]*stkTxn{},
		b2cByOCID:       map[string]int{},
		reversed:        map[string]bool{},
		utility:         opts.UtilityAccountCents,
		working:         opts.WorkingAccountCents,
		charges:         opts.ChargesPaidAccountCents,
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(s.Close)
	return s
}

// Close stops the fake: it cancels hanging requests and pending callbacks, waits for the callback
// goroutines, and closes the listener. It is safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	if already {
		return
	}
	s.cancel()
	s.wg.Wait()
	s.srv.Close()
}

// URL is the fake's base URL, to be used where the adapter has https://sandbox.safaricom.co.ke.
func (s *Server) URL() string { return s.srv.URL }

// ConsumerKey and ConsumerSecret are the app credentials the fake accepts.
func (s *Server) ConsumerKey() string    { return s.opts.ConsumerKey }
func (s *Server) ConsumerSecret() string { return s.opts.ConsumerSecret }

// ShortCode and Passkey are the M-Pesa Express shortcode and passkey the fake accepts.
func (s *Server) ShortCode() string { return s.opts.ShortCode }
func (s *Server) Passkey() string   { return s.opts.Passkey }

// InitiatorName and InitiatorPassword are the API user the fake accepts.
func (s *Server) InitiatorName() string     { return s.opts.InitiatorName }
func (s *Server) InitiatorPassword() string { return s.opts.InitiatorPassword }

// STKPassword is the documented Password of an M-Pesa Express request for the fake's shortcode
// and passkey at timestamp (YYYYMMDDHHmmss): base64(Shortcode+Passkey+Timestamp)
// (https://developer.safaricom.co.ke/apis/MpesaExpressSimulate, request parameters).
func (s *Server) STKPassword(timestamp string) string {
	return base64.StdEncoding.EncodeToString([]byte(s.opts.ShortCode + s.opts.Passkey + timestamp))
}

// ---- scripts ----

// Delivery says how many times a callback or result is sent.
type Delivery int

const (
	// DeliverOnce sends it once (the default).
	DeliverOnce Delivery = iota
	// DeliverTwice sends it twice (the same body).
	DeliverTwice
	// DeliverNever never sends it; an STK query still sees the outcome.
	DeliverNever
)

func (d Delivery) copies() int {
	switch d {
	case DeliverTwice:
		return 2
	case DeliverNever:
		return 0
	default:
		return 1
	}
}

// STKScript scripts what the customer does with every later M-Pesa Express prompt sent to one
// phone number. The zero STKScript (also for unscripted numbers) is a customer who pays at once,
// and a callback sent at once.
type STKScript struct {
	// Result is the ResultCode of the callback: ResultSuccess, ResultCancelledByUser (1032),
	// ResultInsufficientFunds (1), ResultUnreachable (1037), ResultWrongPIN (2001), ResultExpired
	// (1019), or any other code. "" leaves it to the fake: success, unless the request breaks a
	// documented rule (2028 for a CustomerPayBillOnline push whose PartyB is not the
	// BusinessShortCode; 3 above Ksh 250,000).
	Result ResultCode
	// ResultDesc is the ResultDesc; "" means the documented description of Result.
	ResultDesc string
	// RespondAfter is how long after the push, by Options.Clock, the customer answers. Until
	// then, STK queries answer "The transaction is being processed" and no callback is sent.
	RespondAfter time.Duration
	// QueryProcessing answers "being processed" to the first N queries made once the customer
	// has answered (queries before that do not count).
	QueryProcessing int
	// Delivery is how many callbacks are sent: once (default), twice, or never.
	Delivery Delivery
	// CallbackDelay waits this much REAL time more before sending the callback (a late callback).
	CallbackDelay time.Duration
}

// ResultScript scripts the asynchronous result of a B2C payment (per destination PartyB), a
// Reversal (per TransactionID), a Transaction Status query (per TransactionID or
// OriginalConversationID) or an Account Balance query (per PartyA). The zero ResultScript is the
// fake's own outcome (success where the request allows it), delivered once, at once.
type ResultScript struct {
	// Result overrides the ResultCode; "" leaves it to the fake (success, or the documented code
	// for a bad SecurityCredential, an amount out of limits, an insufficient balance, an unknown
	// or already reversed transaction). A bad SecurityCredential gives 2001 whatever Result says.
	Result ResultCode
	// ResultDesc is the ResultDesc; "" means the documented description of the code.
	ResultDesc string
	// QueueTimeout sends a queue time-out notice to the request's QueueTimeOutURL instead of the
	// result to its ResultURL (nothing is paid or reversed).
	QueueTimeout bool
	// Delivery is how many times the result (or the time-out notice) is sent.
	Delivery Delivery
	// CallbackDelay waits this much REAL time before sending it (a late result).
	CallbackDelay time.Duration
}

// ScriptPhone sets what the customer with this phone number (2547XXXXXXXX, as sent in
// PhoneNumber) does with every later STK push. A push keeps the script it was created with.
func (s *Server) ScriptPhone(phone string, sc STKScript) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.phoneScripts[phone] = sc
}

// ScriptB2C sets the result of every later B2C payment to this PartyB.
func (s *Server) ScriptB2C(partyB string, sc ResultScript) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b2cScripts[partyB] = sc
}

// ScriptReversal sets the result of every later reversal of this TransactionID.
func (s *Server) ScriptReversal(transactionID string, sc ResultScript) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reversalScripts[transactionID] = sc
}

// ScriptTransactionStatus sets the result of every later Transaction Status query naming this
// TransactionID or OriginalConversationID.
func (s *Server) ScriptTransactionStatus(id string, sc ResultScript) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statusScripts[id] = sc
}

// ScriptAccountBalance sets the result of every later Account Balance query for this PartyA.
func (s *Server) ScriptAccountBalance(partyA string, sc ResultScript) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.balanceScripts[partyA] = sc
}

// ---- faults ----

// FaultKind is what a fault does to a request.
type FaultKind int

const (
	// FaultHang gives no answer until the client gives up (its request context ends) or the fake
	// closes.
	FaultHang FaultKind = iota + 1
	// FaultDrop closes the connection without an answer.
	FaultDrop
	// FaultStatus answers Fault.Status with Daraja's error body {requestId, errorCode,
	// errorMessage}.
	FaultStatus
)

// Fault is one scripted failure of a request.
type Fault struct {
	Kind FaultKind
	// Status is the HTTP status of a FaultStatus (e.g. 429, 500, 503); 0 means 500.
	Status int
	// ErrorCode and ErrorMessage are the error body of a FaultStatus; "" means a documented one
	// for the status: 500.003.02 "Error Occurred: Spike Arrest Violation" for 429 (the gateway's
	// rate limit; Daraja documents it with HTTP 500, use Status 500 for that), 500.003.1001
	// "Internal Server Error" for 500, 503 and any other.
	ErrorCode, ErrorMessage string
	// Processed processes the request first (a push is sent to the customer, a payment made, a
	// result scheduled; counted as usual) and only then fails the answer: the answer was lost.
	// Otherwise the request is refused at the gateway and nothing happens.
	Processed bool
}

// FailNext makes the next n requests to path (one of the Path constants) fail with f. Faults
// queue up: FailNext(p, 1, a); FailNext(p, 1, b) fails the next request with a, the one after with
// b. Every request to the path consumes one, authenticated or not.
func (s *Server) FailNext(path string, n int, f Fault) {
	if f.Kind < FaultHang || f.Kind > FaultStatus {
		s.t.Helper()
		s.t.Fatalf("fakedaraja: FailNext(%s): unknown fault kind %d", path, f.Kind)
	}
	if f.Kind == FaultStatus && f.Status != 0 && (f.Status < 100 || f.Status > 999) {
		s.t.Helper()
		s.t.Fatalf("fakedaraja: FailNext(%s): %d is not an HTTP status", path, f.Status)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[path] = append(s.faults[path], f)
	}
}

// HangNext makes the next n requests to path hang until the client gives up (not processed).
func (s *Server) HangNext(path string, n int) { s.FailNext(path, n, Fault{Kind: FaultHang}) }

// DropNext makes the next n requests to path lose their connection (not processed).
func (s *Server) DropNext(path string, n int) { s.FailNext(path, n, Fault{Kind: FaultDrop}) }

// StatusNext makes the next n requests to path answer status with Daraja's error body (not
// processed): 429 for a rate limit, 500/503 for a server error.
func (s *Server) StatusNext(path string, n, status int) {
	s.FailNext(path, n, Fault{Kind: FaultStatus, Status: status})
}

// ClearFaults drops every queued fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = map[string][]Fault{}
}

// SetLatency delays every answer by d (real time); 0 removes it.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// ---- tokens ----

// ExpireTokens makes every access token issued so far invalid now.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = map[string]time.Time{}
}

// SetTokenLifetime sets the lifetime of tokens issued from now on.
func (s *Server) SetTokenLifetime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lifetime = d
}

// ---- counters ----

// RequestCount is the number of HTTP requests received on path, whatever became of them (faults,
// bad tokens and invalid bodies included).
func (s *Server) RequestCount(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

// TokenCount is the number of access tokens issued.
func (s *Server) TokenCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokensOut
}

// STKQueryCount is the number of authenticated M-Pesa Express queries received (valid or not,
// not refused by a fault).
func (s *Server) STKQueryCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stkQueries
}

// TransactionStatusCount, ReversalCount and AccountBalanceCount are the numbers of such requests
// accepted (acknowledged, or processed before a Processed fault).
func (s *Server) TransactionStatusCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statusCount
}

func (s *Server) ReversalCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reversals
}

func (s *Server) AccountBalanceCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.balances
}

// Balances are the fake organisation's account balances now, in cents.
func (s *Server) Balances() (utility, working, chargesPaid int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.utility, s.working, s.charges
}

// CallbackRecord is one callback or result the fake POSTed.
type CallbackRecord struct {
	URL    string
	Body   []byte
	Status int   // the receiver's HTTP status; 0 when there was no answer
	Err    error // transport error, if any
}

// Callbacks are the callbacks and results sent so far, in the order their POSTs finished.
func (s *Server) Callbacks() []CallbackRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CallbackRecord(nil), s.callbacks...)
}

// CallbacksDelivered is the number of callbacks answered 2xx; CallbacksFailed the others.
func (s *Server) CallbacksDelivered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.callbacks {
		if c.Err == nil && c.Status >= 200 && c.Status < 300 {
			n++
		}
	}
	return n
}

func (s *Server) CallbacksFailed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.callbacks {
		if c.Err != nil || c.Status < 200 || c.Status >= 300 {
			n++
		}
	}
	return n
}

// ---- HTTP ----

// errorBody is Daraja's error answer, e.g.
// {"requestId": "...", "errorCode": "400.002.02", "errorMessage": "Bad Request - Invalid BusinessShortCode"}
// (https://developer.safaricom.co.ke/apis/MpesaExpressSimulate, "Sample Error Response").
type errorBody struct {
	RequestID    string `json:"requestId"`
	ErrorCode    string `json:"errorCode"`
	ErrorMessage string `json:"errorMessage"`
}

type answer struct {
	status int
	body   any
}

func (s *Server) errorAnswer(status int, code, msg string) answer {
	return answer{status: status, body: errorBody{RequestID: s.requestID(), ErrorCode: code, ErrorMessage: msg}}
}

// badRequest is the documented validation error: 400.002.02 "Bad Request - Invalid XXXX"
// (MpesaExpressSimulate, Reversal and AccountBalance pages, error codes).
func (s *Server) badRequest(field string) answer {
	return s.errorAnswer(http.StatusBadRequest, "400.002.02", "Bad Request - Invalid "+field)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	s.mu.Lock()
	s.requests[path]++
	latency := s.latency
	var fault *Fault
	if q := s.faults[path]; len(q) > 0 {
		f := q[0]
		fault = &f
		if len(q) == 1 {
			delete(s.faults, path)
		} else {
			s.faults[path] = q[1:]
		}
	}
	s.mu.Unlock()

	if !s.sleep(r.Context(), latency) {
		panic(http.ErrAbortHandler)
	}
	if fault != nil && !fault.Processed {
		s.applyFault(w, r, *fault)
		return
	}
	a := s.route(r)
	if fault != nil {
		s.applyFault(w, r, *fault)
		return
	}
	writeJSON(w, a.status, a.body)
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) applyFault(w http.ResponseWriter, r *http.Request, f Fault) {
	switch f.Kind {
	case FaultHang:
		select {
		case <-r.Context().Done():
		case <-s.ctx.Done():
		}
		panic(http.ErrAbortHandler)
	case FaultDrop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	default:
		status := f.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		code, msg := f.ErrorCode, f.ErrorMessage
		if code == "" {
			// Documented gateway errors (MpesaExpressSimulate page, error codes).
			if status == http.StatusTooManyRequests {
				code, msg = "500.003.02", "Error Occurred: Spike Arrest Violation"
			} else {
				code, msg = "500.003.1001", "Internal Server Error"
			}
		}
		if msg == "" {
			msg = "Internal Server Error"
		}
		a := s.errorAnswer(status, code, msg)
		writeJSON(w, a.status, a.body)
	}
}

func (s *Server) route(r *http.Request) answer {
	path := r.URL.Path
	if path == PathOAuth {
		if r.Method != http.MethodGet {
			return s.errorAnswer(http.StatusMethodNotAllowed, "405.001", r.Method+" Method Not Allowed")
		}
		return s.oauth(r)
	}
	handlers := map[string]func(map[string]json.RawMessage, string) answer{
		PathSTKPush:           s.stkPush,
		PathSTKQuery:          s.stkQuery,
		PathB2C:               s.b2cV3,
		PathB2CV1:             s.b2cV1,
		PathTransactionStatus: s.transactionStatus,
		PathReversal:          s.reversal,
		PathAccountBalance:    s.accountBalance,
	}
	h, ok := handlers[path]
	if !ok {
		// 404.001.01 Resource not found (MpesaExpressSimulate page, error codes).
		return s.errorAnswer(http.StatusNotFound, "404.001.01", "Resource not found")
	}
	// "All M-PESA API requests on the Daraja platform are POST requests except Authorization API"
	// (https://developer.safaricom.co.ke/apis/TransactionStatus, 404.001.04); 405.001 for the
	// method (MpesaExpressSimulate page).
	if r.Method != http.MethodPost {
		return s.errorAnswer(http.StatusMethodNotAllowed, "405.001", r.Method+" Method Not Allowed")
	}
	if a, ok := s.authenticate(r); !ok {
		return a
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return s.errorAnswer(http.StatusBadRequest, "400.002.05", "Invalid Request Payload")
	}
	fields := map[string]json.RawMessage{}
	// A body that is not declared as JSON is not read as JSON: Daraja then reports the first
	// required field as invalid ("Why am I getting 'Bad Request - Invalid BusinessShortCode'?
	// Wrong request Content-Type", MpesaExpressSimulate FAQ 9).
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "application/json" {
		if err := json.Unmarshal(body, &fields); err != nil {
			// 400.002.05 Invalid Request Payload (TransactionStatus page, error codes).
			return s.errorAnswer(http.StatusBadRequest, "400.002.05", "Invalid Request Payload")
		}
	}
	return h(fields, s.URL())
}

// authenticate checks the bearer token. A missing or non-Bearer Authorization header is
// 404.001.04 "Invalid Authentication Header" (TransactionStatus page, error codes); a wrong,
// superseded or expired token is 404.001.03 "Invalid Access Token" with HTTP 404
// (MpesaExpressSimulate and Reversal pages, error codes).
func (s *Server) authenticate(r *http.Request) (answer, bool) {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || tok == "" {
		return s.errorAnswer(http.StatusNotFound, "404.001.04", "Invalid Authentication Header"), false
	}
	now := s.clock()
	s.mu.Lock()
	exp, known := s.tokens[tok]
	s.mu.Unlock()
	if !known || !now.Before(exp) {
		return s.errorAnswer(http.StatusNotFound, "404.001.03", "Invalid Access Token"), false
	}
	return answer{}, true
}

// oauth follows https://developer.safaricom.co.ke/apis/Authorization: GET with
// grant_type=client_credentials and HTTP Basic base64(key:secret); answer
// {"access_token": "...", "expires_in": 3599}; 400.008.02 "Invalid grant type passed" and
// 400.008.01 "Invalid authentication type passed". Wrong credentials are not documented: the fake
// answers 400 with 400.008.01 "Invalid Authentication passed".
func (s *Server) oauth(r *http.Request) answer {
	if r.URL.Query().Get("grant_type") != "client_credentials" {
		return s.errorAnswer(http.StatusBadRequest, "400.008.02", "Invalid grant type passed")
	}
	h := r.Header.Get("Authorization")
	if !strings.HasPrefix(h, "Basic ") {
		return s.errorAnswer(http.StatusBadRequest, "400.008.01", "Invalid authentication type passed")
	}
	key, secret, ok := r.BasicAuth()
	if !ok || subtle.ConstantTimeCompare([]byte(key), []byte(s.opts.ConsumerKey)) != 1 ||
		subtle.ConstantTimeCompare([]byte(secret), []byte(s.opts.ConsumerSecret)) != 1 {
		return s.errorAnswer(http.StatusBadRequest, "400.008.01", "Invalid Authentication passed")
	}
	tok := randomAlnum(28) // like the documented "c9SQxWWhmdVRlyh0zh8gZDTkubVF"
	now := s.clock()
	s.mu.Lock()
	if !s.opts.KeepOldTokens {
		s.tokens = map[string]time.Time{}
	}
	lifetime := s.lifetime
	s.tokens[tok] = now.Add(lifetime)
	s.tokensOut++
	s.mu.Unlock()
	secs := int64(lifetime/time.Second) - 1
	if secs < 1 {
		secs = 1
	}
	var expires any = secs
	if s.opts.ExpiresInString {
		expires = fmt.Sprint(secs)
	}
	return answer{status: http.StatusOK, body: map[string]any{"access_token": tok, "expires_in": expires}}
}

// ---- request fields ----

// field is the text of the first of keys present as a JSON string or number (numbers keep their
// literal text). Keys match exactly (case-sensitive); a null value counts as absent. ok is false
// when no key has a string or number.
func field(m map[string]json.RawMessage, keys ...string) (string, bool) {
	for _, k := range keys {
		raw, present := m[k]
		if !present {
			continue
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		if raw[0] == '"' {
			var v string
			if json.Unmarshal(raw, &v) != nil {
				return "", false
			}
			return v, true
		}
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return "", false
		}
		return n.String(), true
	}
	return "", false
}

// wholeAmount parses a whole-shilling amount: digits only (no decimals, sign or exponent), at
// least 1. "Only whole numbers are supported" (M-Pesa Express Amount).
func wholeAmount(v string) (int64, bool) {
	if v == "" || len(v) > 12 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n >= 1
}

func digits(v string, minLen, maxLen int) bool {
	if len(v) < minLen || len(v) > maxLen {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// msisdn: a Safaricom number as Daraja wants it, 254 and nine digits ("2547XXXXXXXX",
// MpesaExpressSimulate PartyA/PhoneNumber). The fake also accepts Safaricom's newer 2541XXXXXXXX
// range.
func msisdn(v string) bool {
	return digits(v, 12, 12) && strings.HasPrefix(v, "254") && (v[3] == '7' || v[3] == '1')
}

func absoluteURL(v string) bool {
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// ---- ids ----

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func randomAlnum(n int) string {
	b := make([]byte, n)
	for i := range b {
		k, err := rand.Int(rand.Reader, big.NewInt(int64(len(alnum))))
		if err != nil {
			panic(err)
		}
		b[i] = alnum[k.Int64()]
	}
	return string(b)
}

func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return fmt.Sprintf("%x", b)[:n]
}

// nextSeq numbers the fake's ids; it may be called with or without s.mu held.
func (s *Server) nextSeq() int64 { return s.seq.Add(1) }

// requestID is like the documented "1c5b-4ba8-815c-ac45c57a3db01495926".
func (s *Server) requestID() string {
	return fmt.Sprintf("%s-%s-%s-%s%d", randomHex(4), randomHex(4), randomHex(4), randomHex(12), s.nextSeq())
}

// conversationID is like the documented "AG_20240706_20106e9209f64bebd05b".
func conversationID(now time.Time, seq int64) string {
	return fmt.Sprintf("AG_%s_%s%06d", now.In(eat).Format("20060102"), randomHex(14), seq)
}

// receipt is an M-Pesa receipt / TransactionID: ten upper-case letters and digits, like the
// documented "NLJ7RT61SV". Unique per fake.
func receipt(seq int64) string {
	return fmt.Sprintf("FK%s%06d", strings.ToUpper(randomAlnum(2)), seq)
}

// ---- callbacks ----

// goDeliverLocked encodes body now and POSTs it to target copies times after delay (real time), in
// a goroutine. Callers hold s.mu.
func (s *Server) goDeliverLocked(target string, body any, delay time.Duration, copies int) {
	if s.closed || copies <= 0 || target == "" {
		return
	}
	data, err := json.Marshal(body)
	if err != nil {
		s.t.Errorf("fakedaraja: encoding a callback: %v", err)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if !s.sleep(s.ctx, delay) {
			return
		}
		for range copies {
			s.post(target, data)
		}
	}()
}

func (s *Server) post(target string, data []byte) {
	rec := CallbackRecord{URL: target, Body: data}
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, target, bytes.NewReader(data))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		var resp *http.Response
		if resp, err = s.cbClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			rec.Status = resp.StatusCode
		}
	}
	rec.Err = err
	s.mu.Lock()
	s.callbacks = append(s.callbacks, rec)
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
