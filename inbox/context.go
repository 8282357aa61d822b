package inbox

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
// previous page, or empty.
//
// Returns EInvalid for a cursor this server did not issue.
func (s *Service) Inbox(ctx context.Context, orgID, userID string, limit int, cursor string) (items []*InboxItem, next string, err error) {
	after, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	if items, next, done, err := s.handedPage(ctx, orgID, userID, limit, after); err != nil || done {
		return items, next, err
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		qs, err := queryQuestions(ctx, tx, inboxPageSQL, orgID, userID, after.At, after.ID, limit+1)
		if err != nil {
			return fmt.Errorf("read inbox page: %w", err)
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

// handedPage reads a page of Inbox when every question on it was handed over
// already, as on every check of an inbox after the first: it then needs no
// write, and on SQLite no turn in the writer queue. Handing over is never
// undone, so a page found all handed stays so. done is false when the page
// holds a question not yet handed over: Inbox then reads and marks it in one
// transaction.
func (s *Service) handedPage(ctx context.Context, orgID, userID string, limit int, after pageCursor) (items []*InboxItem, next string, done bool, err error) {
	qs, err := queryQuestions(ctx, s.db, inboxPageSQL, orgID, userID, after.At, after.ID, limit+1)
	if err != nil {
		return nil, "", false, fmt.Errorf("read inbox page: %w", err)
	}
	if len(qs) > limit {
		qs = qs[:limit]
		last := qs[len(qs)-1]
		next = encodeCursor(pageCursor{At: last.CreatedAt, ID: last.ID})
	}
	if len(qs) > 0 {
		var unhanded int
		if err := s.db.QueryRow(ctx, unhandedSQL(len(qs)), append([]any{orgID}, anys(ids(qs))...)...).Scan(&unhanded); err != nil {
			return nil, "", false, fmt.Errorf("read inbox page: %w", err)
		}
		if unhanded > 0 {
			return nil, "", false, nil
		}
	}
	if items, err = s.withContext(ctx, s.db, orgID, userID, qs); err != nil {
		return nil, "", false, err
	}
	return items, next, true, nil
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// withContext adds sender, history and latest draft to pending questions,
// in four statements whatever the page's size and however many people
// asked: the senders, the pair statistics, the recent exchanges and the
// latest drafts.
func (s *Service) withContext(ctx context.Context, r db.Reader, orgID, userID string, qs []*Question) ([]*InboxItem, error) {
	items := make([]*InboxItem, 0, len(qs))
	if len(qs) == 0 {
		return items, nil
	}
	var senders []string
	seen := map[string]bool{}
	for _, q := range qs {
		if !seen[q.From] {
			seen[q.From] = true
			senders = append(senders, q.From)
		}
	}
	profiles, err := orgs.Profiles(ctx, r, orgID, senders)
	if err != nil {
		return nil, err
	}
	stats, err := pairStats(ctx, r, orgID, userID, senders)
	if err != nil {
		return nil, err
	}
	recent, err := recentExchanges(ctx, r, orgID, userID, senders)
	if err != nil {
		return nil, err
	}
	drafts, err := latestDrafts(ctx, r, orgID, ids(qs))
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		p, ok := profiles[q.From]
		if !ok {
			return nil, fmt.Errorf("read sender %s of %s: no such user", q.From, q.ID)
		}
		items = append(items, &InboxItem{
			Question: q,
			Sender: Sender{UserID: p.ID, Name: p.Name, Ownership: p.Ownership, Notes: p.Notes,
				ProfileNotes: p.ProfileNotes, FormerMember: p.Removed},
			History:     History{Interaction: stats[q.From], RecentExchanges: recent[q.From]},
			LatestDraft: drafts[q.ID],
		})
	}
	return items, nil
}

// withOthers returns the arguments orgID, me, then extra, then others, for a
// statement of pairs between me and others ($3 and on, after extra).
func withOthers(orgID, me string, others []string, extra ...any) []any {
	args := append([]any{orgID, me}, extra...)
	for _, o := range others {
		args = append(args, o)
	}
	return args
}

// pairStats returns the statistics of the pairs of me and each of others,
// by the other's id; a pair that never exchanged a question has zeros.
func pairStats(ctx context.Context, r db.Reader, orgID, me string, others []string) (map[string]*Interaction, error) {
	out := make(map[string]*Interaction, len(others))
	for _, o := range others {
		out[o] = &Interaction{}
	}
	rows, err := r.Query(ctx, pairStatsSQL(len(others)), withOthers(orgID, me, others)...)
	if err != nil {
		return nil, fmt.Errorf("read pair statistics: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var asker, recipient string
		var asked int
		var last time.Time
		if err := rows.Scan(&asker, &recipient, &asked, &last); err != nil {
			return nil, fmt.Errorf("read pair statistics: %w", err)
		}
		in := out[recipient]
		if asker == me {
			in.YouAsked = asked
		} else {
			in = out[asker]
			in.TheyAsked = asked
		}
		if last = last.UTC(); in.Last == nil || last.After(*in.Last) {
			in.Last = &last
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read pair statistics: %w", err)
	}
	return out, nil
}

// recentExchanges returns, by the other's id, the last RecentExchanges
// answered questions between me and each of others, newest first.
func recentExchanges(ctx context.Context, r db.Reader, orgID, me string, others []string) (map[string][]Exchange, error) {
	out := make(map[string][]Exchange, len(others))
	for _, o := range others {
		out[o] = []Exchange{}
	}
	rows, err := r.Query(ctx, recentExchangesSQL(len(others)), withOthers(orgID, me, others, RecentExchanges)...)
	if err != nil {
		return nil, fmt.Errorf("read recent exchanges: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var x Exchange
		var recipient string
		if err := rows.Scan(&x.MessageID, &x.AskedBy, &recipient, &x.Question, &x.Answer, &x.AnsweredAt); err != nil {
			return nil, fmt.Errorf("read recent exchanges: %w", err)
		}
		x.AnsweredAt = x.AnsweredAt.UTC()
		other := recipient
		if x.AskedBy != me {
			other = x.AskedBy
		}
		out[other] = append(out[other], x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read recent exchanges: %w", err)
	}
	// The statement returns up to RecentExchanges a direction; keep the
	// newest of both.
	for o, xs := range out {
		slices.SortStableFunc(xs, func(a, b Exchange) int { return b.AnsweredAt.Compare(a.AnsweredAt) })
		out[o] = xs[:min(len(xs), RecentExchanges)]
	}
	return out, nil
}

// latestDrafts returns the newest draft of each of the questions that has
// one, by question id.
func latestDrafts(ctx context.Context, r db.Reader, orgID string, questionIDs []string) (map[string]*Draft, error) {
	args := []any{orgID}
	for _, id := range questionIDs {
		args = append(args, id)
	}
	rows, err := r.Query(ctx, latestDraftsSQL(len(questionIDs)), args...)
	if err != nil {
		return nil, fmt.Errorf("read latest drafts: %w", err)
	}
	defer rows.Close()
	out := make(map[string]*Draft, len(questionIDs))
	for rows.Next() {
		d, err := scanDraft(rows)
		if err != nil {
			return nil, fmt.Errorf("read latest drafts: %w", err)
		}
		out[d.MessageID] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read latest drafts: %w", err)
	}
	return out, nil
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
