// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/eligibility"
	"github.com/paygate/paygate/internal/index"
	"github.com/paygate/paygate/internal/names"
	"github.com/paygate/paygate/internal/phone"
)

// annotationIdempotencyKey on a Payment names the IdempotencyKey object of the request that
// created it, so a concurrent retry with the same key recognises the payment as its own.
const annotationIdempotencyKey = "paygate.dev/idempotency-key"

// trxIDPattern is the form of every trx_id (the OpenAPI document states it).
var trxIDPattern = regexp.MustCompile(`^trx-[a-z2-7]{24}$`)

// TrxID derives a payment's trx_id (its object name) from the merchant, the environment and the
// merchant's reference: "trx-" and 24 characters of lower-case base32 (names.Derive). Two
// requests with one ref_trx derive one name, and the API server lets only one of them create it:
// DUPLICATE_REFERENCE holds across any number of apiserver replicas.
func TrxID(merchantUID string, env paygatev1.Environment, refTrx string) string {
	return "trx-" + names.Derive(names.PurposeTrx, merchantUID, string(env), refTrx)
}

func (s *Server) createPayment(w http.ResponseWriter, r *http.Request) {
	s.idempotent(w, r, func(ctx context.Context, idemKey string) response { return s.doCreate(ctx, idemKey, false) })
}

func (s *Server) initiatePayment(w http.ResponseWriter, r *http.Request) {
	s.idempotent(w, r, func(ctx context.Context, idemKey string) response { return s.doCreate(ctx, idemKey, true) })
}

// doCreate checks a payment request in order (docs/api.md, Creating payments; environment and
// merchant were checked in authenticate): currency, wallet, gateways, allow_payment_methods;
// then writes the Payment.
func (s *Server) doCreate(ctx context.Context, idemKey string, legacy bool) response {
	c := callerFrom(ctx)
	f, apiErr := decodeObject(c.body)
	if apiErr != nil {
		return errorResponse(apiErr)
	}
	req, v := s.parsePaymentRequest(f, c, legacy)
	if len(v) > 0 {
		return errorResponse(requestError(req, v))
	}
	if err := eligibility.CheckCurrency(c.merchant, paygatev1.CurrencyCode(req.Currency.Code)); err != nil {
		label := LabelInvalidCurrency
		if errors.Is(err, eligibility.ErrWalletUnavailable) {
			label = LabelWalletUnavailable
		}
		return errorResponse(&APIError{Status: http.StatusUnprocessableEntity, Label: label, Message: err.Error()})
	}
	gateways, restricted, apiErr := s.resolveGateways(ctx, c, req)
	if apiErr != nil {
		return errorResponse(apiErr)
	}

	now := s.opts.Clock.Now()
	p := &paygatev1.Payment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      TrxID(string(c.merchant.UID), c.env, req.RefTrx),
			Namespace: c.merchant.Namespace,
			Labels:    map[string]string{paygatev1.LabelMerchant: c.merchant.Name, paygatev1.LabelEnvironment: string(c.env)},
		},
		Spec: paygatev1.PaymentSpec{
			MerchantRef:       paygatev1.MerchantReference{Name: c.merchant.Name},
			Environment:       c.env,
			MerchantReference: req.RefTrx,
			Amount:            paygatev1.Decimal(req.Amount.StringFixed(req.Currency.Scale)),
			Currency:          paygatev1.CurrencyCode(req.Currency.Code),
			Mode:              req.Mode,
			Customer: paygatev1.Customer{Name: req.CustomerName, Email: req.CustomerEmail,
				Phone: paygatev1.MobileNumber(req.CustomerPhone)},
			Description:         req.Description,
			WebhookURL:          req.WebhookURL,
			SuccessRedirect:     req.SuccessRedirect,
			CancelRedirect:      req.CancelRedirect,
			AllowPaymentMethods: req.AllowPaymentMethods,
			ExpiresAt:           metav1.NewTime(now.Add(s.checkoutLifetime(c.merchant)).Truncate(time.Second)),
			CreatedAt:           ptrMicro(now),
		},
	}
	for _, g := range gateways {
		p.Spec.Gateways = append(p.Spec.Gateways, g.Code())
	}
	if req.Mode == paygatev1.PaymentModePush {
		p.Spec.PushRequest = &paygatev1.PushRequest{Sequence: 1, Phone: paygatev1.MobileNumber(req.CustomerPhone), RequestedAt: *ptrMicro(now)}
	}
	if idemKey != "" {
		p.Annotations = map[string]string{annotationIdempotencyKey: idemKey}
	}
	// The name derives from ref_trx: a payment with it, live or archived, makes this request a
	// duplicate (or a replay of its own create), never a second payment.
	if err := createOnce(ctx, s, p, archive.KindPayment, "payments", "create_payment"); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return s.serverError("Creating a payment", err)
		}
		existing, err := s.payment(ctx, c, p.Name, false)
		if isArchiveError(err) {
			return s.serverError("Reading a payment", err)
		}
		if err != nil || existing == nil || idemKey == "" || existing.Annotations[annotationIdempotencyKey] != idemKey {
			return errorResponse(&APIError{Status: http.StatusConflict, Label: LabelDuplicateReference,
				Message: "Transaction reference already exists.", Errors: map[string][]string{"ref_trx": {"The ref_trx has already been used."}}})
		}
		p = existing // a concurrent request with the same Idempotency-Key created it
	}
	s.opts.Log.Info("Payment created", "merchant", c.merchant.Name, "environment", c.env, "trxID", p.Name,
		"mode", p.Spec.Mode, "customerPhone", phone.Mask(string(p.Spec.Customer.Phone)))
	var body map[string]any
	var err error
	if legacy {
		body, err = s.legacyCreateResponse(c, p, gateways, restricted)
	} else {
		body, err = s.createResponse(p)
	}
	if err != nil {
		return s.serverError("Rendering a payment", fmt.Errorf("payment %s: %w", p.Name, err))
	}
	return jsonResponse(http.StatusOK, body)
}

