package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Config is everything ctalk reads from its environment, read once at start.
type Config struct {
	Port           int
	Host           string
	DatabaseURL    string
	DBPath         string
	PublicURL      string
	LogLevel       slog.Level
	BcryptCost     int
	TokenTTL       time.Duration
	TokenIdleTTL   time.Duration
	AllowOrgSignup bool
	SignupSecret   string
	// Question limits: asks per user per minute, and the loop breaker that
	// pauses a pair exchanging LoopMaxQuestions within LoopWindow.
	AsksPerMinute    int
	LoopMaxQuestions int
	LoopWindow       time.Duration
	ApprovalLinkTTL  time.Duration
	// MetricsToken enables /metrics for holders of this bearer token.
	MetricsToken string
	// AuditRetentionDays is how long audit events are kept.
	AuditRetentionDays int

	// DatabaseURLUnpooled is a direct URL of the same database for the
	// wake-up listener and migrations, when DatabaseURL is pooled.
	DatabaseURLUnpooled string
	// AllowedOrigins are origins, besides PUBLIC_URL's and loopback ones,
	// whose host names /mcp accepts in Host and Origin.
	AllowedOrigins []string
	// ReadTimeout bounds the time a client may take to send a request's
	// headers, and then its body.
	ReadTimeout time.Duration
}

// Addr is the address the server listens on.
func (c Config) Addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// LoadConfig reads the configuration through getenv, applying defaults, and
// validates it as a whole. The error names every bad variable on one line.
func LoadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		Port:           8080,
		Host:           "0.0.0.0",
		DBPath:         "ctalk.db",
		LogLevel:       slog.LevelInfo,
		BcryptCost:     12,
		TokenTTL:       720 * time.Hour,
		TokenIdleTTL:   168 * time.Hour,
		AllowOrgSignup: true,

		AsksPerMinute:    30,
		LoopMaxQuestions: 20,
		LoopWindow:       5 * time.Minute,
		ApprovalLinkTTL:  24 * time.Hour,

		AuditRetentionDays: 90,
		ReadTimeout:        10 * time.Second,
	}
	var errs []string
	bad := func(name, format string, args ...any) {
		errs = append(errs, name+": "+fmt.Sprintf(format, args...))
	}
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	integer := func(name string, dst *int, min, max int) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < min || n > max {
			bad(name, "%q is not a whole number from %d to %d", v, min, max)
			return
		}
		*dst = n
	}
	duration := func(name string, dst *time.Duration) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			bad(name, "%q is not a positive duration such as 720h or 30m", v)
			return
		}
		*dst = d
	}

	integer("PORT", &c.Port, 0, 65535)
	str("HOST", &c.Host)
	str("DATABASE_URL", &c.DatabaseURL)
	str("DATABASE_URL_UNPOOLED", &c.DatabaseURLUnpooled)
	str("RELAY_DB_PATH", &c.DBPath)
	str("PUBLIC_URL", &c.PublicURL)
	integer("BCRYPT_COST", &c.BcryptCost, bcrypt.MinCost, bcrypt.MaxCost)
	duration("TOKEN_TTL", &c.TokenTTL)
	duration("TOKEN_IDLE_TTL", &c.TokenIdleTTL)
	str("SIGNUP_SECRET", &c.SignupSecret)
	integer("ASKS_PER_MINUTE", &c.AsksPerMinute, 1, 100000)
	integer("LOOP_MAX_QUESTIONS", &c.LoopMaxQuestions, 2, 100000)
	duration("LOOP_WINDOW", &c.LoopWindow)
	duration("APPROVAL_LINK_TTL", &c.ApprovalLinkTTL)
	duration("READ_TIMEOUT", &c.ReadTimeout)
	str("METRICS_TOKEN", &c.MetricsToken)
	integer("AUDIT_RETENTION_DAYS", &c.AuditRetentionDays, 1, 36500)
	if c.MetricsToken != "" && len(c.MetricsToken) < 16 {
		bad("METRICS_TOKEN", "is %d characters; use at least 16 random characters", len(c.MetricsToken))
	}

	if v := strings.TrimSpace(getenv("LOG_LEVEL")); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			bad("LOG_LEVEL", "%q is not one of debug, info, warn, error", v)
		}
	}
	if v := strings.TrimSpace(getenv("ALLOW_ORG_SIGNUP")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("ALLOW_ORG_SIGNUP", "%q is not true or false", v)
		}
		c.AllowOrgSignup = b
	}
	for _, v := range []struct{ name, url string }{{"DATABASE_URL", c.DatabaseURL}, {"DATABASE_URL_UNPOOLED", c.DatabaseURLUnpooled}} {
		if v.url == "" {
			continue
		}
		u, err := url.Parse(v.url)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			bad(v.name, "must be a postgres:// or postgresql:// URL")
		}
	}
	if c.DatabaseURLUnpooled != "" && c.DatabaseURL == "" {
		bad("DATABASE_URL_UNPOOLED", "is set without DATABASE_URL; set DATABASE_URL to the (pooled) URL requests use")
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("PUBLIC_URL", "%q must be an http:// or https:// URL such as https://ctalk.example.com", c.PublicURL)
		} else {
			c.PublicURL = strings.TrimSuffix(strings.TrimRight(c.PublicURL, "/"), "/mcp")
		}
	}
	for _, o := range strings.Split(getenv("ALLOWED_ORIGINS"), ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
			bad("ALLOWED_ORIGINS", "%q is not an origin such as https://app.example.com (scheme and host, no path)", o)
			continue
		}
		c.AllowedOrigins = append(c.AllowedOrigins, o)
	}
	if len(errs) > 0 {
		return c, errors.New("invalid configuration: " + strings.Join(errs, "; "))
	}
	return c, nil
}
