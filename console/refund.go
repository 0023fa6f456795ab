// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/consoleauth"
)

// Refunds from the console (docs/console.md, Refunds): owners and finance users refund a
// successful payment from its page, through the merchant API's own refund create, so every rule of
// the API holds (what is left, the balance, the gateway, the gates). The form carries an
// idempotency key made when the page was rendered: the same form sent twice (a double click, a
// browser's retry) is one refund.

// formKeyPattern is a form's idempotency key: "console-" and a random token.
var formKeyPattern = regexp.MustCompile(`^console-[A-Za-z0-9_-]{20,50}$`)

// newFormKey is a fresh idempotency key for a form that writes through the API.
func newFormKey() string {
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

// decodeAnswer reads the parts of an API answer the console shows.
func decodeAnswer(body []byte) apiAnswer {
	var a apiAnswer
	_ = json.Unmarshal(body, &a)
	return a
}

// said is what a refusal says: its message and the first reason of each field.
func (a apiAnswer) said() string {
	msg := a.Message
	keys := make([]string, 0, len(a.Errors))
	for k := range a.Errors {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if errs := a.Errors[k]; len(errs) > 0 {
			msg += " " + errs[0]
		}
	}
	return strings.TrimSpace(msg)
}

// refundPayment asks for a refund of the page's payment.
func (c *Console) refundPayment(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	env := environment(r, p.merchant)
	trxID := r.PathValue("trx_id")
	amount, reason, key := strings.TrimSpace(r.PostFormValue("amount")), strings.TrimSpace(r.PostFormValue("reason")), r.PostFormValue("key")
	if len(trxID) > 128 || len(amount) > 32 || len(reason) > 255 || !formKeyPattern.MatchString(key) {
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
	status, answer, err := c.opts.Records.APIWrite(ctx, p.merchant, env, APIRefund, trxID, raw, key)
	if err != nil {
		c.serverError(w, r, "Asking for a refund", err)
		return
	}
	a := decodeAnswer(answer)
	target := trxID + " " + amount
	if status == http.StatusNotFound {
		c.notFound(w, r)
		return
	}
	if status != http.StatusOK {
		c.audit(ctx, r, p.user, "refund", target, paygatev1.ConsoleAuditRefused, cut(a.Label+" "+a.Message, 200))
		c.renderPaymentWith(w, r, http.StatusUnprocessableEntity, &view{RefundError: a.said()})
		return
	}
	c.audit(ctx, r, p.user, "refund", target+" refund "+a.ID, paygatev1.ConsoleAuditSuccess, "")
	http.Redirect(w, r, Prefix+"/payments/"+trxID+"?env="+string(env)+"&refunded="+a.ID, http.StatusSeeOther)
}

// MovesMoney reports whether the signed-in user may move money: refund and pay out (owners and
// finance users).
func (v *view) MovesMoney() bool {
	return v.p != nil && (v.p.user.Spec.Role == paygatev1.ConsoleOwner || v.p.user.Spec.Role == paygatev1.ConsoleFinance)
}
