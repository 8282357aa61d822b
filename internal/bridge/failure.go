package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Codes of the errors the SDK makes itself when a connection fails, as
// opposed to errors the hosted server answered with.
const (
	codeClientClosing       = -32003
	codeServerClosing       = -32004
	codeRejectedByTransport = -32005
)

// answered returns the JSON-RPC error the hosted server answered a call with,
// or nil when err is a failure to get an answer.
func answered(err error) *jsonrpc.Error {
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) {
		return nil
	}
	switch rpcErr.Code {
	case codeClientClosing, codeServerClosing, codeRejectedByTransport:
		return nil
	}
	return rpcErr
}

// remoteFailure is a request to the hosted server that got no answer.
type remoteFailure struct {
	err error
	// http is the transport of the session the request went through.
	http *remoteHTTP
	// since is when the request started.
	since time.Time
	// notSent is set when the tool call surely never reached the server.
	notSent bool
}

func (f *remoteFailure) Error() string { return f.err.Error() }
func (f *remoteFailure) Unwrap() error { return f.err }

// tokenRefused returns the server's refusal of the token, if that is why the
// session failed: a refusal ends a session, so any one it saw counts.
func (f *remoteFailure) tokenRefused() *refusal {
	if r := f.http.refusal(time.Time{}); r != nil && r.isAuth() {
		return r
	}
	return nil
}

// reason says briefly why the request failed.
func (f *remoteFailure) reason() string {
	if r := f.http.refusal(f.since); r != nil {
		return r.String()
	}
	err := f.err
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed before the server answered"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

// toolError is the text of the tool error a local client gets for a call the
// hosted server at endpoint did not answer; hasToken says whether the bridge
// sends a token.
func (f *remoteFailure) toolError(endpoint string, hasToken bool) string {
	if r := f.tokenRefused(); r != nil && !hasToken {
		// The server asks for identity (401 with an OAuth challenge), which
		// this bridge cannot give without a token.
		return "ctalk stdio: this tool needs you to be logged in, and this bridge has no token: call the login tool, put the auth_token it returns in CTALK_TOKEN in this MCP client's configuration, and restart the client (or pass it as auth_token)."
	}
	if r := f.tokenRefused(); r != nil {
		return fmt.Sprintf("ctalk stdio: the hosted ctalk server refused this bridge's token (%s). The token may have expired or been revoked: get a new one with the login tool, put it in CTALK_TOKEN in this MCP client's configuration, and restart the client.", r)
	}
	msg := fmt.Sprintf("ctalk stdio: the hosted ctalk server at %s could not be reached (%s). Check that it is up and that this computer can reach it, then retry.", endpoint, f.reason())
	if !f.notSent {
		msg += " The call may have reached the server before the connection failed: if it changes something (such as ask_person), check before repeating it."
	}
	return msg
}

func isDialError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}
