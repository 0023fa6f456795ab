// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package phone

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalizeMobile(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		region  string
		want    string
		wantErr error
	}{
		// Tanzania, international form.
		{"TZ Vodacom", "+255742345678", "", "+255742345678", nil},
		{"TZ Vodacom 75", "+255752345678", "", "+255752345678", nil},
		{"TZ Vodacom 76", "+255762345678", "", "+255762345678", nil},
		{"TZ Airtel 68", "+255682345678", "", "+255682345678", nil},
		{"TZ Airtel 78", "+255782345678", "", "+255782345678", nil},
		{"TZ Tigo 65", "+255652345678", "", "+255652345678", nil},
		{"TZ Tigo 71", "+255712345678", "", "+255712345678", nil},
		{"TZ Halotel 62", "+255622345678", "", "+255622345678", nil},
		{"TZ with spaces", "+255 712 345 678", "", "+255712345678", nil},
		{"TZ with dashes", "+255-712-345-678", "TZ", "+255712345678", nil},
		{"TZ with parentheses and trunk 0", "+255 (0)712 345 678", "", "+255712345678", nil},
		{"TZ with dots", "+255.712.345.678", "", "+255712345678", nil},
		{"surrounding whitespace", "  +255712345678\t", "", "+255712345678", nil},

		// MSISDN without "+".
		{"MSISDN no region", "255712345678", "", "+255712345678", nil},
		{"MSISDN same region", "255712345678", "TZ", "+255712345678", nil},
		{"MSISDN other region", "255712345678", "KE", "+255712345678", nil},
		{"KE MSISDN with TZ region", "254712345678", "TZ", "+254712345678", nil},
		{"MSISDN with spaces", "255 712 345 678", "", "+255712345678", nil},
		{"00 international prefix", "00255712345678", "TZ", "+255712345678", nil},
		{"00 international prefix no region", "00255712345678", "", "+255712345678", nil},

		// National format.
		{"TZ local", "0712345678", "TZ", "+255712345678", nil},
		{"TZ local lower-case region", "0712345678", "tz", "+255712345678", nil},
		{"TZ local with separators", "(0712) 345-678", "TZ", "+255712345678", nil},
		{"TZ local without trunk 0", "712345678", "TZ", "+255712345678", nil},
		{"same digits read in KE", "0712345678", "KE", "+254712345678", nil},
		{"local without region", "0712345678", "", "", ErrInvalidNumber},

		// Kenya and elsewhere.
		{"KE Safaricom", "+254712345678", "", "+254712345678", nil},
		{"KE Airtel", "+254733123456", "", "+254733123456", nil},
		{"KE local", "0722123456", "KE", "+254722123456", nil},
		{"US fixed-line-or-mobile", "+1 (415) 555-2671", "", "+14155552671", nil},
		{"UK mobile", "+44 7911 123456", "", "+447911123456", nil},

		// Not mobile.
		{"TZ landline Dar es Salaam", "+255222123456", "", "", ErrNotAMobileNumber},
		{"TZ landline local", "0222123456", "TZ", "", ErrNotAMobileNumber},
		{"TZ landline MSISDN", "255222123456", "", "", ErrNotAMobileNumber},
		{"KE landline Nairobi", "+254202012345", "", "", ErrNotAMobileNumber},
		{"UK landline", "+442071838750", "", "", ErrNotAMobileNumber},
		{"US toll-free", "+18005550199", "", "", ErrNotAMobileNumber},

		// Invalid.
		{"empty", "", "TZ", "", ErrInvalidNumber},
		{"spaces only", "   ", "TZ", "", ErrInvalidNumber},
		{"separators only", "(-.)", "TZ", "", ErrInvalidNumber},
		{"plus only", "+", "", "", ErrInvalidNumber},
		{"too short", "+2557", "", "", ErrInvalidNumber},
		{"one digit short", "+25571234567", "", "", ErrInvalidNumber},
		{"one digit long", "+2557123456789", "", "", ErrInvalidNumber},
		{"too short local", "07123", "TZ", "", ErrInvalidNumber},
		{"letters", "+255712ABC678", "", "", ErrInvalidNumber},
		{"vanity letters", "1-800-FLOWERS", "US", "", ErrInvalidNumber},
		{"extension", "+255712345678 ext 12", "", "", ErrInvalidNumber},
		{"non-Latin letters", "+255712345678ж", "", "", ErrInvalidNumber},
		{"tel URI", "tel:+255712345678", "", "", ErrInvalidNumber},
		{"hash", "+255712345678#", "", "", ErrInvalidNumber},
		{"slash", "0712/345678", "TZ", "", ErrInvalidNumber},
		{"plus in the middle", "255+712345678", "", "", ErrInvalidNumber},
		{"two pluses", "++255712345678", "", "", ErrInvalidNumber},
		{"non-ASCII digits", "+٢٥٥٧١٢٣٤٥٦٧٨", "", "", ErrInvalidNumber},
		{"invalid UTF-8", "+255712\xff345678", "", "", ErrInvalidNumber},
		{"NUL byte", "+255712\x00345678", "", "", ErrInvalidNumber},
		{"33 characters", "+255 712 345 678                 ", "", "", ErrInvalidNumber},
		{"very long", strings.Repeat("1", 10000), "TZ", "", ErrInvalidNumber},
		{"unknown country code", "+999712345678", "", "", ErrInvalidNumber},
		{"unknown region", "0712345678", "XX", "", ErrInvalidNumber},
		{"non-geographic toll-free +800", "+80012345678", "", "", ErrNotAMobileNumber},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeMobile(tt.raw, tt.region)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("NormalizeMobile(%q, %q) = %q, %v; want error %v", tt.raw, tt.region, got, err, tt.wantErr)
				}
				if got != "" {
					t.Errorf("returned %q with an error", got)
				}
				if d := strings.Trim(tt.raw, " +"); len(d) >= 6 && strings.Contains(err.Error(), d) {
					t.Errorf("error %q contains the number", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("NormalizeMobile(%q, %q) = %q, %v; want %q", tt.raw, tt.region, got, err, tt.want)
			}
		})
	}
}

