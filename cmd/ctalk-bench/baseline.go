package main

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/baseline"
)

// The page sizes of check_inbox (its default) and check_replies.
const (
	inboxPageLimit   = 10
	repliesPageLimit = 50
)

// questionText is the question every ask of the harness sends: one of
// realistic length, the same for the tool and for the SQL.
const questionText = "What is the retry logic in alpha-repo when the upstream returns 503, and is the backoff capped? I need it for the incident review this afternoon."

// statements returns inbox's statements over d, with the limits of the
// server the harness starts, so that the baselines run the very SQL of the
// tools without copying it.
func statements(d *db.DB) baseline.Statements {
	return inbox.Baseline(d, baseline.Limits{AsksPerMinute: benchAsksPerMin, LoopMax: benchLoopMax})
}

// insertQuestion is the INSERT of ask_person alone, in its own implicit
// transaction, through the same writer queue as ctalk's own writes on
// SQLite, so the baseline is the engine's best, not its busy-wait.
func insertQuestion(ctx context.Context, d *db.DB, org, asker, to string) error {
	return statements(d).InsertQuestion(ctx, org, asker, to, questionText)
}

// askTransaction is the whole of ask_person's stored work without a key: on
// Postgres its one round trip (the advisory locks of the asker and the pair,
// then one statement: the checks, the INSERT, the pair's statistics), on
// SQLite its transaction. The wake-up for other replicas is sent after it,
// in batches, and is not part of it.
func askTransaction(ctx context.Context, d *db.DB, org, asker, to string) error {
	return statements(d).Ask(ctx, org, asker, to, questionText)
}

// selectInboxPage is the SELECT of check_inbox's first page, rows read as
// the product reads them.
func selectInboxPage(ctx context.Context, d *db.DB, org, user string) error {
	return statements(d).InboxPage(ctx, org, user, inboxPageLimit)
}

// selectRepliesPage is the SELECT of check_replies' first page after since.
func selectRepliesPage(ctx context.Context, d *db.DB, org, user string, since time.Time) error {
	return statements(d).RepliesPage(ctx, org, user, since, repliesPageLimit)
}

// selectAskChecks is the check statement of ask_person: the recipient, the
// asker's rate and the pair's loop-breaker count.
func selectAskChecks(ctx context.Context, d *db.DB, org, asker, to string) error {
	return statements(d).AskChecks(ctx, org, asker, to)
}

// selectPairStats is the statement of check_inbox that reads the pair
// statistics of a page's senders.
func selectPairStats(ctx context.Context, d *db.DB, org, me string, senders []string) error {
	return statements(d).PairStats(ctx, org, me, senders)
}

// selectRecentExchanges is the statement of check_inbox that reads the
// recent answers exchanged with a page's senders.
func selectRecentExchanges(ctx context.Context, d *db.DB, org, me string, senders []string) error {
	return statements(d).RecentExchanges(ctx, org, me, senders)
}
