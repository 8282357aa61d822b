package channels

import (
	"context"
	"errors"
	"slices"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/wait"
)

// MaxHanded is the most messages one call hands over, and maxPerChannel the
// most of one channel; the rest wait for the next call, so that a busy
// channel neither floods an agent's context nor starves the others.
const (
	MaxHanded     = 50
	maxPerChannel = 20
)

// Delivery is what Unread and Wait hand over.
type Delivery struct {
	Messages []*Message `json:"messages"`
	// UnreadLeft counts the caller's unread messages left after this call,
	// across the channels it covered.
	UnreadLeft int64 `json:"unread_left" jsonschema:"unread messages left after this call: call again to get them"`
}

// errClaimed says that another call moved a read cursor while this one was
// claiming: the claim starts over.
var errClaimed = errors.New("read cursor moved by a concurrent call")

// Unread hands over the caller's unread messages, in every channel they are
// a member of or only in channel name when it is not empty: oldest first in
// each channel, at most MaxHanded in all, and moves the read cursors past
// the messages handed over. The caller's own posts are never handed over:
// the cursors move past them too. Two concurrent calls of one user never
// hand over the same message.
//
// Returns EInvalid, ENotFound, EForbidden (not a member of name).
func (s *Service) Unread(ctx context.Context, c ctalk.Caller, name string) (*Delivery, error) {
	if name != "" {
		ch, err := memberChannel(ctx, s.db, c, name)
		if err != nil {
			return nil, err
		}
		name = ch.Name
	}
	return s.claim(ctx, c, name)
}

func (s *Service) claim(ctx context.Context, c ctalk.Caller, name string) (*Delivery, error) {
	if err := s.cursors.settle(ctx, c); err != nil {
		return nil, err
	}
	for range 10 {
		d := &Delivery{Messages: []*Message{}}
		err := s.db.Tx(ctx, func(tx db.Querier) error {
			if s.db.Engine == db.Postgres {
				rows, err := tx.Query(ctx, lockReadersPostgresSQL, c.OrgID, c.UserID, name)
				if err != nil {
					return err
				}
				for rows.Next() {
				}
				if err := rows.Err(); err != nil {
					return err
				}
			}
			byChannel, cursors, err := unread(ctx, tx, s.db.Engine, c, name)
			if err != nil {
				return err
			}
			d.Messages = merge(byChannel, MaxHanded)
			last := map[string]int64{}
			for _, m := range d.Messages {
				last[m.Channel] = m.Seq
			}
			// The caller's own posts are read past, never handed over: a
			// post made after an unread message leaves the cursor before
			// that message (see readOwnPostSQL), but is not unread itself.
			d.Messages = slices.DeleteFunc(d.Messages, func(m *Message) bool { return m.From == c.UserID })
			for ch, seq := range last {
				res, err := tx.Exec(ctx, claimReadSQL, c.OrgID, ch, c.UserID, cursors[ch], seq)
				if err != nil {
					return err
				}
				if n, _ := res.RowsAffected(); n == 0 {
					return errClaimed
				}
			}
			if name != "" {
				return tx.QueryRow(ctx, unreadCountSQL+` AND cm.channel = $3`, c.OrgID, c.UserID, name).Scan(&d.UnreadLeft)
			}
			return tx.QueryRow(ctx, unreadCountSQL, c.OrgID, c.UserID).Scan(&d.UnreadLeft)
		})
		if errors.Is(err, errClaimed) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	return nil, ctalk.Errorf(ctalk.EUnavailable, "other calls of yours kept reading the same channels; retry the call")
}

// unread reads the first maxPerChannel unread messages of each of the
// caller's channels (or of name), by channel in order, with the read
// cursor each started from.
func unread(ctx context.Context, q db.Reader, engine db.Engine, c ctalk.Caller, name string) (map[string][]*Message, map[string]int64, error) {
	query := unreadSQLiteSQL
	if engine == db.Postgres {
		query = unreadPostgresSQL
	}
	rows, err := q.Query(ctx, query, c.OrgID, c.UserID, maxPerChannel, name)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	byChannel, cursors := map[string][]*Message{}, map[string]int64{}
	for rows.Next() {
		var readSeq int64
		m, err := scanMessage(rows, c.UserID, &readSeq)
		if err != nil {
			return nil, nil, err
		}
		byChannel[m.Channel] = append(byChannel[m.Channel], m)
		cursors[m.Channel] = readSeq
	}
	return byChannel, cursors, rows.Err()
}

// merge takes at most n messages, oldest first, from lists that are each in
// order: always the head of one list, so that what is taken of each channel
// has no gap and its read cursor can move past all of it.
func merge(lists map[string][]*Message, n int) []*Message {
	out := []*Message{}
	for len(out) < n {
		var pick string
		for ch, l := range lists {
			if len(l) == 0 {
				continue
			}
			if pick == "" || earlier(l[0], lists[pick][0]) {
				pick = ch
			}
		}
		if pick == "" {
			break
		}
		out = append(out, lists[pick][0])
		lists[pick] = lists[pick][1:]
	}
	return out
}

func earlier(a, b *Message) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.Channel < b.Channel
}

// Wait hands over new messages, waiting up to opts.Timeout for one to
// arrive: in channel name, or in every channel of the caller when name is
// empty (including channels they join or are invited to while waiting).
// With after, it returns the messages of name after that sequence number, as
// Messages does; without, it hands over unread messages as Unread does. It
// moves the read cursors past what it returns, and holds no database
// connection while it waits.
//
// Returns EInvalid, ENotFound, EForbidden (not a member of name).
func (s *Service) Wait(ctx context.Context, c ctalk.Caller, name string, after *int64, opts wait.Options) (*Delivery, error) {
	if after != nil && name == "" {
		return nil, ctalk.Errorf(ctalk.EInvalid, "after needs a channel: give channel with it, or omit after to wait for unread messages in all your channels")
	}
	// The caller's own key, listened to before their channels are read,
	// wakes when their channels change.
	keys := wait.Keys{Fixed: []string{c.UserID}, More: func() ([]string, error) { return s.waitKeys(ctx, c) }}
	if name != "" {
		ch, err := memberChannel(ctx, s.db, c, name)
		if err != nil {
			return nil, err
		}
		name = ch.Name
		keys = wait.Key(channelKey(name))
	}
	opts.Recheck = s.cfg.Recheck
	var out *Delivery
	err := s.waker.For(ctx, c.OrgID, keys, opts, func() (bool, error) {
		if after == nil {
			var err error
			out, err = s.claim(ctx, c, name)
			return err == nil && len(out.Messages) > 0, err
		}
		msgs, err := s.newAfter(ctx, c, name, *after)
		if err != nil {
			return false, err
		}
		out = &Delivery{Messages: msgs}
		return len(msgs) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// waitKeys are the wake-up keys of the caller's channels, for a wait on
// all of them.
func (s *Service) waitKeys(ctx context.Context, c ctalk.Caller) ([]string, error) {
	rows, err := s.db.Query(ctx, myChannelsSQL, c.OrgID, c.UserID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		keys = append(keys, channelKey(name))
	}
	return keys, rows.Err()
}
