package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// The storage of OAuth grants and of their access and refresh tokens: the
// oauth package speaks the protocol (codes, rotation rules, endpoints) and
// keeps its secrets here, with every other credential, so that one package
// writes them all and revokes them together (RevokeTokens).

// NewGrant is a client connected as one person, as the exchange of an
// authorization code creates it.
type NewGrant struct {
	ID, OrgID, UserID, ClientID, ClientName, Scope, Resource string
}

// CreateGrant stores g inside tx, created and last used at now.
func CreateGrant(ctx context.Context, tx db.Querier, g NewGrant, now time.Time) error {
	if _, err := tx.Exec(ctx, `
		INSERT INTO oauth_grants (id, org_id, user_id, client_id, client_name, scope, resource, created_at, last_used_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`, g.ID, g.OrgID, g.UserID, g.ClientID, g.ClientName, g.Scope, g.Resource, now); err != nil {
		return fmt.Errorf("create grant: %w", err)
	}
	return nil
}

// GrantTokens are the hashes and expiries of a new access and refresh token
// pair of one grant.
type GrantTokens struct {
	AccessHash, RefreshHash       string
	AccessExpires, RefreshExpires time.Time
}

// IssueGrantTokens stores, inside tx, a new token pair of grantID issued at
// now. The grant's expired tokens go as new ones come, so a grant keeps
// only what may still be presented.
func IssueGrantTokens(ctx context.Context, tx db.Querier, grantID string, t GrantTokens, now time.Time) error {
	if _, err := tx.Exec(ctx, `DELETE FROM oauth_tokens WHERE grant_id = $1 AND expires_at < $2`, grantID, now); err != nil {
		return fmt.Errorf("drop expired tokens: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO oauth_tokens (hash, grant_id, kind, created_at, expires_at) VALUES ($1, $2, 'access', $3, $4), ($5, $2, 'refresh', $3, $6)`,
		t.AccessHash, grantID, now, t.AccessExpires, t.RefreshHash, t.RefreshExpires); err != nil {
		return fmt.Errorf("store tokens: %w", err)
	}
	return nil
}

// RefreshToken is a refresh token as stored, with its grant and its
// successor.
type RefreshToken struct {
	Grant            NewGrant
	GrantRevoked     sql.NullTime
	Expires          time.Time
	Rotated          sql.NullTime
	Successor        sql.NullString
	SuccessorRotated sql.NullTime
}

// ReadRefreshToken reads, inside tx, the refresh token stored under hash,
// or nil when there is none.
func ReadRefreshToken(ctx context.Context, tx db.Querier, hash string) (*RefreshToken, error) {
	var r RefreshToken
	g := &r.Grant
	err := tx.QueryRow(ctx, `
		SELECT g.id, g.org_id, g.user_id, g.client_id, g.scope, g.resource, g.revoked_at, t.expires_at, t.rotated_at, t.replaced_by,
			(SELECT n.rotated_at FROM oauth_tokens n WHERE n.hash = t.replaced_by)
		FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id
		WHERE t.hash = $1 AND t.kind = 'refresh'`, hash).
		Scan(&g.ID, &g.OrgID, &g.UserID, &g.ClientID, &g.Scope, &g.Resource, &r.GrantRevoked, &r.Expires, &r.Rotated, &r.Successor, (*db.NullTime)(&r.SuccessorRotated))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read refresh token: %w", err)
	}
	return &r, nil
}

// DropUnusedRefreshToken deletes, inside tx, the refresh token stored under
// hash if it was never used, and reports whether it did.
func DropUnusedRefreshToken(ctx context.Context, tx db.Querier, hash string) (bool, error) {
	ok, err := changedOne(tx.Exec(ctx, `DELETE FROM oauth_tokens WHERE hash = $1 AND rotated_at IS NULL`, hash))
	if err != nil {
		return false, fmt.Errorf("drop unreceived refresh token: %w", err)
	}
	return ok, nil
}

