package auth

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

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
// refused answer; *ClonedPasskeyError (EForbidden); the refusal of the
// SignInGate (DoorPasskey).
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
		// The passkey names its org: found across orgs by its id.
		err := s.db.QueryRow(ctalk.AsOperator(ctx, "passkey sign-in lookup by credential id"), `SELECT p.org_id, p.user_id FROM passkeys p JOIN users u ON u.org_id = p.org_id AND u.id = p.user_id AND u.removed_at IS NULL
			WHERE p.id = $1 AND p.user_handle = $2 AND p.confirm_hash IS NULL`,
			base64.RawURLEncoding.EncodeToString(rawID), base64.RawURLEncoding.EncodeToString(handle)).Scan(&orgID, &userID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ctalk.Errorf(ctalk.EUnauthorized, "this passkey is not registered here (it may have been removed); sign in with your password")
		}
		if err != nil {
			return nil, fmt.Errorf("read passkeys: %w", err)
		}
		// The rest of the sign-in acts in the passkey's org.
		ctx = ctalk.WithOrg(ctx, orgID)
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
	if err := s.admit(ctx, found.orgID, found.userID, DoorPasskey); err != nil {
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
	w, u, err := s.beginPasskeyCeremony(ctx, sess, publicURL)
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
