package auth

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// Kinds of credential a person holds. Login and personal tokens are rows of
// tokens (its kind column); browser sessions are rows of web_sessions.
const (
	KindLogin    = "login"
	KindPersonal = "personal"
	KindSession  = "session"
)

// PersonalTokenLifetimes are the lifetimes a personal token may be given,
// in days. A personal token has no idle expiry: it lives until it expires or
// is revoked, as chosen when it was made.
var PersonalTokenLifetimes = []int{30, 90, 365}

// MaxLabelLen bounds a personal token's label, in characters.
const MaxLabelLen = 100

// MaxPersonalTokens bounds the live personal tokens one person holds, so
// that a session cannot fill the database with them.
const MaxPersonalTokens = 50

// CreatePersonalToken makes a personal token for sess's user, for a client
// that cannot sign in with OAuth: label says which client it is for, days
// is one of PersonalTokenLifetimes. The token is returned once as raw and
// stored only as its hash; it authenticates as a login token does.
//
// Returns EInvalid for a bad label or lifetime, ERateLimited when the user
// holds MaxPersonalTokens already, EUnauthorized when the user was removed
// meanwhile.
func (s *Service) CreatePersonalToken(ctx context.Context, sess *Session, label string, days int) (raw string, cred *Credential, err error) {
	if label, err = ctalk.Text("label", label, MaxLabelLen, true); err != nil {
		return "", nil, err
	}
	if !slices.Contains(PersonalTokenLifetimes, days) {
		return "", nil, ctalk.Errorf(ctalk.EInvalid, "a personal token lives %v days; choose one of these", PersonalTokenLifetimes)
	}
	raw, hash := NewToken()
	cred = &Credential{Kind: KindPersonal, ID: credentialID(hash), Label: label}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		cred.CreatedAt, cred.LastUsedAt = now, now
		cred.ExpiresAt = now.Add(time.Duration(days) * 24 * time.Hour)
		var held int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM tokens WHERE org_id = $1 AND user_id = $2 AND kind = $3 AND revoked_at IS NULL AND expires_at > $4`,
			sess.OrgID, sess.UserID, KindPersonal, now).Scan(&held); err != nil {
			return fmt.Errorf("count personal tokens: %w", err)
		}
		if held >= MaxPersonalTokens {
			return ctalk.Errorf(ctalk.ERateLimited, "you hold %d personal tokens, the most one person may; revoke one you no longer use first", held)
		}
		// Only for a current member: a removal that committed first must
		// not be outlived by a token made from its last page.
		res, err := tx.Exec(ctx, `INSERT INTO tokens (hash, org_id, user_id, kind, label, created_at, last_used_at, expires_at)
			SELECT $1, $2, $3, $4, $5, $6, $6, $7 FROM users WHERE org_id = $2 AND id = $3 AND removed_at IS NULL`,
			hash, sess.OrgID, sess.UserID, KindPersonal, label, now, cred.ExpiresAt)
		if err != nil {
			return fmt.Errorf("insert into tokens: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return ctalk.Errorf(ctalk.EUnauthorized, "you are no longer a member of this organization")
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	return raw, cred, nil
}
