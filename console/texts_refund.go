// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

// refundTexts are the words of the refund form (refund.go), in English and Swahili.
var refundTexts = map[string]map[string]string{
	"en": {
		"refundTitle":      "Refund",
		"refundAmount":     "Amount to refund",
		"refundAmountHint": "Leave empty to refund all that is left.",
		"refundReason":     "Reason (optional)",
		"refundButton":     "Refund",
		"refundAsked":      "Refund asked for:",
		"refundInvalid":    "The refund form is not valid: reload the page and try again. Nothing was refunded.",
		"redeliverButton":  "Send again",
		"redeliverAsked":   "Sending again: a new round of attempts has started.",
		"redeliverInvalid": "The form is not valid: reload the page and try again. Nothing was sent.",
	},
	"sw": {
		"refundTitle":      "Rejesha pesa",
		"refundAmount":     "Kiasi cha kurejesha",
		"refundAmountHint": "Acha tupu ili kurejesha kiasi chote kilichobaki.",
		"refundReason":     "Sababu (si lazima)",
		"refundButton":     "Rejesha",
		"refundAsked":      "Urejeshaji umeombwa:",
		"refundInvalid":    "Fomu ya kurejesha si sahihi: pakia ukurasa upya na ujaribu tena. Hakuna kilichorejeshwa.",
		"redeliverButton":  "Tuma tena",
		"redeliverAsked":   "Inatumwa tena: mzunguko mpya wa majaribio umeanza.",
		"redeliverInvalid": "Fomu si sahihi: pakia ukurasa upya na ujaribu tena. Hakuna kilichotumwa.",
	},
}

// init adds refundTexts to the console's catalogues.
func init() { addTexts(refundTexts) }
