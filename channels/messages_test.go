package channels

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/wait"
)

func texts(ms []*Message) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Text)
	}
	return out
}

func TestParseMentions(t *testing.T) {
	t.Parallel()
	for text, want := range map[string][]string{
		"@bob and @Carol, see @bob":      {"bob", "carol"},
		"ping @channel: release at 5":    {MentionChannel},
		"mail bob@example.com or @@bob":  nil,
		"(@alice) @a-b_c.":               {"alice", "a-b_c"},
		"no mentions here, just @ alone": nil,
	} {
		if got := parseMentions(text); !slices.Equal(got, want) {
			t.Errorf("parseMentions(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestPostAndRead(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		must(s.Create(ctx, alice, NewChannel{Name: "dev", Members: []string{"bob"}}))

		m := must(s.Post(ctx, alice, Post{Channel: "dev", Text: "  deploy at 5, @bob and @nobody and @channel  ", Type: "status", Priority: "URGENT", ByAgent: true}))
		if m.Seq != 1 || m.Priority != PriorityUrgent || m.Type != "status" || !m.ByAgent || m.From != "alice" || m.FromName != "Name of alice" ||
			m.Text != "deploy at 5, @bob and @nobody and @channel" || !slices.Equal(m.Mentions, []string{"bob", MentionChannel}) {
			t.Fatalf("posted %+v", m)
		}
		reply := must(s.Post(ctx, bob, Post{Channel: "dev", Text: "ok", ReplyTo: m.ID}))
		if reply.Seq != 2 || reply.ReplyTo != m.ID || reply.Priority != PriorityNormal || reply.ByAgent {
			t.Fatalf("reply %+v", reply)
		}
		for _, bad := range []Post{
			{Channel: "dev", Text: ""},
			{Channel: "dev", Text: "x", Priority: "meh"},
			{Channel: "dev", Text: "x", Type: string(make([]byte, MaxTypeLen+1))},
		} {
			_, err := s.Post(ctx, bob, bad)
			wantCode(t, err, ctalk.EInvalid)
		}
		_, err := s.Post(ctx, bob, Post{Channel: "dev", Text: "x", ReplyTo: "m_000000000000000000000000"})
		wantCode(t, err, ctalk.ENotFound)
		_, err = s.Post(ctx, bob, Post{Channel: "dev", Text: "x", ReplyTo: "q_nonsense"})
		wantCode(t, err, ctalk.ENotFound)
		_, err = s.Post(ctx, carol, Post{Channel: "dev", Text: "let me in"})
		wantCode(t, err, ctalk.EForbidden)

		// Alice wrote the first message, so only bob's reply is unread for her;
		// bob replied after an unread message, so both stay unread for him.
		chs := must(s.List(ctx, alice, false))
		if chs[0].UnreadCount != 1 || chs[0].LastSeq != 2 || chs[0].MemberCount != 2 {
			t.Fatalf("alice's view: %+v", chs[0])
		}
		if chs := must(s.List(ctx, bob, false)); chs[0].UnreadCount != 2 {
			t.Fatalf("bob has %d unread, want 2", chs[0].UnreadCount)
		}

		for i := 3; i <= 7; i++ {
			must(s.Post(ctx, alice, Post{Channel: "dev", Text: fmt.Sprint("m", i)}))
		}
		p := must(s.Messages(ctx, bob, "dev", Read{After: 0, Limit: 3}))
		if len(p.Messages) != 3 || !p.HasMore || p.Messages[0].Seq != 1 || !p.Messages[0].MentionsYou || p.Messages[0].FromName != "Name of alice" {
			t.Fatalf("first page %+v", p)
		}
		if chs := must(s.List(ctx, bob, false)); chs[0].UnreadCount != 4 {
			t.Fatalf("after reading 3 of 7, bob has %d unread, want 4", chs[0].UnreadCount)
		}
		p = must(s.Messages(ctx, bob, "dev", Read{After: 3, Limit: 10}))
		if got := texts(p.Messages); !slices.Equal(got, []string{"m4", "m5", "m6", "m7"}) || p.HasMore {
			t.Fatalf("second page %q, more %v", got, p.HasMore)
		}
		// Reading older messages again never moves the cursor back.
		must(s.Messages(ctx, bob, "dev", Read{After: 0, Limit: 1}))
		if chs := must(s.List(ctx, bob, false)); chs[0].UnreadCount != 0 {
			t.Fatalf("bob has %d unread after reading all, want 0", chs[0].UnreadCount)
		}
		_, err = s.Messages(ctx, carol, "dev", Read{Latest: 2})
		wantCode(t, err, ctalk.EForbidden)
	})
}

func TestLatestAndUnread(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		must(s.Create(ctx, alice, NewChannel{Name: "a", Members: []string{"bob"}}))
		must(s.Create(ctx, alice, NewChannel{Name: "b", Members: []string{"bob"}}))
		for i := 1; i <= 30; i++ {
			must(s.Post(ctx, alice, Post{Channel: "a", Text: fmt.Sprint("a", i)}))
			must(s.Post(ctx, alice, Post{Channel: "b", Text: fmt.Sprint("b", i)}))
		}
		p := must(s.Messages(ctx, alice, "a", Read{Latest: 3}))
		if got := texts(p.Messages); !slices.Equal(got, []string{"a28", "a29", "a30"}) {
			t.Fatalf("latest 3: %q", got)
		}

		// Joining starts the cursor at the end: the history is not unread.
		must(s.Join(ctx, carol, "a"))
		if u := must(s.Unread(ctx, carol, "")); len(u.Messages) != 0 || u.UnreadLeft != 0 {
			t.Fatalf("carol, just joined, has unread %q", texts(u.Messages))
		}

		var got []string
		for range 3 {
			u := must(s.Unread(ctx, bob, ""))
			if len(u.Messages) > MaxHanded {
				t.Fatalf("handed %d messages, more than %d", len(u.Messages), MaxHanded)
			}
			got = append(got, texts(u.Messages)...)
			if left := int64(60 - len(got)); u.UnreadLeft != left {
				t.Fatalf("unread_left %d, want %d", u.UnreadLeft, left)
			}
		}
		var want []string
		for i := 1; i <= 30; i++ {
			want = append(want, fmt.Sprint("a", i), fmt.Sprint("b", i))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("unread handed over\n%q\nwant, oldest first across channels,\n%q", got, want)
		}
		for _, c := range must(s.List(ctx, bob, false)) {
			if c.UnreadCount != 0 {
				t.Fatalf("%s has %d unread after get_unread handed all", c.Name, c.UnreadCount)
			}
		}
	})
}

