// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package money

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
)

// rat returns a as an exact rational, for comparisons in tests.
func (a Amount) rat() *big.Rat {
	return new(big.Rat).SetFrac(a.int(), pow10(a.scale))
}

func TestParseAmountValid(t *testing.T) {
	tests := []struct {
		in        string
		want      string
		wantScale int32
	}{
		{"0", "0", 0},
		{"0.0", "0", 0},
		{"000", "0", 0},
		{"1500", "1500", 0},
		{"1500.0", "1500", 0},
		{"1500.00", "1500", 0},
		{"1500.50", "1500.5", 1},
		{"1500.05", "1500.05", 2},
		{"0.5", "0.5", 1},
		{"0.05", "0.05", 2},
		{"0100", "100", 0},
		{"00.10", "0.1", 1},
		{"0.000000001", "0.000000001", 9},
		{"99999999999999999999", "99999999999999999999", 0},
		{"99999999999999999999.999999999", "99999999999999999999.999999999", 9},
		{"12345678901234567890.123456789", "12345678901234567890.123456789", 9},
		{"1.100000000", "1.1", 1},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			a, err := ParseAmount(tt.in)
			if err != nil {
				t.Fatalf("ParseAmount(%q) error: %v", tt.in, err)
			}
			if got := a.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got := a.Scale(); got != tt.wantScale {
				t.Errorf("Scale() = %d, want %d", got, tt.wantScale)
			}
		})
	}
}

func TestParseAmountInvalid(t *testing.T) {
	tests := []struct {
		in         string
		wantErr    error
		wantDetail string // substring of the message, optional
	}{
		{"", ErrSyntax, "empty"},
		{"-1", ErrNegative, ""},
		{"-0", ErrNegative, ""},
		{"-1.5", ErrNegative, ""},
		{"+1", ErrSyntax, "'+'"},
		{"1e3", ErrSyntax, "exponent"},
		{"1E3", ErrSyntax, "exponent"},
		{"1.5e3", ErrSyntax, "exponent"},
		{" 1", ErrSyntax, "spaces"},
		{"1 ", ErrSyntax, "spaces"},
		{"1 000", ErrSyntax, "spaces"},
		{"1\t", ErrSyntax, "spaces"},
		{"1\u00a0000", ErrSyntax, "spaces"},
		{"1,000", ErrSyntax, "separators"},
		{"1_000", ErrSyntax, "separators"},
		{"1.", ErrSyntax, "after the decimal point"},
		{".5", ErrSyntax, "before the decimal point"},
		{".", ErrSyntax, "before the decimal point"},
		{"1.2.3", ErrSyntax, "more than one decimal point"},
		{"-", ErrSyntax, "missing digits"},
		{"--1", ErrSyntax, "sign"},
		{"1-", ErrSyntax, "sign"},
		{"NaN", ErrSyntax, "unexpected character 'N'"},
		{"Inf", ErrSyntax, "unexpected character"},
		{"-Inf", ErrSyntax, "unexpected character"},
		{"e5", ErrSyntax, "unexpected character 'e'"},
		{"0x10", ErrSyntax, "unexpected character 'x'"},
		{"١٢", ErrSyntax, "unexpected character"}, // Arabic-Indic digits
		{"\xff", ErrSyntax, "unexpected character"},
		{`"1"`, ErrSyntax, "unexpected character"},
		{"123456789012345678901", ErrTooLarge, "20 digits"},
		{"000000000000000000001", ErrTooLarge, ""},
		{"0.1234567891", ErrTooPrecise, "9 digits"},
		{"1.0000000000", ErrTooPrecise, ""},
		{"-123456789012345678901", ErrNegative, ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			a, err := ParseAmount(tt.in)
			if err == nil {
				t.Fatalf("ParseAmount(%q) = %s, want error", tt.in, a)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("ParseAmount(%q) error %q does not wrap %q", tt.in, err, tt.wantErr)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if !strings.Contains(pe.Message(), tt.wantDetail) {
				t.Errorf("Message() = %q, want it to contain %q", pe.Message(), tt.wantDetail)
			}
			if !a.IsZero() {
				t.Errorf("amount returned with error = %s, want 0", a)
			}
		})
	}
}

func TestParseErrorMessage(t *testing.T) {
	_, err := ParseAmount("1e3")
	const want = `money: amount "1e3" must be a decimal number: exponent notation such as 1e3 is not allowed`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	_, err = ParseAmount("-5")
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Message() != "must not be negative" {
		t.Errorf("err = %v, want Message() \"must not be negative\"", err)
	}
	long := strings.Repeat("9", 1000)
	_, err = ParseAmount(long)
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("error for long input is not truncated: %d bytes", len(err.Error()))
	}
}

