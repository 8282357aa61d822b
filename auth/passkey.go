package auth

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// PasskeyFresh is how long a passkey verification counts as fresh: an
// approval in an org whose approval_factor is passkey, the addition or
// removal of a passkey by someone who has one, need one made this recently
// in the same browser session.
const PasskeyFresh = 5 * time.Minute

// PasskeyConfirmTTL is how long the link that confirms a passkey waiting
// for confirmation works (see FinishPasskeyRegistration).
const PasskeyConfirmTTL = 24 * time.Hour

// ceremonyTTL is how long a passkey ceremony begun may be finished.
const ceremonyTTL = 5 * time.Minute

// MaxPasskeyNameLen bounds a passkey's name, in characters.
const MaxPasskeyNameLen = 60

// MaxPasskeys bounds how many passkeys one person may register.
const MaxPasskeys = 20

// Kinds of passkey ceremony.
const (
	ceremonyRegister = "register"
	ceremonySignIn   = "signin"
	ceremonyVerify   = "verify"
)

// Factors: how a person proved who they are for an action of the web app,
// as the audit log records it.
const (
	FactorPasswordSession = "password_session"
	FactorPasskeySession  = "passkey_session"
	FactorPasskey         = "passkey"
)

// Passkey is one of a person's passkeys as their profile lists it.
type Passkey struct {
	ID         string
	Name       string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	// Pending is true while the passkey waits for the mailed link or an
	// admin's approval: until then it neither signs in nor verifies.
	Pending bool
}

// Ceremony is a passkey ceremony begun: the options the page passes to
// navigator.credentials (JSON, as the library writes them), and the id that
// the page sends back with the authenticator's answer.
type Ceremony struct {
	ID      string          `json:"ceremony"`
	Options json.RawMessage `json:"options"`
}

// PasskeyVerifiedRecently reports whether the session holds a passkey
// verification made within PasskeyFresh of now.
func (s *Session) PasskeyVerifiedRecently(now time.Time) bool {
	return s != nil && !s.PasskeyAt.IsZero() && now.Sub(s.PasskeyAt) < PasskeyFresh
}

// Factor is how the person of a browser session proved who they are for an
// action taken now: a fresh passkey verification, or the session itself,
// by how it was begun.
func (s *Session) Factor(now time.Time) string {
	switch {
	case s.PasskeyVerifiedRecently(now):
		return FactorPasskey
	case s.SignedInWith == signedInPasskey:
		return FactorPasskeySession
	}
	return FactorPasswordSession
}

// How a browser session was begun.
const (
	signedInPassword = "password"
	signedInPasskey  = "passkey"
)

// PasskeysPossible says whether the site at publicURL can offer passkeys:
// a relying-party id must be a domain name, so a site reached at an IP
// address cannot, and its pages should not offer them.
func PasskeysPossible(publicURL string) bool {
	u, err := url.Parse(publicURL)
	return err == nil && u.Hostname() != "" && net.ParseIP(u.Hostname()) == nil
}

// relyingParty is the WebAuthn relying party of the site at publicURL: its
// host is the relying-party id and its origin the one origin allowed.
// Browsers allow "localhost" over http, for development.
func relyingParty(publicURL string) (*webauthn.WebAuthn, error) {
	u, err := url.Parse(publicURL)
	if err != nil || u.Hostname() == "" {
		return nil, ctalk.Errorf(ctalk.EInternal, "public URL %q has no host for passkeys", publicURL)
	}
	w, err := webauthn.New(&webauthn.Config{
		RPID:          u.Hostname(),
		RPDisplayName: "ctalk",
		RPOrigins:     []string{u.Scheme + "://" + u.Host},
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Enforce: true, Timeout: ceremonyTTL, TimeoutUVD: ceremonyTTL},
			Registration: webauthn.TimeoutConfig{Enforce: true, Timeout: ceremonyTTL, TimeoutUVD: ceremonyTTL},
		},
	})
	if err != nil || !PasskeysPossible(publicURL) {
		// A relying-party id must be a domain name: an address is refused.
		return nil, ctalk.Errorf(ctalk.EInvalid, "passkeys need this site to be reached by a domain name, not at %s: open it at its https name, or at http://localhost for development (see PUBLIC_URL)", u.Host)
	}
	return w, nil
}

// passkeyUser is a person as the WebAuthn library sees them: creds are
// the passkeys that sign in and verify, pending those that wait for a
// confirmation (which only a new registration's exclusions list).
type passkeyUser struct {
	orgID, userID, name string
	handle              []byte
	creds, pending      []webauthn.Credential
}

func (u *passkeyUser) WebAuthnID() []byte { return u.handle }

func (u *passkeyUser) WebAuthnName() string { return u.userID + " · " + u.orgID }

func (u *passkeyUser) WebAuthnDisplayName() string { return u.name }

