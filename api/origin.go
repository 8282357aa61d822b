package api

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/ctalk/ctalk"
)

// hostPolicy says which names a request to /mcp may carry in its Host and
// Origin headers. The MCP transport requires servers to validate Origin,
// against DNS rebinding: a web page whose own name its attacker re-points
// at 127.0.0.1 (or at a server behind the victim's firewall) sends requests
// that the browser treats as same-origin, with that name in Host and Origin.
// A server that answers only to names it knows cannot be reached that way.
type hostPolicy struct {
	// names are the host names allowed besides loopback ones: PUBLIC_URL's
	// and those of AllowedOrigins.
	names map[string]bool
	// known is whether PUBLIC_URL names this server. Without it ctalk cannot
	// tell its public name (which a proxy forwards in Host) from a
	// rebinding one, and checks Host only on connections made to a
	// loopback address: a server on the user's own machine.
	known bool
}

func newHostPolicy(cfg Config) hostPolicy {
	p := hostPolicy{names: map[string]bool{}}
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Hostname() != "" {
		p.names[strings.ToLower(u.Hostname())] = true
		p.known = true
	}
	for _, o := range cfg.AllowedOrigins {
		if u, err := url.Parse(o); err == nil && u.Hostname() != "" {
			p.names[strings.ToLower(u.Hostname())] = true
		}
	}
	return p
}

// isLoopbackName reports whether a host name always means this machine.
func isLoopbackName(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostname returns the name of a Host header value, without port or brackets.
func hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return strings.ToLower(h)
	}
	return strings.ToLower(strings.Trim(hostport, "[]"))
}

// reachedOnLoopback reports whether the request's connection was made to a
// loopback address of this machine.
func reachedOnLoopback(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// refusal says why a request's Host or Origin is refused, or "" when it is
// allowed.
func (p hostPolicy) refusal(r *http.Request) string {
	host := hostname(r.Host)
	hostOK := isLoopbackName(host) || p.names[host] || (!p.known && !reachedOnLoopback(r))
	if !hostOK {
		return "this server does not answer to the host name " + quoteShort(host) +
			" (a guard against DNS rebinding): it answers to PUBLIC_URL's host, loopback names and the hosts of ALLOWED_ORIGINS. If this is the server's public name, set PUBLIC_URL to its URL"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		// Not sent by a browser: agents and SDKs send no Origin.
		return ""
	}
	u, err := url.Parse(origin)
	name := ""
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		name = strings.ToLower(u.Hostname())
	}
	if name != "" && (isLoopbackName(name) || p.names[name] || (!p.known && name == host)) {
		return ""
	}
	return "requests from the web page origin " + quoteShort(origin) +
		" are refused (a guard against DNS rebinding and cross-site requests): browsers may call /mcp from PUBLIC_URL's host, loopback origins and ALLOWED_ORIGINS. To use a browser-based client from that origin, add it to ALLOWED_ORIGINS"
}

func quoteShort(s string) string { return `"` + ctalk.Shorten(s, 100) + `"` }

// checkHost refuses, with 403 and a JSON-RPC error that says why, a request
// whose Host or Origin is not one of this server's names (see hostPolicy).
func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if why := s.hosts.refusal(c.Request()); why != "" {
			s.log.WarnContext(c.Request().Context(), "request refused by the Host and Origin check", "request_id", requestID(c.Request().Context()))
			return invalidRequest(c, http.StatusForbidden, why)
		}
		return next(c)
	}
}

// mcpCORS lets browser-based MCP clients (MCP Inspector, web apps named in
// ALLOWED_ORIGINS) call /mcp: it answers their preflight requests, and lets
// their scripts read the headers an MCP client needs, WWW-Authenticate above
// all, from which an OAuth client starts the sign-in. It runs after
// checkHost, so only an origin that check allowed gets this far: each is
// echoed back, and the request headers a preflight asks for are allowed.
var mcpCORS = middleware.CORSWithConfig(middleware.CORSConfig{
	AllowOriginFunc: func(string) (bool, error) { return true, nil },
	AllowMethods:    []string{http.MethodPost, http.MethodGet, http.MethodDelete},
	ExposeHeaders:   []string{echo.HeaderWWWAuthenticate, "Mcp-Session-Id", "Mcp-Protocol-Version"},
	MaxAge:          600,
})
