// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package clientip

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func mustPrefixes(t *testing.T, list string) []netip.Prefix {
	t.Helper()
	p, err := ParsePrefixes(list)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestClientIP(t *testing.T) {
	const proxies = "10.0.0.0/8, 192.168.1.1, fd00::/8"
	tests := []struct {
		name    string
		trusted string
		remote  string
		xff     []string // one element per header line; nil = no header
		want    string
	}{
		// No trusted proxies: X-Forwarded-For is ignored entirely.
		{"direct IPv4", "", "203.0.113.9:51234", nil, "203.0.113.9"},
		{"direct IPv6", "", "[2001:db8::9]:443", nil, "2001:db8::9"},
		{"no trusted proxies ignores XFF", "", "203.0.113.9:1", []string{"198.51.100.1"}, "203.0.113.9"},
		{"no trusted proxies ignores spoof of a proxy", "", "203.0.113.9:1", []string{"10.0.0.1"}, "203.0.113.9"},
		{"IPv4-mapped peer unmapped", "", "[::ffff:203.0.113.9]:80", nil, "203.0.113.9"},
		{"zone dropped", "", "[fe80::1%eth0]:80", nil, "fe80::1"},
		{"RemoteAddr without port", "", "203.0.113.9", nil, "203.0.113.9"},
		{"bracketed RemoteAddr without port", "", "[2001:db8::9]", nil, "2001:db8::9"},

		// Untrusted peer: XFF ignored even when trusted proxies are set.
		{"untrusted peer spoofs XFF", proxies, "203.0.113.9:1", []string{"198.51.100.1"}, "203.0.113.9"},
		{"untrusted peer claims to be a proxy chain", proxies, "203.0.113.9:1", []string{"1.1.1.1, 10.0.0.2"}, "203.0.113.9"},

		// Trusted peer.
		{"one proxy", proxies, "10.0.0.2:80", []string{"198.51.100.1"}, "198.51.100.1"},
		{"trusted peer without XFF is the client", proxies, "10.0.0.2:80", nil, "10.0.0.2"},
		{"trusted peer with empty XFF", proxies, "10.0.0.2:80", []string{""}, "10.0.0.2"},
		{"two trusted hops", proxies, "10.0.0.2:80", []string{"198.51.100.1, 10.1.1.1"}, "198.51.100.1"},
		{"client-supplied left entries ignored", proxies, "10.0.0.2:80", []string{"6.6.6.6, 198.51.100.1"}, "198.51.100.1"},
		{"spoofed trusted address on the left ignored", proxies, "10.0.0.2:80", []string{"10.9.9.9, 198.51.100.1"}, "198.51.100.1"},
		{"spoofed chain through trusted hops", proxies, "10.0.0.2:80", []string{"6.6.6.6, 198.51.100.1, 10.1.1.1, 192.168.1.1"}, "198.51.100.1"},
		{"multiple header lines read in order", proxies, "10.0.0.2:80", []string{"6.6.6.6", "198.51.100.1, 10.1.1.1"}, "198.51.100.1"},
		{"multiple lines, client on earlier line", proxies, "10.0.0.2:80", []string{"6.6.6.6, 198.51.100.1", "10.1.1.1"}, "198.51.100.1"},
		{"all hops trusted returns left-most", proxies, "10.0.0.2:80", []string{"10.3.3.3, 10.1.1.1"}, "10.3.3.3"},
		{"IPv6 client through IPv6 proxy", proxies, "[fd00::1]:443", []string{"2001:db8::77"}, "2001:db8::77"},
		{"mapped peer matches IPv4 prefix", proxies, "[::ffff:10.0.0.2]:80", []string{"198.51.100.1"}, "198.51.100.1"},
		{"mapped XFF entry unmapped and checked", proxies, "10.0.0.2:80", []string{"::ffff:198.51.100.1, ::ffff:10.1.1.1"}, "198.51.100.1"},
		{"entries with ports", proxies, "10.0.0.2:80", []string{"[2001:db8::5]:1234, 10.1.1.1:443"}, "2001:db8::5"},
		{"entry with port IPv4", proxies, "10.0.0.2:80", []string{"198.51.100.1:5555"}, "198.51.100.1"},
		{"extra spaces and tabs", proxies, "10.0.0.2:80", []string{"  198.51.100.1 ,\t10.1.1.1  "}, "198.51.100.1"},
		{"single IP proxy entry", proxies, "192.168.1.1:80", []string{"198.51.100.1"}, "198.51.100.1"},
		{"neighbour of single IP proxy not trusted", proxies, "192.168.1.2:80", []string{"198.51.100.1"}, "192.168.1.2"},

		// Malformed entries: stop and return the right-most address examined.
		{"malformed right-most entry", proxies, "10.0.0.2:80", []string{"198.51.100.1, garbage"}, "10.0.0.2"},
		{"malformed after trusted hop", proxies, "10.0.0.2:80", []string{"6.6.6.6, unknown, 10.1.1.1"}, "10.1.1.1"},
		{"empty entry stops the walk", proxies, "10.0.0.2:80", []string{"6.6.6.6,,10.1.1.1"}, "10.1.1.1"},
		{"trailing comma stops the walk", proxies, "10.0.0.2:80", []string{"6.6.6.6,"}, "10.0.0.2"},
		{"host name stops the walk", proxies, "10.0.0.2:80", []string{"6.6.6.6, evil.example"}, "10.0.0.2"},
		{"prefix instead of address", proxies, "10.0.0.2:80", []string{"6.6.6.6, 198.51.100.0/24"}, "10.0.0.2"},
		{"obfuscated RFC 7239 node", proxies, "10.0.0.2:80", []string{"_hidden"}, "10.0.0.2"},
		{"malformed on later line stops before earlier line", proxies, "10.0.0.2:80", []string{"6.6.6.6", "junk"}, "10.0.0.2"},
		{"empty later line stops", proxies, "10.0.0.2:80", []string{"6.6.6.6", ""}, "10.0.0.2"},
		{"malformed left of client not reached", proxies, "10.0.0.2:80", []string{"junk, 198.51.100.1"}, "198.51.100.1"},
		{"brackets without port", proxies, "10.0.0.2:80", []string{"[2001:db8::5]"}, "2001:db8::5"},
		{"bracketed IPv4 rejected", proxies, "10.0.0.2:80", []string{"[198.51.100.1]"}, "10.0.0.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Resolver{TrustedProxies: mustPrefixes(t, tt.trusted)}
			req := httptest.NewRequest(http.MethodGet, "/api/v1/payments", nil)
			req.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			got := r.ClientIP(req)
			if got.String() != tt.want {
				t.Errorf("ClientIP = %v, want %s", got, tt.want)
			}
			if got.Is4In6() || got.Zone() != "" {
				t.Errorf("ClientIP = %v is mapped or zoned", got)
			}
		})
	}
}

