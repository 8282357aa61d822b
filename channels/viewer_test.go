package channels

import (
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/wait"
)

// TestLocate: a member finds a message of the channel by its id; a message
// of another channel, a made-up id, a non-member and another org find
// nothing.
func TestLocate(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		must(s.Create(ctx, alice, NewChannel{Name: "dev", Members: []string{"bob"}}))
		must(s.Create(ctx, alice, NewChannel{Name: "ops"}))
		must(s.Post(ctx, alice, Post{Channel: "dev", Text: "one"}))
		two := must(s.Post(ctx, bob, Post{Channel: "dev", Text: "two"}))
		other := must(s.Post(ctx, alice, Post{Channel: "ops", Text: "elsewhere"}))

		if seq := must(s.Locate(ctx, bob, "#dev", two.ID)); seq != 2 {
			t.Fatalf("bob located %s at %d, want 2", two.ID, seq)
		}
		for _, tc := range []struct {
			name    string
			who     ctalk.Caller
			channel string
			id      string
			want    ctalk.Code
		}{
			{"another channel's message", bob, "dev", other.ID, ctalk.ENotFound},
			{"made-up id", bob, "dev", "m_000000000000000000000000", ctalk.ENotFound},
			{"not an id", bob, "dev", "../etc", ctalk.ENotFound},
			{"not a member", carol, "dev", two.ID, ctalk.EForbidden},
			{"another org", mallory, "dev", two.ID, ctalk.ENotFound},
			{"bad channel name", bob, "no such!", two.ID, ctalk.EInvalid},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := s.Locate(ctx, tc.who, tc.channel, tc.id)
				wantCode(t, err, tc.want)
			})
		}
	})
}

// TestWatchPosts: a watch of a channel is woken by a post to it, not by a
// post to another channel or to the same name in another org, and it does
// not count as an agent waiting.
func TestWatchPosts(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		broker := wait.NewBroker()
		s := fixture(t, d)
		s.waker = broker
		must(s.Create(ctx, alice, NewChannel{Name: "dev"}))
		must(s.Create(ctx, alice, NewChannel{Name: "ops"}))
		must(s.Create(ctx, mallory, NewChannel{Name: "dev"}))
		wake, stop, err := s.WatchPosts(bob, "#Dev")
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		if n := broker.Waiting(); n != 0 {
			t.Fatalf("a watch counts as %d agents waiting, want 0", n)
		}
		if _, _, err := s.WatchPosts(bob, "no such!"); ctalk.ErrorCode(err) != ctalk.EInvalid {
			t.Fatalf("a bad name: %v, want invalid", err)
		}
		must(s.Post(ctx, alice, Post{Channel: "ops", Text: "elsewhere"}))
		must(s.Post(ctx, mallory, Post{Channel: "dev", Text: "another org"}))
		select {
		case <-wake:
			t.Fatal("woken by a post to another channel")
		default:
		}
		must(s.Post(ctx, alice, Post{Channel: "dev", Text: "here"}))
		select {
		case <-wake:
		case <-time.After(10 * time.Second):
			t.Fatal("not woken by a post to the channel")
		}
	})
}

// TestMarkRead: a member's cursor moves forward to a message, never back
// and never past the newest; others cannot move it.
func TestMarkRead(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		must(s.Create(ctx, alice, NewChannel{Name: "dev", Members: []string{"bob"}}))
		for range 3 {
			must(s.Post(ctx, alice, Post{Channel: "dev", Text: "x"}))
		}
		unread := func() int64 { return must(s.Channel(ctx, bob, "dev")).UnreadCount }
		p := must(s.Messages(ctx, bob, "dev", Read{Latest: 3, Peek: true}))
		if len(p.Messages) != 3 || unread() != 3 {
			t.Fatalf("a peek read %d messages and left %d unread, want 3 and 3", len(p.Messages), unread())
		}
		if err := s.MarkRead(ctx, bob, "dev", 2); err != nil || unread() != 1 {
			t.Fatalf("marked read to 2: %v, %d unread, want 1", err, unread())
		}
		if err := s.MarkRead(ctx, bob, "dev", 1); err != nil || unread() != 1 {
			t.Fatalf("marked read back to 1: %v, %d unread, want still 1", err, unread())
		}
		if err := s.MarkRead(ctx, bob, "dev", 99); err != nil || unread() != 1 {
			t.Fatalf("marked read past the newest: %v, %d unread, want still 1", err, unread())
		}
		wantCode(t, s.MarkRead(ctx, bob, "dev", -1), ctalk.EInvalid)
		wantCode(t, s.MarkRead(ctx, carol, "dev", 3), ctalk.EForbidden)
		wantCode(t, s.MarkRead(ctx, mallory, "dev", 3), ctalk.ENotFound)
		if err := s.MarkRead(ctx, bob, "#dev", 3); err != nil || unread() != 0 {
			t.Fatalf("marked read to the newest: %v, %d unread, want 0", err, unread())
		}
	})
}
