package channels

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/wait"
)

// humanMode sets the fixture org acme to hold agents' channel posts.
func humanMode(t testing.TB, d *db.DB) {
	t.Helper()
	if _, err := dbtest.Exec(d, `UPDATE orgs SET channel_post_mode = 'human' WHERE id = 'acme'`); err != nil {
		t.Fatal(err)
	}
}

// TestHeldPostIsSeenByNoOne: in human mode an agent's post is held, and
// nothing a member reads shows it (messages, unread, search, alerts, the
// channel's counts, a waiter), not even its own author's reads of the
// channel; only the author's list of held posts does.
func TestHeldPostIsSeenByNoOne(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		must(s.Create(ctx, alice, NewChannel{Name: "eng", Members: []string{"bob", "carol"}}))
		humanMode(t, d)
		got := must(s.AgentPost(ctx, bob, Post{Channel: "#eng", Text: "zebracorn @carol @channel", Priority: PriorityUrgent}))
		if got.Message != nil || got.Held == nil || got.Held.Status != PostPending || !strings.HasPrefix(got.Held.ID, "p_") {
			t.Fatalf("AgentPost in human mode = %+v, want a held post", got)
		}
		for _, c := range []ctalk.Caller{alice, bob, carol} {
			if p := must(s.Messages(ctx, c, "eng", Read{Limit: 10})); len(p.Messages) != 0 {
				t.Errorf("%s reads %d messages", c.UserID, len(p.Messages))
			}
			if u := must(s.Unread(ctx, c, "")); len(u.Messages) != 0 || u.UnreadLeft != 0 {
				t.Errorf("%s has unread %+v", c.UserID, u)
			}
			if ms := must(s.Search(ctx, c, Search{Query: "zebracorn", Limit: 10})); len(ms) != 0 {
				t.Errorf("%s finds %d messages", c.UserID, len(ms))
			}
			if as := must(s.Alerts(ctx, c)); len(as) != 0 {
				t.Errorf("%s has alerts %+v", c.UserID, as[0])
			}
			if ch := must(s.Channel(ctx, c, "eng")); ch.LastSeq != 0 || ch.UnreadCount != 0 {
				t.Errorf("%s sees #eng at seq %d, %d unread", c.UserID, ch.LastSeq, ch.UnreadCount)
			}
		}
		if w := must(s.Wait(ctx, carol, "eng", nil, wait.Options{Timeout: 50 * time.Millisecond})); len(w.Messages) != 0 {
			t.Errorf("a waiter got %+v", w.Messages[0])
		}
		for _, c := range []ctalk.Caller{alice, carol, mallory} {
			if held := must(s.HeldPosts(ctx, c)); len(held) != 0 {
				t.Errorf("%s lists %d held posts", c.UserID, len(held))
			}
		}
		if held := must(s.HeldPosts(ctx, bob)); len(held) != 1 || held[0].ID != got.Held.ID || held[0].Text != "zebracorn @carol @channel" {
			t.Fatalf("bob's held posts: %+v", held)
		}
		// In agent mode, the same call publishes at once.
		if _, err := dbtest.Exec(d, `UPDATE orgs SET channel_post_mode = 'agent' WHERE id = 'acme'`); err != nil {
			t.Fatal(err)
		}
		now := must(s.AgentPost(ctx, bob, Post{Channel: "eng", Text: "at once"}))
		if now.Held != nil || now.Message == nil || now.Message.Seq != 1 || !now.Message.ByAgent || now.Message.ApprovedByPerson {
			t.Fatalf("AgentPost in agent mode = %+v", now)
		}
	})
}

