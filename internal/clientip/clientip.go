// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package clientip determines the client address of an HTTP request for rate
// limiting and audit logs, trusting X-Forwarded-For only as far as it was
// written by configured proxies.
package clientip

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ErrInvalidPrefix is wrapped by the error ParsePrefixes returns for an entry
// that is neither a CIDR prefix nor an IP address.
var ErrInvalidPrefix = errors.New("invalid trusted proxy address or prefix")

// Resolver finds the client address of requests. The zero value trusts no
// proxy and so always returns the peer address.
type Resolver struct {
	// TrustedProxies are the networks of the reverse proxies and load
	// balancers in front of the service. Addresses are unmapped before they
	// are compared, so IPv4 prefixes match IPv4 peers and IPv4-mapped IPv6
	// peers alike, and an IPv4-mapped prefix matches nothing (ParsePrefixes
	// converts such prefixes to IPv4).
	TrustedProxies []netip.Prefix
}

// ClientIP returns the client address of req.
//
// It starts from the peer address in req.RemoteAddr. Only if the peer is a
// trusted proxy does it read X-Forwarded-For (all header lines, in order),
// walking from the right, the end written by the nearest proxy: addresses
// of trusted proxies are skipped and the first untrusted address is the
// client. Left-most entries, which the client can write freely, are thus
// never reached past an untrusted hop. If an entry is malformed (empty,
// "unknown", a host name...), the walk stops there and the last
// address examined, which is a trusted proxy, is returned; likewise when
// every entry is trusted, the left-most (a trusted address) is returned.
// Entries may carry a port ("192.0.2.1:443", "[2001:db8::1]:443").
//
// Returned addresses are unmapped (::ffff:192.0.2.1 becomes 192.0.2.1) and
// carry no IPv6 zone. The result is the invalid zero netip.Addr only if
// req is nil or its RemoteAddr cannot be parsed.
func (r Resolver) ClientIP(req *http.Request) netip.Addr {
	if req == nil {
		return netip.Addr{}
	}
	peer, ok := parseHost(req.RemoteAddr)
	if !ok {
		return netip.Addr{}
	}
	if !r.trusted(peer) {
		return peer
	}
	client := peer
	values := req.Header.Values("X-Forwarded-For")
	for i := len(values) - 1; i >= 0; i-- {
		rest := values[i]
		for done := false; !done; {
			// Take the right-most remaining entry without allocating.
			entry := rest
			if j := strings.LastIndexByte(rest, ','); j >= 0 {
				entry, rest = rest[j+1:], rest[:j]
			} else {
				done = true
			}
			addr, ok := parseHost(strings.TrimSpace(entry))
			if !ok {
				return client
			}
			client = addr
			if !r.trusted(addr) {
				return client
			}
		}
	}
	return client
}

// trusted reports whether addr is in a trusted proxy prefix.
func (r Resolver) trusted(addr netip.Addr) bool {
	for _, p := range r.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// parseHost parses an IP address, optionally with a port ("ip:port",
// "[ipv6]:port", "[ipv6]"), and returns it unmapped and without zone. It
// picks the parser from the shape of s, so the common cases do not allocate
// an error value.
func parseHost(s string) (netip.Addr, bool) {
	var addr netip.Addr
	var err error
	switch {
	case s == "":
		return netip.Addr{}, false
	case s[0] == '[' && s[len(s)-1] == ']':
		addr, err = netip.ParseAddr(s[1 : len(s)-1])
		if err == nil && !addr.Is6() {
			return netip.Addr{}, false
		}
	case s[0] == '[' || strings.Count(s, ":") == 1:
		// "[ipv6]:port", or "ipv4:port" (IPv6 has at least two colons).
		var ap netip.AddrPort
		ap, err = netip.ParseAddrPort(s)
		addr = ap.Addr()
	default:
		addr, err = netip.ParseAddr(s)
	}
	if err != nil {
		return netip.Addr{}, false
	}
	return addr.Unmap().WithZone(""), true
}

// ParsePrefixes parses a comma-separated list of CIDR prefixes and single IP
// addresses (a single address becomes a /32 or /128 prefix), as found in a
// TRUSTED_PROXIES setting. Spaces around entries and empty entries are
// ignored, so "" yields no prefixes. Prefixes are masked to their network
// address, and IPv4-mapped IPv6 entries are turned into IPv4, since
// ClientIP unmaps the addresses it compares.
func ParsePrefixes(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for entry := range strings.SplitSeq(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		p, err := parsePrefix(entry)
		if err != nil {
			return nil, fmt.Errorf("clientip: %w %q: %w", ErrInvalidPrefix, entry, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// parsePrefix parses one CIDR prefix or IP address.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap().WithZone("")
	return netip.PrefixFrom(a, a.BitLen()), nil
}
