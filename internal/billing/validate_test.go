// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
	"github.com/paygate/paygate/internal/money"
)

// fieldOf returns the field and message of err, which must be a *FieldError (or nil).
func fieldOf(t *testing.T, err error) (string, string) {
	t.Helper()
	if err == nil {
		return "", ""
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("%v is not a *FieldError", err)
	}
	return fe.Field, fe.Message
}

func TestCheckPlanCode(t *testing.T) {
	for _, ok := range []string{"gold", "g", "0", "gold-monthly-2026", strings.Repeat("a", 63)} {
		if err := CheckPlanCode("code", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Gold", "gold_monthly", "-gold", "gold-", "gold monthly", "gold.monthly", "göld", strings.Repeat("a", 64)} {
		field, msg := fieldOf(t, CheckPlanCode("plan_code", bad))
		if field != "plan_code" || !strings.Contains(msg, "plan_code") {
			t.Errorf("%q: field %q, message %q", bad, field, msg)
		}
	}
}

func TestCheckPlanNameAndDescription(t *testing.T) {
	if err := CheckPlanName("Gold — kila mwezi"); err != nil {
		t.Errorf("name refused: %v", err)
	}
	if err := CheckPlanName(strings.Repeat("ü", 100)); err != nil {
		t.Errorf("100 characters refused: %v", err)
	}
	for _, bad := range []string{"", "  ", strings.Repeat("a", 101), "Gold\nPlan", "Gold\x00", "\xff"} {
		if field, _ := fieldOf(t, CheckPlanName(bad)); field != "name" {
			t.Errorf("name %q accepted", bad)
		}
	}
	for _, ok := range []string{"", "Line one.\nLine two.\r\n\tIndented.", strings.Repeat("é", 500)} {
		if err := CheckPlanDescription(ok); err != nil {
			t.Errorf("description %q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{strings.Repeat("a", 501), "bell\a", "\xff"} {
		if field, _ := fieldOf(t, CheckPlanDescription(bad)); field != "description" {
			t.Errorf("description %q accepted", bad)
		}
	}
}

func TestCheckPlanAmount(t *testing.T) {
	tzs, _ := money.LookupCurrency("TZS")
	ugx, _ := money.LookupCurrency("UGX")
	kwd, _ := money.LookupCurrency("KWD")
	tests := []struct {
		amount     string
		currency   money.Currency
		outOfRange bool
		wantMsg    string // empty: valid
	}{
		{"1", tzs, false, ""},
		{"1.00", tzs, false, ""},
		{"15000.50", tzs, false, ""},
		{"999999999999999999", tzs, false, ""},
		{"1500", ugx, false, ""},
		{"1500.000", ugx, false, ""}, // trailing zeros are not decimal places
		{"1.125", kwd, false, ""},
		{"0", tzs, true, "at least 1.00"},
		{"0.99", tzs, true, "at least 1.00"},
		{"1000000000000000000", tzs, true, "at most 999999999999999999"},
		{"999999999999999999.01", tzs, true, "at most"},
		{"1500.505", tzs, false, "at most 2 decimal places for TZS"},
		{"1500.5", ugx, false, "at most 0 decimal places for UGX"},
		{"1.1255", kwd, false, "at most 3 decimal places for KWD"},
	}
	for _, tt := range tests {
		err := CheckPlanAmount(money.MustParseAmount(tt.amount), tt.currency)
		field, msg := fieldOf(t, err)
		if tt.wantMsg == "" {
			if err != nil {
				t.Errorf("%s %s refused: %v", tt.amount, tt.currency.Code, err)
			}
			continue
		}
		if field != "amount" || !strings.Contains(msg, tt.wantMsg) {
			t.Errorf("%s %s: field %q, message %q; want %q", tt.amount, tt.currency.Code, field, msg, tt.wantMsg)
		}
		if errors.Is(err, ErrAmountOutOfRange) != tt.outOfRange {
			t.Errorf("%s %s: out of range %v, want %v", tt.amount, tt.currency.Code, errors.Is(err, ErrAmountOutOfRange), tt.outOfRange)
		}
	}
	// A currency missing from the table is refused rather than accepted with a guessed scale.
	if err := CheckPlanAmount(money.MustParseAmount("10"), money.Currency{Code: "XXX", Scale: -1}); err == nil {
		t.Error("an invalid currency was accepted")
	}
}

func TestCheckInterval(t *testing.T) {
	tests := []struct {
		interval  string
		count     int64
		wantField string // empty: valid
	}{
		{"day", 1, ""}, {"day", 365, ""}, {"week", 52, ""}, {"month", 1, ""}, {"month", 12, ""}, {"year", 1, ""},
		{"", 1, "interval"}, {"monthly", 1, "interval"}, {"Month", 1, "interval"},
		{"day", 366, "interval_count"}, {"week", 53, "interval_count"}, {"month", 13, "interval_count"}, {"year", 2, "interval_count"},
		{"month", 0, "interval_count"}, {"month", -1, "interval_count"}, {"month", 1 << 40, "interval_count"},
	}
	for _, tt := range tests {
		field, msg := fieldOf(t, CheckInterval(tt.interval, tt.count))
		if field != tt.wantField {
			t.Errorf("%q x%d: field %q (%s), want %q", tt.interval, tt.count, field, msg, tt.wantField)
		}
	}
	_, msg := fieldOf(t, CheckInterval("month", 13))
	if !strings.Contains(msg, "from 1 to 12 for interval month") {
		t.Errorf("message %q does not give the range", msg)
	}
}

// The Go rule and the CRD's bounds agree: the CRD's CEL rule is written from the same table.
func TestIntervalTableMatchesCRDRule(t *testing.T) {
	want := map[paygatev1.BillingInterval]int32{"day": 365, "week": 52, "month": 12, "year": 1}
	if !reflect.DeepEqual(paygatev1.MaxIntervalCount, want) {
		t.Errorf("MaxIntervalCount = %v; update the BillingPlanSpec CEL rule and docs/billing.md with it", paygatev1.MaxIntervalCount)
	}
}

func TestCheckTermsShown(t *testing.T) {
	for _, ok := range []string{"x", "Terms.\r\nMore terms.\tEnd.", strings.Repeat("ş", MaxTermsLength), " leading and trailing spaces are kept "} {
		if err := CheckTermsShown(ok); err != nil {
			t.Errorf("%.20q refused: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"":                                    "required",
		"   \n":                               "not only spaces",
		strings.Repeat("a", MaxTermsLength+1): "at most 4096 characters",
		"terms\x1b[31m":                       "control characters",
		"terms\x7f":                           "control characters",
		"\xc3\x28":                            "UTF-8",
	} {
		field, msg := fieldOf(t, CheckTermsShown(bad))
		if field != "terms_shown" || !strings.Contains(msg, want) {
			t.Errorf("%.20q: field %q, message %q; want %q", bad, field, msg, want)
		}
	}
}

func TestNormalizeCustomerPhone(t *testing.T) {
	for raw, want := range map[string]string{
		"+255712345678":     "+255712345678",
		"+255 712 345 678":  "+255712345678",
		"255712345678":      "+255712345678",
		"00255712345678":    "+255712345678",
		"0712 345 678":      "+255712345678",
		"0621-234-567":      "+255621234567",
		"0711000001":        "+255711000001", // a sandbox magic number
		"+255 (754) 123456": "+255754123456",
	} {
		got, err := NormalizeCustomerPhone(raw)
		if err != nil || got != want {
			t.Errorf("%q = %q, %v; want %q", raw, got, err, want)
		}
	}
	for raw, want := range map[string]string{
		"":                       "required",
		"   ":                    "required",
		"+254712345678":          "Tanzanian mobile number (+255)", // Kenya
		"+256712345678":          "Tanzanian mobile number (+255)", // Uganda
		"+255222123456":          "not a fixed line",               // a Dar es Salaam landline
		"0712":                   "such as +255712345678",
		"+25571234567890":        "such as +255712345678",
		"0712 345 67a":           "such as +255712345678",
		"+255 712 345 678 ext 9": "such as +255712345678",
	} {
		got, err := NormalizeCustomerPhone(raw)
		field, msg := fieldOf(t, err)
		if got != "" || field != "customer_phone" || !strings.Contains(msg, want) {
			t.Errorf("%q = %q: field %q, message %q; want %q", raw, got, field, msg, want)
		}
	}
}

func TestAdvanceTestClock(t *testing.T) {
	tests := []struct {
		offset, seconds, want int64
		wantErr               string
	}{
		{0, 1, 1, ""},
		{0, 86400 * 31, 86400 * 31, ""},
		{100, 50, 150, ""},
		{0, MaxTestClockOffsetSeconds, MaxTestClockOffsetSeconds, ""},
		{0, 0, 0, "from 1 to 315576000"},
		{0, -5, 0, "from 1 to"},
		{100, MaxTestClockOffsetSeconds, 0, "from 1 to 315575900"},
		{MaxTestClockOffsetSeconds, 1, 0, "already ten years ahead"},
	}
	for _, tt := range tests {
		got, err := AdvanceTestClock(tt.offset, tt.seconds)
		field, msg := fieldOf(t, err)
		if tt.wantErr == "" {
			if err != nil || got != tt.want {
				t.Errorf("AdvanceTestClock(%d, %d) = %d, %v; want %d", tt.offset, tt.seconds, got, err, tt.want)
			}
			continue
		}
		if field != "seconds" || !strings.Contains(msg, tt.wantErr) {
			t.Errorf("AdvanceTestClock(%d, %d): field %q, message %q; want %q", tt.offset, tt.seconds, field, msg, tt.wantErr)
		}
	}
}

func TestPlanRequest(t *testing.T) {
	tzs, _ := money.LookupCurrency("TZS")
	r := PlanRequest{Code: "gold", Name: "Gold", Amount: money.MustParseAmount("15000.5"), Currency: tzs, Interval: "month", IntervalCount: 1}
	if errs := r.Validate(); len(errs) != 0 {
		t.Fatalf("valid request: %v", errs)
	}
	spec := r.Spec("duka", paygatev1.EnvironmentSandbox)
	want := paygatev1.BillingPlanSpec{
		MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
		Code: "gold", Name: "Gold", Amount: "15000.50", Currency: "TZS", Interval: "month", IntervalCount: 1,
		Dunning:        paygatev1.DunningPolicy{RetryAfterDays: []int32{1, 3, 5}, MaxFailures: 4},
		ChargingWindow: paygatev1.ChargingWindow{Start: "08:00", End: "20:00", TimeZone: "Africa/Dar_es_Salaam"},
	}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("Spec = %+v\nwant   %+v", spec, want)
	}
	if _, err := PlanSchedule(&spec); err != nil {
		t.Errorf("the spec of a valid request has no schedule: %v", err)
	}

	bad := PlanRequest{Code: "Gold!", Name: "", Description: "\x00", Amount: money.MustParseAmount("0.5"), Currency: tzs, Interval: "month", IntervalCount: 13}
	errs := bad.Validate()
	var fields []string
	outOfRange := false
	for _, e := range errs {
		fields = append(fields, e.Field)
		outOfRange = outOfRange || errors.Is(e, ErrAmountOutOfRange)
	}
	if want := []string{"code", "name", "description", "amount", "interval_count"}; !reflect.DeepEqual(fields, want) {
		t.Errorf("fields %v, want %v", fields, want)
	}
	if !outOfRange {
		t.Error("an amount below the minimum is not marked out of range")
	}
}
