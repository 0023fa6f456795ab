// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package money implements exact, non-negative decimal amounts, the ISO 4217
// currency table and fee computation used by Paygate.
//
// Money is never represented as a floating-point number: amounts are parsed
// from decimal text (Kubernetes custom resources) or from raw JSON tokens
// (REST API) straight into an arbitrary-precision integer and a decimal scale.
package money

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Parsing limits.
const (
	// MaxIntegerDigits is the maximum number of digits before the decimal
	// point of a parsed amount.
	MaxIntegerDigits = 20
	// MaxFractionDigits is the maximum number of digits after the decimal
	// point of a parsed amount.
	MaxFractionDigits = 9
	// MaxJSONExponent is the maximum magnitude of the exponent of a JSON
	// number accepted by ParseJSONNumber.
	MaxJSONExponent = 30

	// maxJSONMantissaDigits bounds the work done on a JSON number's digits
	// before its exponent is applied.
	maxJSONMantissaDigits = 64
	// maxErrorInput bounds how much of the input is echoed in a ParseError.
	maxErrorInput = 64
)

// Sentinel errors wrapped by the errors of this package. Their text is a
// predicate that can follow a field name in a user-facing message, e.g.
// "amount must be a decimal number".
var (
	// ErrSyntax reports input that is not a (supported) decimal number.
	ErrSyntax = errors.New("must be a decimal number")
	// ErrNegative reports a negative amount or a subtraction that would
	// produce one.
	ErrNegative = errors.New("must not be negative")
	// ErrTooLarge reports an amount with too many integer digits.
	ErrTooLarge = errors.New("is too large")
	// ErrTooPrecise reports an amount with too many decimal places.
	ErrTooPrecise = errors.New("has too many decimal places")
)

// ParseError is returned by ParseAmount, ParseJSONNumber and
// Amount.UnmarshalJSON. It unwraps to one of ErrSyntax, ErrNegative,
// ErrTooLarge or ErrTooPrecise.
type ParseError struct {
	// Input is the rejected input, truncated if it is long.
	Input string
	// Err is the sentinel error describing the kind of failure.
	Err error
	// Detail optionally explains the failure, e.g.
	// "exponent notation such as 1e3 is not allowed".
	Detail string
}

// Error returns e.g.
// `money: amount "1e3" must be a decimal number: exponent notation such as 1e3 is not allowed`.
func (e *ParseError) Error() string {
	return "money: amount " + strconv.Quote(e.Input) + " " + e.Message()
}

// Message returns the error without the input, suitable for showing next to
// a form or API field, e.g. "must be a decimal number: spaces are not allowed".
func (e *ParseError) Message() string {
	msg := "is invalid"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns the sentinel error.
func (e *ParseError) Unwrap() error { return e.Err }

func newParseError(input string, err error, detail string) *ParseError {
	if len(input) > maxErrorInput {
		input = input[:maxErrorInput] + "..."
	}
	return &ParseError{Input: input, Err: err, Detail: detail}
}

// Amount is an exact, non-negative decimal number.
//
// The zero value is 0. Amounts are immutable and safe to copy and to share
// between goroutines. Because Amount holds a pointer, compare amounts with
// Cmp or Equal, never with ==.
type Amount struct {
	// unscaled is the value multiplied by 10^scale. nil means zero. It is
	// never mutated after the Amount is constructed.
	unscaled *big.Int
	// scale is the number of fractional digits. The representation is
	// normalized: scale is 0 or unscaled is not a multiple of 10.
	scale int32
}

var (
	bigZero = new(big.Int)
	bigTen  = big.NewInt(10)
)

// pow10 returns a new *big.Int equal to 10^n (n >= 0).
func pow10(n int32) *big.Int {
	return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil)
}

// normalize builds an Amount from u*10^-scale, taking ownership of u and
// removing trailing fractional zeros.
func normalize(u *big.Int, scale int32) Amount {
	if u.Sign() == 0 {
		return Amount{}
	}
	var q, r big.Int
	for scale > 0 {
		q.QuoRem(u, bigTen, &r)
		if r.Sign() != 0 {
			break
		}
		u = new(big.Int).Set(&q)
		scale--
	}
	return Amount{unscaled: u, scale: scale}
}

// fromDigits builds an Amount from an ASCII digit string and the number of
// those digits that are fractional.
func fromDigits(digits string, scale int) Amount {
	for scale > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		scale--
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return Amount{}
	}
	u, ok := new(big.Int).SetString(digits, 10)
	if !ok { // unreachable: callers pass ASCII digits only
		return Amount{}
	}
	return Amount{unscaled: u, scale: int32(scale)}
}

// int returns the unscaled value. The result must not be modified.
func (a Amount) int() *big.Int {
	if a.unscaled == nil {
		return bigZero
	}
	return a.unscaled
}

