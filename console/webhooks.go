// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// The merchant's webhook deliveries (docs/console.md, Webhook deliveries): every role sees the
// list and each delivery's attempts; owners and developers also see where it was sent and the
// payload (the exact body sent), as they see the webhook settings. Nothing secret is on either
// page: a delivery holds no signature or secret (each attempt signs its body as it is sent), and
// an attempt's error never holds the URL.

// DeliveryFilter narrows the webhook delivery list: the delivery's effective phase
// (WebhookDelivery.Phase) and the event type; empty selects every value.
type DeliveryFilter struct {
	Phase     paygatev1.DeliveryPhase
	EventType string
}

// DeliveryRecords are the merchant's webhook deliveries (Records implements them).
type DeliveryRecords interface {
	// ListWebhookDeliveries is a page of m's webhook deliveries in env, newest first, live and
	// archived, and how many match.
	ListWebhookDeliveries(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment, f DeliveryFilter,
		limit, offset int) ([]paygatev1.WebhookDelivery, int, error)
	// GetWebhookDelivery is one of m's deliveries in env, with its payload when payload is true;
	// found is false when m has no such delivery in env (another merchant's is not found either).
	GetWebhookDelivery(ctx context.Context, m *paygatev1.Merchant, env paygatev1.Environment, name string,
		payload bool) (d *paygatev1.WebhookDelivery, found bool, err error)
}

// deliveryStatuses are the status filter's values (message keys "st-<value>") and the phases they
// select: an abandoned delivery is shown as failed.
var deliveryStatuses = []struct {
	value string
	phase paygatev1.DeliveryPhase
}{
	{"pending", paygatev1.DeliveryPending},
	{"delivered", paygatev1.DeliveryDelivered},
	{"failed", paygatev1.DeliveryAbandoned},
	{"no_endpoint", paygatev1.DeliveryNoEndpoint},
}

// deliveryEventTypes are the event type filter's values: every event Paygate sends.
var deliveryEventTypes = []string{
	paygate.EventPaymentCompleted, paygate.EventPaymentFailed,
	paygate.EventPayoutCompleted, paygate.EventPayoutFailed,
	paygate.EventRefundCompleted, paygate.EventRefundFailed,
	paygate.EventSubscriptionCreated, paygate.EventSubscriptionCancelled, paygate.EventSubscriptionSuspended,
	paygate.EventInvoiceCreated, paygate.EventInvoicePaid, paygate.EventInvoicePaymentFailed,
}

// deliveryStatus is the status a delivery shows: the value of its effective phase.
func deliveryStatus(d *paygatev1.WebhookDelivery) string {
	p := d.Phase()
	for _, s := range deliveryStatuses {
		if s.phase == p {
			return s.value
		}
	}
	return "pending"
}

// deliveryPath is a delivery's detail page.
func deliveryPath(name string, env paygatev1.Environment) string {
	return Prefix + "/webhooks/" + url.PathEscape(name) + "?env=" + string(env)
}

// sourceCell names what a delivery's event is about (its id; with its kind when named, as the
// list's event type says it), linked to its page where the console has one: a payment's detail,
// a subscription's invoices.
func sourceCell(v *view, d *paygatev1.WebhookDelivery, env paygatev1.Environment, named bool) cell {
	src := d.Spec.Source
	c := cell{Text: src.Name, Class: "mono"}
	switch src.Kind {
	case "Payment":
		c.Link = Prefix + "/payments/" + url.PathEscape(src.Name) + "?env=" + string(env)
	case "Subscription":
		c.Text = paygatev1.SubscriptionAPIID(src.Name)
		c.Link = Prefix + "/invoices?" + url.Values{"env": {string(env)}, "subscription": {c.Text}}.Encode()
	}
	if named {
		kind := v.T("whdSrc-" + src.Kind)
		if kind == "whdSrc-"+src.Kind { // a kind the console has no word for
			kind = src.Kind
		}
		c.Text = kind + " " + c.Text
	}
	return c
}

