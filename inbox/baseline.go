package inbox

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Baseline runs the statements of ask_person, check_inbox and check_replies
// one at a time, without the rules around them, and seeds history in bulk,
// for the load harness: it measures the database's share of a tool with
// the very SQL the tool runs, which stays here, unexported, with its owner.
// The server never uses it.
type Baseline struct {
	s *Service
}

// NewBaseline returns the statements of a Service over d with cfg's limits,
// which needs no broker.
func NewBaseline(d *db.DB, cfg Config) *Baseline {
	return &Baseline{&Service{db: d, cfg: cfg}}
}

// InsertQuestion stores a question with ask_person's INSERT alone, in its
// own implicit transaction, through the writer queue.
func (b *Baseline) InsertQuestion(ctx context.Context, orgID, asker, to, text string) error {
	return b.s.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, askInsertSQL, orgID, newID(messageIDPrefix), asker, to, text, sql.NullString{}, b.s.db.Now())
		return err
	})
}

// Ask is the whole of ask_person's stored work without a key or a wake-up:
// on Postgres one round trip, on SQLite one transaction (see insertQuestion).
func (b *Baseline) Ask(ctx context.Context, orgID, asker, to, text string) error {
	q := &Question{ID: newID(messageIDPrefix), From: asker, To: to, Text: text, CreatedAt: b.s.db.Now()}
	_, err := b.s.insertQuestion(ctx, orgID, q)
	return err
}

// AskChecks runs ask_person's check statement alone: the recipient, the
// asker's rate and the pair's loop-breaker count.
func (b *Baseline) AskChecks(ctx context.Context, orgID, asker, to string) error {
	var c askChecks
	now := b.s.db.Now()
	return b.s.db.QueryRow(ctx, askChecksSQL, orgID, asker, to, now.Add(-time.Minute), now.Add(-b.s.cfg.LoopWindow)).
		Scan(&c.recipient, &c.rateN, &c.rateOldest, &c.loopN, &c.loopOldest)
}

// InboxPage runs the SELECT of check_inbox's first page of limit questions.
func (b *Baseline) InboxPage(ctx context.Context, orgID, userID string, limit int) error {
	_, _, _, err := readInboxPage(ctx, b.s.db, orgID, userID, limit, pageCursor{At: time.Unix(0, 0).UTC()})
	return err
}

// RepliesPage runs the SELECT of check_replies' first page after since.
func (b *Baseline) RepliesPage(ctx context.Context, orgID, userID string, since time.Time, limit int) error {
	_, err := queryQuestions(ctx, b.s.db, repliesPageSQL, orgID, userID, since.UTC(), "", limit+1)
	return err
}

// PairStats runs the statement that reads the pair statistics of a page's
// senders.
func (b *Baseline) PairStats(ctx context.Context, orgID, me string, senders []string) error {
	_, err := pairStats(ctx, b.s.db, orgID, me, senders)
	return err
}

// RecentExchanges runs the statement that reads the recent exchanges with a
// page's senders.
func (b *Baseline) RecentExchanges(ctx context.Context, orgID, me string, senders []string) error {
	_, err := readHistory(ctx, b.s.db, exchangeRowsSQL(len(senders)), me, senders, nil, pairArgs(orgID, me, senders))
	return err
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

// SeedQuestions stores questions directly, without the rules of Ask or the
// pair statistics (see RebuildPairStats).
func (b *Baseline) SeedQuestions(ctx context.Context, orgID string, qs []Seeded) error {
	return b.s.db.Tx(ctx, func(q db.Querier) error {
		for _, s := range qs {
			status, resolved, answer := StatusPending, sql.NullTime{}, sql.NullString{}
			if !s.AnsweredAt.IsZero() {
				status, resolved, answer = StatusAnswered, sql.NullTime{Time: s.AnsweredAt, Valid: true}, sql.NullString{String: s.Answer, Valid: true}
			}
			if _, err := q.Exec(ctx, seedQuestionSQL, orgID, s.ID, s.From, s.To, s.Text, status, s.CreatedAt, resolved, answer); err != nil {
				return fmt.Errorf("seed question %s: %w", s.ID, err)
			}
		}
		return nil
	})
}

// SeedHistory stores answered, handed-over history rows from..to in one
// statement: row n is asked by u(n mod users) of u((n mod users + 1 + (n div
// users) mod (users-1)) mod users), which visits every ordered pair of the
// users u0 to u(users-1) evenly; it was asked n seconds before end and
// answered 30 s later. Postgres then analyzes the table, as autovacuum would
// after it grew this much.
func (b *Baseline) SeedHistory(ctx context.Context, orgID string, users, from, to int, end time.Time) error {
	return b.s.db.Write(ctx, func(q db.Querier) (err error) {
		if b.s.db.Engine == db.Postgres {
			_, err = q.Exec(ctx, seedHistoryPostgresSQL, orgID, users, end, int64(from), int64(to))
		} else {
			_, err = q.Exec(ctx, seedHistorySQLiteSQL, orgID, users, end.UTC().Truncate(time.Second).Format("2006-01-02 15:04:05"), int64(from), int64(to))
		}
		if err != nil {
			return fmt.Errorf("seed history rows %d to %d: %w", from, to, err)
		}
		return nil
	})
}

// Analyze updates the planner's statistics of the questions on Postgres, as
// autovacuum does after a table grew; on SQLite it does nothing.
func (b *Baseline) Analyze(ctx context.Context) error {
	if b.s.db.Engine != db.Postgres {
		return nil
	}
	return b.s.db.Write(ctx, func(q db.Querier) error {
		if _, err := q.Exec(ctx, analyzeQuestionsSQL); err != nil {
			return fmt.Errorf("analyze questions: %w", err)
		}
		return nil
	})
}

// RebuildPairStats recounts an org's pair statistics from its questions, as
// Ask and resolve keep them, after questions were seeded directly.
func (b *Baseline) RebuildPairStats(ctx context.Context, orgID string) error {
	return b.s.db.Tx(ctx, func(q db.Querier) error {
		if _, err := q.Exec(ctx, clearPairStatsSQL, orgID); err != nil {
			return fmt.Errorf("clear pair statistics: %w", err)
		}
		if _, err := q.Exec(ctx, rebuildPairStatsSQL, orgID); err != nil {
			return fmt.Errorf("rebuild pair statistics: %w", err)
		}
		return nil
	})
}
