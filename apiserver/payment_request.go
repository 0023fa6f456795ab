// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"errors"
	"net/mail"
	"regexp"
	"strings"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/phone"
)

// paymentRequest is a validated payment create request (docs/api.md, Creating payments).
type paymentRequest struct {
	Amount money.Amount
	// AmountOutOfRange: payment_amount is a number below the minimum or above the maximum, which
	// is INVALID_AMOUNT rather than Validation failed (see requestError).
	AmountOutOfRange    bool
	Currency            money.Currency
	RefTrx              string
	WebhookURL          string
	Mode                paygatev1.PaymentMode
	CustomerPhone       string // E.164
	SuccessRedirect     string
	CancelRedirect      string
	Description         string
	CustomerName        string
	CustomerEmail       string
	AllowPaymentMethods []string
}

var (
	currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)
	minimumAmount   = money.MustParseAmount("1.00")
	// maximumAmount is the largest amount a Payment can hold (18 integer digits); gateways set
	// their own, lower limits with maxAmount.
	maximumAmount = money.MustParseAmount("999999999999999999")
)

// parsePaymentRequest validates a create body. legacy applies the stricter rules of
// initiate-payment (redirects and ipn_url required). A currency that is well-formed but not
// enabled for the merchant is reported by the caller (422 INVALID_CURRENCY), not here.
func (s *Server) parsePaymentRequest(f fields, c *caller, legacy bool) (*paymentRequest, validation) {
	v := validation{}
	req := &paymentRequest{}

	code := f.requiredStr(v, "currency_code")
	if code != "" && !currencyPattern.MatchString(code) {
		v.add("currency_code", "The currency_code must be a 3-letter upper-case ISO 4217 code.")
	}
	cur, known := money.LookupCurrency(code)
	if !known {
		cur = money.Currency{Code: code, Scale: 2}
	}
	req.Currency = cur

	if raw, ok := f["payment_amount"]; !ok {
		v.add("payment_amount", "The payment_amount field is required.")
	} else if a, err := money.ParseJSONNumber(raw); err != nil {
		switch {
		case errors.Is(err, money.ErrNegative):
			req.AmountOutOfRange = true
			v.add("payment_amount", "The payment_amount must be at least 1.00.")
		case errors.Is(err, money.ErrTooLarge):
			req.AmountOutOfRange = true
			v.add("payment_amount", "The payment_amount must be at most %s.", maximumAmount.String())
		default:
			v.add("payment_amount", "The payment_amount must be a positive decimal number.")
		}
	} else {
		req.Amount = a
		switch {
		case a.Cmp(minimumAmount) < 0:
			req.AmountOutOfRange = true
			v.add("payment_amount", "The payment_amount must be at least 1.00.")
		case a.Cmp(maximumAmount) > 0:
			req.AmountOutOfRange = true
			v.add("payment_amount", "The payment_amount must be at most %s.", maximumAmount.String())
		case known:
			if err := money.ValidateForCurrency(a, cur); err != nil {
				v.add("payment_amount", "The payment_amount has too many decimal places: %s.", err.Error())
			}
		}
	}

	req.RefTrx = f.requiredStr(v, "ref_trx")
	switch {
	case len([]rune(req.RefTrx)) > 60:
		v.add("ref_trx", "The ref_trx must be at most 60 characters.")
	case hasControlChars(req.RefTrx):
		v.add("ref_trx", "The ref_trx must not contain control characters.")
	}

	mode, ok := f.str(v, "payment_mode")
	switch {
	case !ok || mode == "":
		req.Mode = paygatev1.PaymentModeHosted
	case mode == string(paygatev1.PaymentModeHosted) || mode == string(paygatev1.PaymentModePush):
		req.Mode = paygatev1.PaymentMode(mode)
	default:
		v.add("payment_mode", "The payment_mode must be hosted or push.")
	}

	if p, ok := f.str(v, "customer_phone"); ok && p != "" {
		e164, err := phone.NormalizeForCurrency(p, code)
		if err != nil {
			v.add("customer_phone", "The customer_phone must be a valid mobile number (MSISDN), for example +255712345678.")
		}
		req.CustomerPhone = e164
	} else if req.Mode == paygatev1.PaymentModePush && !v.has("customer_phone") {
		v.add("customer_phone", "The customer_phone field is required when payment_mode is push.")
	}

	req.WebhookURL = s.webhookURL(f, v, c, legacy)
	req.SuccessRedirect = s.redirectURL(f, v, c, "success_redirect", legacy)
	req.CancelRedirect = s.redirectURL(f, v, c, "cancel_redirect", legacy)

	if d, ok := f.str(v, "description"); ok {
		if len([]rune(d)) > 500 {
			v.add("description", "The description must be at most 500 characters.")
		}
		req.Description = d
	}
	if n, ok := f.str(v, "customer_name"); ok {
		if len([]rune(n)) > 100 {
			v.add("customer_name", "The customer_name must be at most 100 characters.")
		} else if hasControlChars(n) {
			v.add("customer_name", "The customer_name must not contain control characters.")
		}
		req.CustomerName = n
	}
	if e, ok := f.str(v, "customer_email"); ok && e != "" {
		if len(e) > 100 {
			v.add("customer_email", "The customer_email must be at most 100 characters.")
		} else if addr, err := mail.ParseAddress(e); err != nil || addr.Address != e || !strings.Contains(e[strings.LastIndexByte(e, '@')+1:], ".") {
			v.add("customer_email", "The customer_email must be a valid email address.")
		}
		req.CustomerEmail = e
	}
	methods := f.stringList(v, "allow_payment_methods")
	if len(methods) > 16 {
		v.add("allow_payment_methods", "The allow_payment_methods may list at most 16 keywords.")
	}
	for _, m := range methods {
		if len(m) > 64 {
			v.add("allow_payment_methods", "Each allow_payment_methods keyword must be at most 64 characters.")
			break
		}
	}
	req.AllowPaymentMethods = methods
	return req, v
}

