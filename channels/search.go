package channels

import (
	"context"
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
	// Channel and From, when set, keep one channel and one author.
	Channel string
	From    string
	// Since and Until, when set, keep messages posted in [Since, Until).
	Since, Until time.Time
	Limit        int
}

// farFuture stands for "no upper bound" in a time range.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// Search returns the messages that match a query, best match first, among
// the channels the caller is a member of, and nothing else: not public
// channels they have not joined, not channels they left. The query takes
// words (all must match, English stems: "retries" finds "retry"), "quoted
// phrases" and -word to exclude one.
//
// Returns EInvalid, ENotFound (Channel the caller cannot see).
func (s *Service) Search(ctx context.Context, c Caller, in Search) ([]*Message, error) {
	query, err := ctalk.Text("query", in.Query, MaxQueryLen, true)
	if err != nil {
		return nil, err
	}
	var name, from string
	if in.Channel != "" {
		ch, err := channel(ctx, s.db, c, in.Channel)
		if err != nil {
			return nil, err
		}
		name = ch.Name
	}
	if in.From != "" {
		if from, err = ctalk.ParseID("from_user_id", strings.TrimPrefix(in.From, "@")); err != nil {
			return nil, err
		}
	}
	until := in.Until
	if until.IsZero() {
		until = farFuture
	}
	sqlText := searchPostgresSQL
	if s.db.Engine == db.SQLite {
		sqlText = searchSQLiteSQL
		if query, err = ftsQuery(query); err != nil {
			return nil, err
		}
	}
	return queryMessages(ctx, s.db, c.UserID, sqlText, c.OrgID, c.UserID, query, name, from, in.Since.UTC(), until.UTC(), in.Limit)
}

// ftsQuery writes a web-search style query in FTS5's syntax: each word and
// each "quoted phrase" becomes an FTS5 string, so that no character of the
// query is read as an operator; all must match, and -word excludes a word.
//
// Returns EInvalid when nothing is left to search for.
func ftsQuery(q string) (string, error) {
	// FTS5 reads its query as a C string, so a NUL would end it inside a
	// term; Search refuses NULs before this, and here they only separate.
	q = strings.ReplaceAll(q, "\x00", " ")
	var must, not []string
	for q = strings.TrimSpace(q); q != ""; q = strings.TrimSpace(q) {
		neg := false
		if q[0] == '-' {
			neg, q = true, q[1:]
		}
		var term string
		if strings.HasPrefix(q, `"`) {
			end := strings.IndexByte(q[1:], '"')
			if end < 0 {
				term, q = q[1:], ""
			} else {
				term, q = q[1:end+1], q[end+2:]
			}
		} else {
			end := strings.IndexAny(q, " \t\r\n")
			if end < 0 {
				end = len(q)
			}
			term, q = q[:end], q[end:]
		}
		if strings.IndexFunc(term, isWordRune) < 0 {
			continue
		}
		term = `"` + strings.ReplaceAll(term, `"`, `""`) + `"`
		if neg {
			not = append(not, term)
		} else {
			must = append(must, term)
		}
	}
	if len(must) == 0 {
		return "", ctalk.Errorf(ctalk.EInvalid, "query has no word to search for; give at least one word that must appear")
	}
	out := strings.Join(must, " AND ")
	for _, t := range not {
		out += " NOT " + t
	}
	return out, nil
}

func isWordRune(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127
}
