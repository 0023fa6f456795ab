// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// The pawaPay adapter speaks pawaPay's Merchant API v2 (https://docs.pawapay.io/v2/). It is
// written from the published documentation and tested against test/fakepawapay, a fake built from
// the same documentation; docs/providers.md says how to configure it and what it maps.

// Base URLs of pawaPay's Merchant API: the sandbox and production differ only in the base URL and
// the API token. https://docs.pawapay.io/using_the_api (Where is the API?) and the servers of
// https://docs.pawapay.io/v2/api-reference/openapi_v2.yaml
const (
	PawapaySandboxURL    = "https://api.sandbox.pawapay.io"
	PawapayProductionURL = "https://api.pawapay.io"
)

const (
	// DefaultPawapayTimeout bounds each pawaPay call when PawapayConfig.Timeout is zero.
	DefaultPawapayTimeout = 10 * time.Second
	// maxPawapayBody bounds every pawaPay response body that is read.
	maxPawapayBody = 1 << 20
	// pawapayCustomerMessageMax and Min are the documented length limits of customerMessage
	// ("Note of 4 to 22 chars"). https://docs.pawapay.io/v2/api-reference/deposits/initiate-deposit
	pawapayCustomerMessageMin = 4
	pawapayCustomerMessageMax = 22
)

// Decimal places an amount may carry, as active configuration names them (decimalsInAmount).
// https://docs.pawapay.io/v2/api-reference/toolkit/active-configuration
const (
	// PawapayDecimalsAuto (the zero value) sends the amount with its trailing fractional zeros
	// removed ("1500.00" becomes "1500", "12.50" becomes "12.5") and lets pawaPay judge it: a
	// fractional amount to a provider that takes none is REJECTED with INVALID_AMOUNT.
	PawapayDecimalsAuto = ""
	// PawapayDecimalsNone: the provider takes whole amounts only; a fractional amount is refused
	// before it is sent (a FAILED Result with PAYMENT_DECLINED, as pawaPay's INVALID_AMOUNT maps).
	PawapayDecimalsNone = "NONE"
	// PawapayDecimalsTwoPlaces: up to two decimal places; formatted like PawapayDecimalsAuto.
	PawapayDecimalsTwoPlaces = "TWO_PLACES"
)

// Provider availability statuses. https://docs.pawapay.io/v2/api-reference/toolkit/availability
const (
	PawapayOperational = "OPERATIONAL" // open for processing
	PawapayDelayed     = "DELAYED"     // payouts are enqueued and processed later
	PawapayClosed      = "CLOSED"      // new requests are rejected
)

// Operation types, as active configuration and availability name them.
const (
	PawapayOpDeposit = "DEPOSIT"
	PawapayOpPayout  = "PAYOUT"
	PawapayOpRefund  = "REFUND"
)

// Callback kinds ParseCallback reports.
const (
	PawapayKindDeposit = "deposit"
	PawapayKindPayout  = "payout"
	PawapayKindRefund  = "refund"
)

// PawapayConfig configures the pawaPay adapter. One adapter serves one pawaPay provider (mobile
// money operator) code; a gateway with several operators has one adapter per operator.
type PawapayConfig struct {
	// BaseURL is PawapaySandboxURL or PawapayProductionURL (or a fake's URL in tests). It must be
	// https, except for loopback hosts; no credentials, query or fragment.
	BaseURL string
	// Token is the Merchant API token, sent as "Authorization: Bearer <token>". It never appears in
	// errors, logs or the config's printed form.
	// https://docs.pawapay.io/v2/docs/how_to_start
	Token string
	// Provider is the pawaPay provider code, e.g. VODACOM_TZA (https://docs.pawapay.io/v2/docs/providers).
	Provider string
	// Country is the ISO 3166-1 alpha-3 country of the provider, e.g. TZA (optional). It filters
	// active configuration, availability and wallet balances.
	Country string
	// Decimals is the decimalsInAmount of the provider (PawapayDecimalsAuto, None or TwoPlaces),
	// as ActiveConfiguration reports it.
	Decimals string
	// HTTPClient is used for the calls; nil means a client that does not follow redirects.
	HTTPClient *http.Client
	// Timeout bounds each call (request and reading the answer); 0 means DefaultPawapayTimeout.
	Timeout time.Duration
}

// String redacts the token, so that printing a config never leaks it.
func (c PawapayConfig) String() string {
	return fmt.Sprintf("PawapayConfig{BaseURL:%q Token:%s Provider:%q Country:%q Decimals:%q Timeout:%s}",
		c.BaseURL, redactUpstreamToken(c.Token), c.Provider, c.Country, c.Decimals, c.Timeout)
}

// GoString redacts the token for %#v as well.
func (c PawapayConfig) GoString() string { return c.String() }

