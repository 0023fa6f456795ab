// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package billing

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

var goldPlan = paygatev1.BillingPlanSpec{
	MerchantRef: paygatev1.MerchantReference{Name: "duka"}, Environment: paygatev1.EnvironmentSandbox,
	Code: "gold", Name: "Gold", Amount: "15000.00", Currency: "TZS", Interval: paygatev1.IntervalMonth, IntervalCount: 1,
}

func consentInput() ConsentInput {
	plan := goldPlan
	return ConsentInput{
		TermsShown:  "Utalipishwa TZS 15,000 kila mwezi.\nYou will be charged TZS 15,000 every month.  ",
		RecordedAt:  time.Date(2026, 1, 31, 10, 0, 0, 123456789, time.FixedZone("EAT", 3*3600)),
		ClientIP:    "196.249.1.7",
		UserAgent:   "duka-backend/2.1 (+https://duka.example)",
		Plan:        &plan,
		BusinessID:  "test_mk_qj33hpibayoahnbujh4loofg",
		Environment: paygatev1.EnvironmentSandbox,
	}
}

func TestBuildConsent(t *testing.T) {
	in := consentInput()
	c, err := BuildConsent(in)
	if err != nil {
		t.Fatal(err)
	}
	if c.TermsShown != in.TermsShown {
		t.Errorf("terms not kept verbatim: %q", c.TermsShown)
	}
	// sha256 of the exact bytes, trailing spaces and line break included (computed with sha256sum).
	if want := "1aa5bf3e44ea1ed77f1a1d54851101db9a9b45fd2d5a7e2b2bdfc6a1273b5f67"; c.TermsSHA256 != want {
		t.Errorf("termsSHA256 = %q, want %q", c.TermsSHA256, want)
	}
	if want := time.Date(2026, 1, 31, 7, 0, 0, 123456000, time.UTC); !c.RecordedAt.Time.Equal(want) || c.RecordedAt.Location() != time.UTC {
		t.Errorf("recordedAt = %s, want %s (UTC, microseconds)", c.RecordedAt.Time, want)
	}
	if c.ClientIP != "196.249.1.7" || c.UserAgent != in.UserAgent {
		t.Errorf("clientIP %q, userAgent %q", c.ClientIP, c.UserAgent)
	}
	if c.PlanAmount != "15000.00" || c.PlanCurrency != "TZS" || c.PlanInterval != paygatev1.IntervalMonth || c.PlanIntervalCount != 1 {
		t.Errorf("plan price not recorded: %+v", c)
	}
	if c.RecordedBy != (paygatev1.ConsentRecorder{BusinessID: "test_mk_qj33hpibayoahnbujh4loofg", Environment: paygatev1.EnvironmentSandbox}) {
		t.Errorf("recordedBy = %+v", c.RecordedBy)
	}
	if err := VerifyConsent(&c); err != nil {
		t.Errorf("VerifyConsent: %v", err)
	}
	if !ConsentCovers(&c, &goldPlan) {
		t.Error("the consent does not cover its own plan")
	}
}

func TestTermsSHA256(t *testing.T) {
	// Known values (sha256sum).
	for in, want := range map[string]string{
		"":     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"abc":  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		"abc ": "5488613c42b0d34d60f7aa9e94be317a3ee102a2bbd91ccc73cc79fbc2269955",
	} {
		if got := TermsSHA256(in); got != want {
			t.Errorf("TermsSHA256(%q) = %s, want %s", in, got, want)
		}
	}
	if TermsSHA256("abc") == TermsSHA256("abc ") || TermsSHA256("a\nb") == TermsSHA256("a\r\nb") {
		t.Error("the hash is not of the exact text")
	}
}

func TestBuildConsentClientIPAndUserAgent(t *testing.T) {
	in := consentInput()
	in.ClientIP = "::ffff:196.249.1.7"
	in.UserAgent = "bad\x00agent\xff" + strings.Repeat("é", 600)
	c, err := BuildConsent(in)
	if err != nil {
		t.Fatal(err)
	}
	if c.ClientIP != "196.249.1.7" {
		t.Errorf("IPv4-mapped address kept as %q", c.ClientIP)
	}
	if !utf8.ValidString(c.UserAgent) || utf8.RuneCountInString(c.UserAgent) != MaxUserAgentLength || strings.ContainsRune(c.UserAgent, 0) {
		t.Errorf("user agent not cleaned: %d characters, valid %v", utf8.RuneCountInString(c.UserAgent), utf8.ValidString(c.UserAgent))
	}
	if !strings.HasPrefix(c.UserAgent, "bad\uFFFDagent\uFFFD") {
		t.Errorf("user agent = %q...", c.UserAgent[:20])
	}

	in.ClientIP = "fe80::1%eth0"
	if c, err = BuildConsent(in); err != nil || c.ClientIP != "fe80::1" {
		t.Errorf("zoned address: %q, %v", c.ClientIP, err)
	}
}