func (u *passkeyUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

// beginPasskeyCeremony is what every ceremony begun for the person of sess
// starts from, a registration as a verification: the relying party of the
// site at publicURL, and the person with their passkeys.
func (s *Service) beginPasskeyCeremony(ctx context.Context, sess *Session, publicURL string) (*webauthn.WebAuthn, *passkeyUser, error) {
	w, err := relyingParty(publicURL)
	if err != nil {
		return nil, nil, err
	}
	u, err := s.loadPasskeyUser(ctx, sess.OrgID, sess.UserID)
	if err != nil {
		return nil, nil, err
	}
	return w, u, nil
}

// loadPasskeyUser reads a current member and their passkeys; a person
// without any gets a new random user handle.
func (s *Service) loadPasskeyUser(ctx context.Context, orgID, userID string) (*passkeyUser, error) {
	u := &passkeyUser{orgID: orgID, userID: userID}
	err := s.db.QueryRow(ctx, `SELECT name FROM users WHERE org_id = $1 AND id = $2 AND removed_at IS NULL`, orgID, userID).Scan(&u.name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, webSessionEnded)
	}
	if err != nil {
		return nil, fmt.Errorf("read users: %w", err)
	}
	rows, err := s.db.Query(ctx, `SELECT user_handle, credential, confirm_hash IS NOT NULL FROM passkeys WHERE org_id = $1 AND user_id = $2 ORDER BY created_at`, orgID, userID)
	if err != nil {
		return nil, fmt.Errorf("read passkeys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			handle, record string
			pending        bool
		)
		if err := rows.Scan(&handle, &record, &pending); err != nil {
			return nil, fmt.Errorf("read passkeys: %w", err)
		}
		var c webauthn.Credential
		if err := json.Unmarshal([]byte(record), &c); err != nil {
			return nil, fmt.Errorf("read passkey record: %w", err)
		}
		if pending {
			u.pending = append(u.pending, c)
		} else {
			u.creds = append(u.creds, c)
		}
		if u.handle, err = base64.RawURLEncoding.DecodeString(handle); err != nil {
			return nil, fmt.Errorf("read passkey user handle: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read passkeys: %w", err)
	}
	if u.handle == nil {
		u.handle = make([]byte, 32)
		rand.Read(u.handle)
	}
	return u, nil
}

// beginCeremony stores what the finish of a ceremony checks and returns it
// with the options for the browser.
func (s *Service) beginCeremony(ctx context.Context, kind, orgID, userID string, options any, data *webauthn.SessionData) (*Ceremony, error) {
	opts, err := json.Marshal(options)
	if err != nil {
		return nil, fmt.Errorf("encode passkey options: %w", err)
	}
	state, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("encode passkey ceremony: %w", err)
	}
	raw, hash := NewToken()
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		if _, err := tx.Exec(ctx, `DELETE FROM passkey_ceremonies WHERE expires_at <= $1`, now); err != nil {
			return fmt.Errorf("delete from passkey_ceremonies: %w", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO passkey_ceremonies (hash, kind, org_id, user_id, data, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			hash, kind, orgID, userID, string(state), now.Add(ceremonyTTL))
		if err != nil {
			return fmt.Errorf("insert into passkey_ceremonies: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Ceremony{ID: raw, Options: opts}, nil
}

// ceremonyExpired is the refusal of a ceremony that is unknown, used,
// expired, or another person's.
const ceremonyExpired = "this passkey request expired or was already used; try again"

// finishCeremony takes, once, the ceremony raw of kind begun for
// orgID/userID ("" for a sign-in, which names no one yet).
func (s *Service) finishCeremony(ctx context.Context, raw, kind, orgID, userID string) (*webauthn.SessionData, error) {
	if !WellFormed(raw) {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, ceremonyExpired)
	}
	var state string
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		err := tx.QueryRow(ctx, `DELETE FROM passkey_ceremonies WHERE hash = $1 AND kind = $2 AND org_id = $3 AND user_id = $4 AND expires_at > $5 RETURNING data`,
			HashToken(raw), kind, orgID, userID, s.db.Now()).Scan(&state)
		if errors.Is(err, sql.ErrNoRows) {
			return ctalk.Errorf(ctalk.EUnauthorized, ceremonyExpired)
		}
		if err != nil {
			return fmt.Errorf("delete from passkey_ceremonies: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var data webauthn.SessionData
	if err := json.Unmarshal([]byte(state), &data); err != nil {
		return nil, fmt.Errorf("decode passkey ceremony: %w", err)
	}
	return &data, nil
}

// refusedPasskey turns the library's refusal of an authenticator's answer
// into an error that says what to do.
func refusedPasskey(what string, err error) error {
	if ctalk.ErrorCode(err) != ctalk.EInternal {
		return err
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return ctalk.Errorf(ctalk.EUnauthorized, "the passkey %s was refused (%s); try again, or use another passkey", what, strings.TrimSuffix(pe.Details, "."))
	}
	return ctalk.Errorf(ctalk.EUnauthorized, "the passkey %s could not be read; try again", what)
}
