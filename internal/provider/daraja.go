// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// The Daraja adapter speaks Safaricom's M-Pesa Daraja API (https://developer.safaricom.co.ke/apis).
// Each behaviour below names the documentation page it follows. It only translates: the attempt
// engine (internal/attempt) decides when to send, and the adapter never sends a money-moving
// request twice on its own (no retry of an STK push, a B2C payment or a reversal, not even after
// a rejected access token). docs/providers.md says how to configure it and what it can and
// cannot do.

// Daraja base URLs.
const (
	// DarajaSandboxURL is Daraja's sandbox ("https://sandbox.safaricom.co.ke/..." in every
	// page's request line).
	DarajaSandboxURL = "https://sandbox.safaricom.co.ke"
	// DarajaProductionURL is Daraja's production host, used once an app has gone live.
	DarajaProductionURL = "https://api.safaricom.co.ke"
)

// M-Pesa Express transaction types (https://developer.safaricom.co.ke/apis/MpesaExpressSimulate,
// request parameter TransactionType).
const (
	DarajaPayBill  = "CustomerPayBillOnline"
	DarajaBuyGoods = "CustomerBuyGoodsOnline"
)

// B2C command IDs (https://developer.safaricom.co.ke/apis/BusinessToCustomer, CommandID).
const (
	DarajaBusinessPayment  = "BusinessPayment"
	DarajaSalaryPayment    = "SalaryPayment"
	DarajaPromotionPayment = "PromotionPayment"
)

// Daraja paths (the "POST <url>" line of each page).
const (
	darajaPathOAuth             = "/oauth/v1/generate"
	darajaPathSTKPush           = "/mpesa/stkpush/v1/processrequest"
	darajaPathSTKQuery          = "/mpesa/stkpushquery/v1/query"
	darajaPathB2C               = "/mpesa/b2c/v3/paymentrequest"
	darajaPathTransactionStatus = "/mpesa/transactionstatus/v1/query"
	darajaPathReversal          = "/mpesa/reversal/v1/request"
	darajaPathAccountBalance    = "/mpesa/accountbalance/v1/query"
)

const (
	// DefaultDarajaTimeout bounds each Daraja call when DarajaConfig.Timeout is zero.
	DefaultDarajaTimeout = 20 * time.Second
	// DarajaBalanceReference is the reference AccountBalance builds its result URLs from
	// (ResultURLFor(DarajaBalanceReference)).
	DarajaBalanceReference = "account-balance"
	// darajaTokenRefreshFraction: a token is refreshed once this fraction of its lifetime has
	// passed, so that a request never carries a token about to expire.
	darajaTokenRefreshFraction = 0.8
	// darajaMaxRemembered bounds the in-memory maps (pushes seen, results recorded).
	darajaMaxRemembered = 10000
	// darajaMinCallbackSecret is the shortest CallbackSecret accepted (bytes).
	darajaMinCallbackSecret = 16
	// darajaCallbackTokenMax bounds the path token a receiver will try to open (a reference of
	// up to 253 characters, sealed and encoded, is shorter).
	darajaCallbackTokenMax = 400
	// darajaCallbackAAD binds a sealed path token to its use.
	darajaCallbackAAD = "paygate/daraja-callback"
	// darajaAccountReferenceMax: "AccountReference ... Maximum of 12 characters"
	// (MpesaExpressSimulate, request parameters).
	darajaAccountReferenceMax = 12
	// darajaTransactionDescMax: TransactionDesc is at most 13 characters (MpesaExpressSimulate).
	darajaTransactionDescMax = 13
	// darajaOCIDMax is the longest reference sent unchanged as OriginatorConversationID. The
	// BusinessToCustomer page documents no maximum (its sample is "600997_Test_32et3241ed8yu");
	// longer references are hashed to 35 characters.
	darajaOCIDMax = 36
)

// Errors of the Daraja adapter.
var (
	// ErrNotWholeShillings: M-Pesa amounts are whole shillings ("Only whole numbers are
	// supported", MpesaExpressSimulate Amount); an amount with cents is refused before any request.
	ErrNotWholeShillings = errors.New("provider: daraja: M-Pesa amounts are whole shillings; the amount has cents")
	// ErrDarajaInvalidRequest: the request cannot be sent as it is (amount, currency, phone,
	// reference); nothing was sent.
	ErrDarajaInvalidRequest = errors.New("provider: daraja: invalid request, nothing sent")
	// ErrNoLookupByReference: M-Pesa Express has no query by our reference, only by
	// CheckoutRequestID, and this process did not see the push's acknowledgement. The outcome is
	// unknown; it arrives by callback (or QuerySTK with the stored CheckoutRequestID).
	// It wraps ErrAnswersByCallback: the push's callback tells its CheckoutRequestID (the
	// apiserver records it on the payment), and the next status query asks with it.
	ErrNoLookupByReference = fmt.Errorf("%w: daraja: M-Pesa Express cannot be queried by our reference and no CheckoutRequestID is known", ErrAnswersByCallback)
	// ErrResultsByCallback: B2C results arrive only at the ResultURL; it wraps
	// ErrAnswersByCallback.
	ErrResultsByCallback = fmt.Errorf("%w: daraja: B2C results arrive only at the ResultURL", ErrAnswersByCallback)
	// ErrReversalByCallback: a reversal's result arrives only at its ResultURL (the Reversal API
	// has no status query by our reference); it wraps ErrAnswersByCallback.
	ErrReversalByCallback = fmt.Errorf("%w: daraja: reversal results arrive only at the ResultURL", ErrAnswersByCallback)
	// ErrDarajaTokenRejected: Daraja refused the access token of a money-moving request (an STK
	// push, a B2C payment, a reversal). It is not retried, because a retry could send twice; the
	// cached token is dropped so that the next call fetches a new one.
	ErrDarajaTokenRejected = errors.New("provider: daraja: access token rejected; the request was not retried")
	// ErrDarajaNotConfigured: the call needs configuration the adapter was not given (the
	// initiator and certificate for B2C, reversals and queries; B2CShortCode for B2C).
	ErrDarajaNotConfigured = errors.New("provider: daraja: not configured for this call")
)

// DarajaConfig configures the Daraja adapter. Every secret is kept out of String and GoString.
type DarajaConfig struct {
	// BaseURL is DarajaSandboxURL, DarajaProductionURL, or a fake's URL in tests. https is
	// required except for a loopback host.
	BaseURL string
	// ConsumerKey and ConsumerSecret are the Daraja app's credentials (Authorization page).
	ConsumerKey, ConsumerSecret string
	// ShortCode is the M-Pesa Express BusinessShortCode (pay bill, or the till's head office
	// shortcode), and Passkey its Lipa Na M-Pesa Online passkey.
	ShortCode, Passkey string
	// TransactionType is DarajaPayBill (the default) or DarajaBuyGoods.
	TransactionType string
	// PartyB receives the money: the pay bill number (must equal ShortCode, or M-Pesa answers
	// 2028) or the till number for Buy Goods. "" means ShortCode.
	PartyB string
	// InitiatorName and InitiatorPassword are the API operator of the M-Pesa organisation portal,
	// needed for B2C, Transaction Status, Reversal and Account Balance.
	InitiatorName, InitiatorPassword string
	// CertificatePEM is Safaricom's public certificate (sandbox or production, as downloaded from
	// the Daraja portal) whose RSA key encrypts InitiatorPassword into SecurityCredential.
	CertificatePEM []byte
	// B2CShortCode is the B2C organisation shortcode that pays (PartyA), B2CCommandID the B2C
	// CommandID ("" means DarajaBusinessPayment).
	B2CShortCode, B2CCommandID string
	// CallbackBaseURL is where Daraja posts results; every attempt gets its own unguessable path
	// under it (CallbackURLFor). https is required except for a loopback host.
	CallbackBaseURL string
	// CallbackSecret keys the HMAC that derives the per-attempt path token; at least 16 bytes.
	CallbackSecret []byte
	// HTTPClient makes the calls; nil means a client that does not follow redirects.
	HTTPClient *http.Client
	// Timeout bounds each call; 0 means DefaultDarajaTimeout.
	Timeout time.Duration
	// Clock reads the time (token expiry, timestamps); nil means time.Now.
	Clock func() time.Time
}

// String prints the configuration without its secrets.
func (c DarajaConfig) String() string {
	return fmt.Sprintf("DarajaConfig{BaseURL:%q ConsumerKey:%s ConsumerSecret:%s ShortCode:%q Passkey:%s TransactionType:%q PartyB:%q InitiatorName:%q InitiatorPassword:%s CertificatePEM:%d bytes B2CShortCode:%q B2CCommandID:%q CallbackBaseURL:%q CallbackSecret:%s Timeout:%s}",
		c.BaseURL, redactDaraja(c.ConsumerKey != ""), redactDaraja(c.ConsumerSecret != ""), c.ShortCode,
		redactDaraja(c.Passkey != ""), c.TransactionType, c.PartyB, c.InitiatorName,
		redactDaraja(c.InitiatorPassword != ""), len(c.CertificatePEM), c.B2CShortCode, c.B2CCommandID,
		c.CallbackBaseURL, redactDaraja(len(c.CallbackSecret) > 0), c.Timeout)
}

