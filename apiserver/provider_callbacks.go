// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/provider"
)

// The pawaPay and Daraja callback routes (docs/providers.md, "Callbacks"). Both are internal:
// reachable by the provider only, never part of the merchant API. A callback never changes a
// payment, payout or refund by itself:
//
//   - pawaPay: a verified callback (signed where the account signs) only wakes the controller,
//     which asks pawaPay for the status (GET /v2/deposits/{depositId}, /v2/payouts/{payoutId},
//     /v2/refunds/{refundId}) before anything changes.
//   - Daraja: nothing is signed, so the URL is the credential: each attempt's path carries its
//     reference sealed with the gateway's callback secret (provider.Daraja.CallbackReference). An
//     M-Pesa Express callback wakes the controller and, for a push whose acceptance was lost,
//     gives it the CheckoutRequestID (paygatev1.AnnotationProviderReference): the controller
//     confirms by M-Pesa Express Query before anything changes; a successful one also leaves the
//     payment's M-PESA receipt (paygatev1.AnnotationProviderReceipt), which only the callback
//     carries and a refund's reversal names. A B2C result, or a reversal's (a refund), which
//     have no synchronous query, is recorded as it arrived at the payout's or the refund's own
//     result URL (paygatev1.AnnotationProviderResult).
//
// The apiserver never asks Daraja anything: a Daraja access token is one per app ("each request
// invalidates the previous token", Authorization page), and the manager holds it.

// unknownCallback is the answer to a callback that names nothing Paygate sent: the same for a bad
// token, another gateway's token and a reference that does not exist, so the route tells a
// prober nothing.
var unknownCallback = &APIError{Status: http.StatusNotFound, Label: LabelNotFound, Message: "Unknown callback."}

// callbackProviderDown: the object could not be read or written, or pawaPay's keys could not be
// read; the provider may post again, and the controller asks by itself where it can.
var callbackProviderDown = &APIError{Status: http.StatusServiceUnavailable, Label: LabelServiceUnavailable,
	Message: "The callback could not be confirmed with the provider now; it was not applied."}

// callbackObject is the payment, the payout or the refund a callback's reference names, with the
// gateway its attempt went through.
type callbackObject struct {
	payment *paygatev1.Payment
	payout  *paygatev1.Payout
	refund  *paygatev1.Refund
	gateway paygatev1.GatewayCode
	// providerReference is the provider's id the attempt stored with its acceptance ("" if none).
	providerReference string
}

func (o callbackObject) object() client.Object {
	switch {
	case o.payment != nil:
		return o.payment
	case o.refund != nil:
		return o.refund
	}
	return o.payout
}

// ended reports whether the object ended (terminal), and failed whether it ended failed.
func (o callbackObject) ended() (terminal, failed bool) {
	switch {
	case o.payment != nil:
		return o.payment.Terminal(), o.payment.Status.Phase == paygatev1.PaymentFailed
	case o.refund != nil:
		return o.refund.Terminal(), o.refund.Status.Phase == paygatev1.RefundFailed
	}
	return o.payout.Terminal(), o.payout.Status.Phase == paygatev1.PayoutFailed
}

// refundReferenceSuffix ends a refund's reference, "<namespace>.<name>.r"
// (paygatev1.Refund.RefundReference).
const refundReferenceSuffix = "r"

