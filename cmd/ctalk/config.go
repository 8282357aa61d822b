package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/mail"
	"github.com/ctalk/ctalk/notify"
)

// Config is everything ctalk reads from its environment, read once at start.
type Config struct {
	Port           int
	Host           string
	DatabaseURL    string
	DBPath         string
	PublicURL      string
	LogLevel       slog.Level
	AllowOrgSignup bool
	SignupSecret   string
	// Auth and Inbox start from their packages' defaults; the environment
	// sets the bcrypt cost and token lifetimes, and the question limits.
	Auth  auth.Config
	Inbox inbox.Config
	// Mail is the SMTP server and sender of invites, password resets and
	// notifications; without SMTP_URL the server sends no email.
	Mail mail.Config
	// Notify starts from notify.DefaultConfig; the environment sets the
	// digest window.
	Notify notify.Config
	// MetricsToken enables /metrics for holders of this bearer token.
	MetricsToken string
	// AuditRetentionDays is how long the audit events of an organization
	// that chose no retention of its own are kept.
	AuditRetentionDays int

	// DatabaseURLUnpooled is a direct URL of the same database for the
	// wake-up listener and migrations, when DatabaseURL is pooled.
	DatabaseURLUnpooled string
	// AllowOtherTables lets the first migration run in a Postgres schema
	// that holds another application's tables (see db.Config).
	AllowOtherTables bool
	// DatabaseRole is the Postgres role the server's statements run as,
	// bound by row-level security (see db.Config.Role).
	DatabaseRole string
	// sharedStore is set by "ctalk serve --local": other processes use
	// the SQLite file at DBPath too (see db.Config.Shared).
	sharedStore bool
	// OnPlatform is set on Railway and Render (their own variables say so),
	// where the server is never on the machine of the person using it.
	OnPlatform bool
	// AllowedOrigins are origins, besides PUBLIC_URL's and loopback ones,
	// whose host names /mcp accepts in Host and Origin.
	AllowedOrigins []string
	// ReadTimeout bounds the time a client may take to send a request's
	// headers, and then its body.
	ReadTimeout time.Duration
	// SessionIdleTTL is how long an MCP session that its client left
	// without ending it stays in memory; see api.DefaultSessionIdleTTL.
	SessionIdleTTL time.Duration
	// TrustedProxies are the peers whose ClientIPHeader names a request's
	// client, for the per-address limits; see TRUSTED_PROXIES.
	TrustedProxies []netip.Prefix
	ClientIPHeader string
}

// proxyPresets are the proxies in front of ctalk on the platforms it ships
// recipes for, and the header they name the client in. deploy/README.md says
// where each comes from.
var proxyPresets = map[string]struct {
	header string
	nets   []string
}{
	// Railway's edge connects from its internal 100.64.0.0/10 network and
	// sets X-Real-IP to the client, replacing any the client sent; its
	// X-Forwarded-For may name a CDN or the edge itself instead.
	"railway": {"X-Real-IP", []string{"100.64.0.0/10"}},
	// Render's proxy connects from 10.0.0.0/8 behind Cloudflare, which
	// appends the client to X-Forwarded-For; Cloudflare's published ranges
	// are skipped as proxies.
	"render": {"X-Forwarded-For", []string{"10.0.0.0/8",
		"173.245.48.0/20", "103.21.244.0/22", "103.22.200.0/22", "103.31.4.0/22", "141.101.64.0/18",
		"108.162.192.0/18", "190.93.240.0/20", "188.114.96.0/20", "197.234.240.0/22", "198.41.128.0/17",
		"162.158.0.0/15", "104.16.0.0/13", "104.24.0.0/14", "172.64.0.0/13", "131.0.72.0/22",
		"2400:cb00::/32", "2606:4700::/32", "2803:f800::/32", "2405:b500::/32", "2405:8100::/32",
		"2a06:98c0::/29", "2c0f:f248::/32"}},
}