// RecordRotation records, inside tx, that the refresh token under hash was
// replaced at now by the one under next, as a compare-and-set on the
// successor read before (prev, "" for none): it reports false when another
// rotation of the same token committed meanwhile. The grant counts as used.
func RecordRotation(ctx context.Context, tx db.Querier, grantID, hash, prev, next string, now time.Time) (bool, error) {
	ok, err := changedOne(tx.Exec(ctx, `UPDATE oauth_tokens SET rotated_at = $1, replaced_by = $2 WHERE hash = $3 AND COALESCE(replaced_by, '') = $4`,
		now, next, hash, prev))
	if err != nil {
		return false, fmt.Errorf("record refresh token rotation: %w", err)
	}
	if !ok {
		return false, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE oauth_grants SET last_used_at = $1 WHERE id = $2`, now, grantID); err != nil {
		return false, fmt.Errorf("touch grant: %w", err)
	}
	return true, nil
}

// changedOne reports whether a statement changed exactly one row.
func changedOne(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// AccessToken is an OAuth access token as stored: the session it stands
// for (with GrantID set), and what the oauth package checks.
type AccessToken struct {
	Session
	Resource string
	Revoked  bool
}

// OAuthAccess returns the access token stored under hash, of a current
// member, or nil when there is none. It records the grant's use at most
// once a minute.
//
// Returns only the database's errors: an unknown token is nil, not an
// error.
func (s *Service) OAuthAccess(ctx context.Context, hash string) (*AccessToken, error) {
	a := AccessToken{Session: Session{TokenHash: hash}}
	var (
		lastUsed time.Time
		revoked  sql.NullTime
	)
	// The token's org is what this finds out.
	err := s.db.QueryRow(ctalk.AsOperator(ctx, "token lookup by hash"), `
		SELECT g.id, g.org_id, g.user_id, u.role, g.resource, g.revoked_at, g.last_used_at, t.expires_at
		FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id
		JOIN users u ON u.org_id = g.org_id AND u.id = g.user_id AND u.removed_at IS NULL
		JOIN orgs o ON o.id = g.org_id AND o.deletion_due_at IS NULL
		WHERE t.hash = $1 AND t.kind = 'access'`, hash).
		Scan(&a.GrantID, &a.OrgID, &a.UserID, &a.Role, &a.Resource, &revoked, &lastUsed, &a.ExpiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read oauth_tokens: %w", err)
	}
	a.Revoked = revoked.Valid
	if now := s.db.Now(); !a.Revoked && now.Before(a.ExpiresAt) && now.Sub(lastUsed) > time.Minute {
		ctx := ctalk.WithOrg(ctx, a.OrgID)
		err := s.db.Write(ctx, func(q db.Querier) error {
			if _, err := q.Exec(ctx, `UPDATE oauth_grants SET last_used_at = $1 WHERE id = $2`, now, a.GrantID); err != nil {
				return fmt.Errorf("update oauth_grants: %w", err)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return &a, nil
}

// RevokeGrant ends a connection of the person orgID/userID: its access and
// refresh tokens stop working at once.
//
// Returns ENotFound when the person has no live grant with that id: also
// for another person's, in this org or another.
func (s *Service) RevokeGrant(ctx context.Context, orgID, userID, grantID string) error {
	var ok bool
	err := s.db.Write(ctx, func(q db.Querier) error {
		var err error
		ok, err = changedOne(q.Exec(ctx, `UPDATE oauth_grants SET revoked_at = $1 WHERE org_id = $2 AND user_id = $3 AND id = $4 AND revoked_at IS NULL`,
			s.db.Now(), orgID, userID, grantID))
		if err != nil {
			return fmt.Errorf("update oauth_grants: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !ok {
		return ctalk.Errorf(ctalk.ENotFound, "that connected client was not found among yours: it may have been revoked already; reload the page")
	}
	s.Revoked(ctx, orgID, userID)
	return nil
}

// RevokeGrantOf ends the grant that the OAuth token (access or refresh)
// stored under hash belongs to, or the grant with that id: a replayed code
// or refresh token, or a revocation request (RFC 7009). Nothing stored
// under it is not an error.
//
// Returns only the database's errors.
func (s *Service) RevokeGrantOf(ctx context.Context, hash, grantID string) error {
	// A secret found by its hash names the org it belongs to.
	ctx = ctalk.AsOperator(ctx, "OAuth grant revocation by token hash")
	return s.revokeReturning(ctx, "oauth_grants", `UPDATE oauth_grants SET revoked_at = $1
		WHERE (id = $2 OR id = (SELECT grant_id FROM oauth_tokens WHERE hash = $3)) AND revoked_at IS NULL
		RETURNING org_id, user_id`, s.db.Now(), grantID, hash)
}

// Grant is a client connected as a person, for the page that lists them.
type Grant struct {
	ID         string
	ClientID   string
	ClientName string
	CreatedAt  time.Time
	LastUsedAt time.Time
	// ExpiresAt is when its refresh token expires: unless the client
	// refreshes before then, it must sign in again.
	ExpiresAt time.Time
}

// Grants lists the live connections of a person, newest first: not
// revoked, with a refresh token that has not expired.
//
// Returns only the database's errors.
func (s *Service) Grants(ctx context.Context, orgID, userID string) ([]Grant, error) {
	now := s.db.Now()
	out := []Grant{}
	err := db.Each(ctx, s.db, func(rows *db.Rows) error {
		var g Grant
		var expires db.NullTime
		if err := rows.Scan(&g.ID, &g.ClientID, &g.ClientName, &g.CreatedAt, &g.LastUsedAt, &expires); err != nil {
			return err
		}
		if g.ExpiresAt = expires.Time; expires.Valid && g.ExpiresAt.After(now) {
			out = append(out, g)
		}
		return nil
	}, `
		SELECT g.id, g.client_id, g.client_name, g.created_at, g.last_used_at,
			(SELECT MAX(t.expires_at) FROM oauth_tokens t WHERE t.grant_id = g.id AND t.kind = 'refresh')
		FROM oauth_grants g
		WHERE g.org_id = $1 AND g.user_id = $2 AND g.revoked_at IS NULL ORDER BY g.created_at DESC`, orgID, userID)
	if err != nil {
		return nil, fmt.Errorf("list oauth_grants: %w", err)
	}
	return out, nil
}
