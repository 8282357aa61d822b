package inbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/orgs"
)

// Approval is what a person sees on an approval page: the question, the
// draft their agent proposed, and whether the link can still be used.
type Approval struct {
	OrgID     string
	MessageID string
	AskerID   string
	AskerName string
	Question  string
	Version   int
	Draft     string
	ExpiresAt time.Time
	Usable    bool
	// State explains an unusable link: used, expired, superseded or closed.
	State string
}

// ApprovalByToken returns the approval a link token stands for. It changes
// nothing, so that link previews cannot approve.
//
// Returns ENotFound for a token that names no draft.
func (s *Service) ApprovalByToken(ctx context.Context, raw string) (*Approval, error) {
	var a *Approval
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		var err error
		a, _, err = approvalByToken(ctx, tx, raw, s.db.Now())
		return err
	})
	return a, err
}

// Decide approves or rejects the draft a link token stands for. A link works
// once, before it expires, and only while its draft is the latest of a
// pending question; otherwise it changes nothing.
//
// Returns ENotFound, EConflict (used, expired, superseded or closed).
func (s *Service) Decide(ctx context.Context, raw string, approve bool) (*Approval, error) {
	var a *Approval
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		var hash string
		var err error
		if a, hash, err = approvalByToken(ctx, tx, raw, now); err != nil {
			return err
		}
		if !a.Usable {
			return ctalk.Errorf(ctalk.EConflict, "this approval link can no longer be used: %s", a.State)
		}
		column := "rejected_at"
		if approve {
			column = "approved_at"
		}
		res, err := tx.Exec(ctx, decideSQL(column), now, hash)
		if err != nil {
			return fmt.Errorf("record approval decision: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ctalk.Errorf(ctalk.EConflict, "this approval link can no longer be used: it was used just now")
		}
		a.Usable = false
		a.State = map[bool]string{true: "approved", false: "rejected"}[approve]
		return nil
	})
	return a, err
}

func approvalByToken(ctx context.Context, tx db.Querier, raw string, now time.Time) (*Approval, string, error) {
	notFound := ctalk.Errorf(ctalk.ENotFound, "this approval link is not valid; ask your agent for the link of the latest draft")
	if !auth.WellFormed(raw) {
		return nil, "", notFound
	}
	hash := auth.HashToken(raw)
	a := &Approval{}
	var approved, rejected db.NullTime
	var status string
	var latest int
	err := tx.QueryRow(ctx, approvalByTokenSQL, hash).
		Scan(&a.OrgID, &a.MessageID, &a.Version, &a.Draft, &a.ExpiresAt, &approved, &rejected,
			&a.AskerID, &a.Question, &status, &latest)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", notFound
	}
	if err != nil {
		return nil, "", fmt.Errorf("read approval: %w", err)
	}
	askers, err := orgs.Profiles(ctx, tx, a.OrgID, []string{a.AskerID})
	if err != nil {
		return nil, "", err
	}
	if p, ok := askers[a.AskerID]; ok {
		a.AskerName = p.Name
	}
	switch {
	case approved.Valid:
		a.State = "it was already used to approve this draft"
	case rejected.Valid:
		a.State = "it was already used to reject this draft"
	case status != StatusPending:
		a.State = "the question is already " + status
	case latest != a.Version:
		a.State = "a newer draft was proposed since; use the link of the latest draft"
	case !now.Before(a.ExpiresAt):
		a.State = "it expired; ask your agent to propose the draft again for a new link"
	default:
		a.Usable = true
	}
	return a, hash, nil
}
