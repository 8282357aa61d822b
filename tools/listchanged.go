package tools

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/internal/reqctx"
)

// maxListCallers bounds the sessions listCallers remembers; past it, it
// starts again, which costs a session at most one more notification.
const maxListCallers = 10_000

// listCallers remembers, for each MCP session of the 2025-11-25 protocol
// initialized without a credential (which any caller may use), whom this
// replica last saw calling on it, so that a session whose caller changes
// (an agent that signs in and then sends its token in the Authorization
// header, or stops sending it) hears notifications/tools/list_changed and
// lists the tools sized to its new caller. A session bound to its owner's
// credential never changes caller: api refuses anyone else on it.
//
// It is per replica, and a session's requests may reach any replica: one
// that has not seen the session takes its caller to have been nobody, as
// at its initialize, so a client may hear the notification once more than
// needed, never less.
type listCallers struct {
	mu   sync.Mutex
	last map[string]string
}

// changed records caller as the one now calling on the session id and
// says whether that is a change.
func (l *listCallers) changed(id, caller string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil || len(l.last) >= maxListCallers {
		l.last = map[string]string{}
	}
	before := l.last[id]
	l.last[id] = caller
	return before != caller
}

func (l *listCallers) forget(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.last, id)
}

// listCaller names whom the tool list of ctx is sized for (see sized): ""
// for a caller without a credential.
func listCaller(ctx context.Context) string {
	sess := reqctx.Session(ctx)
	if sess == nil {
		return ""
	}
	return sess.OrgID + "\x00" + sess.UserID + "\x00" + sess.Role
}

// listChangedHooks send a session whose caller changed
// notifications/tools/list_changed, on the stream of the request that
// brought the change, before its answer; tools/list itself only records
// whom it sized the list for.
func (s *Server) listChangedHooks(h *server.Hooks) *server.Hooks {
	h.AddBeforeAny(func(ctx context.Context, id any, method mcp.MCPMethod, _ any) {
		cs := server.ClientSessionFromContext(ctx)
		if id == nil || cs == nil || !reqctx.AnonymousSession(ctx) || method == mcp.MethodInitialize {
			return
		}
		if s.callers.changed(cs.SessionID(), listCaller(ctx)) && method != mcp.MethodToolsList {
			if err := s.mcp.SendNotificationToClient(ctx, mcp.MethodNotificationToolsListChanged, nil); err != nil {
				s.log.Info("tool list change not sent", "request_id", requestID(ctx), "error", err)
			}
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { s.callers.forget(cs.SessionID()) })
	return h
}
