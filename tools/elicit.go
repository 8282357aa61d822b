package tools

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/links"
	"github.com/ctalk/ctalk/usecase"
	"github.com/ctalk/ctalk/wait"
)

// When send_response finds its draft waiting for the person's approval in
// the web app (human mode), and the agent's client declared URL-mode
// elicitation (MCP 2025-11-25, SEP-1036), the server asks the client to
// open the question's page of the web app for the person, instead of
// refusing at once:
//
//   - with a session (2025-11-25), it sends elicitation/create (mode url)
//     during the call, waits for the person's decision, and sends
//     notifications/elicitation/complete once they decided; their
//     approval sent the answer already, which the call then returns
//     (nothing is sent twice), or the refusal of what they decided
//     instead (their own version, quoted; a rejection with its note);
//   - in the stateless era (2026-07-28) a server sends no request during a
//     call: the call answers input_required with the same elicitation
//     (SEP-2322, which 2026-07-28 uses in place of the -32042 error, and
//     which mcp-go maps -32042 to an internal error for), and the client's
//     retry, carrying its answer, waits for the decision.
//
// The page needs the person's own browser session: the agent receives its
// address, never a secret. A client without the capability, or one that
// declines, gets the refusal as it stands.

// approvalInput is the key of the approval's elicitation among a stateless
// call's input requests and responses.
const approvalInput = "approval"

// inputRequired is a tool's answer that asks the client for input before
// the call can complete; err is the refusal it stands for, for the call's
// log line and audit event.
type inputRequired struct {
	res *mcp.CallToolResult
	err error
}

func (e *inputRequired) Error() string { return e.err.Error() }
func (e *inputRequired) Unwrap() error { return e.err }

// sendOnceApproved answers send_response's refusal na, of a draft waiting
// for its person, by asking the person through the client where it can
// (see above); otherwise it returns na.
func (s *Server) sendOnceApproved(ctx context.Context, sess *auth.Session, in *sendArgs, na *inbox.NotApprovedError) (*usecase.Outcome, error) {
	if server.IsModernRequest(ctx) {
		return s.sendAfterInput(ctx, sess, in, na)
	}
	session := server.ClientSessionFromContext(ctx)
	if !sessionElicitsURLs(session) {
		return nil, na
	}
	id, params := s.approvalElicitation(ctx, na)
	// The request and the wait for the decision run together: a client
	// may answer the request at once (it opened the page) or only once the
	// person is done; either way the decision ends the wait, and a decline
	// ends it undecided.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var declined atomic.Bool
	done := s.asking(session.SessionID())
	go func() {
		defer done()
		res, err := s.mcp.RequestURLElicitation(wctx, session, id, params.URL, params.Message)
		if wctx.Err() != nil {
			return
		}
		if err != nil || res.Action != mcp.ElicitationResponseActionAccept {
			declined.Store(true)
			cancel()
		}
	}()
	decided, err := s.inbox.AwaitDecision(wctx, sess.Caller(), na.MessageID, na.Version, s.waitOptions(ctx, wait.MaxWait))
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case declined.Load():
		return nil, na
	case err != nil:
		return nil, err
	case !decided:
		return nil, na
	}
	// Decided: the client may stop showing the page. Told before the
	// answer is sent, so that the notice leaves well before the result.
	if err := s.mcp.SendElicitationComplete(ctx, session, id); err != nil {
		s.log.Warn("tell the client an elicitation completed", "request_id", requestID(ctx), "error", err)
	}
	return s.answers.Send(ctx, sess.Caller(), in.MessageID, in.FinalText, in.Share)
}

// sendAfterInput is sendOnceApproved in the stateless era: the first call
// asks for the elicitation; the retry that carries the client's acceptance
// waits for the person's decision.
func (s *Server) sendAfterInput(ctx context.Context, sess *auth.Session, in *sendArgs, na *inbox.NotApprovedError) (*usecase.Outcome, error) {
	info := server.RequestProtocolInfoFromContext(ctx)
	if info == nil || info.ClientCapabilities == nil || info.ClientCapabilities.Elicitation == nil || info.ClientCapabilities.Elicitation.URL == nil {
		return nil, na
	}
	c, _ := ctx.Value(callKey).(*call)
	if c == nil || c.req == nil {
		return nil, na
	}
	if _, answered := c.req.Params.InputResponses[approvalInput]; answered {
		res := server.ElicitationResponse(c.req.Params.InputResponses, approvalInput)
		if res == nil || res.Action != mcp.ElicitationResponseActionAccept {
			return nil, na
		}
		decided, err := s.inbox.AwaitDecision(ctx, sess.Caller(), na.MessageID, na.Version, s.waitOptions(ctx, wait.MaxWait))
		if err != nil {
			return nil, err
		}
		if !decided {
			return nil, na
		}
		return s.answers.Send(ctx, sess.Caller(), in.MessageID, in.FinalText, in.Share)
	}
	_, params := s.approvalElicitation(ctx, na)
	return nil, &inputRequired{res: server.NewInputRequestBuilder("").Elicit(approvalInput, params).ToolResult(), err: na}
}

// asking counts an elicitation sent on session id until done is called.
func (s *Server) asking(id string) (done func()) {
	s.askingMu.Lock()
	defer s.askingMu.Unlock()
	if s.askingOn == nil {
		s.askingOn = map[string]int{}
	}
	s.askingOn[id]++
	return func() {
		s.askingMu.Lock()
		defer s.askingMu.Unlock()
		if s.askingOn[id]--; s.askingOn[id] <= 0 {
			delete(s.askingOn, id)
		}
	}
}

// Asking reports whether a call on MCP session id waits for its client's
// answer to an elicitation: only then does a JSON-RPC response from that
// client answer anything.
func (s *Server) Asking(id string) bool {
	s.askingMu.Lock()
	defer s.askingMu.Unlock()
	return s.askingOn[id] > 0
}

// sessionElicitsURLs reports whether a session's client declared URL-mode
// elicitation and the session can send it a request.
func sessionElicitsURLs(session server.ClientSession) bool {
	if _, ok := session.(server.SessionWithElicitation); !ok {
		return false
	}
	info, ok := session.(server.SessionWithClientInfo)
	if !ok {
		return false
	}
	caps := info.GetClientCapabilities()
	return caps.Elicitation != nil && caps.Elicitation.URL != nil
}

// approvalElicitation is the URL-mode elicitation of the page where the
// person decides on the draft na refused, with a new id.
func (s *Server) approvalElicitation(ctx context.Context, na *inbox.NotApprovedError) (string, mcp.ElicitationParams) {
	id := "approval-" + rand.Text()
	return id, mcp.ElicitationParams{
		Mode:          mcp.ElicitationModeURL,
		ElicitationID: id,
		URL:           links.Draft(s.publicURLFromContext(ctx), na.MessageID, na.Version),
		Message:       fmt.Sprintf("Your organization asks you to approve this answer yourself: open ctalk, signed in, and approve, edit or reject draft version %d of question %s. Approving or editing sends the answer to the asker at once.", na.Version, na.MessageID),
	}
}
