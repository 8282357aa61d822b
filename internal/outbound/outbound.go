// Package outbound is the one HTTP client ctalk uses to reach addresses that
// its users give it (OAuth client metadata documents, webhooks, push
// services): it dials globally routable unicast addresses only, checked on
// the address actually dialled after DNS resolution, uses no proxy, follows
// no redirect and gives up after five seconds.
package outbound

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Timeout bounds every request of a Client, from dial to the last byte.
const Timeout = 5 * time.Second

// Options change what a Client may reach.
type Options struct {
	// AllowLoopback lets the client reach loopback addresses (127.0.0.0/8,
	// ::1), for tests and local development only; private, link-local and
	// other non-public addresses stay refused. Never set by default.
	AllowLoopback bool
}

// BlockedError is the dial error of a request that would reach an address
// ctalk refuses to reach.
type BlockedError struct{ Addr string }

func (e *BlockedError) Error() string { return "address " + e.Addr + " is not public" }

// Unreachable is what a person is told of any request that a Client could
// not make, whatever the reason: an address ctalk does not reach, a name
// that does not resolve, a connection refused, reset or timed out, a
// failed TLS handshake. One sentence for all, so that what a person reads
// of a failed request never tells a closed port of a host from an open or
// a filtered one.
const Unreachable = "the address must be public, accept the connection and answer within 5 seconds"

// Blocked reports whether err is, or wraps, a BlockedError.
func Blocked(err error) bool {
	var b *BlockedError
	return errors.As(err, &b)
}

