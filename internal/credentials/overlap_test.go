// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package credentials

import (
	"reflect"
	"testing"
	"time"

	paygatev1 "github.com/paygate/paygate/api/v1alpha1"
)

// TestCheckDuringAnOverlap: the current key signs with the current secret; the replaced key with
// its own secret until its expiry, and not from that instant; anything else matches nothing.
func TestCheckDuringAnOverlap(t *testing.T) {
	expires := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	set := Set{BusinessID: "test_mk_x", APIKey: "test_pk_new", APISecret: "test_sk_new",
		Previous: &Previous{APIKey: "test_pk_old", APISecret: "test_sk_old", Expires: expires}}
	for _, tc := range []struct {
		name       string
		set        Set
		key        string
		now        time.Time
		want       Match
		wantSecret string
	}{
		{"the current key", set, "test_pk_new", expires.Add(-time.Hour), MatchCurrent, "test_sk_new"},
		{"the current key after the overlap", set, "test_pk_new", expires.Add(time.Hour), MatchCurrent, "test_sk_new"},
		{"the old key during the overlap", set, "test_pk_old", expires.Add(-time.Second), MatchPrevious, "test_sk_old"},
		{"the old key at the overlap's end", set, "test_pk_old", expires, NoMatch, ""},
		{"the old key after the overlap", set, "test_pk_old", expires.Add(time.Hour), NoMatch, ""},
		{"another key", set, "test_pk_other", expires.Add(-time.Hour), NoMatch, ""},
		{"an empty key", Set{APIKey: "test_pk_new", APISecret: "s"}, "", expires, NoMatch, ""},
		{"no overlap", Set{APIKey: "test_pk_new", APISecret: "test_sk_new"}, "test_pk_old", expires.Add(-time.Hour), NoMatch, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, secret := tc.set.Check(tc.key, tc.now)
			if got != tc.want || secret != tc.wantSecret {
				t.Errorf("Check(%q) = %v, %q; want %v, %q", tc.key, got, secret, tc.want, tc.wantSecret)
			}
		})
	}
}

// TestPreviousCredentialsInSecretData: a set with previous credentials survives its Secret data;
// previous credentials missing a value or with an unreadable expiry are none, and the current set
// stays complete.
func TestPreviousCredentialsInSecretData(t *testing.T) {
	set := Set{BusinessID: "test_mk_x", APIKey: "test_pk_new", APISecret: "test_sk_new",
		Previous: &Previous{APIKey: "test_pk_old", APISecret: "test_sk_old", Expires: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)}}
	got, ok := SetFromData(set.Data())
	if !ok || !reflect.DeepEqual(got, set) {
		t.Fatalf("round trip: %+v (complete %v), want %+v", got, ok, set)
	}
	for _, broken := range []func(map[string][]byte){
		func(d map[string][]byte) { delete(d, KeyPreviousAPISecret) },
		func(d map[string][]byte) { delete(d, KeyPreviousAPIKey) },
		func(d map[string][]byte) { d[KeyPreviousExpires] = []byte("tomorrow") },
		func(d map[string][]byte) { delete(d, KeyPreviousExpires) },
	} {
		data := set.Data()
		broken(data)
		got, ok := SetFromData(data)
		if !ok || got.Previous != nil || got.APIKey != set.APIKey {
			t.Errorf("from %v: %+v (complete %v); want the current set, no previous", data, got, ok)
		}
	}
	if _, has := (Set{BusinessID: "b", APIKey: "k", APISecret: "s"}).Data()[KeyPreviousAPIKey]; has {
		t.Error("a set without previous credentials wrote previous keys")
	}
}

func TestParseOverlap(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", DefaultOverlap, true},
		{"0s", 0, true},
		{"90m", 90 * time.Minute, true},
		{"168h", MaxOverlap, true},
		{"168h1s", 0, false},
		{"-1h", 0, false},
		{"24", 0, false},
		{"a day", 0, false},
	} {
		got, err := ParseOverlap(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseOverlap(%q) = %s, %v; want %s, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestRotatedKeepsTheReplacedKeyForTheOverlap(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 500, time.UTC)
	current, err := NewSet("test_mk_x", paygatev1.EnvironmentSandbox)
	if err != nil {
		t.Fatal(err)
	}
	next, err := current.Rotated(paygatev1.EnvironmentSandbox, 2*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if next.BusinessID != current.BusinessID || next.APIKey == current.APIKey || next.Previous == nil ||
		next.Previous.APIKey != current.APIKey || !next.Previous.Expires.Equal(now.Add(2*time.Hour).Truncate(time.Second)) {
		t.Fatalf("rotated %+v from %+v", next, current)
	}
	if m, secret := next.Check(current.APIKey, now); m != MatchPrevious || secret != current.APISecret {
		t.Fatalf("the replaced key during the overlap: %v", m)
	}
	at, err := current.Rotated(paygatev1.EnvironmentSandbox, 0, now)
	if err != nil || at.Previous != nil {
		t.Fatalf("no overlap: %+v, %v", at, err)
	}
}

func TestPendingSigningSecret(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 900, time.UTC)
	data := map[string][]byte{KeySigningSecret: []byte("whsec_old")}
	if _, ok := ActivatedSigningSecret(data); ok {
		t.Fatal("activated with nothing pending")
	}
	prepared, since, err := WithPendingSigningSecret(data, now)
	if err != nil {
		t.Fatal(err)
	}
	pending := string(prepared[KeyPendingSigningSecret])
	if string(prepared[KeySigningSecret]) != "whsec_old" || len(pending) < 20 || since != "2026-11-27T10:00:00Z" || len(data) != 1 {
		t.Fatalf("prepared %q since %s; the input changed: %v", prepared, since, len(data) != 1)
	}
	active, ok := ActivatedSigningSecret(prepared)
	if !ok || len(active) != 1 || string(active[KeySigningSecret]) != pending {
		t.Fatalf("activated %q", active)
	}
}
