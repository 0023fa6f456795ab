// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// Payouts from the console (docs/console.md, Payouts): owners and finance users pay the available
// balance out to the merchant's settlement number in two steps. The preview runs the API's own
// quote (gates, gateway, fee) and asks for the second factor again; the payout is made only with a
// code accepted then (once on every replica, as at sign-in), through the API's own payout create,
// with the idempotency key of the preview's form: the same confirmation sent twice is one payout.

// payoutView is what the payout pages show.
type payoutView struct {
	Amount, Currency string
	Currencies       []string
	// Quote is the API's quote, set once the preview succeeded.
	Quote *payoutQuote
	// Destination is where the payout goes (the settlement number of its currency).
	Destination string
	Key         string
	// Error is the API's words when it refused; ErrorKey a text's key.
	Error, ErrorKey string
}

// payoutQuote is the API's answer to a preview.
type payoutQuote struct {
	Amount   json.Number `json:"amount"`
	Fee      json.Number `json:"fee"`
	Payable  json.Number `json:"payable_amount"`
	Currency string      `json:"currency"`
}

// payoutForm shows the amount and currency form.
func (c *Console) payoutForm(w http.ResponseWriter, r *http.Request) {
	c.renderPayout(w, r, http.StatusOK, &payoutView{})
}

func (c *Console) renderPayout(w http.ResponseWriter, r *http.Request, status int, pv *payoutView) {
	p := principalFrom(r)
	for _, cur := range p.merchant.Spec.Currencies {
		pv.Currencies = append(pv.Currencies, string(cur))
	}
	c.render(w, r, status, "payout", &view{p: p, Env: environment(r, p.merchant), Payout: pv})
}

// payoutBody is the API's body for a payout of the form's amount and currency.
func payoutBody(r *http.Request) (amount, currency string, body []byte, ok bool) {
	amount, currency = strings.TrimSpace(r.PostFormValue("amount")), strings.TrimSpace(r.PostFormValue("currency"))
	if amount == "" || len(amount) > 32 || len(currency) > 3 {
		return amount, currency, nil, false
	}
	fields := map[string]string{"amount": amount}
	if currency != "" {
		fields["currency_code"] = currency
	}
	body, _ = json.Marshal(fields)
	return amount, currency, body, true
}

// previewPayout quotes the payout and asks for the second factor.
func (c *Console) previewPayout(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	amount, currency, body, ok := payoutBody(r)
	pv := &payoutView{Amount: cut(amount, 32), Currency: cut(currency, 3)}
	if !ok {
		pv.ErrorKey = "payoutInvalid"
		c.renderPayout(w, r, http.StatusUnprocessableEntity, pv)
		return
	}
	status, answer, err := c.opts.Records.APIWrite(ctx, p.merchant, environment(r, p.merchant), APIPayoutPreview, "", body, "")
	if err != nil {
		c.serverError(w, r, "Quoting a payout", err)
		return
	}
	if status != http.StatusOK {
		pv.Error = decodeAnswer(answer).said()
		c.renderPayout(w, r, http.StatusUnprocessableEntity, pv)
		return
	}
	var out struct {
		Data payoutQuote `json:"data"`
	}
	dec := json.NewDecoder(bytes.NewReader(answer))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		c.serverError(w, r, "Reading a payout quote", err)
		return
	}
	pv.Quote, pv.Destination, pv.Key = &out.Data, settlementNumber(p.merchant, out.Data.Currency), newFormKey()
	c.renderPayout(w, r, http.StatusOK, pv)
}

// settlementNumber is where a payout in currency goes.
func settlementNumber(m *paygatev1.Merchant, currency string) string {
	if i := slices.IndexFunc(m.Spec.SettlementNumbers, func(n paygatev1.CurrencySettlementNumber) bool { return string(n.Currency) == currency }); i >= 0 {
		return string(m.Spec.SettlementNumbers[i].Number)
	}
	return string(m.Spec.SettlementNumber)
}

// createPayout makes the payout once the second factor is given again.
func (c *Console) createPayout(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	u := p.user
	amount, currency, body, ok := payoutBody(r)
	key := r.PostFormValue("key")
	if !ok || !formKeyPattern.MatchString(key) {
		c.renderPayout(w, r, http.StatusUnprocessableEntity, &payoutView{Amount: cut(amount, 32), Currency: cut(currency, 3), ErrorKey: "payoutInvalid"})
		return
	}
	if lockoutOf(u).Locked(c.opts.Clock.Now()) {
		c.audit(ctx, r, u, "payout", amount+" "+currency, paygatev1.ConsoleAuditRefused, "locked")
		c.refuse(w, r, http.StatusTooManyRequests, "locked")
		return
	}
	cr, err := readCredentials(ctx, c.opts.APIReader, c.opts.SecretsNamespace, u)
	if err != nil {
		c.serverError(w, r, "Reading console credentials", err)
		return
	}
	code := strings.TrimSpace(r.PostFormValue("code"))
	accepted := false
	if secret := cr.get(keyTOTP); secret != "" && len(code) <= 8 {
		accepted, err = c.acceptTOTP(ctx, u, secret, code)
		if err != nil && !errors.Is(err, errReplayed) {
			c.serverError(w, r, "Checking a second factor", err)
			return
		}
	}
	if !accepted {
		if _, ferr := c.recordFailure(ctx, u); ferr != nil {
			c.serverError(w, r, "Counting a failed second factor", ferr)
			return
		}
		c.audit(ctx, r, u, "payout", amount+" "+currency, paygatev1.ConsoleAuditRefused, "wrong code")
		c.renderPayout(w, r, http.StatusUnauthorized, &payoutView{Amount: amount, Currency: currency, ErrorKey: "wrongCode"})
		return
	}
	env := environment(r, p.merchant)
	status, answer, err := c.opts.Records.APIWrite(ctx, p.merchant, env, APIPayout, "", body, key)
	if err != nil {
		c.serverError(w, r, "Making a payout", err)
		return
	}
	a := decodeAnswer(answer)
	if status != http.StatusOK && status != http.StatusCreated {
		c.audit(ctx, r, u, "payout", amount+" "+currency, paygatev1.ConsoleAuditRefused, cut(a.Label+" "+a.Message, 200))
		c.renderPayout(w, r, http.StatusUnprocessableEntity, &payoutView{Amount: amount, Currency: currency, Error: a.said()})
		return
	}
	var made struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(answer, &made)
	c.audit(ctx, r, u, "payout", amount+" "+currency+" payout "+made.Data.ID, paygatev1.ConsoleAuditSuccess, "")
	http.Redirect(w, r, Prefix+"/payouts?env="+string(env)+"&created="+made.Data.ID, http.StatusSeeOther)
}