func TestBuildConsentRefuses(t *testing.T) {
	tests := []struct {
		name      string
		mod       func(*ConsentInput)
		termsErr  bool // a FieldError for terms_shown
		wantInErr string
	}{
		{"empty terms", func(in *ConsentInput) { in.TermsShown = "" }, true, "required"},
		{"blank terms", func(in *ConsentInput) { in.TermsShown = " \n\t " }, true, "not only spaces"},
		{"long terms", func(in *ConsentInput) { in.TermsShown = strings.Repeat("x", MaxTermsLength+1) }, true, "at most 4096"},
		{"terms with a NUL", func(in *ConsentInput) { in.TermsShown = "pay\x00" }, true, "control characters"},
		{"terms not UTF-8", func(in *ConsentInput) { in.TermsShown = "pay \xff" }, true, "UTF-8"},
		{"no plan", func(in *ConsentInput) { in.Plan = nil }, false, "no plan"},
		{"no time", func(in *ConsentInput) { in.RecordedAt = time.Time{} }, false, "no time"},
		{"no client IP", func(in *ConsentInput) { in.ClientIP = "" }, false, "client IP"},
		{"a host name for an IP", func(in *ConsentInput) { in.ClientIP = "duka.example" }, false, "client IP"},
		{"an API key for a business ID", func(in *ConsentInput) { in.BusinessID = "test_pk_qj33hpibayoahnbujh4loofg" }, false, "business ID"},
		{"unknown environment", func(in *ConsentInput) { in.Environment = "staging" }, false, "environment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := consentInput()
			tt.mod(&in)
			_, err := BuildConsent(in)
			if err == nil {
				t.Fatal("accepted")
			}
			var fe *FieldError
			if errors.As(err, &fe) != tt.termsErr || (tt.termsErr && fe.Field != "terms_shown") {
				t.Errorf("error %v: want a terms_shown field error %v", err, tt.termsErr)
			}
			if !strings.Contains(err.Error(), tt.wantInErr) {
				t.Errorf("error %q does not say %q", err, tt.wantInErr)
			}
		})
	}
	// The longest terms are accepted, counted in characters, not bytes.
	in := consentInput()
	in.TermsShown = strings.Repeat("ü", MaxTermsLength)
	if _, err := BuildConsent(in); err != nil {
		t.Errorf("4096 characters refused: %v", err)
	}
}

func TestVerifyConsent(t *testing.T) {
	c, err := BuildConsent(consentInput())
	if err != nil {
		t.Fatal(err)
	}
	tampered := c
	tampered.TermsShown += "."
	if VerifyConsent(&tampered) == nil {
		t.Error("changed terms verified")
	}
	tampered = c
	tampered.TermsSHA256 = strings.Repeat("0", 64)
	if VerifyConsent(&tampered) == nil {
		t.Error("a wrong hash verified")
	}
}

func TestConsentCovers(t *testing.T) {
	c, err := BuildConsent(consentInput())
	if err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*paygatev1.BillingPlanSpec){
		"the same amount written differently": func(p *paygatev1.BillingPlanSpec) { p.Amount = "15000" },
		"interval count left to its default":  func(p *paygatev1.BillingPlanSpec) { p.IntervalCount = 0 },
	} {
		p := goldPlan
		mod(&p)
		if !ConsentCovers(&c, &p) {
			t.Errorf("%s: not covered", name)
		}
	}
	for name, mod := range map[string]func(*paygatev1.BillingPlanSpec){
		"another amount":   func(p *paygatev1.BillingPlanSpec) { p.Amount = "15000.01" },
		"another currency": func(p *paygatev1.BillingPlanSpec) { p.Currency = "KES" },
		"another interval": func(p *paygatev1.BillingPlanSpec) { p.Interval = paygatev1.IntervalWeek },
		"another count":    func(p *paygatev1.BillingPlanSpec) { p.IntervalCount = 2 },
		"a broken amount":  func(p *paygatev1.BillingPlanSpec) { p.Amount = "lots" },
	} {
		p := goldPlan
		mod(&p)
		if ConsentCovers(&c, &p) {
			t.Errorf("%s: covered", name)
		}
	}
}
