// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package credentials

import (
	"reflect"
	"testing"
	"time"
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
