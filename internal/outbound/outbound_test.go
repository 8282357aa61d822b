package outbound

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

// TestClientRefusesNonPublicAddresses dials a real server on loopback: the
// production client refuses it before connecting, the development option
// reaches it, and neither reaches a reserved address, however written.
func TestClientRefusesNonPublicAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/target", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	t.Run("production refuses loopback", func(t *testing.T) {
		_, err := Client(Options{}).Get(srv.URL)
		if err == nil || !Blocked(err) {
			t.Fatalf("got %v, want a BlockedError", err)
		}
	})
	t.Run("development reaches loopback", func(t *testing.T) {
		resp, err := Client(Options{AllowLoopback: true}).Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("got %d, want 204", resp.StatusCode)
		}
	})
	t.Run("redirects are not followed", func(t *testing.T) {
		resp, err := Client(Options{AllowLoopback: true}).Get(srv.URL + "/redirect")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("got %d, want the 302 itself", resp.StatusCode)
		}
	})
	// The check runs before the connection is made: none of these is
	// contacted.
	for _, addr := range []string{"10.0.0.1:80", "192.168.1.1:80", "169.254.169.254:80", "100.64.0.1:80",
		"[fd00::1]:80", "0.0.0.0:80", "192.0.2.1:80", "198.18.0.1:80", "192.0.0.1:80", "240.0.0.1:80",
		"[64:ff9b::7f00:1]:80", "[::ffff:10.0.0.1]:80", "[2002:c0a8:101::1]:80", "[2001:0:4136:e378:8000:63bf:3fff:fdd2]:80"} {
		t.Run("development refuses "+addr, func(t *testing.T) {
			_, err := Client(Options{AllowLoopback: true}).Get("http://" + addr + "/")
			if err == nil || !Blocked(err) {
				t.Fatalf("got %v, want a BlockedError", err)
			}
		})
	}
}