func TestParseJSONNumberValid(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"0", "0"},
		{"0.0", "0"},
		{"1500", "1500"},
		{"1500.00", "1500"},
		{"1500.50", "1500.5"},
		{"1.5e3", "1500"},
		{"1.5E3", "1500"},
		{"1.5e+3", "1500"},
		{"15e-1", "1.5"},
		{"15E-01", "1.5"},
		{"1e0", "1"},
		{"1e-9", "0.000000001"},
		{"1e19", "10000000000000000000"},
		{"0e30", "0"},
		{"0e-30", "0"},
		{"0.000000000000000000000000000001e30", "1"},
		{"1000000000000000000000000000000e-30", "1"},
		{"123456789012345678901234567890e-10", "12345678901234567890.123456789"},
		{"1e00000000000000000000000000000000000003", "1000"},
		{"1500.0000000000", "1500"}, // only significant decimals count
		{"12345678901234567890.123456789", "12345678901234567890.123456789"},
		{" 12.5\n", "12.5"},
		{`"1500.00"`, "1500"},
		{`"1500.50"`, "1500.5"},
		{`"0.5"`, "0.5"},
		{` "7" `, "7"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			a, err := ParseJSONNumber([]byte(tt.in))
			if err != nil {
				t.Fatalf("ParseJSONNumber(%s) error: %v", tt.in, err)
			}
			if got := a.String(); got != tt.want {
				t.Errorf("ParseJSONNumber(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseJSONNumberInvalid(t *testing.T) {
	tests := []struct {
		in         string
		wantErr    error
		wantDetail string
	}{
		{"", ErrSyntax, "empty"},
		{"   ", ErrSyntax, "empty"},
		{"true", ErrSyntax, "boolean"},
		{"false", ErrSyntax, "boolean"},
		{"null", ErrSyntax, "null"},
		{`{"amount":1}`, ErrSyntax, "object"},
		{"[1]", ErrSyntax, "array"},
		{"-1", ErrNegative, ""},
		{"-0", ErrNegative, ""},
		{"-1.5e3", ErrNegative, ""},
		{`"-1"`, ErrNegative, ""},
		{"+1", ErrSyntax, "'+'"},
		{".5", ErrSyntax, "before the decimal point"},
		{"1.", ErrSyntax, "after the decimal point"},
		{"01", ErrSyntax, "leading zeros"},
		{"00.5", ErrSyntax, "leading zeros"},
		{"1e", ErrSyntax, "exponent digits"},
		{"1e+", ErrSyntax, "exponent digits"},
		{"1 2", ErrSyntax, "unexpected character"},
		{"1,5", ErrSyntax, "unexpected character"},
		{"NaN", ErrSyntax, "unexpected character"},
		{"Infinity", ErrSyntax, "unexpected character"},
		{"-", ErrSyntax, "missing digits"},
		{"0x1", ErrSyntax, "unexpected character"},
		{"tru", ErrSyntax, "unexpected character"},
		{`"`, ErrSyntax, "unterminated"},
		{`"1500`, ErrSyntax, "unterminated"},
		{`""`, ErrSyntax, "empty"},
		{`"1e3"`, ErrSyntax, "exponent"},
		{`" 1"`, ErrSyntax, "spaces"},
		{`"\u0031"`, ErrSyntax, "unexpected character"},
		{`"1.0000000000"`, ErrTooPrecise, ""}, // strings follow ParseAmount rules
		{"1e31", ErrTooLarge, "exponent"},
		{"0e31", ErrTooLarge, "exponent"},
		{"1e-31", ErrTooPrecise, "exponent"},
		{"1e100", ErrTooLarge, "exponent"},
		{"1e99999999999999999999999", ErrTooLarge, "exponent"},
		{"1e-99999999999999999999999", ErrTooPrecise, "exponent"},
		{"1e20", ErrTooLarge, "integer digits"},
		{"100000000000000000000", ErrTooLarge, "integer digits"},
		{"1e-10", ErrTooPrecise, "decimal places"},
		{"0.0000000001", ErrTooPrecise, "decimal places"},
		{"1.5e-9", ErrTooPrecise, "decimal places"},
		{"0." + strings.Repeat("0", 70) + "1", ErrTooPrecise, "digits"},
		{strings.Repeat("1", 70), ErrTooLarge, "digits"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			a, err := ParseJSONNumber([]byte(tt.in))
			if err == nil {
				t.Fatalf("ParseJSONNumber(%s) = %s, want error", tt.in, a)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("ParseJSONNumber(%s) error %q does not wrap %q", tt.in, err, tt.wantErr)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if !strings.Contains(pe.Message(), tt.wantDetail) {
				t.Errorf("Message() = %q, want it to contain %q", pe.Message(), tt.wantDetail)
			}
		})
	}
}

func TestStringFixed(t *testing.T) {
	tests := []struct {
		in    string
		scale int32
		want  string
	}{
		{"1500", 0, "1500"},
		{"1500", 2, "1500.00"},
		{"1500.5", 2, "1500.50"},
		{"1500.5", 3, "1500.500"},
		{"0.05", 2, "0.05"},
		{"0.05", 4, "0.0500"},
		{"0", 0, "0"},
		{"0", 2, "0.00"},
		{"0", -1, "0"},
		{"12.5", -3, "13"},
		// More decimals than requested: rounded half-up.
		{"1500.5", 0, "1501"},
		{"1500.4", 0, "1500"},
		{"0.005", 2, "0.01"},
		{"0.0049", 2, "0.00"},
		{"9.995", 2, "10.00"},
		{"99999999999999999999.999999999", 2, "100000000000000000000.00"},
	}
	for _, tt := range tests {
		a := MustParseAmount(tt.in)
		if got := a.StringFixed(tt.scale); got != tt.want {
			t.Errorf("%s.StringFixed(%d) = %q, want %q", tt.in, tt.scale, got, tt.want)
		}
		if got := a.JSONNumber(tt.scale); got != json.Number(tt.want) {
			t.Errorf("%s.JSONNumber(%d) = %q, want %q", tt.in, tt.scale, got, tt.want)
		}
	}
}

func TestZeroValue(t *testing.T) {
	var z Amount
	if !z.IsZero() || z.String() != "0" || z.Scale() != 0 || z.StringFixed(2) != "0.00" {
		t.Errorf("zero value: IsZero=%v String=%q Scale=%d StringFixed(2)=%q", z.IsZero(), z.String(), z.Scale(), z.StringFixed(2))
	}
	if z.Cmp(MustParseAmount("0.00")) != 0 || !z.Equal(MustParseAmount("0")) {
		t.Error("zero value != parsed 0")
	}
	if z.Cmp(MustParseAmount("0.01")) != -1 {
		t.Error("zero value not < 0.01")
	}
	if got := z.Add(MustParseAmount("1.5")); got.String() != "1.5" {
		t.Errorf("0 + 1.5 = %s", got)
	}
	if got, err := MustParseAmount("1.5").Sub(z); err != nil || got.String() != "1.5" {
		t.Errorf("1.5 - 0 = %s, %v", got, err)
	}
	if b, err := json.Marshal(z); err != nil || string(b) != "0" {
		t.Errorf("json.Marshal(zero) = %s, %v", b, err)
	}
	var fees FeeSchedule
	if fee, net, err := ComputeFee(z, fees, Currency{Code: "TZS", Scale: 2}); err != nil || !fee.IsZero() || !net.IsZero() {
		t.Errorf("ComputeFee(0, zero schedule) = %s, %s, %v", fee, net, err)
	}
}

func TestArithmetic(t *testing.T) {
	tests := []struct {
		a, b    string
		cmp     int
		sum     string
		diff    string // "" means a - b is negative
		equalAB bool
	}{
		{"1", "1", 0, "2", "0", true},
		{"1.50", "1.5", 0, "3", "0", true},
		{"1500", "0.5", 1, "1500.5", "1499.5", false},
		{"0.5", "0.5", 0, "1", "0", true},
		{"0.1", "0.2", -1, "0.3", "", false},
		{"0.000000001", "0", 1, "0.000000001", "0.000000001", false},
		{"99999999999999999999.999999999", "0.000000001", 1, "100000000000000000000", "99999999999999999999.999999998", false},
		{"10", "9.99", 1, "19.99", "0.01", false},
		{"9.99", "10", -1, "19.99", "", false},
	}
	for _, tt := range tests {
		a, b := MustParseAmount(tt.a), MustParseAmount(tt.b)
		if got := a.Cmp(b); got != tt.cmp {
			t.Errorf("%s.Cmp(%s) = %d, want %d", tt.a, tt.b, got, tt.cmp)
		}
		if got := b.Cmp(a); got != -tt.cmp {
			t.Errorf("%s.Cmp(%s) = %d, want %d", tt.b, tt.a, got, -tt.cmp)
		}
		if got := a.Equal(b); got != tt.equalAB {
			t.Errorf("%s.Equal(%s) = %v", tt.a, tt.b, got)
		}
		if got := a.Add(b).String(); got != tt.sum {
			t.Errorf("%s + %s = %s, want %s", tt.a, tt.b, got, tt.sum)
		}
		got, err := a.Sub(b)
		switch {
		case tt.diff == "" && err == nil:
			t.Errorf("%s - %s = %s, want error", tt.a, tt.b, got)
		case tt.diff == "" && !errors.Is(err, ErrNegative):
			t.Errorf("%s - %s error %v does not wrap ErrNegative", tt.a, tt.b, err)
		case tt.diff != "" && err != nil:
			t.Errorf("%s - %s error: %v", tt.a, tt.b, err)
		case tt.diff != "" && got.String() != tt.diff:
			t.Errorf("%s - %s = %s, want %s", tt.a, tt.b, got, tt.diff)
		}
	}
}

func TestImmutability(t *testing.T) {
	a := MustParseAmount("1.5")
	b := a
	_ = a.Add(MustParseAmount("1"))
	_, _ = a.Sub(MustParseAmount("1"))
	_ = a.StringFixed(0)
	if a.String() != "1.5" || b.String() != "1.5" {
		t.Errorf("operations mutated their receiver: a=%s b=%s", a, b)
	}
}

func TestMustParseAmountPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Error("MustParseAmount(\"x\") did not panic")
		}
	}()
	MustParseAmount("x")
}

