// Package outbound is the one HTTP client ctalk uses to reach addresses that
// its users give it (OAuth client metadata documents, webhooks): it dials
// public addresses only, checked on the address actually dialled after DNS
// resolution, uses no proxy, follows no redirect and gives up after five
// seconds.
package outbound

import (
	"errors"
	"net"
	"net/http"
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

// Blocked reports whether err is, or wraps, a BlockedError.
func Blocked(err error) bool {
	var b *BlockedError
	return errors.As(err, &b)
}

// Client returns an HTTP client that reaches public addresses only (and
// loopback when o allows it). The check runs on the address dialled, so a
// name that resolves to a private address is refused too; no proxy is used,
// since a proxy would dial on ctalk's behalf, unchecked; redirects are not
// followed: the response of a redirect is returned as it is.
func Client(o Options) *http.Client {
	dialer := &net.Dialer{
		Timeout: Timeout,
		Control: func(network, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return &BlockedError{address}
			}
			ip := net.ParseIP(host)
			if ip == nil || !(PublicIP(ip) || o.AllowLoopback && ip.IsLoopback()) {
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

// PublicIP reports whether ip is a globally routable unicast address.
func PublicIP(ip net.IP) bool {
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() {
		return false
	}
	if v4 := ip.To4(); v4 != nil {
		// 100.64.0.0/10 (carrier-grade NAT) and 0.0.0.0/8.
		if v4[0] == 100 && v4[1]&0xc0 == 64 || v4[0] == 0 {
			return false
		}
	}
	return true
}
