// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package consoleauth

import (
	"encoding/base32"
	"errors"
	"net/url"
	"regexp"
	"testing"
	"time"
)

// rfcSecret is the SHA1 seed of RFC 6238 Appendix B, the ASCII "12345678901234567890",
// in base32.
var rfcSecret = base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte("12345678901234567890"))

func TestTOTPCodeRFC6238(t *testing.T) {
	// RFC 6238 Appendix B, SHA1 rows: the last 6 of the 8 digits given there.
	for _, tc := range []struct {
		unix int64
		want string
	}{
		{59, "287082"},         // 94287082
		{1111111109, "081804"}, // 07081804
		{1111111111, "050471"}, // 14050471
		{1234567890, "005924"}, // 89005924
		{2000000000, "279037"}, // 69279037
		{20000000000, "353130"},
	} {
		got, err := TOTPCode(rfcSecret, time.Unix(tc.unix, 0))
		if err != nil || got != tc.want {
			t.Errorf("TOTPCode(T=%d) = %q, %v; want %q", tc.unix, got, err, tc.want)
		}
	}
}

func TestTOTPCodeStep(t *testing.T) {
	for _, tc := range []struct {
		name     string
		a, b     time.Time
		wantSame bool
	}{
		{"same step", time.Unix(60, 0), time.Unix(89, 999999999), true},
		{"next step", time.Unix(89, 0), time.Unix(90, 0), false},
		{"time zone ignored", time.Unix(1234567890, 0).UTC(), time.Unix(1234567890, 0).In(time.FixedZone("x", 5*3600)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, errA := TOTPCode(rfcSecret, tc.a)
			b, errB := TOTPCode(rfcSecret, tc.b)
			if errA != nil || errB != nil || (a == b) != tc.wantSame {
				t.Errorf("codes %q (%v) and %q (%v); want same = %v", a, errA, b, errB, tc.wantSame)
			}
		})
	}
}

