package channels

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/wait"
)

// TestReadCursorsAtLeastOnce shows what batching read-cursor moves keeps: a
// reader's own later calls count its read at once, and a process that stops
// before the batch is written leaves the messages unread, handed over again,
// never lost.
func TestReadCursorsAtLeastOnce(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		// A write that never comes in this test stands for a crash before it.
		s.cursors.delay, s.cursors.maxDelay = time.Hour, time.Hour
		must(s.Create(ctx, alice, NewChannel{Name: "dev", Members: []string{"bob"}}))
		for _, text := range []string{"one", "two"} {
			must(s.Post(ctx, alice, Post{Channel: "dev", Text: text}))
		}
		if got := must(s.Messages(ctx, bob, "dev", Read{Limit: 10})); len(got.Messages) != 2 {
			t.Fatalf("get_messages returned %q", texts(got.Messages))
		}

		// Another process, or this one after a crash, has not seen the read.
		other := NewService(d, DefaultConfig(), wait.NewBroker())
		if got := unreadOf(t, other, bob, "dev"); got != 2 {
			t.Fatalf("another process counts %d unread before the batch is written, want 2", got)
		}
		// The same process counts it at once.
		if got := unreadOf(t, s, bob, "dev"); got != 0 {
			t.Fatalf("the reader's own process counts %d unread, want 0", got)
		}
		if got := unreadOf(t, other, bob, "dev"); got != 0 {
			t.Fatalf("after the reader's list, another process counts %d unread, want 0", got)
		}

		// A read whose batch is lost is handed over again by get_unread.
		must(s.Post(ctx, alice, Post{Channel: "dev", Text: "three"}))
		after := int64(2)
		if got := must(s.Wait(ctx, bob, "dev", &after, wait.Options{})); len(got.Messages) != 1 {
			t.Fatalf("wait returned %q", texts(got.Messages))
		}
		if got := must(other.Unread(ctx, bob, "dev")); len(got.Messages) != 1 || got.Messages[0].Text != "three" {
			t.Fatalf("get_unread elsewhere returned %q, want three again", texts(got.Messages))
		}
		// Close writes what is pending; a cursor never moves back.
		s.Close()
		if got := unreadOf(t, other, bob, "dev"); got != 0 {
			t.Fatalf("after close, %d unread, want 0", got)
		}
	})
}

// TestReadCursorsClose shows that Close writes the moves still pending, and
// that moves after it are written at once.
func TestReadCursorsClose(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		s.cursors.delay, s.cursors.maxDelay = time.Hour, time.Hour
		must(s.Create(ctx, alice, NewChannel{Name: "dev", Members: []string{"bob", "carol"}}))
		must(s.Post(ctx, alice, Post{Channel: "dev", Text: "one"}))
		must(s.Messages(ctx, bob, "dev", Read{Limit: 10}))
		s.Close()
		must(s.Messages(ctx, carol, "dev", Read{Limit: 10}))
		other := NewService(d, DefaultConfig(), wait.NewBroker())
		for _, c := range []ctalk.Caller{bob, carol} {
			if got := unreadOf(t, other, c, "dev"); got != 0 {
				t.Errorf("%s: %d unread, want 0", c.UserID, got)
			}
		}
	})
}

// TestReadCursorsNeverMoveBack reads newer messages and then older ones in
// separate batches of cursor moves, one reader at a time (each reader's
// own list writes its batch) and two readers in one batch: every cursor
// stays at the newest message read.
func TestReadCursorsNeverMoveBack(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		s.cursors.delay, s.cursors.maxDelay = time.Hour, time.Hour
		must(s.Create(ctx, alice, NewChannel{Name: "dev", Members: []string{"bob", "carol"}}))
		for i := range 5 {
			must(s.Post(ctx, alice, Post{Channel: "dev", Text: fmt.Sprint("m", i+1)}))
		}
		other := NewService(d, DefaultConfig(), wait.NewBroker())
		for _, c := range []ctalk.Caller{bob, carol} {
			must(s.Messages(ctx, c, "dev", Read{After: 2, Limit: 10}))
			if got := unreadOf(t, s, c, "dev"); got != 0 {
				t.Fatalf("%s read all 5: %d unread, want 0", c.UserID, got)
			}
		}
		// Older messages again, in a batch of their own: bob's written by
		// his own list, then bob's and carol's together.
		must(s.Messages(ctx, bob, "dev", Read{After: 0, Limit: 1}))
		if got := unreadOf(t, s, bob, "dev"); got != 0 {
			t.Fatalf("bob read seq 1 again after seq 5: %d unread, want 0", got)
		}
		must(s.Messages(ctx, bob, "dev", Read{After: 1, Limit: 2}))
		must(s.Messages(ctx, carol, "dev", Read{After: 0, Limit: 2}))
		s.cursors.flush(0)
		for _, c := range []ctalk.Caller{bob, carol} {
			if got := unreadOf(t, other, c, "dev"); got != 0 {
				t.Errorf("%s read older messages after newer: %d unread, want 0", c.UserID, got)
			}
		}
	})
}

