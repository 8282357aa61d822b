package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// IssueLocalToken issues a login token for the member userID of orgID
// without a password, labelled label, and returns it with its session
// (whose Logout revokes it). It is for ctalk stdio --local alone, whose
// trust boundary is the machine account: any process that may open the
// store's file may write to it directly, so a password there would guard
// nothing. The server never calls it.
//
// Returns ENotFound when the member does not exist or was removed.
func (s *Service) IssueLocalToken(ctx context.Context, orgID, userID, label string) (string, *Session, error) {
	raw, hash := NewToken()
	now := s.db.Now()
	sess := &Session{OrgID: orgID, UserID: userID, TokenHash: hash, ExpiresAt: now.Add(s.cfg.TokenTTL), Kind: KindLogin}
	err := s.db.Write(ctx, func(q db.Querier) error {
		err := q.QueryRow(ctx, `SELECT role FROM users WHERE org_id = $1 AND id = $2 AND removed_at IS NULL`, orgID, userID).Scan(&sess.Role)
		if errors.Is(err, sql.ErrNoRows) {
			return ctalk.Errorf(ctalk.ENotFound, "no member %s in %s", userID, orgID)
		}
		if err != nil {
			return fmt.Errorf("read users: %w", err)
		}
		if _, err := q.Exec(ctx, `INSERT INTO tokens (hash, org_id, user_id, kind, label, created_at, last_used_at, expires_at)
			VALUES ($1, $2, $3, 'login', $4, $5, $5, $6)`, hash, orgID, userID, label, now, sess.ExpiresAt); err != nil {
			return fmt.Errorf("insert into tokens: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	return raw, sess, nil
}