// lastCode is the HTTP status the receiver answered the delivery's last attempt with, "—" when
// there was none (no attempt, or no answer).
func lastCode(st paygatev1.WebhookDeliveryStatus) string {
	if n := len(st.Attempts); n > 0 && st.Attempts[n-1].StatusCode > 0 {
		return strconv.Itoa(int(st.Attempts[n-1].StatusCode))
	}
	return "—"
}

// deliveryRows are the list's rows, in deliveryColumns' order.
func deliveryRows(v *view, ds []paygatev1.WebhookDelivery, env paygatev1.Environment) [][]cell {
	rows := make([][]cell, 0, len(ds))
	for i := range ds {
		d := &ds[i]
		st := d.EffectiveStatus()
		delivered := ""
		if st.DeliveredAt != nil {
			delivered = v.When(st.DeliveredAt.Time)
		}
		rows = append(rows, []cell{
			{Text: d.Spec.EventType},
			{Text: d.Spec.EventID, Link: deliveryPath(d.Name, env), Class: "mono"},
			sourceCell(v, d, env, false),
			statusCell(v, deliveryStatus(d)),
			{Text: lastCode(st)},
			{Text: strconv.Itoa(int(st.TotalAttempts))},
			{Text: v.When(d.CreationTimestamp.Time)},
			{Text: delivered},
		})
	}
	return rows
}

var deliveryColumns = []string{"whdColEvent", "whdColEventID", "whdColSource", "colStatus", "whdColResponse", "colAttempts",
	"colCreated", "whdColDelivered"}

// webhookDeliveries lists the merchant's webhook deliveries in the environment, filtered by
// status and event type.
func (c *Console) webhookDeliveries(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r)
	env := environment(r, p.merchant)
	q := r.URL.Query()
	v := &view{p: p, lang: language(w, r), Env: env}
	t := &table{Title: "whdTitle", Path: Prefix + "/webhooks", Columns: deliveryColumns, Numeric: map[int]bool{4: true, 5: true}, Empty: "whdNone"}
	var f DeliveryFilter
	status := filter{Name: "status", Label: "filterStatus"}
	for _, s := range deliveryStatuses {
		status.Options = append(status.Options, option{Value: s.value, Label: v.T("st-" + s.value)})
		if q.Get("status") == s.value {
			status.Value, f.Phase = s.value, s.phase
		}
	}
	eventType := filter{Name: "event_type", Label: "whdFilterEvent", Value: oneOf(q.Get("event_type"), deliveryEventTypes)}
	for _, e := range deliveryEventTypes {
		eventType.Options = append(eventType.Options, option{Value: e, Label: e})
	}
	f.EventType = eventType.Value
	t.Filters = []filter{status, eventType}
	offset, _ := strconv.Atoi(q.Get("offset"))
	t.Offset = min(max(offset, 0), 1_000_000)
	items, total, err := c.opts.Records.ListWebhookDeliveries(r.Context(), p.merchant, env, f, pageSize, t.Offset)
	if err != nil {
		c.serverError(w, r, "Listing webhook deliveries", err)
		return
	}
	t.Rows, t.Total = deliveryRows(v, items, env), total
	t.setPager(env, len(items))
	v.Table = t
	c.render(w, r, http.StatusOK, "list", v)
}

// deliveryView is what a delivery's detail page shows.
type deliveryView struct {
	Name, EventType, EventID, Status, Code string
	Source                                 cell
	Created                                time.Time
	DeliveredAt, NextAttemptAt             time.Time
	TotalAttempts                          int32
	Redelivery                             string
	Attempts                               []attemptRow
	// Sees is true for owners and developers: URL and Payload are shown.
	Sees         bool
	URL, Payload string
	// CanRedeliver: the signed-in user may start a new round (owners and developers) and the
	// delivery is delivered or abandoned; RedeliverKey is the form's idempotency key; Redelivered
	// says a round was just asked for.
	CanRedeliver, Redelivered bool
	RedeliverKey              string
}

