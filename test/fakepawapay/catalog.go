// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package fakepawapay

import "strings"

// Operation is one of the operation types pawaPay distinguishes in active configuration and
// availability.
// https://docs.pawapay.io/v2/api-reference/toolkit/availability
type Operation string

// The operation types of the Merchant API v2 that the fake implements.
const (
	OpDeposit Operation = "DEPOSIT"
	OpPayout  Operation = "PAYOUT"
	OpRefund  Operation = "REFUND"
)

// Decimal places allowed in an amount, as active configuration names them (decimalsInAmount).
// https://docs.pawapay.io/v2/api-reference/toolkit/active-configuration
const (
	DecimalsNone      = "NONE"
	DecimalsTwoPlaces = "TWO_PLACES"
)

// Provider availability statuses.
// https://docs.pawapay.io/v2/api-reference/toolkit/availability
const (
	AvailabilityOperational = "OPERATIONAL" // open for processing
	AvailabilityDelayed     = "DELAYED"     // payouts are enqueued and processed later
	AvailabilityClosed      = "CLOSED"      // all requests are rejected by pawaPay
)

// Limits are one operation type's transaction limits for a provider. Amounts are decimal strings.
type Limits struct {
	Min      string // minAmount
	Max      string // maxAmount
	Decimals string // decimalsInAmount: DecimalsNone or DecimalsTwoPlaces
}

// Provider is one mobile money provider configured on the fake's account.
type Provider struct {
	// Code is the provider code used in accountDetails.provider, e.g. "VODACOM_TZA".
	// https://docs.pawapay.io/v2/docs/providers
	Code string
	// DisplayName is the provider's name in active configuration.
	DisplayName string
	// Country is the ISO 3166-1 alpha-3 country code, e.g. "TZA".
	Country string
	// CountryName is the country's English name in active configuration.
	CountryName string
	// Currency is the ISO 4217 currency, e.g. "TZS".
	Currency string
	// CallingCode is the country calling code phone numbers start with, e.g. "255".
	CallingCode string
	// NationalDigits is the number of digits after the calling code in a valid phone number.
	NationalDigits int
	// Prefixes are the national number prefixes (the digits right after the calling code) the
	// fake's predict-provider maps to this provider. This table is the fake's own, not pawaPay's.
	Prefixes []string
	// Deposit, Payout and Refund are the limits per operation type.
	Deposit, Payout, Refund Limits
}

func (p Provider) limits(op Operation) Limits {
	switch op {
	case OpPayout:
		return p.Payout
	case OpRefund:
		return p.Refund
	default:
		return p.Deposit
	}
}

// DefaultProviders are the providers a fake starts with when Options.Providers is nil: Tanzania
// (TZS) and Kenya (KES).
//
// The provider codes follow pawaPay's provider list
// (https://docs.pawapay.io/v2/docs/providers): Tanzania's are VODACOM_TZA, AIRTEL_TZA, TIGO_TZA
// (Tigo Pesa, now branded Mixx by Yas) and HALOTEL_TZA; Kenya's is MPESA_KEN. No other Kenyan
// provider could be confirmed from the documentation, so none is preloaded; add one through
// Options.Providers if a test needs it. Neither currency takes decimals in the fake (NONE).
// The limits are the fake's round numbers, not pawaPay's (which are per account and come from
// active configuration).
func DefaultProviders() []Provider {
	tz := func(code, name string, prefixes ...string) Provider {
		return Provider{
			Code: code, DisplayName: name, Country: "TZA", CountryName: "Tanzania", Currency: "TZS",
			CallingCode: "255", NationalDigits: 9, Prefixes: prefixes,
			Deposit: Limits{Min: "100", Max: "5000000", Decimals: DecimalsNone},
			Payout:  Limits{Min: "100", Max: "5000000", Decimals: DecimalsNone},
			Refund:  Limits{Min: "100", Max: "5000000", Decimals: DecimalsNone},
		}
	}
	return []Provider{
		tz("VODACOM_TZA", "Vodacom M-Pesa", "74", "75", "76"),
		tz("AIRTEL_TZA", "Airtel", "68", "69", "78"),
		tz("TIGO_TZA", "Mixx by Yas", "65", "67", "71", "77"),
		tz("HALOTEL_TZA", "Halotel", "61", "62"),
		{
			Code: "MPESA_KEN", DisplayName: "M-Pesa", Country: "KEN", CountryName: "Kenya", Currency: "KES",
			CallingCode: "254", NationalDigits: 9, Prefixes: []string{"70", "71", "72", "74", "79", "11"},
			Deposit: Limits{Min: "1", Max: "150000", Decimals: DecimalsNone},
			Payout:  Limits{Min: "10", Max: "150000", Decimals: DecimalsNone},
			Refund:  Limits{Min: "10", Max: "150000", Decimals: DecimalsNone},
		},
	}
}