func TestNormalizeForCurrency(t *testing.T) {
	tests := []struct {
		raw, currency, want string
		wantErr             error
	}{
		{"0712345678", "TZS", "+255712345678", nil},
		{"0712345678", "KES", "+254712345678", nil},
		{"0772123456", "UGX", "+256772123456", nil},
		{"0788123456", "RWF", "+250788123456", nil},
		{"0991234567", "MWK", "+265991234567", nil},
		{"0971234567", "ZMW", "+260971234567", nil},
		{"0241234567", "GHS", "+233241234567", nil},
		{"08031234567", "NGN", "+2348031234567", nil},
		// International numbers are read the same whatever the currency.
		{"+255712345678", "KES", "+255712345678", nil},
		{"+255712345678", "USD", "+255712345678", nil},
		// A currency without a phone region, or an unknown one, reads only international numbers.
		{"0712345678", "USD", "", ErrInvalidNumber},
		{"0712345678", "XXX", "", ErrInvalidNumber},
		{"0712345678", "", "", ErrInvalidNumber},
	}
	for _, tt := range tests {
		got, err := NormalizeForCurrency(tt.raw, tt.currency)
		if !errors.Is(err, tt.wantErr) || got != tt.want {
			t.Errorf("NormalizeForCurrency(%q, %q) = %q, %v; want %q, %v", tt.raw, tt.currency, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestNormalizeMobileErrorMessages(t *testing.T) {
	tests := []struct {
		raw, region, want string
	}{
		{"", "TZ", "invalid phone number: empty"},
		{"+255712ABC678", "", "invalid phone number: contains letters"},
		{strings.Repeat("7", 33), "", "invalid phone number: longer than 32 characters"},
		{"0712345678", "", "invalid phone number: a number in national format needs a default region"},
		{"+255222123456", "", "not a mobile phone number: it is a fixed-line number"},
		{"+25571234567", "", "invalid phone number: not a number of its country's numbering plan"},
	}
	for _, tt := range tests {
		_, err := NormalizeMobile(tt.raw, tt.region)
		if err == nil || err.Error() != tt.want {
			t.Errorf("NormalizeMobile(%q) error = %v, want %q", tt.raw, err, tt.want)
		}
	}
	// Exactly 32 characters is within the limit.
	if _, err := NormalizeMobile("+255712345678"+strings.Repeat(" ", 19), ""); err != nil {
		t.Errorf("32-character input rejected: %v", err)
	}
}

func TestMask(t *testing.T) {
	tests := []struct{ in, want string }{
		{"+255712345678", "+255*******78"},
		{"+254712345678", "+254*******78"},
		{"+14155552671", "+141******71"},
		{"+12345678", "+123***78"},
		{"+1234567", "+*******"},
		{"+12", "+**"},
		{"+", "+"},
		{"", ""},
		{"255712345678", "255*******78"},
		{"+2557ж2345678", "+255*******78"},
		{"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8", "\uFFFD\uFFFD\uFFFD***\uFFFD\uFFFD"},
	}
	for _, tt := range tests {
		if got := Mask(tt.in); got != tt.want {
			t.Errorf("Mask(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRegionOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{"+255712345678", "TZ"},
		{"+255222123456", "TZ"},
		{"+254712345678", "KE"},
		{"+256772123456", "UG"},
		{"+250788123456", "RW"},
		{"+14155552671", "US"},
		{"+16135550123", "CA"},
		{"+442071838750", "GB"},
		{"+447700900123", ""}, // +44 is shared; an unassigned range matches no region
		{"+80012345678", ""},  // non-geographic
		{"+999712345678", ""},
		{"255712345678", ""},
		{"+255 712 345 678", ""},
		{"+", ""},
		{"", ""},
		{"+25571234567890123", ""},
		{"+2557x", ""},
	}
	for _, tt := range tests {
		if got := RegionOf(tt.in); got != tt.want {
			t.Errorf("RegionOf(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzNormalizeMobile(f *testing.F) {
	for _, s := range []string{"+255712345678", "255712345678", "0712345678", "(0712) 345-678", "+", "00", "0", "1-800-FLOWERS", "+٢٥٥", "\xff"} {
		f.Add(s, "TZ")
	}
	f.Add("+1 415 555 2671", "")
	f.Fuzz(func(t *testing.T, raw, region string) {
		e164, err := NormalizeMobile(raw, region)
		if err != nil {
			if !errors.Is(err, ErrInvalidNumber) && !errors.Is(err, ErrNotAMobileNumber) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			if e164 != "" {
				t.Fatalf("result %q with error", e164)
			}
		} else {
			if RegionOf(e164) == "" {
				t.Fatalf("valid mobile %q has no region", e164)
			}
			// E.164 output normalizes to itself.
			if again, err := NormalizeMobile(e164, ""); err != nil || again != e164 {
				t.Fatalf("NormalizeMobile(%q) = %q, %v; not idempotent", e164, again, err)
			}
		}
		m := Mask(raw)
		if utf8.RuneCountInString(m) != utf8.RuneCountInString(raw) && utf8.ValidString(raw) {
			t.Fatalf("Mask changed the length of %q to %q", raw, m)
		}
		_ = RegionOf(raw)
	})
}
