// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

// payoutTexts are the words of the payout pages (payout.go), in English and Swahili.
var payoutTexts = map[string]map[string]string{
	"en": {
		"payoutTitle":   "Pay out",
		"payoutPreview": "See the fee",
		"payoutPayable": "You receive",
		"payoutCode":    "Your authenticator's code, to confirm the payout",
		"payoutConfirm": "Pay out",
		"payoutInvalid": "Give an amount, and send the form from this page. Nothing was paid out.",
		"payoutNew":     "Pay out your balance",
	},
	"sw": {
		"payoutTitle":   "Toa pesa",
		"payoutPreview": "Ona ada",
		"payoutPayable": "Utapokea",
		"payoutCode":    "Msimbo wa programu yako ya uthibitishaji, kuthibitisha utoaji",
		"payoutConfirm": "Toa pesa",
		"payoutInvalid": "Weka kiasi, na utume fomu kutoka ukurasa huu. Hakuna pesa iliyotolewa.",
		"payoutNew":     "Toa salio lako",
	},
}

// init adds payoutTexts to the console's catalogues.
func init() { addTexts(payoutTexts) }