// requestError answers an invalid create request: 422 Validation failed with the messages per
// field; or, when payment_amount is a number below the minimum or above the maximum, 422
// INVALID_AMOUNT with the same messages, whatever else is wrong, so that both create routes
// answer an amount out of range alike (docs/api.md, Errors).
func requestError(req *paymentRequest, v validation) *APIError {
	e := validationError(v)
	if req.AmountOutOfRange {
		e.Label, e.Message = LabelInvalidAmount, v["payment_amount"][0]
	}
	return e
}

// webhookURL reads webhook_url or its alias ipn_url, defaulting to the merchant's URL for the
// environment. Legacy requests must send ipn_url (or webhook_url).
func (s *Server) webhookURL(f fields, v validation, c *caller, legacy bool) string {
	u, ok := f.str(v, "webhook_url")
	field := "webhook_url"
	if ipn, ipnOK := f.str(v, "ipn_url"); ipnOK {
		if ok && ipn != u {
			v.add("ipn_url", "The ipn_url and webhook_url are aliases and must be equal when both are sent.")
		}
		if !ok {
			u, ok, field = ipn, true, "ipn_url"
		}
	}
	if !ok || u == "" {
		if legacy {
			v.add("ipn_url", "The ipn_url field is required.")
			return ""
		}
		if d := defaultWebhookURL(c); d != "" {
			return d
		}
		v.add("webhook_url", "The webhook_url field is required when no default webhook URL is configured.")
		return ""
	}
	s.checkURL(v, c, field, u, c.merchant.Spec.AllowedWebhookDomains)
	return u
}

func defaultWebhookURL(c *caller) string {
	if c.env == paygatev1.EnvironmentProduction {
		return c.merchant.Spec.WebhookURLs.Production
	}
	return c.merchant.Spec.WebhookURLs.Sandbox
}

func (s *Server) redirectURL(f fields, v validation, c *caller, field string, legacy bool) string {
	u, ok := f.str(v, field)
	if !ok || u == "" {
		if legacy && !v.has(field) {
			v.add(field, "The %s field is required.", field)
		}
		return s.opts.Site.SiteURL
	}
	s.checkURL(v, c, field, u, c.merchant.Spec.AllowedRedirectDomains)
	return u
}

// checkURL requires an absolute http(s) URL, HTTPS in production, and a host within the
// merchant's allowed domains when it has a list.
func (s *Server) checkURL(v validation, c *caller, field, raw string, allowed []paygatev1.DomainName) {
	if msg := paygatev1.URLProblem(field, raw, c.env, allowed); msg != "" {
		v.add(field, "%s", msg)
	}
}
