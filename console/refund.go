// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/consoleauth"
)

// Refunds from the console (docs/console.md, Refunds): owners and finance users refund a
// successful payment from its page, through the merchant API's own refund create, so every rule of
// the API holds (what is left, the balance, the gateway, the gates). The form carries an
// idempotency key made when the page was rendered: the same form sent twice (a double click, a
// browser's retry) is one refund.

// refundKeyPattern is the form's idempotency key: "console-" and a random token.
var refundKeyPattern = regexp.MustCompile(`^console-[A-Za-z0-9_-]{20,50}$`)

// newRefundKey is a fresh idempotency key for a refund form.
func newRefundKey() string {
	_, id, err := consoleauth.NewToken()
	if err != nil {
		return ""
	}
	return "console-" + id[:min(len(id), 40)]
}

// apiAnswer is the part of the merchant API's answer the console shows.
type apiAnswer struct {
	Message string              `json:"message"`
	Label   string              `json:"error"`
	Errors  map[string][]string `json:"errors"`
	ID      string              `json:"id"`
}

// refundPayment asks for a refund of the page's payment.
func (c *Console) refundPayment(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	env := environment(r, p.merchant)
	trxID := r.PathValue("trx_id")
	amount, reason, key := strings.TrimSpace(r.PostFormValue("amount")), strings.TrimSpace(r.PostFormValue("reason")), r.PostFormValue("key")
	if len(trxID) > 128 || len(amount) > 32 || len(reason) > 255 || !refundKeyPattern.MatchString(key) {
		c.renderPaymentWith(w, r, http.StatusUnprocessableEntity, &view{RefundErrorKey: "refundInvalid"})
		return
	}
	body := map[string]any{}
	if amount != "" {
		body["amount"] = amount
	}
	if reason != "" {
		body["reason"] = reason
	}
	raw, _ := json.Marshal(body)
	status, answer, err := c.opts.Records.Refund(ctx, p.merchant, env, trxID, raw, key)
	if err != nil {
		c.serverError(w, r, "Asking for a refund", err)
		return
	}
	var a apiAnswer
	_ = json.Unmarshal(answer, &a)
	target := trxID + " " + amount
	if status == http.StatusNotFound {
		c.notFound(w, r)
		return
	}
	if status != http.StatusOK {
		msg := a.Message
		for _, errs := range a.Errors {
			if len(errs) > 0 {
				msg += " " + errs[0]
			}
		}
		c.audit(ctx, r, p.user, "refund", target, paygatev1.ConsoleAuditRefused, cut(a.Label+" "+a.Message, 200))
		c.renderPaymentWith(w, r, http.StatusUnprocessableEntity, &view{RefundError: strings.TrimSpace(msg)})
		return
	}
	c.audit(ctx, r, p.user, "refund", target+" refund "+a.ID, paygatev1.ConsoleAuditSuccess, "")
	http.Redirect(w, r, Prefix+"/payments/"+trxID+"?env="+string(env)+"&refunded="+a.ID, http.StatusSeeOther)
}

// CanRefund reports whether the signed-in user may refund (owners and finance users).
func (v *view) CanRefund() bool {
	return v.p != nil && (v.p.user.Spec.Role == paygatev1.ConsoleOwner || v.p.user.Spec.Role == paygatev1.ConsoleFinance)
}
