package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"time"

	"github.com/ctalk/ctalk/db"
)

// The SQL behind ask_person and check_inbox, copied from inbox/inbox.go
// (Ask, checkAskLimits, notify) and inbox/context.go (Inbox, interaction,
// fillSender). The database baselines run it directly; keep it in step.
const (
	sqlUserExists = `SELECT COUNT(*) FROM users WHERE org_id = $1 AND id = $2`
	sqlAskRate    = `SELECT COUNT(*), MIN(created_at) FROM questions WHERE org_id = $1 AND asker_id = $2 AND created_at > $3`
	sqlAskLoop    = `
		SELECT COUNT(*), MIN(created_at) FROM (
			SELECT created_at FROM questions WHERE org_id = $1 AND recipient_id = $2 AND asker_id = $3 AND created_at > $4
			UNION ALL
			SELECT created_at FROM questions WHERE org_id = $1 AND recipient_id = $3 AND asker_id = $2 AND created_at > $4) pair`
	sqlAskPairStats = `
			INSERT INTO interactions (org_id, asker_id, recipient_id, asked, last_at) VALUES ($1, $2, $3, 1, $4)
			ON CONFLICT (org_id, asker_id, recipient_id) DO UPDATE SET asked = interactions.asked + 1, last_at = excluded.last_at`
	sqlAskInsert = `
			INSERT INTO questions (org_id, id, asker_id, recipient_id, body, status, idempotency_key, created_at)
			VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7)
			ON CONFLICT (org_id, asker_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`
	sqlNotify = `SELECT pg_notify($1, $2)`

	questionColumns = `id, asker_id, recipient_id, body, status, created_at, resolved_at, resolution, idempotency_key`
	sqlInboxPage    = `SELECT ` + questionColumns + ` FROM questions
			WHERE org_id = $1 AND recipient_id = $2 AND status = 'pending'
			  AND (created_at > $3 OR (created_at = $3 AND id > $4))
			ORDER BY created_at, id LIMIT $5`
	sqlInteraction = `SELECT asker_id, asked, last_at FROM interactions
		WHERE org_id = $1 AND asker_id = $2 AND recipient_id = $3
		UNION ALL
		SELECT asker_id, asked, last_at FROM interactions
		WHERE org_id = $1 AND asker_id = $3 AND recipient_id = $2`
	sqlRecentExchanges = `
		SELECT id, asker_id, body, resolution, resolved_at FROM (
			SELECT id, asker_id, body, resolution, resolved_at FROM questions
			WHERE org_id = $1 AND asker_id = $2 AND recipient_id = $3 AND status = 'answered'
			ORDER BY resolved_at DESC LIMIT $4) mine
		UNION ALL
		SELECT id, asker_id, body, resolution, resolved_at FROM (
			SELECT id, asker_id, body, resolution, resolved_at FROM questions
			WHERE org_id = $1 AND asker_id = $3 AND recipient_id = $2 AND status = 'answered'
			ORDER BY resolved_at DESC LIMIT $4) theirs
		ORDER BY resolved_at DESC LIMIT $4`
	sqlRepliesPage = `SELECT ` + questionColumns + ` FROM questions
			WHERE org_id = $1 AND asker_id = $2 AND status <> 'pending' AND resolved_at > $3
			ORDER BY resolved_at, id LIMIT $4`
)

// Values the product uses with that SQL.
const (
	notifyChannel    = "ctalk_wake"
	loopWindow       = 5 * time.Minute
	inboxPageLimit   = 10
	repliesPageLimit = 50
	recentExchanges  = 3
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
		_, err := d.ExecContext(ctx, sqlAskInsert, org, newQuestionID(), asker, to, questionText, sql.NullString{}, d.Now())
		return err
	})
}

// askTransaction is the whole transaction of ask_person without a key: the
// recipient check, the two limit counts, the INSERT and, on Postgres when
// notify is set, the wake-up notification.
func askTransaction(ctx context.Context, d *db.DB, org, asker, to string, notify bool) error {
	return d.Tx(ctx, func(tx *sql.Tx) error {
		now := d.Now()
		var n int
		if err := tx.QueryRowContext(ctx, sqlUserExists, org, to).Scan(&n); err != nil {
			return err
		}
		var oldest db.NullTime
		if err := tx.QueryRowContext(ctx, sqlAskRate, org, asker, now.Add(-time.Minute)).Scan(&n, &oldest); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, sqlAskLoop, org, asker, to, now.Add(-loopWindow)).Scan(&n, &oldest); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, sqlAskInsert, org, newQuestionID(), asker, to, questionText, sql.NullString{}, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, sqlAskPairStats, org, asker, to, now); err != nil {
			return err
		}
		if notify && d.Engine == db.Postgres {
			_, err := tx.ExecContext(ctx, sqlNotify, notifyChannel, org+"/"+to)
			return err
		}
		return nil
	})
}

// epoch is where check_inbox's first page starts.
var epoch = time.Unix(0, 0).UTC()

// selectInboxPage is the SELECT of check_inbox's first page, rows read as
// the product reads them.
func selectInboxPage(ctx context.Context, d *db.DB, org, user string) error {
	return scanQuestions(d.QueryContext(ctx, sqlInboxPage, org, user, epoch, "", inboxPageLimit+1))
}

// selectRepliesPage is the SELECT of check_replies.
func selectRepliesPage(ctx context.Context, d *db.DB, org, user string, since time.Time) error {
	return scanQuestions(d.QueryContext(ctx, sqlRepliesPage, org, user, since, repliesPageLimit+1))
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

// selectLoopCount is the loop-breaker count of ask_person.
func selectLoopCount(ctx context.Context, d *db.DB, org, asker, to string) error {
	var n int
	var oldest db.NullTime
	return d.QueryRowContext(ctx, sqlAskLoop, org, asker, to, d.Now().Add(-loopWindow)).Scan(&n, &oldest)
}

// selectInteraction is the history count check_inbox runs per sender.
func selectInteraction(ctx context.Context, d *db.DB, org, me, other string) error {
	rows, err := d.QueryContext(ctx, sqlInteraction, org, me, other)
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
	rows, err := d.QueryContext(ctx, sqlRecentExchanges, org, me, other, recentExchanges)
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