// pawapayProviderCode is the shape of pawaPay provider codes: upper-case words joined by
// underscores, the last one the ISO alpha-3 country (VODACOM_TZA, MTN_MOMO_ZMB, AIRTEL_OAPI_ZMB).
var pawapayProviderCode = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*_[A-Z]{3}$`)

var pawapayCountryCode = regexp.MustCompile(`^[A-Z]{3}$`)

// Pawapay is the Provider backed by pawaPay's Merchant API v2. It is safe for concurrent use.
//
// Outcome mapping (Push, Disburse and Refund): ACCEPTED and DUPLICATE_IGNORED are PENDING (the
// attempt engine then asks by status query); REJECTED is FAILED with the mapped failure code, at
// HTTP 200 and also at HTTP 400/403 when the body carries pawaPay's failureReason (pawaPay did not
// take the request, so money did not move and will not). Authentication failures and UNKNOWN_ERROR
// ("do not assume failure") are errors, as are 401, 429, 5xx, timeouts, connection errors,
// malformed or oversized bodies and unknown statuses: the outcome is unknown and the caller asks by
// status query. Status queries: NOT_FOUND is ErrNotFound; FOUND maps data.status.
type Pawapay struct {
	base     string // BaseURL without trailing slash
	token    string
	provider string
	country  string
	decimals string
	timeout  time.Duration
	client   *http.Client
}

var (
	_ Provider = (*Pawapay)(nil)
	_ Refunder = (*Pawapay)(nil)
)

// NewPawapay validates cfg and returns the adapter.
func NewPawapay(cfg PawapayConfig) (*Pawapay, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return nil, errors.New("provider: pawaPay base URL is not a valid URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("provider: pawaPay base URL must be an absolute https URL")
	}
	if u.Scheme == "http" && !pawapayLoopback(u.Hostname()) {
		return nil, errors.New("provider: pawaPay base URL must be https (plain http is allowed for loopback test servers only)")
	}
	if u.User != nil {
		return nil, errors.New("provider: pawaPay base URL must not carry credentials (use the token)")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, errors.New("provider: pawaPay base URL must not have a query or fragment")
	}
	if cfg.Token == "" {
		return nil, errors.New("provider: pawaPay token is empty")
	}
	for i := 0; i < len(cfg.Token); i++ {
		if c := cfg.Token[i]; c <= ' ' || c >= 0x7f {
			return nil, errors.New("provider: pawaPay token contains whitespace or non-printable characters")
		}
	}
	if !pawapayProviderCode.MatchString(cfg.Provider) {
		return nil, fmt.Errorf("provider: pawaPay provider code %q is not of the form OPERATOR_CCC (e.g. VODACOM_TZA)", truncateUpstreamText(cfg.Provider))
	}
	if cfg.Country != "" {
		if !pawapayCountryCode.MatchString(cfg.Country) {
			return nil, fmt.Errorf("provider: pawaPay country %q is not an ISO 3166-1 alpha-3 code", truncateUpstreamText(cfg.Country))
		}
		if !strings.HasSuffix(cfg.Provider, "_"+cfg.Country) {
			return nil, fmt.Errorf("provider: pawaPay provider %s is not in country %s", cfg.Provider, cfg.Country)
		}
	}
	switch cfg.Decimals {
	case PawapayDecimalsAuto, PawapayDecimalsNone, PawapayDecimalsTwoPlaces:
	default:
		return nil, fmt.Errorf("provider: pawaPay decimals %q: want %q, %q or empty", truncateUpstreamText(cfg.Decimals), PawapayDecimalsNone, PawapayDecimalsTwoPlaces)
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("provider: pawaPay timeout is negative")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultPawapayTimeout
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{
			// A redirect is not part of the API; surface it as an unexpected answer rather than
			// re-sending a money-moving request somewhere else.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return &Pawapay{
		base:     strings.TrimRight(u.String(), "/"),
		token:    cfg.Token,
		provider: cfg.Provider,
		country:  cfg.Country,
		decimals: cfg.Decimals,
		timeout:  timeout,
		client:   client,
	}, nil
}

func pawapayLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// String identifies the adapter without its token.
func (p *Pawapay) String() string { return "provider.Pawapay(" + p.base + " " + p.provider + ")" }

// GoString redacts the token for %#v.
func (p *Pawapay) GoString() string { return p.String() }

// ---- ids ----

// pawaPay asks for a UUIDv4 depositId (payoutId, refundId) generated and stored before the call,
// so that a request whose answer was lost can be found by status check and re-sent with the same
// id (pawaPay ignores it as DUPLICATE_IGNORED). https://docs.pawapay.io/v2/docs/deposits
// Paygate derives the id from the attempt reference, so it is known before the call without
// storing a second key: the first 16 bytes of SHA-256 over a domain-separated reference, with the
// RFC 9562 version (4) and variant (10xx) bits set. The domain separates deposits, payouts and
// refunds, so one reference never names two operations.
const (
	pawapayDepositDomain = "paygate/pawapay/deposit/v1\x00"
	pawapayPayoutDomain  = "paygate/pawapay/payout/v1\x00"
	pawapayRefundDomain  = "paygate/pawapay/refund/v1\x00"
)

func pawapayUUID(domain, reference string) string {
	sum := sha256.Sum256([]byte(domain + reference))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // variant 10xx
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// PawapayDepositID is the depositId of the push attempt with this reference.
func PawapayDepositID(reference string) string { return pawapayUUID(pawapayDepositDomain, reference) }

// PawapayPayoutID is the payoutId of the disbursement with this reference.
func PawapayPayoutID(reference string) string { return pawapayUUID(pawapayPayoutDomain, reference) }

// PawapayRefundID is the refundId of the refund with this reference.
func PawapayRefundID(reference string) string { return pawapayUUID(pawapayRefundDomain, reference) }

// DepositID is PawapayDepositID.
func (p *Pawapay) DepositID(reference string) string { return PawapayDepositID(reference) }

// PayoutID is PawapayPayoutID.
func (p *Pawapay) PayoutID(reference string) string { return PawapayPayoutID(reference) }

// RefundID is PawapayRefundID.
func (p *Pawapay) RefundID(reference string) string { return PawapayRefundID(reference) }

// ---- failure codes ----

// pawapayFailureCodes maps pawaPay's failure codes (https://docs.pawapay.io/v2/docs/failure_codes,
// the sandbox numbers of https://docs.pawapay.io/v2/docs/test_numbers) to Paygate's. A code that
// maps to itself is passed through: it has no Paygate equivalent and names a cause on the
// merchant's side (the pawaPay wallet, a refund's state) that the operator must see as it is. A
// code missing from the table is passed through too; a FAILED status without a code is
// PROVIDER_ERROR. docs/providers.md shows the same table.
var pawapayFailureCodes = map[string]paygatev1.FailureCode{
	// Transaction failures (final FAILED status, in status checks and callbacks).
	"PAYMENT_NOT_APPROVED":        paygatev1.FailureCustomerCancelled, // the customer did not approve (declined or let the PIN prompt lapse)
	"INSUFFICIENT_BALANCE":        paygatev1.FailureInsufficientFunds,
	"PAYER_NOT_FOUND":             paygatev1.FailureInvalidAccount,
	"RECIPIENT_NOT_FOUND":         paygatev1.FailureInvalidAccount,
	"PAYER_LIMIT_REACHED":         paygatev1.FailurePaymentDeclined,
	"WALLET_LIMIT_REACHED":        paygatev1.FailurePaymentDeclined,
	"PAYMENT_IN_PROGRESS":         paygatev1.FailurePaymentDeclined, // another payment of the customer is in progress
	"UNSPECIFIED_FAILURE":         paygatev1.FailureProviderError,
	"UNKNOWN_ERROR":               paygatev1.FailureProviderError, // as a final FAILED status only; at initiation it is an unknown outcome
	"MANUALLY_CANCELLED":          "MANUALLY_CANCELLED",
	"PAWAPAY_WALLET_OUT_OF_FUNDS": "PAWAPAY_WALLET_OUT_OF_FUNDS",
	// Refund failures (initiation or final status).
	"DEPOSIT_ALREADY_REFUNDED": "DEPOSIT_ALREADY_REFUNDED",
	"AMOUNT_TOO_LARGE":         "AMOUNT_TOO_LARGE",
	"REFUND_IN_PROGRESS":       "REFUND_IN_PROGRESS",
	"NOT_FOUND":                "NOT_FOUND",     // the refunded deposit is unknown
	"INVALID_STATE":            "INVALID_STATE", // the refunded deposit is not COMPLETED
	// Initiation rejections (REJECTED): pawaPay did not take the request.
	"INVALID_PHONE_NUMBER":             paygatev1.FailureInvalidAccount,
	"INVALID_AMOUNT":                   paygatev1.FailurePaymentDeclined,
	"AMOUNT_OUT_OF_BOUNDS":             paygatev1.FailurePaymentDeclined,
	"INVALID_CURRENCY":                 paygatev1.FailurePaymentDeclined,
	"INVALID_PROVIDER":                 paygatev1.FailurePaymentDeclined,
	"PROVIDER_TEMPORARILY_UNAVAILABLE": paygatev1.FailurePaymentDeclined,
	"DEPOSITS_NOT_ALLOWED":             paygatev1.FailurePaymentDeclined,
	"PAYOUTS_NOT_ALLOWED":              paygatev1.FailurePaymentDeclined,
	"REFUNDS_NOT_ALLOWED":              paygatev1.FailurePaymentDeclined,
	// Technical failures (HTTP 400): the request did not follow the API; a Paygate defect.
	"INVALID_INPUT":            paygatev1.FailureProviderError,
	"MISSING_PARAMETER":        paygatev1.FailureProviderError,
	"UNSUPPORTED_PARAMETER":    paygatev1.FailureProviderError,
	"INVALID_PARAMETER":        paygatev1.FailureProviderError,
	"DUPLICATE_METADATA_FIELD": paygatev1.FailureProviderError,
}

// pawapayUnknownOutcome are the rejection codes that do not prove the request was refused for
// good: authentication and authorisation failures (a configuration error, HTTP 401/403) and
// UNKNOWN_ERROR, which the failure codes page says not to take as a failure.
// https://docs.pawapay.io/v2/docs/failure_codes
var pawapayUnknownOutcome = map[string]bool{
	"NO_AUTHENTICATION":    true,
	"AUTHENTICATION_ERROR": true,
	"AUTHORISATION_ERROR":  true,
	"HTTP_SIGNATURE_ERROR": true,
	"UNKNOWN_ERROR":        true,
}

// PawapayFailureCode maps a pawaPay failure code to Paygate's (see pawapayFailureCodes): "" is
// PROVIDER_ERROR, an unknown code is passed through.
func PawapayFailureCode(code string) paygatev1.FailureCode {
	if code == "" {
		return paygatev1.FailureProviderError
	}
	if c, ok := pawapayFailureCodes[code]; ok {
		return c
	}
	return paygatev1.FailureCode(code)
}

// PawapayError is the error for an answer outside the API's definitive ones (401/403, 429, 5xx,
// other statuses, UNKNOWN_ERROR): the outcome of an initiation is unknown.
type PawapayError struct {
	Method     string
	Path       string // the route, with {depositId}-style placeholders instead of ids
	StatusCode int
	Code       string // failureReason.failureCode, if the body had one
	Message    string // failureReason.failureMessage, truncated, phone numbers masked
}

func (e *PawapayError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider: pawaPay %s %s answered HTTP %d", e.Method, e.Path, e.StatusCode)
	if e.Unauthorized() {
		b.WriteString(" (check the pawaPay token and its permissions)")
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " code %q", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	return b.String()
}

// Unauthorized reports whether pawaPay refused the credentials (a configuration error).
func (e *PawapayError) Unauthorized() bool {
	switch e.Code {
	case "NO_AUTHENTICATION", "AUTHENTICATION_ERROR", "AUTHORISATION_ERROR", "HTTP_SIGNATURE_ERROR":
		return true
	}
	return e.StatusCode == http.StatusUnauthorized
}

// ---- wire types ----

type pawapayAccount struct {
	PhoneNumber string `json:"phoneNumber"`
	Provider    string `json:"provider"`
}

type pawapayParty struct {
	Type           string         `json:"type"`
	AccountDetails pawapayAccount `json:"accountDetails"`
}

// https://docs.pawapay.io/v2/api-reference/deposits/initiate-deposit
type pawapayDepositRequest struct {
	DepositID         string       `json:"depositId"`
	Amount            string       `json:"amount"`
	Currency          string       `json:"currency"`
	Payer             pawapayParty `json:"payer"`
	ClientReferenceID string       `json:"clientReferenceId,omitempty"`
	CustomerMessage   string       `json:"customerMessage,omitempty"`
}

// https://docs.pawapay.io/v2/api-reference/payouts/initiate-payout
type pawapayPayoutRequest struct {
	PayoutID          string       `json:"payoutId"`
	Amount            string       `json:"amount"`
	Currency          string       `json:"currency"`
	Recipient         pawapayParty `json:"recipient"`
	ClientReferenceID string       `json:"clientReferenceId,omitempty"`
}

// https://docs.pawapay.io/v2/api-reference/refunds/initiate-refund (amount and currency may be
// left out for a full refund: https://docs.pawapay.io/v2/docs/refunds).
type pawapayRefundRequest struct {
	RefundID          string `json:"refundId"`
	DepositID         string `json:"depositId"`
	Amount            string `json:"amount,omitempty"`
	Currency          string `json:"currency,omitempty"`
	ClientReferenceID string `json:"clientReferenceId,omitempty"`
}

type pawapayFailure struct {
	FailureCode    string `json:"failureCode"`
	FailureMessage string `json:"failureMessage"`
}

// pawapayInitiation is the answer to an initiation, and (failureReason only) the body of other
// error answers.
type pawapayInitiation struct {
	DepositID     string          `json:"depositId"`
	PayoutID      string          `json:"payoutId"`
	RefundID      string          `json:"refundId"`
	Status        string          `json:"status"`
	Created       string          `json:"created"`
	FailureReason *pawapayFailure `json:"failureReason"`
}

// pawapayPayment is a deposit, payout or refund as a status check (data) or a callback shows it.
// https://docs.pawapay.io/v2/api-reference/deposits/check-deposit-status
// https://docs.pawapay.io/v2/api-reference/deposits/deposit-callback
type pawapayPayment struct {
	DepositID             string          `json:"depositId"`
	PayoutID              string          `json:"payoutId"`
	RefundID              string          `json:"refundId"`
	Status                string          `json:"status"`
	Amount                string          `json:"amount"`
	Currency              string          `json:"currency"`
	ClientReferenceID     string          `json:"clientReferenceId"`
	ProviderTransactionID string          `json:"providerTransactionId"`
	FailureReason         *pawapayFailure `json:"failureReason"`
}

func (p pawapayPayment) id(kind string) string {
	switch kind {
	case PawapayKindPayout:
		return p.PayoutID
	case PawapayKindRefund:
		return p.RefundID
	}
	return p.DepositID
}

type pawapayStatusAnswer struct {
	Status string          `json:"status"`
	Data   *pawapayPayment `json:"data"`
}

// pawapayOp names one of the three money-moving operations.
type pawapayOp struct {
	kind       string // PawapayKind*
	path       string // collection path
	statusPath string // route of the status check, for errors
}

var (
	pawapayDeposits = pawapayOp{PawapayKindDeposit, "/v2/deposits", "/v2/deposits/{depositId}"}
	pawapayPayouts  = pawapayOp{PawapayKindPayout, "/v2/payouts", "/v2/payouts/{payoutId}"}
	pawapayRefunds  = pawapayOp{PawapayKindRefund, "/v2/refunds", "/v2/refunds/{refundId}"}
)

func (a pawapayInitiation) id(kind string) string {
	return pawapayPayment{DepositID: a.DepositID, PayoutID: a.PayoutID, RefundID: a.RefundID}.id(kind)
}

// ---- Provider ----

// Capabilities implements Provider: pawaPay ignores a repeated depositId (payoutId, refundId)
// with DUPLICATE_IGNORED ("This API call is idempotent"), and status checks give the final
// answer, so results do not depend on callbacks.
// https://docs.pawapay.io/v2/api-reference/deposits/initiate-deposit
func (p *Pawapay) Capabilities() Capabilities { return Capabilities{Deduplicates: true} }

// Push implements Provider: POST /v2/deposits with depositId = DepositID(req.Reference), the
// amount formatted for pawaPay (see PawapayDecimalsAuto), payer MMO {phone without '+', the
// configured provider}, clientReferenceId = req.Reference and customerMessage from
// req.Description. req.Gateway and req.CallbackURL are not sent: the adapter's provider code is
// configured, and pawaPay's callback URLs are configured per account in its dashboard.
// A request the adapter cannot send (malformed phone or amount) is a FAILED Result without a call.
// https://docs.pawapay.io/v2/api-reference/deposits/initiate-deposit
func (p *Pawapay) Push(ctx context.Context, req PushRequest) (Result, error) {
	if req.Reference == "" {
		return Result{}, errors.New("provider: pawaPay push with an empty reference")
	}
	id := PawapayDepositID(req.Reference)
	phone, res, ok := pawapayPhone(req.Phone, id)
	if !ok {
		return res, nil
	}
	amount, res, ok := p.amount(req.Amount, id)
	if !ok {
		return res, nil
	}
	return p.create(ctx, pawapayDeposits, id, pawapayDepositRequest{
		DepositID:         id,
		Amount:            amount,
		Currency:          req.Currency,
		Payer:             pawapayParty{Type: "MMO", AccountDetails: pawapayAccount{PhoneNumber: phone, Provider: p.provider}},
		ClientReferenceID: req.Reference,
		CustomerMessage:   PawapayCustomerMessage(req.Description),
	})
}

// PushStatus implements Provider: GET /v2/deposits/{depositId}.
// https://docs.pawapay.io/v2/api-reference/deposits/check-deposit-status
func (p *Pawapay) PushStatus(ctx context.Context, req PushRequest) (Result, error) {
	if req.Reference == "" {
		return Result{}, errors.New("provider: pawaPay push status with an empty reference")
	}
	return p.status(ctx, pawapayDeposits, PawapayDepositID(req.Reference))
}

// Disburse implements Provider: POST /v2/payouts with payoutId = PayoutID(req.Reference) and
// recipient MMO {phone without '+', the configured provider}. pawaPay debits the merchant's
// pawaPay wallet of the provider's country.
// https://docs.pawapay.io/v2/api-reference/payouts/initiate-payout
func (p *Pawapay) Disburse(ctx context.Context, req DisbursementRequest) (Result, error) {
	if req.Reference == "" {
		return Result{}, errors.New("provider: pawaPay disbursement with an empty reference")
	}
	id := PawapayPayoutID(req.Reference)
	phone, res, ok := pawapayPhone(req.Phone, id)
	if !ok {
		return res, nil
	}
	amount, res, ok := p.amount(req.Amount, id)
	if !ok {
		return res, nil
	}
	return p.create(ctx, pawapayPayouts, id, pawapayPayoutRequest{
		PayoutID:          id,
		Amount:            amount,
		Currency:          req.Currency,
		Recipient:         pawapayParty{Type: "MMO", AccountDetails: pawapayAccount{PhoneNumber: phone, Provider: p.provider}},
		ClientReferenceID: req.Reference,
	})
}

// DisbursementStatus implements Provider: GET /v2/payouts/{payoutId}. ENQUEUED (the provider's
// payouts are DELAYED) is PENDING.
// https://docs.pawapay.io/v2/api-reference/payouts/check-payout-status
func (p *Pawapay) DisbursementStatus(ctx context.Context, req DisbursementRequest) (Result, error) {
	if req.Reference == "" {
		return Result{}, errors.New("provider: pawaPay disbursement status with an empty reference")
	}
	return p.status(ctx, pawapayPayouts, PawapayPayoutID(req.Reference))
}

// RefundScope implements Refunder: pawaPay refunds all or part of a COMPLETED deposit, in several
// refunds up to its amount (https://docs.pawapay.io/v2/docs/refunds, "Partial refund", "Multiple
// refunds").
func (p *Pawapay) RefundScope() RefundScope { return RefundsPartial }

// Refund implements Refunder: POST /v2/refunds with refundId = PawapayRefundID(req.Reference),
// depositId = PawapayDepositID(req.Payment) (the deposit of the push attempt that collected the
// money) and clientReferenceId = req.Reference. A partial refund carries its amount (formatted
// like Push's) and currency; a full one (req.Full) leaves both out, as the refunds guide's first
// request does, and pawaPay refunds the deposit's amount. The Result maps like Push's; the
// refund-specific failures (DEPOSIT_ALREADY_REFUNDED, AMOUNT_TOO_LARGE, REFUND_IN_PROGRESS,
// NOT_FOUND, INVALID_STATE) are FAILED with the code passed through, at initiation or as the
// final status. req.Phone is not sent: pawaPay pays the deposit's payer.
// https://docs.pawapay.io/v2/api-reference/refunds/initiate-refund
func (p *Pawapay) Refund(ctx context.Context, req RefundRequest) (Result, error) {
	if req.Reference == "" || req.Payment == "" {
		return Result{}, errors.New("provider: pawaPay refund with an empty reference or payment reference")
	}
	id := PawapayRefundID(req.Reference)
	body := pawapayRefundRequest{RefundID: id, DepositID: PawapayDepositID(req.Payment), ClientReferenceID: req.Reference}
	if req.PaymentProvider != "" && !strings.EqualFold(req.PaymentProvider, body.DepositID) {
		// The push's acceptance named another depositId than its reference derives: refunding
		// the derived one could refund someone else's deposit.
		return Result{Status: StatusFailed, ProviderReference: id, Code: paygatev1.FailureProviderError,
			Message: "the payment's depositId is not the one its attempt reference derives; refund not sent"}, nil
	}
	if !req.Full {
		if req.Amount == "" {
			return Result{}, errors.New("provider: pawaPay partial refund without an amount")
		}
		amount, res, ok := p.amount(req.Amount, id)
		if !ok {
			return res, nil
		}
		body.Amount, body.Currency = amount, req.Currency
	}
	return p.create(ctx, pawapayRefunds, id, body)
}

// RefundStatus implements Refunder: GET /v2/refunds/{refundId}, mapped like PushStatus.
// https://docs.pawapay.io/v2/api-reference/refunds/check-refund-status
func (p *Pawapay) RefundStatus(ctx context.Context, req RefundRequest) (Result, error) {
	if req.Reference == "" {
		return Result{}, errors.New("provider: pawaPay refund status with an empty reference")
	}
	return p.status(ctx, pawapayRefunds, PawapayRefundID(req.Reference))
}

// create sends an initiation and maps its answer.
func (p *Pawapay) create(ctx context.Context, op pawapayOp, id string, body any) (Result, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return Result{}, fmt.Errorf("provider: encoding pawaPay %s request: %w", op.kind, err)
	}
	status, data, err := p.do(ctx, http.MethodPost, op.path, op.path, payload)
	if err != nil {
		return Result{}, err
	}
	var a pawapayInitiation
	decodeErr := json.Unmarshal(data, &a)
	switch status {
	case http.StatusOK, http.StatusCreated, http.StatusAccepted:
		if decodeErr != nil {
			return Result{}, fmt.Errorf("provider: malformed pawaPay answer to POST %s (HTTP %d): %w", op.path, status, decodeErr)
		}
		if got := a.id(op.kind); got != "" && got != id {
			return Result{}, fmt.Errorf("provider: pawaPay answered POST %s for %s %s, sent %s", op.path, op.kind, truncateUpstreamText(got), id)
		}
		switch a.Status {
		case "ACCEPTED", "DUPLICATE_IGNORED":
			// DUPLICATE_IGNORED: pawaPay already has this id (an earlier send whose answer was
			// lost); its state is learnt by status check, like an accepted one's.
			return Result{Status: StatusPending, ProviderReference: id}, nil
		case "REJECTED":
			return p.rejected(http.MethodPost, op.path, status, id, a.FailureReason)
		}
		return Result{}, fmt.Errorf("provider: pawaPay answered POST %s with unknown status %q", op.path, truncateUpstreamText(a.Status))
	case http.StatusBadRequest, http.StatusForbidden:
		// pawaPay's technical failures (400) and the ..._NOT_ALLOWED rejections (403) refuse the
		// request: nothing was created. Only a body in pawaPay's shape proves it; a bare 400 from a
		// proxy says nothing about whether pawaPay saw the request.
		if decodeErr == nil && a.FailureReason != nil && a.FailureReason.FailureCode != "" && (a.Status == "" || a.Status == "REJECTED") {
			return p.rejected(http.MethodPost, op.path, status, id, a.FailureReason)
		}
	}
	return Result{}, pawapayStatusError(http.MethodPost, op.path, status, data)
}

func (p *Pawapay) rejected(method, path string, status int, id string, f *pawapayFailure) (Result, error) {
	if f == nil {
		f = &pawapayFailure{}
	}
	if pawapayUnknownOutcome[f.FailureCode] {
		return Result{}, &PawapayError{Method: method, Path: path, StatusCode: status, Code: f.FailureCode, Message: pawapayText(f.FailureMessage)}
	}
	return Result{Status: StatusFailed, ProviderReference: id, Code: PawapayFailureCode(f.FailureCode), Message: pawapayText(f.FailureMessage)}, nil
}

// status sends a status check and maps its answer.
func (p *Pawapay) status(ctx context.Context, op pawapayOp, id string) (Result, error) {
	status, data, err := p.do(ctx, http.MethodGet, op.path+"/"+id, op.statusPath, nil)
	if err != nil {
		return Result{}, err
	}
	if status != http.StatusOK {
		return Result{}, pawapayStatusError(http.MethodGet, op.statusPath, status, data)
	}
	var a pawapayStatusAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return Result{}, fmt.Errorf("provider: malformed pawaPay answer to GET %s: %w", op.statusPath, err)
	}
	switch a.Status {
	case "NOT_FOUND":
		return Result{}, ErrNotFound
	case "FOUND":
	default:
		return Result{}, fmt.Errorf("provider: pawaPay answered GET %s with unknown status %q", op.statusPath, truncateUpstreamText(a.Status))
	}
	if a.Data == nil {
		return Result{}, fmt.Errorf("provider: pawaPay answered GET %s FOUND without data", op.statusPath)
	}
	if got := a.Data.id(op.kind); got != "" && got != id {
		return Result{}, fmt.Errorf("provider: pawaPay answered GET %s for %s %s, asked about %s", op.statusPath, op.kind, truncateUpstreamText(got), id)
	}
	return pawapayResult(id, *a.Data)
}

// pawapayPaymentStatus maps a payment's status: ACCEPTED, ENQUEUED (payouts and refunds while the
// provider is DELAYED), PROCESSING and IN_RECONCILIATION (pawaPay is settling the outcome with the
// provider) are PENDING; COMPLETED and FAILED are final. Anything else is not guessed at.
// https://docs.pawapay.io/v2/api-reference/deposits/check-deposit-status
// https://docs.pawapay.io/v2/api-reference/payouts/check-payout-status
func pawapayPaymentStatus(s string) (Status, bool) {
	switch s {
	case "ACCEPTED", "ENQUEUED", "PROCESSING", "IN_RECONCILIATION":
		return StatusPending, true
	case "COMPLETED":
		return StatusSuccess, true
	case "FAILED":
		return StatusFailed, true
	}
	return "", false
}

func pawapayResult(id string, d pawapayPayment) (Result, error) {
	st, ok := pawapayPaymentStatus(d.Status)
	if !ok {
		return Result{}, fmt.Errorf("provider: unknown pawaPay payment status %q", truncateUpstreamText(d.Status))
	}
	res := Result{Status: st, ProviderReference: id}
	if st == StatusFailed {
		var f pawapayFailure
		if d.FailureReason != nil {
			f = *d.FailureReason
		}
		res.Code, res.Message = PawapayFailureCode(f.FailureCode), pawapayText(f.FailureMessage)
	}
	return res, nil
}

// do sends one request and reads at most maxPawapayBody bytes of the answer. route names the
// request in errors (ids replaced by placeholders).
func (p *Pawapay) do(ctx context.Context, method, path, route string, payload []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, body)
	if err != nil {
		return 0, nil, fmt.Errorf("provider: building pawaPay request %s %s: %w", method, route, err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Accept", "application/json")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		// *url.Error carries the method, the URL (no credentials: NewPawapay refuses them; ids, no
		// phone numbers) and the cause; the token is only in a header.
		return 0, nil, fmt.Errorf("provider: pawaPay %s %s: %w", method, route, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxPawapayBody+1))
	if err != nil {
		return 0, nil, fmt.Errorf("provider: reading pawaPay answer to %s %s (HTTP %d): %w", method, route, resp.StatusCode, err)
	}
	if len(data) > maxPawapayBody {
		return 0, nil, fmt.Errorf("provider: pawaPay answer to %s %s (HTTP %d) is larger than %d bytes", method, route, resp.StatusCode, maxPawapayBody)
	}
	return resp.StatusCode, data, nil
}

func pawapayStatusError(method, route string, status int, body []byte) error {
	e := &PawapayError{Method: method, Path: route, StatusCode: status}
	var a pawapayInitiation
	if json.Unmarshal(body, &a) == nil && a.FailureReason != nil {
		e.Code, e.Message = truncateUpstreamText(a.FailureReason.FailureCode), pawapayText(a.FailureReason.FailureMessage)
	}
	return e
}

// pawapayDigits finds runs of digits long enough to be phone numbers.
var pawapayDigits = regexp.MustCompile(`\+?[0-9]{7,}`)

// pawapayText prepares provider text for errors and Results: phone numbers masked (all but the
// last three digits), truncated.
func pawapayText(s string) string {
	s = pawapayDigits.ReplaceAllStringFunc(s, pawapayMaskPhone)
	return truncateUpstreamText(s)
}

// pawapayMaskPhone hides all but the last three digits of a phone number, for logs and errors.
func pawapayMaskPhone(phone string) string {
	digits := strings.TrimPrefix(phone, "+")
	if len(digits) <= 3 {
		return strings.Repeat("*", len(digits))
	}
	return strings.Repeat("*", len(digits)-3) + digits[len(digits)-3:]
}

// pawapayPhone turns an E.164 number into pawaPay's form (country code and number, digits only,
// no '+'). https://docs.pawapay.io/v2/api-reference/deposits/initiate-deposit
// A number that cannot be one is not sent: a FAILED Result with INVALID_ACCOUNT (what pawaPay's
// INVALID_PHONE_NUMBER maps to).
func pawapayPhone(phone, id string) (string, Result, bool) {
	digits := strings.TrimPrefix(phone, "+")
	ok := len(digits) >= 8 && len(digits) <= 15 && digits[0] != '0'
	for i := 0; ok && i < len(digits); i++ {
		ok = digits[i] >= '0' && digits[i] <= '9'
	}
	if !ok {
		return "", Result{Status: StatusFailed, ProviderReference: id, Code: paygatev1.FailureInvalidAccount,
			Message: "not sent to pawaPay: the phone number is not an E.164 number"}, false
	}
	return digits, Result{}, true
}

// amount formats a Paygate amount for pawaPay, or says why it cannot be sent (a FAILED Result).
func (p *Pawapay) amount(amount, id string) (string, Result, bool) {
	out, err := PawapayAmount(amount, p.decimals)
	if err != nil {
		code := paygatev1.FailureProviderError // a malformed amount is Paygate's defect
		if errors.Is(err, errPawapayFraction) {
			code = paygatev1.FailurePaymentDeclined // what pawaPay's INVALID_AMOUNT maps to
		}
		return "", Result{Status: StatusFailed, ProviderReference: id, Code: code, Message: "not sent to pawaPay: " + err.Error()}, false
	}
	return out, Result{}, true
}

var errPawapayFraction = errors.New("the provider takes whole amounts only")

// PawapayAmount formats a decimal amount as pawaPay accepts it: no sign, no leading zeros, at
// most 18 integer digits and two decimal places, trailing fractional zeros removed ("1500.00" is
// "1500", "12.50" is "12.5"). With decimals PawapayDecimalsNone a fractional amount is an error.
// https://docs.pawapay.io/v2/api-reference/deposits/initiate-deposit (amount)
func PawapayAmount(amount, decimals string) (string, error) {
	whole, frac, dot := strings.Cut(amount, ".")
	if whole == "" || (dot && frac == "") || !pawapayAllDigits(whole) || !pawapayAllDigits(frac) {
		return "", fmt.Errorf("amount %q is not a positive decimal", truncateUpstreamText(amount))
	}
	whole = strings.TrimLeft(whole, "0")
	if whole == "" {
		whole = "0"
	}
	frac = strings.TrimRight(frac, "0")
	switch {
	case whole == "0" && frac == "":
		return "", errors.New("amount is zero")
	case len(whole) > 18:
		return "", fmt.Errorf("amount %q has more than 18 integer digits", truncateUpstreamText(amount))
	case len(frac) > 2:
		return "", fmt.Errorf("amount %q has more than two decimal places", truncateUpstreamText(amount))
	case frac != "" && decimals == PawapayDecimalsNone:
		return "", fmt.Errorf("amount %s: %w", amount, errPawapayFraction)
	case frac != "":
		return whole + "." + frac, nil
	}
	return whole, nil
}

func pawapayAllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// PawapayCustomerMessage makes a customerMessage from a description: ASCII letters, digits and
// single spaces only (what every provider can show; other characters are dropped), at most 22
// characters, cut at a word boundary where one is near. A result shorter than 4 characters is ""
// (the field is left out). The documented limit is 4 to 22 characters.
// https://docs.pawapay.io/v2/api-reference/deposits/initiate-deposit (customerMessage)
func PawapayCustomerMessage(description string) string {
	var b strings.Builder
	space := false
	for _, r := range description {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
		case r == ' ' || r == '\t' || r == '\n' || r == '-' || r == '_' || r == '/' || r == '.' || r == ',':
			space = true
		}
	}
	s := b.String()
	if len(s) > pawapayCustomerMessageMax {
		cut := s[:pawapayCustomerMessageMax]
		if i := strings.LastIndexByte(cut, ' '); i >= pawapayCustomerMessageMax-8 && s[pawapayCustomerMessageMax] != ' ' {
			cut = cut[:i]
		}
		s = strings.TrimRight(cut, " ")
	}
	if len(s) < pawapayCustomerMessageMin {
		return ""
	}
	return s
}

// ---- toolkit and finances ----

// PawapayOperationConfig is one operation type's configuration for a provider and currency.
type PawapayOperationConfig struct {
	MinAmount, MaxAmount string // decimal strings
	Decimals             string // PawapayDecimalsNone or PawapayDecimalsTwoPlaces
	Status               string // PawapayOperational, PawapayDelayed or PawapayClosed
	CallbackURL          string // the callback URL configured for the operation type, if shown
}

// PawapayCurrencyConfig is a provider's configuration in one currency.
type PawapayCurrencyConfig struct {
	Currency string
	// Operations by operation type (PawapayOpDeposit, PawapayOpPayout, PawapayOpRefund).
	Operations map[string]PawapayOperationConfig
}

// PawapayActiveConfiguration is the configured provider's entry in pawaPay's active configuration.
type PawapayActiveConfiguration struct {
	Country  string
	Provider string
	// Currencies the provider operates in (usually one).
	Currencies []PawapayCurrencyConfig
	// SignedCallbacks: pawaPay signs callbacks (verify them with VerifyCallback).
	SignedCallbacks bool
	// SignedRequestsOnly: pawaPay accepts only signed financial requests, which this adapter
	// does not make.
	SignedRequestsOnly bool
}

// Limits returns the configuration of one operation type in one currency.
func (c PawapayActiveConfiguration) Limits(currency, operation string) (PawapayOperationConfig, bool) {
	for _, cc := range c.Currencies {
		if cc.Currency == currency {
			oc, ok := cc.Operations[operation]
			return oc, ok
		}
	}
	return PawapayOperationConfig{}, false
}

type pawapayOpConf struct {
	OperationType    string `json:"operationType"`
	MinAmount        string `json:"minAmount"`
	MaxAmount        string `json:"maxAmount"`
	DecimalsInAmount string `json:"decimalsInAmount"`
	Status           string `json:"status"`
	CallbackURL      string `json:"callbackUrl"`
}

// ActiveConfiguration reads GET /v2/active-conf (for country, or the configured Country when
// country is "") and returns the configured provider's entry: per currency and operation type,
// the transaction limits, the decimals allowed and the status.
// https://docs.pawapay.io/v2/api-reference/toolkit/active-configuration
func (p *Pawapay) ActiveConfiguration(ctx context.Context, country string) (PawapayActiveConfiguration, error) {
	if country == "" {
		country = p.country
	}
	path := "/v2/active-conf"
	if country != "" {
		path += "?country=" + url.QueryEscape(country)
	}
	var a struct {
		SignatureConfiguration struct {
			SignedRequestsOnly bool `json:"signedRequestsOnly"`
			SignedCallbacks    bool `json:"signedCallbacks"`
		} `json:"signatureConfiguration"`
		Countries []struct {
			Country   string `json:"country"`
			Providers []struct {
				Provider   string `json:"provider"`
				Currencies []struct {
					Currency       string          `json:"currency"`
					OperationTypes json.RawMessage `json:"operationTypes"`
				} `json:"currencies"`
			} `json:"providers"`
		} `json:"countries"`
	}
	if err := p.getJSON(ctx, path, "/v2/active-conf", &a); err != nil {
		return PawapayActiveConfiguration{}, err
	}
	for _, c := range a.Countries {
		for _, pr := range c.Providers {
			if pr.Provider != p.provider {
				continue
			}
			out := PawapayActiveConfiguration{
				Country: c.Country, Provider: pr.Provider,
				SignedCallbacks:    a.SignatureConfiguration.SignedCallbacks,
				SignedRequestsOnly: a.SignatureConfiguration.SignedRequestsOnly,
			}
			for _, cur := range pr.Currencies {
				ops, err := pawapayOperationTypes(cur.OperationTypes)
				if err != nil {
					return PawapayActiveConfiguration{}, fmt.Errorf("provider: pawaPay active configuration of %s %s: %w", p.provider, cur.Currency, err)
				}
				out.Currencies = append(out.Currencies, PawapayCurrencyConfig{Currency: cur.Currency, Operations: ops})
			}
			return out, nil
		}
	}
	return PawapayActiveConfiguration{}, fmt.Errorf("provider: pawaPay active configuration has no provider %s (is it enabled on the account?)", p.provider)
}

// pawapayOperationTypes decodes operationTypes: an object keyed by operation type, or a list of
// entries that name their operationType.
func pawapayOperationTypes(raw json.RawMessage) (map[string]PawapayOperationConfig, error) {
	out := map[string]PawapayOperationConfig{}
	conv := func(c pawapayOpConf) PawapayOperationConfig {
		return PawapayOperationConfig{MinAmount: c.MinAmount, MaxAmount: c.MaxAmount, Decimals: c.DecimalsInAmount, Status: c.Status, CallbackURL: c.CallbackURL}
	}
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return out, nil
	case raw[0] == '[':
		var list []pawapayOpConf
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		for _, c := range list {
			out[c.OperationType] = conv(c)
		}
	default:
		var m map[string]pawapayOpConf
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		for k, c := range m {
			out[k] = conv(c)
		}
	}
	return out, nil
}

// PawapayAvailability is whether the configured provider is processing, per operation type.
type PawapayAvailability struct {
	Country  string
	Provider string
	// Operations maps PawapayOpDeposit, PawapayOpPayout, ... to PawapayOperational,
	// PawapayDelayed or PawapayClosed.
	Operations map[string]string
}

// Availability reads GET /v2/availability (filtered by the configured Country, if any) and returns
// the configured provider's status per operation type.
// https://docs.pawapay.io/v2/api-reference/toolkit/availability
func (p *Pawapay) Availability(ctx context.Context) (PawapayAvailability, error) {
	path := "/v2/availability"
	if p.country != "" {
		path += "?country=" + url.QueryEscape(p.country)
	}
	var a []struct {
		Country   string `json:"country"`
		Providers []struct {
			Provider       string `json:"provider"`
			OperationTypes []struct {
				OperationType string `json:"operationType"`
				Status        string `json:"status"`
			} `json:"operationTypes"`
		} `json:"providers"`
	}
	if err := p.getJSON(ctx, path, "/v2/availability", &a); err != nil {
		return PawapayAvailability{}, err
	}
	for _, c := range a {
		for _, pr := range c.Providers {
			if pr.Provider != p.provider {
				continue
			}
			out := PawapayAvailability{Country: c.Country, Provider: pr.Provider, Operations: map[string]string{}}
			for _, o := range pr.OperationTypes {
				out.Operations[o.OperationType] = o.Status
			}
			return out, nil
		}
	}
	return PawapayAvailability{}, fmt.Errorf("provider: pawaPay availability has no provider %s", p.provider)
}

// PawapayPrediction is pawaPay's reading of a phone number.
type PawapayPrediction struct {
	Country  string // ISO alpha-3
	Provider string // provider code
	// PhoneNumber is the sanitised number (digits only, with the country code).
	PhoneNumber string
}

// PredictProvider asks POST /v2/predict-provider which provider a phone number belongs to. pawaPay
// sanitises the number (leading +, spaces, other non-digits). A number pawaPay cannot read is a
// *PawapayError with its failure code.
// https://docs.pawapay.io/v2/api-reference/toolkit/predict-provider
func (p *Pawapay) PredictProvider(ctx context.Context, phone string) (PawapayPrediction, error) {
	payload, err := json.Marshal(map[string]string{"phoneNumber": phone})
	if err != nil {
		return PawapayPrediction{}, fmt.Errorf("provider: encoding pawaPay predict-provider request: %w", err)
	}
	const route = "/v2/predict-provider"
	status, data, err := p.do(ctx, http.MethodPost, route, route, payload)
	if err != nil {
		return PawapayPrediction{}, err
	}
	if status != http.StatusOK {
		return PawapayPrediction{}, pawapayStatusError(http.MethodPost, route, status, data)
	}
	var out PawapayPrediction
	if err := json.Unmarshal(data, &out); err != nil {
		return PawapayPrediction{}, fmt.Errorf("provider: malformed pawaPay answer to POST %s: %w", route, err)
	}
	if out.Provider == "" {
		return PawapayPrediction{}, fmt.Errorf("provider: pawaPay predicted no provider")
	}
	return out, nil
}

// WalletBalances reads GET /v2/wallet-balances (filtered by the configured Country, if any):
// currency → balance (a decimal string). A provider-specific wallet is keyed "CURRENCY/PROVIDER".
// Without a Country, two countries' wallets in one currency (XOF, say) are an error: configure
// the Country.
// https://docs.pawapay.io/v2/api-reference/finances/wallet-balances
func (p *Pawapay) WalletBalances(ctx context.Context) (map[string]string, error) {
	path := "/v2/wallet-balances"
	if p.country != "" {
		path += "?country=" + url.QueryEscape(p.country)
	}
	var a struct {
		Balances []struct {
			Country  string `json:"country"`
			Balance  string `json:"balance"`
			Currency string `json:"currency"`
			Provider string `json:"provider"`
		} `json:"balances"`
	}
	if err := p.getJSON(ctx, path, "/v2/wallet-balances", &a); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(a.Balances))
	for _, b := range a.Balances {
		key := b.Currency
		if b.Provider != "" {
			key += "/" + b.Provider
		}
		if key == "" {
			return nil, errors.New("provider: pawaPay wallet balance without a currency")
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("provider: pawaPay has several %s wallets (one per country); configure the adapter's Country", key)
		}
		out[key] = b.Balance
	}
	return out, nil
}

// PawapayPublicKey is a key pawaPay signs callbacks with.
type PawapayPublicKey struct {
	ID  string `json:"id"`
	Key string `json:"key"` // PEM ("PUBLIC KEY")
}

// PublicKeys reads GET /v2/public-key/http: the keys pawaPay signs callbacks with.
// https://docs.pawapay.io/v2/api-reference/toolkit/public-keys
func (p *Pawapay) PublicKeys(ctx context.Context) ([]PawapayPublicKey, error) {
	var out []PawapayPublicKey
	if err := p.getJSON(ctx, "/v2/public-key/http", "/v2/public-key/http", &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (p *Pawapay) getJSON(ctx context.Context, path, route string, v any) error {
	status, data, err := p.do(ctx, http.MethodGet, path, route, nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return pawapayStatusError(http.MethodGet, route, status, data)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("provider: malformed pawaPay answer to GET %s: %w", route, err)
	}
	return nil
}

// ---- callbacks ----

// ParseCallback decodes a deposit, payout or refund callback body: the payment as a status check
// shows it, POSTed to the callback URL configured for the operation type.
// https://docs.pawapay.io/v2/api-reference/deposits/deposit-callback
// https://docs.pawapay.io/v2/api-reference/payouts/payout-callback
// https://docs.pawapay.io/v2/api-reference/refunds/refund-callback
// kind is PawapayKindDeposit, Payout or Refund and id is pawaPay's id (DepositID, PayoutID or
// RefundID of the reference; a deposit callback's clientReferenceId also carries the reference).
// A callback is a hint, to be applied idempotently or confirmed by a status check. Verify the
// signature first (VerifyCallback) when pawaPay signs callbacks. Errors wrap ErrCallbackPayload.
func (p *Pawapay) ParseCallback(body []byte) (kind, id string, status Status, code paygatev1.FailureCode, err error) {
	return ParsePawapayCallback(body)
}

// ParsePawapayCallback is Pawapay.ParseCallback, for a receiver without an adapter at hand.
func ParsePawapayCallback(body []byte) (kind, id string, status Status, code paygatev1.FailureCode, err error) {
	if len(body) > MaxCallbackBody {
		return "", "", "", "", fmt.Errorf("%w: body larger than %d bytes", ErrCallbackPayload, MaxCallbackBody)
	}
	var d pawapayPayment
	if err := json.Unmarshal(body, &d); err != nil {
		return "", "", "", "", fmt.Errorf("%w: malformed JSON: %v", ErrCallbackPayload, err)
	}
	n := 0
	for _, c := range []struct{ kind, id string }{{PawapayKindDeposit, d.DepositID}, {PawapayKindPayout, d.PayoutID}, {PawapayKindRefund, d.RefundID}} {
		if c.id != "" {
			kind, id = c.kind, c.id
			n++
		}
	}
	if n != 1 {
		return "", "", "", "", fmt.Errorf("%w: want exactly one of depositId, payoutId, refundId", ErrCallbackPayload)
	}
	if !pawapayUUIDv4.MatchString(id) {
		return "", "", "", "", fmt.Errorf("%w: %s id %q is not a UUIDv4", ErrCallbackPayload, kind, truncateUpstreamText(id))
	}
	res, err := pawapayResult(id, d)
	if err != nil {
		return "", "", "", "", fmt.Errorf("%w: %v", ErrCallbackPayload, err)
	}
	return kind, id, res.Status, res.Code, nil
}

var pawapayUUIDv4 = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$`)

