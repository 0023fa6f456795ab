// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

// rotationTexts are the words of the settings page about a rotation in progress: an API key that
// still works during its overlap, a webhook signing secret waiting for activation.
var rotationTexts = map[string]map[string]string{
	"en": {
		"previousKey":          "The key it replaced,",
		"previousKeyUntil":     "works until",
		"webhookSecretPending": "A new secret is prepared and waits for activation, since",
	},
	"sw": {
		"previousKey":          "Ufunguo uliobadilishwa,",
		"previousKeyUntil":     "unafanya kazi hadi",
		"webhookSecretPending": "Siri mpya imeandaliwa na inasubiri kuwashwa, tangu",
	},
}

// init adds rotationTexts to the console's catalogues.
func init() { addTexts(rotationTexts) }