type payment struct {
	Amount   Amount      `json:"amount"`
	Optional *Amount     `json:"optional,omitempty"`
	Display  json.Number `json:"display,omitempty"`
}

func TestJSONRoundTrip(t *testing.T) {
	tests := []struct {
		in       string
		want     string // Amount.String() after decoding
		wantJSON string // re-encoded struct
	}{
		{`{"amount":1500}`, "1500", `{"amount":1500}`},
		{`{"amount":1500.50}`, "1500.5", `{"amount":1500.5}`},
		{`{"amount":"1500.50"}`, "1500.5", `{"amount":1500.5}`},
		{`{"amount":1.5e3}`, "1500", `{"amount":1500}`},
		{`{"amount": 0.1 }`, "0.1", `{"amount":0.1}`},
		// Beyond float64 precision: must survive exactly.
		{`{"amount":12345678901234567890.123456789}`, "12345678901234567890.123456789", `{"amount":12345678901234567890.123456789}`},
		{`{"amount":9007199254740993}`, "9007199254740993", `{"amount":9007199254740993}`},
		{`{"amount":1,"optional":null}`, "1", `{"amount":1}`},
		{`{"amount":1,"optional":"2.50"}`, "1", `{"amount":1,"optional":2.5}`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var p payment
			if err := json.Unmarshal([]byte(tt.in), &p); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if got := p.Amount.String(); got != tt.want {
				t.Errorf("Amount = %s, want %s", got, tt.want)
			}
			out, err := json.Marshal(p)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(out) != tt.wantJSON {
				t.Errorf("Marshal = %s, want %s", out, tt.wantJSON)
			}
		})
	}
}

