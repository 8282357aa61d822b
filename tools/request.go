package tools

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/ctalk/ctalk/internal/reqctx"
)

func requestID(ctx context.Context) string { return reqctx.ID(ctx) }

func clientIP(ctx context.Context) string { return reqctx.Client(ctx) }

// publicURLFromContext is the URL agents reach this server at, as seen by
// the current request.
func (s *Server) publicURLFromContext(ctx context.Context) string { return reqctx.PublicURL(ctx) }

// Parkable says whether arguments, those of a call of the tool named, are
// those of a waiting call that api may park before mcp-go handles it, with
// its message id and timeout. They are decoded as the tool decodes them: a
// call the tool would refuse is not parked, so that its refusal is not
// delayed; nor is one that carries its own auth_token.
func Parkable(tool string, arguments json.RawMessage) (msgID string, timeout time.Duration, ok bool) {
	var (
		in       hasToken
		timeoutS **float64
	)
	switch tool {
	case "wait_for_inbox":
		a := &waitInboxArgs{}
		in, timeoutS = a, &a.TimeoutS
		ok = decodeArgs(arguments, a, nil) == nil
	case "wait_for_reply":
		a := &waitReplyArgs{}
		in, timeoutS = a, &a.TimeoutS
		ok = decodeArgs(arguments, a, nil) == nil
		msgID = strings.TrimSpace(a.MessageID)
	}
	if !ok || in.token() != "" {
		return "", 0, false
	}
	timeout, err := waitArg(*timeoutS)
	return msgID, timeout, err == nil
}

// waitLeft is what is left of a waiting call's timeout after api parked it.
func waitLeft(ctx context.Context, timeout time.Duration) time.Duration {
	if deadline, ok := reqctx.WaitDeadline(ctx); ok {
		return max(0, min(timeout, time.Until(deadline)))
	}
	return timeout
}