// MustParseAmount is like ParseAmount but panics if s is not a valid amount.
// It is intended for tests and package-level constants.
func MustParseAmount(s string) Amount {
	a, err := ParseAmount(s)
	if err != nil {
		panic(err)
	}
	return a
}

// ParseAmount parses a plain, non-negative decimal number such as "1500",
// "1500.0", "1500.50" or "0.5".
//
// The syntax is digits, optionally followed by a '.' and more digits. Signs,
// exponents ("1e3"), spaces, digit separators, "1.", ".5", "NaN" and "Inf" are
// rejected, as are more than MaxIntegerDigits digits before the point and more
// than MaxFractionDigits digits after it (counted as written, so leading and
// trailing zeros count). Leading zeros are accepted ("0100" is 100).
//
// Errors are of type *ParseError and wrap ErrSyntax, ErrNegative, ErrTooLarge
// or ErrTooPrecise.
func ParseAmount(s string) (Amount, error) {
	a, perr := parsePlain(s, s)
	if perr != nil {
		return Amount{}, perr
	}
	return a, nil
}

// parsePlain implements ParseAmount; input is echoed in errors.
func parsePlain(s, input string) (Amount, *ParseError) {
	syntax := func(detail string) (Amount, *ParseError) {
		return Amount{}, newParseError(input, ErrSyntax, detail)
	}
	if s == "" {
		return syntax("empty value")
	}
	body, neg := s, false
	switch s[0] {
	case '-':
		body, neg = s[1:], true
	case '+':
		return syntax("a leading '+' is not allowed")
	}
	dot := -1
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case '0' <= c && c <= '9':
		case c == '.':
			if dot >= 0 {
				return syntax("more than one decimal point")
			}
			dot = i
		case (c == 'e' || c == 'E') && i > 0:
			return syntax("exponent notation such as 1e3 is not allowed")
		case c == ',' || c == '_' || c == '\'':
			return syntax("digit separators are not allowed")
		case c == '-' || c == '+':
			return syntax(fmt.Sprintf("unexpected sign %q", c))
		default:
			r, _ := utf8.DecodeRuneInString(body[i:])
			if unicode.IsSpace(r) {
				return syntax("spaces are not allowed")
			}
			return syntax(fmt.Sprintf("unexpected character %q", r))
		}
		i++
	}
	if body == "" {
		return syntax("missing digits")
	}
	intDigits, fracDigits := body, ""
	if dot >= 0 {
		intDigits, fracDigits = body[:dot], body[dot+1:]
		if intDigits == "" {
			return syntax("a digit is required before the decimal point (write 0.5, not .5)")
		}
		if fracDigits == "" {
			return syntax("a digit is required after the decimal point (write 1 or 1.0, not 1.)")
		}
	}
	if neg {
		return Amount{}, newParseError(input, ErrNegative, "")
	}
	if len(intDigits) > MaxIntegerDigits {
		return Amount{}, newParseError(input, ErrTooLarge,
			fmt.Sprintf("at most %d digits are allowed before the decimal point", MaxIntegerDigits))
	}
	if len(fracDigits) > MaxFractionDigits {
		return Amount{}, newParseError(input, ErrTooPrecise,
			fmt.Sprintf("at most %d digits are allowed after the decimal point", MaxFractionDigits))
	}
	return fromDigits(intDigits+fracDigits, len(fracDigits)), nil
}

// ParseJSONNumber parses a raw JSON value, as held by a json.RawMessage or
// json.Number or passed to UnmarshalJSON, without converting it to float64.
//
// Two forms are accepted:
//
//   - A JSON number such as 1500, 1500.00 or 1.5e3. Exponents are applied
//     exactly (1.5e3 is 1500, 15e-1 is 1.5) and may not exceed
//     MaxJSONExponent in magnitude. The exact value may have at most
//     MaxIntegerDigits integer digits and at most MaxFractionDigits
//     significant fractional digits; trailing zeros are not significant here,
//     so 1500.0000000000 is accepted.
//   - A JSON string holding a plain decimal accepted by ParseAmount, e.g.
//     "1500.00". Escape sequences are not accepted inside the string.
//
// Surrounding JSON whitespace is ignored. Negative numbers (including -0),
// true, false, null, objects and arrays are rejected. Errors are of type
// *ParseError and wrap ErrSyntax, ErrNegative, ErrTooLarge or ErrTooPrecise.
func ParseJSONNumber(raw []byte) (Amount, error) {
	input := string(bytes.Trim(raw, " \t\r\n"))
	var (
		a    Amount
		perr *ParseError
	)
	switch {
	case input == "":
		perr = newParseError(input, ErrSyntax, "empty JSON value")
	case input[0] == '"':
		if len(input) < 2 || input[len(input)-1] != '"' {
			perr = newParseError(input, ErrSyntax, "unterminated JSON string")
		} else {
			a, perr = parsePlain(input[1:len(input)-1], input)
		}
	case input == "true" || input == "false":
		perr = newParseError(input, ErrSyntax, "got a JSON boolean")
	case input == "null":
		perr = newParseError(input, ErrSyntax, "got JSON null")
	case input[0] == '{':
		perr = newParseError(input, ErrSyntax, "got a JSON object")
	case input[0] == '[':
		perr = newParseError(input, ErrSyntax, "got a JSON array")
	default:
		a, perr = parseJSONNum(input)
	}
	if perr != nil {
		return Amount{}, perr
	}
	return a, nil
}

