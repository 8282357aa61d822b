package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk/internal/reqctx"
)

// resourceNotFound is the JSON-RPC error code of a resources/read of a
// resource that does not exist: invalid params, as the MCP specification
// gives it since SEP-2164, whose migration asks servers of every protocol
// revision to answer it (clients accept the older -32002 as well).
const resourceNotFound = -32602

// resourceReadErrors gives a resources/read of an unknown resource the
// specification's answer: code resourceNotFound, the message "Resource not
// found" with what to do, and the URI as data. mcp-go answers every error
// of a resource handler as an internal error (-32603), and a URI that no
// template matches with -32002 in the 2025-11-25 era; it lets no handler
// choose the code. So the answer to a resources/read is held here until
// mcp-go has written it, and rewritten when the handler marked the channel
// missing, or mcp-go found no template (in the 2026-07-28 era mcp-go
// answers that one with resourceNotFound itself). Any other answer passes
// unchanged,
// and so does one streamed as events (mcp-go streams a POST's answer only
// when the call sends notifications, which a resource read does not).
func (s *Server) resourceReadErrors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		msg := rpcOf(c)
		if msg == nil || msg.Kind != rpcRequest || msg.Method != string(mcp.MethodResourcesRead) {
			return next(c)
		}
		read := &reqctx.ResourceRead{}
		req := c.Request()
		c.SetRequest(req.WithContext(reqctx.WithResourceRead(req.Context(), read)))
		res := c.Response()
		held := &heldAnswer{ResponseWriter: res.Writer}
		res.Writer = held
		err := next(c)
		res.Writer = held.ResponseWriter
		if !held.streamed {
			held.send(read, msg.Params().URI, mcp.IsModernProtocol(req.Header.Get(mcp.HeaderProtocolVersion)))
			if held.status != 0 {
				// The request's log line shows the status sent.
				res.Status = held.status
			}
		}
		return err
	}
}

// heldAnswer keeps what mcp-go writes in answer to a resources/read, for
// resourceReadErrors to send, rewritten or not; an event stream passes
// through at once.
type heldAnswer struct {
	http.ResponseWriter
	status   int
	body     bytes.Buffer
	streamed bool
}

func (h *heldAnswer) WriteHeader(status int) {
	if strings.HasPrefix(h.Header().Get(echo.HeaderContentType), "text/event-stream") {
		h.streamed = true
		h.ResponseWriter.WriteHeader(status)
		return
	}
	h.status = status
}

func (h *heldAnswer) Write(b []byte) (int, error) {
	if h.streamed {
		return h.ResponseWriter.Write(b)
	}
	if h.status == 0 {
		h.WriteHeader(http.StatusOK)
		if h.streamed {
			return h.ResponseWriter.Write(b)
		}
	}
	return h.body.Write(b)
}

func (h *heldAnswer) Flush() {
	if f, ok := h.ResponseWriter.(http.Flusher); ok && h.streamed {
		f.Flush()
	}
}

// send writes the held answer, as the specification words it when it says
// that the resource at uri does not exist; in the 2026-07-28 era (modern)
// with the HTTP status that era gives invalid params, 400, as mcp-go does
// for the errors it words itself.
func (h *heldAnswer) send(read *reqctx.ResourceRead, uri string, modern bool) {
	body := h.body.Bytes()
	var answer struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &answer) == nil && answer.Error != nil &&
		((read.Missing && answer.Error.Code == mcp.INTERNAL_ERROR) || answer.Error.Code == mcp.RESOURCE_NOT_FOUND) {
		msg := answer.Error.Message
		if !read.Missing {
			msg = "Resource not found: ctalk's resources are its channels, ctalk://channels/{name}; resources/list lists yours"
		}
		body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": answer.ID, "error": map[string]any{
			"code": resourceNotFound, "message": msg, "data": map[string]string{"uri": uri},
		}})
		if modern {
			h.status = http.StatusBadRequest
		}
	}
	h.Header().Del(echo.HeaderContentLength)
	if h.status != 0 {
		h.ResponseWriter.WriteHeader(h.status)
	}
	h.ResponseWriter.Write(body)
}
