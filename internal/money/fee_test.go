// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package money

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
)

func mustCurrency(t testing.TB, code string) Currency {
	t.Helper()
	c, ok := LookupCurrency(code)
	if !ok {
		t.Fatalf("currency %s not found", code)
	}
	return c
}

func TestComputeFee(t *testing.T) {
	tests := []struct {
		name     string
		currency string
		amount   string
		percent  string
		fixed    string
		wantFee  string // StringFixed(currency scale)
		wantNet  string
	}{
		// UGX, scale 0.
		{"UGX below half", "UGX", "1001", "2.5", "0", "25", "976"},           // 25.025
		{"UGX exact half rounds up", "UGX", "1020", "2.5", "0", "26", "994"}, // 25.5
		{"UGX 0.5 rounds to 1", "UGX", "20", "2.5", "0", "1", "19"},          // 0.5
		{"UGX 0.475 rounds to 0", "UGX", "19", "2.5", "0", "0", "19"},
		{"UGX fixed only", "UGX", "1000", "0", "50", "50", "950"},
		{"UGX percent plus fixed", "UGX", "1020", "2.5", "100", "126", "894"}, // 125.5
		{"UGX fee equals amount", "UGX", "100", "100", "0", "100", "0"},
		{"UGX fixed equals amount", "UGX", "100", "0", "100", "100", "0"},
		{"UGX half of 1", "UGX", "1", "50", "0", "1", "0"},
		// TZS, scale 2.
		{"TZS below half", "TZS", "10.10", "2.5", "0", "0.25", "9.85"},  // 0.2525
		{"TZS above half", "TZS", "10.30", "2.5", "0", "0.26", "10.04"}, // 0.2575
		{"TZS exact half", "TZS", "10.20", "2.5", "0", "0.26", "9.94"},  // 0.255
		{"TZS half a cent", "TZS", "1", "0.5", "0", "0.01", "0.99"},     // 0.005
		{"TZS no double rounding", "TZS", "100", "0.2549", "0", "0.25", "99.75"},
		{"TZS four-decimal percent", "TZS", "1000", "0.0125", "0", "0.13", "999.87"}, // 0.125
		{"TZS 1.25 percent plus fixed", "TZS", "1000", "1.25", "200", "212.50", "787.50"},
		{"TZS fixed with cents", "TZS", "10.10", "2.5", "0.10", "0.35", "9.75"}, // 0.3525
		{"TZS fixed plus half", "TZS", "10.20", "2.5", "1", "1.26", "8.94"},     // 1.255
		{"TZS zero fees", "TZS", "1500.50", "0", "0", "0.00", "1500.50"},
		{"TZS zero amount zero fees", "TZS", "0", "0", "0", "0.00", "0.00"},
		{"TZS zero amount percent only", "TZS", "0", "2.5", "0", "0.00", "0.00"},
		{"TZS tiny amount", "TZS", "0.01", "2.5", "0", "0.00", "0.01"},
		{"TZS large amount", "TZS", "99999999999999999999.99", "2.5", "0",
			"2500000000000000000.00", "97499999999999999999.99"}, // 2499999999999999999.99975
		// KWD, scale 3.
		{"KWD below half", "KWD", "1.001", "2.5", "0", "0.025", "0.976"}, // 0.025025
		{"KWD above half", "KWD", "1.1", "2.5", "0", "0.028", "1.072"},   // 0.0275
		{"KWD exact half", "KWD", "0.1", "0.5", "0", "0.001", "0.099"},   // 0.0005
		{"KWD just below half", "KWD", "0.099", "0.5", "0", "0.000", "0.099"},
		{"KWD percent plus fixed", "KWD", "250.5", "1.75", "0.150", "4.534", "245.966"}, // 4.53375
		// Other currencies.
		{"USD", "USD", "19.99", "2.9", "0.30", "0.88", "19.11"}, // 0.57971 + 0.30
		{"JPY", "JPY", "5000", "3.6", "0", "180", "4820"},
		{"BHD", "BHD", "12.345", "1", "0", "0.123", "12.222"}, // 0.12345
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustCurrency(t, tt.currency)
			amount := MustParseAmount(tt.amount)
			fees := FeeSchedule{Percent: MustParseAmount(tt.percent), Fixed: MustParseAmount(tt.fixed)}
			fee, net, err := ComputeFee(amount, fees, c)
			if err != nil {
				t.Fatalf("ComputeFee(%s %s, %s%% + %s) error: %v", tt.amount, c.Code, tt.percent, tt.fixed, err)
			}
			if got := fee.StringFixed(c.Scale); got != tt.wantFee {
				t.Errorf("fee = %s, want %s", got, tt.wantFee)
			}
			if got := net.StringFixed(c.Scale); got != tt.wantNet {
				t.Errorf("net = %s, want %s", got, tt.wantNet)
			}
			if fee.Scale() > c.Scale || net.Scale() > c.Scale {
				t.Errorf("fee %s or net %s has more than %d decimals", fee, net, c.Scale)
			}
			if sum := fee.Add(net); sum.Cmp(amount) != 0 {
				t.Errorf("fee + net = %s, want %s", sum, amount)
			}
		})
	}
}

