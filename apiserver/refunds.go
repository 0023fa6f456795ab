// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/names"
	"github.com/paygate/paygate/internal/phone"
	"github.com/paygate/paygate/internal/provider"
)

// Refunds (docs/api.md, Refunds) return money of a successful payment to the customer who paid
// it. The apiserver checks what it can from its cache and records a Refund; the balance
// controller then reserves it (or fails it with REFUND_EXCEEDS_PAYMENT or INSUFFICIENT_BALANCE)
// in creation order together with the payouts, and the refund controller asks the provider. The
// apiserver never moves money.

var errRefundNotFound = &APIError{Status: http.StatusNotFound, Label: LabelNotFound, Message: "Refund not found."}

// purposeRefund derives a refund's id from the claim of its Idempotency-Key, as
// names.PurposePayout does a payout's: its own purpose, so a refund and a payout made with one
// key never share an id.
const purposeRefund = "refund"

// maxRefundReason is the longest reason a refund may give, in characters (the CRD's bound).
const maxRefundReason = 255

// refundPaymentIndex indexes the cache's Refunds by the trx id of the payment they refund
// (refundPaymentKeys). Start registers it, so that a payment record finds its payment's refunds
// without a scan of the namespace; paymentRefunds reads through a label selector where a reader
// has no such index (a plain client).
const refundPaymentIndex = "spec.payment.trxID"

// refundPaymentKeys are the refundPaymentIndex values of a Refund.
func refundPaymentKeys(o client.Object) []string {
	if r, ok := o.(*paygatev1.Refund); ok && r.Spec.Payment.TrxID != "" {
		return []string{r.Spec.Payment.TrxID}
	}
	return nil
}

// Refund states of a payment record (refund_state).
const (
	refundStateNone    = "none"
	refundStatePartial = "partial"
	refundStateFull    = "full"
)

var refundStatuses = []string{string(paygatev1.RefundPending), string(paygatev1.RefundProcessing), string(paygatev1.RefundSuccess), string(paygatev1.RefundFailed)}

// createRefund answers POST /api/v1/payments/{trx_id}/refunds. The payment is looked up before
// the Idempotency-Key is: an unknown payment (or another merchant's or environment's) is 404 and
// leaves nothing behind, not even the key's record.
func (s *Server) createRefund(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	// The payment is only read (the cache's own object when it is there), never written.
	p, err := s.paymentToRender(r.Context(), c, r.PathValue("trx_id"))
	if err != nil {
		s.serverError("Reading a payment", err).write(w)
		return
	}
	if p == nil {
		writeError(w, errNotFound)
		return
	}
	s.replayProof(w, r, func(ctx context.Context, idemKey string) response { return s.doCreateRefund(ctx, idemKey, p) }, s.keptRefundResponse)
}

// refundIDForKey is the id of the refund a claim of an Idempotency-Key creates, as a payout's
// (payoutIDForKey).
func refundIDForKey(key string, rec *paygatev1.IdempotencyKey) string {
	return names.DeriveUUID(purposeRefund, key, string(rec.UID), rec.Spec.ExpiresAt.UTC().Format(time.RFC3339))
}

// keptRefundResponse finds the answer kept on the refund a claim of key created (keptLookup).
func (s *Server) keptRefundResponse(ctx context.Context, key string, rec *paygatev1.IdempotencyKey) (response, bool, error) {
	rf, err := s.refund(ctx, callerFrom(ctx), refundIDForKey(key, rec), false)
	if err != nil || rf == nil {
		return response{}, false, err
	}
	resp, _ := keptResponse(rf) // created before answers were kept there: status 0
	return resp, true, nil
}

// refundSource is what a refund returns money from: the payment's collecting push attempt, the
// customer's number it collected from, and what its gateway can refund.
type refundSource struct {
	attempt     *paygatev1.PushAttempt
	scope       provider.RefundScope
	destination paygatev1.MobileNumber
}

