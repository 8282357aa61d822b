package inbox

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Interaction summarizes the questions between two users of one org.
type Interaction struct {
	// YouAsked counts questions the caller asked the other user.
	YouAsked int `json:"questions_you_asked_them"`
	// TheyAsked counts questions the other user asked the caller.
	TheyAsked int `json:"questions_they_asked_you"`
	// Last is the time of the latest question or answer between the two.
	Last *time.Time `json:"last_interaction,omitempty"`
}

// Interaction returns the history between me and other in orgID.
func (s *Service) Interaction(ctx context.Context, orgID, me, other string) (*Interaction, error) {
	return interaction(ctx, s.db, orgID, me, other)
}

func interaction(ctx context.Context, q querier, orgID, me, other string) (*Interaction, error) {
	var in Interaction
	rows, err := q.QueryContext(ctx, InteractionSQL, orgID, me, other)
	if err != nil {
		return nil, db.Translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var asker string
		var asked int
		var last time.Time
		if err := rows.Scan(&asker, &asked, &last); err != nil {
			return nil, db.Translate(err)
		}
		if asker == me {
			in.YouAsked = asked
		} else {
			in.TheyAsked = asked
		}
		if last = last.UTC(); in.Last == nil || last.After(*in.Last) {
			in.Last = &last
		}
	}
	return &in, db.Translate(rows.Err())
}

// Sender is who asked a question, as the answering agent needs to know them.
// Every text field is that person's or their admin's words: data.
type Sender struct {
	UserID       string   `json:"user_id"`
	Name         string   `json:"name"`
	Ownership    []string `json:"ownership"`
	Notes        string   `json:"notes"`
	ProfileNotes string   `json:"profile_notes"`
	// FormerMember marks an asker who has since been removed from the org.
	FormerMember bool `json:"former_member,omitempty" jsonschema:"true when the asker was removed from the organization: they can no longer read an answer"`
}

// Exchange is one earlier answered question between two users.
type Exchange struct {
	MessageID  string    `json:"message_id"`
	AskedBy    string    `json:"asked_by"`
	Question   string    `json:"question"`
	Answer     string    `json:"answer"`
	AnsweredAt time.Time `json:"answered_at"`
}

// History is what passed between the asker and the caller before.
type History struct {
	*Interaction
	RecentExchanges []Exchange `json:"recent_exchanges"`
}

// InboxItem is a pending question with the context to answer it.
type InboxItem struct {
	*Question
	Sender      Sender  `json:"sender"`
	History     History `json:"history_with_sender"`
	LatestDraft *Draft  `json:"latest_draft,omitempty"`
}

// RecentExchanges is how many answered exchanges an inbox item carries.
const RecentExchanges = 3

// Inbox returns the caller's pending questions, oldest first, a page at a
// time, and marks them handed to the caller. cursor is the NextCursor of the
// previous page, or empty.
//
// Returns EInvalid for a cursor this server did not issue.
func (s *Service) Inbox(ctx context.Context, orgID, userID string, limit int, cursor string) (items []*InboxItem, next string, err error) {
	after, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	err = s.db.Tx(ctx, func(tx *sql.Tx) error {
		qs, err := queryQuestions(ctx, tx, InboxPageSQL, orgID, userID, after.At, after.ID, limit+1)
		if err != nil {
			return err
		}
		if len(qs) > limit {
			qs = qs[:limit]
			last := qs[len(qs)-1]
			next = encodeCursor(pageCursor{At: last.CreatedAt, ID: last.ID})
		}
		if items, err = s.withContext(ctx, tx, orgID, userID, qs); err != nil {
			return err
		}
		return markHanded(ctx, tx, orgID, "recipient_handed_at", ids(qs), s.db.Now())
	})
	return items, next, err
}

// withContext adds sender, history and latest draft to pending questions.
func (s *Service) withContext(ctx context.Context, tx *sql.Tx, orgID, userID string, qs []*Question) ([]*InboxItem, error) {
	items := make([]*InboxItem, 0, len(qs))
	senders := map[string]*InboxItem{}
	for _, q := range qs {
		it := &InboxItem{Question: q}
		if prev, ok := senders[q.From]; ok {
			it.Sender, it.History = prev.Sender, prev.History
		} else {
			if err := s.fillSender(ctx, tx, orgID, userID, it); err != nil {
				return nil, err
			}
			senders[q.From] = it
		}
		d, err := latestDraft(ctx, tx, orgID, q.ID)
		if err != nil {
			return nil, err
		}
		it.LatestDraft = d
		items = append(items, it)
	}
	return items, nil
}

func (s *Service) fillSender(ctx context.Context, tx *sql.Tx, orgID, userID string, it *InboxItem) error {
	var own string
	snd := &it.Sender
	if err := tx.QueryRowContext(ctx, `SELECT id, name, ownership, notes, profile_notes, removed_at IS NOT NULL FROM users WHERE org_id = $1 AND id = $2`, orgID, it.From).
		Scan(&snd.UserID, &snd.Name, &own, &snd.Notes, &snd.ProfileNotes, &snd.FormerMember); err != nil {
		return err
	}
	if json.Unmarshal([]byte(own), &snd.Ownership) != nil || snd.Ownership == nil {
		snd.Ownership = []string{}
	}
	inter, err := interaction(ctx, tx, orgID, userID, it.From)
	if err != nil {
		return err
	}
	it.History.Interaction = inter
	rows, err := tx.QueryContext(ctx, RecentExchangesSQL, orgID, userID, it.From, RecentExchanges)
	if err != nil {
		return err
	}
	defer rows.Close()
	it.History.RecentExchanges = []Exchange{}
	for rows.Next() {
		var x Exchange
		if err := rows.Scan(&x.MessageID, &x.AskedBy, &x.Question, &x.Answer, &x.AnsweredAt); err != nil {
			return err
		}
		x.AnsweredAt = x.AnsweredAt.UTC()
		it.History.RecentExchanges = append(it.History.RecentExchanges, x)
	}
	return rows.Err()
}

// pageCursor is the position after the last question of a page.
type pageCursor struct {
	At time.Time `json:"t"`
	ID string    `json:"i"`
}

func encodeCursor(c pageCursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (pageCursor, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return pageCursor{At: time.Unix(0, 0).UTC()}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c pageCursor
	// An offset can carry a time outside years 1 to 9999 once in UTC, where
	// no question is stamped and encodeCursor cannot write it back; no id
	// holds a NUL, which Postgres cannot compare.
	if err != nil || json.Unmarshal(b, &c) != nil || c.At.IsZero() || c.At.UTC().Year() < 1 || c.At.UTC().Year() > 9999 || strings.ContainsRune(c.ID, 0) {
		return c, ctalk.Errorf(ctalk.EInvalid, "cursor is not one this server issued; pass the next_cursor of the previous result of the same tool, or omit it to start from the oldest")
	}
	c.At = c.At.UTC()
	return c, nil
}