func TestClientIPInvalidPeer(t *testing.T) {
	r := Resolver{TrustedProxies: mustPrefixes(t, "0.0.0.0/0")}
	for _, remote := range []string{"", "@", "not-an-ip:80", "localhost:80", "[::1", "1.2.3.4:99999"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = remote
		req.Header.Set("X-Forwarded-For", "198.51.100.1")
		if got := r.ClientIP(req); got.IsValid() {
			t.Errorf("RemoteAddr %q: ClientIP = %v, want invalid", remote, got)
		}
	}
	if got := r.ClientIP(nil); got.IsValid() {
		t.Errorf("nil request: ClientIP = %v", got)
	}
	// A request without header map does not panic.
	req := &http.Request{RemoteAddr: "10.0.0.1:1"}
	if got := r.ClientIP(req); got.String() != "10.0.0.1" {
		t.Errorf("nil Header: ClientIP = %v", got)
	}
}

func TestClientIPLongHeader(t *testing.T) {
	// Thousands of client-written entries: only the right end is examined.
	r := Resolver{TrustedProxies: mustPrefixes(t, "10.0.0.0/8")}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "10.0.0.2:80"
	req.Header.Set("X-Forwarded-For", strings.Repeat("10.6.6.6, ", 5000)+"198.51.100.1, 10.0.0.3")
	if got := r.ClientIP(req); got.String() != "198.51.100.1" {
		t.Errorf("ClientIP = %v", got)
	}
	if n := testing.AllocsPerRun(100, func() { r.ClientIP(req) }); n != 0 {
		t.Errorf("ClientIP allocates %v times per call", n)
	}
}

