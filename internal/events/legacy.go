// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package events

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
)

// Legacy IPN payloads (docs/migrating.md): merchants whose receivers were written for the older
// gateway get payment events in its shape,
//
//	{"data":{"ref_trx":…,"trx_id":…,"amount":1500,"currency_code":"TZS","customer_name":…,
//	 "customer_email":…,"description":…,"environment":"sandbox"},"message":"…",
//	 "status":"completed","timestamp":1764000000}
//
// encoded exactly as JavaScript's JSON.stringify would re-encode it after JSON.parse: compact,
// keys in this order, numbers in their shortest form, "/" and non-ASCII characters unescaped,
// only '"', '\\' and control characters escaped. Receivers that hash JSON.stringify(req.body)
// instead of the raw bytes then compute the same signature.

// legacyField is one key and its already-encoded value.
type legacyField struct{ key, value string }

// LegacyPaymentPayload builds the legacy IPN body of a terminal payment's event, at now.
func LegacyPaymentPayload(p *paygatev1.Payment, now time.Time) (string, error) {
	amount, err := jsNumber(string(p.Spec.Amount))
	if err != nil {
		return "", fmt.Errorf("amount of payment %s: %w", p.Name, err)
	}
	status, message := "completed", "Payment completed successfully"
	if p.Status.Phase != paygatev1.PaymentSuccess {
		status, message = "failed", "Payment failed"
		if p.Status.Reason != "" {
			message = "Payment failed: " + p.Status.Reason
		}
	}
	data := jsObject([]legacyField{
		{"ref_trx", jsString(p.Spec.MerchantReference)},
		{"trx_id", jsString(p.Name)},
		{"amount", amount},
		{"currency_code", jsString(string(p.Spec.Currency))},
		{"customer_name", jsString(p.Spec.Customer.Name)},
		{"customer_email", jsString(p.Spec.Customer.Email)},
		{"description", jsString(p.Spec.Description)},
		{"environment", jsString(string(p.Spec.Environment))},
	})
	return jsObject([]legacyField{
		{"data", data},
		{"message", jsString(message)},
		{"status", jsString(status)},
		{"timestamp", strconv.FormatInt(now.Unix(), 10)},
	}), nil
}

func jsObject(fields []legacyField) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsString(f.key))
		b.WriteByte(':')
		b.WriteString(f.value)
	}
	b.WriteByte('}')
	return b.String()
}

// jsString quotes s as JSON.stringify does: '"' and '\\' escaped, \b \f \n \r \t short, other
// control characters as \u00xx (lower-case hex), everything else (slashes, non-ASCII, U+2028
// and U+2029 included) as it is. Invalid UTF-8 becomes U+FFFD, as in every string Paygate stores.
func jsString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r == utf8.RuneError:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// jsNumber renders a decimal amount as JSON.stringify renders the number it parses to: no
// trailing fraction zeros, no trailing point ("1500.00" → 1500, "37.50" → 37.5). Amounts are at
// most 15 significant digits (money's limits), which a JavaScript number holds exactly enough
// to print back the same digits.
func jsNumber(amount string) (string, error) {
	a, err := money.ParseAmount(amount)
	if err != nil {
		return "", err
	}
	s := a.String()
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	digits := strings.TrimLeft(strings.NewReplacer(".", "", "-", "").Replace(s), "0")
	if len(digits) > 15 {
		return "", fmt.Errorf("%s has more significant digits than a JavaScript number keeps", amount)
	}
	return s, nil
}