func TestJSONUnmarshalErrors(t *testing.T) {
	tests := []struct {
		in      string
		wantErr error
	}{
		{`{"amount":null}`, ErrSyntax},
		{`{"amount":true}`, ErrSyntax},
		{`{"amount":{}}`, ErrSyntax},
		{`{"amount":[1]}`, ErrSyntax},
		{`{"amount":-1}`, ErrNegative},
		{`{"amount":"-1"}`, ErrNegative},
		{`{"amount":"1e3"}`, ErrSyntax},
		{`{"amount":1e-10}`, ErrTooPrecise},
		{`{"amount":1e31}`, ErrTooLarge},
	}
	for _, tt := range tests {
		var p payment
		err := json.Unmarshal([]byte(tt.in), &p)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("Unmarshal(%s) = %v, want %v", tt.in, err, tt.wantErr)
		}
	}
}

func TestJSONNumberField(t *testing.T) {
	p := payment{Amount: MustParseAmount("1500.5"), Display: MustParseAmount("1500.5").JSONNumber(2)}
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"amount":1500.5,"display":1500.50}`; string(out) != want {
		t.Errorf("Marshal = %s, want %s", out, want)
	}
	// json.Number and json.RawMessage feed ParseJSONNumber directly.
	dec := json.NewDecoder(strings.NewReader(`{"a": 1500.50, "b": "7.25"}`))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	a, err := ParseJSONNumber([]byte(m["a"].(json.Number)))
	if err != nil || a.String() != "1500.5" {
		t.Errorf("from json.Number: %s, %v", a, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(`{"b": "7.25"}`), &raw); err != nil {
		t.Fatal(err)
	}
	b, err := ParseJSONNumber(raw["b"])
	if err != nil || b.String() != "7.25" {
		t.Errorf("from json.RawMessage: %s, %v", b, err)
	}
}

func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{
		"0", "1500", "1500.0", "1500.50", "0.5", "0.000000001",
		"99999999999999999999.999999999", "123456789012345678901", "0.1234567891",
		"", "-1", "+1", "1e3", "1.5e3", "15e-1", "1E+3", "1.", ".5", "NaN", "Inf",
		" 1", "1 ", "1,000", "01", "-0", "0e30", "1e31", "1e-9", "1e-10",
		`"1500.00"`, `"1500`, `""`, "true", "false", "null", "{}", "[]",
		"1.0000000000", "1500.0000000000", "\xff", "١٢",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if a, err := ParseAmount(s); err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Err == nil {
				t.Fatalf("ParseAmount(%q) error %v is not a *ParseError with a sentinel", s, err)
			}
			if !a.IsZero() {
				t.Fatalf("ParseAmount(%q) returned %s with an error", s, a)
			}
		} else {
			checkValid(t, "ParseAmount", s, a)
			want, ok := new(big.Rat).SetString(s)
			if !ok || want.Cmp(a.rat()) != 0 {
				t.Fatalf("ParseAmount(%q) = %s, big.Rat says %v", s, a, want)
			}
		}

		if a, err := ParseJSONNumber([]byte(s)); err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Err == nil {
				t.Fatalf("ParseJSONNumber(%q) error %v is not a *ParseError with a sentinel", s, err)
			}
		} else {
			checkValid(t, "ParseJSONNumber", s, a)
			// Accepted input must be valid JSON and agree with an exact
			// decoding of it.
			if !json.Valid([]byte(s)) {
				t.Fatalf("ParseJSONNumber accepted invalid JSON %q", s)
			}
			text := strings.Trim(string(bytes.TrimSpace([]byte(s))), `"`)
			want, ok := new(big.Rat).SetString(text)
			if !ok || want.Cmp(a.rat()) != 0 {
				t.Fatalf("ParseJSONNumber(%q) = %s, big.Rat says %v", s, a, want)
			}
		}
	})
}

