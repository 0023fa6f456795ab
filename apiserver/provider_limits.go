// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"fmt"
	"strings"

	"github.com/paygate/paygate/internal/eligibility"
	"github.com/paygate/paygate/internal/money"
)

// providerLimitsError is the answer when the only gateways whose own limits admit a payment's
// amount all have a provider that refuses it (eligibility.CheckLimits): 422 naming payment_amount
// and why. An amount with more decimal places than the providers take is `Validation failed`, as
// an amount with more decimal places than the currency allows; an amount below the providers'
// minimum or above their maximum is INVALID_AMOUNT, as one outside the gateways' own limits
// (docs/api.md, How a payment request is decided).
func providerLimitsError(refusals []eligibility.ProviderRefusal, amount money.Amount, cur money.Currency) *APIError {
	reason := refusals[0].Reason
	perGateway := make([]string, 0, len(refusals))
	for _, r := range refusals {
		perGateway = append(perGateway, providerRefusalMessage(r, cur))
		if r.Reason != reason {
			reason = ""
		}
	}
	var summary string
	switch {
	case len(refusals) == 1:
		summary = perGateway[0]
		perGateway = nil
	case reason == eligibility.RefusalTooManyDecimals:
		most := refusals[0].Decimals
		for _, r := range refusals[1:] {
			most = max(most, r.Decimals)
		}
		summary = "The available payment methods take " + decimalsPhrase(most, cur) + "."
	case reason == eligibility.RefusalBelowMinimum:
		lowest := refusals[0].Limit
		for _, r := range refusals[1:] {
			if r.Limit.Cmp(lowest) < 0 {
				lowest = r.Limit
			}
		}
		summary = "The payment_amount is below the minimum of every available payment method; the lowest is " + limitText(lowest, cur) + "."
	case reason == eligibility.RefusalAboveMaximum:
		highest := refusals[0].Limit
		for _, r := range refusals[1:] {
			if r.Limit.Cmp(highest) > 0 {
				highest = r.Limit
			}
		}
		summary = "The payment_amount is above the maximum of every available payment method; the highest is " + limitText(highest, cur) + "."
	default:
		summary = "No available payment method accepts this payment_amount (" + amount.String() + " " + cur.Code + ")."
	}
	e := validationError(map[string][]string{"payment_amount": append([]string{summary}, perGateway...)})
	if reason != eligibility.RefusalTooManyDecimals {
		e.Label = LabelInvalidAmount
	}
	return e
}

// providerRefusalMessage says why one gateway's provider refuses the amount, naming the gateway
// as customers see it: "M-Pesa Kenya takes whole shillings: the payment_amount must have no
// decimals.", "The payment_amount is below the minimum of 100.00 TZS for Airtel Money.".
func providerRefusalMessage(r eligibility.ProviderRefusal, cur money.Currency) string {
	name := r.Gateway.Spec.DisplayName
	if name == "" {
		name = r.Gateway.Name
	}
	switch r.Reason {
	case eligibility.RefusalTooManyDecimals:
		return name + " takes " + decimalsPhrase(r.Decimals, cur) + "."
	case eligibility.RefusalBelowMinimum:
		return "The payment_amount is below the minimum of " + limitText(r.Limit, cur) + " for " + name + "."
	case eligibility.RefusalAboveMaximum:
		return "The payment_amount is above the maximum of " + limitText(r.Limit, cur) + " for " + name + "."
	default:
		return name + " does not accept this payment_amount."
	}
}

// decimalsPhrase is what a provider taking decimals places takes, and what that asks of the
// amount: "whole shillings: the payment_amount must have no decimals".
func decimalsPhrase(decimals int32, cur money.Currency) string {
	if decimals <= 0 {
		return "whole " + unitPlural(cur) + ": the payment_amount must have no decimals"
	}
	places := "decimal places"
	if decimals == 1 {
		places = "decimal place"
	}
	return fmt.Sprintf("at most %d %s: the payment_amount must have at most %d %s", decimals, places, decimals, places)
}

// unitPlural names the currency's whole units: "shillings" for the Kenyan Shilling, "francs" for
// the Rwanda Franc; the code when the currency has no name.
func unitPlural(cur money.Currency) string {
	words := strings.Fields(cur.Name)
	if len(words) == 0 {
		return cur.Code + " units"
	}
	w := strings.ToLower(words[len(words)-1])
	if strings.HasSuffix(w, "s") {
		return w
	}
	return w + "s"
}

// limitText writes a provider's limit with the currency's decimal places: "100.00 TZS".
func limitText(a money.Amount, cur money.Currency) string {
	return a.StringFixed(cur.Scale) + " " + cur.Code
}
