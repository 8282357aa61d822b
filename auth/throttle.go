package auth

import (
	"context"
	"database/sql"
	"fmt"
	"net/netip"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

type clientAddrKey struct{}

type clientLabelKey struct{}

// WithClientLabel returns a context that carries the name a client gave
// itself (an MCP client's name and version), which Login keeps as the
// label of the token it issues, so that the person can tell their login
// tokens apart. The client chose it: it is shown to the person as text,
// never trusted.
func WithClientLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, clientLabelKey{}, label)
}

// clientLabel returns the client's name ctx carries, made one line of at
// most MaxLabelLen characters, or "".
func clientLabel(ctx context.Context) string {
	label, _ := ctx.Value(clientLabelKey{}).(string)
	label = strings.Join(strings.FieldsFunc(label, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError
	}), " ")
	if utf8.RuneCountInString(label) > MaxLabelLen {
		label = string([]rune(label)[:MaxLabelLen-1]) + "…"
	}
	return label
}

// WithClientAddr returns a context that carries the address of the client
// a request came from, for the per-address limits of the calls it makes.
func WithClientAddr(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientAddrKey{}, addr)
}

// ClientAddr returns the client address ctx carries, or "".
func ClientAddr(ctx context.Context) string {
	addr, _ := ctx.Value(clientAddrKey{}).(string)
	return addr
}

// addressKey is the client that the per-address limits count: the address
// itself for IPv4, and its /64 network for IPv6, since one subscriber is
// usually given a whole /64 and could otherwise try from each of its
// addresses in turn.
func addressKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	p, _ := ip.Prefix(64)
	return p.String()
}

// AllowSignup takes one call from the sign-up budget of the client address
// in ctx (see WithClientAddr). register_organization calls it before it
// checks a sign-up secret or hashes a password.
//
// Returns ERateLimited when the address has spent its budget.
func (s *Service) AllowSignup(ctx context.Context) error {
	return s.signups.allow("signup", addressKey(ClientAddr(ctx)))
}

// attemptLockClass is the first key of the Postgres advisory locks that
// serialize attempts per account ("ctlk"); the second is a hash of the
// account. The two-key form keeps them apart from single-key locks.
const attemptLockClass = 0x63746c6b

// Limits of the wait for password checks still running (see
// reserveAttempt): how often the count is read again, for how long at most,
// and when a check that never ended (its replica stopped) counts as failed.
const (
	checkPoll    = 20 * time.Millisecond
	checkWaitMax = 10 * time.Second
	checkStale   = time.Minute
)

// attempt is one password check on an account, counted from before it
// runs until it fails (it stays counted) or succeeds (it is forgotten).
type attempt struct {
	s                    *Service
	orgID, account, addr string
	id                   string
	succeeded            bool
	// device is set when the check comes from a browser holding a device
	// cookie of the account: addr is then the cookie's key (devicePrefix
	// and a part of its hash), its failures are its own budget, and the
	// account's lock does not hold it back.
	device bool
}

// reserveAttempt counts one password check on account from addr before the
// check runs, and refuses it when the account has failed MaxFailures times
// from addr, or AccountMaxFailures times from all addresses, within
// FailureWindow. The count and the new row are one transaction that attempts
// on the same account run one at a time (SQLite has a single writer;
// Postgres takes an advisory lock per account), so concurrent attempts see
// each other and no more checks run than the limits allow. A check still
// running is not a failure: when checks running would take the count to a
// limit that the failures alone do not reach, the attempt waits for them to
// end instead of being refused. The caller ends the attempt with end, after
// succeeded once the password matched.
//
// Returns ERateLimited.
func (s *Service) reserveAttempt(ctx context.Context, orgID, account, addr string, device bool) (*attempt, error) {
	a := &attempt{s: s, orgID: orgID, account: account, addr: addr, device: device}
	a.id, _ = NewToken()
	give := time.Now().Add(checkWaitMax)
	for {
		busy, err := a.reserve(ctx)
		if err != nil || !busy {
			if err == nil {
				s.pruneAttempts(ctx)
			}
			return a, err
		}
		if time.Now().After(give) {
			return nil, &ctalk.Error{Code: ctalk.ERateLimited, RetryAfter: time.Second,
				Message: "too many password checks of this account are running at once; retry in a second"}
		}
		select {
		case <-ctx.Done():
			return nil, ctalk.Errorf(ctalk.EUnavailable, "the password check was abandoned while others of this account ran: %v", ctx.Err())
		case <-time.After(checkPoll):
		}
	}
}