// checkValid checks the invariants of a successfully parsed amount.
func checkValid(t *testing.T, fn, in string, a Amount) {
	t.Helper()
	str := a.String()
	b, err := ParseAmount(str)
	if err != nil {
		t.Fatalf("%s(%q) = %s, which ParseAmount rejects: %v", fn, in, str, err)
	}
	if b.Cmp(a) != 0 || b.String() != str || b.Scale() != a.Scale() {
		t.Fatalf("%s(%q) = %s, round trip gives %s", fn, in, str, b)
	}
	if a.Scale() < 0 || a.Scale() > MaxFractionDigits {
		t.Fatalf("%s(%q) scale %d out of range", fn, in, a.Scale())
	}
	if a.int().Sign() < 0 {
		t.Fatalf("%s(%q) = %s is negative", fn, in, str)
	}
	if a.scale > 0 && new(big.Int).Rem(a.int(), bigTen).Sign() == 0 {
		t.Fatalf("%s(%q) is not normalized: unscaled %s scale %d", fn, in, a.int(), a.scale)
	}
	j, err := a.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON(%s): %v", str, err)
	}
	c, err := ParseJSONNumber(j)
	if err != nil || c.Cmp(a) != 0 {
		t.Fatalf("MarshalJSON(%s) = %s does not round trip: %s, %v", str, j, c, err)
	}
	fixed := a.StringFixed(MaxFractionDigits)
	if d, err := ParseAmount(fixed); err != nil || d.Cmp(a) != 0 {
		t.Fatalf("StringFixed(%d) of %s = %q does not round trip: %v", MaxFractionDigits, str, fixed, err)
	}
}
