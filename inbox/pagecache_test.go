package inbox_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/wait"
)

// seedOrg creates org with the given users.
func seedOrg(t *testing.T, d *db.DB, org string, users ...string) {
	t.Helper()
	now := d.Now()
	err := d.Tx(dbtest.Operator(), func(tx db.Querier) error {
		ctx := dbtest.Operator()
		if _, err := tx.Exec(ctx, `INSERT INTO orgs (id, name, admin_password_hash, created_at) VALUES ($1, $1, 'x', $2)`, org, now); err != nil {
			return err
		}
		for _, u := range users {
			if _, err := tx.Exec(ctx, `INSERT INTO users (org_id, id, name, password_hash, role, created_at, updated_at) VALUES ($1, $2, $2, 'x', 'member', $3, $3)`, org, u, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// cachedInbox reads user's first page of 10 three times, so that the last
// is served from the cache (the first hands the questions over, the second
// keeps the page), checks that the last cost no statement, and returns it.
func cachedInbox(t *testing.T, d *db.DB, s *inbox.Service, org, user string) []*inbox.InboxItem {
	t.Helper()
	var items []*inbox.InboxItem
	for i := range 3 {
		var err error
		n := dbtest.Statements(d, func() { items, _, err = s.Inbox(dbtest.Operator(), ctalk.Caller{OrgID: org, UserID: user}, 10, "") })
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 && n != 0 {
			t.Fatalf("a page read twice within the cache's lifetime cost %d statements the third time; want 0 (served from the cache)", n)
		}
	}
	return items
}

func pageService(d *db.DB, ttl time.Duration) *inbox.Service {
	cfg := inbox.DefaultConfig()
	cfg.AsksPerMinute, cfg.LoopMax, cfg.PageCacheTTL = 1<<30, 1<<30, ttl
	return inbox.NewService(d, cfg, wait.NewBroker())
}

// item returns the page's item of question id, or nil.
func item(items []*inbox.InboxItem, id string) *inbox.InboxItem {
	for _, it := range items {
		if it.ID == id {
			return it
		}
	}
	return nil
}

// TestPageCacheForgetsOnEveryChange checks that every change of what a
// cached page of check_inbox shows is on the very next page the same
// replica serves, although the page was cached (for an hour here, so that
// only the change can end it): each change in an org of its own, whose
// recipient a was asked q1 by b and q2 by c and has a draft on q2.
func TestPageCacheForgetsOnEveryChange(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := pageService(d, time.Hour)
		for i, c := range []struct {
			change string
			do     func(org, q1, q2 string) error
			want   func(items []*inbox.InboxItem, q1, q2 string) bool
		}{
			{"a question to a", func(org, _, _ string) error {
				_, err := s.Ask(ctx, ctalk.Caller{OrgID: org, UserID: "c"}, inbox.Ask{To: "a", Text: "another"})
				return err
			}, func(items []*inbox.InboxItem, _, _ string) bool { return len(items) == 3 }},
			{"a question from a (pair statistics)", func(org, _, _ string) error {
				_, err := s.Ask(ctx, ctalk.Caller{OrgID: org, UserID: "a"}, inbox.Ask{To: "b", Text: "mine"})
				return err
			}, func(items []*inbox.InboxItem, q1, _ string) bool { return item(items, q1).History.YouAsked == 1 }},
			{"propose_response", func(org, q1, _ string) error {
				_, _, err := s.Propose(ctx, ctalk.Caller{OrgID: org, UserID: "a"}, q1, "a draft")
				return err
			}, func(items []*inbox.InboxItem, q1, _ string) bool { return item(items, q1).LatestDraft != nil }},
			{"the person approves", func(org, _, q2 string) error {
				_, err := s.Approve(ctx, ctalk.Caller{OrgID: org, UserID: "a"}, q2, 1)
				return err
			}, func(items []*inbox.InboxItem, _, q2 string) bool { return len(items) == 1 && item(items, q2) == nil }},
			{"the person rejects", func(org, _, q2 string) error {
				_, err := s.Reject(ctx, ctalk.Caller{OrgID: org, UserID: "a"}, q2, 1, "shorter")
				return err
			}, func(items []*inbox.InboxItem, _, q2 string) bool { return item(items, q2).LatestDraft.Rejected }},
			{"the person edits", func(org, _, q2 string) error {
				_, err := s.Edit(ctx, ctalk.Caller{OrgID: org, UserID: "a"}, q2, 1, "their words")
				return err
			}, func(items []*inbox.InboxItem, _, q2 string) bool { return len(items) == 1 && item(items, q2) == nil }},
			{"send_response", func(org, _, q2 string) error {
				_, err := s.Send(ctx, ctalk.Caller{OrgID: org, UserID: "a"}, q2, "draft of q2")
				return err
			}, func(items []*inbox.InboxItem, _, q2 string) bool { return len(items) == 1 && item(items, q2) == nil }},
			{"decline_question", func(org, q1, _ string) error {
				_, err := s.Decline(ctx, ctalk.Caller{OrgID: org, UserID: "a"}, q1, "not mine")
				return err
			}, func(items []*inbox.InboxItem, q1, _ string) bool { return len(items) == 1 && item(items, q1) == nil }},
			{"withdraw", func(org, q1, _ string) error {
				_, err := s.Withdraw(ctx, ctalk.Caller{OrgID: org, UserID: "b"}, q1)
				return err
			}, func(items []*inbox.InboxItem, q1, _ string) bool { return len(items) == 1 && item(items, q1) == nil }},
			{"the person answers", func(org, q1, _ string) error {
				_, err := s.AnswerDirectly(ctx, ctalk.Caller{OrgID: org, UserID: "a"}, q1, "their answer")
				return err
			}, func(items []*inbox.InboxItem, q1, _ string) bool { return len(items) == 1 && item(items, q1) == nil }},
			{"a sender's notes (orgs announces it)", func(org, _, _ string) error {
				if _, err := dbtest.Exec(d, `UPDATE users SET notes = 'new notes' WHERE org_id = $1 AND id = 'b'`, org); err != nil {
					return err
				}
				s.MembersChanged(org, "b")
				return nil
			}, func(items []*inbox.InboxItem, q1, _ string) bool { return item(items, q1).Sender.Notes == "new notes" }},
		} {
			t.Run(c.change, func(t *testing.T) {
				org := fmt.Sprintf("o%d", i)
				seedOrg(t, d, org, "a", "b", "c")
				q1, err := s.Ask(ctx, ctalk.Caller{OrgID: org, UserID: "b"}, inbox.Ask{To: "a", Text: "q1"})
				if err != nil {
					t.Fatal(err)
				}
				q2, err := s.Ask(ctx, ctalk.Caller{OrgID: org, UserID: "c"}, inbox.Ask{To: "a", Text: "q2"})
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := s.Propose(ctx, ctalk.Caller{OrgID: org, UserID: "a"}, q2.ID, "draft of q2"); err != nil {
					t.Fatal(err)
				}
				if items := cachedInbox(t, d, s, org, "a"); c.want(items, q1.ID, q2.ID) {
					t.Fatalf("the page shows the change before it was made")
				}
				if err := c.do(org, q1.ID, q2.ID); err != nil {
					t.Fatal(err)
				}
				items, _, err := s.Inbox(ctx, ctalk.Caller{OrgID: org, UserID: "a"}, 10, "")
				if err != nil {
					t.Fatal(err)
				}
				if !c.want(items, q1.ID, q2.ID) {
					t.Errorf("the next page still shows the page from before the change")
				}
			})
		}
	})
}

// TestPageCacheKeys checks that cached pages are kept apart by org, user,
// limit and cursor: the same user id in two orgs, and two users of one org.
func TestPageCacheKeys(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := pageService(d, time.Hour)
		for _, org := range []string{"acme", "beta"} {
			seedOrg(t, d, org, "a", "b")
			for i := range 2 {
				if _, err := s.Ask(ctx, ctalk.Caller{OrgID: org, UserID: "b"}, inbox.Ask{To: "a", Text: fmt.Sprintf("question %d in %s", i, org)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, org := range []string{"acme", "beta"} {
			items := cachedInbox(t, d, s, org, "a")
			if len(items) != 2 || items[0].Text != "question 0 in "+org {
				t.Errorf("page of a in %s: %d items, the first %q", org, len(items), items[0].Text)
			}
			if items, _, err := s.Inbox(ctx, ctalk.Caller{OrgID: org, UserID: "b"}, 10, ""); err != nil || len(items) != 0 {
				t.Errorf("page of b in %s: %d items, %v; want none", org, len(items), err)
			}
		}
		first, next, err := s.Inbox(ctx, acme("a"), 1, "")
		if err != nil || len(first) != 1 || first[0].Text != "question 0 in acme" {
			t.Fatalf("first page of 1: %v, %v", first, err)
		}
		second, _, err := s.Inbox(ctx, acme("a"), 1, next)
		if err != nil || len(second) != 1 || second[0].Text != "question 1 in acme" {
			t.Fatalf("second page of 1: %v, %v", second, err)
		}
	})
}

// TestPageCacheRacingChanges checks that a page read while a change
// commits is never served after the change: readers keep reading a's page
// while drafts are proposed one after another, and after each proposal
// returns, the next page shows it (or a later one).
func TestPageCacheRacingChanges(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := pageService(d, time.Hour)
		seedOrg(t, d, "acme", "a", "b")
		q, err := s.Ask(ctx, acme("b"), inbox.Ask{To: "a", Text: "q"})
		if err != nil {
			t.Fatal(err)
		}
		cachedInbox(t, d, s, "acme", "a")
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, _, err := s.Inbox(ctx, acme("a"), 10, ""); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		for v := 1; v <= 30; v++ {
			if _, _, err := s.Propose(ctx, acme("a"), q.ID, fmt.Sprintf("draft %d", v)); err != nil {
				t.Fatal(err)
			}
			items, _, err := s.Inbox(ctx, acme("a"), 10, "")
			if err != nil {
				t.Fatal(err)
			}
			if d := items[0].LatestDraft; d == nil || d.Version < v {
				t.Fatalf("after draft %d was proposed, the page shows %+v", v, d)
			}
		}
		close(stop)
		wg.Wait()
	})
}

// TestPageCacheOtherReplicas checks, on Postgres, that a change on one
// replica reaches another's cached page through the wake-up the change
// sends (the page is cached for an hour there, so that only the wake-up
// can end it), and that without it, the page ends when the cache's
// lifetime does, by the database's clock.
func TestPageCacheOtherReplicas(t *testing.T) {
	t.Parallel()
	d := dbtest.Open(t, db.Postgres)
	ctx, cancel := context.WithCancel(dbtest.Operator())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	a := pageService(d, time.Hour)
	go a.Broker().Publish(ctx, d, log)
	b := pageService(d, time.Hour)
	go b.Broker().Listen(ctx, d, log)
	seedOrg(t, d, "acme", "a", "b")
	q, err := a.Ask(ctx, acme("b"), inbox.Ask{To: "a", Text: "q"})
	if err != nil {
		t.Fatal(err)
	}
	// Until b's listener has connected, wake-ups are lost: wait for one.
	heard, stopWatch := b.Broker().Watch("acme", "probe")
	for connected := false; !connected; {
		a.Broker().Wake("acme", "probe")
		select {
		case <-heard:
			connected = true
		case <-time.After(50 * time.Millisecond):
		}
	}
	stopWatch()

	cachedInbox(t, d, b, "acme", "a")
	// The wake-ups of channels (a post to a channel's waiters, a change of
	// an MCP session's subscriptions) change nothing a page shows: the page
	// stays cached.
	for _, key := range []string{"#eng", "~session"} {
		heard, stopHeard := b.Broker().Watch("acme", key)
		a.Broker().Wake("acme", key)
		select {
		case <-heard:
		case <-time.After(10 * time.Second):
			t.Fatalf("the wake-up of %s did not reach the other replica", key)
		}
		stopHeard()
	}
	if n := dbtest.Statements(d, func() {
		if _, _, err := b.Inbox(ctx, acme("a"), 10, ""); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("after channels' wake-ups the page cost %d statements; want 0 (still cached)", n)
	}
	if _, _, err := a.Propose(ctx, acme("a"), q.ID, "a draft"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		items, _, err := b.Inbox(ctx, acme("a"), 10, "")
		if err != nil {
			t.Fatal(err)
		}
		if items[0].LatestDraft != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other replica still serves the page from before the change 10 s after it")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A replica that hears nothing: its page ends with the lifetime, which
	// the database's clock (moved here) bounds too.
	c := pageService(d, time.Hour)
	var mu sync.Mutex
	now := time.Now().UTC()
	d.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cachedInbox(t, d, c, "acme", "a")
	if _, _, err := a.Propose(ctx, acme("a"), q.ID, "another draft"); err != nil {
		t.Fatal(err)
	}
	if items, _, _ := c.Inbox(ctx, acme("a"), 10, ""); items[0].LatestDraft.Version != 1 {
		t.Fatalf("a replica that heard nothing read the page again before its lifetime ended; the test proves nothing")
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	if items, _, _ := c.Inbox(ctx, acme("a"), 10, ""); items[0].LatestDraft.Version != 2 {
		t.Errorf("a replica that heard nothing still serves the page after its lifetime: version %d", items[0].LatestDraft.Version)
	}
}

// TestPageCacheCursorKeys checks that a cursor whose time lies 2^64 ns
// after the first page's position (where UnixNano wraps around to the same
// number) names a page of its own, not the cached first page.
func TestPageCacheCursorKeys(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := pageService(d, time.Hour)
		seedOrg(t, d, "acme", "a", "b")
		if _, err := s.Ask(ctx, acme("b"), inbox.Ask{To: "a", Text: "q"}); err != nil {
			t.Fatal(err)
		}
		cachedInbox(t, d, s, "acme", "a")
		far := time.Unix(0, 0).Add(time.Duration(1<<63 - 1)).Add(time.Duration(1<<63 - 1)).Add(2).UTC()
		cursor := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"t":%q,"i":""}`, far.Format(time.RFC3339Nano)))
		items, _, err := s.Inbox(ctx, acme("a"), 10, cursor)
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 0 {
			t.Errorf("the page after %s holds %d questions; want none (it was served the first page)", far, len(items))
		}
	})
}
