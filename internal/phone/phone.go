// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package phone validates and normalizes the mobile numbers customers give
// for USSD push payments, and masks them for logs.
package phone

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"

	"github.com/paygate/paygate/internal/money"
)

// MaxInputLength is the longest raw input, in characters, NormalizeMobile
// accepts.
const MaxInputLength = 32

// Errors returned by NormalizeMobile, wrapped with the reason; test them
// with errors.Is. Error texts never contain the number itself.
var (
	// ErrInvalidNumber means the input is not a valid phone number: empty,
	// too long, with letters or other unexpected characters, or not a
	// number of any country's numbering plan.
	ErrInvalidNumber = errors.New("invalid phone number")
	// ErrNotAMobileNumber means the input is a valid number but not one
	// that can receive a mobile payment prompt (for example a landline).
	ErrNotAMobileNumber = errors.New("not a mobile phone number")
)

// NormalizeMobile validates a customer's mobile number and returns it in
// E.164 form ("+255712345678").
//
// Accepted forms are international with "+" ("+255 712 345 678"), MSISDN
// without "+" ("255712345678"), the "00" international prefix
// ("00255712345678") and national format ("0712345678") read in
// defaultRegion, an ISO 3166-1 alpha-2 code such as "TZ" (it may be empty
// when numbers are international). Spaces, tabs, dashes, dots and
// parentheses are ignored. A digit string that is not valid read in
// defaultRegion and has no leading 0 is retried as international, as if it
// started with "+". The number must be valid (phonenumbers.IsValidNumber)
// and of type MOBILE or FIXED_LINE_OR_MOBILE.
//
// Errors wrap ErrInvalidNumber or ErrNotAMobileNumber.
func NormalizeMobile(raw string, defaultRegion string) (e164 string, err error) {
	digits, plus, err := clean(raw)
	if err != nil {
		return "", err
	}
	region := strings.ToUpper(strings.TrimSpace(defaultRegion))

	candidates := make([]string, 0, 3)
	if plus {
		candidates = append(candidates, "+"+digits)
	} else {
		if region != "" {
			candidates = append(candidates, digits)
		}
		if strings.HasPrefix(digits, "00") {
			candidates = append(candidates, "+"+digits[2:])
		} else if digits[0] != '0' {
			candidates = append(candidates, "+"+digits)
		}
	}
	if len(candidates) == 0 {
		return "", fmt.Errorf("%w: a number in national format needs a default region", ErrInvalidNumber)
	}

	var firstErr, notMobile error
	for _, c := range candidates {
		num, perr := phonenumbers.Parse(c, region)
		switch {
		case perr != nil:
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: %w", ErrInvalidNumber, perr)
			}
		case !phonenumbers.IsValidNumber(num):
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: not a number of its country's numbering plan", ErrInvalidNumber)
			}
		default:
			switch t := phonenumbers.GetNumberType(num); t {
			case phonenumbers.MOBILE, phonenumbers.FIXED_LINE_OR_MOBILE:
				return phonenumbers.Format(num, phonenumbers.E164), nil
			default:
				if notMobile == nil {
					notMobile = fmt.Errorf("%w: it is a %s number", ErrNotAMobileNumber, typeName(t))
				}
			}
		}
	}
	if notMobile != nil {
		return "", notMobile
	}
	return "", firstErr
}

// NormalizeForCurrency is NormalizeMobile for a payment in currency (an ISO 4217 code): a
// number in national format is read in the currency's country, the PhoneRegion of the currency
// table (internal/money); a currency without one accepts only international numbers.
func NormalizeForCurrency(raw, currency string) (e164 string, err error) {
	c, _ := money.LookupCurrency(currency)
	return NormalizeMobile(raw, c.PhoneRegion)
}

// clean checks the raw input and returns its digits and whether it started
// with "+".
func clean(raw string) (digits string, plus bool, err error) {
	if len(raw) > utf8.UTFMax*MaxInputLength || utf8.RuneCountInString(raw) > MaxInputLength {
		return "", false, fmt.Errorf("%w: longer than %d characters", ErrInvalidNumber, MaxInputLength)
	}
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", false, fmt.Errorf("%w: empty", ErrInvalidNumber)
	}
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch {
		case '0' <= r && r <= '9':
			b.WriteRune(r)
		case r == '+':
			if i != 0 {
				return "", false, fmt.Errorf("%w: '+' is allowed only at the start", ErrInvalidNumber)
			}
			plus = true
		case r == ' ' || r == '\t' || r == '-' || r == '.' || r == '(' || r == ')':
		case unicode.IsLetter(r):
			return "", false, fmt.Errorf("%w: contains letters", ErrInvalidNumber)
		default:
			return "", false, fmt.Errorf("%w: only digits, a leading '+', spaces, dashes, dots and parentheses are allowed", ErrInvalidNumber)
		}
	}
	if b.Len() == 0 {
		return "", false, fmt.Errorf("%w: no digits", ErrInvalidNumber)
	}
	return b.String(), plus, nil
}

