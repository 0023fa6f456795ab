// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"strings"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/pkg/paygate"
)

// exportChunk is how many payments each read of an export asks for.
const exportChunk = 500

// exportColumns are the CSV export's columns: the API's payment fields of the same names.
var exportColumns = []string{"trx_id", "merchant_ref", "status", "reason", "amount", "fee", "net_amount", "currency",
	"payment_mode", "gateway", "customer_phone", "environment", "created_at", "updated_at", "amount_refunded", "refund_state"}

func exportRow(p *paygate.Payment) []string {
	fee, net := "", ""
	if p.Fee != nil {
		fee = p.Fee.String()
	}
	if p.NetAmount != nil {
		net = p.NetAmount.String()
	}
	return []string{p.TrxID, csvSafe(p.MerchantRef), p.Status, p.Reason, p.Amount.String(), fee, net, p.Currency, p.PaymentMode,
		p.Gateway, p.Customer.Phone, p.Environment, p.CreatedAt, p.UpdatedAt, p.AmountRefunded.String(), p.RefundState}
}

// csvSafe keeps a spreadsheet from reading a merchant-supplied cell as a formula.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// exportPayments streams every payment the list's filters match as CSV, live and archived alike,
// newest first. It reads the list in chunks by offset; a payment created while the export runs
// moves the later chunks by one place (new payments come first), so a row the previous chunk
// already wrote is skipped: each payment is written once as long as fewer than a chunk's worth of
// payments are created during one chunk's read.
func (c *Console) exportPayments(w http.ResponseWriter, r *http.Request) {
	ctx, p := r.Context(), principalFrom(r)
	env := environment(r, p.merchant)
	form := paymentFormOf(r.URL.Query())
	f, bad := form.filter()
	if bad != "" {
		c.refuse(w, r, http.StatusUnprocessableEntity, bad)
		return
	}
	// A filter the list refuses is said on a page before the file starts: one row is asked first.
	if _, _, err := c.opts.Records.ListPayments(ctx, p.merchant, env, f, 1, 0); err != nil {
		var refused *FilterRefused
		if errors.As(err, &refused) {
			c.refuse(w, r, http.StatusUnprocessableEntity, refusedKey(refused))
			return
		}
		c.serverError(w, r, "Exporting payments", err)
		return
	}
	target := form.auditTarget(env)
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="payments-%s-%s.csv"`, env, c.opts.Clock.Now().UTC().Format("20060102-150405")))
	h.Set("Cache-Control", "no-store")
	out := csv.NewWriter(w)
	_ = out.Write(exportColumns)
	var written map[string]bool // the previous chunk's trx ids
	rows := 0
	for offset := 0; ; offset += exportChunk {
		page, total, err := c.opts.Records.ListPayments(ctx, p.merchant, env, f, exportChunk, offset)
		if err != nil {
			// The status line is gone: the file ends here, and the audit trail says it failed.
			c.opts.Log.Error(err, "Exporting payments", "merchant", p.merchant.Name)
			c.audit(ctx, r, p.user, "export-payments", target, paygatev1.ConsoleAuditFailed, fmt.Sprintf("after %d rows", rows))
			out.Flush()
			return
		}
		now := make(map[string]bool, len(page))
		for i := range page {
			now[page[i].TrxID] = true
			if written[page[i].TrxID] {
				continue
			}
			_ = out.Write(exportRow(&page[i]))
			rows++
		}
		written = now
		out.Flush()
		if len(page) < exportChunk || offset+exportChunk >= total {
			break
		}
	}
	c.audit(ctx, r, p.user, "export-payments", target, paygatev1.ConsoleAuditSuccess, fmt.Sprintf("%d rows", rows))
}