// TestPublicRefusesEveryReservedRange takes each entry of the IANA
// registries that is not globally reachable, its first, a middle and its
// last address, and, for IPv4, the same address written in every IPv6
// form that leads to it; the addresses just outside each range that are
// public are allowed.
func TestPublicRefusesEveryReservedRange(t *testing.T) {
	reserved := []struct{ prefix, before, after string }{
		// IPv4 Special-Purpose Address Registry.
		{"0.0.0.0/8", "", "1.0.0.0"},
		{"10.0.0.0/8", "9.255.255.255", "11.0.0.0"},
		{"100.64.0.0/10", "100.63.255.255", "100.128.0.0"},
		{"127.0.0.0/8", "126.255.255.255", "128.0.0.0"},
		{"169.254.0.0/16", "169.253.255.255", "169.255.0.0"},
		{"172.16.0.0/12", "172.15.255.255", "172.32.0.0"},
		{"192.0.0.0/24", "191.255.255.255", "192.0.1.0"},
		{"192.0.0.0/29", "", ""},
		{"192.0.0.8/32", "", ""},
		{"192.0.0.9/32", "", ""},
		{"192.0.0.10/32", "", ""},
		{"192.0.0.170/31", "", ""},
		{"192.0.2.0/24", "192.0.1.255", "192.0.3.0"},
		{"192.88.99.0/24", "192.88.98.255", "192.88.100.0"},
		{"192.168.0.0/16", "192.167.255.255", "192.169.0.0"},
		{"198.18.0.0/15", "198.17.255.255", "198.20.0.0"},
		{"198.51.100.0/24", "198.51.99.255", "198.51.101.0"},
		{"203.0.113.0/24", "203.0.112.255", "203.0.114.0"},
		{"224.0.0.0/4", "223.255.255.255", ""},
		{"240.0.0.0/4", "", ""},
		{"255.255.255.255/32", "", ""},
		// IPv6 Special-Purpose Address Registry.
		{"::/128", "", ""},
		{"::1/128", "", ""},
		{"::/96", "", ""}, // IPv4-compatible, deprecated (RFC 4291)
		{"64:ff9b:1::/48", "", ""},
		{"100::/64", "", ""},
		{"100:0:0:1::/64", "", ""},
		{"2001:2::/48", "", "2001:3::"},
		{"2001:10::/28", "", "2001:20::"},
		{"2001:db8::/32", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::"},
		{"3fff::/20", "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:1000::"},
		{"5f00::/16", "", ""},
		{"fc00::/7", "", ""},
		{"fe80::/10", "", ""},
		{"fec0::/10", "", ""}, // deprecated site-local, outside 2000::/3
		{"ff00::/8", "", ""},
		{"2001:100::/24", "", "2001:200::"}, // the rest of 2001::/23, unassigned
	}
	for _, r := range reserved {
		p := netip.MustParsePrefix(r.prefix)
		for _, ip := range []netip.Addr{p.Addr(), middle(p), last(p)} {
			if Public(ip) {
				t.Errorf("%s (in %s) is public", ip, r.prefix)
			}
			if ip.Is4() {
				for form, v6 := range embeddings(ip) {
					if Public(v6) {
						t.Errorf("%s (%s of %s, in %s) is public", v6, form, ip, r.prefix)
					}
				}
			}
		}
		for _, s := range []string{r.before, r.after} {
			if s != "" && !Public(netip.MustParseAddr(s)) {
				t.Errorf("%s, next to %s, is not public", s, r.prefix)
			}
		}
	}
}

// TestPublicAllowsGloballyReachable: ordinary addresses, the registries'
// globally reachable entries, and the IPv6 forms of a public IPv4 address.
func TestPublicAllowsGloballyReachable(t *testing.T) {
	for _, s := range []string{
		"8.8.8.8", "1.1.1.1", "192.31.196.1", "192.52.193.1", "192.175.48.1", "100.128.0.1", "223.255.255.254",
		"2606:4700::1111", "2001:1::1", "2001:1::2", "2001:1::3", "2001:3::1", "2001:4:112::1",
		"2001:20::1", "2001:30::1", "2620:4f:8000::1", "2a00:1450:4001::1",
	} {
		if ip := netip.MustParseAddr(s); !Public(ip) {
			t.Errorf("%s is not public", ip)
		}
	}
	public := netip.MustParseAddr("8.8.8.8")
	for form, v6 := range embeddings(public) {
		if !Public(v6) {
			t.Errorf("%s (%s of %s) is not public", v6, form, public)
		}
	}
	// A Teredo address is public only when both its server and its client
	// are.
	if Public(teredoOf(netip.MustParseAddr("10.0.0.1"), public)) {
		t.Error("a Teredo address with a private server is public")
	}
	if Public(netip.MustParseAddr("fe80::1%eth0")) || PublicIP(nil) {
		t.Error("a zoned or empty address is public")
	}
	if !PublicIP(net.ParseIP("8.8.4.4")) || PublicIP(net.ParseIP("::ffff:127.0.0.1")) {
		t.Error("PublicIP disagrees with Public")
	}
}

// embeddings are the IPv6 addresses that lead to v4: IPv4-mapped, NAT64,
// 6to4, and Teredo with v4 as the client (behind a public server) and as
// the server.
func embeddings(v4 netip.Addr) map[string]netip.Addr {
	a := v4.As4()
	var nat64, sixToFour [16]byte
	copy(nat64[:], netip.MustParseAddr("64:ff9b::").AsSlice())
	copy(nat64[12:], a[:])
	sixToFour[0], sixToFour[1] = 0x20, 0x02
	copy(sixToFour[2:], a[:])
	sixToFour[15] = 1
	server := netip.MustParseAddr("65.54.227.120")
	return map[string]netip.Addr{
		"IPv4-mapped":   netip.AddrFrom16(v4.As16()),
		"NAT64":         netip.AddrFrom16(nat64),
		"6to4":          netip.AddrFrom16(sixToFour),
		"Teredo client": teredoOf(server, v4),
		"Teredo server": teredoOf(v4, netip.MustParseAddr("8.8.8.8")),
	}
}

// teredoOf is the Teredo address of client behind server (RFC 4380): the
// client's address is stored inverted.
func teredoOf(server, client netip.Addr) netip.Addr {
	var b [16]byte
	b[0], b[1] = 0x20, 0x01
	s, c := server.As4(), client.As4()
	copy(b[4:8], s[:])
	b[8] = 0x80
	b[10], b[11] = 0xff, 0xff // port, inverted
	for i := range 4 {
		b[12+i] = ^c[i]
	}
	return netip.AddrFrom16(b)
}

func middle(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	if bit := p.Bits(); bit < len(b)*8 {
		b[bit/8] |= 0x80 >> (bit % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func last(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