// doCreateRefund checks a refund of p in order (docs/api.md, POST /api/v1/payments/{trx_id}/refunds)
// and records it. Nothing is written on a refusal but the Idempotency-Key's record.
func (s *Server) doCreateRefund(ctx context.Context, idemKey string, p *paygatev1.Payment) response {
	c := callerFrom(ctx)
	if apiErr := refundGate(c.merchant); apiErr != nil {
		return errorResponse(apiErr)
	}
	f, apiErr := decodeObject(c.body)
	if apiErr != nil {
		return errorResponse(apiErr)
	}
	if phase := p.Phase(); phase != paygatev1.PaymentSuccess {
		return errorResponse(&APIError{Status: http.StatusConflict, Label: LabelPaymentNotRefundable,
			Message: "The payment is " + string(phase) + "; only a successful payment can be refunded."})
	}
	cur, ok := money.LookupCurrency(string(p.Spec.Currency))
	if !ok {
		return s.serverError("Refunding a payment", fmt.Errorf("payment %s: unknown currency %q", p.Name, p.Spec.Currency))
	}
	paid, err := money.ParseAmount(string(p.Spec.Amount))
	if err != nil {
		return s.serverError("Refunding a payment", fmt.Errorf("payment %s: amount: %w", p.Name, err))
	}

	v := validation{}
	reason, _ := f.str(v, "reason")
	if utf8.RuneCountInString(reason) > maxRefundReason {
		v.add("reason", "The reason must be at most %d characters.", maxRefundReason)
	}
	var amount money.Amount
	raw, given := f["amount"]
	if given {
		a, err := money.ParseJSONNumber(raw)
		switch {
		case err != nil || a.IsZero():
			v.add("amount", "The amount must be a positive decimal number.")
		case money.ValidateForCurrency(a, cur) != nil:
			v.add("amount", "The amount has too many decimal places for %s.", cur.Code)
		default:
			amount = a
		}
	}
	if len(v) > 0 {
		return errorResponse(validationError(v))
	}

	col, apiErr := s.refundCollection(ctx, p)
	if apiErr != nil {
		return errorResponse(apiErr)
	}
	refunds, err := s.paymentRefunds(ctx, p, true)
	if err != nil {
		return s.serverError("Listing a payment's refunds", err)
	}
	// What is left to refund counts every refund that has not failed, reserved or not yet.
	var active []*paygatev1.Refund
	claimed := money.Amount{}
	for i := range refunds {
		if refunds[i].Phase() == paygatev1.RefundFailed {
			continue
		}
		a, err := money.ParseAmount(string(refunds[i].Spec.Amount))
		if err != nil {
			return s.serverError("Listing a payment's refunds", fmt.Errorf("refund %s: amount: %w", refunds[i].Name, err))
		}
		active = append(active, &refunds[i])
		claimed = claimed.Add(a)
	}
	left, err := paid.Sub(claimed)
	if err != nil {
		left = money.Amount{} // more claimed than paid: the balance controller fails the excess
	}
	if !given {
		amount = left
	}

	// With an Idempotency-Key the id derives from the claim of the key, as a payout's does
	// (doCreatePayout), so every replica names the refund alike and the API server lets one
	// create it; without a key the id is random.
	id := uuid.NewString()
	rec := idempotencyRecordFrom(ctx)
	if idemKey != "" && rec != nil {
		id = refundIDForKey(idemKey, rec)
	}
	// A concurrent request with the same Idempotency-Key (and body) may have created this refund
	// already: the refund it made then counts against the payment and the balance, and the answer
	// is that refund, never a refusal that the key would replay for ever.
	refuse := func(e *APIError) response {
		if idemKey != "" {
			existing, err := s.refund(ctx, c, id, true)
			if err != nil {
				return s.serverError("Reading a refund", err)
			}
			if existing != nil {
				return s.refundAnswer(existing)
			}
		}
		return errorResponse(e)
	}
	units := func(a money.Amount) string { return a.StringFixed(cur.Scale) + " " + cur.Code }
	if col.scope == provider.RefundsFull {
		if p.AttemptReceipt(col.attempt) == "" {
			return refuse(&APIError{Status: http.StatusUnprocessableEntity, Label: LabelRefundNotSupported,
				Message: "The payment's gateway refunds by reversing the provider's receipt, and the provider has not given this payment's receipt."})
		}
		if len(active) > 0 {
			return refuse(&APIError{Status: http.StatusUnprocessableEntity, Label: LabelRefundNotSupported,
				Message: "The payment's gateway refunds a whole payment once only, and this payment already has a refund (" + active[0].Name + ")."})
		}
		if !amount.Equal(paid) {
			return refuse(&APIError{Status: http.StatusUnprocessableEntity, Label: LabelRefundNotSupported,
				Message: "The payment's gateway refunds only the whole payment (" + units(paid) + "); a partial refund is not possible.",
				Errors:  map[string][]string{"amount": {"The amount must be the whole payment, " + units(paid) + ", or left out."}}})
		}
	}
	if left.IsZero() {
		return refuse(validationError(map[string][]string{"amount": {"Nothing is left to refund: the payment's refunds already return all of it."}}))
	}
	if amount.Cmp(left) > 0 {
		return refuse(validationError(map[string][]string{"amount": {"The amount is more than what is left to refund of this payment (" + units(left) + ")."}}))
	}
	if avail, err := s.availableBalance(ctx, c, cur); err != nil {
		return s.serverError("Reading a balance", err)
	} else if amount.Cmp(avail) > 0 {
		return refuse(&APIError{Status: http.StatusUnprocessableEntity, Label: LabelInsufficientBalance,
			Message: "The available balance of " + units(avail) + " does not cover this refund.",
			Errors:  map[string][]string{"amount": {"The amount is more than the available balance."}}})
	}

	a := col.attempt
	rf := &paygatev1.Refund{
		ObjectMeta: metav1.ObjectMeta{
			Name: id, Namespace: c.merchant.Namespace,
			Labels: map[string]string{paygatev1.LabelMerchant: c.merchant.Name, paygatev1.LabelEnvironment: string(c.env),
				paygatev1.LabelPayment: p.Name},
		},
		Spec: paygatev1.RefundSpec{
			MerchantRef: paygatev1.MerchantReference{Name: c.merchant.Name}, Environment: c.env,
			Payment: paygatev1.RefundedPayment{
				TrxID: p.Name, Amount: paygatev1.Decimal(paid.StringFixed(cur.Scale)),
				AttemptReference: a.Reference, ProviderReference: attemptProviderReference(p, a), Receipt: p.AttemptReceipt(a),
			},
			Amount:      paygatev1.Decimal(amount.StringFixed(cur.Scale)),
			Currency:    p.Spec.Currency,
			Destination: col.destination,
			Gateway:     a.Gateway,
			Reason:      reason,
			CreatedAt:   *ptrMicro(s.opts.Clock.Now()),
		},
	}
	answer := s.refundCreated(rf)
	if idemKey != "" {
		rf.Annotations = map[string]string{annotationIdempotencyKey: idemKey}
		if rec != nil {
			answer = keepResponse(rf, answer)
		}
	}
	if err := s.opts.Writer.Create(ctx, rf); err != nil {
		if !apierrors.IsAlreadyExists(err) || idemKey == "" {
			return s.serverError("Creating a refund", err)
		}
		// A concurrent request with the same Idempotency-Key (and the same body: the key's record
		// refuses another) created it first: answer with that refund.
		existing, err := s.refund(ctx, c, rf.Name, true)
		if err != nil || existing == nil {
			return s.serverError("Reading a refund after a concurrent create", errors.Join(err, errors.New("refund not found")))
		}
		return s.refundAnswer(existing)
	}
	s.opts.Log.Info("Refund requested", "merchant", c.merchant.Name, "environment", c.env, "refund", rf.Name,
		"trxID", p.Name, "amount", rf.Spec.Amount, "currency", rf.Spec.Currency, "gateway", rf.Spec.Gateway,
		"destination", phone.Mask(string(rf.Spec.Destination)))
	return answer
}

