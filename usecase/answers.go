// Package usecase holds what people and agents do with ctalk, each as one
// function that every front door calls (the MCP tools, the web app, and
// the doors to come: Slack, a card in the chat client), so that a door
// only translates its protocol: decode, identify, call, encode. A use case
// joins the domain services it needs (inbox, knowledge), which keep their
// rules and their tables; it has no SQL and no protocol of its own.
package usecase

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/reqctx"
	"github.com/ctalk/ctalk/knowledge"
	"github.com/ctalk/ctalk/orgs"
)

// Answers is how questions get their answers: a person's decision on a
// question sent to them, which sends the answer when it approves one, and
// an agent's send of the answer its person approved.
type Answers struct {
	inbox     *inbox.Service
	knowledge *knowledge.Service
	log       *slog.Logger
	mu        sync.RWMutex
	decided   []func(context.Context, Decided)
}

// Decided is a decision or a send that changed a question, as OnDecided's
// functions hear of it.
type Decided struct {
	OrgID, UserID, MessageID string
	// Kind is the decision, or Send for the agent's send.
	Kind Kind
	// Door is where it was made (see Decision.Door), Agent for a send.
	Door string
	At   time.Time
}

// Send is Decided's Kind of an agent's send.
const Send Kind = "send"

// Agent is Decided's Door of an agent's send; Chat the Door of a decision
// made in the chat client's card.
const (
	Agent = "agent"
	Chat  = "chat"
)

// OnDecided adds f to the functions called after every decision or send
// that changed a question (not one that found it Already answered), in
// the caller's goroutine, once the change is committed: the doors that
// show a question elsewhere (a Slack message) update it there, wherever it
// was decided. f must return quickly.
func (a *Answers) OnDecided(f func(context.Context, Decided)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.decided = append(a.decided, f)
}

// told calls the OnDecided functions for d.
func (a *Answers) told(ctx context.Context, d Decided) {
	a.mu.RLock()
	fs := a.decided
	a.mu.RUnlock()
	for _, f := range fs {
		f(ctx, d)
	}
}

// NewAnswers returns the use cases of answering over the inbox and the
// org's shared answers, logging to log what fails after an answer is sent.
func NewAnswers(in *inbox.Service, k *knowledge.Service, log *slog.Logger) *Answers {
	return &Answers{inbox: in, knowledge: k, log: log}
}

// Kind is what a person decides on a question sent to them.
type Kind string

// The decisions a person makes. Approve, Edit and Answer send the answer
// at once; Reject and Decline send none.
const (
	// Approve the latest draft as it stands: its text is sent.
	Approve Kind = "approve"
	// Edit the latest draft: the person's text is sent, as theirs.
	Edit Kind = "edit"
	// Reject the latest draft with a note to the person's agent.
	Reject Kind = "reject"
	// Answer in the person's own words, whatever the drafts.
	Answer Kind = "answer"
	// Decline the question with a reason the asker receives.
	Decline Kind = "decline"
)

// Decision is a person's decision on a question sent to them.
type Decision struct {
	Kind      Kind
	MessageID string
	// Version is the draft decided on by Approve, Edit and Reject, which
	// must still be the latest.
	Version int
	// Text is Edit's and Answer's text, Reject's note, Decline's reason.
	Text string
	// Share is the person's choice, with Approve, Edit or Answer, of
	// sharing the answer with the organization; nil leaves it to the org's
	// default (see knowledge.Service.Publish).
	Share *bool
	// Door is where the person decided, such as "slack"; empty is the
	// web app.
	Door string
}

// Outcome is what a decision or a send did.
type Outcome struct {
	// Question is the question afterwards; nil after Reject.
	Question *inbox.Question
	// Draft is the version sent, or rejected; nil after Decline.
	Draft *inbox.Draft
	// Already is true when the question had been answered with the very
	// text this call would send: nothing was sent again.
	Already bool
	// Sharing says whether the answer this call sent is shared with the
	// organization, and why; nil when it sent none.
	Sharing *knowledge.Sharing
}

