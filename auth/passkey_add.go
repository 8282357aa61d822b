package auth

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

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
	w, u, err := s.beginPasskeyCeremony(ctx, sess, publicURL)
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