// typeName describes a number type in an error message.
func typeName(t phonenumbers.PhoneNumberType) string {
	switch t {
	case phonenumbers.FIXED_LINE:
		return "fixed-line"
	case phonenumbers.TOLL_FREE:
		return "toll-free"
	case phonenumbers.PREMIUM_RATE:
		return "premium-rate"
	case phonenumbers.SHARED_COST:
		return "shared-cost"
	case phonenumbers.VOIP:
		return "VoIP"
	case phonenumbers.PERSONAL_NUMBER:
		return "personal"
	case phonenumbers.PAGER:
		return "pager"
	case phonenumbers.UAN:
		return "UAN"
	case phonenumbers.VOICEMAIL:
		return "voicemail"
	default:
		return "non-mobile"
	}
}

// Mask hides most of a number for logs: it keeps a leading "+", the first
// 3 digits and the last 2, and replaces the rest with '*'
// ("+255712345678" becomes "+255*******78"). Inputs with fewer than 8
// characters after the "+" are masked entirely. It never panics.
func Mask(e164 string) string {
	plus := strings.HasPrefix(e164, "+")
	rs := []rune(strings.TrimPrefix(e164, "+"))
	var b strings.Builder
	b.Grow(len(rs) + 1)
	if plus {
		b.WriteByte('+')
	}
	n := len(rs)
	if n < 8 {
		b.WriteString(strings.Repeat("*", n))
		return b.String()
	}
	b.WriteString(string(rs[:3]))
	b.WriteString(strings.Repeat("*", n-5))
	b.WriteString(string(rs[n-2:]))
	return b.String()
}

// RegionOf returns the ISO 3166-1 alpha-2 region of an E.164 number, such
// as "TZ" for "+255712345678", or "" if e164 is not "+" followed by 1 to
// 15 digits or its region is unknown (including non-geographic codes such
// as +800). For calling codes shared by several regions (+1, +7, +44) the
// region is chosen from the number's own prefix.
func RegionOf(e164 string) string {
	if len(e164) < 2 || len(e164) > 16 || e164[0] != '+' {
		return ""
	}
	for i := 1; i < len(e164); i++ {
		if e164[i] < '0' || e164[i] > '9' {
			return ""
		}
	}
	num, err := phonenumbers.Parse(e164, phonenumbers.UNKNOWN_REGION)
	if err != nil {
		return ""
	}
	switch r := phonenumbers.GetRegionCodeForNumber(num); r {
	case "", phonenumbers.UNKNOWN_REGION, "001":
		return ""
	default:
		return r
	}
}

// ErrOtherRegion means the input is a valid mobile number of another country than the one
// required (NormalizeInRegionOfCurrency).
var ErrOtherRegion = errors.New("mobile number of another country")

// NormalizeInRegionOfCurrency is NormalizeForCurrency for a number that must belong to the
// currency's country (its PhoneRegion): a subscription in KES is charged to a Kenyan number, one
// in TZS to a Tanzanian number. It returns the region required ("" for a currency without one,
// whose numbers are accepted from any country, as by NormalizeForCurrency). Errors wrap
// ErrInvalidNumber, ErrNotAMobileNumber or ErrOtherRegion.
func NormalizeInRegionOfCurrency(raw, currency string) (e164, region string, err error) {
	c, _ := money.LookupCurrency(currency)
	e164, err = NormalizeMobile(raw, c.PhoneRegion)
	if err != nil {
		return "", c.PhoneRegion, err
	}
	if c.PhoneRegion != "" && RegionOf(e164) != c.PhoneRegion {
		return "", c.PhoneRegion, fmt.Errorf("%w: not a number of %s", ErrOtherRegion, c.PhoneRegion)
	}
	return e164, c.PhoneRegion, nil
}

// adjectives name the people of the regions of the currency table (internal/money), for
// messages to people.
var adjectives = map[string]string{
	"TZ": "Tanzanian", "KE": "Kenyan", "UG": "Ugandan", "RW": "Rwandan",
	"MW": "Malawian", "ZM": "Zambian", "NG": "Nigerian", "GH": "Ghanaian",
}

// CountryAdjective names region's people ("Kenyan" for "KE"), or is the region code itself for a
// region the currency table does not use.
func CountryAdjective(region string) string {
	if a, ok := adjectives[region]; ok {
		return a
	}
	return region
}

// CallingCode is region's country calling code with its "+" ("+254" for "KE"), from the
// numbering plan; "" for an unknown region.
func CallingCode(region string) string {
	if cc := phonenumbers.GetCountryCodeForRegion(region); cc > 0 {
		return fmt.Sprintf("+%d", cc)
	}
	return ""
}

// ExampleMobile is an example mobile number of region, in E.164 and in national format without
// spaces ("+254712123456", "0712123456"), from the numbering plan; empty for an unknown region.
func ExampleMobile(region string) (e164, national string) {
	num := phonenumbers.GetExampleNumberForType(region, phonenumbers.MOBILE)
	if num == nil {
		return "", ""
	}
	national = strings.Map(func(r rune) rune {
		if r < '0' || r > '9' {
			return -1
		}
		return r
	}, phonenumbers.Format(num, phonenumbers.NATIONAL))
	return phonenumbers.Format(num, phonenumbers.E164), national
}
