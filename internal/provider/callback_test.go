// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

func TestParseCallback(t *testing.T) {
	secret := []byte("callback-secret-value")
	now := time.Unix(1_750_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	body := []byte(`{"reference":"pay_1","provider_reference":"PR9","status":"SUCCESS","code":"","message":"ok","kind":"collection"}`)

	t.Run("valid", func(t *testing.T) {
		cb, err := ParseCallback(secret, SignCallback(secret, ts, body), ts, body, now, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		want := Callback{Reference: "pay_1", ProviderReference: "PR9", Status: StatusSuccess, Message: "ok", Kind: CallbackKindCollection}
		if cb != want {
			t.Fatalf("got %+v, want %+v", cb, want)
		}
	})

	t.Run("uppercase hex accepted", func(t *testing.T) {
		sig := strings.ToUpper(SignCallback(secret, ts, body))
		if _, err := ParseCallback(secret, sig, ts, body, now, time.Minute); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("statuses and kinds", func(t *testing.T) {
		for _, tc := range []struct {
			body string
			want Callback
		}{
			{`{"reference":"r","status":"INPROGRESS","kind":"collection"}`, Callback{Reference: "r", Status: StatusPending, Kind: "collection"}},
			{`{"reference":"r","status":"AMBIGUOUS","kind":"disbursement"}`, Callback{Reference: "r", Status: StatusAmbiguous, Kind: "disbursement"}},
			{`{"reference":"r","status":"FAILED","code":"CUSTOMER_CANCELLED","kind":"collection"}`, Callback{Reference: "r", Status: StatusFailed, Code: paygatev1.FailureCustomerCancelled, Kind: "collection"}},
			{`{"reference":"r","status":"FAILED","kind":"disbursement"}`, Callback{Reference: "r", Status: StatusFailed, Code: paygatev1.FailureProviderError, Kind: "disbursement"}},
			{`{"reference":"shop.rf-1.r","provider_reference":"RF9","status":"SUCCESS","kind":"refund"}`, Callback{Reference: "shop.rf-1.r", ProviderReference: "RF9", Status: StatusSuccess, Kind: CallbackKindRefund}},
			{`{"reference":"shop.rf-1.r","status":"INPROGRESS","kind":"refund"}`, Callback{Reference: "shop.rf-1.r", Status: StatusPending, Kind: CallbackKindRefund}},
			{`{"reference":"shop.rf-1.r","status":"FAILED","kind":"refund"}`, Callback{Reference: "shop.rf-1.r", Status: StatusFailed, Code: paygatev1.FailureProviderError, Kind: CallbackKindRefund}},
		} {
			b := []byte(tc.body)
			cb, err := ParseCallback(secret, SignCallback(secret, ts, b), ts, b, now, time.Minute)
			if err != nil || cb != tc.want {
				t.Fatalf("%s: got %+v, %v; want %+v", tc.body, cb, err, tc.want)
			}
		}
	})

	// Each case must fail with the given sentinel, without leaking the secret.
	sig := SignCallback(secret, ts, body)
	signed := func(b string) (string, []byte) { return SignCallback(secret, ts, []byte(b)), []byte(b) }
	type input struct {
		secret   []byte
		sig, ts  string
		body     []byte
		now      time.Time
		maxAge   time.Duration
		sentinel error
	}
	cases := map[string]input{
		"tampered body":     {secret, sig, ts, []byte(strings.Replace(string(body), "SUCCESS", "FAILED", 1)), now, time.Minute, ErrCallbackSignature},
		"appended body":     {secret, sig, ts, append(append([]byte{}, body...), ' '), now, time.Minute, ErrCallbackSignature},
		"wrong secret":      {[]byte("another-secret"), sig, ts, body, now, time.Minute, ErrCallbackSignature},
		"empty secret":      {nil, SignCallback(nil, ts, body), ts, body, now, time.Minute, ErrCallbackSignature},
		"missing signature": {secret, "", ts, body, now, time.Minute, ErrCallbackSignature},
		"non-hex signature": {secret, "zz" + sig[2:], ts, body, now, time.Minute, ErrCallbackSignature},
		"short signature":   {secret, sig[:32], ts, body, now, time.Minute, ErrCallbackSignature},
		"sha256= prefix":    {secret, "sha256=" + sig, ts, body, now, time.Minute, ErrCallbackSignature},
		// The timestamp is signed: replaying the body with a fresh timestamp breaks the signature.
		"timestamp swapped": {secret, sig, strconv.FormatInt(now.Unix()+1, 10), body, now, time.Minute, ErrCallbackSignature},
		"missing timestamp": {secret, sig, "", body, now, time.Minute, ErrCallbackTimestamp},
		"old timestamp":     {secret, SignCallback(secret, "1749999000", body), "1749999000", body, now, time.Minute, ErrCallbackTimestamp},
		"future timestamp":  {secret, SignCallback(secret, "1750000061", body), "1750000061", body, now, time.Minute, ErrCallbackTimestamp},
		"old, default max":  {secret, SignCallback(secret, "1749999000", body), "1749999000", body, now, 0, ErrCallbackTimestamp},
		"fractional ts":     {secret, SignCallback(secret, ts+".5", body), ts + ".5", body, now, time.Minute, ErrCallbackTimestamp},
		"signed ts":         {secret, SignCallback(secret, "+"+ts, body), "+" + ts, body, now, time.Minute, ErrCallbackTimestamp},
		"negative ts":       {secret, SignCallback(secret, "-1", body), "-1", body, now, time.Minute, ErrCallbackTimestamp},
		"huge ts":           {secret, SignCallback(secret, "99999999999999999999", body), "99999999999999999999", body, now, time.Minute, ErrCallbackTimestamp},
	}
	for name, b := range map[string]string{
		"malformed JSON":  `{"reference":"r","status":`,
		"not an object":   `["r"]`,
		"trailing data":   `{"reference":"r","status":"SUCCESS","kind":"collection"} {}`,
		"empty reference": `{"reference":"","status":"SUCCESS","kind":"collection"}`,
		"unknown status":  `{"reference":"r","status":"DONE","kind":"collection"}`,
		"PENDING status":  `{"reference":"r","status":"PENDING","kind":"collection"}`,
		"missing status":  `{"reference":"r","kind":"collection"}`,
		"unknown kind":    `{"reference":"r","status":"SUCCESS","kind":"reversal"}`,
		"kind's case":     `{"reference":"r","status":"SUCCESS","kind":"REFUND"}`,
		"missing kind":    `{"reference":"r","status":"SUCCESS"}`,
		"oversized":       `{"reference":"r","status":"SUCCESS","kind":"collection","message":"` + strings.Repeat("x", MaxCallbackBody) + `"}`,
	} {
		s, bb := signed(b)
		cases[name] = input{secret, s, ts, bb, now, time.Minute, ErrCallbackPayload}
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			cb, err := ParseCallback(in.secret, in.sig, in.ts, in.body, in.now, in.maxAge)
			if err == nil {
				t.Fatalf("accepted: %+v", cb)
			}
			if !errors.Is(err, in.sentinel) {
				t.Fatalf("err = %v, want %v", err, in.sentinel)
			}
			if cb != (Callback{}) {
				t.Fatalf("an error came with a callback %+v", cb)
			}
			if strings.Contains(err.Error(), string(secret)) {
				t.Fatalf("error leaks the secret: %v", err)
			}
		})
	}

	t.Run("within window either side", func(t *testing.T) {
		for _, d := range []time.Duration{-time.Minute, time.Minute} {
			ts := strconv.FormatInt(now.Add(d).Unix(), 10)
			if _, err := ParseCallback(secret, SignCallback(secret, ts, body), ts, body, now, time.Minute); err != nil {
				t.Fatalf("skew %v: %v", d, err)
			}
		}
	})
}

func TestSignCallbackKnownVector(t *testing.T) {
	// printf '1.{}' | openssl dgst -sha256 -hmac key
	const want = "1ba6b8171186efc613e8bcc0cbdab2748f24984d7c5a84faa2637afa0e40d224"
	if got := SignCallback([]byte("key"), "1", []byte("{}")); got != want {
		t.Fatalf("SignCallback = %s, want %s", got, want)
	}
}