func TestTOTPCodeRejectsMalformedSecret(t *testing.T) {
	for _, tc := range []struct {
		name, secret string
	}{
		{"empty", ""},
		{"not base32", "GEZDGNBVGY3TQOJQ!EZDGNBVGY3TQOJQ"},
		{"digit 1", "GEZDGNBVGY3TQOJQ1EZDGNBVGY3TQOJQ"},
		{"impossible length", "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQG"},
		{"non-zero trailing bits", "GEZDGNBVGY3TQOJQGEZDGNBVGZ"}, // 16 bytes end in ...GY
		{"15 bytes", base32.StdEncoding.EncodeToString([]byte("123456789012345"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, err := TOTPCode(tc.secret, time.Unix(59, 0))
			if !errors.Is(err, ErrInvalidTOTPSecret) || code != "" {
				t.Errorf("TOTPCode(%q) = %q, %v; want ErrInvalidTOTPSecret", tc.secret, code, err)
			}
		})
	}
}

func TestTOTPCodeAcceptsSecretVariants(t *testing.T) {
	for _, secret := range []string{
		"gezdgnbvgy3tqojqgezdgnbvgy3tqojq",
		"GEZD GNBV GY3T QOJQ GEZD GNBV GY3T QOJQ",
		base32.StdEncoding.EncodeToString([]byte("1234567890123456")), // 16 bytes, padded
	} {
		if _, err := TOTPCode(secret, time.Unix(59, 0)); err != nil {
			t.Errorf("TOTPCode(%q): %v", secret, err)
		}
	}
	if got, _ := TOTPCode("gezd gnbv gy3t qojq gezd gnbv gy3t qojq", time.Unix(59, 0)); got != "287082" {
		t.Errorf("TOTPCode of the RFC seed in lower case with spaces = %q, want 287082", got)
	}
}

func TestTOTPCodeBeforeEpoch(t *testing.T) {
	if code, err := TOTPCode(rfcSecret, time.Unix(-1, 0)); err == nil {
		t.Errorf("TOTPCode(T=-1) = %q, want an error", code)
	}
}

func TestNewTOTPSecret(t *testing.T) {
	secret, err := NewTOTPSecret()
	if err != nil {
		t.Fatalf("NewTOTPSecret: %v", err)
	}
	if !regexp.MustCompile(`^[A-Z2-7]{32}$`).MatchString(secret) {
		t.Errorf("NewTOTPSecret = %q, want 32 characters of upper-case unpadded base32", secret)
	}
	if key, err := base32.StdEncoding.DecodeString(secret); err != nil || len(key) != 20 {
		t.Errorf("NewTOTPSecret = %q: %d bytes, %v; want 20 bytes", secret, len(key), err)
	}
	if other, _ := NewTOTPSecret(); other == secret {
		t.Errorf("two secrets are both %q", secret)
	}
	now := time.Now()
	code, err := TOTPCode(secret, now)
	if err != nil {
		t.Fatalf("TOTPCode(new secret): %v", err)
	}
	if _, ok := VerifyTOTP(secret, code, now, 0); !ok {
		t.Errorf("VerifyTOTP refused the code %q of a new secret", code)
	}
}

func TestVerifyTOTP(t *testing.T) {
	// T=59 is in step 1; T=1111111109 is in step 37037036.
	const step = 37037036
	now := time.Unix(1111111109, 0)
	codeAt := func(unix int64) string {
		code, err := TOTPCode(rfcSecret, time.Unix(unix, 0))
		if err != nil {
			t.Fatalf("TOTPCode: %v", err)
		}
		return code
	}
	for _, tc := range []struct {
		name, secret, code string
		lastStep           int64
		wantStep           int64
		wantOK             bool
	}{
		{"current step", rfcSecret, "081804", 0, step, true},
		{"previous step", rfcSecret, codeAt(step*30 - 30), 0, step - 1, true},
		{"next step", rfcSecret, codeAt(step*30 + 30), 0, step + 1, true},
		{"two steps back", rfcSecret, codeAt(step*30 - 60), 0, 0, false},
		{"two steps ahead", rfcSecret, codeAt(step*30 + 60), 0, 0, false},
		{"spaces", rfcSecret, " 081 804 ", 0, step, true},
		{"wrong code", rfcSecret, "081805", 0, 0, false},
		{"code of another time", rfcSecret, "287082", 0, 0, false},
		{"code of another secret", "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP", "081804", 0, 0, false},
		{"step already used", rfcSecret, "081804", step, 0, false},
		{"later step already used", rfcSecret, "081804", step + 1, 0, false},
		{"previous step used", rfcSecret, "081804", step - 1, step, true},
		{"previous step's code after it was used", rfcSecret, codeAt(step*30 - 30), step - 1, 0, false},
		{"five digits", rfcSecret, "81804", 0, 0, false},
		{"seven digits", rfcSecret, "0081804", 0, 0, false},
		{"eight-digit RFC code", rfcSecret, "07081804", 0, 0, false},
		{"letters", rfcSecret, "O81804", 0, 0, false},
		{"sign", rfcSecret, "+81804", 0, 0, false},
		{"dash", rfcSecret, "081-804", 0, 0, false},
		{"full-width digits", rfcSecret, "０８１８０４", 0, 0, false},
		{"empty", rfcSecret, "", 0, 0, false},
		{"malformed secret", "not a secret!", "081804", 0, 0, false},
		{"empty secret", "", "081804", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotStep, ok := VerifyTOTP(tc.secret, tc.code, now, tc.lastStep)
			if gotStep != tc.wantStep || ok != tc.wantOK {
				t.Errorf("VerifyTOTP(%q, lastStep %d) = %d, %v; want %d, %v",
					tc.code, tc.lastStep, gotStep, ok, tc.wantStep, tc.wantOK)
			}
		})
	}
}