// reserve is one try of reserveAttempt: it stores the attempt, or reports
// busy when checks still running must end first.
func (a *attempt) reserve(ctx context.Context) (busy bool, err error) {
	s := a.s
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		if err := s.lockKey(ctx, tx, a.orgID+"\x00"+a.account); err != nil {
			return err
		}
		var (
			failed, fromAddr, running, runningFromAddr int
			oldest, oldestFromAddr                     sql.NullTime
		)
		// A row is a failure once its check ended wrong (no check id) or
		// was abandoned long ago; the others are checks still running.
		// Rows of device cookies (d) count only against their own device,
		// never towards the account's lock.
		err := tx.QueryRow(ctx, `
			SELECT COUNT(CASE WHEN f AND NOT d THEN 1 END), MIN(CASE WHEN f AND NOT d THEN failed_at END),
			       COUNT(CASE WHEN f AND a THEN 1 END), MIN(CASE WHEN f AND a THEN failed_at END),
			       COUNT(CASE WHEN NOT f AND NOT d THEN 1 END), COUNT(CASE WHEN a AND NOT f THEN 1 END)
			FROM (SELECT failed_at, (check_id IS NULL OR failed_at <= $5) AS f, client_addr = $4 AS a, client_addr LIKE $6 AS d
			      FROM login_failures WHERE org_id = $1 AND user_id = $2 AND failed_at > $3) x`,
			a.orgID, a.account, now.Add(-s.cfg.FailureWindow), a.addr, now.Add(-checkStale), devicePrefix+"%").
			Scan(&failed, (*db.NullTime)(&oldest), &fromAddr, (*db.NullTime)(&oldestFromAddr), &running, &runningFromAddr)
		if err != nil {
			return fmt.Errorf("read login_failures: %w", err)
		}
		switch {
		case fromAddr >= s.cfg.MaxFailures && a.device:
			return s.held(now, oldestFromAddr.Time, "this account failed too often from this browser")
		case fromAddr >= s.cfg.MaxFailures:
			return s.held(now, oldestFromAddr.Time, "this account failed too often from your address")
		case !a.device && failed >= s.cfg.AccountMaxFailures:
			return s.held(now, oldest.Time, "this account failed too often from many addresses; its org admin can see the attempts in get_audit_log. A browser where you signed in before is not held back, and a passkey always signs you in")
		case fromAddr+runningFromAddr >= s.cfg.MaxFailures || (!a.device && failed+running >= s.cfg.AccountMaxFailures):
			busy = true
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM login_failures WHERE org_id = $1 AND user_id = $2 AND failed_at <= $3`, a.orgID, a.account, now.Add(-s.cfg.FailureWindow)); err != nil {
			return fmt.Errorf("delete from login_failures: %w", err)
		}
		_, err = tx.Exec(ctx, `INSERT INTO login_failures (org_id, user_id, client_addr, failed_at, check_id) VALUES ($1, $2, $3, $4, $5)`, a.orgID, a.account, a.addr, now, a.id)
		if err != nil {
			return fmt.Errorf("insert into login_failures: %w", err)
		}
		return nil
	})
	return busy, err
}

// held is the error of an attempt refused until the failure at oldest leaves
// the window.
func (s *Service) held(now, oldest time.Time, why string) error {
	retry := oldest.Add(s.cfg.FailureWindow)
	wait := max(retry.Sub(now).Round(time.Second), time.Second)
	return &ctalk.Error{
		Code:       ctalk.ERateLimited,
		Message:    fmt.Sprintf("too many attempts, retry after %s (in %s): %s", retry.UTC().Format(time.RFC3339), wait, why),
		RetryAfter: wait,
	}
}

// clear forgets, inside tx, the failures on the account from the
// attempt's address after its successful check, and the attempt itself.
// Failures from other addresses stay counted, so that the owner's login
// does not reset a distributed guesser's count, and so do checks from the
// same address still running, which may yet fail. The caller passes tx's
// outcome to cleared.
func (a *attempt) clear(ctx context.Context, tx db.Querier) error {
	_, err := tx.Exec(ctx, `DELETE FROM login_failures WHERE org_id = $1 AND user_id = $2 AND client_addr = $3 AND (check_id IS NULL OR check_id = $4)`,
		a.orgID, a.account, a.addr, a.id)
	if err != nil {
		return fmt.Errorf("delete from login_failures: %w", err)
	}
	return nil
}

// cleared takes the outcome of the transaction that cleared the attempt:
// once it committed, end has nothing left to do. It returns err.
func (a *attempt) cleared(err error) error {
	if err == nil {
		a.succeeded = true
	}
	return err
}

// end records the attempt as a failure unless it cleared: a wrong password,
// and any other end of a check that did not succeed, counts. It runs even
// when the caller's context ended, so that a client that hangs up mid-check
// leaves a failure rather than a check that seems to run on.
func (a *attempt) end(ctx context.Context) {
	if a == nil || a.succeeded {
		return
	}
	ctx = context.WithoutCancel(ctx)
	// A failed write leaves the row as a running check, which counts as a
	// failure after checkStale.
	a.s.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, `UPDATE login_failures SET check_id = NULL WHERE check_id = $1`, a.id)
		return err
	})
}

// pruneAttempts deletes, at most once per window on this replica, the
// attempts of every account that have left the window, so that names tried
// once and never again do not accumulate.
func (s *Service) pruneAttempts(ctx context.Context) {
	now := s.db.Now()
	next := s.nextPrune.Load()
	if now.UnixNano() < next || !s.nextPrune.CompareAndSwap(next, now.Add(s.cfg.FailureWindow).UnixNano()) {
		return
	}
	// A failed prune is retried after the next window; the counts stay right.
	s.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, `DELETE FROM login_failures WHERE failed_at <= $1`, now.Add(-s.cfg.FailureWindow))
		if err != nil {
			return fmt.Errorf("delete from login_failures: %w", err)
		}
		return nil
	})
}
