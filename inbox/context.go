package inbox

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/readcache"
	"github.com/ctalk/ctalk/orgs"
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
	stats, err := pairStats(ctx, s.db, orgID, me, []string{other})
	if err != nil {
		return nil, err
	}
	return stats[other], nil
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
// previous page, or empty. A page whose questions were all handed over
// already may be served as this replica read it up to Config.PageCacheTTL
// before (see DefaultPageCacheTTL); its items are then shared with other
// calls, and the caller must not change them.
//
// Returns EInvalid for a cursor this server did not issue.
func (s *Service) Inbox(ctx context.Context, orgID, userID string, limit int, cursor string) (items []*InboxItem, next string, err error) {
	after, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	key := pageKey{orgID: orgID, userID: userID, limit: limit, afterSec: after.At.Unix(), afterNsec: after.At.Nanosecond(), afterID: after.ID}
	var read readcache.Read
	if s.pages != nil {
		now := s.db.Now()
		if p, ok := s.pages.Get(key, now); ok {
			return p.items, p.next, nil
		}
		// Before the first statement: a change forgotten from here on keeps
		// this read's page out of the cache.
		read = s.pages.Begin(now)
	}
	// A page whose questions were all handed over already, as on every
	// check of an inbox after the first, needs no write, and on SQLite no
	// turn in the writer queue. Handing over is never undone, so a page
	// found all handed stays so, and only such a page is kept.
	qs, next, unhanded, err := readInboxPage(ctx, s.db, orgID, userID, limit, after)
	if err != nil {
		return nil, "", err
	}
	if !unhanded {
		if items, err = s.withContext(ctx, s.db, orgID, userID, qs); err != nil {
			return nil, "", err
		}
		if s.pages != nil {
			s.pages.Put(key, cachedPage{orgID: orgID, userID: userID, items: items, next: next}, read, time.Time{})
		}
		return items, next, nil
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		qs, next, _, err = readInboxPage(ctx, tx, orgID, userID, limit, after)
		if err != nil {
			return err
		}
		if items, err = s.withContext(ctx, tx, orgID, userID, qs); err != nil {
			return err
		}
		return markHanded(ctx, tx, orgID, "recipient_handed_at", ids(qs), s.db.Now())
	})
	return items, next, err
}

// readInboxPage reads a page of check_inbox after a position, with the
// cursor of the next page (empty on the last), and whether a question on it
// was not yet handed over.
func readInboxPage(ctx context.Context, r db.Reader, orgID, userID string, limit int, after pageCursor) (qs []*Question, next string, unhanded bool, err error) {
	rows, err := r.Query(ctx, checkInboxPageSQL, orgID, userID, after.At, after.ID, limit+1)
	if err != nil {
		return nil, "", false, fmt.Errorf("read inbox page: %w", err)
	}
	defer rows.Close()
	qs = make([]*Question, 0, limit+1)
	for rows.Next() {
		var notHanded bool
		q, err := scanQuestion(rows, &notHanded)
		if err != nil {
			return nil, "", false, fmt.Errorf("read inbox page: %w", err)
		}
		if len(qs) < limit {
			unhanded = unhanded || notHanded
		}
		qs = append(qs, q)
	}
	if err := rows.Err(); err != nil {
		return nil, "", false, fmt.Errorf("read inbox page: %w", err)
	}
	if len(qs) > limit {
		qs = qs[:limit]
		last := qs[len(qs)-1]
		next = encodeCursor(pageCursor{At: last.CreatedAt, ID: last.ID})
	}
	return qs, next, unhanded, nil
}

// withContext adds sender, history and latest draft to pending questions,
// in one statement whatever the page's size and however many people asked
// (see readContext and contextSQL).
func (s *Service) withContext(ctx context.Context, r db.Reader, orgID, userID string, qs []*Question) ([]*InboxItem, error) {
	if len(qs) == 0 {
		return []*InboxItem{}, nil
	}
	senders := make([]string, 0, len(qs))
	for _, q := range qs {
		if !slices.Contains(senders, q.From) {
			senders = append(senders, q.From)
		}
	}
	questionIDs := ids(qs)
	c, err := readContext(ctx, r, contextSQL(len(senders), len(questionIDs)),
		userID, senders, questionIDs, pairArgs(orgID, userID, senders, questionIDs))
	if err != nil {
		return nil, fmt.Errorf("read inbox context: %w", err)
	}
	// One allocation for the page's items, which the result points into.
	all := make([]InboxItem, len(qs))
	items := make([]*InboxItem, len(qs))
	for i, q := range qs {
		sender, ok := c.senders[q.From]
		if !ok {
			return nil, fmt.Errorf("read sender %s of %s: no such user", q.From, q.ID)
		}
		all[i] = InboxItem{
			Question:    q,
			Sender:      sender,
			History:     History{Interaction: c.stats[q.From], RecentExchanges: c.recent[q.From]},
			LatestDraft: c.drafts[q.ID],
		}
		items[i] = &all[i]
	}
	return items, nil
}

