package channels

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// MaxSubscriptions bounds the channels one MCP session may follow.
const MaxSubscriptions = 100

// maxSessionIDLen bounds an MCP session id: the client sends it.
const maxSessionIDLen = 200

// subscriptionKey is the wake-up key of the watch of an MCP session, woken
// when its subscriptions change. No user id or channel key starts with '~'.
func subscriptionKey(sessionID string) string { return "~" + sessionID }

func checkSessionID(id string) error {
	if id == "" || len(id) > maxSessionIDLen {
		return ctalk.Errorf(ctalk.EInvalid, "subscriptions need an MCP session: initialize one first (the Mcp-Session-Id header)")
	}
	return nil
}

// Subscribe makes an MCP session of the caller follow a channel they are a
// member of, and wakes the session's watch on every replica.
//
// Returns EInvalid, ENotFound, EForbidden (not a member), ERateLimited (too
// many subscriptions).
func (s *Service) Subscribe(ctx context.Context, c ctalk.Caller, sessionID, name string) error {
	if err := checkSessionID(sessionID); err != nil {
		return err
	}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		ch, err := memberChannel(ctx, tx, c, name)
		if err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, countSubscriptionsSQL, c.OrgID, c.UserID, sessionID).Scan(&n); err != nil {
			return err
		}
		if n >= MaxSubscriptions {
			return ctalk.Errorf(ctalk.ERateLimited, "this session follows %d channels, the most it may; unsubscribe from one first", n)
		}
		_, err = tx.Exec(ctx, subscribeSQL, c.OrgID, c.UserID, sessionID, ch.Name, s.db.Now())
		return err
	})
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	s.waker.Wake(c.OrgID, subscriptionKey(sessionID))
	return nil
}

// Unsubscribe stops an MCP session of the caller following a channel.
// Unsubscribing from a channel not followed changes nothing.
//
// Returns EInvalid.
func (s *Service) Unsubscribe(ctx context.Context, c ctalk.Caller, sessionID, name string) error {
	if err := checkSessionID(sessionID); err != nil {
		return err
	}
	name, err := ParseName(name)
	if err != nil {
		return err
	}
	err = s.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, unsubscribeSQL, c.OrgID, c.UserID, sessionID, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("unsubscribe: %w", err)
	}
	s.waker.Wake(c.OrgID, subscriptionKey(sessionID))
	return nil
}

// ForgetSession drops every subscription of an MCP session that ended.
//
// Returns only the database's errors: a session with no subscriptions
// is not one.
func (s *Service) ForgetSession(ctx context.Context, c ctalk.Caller, sessionID string) error {
	err := s.db.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, forgetSessionSQL, c.OrgID, c.UserID, sessionID)
		return err
	})
	if err != nil {
		return fmt.Errorf("forget session subscriptions: %w", err)
	}
	s.waker.Wake(c.OrgID, subscriptionKey(sessionID))
	return nil
}

func (s *Service) subscriptions(ctx context.Context, c ctalk.Caller, sessionID string) ([]string, error) {
	rows, err := s.db.Query(ctx, subscriptionsSQL, c.OrgID, c.UserID, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, rows.Err()
}

// Watch calls updated with the name of each channel an MCP session of the
// caller follows when it gets a message, posted on any replica, until ctx
// ends. It follows the session's subscriptions as they change (also from
// other replicas), and drops a channel the caller leaves. Between wake-ups
// it holds no database connection.
//
// Returns EInvalid for a missing or overlong session id, and the
// database's errors; nil once ctx ends.
func (s *Service) Watch(ctx context.Context, c ctalk.Caller, sessionID string, updated func(channel string)) error {
	if err := checkSessionID(sessionID); err != nil {
		return err
	}
	changed, cancel := s.waker.Watch(c.OrgID, subscriptionKey(sessionID))
	defer cancel()
	// Leaving a channel wakes the caller's key; the subscription goes with
	// the membership.
	left, cancelLeft := s.waker.Watch(c.OrgID, c.UserID)
	defer cancelLeft()
	recheck := time.NewTicker(s.cfg.Recheck)
	defer recheck.Stop()
	posts := make(chan string, 64)
	following := map[string]func(){}
	defer func() {
		for _, stop := range following {
			stop()
		}
	}()
	for {
		names, err := s.subscriptions(ctx, c, sessionID)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, n := range names {
			if following[n] == nil {
				following[n] = s.forward(ctx, c.OrgID, n, posts)
			}
		}
		for n, stop := range following {
			if !slices.Contains(names, n) {
				stop()
				delete(following, n)
			}
		}
	sleep:
		for {
			select {
			case <-ctx.Done():
				return nil
			case n := <-posts:
				if following[n] != nil {
					updated(n)
				}
			case <-changed:
				break sleep
			case <-left:
				break sleep
			case <-recheck.C:
				break sleep
			}
		}
	}
}

// forward passes the wake-ups of a channel's posts to out until stopped.
func (s *Service) forward(ctx context.Context, orgID, name string, out chan<- string) (stop func()) {
	wake, cancel := s.waker.Watch(orgID, channelKey(name))
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-wake:
				select {
				case out <- name:
				case <-done:
					return
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		cancel()
	}
}
