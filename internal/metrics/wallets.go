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

func init() { crmetrics.Registry.MustRegister(ProviderWalletBalance) }

// Wallet names one wallet of a pawaPay account: its currency, and the provider code of a wallet
// kept for one provider ("" for a country's wallet).
type Wallet struct {
	Currency, Provider string
}

// walletSeries remembers the wallets each gateway reports, so that a wallet that disappears from
// pawaPay's answer loses its series without the others flickering.
var walletSeries = struct {
	sync.Mutex
	byGateway map[string]map[Wallet]bool
}{byGateway: map[string]map[Wallet]bool{}}

// SetWalletBalances makes balances the gateway's wallets: their series are set, and those of
// wallets it reported before and not now are dropped.
//
// This is the only place a wallet balance becomes a float: money.Amount is exact, a Prometheus
// sample is a float64. The conversion goes through the amount's exact decimal text, so a balance
// below 2^53 hundredths (90 trillion in a two-decimal currency) keeps its cents; a larger one is
// rounded to the nearest float, which a graph does not mind. Nothing reads the metric back.
func SetWalletBalances(gateway string, balances map[Wallet]money.Amount) {
	walletSeries.Lock()
	defer walletSeries.Unlock()
	for w := range walletSeries.byGateway[gateway] {
		if _, ok := balances[w]; !ok {
			ProviderWalletBalance.DeleteLabelValues(gateway, w.Currency, w.Provider)
		}
	}
	now := make(map[Wallet]bool, len(balances))
	for w, a := range balances {
		// ParseFloat of a decimal the money package wrote cannot fail (no sign, exponent or
		// separator); the worst it does is round.
		f, _ := strconv.ParseFloat(a.String(), 64)
		ProviderWalletBalance.WithLabelValues(gateway, w.Currency, w.Provider).Set(f)
		now[w] = true
	}
	if len(now) == 0 {
		delete(walletSeries.byGateway, gateway)
		return
	}
	walletSeries.byGateway[gateway] = now
}

// ForgetWalletBalances drops every wallet series of the gateway: it is gone, no longer a pawapay
// gateway, its provider check fails, or its balances could not be read (an absent series says
// "unknown", where a stale figure would mislead).
func ForgetWalletBalances(gateway string) {
	SetWalletBalances(gateway, nil)
}
