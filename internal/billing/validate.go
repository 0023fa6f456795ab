// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/phone"
)

// FieldError is a bad value of one field of a billing request. Field is the API's name of the
// field (code, amount, interval_count, terms_shown, customer_phone, ...) and Message the sentence
// the API's error body lists under errors.<field> (docs/api.md, Errors).
type FieldError struct {
	Field   string
	Message string
	// Err is a sentinel the API maps to its label: ErrAmountOutOfRange is INVALID_AMOUNT;
	// anything else is Validation failed.
	Err error
}

func (e *FieldError) Error() string { return e.Message }

// Unwrap returns the sentinel, if any.
func (e *FieldError) Unwrap() error { return e.Err }

func fieldError(field string, err error, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...), Err: err}
}

// ErrAmountOutOfRange marks an amount below the minimum or above the maximum: the API answers it
// with INVALID_AMOUNT, as it does for payments.
var ErrAmountOutOfRange = errors.New("amount out of range")

// Limits of plans and subscriptions, the same as the CRDs'.
var (
	// MinimumPlanAmount is the smallest amount of a plan, as of a payment.
	MinimumPlanAmount = money.MustParseAmount("1.00")
	// MaximumPlanAmount is the largest amount of a plan, as of a payment.
	MaximumPlanAmount = money.MustParseAmount("999999999999999999")
)

const (
	// MaxPlanNameLength is the longest plan name, in characters.
	MaxPlanNameLength = 100
	// MaxPlanDescriptionLength is the longest plan description, in characters.
	MaxPlanDescriptionLength = 500
	// MaxTermsLength is the longest terms_shown, in characters.
	MaxTermsLength = 4096
	// MaxUserAgentLength is how much of a User-Agent a consent keeps, in characters.
	MaxUserAgentLength = 512
	// MaxTestClockOffsetSeconds is how far a test clock may run ahead of real time: ten years.
	MaxTestClockOffsetSeconds int64 = 315576000
)

var (
	codePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	// tzMobilePattern is the CRD's rule for a subscription's customerPhone.
	tzMobilePattern = regexp.MustCompile(`^\+255[67][0-9]{8}$`)
)

// CheckPlanCode checks a plan code sent as field (code when creating a plan, plan_code when
// subscribing): 1 to 63 lower-case letters, digits and dashes, starting and ending with a letter
// or a digit.
func CheckPlanCode(field, code string) error {
	switch {
	case code == "":
		return fieldError(field, nil, "The %s field is required.", field)
	case len(code) > 63 || !codePattern.MatchString(code):
		return fieldError(field, nil, "The %s must be 1 to 63 lower-case letters, digits and dashes, starting and ending with a letter or a digit.", field)
	}
	return nil
}

// CheckPlanName checks a plan's name: required, at most 100 characters, no control characters.
func CheckPlanName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return fieldError("name", nil, "The name field is required.")
	case !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxPlanNameLength:
		return fieldError("name", nil, "The name must be at most %d characters.", MaxPlanNameLength)
	case strings.ContainsFunc(name, isControl):
		return fieldError("name", nil, "The name must not contain control characters.")
	}
	return nil
}

// CheckPlanDescription checks a plan's optional description: at most 500 characters, no control
// characters other than line breaks and tabs.
func CheckPlanDescription(description string) error {
	switch {
	case !utf8.ValidString(description) || utf8.RuneCountInString(description) > MaxPlanDescriptionLength:
		return fieldError("description", nil, "The description must be at most %d characters.", MaxPlanDescriptionLength)
	case strings.ContainsFunc(description, isControlExceptText):
		return fieldError("description", nil, "The description must not contain control characters other than line breaks and tabs.")
	}
	return nil
}

// CheckPlanAmount checks a plan's amount in its currency: from 1.00 to 999999999999999999, with
// no more decimal places than the currency has (TZS 2, UGX 0). An amount out of range wraps
// ErrAmountOutOfRange.
func CheckPlanAmount(a money.Amount, c money.Currency) error {
	switch {
	case a.Cmp(MinimumPlanAmount) < 0:
		return fieldError("amount", ErrAmountOutOfRange, "The amount must be at least 1.00.")
	case a.Cmp(MaximumPlanAmount) > 0:
		return fieldError("amount", ErrAmountOutOfRange, "The amount must be at most %s.", MaximumPlanAmount)
	}
	if err := money.ValidateForCurrency(a, c); err != nil {
		var se *money.ScaleError
		if errors.As(err, &se) {
			return fieldError("amount", money.ErrTooPrecise, "The amount must have at most %d decimal places for %s.", se.MaxScale, se.Currency)
		}
		return fieldError("amount", nil, "The amount cannot be checked against currency %q.", c.Code)
	}
	return nil
}

// CheckInterval checks a plan's interval and interval_count: interval is day, week, month or
// year, and a period is at most one year long (at most 365 days, 52 weeks, 12 months, 1 year).
func CheckInterval(interval string, count int64) error {
	limit, ok := paygatev1.MaxIntervalCount[paygatev1.BillingInterval(interval)]
	switch {
	case interval == "":
		return fieldError("interval", nil, "The interval field is required.")
	case !ok:
		return fieldError("interval", nil, "The interval must be one of day, week, month, year.")
	case count < 1 || count > int64(limit):
		return fieldError("interval_count", nil, "The interval_count must be from 1 to %d for interval %s: a billing period is at most one year.", limit, interval)
	}
	return nil
}