// VerifyCallback is VerifyPawapayCallback.
func (p *Pawapay) VerifyCallback(r *http.Request, body []byte, publicKeyPEM []byte) error {
	return VerifyPawapayCallback(r, body, publicKeyPEM)
}

// pawapayRequiredComponents must be covered by a callback signature, so that it binds the request
// line and the body (through Content-Digest).
var pawapayRequiredComponents = []string{"@method", "@authority", "@path", "content-digest"}

// VerifyPawapayCallback checks a signed pawaPay callback: r is the request as the receiver got it
// (r.Host is the authority, so a receiver behind a proxy must see the Host pawaPay called), body
// its raw body, publicKeyPEM the "PUBLIC KEY" of GET /v2/public-key/http (PublicKeys).
//
// From pawaPay's documentation (https://docs.pawapay.io/v2/docs/signatures,
// https://docs.pawapay.io/v2/api-reference/toolkit/public-keys): callbacks are signed per RFC 9421
// (HTTP Message Signatures) with Signature and Signature-Input headers, the body is bound by a
// Content-Digest (RFC 9530; "SHA256 or SHA-512 hash of the request body"), a custom
// Signature-Date header carries the signing time
// (https://docs.pawapay.io/v2/api-reference/deposits/deposit-callback), and the key is an ECDSA
// P-256 key served by the public-key endpoint.
// From pawaPay's signatures example (github.com/pawaPay/signatures-node-example), as the fake
// implements it: the covered components ("@method" "@authority" "@path" "signature-date"
// "content-digest" "content-type" "content-length"), the algorithm ecdsa-p256-sha256, a SHA-512
// Content-Digest, and an ASN.1 DER signature. This function accepts any label, any component list
// that covers @method, @authority, @path and content-digest, sha-256 or sha-512 digests, and DER
// or RFC 9421's raw r||s signatures. It does not check the signature's age: a replayed callback
// only repeats a final status, which receivers apply idempotently.
//
// Errors wrap ErrCallbackSignature, except for an unusable public key (a configuration error).
func VerifyPawapayCallback(r *http.Request, body []byte, publicKeyPEM []byte) error {
	pub, err := pawapayParsePublicKey(publicKeyPEM)
	if err != nil {
		return err
	}
	if err := pawapayCheckDigest(r.Header.Get("Content-Digest"), body); err != nil {
		return err
	}
	inputs := pawapaySplitDict(strings.Join(r.Header.Values("Signature-Input"), ", "))
	sigs := pawapaySplitDict(strings.Join(r.Header.Values("Signature"), ", "))
	if len(inputs) == 0 || len(sigs) == 0 {
		return fmt.Errorf("%w: no Signature-Input or Signature", ErrCallbackSignature)
	}
	var lastErr error
	for _, in := range inputs {
		sig, ok := pawapayDictGet(sigs, in.key)
		if !ok {
			continue
		}
		if lastErr = pawapayVerifyOne(r, pub, in.value, sig); lastErr == nil {
			return nil
		}
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("%w: no Signature matches a Signature-Input label", ErrCallbackSignature)
	}
	return lastErr
}

