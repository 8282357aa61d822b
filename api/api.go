// Package api is ctalk's HTTP face: the echo app, its middleware, /mcp
// serving the MCP tools of package tools, the REST mirror, and the mapping
// from error codes to HTTP statuses. It holds no SQL; the domain services do
// the work.
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/reqctx"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/oauth"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/scim"
	"github.com/ctalk/ctalk/tools"
	"github.com/ctalk/ctalk/wait"
	"github.com/ctalk/ctalk/web"
)

// MaxBodyBytes is the largest request body accepted; larger ones get 413.
const MaxBodyBytes = 1 << 20

// Config holds what the HTTP layer needs to know about its deployment.
type Config struct {
	// PublicURL is the URL agents use to reach this server, without /mcp.
	// When empty it is derived from each request. Its host is the name
	// /mcp answers to (see hostPolicy).
	PublicURL string
	// AllowedOrigins are further origins, such as https://app.example.com,
	// whose host names /mcp accepts in Host and Origin.
	AllowedOrigins []string
	// Version is shown on / and in the MCP server info; Build (commit and
	// build time) on / only.
	Version string
	Build   string
	Logger  *slog.Logger
	// AllowOrgSignup, SignupSecret and ProgressEvery are handed to the
	// tools (see tools.Config), and the first two to the web app's sign-up.
	AllowOrgSignup bool
	SignupSecret   string
	ProgressEvery  time.Duration
	// ReadTimeout bounds the time a client may take to send a request
	// body (see readDeadline); zero means no bound.
	ReadTimeout time.Duration
	// MetricsToken guards /metrics; when empty, /metrics is off.
	MetricsToken string
	// Audit records every tool call; nil records nothing.
	Audit *audit.Log
	// TrustedProxies are the networks of the proxies in front of ctalk.
	// Only a request whose peer is in one of them has its client address
	// taken from ClientIPHeader; every other request's client is its peer.
	TrustedProxies []netip.Prefix
	// ClientIPHeader names the header trusted proxies report the client in:
	// X-Forwarded-For (the default; its last entry that is not a trusted
	// proxy) or X-Real-IP.
	ClientIPHeader string
	// OAuth configures the authorization server; the zero value means
	// oauth.DefaultConfig.
	OAuth *oauth.Config
	// SessionIdleTTL is how long an MCP session of the 2025-11-25 protocol
	// stays registered in mcp-go after its last request; zero means
	// DefaultSessionIdleTTL (see sessionIdleTTL).
	SessionIdleTTL time.Duration
}

// Server is the ctalk HTTP application.
type Server struct {
	cfg   Config
	log   *slog.Logger
	db    *db.DB
	inbox *inbox.Service
	echo  *echo.Echo
	mcp   *server.MCPServer
	http  *server.StreamableHTTPServer
	// stop is closed when the server starts draining, ending every wait.
	stop     chan struct{}
	stopOnce sync.Once
	metrics  *metrics
	hosts    hostPolicy
	// oauth is the authorization server; web the web app for people.
	oauth *oauth.Service
	web   *web.Pages
	// tools are the MCP tools and resources served at /mcp.
	tools    *tools.Server
	channels *channels.Service
	presence *orgs.Presence
	// streams caps the open event streams (GET /mcp) per user;
	// restStreams the REST event streams, restPolls the REST long-polls.
	streams, restStreams, restPolls *wait.Limit
	// parked are the calls parkWaits holds, for their clients' cancels.
	parked parkedCalls
}

// Parts are what a Server serves and calls, built by app.Assemble.
type Parts struct {
	DB *db.DB
	// Services are the domain services, which the tools call too.
	tools.Services
	// Tools are the MCP tools served at /mcp; Web the web app for people.
	Tools *tools.Server
	Web   *web.Pages
	// Metrics is the registry /metrics serves, the tools' series included.
	Metrics *prometheus.Registry
	// Stop is closed by Drain, ending every wait of the tools and the web
	// app that were given it.
	Stop chan struct{}
	// SCIM serves /scim/v2 to the orgs' identity providers; nil serves
	// nothing there.
	SCIM *scim.Service
}