// checkoutLifetime is the merchant's checkout session length, else the server's default.
func (s *Server) checkoutLifetime(m *paygatev1.Merchant) time.Duration {
	if m.Spec.CheckoutLifetimeMinutes > 0 {
		return time.Duration(m.Spec.CheckoutLifetimeMinutes) * time.Minute
	}
	return s.opts.CheckoutLifetime
}

// resolveGateways applies the merchant's selection (or every active automatic gateway of the
// currency), narrowed by allow_payment_methods and the gateways' amount limits. The gateways keep
// the checkout order of eligibility.Order, which the payment records and hosted checkout shows.
//
// A payment is not refused on the word of a stale cache: when the cache leaves no gateway (one
// created or activated a moment ago may not be in it yet), the gateways and selections are read
// from the Kubernetes API before the answer is NO_PAYMENT_METHOD.
func (s *Server) resolveGateways(ctx context.Context, c *caller, req *paymentRequest) ([]paygatev1.Gateway, bool, *APIError) {
	res, sel, err := s.eligibleGateways(ctx, s.opts.Cache, c, req, client.MatchingFields{index.SelectionMerchant: c.merchant.Name})
	if err == nil && len(res.Gateways) == 0 {
		res, sel, err = s.eligibleGateways(ctx, s.opts.APIReader, c, req)
	}
	if err != nil {
		return nil, false, s.serverError("Listing gateways and selections", err).err
	}
	if len(res.Gateways) == 0 {
		return nil, false, &APIError{Status: http.StatusUnprocessableEntity, Label: LabelNoPaymentMethod,
			Message: "No payment method is available for this currency."}
	}
	filtered := eligibility.FilterAllowedMethods(res.Gateways, req.AllowPaymentMethods)
	if len(filtered) == 0 {
		return nil, false, &APIError{Status: http.StatusUnprocessableEntity, Label: LabelNoPaymentMethod,
			Message: "No available payment method matches allow_payment_methods.",
			Errors:  map[string][]string{"allow_payment_methods": {"No available payment method matches these keywords."}}}
	}
	fit, refusals := eligibility.CheckLimits(filtered, req.Amount)
	if len(fit) == 0 && len(refusals) > 0 {
		return nil, false, providerLimitsError(refusals, req.Amount, req.Currency)
	}
	if len(fit) == 0 {
		return nil, false, &APIError{Status: http.StatusUnprocessableEntity, Label: LabelInvalidAmount,
			Message: "The amount is outside the limits of every available payment method.",
			Errors:  map[string][]string{"payment_amount": {"The payment_amount is outside the minimum and maximum of the available payment methods."}}}
	}
	return fit, sel.Restricted(), nil
}

