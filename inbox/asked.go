package inbox

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/orgs"
)

// MaxListPage is the most questions a page of Asked or Between holds.
const MaxListPage = 50

// Recipient is whom a question was asked, as the asker's list names them.
type Recipient struct {
	UserID string `json:"user_id"`
	Name   string `json:"name"`
	// FormerMember marks a person since removed from the org.
	FormerMember bool `json:"former_member,omitempty"`
}

// AskedItem is a question the caller asked, with whom they asked.
type AskedItem struct {
	*Question
	Recipient Recipient `json:"recipient"`
}

// Asked returns the questions the caller asked, newest first, a page of at most
// limit at a time, each with its status and, once resolved, the answer or
// the reason it was declined. cursor is the next cursor of the previous
// page, or empty for the newest. It only reads: the replies it shows are
// still handed to the asker's agent by check_replies and wait_for_reply.
// It costs two statements: the page and its recipients.
//
// Returns EInvalid for a limit outside 1 to MaxListPage or a cursor this server
// did not issue.
func (s *Service) Asked(ctx context.Context, c ctalk.Caller, limit int, cursor string) (items []*AskedItem, next string, err error) {
	if limit < 1 || limit > MaxListPage {
		return nil, "", ctalk.Errorf(ctalk.EInvalid, "limit must be 1 to %d (got %d)", MaxListPage, limit)
	}
	before := pageCursor{At: newest}
	if strings.TrimSpace(cursor) != "" {
		if before, err = decodeCursor(cursor); err != nil {
			return nil, "", err
		}
	}
	qs, err := queryQuestions(ctx, s.db, askedPageSQL, c.OrgID, c.UserID, before.At, before.ID, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("read asked page: %w", err)
	}
	if err := annotate(ctx, s.db, c.OrgID, c.UserID, qs); err != nil {
		return nil, "", err
	}
	if len(qs) > limit {
		qs = qs[:limit]
		last := qs[len(qs)-1]
		next = encodeCursor(pageCursor{At: last.CreatedAt, ID: last.ID})
	}
	var to []string
	for _, q := range qs {
		if !slices.Contains(to, q.To) {
			to = append(to, q.To)
		}
	}
	people, err := orgs.Profiles(ctx, s.db, c.OrgID, to)
	if err != nil {
		return nil, "", err
	}
	items = make([]*AskedItem, 0, len(qs))
	for _, q := range qs {
		p := people[q.To]
		it := &AskedItem{Question: q, Recipient: Recipient{UserID: q.To, Name: q.To}}
		if p.User != nil {
			it.Recipient = Recipient{UserID: p.ID, Name: p.Name, FormerMember: p.Removed}
		}
		items = append(items, it)
	}
	return items, next, nil
}

// newest stands before every question when a page starts from the newest:
// no question is stamped after it.
var newest = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// Conversation is what passed between two members of an org.
type Conversation struct {
	*Interaction
	// Recent are the latest questions either way, in any status, newest
	// first. Every text in them is one of the two people's words: data.
	Recent []*Question `json:"recent_questions"`
}

// Between returns the history of the caller with other: the pair's statistics and
// their latest limit questions, asked either way, in any status, newest
// first, in two statements. It only reads, and never shows drafts.
//
// Returns EInvalid for a limit outside 1 to MaxListPage.
func (s *Service) Between(ctx context.Context, c ctalk.Caller, other string, limit int) (*Conversation, error) {
	if limit < 1 || limit > MaxListPage {
		return nil, ctalk.Errorf(ctalk.EInvalid, "limit must be 1 to %d (got %d)", MaxListPage, limit)
	}
	stats, err := pairStats(ctx, s.db, c.OrgID, c.UserID, []string{other})
	if err != nil {
		return nil, err
	}
	qs, err := queryQuestions(ctx, s.db, betweenSQL, c.OrgID, c.UserID, other, limit)
	if err != nil {
		return nil, fmt.Errorf("read questions between two people: %w", err)
	}
	// The statement returns up to limit a direction; keep the newest of both.
	slices.SortStableFunc(qs, func(a, b *Question) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return &Conversation{Interaction: stats[other], Recent: qs[:min(len(qs), limit)]}, nil
}

// The statements of Asked and Between, over the questions table that inbox
// owns (the rest of its SQL is in sql.go).

// askedPageSQL reads a page of the questions an asker ($2) asked before a
// position (created_at $3, id $4), newest first: the index of questions by
// asker and time serves it.
const askedPageSQL = `SELECT ` + questionColumns + ` FROM questions
	WHERE org_id = $1 AND asker_id = $2
	  AND (created_at < $3 OR (created_at = $3 AND id < $4))
	ORDER BY created_at DESC, id DESC LIMIT $5`

// betweenSQL reads the latest $4 questions between two users ($2 and $3),
// per direction: one ordered, limited index range of the pair's index each
// way. An OR of the directions would read the pair's whole history.
const betweenSQL = `SELECT * FROM (SELECT ` + questionColumns + ` FROM questions
		WHERE org_id = $1 AND asker_id = $2 AND recipient_id = $3 ORDER BY created_at DESC, id DESC LIMIT $4) mine
	UNION ALL
	SELECT * FROM (SELECT ` + questionColumns + ` FROM questions
		WHERE org_id = $1 AND asker_id = $3 AND recipient_id = $2 ORDER BY created_at DESC, id DESC LIMIT $4) theirs`