// refundAnswer is the answer to a create that found rf created by a concurrent request: the
// answer kept on it, else its record now.
func (s *Server) refundAnswer(rf *paygatev1.Refund) response {
	if kept, ok := keptResponse(rf); ok {
		return kept
	}
	return s.refundCreated(rf)
}

// refundCreated is the answer of a create that recorded rf (or found it recorded).
func (s *Server) refundCreated(rf *paygatev1.Refund) response {
	rec, err := refundRecord(rf)
	if err != nil {
		return s.serverError("Rendering a refund", namedError("refund", rf, err))
	}
	return jsonResponse(http.StatusOK, map[string]any{"status": "success", "data": rec, "id": rec.ID})
}

// refundGate applies the payout gates that concern a refund, in their order and in both
// environments: the KYB review approved, then the business approved. (A refund goes back to the
// customer's number, so the settlement-number gate does not apply.) A suspended business, and a
// business that is not approved calling production, were refused by authentication already.
func refundGate(m *paygatev1.Merchant) *APIError {
	switch {
	case m.Spec.KYBStatus != paygatev1.KYBApproved:
		return &APIError{Status: http.StatusForbidden, Label: LabelRefundRejected,
			Message: "Refunds need an approved KYB review; this business's KYB status is " + orPending(string(m.Spec.KYBStatus)) + "."}
	case m.Spec.BusinessStatus != paygatev1.BusinessApproved:
		return &APIError{Status: http.StatusForbidden, Label: LabelRefundRejected,
			Message: "Refunds need an approved business; this business is " + orPending(string(m.Spec.BusinessStatus)) + "."}
	}
	return nil
}

