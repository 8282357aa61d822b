package inbox

import (
	"context"
	"fmt"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/orgs"
)

// Ask is the input of Ask.
type Ask struct {
	To             string
	Text           string
	IdempotencyKey string
	// FollowUpOf, when set, is an answered question of the asker's that
	// this one follows up, on the same thread, to the same person.
	FollowUpOf string
	// UnlessAway, when set, asks only a recipient who is not away: one who
	// is gets an *AwayError and nothing is stored. The same read of the
	// recipient decides both, in the ask's statement.
	UnlessAway bool
}

// AwayError is Ask's refusal, with Ask.UnlessAway, of a question to a
// person who said they are away: nothing was stored. Away is their status,
// whose delegate and note are their words.
type AwayError struct {
	To   string
	Away orgs.Away
}

func (e *AwayError) Error() string { return e.Unwrap().Error() }

// Unwrap makes the refusal a ctalk EConflict.
func (e *AwayError) Unwrap() error {
	msg := fmt.Sprintf("%s is away until %s, so the question was not asked; ask anyway, or ask someone else", e.To, e.Away.Until.Format(time.RFC3339))
	if e.Away.Delegate != "" {
		msg = fmt.Sprintf("%s is away until %s, so the question was not asked; ask their delegate %s, or ask anyway", e.To, e.Away.Until.Format(time.RFC3339), e.Away.Delegate)
	}
	return ctalk.Errorf(ctalk.EConflict, "%s", msg)
}

// Ask stores a question from the caller to another user of the same org and
// wakes the recipient. A repeated IdempotencyKey returns the original
// question, also under concurrent retries, and whatever the limits say by
// then: a retry is not a new ask.
//
// Returns EInvalid, ENotFound (no such recipient in the org), EConflict (key
// reused for another question; *AwayError, the recipient away with
// UnlessAway), ERateLimited.
func (s *Service) Ask(ctx context.Context, c ctalk.Caller, in Ask) (*Question, error) {
	to, err := ctalk.ParseID("to_user_id", in.To)
	if err != nil {
		return nil, err
	}
	if to == c.UserID {
		return nil, ctalk.Errorf(ctalk.EInvalid, "you cannot ask yourself; pick a coworker from list_users")
	}
	text, err := ctalk.Text("question", in.Text, MaxQuestionLen, true)
	if err != nil {
		return nil, err
	}
	key, err := ctalk.Text("idempotency_key", in.IdempotencyKey, MaxKeyLen, false)
	if err != nil {
		return nil, err
	}
	q := &Question{From: c.UserID, To: to, Text: text, Status: StatusPending, idempotency: nullable(key), unlessAway: in.UnlessAway}
	if err := s.followUp(ctx, c.OrgID, q, in.FollowUpOf); err != nil {
		return nil, err
	}
	var existing *Question
	if key != "" {
		if existing, err = byKey(ctx, s.db, c.OrgID, c.UserID, key); err != nil {
			return nil, err
		}
	}
	if existing == nil {
		q.ID, q.CreatedAt = newID(messageIDPrefix), s.db.Now()
		inserted, err := s.insertQuestion(ctx, c.OrgID, q)
		// A concurrent ask with the same key may have been stored first,
		// and counted toward the limits that now refuse this one: a retry
		// of it is not a new ask, and gets it.
		if err != nil && !(key != "" && ctalk.ErrorCode(err) == ctalk.ERateLimited) {
			return nil, err
		}
		if !inserted {
			stored, lookErr := byKey(ctx, s.db, c.OrgID, c.UserID, key)
			switch {
			case lookErr != nil:
				return nil, lookErr
			case stored == nil && err != nil:
				return nil, err
			case stored == nil:
				return nil, ctalk.Errorf(ctalk.EConflict, "this idempotency_key was taken by a concurrent ask that is not visible yet; retry the call")
			}
			existing = stored
		}
	}
	if existing != nil {
		if existing.Text != text || existing.To != to || existing.FollowUpOf != q.FollowUpOf {
			return nil, ctalk.Errorf(ctalk.EConflict, "this idempotency_key was already used for a different question (%s); use a new key for a new question", existing.ID)
		}
		return existing, nil
	}
	// The asker's pages change too: their pair statistics with to.
	s.changed(c.OrgID, to)
	return q, nil
}

// AskLocks returns the advisory locks an ask from asker to recipient holds
// on Postgres: the asker's, for the rate, then the pair's, either way, for
// the loop breaker. Every ask takes its asker's lock first and no other
// asker's, so two asks never wait for each other in a cycle.
func AskLocks(orgID, asker, recipient string) []int64 {
	a, b := min(asker, recipient), max(asker, recipient)
	return []int64{db.LockID("ask rate", orgID, asker), db.LockID("ask pair", orgID, a, b)}
}

// askChecks is what askChecksSQL reads.
type askChecks struct {
	recipient, rateN, loopN           int
	awayUntil, rateOldest, loopOldest db.NullTime
	awayDelegate, awayNote            string
}

// dest is where a row of askChecksSQL is scanned, in its order.
func (c *askChecks) dest() []any {
	return []any{&c.recipient, &c.awayUntil, &c.awayDelegate, &c.awayNote, &c.rateN, &c.rateOldest, &c.loopN, &c.loopOldest}
}

