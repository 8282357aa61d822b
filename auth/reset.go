package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// ResetTTL is how long a password reset link works.
const ResetTTL = 30 * time.Minute

// ResetRequest is an answered "forgot password" request: when Token is set,
// UserID of OrgID exists and Token is the link's token, to be mailed to that
// member's address and nowhere else. Whether it is set must not change what
// the requester is told.
type ResetRequest struct {
	OrgID, UserID string
	Token         string
}

// lockKey takes, inside tx on Postgres, the transaction's advisory lock on
// key, so that the statements that count and record attempts on key run
// one transaction at a time. SQLite's single writer does the same already.
func (s *Service) lockKey(ctx context.Context, tx db.Querier, key string) error {
	if s.db.Engine != db.Postgres {
		return nil
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(attemptLockClass), int32(h.Sum32())); err != nil {
		return fmt.Errorf("take advisory lock: %w", err)
	}
	return nil
}

// RequestReset answers a "forgot password" request for the member of orgID
// named by who, a user id or their email address, from the client address
// in ctx. It runs the same statements whether or not that member exists (or
// has an address): it counts the request against the limits of the account
// asked for and of the address, and then stores a reset link for the member
// if there is one with an address and fewer than ResetMaxPerAccount links
// within ResetWindow. The caller mails the link, and tells the requester
// the same in every case.
//
// Returns EInvalid for a malformed org id or who, ERateLimited when the
// account asked for or the address has asked ResetMaxPerAccount or
// ResetMaxPerAddress times within ResetWindow.
func (s *Service) RequestReset(ctx context.Context, orgID, who string) (*ResetRequest, error) {
	orgID, userID, email, err := ParseAccount(orgID, who)
	if err != nil {
		return nil, err
	}
	r := resetAsk{addr: addressKey(ClientAddr(ctx)), account: HashToken(orgID + "\x00" + userID + email), orgID: orgID, userID: userID, email: email}
	raw, hash := NewToken()
	req := &ResetRequest{OrgID: orgID}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		if err := s.countReset(ctx, tx, r, now); err != nil {
			return err
		}
		stored, err := s.storeReset(ctx, tx, r, hash, now)
		if stored != "" {
			req.UserID, req.Token = stored, raw
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return req, nil
}

// resetAsk is one "forgot password" request: the client address and the
// account asked for, as the limits count them, and the account as named.
type resetAsk struct {
	addr, account        string
	orgID, userID, email string
}

// countReset counts the request r against the limits of its address and
// its account, in tx, and forgets the requests older than ResetWindow.
//
// Returns ERateLimited when the address or the account has asked
// ResetMaxPerAddress or ResetMaxPerAccount times within ResetWindow.
func (s *Service) countReset(ctx context.Context, tx db.Querier, r resetAsk, now time.Time) error {
	since := now.Add(-s.cfg.ResetWindow)
	// The address first, then the account, in every transaction: no
	// two can wait for each other.
	if err := s.lockKey(ctx, tx, "reset addr\x00"+r.addr); err != nil {
		return err
	}
	if err := s.lockKey(ctx, tx, "reset account\x00"+r.account); err != nil {
		return err
	}
	var byAccount, byAddr int
	var oldestAccount, oldestAddr db.NullTime
	err := tx.QueryRow(ctx, `SELECT COUNT(CASE WHEN account = $1 THEN 1 END), MIN(CASE WHEN account = $1 THEN requested_at END),
		COUNT(CASE WHEN client_addr = $2 THEN 1 END), MIN(CASE WHEN client_addr = $2 THEN requested_at END)
		FROM reset_requests WHERE (account = $1 OR client_addr = $2) AND requested_at > $3`, r.account, r.addr, since).
		Scan(&byAccount, &oldestAccount, &byAddr, &oldestAddr)
	if err != nil {
		return fmt.Errorf("read reset_requests: %w", err)
	}
	switch {
	case byAddr >= s.cfg.ResetMaxPerAddress:
		return s.limitHeld(now, oldestAddr.Time, s.cfg.ResetWindow, "this address asked for too many password resets")
	case byAccount >= s.cfg.ResetMaxPerAccount:
		return s.limitHeld(now, oldestAccount.Time, s.cfg.ResetWindow, "too many password resets were asked for this account")
	}
	if _, err := tx.Exec(ctx, `DELETE FROM reset_requests WHERE requested_at <= $1 AND (account = $2 OR client_addr = $3)`, since, r.account, r.addr); err != nil {
		return fmt.Errorf("delete from reset_requests: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO reset_requests (account, client_addr, requested_at) VALUES ($1, $2, $3)`, r.account, r.addr, now); err != nil {
		return fmt.Errorf("insert into reset_requests: %w", err)
	}
	return nil
}

// storeReset stores, in tx, a reset link of hash for the member r names,
// if there is one with an address and fewer than ResetMaxPerAccount links
// within ResetWindow, and returns their user id (empty when none).
func (s *Service) storeReset(ctx context.Context, tx db.Querier, r resetAsk, hash string, now time.Time) (string, error) {
	since := now.Add(-s.cfg.ResetWindow)
	if _, err := tx.Exec(ctx, `DELETE FROM password_resets WHERE expires_at <= $1`, since); err != nil {
		return "", fmt.Errorf("delete from password_resets: %w", err)
	}
	// One statement stores the link or nothing, so that an account that
	// does not exist costs the same as one that does.
	var userID string
	err := tx.QueryRow(ctx, `INSERT INTO password_resets (token_hash, org_id, user_id, created_at, expires_at)
		SELECT $1, u.org_id, u.id, $2, $3 FROM users u
		WHERE u.org_id = $4 AND (u.id = $5 OR u.email = $6) AND u.removed_at IS NULL AND u.email IS NOT NULL
		  AND (SELECT COUNT(*) FROM password_resets r WHERE r.org_id = u.org_id AND r.user_id = u.id AND r.created_at > $7) < $8
		RETURNING user_id`,
		hash, now, now.Add(ResetTTL), r.orgID, r.userID, r.email, since, s.cfg.ResetMaxPerAccount).Scan(&userID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("insert into password_resets: %w", err)
	}
	return userID, nil
}

// ParseAccount reads the account a "forgot password" request names: an
// org id, and who, a user id or (when it has an @) an email address.
//
// Returns EInvalid when either is malformed.
func ParseAccount(orgID, who string) (org, userID, email string, err error) {
	if org, err = ctalk.ParseID("org_id", orgID); err != nil {
		return "", "", "", err
	}
	if strings.Contains(who, "@") {
		email, err = ctalk.ParseEmail("email", who)
	} else {
		userID, err = ctalk.ParseID("user_id", who)
	}
	return org, userID, email, err
}

// limitHeld is the error of a request refused by a limit of requests within
// window until the request at oldest leaves it.
func (s *Service) limitHeld(now, oldest time.Time, window time.Duration, why string) error {
	retry := oldest.Add(window)
	wait := max(retry.Sub(now).Round(time.Second), time.Second)
	return &ctalk.Error{
		Code:       ctalk.ERateLimited,
		Message:    fmt.Sprintf("%s; try again after %s (in %s)", why, retry.UTC().Format(time.RFC3339), wait),
		RetryAfter: wait,
	}
}

func deadReset() error {
	return deadLink("password reset", `ask for a new one with "Forgot password?" on the sign-in page`)
}

// ResetByLink returns the member whose live reset link token is raw, for
// the page where they choose their new password.
//
// Returns ENotFound for a link that does not work.
func (s *Service) ResetByLink(ctx context.Context, raw string) (orgID, userID string, err error) {
	// A secret found by its hash names the org it belongs to.
	ctx = ctalk.AsOperator(ctx, "password reset link lookup by hash")
	if !WellFormed(raw) {
		return "", "", deadReset()
	}
	err = s.db.QueryRow(ctx, `SELECT r.org_id, r.user_id FROM password_resets r JOIN users u ON u.org_id = r.org_id AND u.id = r.user_id
		WHERE r.token_hash = $1 AND r.expires_at > $2 AND u.removed_at IS NULL`, HashToken(raw), s.db.Now()).Scan(&orgID, &userID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", deadReset()
	}
	if err != nil {
		return "", "", fmt.Errorf("read password_resets: %w", err)
	}
	return orgID, userID, nil
}

// UseReset sets the password next through the reset link token raw, which
// then stops working with every other link of that member, and ends every
// session and token of theirs, as ResetPassword does. It returns the member
// as a Session without a credential, for the caller to start a browser
// session for them.
//
// Returns EInvalid for a password that breaks the length rules, ENotFound
// for a link that does not work.
func (s *Service) UseReset(ctx context.Context, raw, next string) (sess *Session, revoked int, err error) {
	// A secret found by its hash names the org it belongs to.
	ctx = ctalk.AsOperator(ctx, "password reset by link")
	hash, err := s.HashPassword("new_password", next, MinUserPasswordLen)
	if err != nil {
		return nil, 0, err
	}
	if !WellFormed(raw) {
		return nil, 0, deadReset()
	}
	sess = &Session{}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		err := tx.QueryRow(ctx, `DELETE FROM password_resets WHERE token_hash = $1 AND expires_at > $2 RETURNING org_id, user_id`, HashToken(raw), now).
			Scan(&sess.OrgID, &sess.UserID)
		if errors.Is(err, sql.ErrNoRows) {
			return deadReset()
		}
		if err != nil {
			return fmt.Errorf("delete from password_resets: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM password_resets WHERE org_id = $1 AND user_id = $2`, sess.OrgID, sess.UserID); err != nil {
			return fmt.Errorf("delete from password_resets: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT role FROM users WHERE org_id = $1 AND id = $2 AND removed_at IS NULL`, sess.OrgID, sess.UserID).Scan(&sess.Role); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return deadReset()
			}
			return fmt.Errorf("read users: %w", err)
		}
		revoked, err = setPasswordRevoking(ctx, tx, sess.OrgID, sess.UserID, hash, now)
		if ctalk.ErrorCode(err) == ctalk.ENotFound {
			return deadReset()
		}
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	s.Revoked(ctx, sess.OrgID, sess.UserID)
	return sess, revoked, nil
}
