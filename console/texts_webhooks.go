// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

// webhookTexts are the words of the webhook delivery pages (webhooks.go), in English and Swahili.
var webhookTexts = map[string]map[string]string{
	"en": {
		"whdNav": "Webhooks", "whdTitle": "Webhook deliveries", "whdNone": "No webhook delivery matches.",
		"whdFilterEvent": "Event type", "whdColEvent": "Event", "whdColEventID": "Event ID", "whdColSource": "About",
		"whdColResponse": "Response", "whdColDelivered": "Delivered at",
		"st-delivered": "Delivered", "st-no_endpoint": "No endpoint",
		"whdSrc-Payment": "Payment", "whdSrc-Payout": "Payout", "whdSrc-Refund": "Refund",
		"whdSrc-Subscription": "Subscription", "whdSrc-Invoice": "Invoice",
		"whdDetailTitle": "Webhook delivery", "whdBack": "All webhook deliveries",
		"whdTotalAttempts": "Attempts (every round)", "whdNextAttempt": "Next attempt", "whdRedelivery": "Redelivery",
		"whdURL":           "Sent to",
		"whdAttemptsTitle": "Attempts of the latest round", "whdNoAttempts": "No attempt has been made yet.",
		"whdColNumber": "No.", "whdColError": "Error", "whdColDuration": "Duration (ms)",
		"whdPayloadTitle":  "Payload (the body sent and signed, indented for reading)",
		"whdNoPayload":     "No payload is recorded.",
		"whdPayloadHidden": "Owners and developers also see where the event was sent and its payload.",
	},
	"sw": {
		"whdNav": "Webhooks", "whdTitle": "Uwasilishaji wa webhook", "whdNone": "Hakuna uwasilishaji wa webhook unaolingana.",
		"whdFilterEvent": "Aina ya tukio", "whdColEvent": "Tukio", "whdColEventID": "Kitambulisho cha tukio", "whdColSource": "Inahusu",
		"whdColResponse": "Jibu", "whdColDelivered": "Imefika",
		"st-delivered": "Imefika", "st-no_endpoint": "Hakuna anwani ya kupokea",
		"whdSrc-Payment": "Malipo", "whdSrc-Payout": "Malipo ya nje", "whdSrc-Refund": "Marejesho",
		"whdSrc-Subscription": "Usajili", "whdSrc-Invoice": "Ankara",
		"whdDetailTitle": "Uwasilishaji wa webhook", "whdBack": "Uwasilishaji wote wa webhook",
		"whdTotalAttempts": "Majaribio (mizunguko yote)", "whdNextAttempt": "Jaribio lijalo", "whdRedelivery": "Kutuma upya",
		"whdURL":           "Imetumwa kwa",
		"whdAttemptsTitle": "Majaribio ya mzunguko wa mwisho", "whdNoAttempts": "Hakuna jaribio lililofanyika bado.",
		"whdColNumber": "Na.", "whdColError": "Hitilafu", "whdColDuration": "Muda (ms)",
		"whdPayloadTitle":  "Maudhui (mwili uliotumwa na kusainiwa, umepangwa ili usomeke)",
		"whdNoPayload":     "Hakuna maudhui yaliyorekodiwa.",
		"whdPayloadHidden": "Wamiliki na wasanidi wanaona pia tukio lilipotumwa na maudhui yake.",
	},
}

// init adds webhookTexts to the console's catalogues.
func init() { addTexts(webhookTexts) }