func TestComputeFeeErrors(t *testing.T) {
	tests := []struct {
		name     string
		currency Currency
		amount   string
		percent  string
		fixed    string
		wantErr  error
		wantMsg  string // exact message, optional
	}{
		{"fixed fee exceeds amount", mustCurrency(t, "UGX"), "100", "0", "101", ErrFeeExceedsAmount,
			"money: fee would exceed the amount: fee 101 UGX, amount 100 UGX"},
		{"percent plus fixed exceeds amount", mustCurrency(t, "TZS"), "0.01", "100", "0.01", ErrFeeExceedsAmount,
			"money: fee would exceed the amount: fee 0.02 TZS, amount 0.01 TZS"},
		{"rounding pushes fee above amount", mustCurrency(t, "UGX"), "1", "50", "1", ErrFeeExceedsAmount, ""}, // 1.5 -> 2
		{"fixed fee on zero amount", mustCurrency(t, "KWD"), "0", "0", "0.001", ErrFeeExceedsAmount, ""},
		{"amount too precise", mustCurrency(t, "TZS"), "10.005", "2.5", "0", ErrTooPrecise,
			"money: amount 10.005: TZS allows at most 2 decimal places"},
		{"amount too precise for UGX", mustCurrency(t, "UGX"), "10.5", "2.5", "0", ErrTooPrecise, ""},
		{"percent too precise", mustCurrency(t, "TZS"), "100", "2.12345", "0", ErrInvalidFeeSchedule, ""},
		{"percent above 100", mustCurrency(t, "TZS"), "100", "100.01", "0", ErrInvalidFeeSchedule, ""},
		{"fixed too precise", mustCurrency(t, "UGX"), "100", "0", "0.5", ErrInvalidFeeSchedule, ""},
		{"zero currency", Currency{}, "100", "1", "0", ErrInvalidCurrency, ""},
		{"negative scale", Currency{Code: "XXX", Scale: -2}, "100", "1", "0", ErrInvalidCurrency, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fees := FeeSchedule{Percent: MustParseAmount(tt.percent), Fixed: MustParseAmount(tt.fixed)}
			fee, net, err := ComputeFee(MustParseAmount(tt.amount), fees, tt.currency)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ComputeFee() = %s, %s, %v; want error %v", fee, net, err, tt.wantErr)
			}
			if tt.wantMsg != "" && err.Error() != tt.wantMsg {
				t.Errorf("error = %q, want %q", err, tt.wantMsg)
			}
			if !fee.IsZero() || !net.IsZero() {
				t.Errorf("fee %s, net %s returned with an error, want zero", fee, net)
			}
		})
	}
	// Too-precise fixed fee also reports the currency rule.
	_, _, err := ComputeFee(MustParseAmount("100"), FeeSchedule{Fixed: MustParseAmount("0.5")}, mustCurrency(t, "UGX"))
	var se *ScaleError
	if !errors.As(err, &se) || !errors.Is(err, ErrTooPrecise) {
		t.Errorf("error %v does not carry a *ScaleError", err)
	}
}

// TestComputeFeeMatchesRat checks ComputeFee against an independent big.Rat
// computation over random inputs.
func TestComputeFeeMatchesRat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	half := big.NewRat(1, 2)
	for i := range 20000 {
		c := mustCurrency(t, []string{"UGX", "TZS", "KWD"}[i%3])
		unit := int64(1)
		for range c.Scale {
			unit *= 10
		}
		amount := decimal(rng.Int64N(1_000_000_000), c.Scale)
		percent := decimal(rng.Int64N(100*10_000+1), MaxPercentScale)
		if i%4 == 0 {
			percent = decimal(rng.Int64N(10*10_000+1), MaxPercentScale)
		}
		fixed := decimal(rng.Int64N(10*unit), c.Scale)
		if i%5 == 0 {
			fixed = Amount{}
		}

		exact := new(big.Rat).Mul(amount.rat(), percent.rat())
		exact.Quo(exact, big.NewRat(100, 1))
		exact.Add(exact, fixed.rat())
		// floor(exact * 10^scale + 1/2) / 10^scale
		scaled := new(big.Rat).Mul(exact, new(big.Rat).SetInt(pow10(c.Scale)))
		scaled.Add(scaled, half)
		q := new(big.Int).Quo(scaled.Num(), scaled.Denom())
		wantFee := new(big.Rat).SetFrac(q, pow10(c.Scale))

		fee, net, err := ComputeFee(amount, FeeSchedule{Percent: percent, Fixed: fixed}, c)
		label := fmt.Sprintf("ComputeFee(%s %s, %s%% + %s)", amount, c.Code, percent, fixed)
		if wantFee.Cmp(amount.rat()) > 0 {
			if !errors.Is(err, ErrFeeExceedsAmount) {
				t.Fatalf("%s = %s, %s, %v; want ErrFeeExceedsAmount", label, fee, net, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s error: %v", label, err)
		}
		if fee.rat().Cmp(wantFee) != 0 {
			t.Fatalf("%s fee = %s, want %s", label, fee, wantFee.FloatString(int(c.Scale)))
		}
		if fee.Add(net).Cmp(amount) != 0 || net.Scale() > c.Scale {
			t.Fatalf("%s: fee %s + net %s != amount", label, fee, net)
		}
	}
}

// decimal returns u*10^-scale.
func decimal(u int64, scale int32) Amount {
	return normalize(big.NewInt(u), scale)
}