// New builds the HTTP application over parts.
func New(cfg Config, p Parts) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, db: p.DB, inbox: p.Inbox, channels: p.Channels, presence: p.Presence,
		oauth: p.OAuth, web: p.Web, tools: p.Tools, mcp: p.Tools.MCP(), stop: p.Stop, hosts: newHostPolicy(cfg),
		streams: wait.NewLimit(maxStreamsPerUser), restStreams: wait.NewLimit(MaxRESTPerUser), restPolls: wait.NewLimit(MaxRESTPerUser)}
	s.metrics = s.newMetrics(p.Metrics)
	s.http = server.NewStreamableHTTPServer(s.mcp,
		// checkHost guards against DNS rebinding with the names this
		// server is configured with; mcp-go's guard knows only loopback
		// names and would refuse a proxy on the same host.
		server.WithDisableLocalhostProtection(true),
		// An event stream (GET /mcp, see eventStream) may carry nothing for
		// long: a ping every 25 s keeps proxies from cutting it as idle.
		server.WithHeartbeatInterval(25*time.Second),
		server.WithStreamableHTTPLogger(s.log),
		// Session ids name their owner (see bindSession).
		server.WithSessionIdManagerResolver(sessionIDResolver{}),
		server.WithSessionIdleTTL(s.sessionIdleTTL()),
	)

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.httpError
	e.IPExtractor = clientIPExtractor(cfg.TrustedProxies, cfg.ClientIPHeader)
	// A bare number is bytes; "1M" would be 1,000,000, not MaxBodyBytes.
	e.Use(s.requestContext, s.readDeadline, middleware.BodyLimit(fmt.Sprint(MaxBodyBytes)), s.recoverPanics)
	e.GET("/health", s.health)
	e.GET("/ready", s.ready)
	e.GET("/metrics", s.metricsHandler())
	e.GET("/approve/:token", s.approvalLink)
	e.POST("/approve/:token", s.approvalLinkPost)
	// The chain is built once here: echo would build a route's
	// middleware anew on every request, ten closures on every call.
	e.Any("/mcp", chain(echo.WrapHandler(s.http), s.mcpChain()...))
	s.mountOAuth(e)
	s.mountDiscovery(e)
	s.web.Mount(e)
	s.registerREST(e)
	if p.SCIM != nil {
		// No session and no CSRF: each call carries its org's SCIM token.
		h := echo.WrapHandler(p.SCIM.Handler())
		e.Any(scim.Path, h)
		e.Any(scim.Path+"/*", h)
	}
	if p.Notify != nil {
		unsubscribe := echo.WrapHandler(p.Notify.UnsubscribeHandler())
		e.GET(notify.UnsubscribePath, unsubscribe)
		e.POST(notify.UnsubscribePath, unsubscribe)
	}
	s.echo = e
	return s
}

// mcpChain is the middleware a request to /mcp passes, in order, before
// mcp-go handles it. Each answers some requests itself and passes the rest.
func (s *Server) mcpChain() []echo.MiddlewareFunc {
	return []echo.MiddlewareFunc{
		s.checkHost,          // a Host or Origin not configured: 403 (DNS rebinding)
		mcpCORS,              // browsers' preflights; CORS headers on the rest
		toolsets,             // X-MCP-Toolsets and ?toolsets= into the context
		s.bearer,             // the credential, checked, into the context
		s.bindSession,        // a session id used by anyone but its owner: 404
		s.eventStream,        // GET: the session's event stream
		s.jsonRPCBody,        // POST: the message read and decoded once (rpcOf)
		s.challengeAnonymous, // no credential: a tool that acts as someone, or a connection not opted in to set-up: 401
		s.parkWaits,          // wait_for_*: held here, not inside mcp-go
		s.resourceReadErrors, // resources/read: errors shaped as the spec asks
	}
}

// chain returns h behind middleware, the first outermost, as echo applies
// a route's middleware.
func chain(h echo.HandlerFunc, middleware ...echo.MiddlewareFunc) echo.HandlerFunc {
	for i := len(middleware) - 1; i >= 0; i-- {
		h = middleware[i](h)
	}
	return h
}

// Handler returns the application as an http.Handler. GET /health and GET
// /ready skip the middleware and the request log: platforms probe them every
// few seconds, and a probe should cost about what a bare net/http handler
// costs and leave no line in the log. Their other methods reach echo, which
// answers 405.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			switch r.URL.Path {
			case "/health":
				w.Header()[echo.HeaderXRequestID] = []string{requestIDOf(r)}
				writeProbe(w, http.StatusOK, healthBody)
				return
			case "/ready":
				w.Header()[echo.HeaderXRequestID] = []string{requestIDOf(r)}
				s.serveReady(w, r)
				return
			}
		}
		s.echo.ServeHTTP(w, r)
	})
}

