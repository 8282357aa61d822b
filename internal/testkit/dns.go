package testkit

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// DNSServer is a real DNS server (github.com/miekg/dns) on loopback, over
// UDP and TCP, that answers TXT queries from the records a test sets and
// every other name with NXDOMAIN. Resolver is a net.Resolver that asks it
// alone.
type DNSServer struct {
	udp, tcp string

	mu      sync.Mutex
	txt     map[string][]string
	queries int
	hold    *dnsHold
	failing bool
}

// dnsHold keeps TXT answers back until n queries for names with records
// arrived, so that the lookups of callers racing each other return
// together.
type dnsHold struct {
	n, arrived int
	release    chan struct{}
}

// NewDNSServer starts a DNS server, closed with the test.
func NewDNSServer(t testing.TB) *DNSServer {
	t.Helper()
	s := &DNSServer{txt: map[string][]string{}}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.udp, s.tcp = pc.LocalAddr().String(), l.Addr().String()
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: s}, {Listener: l, Handler: s}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go func() { _ = srv.ActivateAndServe() }()
		<-started
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return s
}

// SetTXT sets the TXT records of name (each value one record), replacing
// those it had; none removes the name.
func (s *DNSServer) SetTXT(name string, values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name = dns.Fqdn(strings.ToLower(name))
	if len(values) == 0 {
		delete(s.txt, name)
		return
	}
	s.txt[name] = values
}

// Fail makes the server answer every query with a server failure while
// on, as a DNS server that is down.
func (s *DNSServer) Fail(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = on
}

// HoldTXT keeps back the answers to the next n TXT queries for names with
// records until all n arrived (or 5 seconds passed).
func (s *DNSServer) HoldTXT(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = &dnsHold{n: n, release: make(chan struct{})}
}

// Queries returns how many queries the server answered.
func (s *DNSServer) Queries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries
}

// ServeDNS answers one query.
func (s *DNSServer) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	s.mu.Lock()
	s.queries++
	var (
		values []string
		wait   chan struct{}
	)
	if len(r.Question) == 1 {
		q := r.Question[0]
		values = s.txt[strings.ToLower(q.Name)]
		switch {
		case s.failing:
			m.Rcode = dns.RcodeServerFailure
		case values == nil:
			m.Rcode = dns.RcodeNameError
		case q.Qtype == dns.TypeTXT:
			for _, v := range values {
				m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: []string{v}})
			}
			if h := s.hold; h != nil {
				h.arrived++
				wait = h.release
				if h.arrived == h.n {
					close(h.release)
					s.hold = nil
				}
			}
		}
	}
	s.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-time.After(5 * time.Second):
		}
	}
	_ = w.WriteMsg(m)
}

// Resolver returns a resolver that asks this server alone.
func (s *DNSServer) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		addr := s.udp
		if strings.HasPrefix(network, "tcp") {
			addr = s.tcp
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}
