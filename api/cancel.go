package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/internal/reqctx"
)

// parkedCalls are the calls parkWaits holds, by who may cancel them, so
// that a client's notifications/cancelled reaches a call that mcp-go has
// not seen yet (mcp-go cancels only the calls it handles, and in the
// stateless era none). A cancelled call claims nothing: its wait ends
// before it checks again, and what it would have got stays for the next.
type parkedCalls struct {
	mu    sync.Mutex
	calls map[callKeyOf]context.CancelFunc
}

// callKeyOf names a call as only its own client can: the MCP session it
// was sent on (none in the stateless era), the credential it carries, and
// its JSON-RPC id as sent.
type callKeyOf struct {
	session, token, id string
}

// keyOf is the key of the call or cancel notice req carries with JSON-RPC
// id id, or false when req has no credential to tell its client by.
func keyOf(req *http.Request, id json.RawMessage) (callKeyOf, bool) {
	sess := reqctx.Session(req.Context())
	var compact bytes.Buffer
	if sess == nil || len(id) == 0 || json.Compact(&compact, id) != nil {
		return callKeyOf{}, false
	}
	return callKeyOf{req.Header.Get(server.HeaderKeySessionID), sess.TokenHash, compact.String()}, true
}

// park records a parked call, with cancel to end it, until release.
func (p *parkedCalls) park(k callKeyOf, cancel context.CancelFunc) (release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls == nil {
		p.calls = map[callKeyOf]context.CancelFunc{}
	}
	if _, taken := p.calls[k]; taken {
		// Two calls of one client with one id: neither is cancellable by
		// it, as mcp-go would not tell them apart either.
		return func() {}
	}
	p.calls[k] = cancel
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.calls, k)
	}
}

// cancelled ends the parked call with the request id that a
// notifications/cancelled sent with req names, if there is one.
func (p *parkedCalls) cancelled(req *http.Request, requestID json.RawMessage) {
	k, ok := keyOf(req, requestID)
	if !ok {
		return
	}
	p.mu.Lock()
	cancel := p.calls[k]
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