// SandboxNumber is a phone number with a preset outcome, as pawaPay's sandbox offers.
// https://docs.pawapay.io/v2/docs/test_numbers
type SandboxNumber struct {
	Phone    string
	Provider string
	// Deposit is the outcome of deposits from this number; nil means the default (COMPLETED).
	Deposit *Scenario
	// Payout is the outcome of payouts and refunds to this number; nil means the default.
	Payout *Scenario
}

// The sandbox number outcomes, written in v2 terms: the documentation's "SUBMITTED" (no callback,
// stuck) row is the v2 status PROCESSING that never resolves, and v1's OTHER_ERROR is v2's
// UNSPECIFIED_FAILURE.
var (
	stuck     = &Scenario{Status: StatusProcessing}
	completed = &Scenario{Status: StatusCompleted}
)

func failed(code string) *Scenario { return &Scenario{Status: StatusFailed, FailureCode: code} }

// DefaultSandboxNumbers are the test numbers preloaded (unless Options.NoSandboxNumbers).
//
// Kenya follows the scheme of pawaPay's v2 test number page
// (https://docs.pawapay.io/v2/docs/test_numbers): <number>039 PAYMENT_NOT_APPROVED, 049
// INSUFFICIENT_BALANCE, 069 UNSPECIFIED_FAILURE, 129 stuck, 789 COMPLETED for deposits; 089
// RECIPIENT_NOT_FOUND, 119 UNSPECIFIED_FAILURE, 129 stuck, 789 COMPLETED for payouts, with the
// MPESA_KEN base 254703456xxx. The page's Tanzania rows could not be read from the stored copy of
// the documentation; the Tanzanian numbers below come from the test number list of pawaPay's own
// developer-guide sample application (255123456xxx Airtel, 255123556xxx Vodacom, 255123656xxx
// Tigo, 255123756xxx Halotel). Treat them as the fake's convention, and script other numbers with
// Server.Script.
func DefaultSandboxNumbers() []SandboxNumber {
	var out []SandboxNumber
	add := func(phone, provider string, dep, pay *Scenario) {
		out = append(out, SandboxNumber{Phone: phone, Provider: provider, Deposit: dep, Payout: pay})
	}
	// Kenya, MPESA_KEN.
	add("254703456039", "MPESA_KEN", failed("PAYMENT_NOT_APPROVED"), nil)
	add("254703456049", "MPESA_KEN", failed("INSUFFICIENT_BALANCE"), nil)
	add("254703456069", "MPESA_KEN", failed("UNSPECIFIED_FAILURE"), nil)
	add("254703456089", "MPESA_KEN", nil, failed("RECIPIENT_NOT_FOUND"))
	add("254703456119", "MPESA_KEN", nil, failed("UNSPECIFIED_FAILURE"))
	add("254703456129", "MPESA_KEN", stuck, stuck)
	add("254703456789", "MPESA_KEN", completed, completed)
	// Tanzania: four providers, the same pattern of last digits.
	for _, p := range []struct{ base, code string }{
		{"255123456", "AIRTEL_TZA"}, {"255123556", "VODACOM_TZA"},
		{"255123656", "TIGO_TZA"}, {"255123756", "HALOTEL_TZA"},
	} {
		add(p.base+"021", p.code, failed("PAYER_NOT_FOUND"), nil)
		add(p.base+"031", p.code, failed("PAYMENT_NOT_APPROVED"), nil)
		add(p.base+"041", p.code, failed("INSUFFICIENT_BALANCE"), nil)
		add(p.base+"061", p.code, failed("UNSPECIFIED_FAILURE"), nil)
		add(p.base+"121", p.code, stuck, nil)
		add(p.base+"051", p.code, completed, nil)
		add(p.base+"082", p.code, nil, failed("RECIPIENT_NOT_FOUND"))
		add(p.base+"112", p.code, nil, failed("UNSPECIFIED_FAILURE"))
		add(p.base+"122", p.code, nil, stuck)
		add(p.base+"152", p.code, nil, completed)
	}
	return out
}

// sanitizePhone applies predict-provider's documented sanitising: drop the leading +, all
// whitespace and every non-numeric character.
// https://docs.pawapay.io/v2/api-reference/toolkit/predict-provider
func sanitizePhone(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// validPhoneFor reports whether phone (as sent: digits only, with the calling code) is a valid
// number for the provider's country.
func validPhoneFor(p Provider, phone string) bool {
	return isDigits(phone) && strings.HasPrefix(phone, p.CallingCode) &&
		len(phone) == len(p.CallingCode)+p.NationalDigits
}