// eligibleGateways resolves the gateways and the merchant's selections reader holds;
// narrow may narrow the list of selections (the cache's index); the merchant's are kept in any case.
// Only gateways that serve the caller's environment count (eligibility.Serves): a gateway backed
// by the simulator serves production only when it opted in to simulating it (docs/sandbox.md), so
// without one a production payment is refused with PAYMENT_METHOD_UNAVAILABLE.
func (s *Server) eligibleGateways(ctx context.Context, reader client.Reader, c *caller, req *paymentRequest, narrow ...client.ListOption) (eligibility.Result, eligibility.Selection, error) {
	var gateways paygatev1.GatewayList
	if err := reader.List(ctx, &gateways); err != nil {
		return eligibility.Result{}, nil, fmt.Errorf("listing gateways: %w", err)
	}
	var selections paygatev1.GatewaySelectionList
	if err := reader.List(ctx, &selections, append(narrow, client.InNamespace(c.merchant.Namespace))...); err != nil {
		return eligibility.Result{}, nil, fmt.Errorf("listing gateway selections: %w", err)
	}
	selections.Items = slices.DeleteFunc(selections.Items, func(g paygatev1.GatewaySelection) bool {
		return g.Spec.MerchantRef.Name != c.merchant.Name
	})
	sel, _ := eligibility.EffectiveSelection(selections.Items)
	return eligibility.ResolveGateways(c.merchant, sel, gateways.Items,
		eligibility.Request{Currency: paygatev1.CurrencyCode(req.Currency.Code), Environment: c.env}), sel, nil
}

// payment reads one of the caller's payments (readArchivable): from the cache, else from the
// archive, where settled payments go once they are old enough, and live (read-your-writes right
// after our own create); live first only when asked (after a write conflict). A payment of
// another merchant or environment is not found. An archived payment is terminal: a push on it is
// refused as on a live settled one, and it is never written. cacheOpts apply to the cache read.
func (s *Server) payment(ctx context.Context, c *caller, trxID string, live bool, cacheOpts ...client.GetOption) (*paygatev1.Payment, error) {
	if !trxIDPattern.MatchString(trxID) {
		return nil, nil // not a name Paygate issues: no such payment
	}
	return readArchivable[paygatev1.Payment](ctx, s, c, trxID, live, "get_payment", s.archiveGetPayment, cacheOpts...)
}

// paymentToRender is payment for a caller that only renders the payment (verify, get): a payment
// found in the cache shares the cache's maps and slices, and must not be modified. A read of a
// payment by its merchant costs no deep copy of it.
func (s *Server) paymentToRender(ctx context.Context, c *caller, trxID string) (*paygatev1.Payment, error) {
	return s.payment(ctx, c, trxID, false, client.UnsafeDisableDeepCopy)
}

// archiveGetPayment is Archive.GetPayment (the archive is set when it is called).
func (s *Server) archiveGetPayment(ctx context.Context, namespace, name string) (*paygatev1.Payment, error) {
	return s.opts.Archive.GetPayment(ctx, namespace, name)
}

func (s *Server) getPayment(w http.ResponseWriter, r *http.Request) {
	p, err := s.paymentToRender(r.Context(), callerFrom(r.Context()), r.PathValue("trx_id"))
	answerRecord(s, w, "payment", p, err, errNotFound, func(p *paygatev1.Payment) (any, error) { return dataBody(s.paymentRecord(p)) })
}

func (s *Server) verifyPayment(w http.ResponseWriter, r *http.Request) {
	p, err := s.paymentToRender(r.Context(), callerFrom(r.Context()), r.PathValue("trx_id"))
	answerRecord(s, w, "payment", p, err, errNotFound, func(p *paygatev1.Payment) (any, error) { return s.verification(p) })
}