func unreadOf(t *testing.T, s *Service, c ctalk.Caller, name string) int64 {
	t.Helper()
	return must(s.Channel(dbtest.Operator(), c, name)).UnreadCount
}

// TestSharedReadsNeverStale shows that a caller never gets a shared read
// that began before its call: such a read could miss the message whose
// wake-up the caller answers, or a change of its membership. The callers
// that queue behind a running read share the next one, which checks the
// membership of each of them, and only them.
func TestSharedReadsNeverStale(t *testing.T) {
	t.Parallel()
	var g sharedReads
	k := pageKey{"acme", "dev", 0}
	started, release := make(chan struct{}), make(chan struct{})
	first := make(chan *sharedPage)
	go func() {
		got, _ := g.page(k, "alice", func(_ context.Context, readers []string) (*sharedPage, error) {
			close(started)
			<-release
			return &sharedPage{msgs: []*Message{{Text: "before"}}, members: asSet(readers)}, nil
		})
		first <- got
	}()
	<-started
	const queued = 3
	var reads atomic.Int32
	later := make(chan *sharedPage, queued)
	for i := range queued {
		go func() {
			got, _ := g.page(k, fmt.Sprint("u", i), func(_ context.Context, readers []string) (*sharedPage, error) {
				reads.Add(1)
				return &sharedPage{msgs: []*Message{{Text: "after"}}, members: asSet(readers)}, nil
			})
			later <- got
		}()
	}
	// The later callers queue for the next read before the first ends (or,
	// were one to join the running read, waits in it).
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		n := 0
		if st := g.reads[k]; st != nil && st.next != nil {
			n = len(st.next.readers)
		}
		g.mu.Unlock()
		if n == queued {
			break
		}
	}
	close(release)
	if got := <-first; got.msgs[0].Text != "before" || len(got.members) != 1 || !got.members["alice"] {
		t.Fatalf("first caller got %q for readers %v", got.msgs[0].Text, got.members)
	}
	for range queued {
		got := <-later
		if got.msgs[0].Text != "after" {
			t.Fatalf("a later caller got %q, a read that began before its call", got.msgs[0].Text)
		}
		if len(got.members) != queued || got.members["alice"] {
			t.Fatalf("the later callers' read checked %v, want u0 to u%d", got.members, queued-1)
		}
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("the later callers ran %d reads, want one shared", n)
	}
	if len(g.reads) != 0 {
		t.Fatalf("%d reads left behind", len(g.reads))
	}
}

func asSet(ss []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	return m
}

// TestSettleWaitsForFlush shows that a reader's own process counts its read
// at once even while a batch that holds the read is being written: settle
// waits for that write instead of finding nothing pending and letting the
// count read the old cursor.
func TestSettleWaitsForFlush(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		ctx := dbtest.Operator()
		s := fixture(t, d)
		s.cursors.delay, s.cursors.maxDelay = time.Hour, time.Hour
		must(s.Create(ctx, alice, NewChannel{Name: "dev", Members: []string{"bob"}}))
		must(s.Post(ctx, alice, Post{Channel: "dev", Text: "one"}))
		must(s.Messages(ctx, bob, "dev", Read{Limit: 10}))

		// Hold the batch's write at its first statement.
		entered, release := make(chan struct{}), make(chan struct{})
		var once atomic.Bool
		d.OnStatement(func(q string) {
			if (q == advanceReadSQL || q == advanceReadsPostgresSQL) && once.CompareAndSwap(false, true) {
				close(entered)
				<-release
			}
		})
		t.Cleanup(func() { d.OnStatement(nil) })
		flushed := make(chan struct{})
		go func() { s.cursors.flush(0); close(flushed) }()
		<-entered

		counted := make(chan int64, 1)
		go func() { counted <- unreadOf(t, s, bob, "dev") }()
		var got int64
		select {
		case got = <-counted:
		case <-time.After(200 * time.Millisecond):
			// Waiting for the write, as it should: let it finish.
			close(release)
			got = <-counted
		}
		if got != 0 {
			t.Fatalf("while its read's batch was being written, the reader's own process counted %d unread, want 0", got)
		}
		select {
		case <-release:
		default:
			close(release)
		}
		<-flushed
	})
}
