// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package money

import (
	"errors"
	"fmt"
	"slices"
)

// Currency describes an ISO 4217 currency.
type Currency struct {
	// Code is the three-letter upper-case ISO 4217 alphabetic code, e.g. "TZS".
	Code string
	// Scale is the ISO 4217 minor-unit exponent: the number of decimal places
	// an amount in this currency may have (TZS 2, UGX 0, KWD 3).
	Scale int32
	// Name is the ISO 4217 currency name.
	Name string
	// PhoneRegion is the ISO 3166-1 alpha-2 region (e.g. "TZ") whose numbering plan reads a
	// customer's mobile number written in national format ("0712 345 678") for a payment in this
	// currency (internal/phone). Empty where Paygate reads only international numbers ("+255...").
	PhoneRegion string
	// Format is how people in the currency's country write amounts (FormatAmount). The zero
	// value is the English form, "1,500.50".
	Format NumberFormat
}

// MaxCurrencyScale is the largest Currency.Scale accepted by this package.
const MaxCurrencyScale = MaxFractionDigits

// ErrInvalidCurrency is wrapped by errors reporting a Currency value that
// cannot be used (empty code or a scale outside 0..MaxCurrencyScale).
var ErrInvalidCurrency = errors.New("invalid currency")

// currencies is the table of supported currencies, keyed by code. Scales are
// the ISO 4217 minor units (list one, "Minor unit" column). Formats are those
// of the Unicode CLDR for the main language of the currency's country; a
// currency of several countries, or of a country whose languages write numbers
// differently (RWF, BIF, TND, ...), keeps the English form.
var currencies = map[string]Currency{}

func init() {
	for _, c := range []Currency{
		// East and Central Africa.
		{Code: "TZS", Scale: 2, Name: "Tanzanian Shilling", PhoneRegion: "TZ"},
		{Code: "KES", Scale: 2, Name: "Kenyan Shilling", PhoneRegion: "KE"},
		{Code: "UGX", Scale: 0, Name: "Uganda Shilling", PhoneRegion: "UG"},
		{Code: "RWF", Scale: 0, Name: "Rwanda Franc", PhoneRegion: "RW"},
		{Code: "BIF", Scale: 0, Name: "Burundi Franc"},
		{Code: "CDF", Scale: 2, Name: "Congolese Franc", Format: narrowSpaceComma},
		{Code: "ETB", Scale: 2, Name: "Ethiopian Birr"},
		{Code: "SOS", Scale: 2, Name: "Somali Shilling"},
		{Code: "SSP", Scale: 2, Name: "South Sudanese Pound"},
		{Code: "DJF", Scale: 0, Name: "Djibouti Franc", Format: narrowSpaceComma},
		{Code: "KMF", Scale: 0, Name: "Comorian Franc", Format: narrowSpaceComma},
		// Southern Africa.
		{Code: "MWK", Scale: 2, Name: "Malawi Kwacha", PhoneRegion: "MW"},
		{Code: "ZMW", Scale: 2, Name: "Zambian Kwacha", PhoneRegion: "ZM"},
		{Code: "MZN", Scale: 2, Name: "Mozambique Metical", Format: spaceComma},
		{Code: "ZAR", Scale: 2, Name: "Rand", Format: spaceComma},
		{Code: "BWP", Scale: 2, Name: "Pula"},
		{Code: "MUR", Scale: 2, Name: "Mauritius Rupee"},
		// West Africa.
		{Code: "NGN", Scale: 2, Name: "Naira", PhoneRegion: "NG"},
		{Code: "GHS", Scale: 2, Name: "Ghana Cedi", PhoneRegion: "GH"},
		{Code: "XOF", Scale: 0, Name: "CFA Franc BCEAO", Format: narrowSpaceComma},
		{Code: "XAF", Scale: 0, Name: "CFA Franc BEAC", Format: narrowSpaceComma},
		{Code: "GNF", Scale: 0, Name: "Guinean Franc", Format: narrowSpaceComma},
		// North Africa and Middle East.
		{Code: "EGP", Scale: 2, Name: "Egyptian Pound"},
		{Code: "MAD", Scale: 2, Name: "Moroccan Dirham", Format: dotComma},
		{Code: "TND", Scale: 3, Name: "Tunisian Dinar"},
		{Code: "LYD", Scale: 3, Name: "Libyan Dinar"},
		{Code: "AED", Scale: 2, Name: "UAE Dirham"},
		{Code: "SAR", Scale: 2, Name: "Saudi Riyal"},
		{Code: "QAR", Scale: 2, Name: "Qatari Rial"},
		{Code: "KWD", Scale: 3, Name: "Kuwaiti Dinar"},
		{Code: "BHD", Scale: 3, Name: "Bahraini Dinar"},
		{Code: "OMR", Scale: 3, Name: "Rial Omani"},
		{Code: "JOD", Scale: 3, Name: "Jordanian Dinar"},
		{Code: "IQD", Scale: 3, Name: "Iraqi Dinar"},
		// Major and other currencies.
		{Code: "USD", Scale: 2, Name: "US Dollar"},
		{Code: "EUR", Scale: 2, Name: "Euro"},
		{Code: "GBP", Scale: 2, Name: "Pound Sterling"},
		{Code: "CHF", Scale: 2, Name: "Swiss Franc", Format: apostropheDot},
		{Code: "CAD", Scale: 2, Name: "Canadian Dollar"},
		{Code: "AUD", Scale: 2, Name: "Australian Dollar"},
		{Code: "JPY", Scale: 0, Name: "Yen"},
		{Code: "KRW", Scale: 0, Name: "Won"},
		{Code: "CNY", Scale: 2, Name: "Yuan Renminbi"},
		{Code: "HKD", Scale: 2, Name: "Hong Kong Dollar"},
		{Code: "INR", Scale: 2, Name: "Indian Rupee", Format: indian},
	} {
		if _, dup := currencies[c.Code]; dup {
			panic("money: duplicate currency " + c.Code)
		}
		currencies[c.Code] = c
	}
}