// findCallbackObject reads, live, the payment ("<namespace>.<trx_id>.<sequence>"), refund
// ("<namespace>.<name>.r") or payout ("<namespace>.<name>") of reference and the attempt the
// reference names. A reference that names no attempt is not found.
func (s *Server) findCallbackObject(ctx context.Context, reference string) (callbackObject, *APIError) {
	var o callbackObject
	parts := strings.Split(reference, ".")
	switch len(parts) {
	case 3:
		if parts[2] == refundReferenceSuffix {
			if parts[0] == "" || parts[1] == "" || len(parts[0]) > 63 || len(parts[1]) > 253 {
				return o, unknownCallback
			}
			rf := &paygatev1.Refund{}
			if apiErr := s.getLive(ctx, client.ObjectKey{Namespace: parts[0], Name: parts[1]}, rf); apiErr != nil {
				return o, apiErr
			}
			if a := rf.Status.Attempt; a != nil && a.Reference == reference && rf.RefundReference() == reference {
				o = callbackObject{refund: rf, gateway: rf.Spec.Gateway, providerReference: a.ProviderReference}
			}
			break
		}
		ns, trx, ok := splitReference(reference)
		if !ok {
			return o, unknownCallback
		}
		p := &paygatev1.Payment{}
		if apiErr := s.getLive(ctx, client.ObjectKey{Namespace: ns, Name: trx}, p); apiErr != nil {
			return o, apiErr
		}
		for _, a := range p.Status.Attempts {
			if a.Reference == reference {
				o = callbackObject{payment: p, gateway: a.Gateway, providerReference: a.ProviderReference}
			}
		}
	case 2:
		if parts[0] == "" || parts[1] == "" || len(parts[0]) > 63 || len(parts[1]) > 253 {
			return o, unknownCallback
		}
		p := &paygatev1.Payout{}
		if apiErr := s.getLive(ctx, client.ObjectKey{Namespace: parts[0], Name: parts[1]}, p); apiErr != nil {
			return o, apiErr
		}
		if a := p.Status.Attempt; a != nil && a.Reference == reference {
			o = callbackObject{payout: p, gateway: p.Spec.Gateway, providerReference: a.ProviderReference}
		}
	}
	if o.gateway == "" {
		return o, unknownCallback
	}
	return o, nil
}

func (s *Server) getLive(ctx context.Context, key client.ObjectKey, obj client.Object) *APIError {
	if err := s.opts.APIReader.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) {
			return unknownCallback
		}
		s.opts.Log.Error(err, "Reading the object of a provider callback")
		return callbackProviderDown
	}
	return nil
}

// providerGateway reads gateway code from the cache and checks that its provider is kind.
func (s *Server) providerGateway(ctx context.Context, code string, kind paygatev1.ProviderKind) (*paygatev1.Gateway, bool) {
	gw := &paygatev1.Gateway{}
	if code == "" || s.opts.Cache.Get(ctx, client.ObjectKey{Name: code}, gw) != nil || gw.Spec.Provider != kind {
		return nil, false
	}
	return gw, true
}

// wakeOrRecord writes what a callback says onto its object: AnnotationProviderCallback, which
// wakes the controller (a hint: the controller asks the provider); when providerRef is given,
// AnnotationProviderReference (the provider's id for an attempt that has none, for the controller
// to ask with); and, when result is given, AnnotationProviderResult for the attempt (the answer of
// a provider the controller cannot ask). It writes these only to an object still under way, or to
// a failed one when the provider says success (money that arrived late, for the controller to
// report). A recorded final result is never replaced by one that is not final. A receipt (a
// payment's, AnnotationProviderReceipt) is recorded whatever the object's phase: it is what a
// refund of the payment will name, and the controller may have confirmed the payment by query
// before the callback carrying it arrived.
func (s *Server) wakeOrRecord(ctx context.Context, o callbackObject, reference string, status provider.Status, providerRef string, result *provider.Result, receipt string) *APIError {
	terminal, failed := o.ended()
	wake := !terminal || (failed && status == provider.StatusSuccess)
	obj := o.object()
	receiptValue := ""
	if receipt != "" {
		receiptValue = reference + " " + receipt
	}
	recordReceipt := receiptValue != "" && obj.GetAnnotations()[paygatev1.AnnotationProviderReceipt] != receiptValue
	if !wake && !recordReceipt {
		return nil
	}
	base := obj.DeepCopyObject().(client.Object)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	if wake {
		ann[paygatev1.AnnotationProviderCallback] = string(status) + " " + s.opts.Clock.Now().UTC().Format(time.RFC3339Nano)
		if providerRef != "" {
			ann[paygatev1.AnnotationProviderReference] = reference + " " + providerRef
		}
		if result != nil {
			prevRef, prevStatus, _, ok := paygatev1.ParseProviderResult(ann[paygatev1.AnnotationProviderResult])
			prevFinal := ok && prevRef == reference && provider.Status(prevStatus).Terminal()
			if !prevFinal || result.Status.Terminal() {
				ann[paygatev1.AnnotationProviderResult] = providerResultValue(reference, *result)
			}
		}
	}
	if recordReceipt {
		ann[paygatev1.AnnotationProviderReceipt] = receiptValue
	}
	obj.SetAnnotations(ann)
	if err := s.opts.Writer.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		if apierrors.IsNotFound(err) {
			return unknownCallback
		}
		s.opts.Log.Error(err, "Recording a provider callback", "reference", reference)
		return callbackProviderDown
	}
	return nil
}

