package inbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Replies returns the questions the caller asked that were resolved after
// since, or, when cursor is set, after the position it stands for (the
// NextCursor of the previous page); oldest first, at most limit; and marks
// them handed to the asker. next is empty on the last page.
//
// Returns EInvalid for a cursor this server did not issue.
func (s *Service) Replies(ctx context.Context, c ctalk.Caller, since time.Time, cursor string, limit int) (out []*Question, next string, err error) {
	after := pageCursor{At: since.UTC()}
	if strings.TrimSpace(cursor) != "" {
		if after, err = decodeCursor(cursor); err != nil {
			return nil, "", err
		}
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		var err error
		out, err = queryQuestions(ctx, tx, repliesPageSQL, c.OrgID, c.UserID, after.At, after.ID, limit+1)
		if err != nil {
			return fmt.Errorf("read replies page: %w", err)
		}
		if err := annotate(ctx, tx, c.OrgID, c.UserID, out); err != nil {
			return err
		}
		if len(out) > limit {
			out = out[:limit]
			last := out[len(out)-1]
			next = encodeCursor(pageCursor{At: *last.ResolvedAt, ID: last.ID})
		}
		return markHanded(ctx, tx, c.OrgID, "asker_handed_at", ids(out), s.db.Now())
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

func ids(qs []*Question) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.ID
	}
	return out
}

// markHanded records, in one statement, that the given questions were
// handed over through column, one of the three *_handed_at columns.
func markHanded(ctx context.Context, tx db.Querier, orgID, column string, ids []string, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	args := []any{now, orgID}
	for _, id := range ids {
		args = append(args, id)
	}
	if _, err := tx.Exec(ctx, markHandedSQL(column, len(ids)), args...); err != nil {
		return fmt.Errorf("mark handed over (%s): %w", column, err)
	}
	return nil
}
