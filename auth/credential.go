package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ctalk/ctalk/db"
)

// credentialTable is a table of hashed credentials that are used and
// revoked by their hash: login tokens, or browser sessions. Its statements
// are spelled out, so that every table a statement writes can be read
// from the source.
type credentialTable struct {
	name, touch, revoke string
}

var (
	tokensTable = credentialTable{"tokens",
		`UPDATE tokens SET last_used_at = $1 WHERE hash = $2`,
		`UPDATE tokens SET revoked_at = $1 WHERE hash = $2 AND revoked_at IS NULL RETURNING org_id, user_id`}
	webSessionsTable = credentialTable{"web_sessions",
		`UPDATE web_sessions SET last_used_at = $1 WHERE hash = $2`,
		`UPDATE web_sessions SET revoked_at = $1 WHERE hash = $2 AND revoked_at IS NULL RETURNING org_id, user_id`}
)

// touchCredential records that the credential with hash was used at now.
// Refreshing last use at most once a minute keeps idle expiry accurate to a
// minute without a write on every call.
func (s *Service) touchCredential(ctx context.Context, table credentialTable, hash string, lastUsed, now time.Time) error {
	if now.Sub(lastUsed) <= time.Minute {
		return nil
	}
	return s.db.Write(ctx, func(q db.Querier) error {
		if _, err := q.Exec(ctx, table.touch, now, hash); err != nil {
			return fmt.Errorf("update %s: %w", table.name, err)
		}
		return nil
	})
}

// revokeCredential revokes the credential with hash; it stops working on
// the very next call on this replica, and within TokenCacheTTL on every
// other (see Revoked).
func (s *Service) revokeCredential(ctx context.Context, table credentialTable, hash string) error {
	return s.revokeReturning(ctx, table.name, table.revoke, s.db.Now(), hash)
}

// revokeReturning runs an UPDATE of table that revokes at most one
// credential and returns its org_id and user_id, and announces the
// revocation once it committed.
func (s *Service) revokeReturning(ctx context.Context, table, query string, args ...any) error {
	var orgID, userID string
	err := s.db.Write(ctx, func(q db.Querier) error {
		err := q.QueryRow(ctx, query, args...).Scan(&orgID, &userID)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("update %s: %w", table, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if userID != "" {
		s.Revoked(ctx, orgID, userID)
	}
	return nil
}
