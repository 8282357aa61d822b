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
	"unicode/utf8"

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

func (u *passkeyUser) WebAuthnID() []byte                         { return u.handle }
func (u *passkeyUser) WebAuthnName() string                       { return u.userID + " · " + u.orgID }
func (u *passkeyUser) WebAuthnDisplayName() string                { return u.name }
func (u *passkeyUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

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

// errFreshToAdd refuses a new passkey to someone who has one and has not
// verified with it in this session within PasskeyFresh: else anyone who
// knows their password (their agent) could add a passkey of its own.
var errFreshToAdd = ctalk.Errorf(ctalk.EForbidden, "adding a passkey needs a fresh verification with a passkey you already have: verify with one of your passkeys first, then add the new one")

// BeginPasskeyRegistration begins adding a passkey for the person of sess,
// on the site at publicURL. The passkey is discoverable (it signs in without
// typing ids) and verifies its user. Someone who has a passkey must have
// verified with one in this session within PasskeyFresh.
//
// Returns EUnauthorized when the person is no longer a member, EForbidden
// without that verification, EConflict at MaxPasskeys.
func (s *Service) BeginPasskeyRegistration(ctx context.Context, sess *Session, publicURL string) (*Ceremony, error) {
	w, err := relyingParty(publicURL)
	if err != nil {
		return nil, err
	}
	u, err := s.loadPasskeyUser(ctx, sess.OrgID, sess.UserID)
	if err != nil {
		return nil, err
	}
	if len(u.creds) > 0 && !sess.PasskeyVerifiedRecently(s.db.Now()) {
		return nil, errFreshToAdd
	}
	if len(u.creds)+len(u.pending) >= MaxPasskeys {
		return nil, ctalk.Errorf(ctalk.EConflict, "you have %d passkeys, the most one person may have; remove one you no longer use first", MaxPasskeys)
	}
	creation, data, err := w.BeginRegistration(u,
		webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementRequired),
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{
			ResidentKey: protocol.ResidentKeyRequirementRequired, RequireResidentKey: protocol.ResidentKeyRequired(),
			UserVerification: protocol.VerificationRequired,
		}),
		webauthn.WithExclusions(webauthn.Credentials(append(u.creds, u.pending...)).CredentialDescriptors()),
		webauthn.WithExtensions(webauthn.WithExtensionCredProps()))
	if err != nil {
		return nil, fmt.Errorf("begin passkey registration: %w", err)
	}
	return s.beginCeremony(ctx, ceremonyRegister, sess.OrgID, sess.UserID, creation, data)
}

// FinishPasskeyRegistration checks the authenticator's answer to the
// ceremony and stores the new passkey under name. Someone who has a
// passkey must have verified with one in this session within PasskeyFresh,
// checked again as it is stored. With confirm (the org's approval_factor
// is passkey), the first passkey of someone who has none waits for a
// factor their password does not give: it is stored Pending, and confirm
// is the token of the link that confirms it (see ConfirmPasskey), for the
// caller to mail to the person; an admin may approve it instead
// (ApprovePasskey). Otherwise the token is "".
//
// Returns EInvalid for a bad name, EUnauthorized for an expired ceremony or
// an answer the library refuses, EForbidden without the verification,
// EConflict for a passkey already stored.
func (s *Service) FinishPasskeyRegistration(ctx context.Context, sess *Session, publicURL, ceremony, name string, answer []byte, confirm bool) (pk *Passkey, token string, err error) {
	name, err = passkeyName(name)
	if err != nil {
		return nil, "", err
	}
	w, err := relyingParty(publicURL)
	if err != nil {
		return nil, "", err
	}
	data, err := s.finishCeremony(ctx, ceremony, ceremonyRegister, sess.OrgID, sess.UserID)
	if err != nil {
		return nil, "", err
	}
	u, err := s.loadPasskeyUser(ctx, sess.OrgID, sess.UserID)
	if err != nil {
		return nil, "", err
	}
	u.handle = data.UserID
	parsed, err := protocol.ParseCredentialCreationResponseBytes(answer)
	if err != nil {
		return nil, "", refusedPasskey("registration", err)
	}
	cred, err := w.CreateCredential(u, *data, parsed)
	if err != nil {
		return nil, "", refusedPasskey("registration", err)
	}
	record, err := json.Marshal(cred)
	if err != nil {
		return nil, "", fmt.Errorf("encode passkey record: %w", err)
	}
	pk = &Passkey{ID: base64.RawURLEncoding.EncodeToString(cred.ID), Name: name}
	token, err = s.storePasskey(ctx, sess, pk, base64.RawURLEncoding.EncodeToString(u.handle), string(record), cred.Authenticator.SignCount, confirm)
	if err != nil {
		return nil, "", err
	}
	return pk, token, nil
}