// GoString redacts the secrets for %#v as well.
func (c DarajaConfig) GoString() string { return c.String() }

func redactDaraja(set bool) string {
	if set {
		return "[REDACTED]"
	}
	return `""`
}

// Daraja is the Provider backed by Safaricom's M-Pesa Daraja API: collections by M-Pesa Express
// (STK push), payouts by B2C. It is safe for concurrent use.
//
// All its state lives behind pointers, so that printing a Daraja value by reflection shows
// addresses, never the secrets or the access token.
type Daraja struct {
	base, callbackBase, callbackPath string
	shortCode, txType, partyB        string
	initiatorName, b2cShortCode      string
	b2cCommandID                     string
	timeout                          time.Duration
	client                           *http.Client
	clock                            func() time.Time
	secrets                          *darajaSecrets
	tokens                           *darajaTokenCache
	pushes                           *darajaBoundedMap // reference -> CheckoutRequestID
}

type darajaSecrets struct {
	consumerKey, consumerSecret string
	passkey, initiatorPassword  string
	certKey                     *rsa.PublicKey
	callbackSecret              []byte
}

// String and GoString keep the secrets out of any printing that reaches them.
func (*darajaSecrets) String() string   { return "[REDACTED]" }
func (*darajaSecrets) GoString() string { return "[REDACTED]" }

var (
	_ Provider = (*Daraja)(nil)
	_ Refunder = (*Daraja)(nil)
)