// parseJSONNum parses s according to the JSON number grammar (RFC 8259,
// section 6) and converts it exactly.
func parseJSONNum(s string) (Amount, *ParseError) {
	syntax := func(detail string) (Amount, *ParseError) {
		return Amount{}, newParseError(s, ErrSyntax, detail)
	}
	isDigit := func(i int) bool { return i < len(s) && '0' <= s[i] && s[i] <= '9' }

	i, neg := 0, false
	if s[0] == '-' {
		i, neg = 1, true
	}
	start := i
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case isDigit(i):
		for isDigit(i) {
			i++
		}
	case i < len(s) && s[i] == '+':
		return syntax("a leading '+' is not allowed")
	case i < len(s) && s[i] == '.':
		return syntax("a digit is required before the decimal point (write 0.5, not .5)")
	case i == len(s):
		return syntax("missing digits")
	default:
		r, _ := utf8.DecodeRuneInString(s[i:])
		return syntax(fmt.Sprintf("unexpected character %q", r))
	}
	intDigits := s[start:i]
	fracDigits := ""
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for isDigit(i) {
			i++
		}
		if i == fs {
			return syntax("a digit is required after the decimal point")
		}
		fracDigits = s[fs:i]
	}
	exp, expErr := 0, error(nil)
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		es := i
		for isDigit(i) {
			i++
		}
		if i == es {
			return syntax("missing exponent digits")
		}
		ed := strings.TrimLeft(s[es:i], "0")
		if len(ed) > 2 {
			exp = MaxJSONExponent + 1 // definitely out of range
		} else if ed != "" {
			exp, _ = strconv.Atoi(ed) // at most two ASCII digits
		}
		if exp > MaxJSONExponent {
			expErr = ErrTooLarge
			if expNeg {
				expErr = ErrTooPrecise
			}
		}
		if expNeg {
			exp = -exp
		}
	}
	if i < len(s) {
		if intDigits == "0" && isDigit(i) {
			return syntax("leading zeros are not allowed in JSON numbers")
		}
		r, _ := utf8.DecodeRuneInString(s[i:])
		return syntax(fmt.Sprintf("unexpected character %q", r))
	}
	if neg {
		return Amount{}, newParseError(s, ErrNegative, "")
	}
	if expErr != nil {
		return Amount{}, newParseError(s, expErr,
			fmt.Sprintf("the exponent must be between -%d and %d", MaxJSONExponent, MaxJSONExponent))
	}
	if len(intDigits)+len(fracDigits) > maxJSONMantissaDigits {
		err := ErrTooPrecise
		if len(intDigits) > maxJSONMantissaDigits/2 {
			err = ErrTooLarge
		}
		return Amount{}, newParseError(s, err,
			fmt.Sprintf("at most %d digits are allowed", maxJSONMantissaDigits))
	}

	// value = digits * 10^shift
	digits := strings.TrimLeft(intDigits+fracDigits, "0")
	shift := exp - len(fracDigits)
	if digits == "" {
		return Amount{}, nil
	}
	trimmed := strings.TrimRight(digits, "0")
	shift += len(digits) - len(trimmed)
	digits = trimmed
	scale := 0
	if shift >= 0 {
		if len(digits)+shift > MaxIntegerDigits {
			return Amount{}, newParseError(s, ErrTooLarge,
				fmt.Sprintf("at most %d integer digits are allowed", MaxIntegerDigits))
		}
		digits += strings.Repeat("0", shift)
	} else {
		scale = -shift
		if scale > MaxFractionDigits {
			return Amount{}, newParseError(s, ErrTooPrecise,
				fmt.Sprintf("at most %d decimal places are allowed", MaxFractionDigits))
		}
		if len(digits)-scale > MaxIntegerDigits {
			return Amount{}, newParseError(s, ErrTooLarge,
				fmt.Sprintf("at most %d integer digits are allowed", MaxIntegerDigits))
		}
	}
	return fromDigits(digits, scale), nil
}