// TestApprovePublishesOnce: the author's approval publishes the held post
// as the agent wrote it, marked approved, with its mentions' alerts, and
// wakes a waiter; many approvals and rejections at once have one outcome.
func TestApprovePublishesOnce(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		must(s.Create(ctx, alice, NewChannel{Name: "eng", Members: []string{"bob", "carol"}}))
		humanMode(t, d)
		held := must(s.AgentPost(ctx, bob, Post{Channel: "eng", Text: "deploy done @carol", Type: "done"})).Held
		for _, c := range []ctalk.Caller{alice, carol, mallory} {
			_, err := s.ApprovePost(ctx, c, held.ID)
			wantCode(t, err, ctalk.ENotFound)
			_, err = s.RejectPost(ctx, c, held.ID, "no")
			wantCode(t, err, ctalk.ENotFound)
		}
		waited, finished := make(chan *Delivery, 1), make(chan struct{})
		wctx, cancel := context.WithCancel(ctx)
		t.Cleanup(func() { cancel(); <-finished })
		go func() {
			defer close(finished)
			d, err := s.Wait(wctx, carol, "eng", nil, wait.Options{Timeout: 30 * time.Second})
			if err != nil && wctx.Err() == nil {
				t.Error(err)
			}
			waited <- d
		}()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var published []*Message
		var rejected, conflicts int
		for i := range 8 {
			wg.Go(func() {
				var err error
				if i%4 == 3 {
					_, err = s.RejectPost(ctx, bob, held.ID, "no")
				} else {
					var m *Message
					m, err = s.ApprovePost(ctx, bob, held.ID)
					if err == nil {
						mu.Lock()
						published = append(published, m)
						mu.Unlock()
					}
				}
				mu.Lock()
				defer mu.Unlock()
				switch ctalk.ErrorCode(err) {
				case "":
					if i%4 == 3 {
						rejected++
					}
				case ctalk.EConflict:
					conflicts++
				default:
					t.Errorf("decision %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if len(published)+rejected != 1 || conflicts != 7 {
			t.Fatalf("%d published, %d rejected, %d refused: want one outcome", len(published), rejected, conflicts)
		}
		msgs := must(s.Messages(ctx, alice, "eng", Read{Limit: 10})).Messages
		if rejected == 1 {
			if len(msgs) != 0 {
				t.Fatalf("a rejected post is in the channel: %+v", msgs[0])
			}
			return
		}
		if len(msgs) != 1 {
			t.Fatalf("the channel has %d messages, want the approved post once", len(msgs))
		}
		m := msgs[0]
		if m.ID != published[0].ID || m.Text != "deploy done @carol" || m.Type != "done" || m.From != "bob" || !m.ByAgent || !m.ApprovedByPerson {
			t.Fatalf("published %+v", m)
		}
		if d := <-waited; len(d.Messages) != 1 || d.Messages[0].ID != m.ID {
			t.Fatalf("the waiter got %+v", d)
		}
		if as := must(s.Alerts(ctx, carol)); len(as) != 1 || as[0].Reason != AlertMention || as[0].MessageID != m.ID {
			t.Fatalf("carol's alerts %+v", as)
		}
		if held := must(s.HeldPosts(ctx, bob)); len(held) != 0 {
			t.Fatalf("still held: %+v", held[0])
		}
		as := must(s.Alerts(ctx, bob))
		if len(as) != 1 || as[0].Reason != AlertPostApproved || as[0].PostID != held.ID || as[0].MessageID != m.ID || as[0].Seq != m.Seq {
			t.Fatalf("bob's agent is told %+v", as)
		}
		if again := must(s.Alerts(ctx, bob)); len(again) != 0 {
			t.Fatalf("the decision is handed over twice: %+v", again[0])
		}
	})
}

// TestRejectAndEdit: a rejection publishes nothing and hands its note to
// the author's agent once; an edit publishes the person's text as theirs.
func TestRejectAndEdit(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		must(s.Create(ctx, alice, NewChannel{Name: "eng", Members: []string{"bob"}}))
		humanMode(t, d)
		first := must(s.AgentPost(ctx, bob, Post{Channel: "eng", Text: "we ship friday"})).Held
		second := must(s.AgentPost(ctx, bob, Post{Channel: "eng", Text: "all tests pass"})).Held
		third := must(s.AgentPost(ctx, bob, Post{Channel: "eng", Text: "same text"})).Held

		if _, err := s.RejectPost(ctx, bob, first.ID, strings.Repeat("x", MaxNoteLen+1)); ctalk.ErrorCode(err) != ctalk.EInvalid {
			t.Fatalf("a long note: %v", err)
		}
		r := must(s.RejectPost(ctx, bob, first.ID, "not before the freeze ends"))
		if r.Status != PostRejected || r.Note != "not before the freeze ends" {
			t.Fatalf("rejected %+v", r)
		}
		_, err := s.ApprovePost(ctx, bob, first.ID)
		wantCode(t, err, ctalk.EConflict)
		_, err = s.EditPost(ctx, bob, second.ID, "  ")
		wantCode(t, err, ctalk.EInvalid)
		edited := must(s.EditPost(ctx, bob, second.ID, "most tests pass"))
		if edited.Text != "most tests pass" || edited.ByAgent || edited.ApprovedByPerson {
			t.Fatalf("edited %+v", edited)
		}
		same := must(s.EditPost(ctx, bob, third.ID, "same text"))
		if !same.ByAgent || !same.ApprovedByPerson {
			t.Fatalf("an edit that changes nothing is an approval: %+v", same)
		}
		msgs := must(s.Messages(ctx, alice, "eng", Read{Limit: 10})).Messages
		if len(msgs) != 2 || msgs[0].Text != "most tests pass" || msgs[1].Text != "same text" {
			t.Fatalf("the channel has %+v", msgs)
		}
		as := must(s.Alerts(ctx, bob))
		if len(as) != 3 {
			t.Fatalf("bob's agent is told %d decisions, want 3", len(as))
		}
		if a := as[0]; a.Reason != AlertPostRejected || a.PostID != first.ID || a.Note != "not before the freeze ends" || a.MessageID != "" || !strings.Contains(a.Excerpt, "we ship friday") {
			t.Fatalf("the rejection reads %+v", a)
		}
		if a := as[1]; a.Reason != AlertPostEdited || a.MessageID != edited.ID || !strings.Contains(a.Excerpt, "most tests pass") {
			t.Fatalf("the edit reads %+v", a)
		}
		if a := as[2]; a.Reason != AlertPostApproved || a.MessageID != same.ID {
			t.Fatalf("the approval reads %+v", a)
		}
		if again := must(s.Alerts(ctx, bob)); len(again) != 0 {
			t.Fatalf("handed over twice: %+v", again[0])
		}
		p := must(s.HeldPost(ctx, bob, second.ID))
		if p.Status != PostEdited || p.Text != "most tests pass" || p.MessageID != edited.ID {
			t.Fatalf("the edited post reads %+v", p)
		}
	})
}

