// Package reqctx carries what api's middleware learns about a request to the
// MCP tools that serve it (package tools): its id, client address and
// public URL, the session and credential of its Authorization header, and
// the marks the two sides leave each other (a call logged, a parked wait's
// deadline, a resource found missing).
package reqctx

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/wait"
)

type key int

const (
	idKey key = iota
	clientKey
	publicURLKey
	sessionKey
	// authErrKey carries why a bearer token could not be checked.
	authErrKey
	// credentialKey carries the *wait.Credential of the Authorization
	// header.
	credentialKey
	// loggedKey carries a request's *atomic.Bool, set once a tool call has
	// logged it, so that it is not logged twice.
	loggedKey
	// waitDeadlineKey carries when a waiting call parked before mcp-go
	// must return.
	waitDeadlineKey
	resourceReadKey
	// anonymousSessionKey marks a request on an MCP session initialized
	// without a credential.
	anonymousSessionKey
)

// WithID returns ctx carrying the request id.
func WithID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, idKey, id)
}

// ID is the request's id, or "".
func ID(ctx context.Context) string { return value[string](ctx, idKey) }

// WithClient returns ctx carrying the client's address.
func WithClient(ctx context.Context, ip string) context.Context {
	return context.WithValue(ctx, clientKey, ip)
}

// Client is the client's address, as the per-address limits count it.
func Client(ctx context.Context) string { return value[string](ctx, clientKey) }

// WithPublicURL returns ctx carrying the URL agents reach this server at.
func WithPublicURL(ctx context.Context, u string) context.Context {
	return context.WithValue(ctx, publicURLKey, u)
}

// PublicURL is the URL agents reach this server at, as seen by the request.
func PublicURL(ctx context.Context) string { return value[string](ctx, publicURLKey) }

// WithSession returns ctx carrying the session of the Authorization header
// and the credential it was checked with.
func WithSession(ctx context.Context, sess *auth.Session, cred *wait.Credential) context.Context {
	ctx = context.WithValue(ctx, sessionKey, sess)
	return context.WithValue(ctx, credentialKey, cred)
}

// Session is the session of the Authorization header, or nil.
func Session(ctx context.Context) *auth.Session { return value[*auth.Session](ctx, sessionKey) }

// Credential is the credential of the Authorization header, or nil.
func Credential(ctx context.Context) *wait.Credential {
	return value[*wait.Credential](ctx, credentialKey)
}

// WithAuthError returns ctx carrying why its bearer token could not be
// checked.
func WithAuthError(ctx context.Context, err error) context.Context {
	return context.WithValue(ctx, authErrKey, err)
}

// AuthError is why the request's bearer token could not be checked, or nil.
func AuthError(ctx context.Context) error { return value[error](ctx, authErrKey) }

// WithLogged returns ctx with a mark that a tool call it carries sets when
// it logs the request (see MarkLogged).
func WithLogged(ctx context.Context) (context.Context, *atomic.Bool) {
	logged := new(atomic.Bool)
	return context.WithValue(ctx, loggedKey, logged), logged
}

// MarkLogged records that the request has been logged.
func MarkLogged(ctx context.Context) {
	if logged := value[*atomic.Bool](ctx, loggedKey); logged != nil {
		logged.Store(true)
	}
}

// WithWaitDeadline returns ctx carrying when a waiting call that was parked
// before mcp-go handled it must return.
func WithWaitDeadline(ctx context.Context, deadline time.Time) context.Context {
	return context.WithValue(ctx, waitDeadlineKey, deadline)
}

// WaitDeadline is when a parked waiting call must return, if it was parked.
func WaitDeadline(ctx context.Context) (time.Time, bool) {
	d := value[time.Time](ctx, waitDeadlineKey)
	return d, !d.IsZero()
}

// ResourceRead is what the handler of a resources/read tells api of it.
type ResourceRead struct {
	// Missing says that the URI names no channel the caller may see.
	Missing bool
}

// WithResourceRead returns ctx carrying r, for the resource handler to mark.
func WithResourceRead(ctx context.Context, r *ResourceRead) context.Context {
	return context.WithValue(ctx, resourceReadKey, r)
}

// ResourceReadOf is the mark of the resources/read ctx answers, or nil.
func ResourceReadOf(ctx context.Context) *ResourceRead {
	return value[*ResourceRead](ctx, resourceReadKey)
}

// value is ctx's value under k, or the zero T when it has none.
func value[T any](ctx context.Context, k key) T {
	v, _ := ctx.Value(k).(T)
	return v
}

// WithAnonymousSession returns ctx marked as a request on an MCP session of
// the 2025-11-25 protocol that was initialized without a credential, which
// any caller may use: who calls on it may change from one request to the
// next.
func WithAnonymousSession(ctx context.Context) context.Context {
	return context.WithValue(ctx, anonymousSessionKey, true)
}

// AnonymousSession says whether ctx is a request on such a session.
func AnonymousSession(ctx context.Context) bool { return value[bool](ctx, anonymousSessionKey) }
