// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"strings"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// checkoutText holds the strings of the hosted checkout page in one language.
type checkoutText struct {
	Title, SandboxBanner, PayTo, ChooseMethod, PhoneLabel, PhonePlaceholder, PayButton, Cancel string
	Approve, WaitingHint, AlreadyWaiting, Success, BackToMerchant                              string
	InvalidTitle, InvalidBody, ExpiredTitle, ExpiredBody                                       string
	ErrPhone, ErrGateway, ErrNoGateway                                                         string
	Failures                                                                                   map[paygatev1.FailureCode]string
	FailedGeneric                                                                              string
}

// checkoutLanguages: English first, Swahili second (customers in Tanzania and Kenya).
var checkoutLanguages = map[string]checkoutText{
	"en": {
		Title: "Pay", SandboxBanner: "Sandbox: a test payment. No money moves.",
		PayTo: "Pay", ChooseMethod: "Choose how to pay", PhoneLabel: "Mobile money number",
		PhonePlaceholder: "e.g. 0712 345 678", PayButton: "Pay", Cancel: "Cancel and return to the shop",
		Approve: "Check your phone and enter your PIN to approve the payment sent to", WaitingHint: "This page updates by itself.",
		Success: "Payment received. Thank you!", BackToMerchant: "Return to the shop",
		InvalidTitle: "This payment link is not valid", InvalidBody: "Check the link you were given, or ask the shop for a new one.",
		ExpiredTitle: "This payment link has expired", ExpiredBody: "The time to pay has passed. Ask the shop to start the payment again.",
		ErrPhone:   "Enter a valid mobile number, for example 0712 345 678.",
		ErrGateway: "Choose a payment method.", ErrNoGateway: "No payment method is available for this payment.",
		Failures: map[paygatev1.FailureCode]string{
			paygatev1.FailureInsufficientFunds: "The payment failed: not enough money in the account.",
			paygatev1.FailurePaymentDeclined:   "The payment was declined.",
			paygatev1.FailureCustomerCancelled: "The payment was cancelled on the phone.",
			paygatev1.FailureExpiredSession:    "The time to pay has passed.",
		},
		FailedGeneric: "The payment did not go through.",
	},
	"sw": {
		Title: "Lipa", SandboxBanner: "Majaribio: malipo ya majaribio. Hakuna pesa inayohamishwa.",
		PayTo: "Lipa", ChooseMethod: "Chagua njia ya kulipa", PhoneLabel: "Namba ya simu ya pesa",
		PhonePlaceholder: "mfano 0712 345 678", PayButton: "Lipa", Cancel: "Ghairi na urudi dukani",
		Approve: "Angalia simu yako na uweke PIN kuidhinisha malipo yaliyotumwa kwa", WaitingHint: "Ukurasa huu utajisasisha wenyewe.",
		Success: "Malipo yamepokelewa. Asante!", BackToMerchant: "Rudi dukani",
		InvalidTitle: "Kiungo hiki cha malipo si sahihi", InvalidBody: "Hakikisha kiungo ulichopewa, au omba duka kiungo kipya.",
		ExpiredTitle: "Muda wa kiungo hiki cha malipo umekwisha", ExpiredBody: "Muda wa kulipa umepita. Omba duka lianze malipo upya.",
		ErrPhone:   "Weka namba sahihi ya simu, mfano 0712 345 678.",
		ErrGateway: "Chagua njia ya kulipa.", ErrNoGateway: "Hakuna njia ya kulipa inayopatikana kwa malipo haya.",
		Failures: map[paygatev1.FailureCode]string{
			paygatev1.FailureInsufficientFunds: "Malipo hayakufanikiwa: salio halitoshi.",
			paygatev1.FailurePaymentDeclined:   "Malipo yamekataliwa.",
			paygatev1.FailureCustomerCancelled: "Malipo yameghairiwa kwenye simu.",
			paygatev1.FailureExpiredSession:    "Muda wa kulipa umepita.",
		},
		FailedGeneric: "Malipo hayakufanikiwa.",
	},
}

var checkoutLanguageNames = []struct{ Code, Name string }{{"en", "English"}, {"sw", "Kiswahili"}}

// checkoutLanguage picks ?lang=, else the first supported language of Accept-Language, else en.
func checkoutLanguage(query, acceptLanguage string) string {
	if _, ok := checkoutLanguages[query]; ok {
		return query
	}
	for _, part := range strings.Split(acceptLanguage, ",") {
		tag := strings.ToLower(strings.TrimSpace(strings.SplitN(part, ";", 2)[0]))
		if _, ok := checkoutLanguages[strings.SplitN(tag, "-", 2)[0]]; ok {
			return strings.SplitN(tag, "-", 2)[0]
		}
	}
	return "en"
}

func (t checkoutText) failure(code string) string {
	if m, ok := t.Failures[paygatev1.FailureCode(code)]; ok {
		return m
	}
	return t.FailedGeneric
}
