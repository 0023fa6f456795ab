// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestIsBlocked(t *testing.T) {
	blocked := map[string]string{
		"127.0.0.1":                   ClassLoopback,
		"127.255.0.9":                 ClassLoopback,
		"::1":                         ClassLoopback,
		"10.0.0.1":                    ClassPrivate,
		"172.16.5.4":                  ClassPrivate,
		"172.31.255.255":              ClassPrivate,
		"192.168.1.1":                 ClassPrivate,
		"fc00::1":                     ClassPrivate,
		"fd12:3456::1":                ClassPrivate,
		"fec0::1":                     ClassPrivate,
		"169.254.1.1":                 ClassLinkLocal,
		"fe80::1":                     ClassLinkLocal,
		"fe80::1%eth0":                ClassLinkLocal,
		"0.0.0.0":                     ClassUnspecified,
		"::":                          ClassUnspecified,
		"0.1.2.3":                     ClassThisNetwork,
		"224.0.0.1":                   ClassMulticast,
		"239.255.255.250":             ClassMulticast,
		"ff02::1":                     ClassMulticast,
		"ff05::2":                     ClassMulticast,
		"100.64.0.1":                  ClassCGNAT,
		"100.127.255.254":             ClassCGNAT,
		"169.254.169.254":             ClassCloudMetadata,
		"fd00:ec2::254":               ClassCloudMetadata,
		"100.100.100.200":             ClassCloudMetadata,
		"255.255.255.255":             ClassReserved,
		"192.0.2.10":                  ClassReserved,
		"2001:db8::1":                 ClassReserved,
		"::ffff:127.0.0.1":            ClassLoopback,
		"::ffff:10.1.2.3":             ClassPrivate,
		"::ffff:169.254.169.254":      ClassCloudMetadata,
		"::ffff:100.100.100.200":      ClassCloudMetadata,
		"::ffff:0.0.0.0":              ClassUnspecified,
		"64:ff9b::127.0.0.1":          ClassLoopback,
		"64:ff9b::a9fe:a9fe":          ClassCloudMetadata, // NAT64 169.254.169.254
		"2002:a00:1::1":               ClassPrivate,       // 6to4 of 10.0.0.1
		"2002:7f00:1::":               ClassLoopback,      // 6to4 of 127.0.0.1
		"::127.0.0.1":                 ClassReserved,      // IPv4-compatible
		"64:ff9b:1::8.8.8.8":          ClassPrivate,       // local-use NAT64
		"2001:0:4136:e378::f5ff:fffe": ClassPrivate,       // Teredo client, complemented: 10.0.0.1
	}
	for s, want := range blocked {
		ip := netip.MustParseAddr(s)
		class, ok := IsBlocked(ip)
		if !ok || class != want {
			t.Errorf("IsBlocked(%s) = %q, %v; want %q, true", s, class, ok, want)
		}
	}
	if class, ok := IsBlocked(netip.Addr{}); !ok || class != ClassInvalid {
		t.Errorf("IsBlocked(zero) = %q, %v; want invalid, true", class, ok)
	}

	public := []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.1", "172.15.0.1",
		"172.32.0.1", "11.0.0.1", "192.169.0.1", "169.253.0.1", "223.255.255.255",
		"2606:4700:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8",
		"2002:808:808::1",
	}
	for _, s := range public {
		if class, ok := IsBlocked(netip.MustParseAddr(s)); ok {
			t.Errorf("IsBlocked(%s) = %q, true; want allowed", s, class)
		}
	}
}

func TestBlockedAddressErrorMessage(t *testing.T) {
	cases := []struct {
		err  *BlockedAddressError
		want string
	}{
		{&BlockedAddressError{Host: "127.0.0.1", IP: netip.MustParseAddr("127.0.0.1")},
			"webhook target 127.0.0.1 is a loopback address; refused"},
		{&BlockedAddressError{Host: "localhost", IP: netip.MustParseAddr("::1")},
			"webhook target localhost (::1) is a loopback address; refused"},
		{&BlockedAddressError{Host: "[::]", IP: netip.MustParseAddr("::")},
			"webhook target :: is an unspecified address; refused"},
		{&BlockedAddressError{Host: "169.254.169.254", IP: netip.MustParseAddr("169.254.169.254")},
			"webhook target 169.254.169.254 is a cloud metadata address; refused"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q; want %q", got, c.want)
		}
	}
}