// attemptRow is one attempt of the current round.
type attemptRow struct {
	Number         int32
	At             time.Time
	Code, Error    string
	DurationMillis int64
}

// webhookDelivery shows one of the merchant's deliveries: its event, status and attempts, and to
// owners and developers its receiver and payload.
func (c *Console) webhookDelivery(w http.ResponseWriter, r *http.Request) {
	c.renderDeliveryWith(w, r, http.StatusOK, &view{})
}

// renderDeliveryWith renders the delivery page with status and v's redelivery state.
func (c *Console) renderDeliveryWith(w http.ResponseWriter, r *http.Request, status int, v *view) {
	p := principalFrom(r)
	env := environment(r, p.merchant)
	name := r.PathValue("name")
	if len(name) > 128 {
		c.notFound(w, r)
		return
	}
	v.p, v.lang, v.Env = p, language(w, r), env
	sees := v.SeesSettings()
	d, found, err := c.opts.Records.GetWebhookDelivery(r.Context(), p.merchant, env, name, sees)
	if err != nil {
		c.serverError(w, r, "Reading a webhook delivery", err)
		return
	}
	if !found {
		c.notFound(w, r)
		return
	}
	st := d.EffectiveStatus()
	dv := &deliveryView{Name: d.Name, EventType: d.Spec.EventType, EventID: d.Spec.EventID, Status: deliveryStatus(d), Code: lastCode(st),
		Source: sourceCell(v, d, env, true), Created: d.CreationTimestamp.Time, TotalAttempts: st.TotalAttempts, Redelivery: st.Redelivery, Sees: sees}
	if st.DeliveredAt != nil {
		dv.DeliveredAt = st.DeliveredAt.Time
	}
	if st.NextAttemptAt != nil && !d.Finished() {
		dv.NextAttemptAt = st.NextAttemptAt.Time
	}
	for _, a := range st.Attempts {
		row := attemptRow{Number: a.Number, At: a.At.Time, Code: "—", Error: a.Error, DurationMillis: a.DurationMillis}
		if a.StatusCode > 0 {
			row.Code = strconv.Itoa(int(a.StatusCode))
		}
		dv.Attempts = append(dv.Attempts, row)
	}
	if sees {
		dv.URL, dv.Payload = d.Spec.URL, indented(d.Spec.Payload)
	}
	v.Delivery = dv
	dv.Redelivered = r.URL.Query().Get("redelivered") == "1"
	dv.RedeliverKey = newFormKey()
	dv.CanRedeliver = sees && (d.Phase() == paygatev1.DeliveryDelivered || d.Phase() == paygatev1.DeliveryAbandoned)
	c.render(w, r, status, "webhook", v)
}

// redeliverWebhook starts a new round of attempts for a delivered or abandoned delivery, through
// the merchant API's own redelivery (POST /api/v1/events/{id}/redeliver), once per form.
func (c *Console) redeliverWebhook(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	env := environment(r, p.merchant)
	name, key := r.PathValue("name"), r.PostFormValue("key")
	if len(name) > 128 || !formKeyPattern.MatchString(key) {
		c.renderDelivery(w, r, http.StatusUnprocessableEntity, "redeliverInvalid")
		return
	}
	d, found, err := c.opts.Records.GetWebhookDelivery(ctx, p.merchant, env, name, false)
	if err != nil {
		c.serverError(w, r, "Reading a webhook delivery", err)
		return
	}
	if !found {
		c.notFound(w, r)
		return
	}
	status, answer, err := c.opts.Records.APIWrite(ctx, p.merchant, env, APIRedeliver, d.Spec.EventID, nil, key)
	if err != nil {
		c.serverError(w, r, "Redelivering a webhook event", err)
		return
	}
	if status != http.StatusAccepted && status != http.StatusOK {
		a := decodeAnswer(answer)
		c.audit(ctx, r, p.user, "redeliver", d.Spec.EventID, paygatev1.ConsoleAuditRefused, cut(a.Label+" "+a.Message, 200))
		c.renderDeliveryWith(w, r, http.StatusConflict, &view{RedeliverError: a.said()})
		return
	}
	c.audit(ctx, r, p.user, "redeliver", d.Spec.EventID, paygatev1.ConsoleAuditSuccess, "")
	http.Redirect(w, r, Prefix+"/webhooks/"+name+"?env="+string(env)+"&redelivered=1", http.StatusSeeOther)
}

