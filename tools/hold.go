package tools

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/wait"
)

// Hold is the waiting tools' (wait_for_inbox, wait_for_reply) second half of
// a call, for api to run before mcp-go handles the call: it waits, as the
// tool would, until the tool has something to hand over or the call's time
// is up, and hands nothing over. api runs it at the shallow end of the
// request's stack because a call waiting inside mcp-go costs about twice
// the memory (api/park.go says what); the tool's handler then runs with
// the deadline Hold returns (see waitLeft) and returns at once. Both halves
// are here, beside the handlers, so that a wait is only ever decided by
// the wait tools.
//
// ok is false when the call is not one to hold: another tool, arguments the
// tool would refuse (its refusal is not delayed), or its own auth_token;
// the tool then waits in its handler. err is the wait's: a revoked
// credential, or ctx's end.
func (s *Server) Hold(ctx context.Context, sess *auth.Session, tool string, arguments json.RawMessage) (deadline time.Time, ok bool, err error) {
	msgID, timeout, ok := holdable(tool, arguments)
	if !ok {
		return time.Time{}, false, nil
	}
	opts := wait.Options{Timeout: timeout, Stop: s.stop, Credential: credentialOf(ctx)}
	deadline = time.Now().Add(timeout)
	// A held agent is waiting, for presence as in the tool.
	done := s.presence.Waiting(sess.Caller())
	defer done()
	if tool == "wait_for_reply" {
		return deadline, true, s.inbox.AwaitReply(ctx, sess.Caller(), msgID, opts)
	}
	// A channel alert ends the wait as a question does; the tool then hands
	// both over.
	alerts := func() (bool, error) { return s.channels.HasAlerts(ctx, sess.Caller()) }
	return deadline, true, s.inbox.AwaitInbox(ctx, sess.Caller(), opts, alerts)
}

// holdable says whether arguments, those of a call of the tool named, are
// those of a waiting call Hold may hold, with its message id and timeout.
// They are decoded as the tool decodes them.
func holdable(tool string, arguments json.RawMessage) (msgID string, timeout time.Duration, ok bool) {
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
