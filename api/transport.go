package api

import (
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
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

// noStandaloneStream answers GET /mcp with 405, which the streamable HTTP
// transport allows ("the server MUST either return text/event-stream or
// 405"). That stream carries only messages a server sends on its own, and
// ctalk sends none: progress and results travel on the response to each
// POST. Holding it open would cost a connection per client, and anyone could
// hold many without a token. The official SDKs and Claude Code treat 405 as
// "no stream" and carry on.
func (s *Server) noStandaloneStream(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Method != http.MethodGet {
			return next(c)
		}
		c.Response().Header().Set(echo.HeaderAllow, "POST, DELETE")
		return invalidRequest(c, http.StatusMethodNotAllowed, "ctalk offers no standalone event stream (GET /mcp): it sends nothing unasked; results and progress arrive on the response to each POST")
	}
}
