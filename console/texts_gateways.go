// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

// gatewayTexts are the words of the gateway controls (gateways.go), in English and Swahili.
var gatewayTexts = map[string]map[string]string{
	"en": {
		"navGateways":      "Gateways",
		"gatewaysChoose":   "The gateways your checkout offers",
		"gatewaysSaved":    "Saved: your checkout offers the gateways ticked.",
		"gatewaysNone":     "Tick at least one gateway: a checkout without any could take no payment.",
		"gatewaysInvalid":  "That choice is not one of your gateways. Nothing was changed.",
		"managedBy":        "Your configuration is managed by",
		"managedByAsk":     "Ask them to change it; it is shown here read-only.",
		"managedElsewhere": "Your configuration is managed elsewhere, so it cannot be changed here. Nothing was changed.",
		"save":             "Save",
	},
	"sw": {
		"navGateways":      "Njia za malipo",
		"gatewaysChoose":   "Njia za malipo ambazo ukurasa wako wa malipo unatoa",
		"gatewaysSaved":    "Imehifadhiwa: ukurasa wako wa malipo unatoa njia zilizowekwa alama.",
		"gatewaysNone":     "Weka alama angalau njia moja: ukurasa wa malipo usio na njia yoyote hauwezi kupokea malipo.",
		"gatewaysInvalid":  "Chaguo hilo si mojawapo ya njia zako za malipo. Hakuna kilichobadilishwa.",
		"managedBy":        "Mipangilio yako inasimamiwa na",
		"managedByAsk":     "Waombe waibadilishe; inaonyeshwa hapa bila kuweza kubadilishwa.",
		"managedElsewhere": "Mipangilio yako inasimamiwa mahali pengine, kwa hiyo haiwezi kubadilishwa hapa. Hakuna kilichobadilishwa.",
		"save":             "Hifadhi",
	},
}

// init adds gatewayTexts to the console's catalogues.
func init() { addTexts(gatewayTexts) }
