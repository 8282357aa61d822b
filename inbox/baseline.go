package inbox

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/baseline"
)

// statements are the load harness's baseline.Statements: the stored work
// of ask_person, check_inbox and check_replies one statement at a time,
// with the very SQL of the tools, which stays here with its owner. The
// server never uses them.
type statements struct {
	s *Service
}

// Baseline returns the load harness's statements over d, under the limits
// l of the server it measures.
func Baseline(d *db.DB, l baseline.Limits) baseline.Statements {
	cfg := DefaultConfig()
	cfg.AsksPerMinute, cfg.LoopMax = l.AsksPerMinute, l.LoopMax
	// A Service of the statements alone needs no broker: they wake no one.
	return &statements{&Service{db: d, cfg: cfg}}
}

// InsertQuestion is baseline.Statements.InsertQuestion.
func (b *statements) InsertQuestion(ctx context.Context, orgID, asker, to, text string) error {
	return b.s.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, askInsertSQL, orgID, newID(messageIDPrefix), asker, to, text, sql.NullString{}, b.s.db.Now(), nil, nil, false)
		return err
	})
}

// Ask is baseline.Statements.Ask.
func (b *statements) Ask(ctx context.Context, orgID, asker, to, text string) error {
	q := &Question{ID: newID(messageIDPrefix), From: asker, To: to, Text: text, CreatedAt: b.s.db.Now()}
	_, err := b.s.insertQuestion(ctx, orgID, q)
	return err
}

// AskChecks is baseline.Statements.AskChecks.
func (b *statements) AskChecks(ctx context.Context, orgID, asker, to string) error {
	var c askChecks
	now := b.s.db.Now()
	return b.s.db.QueryRow(ctx, askChecksSQL, orgID, asker, to, now.Add(-time.Minute), now.Add(-b.s.cfg.LoopWindow)).Scan(c.dest()...)
}

// InboxPage is baseline.Statements.InboxPage.
func (b *statements) InboxPage(ctx context.Context, orgID, userID string, limit int) error {
	_, _, _, err := readInboxPage(ctx, b.s.db, orgID, userID, limit, pageCursor{At: time.Unix(0, 0).UTC()})
	return err
}

// RepliesPage is baseline.Statements.RepliesPage.
func (b *statements) RepliesPage(ctx context.Context, orgID, userID string, since time.Time, limit int) error {
	_, err := queryQuestions(ctx, b.s.db, repliesPageSQL, orgID, userID, since.UTC(), "", limit+1)
	return err
}

// PairStats is baseline.Statements.PairStats.
func (b *statements) PairStats(ctx context.Context, orgID, me string, senders []string) error {
	_, err := pairStats(ctx, b.s.db, orgID, me, senders)
	return err
}

// RecentExchanges is baseline.Statements.RecentExchanges.
func (b *statements) RecentExchanges(ctx context.Context, orgID, me string, senders []string) error {
	_, err := readHistory(ctx, b.s.db, exchangeRowsSQL(len(senders)), me, senders, nil, pairArgs(orgID, me, senders))
	return err
}

// SeedQuestions is baseline.Statements.SeedQuestions.
func (b *statements) SeedQuestions(ctx context.Context, orgID string, qs []baseline.Seeded) error {
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

// SeedHistory is baseline.Statements.SeedHistory.
func (b *statements) SeedHistory(ctx context.Context, orgID string, users, from, to int, end time.Time) error {
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

// Analyze is baseline.Statements.Analyze.
func (b *statements) Analyze(ctx context.Context) error {
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

// RebuildPairStats is baseline.Statements.RebuildPairStats.
func (b *statements) RebuildPairStats(ctx context.Context, orgID string) error {
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