// providerResultValue is the AnnotationProviderResult of a result: "<reference> <STATUS> [<CODE>]".
// A code that is not one token (the provider's text is never copied) is PROVIDER_ERROR.
func providerResultValue(reference string, r provider.Result) string {
	v := reference + " " + string(r.Status)
	if r.Status == provider.StatusFailed {
		code := string(r.Code)
		if code == "" || strings.ContainsAny(code, " \t\r\n") || len(code) > 64 {
			code = string(paygatev1.FailureProviderError)
		}
		v += " " + code
	}
	return v
}

// callbackReceived is the answer to an accepted callback: 200 with Daraja's "accepted" shape,
// which pawaPay ignores.
func callbackReceived(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, map[string]any{"ResultCode": 0, "ResultDesc": "Accepted", "status": "received"})
}

// ---- Daraja ----

// darajaCallback receives POST /internal/provider/callbacks/daraja/{gateway}/{token}[/{kind}]:
// an M-Pesa Express callback (no kind) for a payment, or a result ("result") or queue time-out
// notice ("timeout") for a payout's B2C payment or a refund's reversal.
func (s *Server) darajaCallback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	kind := r.PathValue("kind")
	if kind != "" && kind != provider.DarajaCallbackResult && kind != provider.DarajaCallbackTimeout {
		writeError(w, unknownCallback)
		return
	}
	body, apiErr := readCallbackBody(r)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	gw, ok := s.providerGateway(ctx, r.PathValue("gateway"), paygatev1.ProviderDaraja)
	if !ok || s.opts.Gateways == nil {
		writeError(w, unknownCallback)
		return
	}
	d, err := s.opts.Gateways.Daraja(ctx, gw)
	if err != nil {
		s.opts.Log.Error(err, "Building the Daraja adapter for a callback", "gateway", gw.Name)
		writeError(w, callbackProviderDown)
		return
	}
	reference, ok := d.CallbackReference(r.PathValue("token"))
	if !ok {
		s.opts.Log.Info("Daraja callback with a path token that does not open", "gateway", gw.Name)
		writeError(w, unknownCallback)
		return
	}
	if reference == provider.DarajaBalanceReference {
		if apiErr := s.darajaBalanceResult(gw, kind, body); apiErr != nil {
			writeError(w, apiErr)
			return
		}
		callbackReceived(w)
		return
	}
	o, apiErr := s.findCallbackObject(ctx, reference)
	if apiErr == nil && string(o.gateway) != gw.Name {
		apiErr = unknownCallback
	}
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	switch {
	case kind == "" && o.payment != nil:
		apiErr = s.darajaSTKCallback(ctx, o, reference, body)
	case kind != "" && o.payout != nil:
		apiErr = s.darajaB2CResult(ctx, o, reference, kind, body)
	case kind != "" && o.refund != nil:
		apiErr = s.darajaReversalResult(ctx, o, reference, kind, body)
	default:
		apiErr = unknownCallback
	}
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	callbackReceived(w)
}