func orPending(s string) string {
	if s == "" {
		return "pending"
	}
	return s
}

// refundCollection finds what a refund of p returns money from: its succeeded push attempt
// (else its latest one, for a payment an operator resolved), the customer's number that attempt
// pushed to (the payment controller's choice: the push request's number for the attempt that
// answers it, else the number given at creation), and that attempt's gateway with the refunds it
// can make. A payment whose money cannot be refunded through its gateway is REFUND_NOT_SUPPORTED.
func (s *Server) refundCollection(ctx context.Context, p *paygatev1.Payment) (*refundSource, *APIError) {
	notSupported := func(why string) *APIError {
		return &APIError{Status: http.StatusUnprocessableEntity, Label: LabelRefundNotSupported, Message: why}
	}
	var a *paygatev1.PushAttempt
	for i := len(p.Status.Attempts) - 1; i >= 0; i-- {
		if p.Status.Attempts[i].Phase == paygatev1.AttemptSucceeded {
			a = &p.Status.Attempts[i]
			break
		}
	}
	if a == nil {
		a = p.LatestAttempt()
	}
	if a == nil || a.Reference == "" || a.Gateway == "" {
		return nil, notSupported("The payment was not collected through a provider that Paygate can ask to refund it.")
	}
	dest := p.Spec.Customer.Phone
	if p.Spec.PushRequest != nil && p.Spec.PushRequest.Sequence == a.Sequence {
		dest = p.Spec.PushRequest.Phone
	}
	if dest == "" {
		return nil, notSupported("The payment has no customer number to refund to.")
	}
	// Read past the cache before refusing on its word, as disbursingGateway does.
	gw := &paygatev1.Gateway{}
	err := s.opts.Cache.Get(ctx, client.ObjectKey{Name: string(a.Gateway)}, gw)
	if apierrors.IsNotFound(err) {
		err = s.opts.APIReader.Get(ctx, client.ObjectKey{Name: string(a.Gateway)}, gw)
	}
	if apierrors.IsNotFound(err) {
		return nil, notSupported("The payment's gateway " + string(a.Gateway) + " no longer exists; it cannot refund the payment.")
	} else if err != nil {
		return nil, s.serverError("Reading a gateway", err).err
	}
	scope := provider.GatewayRefundScope(gw, p.Spec.Environment)
	if scope == provider.RefundsNone {
		return nil, notSupported("The payment's gateway " + string(a.Gateway) + " cannot refund payments.")
	}
	return &refundSource{attempt: a, scope: scope, destination: dest}, nil
}

// attemptProviderReference is the provider's id for the collecting attempt: the one its
// acceptance stored, else the one a verified callback told (paygatev1.AnnotationProviderReference),
// the rule of the payment controller's status queries.
func attemptProviderReference(p *paygatev1.Payment, a *paygatev1.PushAttempt) string {
	id := p.AttemptProviderReference(a)
	if len(id) > 128 { // the CRD's bound: a refund is never refused for it, the id is only a help
		return ""
	}
	return id
}

