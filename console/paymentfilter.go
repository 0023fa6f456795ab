// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"net/url"
	"strconv"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/phone"
)

// The payments page's filters (docs/console.md, Payments): status, reference, a From and a To
// date, and the customer's phone. The dates are days in UTC, as the console shows every time, and
// both are inclusive for the person choosing them: To 2026-11-27 lists the payments created
// before 2026-11-28 00:00 UTC (the API's created_to, exclusive).

// FilterRefused is a payment filter the list refuses (Records.ListPayments): Param names it as
// the API does (customer_phone, created_to), Message says why.
type FilterRefused struct{ Param, Message string }

func (e *FilterRefused) Error() string {
	return "the payment list refuses " + e.Param + ": " + e.Message
}

// paymentStatuses are the statuses the payments page filters by.
var paymentStatuses = []string{"pending", "success", "failed"}

// paymentForm is the payments page's filter form as the person typed it: shown again, and kept in
// the pager's and the export's links.
type paymentForm struct {
	Status, MerchantRef, From, To, Phone string
}

// paymentFormOf reads the form from a page's query; an unknown status is no status.
func paymentFormOf(q url.Values) paymentForm {
	return paymentForm{Status: oneOf(q.Get("status"), paymentStatuses), MerchantRef: cut(q.Get("merchant_ref"), 128),
		From: cut(q.Get("from"), 10), To: cut(q.Get("to"), 10), Phone: cut(q.Get("customer_phone"), phone.MaxInputLength)}
}

// filter is the list's filter of the form, or the message key of what is wrong with its dates.
func (f paymentForm) filter() (PaymentFilter, string) {
	pf := PaymentFilter{Status: f.Status, MerchantRef: f.MerchantRef, CustomerPhone: f.Phone}
	from, fromOK := formDay(f.From)
	to, toOK := formDay(f.To)
	switch {
	case !fromOK || !toOK:
		return pf, "dateInvalid"
	case !from.IsZero() && !to.IsZero() && to.Before(from):
		return pf, "dateOrder"
	}
	pf.CreatedFrom = from
	if !to.IsZero() {
		pf.CreatedTo = to.AddDate(0, 0, 1) // the whole To day
	}
	return pf, ""
}

// formDay reads a date input's value (YYYY-MM-DD, years 2000 to 9999) as its first instant in
// UTC; "" is no date.
func formDay(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, true
	}
	t, err := time.Parse(time.DateOnly, s)
	return t, err == nil && t.Year() >= 2000 && t.Year() <= 9999
}

// query is the form's non-empty fields as a page's query, with the environment and the offset.
func (f paymentForm) query(env paygatev1.Environment, offset int) url.Values {
	q := url.Values{"env": {string(env)}}
	for name, v := range map[string]string{"status": f.Status, "merchant_ref": f.MerchantRef, "from": f.From, "to": f.To,
		"customer_phone": f.Phone} {
		if v != "" {
			q.Set(name, v)
		}
	}
	if offset > 0 {
		q.Set("offset", strconv.Itoa(offset))
	}
	return q
}

// PageURL is the payments page of the form's filters at offset.
func (f paymentForm) PageURL(env paygatev1.Environment, offset int) string {
	return Prefix + "/payments?" + f.query(env, offset).Encode()
}

// ExportURL is the CSV export of the form's filters.
func (f paymentForm) ExportURL(env paygatev1.Environment) string {
	return Prefix + "/payments.csv?" + f.query(env, 0).Encode()
}

// auditTarget names an export of the form's filters in the audit trail, the phone masked.
func (f paymentForm) auditTarget(env paygatev1.Environment) string {
	return "payments " + string(env) + " status=" + f.Status + " merchant_ref=" + f.MerchantRef +
		" from=" + f.From + " to=" + f.To + " customer_phone=" + phone.Mask(f.Phone)
}