// pairArgs returns the arguments orgID, me, then the strings of lists in
// order, for a statement of pairs between me and others ($3 and on) and
// then, say, the questions of a page.
func pairArgs(orgID, me string, lists ...[]string) []any {
	n := 2
	for _, l := range lists {
		n += len(l)
	}
	args := make([]any, 0, n)
	args = append(args, orgID, me)
	for _, l := range lists {
		for _, s := range l {
			args = append(args, s)
		}
	}
	return args
}

// pageContext is what readContext reads: by the other user's id, who
// they are (when the statement reads senders), the statistics of their
// pair with the caller and their recent exchanges; by question id, the
// latest draft.
type pageContext struct {
	senders map[string]Sender
	stats   map[string]*Interaction
	recent  map[string][]Exchange
	drafts  map[string]*Draft
}

// readContext runs query, a UNION ALL of pairRowsSQL, exchangeRowsSQL,
// draftRowsSQL and senderRowsSQL (or some of them) about me and others,
// with args, and gathers its rows. A pair that never exchanged a question
// has zeros, and no exchanges.
func readContext(ctx context.Context, r db.Reader, query, me string, others, questionIDs []string, args []any) (*pageContext, error) {
	c := &pageContext{
		senders: make(map[string]Sender, len(others)),
		stats:   make(map[string]*Interaction, len(others)),
		recent:  make(map[string][]Exchange, len(others)),
		drafts:  make(map[string]*Draft, len(questionIDs)),
	}
	pairs := make([]Interaction, len(others))
	for i, o := range others {
		c.stats[o] = &pairs[i]
		c.recent[o] = []Exchange{}
	}
	rows, err := r.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// Declared once: Scan's arguments escape, and would be allocated anew
	// for every row.
	var (
		kind                   int
		id, asker, recipient   string
		n                      int
		body                   string
		text                   sql.NullString
		at, approved, rejected db.NullTime
		byPerson               bool
	)
	for rows.Next() {
		if err := rows.Scan(&kind, &id, &asker, &recipient, &n, &body, &text, &at, &approved, &rejected, &byPerson); err != nil {
			return nil, err
		}
		switch kind {
		case kindPair:
			in := c.stats[recipient]
			if asker == me {
				in.YouAsked = n
			} else {
				in = c.stats[asker]
				in.TheyAsked = n
			}
			if last := at.Time; in.Last == nil || last.After(*in.Last) {
				in.Last = &last
			}
		case kindExchange:
			other := recipient
			if asker != me {
				other = asker
			}
			c.recent[other] = append(c.recent[other], Exchange{MessageID: id, AskedBy: asker, Question: body, Answer: text.String, AnsweredAt: at.Time})
		case kindDraft:
			c.drafts[id] = &Draft{MessageID: id, Version: n, Text: body, CreatedAt: at.Time,
				Approved: approved.Valid, Rejected: rejected.Valid, Note: text.String, ByPerson: byPerson}
		case kindSender:
			c.senders[id] = Sender{UserID: id, Name: recipient, Ownership: orgs.DecodeOwnership(asker),
				Notes: body, ProfileNotes: text.String, FormerMember: byPerson}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// The statement returns up to RecentExchanges a direction; keep the
	// newest of both.
	for o, xs := range c.recent {
		slices.SortStableFunc(xs, func(a, b Exchange) int { return b.AnsweredAt.Compare(a.AnsweredAt) })
		c.recent[o] = xs[:min(len(xs), RecentExchanges)]
	}
	return c, nil
}

// pairStats returns the statistics of the pairs of me and each of others,
// by the other's id; a pair that never exchanged a question has zeros.
func pairStats(ctx context.Context, r db.Reader, orgID, me string, others []string) (map[string]*Interaction, error) {
	c, err := readContext(ctx, r, pairRowsSQL(len(others)), me, others, nil, pairArgs(orgID, me, others))
	if err != nil {
		return nil, fmt.Errorf("read pair statistics: %w", err)
	}
	return c.stats, nil
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
