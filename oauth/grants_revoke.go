package oauth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ctalk/ctalk"
)

// RevokeOwnGrant revokes one of a person's own grants, with its access and
// refresh tokens: the client is refused on its very next call.
//
// Returns ENotFound when the person has no live grant with that id: also
// for another person's, in this org or another.
func (s *Service) RevokeOwnGrant(ctx context.Context, orgID, userID, grantID string) error {
	var one int
	err := s.db.QueryRow(ctx, `SELECT 1 FROM oauth_grants WHERE org_id = $1 AND user_id = $2 AND id = $3 AND revoked_at IS NULL`,
		orgID, userID, grantID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return ctalk.Errorf(ctalk.ENotFound, "that connected client was not found among yours: it may have been revoked already; reload the page")
	}
	if err != nil {
		return fmt.Errorf("read oauth_grants: %w", err)
	}
	return s.RevokeGrant(ctx, orgID, userID, grantID)
}