func pawapayParsePublicKey(publicKeyPEM []byte) (*ecdsa.PublicKey, error) {
	block, _ := pem.Decode(publicKeyPEM)
	if block == nil {
		return nil, errors.New("provider: pawaPay callback public key is not PEM")
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("provider: pawaPay callback public key: %w", err)
	}
	pub, ok := key.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, errors.New("provider: pawaPay callback public key is not an ECDSA P-256 key")
	}
	return pub, nil
}

// pawapayCheckDigest checks an RFC 9530 Content-Digest: every sha-256 or sha-512 member must match
// and at least one must be present.
func pawapayCheckDigest(header string, body []byte) error {
	checked := 0
	for _, m := range pawapaySplitDict(header) {
		var sum []byte
		switch strings.ToLower(m.key) {
		case "sha-512":
			s := sha512.Sum512(body)
			sum = s[:]
		case "sha-256":
			s := sha256.Sum256(body)
			sum = s[:]
		default:
			continue
		}
		got, ok := pawapayByteSeq(m.value)
		if !ok || subtle.ConstantTimeCompare(got, sum) != 1 {
			return fmt.Errorf("%w: Content-Digest %s does not match the body", ErrCallbackSignature, m.key)
		}
		checked++
	}
	if checked == 0 {
		return fmt.Errorf("%w: no sha-256 or sha-512 Content-Digest", ErrCallbackSignature)
	}
	return nil
}

