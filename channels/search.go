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

// Search returns the messages that match a query, best match first among
// its newest SearchWindow matches, in the channels the caller is a member
// of and nothing else: not public channels they have not joined, not
// channels they left. The query takes
// words (all must match, English stems: "retries" finds "retry"), "quoted
// phrases" and -word to exclude one.
//
// Returns EInvalid, ENotFound (Channel the caller cannot see).
func (s *Service) Search(ctx context.Context, c ctalk.Caller, in Search) ([]*Message, error) {
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
	since, until := db.Range(in.Since, in.Until)
	if s.db.Engine == db.SQLite {
		if query, err = ftsQuery(query); err != nil {
			return nil, err
		}
		return queryMessages(ctx, s.db, c.UserID, searchSQLiteSQL, c.OrgID, c.UserID, query, name, from, since, until, in.Limit, SearchWindow)
	}
	mine, err := s.searchChannels(ctx, c, name)
	if err != nil || len(mine) == 0 {
		return []*Message{}, err
	}
	s.betweenReads()
	return queryMessages(ctx, s.db, c.UserID, searchPostgresSQL, s.db.PlanEachRun(c.OrgID, mine, query, from, since, until, in.Limit, SearchWindow, c.UserID)...)
}

// searchChannels returns the channels a search covers: the caller's, or
// only name when it is one of them.
func (s *Service) searchChannels(ctx context.Context, c ctalk.Caller, name string) ([]string, error) {
	rows, err := s.db.Query(ctx, myChannelsSQL, c.OrgID, c.UserID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ch string
		if err := rows.Scan(&ch); err != nil {
			return nil, err
		}
		if name == "" || ch == name {
			out = append(out, ch)
		}
	}
	return out, rows.Err()
}

// ftsQuery writes a web-search style query in FTS5's syntax (see
// db.FTSQuery).
var ftsQuery = db.FTSQuery
