// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/names"
	"github.com/paygate/paygate/internal/payouts"
	"github.com/paygate/paygate/internal/phone"
	"github.com/paygate/paygate/pkg/paygate"
)

var errPayoutNotFound = &APIError{Status: http.StatusNotFound, Label: LabelNotFound, Message: "Payout not found."}

var payoutIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// payoutRequest is a validated payout body with its quote.
type payoutRequest struct {
	quote   payouts.Quote
	gateway *paygatev1.Gateway
	// destination is the settlement number of the payout's currency.
	destination paygatev1.MobileNumber
}

func (s *Server) previewPayout(w http.ResponseWriter, r *http.Request) {
	req, apiErr := s.parsePayout(r.Context(), callerFrom(r.Context()))
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	q := req.quote
	body := map[string]any{
		"amount":         q.Amount.JSONNumber(q.Currency.Scale),
		"fee":            q.Fee.JSONNumber(q.Currency.Scale),
		"payable_amount": q.Payable.JSONNumber(q.Currency.Scale),
		"currency":       q.Currency.Code,
	}
	out := map[string]any{"status": "success", "data": body}
	for k, v := range body { // also at the top level, where the preview's fields are documented
		out[k] = v
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createPayout(w http.ResponseWriter, r *http.Request) {
	s.replayProof(w, r, s.doCreatePayout, s.keptPayoutResponse)
}

// payoutIDForKey is the id of the payout a claim of an Idempotency-Key creates: derived from the
// claim (its record's name, UID and expiry, which every request sharing the claim reads alike),
// so every replica names the payout alike and the API server lets one create it, while the key,
// once expired and claimed afresh, makes a new payout.
func payoutIDForKey(key string, rec *paygatev1.IdempotencyKey) string {
	return names.DeriveUUID(names.PurposePayout, key, string(rec.UID), rec.Spec.ExpiresAt.UTC().Format(time.RFC3339))
}

// keptPayoutResponse finds the answer kept on the payout a claim of key created (keptLookup).
func (s *Server) keptPayoutResponse(ctx context.Context, key string, rec *paygatev1.IdempotencyKey) (response, bool, error) {
	p, err := s.payout(ctx, callerFrom(ctx), payoutIDForKey(key, rec), false)
	if err != nil || p == nil {
		return response{}, false, err
	}
	resp, _ := keptResponse(p) // created before answers were kept there: status 0
	return resp, true, nil
}

// doCreatePayout validates the request, checks the balance the cache shows, and records the
// Payout. The balance controller then reserves it (or refuses it) in creation order; the apiserver
// never moves money.
func (s *Server) doCreatePayout(ctx context.Context, idemKey string) response {
	c := callerFrom(ctx)
	req, apiErr := s.parsePayout(ctx, c)
	if apiErr != nil {
		return errorResponse(apiErr)
	}
	q := req.quote
	// With an Idempotency-Key the id derives from the claim of the key (payoutIDForKey); without
	// a key the id is random.
	id := uuid.NewString()
	rec := idempotencyRecordFrom(ctx)
	if idemKey != "" && rec != nil {
		id = payoutIDForKey(idemKey, rec)
	}
	if avail, err := s.availableBalance(ctx, c, q.Currency); err != nil {
		return s.serverError("Reading a balance", err)
	} else if q.Amount.Cmp(avail) > 0 {
		// A concurrent request with the same Idempotency-Key may have created this payout already,
		// and the balance may lack exactly its reservation: answer with that payout.
		if idemKey != "" {
			existing, err := s.payout(ctx, c, id, true)
			if err != nil {
				return s.serverError("Reading a payout", err)
			}
			if existing != nil {
				if kept, ok := keptResponse(existing); ok {
					return kept
				}
				return s.payoutCreated(existing)
			}
		}
		return errorResponse(&APIError{Status: http.StatusUnprocessableEntity, Label: LabelInsufficientBalance,
			Message: "The available balance of " + avail.StringFixed(q.Currency.Scale) + " " + q.Currency.Code + " does not cover this payout.",
			Errors:  map[string][]string{"amount": {"The amount is more than the available balance."}}})
	}
	now := s.opts.Clock.Now()
	p := &paygatev1.Payout{
		ObjectMeta: metav1.ObjectMeta{
			Name: id, Namespace: c.merchant.Namespace,
			Labels: map[string]string{paygatev1.LabelMerchant: c.merchant.Name, paygatev1.LabelEnvironment: string(c.env)},
		},
		Spec: paygatev1.PayoutSpec{
			MerchantRef: paygatev1.MerchantReference{Name: c.merchant.Name}, Environment: c.env,
			Amount:        paygatev1.Decimal(q.Amount.StringFixed(q.Currency.Scale)),
			Fee:           paygatev1.Decimal(q.Fee.StringFixed(q.Currency.Scale)),
			PayableAmount: paygatev1.Decimal(q.Payable.StringFixed(q.Currency.Scale)),
			Currency:      paygatev1.CurrencyCode(q.Currency.Code),
			Destination:   req.destination,
			Gateway:       req.gateway.Code(),
			CreatedAt:     metav1.NewMicroTime(now),
		},
	}
	answer := s.payoutCreated(p)
	if idemKey != "" {
		p.Annotations = map[string]string{annotationIdempotencyKey: idemKey}
		if rec != nil {
			answer = keepResponse(p, answer)
		}
	}
	// With an Idempotency-Key (or the signature standing in for one) the id is deterministic: a
	// payout with it, live or archived, is this request's own (a retry), never to be created
	// twice. Without a key the id is random.
	var err error
	if idemKey != "" {
		err = createOnce(ctx, s, p, archive.KindPayout, "payouts", "create_payout")
	} else {
		err = s.opts.Writer.Create(ctx, p)
	}
	if err != nil {
		if !apierrors.IsAlreadyExists(err) || idemKey == "" {
			return s.serverError("Creating a payout", err)
		}
		// A concurrent request with the same Idempotency-Key (and the same body: the key's record
		// refuses another) created it first: answer with that payout.
		existing, err := s.payout(ctx, c, p.Name, true)
		if err != nil || existing == nil {
			return s.serverError("Reading a payout after a concurrent create", errors.Join(err, errors.New("payout not found")))
		}
		if kept, ok := keptResponse(existing); ok {
			return kept
		}
		return s.payoutCreated(existing)
	}
	s.opts.Log.Info("Payout requested", "merchant", c.merchant.Name, "environment", c.env, "payout", p.Name,
		"amount", p.Spec.Amount, "currency", p.Spec.Currency, "destination", phone.Mask(string(p.Spec.Destination)))
	return answer
}

// payoutCreated is the answer of a create that recorded p (or found it recorded).
func (s *Server) payoutCreated(p *paygatev1.Payout) response {
	rec, err := payoutRecord(p)
	if err != nil {
		return s.serverError("Rendering a payout", err)
	}
	return jsonResponse(http.StatusOK, map[string]any{"status": "success", "data": rec, "id": rec.ID})
}

// parsePayout applies the gates, then validates currency_code (which picks the payout's currency
// and so its settlement number), amount and destination, and quotes the amount through the
// disbursing gateway. The settlement-number gate is applied twice: for any currency before the
// body is read, and for the payout's currency once currency_code has chosen it.
func (s *Server) parsePayout(ctx context.Context, c *caller) (*payoutRequest, *APIError) {
	if err := payouts.CheckGates(c.merchant, ""); err != nil {
		return nil, &APIError{Status: http.StatusForbidden, Label: LabelPayoutRejected, Message: err.Error()}
	}
	f, apiErr := decodeObject(c.body)
	if apiErr != nil {
		return nil, apiErr
	}
	v := validation{}
	code, _ := f.str(v, "currency_code")
	cur, err := payouts.PayoutCurrency(c.merchant, code)
	switch {
	case errors.Is(err, payouts.ErrNoSettlementCurrency):
		return nil, &APIError{Status: http.StatusForbidden, Label: LabelPayoutRejected,
			Message: "The settlement number's currency is not enabled for this business; ask the platform team."}
	case errors.Is(err, payouts.ErrCurrencyRequired):
		v.add("currency_code", "This business has settlement numbers in %s; the currency_code must name one.", joinCodes(payouts.SettlementCurrencies(c.merchant)))
	case errors.Is(err, payouts.ErrCurrencyNotEnabled):
		v.add("currency_code", "The currency_code must be one of this business's currencies: %s.", joinCodes(c.merchant.Spec.Currencies))
	case err != nil:
		return nil, s.serverError("Choosing a payout currency", err).err
	}
	known := cur.Code != ""
	if known {
		if err := payouts.CheckGates(c.merchant, paygatev1.CurrencyCode(cur.Code)); err != nil {
			return nil, &APIError{Status: http.StatusForbidden, Label: LabelPayoutRejected, Message: err.Error()}
		}
	}
	if dest, ok := f.str(v, "destination"); ok && dest != "" && known && !payouts.SameDestination(c.merchant, paygatev1.CurrencyCode(cur.Code), dest) {
		v.add("destination", "The destination must be the approved settlement number for %s.", cur.Code)
	}
	var amount money.Amount
	if raw, ok := f["amount"]; !ok {
		v.add("amount", "The amount field is required.")
	} else if a, err := money.ParseJSONNumber(raw); err != nil || a.IsZero() {
		v.add("amount", "The amount must be a positive decimal number.")
	} else if known { // else the scale is unknown until currency_code is valid
		if err := money.ValidateForCurrency(a, cur); err != nil {
			v.add("amount", "The amount has too many decimal places for %s.", cur.Code)
		} else {
			amount = a
		}
	}
	if len(v) > 0 {
		return nil, validationError(v)
	}
	gw, err := s.disbursingGateway(ctx, paygatev1.CurrencyCode(cur.Code), c.env)
	if err != nil {
		return nil, s.serverError("Listing gateways", err).err
	}
	if gw == nil {
		return nil, &APIError{Status: http.StatusUnprocessableEntity, Label: LabelNoPayoutMethod,
			Message: "No payout method is available for " + cur.Code + "."}
	}
	q, err := payouts.NewQuote(amount, cur, gw)
	switch {
	case errors.Is(err, payouts.ErrBelowMinimum), errors.Is(err, payouts.ErrAboveMaximum):
		return nil, &APIError{Status: http.StatusUnprocessableEntity, Label: LabelInvalidAmount,
			Message: "The amount is " + err.Error() + ".", Errors: map[string][]string{"amount": {"The amount is " + err.Error() + "."}}}
	case err != nil:
		s.opts.Log.Error(err, "Quoting a payout", "gateway", gw.Name)
		return nil, &APIError{Status: http.StatusUnprocessableEntity, Label: LabelNoPayoutMethod,
			Message: "No payout method is available for " + cur.Code + "."}
	}
	return &payoutRequest{quote: q, gateway: gw, destination: payouts.SettlementNumber(c.merchant, paygatev1.CurrencyCode(cur.Code))}, nil
}

// joinCodes lists currency codes for a message: "TZS", "KES and TZS", "KES, TZS and UGX".
func joinCodes(codes []paygatev1.CurrencyCode) string {
	out := make([]string, len(codes))
	for i, c := range codes {
		out[i] = string(c)
	}
	if len(out) < 2 {
		return strings.Join(out, "")
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

// disbursingGateway finds the gateway that pays out currency, reading past the cache before
// refusing on its word.
func (s *Server) disbursingGateway(ctx context.Context, currency paygatev1.CurrencyCode, env paygatev1.Environment) (*paygatev1.Gateway, error) {
	for _, reader := range []client.Reader{s.opts.Cache, s.opts.APIReader} {
		var list paygatev1.GatewayList
		if err := reader.List(ctx, &list); err != nil {
			return nil, err
		}
		if g := payouts.DisbursingGateway(list.Items, currency, env); g != nil {
			return g, nil
		}
	}
	return nil, nil
}

// availableBalance is what the cached Balance says the caller may still pay out in currency.
func (s *Server) availableBalance(ctx context.Context, c *caller, cur money.Currency) (money.Amount, error) {
	var b paygatev1.Balance
	err := s.opts.Cache.Get(ctx, client.ObjectKey{Namespace: c.merchant.Namespace, Name: paygatev1.BalanceName(c.merchant.Name, c.env)}, &b)
	if apierrors.IsNotFound(err) {
		return money.Amount{}, nil
	}
	if err != nil {
		return money.Amount{}, err
	}
	for _, cb := range b.Status.Currencies {
		if string(cb.Currency) == cur.Code {
			return money.ParseAmount(string(cb.Available))
		}
	}
	return money.Amount{}, nil
}

// payout reads one of the caller's payouts (cache first, then live; live only when asked; then
// the archive, where settled payouts go once they are old enough). A payout of another merchant
// or environment, or an id that is not a UUID, is not found.
func (s *Server) payout(ctx context.Context, c *caller, id string, live bool) (*paygatev1.Payout, error) {
	if !payoutIDPattern.MatchString(id) {
		return nil, nil
	}
	return readArchivable[paygatev1.Payout](ctx, s, c, id, live, "get_payout", s.archiveGetPayout)
}

// archiveGetPayout is Archive.GetPayout (the archive is set when it is called).
func (s *Server) archiveGetPayout(ctx context.Context, namespace, name string) (*paygatev1.Payout, error) {
	return s.opts.Archive.GetPayout(ctx, namespace, name)
}

func (s *Server) getPayout(w http.ResponseWriter, r *http.Request) {
	p, err := s.payout(r.Context(), callerFrom(r.Context()), r.PathValue("id"), false)
	answerRecord(s, w, "payout", p, err, errPayoutNotFound, func(p *paygatev1.Payout) (any, error) { return dataBody(payoutRecord(p)) })
}

var payoutStatuses = []string{string(paygatev1.PayoutPending), string(paygatev1.PayoutProcessing), string(paygatev1.PayoutSuccess), string(paygatev1.PayoutFailed)}

func (s *Server) listPayouts(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	q := r.URL.Query()
	v := validation{}
	limit, offset := pageParams(v, r)
	status := q.Get("status")
	if status != "" && !slices.Contains(payoutStatuses, status) {
		v.add("status", "The status must be pending, processing, success or failed.")
	}
	if len(v) > 0 {
		writeError(w, validationError(v))
		return
	}
	k := listKind[paygatev1.Payout]{
		kind:     archive.KindPayout,
		uid:      func(p *paygatev1.Payout) string { return string(p.UID) },
		terminal: (*paygatev1.Payout).Terminal,
		compare:  comparePayouts,
	}
	if status == "" || status == string(paygatev1.PayoutSuccess) || status == string(paygatev1.PayoutFailed) { // archived payouts are terminal
		k.archived = func(ctx context.Context, limit, offset int) (archive.Page[paygatev1.Payout], error) {
			return s.opts.Archive.ListPayouts(ctx, archive.PayoutFilter{Namespace: c.merchant.Namespace, Merchant: c.merchant.Name,
				Environment: c.env, Phase: paygatev1.PayoutPhase(status)}, limit, offset)
		}
	}
	var live liveItems[paygatev1.Payout]
	if x := s.lists.payoutIndex(); x.ready() { // docs/performance.md, List indexes
		facet, key := facetOf(status, "")
		live = x.live(callerBucket(c), facet, key, func(ctx context.Context) (archive.Page[paygatev1.Payout], error) {
			return s.opts.Archive.ListPayouts(ctx, archive.PayoutFilter{Namespace: c.merchant.Namespace, Merchant: c.merchant.Name,
				Environment: c.env}, 1, 0)
		})
	} else {
		var list paygatev1.PayoutList
		if err := s.listOwn(r.Context(), c, &list); err != nil {
			s.serverError("Listing payouts", err).write(w)
			return
		}
		items := list.Items[:0]
		for _, p := range list.Items {
			if p.Spec.MerchantRef.Name == c.merchant.Name && p.Spec.Environment == c.env && (status == "" || string(p.Phase()) == status) {
				items = append(items, p)
			}
		}
		live = newSliceLive(k, items, len(list.Items))
	}
	page, total, err := mergedPage(r.Context(), s, k, live, limit, offset)
	s.observeList("payouts", live.stats())
	if err != nil {
		s.serverError("Listing payouts", err).write(w)
		return
	}
	writeItems(s, w, "payout", page, limit, offset, total, payoutRecord)
}

// comparePayouts is the payout list's order (archive.PayoutOrder): newest first by
// spec.createdAt, then by id, then by UID, so pages are stable.
func comparePayouts(a, b *paygatev1.Payout) int {
	if c := b.Spec.CreatedAt.Compare(a.Spec.CreatedAt.Time); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(string(a.UID), string(b.UID))
}

// payoutRecord is the payout as the API shows it (docs/api.md, Payouts): the same record its
// payout.* webhook carries. A stored amount that cannot be rendered exactly is an error, never a
// wrong amount.
func payoutRecord(p *paygatev1.Payout) (paygate.Payout, error) { return events.NewPayoutData(p) }