// TestVerifyTOTPRefusesReplay follows a user who signs in twice within a step, then again
// in the next step.
func TestVerifyTOTPRefusesReplay(t *testing.T) {
	now := time.Unix(1234567890, 0)
	step, ok := VerifyTOTP(rfcSecret, "005924", now, 0)
	if !ok {
		t.Fatalf("first use of 005924 refused")
	}
	if _, ok := VerifyTOTP(rfcSecret, "005924", now.Add(5*time.Second), step); ok {
		t.Errorf("second use of 005924 accepted")
	}
	next, _ := TOTPCode(rfcSecret, now.Add(30*time.Second))
	if got, ok := VerifyTOTP(rfcSecret, next, now.Add(30*time.Second), step); !ok || got != step+1 {
		t.Errorf("next step's code: VerifyTOTP = %d, %v; want %d, true", got, ok, step+1)
	}
}

// TestVerifyTOTPPrefersLatestStep uses two adjacent steps that share a code under the
// RFC seed: the later step is returned, so that neither code can be used again.
func TestVerifyTOTPPrefersLatestStep(t *testing.T) {
	const first, code = 37079356, "186519"
	for _, s := range []int64{first, first + 1} {
		if got, _ := TOTPCode(rfcSecret, time.Unix(s*30, 0)); got != code {
			t.Fatalf("TOTPCode(step %d) = %q, want %q", s, got, code)
		}
	}
	for _, tc := range []struct {
		name     string
		now      int64 // step
		lastStep int64
		wantStep int64
		wantOK   bool
	}{
		{"now is the first", first, 0, first + 1, true},
		{"now is the second", first + 1, 0, first + 1, true},
		{"first used", first + 1, first, first + 1, true},
		{"second used", first, first + 1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step, ok := VerifyTOTP(rfcSecret, code, time.Unix(tc.now*30+10, 0), tc.lastStep)
			if step != tc.wantStep || ok != tc.wantOK {
				t.Errorf("VerifyTOTP = %d, %v; want %d, %v", step, ok, tc.wantStep, tc.wantOK)
			}
		})
	}
}

func TestOTPAuthURI(t *testing.T) {
	const secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
	const params = "&algorithm=SHA1&digits=6&period=30"
	for _, tc := range []struct {
		name, issuer, account, want string
	}{
		{"plain", "Paygate", "ada@example.com",
			"otpauth://totp/Paygate:ada%40example.com?secret=" + secret + "&issuer=Paygate" + params},
		{"spaces", "Acme Pay", "Ada Lovelace",
			"otpauth://totp/Acme%20Pay:Ada%20Lovelace?secret=" + secret + "&issuer=Acme%20Pay" + params},
		{"colons", "a:b", "c:d",
			"otpauth://totp/a%3Ab:c%3Ad?secret=" + secret + "&issuer=a%3Ab" + params},
		{"query characters", "A&B=C?", "x/y#z+w",
			"otpauth://totp/A%26B%3DC%3F:x%2Fy%23z%2Bw?secret=" + secret + "&issuer=A%26B%3DC%3F" + params},
		{"no issuer", "", "ada@example.com",
			"otpauth://totp/ada%40example.com?secret=" + secret + params},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := OTPAuthURI(tc.issuer, tc.account, secret)
			if got != tc.want {
				t.Errorf("OTPAuthURI = %q\nwant          %q", got, tc.want)
			}
			checkOTPAuthURI(t, got, tc.issuer, tc.account, secret)
		})
	}
}

// checkOTPAuthURI parses uri as an authenticator app would and checks what it finds.
func checkOTPAuthURI(t *testing.T, uri, issuer, account, secret string) {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatalf("url.Parse(%q): %v", uri, err)
	}
	wantLabel := account
	if issuer != "" {
		wantLabel = issuer + ":" + account
	}
	q := u.Query()
	if u.Scheme != "otpauth" || u.Host != "totp" || u.Path != "/"+wantLabel || u.Fragment != "" {
		t.Errorf("%q: scheme %q, host %q, path %q, fragment %q", uri, u.Scheme, u.Host, u.Path, u.Fragment)
	}
	if q.Get("secret") != secret || q.Get("issuer") != issuer || len(q) != 4+min(len(issuer), 1) {
		t.Errorf("%q: query %v", uri, q)
	}
}