// Scale returns the number of significant fractional digits of a, ignoring
// trailing zeros: "1500.00" has scale 0 and "1500.50" has scale 1.
func (a Amount) Scale() int32 { return a.scale }

// IsZero reports whether a is 0. The zero value of Amount is 0.
func (a Amount) IsZero() bool { return a.int().Sign() == 0 }

// String returns the minimal decimal representation of a, without trailing
// fractional zeros or exponent: "1500", "1500.5", "0.05".
func (a Amount) String() string { return formatUnscaled(a.int(), a.scale) }

// StringFixed returns a with exactly scale fractional digits, e.g. "1500.50"
// for scale 2 and "1500" for scale 0. A negative scale is treated as 0. If a
// has more fractional digits than scale, it is rounded half-up; validate
// amounts with ValidateForCurrency first where rounding is not acceptable.
func (a Amount) StringFixed(scale int32) string {
	scale = max(scale, 0)
	r := a.round(scale)
	u := r.int()
	if r.scale < scale {
		u = new(big.Int).Mul(u, pow10(scale-r.scale))
	}
	return formatUnscaled(u, scale)
}

// JSONNumber returns a.StringFixed(scale) as a json.Number, so that
// encoding/json writes it as a JSON number with exactly scale decimals,
// e.g. 1500.50.
func (a Amount) JSONNumber(scale int32) json.Number {
	return json.Number(a.StringFixed(scale))
}

// formatUnscaled formats the non-negative u*10^-scale with exactly scale
// fractional digits.
func formatUnscaled(u *big.Int, scale int32) string {
	digits := u.String()
	if scale <= 0 {
		return digits
	}
	if n := int(scale) + 1 - len(digits); n > 0 {
		digits = strings.Repeat("0", n) + digits
	}
	p := len(digits) - int(scale)
	return digits[:p] + "." + digits[p:]
}

// round returns a rounded half-up (away from zero) to at most scale
// fractional digits.
func (a Amount) round(scale int32) Amount {
	if a.scale <= scale {
		return a
	}
	return roundHalfUp(a.int(), a.scale, scale)
}

// roundHalfUp rounds the non-negative u*10^-from to to fractional digits,
// rounding halves up.
func roundHalfUp(u *big.Int, from, to int32) Amount {
	if from <= to {
		return normalize(new(big.Int).Mul(u, pow10(to-from)), to)
	}
	d := pow10(from - to)
	q, r := new(big.Int).QuoRem(u, d, new(big.Int))
	if r.Lsh(r, 1).Cmp(d) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	return normalize(q, to)
}

// align returns the unscaled values of a and b at their common scale. The
// results must not be modified.
func align(a, b Amount) (x, y *big.Int, scale int32) {
	x, y, scale = a.int(), b.int(), max(a.scale, b.scale)
	if a.scale < scale {
		x = new(big.Int).Mul(x, pow10(scale-a.scale))
	}
	if b.scale < scale {
		y = new(big.Int).Mul(y, pow10(scale-b.scale))
	}
	return x, y, scale
}

// Cmp compares a and b and returns -1 if a < b, 0 if a == b and +1 if a > b.
func (a Amount) Cmp(b Amount) int {
	x, y, _ := align(a, b)
	return x.Cmp(y)
}

// Equal reports whether a and b are numerically equal.
func (a Amount) Equal(b Amount) bool { return a.Cmp(b) == 0 }

// Add returns a + b exactly.
func (a Amount) Add(b Amount) Amount {
	x, y, scale := align(a, b)
	return normalize(new(big.Int).Add(x, y), scale)
}

// Sub returns a - b exactly. It returns an error wrapping ErrNegative if b is
// greater than a, since amounts cannot be negative.
func (a Amount) Sub(b Amount) (Amount, error) {
	x, y, scale := align(a, b)
	if x.Cmp(y) < 0 {
		return Amount{}, fmt.Errorf("money: %s - %s: result %w", a, b, ErrNegative)
	}
	return normalize(new(big.Int).Sub(x, y), scale), nil
}

// MarshalJSON encodes a as a JSON number (not a string) in its minimal
// representation, e.g. 1500.5. Use JSONNumber for a fixed number of decimals.
func (a Amount) MarshalJSON() ([]byte, error) {
	return []byte(a.String()), nil
}

// UnmarshalJSON decodes a JSON number or a JSON string holding a decimal, as
// described in ParseJSONNumber. JSON null is rejected; use *Amount for an
// optional field (encoding/json then sets the pointer to nil for null).
func (a *Amount) UnmarshalJSON(data []byte) error {
	v, err := ParseJSONNumber(data)
	if err != nil {
		return err
	}
	*a = v
	return nil
}
