// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/events"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/phone"
	"github.com/paygate/paygate/pkg/paygate"
	"github.com/paygate/paygate/pkg/paygate/signing"
)

// formatTime is the API's timestamp form: ISO 8601 UTC with microseconds and Z.
var formatTime = events.FormatTime

// amounts renders the stored amounts of one response in currency, as JSON numbers at the
// currency's scale (money.JSONAmount). It keeps the first amount that cannot be rendered exactly
// in err; a response with such an amount is never sent: its caller logs err and answers
// SERVER_ERROR in the error shape (serverError), never a wrong amount.
type amounts struct {
	currency paygatev1.CurrencyCode
	err      error
}

func (a *amounts) json(d paygatev1.Decimal) json.Number {
	n, err := money.JSONAmount(string(d), string(a.currency))
	if err != nil && a.err == nil {
		a.err = err
	}
	return n
}

// CheckoutURL is the signed, time-limited hosted checkout link of a payment. The signature is
// HMAC-SHA256 over "<trx_id>.<expires unix>" with the checkout key, so it is deterministic: a
// replayed response carries the same link.
func (s *Server) CheckoutURL(p *paygatev1.Payment) string {
	exp := strconv.FormatInt(p.Spec.ExpiresAt.Unix(), 10)
	return s.opts.PublicURL + "/checkout/" + url.PathEscape(p.Name) + "?expires=" + exp + "&signature=" + s.checkoutSignature(p.Name, exp)
}

func (s *Server) checkoutSignature(trxID, expires string) string {
	return signing.SignMAC(s.opts.CheckoutKey, checkoutPayload(trxID, expires))
}

// checkoutSignatureValid reports whether sig (hex, either case) is the signature of a checkout
// link for trxID and expires, compared in constant time.
func (s *Server) checkoutSignatureValid(trxID, expires, sig string) bool {
	return signing.VerifyMAC(s.opts.CheckoutKey, sig, checkoutPayload(trxID, expires)) == nil
}

// checkoutPayload is what a checkout link signs: "<trx_id>.<expires unix>".
func checkoutPayload(trxID, expires string) []byte { return []byte(trxID + "." + expires) }

func (s *Server) createResponse(p *paygatev1.Payment) (map[string]any, error) {
	checkout := s.CheckoutURL(p)
	am := amounts{currency: p.Spec.Currency}
	data := map[string]any{
		"trx_id":       p.Name,
		"merchant_ref": p.Spec.MerchantReference,
		"amount":       am.json(p.Spec.Amount),
		"currency":     string(p.Spec.Currency),
		"status":       string(paygatev1.PaymentPending),
		"payment_mode": string(p.Spec.Mode),
		"checkout_url": checkout,
		"expires_at":   formatTime(p.Spec.ExpiresAt.Time),
		"environment":  string(p.Spec.Environment),
	}
	return map[string]any{"status": "success", "data": data, "payment_url": checkout, "trx_id": p.Name}, am.err
}

func (s *Server) legacyCreateResponse(c *caller, p *paygatev1.Payment, gateways []paygatev1.Gateway, restricted bool) (map[string]any, error) {
	checkout := s.CheckoutURL(p)
	am := amounts{currency: p.Spec.Currency}
	ids, codes := []int64{}, []string{}
	for _, g := range gateways {
		ids = append(ids, g.Status.ID)
		codes = append(codes, g.Name)
	}
	methods := p.Spec.AllowPaymentMethods
	if methods == nil {
		methods = []string{}
	}
	return map[string]any{
		"payment_url": checkout,
		"info": map[string]any{
			"ref_trx":                             p.Spec.MerchantReference,
			"description":                         p.Spec.Description,
			"ipn_url":                             p.Spec.WebhookURL,
			"cancel_redirect":                     p.Spec.CancelRedirect,
			"success_redirect":                    p.Spec.SuccessRedirect,
			"customer_name":                       p.Spec.Customer.Name,
			"customer_email":                      p.Spec.Customer.Email,
			"merchant_id":                         c.merchant.Status.ID,
			"merchant_name":                       c.merchant.Spec.DisplayName,
			"amount":                              am.json(p.Spec.Amount),
			"currency_code":                       string(p.Spec.Currency),
			"environment":                         string(p.Spec.Environment),
			"is_sandbox":                          p.Spec.Environment == paygatev1.EnvironmentSandbox,
			"allow_payment_methods":               methods,
			"merchant_payment_methods_restricted": restricted,
			"merchant_payment_method_ids":         ids,
			"merchant_payment_method_codes":       codes,
		},
		"data": map[string]any{"trx_id": p.Name, "checkout_url": checkout},
	}, am.err
}

