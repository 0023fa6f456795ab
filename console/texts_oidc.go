// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package console

// oidcTexts are the words of the OpenID Connect sign-in (oidc.go), in English and Swahili.
var oidcTexts = map[string]map[string]string{
	"en": {
		"oidcSignIn":          "Sign in with your organisation's account",
		"oidcUnavailable":     "Signing in through your organisation's identity provider is not possible right now. Try again in a moment.",
		"oidcRestart":         "This sign-in took too long or was started in another browser. Start signing in again.",
		"oidcDenied":          "Your identity provider did not sign you in.",
		"oidcFailed":          "The answer from your identity provider could not be checked. Start signing in again.",
		"oidcEmailUnverified": "Your identity provider has not confirmed your email address.",
		"oidcNoAccess":        "Your account at your identity provider does not give you access to a merchant's console. Ask your administrator.",
		"oidcNotAllowed":      "This email address cannot sign in to this console. Ask your account's owner.",
	},
	"sw": {
		"oidcSignIn":          "Ingia kwa akaunti ya shirika lako",
		"oidcUnavailable":     "Kuingia kupitia mtoa utambulisho wa shirika lako hakuwezekani sasa hivi. Jaribu tena baada ya muda mfupi.",
		"oidcRestart":         "Kuingia huku kumechukua muda mrefu mno au kulianzishwa kwenye kivinjari kingine. Anza kuingia upya.",
		"oidcDenied":          "Mtoa utambulisho wako hakukuruhusu kuingia.",
		"oidcFailed":          "Jibu kutoka kwa mtoa utambulisho wako halikuweza kuthibitishwa. Anza kuingia upya.",
		"oidcEmailUnverified": "Mtoa utambulisho wako hajathibitisha anwani yako ya barua pepe.",
		"oidcNoAccess":        "Akaunti yako kwa mtoa utambulisho haikupi ruhusa ya kufikia dashibodi ya mfanyabiashara. Muulize msimamizi wako.",
		"oidcNotAllowed":      "Anwani hii ya barua pepe haiwezi kuingia kwenye dashibodi hii. Muulize mmiliki wa akaunti yako.",
	},
}

// init adds oidcTexts to the console's catalogues.
func init() { addTexts(oidcTexts) }
