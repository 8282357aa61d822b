package inbox

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
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

// Interaction returns the history between the caller and other.
//
// Returns only the database's errors: a pair that never exchanged a
// question, or an unknown user, has zeros.
func (s *Service) Interaction(ctx context.Context, c ctalk.Caller, other string) (*Interaction, error) {
	stats, err := pairStats(ctx, s.db, c.OrgID, c.UserID, []string{other})
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

// withHistory adds sender, history and latest draft to pending questions,
// in one statement whatever the page's size and however many people asked
// (see readHistory and historySQL).
func (s *Service) withHistory(ctx context.Context, r db.Reader, orgID, userID string, qs []*Question) ([]*InboxItem, error) {
	if len(qs) == 0 {
		return []*InboxItem{}, nil
	}
	if err := annotate(ctx, r, orgID, userID, qs); err != nil {
		return nil, err
	}
	senders := make([]string, 0, len(qs))
	for _, q := range qs {
		if !slices.Contains(senders, q.From) {
			senders = append(senders, q.From)
		}
	}
	questionIDs := ids(qs)
	c, err := readHistory(ctx, r, historySQL(len(senders), len(questionIDs)),
		userID, senders, questionIDs, pairArgs(orgID, userID, senders, questionIDs))
	if err != nil {
		return nil, fmt.Errorf("read question history: %w", err)
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

// pageHistory is what readHistory reads: by the other user's id, who
// they are (when the statement reads senders), the statistics of their
// pair with the caller and their recent exchanges; by question id, the
// latest draft.
type pageHistory struct {
	senders map[string]Sender
	stats   map[string]*Interaction
	recent  map[string][]Exchange
	drafts  map[string]*Draft
}

// readHistory runs query, a UNION ALL of pairRowsSQL, exchangeRowsSQL,
// draftRowsSQL and senderRowsSQL (or some of them) about me and others,
// with args, and gathers its rows. A pair that never exchanged a question
// has zeros, and no exchanges.
func readHistory(ctx context.Context, r db.Reader, query, me string, others, questionIDs []string, args []any) (*pageHistory, error) {
	c := newPageHistory(others, questionIDs)
	rows, err := r.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// Declared once: Scan's arguments escape, and would be allocated anew
	// for every row.
	var w historyRow
	for rows.Next() {
		if err := rows.Scan(&w.kind, &w.id, &w.asker, &w.recipient, &w.n, &w.body, &w.text, &w.at, &w.approved, &w.rejected, &w.byPerson); err != nil {
			return nil, err
		}
		c.add(me, &w)
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

// historyRow is one row of readHistory's query; what its columns mean
// depends on its kind.
type historyRow struct {
	kind                   int
	id, asker, recipient   string
	n                      int
	body                   string
	text                   sql.NullString
	at, approved, rejected db.NullTime
	byPerson               bool
}

// newPageHistory is the empty history of me with others and of the drafts
// of questionIDs: zeros for every pair, no exchanges.
func newPageHistory(others, questionIDs []string) *pageHistory {
	c := &pageHistory{
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
	return c
}

// add gathers row w, read for me, into c.
func (c *pageHistory) add(me string, w *historyRow) {
	switch w.kind {
	case kindPair:
		in := c.stats[w.recipient]
		if w.asker == me {
			in.YouAsked = w.n
		} else {
			in = c.stats[w.asker]
			in.TheyAsked = w.n
		}
		if last := w.at.Time; in.Last == nil || last.After(*in.Last) {
			in.Last = &last
		}
	case kindExchange:
		other := w.recipient
		if w.asker != me {
			other = w.asker
		}
		c.recent[other] = append(c.recent[other], Exchange{MessageID: w.id, AskedBy: w.asker, Question: w.body, Answer: w.text.String, AnsweredAt: w.at.Time})
	case kindDraft:
		c.drafts[w.id] = &Draft{MessageID: w.id, Version: w.n, Text: w.body, CreatedAt: w.at.Time,
			Approved: w.approved.Valid, Rejected: w.rejected.Valid, Note: w.text.String, ByPerson: w.byPerson}
	case kindSender:
		c.senders[w.id] = Sender{UserID: w.id, Name: w.recipient, Ownership: orgs.DecodeOwnership(w.asker),
			Notes: w.body, ProfileNotes: w.text.String, FormerMember: w.byPerson}
	}
}

// pairStats returns the statistics of the pairs of me and each of others,
// by the other's id; a pair that never exchanged a question has zeros.
func pairStats(ctx context.Context, r db.Reader, orgID, me string, others []string) (map[string]*Interaction, error) {
	c, err := readHistory(ctx, r, pairRowsSQL(len(others)), me, others, nil, pairArgs(orgID, me, others))
	if err != nil {
		return nil, fmt.Errorf("read pair statistics: %w", err)
	}
	return c.stats, nil
}
