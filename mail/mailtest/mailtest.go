// Package mailtest is a real SMTP server on a loopback port for tests: it
// keeps every message it accepts and can refuse mail for a while. Only tests
// import it.
package mailtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"net"
	netmail "net/mail"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/ctalk/ctalk/mail"
)

// Received is one message the server accepted.
type Received struct {
	From   string
	To     []string
	Data   []byte
	Header netmail.Header
	// Text and HTML are the decoded text/plain and text/html parts.
	Text, HTML string
}

// Server is a real SMTP server (emersion/go-smtp) on a loopback port.
type Server struct {
	srv      *smtp.Server
	addr     string
	user     string
	password string
	roots    *x509.CertPool

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced when a message arrives
	messages   []Received
	refuseCode int
	refuseTill time.Time
}

// Option changes how Start sets up a Server.
type Option func(*Server)

// WithSTARTTLS has the server offer STARTTLS with a certificate for
// 127.0.0.1 that its Config trusts; its Config then uses smtp:// (STARTTLS
// required).
func WithSTARTTLS() Option {
	return func(s *Server) { s.roots = x509.NewCertPool() }
}

// WithAuth has the server require AUTH PLAIN with these credentials, which
// its Config carries in the URL.
func WithAuth(user, password string) Option {
	return func(s *Server) { s.user, s.password = user, password }
}

// Start starts a server, closed when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{changed: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mailtest: listen: %v", err)
	}
	s.addr = l.Addr().String()
	s.srv = smtp.NewServer(backend{s})
	s.srv.Domain = "mailtest.localhost"
	s.srv.ReadTimeout = 10 * time.Second
	s.srv.WriteTimeout = 10 * time.Second
	s.srv.MaxMessageBytes = 10 << 20
	s.srv.AllowInsecureAuth = s.roots == nil
	if s.roots != nil {
		cert, err := selfSigned(s.roots)
		if err != nil {
			t.Fatalf("mailtest: certificate: %v", err)
		}
		s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	go func() { _ = s.srv.Serve(l) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Config is a mail.Config that sends to this server.
func (s *Server) Config() mail.Config {
	u := url.URL{Scheme: "smtp+insecure", Host: s.addr}
	c := mail.Config{From: "ctalk <ctalk@ctalk.test>", Timeout: 5 * time.Second}
	if s.roots != nil {
		u.Scheme = "smtp"
		c.TLS = &tls.Config{RootCAs: s.roots, MinVersion: tls.VersionTLS12}
	}
	if s.user != "" {
		u.User = url.UserPassword(s.user, s.password)
	}
	c.URL = u.String()
	return c
}

// Messages returns the messages accepted so far.
func (s *Server) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.messages...)
}

// WaitFor waits until the server holds at least n messages and returns them;
// it fails the test after ten seconds.
func (s *Server) WaitFor(t testing.TB, n int) []Received {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		got, changed := append([]Received(nil), s.messages...), s.changed
		s.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("mailtest: %d messages arrived, want %d", len(got), n)
			return nil
		}
	}
}

// RefuseFor has the server answer MAIL FROM with code (421, 451, 550...)
// for d; d <= 0 ends a refusal.
func (s *Server) RefuseFor(code int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseCode, s.refuseTill = code, time.Now().Add(d)
}

func (s *Server) refusal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuseCode == 0 || !time.Now().Before(s.refuseTill) {
		return nil
	}
	enh := smtp.EnhancedCode{s.refuseCode / 100, 0, 0}
	return &smtp.SMTPError{Code: s.refuseCode, EnhancedCode: enh, Message: "mailtest refuses mail for now"}
}

func (s *Server) keep(r Received) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.messages = append(s.messages, r)
	close(s.changed)
	s.changed = make(chan struct{})
}

type backend struct{ s *Server }

func (b backend) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &session{s: b.s, authed: b.s.user == ""}, nil
}

type session struct {
	s      *Server
	authed bool
	from   string
	to     []string
}

func (x *session) AuthMechanisms() []string {
	if x.s.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (x *session) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(_, user, password string) error {
		if user != x.s.user || password != x.s.password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "authentication failed"}
		}
		x.authed = true
		return nil
	}), nil
}

func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	if !x.authed {
		return smtp.ErrAuthRequired
	}
	if err := x.s.refusal(); err != nil {
		return err
	}
	x.from = from
	return nil
}

func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.to = append(x.to, to)
	return nil
}

func (x *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	rec := Received{From: x.from, To: append([]string(nil), x.to...), Data: data}
	if err := rec.parse(); err != nil {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "mailtest cannot parse the message: " + err.Error()}
	}
	x.s.keep(rec)
	return nil
}

func (x *session) Reset()        { x.from, x.to = "", nil }
func (x *session) Logout() error { return nil }

// parse fills Header, Text and HTML from Data.
func (r *Received) parse() error {
	m, err := netmail.ReadMessage(bytes.NewReader(r.Data))
	if err != nil {
		return err
	}
	r.Header = m.Header
	return r.part(m.Header.Get("Content-Type"), m.Header.Get("Content-Transfer-Encoding"), m.Body)
}

func (r *Received) part(contentType, encoding string, body io.Reader) error {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = "text/plain"
	}
	if strings.HasPrefix(mt, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			// multipart decodes quoted-printable itself and hides the header.
			if err := r.part(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p); err != nil {
				return err
			}
		}
	}
	if strings.EqualFold(encoding, "base64") {
		body = base64.NewDecoder(base64.StdEncoding, body)
	}
	text, err := io.ReadAll(body)
	if err != nil {
		return fmt.Errorf("read %s part: %w", mt, err)
	}
	switch mt {
	case "text/plain":
		r.Text = string(text)
	case "text/html":
		r.HTML = string(text)
	}
	return nil
}

func selfSigned(roots *x509.CertPool) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mailtest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	roots.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}, nil
}
