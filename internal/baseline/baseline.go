// Package baseline gives the load harness (cmd/ctalk-bench) the statements
// of ask_person, check_inbox and check_replies to run one at a time,
// without the rules around them, and bulk seeding of history: it measures
// the database's share of a tool with the very SQL the tool runs. That SQL
// stays unexported with the package that owns its tables, which returns
// its Statements (inbox.Baseline, in inbox/baseline.go) to the harness
// alone: nothing of the server calls it, so the server's binary holds none
// of it.
package baseline

import (
	"context"
	"time"
)

// Statements runs the stored work of the question tools, one statement or
// transaction a call, and stores rows directly.
type Statements interface {
	// InsertQuestion stores a question with ask_person's INSERT alone, in
	// its own implicit transaction, through the writer queue.
	InsertQuestion(ctx context.Context, orgID, asker, to, text string) error
	// Ask is the whole of ask_person's stored work without a key or a
	// wake-up: on Postgres one round trip, on SQLite one transaction.
	Ask(ctx context.Context, orgID, asker, to, text string) error
	// AskChecks runs ask_person's check statement alone: the recipient,
	// the asker's rate and the pair's loop-breaker count.
	AskChecks(ctx context.Context, orgID, asker, to string) error
	// InboxPage runs the SELECT of check_inbox's first page of limit
	// questions.
	InboxPage(ctx context.Context, orgID, userID string, limit int) error
	// RepliesPage runs the SELECT of check_replies' first page after since.
	RepliesPage(ctx context.Context, orgID, userID string, since time.Time, limit int) error
	// PairStats runs the statement that reads the pair statistics of a
	// page's senders.
	PairStats(ctx context.Context, orgID, me string, senders []string) error
	// RecentExchanges runs the statement that reads the recent exchanges
	// with a page's senders.
	RecentExchanges(ctx context.Context, orgID, me string, senders []string) error
	// SeedQuestions stores questions directly, without the rules of an ask
	// or the pair statistics (see RebuildPairStats).
	SeedQuestions(ctx context.Context, orgID string, qs []Seeded) error
	// SeedHistory stores answered, handed-over history rows from..to in one
	// statement: row n is asked by u(n mod users) of u((n mod users + 1 +
	// (n div users) mod (users-1)) mod users), which visits every ordered
	// pair of the users u0 to u(users-1) evenly; it was asked n seconds
	// before end and answered 30 s later.
	SeedHistory(ctx context.Context, orgID string, users, from, to int, end time.Time) error
	// Analyze updates the planner's statistics of the questions on
	// Postgres, as autovacuum does after a table grew; on SQLite it does
	// nothing.
	Analyze(ctx context.Context) error
	// RebuildPairStats recounts an org's pair statistics from its
	// questions, as asks and answers keep them, after questions were
	// seeded directly.
	RebuildPairStats(ctx context.Context, orgID string) error
}

// Seeded is a question stored directly by SeedQuestions: pending when
// AnsweredAt is zero, else answered then with Answer, and handed over to
// both sides.
type Seeded struct {
	ID, From, To, Text string
	CreatedAt          time.Time
	Answer             string
	AnsweredAt         time.Time
}

// Limits are the ask limits of the server the harness measures, which the
// statements apply as its service would.
type Limits struct {
	AsksPerMinute, LoopMax int
}