// Decide carries out the decision d of c, the person to whom its question
// was sent, wherever they made it: an approval or an edit sends the answer
// at once, in the transaction that records it, and wakes the asker's agent
// on every replica, as the agent's own send does; the answer is then
// shared as the person chose. A decision whose text already answered the
// question (made twice, or after the agent's send) sends nothing and
// reports Already. Of concurrent decisions and sends, exactly one answer is
// sent. A decision made in the chat client's card (Door Chat) sends only
// in agent approval mode, as the decision's own transaction reads it: the
// chat is not a channel that only the person uses.
//
// Returns EInvalid (also for an unknown kind), ENotFound, EForbidden
// (*inbox.ModeError when a card's decision finds the org in human mode),
// EConflict, as the inbox's Approve, Edit, Reject, AnswerDirectly and
// Decline do.
func (a *Answers) Decide(ctx context.Context, c ctalk.Caller, d Decision) (*Outcome, error) {
	out, err := a.decide(ctx, c, d)
	if err == nil && !out.Already {
		a.told(ctx, Decided{OrgID: c.OrgID, UserID: c.UserID, MessageID: d.MessageID, Kind: d.Kind, Door: d.Door, At: time.Now().UTC()})
	}
	return out, err
}

func (a *Answers) decide(ctx context.Context, c ctalk.Caller, d Decision) (*Outcome, error) {
	var (
		sent  *inbox.Sent
		err   error
		modes []inbox.InMode
	)
	if d.Door == Chat {
		modes = []inbox.InMode{orgs.ApprovalAgent}
	}
	switch d.Kind {
	case Approve:
		sent, err = a.inbox.Approve(ctx, c, d.MessageID, d.Version, modes...)
	case Edit:
		sent, err = a.inbox.Edit(ctx, c, d.MessageID, d.Version, d.Text, modes...)
	case Answer:
		sent, err = a.inbox.AnswerDirectly(ctx, c, d.MessageID, d.Text, modes...)
	case Reject:
		draft, err := a.inbox.Reject(ctx, c, d.MessageID, d.Version, d.Text)
		if err != nil {
			return nil, err
		}
		return &Outcome{Draft: draft}, nil
	case Decline:
		q, err := a.inbox.Decline(ctx, c, d.MessageID, d.Text)
		if err != nil {
			return nil, err
		}
		return &Outcome{Question: q}, nil
	default:
		return nil, ctalk.Errorf(ctalk.EInvalid, "unknown decision %q: approve, edit, reject, answer or decline", d.Kind)
	}
	if err != nil {
		return nil, err
	}
	return a.published(ctx, c, sent, d.Share, nil), nil
}

// Send sends text, by c's agent, as the answer to the question msgID sent
// to c, as the inbox's Send allows it, and shares it as Publish decides
// with share, the agent's relay of its person's choice. A question that
// its person's decision answered with this very text is returned as
// Already: nothing is sent twice.
//
// Returns EInvalid, ENotFound, EForbidden (*inbox.NotApprovedError among
// them), EConflict, as the inbox's Send does.
func (a *Answers) Send(ctx context.Context, c ctalk.Caller, msgID, text string, share *bool) (*Outcome, error) {
	sent, err := a.inbox.Send(ctx, c, msgID, text)
	if err != nil {
		return nil, err
	}
	if !sent.Already {
		a.told(ctx, Decided{OrgID: c.OrgID, UserID: c.UserID, MessageID: msgID, Kind: Send, Door: Agent, At: time.Now().UTC()})
	}
	return a.published(ctx, c, sent, nil, share), nil
}

// published is the outcome of sent, shared, unless it was sent already,
// as the person chose or else as their agent proposed. The answer is sent
// whatever happens here: a failure is logged and said, never returned.
func (a *Answers) published(ctx context.Context, c ctalk.Caller, sent *inbox.Sent, person, proposal *bool) *Outcome {
	out := &Outcome{Question: sent.Question, Draft: sent.Draft, Already: sent.Already}
	if sent.Already {
		return out
	}
	q := sent.Question
	answered := knowledge.Answered{MessageID: q.ID, AskerID: q.From, AnswererID: q.To, Question: q.Text, Answer: q.Answer}
	if q.ResolvedAt != nil {
		answered.AnsweredAt = *q.ResolvedAt
	}
	sharing, err := a.knowledge.Publish(ctx, c, answered, person, proposal)
	if err != nil {
		a.log.Warn("answer sent, not shared", "request_id", reqctx.ID(ctx), "error", err)
		sharing = knowledge.Sharing{Why: "sent, but not shared: ctalk could not store the shared copy; your person can try again later"}
	}
	out.Sharing = &sharing
	return out
}