func pawapayVerifyOne(r *http.Request, pub *ecdsa.PublicKey, input, sigValue string) error {
	sig, ok := pawapayByteSeq(sigValue)
	if !ok {
		return fmt.Errorf("%w: Signature is not a byte sequence", ErrCallbackSignature)
	}
	if !strings.HasPrefix(input, "(") {
		return fmt.Errorf("%w: malformed Signature-Input", ErrCallbackSignature)
	}
	end := strings.IndexByte(input, ')')
	if end < 0 {
		return fmt.Errorf("%w: malformed Signature-Input", ErrCallbackSignature)
	}
	var components []string
	for _, f := range strings.Fields(input[1:end]) {
		c, err := strconv.Unquote(f)
		if err != nil || strings.ContainsAny(c, ";") {
			return fmt.Errorf("%w: unsupported covered component %s", ErrCallbackSignature, truncateUpstreamText(f))
		}
		components = append(components, c)
	}
	for _, need := range pawapayRequiredComponents {
		found := false
		for _, c := range components {
			found = found || c == need
		}
		if !found {
			return fmt.Errorf("%w: the signature does not cover %s", ErrCallbackSignature, need)
		}
	}
	for _, param := range strings.Split(input[end+1:], ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(param), "="); ok && k == "alg" && v != `"ecdsa-p256-sha256"` {
			return fmt.Errorf("%w: unsupported alg %s", ErrCallbackSignature, truncateUpstreamText(v))
		}
	}
	var base strings.Builder
	for _, c := range components {
		var v string
		switch c {
		case "@method":
			v = strings.ToUpper(r.Method)
		case "@authority":
			v = r.Host
			if v == "" {
				v = r.URL.Host
			}
			v = strings.ToLower(v)
		case "@path":
			v = r.URL.EscapedPath()
			if v == "" {
				v = "/"
			}
		case "@query":
			v = "?" + r.URL.RawQuery
		default:
			if strings.HasPrefix(c, "@") {
				return fmt.Errorf("%w: unsupported covered component %s", ErrCallbackSignature, c)
			}
			vals := r.Header.Values(c)
			if len(vals) == 0 && strings.EqualFold(c, "content-length") && r.ContentLength >= 0 {
				vals = []string{strconv.FormatInt(r.ContentLength, 10)}
			}
			if len(vals) == 0 {
				return fmt.Errorf("%w: covered header %s is missing", ErrCallbackSignature, c)
			}
			for i := range vals {
				vals[i] = strings.TrimSpace(vals[i])
			}
			v = strings.Join(vals, ", ")
		}
		fmt.Fprintf(&base, "%q: %s\n", c, v)
	}
	fmt.Fprintf(&base, "%q: %s", "@signature-params", input)
	digest := sha256.Sum256([]byte(base.String()))
	if ecdsa.VerifyASN1(pub, digest[:], sig) {
		return nil
	}
	if len(sig) == 64 {
		rr, ss := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		if ecdsa.Verify(pub, digest[:], rr, ss) {
			return nil
		}
	}
	return fmt.Errorf("%w: the signature does not verify", ErrCallbackSignature)
}

