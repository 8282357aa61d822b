package tools

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/internal/reqctx"
)

func requestID(ctx context.Context) string { return reqctx.ID(ctx) }

func clientIP(ctx context.Context) string { return reqctx.Client(ctx) }

// publicURLFromContext is the URL agents reach this server at, as seen by
// the current request.
func (s *Server) publicURLFromContext(ctx context.Context) string { return reqctx.PublicURL(ctx) }

// waitLeft is what is left of a waiting call's timeout after api parked it.
func waitLeft(ctx context.Context, timeout time.Duration) time.Duration {
	if deadline, ok := reqctx.WaitDeadline(ctx); ok {
		return max(0, min(timeout, time.Until(deadline)))
	}
	return timeout
}