// withLookup replaces the resolver for one test. Tests in this package do not run in parallel.
func withLookup(t *testing.T, answers map[string][]string) {
	t.Helper()
	old := lookupIPAddr
	lookupIPAddr = func(_ context.Context, host string) ([]net.IPAddr, error) {
		ips, ok := answers[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var out []net.IPAddr
		for _, s := range ips {
			out = append(out, net.IPAddr{IP: net.ParseIP(s)})
		}
		return out, nil
	}
	t.Cleanup(func() { lookupIPAddr = old })
}

func TestGuardRefusesInternalTargets(t *testing.T) {
	// Anything that would connect must not: listen on loopback to count connections.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, target := range []struct{ addr, class string }{
		{"127.0.0.1:" + port, ClassLoopback},
		{"10.0.0.1:80", ClassPrivate},
		{"169.254.169.254:80", ClassCloudMetadata},
		{"[::1]:" + port, ClassLoopback},
		{"localhost:" + port, ClassLoopback}, // resolves to loopback with the real resolver
		{"[::ffff:127.0.0.1]:" + port, ClassLoopback},
		{"0.0.0.0:" + port, ClassUnspecified},
	} {
		if strings.HasPrefix(target.addr, "localhost:") {
			if _, err := net.DefaultResolver.LookupIPAddr(ctx, "localhost"); err != nil {
				t.Logf("skipping localhost: it does not resolve here: %v", err)
				continue
			}
		}
		c, err := Guard{}.DialContext(ctx, "tcp", target.addr)
		if err == nil {
			c.Close()
			t.Errorf("DialContext(%s) connected; want refused", target.addr)
			continue
		}
		var b *BlockedAddressError
		if !errors.As(err, &b) {
			t.Errorf("DialContext(%s) error %v (%T); want *BlockedAddressError", target.addr, err, err)
			continue
		}
		if class, _ := IsBlocked(b.IP); class != target.class {
			t.Errorf("DialContext(%s) blocked class %q; want %q", target.addr, class, target.class)
		}
		if !strings.Contains(err.Error(), target.class) || !strings.HasSuffix(err.Error(), "; refused") {
			t.Errorf("DialContext(%s) message %q does not name the class", target.addr, err)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d connections reached the loopback listener", n)
	}
}

func TestGuardRefusesWhenAnyAnswerIsInternal(t *testing.T) {
	withLookup(t, map[string][]string{
		"mixed.example":    {"93.184.216.34", "127.0.0.1"},
		"metadata.example": {"169.254.169.254"},
		"mapped.example":   {"::ffff:10.0.0.1"},
	})
	for host, class := range map[string]string{
		"mixed.example": ClassLoopback, "metadata.example": ClassCloudMetadata, "mapped.example": ClassPrivate,
	} {
		_, err := Guard{}.DialContext(context.Background(), "tcp", host+":443")
		var b *BlockedAddressError
		if !errors.As(err, &b) {
			t.Fatalf("%s: error %v; want *BlockedAddressError", host, err)
		}
		if b.Host != host {
			t.Errorf("%s: Host = %q", host, b.Host)
		}
		if c, _ := IsBlocked(b.IP); c != class {
			t.Errorf("%s: class %q; want %q", host, c, class)
		}
		if !strings.Contains(err.Error(), host) {
			t.Errorf("%s: message %q does not name the host", host, err)
		}
	}
}

func TestGuardDialsTheVettedAddress(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	// A name the system resolver does not know: the connection can only succeed if the guard
	// dials the address it resolved itself, not the name again.
	withLookup(t, map[string][]string{"receiver.invalid": {"127.0.0.1"}})
	c, err := Guard{AllowPrivate: true}.DialContext(context.Background(), "tcp", "receiver.invalid:"+port)
	if err != nil {
		t.Fatalf("DialContext: %v", err)
	}
	if got := c.RemoteAddr().String(); got != "127.0.0.1:"+port {
		t.Errorf("connected to %s", got)
	}
	c.Close()

	if _, err := (Guard{}).DialContext(context.Background(), "tcp", "receiver.invalid:"+port); err == nil {
		t.Error("the default guard dialled a name resolving to loopback")
	}
	if _, err := (Guard{}).DialContext(context.Background(), "udp", "8.8.8.8:53"); err == nil {
		t.Error("udp was allowed")
	}
}

func TestGuardControlChecksTheSocketAddress(t *testing.T) {
	ctl := Guard{}.control("example.com")
	for _, addr := range []string{"127.0.0.1:443", "[::1]:443", "10.0.0.1:80", "169.254.169.254:80", "[::ffff:127.0.0.1]:80", "garbage"} {
		err := ctl("tcp", addr, nil)
		var b *BlockedAddressError
		if !errors.As(err, &b) {
			t.Errorf("control(%s) = %v; want *BlockedAddressError", addr, err)
		}
	}
	if err := ctl("tcp4", "93.184.216.34:443", nil); err != nil {
		t.Errorf("control(public) = %v", err)
	}
	if err := (Guard{AllowPrivate: true}).control("localhost")("tcp", "127.0.0.1:80", nil); err != nil {
		t.Errorf("AllowPrivate control = %v", err)
	}
}

func ExampleIsBlocked() {
	for _, s := range []string{"127.0.0.1", "::ffff:169.254.169.254", "100.64.1.1", "8.8.8.8"} {
		class, blocked := IsBlocked(netip.MustParseAddr(s))
		fmt.Printf("%s %v %q\n", s, blocked, class)
	}
	// Output:
	// 127.0.0.1 true "loopback"
	// ::ffff:169.254.169.254 true "cloud metadata"
	// 100.64.1.1 true "carrier-grade NAT (100.64.0.0/10)"
	// 8.8.8.8 false ""
}
