// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/eligibility"
	"github.com/paygate/paygate/internal/money"
)

// balanceJSON is one currency of the balance response (decided in docs/api.md).
type balanceJSON struct {
	Currency        string `json:"currency"`
	Available       any    `json:"available"`
	SettledPayments int64  `json:"settled_payments"`
	WalletActive    bool   `json:"wallet_active"`
}

// getBalance answers the available balances of the merchant's supported currencies in the
// caller's environment, from the Balance the balance controller derives from settled payments.
func (s *Server) getBalance(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	var b paygatev1.Balance
	err := s.opts.Cache.Get(r.Context(), client.ObjectKey{Namespace: c.merchant.Namespace, Name: paygatev1.BalanceName(c.merchant.Name, c.env)}, &b)
	if err != nil && !apierrors.IsNotFound(err) {
		s.serverError("Reading a balance", err).write(w)
		return
	}
	byCurrency := map[paygatev1.CurrencyCode]paygatev1.CurrencyBalance{}
	for _, cb := range b.Status.Currencies {
		byCurrency[cb.Currency] = cb
	}
	out := []balanceJSON{}
	for _, code := range c.merchant.Spec.Currencies {
		cur, ok := money.LookupCurrency(string(code))
		if !ok {
			continue
		}
		cb := byCurrency[code]
		available := money.Amount{}.JSONNumber(cur.Scale)
		if cb.Available != "" {
			if available, err = money.JSONAmount(string(cb.Available), string(code)); err != nil {
				s.serverError("Rendering a balance", err).write(w)
				return
			}
		}
		out = append(out, balanceJSON{
			Currency: string(code), Available: available, SettledPayments: cb.SettledPayments,
			WalletActive: eligibility.CheckCurrency(c.merchant, code) == nil,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"status": "success",
		"data":   map[string]any{"environment": string(c.env), "balances": out},
	})
}
