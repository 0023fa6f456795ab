// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// Guard is the SSRF guard of webhook deliveries. Its DialContext resolves the target host once,
// refuses it when any of its addresses is internal (see IsBlocked), and dials the vetted address
// itself, so a second DNS answer (DNS rebinding) can never redirect the connection. A
// net.Dialer.Control hook checks the final socket address again before connecting.
//
// The zero Guard refuses internal addresses. AllowPrivate disables the check; it is meant for
// tests and local development (for example a sandbox receiver on 127.0.0.1), never for
// production.
type Guard struct {
	// AllowPrivate lets deliveries reach loopback, private, link-local and the other blocked
	// address classes.
	AllowPrivate bool
}

// BlockedAddressError is returned when a webhook target resolves to a blocked address. Its
// message names the host and the address class and is safe to store in a status.
type BlockedAddressError struct {
	// Host is the host name or address literal of the target.
	Host string
	// IP is the blocked address.
	IP netip.Addr
}

// Error returns, for example, "webhook target 127.0.0.1 is a loopback address; refused".
func (e *BlockedAddressError) Error() string {
	class, _ := IsBlocked(e.IP)
	target := e.IP.String()
	if h := strings.Trim(e.Host, "[]"); h != "" && h != target {
		target = h + " (" + target + ")"
	}
	return fmt.Sprintf("webhook target %s is %s %s address; refused", target, article(class), class)
}

// article returns "an" before a vowel and "a" otherwise.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an"
	}
	return "a"
}

// Address classes reported by IsBlocked.
const (
	ClassCloudMetadata = "cloud metadata"
	ClassUnspecified   = "unspecified"
	ClassThisNetwork   = "this-network (0.0.0.0/8)"
	ClassLoopback      = "loopback"
	ClassPrivate       = "private"
	ClassLinkLocal     = "link-local"
	ClassMulticast     = "multicast"
	ClassCGNAT         = "carrier-grade NAT (100.64.0.0/10)"
	ClassReserved      = "reserved"
	ClassInvalid       = "invalid"
)

var (
	cloudMetadata = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, ...
		netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
		netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	}
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	siteLocal   = netip.MustParsePrefix("fec0::/10") // deprecated IPv6 site-local, still private
	// reserved are special-purpose ranges that no public webhook receiver uses.
	reserved = []netip.Prefix{
		netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
		netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
		netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
		netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
		netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
		netip.MustParsePrefix("240.0.0.0/4"),     // reserved, includes 255.255.255.255
		netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated)
		netip.MustParsePrefix("100::/64"),        // discard-only
		netip.MustParsePrefix("2001:db8::/32"),   // documentation
	}
	// Prefixes of IPv6 addresses that embed an IPv4 address a gateway may forward to.
	nat64  = netip.MustParsePrefix("64:ff9b::/96")   // well-known NAT64: IPv4 in the last 32 bits
	nat64L = netip.MustParsePrefix("64:ff9b:1::/48") // local-use NAT64: internal by definition
	sixTo4 = netip.MustParsePrefix("2002::/16")      // 6to4: IPv4 in bits 16..47
	teredo = netip.MustParsePrefix("2001::/32")      // Teredo: server and client addresses embedded
)

