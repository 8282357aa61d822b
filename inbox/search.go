package inbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// MaxQueryLen bounds a search query, in characters.
const MaxQueryLen = 500

// Search is the input of Search.
type Search struct {
	Query string
	// With, when set, keeps the questions between the caller and this user.
	With string
	// Since and Until, when set, keep questions asked in [Since, Until).
	Since, Until time.Time
	Limit        int
}

// Search returns the caller's own questions, those they asked and those
// they were asked, whose question or sent answer or decline reason matches
// a query, best match first. Nothing else: not other people's questions,
// not drafts that were never sent. The query takes words (all must match,
// English stems), "quoted phrases" and -word to exclude one.
//
// Returns EInvalid.
func (s *Service) Search(ctx context.Context, c ctalk.Caller, in Search) ([]*Question, error) {
	query, err := ctalk.Text("query", in.Query, MaxQueryLen, true)
	if err != nil {
		return nil, err
	}
	var with string
	if in.With != "" {
		if with, err = ctalk.ParseID("from_user_id", strings.TrimPrefix(in.With, "@")); err != nil {
			return nil, err
		}
	}
	since, until := db.Range(in.Since, in.Until)
	sqlText := searchPostgresSQL
	if s.db.Engine == db.SQLite {
		sqlText = searchSQLiteSQL
		if query, err = db.FTSQuery(query); err != nil {
			return nil, err
		}
	}
	out, err := queryQuestions(ctx, s.db, sqlText, c.OrgID, c.UserID, query, with, since, until, in.Limit)
	if err != nil {
		return nil, fmt.Errorf("search questions: %w", err)
	}
	return out, nil
}
