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
	// requestKey carries the *request that Start made.
	requestKey key = iota
	// sessionKey carries the *bearer of the Authorization header.
	sessionKey
	// authErrKey carries why a bearer token could not be checked.
	authErrKey
	// waitDeadlineKey carries when a waiting call parked before mcp-go
	// must return.
	waitDeadlineKey
	resourceReadKey
	// anonymousSessionKey marks a request on an MCP session initialized
	// without a credential.
	anonymousSessionKey
)

// request is what api's first middleware learns about a request, carried
// under one key: every tool call reads it, and each value added to a
// context makes every later look-up in it walk one step further.
type request struct {
	id, client, publicURL string
	// logged is set once a tool call has logged the request, so that it
	// is not logged twice.
	logged atomic.Bool
}

// Start returns ctx carrying the request's id, its client's address and
// the URL agents reach this server at, as seen by the request, and the
// mark a tool call it carries sets when it logs the request (see
// MarkLogged).
func Start(ctx context.Context, id, client, publicURL string) (context.Context, *atomic.Bool) {
	r := &request{id: id, client: client, publicURL: publicURL}
	return context.WithValue(ctx, requestKey, r), &r.logged
}

// noRequest stands for the request of a context Start did not make.
var noRequest = &request{}

func requestOf(ctx context.Context) *request {
	if r := value[*request](ctx, requestKey); r != nil {
		return r
	}
	return noRequest
}

// ID is the request's id, or "".
func ID(ctx context.Context) string { return requestOf(ctx).id }

// Client is the client's address, as the per-address limits count it.
func Client(ctx context.Context) string { return requestOf(ctx).client }

// PublicURL is the URL agents reach this server at, as seen by the request.
func PublicURL(ctx context.Context) string { return requestOf(ctx).publicURL }

// WithSession returns ctx carrying the session of the Authorization header
// and the credential it was checked with.
func WithSession(ctx context.Context, sess *auth.Session, cred *wait.Credential) context.Context {
	return context.WithValue(ctx, sessionKey, &bearer{sess, cred})
}

// bearer is the session of the Authorization header and its credential.
type bearer struct {
	sess *auth.Session
	cred *wait.Credential
}

func bearerOf(ctx context.Context) bearer {
	if b := value[*bearer](ctx, sessionKey); b != nil {
		return *b
	}
	return bearer{}
}

// Session is the session of the Authorization header, or nil.
func Session(ctx context.Context) *auth.Session { return bearerOf(ctx).sess }

// Credential is the credential of the Authorization header, or nil.
func Credential(ctx context.Context) *wait.Credential {
	return bearerOf(ctx).cred
}

// WithAuthError returns ctx carrying why its bearer token could not be
// checked.
func WithAuthError(ctx context.Context, err error) context.Context {
	return context.WithValue(ctx, authErrKey, err)
}

// AuthError is why the request's bearer token could not be checked, or nil.
func AuthError(ctx context.Context) error { return value[error](ctx, authErrKey) }

// MarkLogged records that the request has been logged.
func MarkLogged(ctx context.Context) {
	if r := value[*request](ctx, requestKey); r != nil {
		r.logged.Store(true)
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