// parseTrustedProxies reads TRUSTED_PROXIES: a comma-separated list of
// networks (CIDR) and addresses, platform names from proxyPresets, or
// "none". It returns the networks and the header their client is named in.
func parseTrustedProxies(v string) ([]netip.Prefix, string, error) {
	var (
		nets   []netip.Prefix
		header string
	)
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if p, ok := proxyPresets[strings.ToLower(item)]; ok {
			if header != "" && header != p.header {
				return nil, "", fmt.Errorf("%q names its client in %s, another entry in %s; list one platform's proxies", item, p.header, header)
			}
			header = p.header
			for _, n := range p.nets {
				nets = append(nets, netip.MustParsePrefix(n))
			}
			continue
		}
		switch p, err := netip.ParsePrefix(item); {
		case strings.EqualFold(item, "none") || item == "":
		case err == nil:
			nets = append(nets, p.Masked())
		default:
			a, err := netip.ParseAddr(item)
			if err != nil {
				return nil, "", fmt.Errorf("%q is not a network such as 10.0.0.0/8, an address, railway, render or none", item)
			}
			nets = append(nets, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	if header == "" {
		header = "X-Forwarded-For"
	}
	return nets, header, nil
}

// listenHost reports whether h can be listened on: an IP address, or a host
// name made of letters, digits, hyphens and dots.
func listenHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// Addr is the address the server listens on.
func (c Config) Addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// LocalURL is the base of the links in mails and notifications when
// PUBLIC_URL is unset and the server runs on the machine of the people
// using it: bound to loopback, or on the SQLite default away from Railway
// and Render (a laptop, as "go run ./cmd/ctalk" starts it). It is
// http://localhost with the port listened on, addr's; "" elsewhere, where
// notifications stay off until PUBLIC_URL is set. The second case says so
// in the log, since people on other machines cannot open such links.
func (c Config) LocalURL(addr net.Addr) (url string, onlyHere bool) {
	if c.PublicURL != "" {
		return "", false
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "", false
	}
	base := "http://localhost:" + strconv.Itoa(tcp.Port)
	if ip := net.ParseIP(c.Host); strings.EqualFold(c.Host, "localhost") || (ip != nil && ip.IsLoopback()) {
		return base, false
	}
	if c.DatabaseURL == "" && !c.OnPlatform {
		return base, true
	}
	return "", false
}

// LoadConfig reads the configuration through getenv, applying defaults, and
// validates it as a whole. The error names every bad variable on one line.
func LoadConfig(getenv func(string) string) (Config, error) {
	c := defaultConfig()
	e := &env{getenv: getenv}
	c.loadServer(e)
	c.loadLimits(e)
	c.loadMail(e)
	c.loadOperations(e)
	if len(e.errs) > 0 {
		return c, errors.New("invalid configuration: " + strings.Join(e.errs, "; "))
	}
	return c, nil
}

// defaultConfig is the configuration of an empty environment.
func defaultConfig() Config {
	return Config{
		Port:           8080,
		Host:           "0.0.0.0",
		DBPath:         "ctalk.db",
		LogLevel:       slog.LevelInfo,
		AllowOrgSignup: true,
		Auth:           auth.DefaultConfig(),
		Inbox:          inbox.DefaultConfig(),
		Notify:         notify.DefaultConfig(),

		AuditRetentionDays: audit.DefaultRetentionDays,
		ReadTimeout:        10 * time.Second,
		SessionIdleTTL:     api.DefaultSessionIdleTTL,
	}
}

// loadServer reads where the server listens, its databases, its public
// address and its tokens.
func (c *Config) loadServer(e *env) {
	e.integer("PORT", &c.Port, 0, 65535)
	e.str("HOST", &c.Host)
	if !listenHost(c.Host) {
		e.bad("HOST", "%q is not an address to listen on; use an IP address such as 0.0.0.0, 127.0.0.1 or ::, or a host name such as localhost (no scheme, port or brackets)", c.Host)
	}
	e.str("DATABASE_URL", &c.DatabaseURL)
	e.str("DATABASE_URL_UNPOOLED", &c.DatabaseURLUnpooled)
	e.boolean("DATABASE_ALLOW_OTHER_TABLES", &c.AllowOtherTables)
	e.str("DATABASE_ROLE", &c.DatabaseRole)
	e.str("RELAY_DB_PATH", &c.DBPath)
	e.str("PUBLIC_URL", &c.PublicURL)
	e.integer("BCRYPT_COST", &c.Auth.BcryptCost, bcrypt.MinCost, bcrypt.MaxCost)
	e.duration("TOKEN_TTL", &c.Auth.TokenTTL)
	e.duration("TOKEN_IDLE_TTL", &c.Auth.IdleTTL)
	if strings.TrimSpace(e.getenv("TOKEN_IDLE_TTL")) != "" && c.Auth.IdleTTL > c.Auth.TokenTTL {
		// Left unset, the idle default simply never applies to tokens
		// that end sooner; set, it would promise what TOKEN_TTL prevents.
		e.bad("TOKEN_IDLE_TTL", "%s is longer than TOKEN_TTL (%s), which ends every token first; set it shorter, or raise TOKEN_TTL", c.Auth.IdleTTL, c.Auth.TokenTTL)
	}
	e.str("SIGNUP_SECRET", &c.SignupSecret)
}

// loadLimits reads the limits on questions, requests and MCP sessions.
func (c *Config) loadLimits(e *env) {
	e.integer("ASKS_PER_MINUTE", &c.Inbox.AsksPerMinute, 1, 100000)
	e.integer("LOOP_MAX_QUESTIONS", &c.Inbox.LoopMax, 2, 100000)
	e.duration("LOOP_WINDOW", &c.Inbox.LoopWindow)
	e.duration("READ_TIMEOUT", &c.ReadTimeout)
	e.duration("MCP_SESSION_IDLE_TTL", &c.SessionIdleTTL)
	if c.SessionIdleTTL < api.MinSessionIdleTTL {
		// A session waiting in wait_for_inbox (up to wait.MaxWait) must
		// not be forgotten meanwhile.
		e.bad("MCP_SESSION_IDLE_TTL", "%s is shorter than the longest wait and a minute (%s)", c.SessionIdleTTL, api.MinSessionIdleTTL)
	}
}

// loadMail reads the SMTP setup and the notifications' digest window.
func (c *Config) loadMail(e *env) {
	e.str("SMTP_URL", &c.Mail.URL)
	e.str("MAIL_FROM", &c.Mail.From)
	if err := c.Mail.Validate(); err != nil {
		// Validate's message names the variable and never the password.
		e.errs = append(e.errs, err.Error())
	}
	digest := int(c.Notify.DigestWindow / time.Second)
	e.integer("NOTIFY_DIGEST_SECONDS", &digest, 0, 3600)
	c.Notify.DigestWindow = time.Duration(digest) * time.Second
}

// loadOperations reads metrics, audit, proxies, logging, sign-up and
// origins, and checks the URLs and what needs PUBLIC_URL.
func (c *Config) loadOperations(e *env) {
	e.str("METRICS_TOKEN", &c.MetricsToken)
	e.integer("AUDIT_RETENTION_DAYS", &c.AuditRetentionDays, audit.MinRetentionDays, audit.MaxRetentionDays)
	var err error
	if c.TrustedProxies, c.ClientIPHeader, err = parseTrustedProxies(trustedProxies(e.getenv)); err != nil {
		e.bad("TRUSTED_PROXIES", "%v", err)
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < 16 {
		e.bad("METRICS_TOKEN", "is %d characters; use at least 16 random characters", len(c.MetricsToken))
	}
	if v := strings.TrimSpace(e.getenv("LOG_LEVEL")); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			e.bad("LOG_LEVEL", "%q is not one of debug, info, warn, error", v)
		}
	}
	e.boolean("ALLOW_ORG_SIGNUP", &c.AllowOrgSignup)
	c.checkURLs(e)
	c.OnPlatform = e.getenv("RAILWAY_PROJECT_ID") != "" || e.getenv("RENDER") != ""
	if c.Mail.Enabled() && !c.Mail.Logs() && c.PublicURL == "" {
		// A link built from a request's Host could point a reset mail
		// at a stranger's site.
		e.bad("SMTP_URL", "needs PUBLIC_URL, which the links in invite and password reset mails start with; set PUBLIC_URL to the address people open ctalk at")
	}
	if c.AllowedOrigins, err = parseAllowedOrigins(e.getenv("ALLOWED_ORIGINS")); err != nil {
		e.bad("ALLOWED_ORIGINS", "%v", err)
	}
}

// checkURLs validates the database and public URLs, and normalizes
// PUBLIC_URL.
func (c *Config) checkURLs(e *env) {
	for _, v := range []struct{ name, url string }{{"DATABASE_URL", c.DatabaseURL}, {"DATABASE_URL_UNPOOLED", c.DatabaseURLUnpooled}} {
		if v.url == "" {
			continue
		}
		u, err := url.Parse(v.url)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			e.bad(v.name, "must be a postgres:// or postgresql:// URL")
		}
	}
	switch r := c.DatabaseRole; {
	case r != "" && c.DatabaseURL == "":
		e.bad("DATABASE_ROLE", "is set without DATABASE_URL: row-level security is PostgreSQL's, and on SQLite each statement's own org filter keeps organizations apart; unset it, or set DATABASE_URL")
	case len(r) > 63 || strings.ContainsAny(r, "\x00\"") || r != strings.TrimSpace(r):
		e.bad("DATABASE_ROLE", "%q is not a PostgreSQL role name: at most 63 characters, without quotes or surrounding spaces", r)
	}
	if c.DatabaseURLUnpooled != "" && c.DatabaseURL == "" {
		e.bad("DATABASE_URL_UNPOOLED", "is set without DATABASE_URL; set DATABASE_URL to the (pooled) URL requests use")
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			e.bad("PUBLIC_URL", "%q must be an http:// or https:// URL such as https://ctalk.example.com", c.PublicURL)
		} else {
			c.PublicURL = strings.TrimSuffix(strings.TrimRight(c.PublicURL, "/"), "/mcp")
		}
	}
}