// intervalProblem is CheckInterval's verdict in the words of the BillingPlan resource, or "".
func intervalProblem(interval string, count int64) string {
	limit, ok := paygatev1.MaxIntervalCount[paygatev1.BillingInterval(interval)]
	switch {
	case !ok:
		return fmt.Sprintf("interval %q is not one of day, week, month, year", interval)
	case count < 1 || count > int64(limit):
		return fmt.Sprintf("intervalCount %d is not from 1 to %d for interval %s: a billing period is at most one year", count, limit, interval)
	}
	return ""
}

// CheckTermsShown checks the terms shown to the customer, which the consent keeps verbatim:
// required, not only spaces, at most 4096 characters of UTF-8 text, no control characters other
// than line breaks and tabs. The terms are never trimmed or rewritten.
func CheckTermsShown(terms string) error {
	switch {
	case terms == "":
		return fieldError("terms_shown", nil, "The terms_shown field is required.")
	case strings.TrimSpace(terms) == "":
		return fieldError("terms_shown", nil, "The terms_shown must be the terms shown to the customer, not only spaces.")
	case !utf8.ValidString(terms):
		return fieldError("terms_shown", nil, "The terms_shown must be UTF-8 text.")
	case utf8.RuneCountInString(terms) > MaxTermsLength:
		return fieldError("terms_shown", nil, "The terms_shown must be at most %d characters.", MaxTermsLength)
	case strings.ContainsFunc(terms, isControlExceptText):
		return fieldError("terms_shown", nil, "The terms_shown must not contain control characters other than line breaks and tabs.")
	}
	return nil
}

// NormalizeCustomerPhone checks a subscription's customer_phone and returns it in E.164 form: a
// Tanzanian mobile number, written internationally (+255 712 345 678, 255712345678) or
// nationally (0712 345 678).
func NormalizeCustomerPhone(raw string) (string, error) {
	if strings.TrimSpace(raw) == "" {
		return "", fieldError("customer_phone", nil, "The customer_phone field is required.")
	}
	e164, err := phone.NormalizeMobile(raw, "TZ")
	switch {
	case errors.Is(err, phone.ErrNotAMobileNumber):
		return "", fieldError("customer_phone", nil, "The customer_phone must be a mobile number that can receive a USSD prompt, not a fixed line or a service number.")
	case err != nil:
		return "", fieldError("customer_phone", nil, "The customer_phone must be a Tanzanian mobile number, such as +255712345678 or 0712345678.")
	case phone.RegionOf(e164) != "TZ" || !tzMobilePattern.MatchString(e164):
		return "", fieldError("customer_phone", nil, "The customer_phone must be a Tanzanian mobile number (+255): subscriptions are charged to Tanzanian mobile-money accounts.")
	}
	return e164, nil
}

// AdvanceTestClock is a sandbox subscription's new test-clock offset after moving its clock
// seconds forward (the advance endpoint's body): seconds must be from 1 to what keeps the offset
// within ten years.
func AdvanceTestClock(offsetSeconds, seconds int64) (int64, error) {
	room := MaxTestClockOffsetSeconds - max(offsetSeconds, 0)
	if room < 1 {
		return 0, fieldError("seconds", nil, "This subscription's test clock is already ten years ahead; it cannot be advanced further.")
	}
	if seconds < 1 || seconds > room {
		return 0, fieldError("seconds", nil, "The seconds must be a whole number from 1 to %d.", room)
	}
	return offsetSeconds + seconds, nil
}

// PlanRequest is a plan create request as the API decoded it (docs/billing.md, Plans). The
// API parses amount from the JSON number (money.ParseJSONNumber) and looks the currency up; an
// omitted interval_count is 1.
type PlanRequest struct {
	Code          string
	Name          string
	Description   string
	Amount        money.Amount
	Currency      money.Currency
	Interval      string
	IntervalCount int64
}

// Validate returns every problem of the request, at most one per field. The merchant's
// currencies are the caller's to check.
func (r *PlanRequest) Validate() []*FieldError {
	var out []*FieldError
	for _, err := range []error{
		CheckPlanCode("code", r.Code),
		CheckPlanName(r.Name),
		CheckPlanDescription(r.Description),
		CheckPlanAmount(r.Amount, r.Currency),
		CheckInterval(r.Interval, r.IntervalCount),
	} {
		var fe *FieldError
		if errors.As(err, &fe) {
			out = append(out, fe)
		}
	}
	return out
}

// Spec is the BillingPlan of a valid request, with the defaults of the dunning policy and the
// charging window written out (so kubectl shows them); its object name is
// paygatev1.BillingPlanName(merchant, env, r.Code).
func (r *PlanRequest) Spec(merchant string, env paygatev1.Environment) paygatev1.BillingPlanSpec {
	return paygatev1.BillingPlanSpec{
		MerchantRef:   paygatev1.MerchantReference{Name: merchant},
		Environment:   env,
		Code:          r.Code,
		Name:          r.Name,
		Description:   r.Description,
		Amount:        paygatev1.Decimal(r.Amount.StringFixed(r.Currency.Scale)),
		Currency:      paygatev1.CurrencyCode(r.Currency.Code),
		Interval:      paygatev1.BillingInterval(r.Interval),
		IntervalCount: int32(r.IntervalCount),
		Dunning: paygatev1.DunningPolicy{
			RetryAfterDays: append([]int32(nil), paygatev1.DefaultRetryAfterDays...),
			MaxFailures:    paygatev1.DefaultMaxFailures,
		},
		ChargingWindow: paygatev1.ChargingWindow{
			Start: paygatev1.DefaultWindowStart, End: paygatev1.DefaultWindowEnd, TimeZone: paygatev1.DefaultTimeZone,
		},
	}
}

// isControl reports C0 control characters and DEL.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// isControlExceptText is isControl without line feed, carriage return and tab.
func isControlExceptText(r rune) bool { return isControl(r) && r != '\n' && r != '\r' && r != '\t' }
