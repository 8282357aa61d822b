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

// SetRole makes a current member of orgID a member or an admin. The change
// holds from the member's very next call and page, since every credential
// check reads the role afresh. The last admin cannot be made a member. The
// caller must have been authorized as an admin of orgID.
//
// Returns EInvalid for a malformed id or role, ENotFound when userID is not
// a current member, EConflict for the last admin.
func (s *Service) SetRole(ctx context.Context, orgID, userID, role string) (*User, error) {
	userID, err := ctalk.ParseID("user_id", userID)
	if err != nil {
		return nil, err
	}
	if role != RoleMember && role != RoleAdmin {
		return nil, ctalk.Errorf(ctalk.EInvalid, "role %.40q is not valid; use \"member\" or \"admin\"", role)
	}
	var u *User
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		if err := s.lockOrg(ctx, tx, orgID); err != nil {
			return err
		}
		current, otherAdmins, err := s.adminCount(ctx, tx, orgID, userID)
		if err != nil {
			return err
		}
		if current == RoleAdmin && role != RoleAdmin && otherAdmins == 0 {
			return ctalk.Errorf(ctalk.EConflict, "user %q is the last admin of organization %q and must stay an admin; make another member an admin first", userID, orgID)
		}
		if _, err := tx.Exec(ctx, `UPDATE users SET role = $1, updated_at = $2 WHERE org_id = $3 AND id = $4`, role, s.db.Now(), orgID, userID); err != nil {
			return fmt.Errorf("update users: %w", err)
		}
		u, err = scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE org_id = $1 AND id = $2`, orgID, userID))
		return err
	})
	if err == nil {
		// Token checks cache the role: a change takes effect at once.
		s.auth.Revoked(ctx, orgID, userID)
		s.changed(ctx, orgID, userID)
	}
	return u, err
}

// adminCount reads, on a transaction that holds lockOrg, the role of a
// current member and how many other admins the org has.
//
// Returns ENotFound when userID is not a current member.
func (s *Service) adminCount(ctx context.Context, tx db.Querier, orgID, userID string) (role string, otherAdmins int, err error) {
	err = tx.QueryRow(ctx, `
		SELECT role, (SELECT COUNT(*) FROM users a WHERE a.org_id = $1 AND a.id <> $2 AND a.role = 'admin' AND a.removed_at IS NULL)
		FROM users WHERE org_id = $1 AND id = $2 AND removed_at IS NULL`, orgID, userID).Scan(&role, &otherAdmins)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, auth.NotFoundUser(userID)
	}
	if err != nil {
		return "", 0, fmt.Errorf("read users: %w", err)
	}
	return role, otherAdmins, nil
}

// lockOrg makes changes to orgID's admins take turns on the org's row, so
// that two admins demoting or removing each other cannot both see the
// other as the one who stays. SQLite transactions hold the database's write
// lock already.
//
// Returns ENotFound for an unknown org.
func (s *Service) lockOrg(ctx context.Context, tx db.Querier, orgID string) error {
	lock := `SELECT id FROM orgs WHERE id = $1`
	if s.db.Engine == db.Postgres {
		lock += ` FOR UPDATE`
	}
	var id string
	if err := tx.QueryRow(ctx, lock, orgID).Scan(&id); errors.Is(err, sql.ErrNoRows) {
		return notFoundOrg(orgID)
	} else if err != nil {
		return fmt.Errorf("lock orgs: %w", err)
	}
	return nil
}