// passkeyName is name trimmed, or why it cannot name a passkey.
func passkeyName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", ctalk.Errorf(ctalk.EInvalid, "name the passkey (say, the device or password manager that holds it) so that you can tell your passkeys apart")
	}
	if n := utf8.RuneCountInString(name); n > MaxPasskeyNameLen || !utf8.ValidString(name) {
		return "", ctalk.Errorf(ctalk.EInvalid, "a passkey's name is at most %d characters (this one has %d); choose a shorter one", MaxPasskeyNameLen, n)
	}
	return name, nil
}

// storePasskey stores the registered passkey pk of sess's person, with its
// user handle, its credential record and its sign count, stamping when;
// under the rules of FinishPasskeyRegistration, which confirm and the
// token returned are.
func (s *Service) storePasskey(ctx context.Context, sess *Session, pk *Passkey, handle, record string, signCount uint32, confirm bool) (token string, err error) {
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		pk.CreatedAt = s.db.Now()
		// Counted in the transaction that stores it, so that a passkey
		// confirmed meanwhile is counted too.
		var confirmed int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM passkeys WHERE org_id = $1 AND user_id = $2 AND confirm_hash IS NULL`, sess.OrgID, sess.UserID).Scan(&confirmed); err != nil {
			return fmt.Errorf("read passkeys: %w", err)
		}
		if confirmed > 0 && !sess.PasskeyVerifiedRecently(pk.CreatedAt) {
			return errFreshToAdd
		}
		var hash any
		var until any
		if confirmed == 0 && confirm {
			raw, h := NewToken()
			token, hash, until, pk.Pending = raw, h, pk.CreatedAt.Add(PasskeyConfirmTTL), true
		}
		// Every passkey of a person carries one user handle, which a
		// discoverable sign-in checks: a registration begun before
		// another one, by someone who had none, finished, holds another.
		var theirs string
		err := tx.QueryRow(ctx, `SELECT user_handle FROM passkeys WHERE org_id = $1 AND user_id = $2 LIMIT 1`, sess.OrgID, sess.UserID).Scan(&theirs)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read passkeys: %w", err)
		}
		if theirs != "" && theirs != handle {
			return ctalk.Errorf(ctalk.EConflict, "another passkey of yours was added while this one was; remove this one from your device, then add it again")
		}
		_, err = tx.Exec(ctx, `INSERT INTO passkeys (id, org_id, user_id, user_handle, name, credential, sign_count, created_at, confirm_hash, confirm_expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			pk.ID, sess.OrgID, sess.UserID, handle, pk.Name, record, int64(signCount), pk.CreatedAt, hash, until)
		if ctalk.ErrorCode(err) == ctalk.EConflict {
			return ctalk.Errorf(ctalk.EConflict, "this passkey is already registered; it is in your list of passkeys")
		}
		if err != nil {
			return fmt.Errorf("insert into passkeys: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// Passkeys lists the passkeys of orgID/userID, oldest first.
//
// Returns only the database's errors.
func (s *Service) Passkeys(ctx context.Context, orgID, userID string) ([]Passkey, error) {
	rows, err := s.db.Query(ctx, `SELECT id, name, created_at, last_used_at, confirm_hash IS NOT NULL FROM passkeys WHERE org_id = $1 AND user_id = $2 ORDER BY created_at, id`, orgID, userID)
	if err != nil {
		return nil, fmt.Errorf("read passkeys: %w", err)
	}
	defer rows.Close()
	var out []Passkey
	for rows.Next() {
		var (
			p    Passkey
			used sql.NullTime
		)
		if err := rows.Scan(&p.ID, &p.Name, &p.CreatedAt, (*db.NullTime)(&used), &p.Pending); err != nil {
			return nil, fmt.Errorf("read passkeys: %w", err)
		}
		if used.Valid {
			p.LastUsedAt = &used.Time
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read passkeys: %w", err)
	}
	return out, nil
}

// BeginPasskeySignIn begins a sign-in with a discoverable passkey: the
// browser offers the person's passkeys for the site, and the one chosen
// names the person. Each begin stores a ceremony, so that clientIP's begins
// share the per-address budget of password checks (a kind of their own).
//
// Returns ERateLimited when the address has spent it.
func (s *Service) BeginPasskeySignIn(ctx context.Context, publicURL, clientIP string) (*Ceremony, error) {
	if err := s.ips.allow("passkey", addressKey(clientIP)); err != nil {
		return nil, err
	}
	w, err := relyingParty(publicURL)
	if err != nil {
		return nil, err
	}
	assertion, data, err := w.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return nil, fmt.Errorf("begin passkey sign-in: %w", err)
	}
	return s.beginCeremony(ctx, ceremonySignIn, "", "", assertion, data)
}

// ClonedPasskeyError is the refusal of an assertion whose signature counter
// did not advance past the one stored: the passkey may have been copied.
// It names whose passkey it is, for the audit log.
type ClonedPasskeyError struct {
	OrgID, UserID, PasskeyID string
}

func (e *ClonedPasskeyError) Error() string { return e.Unwrap().Error() }

// Unwrap makes the refusal a ctalk EForbidden.
func (e *ClonedPasskeyError) Unwrap() error {
	return ctalk.Errorf(ctalk.EForbidden, "this passkey's signature counter went back, a sign that it was copied; it was refused and the attempt recorded. Use another passkey, or your password, and remove this one from your profile")
}

// FinishPasskeySignIn checks the authenticator's answer to a sign-in
// ceremony and starts a browser session for the person it names, verified
// by passkey now. The password lock plays no part: a passkey cannot be
// guessed.
//
// Returns EUnauthorized for an expired ceremony, an unknown passkey or a
// refused answer; *ClonedPasskeyError (EForbidden).
func (s *Service) FinishPasskeySignIn(ctx context.Context, publicURL, ceremony string, answer []byte) (string, *Session, error) {
	w, err := relyingParty(publicURL)
	if err != nil {
		return "", nil, err
	}
	data, err := s.finishCeremony(ctx, ceremony, ceremonySignIn, "", "")
	if err != nil {
		return "", nil, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(answer)
	if err != nil {
		return "", nil, refusedPasskey("sign-in", err)
	}
	var found *passkeyUser
	user, cred, err := w.ValidatePasskeyLogin(func(rawID, handle []byte) (webauthn.User, error) {
		var orgID, userID string
		err := s.db.QueryRow(ctx, `SELECT p.org_id, p.user_id FROM passkeys p JOIN users u ON u.org_id = p.org_id AND u.id = p.user_id AND u.removed_at IS NULL
			WHERE p.id = $1 AND p.user_handle = $2 AND p.confirm_hash IS NULL`,
			base64.RawURLEncoding.EncodeToString(rawID), base64.RawURLEncoding.EncodeToString(handle)).Scan(&orgID, &userID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ctalk.Errorf(ctalk.EUnauthorized, "this passkey is not registered here (it may have been removed); sign in with your password")
		}
		if err != nil {
			return nil, fmt.Errorf("read passkeys: %w", err)
		}
		found, err = s.loadPasskeyUser(ctx, orgID, userID)
		return found, err
	}, *data, parsed)
	if err != nil || user == nil {
		var ce *ctalk.Error
		if errors.As(err, &ce) {
			return "", nil, ce
		}
		return "", nil, refusedPasskey("sign-in", err)
	}
	if err := s.usedPasskey(ctx, found, cred); err != nil {
		return "", nil, err
	}
	sess := &Session{OrgID: found.orgID, UserID: found.userID, SignedInWith: signedInPasskey}
	if err := s.db.QueryRow(ctx, `SELECT role FROM users WHERE org_id = $1 AND id = $2`, found.orgID, found.userID).Scan(&sess.Role); err != nil {
		return "", nil, fmt.Errorf("read users: %w", err)
	}
	raw, err := s.StartWebSession(ctx, sess)
	if err != nil {
		return "", nil, err
	}
	return raw, sess, nil
}

// BeginPasskeyVerify begins a verification of the person of sess with one
// of their passkeys, for an action that needs a fresh one.
//
// Returns EConflict when they have none yet.
func (s *Service) BeginPasskeyVerify(ctx context.Context, sess *Session, publicURL string) (*Ceremony, error) {
	w, err := relyingParty(publicURL)
	if err != nil {
		return nil, err
	}
	u, err := s.loadPasskeyUser(ctx, sess.OrgID, sess.UserID)
	if err != nil {
		return nil, err
	}
	if len(u.creds) == 0 && len(u.pending) > 0 {
		return nil, ctalk.Errorf(ctalk.EConflict, "your passkey waits for confirmation: open the link mailed to you, or ask an admin to approve it on your member page")
	}
	if len(u.creds) == 0 {
		return nil, ctalk.Errorf(ctalk.EConflict, "you have no passkey yet; add one on your profile first")
	}
	assertion, data, err := w.BeginLogin(u, webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return nil, fmt.Errorf("begin passkey verification: %w", err)
	}
	return s.beginCeremony(ctx, ceremonyVerify, sess.OrgID, sess.UserID, assertion, data)
}

// FinishPasskeyVerify checks the authenticator's answer to a verification
// ceremony and records it in the browser session of sess, whose PasskeyAt
// it sets.
//
// Returns EUnauthorized for an expired ceremony, an ended session or a
// refused answer; *ClonedPasskeyError (EForbidden).
func (s *Service) FinishPasskeyVerify(ctx context.Context, sess *Session, publicURL, ceremony string, answer []byte) error {
	w, err := relyingParty(publicURL)
	if err != nil {
		return err
	}
	data, err := s.finishCeremony(ctx, ceremony, ceremonyVerify, sess.OrgID, sess.UserID)
	if err != nil {
		return err
	}
	u, err := s.loadPasskeyUser(ctx, sess.OrgID, sess.UserID)
	if err != nil {
		return err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(answer)
	if err != nil {
		return refusedPasskey("verification", err)
	}
	cred, err := w.ValidateLogin(u, *data, parsed)
	if err != nil {
		return refusedPasskey("verification", err)
	}
	if err := s.usedPasskey(ctx, u, cred); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		ok, err := changedOne(tx.Exec(ctx, `UPDATE web_sessions SET passkey_at = $1 WHERE hash = $2 AND org_id = $3 AND user_id = $4 AND revoked_at IS NULL`,
			now, sess.TokenHash, sess.OrgID, sess.UserID))
		if err != nil {
			return fmt.Errorf("update web_sessions: %w", err)
		}
		if !ok {
			return ctalk.Errorf(ctalk.EUnauthorized, webSessionEnded)
		}
		sess.PasskeyAt = now
		return nil
	})
}

// usedPasskey records a use of u's passkey cred that the library accepted:
// its new counter, flags and last use. The counter must advance past the
// one stored (a counter of 0 is an authenticator that keeps none) in the
// same statement that stores it, so that two uses with one counter, the
// second of them a copy's, cannot both pass; an assertion whose counter
// went back is refused, and recorded on the passkey.
func (s *Service) usedPasskey(ctx context.Context, u *passkeyUser, cred *webauthn.Credential) error {
	id := base64.RawURLEncoding.EncodeToString(cred.ID)
	cloned := &ClonedPasskeyError{OrgID: u.orgID, UserID: u.userID, PasskeyID: id}
	if cred.Authenticator.CloneWarning {
		s.sawClone(ctx, u, id)
		return cloned
	}
	record, err := json.Marshal(cred)
	if err != nil {
		return fmt.Errorf("encode passkey record: %w", err)
	}
	count := int64(cred.Authenticator.SignCount)
	var ok bool
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		ok, err = changedOne(tx.Exec(ctx, `UPDATE passkeys SET credential = $1, sign_count = $2, last_used_at = $3
			WHERE id = $4 AND org_id = $5 AND user_id = $6 AND confirm_hash IS NULL AND (sign_count < $2 OR $2 = 0)`,
			string(record), count, s.db.Now(), id, u.orgID, u.userID))
		if err != nil {
			return fmt.Errorf("update passkeys: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !ok {
		s.sawClone(ctx, u, id)
		return cloned
	}
	return nil
}

// sawClone marks passkey id as seen with a counter that went back.
func (s *Service) sawClone(ctx context.Context, u *passkeyUser, id string) {
	ctx = context.WithoutCancel(ctx)
	// The refusal stands whether or not the mark is written.
	s.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, `UPDATE passkeys SET clone_seen_at = $1 WHERE id = $2 AND org_id = $3 AND user_id = $4`, s.db.Now(), id, u.orgID, u.userID)
		return err
	})
}

// RemovePasskey removes passkey id of the person of sess, and returns it.
// It needs a fresh verification: a passkey verification in this session
// within PasskeyFresh, or, for someone removing their only passkey, their
// password (checked under the rules of Login). A passkey still waiting for
// confirmation signs in and verifies nothing: removing it needs only the
// session.
//
// Returns ENotFound for a passkey that is not theirs, EForbidden when the
// verification is missing, the errors of CheckPassword.
func (s *Service) RemovePasskey(ctx context.Context, sess *Session, id, password, clientIP string) (*Passkey, error) {
	keys, err := s.Passkeys(ctx, sess.OrgID, sess.UserID)
	if err != nil {
		return nil, err
	}
	var (
		found     *Passkey
		confirmed int
	)
	for i, k := range keys {
		if k.ID == id {
			found = &keys[i]
		}
		if !k.Pending {
			confirmed++
		}
	}
	if found == nil {
		return nil, ctalk.Errorf(ctalk.ENotFound, "you have no passkey with that id; your profile lists the ones you have")
	}
	switch {
	case found.Pending, sess.PasskeyVerifiedRecently(s.db.Now()):
	case confirmed == 1 && password != "":
		if _, err := s.CheckPassword(ctx, sess.OrgID, sess.UserID, password, clientIP); err != nil {
			return nil, err
		}
	case confirmed == 1:
		return nil, ctalk.Errorf(ctalk.EForbidden, "removing a passkey needs a fresh verification: type your password, or verify with this passkey first")
	default:
		return nil, ctalk.Errorf(ctalk.EForbidden, "removing a passkey needs a fresh verification: verify with one of your passkeys first")
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		ok, err := changedOne(tx.Exec(ctx, `DELETE FROM passkeys WHERE id = $1 AND org_id = $2 AND user_id = $3`, id, sess.OrgID, sess.UserID))
		if err != nil {
			return fmt.Errorf("delete from passkeys: %w", err)
		}
		if !ok {
			return ctalk.Errorf(ctalk.ENotFound, "that passkey was removed already")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}

// PendingPasskey is a passkey waiting for confirmation, as the page its
// mailed link opens shows it.
type PendingPasskey struct {
	OrgID, UserID string
	Passkey
}

// errConfirmGone refuses a confirmation link that is unknown, used or
// expired.
var errConfirmGone = ctalk.Errorf(ctalk.ENotFound, "this link does not confirm any passkey: it was used already, it expired (links work for 24 hours), or the passkey was removed. Add the passkey again on your profile for a new link")

// PasskeyByLink returns the passkey that the confirmation link's token raw
// confirms, without confirming it.
//
// Returns ENotFound for a link that is unknown, used or expired.
func (s *Service) PasskeyByLink(ctx context.Context, raw string) (*PendingPasskey, error) {
	if !WellFormed(raw) {
		return nil, errConfirmGone
	}
	p := &PendingPasskey{}
	err := s.db.QueryRow(ctx, `SELECT p.org_id, p.user_id, p.id, p.name, p.created_at FROM passkeys p
		JOIN users u ON u.org_id = p.org_id AND u.id = p.user_id AND u.removed_at IS NULL
		WHERE p.confirm_hash = $1 AND p.confirm_expires_at > $2`, HashToken(raw), s.db.Now()).Scan(&p.OrgID, &p.UserID, &p.ID, &p.Name, &p.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errConfirmGone
	}
	if err != nil {
		return nil, fmt.Errorf("read passkeys: %w", err)
	}
	p.Pending = true
	return p, nil
}

// ConfirmPasskey confirms, once, the passkey that the mailed link's token
// raw names: from then on it signs in and verifies.
//
// Returns ENotFound for a link that is unknown, used or expired.
func (s *Service) ConfirmPasskey(ctx context.Context, raw string) (*PendingPasskey, error) {
	p, err := s.PasskeyByLink(ctx, raw)
	if err != nil {
		return nil, err
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		ok, err := changedOne(tx.Exec(ctx, `UPDATE passkeys SET confirm_hash = NULL, confirm_expires_at = NULL WHERE confirm_hash = $1 AND confirm_expires_at > $2`,
			HashToken(raw), s.db.Now()))
		if err != nil {
			return fmt.Errorf("update passkeys: %w", err)
		}
		if !ok {
			return errConfirmGone
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.Pending = false
	return p, nil
}

// ApprovePasskey confirms, as the admin of admin's session, the passkey id
// of userID that waits for confirmation: the factor a member who has no
// passkey yet is given where no link can be mailed to them. The admin
// must have verified with their own passkey in this session within
// PasskeyFresh, and may not approve their own. The caller must have
// authorized admin as an admin of their org.
//
// Returns EForbidden for the admin's own passkey or without that
// verification, ENotFound for a passkey of no member's of the org or one
// that waits for nothing.
func (s *Service) ApprovePasskey(ctx context.Context, admin *Session, userID, id string) (*Passkey, error) {
	if userID == admin.UserID {
		return nil, ctalk.Errorf(ctalk.EForbidden, "a passkey of your own is confirmed by the link mailed to you, or by another admin; an admin cannot approve their own")
	}
	if !admin.PasskeyVerifiedRecently(s.db.Now()) {
		return nil, ctalk.Errorf(ctalk.EForbidden, "approving a member's passkey needs a fresh verification with a passkey of yours")
	}
	pk := &Passkey{ID: id}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		err := tx.QueryRow(ctx, `UPDATE passkeys SET confirm_hash = NULL, confirm_expires_at = NULL
			WHERE id = $1 AND org_id = $2 AND user_id = $3 AND confirm_hash IS NOT NULL RETURNING name, created_at`,
			id, admin.OrgID, userID).Scan(&pk.Name, &pk.CreatedAt)
		if errors.Is(err, sql.ErrNoRows) {
			return ctalk.Errorf(ctalk.ENotFound, "this member has no passkey with that id waiting for approval; their member page lists those that do")
		}
		if err != nil {
			return fmt.Errorf("update passkeys: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return pk, nil
}
