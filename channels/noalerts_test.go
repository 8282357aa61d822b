package channels

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/wait"
)

// TestNoAlertsKnown: once a replica has found that a member has nothing
// pending, asking again costs no statement; a mention, an @channel post, an
// urgent post and a decision on a held post each reach the member on the
// very next call, from the same replica.
func TestNoAlertsKnown(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		cfg := DefaultConfig()
		cfg.NoAlertsTTL = time.Hour // only a change may end what is known
		fixture(t, d)
		s := NewService(d, cfg, wait.NewBroker())
		must(s.Create(ctx, alice, NewChannel{Name: "eng", Members: []string{"bob", "carol"}}))
		known := func(when string) {
			t.Helper()
			if as := must(s.Alerts(ctx, bob)); len(as) != 0 {
				t.Fatalf("%s: bob has alerts %+v", when, as[0])
			}
			if n := dbtest.Statements(d, func() {
				if must(s.HasAlerts(ctx, bob)) || len(must(s.Alerts(ctx, bob))) != 0 {
					t.Fatalf("%s: bob has alerts", when)
				}
			}); n != 0 {
				t.Fatalf("%s: asking again whether bob has alerts ran %d statements, want none", when, n)
			}
		}
		known("at first")
		for _, p := range []Post{
			{Channel: "eng", Text: "@bob a question"},
			{Channel: "eng", Text: "@channel news"},
			{Channel: "eng", Text: "the build is red", Priority: PriorityUrgent},
		} {
			m := must(s.Post(ctx, alice, p))
			if !must(s.HasAlerts(ctx, bob)) {
				t.Fatalf("after %q bob has no alerts", p.Text)
			}
			if as := must(s.Alerts(ctx, bob)); len(as) != 1 || as[0].MessageID != m.ID {
				t.Fatalf("after %q bob's alerts are %+v", p.Text, as)
			}
			known("after " + p.Text)
		}
		// Nothing for carol is known away by bob's knowledge, nor the reverse.
		must(s.Post(ctx, alice, Post{Channel: "eng", Text: "@carol yours"}))
		known("after a mention of carol")
		if as := must(s.Alerts(ctx, carol)); len(as) != 3 {
			t.Fatalf("carol has %d alerts, want 3 (@channel, urgent, her mention)", len(as))
		}

		humanMode(t, d)
		held := must(s.AgentPost(ctx, bob, Post{Channel: "eng", Text: "shipping"}))
		known("after bob's agent's post was held")
		must(s.ApprovePost(ctx, bob, held.Held.ID))
		if as := must(s.Alerts(ctx, bob)); len(as) != 1 || as[0].Reason != "post_approved" {
			t.Fatalf("after bob approved his post his agent is told %+v", as)
		}
		known("after the decision was handed over")
	})
}

// TestNoAlertsOtherReplicas: on Postgres, an alert filed on one replica
// reaches a member whose "nothing pending" another replica knows, through
// the wake-up the post sends (known for an hour there, so that only the
// wake-up can end it), and a reconnect of that replica's listener forgets
// everything it knew.
func TestNoAlertsOtherReplicas(t *testing.T) {
	t.Parallel()
	d := dbtest.Open(t, db.Postgres)
	ctx, cancel := context.WithCancel(dbtest.Operator())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	cfg := DefaultConfig()
	cfg.NoAlertsTTL = time.Hour
	fixture(t, d)
	one, two := NewService(d, cfg, wait.NewBroker()), NewService(d, cfg, wait.NewBroker())
	go one.waker.Publish(ctx, d, log)
	go two.waker.Listen(ctx, d, log)
	// Until two's listener has connected, wake-ups are lost: wait for one.
	heard, stop := two.waker.Watch("acme", "probe")
	for connected := false; !connected; {
		one.waker.Wake("acme", "probe")
		select {
		case <-heard:
			connected = true
		case <-time.After(50 * time.Millisecond):
		}
	}
	stop()

	must(one.Create(ctx, alice, NewChannel{Name: "eng", Members: []string{"bob"}}))
	if must(two.HasAlerts(ctx, bob)) {
		t.Fatal("bob has alerts before any post")
	}
	m := must(one.Post(ctx, alice, Post{Channel: "eng", Text: "@bob over here"}))
	deadline := time.Now().Add(10 * time.Second)
	for !must(two.HasAlerts(ctx, bob)) {
		if time.Now().After(deadline) {
			t.Fatal("the other replica still knows bob has nothing pending 10 s after the mention")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if as := must(two.Alerts(ctx, bob)); len(as) != 1 || as[0].MessageID != m.ID {
		t.Fatalf("bob's alerts on the other replica: %+v", as)
	}

	// A reconnect: everything known is forgotten, as wake-ups may have been
	// lost while the listener was away.
	if must(two.HasAlerts(ctx, bob)) {
		t.Fatal("bob still has alerts after they were handed over")
	}
	two.heard("", "")
	if n := dbtest.Statements(d, func() { must(two.HasAlerts(ctx, bob)) }); n != 1 {
		t.Fatalf("after a reconnect asking whether bob has alerts ran %d statements, want 1", n)
	}
}

// TestNoAlertsRacingPosts: readers of bob's alerts race posts that mention
// him; once every post has returned, nothing the readers found while racing
// keeps the rest from him: every mention is handed over, once.
func TestNoAlertsRacingPosts(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		cfg := DefaultConfig()
		cfg.NoAlertsTTL = time.Hour
		fixture(t, d)
		s := NewService(d, cfg, wait.NewBroker())
		must(s.Create(ctx, alice, NewChannel{Name: "eng", Members: []string{"bob", "carol"}}))
		const posters, posts = 2, 15
		var mu sync.Mutex
		got := map[string]int{}
		take := func() int {
			as, err := s.Alerts(ctx, bob)
			if err != nil {
				t.Error(err)
				return 0
			}
			mu.Lock()
			defer mu.Unlock()
			for _, a := range as {
				got[a.MessageID]++
			}
			return len(as)
		}
		stop := make(chan struct{})
		var readers, posting sync.WaitGroup
		for range 2 {
			readers.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
						take()
					}
				}
			})
		}
		for _, c := range []ctalk.Caller{alice, carol}[:posters] {
			posting.Go(func() {
				for n := range posts {
					if _, err := s.Post(ctx, c, Post{Channel: "eng", Text: fmt.Sprintf("@bob %d", n)}); err != nil {
						t.Error(err)
					}
				}
			})
		}
		posting.Wait()
		close(stop)
		readers.Wait()
		for take() > 0 {
		}
		if len(got) != posters*posts {
			t.Fatalf("bob was handed %d of the %d mentions", len(got), posters*posts)
		}
		for id, n := range got {
			if n != 1 {
				t.Errorf("mention %s handed over %d times", id, n)
			}
		}
	})
}
