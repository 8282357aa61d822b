// Package mail sends ctalk's email: invites, password resets and
// notifications, over the operator's SMTP server (SMTP_URL, MAIL_FROM).
package mail

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	netmail "net/mail"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/ctalk/ctalk"
)

// DefaultTimeout bounds one Send: connecting, the SMTP dialogue and the
// message's transfer.
const DefaultTimeout = 10 * time.Second

// Config is the operator's SMTP setup, from the environment.
type Config struct {
	// URL is SMTP_URL: smtp://user:pass@host:587 (STARTTLS required),
	// smtps://user:pass@host:465 (TLS from the first byte), or
	// smtp+insecure://host:port (no encryption, for a mail catcher in
	// development), or log: (LogURL: to the server's log, development
	// only). Empty means the server sends no email.
	URL string
	// From is MAIL_FROM, the sender: "ctalk <ctalk@example.com>".
	From string
	// Timeout bounds one Send; zero means DefaultTimeout.
	Timeout time.Duration
	// TLS, when set, is the client's TLS configuration (the roots a test
	// server's certificate is checked against); the server name is always
	// the URL's host.
	TLS *tls.Config
}

// Enabled reports whether an SMTP server is configured.
func (c Config) Enabled() bool { return strings.TrimSpace(c.URL) != "" }

// endpoint is a parsed SMTP_URL.
type endpoint struct {
	scheme, host   string
	port           int
	user, password string
}

