package orgs

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
)

// SetNotes replaces a user's own notes.
//
// Returns EInvalid, ENotFound.
func (s *Service) SetNotes(ctx context.Context, c ctalk.Caller, notes string) (*User, error) {
	return s.setText(ctx, c.OrgID, c.UserID, "notes", notes)
}

// SetProfileNotes replaces the admin-written notes on a user. The caller must
// have been authorized as an admin of orgID.
//
// Returns EInvalid, ENotFound.
func (s *Service) SetProfileNotes(ctx context.Context, orgID, userID, notes string) (*User, error) {
	return s.setText(ctx, orgID, userID, "profile_notes", notes)
}

// setTextSQL updates each free-text column, spelled out so that the
// columns a statement writes can be read from the source.
var setTextSQL = map[string]string{
	"notes":         `UPDATE users SET notes = $1, updated_at = $2 WHERE org_id = $3 AND id = $4 AND removed_at IS NULL`,
	"profile_notes": `UPDATE users SET profile_notes = $1, updated_at = $2 WHERE org_id = $3 AND id = $4 AND removed_at IS NULL`,
}

// setText updates one free-text column; column is one of setTextSQL's.
func (s *Service) setText(ctx context.Context, orgID, userID, column, text string) (*User, error) {
	userID, err := ctalk.ParseID("user_id", userID)
	if err != nil {
		return nil, err
	}
	if text, err = ctalk.Text(column, text, MaxNotesLen, false); err != nil {
		return nil, err
	}
	return s.updateUser(ctx, orgID, userID, func(tx db.Querier) (sql.Result, error) {
		return tx.Exec(ctx, setTextSQL[column], text, s.db.Now(), orgID, userID)
	})
}

// updateUser runs update, a statement that changes the row of userID in
// its transaction, and returns the member as it left them, after telling
// the caches. No row changed is ENotFound; update's errors are returned as
// they are, and any other error of its statement is the database's.
func (s *Service) updateUser(ctx context.Context, orgID, userID string, update func(tx db.Querier) (sql.Result, error)) (*User, error) {
	var u *User
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		res, err := update(tx)
		if err != nil {
			if ctalk.ErrorCode(err) != ctalk.EInternal {
				return err
			}
			return fmt.Errorf("update users: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return auth.NotFoundUser(userID)
		}
		u, err = scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE org_id = $1 AND id = $2`, orgID, userID))
		return err
	})
	if err != nil {
		return nil, err
	}
	s.changed(ctx, orgID, userID)
	// Presence belongs to the lists and profiles that show people.
	u.Presence, u.LastSeenAt = "", nil
	return u, nil
}