// darajaSTKCallback takes an M-Pesa Express callback
// (https://developer.safaricom.co.ke/apis/MpesaExpressSimulate, "Callback"). Its
// CheckoutRequestID must be the attempt's when the acceptance stored one; when it did not (the
// push's answer was lost), the CheckoutRequestID is recorded for the controller, which confirms
// the outcome by M-Pesa Express Query (https://developer.safaricom.co.ke/apis/MpesaExpressQuery).
// A successful callback's MpesaReceiptNumber (CallbackMetadata) is recorded on the payment
// (AnnotationProviderReceipt): the query does not give it, and a reversal needs it. A callback
// whose receipt is not a receipt (paygatev1.ValidProviderReceipt) is refused.
func (s *Server) darajaSTKCallback(ctx context.Context, o callbackObject, reference string, body []byte) *APIError {
	cb, err := provider.ParseSTKCallback(body)
	notResult := &APIError{Status: http.StatusBadRequest, Label: LabelBadRequest, Message: "The callback is not an M-Pesa Express result."}
	if err != nil || !darajaID(cb.CheckoutRequestID) {
		return notResult
	}
	receipt := ""
	if cb.Result.Status == provider.StatusSuccess && cb.MpesaReceiptNumber != "" {
		if !paygatev1.ValidProviderReceipt(cb.MpesaReceiptNumber) {
			return notResult
		}
		receipt = cb.MpesaReceiptNumber
	}
	learnt := ""
	switch o.providerReference {
	case "":
		learnt = cb.CheckoutRequestID
	case cb.CheckoutRequestID:
	default:
		s.opts.Log.Info("M-Pesa Express callback about another CheckoutRequestID than the attempt's", "reference", reference)
		return unknownCallback
	}
	if apiErr := s.wakeOrRecord(ctx, o, reference, cb.Result.Status, learnt, nil, receipt); apiErr != nil {
		return apiErr
	}
	s.opts.Log.Info("Daraja callback", "reference", reference, "status", cb.Result.Status, "receipt", receipt != "")
	return nil
}

// darajaID reports whether id can be a Daraja id (a CheckoutRequestID): one token of at most 64
// printable characters, so that it fits AnnotationProviderReference.
func darajaID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// darajaB2CResult records a B2C result, or a queue time-out notice (AMBIGUOUS), that arrived at
// the payout's own result URL (https://developer.safaricom.co.ke/apis/BusinessToCustomer). Its
// OriginatorConversationID (and ConversationID, once the acknowledgement was stored) must be the
// attempt's.
func (s *Server) darajaB2CResult(ctx context.Context, o callbackObject, reference, kind string, body []byte) *APIError {
	parse := provider.ParseResult
	if kind == provider.DarajaCallbackTimeout {
		parse = provider.ParseQueueTimeout
	}
	res, err := parse(body)
	if err != nil {
		return &APIError{Status: http.StatusBadRequest, Label: LabelBadRequest, Message: "The callback is not a Daraja result."}
	}
	if res.OriginatorConversationID != provider.OriginatorConversationIDFor(reference) ||
		(o.providerReference != "" && res.ConversationID != "" && res.ConversationID != o.providerReference) {
		s.opts.Log.Info("Daraja result about another request than the payout's", "reference", reference)
		return unknownCallback
	}
	if apiErr := s.wakeOrRecord(ctx, o, reference, res.Result.Status, "", &res.Result, ""); apiErr != nil {
		return apiErr
	}
	s.opts.Log.Info("Daraja result", "reference", reference, "status", res.Result.Status, "kind", kind)
	return nil
}

// darajaReversalResult records a reversal's result, or a queue time-out notice (AMBIGUOUS), that
// arrived at the refund's own result URL (https://developer.safaricom.co.ke/apis/Reversal,
// provider.Daraja.Refund). A Reversal request carries no OriginatorConversationID of ours
// (Safaricom assigns it), so the result is matched by what it does carry: its ConversationID must
// be the attempt's once the acknowledgement was stored, and its OriginalTransactionID (a
// successful result's parameter) the refunded payment's receipt.
func (s *Server) darajaReversalResult(ctx context.Context, o callbackObject, reference, kind string, body []byte) *APIError {
	parse := provider.ParseResult
	if kind == provider.DarajaCallbackTimeout {
		parse = provider.ParseQueueTimeout
	}
	res, err := parse(body)
	if err != nil {
		return &APIError{Status: http.StatusBadRequest, Label: LabelBadRequest, Message: "The callback is not a Daraja result."}
	}
	original, receipt := res.Parameters["OriginalTransactionID"], o.refund.Spec.Payment.Receipt
	if (o.providerReference != "" && res.ConversationID != "" && res.ConversationID != o.providerReference) ||
		(original != "" && receipt != "" && original != receipt) {
		s.opts.Log.Info("Daraja result about another request than the refund's reversal", "reference", reference)
		return unknownCallback
	}
	if apiErr := s.wakeOrRecord(ctx, o, reference, res.Result.Status, "", &res.Result, ""); apiErr != nil {
		return apiErr
	}
	s.opts.Log.Info("Daraja reversal result", "reference", reference, "status", res.Result.Status, "kind", kind)
	return nil
}

