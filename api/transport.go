package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/internal/reqctx"
	"github.com/ctalk/ctalk/wait"
)

// readDeadline gives a request ReadTimeout to send its whole body, so that
// a client that stalls mid-body (slow loris) is cut off and told why (408,
// from jsonRPCBody), wherever the handler is served. net/http lifts the
// deadline itself once the body is read, when it starts watching the
// connection for the client going away, so the waits and event streams
// that follow the body are not cut. Requests without a body have nothing to
// read after their headers, which http.Server's ReadHeaderTimeout bounds.
func (s *Server) readDeadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if s.cfg.ReadTimeout > 0 && req.ContentLength != 0 && req.Body != nil && req.Body != http.NoBody {
			// A writer that is not net/http's (a test recorder) takes no
			// deadline; the request is served without one.
			http.NewResponseController(c.Response().Writer).SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout))
		}
		return next(c)
	}
}

// isTimeout reports whether err is a read that hit its deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// DefaultSessionIdleTTL is how long mcp-go keeps an MCP session of the
// 2025-11-25 protocol registered after the last request on it, when its
// client vanishes without ending it (DELETE /mcp): about 9 KB each, which
// would otherwise be held until the process ends.
//
// mcp-go counts as activity a request reaching it and each event written
// on the session's event stream (GET /mcp, which carries a heartbeat every
// 25 s). A wait parked before mcp-go (parkWaits) reaches it only when it
// ends, so the request before the wait stands for it meanwhile: the TTL is
// far longer than the longest wait, wait.MaxWait. Forgetting a session
// costs its client nothing: its id is checked by its MAC, not looked up
// (sessionIDs), so later calls on it are served as on another replica, and
// an event stream opened on it registers it again.
const DefaultSessionIdleTTL = 10 * time.Minute

// MinSessionIdleTTL is the shortest session idle TTL a deployment may set:
// the longest wait and a minute more.
const MinSessionIdleTTL = wait.MaxWait + time.Minute

// sessionIdleTTL is the session idle TTL of the configuration.
func (s *Server) sessionIdleTTL() time.Duration {
	if s.cfg.SessionIdleTTL > 0 {
		return s.cfg.SessionIdleTTL
	}
	return DefaultSessionIdleTTL
}

// maxStreamsPerUser bounds the streams (GET /mcp, subscriptions/listen) one user may hold
// open on one server.
const maxStreamsPerUser = 4

// eventStream decides GET /mcp, the session-era stream that carries what a
// server sends unasked. ctalk sends one thing unasked: notifications/
// resources/updated, for channels a session subscribed to. So the stream is
// served only to an identified caller of the session era on a session it
// initialized (see bindSession; another's session id is 404), at most maxStreamsPerUser at a time, and ends when the server drains;
// anyone else gets 405, which the transport allows ("the server MUST either
// return text/event-stream or 405") and the official SDKs and Claude Code
// take as "no stream". Progress and results travel on the response to each
// POST either way. While the stream is open, the session's subscriptions
// are watched (on whichever replica holds the stream), holding no database
// connection between messages.
func (s *Server) eventStream(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Method != http.MethodGet {
			return next(c)
		}
		sess := reqctx.Session(req.Context())
		sessionID := req.Header.Get(server.HeaderKeySessionID)
		if sess == nil || sessionID == "" || mcp.IsModernProtocol(req.Header.Get(mcp.HeaderProtocolVersion)) {
			c.Response().Header().Set(echo.HeaderAllow, "POST, DELETE")
			return invalidRequest(c, http.StatusMethodNotAllowed, "ctalk offers its event stream (GET /mcp) only to a signed-in session of the 2025-11-25 protocol, for resource subscriptions; results and progress arrive on the response to each POST")
		}
		if owned, _ := sessionIssued(sessionID, sessionOwner(sess)); !owned {
			// A session initialized without a credential (bindSession
			// answered another's 404): no stream, as clients expect.
			c.Response().Header().Set(echo.HeaderAllow, "POST, DELETE")
			return invalidRequest(c, http.StatusMethodNotAllowed, "this MCP session was initialized without your credential, so it has no event stream: initialize a new session with your bearer token to get one; results arrive on each POST either way")
		}
		release, ok := s.streams.Take(sess.OrgID, sess.UserID)
		if !ok {
			c.Response().Header().Set(echo.HeaderAllow, "POST, DELETE")
			return invalidRequest(c, http.StatusMethodNotAllowed, fmt.Sprintf("you hold %d event streams (GET /mcp) on this server, the most one user may; close one, or carry on without: results arrive on each POST", maxStreamsPerUser))
		}
		defer release()
		ctx, end := s.streamContext(req.Context())
		defer end()
		go s.tools.WatchSubscriptions(ctx, sess, sessionID)
		c.SetRequest(req.WithContext(ctx))
		return next(c)
	}
}

// streamContext returns the context of a stream that carries updates (the
// event stream, a subscriptions/listen): it ends, with the watch of the
// stream's subscriptions, once the credential the stream was opened with
// is revoked, on any replica, or when the server drains. end releases it.
func (s *Server) streamContext(ctx context.Context) (_ context.Context, end func()) {
	ctx, unhold := s.hold(ctx)
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel()
		unhold()
	}
}

// listenStream serves a 2026-07-28 client's subscriptions/listen as the
// event stream (GET /mcp) is served in the earlier era: it counts among the
// streams one user may hold, and ends when its credential is revoked or
// the server drains (see streamContext). The tools subscribe it to the
// channels it names and send their updates on it. Without a credential it
// subscribes to nothing and ends at once.
func (s *Server) listenStream(c echo.Context, next echo.HandlerFunc) error {
	req := c.Request()
	sess := reqctx.Session(req.Context())
	if sess == nil {
		return next(c)
	}
	release, ok := s.streams.Take(sess.OrgID, sess.UserID)
	if !ok {
		return invalidRequest(c, http.StatusTooManyRequests, fmt.Sprintf("you hold %d streams (GET /mcp or subscriptions/listen) on this server, the most one user may; close one, or follow channels with wait_for_message", maxStreamsPerUser))
	}
	defer release()
	ctx, end := s.streamContext(req.Context())
	defer end()
	c.SetRequest(req.WithContext(ctx))
	return next(c)
}