// IsBlocked reports whether webhook deliveries must not reach ip, and its class: loopback,
// private (RFC 1918, fc00::/7, fec0::/10), link-local (169.254.0.0/16, fe80::/10), unspecified,
// multicast, carrier-grade NAT (100.64.0.0/10), this-network (0.0.0.0/8), the cloud metadata
// addresses (169.254.169.254, fd00:ec2::254, 100.100.100.200), other reserved and documentation
// ranges, and IPv4-mapped (::ffff:a.b.c.d), NAT64 and 6to4 forms embedding any of these. An
// invalid (zero) address is blocked too.
func IsBlocked(ip netip.Addr) (class string, blocked bool) {
	if !ip.IsValid() {
		return ClassInvalid, true
	}
	ip = ip.WithZone("")
	if ip.Is4In6() {
		return IsBlocked(ip.Unmap())
	}
	for _, m := range cloudMetadata {
		if ip == m {
			return ClassCloudMetadata, true
		}
	}
	switch {
	case ip.IsUnspecified():
		return ClassUnspecified, true
	case ip.Is4() && thisNetwork.Contains(ip):
		return ClassThisNetwork, true
	case ip.IsLoopback():
		return ClassLoopback, true
	case ip.IsPrivate() || siteLocal.Contains(ip) || nat64L.Contains(ip):
		return ClassPrivate, true
	case ip.IsLinkLocalUnicast():
		return ClassLinkLocal, true
	case ip.IsMulticast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast():
		return ClassMulticast, true
	case cgnat.Contains(ip):
		return ClassCGNAT, true
	}
	for _, p := range reserved {
		if p.Contains(ip) {
			return ClassReserved, true
		}
	}
	if ip.Is6() {
		b := ip.As16()
		var embedded []netip.Addr
		switch {
		case nat64.Contains(ip):
			embedded = append(embedded, netip.AddrFrom4([4]byte(b[12:16])))
		case sixTo4.Contains(ip):
			embedded = append(embedded, netip.AddrFrom4([4]byte(b[2:6])))
		case teredo.Contains(ip):
			server := netip.AddrFrom4([4]byte(b[4:8]))
			client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
			embedded = append(embedded, server, client)
		}
		for _, e := range embedded {
			if class, blocked := IsBlocked(e); blocked {
				return class, true
			}
		}
	}
	return "", false
}

// lookupIPAddr resolves host names; tests replace it.
var lookupIPAddr = net.DefaultResolver.LookupIPAddr

// DialContext is an http.Transport DialContext: it resolves the host of addr, refuses the
// connection with a *BlockedAddressError when any resolved address is blocked (unless
// AllowPrivate), and dials the vetted addresses directly, in order, until one connects.
func (g Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("webhook: network %q is not supported", network)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("webhook: invalid target address: %w", err)
	}
	ips, err := g.resolve(ctx, network, host)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Control: g.control(host)}
	var firstErr error
	for _, ip := range ips {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// resolve returns the addresses of host usable on network, or an error when there is none or
// when any of them is blocked.
func (g Guard) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		answers, err := lookupIPAddr(ctx, host)
		if err != nil {
			return nil, err
		}
		for _, a := range answers {
			ip, ok := netip.AddrFromSlice(a.IP)
			if !ok {
				continue
			}
			// The resolver returns IPv4 answers in 16-byte form: unmap them (a real AAAA
			// ::ffff:a.b.c.d answer connects over IPv4 anyway).
			ips = append(ips, ip.Unmap().WithZone(a.Zone))
		}
	}
	usable := ips[:0:0]
	for _, ip := range ips {
		if !g.AllowPrivate {
			if _, blocked := IsBlocked(ip); blocked {
				// Any blocked answer refuses the host: a name that resolves to an internal
				// address is not a public receiver.
				return nil, &BlockedAddressError{Host: host, IP: ip}
			}
		}
		if (network == "tcp4" && !ip.Unmap().Is4()) || (network == "tcp6" && ip.Unmap().Is4()) {
			continue
		}
		usable = append(usable, ip)
	}
	if len(usable) == 0 {
		return nil, &net.DNSError{Err: "no usable address", Name: host, IsNotFound: true}
	}
	return usable, nil
}

// control returns a net.Dialer Control hook that checks the socket address about to be connected
// (defense in depth behind the check of the resolved addresses).
func (g Guard) control(host string) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		if g.AllowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &BlockedAddressError{Host: host}
		}
		if _, blocked := IsBlocked(ap.Addr()); blocked {
			return &BlockedAddressError{Host: host, IP: ap.Addr()}
		}
		return nil
	}
}

// asBlocked returns the *BlockedAddressError in err's chain, if any.
func asBlocked(err error) (*BlockedAddressError, bool) {
	var b *BlockedAddressError
	ok := errors.As(err, &b)
	return b, ok
}