// TestOwnPostsNeverUnread: a post made after an unread message leaves that
// message unread, but get_unread, and a wait for unread messages, hand over
// only the others' messages, and read past one's own.
func TestOwnPostsNeverUnread(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		must(s.Create(ctx, alice, NewChannel{Name: "dev", Members: []string{"bob"}}))
		must(s.Create(ctx, alice, NewChannel{Name: "ops", Members: []string{"bob"}}))
		must(s.Post(ctx, alice, Post{Channel: "dev", Text: "deploy?"}))
		must(s.Post(ctx, bob, Post{Channel: "dev", Text: "bob: after alice's, unread"}))
		must(s.Post(ctx, alice, Post{Channel: "dev", Text: "go"}))
		must(s.Post(ctx, bob, Post{Channel: "dev", Text: "bob: last"}))
		u := must(s.Unread(ctx, bob, ""))
		if got := texts(u.Messages); !slices.Equal(got, []string{"deploy?", "go"}) || u.UnreadLeft != 0 {
			t.Fatalf("bob's get_unread = %q, %d left; want alice's two messages only, none left", got, u.UnreadLeft)
		}
		if u := must(s.Unread(ctx, bob, "")); len(u.Messages) != 0 {
			t.Fatalf("bob's second get_unread = %q, want nothing", texts(u.Messages))
		}

		must(s.Post(ctx, alice, Post{Channel: "ops", Text: "paged"}))
		must(s.Post(ctx, bob, Post{Channel: "ops", Text: "bob: looking"}))
		w := must(s.Wait(ctx, bob, "ops", nil, wait.Options{Timeout: time.Second}))
		if got := texts(w.Messages); !slices.Equal(got, []string{"paged"}) {
			t.Fatalf("bob's wait for unread = %q, want alice's message only", got)
		}
	})
}