// List pagination: documented in docs/api.md.
const (
	defaultListLimit = 20
	maxListLimit     = 100
)

func (s *Server) listPayments(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	v := validation{}
	limit, offset := pageParams(v, r)
	q := parsePaymentQuery(v, r.URL.Query(), c.merchant)
	if len(v) > 0 {
		writeError(w, validationError(v))
		return
	}
	page, total, err := s.paymentsPage(r.Context(), c, q, limit, offset)
	if err != nil {
		s.serverError("Listing payments", err).write(w)
		return
	}
	writeItems(s, w, "payment", page, limit, offset, total, s.paymentRecord)
}

// paymentsPage is one page of the caller's payments, newest first, that q selects, live and
// archived merged, and how many match: the payment list of the API and of the console.
func (s *Server) paymentsPage(ctx context.Context, c *caller, q paymentQuery, limit, offset int) ([]paygatev1.Payment, int, error) {
	k := listKind[paygatev1.Payment]{
		kind:     archive.KindPayment,
		uid:      func(p *paygatev1.Payment) string { return string(p.UID) },
		terminal: (*paygatev1.Payment).Terminal,
		compare:  comparePayments,
	}
	if q.status != string(paygatev1.PaymentPending) { // archived payments are settled
		k.archived = func(ctx context.Context, limit, offset int) (archive.Page[paygatev1.Payment], error) {
			return s.opts.Archive.ListPayments(ctx, q.archiveFilter(c), limit, offset)
		}
	}
	var live liveItems[paygatev1.Payment]
	if x := s.lists.paymentIndex(); x.ready() { // docs/performance.md, List indexes
		live = x.liveIn(callerBucket(c), paymentRanges(q), q.created, func(ctx context.Context) (archive.Page[paygatev1.Payment], error) {
			return s.opts.Archive.ListPayments(ctx, archive.PaymentFilter{Namespace: c.merchant.Namespace, Merchant: c.merchant.Name,
				Environment: c.env}, 1, 0)
		})
	} else {
		var list paygatev1.PaymentList
		if err := s.listOwn(ctx, c, &list); err != nil {
			return nil, 0, err
		}
		items := list.Items[:0]
		for _, p := range list.Items {
			if p.Spec.MerchantRef.Name != c.merchant.Name || p.Spec.Environment != c.env || !q.matches(&p) {
				continue
			}
			items = append(items, p)
		}
		live = newSliceLive(k, items, len(list.Items))
	}
	page, total, err := mergedPage(ctx, s, k, live, limit, offset)
	s.observeList("payments", live.stats())
	return page, total, err
}

// comparePayments is the payment list's order (archive.PaymentOrder): newest first, then by
// name (trx_id), then by UID, so pages are stable.
func comparePayments(a, b *paygatev1.Payment) int {
	if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(string(a.UID), string(b.UID))
}

func queryInt(v validation, raw, name string, def, lo, hi int) int {
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		v.add(name, "The %s must be an integer from %d to %d.", name, lo, hi)
		return def
	}
	return n
}

// pushPayment records a push request on a pending payment; the payment controller sends the
// USSD prompt (the apiserver records intent, controllers act: docs/payments.md).
func (s *Server) pushPayment(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	f, apiErr := decodeObject(c.body)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	v := validation{}
	rawPhone, _ := f.str(v, "customer_phone")
	if len(v) > 0 {
		writeError(w, validationError(v))
		return
	}
	out, apiErr := s.requestPush(r.Context(), func(live bool) (*paygatev1.Payment, error) {
		return s.payment(r.Context(), c, r.PathValue("trx_id"), live)
	}, rawPhone, "")
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	s.opts.Log.Info("Push requested", "merchant", c.merchant.Name, "trxID", out.Name, "sequence", out.Spec.PushRequest.Sequence,
		"customerPhone", phone.Mask(string(out.Spec.PushRequest.Phone)))
	writeJSON(w, http.StatusOK, map[string]any{
		"status":  "success",
		"message": "A payment prompt will be sent to the customer's phone.",
		"data": map[string]any{
			"trx_id":         out.Name,
			"status":         string(out.Phase()),
			"push_sequence":  out.Spec.PushRequest.Sequence,
			"customer_phone": phone.Mask(string(out.Spec.PushRequest.Phone)),
			"requested_at":   formatTime(out.Spec.PushRequest.RequestedAt.Time),
			"expires_at":     formatTime(out.Spec.ExpiresAt.Time),
		},
	})
}

