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

// Credential is one live credential of a person, as they see it on their
// tokens page: never its secret, nor the hash it is stored under.
type Credential struct {
	// Kind is KindLogin, KindPersonal or KindSession.
	Kind string
	// ID names the credential to revoke it: the first characters of its
	// hash, which say nothing about the token.
	ID    string
	Label string
	// CreatedAt, LastUsedAt and ExpiresAt: ExpiresAt is when it stops
	// working if it stays unused, the sooner of its absolute and idle ends.
	CreatedAt, LastUsedAt, ExpiresAt time.Time
	// Current marks the browser session the list was asked from.
	Current bool
}

// credentialIDLen is the length of a credential's id: 64 bits of its hash,
// unique among one person's credentials.
const credentialIDLen = 16

func credentialID(hash string) string { return hash[:credentialIDLen] }

// Credentials lists the live login tokens, personal tokens and browser
// sessions of sess's user, newest first; the browser session of sess is
// marked Current.
//
// Returns only the database's errors.
func (s *Service) Credentials(ctx context.Context, sess *Session) ([]Credential, error) {
	now := s.db.Now()
	out := []Credential{}
	err := db.Each(ctx, s.db, func(rows *db.Rows) error {
		var c Credential
		var hash string
		// A compound SELECT's times reach SQLite's driver as text.
		var created, used, expires db.NullTime
		if err := rows.Scan(&hash, &c.Kind, &c.Label, &created, &used, &expires); err != nil {
			return err
		}
		c.CreatedAt, c.LastUsedAt, c.ExpiresAt = created.Time, used.Time, expires.Time
		c.ID, c.Current = credentialID(hash), c.Kind == KindSession && hash == sess.TokenHash
		if idle := s.idleTTL(c.Kind); idle > 0 && c.LastUsedAt.Add(idle).Before(c.ExpiresAt) {
			c.ExpiresAt = c.LastUsedAt.Add(idle)
		}
		if c.ExpiresAt.After(now) {
			out = append(out, c)
		}
		return nil
	}, `
		SELECT hash, kind, label, created_at, last_used_at, expires_at FROM tokens
		WHERE org_id = $1 AND user_id = $2 AND revoked_at IS NULL AND expires_at > $3
		UNION ALL
		SELECT hash, 'session', '', created_at, last_used_at, expires_at FROM web_sessions
		WHERE org_id = $1 AND user_id = $2 AND revoked_at IS NULL AND expires_at > $3
		ORDER BY 4 DESC`, sess.OrgID, sess.UserID, now)
	if err != nil {
		return nil, fmt.Errorf("read credentials: %w", err)
	}
	return out, nil
}

// idleTTL is how long a credential of kind lives unused; zero for none.
func (s *Service) idleTTL(kind string) time.Duration {
	switch kind {
	case KindSession:
		return WebSessionIdleTTL
	case KindPersonal:
		return 0
	}
	return s.cfg.IdleTTL
}

// RevokeCredential revokes one of sess's user's own login tokens, personal
// tokens or browser sessions, by its kind and id (see Credentials). It stops
// working on the very next call. current reports whether it was the browser
// session of sess.
//
// Returns ENotFound when the user has no live credential of that kind and
// id: also for another person's, in this org or another.
func (s *Service) RevokeCredential(ctx context.Context, sess *Session, kind, id string) (current bool, err error) {
	q := `SELECT hash FROM tokens WHERE org_id = $1 AND user_id = $2 AND kind = $3 AND substr(hash, 1, 16) = $4 AND revoked_at IS NULL`
	if kind == KindSession {
		q = `SELECT hash FROM web_sessions WHERE org_id = $1 AND user_id = $2 AND $3 = 'session' AND substr(hash, 1, 16) = $4 AND revoked_at IS NULL`
	}
	var hash string
	if len(id) == credentialIDLen {
		err = s.db.QueryRow(ctx, q, sess.OrgID, sess.UserID, kind, id).Scan(&hash)
	} else {
		err = sql.ErrNoRows
	}
	if errors.Is(err, sql.ErrNoRows) {
		return false, ctalk.Errorf(ctalk.ENotFound, "that token or session was not found among yours: it may have been revoked already; reload the page")
	}
	if err != nil {
		return false, fmt.Errorf("read credentials: %w", err)
	}
	// Through the helpers that end a credential by its own session (logout,
	// sign-out), so that whatever they do besides revoking it is done here
	// too.
	owned := &Session{OrgID: sess.OrgID, UserID: sess.UserID, Role: sess.Role, TokenHash: hash}
	if kind == KindSession {
		err = s.EndWebSession(ctx, owned)
	} else {
		err = s.Logout(ctx, owned)
	}
	if err != nil {
		return false, err
	}
	return hash == sess.TokenHash, nil
}
