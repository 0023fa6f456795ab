// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// cell is one table cell: text, and a link when it leads somewhere.
type cell struct{ Text, Link, Class string }

// option is one choice of a filter's select.
type option struct{ Value, Label string }

// filter is one of a list page's filters: a select when it has options, a text field otherwise.
type filter struct {
	Name, Label, Value string
	Options            []option
}

// table is a list page: its filters, columns, rows and pager.
type table struct {
	Title, Path      string
	Filters          []filter
	Columns          []string
	Numeric          map[int]bool
	Rows             [][]cell
	Empty            string
	Total, Offset    int
	PrevURL, NextURL string
}

// setPager sets the table's Previous and Next links for a page of shown rows at t.Offset of
// t.Total, keeping the environment and every filter that has a value.
func (t *table) setPager(env paygatev1.Environment, shown int) {
	page := func(off int) string {
		u := url.Values{"env": {string(env)}, "offset": {strconv.Itoa(off)}}
		for _, f := range t.Filters {
			if f.Value != "" {
				u.Set(f.Name, f.Value)
			}
		}
		return t.Path + "?" + u.Encode()
	}
	if t.Offset > 0 {
		t.PrevURL = page(max(t.Offset-pageSize, 0))
	}
	if t.Offset+shown < t.Total {
		t.NextURL = page(t.Offset + pageSize)
	}
}

// listPage is one kind of list the console shows through the merchant API's list: its title, its
// filters (the API's own query parameters), its columns, and how a page of records becomes rows.
type listPage struct {
	list, title, empty string
	filters            []filterSpec
	columns            []string
	numeric            map[int]bool
	rows               func(v *view, env paygatev1.Environment, decode func(items any) (int, error)) ([][]cell, int, error)
}

// filterSpec is a filter of a list: the API's parameter, its label, and its values when they are
// a closed set (message keys "st-<value>").
type filterSpec struct {
	name, label string
	values      []string
	maxLen      int
}

var listPages = map[string]listPage{
	"payouts": {list: "payouts", title: "navPayouts", empty: "noRows",
		filters: []filterSpec{{name: "status", label: "filterStatus", values: []string{"pending", "processing", "success", "failed"}}},
		columns: []string{"colCreated", "colID", "colAmount", "fee", "colPayable", "colDestination", "colStatus", "reason"},
		numeric: map[int]bool{2: true, 3: true, 4: true},
		rows: func(v *view, _ paygatev1.Environment, decode func(any) (int, error)) ([][]cell, int, error) {
			var items []paygate.Payout
			total, err := decode(&items)
			rows := make([][]cell, 0, len(items))
			for _, p := range items {
				rows = append(rows, []cell{{Text: v.WhenText(p.CreatedAt)}, {Text: p.ID, Class: "mono"}, {Text: p.Amount.String() + " " + p.Currency},
					{Text: p.Fee.String()}, {Text: p.PayableAmount.String()}, {Text: p.Destination}, statusCell(v, p.Status), {Text: p.Reason}})
			}
			return rows, total, err
		}},
	"refunds": {list: "refunds", title: "navRefunds", empty: "noRows",
		filters: []filterSpec{{name: "status", label: "filterStatus", values: []string{"pending", "processing", "success", "failed"}},
			{name: "payment", label: "colTrx", maxLen: 64}},
		columns: []string{"colCreated", "colID", "colTrx", "colAmount", "colStatus", "reason"},
		numeric: map[int]bool{3: true},
		rows: func(v *view, env paygatev1.Environment, decode func(any) (int, error)) ([][]cell, int, error) {
			var items []paygate.Refund
			total, err := decode(&items)
			rows := make([][]cell, 0, len(items))
			for _, r := range items {
				rows = append(rows, []cell{{Text: v.WhenText(r.CreatedAt)}, {Text: r.ID, Class: "mono"},
					{Text: r.TrxID, Link: Prefix + "/payments/" + url.PathEscape(r.TrxID) + "?env=" + string(env)},
					{Text: r.Amount.String() + " " + r.Currency}, statusCell(v, r.Status), {Text: r.Reason}})
			}
			return rows, total, err
		}},
	"subscriptions": {list: "subscriptions", title: "navSubscriptions", empty: "noRows",
		filters: []filterSpec{{name: "status", label: "filterStatus", values: []string{"pending", "active", "past_due", "suspended", "cancelled"}},
			{name: "plan_code", label: "colPlan", maxLen: 64}},
		columns: []string{"colID", "colPlan", "customer", "colAmount", "colStatus", "colNextCharge"},
		numeric: map[int]bool{3: true},
		rows: func(v *view, env paygatev1.Environment, decode func(any) (int, error)) ([][]cell, int, error) {
			var items []paygate.Subscription
			total, err := decode(&items)
			rows := make([][]cell, 0, len(items))
			for _, s := range items {
				next := ""
				if s.NextChargeAt != nil {
					next = v.WhenText(*s.NextChargeAt)
				}
				rows = append(rows, []cell{{Text: s.ID, Class: "mono", Link: Prefix + "/invoices?env=" + string(env) + "&subscription=" + url.QueryEscape(s.ID)},
					{Text: s.PlanCode}, {Text: s.CustomerPhone}, {Text: s.Amount.String() + " " + s.Currency}, statusCell(v, s.Status), {Text: next}})
			}
			return rows, total, err
		}},
	"invoices": {list: "invoices", title: "navInvoices", empty: "noRows",
		filters: []filterSpec{{name: "status", label: "filterStatus", values: []string{"open", "paid", "payment_failed", "void"}},
			{name: "subscription", label: "colSubscription", maxLen: 64}},
		columns: []string{"colCreated", "colID", "colSubscription", "colPeriod", "colAmount", "colStatus", "colAttempts"},
		numeric: map[int]bool{3: true, 4: true, 6: true},
		rows: func(v *view, env paygatev1.Environment, decode func(any) (int, error)) ([][]cell, int, error) {
			var items []paygate.Invoice
			total, err := decode(&items)
			rows := make([][]cell, 0, len(items))
			for _, in := range items {
				rows = append(rows, []cell{{Text: v.WhenText(in.CreatedAt)}, {Text: in.ID, Class: "mono"}, {Text: in.Subscription, Class: "mono"},
					{Text: strconv.Itoa(in.Period)}, {Text: in.Amount.String() + " " + in.Currency}, statusCell(v, in.Status), {Text: strconv.Itoa(in.Attempts)}})
			}
			return rows, total, err
		}},
}

