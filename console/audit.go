// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/consoleauth"
)

func isConflict(err error) bool { return apierrors.IsConflict(err) }

// audit records one console action of u in their merchant's audit trail. A record that cannot
// be written is logged (the action has happened; refusing to answer would not undo it).
func (c *Console) audit(ctx context.Context, r *http.Request, u *paygatev1.ConsoleUser, action, target string,
	result paygatev1.ConsoleAuditResult, reason string) {
	now := c.opts.Clock.Now()
	_, id, err := consoleauth.NewToken()
	if err != nil {
		c.opts.Log.Error(err, "Naming an audit record")
		return
	}
	rec := &paygatev1.ConsoleAuditRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: u.Namespace,
			// Time first, so names sort as the records were made; the random tail keeps two
			// records of one nanosecond apart.
			Name:   fmt.Sprintf("audit-%016x-%s", now.UnixNano(), id[:8]),
			Labels: map[string]string{paygatev1.LabelConsoleMerchant: u.Spec.Merchant, paygatev1.LabelConsoleUser: u.Name}},
		Spec: paygatev1.ConsoleAuditRecordSpec{Merchant: u.Spec.Merchant, Actor: u.Spec.Email, Action: action,
			Target: cut(target, 512), Result: result, Reason: cut(reason, 256), Address: c.address(r), Time: metav1.NewMicroTime(now)},
	}
	if err := c.opts.Writer.Create(ctx, rec); err != nil {
		c.opts.Log.Error(err, "Writing a console audit record", "user", u.Name, "action", action)
	}
	c.opts.Log.Info("Console action", "merchant", u.Spec.Merchant, "namespace", u.Namespace, "user", u.Name,
		"action", action, "result", string(result), "reason", reason, "address", rec.Spec.Address)
}

// auditPageSize is how many records the audit page shows.
const auditPageSize = 200

// auditPage shows the merchant's newest audit records to an owner.
func (c *Console) auditPage(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r)
	var list paygatev1.ConsoleAuditRecordList
	if err := c.opts.APIReader.List(r.Context(), &list, client.InNamespace(p.user.Namespace),
		client.MatchingLabels{paygatev1.LabelConsoleMerchant: p.merchant.Name}); err != nil {
		c.serverError(w, r, "Listing the audit trail", err)
		return
	}
	items := list.Items
	slices.SortFunc(items, func(a, b paygatev1.ConsoleAuditRecord) int { return strings.Compare(b.Name, a.Name) })
	if len(items) > auditPageSize {
		items = items[:auditPageSize]
	}
	c.render(w, r, http.StatusOK, "audit", &view{p: p, Audit: items})
}
