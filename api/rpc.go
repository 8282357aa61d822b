package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	segjson "github.com/segmentio/encoding/json"
)

// rpcMessage is the JSON-RPC message of a POST to /mcp, read and decoded
// once by jsonRPCBody and carried in the request's echo context: the
// middleware after it ask rpcOf for it instead of reading the body again.
// mcp-go still decodes Body for itself.
type rpcMessage struct {
	Body   []byte // as the client sent it
	Kind   int    // rpcRequest, rpcNotification or rpcResponse
	Method string
	ID     json.RawMessage // nil for a notification or a response

	params  json.RawMessage
	decoded *rpcParams
}

// rpcParams are the parts of a message's params that ctalk acts on before
// mcp-go: which tool a tools/call names and with what, which resource a
// resources/read reads, which call notifications/cancelled ends.
type rpcParams struct {
	Name      string          `json:"name"`      // tools/call
	Arguments json.RawMessage `json:"arguments"` // tools/call
	URI       string          `json:"uri"`       // resources/read
	RequestID json.RawMessage `json:"requestId"` // notifications/cancelled
	Meta      *struct {
		ProgressToken any `json:"progressToken"`
	} `json:"_meta"`

	// AuthToken says whether a tools/call's arguments carry auth_token,
	// the credential of clients that cannot set a header.
	AuthToken bool `json:"-"`
}

// Params decodes the message's params on first use. Params that are not an
// object decode as none: mcp-go then answers them with its own error.
func (m *rpcMessage) Params() *rpcParams {
	if m.decoded == nil {
		m.decoded = &rpcParams{}
		if len(m.params) > 0 && segjson.Unmarshal(m.params, m.decoded) != nil {
			*m.decoded = rpcParams{}
		}
		if m.Method == string(mcp.MethodToolsCall) && len(m.decoded.Arguments) > 0 {
			var args struct {
				AuthToken json.RawMessage `json:"auth_token"`
			}
			if segjson.Unmarshal(m.decoded.Arguments, &args) == nil {
				m.decoded.AuthToken = args.AuthToken != nil
			}
		}
	}
	return m.decoded
}

// ToolCall is the name of the tool a tools/call request calls, or "".
func (m *rpcMessage) ToolCall() string {
	if m == nil || m.Kind != rpcRequest || m.Method != string(mcp.MethodToolsCall) {
		return ""
	}
	return m.Params().Name
}

// rpcKey holds, in the echo context, the message jsonRPCBody decoded.
const rpcKey = "ctalk.rpc"

// rpcOf is the message of a POST to /mcp that jsonRPCBody read, or nil
// before it or for another method.
func rpcOf(c echo.Context) *rpcMessage {
	m, _ := c.Get(rpcKey).(*rpcMessage)
	return m
}

// jsonRPCBody reads a POST body before mcp-go does, so that a body over
// MaxBodyBytes gets 413 even when it declared no length (mcp-go would call it
// a parse error), and a message that is not one JSON-RPC 2.0 request,
// notification or response gets a specific 400 (mcp-go accepts one with no
// method as an empty response, and answers null with "Invalid session ID").
// The message it decodes is what the middleware after it read (rpcOf).
func (s *Server) jsonRPCBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Method != http.MethodPost {
			return next(c)
		}
		b, err := readBody(req)
		if err != nil {
			var he *echo.HTTPError
			if errors.As(err, &he) {
				return he
			}
			if isTimeout(err) {
				c.Response().Header().Set(echo.HeaderConnection, "close")
				return echo.NewHTTPError(http.StatusRequestTimeout, fmt.Sprintf("the request body did not arrive within %s; send it whole, at once", s.cfg.ReadTimeout))
			}
			return echo.NewHTTPError(http.StatusBadRequest, "the request body could not be read")
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		problem, msg := decodeJSONRPC(b)
		if problem != "" {
			return invalidRequest(c, http.StatusBadRequest, problem)
		}
		c.Set(rpcKey, msg)
		switch {
		case msg.Kind == rpcResponse:
			// The one request ctalk sends a client is send_response's
			// elicitation/create, on a session, during the call (see
			// tools/elicit.go): while one waits, mcp-go hands the answer to
			// the call. Any other response answers nothing and is dropped
			// here (mcp-go would log it as a failed sampling response).
			// Either way the client hears 202, as the transport allows: an
			// error status makes some clients drop their session.
			if id := req.Header.Get(server.HeaderKeySessionID); id != "" && !mcp.IsModernProtocol(req.Header.Get(mcp.HeaderProtocolVersion)) && s.tools.Asking(id) {
				s.http.ServeHTTP(statusOnly{header: http.Header{}}, req)
			}
			return c.NoContent(http.StatusAccepted)
		case msg.Kind == rpcNotification && msg.Method == string(mcp.MethodNotificationCancelled):
			// mcp-go cancels only the calls it handles: a parked one is
			// cancelled here, in both eras.
			s.parked.cancelled(req, msg.Params().RequestID)
			if mcp.IsModernProtocol(req.Header.Get(mcp.HeaderProtocolVersion)) {
				// mcp-go has nothing more to cancel in the stateless era, where
				// closing the HTTP request ends the tool call it handles; and
				// some clients send the notice without the _meta that mcp-go
				// requires, which would answer 400 and make those clients drop
				// their whole session.
				return c.NoContent(http.StatusAccepted)
			}
		case msg.Kind == rpcRequest && msg.Method == string(mcp.MethodSubscriptionsListen):
			return s.listenStream(c, next)
		}
		return next(c)
	}
}