// paymentRecord is the record of get-payment and of list items (docs/api.md). The server builds
// the client's own type (pkg/paygate), so what the client decodes is what the server sends. Its
// amount_refunded and refund_state come from the payment's refunds in the cache (refundsSummary).
func (s *Server) paymentRecord(p *paygatev1.Payment) (paygate.Payment, error) {
	am := amounts{currency: p.Spec.Currency}
	rec := paygate.Payment{
		TrxID: p.Name, MerchantRef: p.Spec.MerchantReference, Status: string(p.Phase()), Reason: p.Status.Reason,
		Amount: am.json(p.Spec.Amount), Currency: string(p.Spec.Currency),
		PaymentMode: string(p.Spec.Mode), Gateway: string(p.Status.Gateway),
		Customer:    paygate.Customer{Name: p.Spec.Customer.Name, Email: p.Spec.Customer.Email, Phone: phone.Mask(string(p.Spec.Customer.Phone))},
		Description: p.Spec.Description, Environment: string(p.Spec.Environment),
		CheckoutURL: s.CheckoutURL(p), ExpiresAt: formatTime(p.Spec.ExpiresAt.Time),
		CreatedAt: formatTime(createdAt(p)), UpdatedAt: formatTime(updatedAt(p)),
		Remark: p.MerchantRemark(),
	}
	// fee and net_amount are null while the payment is pending; once it is terminal they are its
	// settlement (Payment.Settlement, the rule the verification record and webhooks share).
	if p.Terminal() {
		f, n := p.Settlement()
		fee, net := am.json(f), am.json(n)
		rec.Fee, rec.NetAmount = &fee, &net
	}
	if am.err != nil {
		return rec, am.err
	}
	var err error
	rec.AmountRefunded, rec.RefundState, rec.LateSettlement, err = s.refundsSummary(p)
	return rec, err
}

// verification is the verify-payment record (verificationRecord) with the payment's refunds from
// the cache (refundsSummary).
func (s *Server) verification(p *paygatev1.Payment) (paygate.Verification, error) {
	v, err := verificationRecord(p)
	if err != nil {
		return v, err
	}
	v.AmountRefunded, v.RefundState, v.LateSettlement, err = s.refundsSummary(p)
	return v, err
}

// refundsSummary is what a payment record says of p's refunds (docs/api.md, The payment record):
// amount_refunded, the sum of its refunds that succeeded, at the currency's scale, and
// refund_state, "none" while it is zero, "full" once it reaches the payment's amount, "partial" in
// between. Refunds still pending or processing are not counted: no money went back yet. The
// refunds are read through the cache's index by payment, so a list costs one lookup per payment
// on its page, never a scan of the merchant's refunds. It also renders the payment's late
// settlement (lateSettlementRecord), whose refund is one of them.
func (s *Server) refundsSummary(p *paygatev1.Payment) (json.Number, string, *paygate.LateSettlement, error) {
	// The renderers have no request context; the cache answers at once (its Refund informer
	// synced before the API served), the bound only keeps a misconfigured cache from hanging.
	ctx, cancel := context.WithTimeout(context.Background(), refundsReadTimeout)
	defer cancel()
	refunds, err := s.paymentRefunds(ctx, p, false)
	if err != nil {
		return "", "", nil, fmt.Errorf("listing the refunds of payment %s: %w", p.Name, err)
	}
	refunded, state, err := summarizeRefunds(p, refunds)
	if err != nil {
		return "", "", nil, err
	}
	late, err := lateSettlementRecord(p, refunds)
	return refunded, state, late, err
}

// Late-settlement handlings (docs/api.md, Late settlements).
const (
	lateFlagged  = "flagged"
	lateCredited = "credited"
	lateRefunded = "refunded"
)

// lateSettlementRecord is what a payment record says of money the provider settled after the
// payment failed (Payment.SettledLate), nil for every other payment. The handling follows from
// what the payment controller stored under the merchant's policy (controllers/late_settlement.go):
// no net amount, flagged; a Refund of the payment labelled paygate.dev/late-settlement, refunded;
// else credited, the stored net amount counted in the balance.
func lateSettlementRecord(p *paygatev1.Payment, refunds []paygatev1.Refund) (*paygate.LateSettlement, error) {
	if !p.SettledLate() {
		return nil, nil
	}
	am := amounts{currency: p.Spec.Currency}
	rec := &paygate.LateSettlement{Amount: am.json(p.Spec.Amount), Handling: lateFlagged, NetAmount: am.json("0")}
	if c := meta.FindStatusCondition(p.Status.Conditions, paygatev1.ConditionLateSettlement); c != nil {
		rec.SettledAt = formatTime(c.LastTransitionTime.Time)
	}
	if p.Status.NetAmount != "" {
		rec.Handling, rec.NetAmount = lateCredited, am.json(p.Status.NetAmount)
		for i := range refunds {
			if refunds[i].Labels[paygatev1.LabelLateSettlement] == "true" {
				rec.Handling, rec.NetAmount, rec.RefundID = lateRefunded, am.json("0"), refunds[i].Name
				break
			}
		}
	}
	return rec, am.err
}

