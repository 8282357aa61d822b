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
// replica last sized its tool list for, so that a session whose caller
// changes (an agent that signs in and then sends its token in the
// Authorization header, or stops sending it) hears
// notifications/tools/list_changed and lists the tools sized to its new
// caller. A session bound to its owner's credential never changes caller:
// api refuses anyone else on it.
//
// The notification is sent again with each request, up to maxListNotices
// times, until the client lists the tools: mcp-go v1.2.1 can drop a
// notification sent during a request whose answer is ready at the same
// moment (its forwarder takes it off the channel, then finds the request
// done), so a single notice would sometimes never arrive.
//
// It is per replica, and a session's requests may reach any replica: one
// that has not seen the session takes its list to have been sized for
// nobody, as at its initialize, so a client may hear the notification more
// than needed, never less.
type listCallers struct {
	mu   sync.Mutex
	last map[string]*listedFor
}

// listedFor is whom a session's list was last sized for, and how often
// it was told since that the list changed.
type listedFor struct {
	caller  string
	noticed int
}

// maxListNotices bounds the notifications one change of caller brings a
// client that never lists the tools again.
const maxListNotices = 3

// listed records that the session id's list was sized for caller.
func (l *listCallers) listed(id, caller string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entry(id)
	e.caller, e.noticed = caller, 0
}

// notice says whether a request of caller on the session id should tell
// its client that the list changed, and counts it.
func (l *listCallers) notice(id, caller string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entry(id)
	if e.caller == caller || e.noticed >= maxListNotices {
		return false
	}
	e.noticed++
	return true
}

// entry is the session id's record, made on first sight; l.mu is held.
func (l *listCallers) entry(id string) *listedFor {
	if l.last == nil || len(l.last) >= maxListCallers {
		l.last = map[string]*listedFor{}
	}
	e := l.last[id]
	if e == nil {
		e = &listedFor{}
		l.last[id] = e
	}
	return e
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
// notifications/tools/list_changed, on the stream of each request until
// its client lists the tools again (see listCallers); tools/list itself
// only records whom it sized the list for.
func (s *Server) listChangedHooks(h *server.Hooks) *server.Hooks {
	h.AddBeforeAny(func(ctx context.Context, id any, method mcp.MCPMethod, _ any) {
		cs := server.ClientSessionFromContext(ctx)
		if id == nil || cs == nil || !reqctx.AnonymousSession(ctx) || method == mcp.MethodInitialize {
			return
		}
		if method == mcp.MethodToolsList {
			s.callers.listed(cs.SessionID(), listCaller(ctx))
			return
		}
		if s.callers.notice(cs.SessionID(), listCaller(ctx)) {
			if err := s.mcp.SendNotificationToClient(ctx, mcp.MethodNotificationToolsListChanged, nil); err != nil {
				s.log.Info("tool list change not sent", "request_id", requestID(ctx), "error", err)
			}
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { s.callers.forget(cs.SessionID()) })
	return h
}