// paymentRefunds lists the refunds of p: those the cache holds (refundsOf), and, with an archive,
// the archived ones, each once. A refund is archived only after its payment left etcd
// (docs/archive.md), so the archive is asked only when askArchive is set (a refund's create) or
// when the cache does not hold p (a payment read from the archive, or one deleted a moment ago).
func (s *Server) paymentRefunds(ctx context.Context, p *paygatev1.Payment, askArchive bool) ([]paygatev1.Refund, error) {
	var live []paygatev1.Refund
	var err error
	indexed := false
	if !askArchive { // a record to render: the refund index, which may lag the cache by a moment
		live, indexed = indexedRefundsOf(s.lists.refundIndex(), bucketKey{p.Namespace, p.Spec.MerchantRef.Name, p.Spec.Environment}, p.Name)
	}
	if !indexed {
		live, err = s.refundsOf(ctx, p.Namespace, p.Name, p.Spec.MerchantRef.Name, p.Spec.Environment)
	}
	if err != nil || s.opts.Archive == nil {
		return live, err
	}
	if !askArchive {
		// A live payment's refunds are all live (a refund is archived after its payment); the
		// payment index says whether it is live without a cache read per rendered payment.
		if isLive, ok := indexedLive(s.lists.paymentIndex(), p); ok && isLive {
			return live, nil
		}
		err := s.opts.Cache.Get(ctx, client.ObjectKeyFromObject(p), &paygatev1.Payment{}, client.UnsafeDisableDeepCopy)
		if err == nil {
			return live, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	archived, err := fromArchive(ctx, "refunds_of_payments", func(ctx context.Context) (map[string][]paygatev1.Refund, error) {
		return s.opts.Archive.RefundsOfPayments(ctx, p.Namespace, []string{p.Name})
	})
	if err != nil {
		return nil, err
	}
	seen := map[types.UID]bool{}
	for i := range live {
		seen[live[i].UID] = true
	}
	for _, f := range archived[p.Name] {
		if !seen[f.UID] && f.Spec.MerchantRef.Name == p.Spec.MerchantRef.Name && f.Spec.Environment == p.Spec.Environment {
			live = append(live, f)
		}
	}
	return live, nil
}

// refundsOf lists the refunds of the payment trxID in namespace that the cache holds (the cache's
// own objects: they are only read), through refundPaymentIndex, or through the LabelPayment label
// where the reader has no such index. Only refunds of merchant in env count.
func (s *Server) refundsOf(ctx context.Context, namespace, trxID, merchant string, env paygatev1.Environment) ([]paygatev1.Refund, error) {
	if s.opts.Cache == nil {
		return nil, nil
	}
	var list paygatev1.RefundList
	err := s.opts.Cache.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{refundPaymentIndex: trxID},
		client.UnsafeDisableDeepCopy)
	if err != nil {
		// A reader without the index (a plain client): the label, which every refund carries.
		list = paygatev1.RefundList{}
		if err := s.opts.Cache.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{paygatev1.LabelPayment: trxID},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
	}
	return slices.DeleteFunc(list.Items, func(r paygatev1.Refund) bool {
		return r.Spec.Payment.TrxID != trxID || r.Spec.MerchantRef.Name != merchant || r.Spec.Environment != env
	}), nil
}

// refundOwned reports whether r belongs to the caller's merchant and environment (the rule of
// caller.owns).
func refundOwned(r *paygatev1.Refund, c *caller) bool {
	return r.Spec.MerchantRef.Name == c.merchant.Name && r.Spec.Environment == c.env
}

// refund reads one of the caller's refunds, live or archived, as a payout is read
// (readArchivable); live reads the API server first. A refund of another merchant or
// environment, or an id that is not a UUID, is not found.
func (s *Server) refund(ctx context.Context, c *caller, id string, live bool) (*paygatev1.Refund, error) {
	if !payoutIDPattern.MatchString(id) {
		return nil, nil
	}
	return readArchivable[paygatev1.Refund](ctx, s, c, id, live, "get_refund", s.archiveGetRefund)
}

// archiveGetRefund is Archive.GetRefund (the archive is set when it is called).
func (s *Server) archiveGetRefund(ctx context.Context, namespace, name string) (*paygatev1.Refund, error) {
	return s.opts.Archive.GetRefund(ctx, namespace, name)
}

func (s *Server) getRefund(w http.ResponseWriter, r *http.Request) {
	rf, err := s.refund(r.Context(), callerFrom(r.Context()), r.PathValue("id"), false)
	answerRecord(s, w, "refund", rf, err, errRefundNotFound, func(rf *paygatev1.Refund) (any, error) { return dataBody(refundRecord(rf)) })
}

// listRefunds answers GET /api/v1/refunds: the caller's refunds, newest first, filtered by
// payment (a trx_id) and status, paginated as the payout list is.
func (s *Server) listRefunds(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	q := r.URL.Query()
	v := validation{}
	limit, offset := pageParams(v, r)
	status := q.Get("status")
	if status != "" && !slices.Contains(refundStatuses, status) {
		v.add("status", "The status must be pending, processing, success or failed.")
	}
	payment := q.Get("payment")
	if len(v) > 0 {
		writeError(w, validationError(v))
		return
	}
	k := listKind[paygatev1.Refund]{
		kind:     archive.KindRefund,
		uid:      func(f *paygatev1.Refund) string { return string(f.UID) },
		terminal: (*paygatev1.Refund).Terminal,
		compare:  compareRefunds,
	}
	// Archived refunds are terminal; a payment filter that is no trx_id selects none.
	if (status == "" || status == string(paygatev1.RefundSuccess) || status == string(paygatev1.RefundFailed)) &&
		(payment == "" || trxIDPattern.MatchString(payment)) {
		k.archived = func(ctx context.Context, limit, offset int) (archive.Page[paygatev1.Refund], error) {
			return s.opts.Archive.ListRefunds(ctx, archive.RefundFilter{Namespace: c.merchant.Namespace, Merchant: c.merchant.Name,
				Environment: c.env, Phase: paygatev1.RefundPhase(status), Payment: payment}, limit, offset)
		}
	}
	var live liveItems[paygatev1.Refund]
	if x := s.lists.refundIndex(); x.ready() && (payment == "" || trxIDPattern.MatchString(payment)) { // docs/performance.md, List indexes
		facet, key := facetOf(status, payment)
		live = x.live(callerBucket(c), facet, key, func(ctx context.Context) (archive.Page[paygatev1.Refund], error) {
			return s.opts.Archive.ListRefunds(ctx, archive.RefundFilter{Namespace: c.merchant.Namespace, Merchant: c.merchant.Name,
				Environment: c.env}, 1, 0)
		})
	} else {
		var items []paygatev1.Refund
		scanned := 0
		if payment != "" {
			// One payment's refunds, through the index: a name that is no trx_id matches nothing.
			if trxIDPattern.MatchString(payment) {
				var err error
				if items, err = s.refundsOf(r.Context(), c.merchant.Namespace, payment, c.merchant.Name, c.env); err != nil {
					s.serverError("Listing refunds", err).write(w)
					return
				}
			}
		} else {
			var list paygatev1.RefundList
			if err := s.listOwn(r.Context(), c, &list); err != nil {
				s.serverError("Listing refunds", err).write(w)
				return
			}
			items = list.Items
		}
		scanned = len(items)
		items = slices.DeleteFunc(items, func(rf paygatev1.Refund) bool {
			return !refundOwned(&rf, c) || (status != "" && string(rf.Phase()) != status)
		})
		live = newSliceLive(k, items, scanned)
	}
	page, total, err := mergedPage(r.Context(), s, k, live, limit, offset)
	s.observeList("refunds", live.stats())
	if err != nil {
		s.serverError("Listing refunds", err).write(w)
		return
	}
	writeItems(s, w, "refund", page, limit, offset, total, refundRecord)
}

// compareRefunds is the refund list's order (archive.RefundOrder), the payout list's: newest first by spec.createdAt,
// then by id, then by UID, so pages are stable.
func compareRefunds(a, b *paygatev1.Refund) int {
	if c := b.Spec.CreatedAt.Compare(a.Spec.CreatedAt.Time); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(string(a.UID), string(b.UID))
}