// summarizeRefunds is refundsSummary of the refunds given. A stored amount that does not parse is
// an error, never a wrong figure.
func summarizeRefunds(p *paygatev1.Payment, refunds []paygatev1.Refund) (json.Number, string, error) {
	cur, ok := money.LookupCurrency(string(p.Spec.Currency))
	if !ok {
		return "", "", fmt.Errorf("payment %s: unknown currency %q", p.Name, p.Spec.Currency)
	}
	refunded := money.Amount{}
	for i := range refunds {
		if refunds[i].Phase() != paygatev1.RefundSuccess {
			continue
		}
		a, err := money.ParseAmount(string(refunds[i].Spec.Amount))
		if err != nil {
			return "", "", fmt.Errorf("refund %s: amount: %w", refunds[i].Name, err)
		}
		refunded = refunded.Add(a)
	}
	state := refundStateNone
	if !refunded.IsZero() {
		paid, err := money.ParseAmount(string(p.Spec.Amount))
		if err != nil {
			return "", "", fmt.Errorf("payment %s: amount: %w", p.Name, err)
		}
		state = refundStatePartial
		if refunded.Cmp(paid) >= 0 {
			state = refundStateFull
		}
	}
	return refunded.JSONNumber(cur.Scale), state, nil
}

// refundsReadTimeout bounds refundsSummary's read of the cache.
const refundsReadTimeout = 10 * time.Second

// refundRecord is the refund as the API shows it (docs/api.md, The refund record): the data of
// its events too (events.NewRefundData).
func refundRecord(r *paygatev1.Refund) (paygate.Refund, error) { return events.NewRefundData(r) }

// verificationRecord is the verify-payment record (docs/api.md, Reading payments), of a payment
// without refunds (Server.verification adds them). fee and net_amount follow Payment.Settlement:
// while pending fee is 0 and net_amount equals the amount (nothing has been charged yet); a failed
// payment reports 0 and 0, as its webhook does.
func verificationRecord(p *paygatev1.Payment) (paygate.Verification, error) {
	am := amounts{currency: p.Spec.Currency}
	fee, net := p.Settlement()
	return paygate.Verification{
		Status: string(p.Phase()), TrxID: p.Name, MerchantRef: p.Spec.MerchantReference,
		Amount: am.json(p.Spec.Amount), Fee: am.json(fee),
		Currency: string(p.Spec.Currency), NetAmount: am.json(net),
		Customer:    paygate.Customer{Name: p.Spec.Customer.Name, Email: p.Spec.Customer.Email},
		Description: p.Spec.Description, Environment: string(p.Spec.Environment),
		CreatedAt: formatTime(createdAt(p)), UpdatedAt: formatTime(updatedAt(p)),
		Remark:         p.MerchantRemark(),
		AmountRefunded: am.json("0"), RefundState: refundStateNone,
	}, am.err
}

// createdAt is when the payment was accepted, to the microsecond when the apiserver recorded it.
func createdAt(p *paygatev1.Payment) time.Time {
	if p.Spec.CreatedAt != nil {
		return p.Spec.CreatedAt.Time
	}
	return p.CreationTimestamp.Time
}

// updatedAt is the latest thing that happened to a payment that its record shows: a push
// request, an attempt starting or finishing, settlement. Each is stored to the microsecond, so a
// payment that settles within the second it was created still reports a later updated_at.
// Conditions are left out: their times have whole seconds, and they describe the controller's
// work, not the payment.
func updatedAt(p *paygatev1.Payment) time.Time {
	t := createdAt(p)
	later := func(mt *metav1.MicroTime) {
		if mt != nil && mt.After(t) {
			t = mt.Time
		}
	}
	if p.Spec.PushRequest != nil {
		later(&p.Spec.PushRequest.RequestedAt)
	}
	for i := range p.Status.Attempts {
		later(&p.Status.Attempts[i].StartedAt)
		later(p.Status.Attempts[i].FinishedAt)
	}
	later(p.Status.SettledAt)
	return t
}