// darajaBalanceResult exports the balances of an Account Balance result posted to the gateway's
// balance result URL as paygate_provider_account_balance (docs/operations.md). A queue time-out
// notice changes nothing: the gateway controller asks again with its next check.
func (s *Server) darajaBalanceResult(gw *paygatev1.Gateway, kind string, body []byte) *APIError {
	if kind == provider.DarajaCallbackTimeout {
		return nil
	}
	if kind != provider.DarajaCallbackResult {
		return unknownCallback
	}
	res, err := provider.ParseResult(body)
	if err != nil {
		return &APIError{Status: http.StatusBadRequest, Label: LabelBadRequest, Message: "The callback is not a Daraja result."}
	}
	if res.Result.Status != provider.StatusSuccess {
		s.opts.Log.Info("Daraja answered the account balance query with a failure", "gateway", gw.Name, "code", res.ResultCode)
		return nil
	}
	accounts, err := res.Balances()
	if err != nil {
		return &APIError{Status: http.StatusBadRequest, Label: LabelBadRequest, Message: "The account balance result cannot be read."}
	}
	balances := make(map[metrics.Account]money.Amount, len(accounts))
	for _, a := range accounts {
		v, err := money.ParseAmount(a.Available)
		if err != nil {
			s.opts.Log.Info("A Daraja account balance is not a non-negative decimal; left out", "gateway", gw.Name, "account", a.Name)
			continue
		}
		balances[metrics.Account{Name: a.Name, Currency: a.Currency}] = v
	}
	metrics.SetAccountBalances(gw.Name, balances)
	return nil
}

// readCallbackBody reads a callback's body: readBody's limit is provider.MaxCallbackBody.
func readCallbackBody(r *http.Request) ([]byte, *APIError) { return readBody(r) }

// A callback body the providers' parsers accept is never refused by readBody's limit.
var _ [maxBodyBytes - provider.MaxCallbackBody]struct{}

// ---- pawaPay ----

// pawapayCallback receives POST /internal/provider/callbacks/pawapay: a deposit, payout or refund
// callback (https://docs.pawapay.io/v2/api-reference/deposits/deposit-callback,
// https://docs.pawapay.io/v2/api-reference/payouts/payout-callback,
// https://docs.pawapay.io/v2/api-reference/refunds/refund-callback), the same URL for all
// (pawaPay configures callback URLs per account and operation type). The clientReferenceId names
// the attempt (Paygate sends its reference as clientReferenceId), and pawaPay's id must be the one
// Paygate derives from it. A signature, when
// present or required by the gateway (spec.pawapay.signedCallbacks), must verify against the
// keys pawaPay publishes. The callback then only wakes the controller.
func (s *Server) pawapayCallback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, apiErr := readCallbackBody(r)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	var head struct {
		ClientReferenceID string `json:"clientReferenceId"`
	}
	_ = json.Unmarshal(body, &head)
	kind, id, status, _, err := provider.ParsePawapayCallback(body)
	if err != nil || head.ClientReferenceID == "" {
		writeError(w, &APIError{Status: http.StatusBadRequest, Label: LabelBadRequest, Message: "The callback is not a pawaPay deposit, payout or refund."})
		return
	}
	reference := head.ClientReferenceID
	var want string
	switch kind {
	case provider.PawapayKindDeposit:
		want = provider.PawapayDepositID(reference)
	case provider.PawapayKindPayout:
		want = provider.PawapayPayoutID(reference)
	case provider.PawapayKindRefund:
		want = provider.PawapayRefundID(reference)
	}
	if want == "" || !strings.EqualFold(want, id) {
		writeError(w, unknownCallback)
		return
	}
	o, apiErr := s.findCallbackObject(ctx, reference)
	if apiErr == nil {
		var ok bool
		switch kind {
		case provider.PawapayKindDeposit:
			ok = o.payment != nil
		case provider.PawapayKindPayout:
			ok = o.payout != nil
		default:
			ok = o.refund != nil
		}
		if !ok {
			apiErr = unknownCallback
		}
	}
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	gw, ok := s.providerGateway(ctx, string(o.gateway), paygatev1.ProviderPawapay)
	if !ok || s.opts.Gateways == nil {
		writeError(w, unknownCallback)
		return
	}
	if apiErr := s.verifyPawapaySignature(ctx, r, body, gw); apiErr != nil {
		writeError(w, apiErr)
		return
	}
	if apiErr := s.wakeOrRecord(ctx, o, reference, status, "", nil, ""); apiErr != nil {
		writeError(w, apiErr)
		return
	}
	s.opts.Log.Info("pawaPay callback", "reference", reference, "kind", kind, "status", status)
	callbackReceived(w)
}