type pawapayMember struct{ key, value string }

// pawapaySplitDict splits an RFC 8941 dictionary into its members (label=value), at commas outside
// quoted strings, inner lists and byte sequences. Values are kept as written.
func pawapaySplitDict(s string) []pawapayMember {
	var out []pawapayMember
	add := func(m string) {
		m = strings.TrimSpace(m)
		if k, v, ok := strings.Cut(m, "="); ok && k != "" {
			out = append(out, pawapayMember{strings.TrimSpace(k), strings.TrimSpace(v)})
		}
	}
	start, depth, quoted, bytesSeq := 0, 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted:
			if c == '\\' {
				i++
			} else if c == '"' {
				quoted = false
			}
		case c == '"':
			quoted = true
		case c == ':' && depth == 0:
			bytesSeq = !bytesSeq
		case bytesSeq:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			add(s[start:i])
			start = i + 1
		}
	}
	add(s[start:])
	return out
}

func pawapayDictGet(m []pawapayMember, key string) (string, bool) {
	for _, e := range m {
		if e.key == key {
			return e.value, true
		}
	}
	return "", false
}

// pawapayByteSeq decodes an RFC 8941 byte sequence (:base64:).
func pawapayByteSeq(v string) ([]byte, bool) {
	if len(v) < 2 || v[0] != ':' || v[len(v)-1] != ':' {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(v[1 : len(v)-1])
	return b, err == nil
}
