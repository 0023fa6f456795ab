// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"net/url"
	"slices"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/console"
	"github.com/paygate/paygate/internal/archive"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/phone"
)

// The payment list's filters (docs/api.md, GET /api/v1/payments): status, merchant_ref, a span of
// creation times and the customer's phone, all of them at once. The merchant console filters
// through the same query (consoleRecords.ListPayments).

// paymentQuery is what a payment list selects; an empty field selects every value.
type paymentQuery struct {
	status, ref string
	// phone is the customer's phone in E.164 form, as the payment stores it.
	phone   string
	created timeSpan
}

// timeSpan is a span of creation times: from inclusive, to exclusive; a zero bound is open.
type timeSpan struct{ from, to time.Time }

func (s timeSpan) open() bool { return s.from.IsZero() && s.to.IsZero() }

func (s timeSpan) holds(t time.Time) bool {
	return (s.from.IsZero() || !t.Before(s.from)) && (s.to.IsZero() || t.Before(s.to))
}

// paymentCreated is the creation time the payment list orders and filters by:
// metadata.creationTimestamp (comparePayments, the archive's creation_timestamp).
func paymentCreated(p *paygatev1.Payment) time.Time { return p.CreationTimestamp.Time }

// The created_from and created_to a list accepts: years 2000 to 9999.
var (
	earliestCreated = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	latestCreated   = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// parsePaymentQuery reads a payment list's filters, and names each invalid one in v.
func parsePaymentQuery(v validation, q url.Values, m *paygatev1.Merchant) paymentQuery {
	pq := paymentQuery{status: q.Get("status"), ref: q.Get("merchant_ref")}
	if pq.status != "" && !slices.Contains([]string{"pending", "success", "failed"}, pq.status) {
		v.add("status", "The status must be pending, success or failed.")
	}
	pq.created.from = createdBound(v, q.Get("created_from"), "created_from")
	pq.created.to = createdBound(v, q.Get("created_to"), "created_to")
	if !pq.created.from.IsZero() && !pq.created.to.IsZero() && !pq.created.from.Before(pq.created.to) {
		v.add("created_to", "The created_to must be later than created_from (created_to is exclusive).")
	}
	if raw := q.Get("customer_phone"); raw != "" {
		e164, err := listedPhone(raw, m)
		if err != nil {
			v.add("customer_phone", "%s", phoneFilterMessage(m))
		}
		pq.phone = e164
	}
	return pq
}

// consolePaymentQuery is the query of a console payment list's filter (its dates already instants,
// its phone as typed), or a *console.FilterRefused naming what the list refuses, as the API would.
func consolePaymentQuery(m *paygatev1.Merchant, f console.PaymentFilter) (paymentQuery, error) {
	q := paymentQuery{status: f.Status, ref: f.MerchantRef, created: timeSpan{from: f.CreatedFrom, to: f.CreatedTo}}
	if !q.created.from.IsZero() && !q.created.to.IsZero() && !q.created.from.Before(q.created.to) {
		return q, &console.FilterRefused{Param: "created_to", Message: "The created_to must be later than created_from."}
	}
	if f.CustomerPhone != "" {
		e164, err := listedPhone(f.CustomerPhone, m)
		if err != nil {
			return q, &console.FilterRefused{Param: "customer_phone", Message: phoneFilterMessage(m)}
		}
		q.phone = e164
	}
	return q, nil
}

// createdBound reads created_from or created_to (name): "" is no bound.
func createdBound(v validation, raw, name string) time.Time {
	if raw == "" {
		return time.Time{}
	}
	t, ok := parseCreated(raw)
	if !ok {
		v.add(name, "The %s must be a date (YYYY-MM-DD, its start in UTC) or an RFC 3339 time such as 2026-11-27T10:00:00Z, in the years 2000 to 9999.", name)
	}
	return t
}

// parseCreated reads a created bound: a date is its first instant in UTC, an RFC 3339 time is
// that instant (any offset). Only years 2000 to 9999 (in UTC) are accepted.
func parseCreated(raw string) (time.Time, bool) {
	layout := time.RFC3339Nano
	if len(raw) == len(time.DateOnly) {
		layout = time.DateOnly
	}
	t, err := time.Parse(layout, raw)
	if err != nil || t.Before(earliestCreated) || t.After(latestCreated) {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// listedPhone normalizes a customer_phone filter to the E.164 form payments store. A list has no
// currency to read a local number in, so a local form is read in the country of the merchant's
// currencies when they have one between them (phoneRegionOf); the international forms (+255...,
// 255..., 00255...) are read whatever the currencies.
func listedPhone(raw string, m *paygatev1.Merchant) (string, error) {
	return phone.NormalizeMobile(raw, phoneRegionOf(m))
}

// phoneRegionOf is the one phone region of m's currencies (internal/money's PhoneRegion), "" when
// they have none or several: a local number would then be a guess.
func phoneRegionOf(m *paygatev1.Merchant) string {
	region := ""
	for _, c := range m.Spec.Currencies {
		cur, _ := money.LookupCurrency(string(c))
		switch {
		case cur.PhoneRegion == "" || cur.PhoneRegion == region:
		case region == "":
			region = cur.PhoneRegion
		default:
			return ""
		}
	}
	return region
}

// phoneFilterMessage says which forms of a phone m's lists accept.
func phoneFilterMessage(m *paygatev1.Merchant) string {
	if region := phoneRegionOf(m); region != "" {
		e164, national := phone.ExampleMobile(region)
		return "The customer_phone must be a valid mobile number, international (" + e164 + ") or " +
			phone.CountryAdjective(region) + " (" + national + ")."
	}
	return "The customer_phone must be a valid mobile number in international form, for example +255712345678."
}

// matches reports whether the query selects p (the list read from the cache, listOwn).
func (q paymentQuery) matches(p *paygatev1.Payment) bool {
	return (q.status == "" || paymentStatus(p) == q.status) && (q.ref == "" || p.Spec.MerchantReference == q.ref) &&
		(q.phone == "" || string(p.Spec.Customer.Phone) == q.phone) && q.created.holds(paymentCreated(p))
}

// archiveFilter is the query for the caller's archived payments.
func (q paymentQuery) archiveFilter(c *caller) archive.PaymentFilter {
	return archive.PaymentFilter{Namespace: c.merchant.Namespace, Merchant: c.merchant.Name, Environment: c.env,
		Phase: paygatev1.PaymentPhase(q.status), MerchantReference: q.ref, CustomerPhone: q.phone,
		CreatedFrom: q.created.from, CreatedTo: q.created.to}
}

// paymentRanges are the list index's ranges that hold the query's payments (indexLive): one
// facet says status, merchant_ref or phone, alone or with status; a merchant_ref and a phone
// together are the shorter of their two ranges, the other checked on each of its payments (a
// reference has one payment, a few for an invoice's charges). The span of creation times narrows
// every range (rangeOf).
func paymentRanges(q paymentQuery) []facetQuery[paygatev1.Payment] {
	phoneFacet, phoneKey := facetPhone, facetKey{a: q.phone}
	if q.status != "" {
		phoneFacet, phoneKey = facetPhoneAndStatus, facetKey{q.phone, q.status}
	}
	refFacet, refKey := facetOf(q.status, q.ref)
	switch {
	case q.phone == "":
		return []facetQuery[paygatev1.Payment]{{facet: refFacet, key: refKey}}
	case q.ref == "":
		return []facetQuery[paygatev1.Payment]{{facet: phoneFacet, key: phoneKey}}
	}
	return []facetQuery[paygatev1.Payment]{
		{facet: refFacet, key: refKey, rest: func(p *paygatev1.Payment) bool { return string(p.Spec.Customer.Phone) == q.phone }},
		{facet: phoneFacet, key: phoneKey, rest: func(p *paygatev1.Payment) bool { return p.Spec.MerchantReference == q.ref }},
	}
}