// Client returns an HTTP client that reaches public addresses only (and
// loopback when o allows it). The check runs on the address dialled, so a
// name that resolves to a reserved address is refused too; no proxy is
// used, since a proxy would dial on ctalk's behalf, unchecked; redirects
// are not followed: the response of a redirect is returned as it is.
func Client(o Options) *http.Client {
	dialer := &net.Dialer{
		Timeout: Timeout,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &BlockedError{address}
			}
			ip := ap.Addr()
			if !(Public(ip) || o.AllowLoopback && ip.Unmap().IsLoopback()) {
				return &BlockedError{address}
			}
			return nil
		},
	}
	return &http.Client{
		Timeout: Timeout,
		Transport: &http.Transport{
			DialContext:            dialer.DialContext,
			TLSHandshakeTimeout:    Timeout,
			ResponseHeaderTimeout:  Timeout,
			MaxResponseHeaderBytes: 16 << 10,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Public reports whether ip is a globally routable unicast address: not in
// an entry of the IANA special-purpose address registries that is not
// globally reachable, not multicast, and, for IPv6, within 2000::/3. An
// IPv6 address that carries an IPv4 one (IPv4-mapped, NAT64, 6to4, Teredo)
// is public only when the IPv4 address it leads to is.
func Public(ip netip.Addr) bool {
	if !ip.IsValid() || ip.Zone() != "" {
		return false
	}
	if ip.Is4In6() {
		ip = ip.Unmap()
	}
	if ip.Is4() {
		return !inAny(ip, reserved4)
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return Public(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(ip):
		return Public(netip.AddrFrom4([4]byte(b[2:6])))
	case teredo.Contains(ip):
		// The Teredo server's address, and the client's, stored inverted.
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		return Public(netip.AddrFrom4([4]byte(b[4:8]))) && Public(netip.AddrFrom4(client))
	}
	return globalUnicast6.Contains(ip) && (inAny(ip, global6) || !inAny(ip, reserved6))
}

// PublicIP is Public for a net.IP.
func PublicIP(ip net.IP) bool {
	a, ok := netip.AddrFromSlice(ip)
	return ok && Public(a)
}

func inAny(ip netip.Addr, list []netip.Prefix) bool {
	for _, p := range list {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// reserved4 is every entry of the IANA IPv4 Special-Purpose Address
// Registry (https://www.iana.org/assignments/iana-ipv4-special-registry/,
// as updated 2024-09) whose "Globally Reachable" is not True, and the
// multicast range. The globally reachable entries (192.31.196.0/24 AS112,
// 192.52.193.0/24 AMT, 192.175.48.0/24 AS112 direct delegation) are
// ordinary unicast and allowed; 192.0.0.9/32 and 192.0.0.10/32, anycast
// addresses of PCP and TURN servers inside 192.0.0.0/24, stay refused with
// it: no webhook lives there.
var reserved4 = prefixes(
	"0.0.0.0/8",       // "this network" (RFC 791)
	"10.0.0.0/8",      // private use (RFC 1918)
	"100.64.0.0/10",   // shared address space, carrier-grade NAT (RFC 6598)
	"127.0.0.0/8",     // loopback (RFC 1122)
	"169.254.0.0/16",  // link local (RFC 3927)
	"172.16.0.0/12",   // private use (RFC 1918)
	"192.0.0.0/24",    // IETF protocol assignments (RFC 6890), holding 192.0.0.0/29, .8, .170, .171
	"192.0.2.0/24",    // documentation, TEST-NET-1 (RFC 5737)
	"192.88.99.0/24",  // deprecated 6to4 relay anycast (RFC 7526)
	"192.168.0.0/16",  // private use (RFC 1918)
	"198.18.0.0/15",   // benchmarking (RFC 2544)
	"198.51.100.0/24", // documentation, TEST-NET-2 (RFC 5737)
	"203.0.113.0/24",  // documentation, TEST-NET-3 (RFC 5737)
	"224.0.0.0/4",     // multicast (RFC 5771)
	"240.0.0.0/4",     // reserved (RFC 1112), holding 255.255.255.255/32, limited broadcast (RFC 919)
)

// globalUnicast6 is the IPv6 global unicast space (RFC 4291); everything
// outside it (loopback, unspecified, IPv4-compatible, unique local,
// link local, site local, multicast, the discard prefix) is refused, but
// for the forms that carry an IPv4 address, which Public checks first.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// The IPv6 forms that carry an IPv4 address.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96") // IPv4/IPv6 translation (RFC 6052)
	sixToFour = netip.MustParsePrefix("2002::/16")    // 6to4 (RFC 3056)
	teredo    = netip.MustParsePrefix("2001::/32")    // Teredo (RFC 4380)
)

// reserved6 is every entry of the IANA IPv6 Special-Purpose Address
// Registry (https://www.iana.org/assignments/iana-ipv6-special-registry/,
// as updated 2025-02) inside 2000::/3 whose "Globally Reachable" is not
// True, but for 6to4 and Teredo, whose IPv4 addresses Public checks. The
// entries outside 2000::/3 (::1/128, ::/128, ::ffff:0:0/96, 64:ff9b::/96,
// 64:ff9b:1::/48, 100::/64, 100:0:0:1::/64, 5f00::/16, fc00::/7,
// fe80::/10) are refused with everything outside globalUnicast6, but for
// the IPv4-mapped and NAT64 forms, checked by their IPv4 address.
// 64:ff9b:1::/48, the local-use translation prefix (RFC 8215), is refused
// whole, as the registry has it: where its IPv4 address sits depends on
// the length of prefix its translator was given (RFC 6052), which ctalk
// cannot know.
var reserved6 = prefixes(
	"2001::/23",     // IETF protocol assignments (RFC 2928), but for global6 below
	"2001:2::/48",   // benchmarking (RFC 5180)
	"2001:10::/28",  // deprecated ORCHID (RFC 4843)
	"2001:db8::/32", // documentation (RFC 3849)
	"3fff::/20",     // documentation (RFC 9637)
)

// global6 is the registry's globally reachable entries inside 2001::/23,
// allowed although reserved6 holds them.
var global6 = prefixes(
	"2001:1::1/128",   // PCP anycast (RFC 7723)
	"2001:1::2/128",   // TURN anycast (RFC 8155)
	"2001:1::3/128",   // DNS-SD service registration protocol anycast (RFC 9665)
	"2001:3::/32",     // AMT (RFC 7450)
	"2001:4:112::/48", // AS112-v6 (RFC 7535)
	"2001:20::/28",    // ORCHIDv2 (RFC 7343)
	"2001:30::/28",    // drone remote ID entity tags (RFC 9374)
)

func prefixes(list ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(list))
	for i, s := range list {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}
