package scim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
)

// MaxTokens bounds the live SCIM tokens of one org: one per identity
// provider, with room to rotate.
const MaxTokens = 10

// tokenIDLen is how many characters of a token's hash name it on the
// admin page and in the audit record.
const tokenIDLen = 12

// Token is a SCIM token as the admin page lists it: never its secret.
type Token struct {
	ID         string
	Label      string
	CreatedBy  string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	LastUsedAt *time.Time
}

// CreateToken makes a SCIM token for orgID, for the identity provider the
// label names, living days (one of auth.PersonalTokenLifetimes), made by
// the admin c. The token is returned once as raw and stored only as its
// SHA-256, as every ctalk token is. The caller must have been authorized as
// an admin of orgID, in a person's browser session.
//
// Returns EInvalid for a bad label or lifetime, ERateLimited when the org
// holds MaxTokens live tokens.
func (s *Service) CreateToken(ctx context.Context, c ctalk.Caller, label string, days int) (raw string, t *Token, err error) {
	if label, err = ctalk.Text("label", label, auth.MaxLabelLen, true); err != nil {
		return "", nil, err
	}
	if !slices.Contains(auth.PersonalTokenLifetimes, days) {
		return "", nil, ctalk.Errorf(ctalk.EInvalid, "a SCIM token lives %v days; choose one of these", auth.PersonalTokenLifetimes)
	}
	raw, hash := auth.NewToken()
	t = &Token{ID: hash[:tokenIDLen], Label: label, CreatedBy: c.UserID}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		t.CreatedAt, t.ExpiresAt = now, now.Add(time.Duration(days)*24*time.Hour)
		var held int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM scim_tokens WHERE org_id = $1 AND revoked_at IS NULL AND expires_at > $2`, c.OrgID, now).Scan(&held); err != nil {
			return fmt.Errorf("count scim tokens: %w", err)
		}
		if held >= MaxTokens {
			return ctalk.Errorf(ctalk.ERateLimited, "your organization holds %d SCIM tokens, the most it may; revoke one no longer used first", held)
		}
		_, err := tx.Exec(ctx, `INSERT INTO scim_tokens (hash, id, org_id, label, created_by, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			hash, t.ID, c.OrgID, label, c.UserID, now, t.ExpiresAt)
		if err != nil {
			return fmt.Errorf("insert into scim_tokens: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	return raw, t, nil
}

// Tokens lists the live SCIM tokens of orgID, newest first.
//
// Returns only the database's errors.
func (s *Service) Tokens(ctx context.Context, orgID string) ([]*Token, error) {
	rows, err := s.db.Query(ctx, `SELECT id, label, created_by, created_at, expires_at, last_used_at FROM scim_tokens
		WHERE org_id = $1 AND revoked_at IS NULL AND expires_at > $2 ORDER BY created_at DESC`, orgID, s.db.Now())
	if err != nil {
		return nil, fmt.Errorf("read scim_tokens: %w", err)
	}
	defer rows.Close()
	var out []*Token
	for rows.Next() {
		t := &Token{}
		var used db.NullTime
		if err := rows.Scan(&t.ID, &t.Label, &t.CreatedBy, &t.CreatedAt, &t.ExpiresAt, &used); err != nil {
			return nil, err
		}
		if used.Valid {
			u := used.Time.UTC()
			t.LastUsedAt = &u
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// RevokeToken revokes the SCIM token id of orgID: the identity provider
// is refused from its next call on. The caller must have been authorized
// as an admin of orgID.
//
// Returns ENotFound when id names no live token of orgID.
func (s *Service) RevokeToken(ctx context.Context, orgID, id string) error {
	return s.db.Tx(ctx, func(tx db.Querier) error {
		res, err := tx.Exec(ctx, `UPDATE scim_tokens SET revoked_at = $1 WHERE org_id = $2 AND id = $3 AND revoked_at IS NULL`, s.db.Now(), orgID, id)
		if err != nil {
			return fmt.Errorf("update scim_tokens: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ctalk.Errorf(ctalk.ENotFound, "no live SCIM token %.20q in your organization", id)
		}
		return nil
	})
}

// usedEvery is how often a token's last use is written: at most once a
// minute, so that a sync of thousands of calls writes a few rows.
const usedEvery = time.Minute

// authenticate returns the org and id of the live SCIM token raw.
//
// Returns EUnauthorized for any token that is not one.
func (s *Service) authenticate(ctx context.Context, raw string) (orgID, id string, err error) {
	refused := ctalk.Errorf(ctalk.EUnauthorized, "the bearer token is not a live SCIM token; an admin makes one on the web app's SCIM page")
	if !auth.WellFormed(raw) {
		return "", "", refused
	}
	hash := auth.HashToken(raw)
	now := s.db.Now()
	var used db.NullTime
	// The token's org is what this finds out.
	err = s.db.QueryRow(ctalk.AsOperator(ctx, "SCIM token lookup by hash"), `SELECT org_id, id, last_used_at FROM scim_tokens WHERE hash = $1 AND revoked_at IS NULL AND expires_at > $2`, hash, now).
		Scan(&orgID, &id, &used)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", refused
	}
	if err != nil {
		return "", "", fmt.Errorf("read scim_tokens: %w", err)
	}
	if !used.Valid || now.Sub(used.Time) >= usedEvery {
		// Best effort: a failed note of its use refuses no call.
		ctx := ctalk.WithOrg(ctx, orgID)
		_ = s.db.Write(ctx, func(q db.Querier) error {
			_, err := q.Exec(ctx, `UPDATE scim_tokens SET last_used_at = $1 WHERE hash = $2`, now, hash)
			return err
		})
	}
	return orgID, id, nil
}
