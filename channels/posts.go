package channels

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/orgs"
)

// An org whose channel post mode is "human" holds its agents' channel posts
// until their person decides, in the web app, signed in: approve (the post
// goes out as the agent wrote it, marked approved), edit (the person's text
// goes out as theirs) or reject with a note. A held post is in no channel
// until then: no member, search, unread count, alert or resource sees it.
// The decision reaches the agent once, as a channel event of check_inbox or
// wait_for_inbox.

// Statuses of a held post.
const (
	PostPending  = "pending_approval"
	PostApproved = "approved"
	PostEdited   = "edited"
	PostRejected = "rejected"
)

// MaxNoteLen is the longest note, in characters, a person gives with a
// rejection.
const MaxNoteLen = 2000

// MaxHeld is the most held posts HeldPosts lists.
const MaxHeld = 100

// HeldPost is an agent's channel post held for its person's approval.
type HeldPost struct {
	ID        string     `json:"post_id"`
	Channel   string     `json:"channel"`
	Status    string     `json:"status" jsonschema:"pending_approval, approved, edited or rejected"`
	Text      string     `json:"text"`
	Type      string     `json:"type,omitempty"`
	Priority  string     `json:"priority"`
	ReplyTo   string     `json:"reply_to,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	Note      string     `json:"note,omitempty" jsonschema:"the person's note with a rejection"`
	// MessageID and Seq name the message the post became, once published.
	MessageID string `json:"message_id,omitempty"`
	Seq       int64  `json:"seq,omitempty"`
}

// Posted is what AgentPost did: published Message, or held Held.
type Posted struct {
	Message *Message
	Held    *HeldPost
	// AuthorName is the held post's author's name, as a message of theirs
	// would show it.
	AuthorName string
}

// postIDPrefix starts every held post's id; newPostID adds 24 hex digits.
const postIDPrefix = "p_"

func newPostID() string {
	var b [12]byte
	rand.Read(b[:])
	return postIDPrefix + hex.EncodeToString(b[:])
}

// AgentPost posts for the caller's agent: at once, labelled as posted by
// the agent, as Post does; or, when the org's channel post mode is human,
// held for the caller's approval in the web app, visible to no one else.
//
// Returns EInvalid, ENotFound (the channel, or reply_to in it), EForbidden
// (not a member), EConflict (archived).
func (s *Service) AgentPost(ctx context.Context, c ctalk.Caller, in Post) (*Posted, error) {
	in.ByAgent = true
	m, mentions, err := newMessage(c, in)
	if err != nil {
		return nil, err
	}
	var out Posted
	var alerted []string
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		out, alerted = Posted{}, nil
		mode, err := orgs.ChannelPostMode(ctx, tx, c.OrgID)
		if err != nil {
			return err
		}
		if mode != orgs.ChannelPostHuman {
			out.Message = m
			alerted, err = s.publish(ctx, tx, c, in.Channel, m, mentions)
			return err
		}
		out.Held, out.AuthorName, err = s.hold(ctx, tx, c, in.Channel, m)
		return err
	})
	if err != nil {
		return nil, err
	}
	if out.Message != nil {
		s.published(c.OrgID, out.Message.Channel, alerted)
	} else {
		// The person's open pages count what waits for them.
		s.wakeUsers(c.OrgID, []string{c.UserID})
	}
	return &out, nil
}

// hold stores m as a held post of channel name, after the checks a post
// passes, and returns it with its author's name.
func (s *Service) hold(ctx context.Context, tx db.Querier, c ctalk.Caller, name string, m *Message) (*HeldPost, string, error) {
	ch, err := memberChannel(ctx, tx, c, name)
	if err != nil {
		return nil, "", err
	}
	if ch.Archived {
		return nil, "", archived(ch.Name)
	}
	if err := checkReply(ctx, tx, c.OrgID, ch.Name, m.ReplyTo); err != nil {
		return nil, "", err
	}
	p := &HeldPost{ID: newPostID(), Channel: ch.Name, Status: PostPending, Text: m.Text, Type: m.Type,
		Priority: m.Priority, ReplyTo: m.ReplyTo, CreatedAt: s.db.Now()}
	var author string
	if err := tx.QueryRow(ctx, insertHeldSQL, c.OrgID, p.ID, p.Channel, c.UserID, p.Type, p.Priority, p.Text,
		sql.NullString{String: p.ReplyTo, Valid: p.ReplyTo != ""}, p.CreatedAt).Scan(&author); err != nil {
		return nil, "", fmt.Errorf("hold channel post: %w", err)
	}
	err = s.queue(ctx, tx, notify.Event{Kind: notify.KindPost, OrgID: c.OrgID, UserID: c.UserID, Actor: c.UserID, Subject: p.ID,
		Text: p.Text, Link: "/inbox/posts#" + p.ID})
	return p, author, err
}

// HeldPosts lists the caller's posts that wait for their approval, oldest
// first, at most MaxHeld.
//
// Returns only the database's errors.
func (s *Service) HeldPosts(ctx context.Context, c ctalk.Caller) ([]*HeldPost, error) {
	return db.All(ctx, s.db, "list held posts", heldPostsSQL, []any{c.OrgID, c.UserID, MaxHeld}, scanHeld)
}

// HeldPost returns one of the caller's held posts, whatever its status.
//
// Returns ENotFound (also for another member's post).
func (s *Service) HeldPost(ctx context.Context, c ctalk.Caller, id string) (*HeldPost, error) {
	p, err := scanHeld(s.db.QueryRow(ctx, heldPostSQL, c.OrgID, c.UserID, strings.TrimSpace(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFoundPost(id)
	}
	return p, err
}

func scanHeld(r interface{ Scan(...any) error }) (*HeldPost, error) {
	p := &HeldPost{}
	var decided db.NullTime
	var edited sql.NullString
	if err := r.Scan(&p.ID, &p.Channel, &p.Status, &p.Text, &p.Type, &p.Priority, &p.ReplyTo, &p.CreatedAt,
		&decided, &p.Note, &edited, &p.MessageID, &p.Seq); err != nil {
		return nil, err
	}
	p.CreatedAt = p.CreatedAt.UTC()
	if decided.Valid {
		t := decided.Time
		p.DecidedAt = &t
	}
	if edited.Valid {
		p.Text = edited.String
	}
	return p, nil
}

func notFoundPost(id string) error {
	return ctalk.Errorf(ctalk.ENotFound, "post %q is not among the posts your agent made for you", ctalk.Shorten(id, 80))
}

// ApprovePost publishes the caller's held post exactly as their agent wrote
// it, posted by the agent and marked approved by them, and wakes the
// channel as a post does. Of two decisions on one post at once, one wins;
// the other gets EConflict.
//
// Returns ENotFound, EForbidden (no longer a member), EConflict (decided
// already, or the channel is archived).
func (s *Service) ApprovePost(ctx context.Context, c ctalk.Caller, id string) (*Message, error) {
	return s.decide(ctx, c, id, nil)
}

// EditPost publishes text, the caller's version of their held post, as
// their own words; text equal to the post's approves it as it is.
//
// Returns EInvalid, and what ApprovePost returns.
func (s *Service) EditPost(ctx context.Context, c ctalk.Caller, id, text string) (*Message, error) {
	text, err := ctalk.Text("text", text, MaxTextLen, true)
	if err != nil {
		return nil, err
	}
	return s.decide(ctx, c, id, &text)
}

// decide claims a pending post for publication, then publishes it (the
// agent's text, or edit) in the same transaction: when publishing fails,
// the post stays pending.
func (s *Service) decide(ctx context.Context, c ctalk.Caller, id string, edit *string) (*Message, error) {
	var m *Message
	var alerted []string
	// The author's pending read goes first, so that publishing marks the
	// post read for them (see Post).
	if err := s.cursors.settle(ctx, c); err != nil {
		return nil, err
	}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		p, err := claimHeld(ctx, tx, c, id, edit, s.db.Now())
		if err != nil {
			return err
		}
		in := Post{Channel: p.Channel, Text: p.Text, ReplyTo: p.ReplyTo, Type: p.Type, Priority: p.Priority, ByAgent: p.Status == PostApproved}
		var mentions []string
		if m, mentions, err = newMessage(c, in); err != nil {
			return err
		}
		m.ApprovedByPerson = in.ByAgent
		if alerted, err = s.publish(ctx, tx, c, p.Channel, m, mentions); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, heldPublishedSQL, c.OrgID, p.ID, m.ID, m.Seq)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.published(c.OrgID, m.Channel, alerted)
	s.wakeUsers(c.OrgID, []string{c.UserID})
	return m, nil
}

// RejectPost drops the caller's held post with a note their agent reads.
// Of two decisions on one post at once, one wins; the other gets EConflict.
//
// Returns EInvalid, ENotFound, EConflict (decided already).
func (s *Service) RejectPost(ctx context.Context, c ctalk.Caller, id, note string) (*HeldPost, error) {
	note, err := ctalk.Text("note", note, MaxNoteLen, false)
	if err != nil {
		return nil, err
	}
	var p *HeldPost
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		p, err = claimHeldAs(ctx, tx, c, id, PostRejected, note, sql.NullString{}, s.db.Now())
		return err
	})
	if err != nil {
		return nil, err
	}
	s.wakeUsers(c.OrgID, []string{c.UserID})
	return p, nil
}

// claimHeld decides a pending post for publication: approved, or edited
// when edit is a text other than the agent's.
func claimHeld(ctx context.Context, tx db.Querier, c ctalk.Caller, id string, edit *string, now time.Time) (*HeldPost, error) {
	if edit == nil {
		return claimHeldAs(ctx, tx, c, id, PostApproved, "", sql.NullString{}, now)
	}
	p, err := scanHeld(tx.QueryRow(ctx, heldPostSQL, c.OrgID, c.UserID, strings.TrimSpace(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFoundPost(id)
	}
	if err != nil {
		return nil, err
	}
	if *edit == p.Text {
		return claimHeldAs(ctx, tx, c, id, PostApproved, "", sql.NullString{}, now)
	}
	return claimHeldAs(ctx, tx, c, id, PostEdited, "", sql.NullString{String: *edit, Valid: true}, now)
}

// claimHeldAs moves a pending post of the caller to status in one
// conditional statement: of two concurrent claims, the second finds it
// decided (on Postgres, it waits for the first and re-reads the row).
func claimHeldAs(ctx context.Context, tx db.Querier, c ctalk.Caller, id, status, note string, edited sql.NullString, now time.Time) (*HeldPost, error) {
	id = strings.TrimSpace(id)
	p, err := scanHeld(tx.QueryRow(ctx, claimHeldSQL, c.OrgID, c.UserID, id, status, now, note, edited))
	if !errors.Is(err, sql.ErrNoRows) {
		return p, err
	}
	p, err = scanHeld(tx.QueryRow(ctx, heldPostSQL, c.OrgID, c.UserID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFoundPost(id)
	}
	if err != nil {
		return nil, err
	}
	return nil, ctalk.Errorf(ctalk.EConflict, "this post was %s already; nothing was changed", strings.ReplaceAll(p.Status, "_", " "))
}

// Reasons of the channel events that tell an agent its person's decision
// on a post it made.
const (
	AlertPostApproved = "post_approved"
	AlertPostEdited   = "post_edited"
	AlertPostRejected = "post_rejected"
)

// claimDecisions hands over, once, the decisions on the caller's held posts
// not yet handed over, oldest first, at most MaxAlerts, as channel events:
// on Postgres, a concurrent claim that marked a row first makes this one
// skip it.
func claimDecisions(ctx context.Context, tx db.Querier, c ctalk.Caller, now time.Time) ([]*Alert, error) {
	rows, err := tx.Query(ctx, claimDecisionsSQL, c.OrgID, c.UserID, now, MaxAlerts)
	if err != nil {
		return nil, fmt.Errorf("claim post decisions: %w", err)
	}
	defer rows.Close()
	var out []*Alert
	for rows.Next() {
		p, err := scanHeld(rows)
		if err != nil {
			return nil, fmt.Errorf("claim post decisions: %w", err)
		}
		out = append(out, decisionAlert(p, c.UserID))
	}
	return out, rows.Err()
}

// decisionAlert tells the agent of author what became of its post p.
func decisionAlert(p *HeldPost, author string) *Alert {
	a := &Alert{Reason: "post_" + p.Status, Channel: p.Channel, MessageID: p.MessageID, Seq: p.Seq, From: author,
		ByAgent: p.Status == PostApproved, Priority: p.Priority, PostID: p.ID, Note: p.Note, CreatedAt: p.CreatedAt}
	if p.DecidedAt != nil {
		a.CreatedAt = *p.DecidedAt
	}
	text := []rune(p.Text)
	if len(text) > ExcerptLen {
		text, a.Truncated = text[:ExcerptLen], true
	}
	a.Excerpt = fenceOpen + string(text) + fenceClose
	return a
}
