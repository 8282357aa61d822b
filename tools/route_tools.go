package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/inbox"
)

// The tools of a question's way: forwarding it, asking its asker for more
// information, and the asker's reply. Setting oneself away is the person's
// own act in the web app (their profile): it stops their notifications and
// points coworkers' agents at a delegate, so an agent must not do it for
// them unseen; agents read it in whoami, list_users and get_user_profile.
func (s *Server) registerRouteTools() {
	s.registerForwardQuestion()
	s.registerRequestInfo()
	s.registerProvideInfo()
}

// awayInstead is ask_person's answer when Ask refused its recipient as
// away (the caller did not set ask_anyway): the question is not asked, and
// the result says until when, who stands in, and the person's note.
func awayInstead(away *inbox.AwayError) *askResult {
	a := away.Away
	res := &askResult{Status: "not_asked", ToUserID: away.To, RecipientAway: &a,
		NextStep: fmt.Sprintf("%s is away until %s; nothing was asked. Tell your person, and with them choose: ask_person again with ask_anyway=true to ask %s anyway", away.To, a.Until.Format("2006-01-02 15:04 MST"), away.To)}
	if a.Delegate != "" {
		res.NextStep += fmt.Sprintf(", or ask their delegate %s instead (to_user_id=%s)", a.Delegate, a.Delegate)
	}
	return res
}

type forwardArgs struct {
	tokenArg
	MessageID string `json:"message_id"`
	ToUserID  string `json:"to_user_id"`
	Note      string `json:"note"`
}

func (s *Server) registerForwardQuestion() {
	addIdentifiedTool(s, mcp.NewTool("forward_question",
		mcp.WithDescription(fmt.Sprintf("Forward a question sent to you to a coworker who can answer it better, with a note: their agent receives it with its steps, and the asker's agent is told who has it and reads your note, with no approval step. Your drafts are dropped. At most %d forwards, never back to the asker or anyone who had it. Only with your person's agreement.", inbox.MaxForwards)+dataNote),
		messageIDParam,
		mcp.WithString("to_user_id", mcp.Required(), mcp.Description("Who should answer it instead: a user id from list_users.")),
		mcp.WithString("note", mcp.Description("Optional, up to 2,000 characters: why, for the new recipient (the asker sees it too).")),
		authTokenParam,
		annotations(false, false, false),
	), func(ctx context.Context, sess *auth.Session, in *forwardArgs) (*questionResult, error) {
		touchMessage(ctx, in.MessageID)
		q, err := s.inbox.Forward(ctx, sess.Caller(), in.MessageID, in.ToUserID, in.Note)
		if err != nil {
			return nil, err
		}
		res := &questionResult{Question: q, NextStep: "forwarded: " + q.To + "'s agent receives it, and the asker's agent is told; it is no longer in your inbox"}
		if u, err := s.orgs.User(ctx, sess.OrgID, q.To); err == nil && u.Away != nil {
			res.NextStep += fmt.Sprintf(". Tell your person that %s is away until %s", u.ID, u.Away.Until.Format("2006-01-02 15:04 MST"))
		}
		return res, nil
	})
}

type requestInfoArgs struct {
	tokenArg
	MessageID string `json:"message_id"`
	Request   string `json:"request"`
}

func (s *Server) registerRequestInfo() {
	addIdentifiedTool(s, mcp.NewTool("request_info",
		mcp.WithDescription("Ask the asker of a question sent to you for more information: it waits in needs_info until they reply with provide_info, then comes back to your inbox. They read your request as written, with no approval step: only with your person's agreement."),
		messageIDParam,
		mcp.WithString("request", mcp.Required(), mcp.Description("What you need to know, 1 to 2,000 characters; the asker sees it.")),
		authTokenParam,
		annotations(false, false, false),
	), func(ctx context.Context, sess *auth.Session, in *requestInfoArgs) (*questionResult, error) {
		touchMessage(ctx, in.MessageID)
		q, err := s.inbox.RequestInfo(ctx, sess.Caller(), in.MessageID, in.Request)
		if err != nil {
			return nil, err
		}
		return &questionResult{Question: q, NextStep: "asked: " + q.From + "'s agent is told; wait_for_inbox hands you the question again with their reply"}, nil
	})
}

type provideInfoArgs struct {
	tokenArg
	MessageID   string `json:"message_id"`
	Information string `json:"information"`
}

func (s *Server) registerProvideInfo() {
	addIdentifiedTool(s, mcp.NewTool("provide_info",
		mcp.WithDescription("Reply to a request for more information on a question you asked (needs_info, info_request): it goes back to its recipient with your reply. Only with your person's agreement on what you tell."),
		messageIDParam,
		mcp.WithString("information", mcp.Required(), mcp.Description("Your reply, 1 to 20,000 characters.")),
		authTokenParam,
		annotations(false, false, false),
	), func(ctx context.Context, sess *auth.Session, in *provideInfoArgs) (*questionResult, error) {
		touchMessage(ctx, in.MessageID)
		q, err := s.inbox.ProvideInfo(ctx, sess.Caller(), in.MessageID, in.Information)
		if err != nil {
			return nil, err
		}
		return &questionResult{Question: q, NextStep: "sent: " + q.To + "'s agent receives your reply with the question; wait_for_reply waits for the answer"}, nil
	})
}
