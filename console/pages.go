// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// pageSize is how many rows a console list shows.
const pageSize = 50

// environment is the environment a page shows: ?env=, else production for an approved business
// and sandbox for any other.
func environment(r *http.Request, m *paygatev1.Merchant) paygatev1.Environment {
	switch r.URL.Query().Get("env") {
	case string(paygatev1.EnvironmentSandbox):
		return paygatev1.EnvironmentSandbox
	case string(paygatev1.EnvironmentProduction):
		return paygatev1.EnvironmentProduction
	}
	if m.Spec.BusinessStatus == paygatev1.BusinessApproved {
		return paygatev1.EnvironmentProduction
	}
	return paygatev1.EnvironmentSandbox
}

// balanceRow is one currency of the merchant's balance in one environment.
type balanceRow struct {
	Currency, Available, Settled, Reserved, PaidOut string
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r)
	env := environment(r, p.merchant)
	v := &view{p: p, Env: env}
	b := &paygatev1.Balance{}
	err := c.opts.Cache.Get(r.Context(), client.ObjectKey{Namespace: p.merchant.Namespace, Name: paygatev1.BalanceName(p.merchant.Name, env)}, b)
	if client.IgnoreNotFound(err) != nil {
		c.serverError(w, r, "Reading the balance", err)
		return
	}
	for _, cb := range b.Status.Currencies {
		v.Balances = append(v.Balances, balanceRow{Currency: string(cb.Currency), Available: string(cb.Available),
			Settled: string(cb.Settled), Reserved: string(cb.Reserved), PaidOut: string(cb.PaidOut)})
	}
	c.render(w, r, http.StatusOK, "overview", v)
}

// payments lists the merchant's payments, filtered as the merchant API's list is. A filter the
// list cannot use (a date that is none, a To before the From, a phone that is no mobile number)
// is said on the page, 422.
func (c *Console) payments(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r)
	env := environment(r, p.merchant)
	form := paymentFormOf(r.URL.Query())
	offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
	offset = min(max(offset, 0), 1_000_000)
	v := &view{p: p, Env: env, Form: form, Offset: offset}
	f, bad := form.filter()
	if bad == "" {
		items, total, err := c.opts.Records.ListPayments(r.Context(), p.merchant, env, f, pageSize, offset)
		var refused *FilterRefused
		switch {
		case errors.As(err, &refused):
			bad = refusedKey(refused)
		case err != nil:
			c.serverError(w, r, "Listing payments", err)
			return
		}
		v.Payments, v.Total = items, total
	}
	if bad != "" {
		c.render(w, r, http.StatusUnprocessableEntity, "payments", v.withError(bad))
		return
	}
	if offset > 0 {
		v.PrevURL = form.PageURL(env, max(offset-pageSize, 0))
	}
	if offset+len(v.Payments) < v.Total {
		v.NextURL = form.PageURL(env, offset+pageSize)
	}
	c.render(w, r, http.StatusOK, "payments", v)
}

// refusedKey is the message of a filter the list refused.
func refusedKey(e *FilterRefused) string {
	if e.Param == "customer_phone" {
		return "phoneInvalid"
	}
	return "dateInvalid"
}

// timelineEntry is one step of a payment's life on its detail page.
type timelineEntry struct {
	Time  time.Time
	What  string // message key
	Extra string // detail: gateway, code, response code
}

// payment shows one payment: its record, its attempts and the webhooks sent about it.
func (c *Console) payment(w http.ResponseWriter, r *http.Request) {
	c.renderPaymentWith(w, r, http.StatusOK, &view{RefundedID: cut(r.URL.Query().Get("refunded"), 64)})
}

// renderPaymentWith renders the payment page with status, and v's refund form state.
func (c *Console) renderPaymentWith(w http.ResponseWriter, r *http.Request, status int, v *view) {
	p := principalFrom(r)
	env := environment(r, p.merchant)
	trxID := r.PathValue("trx_id")
	if len(trxID) > 128 {
		c.notFound(w, r)
		return
	}
	rec, obj, found, err := c.opts.Records.GetPayment(r.Context(), p.merchant, env, trxID)
	if err != nil {
		c.serverError(w, r, "Reading a payment", err)
		return
	}
	if !found {
		c.notFound(w, r)
		return
	}
	deliveries, err := c.opts.Records.WebhookDeliveries(r.Context(), p.merchant, obj)
	if err != nil {
		c.serverError(w, r, "Reading a payment's webhooks", err)
		return
	}
	v.p, v.Env, v.Payment, v.Timeline, v.RefundKey = p, env, &rec, timeline(rec, obj, deliveries), newFormKey()
	c.render(w, r, status, "payment", v)
}

// timeline orders what happened to a payment: its creation, each push attempt's start and end,
// its settlement and each webhook delivery attempt.
func timeline(rec paygate.Payment, obj *paygatev1.Payment, deliveries []paygatev1.WebhookDelivery) []timelineEntry {
	var out []timelineEntry
	if t, err := time.Parse(time.RFC3339Nano, rec.CreatedAt); err == nil {
		out = append(out, timelineEntry{Time: t, What: "tlCreated"})
	}
	if obj != nil {
		for _, a := range obj.Status.Attempts {
			out = append(out, timelineEntry{Time: a.StartedAt.Time, What: "tlPushSent", Extra: string(a.Gateway)})
			if a.FinishedAt != nil {
				out = append(out, timelineEntry{Time: a.FinishedAt.Time, What: "tlPushAnswered", Extra: string(a.Phase) + " " + a.Code})
			}
		}
	}
	if rec.Status != "pending" {
		if t, err := time.Parse(time.RFC3339Nano, rec.UpdatedAt); err == nil {
			out = append(out, timelineEntry{Time: t, What: "tlSettled", Extra: rec.Status + " " + rec.Reason})
		}
	}
	for _, d := range deliveries {
		for _, a := range d.Status.Attempts {
			extra := d.Spec.EventType
			if a.StatusCode > 0 {
				extra += " HTTP " + strconv.Itoa(int(a.StatusCode))
			}
			out = append(out, timelineEntry{Time: a.At.Time, What: "tlWebhook", Extra: extra})
		}
	}
	slices.SortStableFunc(out, func(a, b timelineEntry) int { return a.Time.Compare(b.Time) })
	return out
}