// insertQuestion stores q, asked by q.From of q.To at q.CreatedAt, when the
// recipient is in the org and neither the asker's rate nor the pair's loop
// breaker refuses it, and counts q in the pair's statistics. Both limits count
// rows in the database, so they hold across replicas. It reports false when
// an ask with the same idempotency key was stored first. Errors: ENotFound,
// ERateLimited.
//
// On SQLite the checks and the insert are one transaction, and SQLite has
// one writer at a time, so concurrent asks see each other. On Postgres they
// are one statement, whose snapshot would not see a concurrent ask that has
// not committed yet: the statement runs under the advisory locks of
// AskLocks, so asks that count toward the same limit take turns, also
// across replicas.
func (s *Service) insertQuestion(ctx context.Context, orgID string, q *Question) (inserted bool, err error) {
	var (
		c        askChecks
		now      = q.CreatedAt
		rateFrom = now.Add(-time.Minute)
		loopFrom = now.Add(-s.cfg.LoopWindow)
	)
	if s.db.Engine == db.Postgres {
		var n int
		err := s.db.QueryRowLocked(ctx, AskLocks(orgID, q.From, q.To), askPostgresSQL, s.askArgs(orgID, q, rateFrom, loopFrom), append(c.dest(), &n)...)
		if err != nil {
			return false, fmt.Errorf("store question: %w", err)
		}
		if n == 1 && s.notifier != nil {
			s.notifier.Wake()
		}
		return n == 1, s.refuseAsk(c, q, now)
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		err := tx.QueryRow(ctx, askChecksSQL, orgID, q.From, q.To, rateFrom, loopFrom).Scan(c.dest()...)
		if err != nil {
			return fmt.Errorf("check ask limits: %w", err)
		}
		if err := s.refuseAsk(c, q, now); err != nil {
			return err
		}
		res, err := tx.Exec(ctx, askInsertSQL, orgID, q.ID, q.From, q.To, q.Text, q.idempotency, now, nullable(q.ThreadID), nullable(q.FollowUpOf), s.notifier != nil)
		if err != nil {
			return fmt.Errorf("store question: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		inserted = true
		if _, err := tx.Exec(ctx, askPairStatsSQL, orgID, q.From, q.To, now); err != nil {
			return fmt.Errorf("count ask in pair statistics: %w", err)
		}
		s.wakeOnCommit(tx)
		return nil
	})
	return inserted, err
}

// wakeOnCommit wakes notify's workers once tx, where a question was just
// stored with its notify mark, commits: the question's row is its
// notification's outbox (see notify.Service.Wake), and the ask writes
// nothing more for it.
func (s *Service) wakeOnCommit(tx db.Querier) {
	if s.notifier != nil {
		db.AfterCommit(tx, "notify.queued", s.notifier.Wake)
	}
}

// askArgs are the arguments of askPostgresSQL for q.
func (s *Service) askArgs(orgID string, q *Question, rateFrom, loopFrom time.Time) []any {
	return []any{orgID, q.From, q.To, rateFrom, loopFrom, q.ID, q.Text, q.idempotency, q.CreatedAt, s.cfg.AsksPerMinute, s.cfg.LoopMax, nullable(q.ThreadID), nullable(q.FollowUpOf), q.unlessAway, s.notifier != nil}
}

// refuseAsk returns the error for an ask of q that c says must not be
// stored: ENotFound for a recipient outside the org, *AwayError for one away
// at now when q asks only one who is not, ERateLimited for the asker's rate
// or the pair's loop breaker; nil otherwise.
func (s *Service) refuseAsk(c askChecks, q *Question, now time.Time) error {
	to := q.To
	if c.recipient == 0 {
		return ctalk.Errorf(ctalk.ENotFound, "user %q not found in your organization; list_users shows who is there", to)
	}
	if q.unlessAway && c.awayUntil.Valid && c.awayUntil.Time.After(now) {
		return &AwayError{To: to, Away: orgs.Away{Until: c.awayUntil.Time.UTC(), Delegate: c.awayDelegate, Note: c.awayNote}}
	}
	if s.cfg.AsksPerMinute > 0 && c.rateN >= s.cfg.AsksPerMinute {
		wait := c.rateOldest.Time.Add(time.Minute).Sub(now)
		return &ctalk.Error{Code: ctalk.ERateLimited, RetryAfter: wait,
			Message: fmt.Sprintf("you asked %d questions in the last minute, the limit; retry after %s (in %s)", c.rateN, now.Add(wait).Format(time.RFC3339), wait.Round(time.Second))}
	}
	if s.cfg.LoopMax > 0 && c.loopN >= s.cfg.LoopMax {
		wait := c.loopOldest.Time.Add(s.cfg.LoopWindow).Sub(now)
		return &ctalk.Error{Code: ctalk.ERateLimited, RetryAfter: wait,
			Message: fmt.Sprintf("paused: you and %s exchanged %d questions in %s, which looks like two agents asking each other in a loop; check with your person before asking again, and retry after %s", to, c.loopN, s.cfg.LoopWindow, now.Add(wait).Format(time.RFC3339))}
	}
	return nil
}
