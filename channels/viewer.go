package channels

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// WatchPosts returns a channel that receives a wake-up whenever a message is
// posted to channel name of the caller's org, on this replica or another,
// until stop is called: for a listener that is not an agent waiting (an open
// web page), so that it is not counted as one. A wake-up carries nothing;
// the listener reads what is new with Messages, which checks membership.
//
// Returns EInvalid.
func (s *Service) WatchPosts(c ctalk.Caller, name string) (wake <-chan struct{}, stop func(), err error) {
	if name, err = ParseName(name); err != nil {
		return nil, nil, err
	}
	wake, stop = s.waker.Watch(c.OrgID, channelKey(name))
	return wake, stop, nil
}

// Locate returns the sequence number of message id in channel name, which
// the caller is a member of: where a page showing the message starts.
//
// Returns EInvalid, ENotFound (the channel, or the message in it),
// EForbidden (not a member).
func (s *Service) Locate(ctx context.Context, c ctalk.Caller, name, id string) (int64, error) {
	ch, err := memberChannel(ctx, s.db, c, name)
	if err != nil {
		return 0, err
	}
	if !validMessageID(id) {
		return 0, notFoundMessage(id, ch.Name)
	}
	var seq int64
	err = s.db.QueryRow(ctx, replyTargetSQL, c.OrgID, ch.Name, id).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, notFoundMessage(id, ch.Name)
	}
	if err != nil {
		return 0, fmt.Errorf("locate message: %w", err)
	}
	return seq, nil
}

// MarkRead moves the caller's read cursor of a channel they are a member of
// forward to seq, never back and never past the newest message: for a
// reader that read messages with Read.Peek and has now shown them, such as
// an open web page.
//
// Returns EInvalid, ENotFound, EForbidden (not a member).
func (s *Service) MarkRead(ctx context.Context, c ctalk.Caller, name string, seq int64) error {
	if seq < 0 {
		return ctalk.Errorf(ctalk.EInvalid, "seq must be 0 or the seq of a message")
	}
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		ch, err := memberChannel(ctx, tx, c, name)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, markReadSQL, c.OrgID, ch.Name, c.UserID, seq)
		return err
	})
	if err != nil {
		return fmt.Errorf("mark read: %w", err)
	}
	return nil
}

func notFoundMessage(id, channel string) error {
	return ctalk.Errorf(ctalk.ENotFound, "message %q is not a message of #%s; get_messages shows its message ids", ctalk.Shorten(id, 80), channel)
}