// trustedProxies returns TRUSTED_PROXIES. Unset, the platform's own
// variables choose its proxies: Railway sets RAILWAY_PROJECT_ID and Render
// sets RENDER in every service.
func trustedProxies(getenv func(string) string) string {
	switch {
	case strings.TrimSpace(getenv("TRUSTED_PROXIES")) != "":
		return strings.TrimSpace(getenv("TRUSTED_PROXIES"))
	case getenv("RAILWAY_PROJECT_ID") != "":
		return "railway"
	case getenv("RENDER") != "":
		return "render"
	}
	return ""
}

// parseAllowedOrigins reads ALLOWED_ORIGINS: a comma-separated list of
// origins. The error names every entry that is not one.
func parseAllowedOrigins(v string) ([]string, error) {
	var origins, bad []string
	for _, o := range strings.Split(v, ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
			bad = append(bad, fmt.Sprintf("%q is not an origin such as https://app.example.com (scheme and host, no path)", o))
			continue
		}
		origins = append(origins, o)
	}
	if len(bad) > 0 {
		return origins, errors.New(strings.Join(bad, "; ALLOWED_ORIGINS: "))
	}
	return origins, nil
}

// env reads variables through getenv into settings, keeping their defaults
// when unset and collecting every bad value.
type env struct {
	getenv func(string) string
	errs   []string
}

func (e *env) bad(name, format string, args ...any) {
	e.errs = append(e.errs, name+": "+fmt.Sprintf(format, args...))
}

func (e *env) str(name string, dst *string) {
	if v := strings.TrimSpace(e.getenv(name)); v != "" {
		*dst = v
	}
}

func (e *env) integer(name string, dst *int, min, max int) {
	v := strings.TrimSpace(e.getenv(name))
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		e.bad(name, "%q is not a whole number from %d to %d", v, min, max)
		return
	}
	*dst = n
}

func (e *env) duration(name string, dst *time.Duration) {
	v := strings.TrimSpace(e.getenv(name))
	if v == "" {
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		e.bad(name, "%q is not a positive duration such as 720h or 30m", v)
		return
	}
	*dst = d
}

func (e *env) boolean(name string, dst *bool) {
	v := strings.TrimSpace(e.getenv(name))
	if v == "" {
		return
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.bad(name, "%q is not true or false", v)
	}
	*dst = b
}
