package orgs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
)

// nullable stores "" as NULL, so that members without an address never
// collide in the unique index on addresses.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// emailTaken reports, inside tx, whether email is the address of a current
// member of orgID other than userID.
func (s *Service) emailTaken(ctx context.Context, tx db.Querier, orgID, userID, email string) (bool, error) {
	var n int
	err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM users WHERE org_id = $1 AND email = $2 AND id <> $3 AND removed_at IS NULL`, orgID, email, userID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read users: %w", err)
	}
	return n > 0, nil
}

func emailConflict(email string) error {
	return ctalk.Errorf(ctalk.EConflict, "%s is the address of another member of your organization, or of someone invited; use another address", email)
}

// SetEmail sets or clears (email "") the address of a current member of
// orgID. The caller is the member or has been authorized as an admin of
// orgID.
//
// Returns EInvalid for a malformed id or address, ENotFound, EConflict when
// another member has the address.
func (s *Service) SetEmail(ctx context.Context, orgID, userID, email string) (*User, error) {
	userID, err := ctalk.ParseID("user_id", userID)
	if err != nil {
		return nil, err
	}
	if email != "" {
		if email, err = ctalk.ParseEmail("email", email); err != nil {
			return nil, err
		}
	}
	return s.updateUser(ctx, orgID, userID, func(tx db.Querier) (sql.Result, error) {
		if email != "" {
			taken, err := s.emailTaken(ctx, tx, orgID, userID, email)
			if err == nil && !taken {
				taken, err = auth.PendingInvite(ctx, tx, orgID, "", email)
			}
			if err != nil {
				return nil, err
			}
			if taken {
				return nil, emailConflict(email)
			}
		}
		res, err := tx.Exec(ctx, `UPDATE users SET email = $1, updated_at = $2 WHERE org_id = $3 AND id = $4 AND removed_at IS NULL`, nullable(email), s.db.Now(), orgID, userID)
		if ctalk.ErrorCode(err) == ctalk.EConflict {
			return nil, emailConflict(email)
		}
		return res, err
	})
}

// NewInvite is the input of Invite: who is invited, under which id, name
// and role.
type NewInvite struct {
	Email  string
	UserID string
	Name   string
	Role   string
}

// Check returns the first mistake in an invite under the rules of Invite,
// without reading the database, or nil. It is EInvalid.
func (in NewInvite) Check() error {
	_, err := in.clean()
	return err
}

func (in NewInvite) clean() (*User, error) {
	if strings.TrimSpace(in.Email) == "" {
		return nil, ctalk.Errorf(ctalk.EInvalid, "email is required: the address the invite is mailed to, such as jane@example.com")
	}
	// The password is the invitee's to choose, later.
	u, errs := NewUser{ID: in.UserID, Name: in.Name, Role: in.Role, Email: in.Email, Password: "chosen-when-accepted"}.clean()
	if len(errs) > 0 {
		return nil, errs[0].Err
	}
	return u, nil
}

// Invite stores an invite by email to join orgID, from the member by, and
// returns it with its link token, which the caller mails to the invitee
// and shows to nobody. The member is created when the invitee accepts
// (AcceptInvite). The caller must have been authorized as an admin of
// orgID.
//
// Returns EInvalid for bad input, EConflict when the user id is taken
// (also by a former member) or the address belongs to a member, or either
// has an invite waiting, ERateLimited when the caller or the org has sent
// as many invites as auth's limits allow for now.
func (s *Service) Invite(ctx context.Context, c ctalk.Caller, in NewInvite) (*auth.Invite, string, error) {
	u, err := in.clean()
	if err != nil {
		return nil, "", err
	}
	inv := &auth.Invite{OrgID: c.OrgID, UserID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, InvitedBy: c.UserID}
	var raw string
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM users WHERE org_id = $1 AND id = $2`, c.OrgID, u.ID).Scan(&n); err != nil {
			return fmt.Errorf("read users: %w", err)
		}
		if n > 0 {
			return ctalk.Errorf(ctalk.EConflict, "user id %q is taken in your organization (ids of former members are never reused); choose another user_id", u.ID)
		}
		taken, err := s.emailTaken(ctx, tx, c.OrgID, u.ID, u.Email)
		if err != nil {
			return err
		}
		if taken {
			return emailConflict(u.Email)
		}
		raw, err = s.auth.CreateInvite(ctx, tx, inv, s.db.Now())
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return inv, raw, nil
}

// AcceptInvite creates the member an invite names, with the password the
// invitee chose, and ends the invite, in one transaction: the link works
// once. It returns the new member.
//
// Returns EInvalid for a password that breaks the length rules, ENotFound
// for a link that does not work, EConflict when the user id or address was
// taken meanwhile.
func (s *Service) AcceptInvite(ctx context.Context, raw, password string) (*User, error) {
	// A secret found by its hash names the org it belongs to.
	ctx = ctalk.AsOperator(ctx, "invite acceptance by link")
	hash, err := s.auth.HashPassword("password", password, auth.MinUserPasswordLen)
	if err != nil {
		return nil, err
	}
	var u *User
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		inv, err := auth.ClaimInvite(ctx, tx, raw, s.db.Now())
		if err != nil {
			return err
		}
		u = &User{OrgID: inv.OrgID, ID: inv.UserID, Name: inv.Name, Role: inv.Role, Email: inv.Email, Ownership: []string{}}
		err = s.insertUser(ctx, tx, u, hash)
		if ctalk.ErrorCode(err) == ctalk.EConflict {
			return ctalk.Errorf(ctalk.EConflict, "user id %q or address %s was taken in the organization after you were invited; ask your org admin for a new invite", inv.UserID, inv.Email)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s.changed(ctx, u.OrgID, u.ID)
	return u, nil
}

// UserByEmail returns the current member of orgID whose address is email.
//
// Returns EInvalid for a malformed address, ENotFound when no current
// member has it.
func (s *Service) UserByEmail(ctx context.Context, orgID, email string) (*User, error) {
	email, err := ctalk.ParseEmail("email", email)
	if err != nil {
		return nil, err
	}
	u, err := scanUser(s.db.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE org_id = $1 AND email = $2 AND removed_at IS NULL`, orgID, email))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ctalk.Errorf(ctalk.ENotFound, "no member of the organization has the address %s", email)
	}
	return u, err
}