// NewDaraja validates cfg and returns the adapter.
func NewDaraja(cfg DarajaConfig) (*Daraja, error) {
	base, err := darajaURL("base URL", cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	// Without a callback base URL the adapter only receives (the apiserver opens path tokens
	// and confirms results); every request that names a callback URL is refused unsent.
	var cbBase string
	if cfg.CallbackBaseURL != "" {
		if cbBase, err = darajaURL("callback base URL", cfg.CallbackBaseURL); err != nil {
			return nil, err
		}
	}
	if cfg.ConsumerKey == "" || cfg.ConsumerSecret == "" {
		return nil, errors.New("provider: daraja: consumer key and consumer secret are required")
	}
	if !darajaDigits(cfg.ShortCode, 5, 7) {
		return nil, errors.New("provider: daraja: ShortCode must be 5 to 7 digits")
	}
	if cfg.Passkey == "" {
		return nil, errors.New("provider: daraja: Passkey is required")
	}
	txType := cfg.TransactionType
	if txType == "" {
		txType = DarajaPayBill
	}
	if txType != DarajaPayBill && txType != DarajaBuyGoods {
		return nil, fmt.Errorf("provider: daraja: TransactionType must be %s or %s", DarajaPayBill, DarajaBuyGoods)
	}
	partyB := cfg.PartyB
	if partyB == "" {
		partyB = cfg.ShortCode
	}
	if !darajaDigits(partyB, 5, 7) {
		return nil, errors.New("provider: daraja: PartyB must be 5 to 7 digits")
	}
	if len(cfg.CallbackSecret) < darajaMinCallbackSecret {
		return nil, fmt.Errorf("provider: daraja: CallbackSecret must be at least %d bytes", darajaMinCallbackSecret)
	}
	sec := &darajaSecrets{
		consumerKey: cfg.ConsumerKey, consumerSecret: cfg.ConsumerSecret,
		passkey: cfg.Passkey, initiatorPassword: cfg.InitiatorPassword,
		callbackSecret: append([]byte(nil), cfg.CallbackSecret...),
	}
	// The initiator (B2C, reversal, queries) is optional as a whole, but all of it or none.
	initiatorSet := cfg.InitiatorName != "" || cfg.InitiatorPassword != "" || len(cfg.CertificatePEM) > 0
	if initiatorSet {
		if cfg.InitiatorName == "" || cfg.InitiatorPassword == "" || len(cfg.CertificatePEM) == 0 {
			return nil, errors.New("provider: daraja: InitiatorName, InitiatorPassword and CertificatePEM go together")
		}
		if sec.certKey, err = darajaCertificateKey(cfg.CertificatePEM); err != nil {
			return nil, err
		}
	}
	if cfg.B2CShortCode != "" && !darajaDigits(cfg.B2CShortCode, 5, 7) {
		return nil, errors.New("provider: daraja: B2CShortCode must be 5 to 7 digits")
	}
	if cfg.B2CShortCode != "" && !initiatorSet {
		return nil, errors.New("provider: daraja: B2CShortCode needs InitiatorName, InitiatorPassword and CertificatePEM")
	}
	cmd := cfg.B2CCommandID
	if cmd == "" {
		cmd = DarajaBusinessPayment
	}
	if cmd != DarajaBusinessPayment && cmd != DarajaSalaryPayment && cmd != DarajaPromotionPayment {
		return nil, fmt.Errorf("provider: daraja: B2CCommandID must be %s, %s or %s", DarajaBusinessPayment, DarajaSalaryPayment, DarajaPromotionPayment)
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("provider: daraja: timeout is negative")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultDarajaTimeout
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{
			// A redirect is not part of the API; surface it rather than re-send a payment elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	clock := cfg.Clock
	if clock == nil {
		clock = time.Now
	}
	cbPath := ""
	if cbURL, err := url.Parse(cbBase); err == nil {
		cbPath = cbURL.Path
	}
	return &Daraja{
		base: base, callbackBase: cbBase, callbackPath: cbPath,
		shortCode: cfg.ShortCode, txType: txType, partyB: partyB,
		initiatorName: cfg.InitiatorName, b2cShortCode: cfg.B2CShortCode, b2cCommandID: cmd,
		timeout: timeout, client: client, clock: clock,
		secrets: sec,
		tokens:  &darajaTokenCache{},
		pushes:  newDarajaBoundedMap(darajaMaxRemembered),
	}, nil
}

// darajaURL checks an absolute URL: https, or http for a loopback host only; no credentials,
// query or fragment. It returns it without a trailing slash.
func darajaURL(what, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("provider: daraja: %s must be an absolute https URL", what)
	}
	if u.Scheme == "http" && !darajaLoopback(u.Hostname()) {
		return "", fmt.Errorf("provider: daraja: %s must use https (http only for a loopback host)", what)
	}
	if u.User != nil {
		return "", fmt.Errorf("provider: daraja: %s must not carry credentials", what)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", fmt.Errorf("provider: daraja: %s must not have a query or fragment", what)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func darajaLoopback(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// darajaCertificateKey reads the RSA public key of Safaricom's certificate (PEM; a DER
// certificate is accepted too, as the portal's .cer download may be either).
func darajaCertificateKey(data []byte) (*rsa.PublicKey, error) {
	der := data
	if block, _ := pem.Decode(data); block != nil {
		der = block.Bytes
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("provider: daraja: CertificatePEM is not a certificate: %w", err)
	}
	key, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return nil, errors.New("provider: daraja: the certificate does not hold an RSA public key")
	}
	return key, nil
}

// String identifies the adapter without its secrets. It has a value receiver, so that printing a
// Daraja value (not only a pointer) goes through it too.
func (d Daraja) String() string {
	return "provider.Daraja(" + d.base + ", shortcode " + d.shortCode + ")"
}

// GoString redacts the secrets for %#v.
func (d Daraja) GoString() string { return d.String() }

// Capabilities implements Provider. M-Pesa Express does not de-duplicate: every accepted request
// is a new prompt with a new CheckoutRequestID, and it has no lookup by our reference
// (MpesaExpressQuery takes only the CheckoutRequestID). B2C results arrive only at the ResultURL
// (BusinessToCustomer, "Callback payload").
func (d *Daraja) Capabilities() Capabilities {
	return Capabilities{Deduplicates: false, ResultsByCallback: true}
}

// ---- access tokens ----

// darajaTokenCache holds the access token. A token is fetched once and shared; it is refreshed
// once darajaTokenRefreshFraction of its lifetime has passed, by one caller while the others wait
// (Authorization page: "each request invalidates the previous token", so concurrent fetches
// would invalidate each other).
//
// For the same reason a new token must not be fetched while a request carrying the old one is on
// its way: Daraja would refuse that request, and a refused push or B2C payment is not sent again.
// Requests hold inUse for reading while they carry the token; a fetch holds it for writing, so it
// waits for them (each bounded by the adapter's timeout) and new requests wait for it.
type darajaTokenCache struct {
	mu        sync.Mutex
	token     string
	refreshAt time.Time
	inflight  *darajaTokenCall
	inUse     sync.RWMutex
}

type darajaTokenCall struct {
	done  chan struct{}
	token string
	err   error
}

func (d *Daraja) accessToken(ctx context.Context) (string, error) {
	c := d.tokens
	c.mu.Lock()
	if c.token != "" && d.clock().Before(c.refreshAt) {
		tok := c.token
		c.mu.Unlock()
		return tok, nil
	}
	call := c.inflight
	if call == nil {
		call = &darajaTokenCall{done: make(chan struct{})}
		c.inflight = call
		c.mu.Unlock()
		// The fetch serves every waiter, so one caller's cancellation does not end it; it is
		// bounded by the adapter's timeout. It waits until no request carries the old token.
		c.inUse.Lock()
		tok, refreshAt, err := d.fetchToken(context.WithoutCancel(ctx))
		c.inUse.Unlock()
		c.mu.Lock()
		if err == nil {
			c.token, c.refreshAt = tok, refreshAt
		}
		call.token, call.err = tok, err
		c.inflight = nil
		close(call.done)
		c.mu.Unlock()
	} else {
		c.mu.Unlock()
	}
	select {
	case <-call.done:
		return call.token, call.err
	case <-ctx.Done():
		return "", fmt.Errorf("provider: daraja: waiting for an access token: %w", ctx.Err())
	}
}

// carryToken returns the access token for one request, held so that no new token is fetched
// (invalidating it) until release is called.
func (d *Daraja) carryToken(ctx context.Context) (tok string, release func(), err error) {
	c := d.tokens
	for {
		if tok, err = d.accessToken(ctx); err != nil {
			return "", nil, err
		}
		c.inUse.RLock()
		c.mu.Lock()
		current := c.token == tok
		c.mu.Unlock()
		if current {
			return tok, c.inUse.RUnlock, nil
		}
		c.inUse.RUnlock() // a fetch replaced it meanwhile: take the new one
	}
}

// invalidateToken drops tok if it is still the cached token (many callers holding the same
// rejected token cause one refresh, not many).
func (d *Daraja) invalidateToken(tok string) {
	c := d.tokens
	c.mu.Lock()
	if c.token == tok {
		c.token, c.refreshAt = "", time.Time{}
	}
	c.mu.Unlock()
}

// fetchToken follows https://developer.safaricom.co.ke/apis/Authorization: GET
// /oauth/v1/generate?grant_type=client_credentials with HTTP Basic consumer key and secret;
// the answer is {"access_token": "...", "expires_in": 3599} (expires_in a number, or a string in
// older samples).
func (d *Daraja) fetchToken(ctx context.Context) (string, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	start := d.clock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.base+darajaPathOAuth+"?grant_type=client_credentials", nil)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("provider: daraja: building the token request: %w", err)
	}
	req.SetBasicAuth(d.secrets.consumerKey, d.secrets.consumerSecret)
	req.Header.Set("Accept", "application/json")
	status, data, err := d.roundTrip(req, darajaPathOAuth)
	if err != nil {
		return "", time.Time{}, err
	}
	if status != http.StatusOK {
		return "", time.Time{}, fmt.Errorf("provider: daraja: fetching an access token (check the consumer key and secret): %w", darajaErrorOf(darajaPathOAuth, status, data))
	}
	var body struct {
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
	}
	if err := json.Unmarshal(data, &body); err != nil || body.AccessToken == "" {
		return "", time.Time{}, errors.New("provider: daraja: malformed access token answer")
	}
	secs, err := strconv.ParseInt(strings.Trim(string(body.ExpiresIn), `" `), 10, 64)
	if err != nil || secs <= 0 {
		return "", time.Time{}, errors.New("provider: daraja: access token answer has no valid expires_in")
	}
	life := time.Duration(float64(time.Duration(secs)*time.Second) * darajaTokenRefreshFraction)
	return body.AccessToken, start.Add(life), nil
}

// ---- HTTP ----

// DarajaError is an answer outside the happy path: Daraja's error body {requestId, errorCode,
// errorMessage} (MpesaExpressSimulate, "Sample Error Response") or an unexpected status. For a
// push, payment or reversal it means the outcome is unknown unless the adapter said otherwise.
type DarajaError struct {
	Path         string
	StatusCode   int
	RequestID    string
	ErrorCode    string
	ErrorMessage string // truncated; Daraja's text, never our secrets
}

func (e *DarajaError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider: daraja: %s answered HTTP %d", e.Path, e.StatusCode)
	if e.ErrorCode != "" {
		fmt.Fprintf(&b, " %s", e.ErrorCode)
	}
	if e.ErrorMessage != "" {
		fmt.Fprintf(&b, ": %s", e.ErrorMessage)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (requestId %s)", e.RequestID)
	}
	return b.String()
}

// TokenRejected reports whether Daraja refused the access token: HTTP 401, or 404.001.03
// "Invalid Access Token" (MpesaExpressSimulate and Reversal pages, error codes).
func (e *DarajaError) TokenRejected() bool {
	return e.StatusCode == http.StatusUnauthorized || e.ErrorCode == "404.001.03"
}

// validation reports a documented request validation error: HTTP 400 with an errorCode of the
// 400.002.* family ("Bad Request - Invalid ..."), given before the request is processed.
func (e *DarajaError) validation() bool {
	return e.StatusCode == http.StatusBadRequest && strings.HasPrefix(e.ErrorCode, "400.002.")
}

func darajaErrorOf(path string, status int, data []byte) *DarajaError {
	e := &DarajaError{Path: path, StatusCode: status}
	var body struct {
		RequestID    string `json:"requestId"`
		ErrorCode    string `json:"errorCode"`
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal(data, &body) == nil {
		e.RequestID = truncateUpstreamText(body.RequestID)
		e.ErrorCode = truncateUpstreamText(body.ErrorCode)
		e.ErrorMessage = truncateUpstreamText(body.ErrorMessage)
	}
	return e
}

// roundTrip sends req and reads at most maxUpstreamBody bytes of the answer. Errors carry the path,
// never the headers (where the credentials and the token are).
func (d *Daraja) roundTrip(req *http.Request, path string) (int, []byte, error) {
	resp, err := d.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is the base and the path, said below
		}
		return 0, nil, fmt.Errorf("provider: daraja: %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody+1))
	if err != nil {
		return 0, nil, fmt.Errorf("provider: daraja: reading the answer to %s (HTTP %d): %w", path, resp.StatusCode, err)
	}
	if len(data) > maxUpstreamBody {
		return 0, nil, fmt.Errorf("provider: daraja: the answer to %s (HTTP %d) is larger than %d bytes", path, resp.StatusCode, maxUpstreamBody)
	}
	return resp.StatusCode, data, nil
}

// post sends one authenticated JSON POST ("All M-PESA API requests on the Daraja platform are POST
// requests except Authorization API", TransactionStatus page). A rejected token is dropped from
// the cache; the request is sent again with a new token only when idempotent (a query). It
// returns the HTTP status and body of any answer, or an error when there was none (outcome
// unknown).
func (d *Daraja) post(ctx context.Context, path string, body any, idempotent bool) (int, []byte, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return 0, nil, fmt.Errorf("provider: daraja: encoding %s: %w", path, err)
	}
	for attempt := 0; ; attempt++ {
		tok, release, err := d.carryToken(ctx)
		if err != nil {
			return 0, nil, err
		}
		status, data, err := d.postOnce(ctx, path, tok, payload)
		release()
		if err != nil {
			return 0, nil, err
		}
		if status/100 != 2 {
			if de := darajaErrorOf(path, status, data); de.TokenRejected() {
				d.invalidateToken(tok)
				if !idempotent {
					return 0, nil, fmt.Errorf("%w: %w", ErrDarajaTokenRejected, de)
				}
				if attempt == 0 {
					continue
				}
			}
		}
		return status, data, nil
	}
}

func (d *Daraja) postOnce(ctx context.Context, path, tok string, payload []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.base+path, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, fmt.Errorf("provider: daraja: building %s: %w", path, err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	// Without it Daraja does not read the body as JSON ("Why am I getting 'Bad Request - Invalid
	// BusinessShortCode'? Wrong request Content-Type", MpesaExpressSimulate FAQ).
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	return d.roundTrip(req, path)
}

// ---- request fields ----

// darajaEAT is Kenya's time (UTC+3, no daylight saving): the Timestamp of M-Pesa Express is
// local time, YYYYMMDDHHmmss (MpesaExpressSimulate, Timestamp). A fixed zone needs no tzdata.
var darajaEAT = time.FixedZone("EAT", 3*60*60)

// stkPassword is base64(BusinessShortCode + Passkey + Timestamp) (MpesaExpressSimulate, Password).
func (d *Daraja) stkPassword() (password, timestamp string) {
	timestamp = d.clock().In(darajaEAT).Format("20060102150405")
	return base64.StdEncoding.EncodeToString([]byte(d.shortCode + d.secrets.passkey + timestamp)), timestamp
}

// darajaWholeShillings parses a decimal amount string ("1500", "1500.00") into whole shillings. A
// non-zero fraction is ErrNotWholeShillings; anything else that is not a positive decimal is
// ErrDarajaInvalidRequest.
func darajaWholeShillings(amount string) (int64, error) {
	intPart, frac, hasFrac := strings.Cut(amount, ".")
	if !darajaDigits(intPart, 1, 12) || (hasFrac && !darajaDigits(frac, 1, 12)) {
		return 0, fmt.Errorf("%w: amount %q is not a positive decimal", ErrDarajaInvalidRequest, truncateUpstreamText(amount))
	}
	if strings.Trim(frac, "0") != "" {
		return 0, fmt.Errorf("%w (%s)", ErrNotWholeShillings, amount)
	}
	n, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: amount %q must be at least 1 shilling", ErrDarajaInvalidRequest, amount)
	}
	return n, nil
}

func darajaCheckKES(currency string) error {
	if currency != "KES" {
		return fmt.Errorf("%w: M-Pesa Kenya moves KES, not %q", ErrDarajaInvalidRequest, truncateUpstreamText(currency))
	}
	return nil
}

// darajaMSISDN turns an E.164 number into Daraja's 2547XXXXXXXX form (the '+' stripped); Safaricom's
// newer 2541XXXXXXXX range is accepted too (MpesaExpressSimulate, PartyA/PhoneNumber).
func darajaMSISDN(phone string) (string, error) {
	p := strings.TrimPrefix(phone, "+")
	if !darajaDigits(p, 12, 12) || !strings.HasPrefix(p, "254") || (p[3] != '7' && p[3] != '1') {
		return "", fmt.Errorf("%w: phone %s is not a Kenyan mobile number (+2547XXXXXXXX or +2541XXXXXXXX)", ErrDarajaInvalidRequest, darajaMaskPhone(phone))
	}
	return p, nil
}

// darajaMaskPhone hides the middle of a phone number, for logs and errors: "2547******78".
func darajaMaskPhone(phone string) string {
	if len(phone) <= 6 {
		return strings.Repeat("*", len(phone))
	}
	return phone[:4] + strings.Repeat("*", len(phone)-6) + phone[len(phone)-2:]
}

func darajaDigits(s string, minLen, maxLen int) bool {
	if len(s) < minLen || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// AccountReferenceFor is the M-Pesa Express AccountReference of a reference: "PG" and the first
// ten characters of the base32 SHA-256 of the reference (12 characters, upper-case letters and
// digits: "Maximum of 12 characters", MpesaExpressSimulate). The customer sees it in the prompt
// and the statement; it is deterministic, so support can compute it from our reference.
func AccountReferenceFor(reference string) string {
	sum := sha256.Sum256([]byte(reference))
	return "PG" + base32.StdEncoding.EncodeToString(sum[:])[:darajaAccountReferenceMax-2]
}

// OriginatorConversationIDFor is the B2C OriginatorConversationID of a reference: the reference
// itself when it is at most 36 characters of letters, digits, '.', '_' and '-' (the
// BusinessToCustomer page documents no limit; its sample is "600997_Test_32et3241ed8yu"), else
// "PG-" and the first 32 hex digits of its SHA-256.
func OriginatorConversationIDFor(reference string) string {
	ok := reference != "" && len(reference) <= darajaOCIDMax
	for i := 0; ok && i < len(reference); i++ {
		c := reference[i]
		ok = c == '.' || c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
	}
	if ok {
		return reference
	}
	sum := sha256.Sum256([]byte(reference))
	return "PG-" + hex.EncodeToString(sum[:])[:32]
}

// darajaTransactionDesc is TransactionDesc: the description, printable ASCII, at most 13 characters.
func darajaTransactionDesc(desc string) string {
	var b strings.Builder
	for _, r := range desc {
		if b.Len() == darajaTransactionDescMax {
			break
		}
		if r >= ' ' && r < 0x7f {
			b.WriteRune(r)
		}
	}
	if s := strings.TrimSpace(b.String()); s != "" {
		return s
	}
	return "Payment"
}

// ---- callback URLs ----

// Daraja signs nothing it posts (MpesaExpressSimulate "Callback", BusinessToCustomer "Callback
// payload"), so the URL itself authenticates a result: every attempt gets its own path token, the
// attempt's reference sealed with AES-256-GCM under a key derived from CallbackSecret. Only a
// holder of the secret can make a token that opens, and opening one gives back the reference, so
// the receiver finds the attempt from the path alone without the reference ever appearing in a
// URL that Safaricom (or a proxy's log) sees. The nonce is derived from the reference (a synthetic
// IV), so an attempt's URL is the same in every process and after a restart.

// callbackAEAD is AES-256-GCM keyed with HMAC-SHA256(CallbackSecret, a fixed label).
func (d *Daraja) callbackAEAD() cipher.AEAD {
	m := hmac.New(sha256.New, d.secrets.callbackSecret)
	m.Write([]byte("paygate daraja callback path key v1"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		panic(fmt.Sprintf("provider: daraja: AES-256 key: %v", err)) // a 32-byte key never fails
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(fmt.Sprintf("provider: daraja: GCM: %v", err))
	}
	return aead
}

// callbackNonce is the synthetic nonce of a reference: HMAC-SHA256(CallbackSecret, "nonce" ||
// reference), truncated to the GCM nonce size.
func (d *Daraja) callbackNonce(reference string, size int) []byte {
	m := hmac.New(sha256.New, d.secrets.callbackSecret)
	m.Write([]byte("paygate daraja callback nonce v1\x00"))
	m.Write([]byte(reference))
	return m.Sum(nil)[:size]
}

// callbackToken is the per-attempt path token: base64url(nonce || AES-GCM(reference)).
func (d *Daraja) callbackToken(reference string) string {
	aead := d.callbackAEAD()
	nonce := d.callbackNonce(reference, aead.NonceSize())
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(reference), []byte(darajaCallbackAAD)))
}

// CallbackReference opens a path token: the reference it was made for, or false when the token
// was not made with this gateway's CallbackSecret (forged, altered or another gateway's).
func (d *Daraja) CallbackReference(token string) (string, bool) {
	if token == "" || len(token) > darajaCallbackTokenMax {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	aead := d.callbackAEAD()
	if err != nil || len(raw) < aead.NonceSize()+aead.Overhead() {
		return "", false
	}
	nonce := raw[:aead.NonceSize()]
	plain, err := aead.Open(nil, nonce, raw[aead.NonceSize():], []byte(darajaCallbackAAD))
	if err != nil || !hmac.Equal(nonce, d.callbackNonce(string(plain), aead.NonceSize())) {
		return "", false
	}
	return string(plain), true
}

// CallbackURLFor is the M-Pesa Express CallBackURL of an attempt: CallbackBaseURL + "/" + token.
func (d *Daraja) CallbackURLFor(reference string) string {
	return d.callbackBase + "/" + d.callbackToken(reference)
}

// ResultURLFor is the ResultURL of a B2C payment, reversal or query: CallbackURLFor + "/result".
func (d *Daraja) ResultURLFor(reference string) string {
	return d.CallbackURLFor(reference) + "/" + DarajaCallbackResult
}

// QueueTimeoutURLFor is the QueueTimeOutURL: CallbackURLFor + "/timeout". A notice there says the
// request timed out in Daraja's queue; its body is not documented, so the URL tells it apart.
func (d *Daraja) QueueTimeoutURLFor(reference string) string {
	return d.CallbackURLFor(reference) + "/" + DarajaCallbackTimeout
}

// Kinds of Daraja callback URL: the last path segment after the token ("" for an M-Pesa Express
// CallBackURL).
const (
	DarajaCallbackResult  = "result"
	DarajaCallbackTimeout = "timeout"
)

// VerifyCallbackPath reports whether path (a URL path or an absolute URL) is one of the
// reference's callback paths: CallbackURLFor, ResultURLFor or QueueTimeoutURLFor.
func (d *Daraja) VerifyCallbackPath(path, reference string) bool {
	if u, err := url.Parse(path); err == nil {
		path = u.Path
	}
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	rest, ok := strings.CutPrefix(path, d.callbackPath+"/")
	if !ok {
		return false
	}
	token, kind, _ := strings.Cut(rest, "/")
	if kind != "" && kind != DarajaCallbackResult && kind != DarajaCallbackTimeout {
		return false
	}
	got, ok := d.CallbackReference(token)
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(reference)) == 1
}

// IsQueueTimeoutPath reports whether a verified callback path is a QueueTimeOutURL.
func IsQueueTimeoutPath(path string) bool {
	if u, err := url.Parse(path); err == nil {
		path = u.Path
	}
	return strings.HasSuffix(strings.TrimSuffix(path, "/"), "/"+DarajaCallbackTimeout)
}

// receivesResults refuses, unsent, a request whose result would come to a callback URL when the
// adapter was built without a callback base URL.
func (d *Daraja) receivesResults() error {
	if d.callbackBase == "" {
		return fmt.Errorf("%w: no callback base URL to receive the result at", ErrDarajaNotConfigured)
	}
	return nil
}

// ---- M-Pesa Express ----

// Push implements Provider: an M-Pesa Express request
// (https://developer.safaricom.co.ke/apis/MpesaExpressSimulate). The amount must be whole
// shillings in KES and the phone a Kenyan mobile number: otherwise an error, before any request.
// ResponseCode "0" is StatusPending with ProviderReference = CheckoutRequestID; the result
// arrives at CallbackURLFor(req.Reference) (req.CallbackURL is not used). A documented validation
// error (HTTP 400, errorCode 400.002.*) is a FAILED result: the push was refused. Every other
// answer or no answer is an error: the outcome is unknown, and the push is never sent again here.
func (d *Daraja) Push(ctx context.Context, req PushRequest) (Result, error) {
	if err := d.receivesResults(); err != nil {
		return Result{}, err
	}
	if req.Reference == "" {
		return Result{}, fmt.Errorf("%w: empty reference", ErrDarajaInvalidRequest)
	}
	if err := darajaCheckKES(req.Currency); err != nil {
		return Result{}, err
	}
	amount, err := darajaWholeShillings(req.Amount)
	if err != nil {
		return Result{}, err
	}
	phone, err := darajaMSISDN(req.Phone)
	if err != nil {
		return Result{}, err
	}
	password, timestamp := d.stkPassword()
	body := map[string]any{
		"BusinessShortCode": d.shortCode,
		"Password":          password,
		"Timestamp":         timestamp,
		"TransactionType":   d.txType,
		"Amount":            amount,
		"PartyA":            phone,
		"PartyB":            d.partyB,
		"PhoneNumber":       phone,
		"CallBackURL":       d.CallbackURLFor(req.Reference),
		"AccountReference":  AccountReferenceFor(req.Reference),
		"TransactionDesc":   darajaTransactionDesc(req.Description),
	}
	status, data, err := d.post(ctx, darajaPathSTKPush, body, false)
	if err != nil {
		return Result{}, err
	}
	if status == http.StatusOK {
		var ack struct {
			MerchantRequestID   string
			CheckoutRequestID   string
			ResponseCode        json.RawMessage
			ResponseDescription string
			CustomerMessage     string
		}
		if err := json.Unmarshal(data, &ack); err != nil {
			return Result{}, fmt.Errorf("provider: daraja: malformed M-Pesa Express answer: %w", err)
		}
		if code := darajaJSONText(ack.ResponseCode); code != "0" || ack.CheckoutRequestID == "" {
			// Not the documented acceptance; whether a prompt went out is not known.
			return Result{}, fmt.Errorf("provider: daraja: M-Pesa Express answered ResponseCode %q without acceptance: %s",
				truncateUpstreamText(code), truncateUpstreamText(ack.ResponseDescription))
		}
		d.pushes.put(req.Reference, ack.CheckoutRequestID)
		return Result{Status: StatusPending, ProviderReference: ack.CheckoutRequestID, Message: truncateUpstreamText(ack.CustomerMessage)}, nil
	}
	de := darajaErrorOf(darajaPathSTKPush, status, data)
	if de.validation() {
		code := paygatev1.FailureProviderError
		if strings.Contains(de.ErrorMessage, "PhoneNumber") || strings.Contains(de.ErrorMessage, "PartyA") {
			code = paygatev1.FailureInvalidAccount
		}
		return Result{Status: StatusFailed, Code: code, Message: de.ErrorMessage}, nil
	}
	return Result{}, de
}

// PushStatus implements Provider. M-Pesa Express can be queried only by CheckoutRequestID
// (MpesaExpressQuery), so this asks by the request's ProviderReference (the CheckoutRequestID the
// attempt stored with the acceptance), else by the one this process saw in the push's
// acknowledgement; without either it returns ErrNoLookupByReference (outcome unknown: the push's
// answer was lost, and the result comes by callback or not at all; it is never pushed again).
func (d *Daraja) PushStatus(ctx context.Context, req PushRequest) (Result, error) {
	if req.ProviderReference != "" { // the CheckoutRequestID the attempt stored with the acceptance
		return d.QuerySTK(ctx, req.ProviderReference)
	}
	id, ok := d.pushes.get(req.Reference)
	if !ok {
		return Result{}, ErrNoLookupByReference
	}
	return d.QuerySTK(ctx, id.(string))
}

// QuerySTK asks M-Pesa Express Query about a push
// (https://developer.safaricom.co.ke/apis/MpesaExpressQuery). ResultCode maps by
// darajaSTKResultCodes (0 is SUCCESS, any other FAILED); the answer "The transaction is being
// processed" (HTTP 500, 500.001.1001) is PENDING. Any other answer is an error.
func (d *Daraja) QuerySTK(ctx context.Context, checkoutRequestID string) (Result, error) {
	if checkoutRequestID == "" {
		return Result{}, fmt.Errorf("%w: empty CheckoutRequestID", ErrDarajaInvalidRequest)
	}
	password, timestamp := d.stkPassword()
	status, data, err := d.post(ctx, darajaPathSTKQuery, map[string]any{
		"BusinessShortCode": d.shortCode,
		"Password":          password,
		"Timestamp":         timestamp,
		"CheckoutRequestID": checkoutRequestID,
	}, true)
	if err != nil {
		return Result{}, err
	}
	if status != http.StatusOK {
		de := darajaErrorOf(darajaPathSTKQuery, status, data)
		// "The transaction is being processed" is the query's answer while the customer has not
		// answered the prompt (500.001.1001).
		if de.ErrorCode == "500.001.1001" && strings.Contains(strings.ToLower(de.ErrorMessage), "being processed") {
			return Result{Status: StatusPending, ProviderReference: checkoutRequestID, Message: de.ErrorMessage}, nil
		}
		return Result{}, de
	}
	var ans struct {
		ResponseCode      json.RawMessage
		CheckoutRequestID string
		ResultCode        json.RawMessage
		ResultDesc        string
	}
	if err := json.Unmarshal(data, &ans); err != nil {
		return Result{}, fmt.Errorf("provider: daraja: malformed M-Pesa Express Query answer: %w", err)
	}
	if ans.CheckoutRequestID != "" && ans.CheckoutRequestID != checkoutRequestID {
		return Result{}, fmt.Errorf("provider: daraja: M-Pesa Express Query answered about %q, asked about %q",
			truncateUpstreamText(ans.CheckoutRequestID), checkoutRequestID)
	}
	code := darajaJSONText(ans.ResultCode)
	if code == "" {
		return Result{}, errors.New("provider: daraja: M-Pesa Express Query answer has no ResultCode")
	}
	res := darajaMapCode(darajaSTKResultCodes, code)
	res.ProviderReference, res.Message = checkoutRequestID, truncateUpstreamText(ans.ResultDesc)
	return res, nil
}

// STKResult is an M-Pesa Express callback (MpesaExpressSimulate, "Sample Successful Callback
// Payload" and "Sample Unsuccessful Callback Payload").
type STKResult struct {
	MerchantRequestID string
	CheckoutRequestID string
	ResultCode        string
	ResultDesc        string
	// Amount, MpesaReceiptNumber, TransactionDate (YYYYMMDDHHmmss, Kenya time) and PhoneNumber are
	// the CallbackMetadata of a successful payment, as their JSON text ("1.00"); "" otherwise.
	// PhoneNumber is the customer's full number: never log it.
	Amount             string
	MpesaReceiptNumber string
	TransactionDate    string
	PhoneNumber        string
	// Result is the outcome: ProviderReference is the CheckoutRequestID, Remark the receipt.
	Result Result
}

// ParseSTKCallback decodes an M-Pesa Express callback body. It does not authenticate it: the
// receiver opens the path token first (CallbackReference). Errors wrap ErrCallbackPayload.
func ParseSTKCallback(body []byte) (STKResult, error) {
	if len(body) > MaxCallbackBody {
		return STKResult{}, fmt.Errorf("%w: body larger than %d bytes", ErrCallbackPayload, MaxCallbackBody)
	}
	var env struct {
		Body struct {
			StkCallback *struct {
				MerchantRequestID string
				CheckoutRequestID string
				ResultCode        json.RawMessage
				ResultDesc        string
				CallbackMetadata  *struct {
					Item []struct {
						Name  string
						Value json.RawMessage
					}
				}
			} `json:"stkCallback"`
		} `json:"Body"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return STKResult{}, fmt.Errorf("%w: malformed JSON: %v", ErrCallbackPayload, err)
	}
	cb := env.Body.StkCallback
	if cb == nil || cb.CheckoutRequestID == "" {
		return STKResult{}, fmt.Errorf("%w: no Body.stkCallback.CheckoutRequestID", ErrCallbackPayload)
	}
	out := STKResult{
		MerchantRequestID: cb.MerchantRequestID, CheckoutRequestID: cb.CheckoutRequestID,
		ResultCode: darajaJSONText(cb.ResultCode), ResultDesc: cb.ResultDesc,
	}
	if out.ResultCode == "" {
		return STKResult{}, fmt.Errorf("%w: no ResultCode", ErrCallbackPayload)
	}
	if cb.CallbackMetadata != nil {
		for _, it := range cb.CallbackMetadata.Item {
			v := darajaJSONText(it.Value)
			switch it.Name {
			case "Amount":
				out.Amount = v
			case "MpesaReceiptNumber":
				out.MpesaReceiptNumber = v
			case "TransactionDate":
				out.TransactionDate = v
			case "PhoneNumber":
				out.PhoneNumber = v
			}
		}
	}
	out.Result = darajaMapCode(darajaSTKResultCodes, out.ResultCode)
	out.Result.ProviderReference = cb.CheckoutRequestID
	out.Result.Message = truncateUpstreamText(cb.ResultDesc)
	out.Result.Remark = out.MpesaReceiptNumber
	return out, nil
}

// ---- B2C ----

// Disburse implements Provider: a B2C payment request (https://developer.safaricom.co.ke/apis/BusinessToCustomer,
// v3) with OriginatorConversationID = OriginatorConversationIDFor(req.Reference), the
// SecurityCredential, and ResultURL / QueueTimeOutURL under the reference's callback path. The
// acknowledgement (ResponseCode "0") is StatusPending with ProviderReference = ConversationID;
// the result arrives at the ResultURL only (ParseResult; the apiserver records it). A documented validation
// error (HTTP 400, 400.002.*) is FAILED; any other answer (including 500.002.1001 "Duplicate
// OriginatorConversationID", which says an earlier request with it arrived) is an error.
func (d *Daraja) Disburse(ctx context.Context, req DisbursementRequest) (Result, error) {
	if err := d.receivesResults(); err != nil {
		return Result{}, err
	}
	if d.b2cShortCode == "" || d.secrets.certKey == nil {
		return Result{}, fmt.Errorf("%w: B2C needs B2CShortCode, InitiatorName, InitiatorPassword and CertificatePEM", ErrDarajaNotConfigured)
	}
	if req.Reference == "" {
		return Result{}, fmt.Errorf("%w: empty reference", ErrDarajaInvalidRequest)
	}
	if err := darajaCheckKES(req.Currency); err != nil {
		return Result{}, err
	}
	amount, err := darajaWholeShillings(req.Amount)
	if err != nil {
		return Result{}, err
	}
	phone, err := darajaMSISDN(req.Phone)
	if err != nil {
		return Result{}, err
	}
	cred, err := d.securityCredential()
	if err != nil {
		return Result{}, err
	}
	body := map[string]any{
		"OriginatorConversationID": OriginatorConversationIDFor(req.Reference),
		"InitiatorName":            d.initiatorName,
		"SecurityCredential":       cred,
		"CommandID":                d.b2cCommandID,
		"Amount":                   amount,
		"PartyA":                   d.b2cShortCode,
		"PartyB":                   phone,
		"Remarks":                  "Paygate payout",
		"QueueTimeOutURL":          d.QueueTimeoutURLFor(req.Reference),
		"ResultURL":                d.ResultURLFor(req.Reference),
		"Occassion":                "", // the page's spelling; optional
	}
	status, data, err := d.post(ctx, darajaPathB2C, body, false)
	if err != nil {
		return Result{}, err
	}
	if status == http.StatusOK {
		ack, err := darajaParseAck(darajaPathB2C, data)
		if err != nil {
			return Result{}, err
		}
		return Result{Status: StatusPending, ProviderReference: ack.ConversationID, Message: truncateUpstreamText(ack.ResponseDescription)}, nil
	}
	de := darajaErrorOf(darajaPathB2C, status, data)
	if de.validation() {
		code := paygatev1.FailureProviderError
		if strings.Contains(de.ErrorMessage, "PartyB") {
			code = paygatev1.FailureInvalidAccount
		}
		return Result{Status: StatusFailed, Code: code, Message: de.ErrorMessage}, nil
	}
	return Result{}, de
}

// DisbursementStatus implements Provider: B2C has no synchronous status, its result arrives
// only at the ResultURL, so this returns ErrResultsByCallback (wrapping ErrAnswersByCallback):
// the attempt takes the result the apiserver received at the attempt's own ResultURL and recorded
// on the payout (paygatev1.AnnotationProviderResult), or waits for it.
func (d *Daraja) DisbursementStatus(context.Context, DisbursementRequest) (Result, error) {
	return Result{}, ErrResultsByCallback
}

// securityCredential is base64(RSA PKCS#1 v1.5 encryption of the initiator password with the
// certificate's public key) (BusinessToCustomer, SecurityCredential; "Getting Started": the
// password is encrypted with the M-Pesa public key certificate).
func (d *Daraja) securityCredential() (string, error) {
	if d.secrets.certKey == nil {
		return "", fmt.Errorf("%w: no InitiatorPassword and CertificatePEM", ErrDarajaNotConfigured)
	}
	ct, err := rsa.EncryptPKCS1v15(rand.Reader, d.secrets.certKey, []byte(d.secrets.initiatorPassword))
	if err != nil {
		return "", fmt.Errorf("provider: daraja: encrypting the security credential: %w", err)
	}
	return base64.StdEncoding.EncodeToString(ct), nil
}

// DarajaAck is the synchronous acknowledgement of an asynchronous Daraja request (B2C, Transaction
// Status, Reversal, Account Balance): the result follows at the ResultURL.
type DarajaAck struct {
	OriginatorConversationID string
	ConversationID           string
	ResponseCode             string
	ResponseDescription      string
}

func darajaParseAck(path string, data []byte) (DarajaAck, error) {
	var raw struct {
		OriginatorConversationID string
		ConversationID           string
		ResponseCode             json.RawMessage
		ResponseDescription      string
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return DarajaAck{}, fmt.Errorf("provider: daraja: malformed acknowledgement of %s: %w", path, err)
	}
	ack := DarajaAck{raw.OriginatorConversationID, raw.ConversationID, darajaJSONText(raw.ResponseCode), truncateUpstreamText(raw.ResponseDescription)}
	if ack.ResponseCode != "0" || ack.ConversationID == "" {
		return DarajaAck{}, fmt.Errorf("provider: daraja: %s answered ResponseCode %q without acceptance: %s",
			path, truncateUpstreamText(ack.ResponseCode), ack.ResponseDescription)
	}
	return ack, nil
}

// ---- Transaction Status, Reversal, Account Balance ----

// TransactionStatusQuery names the transaction a Transaction Status query asks about: an M-PESA
// receipt (TransactionID) or a B2C OriginatorConversationID ("You can use this ID to query the
// status of a transaction before making another disbursement", BusinessToCustomer).
type TransactionStatusQuery struct {
	TransactionID          string
	OriginalConversationID string
	// ResultURL receives the result (e.g. ResultURLFor(reference)); QueueTimeOutURL the time-out
	// notice ("" means ResultURL).
	ResultURL, QueueTimeOutURL string
	// PartyA is the organisation's shortcode; "" means B2CShortCode for an
	// OriginalConversationID, ShortCode for a TransactionID.
	PartyA string
}

// TransactionStatus sends a Transaction Status query
// (https://developer.safaricom.co.ke/apis/TransactionStatus) and returns its acknowledgement; the
// result arrives at q.ResultURL (ParseResult). A query moves no money, so a rejected token is
// refreshed and the query sent again once.
func (d *Daraja) TransactionStatus(ctx context.Context, q TransactionStatusQuery) (DarajaAck, error) {
	if q.TransactionID == "" && q.OriginalConversationID == "" {
		return DarajaAck{}, fmt.Errorf("%w: a TransactionID or an OriginalConversationID is needed", ErrDarajaInvalidRequest)
	}
	if q.ResultURL == "" {
		return DarajaAck{}, fmt.Errorf("%w: empty ResultURL", ErrDarajaInvalidRequest)
	}
	if q.QueueTimeOutURL == "" {
		q.QueueTimeOutURL = q.ResultURL
	}
	partyA := q.PartyA
	if partyA == "" {
		partyA = d.shortCode
		if q.OriginalConversationID != "" && d.b2cShortCode != "" {
			partyA = d.b2cShortCode
		}
	}
	cred, err := d.securityCredential()
	if err != nil {
		return DarajaAck{}, err
	}
	body := map[string]any{
		"Initiator":          d.initiatorName,
		"SecurityCredential": cred,
		"CommandID":          "TransactionStatusQuery",
		"PartyA":             partyA,
		"IdentifierType":     "4", // organisation shortcode
		"ResultURL":          q.ResultURL,
		"QueueTimeOutURL":    q.QueueTimeOutURL,
		"Remarks":            "Paygate status query",
		"Occasion":           "",
	}
	if q.TransactionID != "" {
		body["TransactionID"] = q.TransactionID
	}
	if q.OriginalConversationID != "" {
		body["OriginalConversationID"] = q.OriginalConversationID
	}
	return d.sendAsync(ctx, darajaPathTransactionStatus, body, true)
}

// ReversalRequest reverses a customer payment (an STK push's receipt) to the pay bill.
type ReversalRequest struct {
	// TransactionID is the M-PESA receipt of the payment to reverse.
	TransactionID string
	// Amount is a decimal string in whole shillings ("1500" or "1500.00").
	Amount string
	// Reference identifies the reversal: its results go to ResultURLFor(Reference) and
	// QueueTimeoutURLFor(Reference).
	Reference string
}

// Reverse sends a Reversal request (https://developer.safaricom.co.ke/apis/Reversal): ReceiverParty
// is ShortCode, RecieverIdentifierType "11" (the page's spelling and value). It returns the
// acknowledgement; the result arrives at the ResultURL. A reversal moves money, so it is never
// sent twice here (a rejected token is ErrDarajaTokenRejected).
func (d *Daraja) Reverse(ctx context.Context, r ReversalRequest) (DarajaAck, error) {
	if err := d.receivesResults(); err != nil {
		return DarajaAck{}, err
	}
	if r.TransactionID == "" || r.Reference == "" {
		return DarajaAck{}, fmt.Errorf("%w: a reversal needs a TransactionID and a reference", ErrDarajaInvalidRequest)
	}
	amount, err := darajaWholeShillings(r.Amount)
	if err != nil {
		return DarajaAck{}, err
	}
	cred, err := d.securityCredential()
	if err != nil {
		return DarajaAck{}, err
	}
	return d.sendAsync(ctx, darajaPathReversal, map[string]any{
		"Initiator":              d.initiatorName,
		"SecurityCredential":     cred,
		"CommandID":              "TransactionReversal",
		"TransactionID":          r.TransactionID,
		"Amount":                 amount,
		"ReceiverParty":          d.shortCode,
		"RecieverIdentifierType": "11",
		"ResultURL":              d.ResultURLFor(r.Reference),
		"QueueTimeOutURL":        d.QueueTimeoutURLFor(r.Reference),
		"Remarks":                "Paygate reversal",
		"Occasion":               "",
	}, false)
}

// darajaMaxReceipt bounds an M-PESA receipt (TransactionID): one token of printable ASCII, like
// the api's AnnotationProviderReceipt.
const darajaMaxReceipt = 64

// RefundScope implements Refunder: M-Pesa's refund is a reversal of the whole customer payment,
// once ("The transaction has already been reversed", Reversal result R000001); there is no
// partial reversal.
func (d *Daraja) RefundScope() RefundScope { return RefundsFull }

// Refund implements Refunder with a reversal (Reverse, https://developer.safaricom.co.ke/apis/Reversal)
// of the collection's M-PESA receipt: TransactionID = req.PaymentReceipt (the MpesaReceiptNumber
// of the M-Pesa Express callback, which the apiserver records on the payment,
// paygatev1.AnnotationProviderReceipt), Amount = req.Amount in whole shillings, ResultURL and
// QueueTimeOutURL = ResultURLFor and QueueTimeoutURLFor(req.Reference). The Reversal request has
// no OriginatorConversationID of ours (Safaricom assigns one and echoes it in the
// acknowledgement and the result), so the result is matched by its URL, its ConversationID and
// its OriginalTransactionID. The acknowledgement is PENDING with ProviderReference =
// ConversationID; the result arrives at the ResultURL only (RefundStatus). A refund that is not
// the whole payment, in another currency than KES, or of a payment without a receipt is refused
// before any request with an error wrapping ErrDarajaInvalidRequest. A documented validation
// error (HTTP 400, 400.002.*) is FAILED; any other answer is an error. A reversal moves money: it
// is never sent twice here (Capabilities: no de-duplication).
func (d *Daraja) Refund(ctx context.Context, req RefundRequest) (Result, error) {
	if req.Reference == "" {
		return Result{}, fmt.Errorf("%w: empty refund reference", ErrDarajaInvalidRequest)
	}
	// A refund M-Pesa cannot make is refused here, unsent: a final FAILED, never an unknown
	// outcome that would wait for a result that cannot come.
	refuse := func(format string, args ...any) (Result, error) {
		return Result{Status: StatusFailed, Code: paygatev1.FailureProviderError, Message: fmt.Sprintf(format, args...)}, nil
	}
	switch {
	case req.PaymentReceipt == "":
		return refuse("the payment has no M-PESA receipt to reverse (it arrives only in the M-Pesa Express callback of a successful payment)")
	case !darajaToken(req.PaymentReceipt, darajaMaxReceipt):
		return refuse("the payment's M-PESA receipt is not one token of printable characters")
	case !req.Full || (req.PaymentAmount != "" && !darajaSameAmount(req.Amount, req.PaymentAmount)):
		return refuse("M-Pesa reverses whole payments only (%s of %s asked)", truncateUpstreamText(req.Amount), truncateUpstreamText(req.PaymentAmount))
	case darajaCheckKES(req.Currency) != nil:
		return refuse("M-Pesa refunds KES only")
	}
	ack, err := d.Reverse(ctx, ReversalRequest{TransactionID: req.PaymentReceipt, Amount: req.Amount, Reference: req.Reference})
	if err != nil {
		var de *DarajaError
		if errors.As(err, &de) && de.validation() {
			return Result{Status: StatusFailed, Code: paygatev1.FailureProviderError, Message: de.ErrorMessage}, nil
		}
		return Result{}, err
	}
	return Result{Status: StatusPending, ProviderReference: ack.ConversationID, Message: ack.ResponseDescription}, nil
}

// RefundStatus implements Refunder: the Reversal API answers only at the ResultURL, so this
// returns ErrReversalByCallback (wrapping ErrAnswersByCallback): the attempt takes the result
// the apiserver received at the refund's own ResultURL and recorded on the Refund
// (paygatev1.AnnotationProviderResult), or waits for it.
func (d *Daraja) RefundStatus(context.Context, RefundRequest) (Result, error) {
	return Result{}, ErrReversalByCallback
}

// darajaSameAmount reports whether two amounts are the same whole shillings ("1500" and
// "1500.00"); amounts that are not are left to Reverse to refuse.
func darajaSameAmount(a, b string) bool {
	x, errA := darajaWholeShillings(a)
	y, errB := darajaWholeShillings(b)
	return errA != nil || errB != nil || x == y
}

// darajaToken reports whether s is one token of 1 to maxLen printable ASCII characters.
func darajaToken(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// AccountBalance sends an Account Balance query (https://developer.safaricom.co.ke/apis/AccountBalance)
// for B2CShortCode (ShortCode when there is none). The result arrives at
// ResultURLFor(DarajaBalanceReference) (ParseResult, then DarajaResult.Balances).
func (d *Daraja) AccountBalance(ctx context.Context) (DarajaAck, error) {
	if err := d.receivesResults(); err != nil {
		return DarajaAck{}, err
	}
	cred, err := d.securityCredential()
	if err != nil {
		return DarajaAck{}, err
	}
	partyA := d.b2cShortCode
	if partyA == "" {
		partyA = d.shortCode
	}
	return d.sendAsync(ctx, darajaPathAccountBalance, map[string]any{
		"Initiator":          d.initiatorName,
		"SecurityCredential": cred,
		"CommandID":          "AccountBalance",
		"PartyA":             partyA,
		"IdentifierType":     "4",
		"Remarks":            "Paygate balance",
		"QueueTimeOutURL":    d.QueueTimeoutURLFor(DarajaBalanceReference),
		"ResultURL":          d.ResultURLFor(DarajaBalanceReference),
	}, true)
}

func (d *Daraja) sendAsync(ctx context.Context, path string, body map[string]any, idempotent bool) (DarajaAck, error) {
	status, data, err := d.post(ctx, path, body, idempotent)
	if err != nil {
		return DarajaAck{}, err
	}
	if status != http.StatusOK {
		return DarajaAck{}, darajaErrorOf(path, status, data)
	}
	return darajaParseAck(path, data)
}

// ---- results ----

// DarajaResult is a result posted to a ResultURL by B2C, Transaction Status, Reversal or Account
// Balance ({"Result": {...}}, the "Callback payload" of each page), or a queue time-out notice.
type DarajaResult struct {
	ResultType               string
	ResultCode               string
	ResultDesc               string
	OriginatorConversationID string
	ConversationID           string
	TransactionID            string
	// Parameters are ResultParameters.ResultParameter as Key -> value text (numbers keep their
	// JSON text, "10.00"; money is never read as a float).
	Parameters map[string]string
	// Result is the outcome by darajaResultCodes, ProviderReference the ConversationID and
	// Remark the TransactionID. For a Transaction Status query SUCCESS means the query succeeded;
	// Parameters["TransactionStatus"] says what became of the transaction. A queue time-out is
	// AMBIGUOUS.
	Result Result
}

// ParseResult decodes a result posted to a ResultURL. It does not authenticate it: the receiver
// opens the path token first (CallbackReference). Errors wrap ErrCallbackPayload.
func ParseResult(body []byte) (DarajaResult, error) {
	r, err := darajaParseEnvelope(body)
	if err != nil {
		return DarajaResult{}, err
	}
	if r.ResultCode == "" {
		return DarajaResult{}, fmt.Errorf("%w: no Result.ResultCode", ErrCallbackPayload)
	}
	r.Result = darajaMapCode(darajaResultCodes, r.ResultCode)
	r.Result.ProviderReference, r.Result.Message, r.Result.Remark = r.ConversationID, truncateUpstreamText(r.ResultDesc), r.TransactionID
	return r, nil
}

// ParseQueueTimeout decodes a notice posted to a QueueTimeOutURL ("URL for notification if the
// payment request times out while awaiting processing", BusinessToCustomer). Safaricom does not
// publish its body, so any JSON object is accepted and the outcome is AMBIGUOUS: whether the
// request will still be processed is not documented, and a payout is resolved by a Transaction
// Status query (by OriginatorConversationID) or by an operator, never by paying again.
func ParseQueueTimeout(body []byte) (DarajaResult, error) {
	r, err := darajaParseEnvelope(body)
	if err != nil {
		return DarajaResult{}, err
	}
	r.Result = Result{Status: StatusAmbiguous, ProviderReference: r.ConversationID, Message: "request timed out in the Daraja queue"}
	return r, nil
}

func darajaParseEnvelope(body []byte) (DarajaResult, error) {
	if len(body) > MaxCallbackBody {
		return DarajaResult{}, fmt.Errorf("%w: body larger than %d bytes", ErrCallbackPayload, MaxCallbackBody)
	}
	var env struct {
		Result *struct {
			ResultType               json.RawMessage
			ResultCode               json.RawMessage
			ResultDesc               string
			OriginatorConversationID string
			ConversationID           string
			TransactionID            string
			ResultParameters         *struct {
				ResultParameter json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return DarajaResult{}, fmt.Errorf("%w: malformed JSON: %v", ErrCallbackPayload, err)
	}
	if env.Result == nil {
		return DarajaResult{}, fmt.Errorf("%w: no Result", ErrCallbackPayload)
	}
	res := env.Result
	out := DarajaResult{
		ResultType: darajaJSONText(res.ResultType), ResultCode: darajaJSONText(res.ResultCode), ResultDesc: res.ResultDesc,
		OriginatorConversationID: res.OriginatorConversationID, ConversationID: res.ConversationID,
		TransactionID: res.TransactionID, Parameters: map[string]string{},
	}
	if res.ResultParameters != nil && len(res.ResultParameters.ResultParameter) > 0 {
		type kv struct {
			Key   string
			Value json.RawMessage
		}
		var list []kv
		raw := bytes.TrimSpace(res.ResultParameters.ResultParameter)
		if len(raw) > 0 && raw[0] == '{' {
			// A single parameter is sometimes sent as an object rather than a list.
			var one kv
			if err := json.Unmarshal(raw, &one); err != nil {
				return DarajaResult{}, fmt.Errorf("%w: malformed ResultParameter: %v", ErrCallbackPayload, err)
			}
			list = []kv{one}
		} else if err := json.Unmarshal(raw, &list); err != nil {
			return DarajaResult{}, fmt.Errorf("%w: malformed ResultParameter: %v", ErrCallbackPayload, err)
		}
		for _, p := range list {
			if p.Key != "" {
				out.Parameters[p.Key] = darajaJSONText(p.Value)
			}
		}
	}
	return out, nil
}

// DarajaAccountBalance is one account of an Account Balance result; amounts are decimal strings.
type DarajaAccountBalance struct {
	Name, Currency                 string
	Available, Uncleared, Reserved string
}

// Balances reads the AccountBalance parameter of an Account Balance result: accounts separated by
// "&", each "Name|Currency|Available|Uncleared|Reserved|..." (AccountBalance page, result
// parameters: "Working Account|KES|700000.00|700000.00|0.00|0.00").
func (r DarajaResult) Balances() ([]DarajaAccountBalance, error) {
	v, ok := r.Parameters["AccountBalance"]
	if !ok {
		return nil, errors.New("provider: daraja: the result has no AccountBalance parameter")
	}
	var out []DarajaAccountBalance
	for _, acct := range strings.Split(v, "&") {
		f := strings.Split(acct, "|")
		if len(f) < 5 {
			return nil, fmt.Errorf("provider: daraja: malformed account balance %q", truncateUpstreamText(acct))
		}
		out = append(out, DarajaAccountBalance{Name: f[0], Currency: f[1], Available: f[2], Uncleared: f[3], Reserved: f[4]})
	}
	return out, nil
}

// darajaJSONText is the text of a JSON string or number ("" for absent or null): numbers keep their
// literal text, so "1.00" stays "1.00" and codes like 1032 and "1032" read the same.
func darajaJSONText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// ---- result codes ----

// darajaCode is how one Daraja ResultCode maps to Paygate.
type darajaCode struct {
	Status Status
	Code   paygatev1.FailureCode
}

// darajaSTKResultCodes maps M-Pesa Express ResultCodes (callback and query; MpesaExpressSimulate
// and MpesaExpressQuery result codes). 0 is success, every other code is a failure: a code not
// listed is FAILED with PROVIDER_ERROR. docs/providers.md has the same table.
var darajaSTKResultCodes = map[string]darajaCode{
	"0":    {StatusSuccess, ""},
	"1":    {StatusFailed, paygatev1.FailureInsufficientFunds}, // the customer's balance is insufficient
	"2":    {StatusFailed, paygatev1.FailurePaymentDeclined},   // below the minimum amount
	"3":    {StatusFailed, paygatev1.FailurePaymentDeclined},   // above the maximum amount
	"4":    {StatusFailed, paygatev1.FailurePaymentDeclined},   // would exceed the daily limit
	"8":    {StatusFailed, paygatev1.FailurePaymentDeclined},   // would exceed the maximum balance
	"11":   {StatusFailed, paygatev1.FailureInvalidAccount},    // the debit party is in an invalid state
	"17":   {StatusFailed, paygatev1.FailurePaymentDeclined},   // rule limited
	"1001": {StatusFailed, paygatev1.FailurePaymentDeclined},   // another transaction is in process for the customer
	"1019": {StatusFailed, paygatev1.FailurePaymentDeclined},   // the transaction expired before the customer answered
	"1025": {StatusFailed, paygatev1.FailureProviderError},     // an error occurred while sending the push
	"1032": {StatusFailed, paygatev1.FailureCustomerCancelled}, // cancelled by the customer
	"1037": {StatusFailed, paygatev1.FailurePaymentDeclined},   // the customer's phone could not be reached or did not answer
	"2001": {StatusFailed, paygatev1.FailurePaymentDeclined},   // wrong PIN
	"2006": {StatusFailed, paygatev1.FailureInvalidAccount},    // the account status does not allow the transaction
	"2028": {StatusFailed, paygatev1.FailureProviderError},     // not permitted by product assignment (TransactionType/PartyB)
	"9999": {StatusFailed, paygatev1.FailureProviderError},     // error sending the push request
}

// darajaResultCodes maps the ResultCodes of B2C, Reversal, Transaction Status and Account Balance
// results (BusinessToCustomer and Reversal result codes). In these APIs the debit party is the
// organisation, so its problems (funds, credentials) are PROVIDER_ERROR. A code not listed is
// FAILED with PROVIDER_ERROR.
var darajaResultCodes = map[string]darajaCode{
	"0":          {StatusSuccess, ""},
	"1":          {StatusFailed, paygatev1.FailureProviderError},   // the organisation's utility account is short
	"2":          {StatusFailed, paygatev1.FailurePaymentDeclined}, // below the minimum amount
	"3":          {StatusFailed, paygatev1.FailurePaymentDeclined}, // above the maximum amount
	"4":          {StatusFailed, paygatev1.FailurePaymentDeclined}, // would exceed the daily limit
	"8":          {StatusFailed, paygatev1.FailurePaymentDeclined}, // would exceed the recipient's maximum balance
	"11":         {StatusFailed, paygatev1.FailureProviderError},   // the debit party is in an invalid state
	"17":         {StatusFailed, paygatev1.FailurePaymentDeclined}, // rule limited
	"21":         {StatusFailed, paygatev1.FailureProviderError},   // the initiator may not initiate this request
	"2001":       {StatusFailed, paygatev1.FailureProviderError},   // initiator name or security credential wrong
	"2006":       {StatusFailed, paygatev1.FailureInvalidAccount},  // the account status does not allow the transaction
	"2028":       {StatusFailed, paygatev1.FailureProviderError},   // not permitted by product assignment
	"2040":       {StatusFailed, paygatev1.FailureInvalidAccount},  // the recipient is not a registered M-PESA customer
	"8006":       {StatusFailed, paygatev1.FailureProviderError},   // the security credential is locked
	"SFC_IC0003": {StatusFailed, paygatev1.FailureInvalidAccount},  // the recipient's number is not on M-PESA
	"R000001":    {StatusFailed, paygatev1.FailurePaymentDeclined}, // reversal: already reversed
	"R000002":    {StatusFailed, paygatev1.FailureProviderError},   // reversal or status: the original transaction is unknown
}

func darajaMapCode(table map[string]darajaCode, code string) Result {
	if c, ok := table[code]; ok {
		return Result{Status: c.Status, Code: c.Code}
	}
	return Result{Status: StatusFailed, Code: paygatev1.FailureProviderError}
}

// ---- bounded map ----

// darajaBoundedMap is a map that forgets its oldest keys beyond max entries.
type darajaBoundedMap struct {
	mu    sync.Mutex
	max   int
	m     map[string]any
	order []string
}

func newDarajaBoundedMap(max int) *darajaBoundedMap {
	return &darajaBoundedMap{max: max, m: map[string]any{}}
}

func (b *darajaBoundedMap) get(k string) (any, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[k]
	return v, ok
}

func (b *darajaBoundedMap) put(k string, v any) {
	b.update(k, func(any, bool) any { return v })
}

func (b *darajaBoundedMap) update(k string, f func(old any, had bool) any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old, had := b.m[k]
	b.m[k] = f(old, had)
	if had {
		return
	}
	b.order = append(b.order, k)
	for len(b.order) > b.max {
		delete(b.m, b.order[0])
		b.order = b.order[1:]
	}
}
