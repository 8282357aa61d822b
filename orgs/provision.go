package orgs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
)

// Provision adds a member to orgID for the org's identity provider (SCIM):
// a member, never an admin (making admins is for a person, in the web
// app), with no password, who signs in through the identity provider or
// sets a password with a "forgot password" link to their address. in's
// Password and Role are ignored. link runs in the same transaction once the
// member is stored, so that the provider's record of the member commits
// with it or not at all.
//
// Returns EInvalid for bad input, ENotFound for an unknown org, EConflict
// when the user id is taken (also by a former member) or the address
// belongs to another member or invitee, and link's errors.
func (s *Service) Provision(ctx context.Context, orgID string, in NewUser, link func(ctx context.Context, tx db.Querier, u *User) error) (*User, error) {
	u, errs := in.clean()
	for _, fe := range errs {
		if fe.Field != "password" && fe.Field != "role" {
			return nil, fe.Err
		}
	}
	u.OrgID, u.Role = orgID, RoleMember
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		if err := s.insertUser(ctx, tx, u, ""); err != nil {
			return err
		}
		return link(ctx, tx, u)
	})
	switch {
	case err == nil:
	case db.IsDuplicate(err) && s.taken(ctx, orgID, u.ID):
		return nil, ctalk.Errorf(ctalk.EConflict, "user id %q is taken in organization %q (ids of former members are never reused)", u.ID, orgID)
	case ctalk.ErrorCode(err) == ctalk.ENotFound:
		return nil, notFoundOrg(orgID)
	default:
		return nil, err
	}
	s.changed(ctx, orgID, u.ID)
	return u, nil
}

// taken reports whether userID names a user of orgID, current or former.
func (s *Service) taken(ctx context.Context, orgID, userID string) bool {
	var n int
	err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM users WHERE org_id = $1 AND id = $2`, orgID, userID).Scan(&n)
	return err == nil && n > 0
}

// Reinstate makes a member removed from orgID a member again, as the org's
// identity provider does when it reactivates someone it deactivated. Their
// credentials stay revoked and their password cleared: they sign in anew.
// Reinstating a current member changes nothing.
//
// Returns EInvalid for a malformed id, ENotFound when userID never belonged
// to orgID, EConflict when another member took their address meanwhile.
func (s *Service) Reinstate(ctx context.Context, orgID, userID string) error {
	userID, err := ctalk.ParseID("user_id", userID)
	if err != nil {
		return err
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		var removed db.NullTime
		err := tx.QueryRow(ctx, `SELECT removed_at FROM users WHERE org_id = $1 AND id = $2`, orgID, userID).Scan(&removed)
		if errors.Is(err, sql.ErrNoRows) {
			return auth.NotFoundUser(userID)
		}
		if err != nil || !removed.Valid {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE users SET removed_at = NULL, updated_at = $1 WHERE org_id = $2 AND id = $3 AND removed_at IS NOT NULL`, s.db.Now(), orgID, userID)
		if ctalk.ErrorCode(err) == ctalk.EConflict {
			return ctalk.Errorf(ctalk.EConflict, "user %q cannot be reactivated: another member has their email address now", userID)
		}
		if err != nil {
			return fmt.Errorf("update users: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.changed(ctx, orgID, userID)
	return nil
}

// SetName replaces the name of a current member of orgID, as the org's
// identity provider knows it.
//
// Returns EInvalid for a malformed id or name, ENotFound.
func (s *Service) SetName(ctx context.Context, orgID, userID, name string) error {
	userID, err := ctalk.ParseID("user_id", userID)
	if err != nil {
		return err
	}
	if name, err = checkName("name", name); err != nil {
		return err
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		res, err := tx.Exec(ctx, `UPDATE users SET name = $1, updated_at = $2 WHERE org_id = $3 AND id = $4 AND removed_at IS NULL`, name, s.db.Now(), orgID, userID)
		if err != nil {
			return fmt.Errorf("update users: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return auth.NotFoundUser(userID)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.changed(ctx, orgID, userID)
	return nil
}

// MemberByEmail returns the current member of orgID whose address is
// email, compared as ParseEmail normalizes it.
//
// Returns EInvalid for a malformed address, ENotFound when no current
// member has it.
func (s *Service) MemberByEmail(ctx context.Context, orgID, email string) (*User, error) {
	email, err := ctalk.ParseEmail("email", email)
	if err != nil {
		return nil, err
	}
	u, err := scanUser(s.db.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE org_id = $1 AND email = $2 AND removed_at IS NULL`, orgID, email))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ctalk.Errorf(ctalk.ENotFound, "no member of your organization has the address %s", email)
	}
	if err != nil {
		return nil, fmt.Errorf("read users: %w", err)
	}
	return u, nil
}

// Former reports whether userID names a member who was removed from orgID.
//
// Returns only the database's errors.
func (s *Service) Former(ctx context.Context, orgID, userID string) (bool, error) {
	var n int
	if err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM users WHERE org_id = $1 AND id = $2 AND removed_at IS NOT NULL`, orgID, userID).Scan(&n); err != nil {
		return false, fmt.Errorf("read users: %w", err)
	}
	return n > 0, nil
}
