package api

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/internal/reqctx"
)

// An MCP session of the 2025-11-25 protocol belongs to the person whose
// credential initialized it. Its id (Mcp-Session-Id) says so: it is
// "mcp-session-NONCE.MAC", where MAC is a digest of the nonce and the
// owner's org and user, so every replica can check, without storing
// anything, that a request on the session comes from its owner. A request
// from anyone else (another user, another org, or no credential) gets 404,
// as for a session that does not exist: it may not read the session's
// notifications (its event stream, or the stream of a POST), end it, or
// attach an event stream to it. Sessions initialized without a credential
// get an id whose MAC names no owner; they never hold an event stream, so
// they share nothing worth binding, and any caller may use them. An id whose
// MAC is neither (one ctalk never issued, such as a made-up one) gets
// 404 too, and the client starts a new session, as the transport asks.
const (
	sessionIDPrefix = "mcp-session-"
	// maxSessionID bounds an id a client sends.
	maxSessionID = 200
)

// sessionOwner names who a request acts as, for binding sessions: "" for
// a request without a credential.
func sessionOwner(sess *auth.Session) string {
	if sess == nil {
		return ""
	}
	return sess.OrgID + "\x00" + sess.UserID
}

// sessionMAC binds nonce to owner.
func sessionMAC(owner, nonce string) string {
	sum := sha256.Sum256([]byte("ctalk mcp session\x00" + owner + "\x00" + nonce))
	return hex.EncodeToString(sum[:16])
}

// newSessionID returns a new session id bound to owner ("" for none).
func newSessionID(owner string) string {
	nonce := rand.Text()
	return sessionIDPrefix + nonce + "." + sessionMAC(owner, nonce)
}

// sessionIssued says whether id is one ctalk issued to owner, or one it
// issued to no owner, which anyone may use.
func sessionIssued(id, owner string) (owned, anonymous bool) {
	rest, ok := strings.CutPrefix(id, sessionIDPrefix)
	nonce, mac, dot := strings.Cut(rest, ".")
	if !ok || !dot || len(id) > maxSessionID {
		return false, false
	}
	macOf := func(owner string) bool {
		return subtle.ConstantTimeCompare([]byte(mac), []byte(sessionMAC(owner, nonce))) == 1
	}
	return owner != "" && macOf(owner), macOf("")
}

// sessionIDs is the session id manager of each request: it mints ids
// bound to the request's credential. Who may use an id is checked by
// bindSession, before mcp-go sees the request.
type sessionIDs struct{ owner string }

func (m sessionIDs) Generate() string { return newSessionID(m.owner) }

func (m sessionIDs) Validate(id string) (isTerminated bool, err error) {
	if !strings.HasPrefix(id, sessionIDPrefix) || len(id) > maxSessionID {
		return false, fmt.Errorf("invalid session id")
	}
	return false, nil
}

func (m sessionIDs) Terminate(string) (isNotAllowed bool, err error) { return false, nil }

// sessionIDResolver gives each request a manager bound to its credential.
type sessionIDResolver struct{}

func (sessionIDResolver) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r == nil {
		return sessionIDs{}
	}
	sess := reqctx.Session(r.Context())
	return sessionIDs{owner: sessionOwner(sess)}
}

// bindSession refuses a request of the session era on a session that is
// neither the caller's nor anonymous with 404, as for an unknown session:
// the client starts a new session of its own. A session without an owner
// may be used by anyone, but holds no event stream (see eventStream), so no
// request on it shares another's notifications. A request whose token cannot
// be checked now (the database is down) is served on a session of its own,
// so that it reaches its tool error without touching the session it named.
func (s *Server) bindSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		id := req.Header.Get(server.HeaderKeySessionID)
		if id == "" || mcp.IsModernProtocol(req.Header.Get(mcp.HeaderProtocolVersion)) {
			return next(c)
		}
		ctx := req.Context()
		sess := reqctx.Session(ctx)
		owned, anonymous := sessionIssued(id, sessionOwner(sess))
		switch {
		case owned:
			return next(c)
		case anonymous:
			c.SetRequest(req.WithContext(reqctx.WithAnonymousSession(ctx)))
			return next(c)
		case sess == nil && reqctx.AuthError(ctx) != nil:
			req.Header.Set(server.HeaderKeySessionID, newSessionID(""))
			return next(c)
		}
		return invalidRequest(c, http.StatusNotFound, "no such MCP session for this credential: start a new session (initialize) with your own credential")
	}
}