// Drain makes every waiting tool call return now, empty-handed, telling its
// agent to call again: the first step of a graceful shutdown.
func (s *Server) Drain() { s.stopOnce.Do(func() { close(s.stop) }) }

func (s *Server) draining() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// Close ends waits and releases the MCP sessions.
func (s *Server) Close(ctx context.Context) error {
	s.Drain()
	return s.http.Shutdown(ctx)
}

// requestContext gives every request an id, records the client address and
// logs one line when the request ends, unless a tool call it carried logged
// the request already. It never logs headers or bodies, so no token,
// password or message text reaches the log.
func (s *Server) requestContext(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		req := c.Request()
		id := requestIDOf(req)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		ip := c.RealIP()
		ctx, logged := reqctx.Start(req.Context(), id, ip, s.publicURL(req))
		ctx = auth.WithClientAddr(ctx, ip)
		c.SetRequest(req.WithContext(ctx))

		err := next(c)
		if err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		if logged.Load() && status < 500 {
			return nil
		}
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		s.log.LogAttrs(ctx, level, "http request",
			slog.String("request_id", id),
			slog.String("method", req.Method),
			slog.String("path", logPath(c)),
			// The address the per-address limits count, so an operator can
			// check that TRUSTED_PROXIES names the proxy in front.
			slog.String("client", ip),
			slog.Int("status", status),
			slog.Duration("duration", time.Since(start)),
		)
		return nil
	}
}

// logPath is the route a request matched, such as /approve/:token, so that
// secrets in paths (approval tokens) never reach the log; unmatched requests
// log their path, shortened.
func logPath(c echo.Context) string {
	if p := c.Path(); p != "" && p != "/*" {
		return p
	}
	return ctalk.Shorten(c.Request().URL.Path, 100)
}

// clientIPExtractor returns how echo finds a request's client address: from
// header only when the peer is one of the trusted proxies, else the peer
// itself. Echo's extractors trust loopback, link-local and private peers
// unless told not to, which would let any such client pick its own address.
func clientIPExtractor(trusted []netip.Prefix, header string) echo.IPExtractor {
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		p = p.Masked()
		opts = append(opts, echo.TrustIPRange(&net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}))
	}
	if strings.EqualFold(header, echo.HeaderXRealIP) {
		return echo.ExtractIPFromRealIPHeader(opts...)
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// recoverPanics turns a panic in a handler into a logged 500 instead of a
// dropped connection.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.log.Error("panic in handler", "request_id", requestID(c.Request().Context()), "panic", r)
				err = echo.NewHTTPError(http.StatusInternalServerError, "internal error")
			}
		}()
		return next(c)
	}
}

// bearer authenticates an Authorization header on /mcp. No header is fine:
// the public tools need no identity. A header that names no valid token is
// answered 401 with a WWW-Authenticate challenge, as OAuth-aware clients expect.
func (s *Server) bearer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header.Get(echo.HeaderAuthorization)
		if h == "" {
			return next(c)
		}
		scheme, raw, _ := strings.Cut(h, " ")
		raw = strings.TrimSpace(raw)
		if !strings.EqualFold(scheme, "Bearer") || raw == "" {
			return s.unauthorized(c, "the Authorization header must be \"Bearer <token>\"; get a token with the login tool")
		}
		ctx := c.Request().Context()
		// Taken before the check: a revocation from now on makes what the
		// request holds open check again (see wait.Broker.Checked).
		seen := s.inbox.Broker().Revocations()
		sess, err := s.tools.Authenticate(ctx, raw)
		if err != nil {
			if ctalk.ErrorCode(err) == ctalk.EUnauthorized {
				return s.unauthorized(c, ctalk.ErrorMessage(err))
			}
			if ctalk.ErrorCode(err) == ctalk.EUnavailable {
				// The token cannot be checked while the database is down. Let
				// the request through with the reason: a tool call then gets it
				// as a retryable tool error, where an HTTP 503 would reach the
				// agent without its message.
				c.SetRequest(c.Request().WithContext(reqctx.WithAuthError(ctx, err)))
				return next(c)
			}
			return err
		}
		ctx = reqctx.WithSession(ctalk.WithOrg(ctx, sess.OrgID), sess, s.tools.Credential(ctx, raw, sess, seen))
		c.SetRequest(c.Request().WithContext(ctx))
		return next(c)
	}
}

