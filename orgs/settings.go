package orgs

import (
	"context"
	"fmt"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Approval modes of an organization: how an answer is approved before it is
// sent.
const (
	// ApprovalAgent lets the answering agent send exactly the latest draft
	// its person approved in the conversation.
	ApprovalAgent = "agent"
	// ApprovalHuman also needs the person to approve each draft in the web
	// app, signed in as the question's recipient.
	ApprovalHuman = "human"
)

// SetApprovalMode sets how answers are approved in orgID: ApprovalAgent or
// ApprovalHuman. The caller must have been authorized as an admin of orgID.
//
// Returns EInvalid, ENotFound.
func (s *Service) SetApprovalMode(ctx context.Context, orgID, mode string) (*Org, error) {
	if mode != ApprovalAgent && mode != ApprovalHuman {
		return nil, ctalk.Errorf(ctalk.EInvalid, "approval_mode is not valid; use \"agent\" or \"human\"")
	}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		res, err := tx.Exec(ctx, `UPDATE orgs SET approval_mode = $1 WHERE id = $2`, mode, orgID)
		if err != nil {
			return fmt.Errorf("set approval mode: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFoundOrg(orgID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.Org(ctx, orgID)
}

// ApprovalMode returns how answers are approved in orgID, read through r so
// that a caller's transaction reads it with its other reads.
func ApprovalMode(ctx context.Context, r db.Reader, orgID string) (string, error) {
	var mode string
	if err := r.QueryRow(ctx, `SELECT approval_mode FROM orgs WHERE id = $1`, orgID).Scan(&mode); err != nil {
		return "", fmt.Errorf("read approval mode: %w", err)
	}
	return mode, nil
}