func statusCell(v *view, status string) cell {
	return cell{Text: v.T("st-" + status), Class: "status status-" + status}
}

// apiListPage serves the list page of kind through the merchant API's list of the same name.
func (c *Console) apiListPage(kind string) http.HandlerFunc {
	lp := listPages[kind]
	return func(w http.ResponseWriter, r *http.Request) {
		p := principalFrom(r)
		env := environment(r, p.merchant)
		q := r.URL.Query()
		v := &view{p: p, lang: language(w, r), Env: env}
		api := url.Values{"limit": {strconv.Itoa(pageSize)}}
		t := &table{Title: lp.title, Path: Prefix + "/" + kind, Columns: lp.columns, Numeric: lp.numeric, Empty: lp.empty}
		for _, f := range lp.filters {
			val := q.Get(f.name)
			if f.values != nil {
				val = oneOf(val, f.values)
			} else {
				val = cut(val, f.maxLen)
			}
			ft := filter{Name: f.name, Label: f.label, Value: val}
			for _, o := range f.values {
				ft.Options = append(ft.Options, option{Value: o, Label: v.T("st-" + o)})
			}
			t.Filters = append(t.Filters, ft)
			if val != "" {
				api.Set(f.name, val)
			}
		}
		offset, _ := strconv.Atoi(q.Get("offset"))
		t.Offset = min(max(offset, 0), 1_000_000)
		api.Set("offset", strconv.Itoa(t.Offset))
		rows, total, err := lp.rows(v, env, func(items any) (int, error) {
			return c.opts.Records.APIList(r.Context(), p.merchant, env, lp.list, api, items)
		})
		var refused *ListRefused
		switch {
		case errors.As(err, &refused):
			v.Error = "filterRefused"
		case err != nil:
			c.serverError(w, r, "Listing "+kind, err)
			return
		}
		t.Rows, t.Total = rows, total
		t.setPager(env, len(rows))
		v.Table = t
		status := http.StatusOK
		if v.Error != "" {
			status = http.StatusUnprocessableEntity
		}
		c.render(w, r, status, "list", v)
	}
}

// oneOf is v when it is one of values, "" otherwise.
func oneOf(v string, values []string) string {
	for _, x := range values {
		if v == x {
			return v
		}
	}
	return ""
}