// verifyPawapaySignature checks a callback's signature when it carries one or the gateway
// requires one, with the keys of GET /v2/public-key/http (cached; read again once when none
// verifies, for a rotated key).
func (s *Server) verifyPawapaySignature(ctx context.Context, r *http.Request, body []byte, gw *paygatev1.Gateway) *APIError {
	signed := r.Header.Get("Signature") != "" || r.Header.Get("Signature-Input") != ""
	if !signed && !gw.Spec.Pawapay.SignedCallbacks {
		return nil
	}
	refused := &APIError{Status: http.StatusUnauthorized, Label: LabelInvalidSignature, Message: "The callback could not be verified."}
	if !signed {
		return refused
	}
	for fresh := false; ; fresh = true {
		keys, err := s.pawapayKeys.get(ctx, s.opts.Gateways, gw, fresh, s.opts.Clock.Now())
		if err != nil {
			s.opts.Log.Error(err, "Reading pawaPay's callback keys", "gateway", gw.Name)
			return callbackProviderDown
		}
		for _, k := range keys {
			if provider.VerifyPawapayCallback(r, body, []byte(k.Key)) == nil {
				return nil
			}
		}
		if fresh {
			s.opts.Log.Info("pawaPay callback with a signature that does not verify", "gateway", gw.Name)
			return refused
		}
	}
}

// pawapayKeyCache holds each pawaPay gateway's callback keys for pawapayKeysTTL, and reads them
// again at most once per pawapayKeysRefetch when asked for fresh ones (a forged signature must
// not make every callback a call to pawaPay).
type pawapayKeyCache struct {
	mu   sync.Mutex
	keys map[string]pawapayKeys
}

type pawapayKeys struct {
	version string
	keys    []provider.PawapayPublicKey
	fetched time.Time
}

const (
	pawapayKeysTTL     = time.Hour
	pawapayKeysRefetch = time.Minute
)

func (c *pawapayKeyCache) get(ctx context.Context, gws *provider.Gateways, gw *paygatev1.Gateway, fresh bool, now time.Time) ([]provider.PawapayPublicKey, error) {
	version := fmt.Sprintf("%s/%d", gw.UID, gw.Generation)
	c.mu.Lock()
	cached, ok := c.keys[gw.Name]
	c.mu.Unlock()
	if ok && cached.version == version {
		age := now.Sub(cached.fetched)
		if age < pawapayKeysTTL && (!fresh || age < pawapayKeysRefetch) {
			return cached.keys, nil
		}
	}
	p, err := gws.Pawapay(ctx, gw)
	if err != nil {
		return nil, err
	}
	keys, err := p.PublicKeys(ctx)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, errors.New("pawaPay published no callback keys")
	}
	c.mu.Lock()
	if c.keys == nil {
		c.keys = map[string]pawapayKeys{}
	}
	c.keys[gw.Name] = pawapayKeys{version: version, keys: keys, fetched: now}
	c.mu.Unlock()
	return keys, nil
}