// requestPush records a push request on a pending payment (the push endpoint and hosted
// checkout share it): the phone (rawPhone, else the number used last), the gateway chosen, a
// sequence one higher. It refuses a payment that is settled, expired, or already waiting for the
// customer. load reads the payment; live asks for a read past the cache after a conflict.
func (s *Server) requestPush(ctx context.Context, load func(live bool) (*paygatev1.Payment, error), rawPhone string, gateway paygatev1.GatewayCode) (*paygatev1.Payment, *APIError) {
	var (
		pushed  *paygatev1.Payment
		refused *APIError
		live    bool
	)
	// A conflict (the controller or another request wrote the payment since it was read) reads
	// the payment again, past the cache, and decides afresh.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := load(live)
		fromCache := !live
		live = true
		if err != nil {
			refused = s.serverError("Reading a payment", err).err
			return nil
		}
		if refused = s.addPushRequest(p, rawPhone, gateway); refused != nil && fromCache {
			// A refusal decided on the cache is confirmed past it: the cache may not have the
			// caller's own last write yet (a push a moment ago, whose phone this one reuses).
			if p, err = load(true); err != nil {
				refused = s.serverError("Reading a payment", err).err
				return nil
			}
			refused = s.addPushRequest(p, rawPhone, gateway)
		}
		if refused != nil {
			return nil
		}
		if err := s.opts.Writer.Update(ctx, p); err != nil {
			return err
		}
		pushed = p
		return nil
	})
	if err != nil {
		return nil, s.serverError("Recording a push request", err).err
	}
	return pushed, refused
}

// addPushRequest raises p's push request, or says why p cannot be pushed.
func (s *Server) addPushRequest(p *paygatev1.Payment, rawPhone string, gateway paygatev1.GatewayCode) *APIError {
	if p == nil {
		return errNotFound
	}
	if p.Phase() != paygatev1.PaymentPending {
		return &APIError{Status: http.StatusConflict, Label: LabelPaymentNotPending,
			Message: "The payment is " + string(p.Phase()) + "; only a pending payment can be pushed."}
	}
	number := string(p.Spec.Customer.Phone)
	if p.Spec.PushRequest != nil {
		number = string(p.Spec.PushRequest.Phone) // the number the customer used last
	}
	if rawPhone != "" {
		e164, err := phone.NormalizeForCurrency(rawPhone, string(p.Spec.Currency))
		if err != nil {
			return validationError(map[string][]string{"customer_phone": {"The customer_phone must be a valid mobile number (MSISDN), for example +255712345678."}})
		}
		number = e164
	}
	if number == "" {
		return validationError(map[string][]string{"customer_phone": {"The customer_phone field is required: the payment has no phone number."}})
	}
	if gateway != "" && !slices.Contains(p.Spec.Gateways, gateway) {
		return validationError(map[string][]string{"gateway": {"The gateway is not available for this payment."}})
	}
	if p.AwaitingCustomer() {
		return &APIError{Status: http.StatusConflict, Label: LabelPushInProgress,
			Message: "A payment prompt is already waiting for the customer; wait for its outcome before pushing again."}
	}
	now := s.opts.Clock.Now()
	if p.Expired(now) {
		return &APIError{Status: http.StatusConflict, Label: string(paygatev1.FailureExpiredSession), Message: "Payment session expired; create a new payment."}
	}
	seq := int32(1)
	if p.Spec.PushRequest != nil {
		seq = p.Spec.PushRequest.Sequence + 1
	}
	p.Spec.PushRequest = &paygatev1.PushRequest{Sequence: seq, Phone: paygatev1.MobileNumber(number), Gateway: gateway, RequestedAt: *ptrMicro(now)}
	return nil
}

func ptrMicro(t time.Time) *metav1.MicroTime {
	mt := metav1.NewMicroTime(t.UTC().Truncate(time.Microsecond))
	return &mt
}
