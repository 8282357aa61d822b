package auth

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"net/netip"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

type clientAddrKey struct{}

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

// reserveAttempt counts one password check on account from addr before the
// check runs, and refuses it when the account has failed MaxFailures times
// from addr, or AccountMaxFailures times from all addresses, within
// FailureWindow. The count and the new row are one transaction that attempts
// on the same account run one at a time (SQLite has a single writer;
// Postgres takes an advisory lock per account), so concurrent attempts see
// each other and no more checks run than the limits allow. A successful
// check removes the row again (clearAttempts); a failed one leaves it.
//
// Returns ERateLimited.
func (s *Service) reserveAttempt(ctx context.Context, orgID, account, addr string) error {
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		now := s.db.Now()
		if s.db.Engine == db.Postgres {
			h := fnv.New32a()
			h.Write([]byte(orgID + "\x00" + account))
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(attemptLockClass), int32(h.Sum32())); err != nil {
				return fmt.Errorf("take advisory lock: %w", err)
			}
		}
		var (
			total, fromAddr        int
			oldest, oldestFromAddr sql.NullTime
		)
		err := tx.QueryRow(ctx, `
			SELECT COUNT(*), MIN(failed_at),
			       COUNT(CASE WHEN client_addr = $4 THEN 1 END), MIN(CASE WHEN client_addr = $4 THEN failed_at END)
			FROM login_failures WHERE org_id = $1 AND user_id = $2 AND failed_at > $3`,
			orgID, account, now.Add(-s.cfg.FailureWindow), addr).
			Scan(&total, (*db.NullTime)(&oldest), &fromAddr, (*db.NullTime)(&oldestFromAddr))
		if err != nil {
			return fmt.Errorf("read login_failures: %w", err)
		}
		switch {
		case fromAddr >= s.cfg.MaxFailures:
			return s.held(now, oldestFromAddr.Time, "this account failed too often from your address")
		case total >= s.cfg.AccountMaxFailures:
			return s.held(now, oldest.Time, "this account failed too often from many addresses; its org admin can see the attempts in get_audit_log")
		}
		if _, err := tx.Exec(ctx, `DELETE FROM login_failures WHERE org_id = $1 AND user_id = $2 AND failed_at <= $3`, orgID, account, now.Add(-s.cfg.FailureWindow)); err != nil {
			return fmt.Errorf("delete from login_failures: %w", err)
		}
		_, err = tx.Exec(ctx, `INSERT INTO login_failures (org_id, user_id, client_addr, failed_at) VALUES ($1, $2, $3, $4)`, orgID, account, addr, now)
		if err != nil {
			return fmt.Errorf("insert into login_failures: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.pruneAttempts(ctx)
	return nil
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

// clearAttempts forgets the attempts on account from addr after a
// successful check, the one just reserved among them. Failures from other
// addresses stay counted, so that the owner's login does not reset a
// distributed guesser's count.
func clearAttempts(ctx context.Context, tx db.Querier, orgID, account, addr string) error {
	_, err := tx.Exec(ctx, `DELETE FROM login_failures WHERE org_id = $1 AND user_id = $2 AND client_addr = $3`, orgID, account, addr)
	if err != nil {
		return fmt.Errorf("delete from login_failures: %w", err)
	}
	return nil
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