func TestParsePrefixes(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"", nil, false},
		{" , ,", nil, false},
		{"10.0.0.0/8", []string{"10.0.0.0/8"}, false},
		{"10.0.0.0/8,172.16.0.0/12 , 192.168.0.0/16", []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"}, false},
		{"192.0.2.1", []string{"192.0.2.1/32"}, false},
		{"2001:db8::1", []string{"2001:db8::1/128"}, false},
		{"2001:db8::/32,", []string{"2001:db8::/32"}, false},
		{"10.1.2.3/8", []string{"10.0.0.0/8"}, false},             // masked
		{"::ffff:10.0.0.0/104", []string{"10.0.0.0/8"}, false},    // mapped prefix to IPv4
		{"::ffff:192.0.2.1", []string{"192.0.2.1/32"}, false},     // mapped address to IPv4
		{"fe80::1%eth0", []string{"fe80::1/128"}, false},          // zone dropped
		{"0.0.0.0/0, ::/0", []string{"0.0.0.0/0", "::/0"}, false}, // trust everything (explicit)
		{"10.0.0.0/33", nil, true},
		{"10.0.0.0/", nil, true},
		{"10.0.0", nil, true},
		{"proxy.internal", nil, true},
		{"10.0.0.0/8 172.16.0.0/12", nil, true}, // missing comma
		{"10.0.0.0/8;192.168.0.0/16", nil, true},
		{"fe80::/10%eth0", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePrefixes(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidPrefix) {
					t.Fatalf("ParsePrefixes(%q) error = %v, want ErrInvalidPrefix", tt.in, err)
				}
				if got != nil {
					t.Errorf("ParsePrefixes(%q) returned prefixes with an error", tt.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePrefixes(%q): %v", tt.in, err)
			}
			var gotS []string
			for _, p := range got {
				gotS = append(gotS, p.String())
			}
			if !reflect.DeepEqual(gotS, tt.want) {
				t.Errorf("ParsePrefixes(%q) = %v, want %v", tt.in, gotS, tt.want)
			}
		})
	}
	_, err := ParsePrefixes("10.0.0.0/8, bogus")
	if err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("error %v does not name the bad entry", err)
	}
}

func FuzzClientIP(f *testing.F) {
	f.Add("10.0.0.0/8", "10.0.0.2:80", "6.6.6.6, 198.51.100.1, 10.1.1.1")
	f.Add("", "[::ffff:1.2.3.4]:1", "")
	f.Add("::/0,0.0.0.0/0", "[fe80::1%25eth0]:1", ",,[::1]:2,")
	f.Fuzz(func(t *testing.T, trusted, remote, xff string) {
		prefixes, err := ParsePrefixes(trusted)
		if err != nil {
			return
		}
		r := Resolver{TrustedProxies: prefixes}
		req := &http.Request{RemoteAddr: remote, Header: http.Header{"X-Forwarded-For": {xff}}}
		got := r.ClientIP(req)
		peer := Resolver{}.ClientIP(req)
		if got.Is4In6() || got.Zone() != "" {
			t.Fatalf("mapped or zoned result %v", got)
		}
		if !r.trusted(peer) && got != peer {
			t.Fatalf("untrusted peer %v but got %v", peer, got)
		}
	})
}