// LookupCurrency returns the currency with the given ISO 4217 code. The match
// is exact and case-sensitive: "TZS" is found, "tzs" and " TZS" are not.
func LookupCurrency(code string) (Currency, bool) {
	c, ok := currencies[code]
	return c, ok
}

// CurrencyCodes returns the codes of all supported currencies in ascending
// order. The caller owns the returned slice.
func CurrencyCodes() []string {
	codes := make([]string, 0, len(currencies))
	for code := range currencies {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	return codes
}

// checkCurrency reports whether c is usable for validation and rounding. It
// accepts currencies outside the built-in table as long as they are sane.
func checkCurrency(c Currency) error {
	if c.Code == "" {
		return fmt.Errorf("money: %w: empty currency code", ErrInvalidCurrency)
	}
	if c.Scale < 0 || c.Scale > MaxCurrencyScale {
		return fmt.Errorf("money: %w: %s has scale %d, want 0..%d",
			ErrInvalidCurrency, c.Code, c.Scale, MaxCurrencyScale)
	}
	return nil
}

// ScaleError reports an amount with more decimal places than its currency
// allows. It unwraps to ErrTooPrecise.
type ScaleError struct {
	// Currency is the ISO 4217 code of the currency.
	Currency string
	// MaxScale is the number of decimal places the currency allows.
	MaxScale int32
	// Scale is the number of significant decimal places of the amount.
	Scale int32
}

// Error returns a message suitable for end users, e.g.
// "TZS allows at most 2 decimal places".
func (e *ScaleError) Error() string {
	unit := "places"
	if e.MaxScale == 1 {
		unit = "place"
	}
	return fmt.Sprintf("%s allows at most %d decimal %s", e.Currency, e.MaxScale, unit)
}

// Unwrap returns ErrTooPrecise.
func (e *ScaleError) Unwrap() error { return ErrTooPrecise }

// ValidateForCurrency returns a *ScaleError if a has more significant decimal
// places than c allows. Trailing zeros are not significant: "1500.00" is valid
// for UGX (scale 0) and "1500.50" is valid for TZS (scale 2).
func ValidateForCurrency(a Amount, c Currency) error {
	if err := checkCurrency(c); err != nil {
		return err
	}
	if s := a.Scale(); s > c.Scale {
		return &ScaleError{Currency: c.Code, MaxScale: c.Scale, Scale: s}
	}
	return nil
}