// readBody reads a request's body whole: in one buffer of its declared
// length when it has one (net/http ends the body there), which io.ReadAll
// would grow from 512 bytes.
func readBody(req *http.Request) ([]byte, error) {
	if n := req.ContentLength; n > 0 && n <= MaxBodyBytes {
		b := make([]byte, n)
		if _, err := io.ReadFull(req.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(req.Body)
}

// invalidRequest answers a request to /mcp that is refused before it reaches
// mcp-go with status and a JSON-RPC "invalid request" error saying why.
func invalidRequest(c echo.Context, status int, why string) error {
	return c.JSON(status, map[string]any{
		"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32600, "message": why},
	})
}

// The kinds of JSON-RPC message.
const (
	rpcRequest = iota
	rpcNotification
	rpcResponse
)

// decodeJSONRPC decodes the envelope of a JSON-RPC message, or says what is
// wrong with it. Text that is not JSON is left to mcp-go's parse error (a
// request with no method). Params stay raw until rpcMessage.Params.
//
// Every POST to /mcp passes here before mcp-go decodes it again, so it
// decodes with segmentio's encoding/json, a drop-in replacement that reads
// the same JSON the same way (names matched without regard to case, the last
// of a repeated name kept, invalid UTF-8 replaced) at a sixth of the
// standard package's cost; FuzzCheckJSONRPC holds the two to the same
// answers. The one difference is depth: the standard package calls JSON
// nested over 10,000 levels a syntax error, so a body long enough to nest
// that deep (a body of 10,000 bytes or more, rare) is read with it.
func decodeJSONRPC(b []byte) (problem string, msg *rpcMessage) {
	if len(b) > 10000 {
		return decodeEnvelope(b, json.Unmarshal)
	}
	return decodeEnvelope(b, segjson.Unmarshal)
}

// jsonString decodes a JSON value already known to be valid JSON that
// should be a string, saying whether it is one. A string without escapes, as
// nearly every method name is, is taken as it stands.
func jsonString(raw json.RawMessage, unmarshal func([]byte, any) error) (string, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : n-1]), true
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// decodeEnvelope is decodeJSONRPC with the decoder to use.
func decodeEnvelope(b []byte, unmarshal func([]byte, any) error) (problem string, msg *rpcMessage) {
	var m struct {
		JSONRPC, Method, ID, Params, Result, Error json.RawMessage
	}
	msg = &rpcMessage{Body: b, Kind: rpcRequest}
	err := unmarshal(b, &m)
	if _, notJSON := errors.AsType[*json.SyntaxError](err); notJSON {
		return "", msg
	}
	switch t := bytes.TrimLeft(b, " \t\r\n"); {
	case t[0] == '[':
		return "batches are not supported: send one JSON-RPC 2.0 message, a JSON object, per request", msg
	case t[0] != '{' || err != nil:
		return "the body must be one JSON-RPC 2.0 message, a JSON object", msg
	}
	if version, ok := jsonString(m.JSONRPC, unmarshal); !ok || version != "2.0" {
		return `the message must have "jsonrpc": "2.0"`, msg
	}
	if m.Method == nil {
		if m.Result == nil && m.Error == nil {
			return `the message has no "method": name the method to call, such as "tools/call"`, msg
		}
		msg.Kind = rpcResponse
		return "", msg
	}
	method, ok := jsonString(m.Method, unmarshal)
	if !ok {
		return `"method" must be a string`, msg
	}
	msg.Method, msg.ID, msg.params = method, m.ID, m.Params
	if m.ID == nil {
		msg.Kind = rpcNotification
	}
	return "", msg
}
