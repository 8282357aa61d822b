package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ctalk/ctalk/db"
)

// DeviceCookieTTL is how long a device cookie vouches for its browser.
const DeviceCookieTTL = 90 * 24 * time.Hour

// devicePrefix starts the throttle key of a device cookie's password
// checks (login_failures.client_addr), which no client address can.
const devicePrefix = "device:"

// deviceCookiePrefix starts a device cookie's value.
const deviceCookiePrefix = "ctalkdev_"

// SignInOnDevice is SignIn from a browser that sent device, the device
// cookie it holds ("" for none). A device cookie is OWASP's answer to
// guessing that locks an account: a browser where the person signed in
// before keeps a failure budget of its own, which the account's lock (the
// failures from every address) does not hold back, so that its owner gets
// in while a stranger's guesses stay bounded. After a sign-in on a browser
// whose cookie does not name this account, it returns a new cookie as
// newDevice, for the caller to set; else newDevice is "".
//
// Returns the errors of CheckPassword, and the refusal of the SignInGate
// (DoorWeb).
func (s *Service) SignInOnDevice(ctx context.Context, orgID, userID, password, clientIP, device string) (raw string, sess *Session, newDevice string, err error) {
	if sess, err = s.checkPasswordOn(ctx, orgID, userID, password, clientIP, device); err != nil {
		return "", nil, "", err
	}
	// After the password, so that a wrong one answers alike for everyone
	// and the refusal tells no stranger who is an admin.
	if err := s.admit(ctx, sess.OrgID, sess.UserID, DoorWeb); err != nil {
		return "", nil, "", err
	}
	if raw, err = s.StartWebSession(ctx, sess); err != nil {
		return "", nil, "", err
	}
	if _, trusted, err := s.deviceKey(ctx, sess.OrgID, sess.UserID, device); err == nil && !trusted {
		newDevice, err = s.IssueDevice(ctx, sess.OrgID, sess.UserID)
		if err != nil {
			return "", nil, "", err
		}
	}
	return raw, sess, newDevice, nil
}

// IssueDevice stores a new device cookie for orgID/userID, whose browser
// just proved who they are, and returns its value (stored only as its
// hash).
//
// Returns only the database's errors.
func (s *Service) IssueDevice(ctx context.Context, orgID, userID string) (string, error) {
	raw, _ := NewToken()
	raw = deviceCookiePrefix + raw[len(TokenPrefix):]
	hash := HashToken(raw)
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		if _, err := tx.Exec(ctx, `DELETE FROM device_cookies WHERE org_id = $1 AND user_id = $2 AND expires_at <= $3`, orgID, userID, now); err != nil {
			return fmt.Errorf("delete from device_cookies: %w", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO device_cookies (hash, org_id, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
			hash, orgID, userID, now, now.Add(DeviceCookieTTL))
		if err != nil {
			return fmt.Errorf("insert into device_cookies: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return raw, nil
}

// deviceKey reports whether device is a live device cookie of
// orgID/userID, and its throttle key.
func (s *Service) deviceKey(ctx context.Context, orgID, userID, device string) (string, bool, error) {
	if len(device) != tokenLen-len(TokenPrefix)+len(deviceCookiePrefix) || device[:len(deviceCookiePrefix)] != deviceCookiePrefix {
		return "", false, nil
	}
	hash := HashToken(device)
	var n int
	err := s.db.QueryRow(ctx, `SELECT 1 FROM device_cookies WHERE hash = $1 AND org_id = $2 AND user_id = $3 AND expires_at > $4`,
		hash, orgID, userID, s.db.Now()).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read device_cookies: %w", err)
	}
	return devicePrefix + hash[:16], true, nil
}
