package scim

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/db"
)

// ExportedToken is a line of an export's scim_tokens.jsonl: a SCIM token
// of the org, revoked and expired ones too, never its hash.
type ExportedToken struct {
	TokenID    string     `json:"token_id"`
	Label      string     `json:"label"`
	CreatedBy  string     `json:"created_by"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// ExportTokens calls emit with each SCIM token of orgID, oldest first, as
// rows are read.
//
// Returns only the database's errors, or emit's.
func (s *Service) ExportTokens(ctx context.Context, orgID string, emit func(any) error) error {
	return db.Each(ctx, s.db, func(rows *db.Rows) error {
		var t ExportedToken
		var used, revoked db.NullTime
		if err := rows.Scan(&t.TokenID, &t.Label, &t.CreatedBy, &t.CreatedAt, &t.ExpiresAt, &used, &revoked); err != nil {
			return err
		}
		t.CreatedAt, t.ExpiresAt = t.CreatedAt.UTC(), t.ExpiresAt.UTC()
		t.LastUsedAt, t.RevokedAt = used.Ptr(), revoked.Ptr()
		return emit(&t)
	}, `SELECT id, label, created_by, created_at, expires_at, last_used_at, revoked_at FROM scim_tokens
		WHERE org_id = $1 ORDER BY created_at, id`, orgID)
}