func (s *Server) unauthorized(c echo.Context, msg string) error {
	c.Response().Header().Set(echo.HeaderWWWAuthenticate, s.challenge(c.Request().Context(), "invalid_token", msg))
	return c.JSON(http.StatusUnauthorized, map[string]string{"error": "unauthorized", "message": msg})
}

// httpError answers errors that escape handlers. Coded errors get their
// status; anything else is logged in full and shown as "internal error".
func (s *Server) httpError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg, _ := he.Message.(string)
		if msg == "" {
			msg = http.StatusText(he.Code)
		}
		if he.Code == http.StatusRequestEntityTooLarge {
			msg = fmt.Sprintf("the request body is over %d bytes (1 MiB); send a smaller one", MaxBodyBytes)
		}
		if s.web != nil && (s.web.Owns(c) || (errors.Is(err, echo.ErrNotFound) && web.Browser(c))) {
			// A page of the web app, or a browser at a path no route
			// serves: a page in words for a person.
			s.web.ErrorPage(c, he.Code, msg)
			return
		}
		c.JSON(he.Code, map[string]string{"error": strings.ToLower(strings.ReplaceAll(http.StatusText(he.Code), " ", "_")), "message": msg})
		return
	}
	if ctx := c.Request().Context(); ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		// The client went away (hung up on a long-poll): nothing failed
		// here, and no one reads an answer.
		c.Response().WriteHeader(statusClientClosed)
		return
	}
	code := ctalk.ErrorCode(err)
	if code == ctalk.EInternal {
		s.log.Error("request failed", "request_id", requestID(c.Request().Context()), "error", err)
	}
	var ce *ctalk.Error
	if errors.As(err, &ce) && ce.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(ce.RetryAfter.Seconds()))))
	}
	if s.web != nil && s.web.Owns(c) {
		s.web.ErrorPage(c, ctalk.HTTPStatus(code), ctalk.ErrorMessage(err))
		return
	}
	c.JSON(ctalk.HTTPStatus(code), map[string]string{"error": string(code), "message": ctalk.ErrorMessage(err)})
}

// statusClientClosed is the status a request whose client went away before
// its answer is logged with, as nginx logs it: not a server error.
const statusClientClosed = 499

// healthBody is the answer of GET /health, made once.
var healthBody = []byte(`{"status":"ok"}` + "\n")

// health and ready serve their routes for the methods Handler passes on to
// echo, so that those get echo's 405; Handler serves GET and HEAD itself.
func (s *Server) health(c echo.Context) error {
	writeProbe(c.Response(), http.StatusOK, healthBody)
	return nil
}

func (s *Server) ready(c echo.Context) error {
	s.serveReady(c.Response(), c.Request())
	return nil
}

// serveReady answers GET /ready: 200 when the database answers a ping within
// 2 s, else 503 with the reason, logged once per failed probe.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.db.Ping(ctx); err != nil {
		s.log.Warn("readiness check failed", "error", err)
		b, _ := json.Marshal(map[string]string{"status": "unavailable", "reason": "the " + string(s.db.Engine) + " database does not answer"})
		writeProbe(w, http.StatusServiceUnavailable, append(b, '\n'))
		return
	}
	b, _ := json.Marshal(map[string]string{"status": "ready", "database": string(s.db.Engine)})
	writeProbe(w, http.StatusOK, append(b, '\n'))
}

// writeProbe writes a probe's JSON answer.
func writeProbe(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = []string{echo.MIMEApplicationJSON}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	w.Write(body)
}

// publicURLFromContext is the URL agents reach this server at, as seen by
// the current request.
func (s *Server) publicURLFromContext(ctx context.Context) string { return reqctx.PublicURL(ctx) }

func requestID(ctx context.Context) string { return reqctx.ID(ctx) }

// requestIDOf is r's id: the caller's X-Request-ID when valid, else a new one.
func requestIDOf(r *http.Request) string {
	if id := r.Header.Get(echo.HeaderXRequestID); validRequestID(id) {
		return id
	}
	return newRequestID()
}

func newRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// validRequestID accepts a caller's request id only when it is short and
// plain, so that it cannot forge log content.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// statusOnly is a response writer that keeps nothing: what mcp-go answers
// a client's response is not passed on (see jsonRPCBody).
type statusOnly struct{ header http.Header }

func (w statusOnly) Header() http.Header         { return w.header }
func (w statusOnly) Write(b []byte) (int, error) { return len(b), nil }
func (w statusOnly) WriteHeader(int)             {}
