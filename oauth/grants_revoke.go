package oauth

import "context"

// RevokeOwnGrant revokes one of a person's own grants, with its access and
// refresh tokens: the client is refused on its very next call.
//
// Returns ENotFound when the person has no live grant with that id: also
// for another person's, in this org or another.
func (s *Service) RevokeOwnGrant(ctx context.Context, orgID, userID, grantID string) error {
	return s.auth.RevokeGrant(ctx, orgID, userID, grantID)
}
