package auth

import (
	"context"
	"fmt"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Password length rules. bcrypt reads at most 72 bytes, so a longer password
// is refused rather than silently truncated.
const (
	MinAdminPasswordLen = 12
	MinUserPasswordLen  = 8
	MaxPasswordBytes    = 72
)

// ValidatePassword checks a new password against the length rules. field
// names the argument in the error message.
//
// Returns EInvalid.
func ValidatePassword(field, pw string, minLen int) error {
	if n := utf8.RuneCountInString(pw); n < minLen {
		return ctalk.Errorf(ctalk.EInvalid, "%s must be at least %d characters (got %d); choose a longer one", field, minLen, n)
	}
	if len(pw) > MaxPasswordBytes {
		return ctalk.Errorf(ctalk.EInvalid, "%s is %d bytes; at most %d bytes are allowed (bcrypt would ignore the rest), so choose a shorter one", field, len(pw), MaxPasswordBytes)
	}
	return nil
}

// HashPassword validates pw and returns its bcrypt hash at the service's cost.
//
// Returns EInvalid when pw breaks the length rules.
func (s *Service) HashPassword(field, pw string, minLen int) (string, error) {
	if err := ValidatePassword(field, pw, minLen); err != nil {
		return "", err
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), s.cfg.BcryptCost)
	if err != nil {
		return "", err
	}
	return string(h), nil
}

// checkPassword compares pw with hash. An empty hash (no such account) is
// compared against a dummy hash of the same cost, so that an unknown account
// costs the same time as a wrong password.
func (s *Service) checkPassword(hash, pw string) bool {
	if len(pw) > MaxPasswordBytes {
		// Still spend the time, but never accept a password bcrypt would truncate.
		bcrypt.CompareHashAndPassword(s.dummyHash, []byte(pw[:MaxPasswordBytes]))
		return false
	}
	if hash == "" {
		bcrypt.CompareHashAndPassword(s.dummyHash, []byte(pw))
		return false
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(pw)) == nil
}

// StorePassword sets, inside tx, the password hash of the user orgID/userID
// (one made by HashPassword, or "" for none, which no password matches),
// and reports whether that user exists. The orgs package calls it for the
// user it creates; auth alone writes the column.
func StorePassword(ctx context.Context, tx db.Querier, orgID, userID, hash string) (bool, error) {
	ok, err := changedOne(tx.Exec(ctx, `UPDATE users SET password_hash = $1 WHERE org_id = $2 AND id = $3`, hash, orgID, userID))
	if err != nil {
		return false, fmt.Errorf("update users: %w", err)
	}
	return ok, nil
}

// StoreAdminPassword sets, inside tx, the admin password hash of orgID
// (one made by HashPassword), and reports whether the org exists. The orgs
// package calls it for the org it creates; auth alone writes the column.
func StoreAdminPassword(ctx context.Context, tx db.Querier, orgID, hash string) (bool, error) {
	ok, err := changedOne(tx.Exec(ctx, `UPDATE orgs SET admin_password_hash = $1 WHERE id = $2`, hash, orgID))
	if err != nil {
		return false, fmt.Errorf("update orgs: %w", err)
	}
	return ok, nil
}