// parse reads c.URL; its errors never repeat the URL, which may hold a
// password.
func (c Config) parse() (endpoint, error) {
	u, err := url.Parse(strings.TrimSpace(c.URL))
	if err != nil {
		return endpoint{}, errors.New("is not a URL; use smtp://user:password@host:587, smtps://user:password@host:465 or smtp+insecure://host:port (percent-encode special characters in the password)")
	}
	e := endpoint{scheme: strings.ToLower(u.Scheme), host: u.Hostname()}
	var defaultPort int
	switch e.scheme {
	case "smtp":
		defaultPort = 587
	case "smtps":
		defaultPort = 465
	case "smtp+insecure":
		defaultPort = 25
	default:
		return endpoint{}, fmt.Errorf("has the scheme %q; use smtp:// (STARTTLS, port 587), smtps:// (TLS, port 465) or smtp+insecure:// (no encryption, development only)", u.Scheme)
	}
	if e.host == "" {
		return endpoint{}, errors.New("names no host; use smtp://user:password@host:587")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return endpoint{}, errors.New("has a path or query; use scheme, credentials, host and port only")
	}
	e.port = defaultPort
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return endpoint{}, fmt.Errorf("has the port %q; use a number from 1 to 65535", p)
		}
		e.port = n
	}
	if u.User != nil {
		e.user = u.User.Username()
		e.password, _ = u.User.Password()
	}
	if e.scheme == "smtp+insecure" && e.user != "" && !loopback(e.host) {
		return endpoint{}, errors.New("sends a password unencrypted to a host that is not this machine; use smtp:// (STARTTLS) or smtps://")
	}
	return e, nil
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Validate checks the configuration; its message names the variable and
// never repeats SMTP_URL's password.
func (c Config) Validate() error {
	if !c.Enabled() {
		if strings.TrimSpace(c.From) != "" {
			return errors.New("MAIL_FROM: is set without SMTP_URL; set SMTP_URL to the mail server, or unset MAIL_FROM")
		}
		return nil
	}
	if c.logs() {
		return nil
	}
	var errs []string
	if _, err := c.parse(); err != nil {
		errs = append(errs, "SMTP_URL: "+err.Error())
	}
	switch from := strings.TrimSpace(c.From); {
	case from == "":
		errs = append(errs, `MAIL_FROM: is required with SMTP_URL; set the sender, such as "ctalk <ctalk@example.com>"`)
	default:
		if _, err := netmail.ParseAddress(from); err != nil {
			errs = append(errs, fmt.Sprintf(`MAIL_FROM: %q is not an address such as "ctalk <ctalk@example.com>" or ctalk@example.com`, from))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Redacted is SMTP_URL with its password replaced, for logs.
func (c Config) Redacted() string {
	u, err := url.Parse(strings.TrimSpace(c.URL))
	if err != nil {
		return "(unparsable SMTP_URL)"
	}
	return u.Redacted()
}

// Message is one email.
type Message struct {
	To string
	// Subject is made one line (OneLine), as every header is.
	Subject string
	// Text is the text/plain part; it is required.
	Text string
	// HTML is the text/html alternative; optional.
	HTML string
	// MessageID is the Message-ID without angle brackets; generated from
	// the sender's domain if empty.
	MessageID string
	// InReplyTo and References thread a message with earlier ones (ids
	// without angle brackets).
	InReplyTo  string
	References []string
	// Headers are extra headers, such as List-Unsubscribe and
	// List-Unsubscribe-Post.
	Headers map[string]string
}

// Sender sends email.
type Sender interface {
	// Send delivers m to the SMTP server within the configured timeout (or
	// ctx's deadline, if sooner). Its error is EInvalid for a message that
	// cannot be sent as given, and otherwise EUnavailable, with a message
	// for the person who asked for the mail; Temporary tells whether trying
	// again later may succeed.
	Send(ctx context.Context, m Message) error
}

// ErrDisabled is the error of a Sender made from a Config without SMTP_URL.
var ErrDisabled = ctalk.Errorf(ctalk.EUnavailable, "this server sends no email (SMTP_URL is not set); ask its operator to set up email")

// New returns the Sender of c, which must be valid. Without SMTP_URL it
// returns a Sender whose every Send fails with ErrDisabled.
func New(c Config) (Sender, error) {
	if !c.Enabled() {
		return disabled{}, nil
	}
	if c.logs() {
		return NewLogSender(nil), nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	e, _ := c.parse()
	from, _ := netmail.ParseAddress(strings.TrimSpace(c.From))
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return &smtpSender{c: c, e: e, from: from}, nil
}

type disabled struct{}

func (disabled) Send(context.Context, Message) error { return ErrDisabled }

type smtpSender struct {
	c    Config
	e    endpoint
	from *netmail.Address
}

func (s *smtpSender) options() []gomail.Option {
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.c.TLS != nil {
		tlsConf = s.c.TLS.Clone()
	}
	tlsConf.ServerName = s.e.host
	opts := []gomail.Option{
		gomail.WithPort(s.e.port),
		gomail.WithTimeout(s.c.Timeout),
		gomail.WithTLSConfig(tlsConf),
	}
	switch s.e.scheme {
	case "smtp":
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case "smtps":
		opts = append(opts, gomail.WithSSL())
	case "smtp+insecure":
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	}
	if s.e.user != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(s.e.user), gomail.WithPassword(s.e.password))
	}
	return opts
}

func (s *smtpSender) message(m Message) (*gomail.Msg, error) {
	if strings.TrimSpace(m.Text) == "" {
		return nil, ctalk.Errorf(ctalk.EInvalid, "a mail needs a text part")
	}
	to, err := netmail.ParseAddress(strings.TrimSpace(m.To))
	if err != nil {
		return nil, ctalk.Errorf(ctalk.EInvalid, "%q is not an email address such as jane@example.com", m.To)
	}
	msg := gomail.NewMsg()
	msg.FromMailAddress(s.from)
	msg.ToMailAddress(to)
	msg.Subject(OneLine(m.Subject))
	msg.SetDate()
	id := m.MessageID
	if id == "" {
		id = NewMessageID(s.from.Address)
	}
	msg.SetMessageIDWithValue(id)
	if m.InReplyTo != "" {
		msg.SetGenHeader(gomail.HeaderInReplyTo, "<"+m.InReplyTo+">")
	}
	if len(m.References) > 0 {
		refs := make([]string, len(m.References))
		for i, r := range m.References {
			refs[i] = "<" + r + ">"
		}
		msg.SetGenHeader(gomail.HeaderReferences, strings.Join(refs, " "))
	}
	for k, v := range m.Headers {
		msg.SetGenHeader(gomail.Header(textproto.CanonicalMIMEHeaderKey(OneLine(k))), OneLine(v))
	}
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	}
	return msg, nil
}

// NewMessageID returns a new random Message-ID (without angle brackets) in
// the domain of the address from.
func NewMessageID(from string) string {
	domain := "ctalk.invalid"
	if i := strings.LastIndexByte(from, '@'); i >= 0 && i < len(from)-1 {
		domain = strings.TrimSuffix(from[i+1:], ">")
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b) + "@" + domain
}

func (s *smtpSender) Send(ctx context.Context, m Message) error {
	msg, err := s.message(m)
	if err != nil {
		return err
	}
	client, err := gomail.NewClient(s.e.host, s.options()...)
	if err != nil {
		return fmt.Errorf("mail client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.c.Timeout)
	defer cancel()
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		return s.classify(ctx, err)
	}
	return nil
}

// sendError is a failed Send: the person's message, whether to try again,
// and the cause for the log.
type sendError struct {
	safe      *ctalk.Error
	temporary bool
	cause     error
}

func (e *sendError) Error() string   { return e.safe.Message + " (" + e.cause.Error() + ")" }
func (e *sendError) Unwrap() []error { return []error{e.safe, e.cause} }

// Temporary reports whether err, from Send, is a failure that may pass: a
// 4xx reply, a server that cannot be reached or a timeout. A 5xx reply, a
// server without the TLS SMTP_URL requires, refused credentials or a
// message that cannot be sent are permanent.
func Temporary(err error) bool {
	var se *sendError
	return errors.As(err, &se) && se.temporary
}

// ReplyCode is the SMTP reply code of a failed Send (such as 421 or 550),
// or 0 when the server gave none.
func ReplyCode(err error) int {
	var send *gomail.SendError
	if errors.As(err, &send) && send.ErrorCode() != 0 {
		return send.ErrorCode()
	}
	var tp *textproto.Error
	if errors.As(err, &tp) {
		return tp.Code
	}
	return 0
}

func (s *smtpSender) classify(ctx context.Context, err error) error {
	addr := net.JoinHostPort(s.e.host, strconv.Itoa(s.e.port))
	fail := func(temporary bool, format string, args ...any) error {
		return &sendError{safe: ctalk.Errorf(ctalk.EUnavailable, format, args...), temporary: temporary, cause: err}
	}
	if code := ReplyCode(err); code >= 400 {
		reply := replyText(err)
		if code < 500 {
			return fail(true, "the mail server is refusing mail for now (%s); try again in a few minutes", reply)
		}
		if code == 535 || code == 534 || code == 530 {
			return fail(false, "the mail server refused ctalk's credentials (%s); the operator should check the user and password in SMTP_URL", reply)
		}
		return fail(false, "the mail server refused the message (%s)", reply)
	}
	var netErr net.Error
	switch {
	// go-mail has no sentinel error for a server without STARTTLS.
	case strings.Contains(err.Error(), "does not support STARTTLS"):
		return fail(false, "the mail server at %s does not offer STARTTLS, which SMTP_URL's smtp:// requires; the operator should use smtps:// or a server with STARTTLS", addr)
	case errors.As(err, new(*tls.CertificateVerificationError)) || errors.As(err, new(tls.RecordHeaderError)):
		return fail(false, "ctalk could not set up TLS with the mail server at %s; the operator should check SMTP_URL's host, port and scheme", addr)
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return fail(true, "the mail server at %s did not answer in time; try again in a few minutes", addr)
	case errors.As(err, &netErr) || errors.Is(err, net.ErrClosed):
		return fail(true, "the mail server at %s could not be reached; try again in a few minutes", addr)
	case errors.Is(err, gomail.ErrSMTPAuthMethodIsNil) || strings.Contains(strings.ToLower(err.Error()), "auth"):
		return fail(false, "the mail server did not accept ctalk's sign-in; the operator should check the credentials in SMTP_URL")
	}
	return fail(true, "the mail could not be sent through %s", addr)
}

// replyText is the server's reply in err, such as "550 5.1.1 no such user",
// cut to a readable length.
func replyText(err error) string {
	var tp *textproto.Error
	text := ""
	if errors.As(err, &tp) {
		text = fmt.Sprintf("%d %s", tp.Code, tp.Msg)
	} else {
		text = strconv.Itoa(ReplyCode(err))
	}
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	return text
}
