package inbox

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/readcache"
)

// Inbox returns the caller's pending questions, oldest first, a page at a
// time, and marks them handed to the caller. cursor is the NextCursor of the
// previous page, or empty. A page whose questions were all handed over
// already may be served as this replica read it up to Config.PageCacheTTL
// before (see DefaultPageCacheTTL); its items are then shared with other
// calls, and the caller must not change them.
//
// Returns EInvalid for a cursor this server did not issue.
func (s *Service) Inbox(ctx context.Context, c ctalk.Caller, limit int, cursor string) (items []*InboxItem, next string, err error) {
	after, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	key := pageKey{orgID: c.OrgID, userID: c.UserID, limit: limit, afterSec: after.At.Unix(), afterNsec: after.At.Nanosecond(), afterID: after.ID}
	var read readcache.Read
	if s.pageCache != nil {
		now := s.db.Now()
		if p, ok := s.pageCache.Get(key, now); ok {
			return p.items, p.next, nil
		}
		// Before the first statement: a change forgotten from here on keeps
		// this read's page out of the cache.
		read = s.pageCache.Begin(now)
	}
	// A page whose questions were all handed over already, as on every
	// check of an inbox after the first, needs no write, and on SQLite no
	// turn in the writer queue. Handing over is never undone, so a page
	// found all handed stays so, and only such a page is kept.
	qs, next, unhanded, err := readInboxPage(ctx, s.db, c.OrgID, c.UserID, limit, after)
	if err != nil {
		return nil, "", err
	}
	if !unhanded {
		if items, err = s.withHistory(ctx, s.db, c.OrgID, c.UserID, qs); err != nil {
			return nil, "", err
		}
		if s.pageCache != nil {
			s.pageCache.Put(key, cachedPage{orgID: c.OrgID, userID: c.UserID, items: items, next: next}, read, time.Time{})
		}
		return items, next, nil
	}
	err = s.db.Tx(ctx, func(tx db.Querier) error {
		qs, next, _, err = readInboxPage(ctx, tx, c.OrgID, c.UserID, limit, after)
		if err != nil {
			return err
		}
		if items, err = s.withHistory(ctx, tx, c.OrgID, c.UserID, qs); err != nil {
			return err
		}
		return markHanded(ctx, tx, c.OrgID, "recipient_handed_at", ids(qs), s.db.Now())
	})
	return items, next, err
}

// readInboxPage reads a page of check_inbox after a position, with the
// cursor of the next page (empty on the last), and whether a question on it
// was not yet handed over.
func readInboxPage(ctx context.Context, r db.Reader, orgID, userID string, limit int, after pageCursor) (qs []*Question, next string, unhanded bool, err error) {
	rows, err := r.Query(ctx, checkInboxPageSQL, orgID, userID, after.At, after.ID, limit+1)
	if err != nil {
		return nil, "", false, fmt.Errorf("read inbox page: %w", err)
	}
	defer rows.Close()
	qs = make([]*Question, 0, limit+1)
	for rows.Next() {
		var notHanded bool
		q, err := scanQuestion(rows, &notHanded)
		if err != nil {
			return nil, "", false, fmt.Errorf("read inbox page: %w", err)
		}
		if len(qs) < limit {
			unhanded = unhanded || notHanded
		}
		qs = append(qs, q)
	}
	if err := rows.Err(); err != nil {
		return nil, "", false, fmt.Errorf("read inbox page: %w", err)
	}
	if len(qs) > limit {
		qs = qs[:limit]
		last := qs[len(qs)-1]
		next = encodeCursor(pageCursor{At: last.CreatedAt, ID: last.ID})
	}
	return qs, next, unhanded, nil
}

// pageCursor is the position after the last question of a page.
type pageCursor struct {
	At time.Time `json:"t"`
	ID string    `json:"i"`
}

func encodeCursor(c pageCursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (pageCursor, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return pageCursor{At: time.Unix(0, 0).UTC()}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c pageCursor
	// An offset can carry a time outside years 1 to 9999 once in UTC, where
	// no question is stamped and encodeCursor cannot write it back; no id
	// holds a NUL, which Postgres cannot compare.
	if err != nil || json.Unmarshal(b, &c) != nil || c.At.IsZero() || c.At.UTC().Year() < 1 || c.At.UTC().Year() > 9999 || strings.ContainsRune(c.ID, 0) {
		return c, ctalk.Errorf(ctalk.EInvalid, "cursor is not one this server issued; pass the next_cursor of the previous result of the same tool, or omit it to start from the oldest")
	}
	c.At = c.At.UTC()
	return c, nil
}
