package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
)

// Values the product uses with inbox's SQL: the loop window of the default
// configuration, and the page sizes of check_inbox (its default) and
// check_replies.
var loopWindow = inbox.DefaultConfig().LoopWindow

const (
	inboxPageLimit   = 10
	repliesPageLimit = 50
)

// questionText is the question every ask of the harness sends: one of
// realistic length, the same for the tool and for the SQL.
const questionText = "What is the retry logic in alpha-repo when the upstream returns 503, and is the backoff capped? I need it for the incident review this afternoon."

func newQuestionID() string {
	var b [12]byte
	rand.Read(b[:])
	return "q_" + hex.EncodeToString(b[:])
}

// insertQuestion is the INSERT of ask_person alone, in its own implicit
// transaction.
func insertQuestion(ctx context.Context, d *db.DB, org, asker, to string) error {
	// Through the same writer queue as ctalk's own writes on SQLite, so the
	// baseline is the engine's best, not its busy-wait.
	return d.Write(ctx, func() error {
		_, err := d.ExecContext(ctx, inbox.AskInsertSQL, org, newQuestionID(), asker, to, questionText, sql.NullString{}, d.Now())
		return err
	})
}

// askTransaction is the whole of ask_person's stored work without a key: on
// Postgres its one round trip (the advisory locks of the asker and the pair,
// then one statement: the checks, the INSERT, the pair's statistics), on
// SQLite its transaction. The wake-up for other replicas is
// sent after it, in batches, and is not part of it.
func askTransaction(ctx context.Context, d *db.DB, org, asker, to string) error {
	now := d.Now()
	var (
		recipient, rateN, loopN int
		rateOldest, loopOldest  db.NullTime
	)
	c := []any{&recipient, &rateN, &rateOldest, &loopN, &loopOldest}
	if d.Engine == db.Postgres {
		var n int
		return d.QueryRowLocked(ctx, inbox.AskLocks(org, asker, to), inbox.AskPostgresSQL,
			[]any{org, asker, to, now.Add(-time.Minute), now.Add(-loopWindow), newQuestionID(), questionText, sql.NullString{}, now, benchAsksPerMin, benchLoopMax},
			append(c, &n)...)
	}
	return d.Tx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, inbox.AskChecksSQL, org, asker, to, now.Add(-time.Minute), now.Add(-loopWindow)).Scan(c...); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, inbox.AskInsertSQL, org, newQuestionID(), asker, to, questionText, sql.NullString{}, now); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, inbox.AskPairStatsSQL, org, asker, to, now)
		return err
	})
}

// epoch is where check_inbox's first page starts.
var epoch = time.Unix(0, 0).UTC()

// selectInboxPage is the SELECT of check_inbox's first page, rows read as
// the product reads them.
func selectInboxPage(ctx context.Context, d *db.DB, org, user string) error {
	return scanQuestions(d.QueryContext(ctx, inbox.InboxPageSQL, org, user, epoch, "", inboxPageLimit+1))
}

// selectRepliesPage is the SELECT of check_replies' first page after since.
func selectRepliesPage(ctx context.Context, d *db.DB, org, user string, since time.Time) error {
	return scanQuestions(d.QueryContext(ctx, inbox.RepliesPageSQL, org, user, since, "", repliesPageLimit+1))
}

func scanQuestions(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id, from, to, body, status string
			created                    time.Time
			resolved                   db.NullTime
			resolution, key            sql.NullString
		)
		if err := rows.Scan(&id, &from, &to, &body, &status, &created, &resolved, &resolution, &key); err != nil {
			return err
		}
	}
	return rows.Err()
}

// selectAskChecks is the check statement of ask_person: the recipient, the
// asker's rate and the pair's loop-breaker count.
func selectAskChecks(ctx context.Context, d *db.DB, org, asker, to string) error {
	var recipient, rateN, loopN int
	var rateOldest, loopOldest db.NullTime
	now := d.Now()
	return d.QueryRowContext(ctx, inbox.AskChecksSQL, org, asker, to, now.Add(-time.Minute), now.Add(-loopWindow)).
		Scan(&recipient, &rateN, &rateOldest, &loopN, &loopOldest)
}

// selectInteraction is the history count check_inbox runs per sender.
func selectInteraction(ctx context.Context, d *db.DB, org, me, other string) error {
	rows, err := d.QueryContext(ctx, inbox.InteractionSQL, org, me, other)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var asker string
		var asked int
		var last time.Time
		if err := rows.Scan(&asker, &asked, &last); err != nil {
			return err
		}
	}
	return rows.Err()
}

// selectRecentExchanges is the recent-answers query check_inbox runs per sender.
func selectRecentExchanges(ctx context.Context, d *db.DB, org, me, other string) error {
	rows, err := d.QueryContext(ctx, inbox.RecentExchangesSQL, org, me, other, inbox.RecentExchanges)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, asker, body, answer string
		var at time.Time
		if err := rows.Scan(&id, &asker, &body, &answer, &at); err != nil {
			return err
		}
	}
	return rows.Err()
}