// renderDelivery renders the delivery page with status and a refusal's text key.
func (c *Console) renderDelivery(w http.ResponseWriter, r *http.Request, status int, errKey string) {
	c.renderDeliveryWith(w, r, status, &view{RedeliverErrorKey: errKey})
}

// indented is a JSON payload indented for reading; any other payload as it is.
func indented(payload string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(payload), "", "  "); err != nil {
		return payload
	}
	return b.String()
}

// maxRedeliverFailed bounds how many deliveries one "send again every failed delivery" form
// sends again; a larger backlog takes another form (or the events API).
const maxRedeliverFailed = 500

// redeliverFailed sends again every failed (abandoned) delivery of env created since the form's
// time, newest first, at most maxRedeliverFailed, each through the merchant API's redelivery with
// an idempotency key of the form and the event: the form sent twice sends each event once.
func (c *Console) redeliverFailed(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	env, key := paygatev1.Environment(r.PostFormValue("env")), r.PostFormValue("key")
	since, err := time.Parse("2006-01-02T15:04", r.PostFormValue("since"))
	if err != nil {
		since, err = time.Parse(time.DateOnly, r.PostFormValue("since"))
	}
	if (env != paygatev1.EnvironmentSandbox && env != paygatev1.EnvironmentProduction) || !formKeyPattern.MatchString(key) ||
		err != nil || since.After(c.opts.Clock.Now()) {
		c.renderSettings(w, r, http.StatusUnprocessableEntity, &settingsView{ErrorKey: "redeliverSinceInvalid"})
		return
	}
	// The ids first: a delivery sent again leaves the failed filter, which would shift the pages.
	var ids []string
	for offset := 0; len(ids) < maxRedeliverFailed; offset += 100 {
		page, _, err := c.opts.Records.ListWebhookDeliveries(ctx, p.merchant, env, DeliveryFilter{Phase: paygatev1.DeliveryAbandoned}, 100, offset)
		if err != nil {
			c.serverError(w, r, "Listing failed webhook deliveries", err)
			return
		}
		older := false
		for _, d := range page {
			if d.CreationTimestamp.Time.Before(since) {
				older = true
				break
			}
			if len(ids) < maxRedeliverFailed {
				ids = append(ids, d.Spec.EventID)
			}
		}
		if older || len(page) < 100 {
			break
		}
	}
	sent, refused := 0, 0
	for _, id := range ids {
		status, _, err := c.opts.Records.APIWrite(ctx, p.merchant, env, APIRedeliver, id, nil, eventFormKey(key, id))
		if err != nil {
			c.serverError(w, r, "Redelivering a webhook event", err)
			return
		}
		if status == http.StatusAccepted || status == http.StatusOK {
			sent++
		} else {
			refused++ // archived meanwhile (EVENT_ARCHIVED), or already pending again
		}
	}
	c.audit(ctx, r, p.user, "redeliver-failed", fmt.Sprintf("%s since %s", env, since.Format(time.RFC3339)), paygatev1.ConsoleAuditSuccess,
		fmt.Sprintf("%d sent again, %d refused", sent, refused))
	http.Redirect(w, r, fmt.Sprintf("%s/settings?redelivered=%d", Prefix, sent), http.StatusSeeOther)
}

// eventFormKey is the idempotency key of one event's redelivery asked by the form with key.
func eventFormKey(key, eventID string) string {
	sum := sha256.Sum256([]byte(key + "\x00" + eventID))
	return "console-" + base64.RawURLEncoding.EncodeToString(sum[:])[:40]
}
