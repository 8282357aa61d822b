package inbox

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/wait"
)

// MaxHanded is the most questions one wait hands over; the rest wait for
// the next call, so that a full inbox does not flood an agent's context.
const MaxHanded = 20

// Delivery is what a waiting recipient is handed: new questions, and notice
// of questions withdrawn after it was shown them.
type Delivery struct {
	Questions []*InboxItem `json:"questions"`
	Withdrawn []*Question  `json:"withdrawn"`
}

// Empty reports whether there is nothing to hand over.
func (d *Delivery) Empty() bool { return len(d.Questions) == 0 && len(d.Withdrawn) == 0 }

// WaitInbox hands over questions the caller has not yet been handed, waiting
// up to opts.Timeout for one to arrive. Each question is handed over once,
// whether by a wait or by Inbox. also, when not nil, is a claim of another
// package's events woken by the same user's key (channel alerts), made
// after the inbox's own on every check; it reports whether it found any.
//
// Returns the errors of wait.Broker.For (the credential's refusal,
// EUnauthorized or EForbidden, and ctx's), the database's, and also's when
// the inbox had nothing; at the timeout, an empty Delivery and no error.
func (s *Service) WaitInbox(ctx context.Context, c ctalk.Caller, opts wait.Options, also func() (bool, error)) (*Delivery, error) {
	var out *Delivery
	err := s.wait(ctx, c.OrgID, c.UserID, opts, func() (bool, error) {
		var err error
		if out, err = s.claimInbox(ctx, c.OrgID, c.UserID); err != nil {
			return false, err
		}
		found := !out.Empty()
		if also != nil {
			more, err := also()
			if err != nil && !found {
				return false, err
			}
			// With questions claimed, an error of the second check must not
			// lose them: its events stay for the next call.
			found = found || more
		}
		return found, nil
	})
	return out, err
}

// WaitReply hands over resolutions (answers, declines, withdrawals) of the
// caller's questions, or of msgID only when it is set, waiting up to
// opts.Timeout for one. Each is handed over once, whether by a wait or by
// Replies.
//
// Returns ENotFound when msgID is not one of the caller's questions.
func (s *Service) WaitReply(ctx context.Context, c ctalk.Caller, msgID string, opts wait.Options) ([]*Question, error) {
	if msgID != "" {
		q, err := question(ctx, s.db, c.OrgID, c.UserID, msgID)
		if err != nil {
			return nil, err
		}
		if q.From != c.UserID {
			return nil, notFoundQuestion(msgID)
		}
		msgID = q.ID
	}
	var out []*Question
	err := s.wait(ctx, c.OrgID, c.UserID, opts, func() (bool, error) {
		var err error
		out, err = s.claimReplies(ctx, c.OrgID, c.UserID, msgID)
		return err == nil && len(out) > 0, err
	})
	return out, err
}

// AwaitInbox blocks, as WaitInbox does, until WaitInbox would hand
// something over, the timeout passes, opts.Stop closes or ctx ends, but hands
// nothing over and reads nothing but whether there is something. It lets a
// caller park a waiting request while it holds little memory, then make the
// real call, which returns at once. opts.Tick is not called; also, when not
// nil, must only look, never hand over.
//
// Returns the wait's errors (see wait.Broker.For): the credential's refusal
// (EUnauthorized, EForbidden), ctx's, the database's and also's.
func (s *Service) AwaitInbox(ctx context.Context, c ctalk.Caller, opts wait.Options, also func() (bool, error)) error {
	opts.Tick = nil
	return s.wait(ctx, c.OrgID, c.UserID, opts, func() (bool, error) {
		found, err := s.pending(ctx, pendingInboxSQL, c.OrgID, c.UserID)
		if found || err != nil || also == nil {
			return found, err
		}
		return also()
	})
}

// AwaitReply is AwaitInbox for WaitReply. It returns at once, with no
// error, when msgID is not one of the caller's questions: WaitReply then
// says so.
//
// Returns the errors of AwaitInbox.
func (s *Service) AwaitReply(ctx context.Context, c ctalk.Caller, msgID string, opts wait.Options) error {
	if msgID != "" {
		q, err := question(ctx, s.db, c.OrgID, c.UserID, msgID)
		if err != nil || q.From != c.UserID {
			return nil
		}
		msgID = q.ID
	}
	opts.Tick = nil
	return s.wait(ctx, c.OrgID, c.UserID, opts, func() (bool, error) {
		return s.pending(ctx, pendingRepliesSQL, c.OrgID, c.UserID, msgID)
	})
}

// pending runs one of the pending*SQL queries.
func (s *Service) pending(ctx context.Context, query string, args ...any) (bool, error) {
	var found bool
	if err := s.db.QueryRow(ctx, query, args...).Scan(&found); err != nil {
		return false, fmt.Errorf("check for news: %w", err)
	}
	return found, nil
}

// wait waits on the user's key (see wait.Broker.For).
func (s *Service) wait(ctx context.Context, orgID, userID string, opts wait.Options, check func() (bool, error)) error {
	opts.Recheck = s.cfg.Recheck
	return s.broker.For(ctx, orgID, wait.Key(userID), opts, check)
}

// claimInbox atomically takes the caller's unhanded questions and
// withdrawal notices. Two waiters of the same user, even on two replicas,
// never both get the same item: the UPDATE claims each row once.
func (s *Service) claimInbox(ctx context.Context, orgID, userID string) (*Delivery, error) {
	d := &Delivery{Questions: []*InboxItem{}, Withdrawn: []*Question{}}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		qs, err := queryQuestions(ctx, tx, claimInboxSQL, now, orgID, userID, MaxHanded)
		if err != nil {
			return fmt.Errorf("claim inbox: %w", err)
		}
		sortQuestions(qs, func(q *Question) time.Time { return q.CreatedAt })
		if d.Questions, err = s.withHistory(ctx, tx, orgID, userID, qs); err != nil {
			return err
		}
		if d.Withdrawn, err = queryQuestions(ctx, tx, claimWithdrawalsSQL, now, orgID, userID); err != nil {
			return fmt.Errorf("claim withdrawal notices: %w", err)
		}
		sortQuestions(d.Withdrawn, resolvedAt)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (s *Service) claimReplies(ctx context.Context, orgID, userID, msgID string) ([]*Question, error) {
	// One statement, so one round trip: this sits on the path from an
	// answer's commit to the waiting agent.
	var out []*Question
	err := s.db.Write(ctx, func(q db.Querier) (err error) {
		if out, err = queryQuestions(ctx, q, claimRepliesSQL, s.db.Now(), orgID, userID, msgID); err != nil {
			return fmt.Errorf("claim replies: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := annotate(ctx, s.db, orgID, userID, out); err != nil {
		return nil, err
	}
	sortQuestions(out, resolvedAt)
	return out, nil
}

func resolvedAt(q *Question) time.Time {
	if q.ResolvedAt == nil {
		return time.Time{}
	}
	return *q.ResolvedAt
}

// sortQuestions orders by the given time, then id: RETURNING has no order.
func sortQuestions(qs []*Question, at func(*Question) time.Time) {
	slices.SortFunc(qs, func(a, b *Question) int {
		if c := at(a).Compare(at(b)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}
