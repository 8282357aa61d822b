package api

import (
	"context"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/internal/reqctx"
)

// parkWaits lets a call of wait_for_inbox or wait_for_reply wait here, at
// the shallow end of the request's stack, before mcp-go handles it, and
// passes it on once there is something to hand over or its time is up; the
// tool then returns at once. How it waits is the tools' (tools.Server.Hold,
// beside the wait tools' handlers); where it waits is this middleware's. A request parked inside mcp-go holds a 32 KB
// goroutine stack (mcp-go's frames alone are about 9 KB, too many for the
// runtime to shrink it), a notification forwarder goroutine and a session
// with a 100-slot channel: about half of what a waiting agent costs. Parked
// here it holds its connection and a small stack.
//
// Only calls identified by the Authorization header, without a progress
// token (progress notifications need mcp-go's session), are parked; others
// wait in the tool as before. A parked call whose client hangs up, or
// cancels it (notifications/cancelled, see parkedCalls), is still passed on,
// so that it is logged and audited like any cancelled call, and the tool
// then claims nothing. One whose credential is revoked while it waits is
// answered as a request with that credential would be.
func (s *Server) parkWaits(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		ctx := req.Context()
		sess := reqctx.Session(ctx)
		msg := rpcOf(c)
		if sess == nil || !strings.HasPrefix(msg.ToolCall(), "wait_for_") {
			return next(c)
		}
		// In the 2025-11-25 era a call without its session id is refused by
		// mcp-go; it must not wait first.
		if !mcp.IsModernProtocol(req.Header.Get(mcp.HeaderProtocolVersion)) && req.Header.Get(server.HeaderKeySessionID) == "" {
			return next(c)
		}
		// A waiting call is cancellable by its client until the tool has
		// returned: parked, in the stateless era (where mcp-go cancels
		// nothing), and as the park hands over to mcp-go.
		if k, ok := keyOf(req, msg.ID); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer s.parked.park(k, cancel)()
			c.SetRequest(req.WithContext(ctx))
			req = c.Request()
		}
		p := msg.Params()
		if p.Meta != nil && p.Meta.ProgressToken != nil {
			// Progress notifications need mcp-go's session: the tool waits.
			return next(c)
		}
		deadline, ok, err := s.tools.Hold(ctx, sess, p.Name, p.Arguments)
		if !ok {
			return next(c)
		}
		if refused := ctalk.ErrorCode(err); refused == ctalk.EUnauthorized || refused == ctalk.EForbidden {
			return s.unauthorized(c, ctalk.ErrorMessage(err))
		}
		c.SetRequest(req.WithContext(reqctx.WithWaitDeadline(ctx, deadline)))
		return next(c)
	}
}
