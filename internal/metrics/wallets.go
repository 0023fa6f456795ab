// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/paygate/paygate/internal/money"
)

// ProviderWalletBalance is the balance of each wallet of a pawapay gateway's pawaPay account, as
// the gateway controller last read it (docs/operations.md, What is measured). It is labelled by
// gateway: pawaPay's answer names no account, and gateways sharing one account (one token) report
// the same wallets, so never sum it across gateways. pawapay_provider is the provider code of a
// wallet kept for one provider (pawaPay's "provider" field), empty for a country's wallet.
// https://docs.pawapay.io/v2/api-reference/finances/wallet-balances
var ProviderWalletBalance = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "paygate_provider_wallet_balance",
	Help: "Balance of each wallet of a pawapay gateway's pawaPay account as of the gateway's last provider check, in the wallet's currency, by gateway, currency and pawapay_provider (empty for a country wallet). Informational: a float, never used for arithmetic; gateways sharing an account report the same wallets.",
}, []string{"gateway", "currency", "pawapay_provider"})

// ProviderAccountBalance is the balance of each M-Pesa account of a daraja gateway's
// organisation (Working, Utility, Charges Paid ...), as the last Account Balance result posted to
// the apiserver said (https://developer.safaricom.co.ke/apis/AccountBalance). The gateway
// controller asks with each provider check; the result arrives at the apiserver, so the series
// lives in the apiserver replica that received it: take max by (gateway, account, currency).
var ProviderAccountBalance = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "paygate_provider_account_balance",
	Help: "Available balance of each M-Pesa account of a daraja gateway's organisation as of the last Account Balance result, by gateway, account and currency. Informational: a float, never used for arithmetic; exported by the apiserver replica that received the result.",
}, []string{"gateway", "account", "currency"})

func init() { crmetrics.Registry.MustRegister(ProviderWalletBalance, ProviderAccountBalance) }

// Wallet names one wallet of a pawaPay account: its currency, and the provider code of a wallet
// kept for one provider ("" for a country's wallet).
type Wallet struct {
	Currency, Provider string
}

// Account names one M-Pesa account of an organisation: its name and currency.
type Account struct {
	Name, Currency string
}

// gatewaySeries remembers, per gateway, the label pairs (after the gateway label) of a gauge's
// series, so that a figure that disappears from the provider's answer loses its series without
// the others flickering.
type gatewaySeries struct {
	vec       *prometheus.GaugeVec
	mu        sync.Mutex
	byGateway map[string]map[[2]string]bool
}

var (
	walletSeries  = &gatewaySeries{vec: ProviderWalletBalance, byGateway: map[string]map[[2]string]bool{}}
	accountSeries = &gatewaySeries{vec: ProviderAccountBalance, byGateway: map[string]map[[2]string]bool{}}
)

// replace makes values the gateway's series: they are set, and those it reported before and not
// now are dropped.
//
// This is the only place a provider's balance becomes a float: money.Amount is exact, a
// Prometheus sample is a float64. The conversion goes through the amount's exact decimal text, so
// a balance below 2^53 hundredths (90 trillion in a two-decimal currency) keeps its cents; a
// larger one is rounded to the nearest float, which a graph does not mind. Nothing reads the
// metric back.
func (g *gatewaySeries) replace(gateway string, values map[[2]string]money.Amount) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for l := range g.byGateway[gateway] {
		if _, ok := values[l]; !ok {
			g.vec.DeleteLabelValues(gateway, l[0], l[1])
		}
	}
	now := make(map[[2]string]bool, len(values))
	for l, a := range values {
		// ParseFloat of a decimal the money package wrote cannot fail (no sign, exponent or
		// separator); the worst it does is round.
		f, _ := strconv.ParseFloat(a.String(), 64)
		g.vec.WithLabelValues(gateway, l[0], l[1]).Set(f)
		now[l] = true
	}
	if len(now) == 0 {
		delete(g.byGateway, gateway)
		return
	}
	g.byGateway[gateway] = now
}

// SetWalletBalances makes balances the gateway's pawaPay wallets.
func SetWalletBalances(gateway string, balances map[Wallet]money.Amount) {
	values := make(map[[2]string]money.Amount, len(balances))
	for w, a := range balances {
		values[[2]string{w.Currency, w.Provider}] = a
	}
	walletSeries.replace(gateway, values)
}

// ForgetWalletBalances drops every wallet series of the gateway: it is gone, no longer a pawapay
// gateway, its provider check fails, or its balances could not be read (an absent series says
// "unknown", where a stale figure would mislead).
func ForgetWalletBalances(gateway string) {
	SetWalletBalances(gateway, nil)
}

// SetAccountBalances makes balances the gateway's M-Pesa accounts.
func SetAccountBalances(gateway string, balances map[Account]money.Amount) {
	values := make(map[[2]string]money.Amount, len(balances))
	for a, v := range balances {
		values[[2]string{a.Name, a.Currency}] = v
	}
	accountSeries.replace(gateway, values)
}