// TestHeldPostChecks: a held post passes a post's checks when it is made,
// and its approval fails, leaving it pending, when the channel was
// archived meanwhile.
func TestHeldPostChecks(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		must(s.Create(ctx, alice, NewChannel{Name: "eng", Members: []string{"bob"}}))
		must(s.Create(ctx, alice, NewChannel{Name: "hr", Private: true}))
		humanMode(t, d)
		_, err := s.AgentPost(ctx, bob, Post{Channel: "hr", Text: "x"})
		wantCode(t, err, ctalk.ENotFound)
		_, err = s.AgentPost(ctx, carol, Post{Channel: "eng", Text: "x"})
		wantCode(t, err, ctalk.EForbidden)
		_, err = s.AgentPost(ctx, bob, Post{Channel: "eng", Text: "x", ReplyTo: "m_000000000000000000000000"})
		wantCode(t, err, ctalk.ENotFound)
		held := must(s.AgentPost(ctx, bob, Post{Channel: "eng", Text: "x"})).Held
		must(s.Archive(ctx, alice, "eng"))
		_, err = s.ApprovePost(ctx, bob, held.ID)
		wantCode(t, err, ctalk.EConflict)
		if p := must(s.HeldPost(ctx, bob, held.ID)); p.Status != PostPending {
			t.Fatalf("after a failed approval the post is %s", p.Status)
		}
		_, err = s.AgentPost(ctx, bob, Post{Channel: "eng", Text: "x"})
		wantCode(t, err, ctalk.EConflict)
	})
}

// TestDecisionsHandedOverOnce: concurrent check_inbox and wait_for_inbox
// calls of one agent hand each decision on its posts over exactly once.
func TestDecisionsHandedOverOnce(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		must(s.Create(ctx, alice, NewChannel{Name: "eng", Members: []string{"bob"}}))
		humanMode(t, d)
		const posts = 30
		for i := range posts {
			p := must(s.AgentPost(ctx, bob, Post{Channel: "eng", Text: "post"})).Held
			if i%2 == 0 {
				must(s.RejectPost(ctx, bob, p.ID, "no"))
			} else {
				must(s.ApprovePost(ctx, bob, p.ID))
			}
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				for range 5 {
					as, err := s.Alerts(ctx, bob)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for _, a := range as {
						seen[a.PostID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != posts {
			t.Fatalf("%d decisions handed over, want %d", len(seen), posts)
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("the decision on %s was handed over %d times", id, n)
			}
		}
	})
}
