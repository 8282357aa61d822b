package db_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestListenKeepsCommitOrderAcrossChannels: notifications committed one
// after another on two channels are handed over in that order, even when
// the first one's receiver takes a while. This is what lets a revocation
// announced before a message is posted take effect before the message's
// wake-up is heard on another replica.
func TestListenKeepsCommitOrderAcrossChannels(t *testing.T) {
	d := dbtest.Open(t, db.Postgres)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu  sync.Mutex
		got []string
	)
	record := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, s)
	}
	ready := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for _, ch := range []string{"ctalk_test_first", "ctalk_test_second"} {
		wg.Go(func() {
			d.Listen(ctx, ch, func() { ready <- struct{}{} }, func(p string) {
				if ch == "ctalk_test_first" {
					// A slow receiver: the second channel's notification,
					// committed later, must still come after it.
					time.Sleep(5 * time.Millisecond)
				}
				record(p)
			}, slog.Default())
		})
	}
	<-ready
	<-ready
	const rounds = 20
	for i := range rounds {
		if err := d.Notify(ctx, "ctalk_test_first", []string{fmt.Sprintf("first %d", i)}); err != nil {
			t.Fatal(err)
		}
		if err := d.Notify(ctx, "ctalk_test_second", []string{fmt.Sprintf("second %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 2*rounds || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2*rounds {
		t.Fatalf("received %d of %d notifications: %v", len(got), 2*rounds, got)
	}
	for i := range rounds {
		want := []string{fmt.Sprintf("first %d", i), fmt.Sprintf("second %d", i)}
		if got[2*i] != want[0] || got[2*i+1] != want[1] {
			t.Fatalf("notifications out of commit order at round %d: got %v", i, got)
		}
	}
	cancel()
	wg.Wait()
}

// TestListenReconnects: when its connection dies, the shared listener
// connects again, tells its subscriber (which may make up for what it
// missed), and hands over what is sent afterwards.
func TestListenReconnects(t *testing.T) {
	d := dbtest.Open(t, db.Postgres)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	channel := fmt.Sprintf("ctalk_rc_%d", time.Now().UnixNano()%1e9)
	connected := make(chan struct{}, 4)
	got := make(chan string, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Listen(ctx, channel, func() { connected <- struct{}{} }, func(p string) { got <- p }, slog.Default())
	}()
	<-connected
	// Only this test's listener ran that LISTEN last.
	dbtest.ExecAsOwner(t, d, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE $1`, `LISTEN "`+channel+`%`)
	select {
	case <-connected:
	case <-time.After(15 * time.Second):
		t.Fatal("the listener did not connect again after its connection was ended")
	}
	if err := d.Notify(ctx, channel, []string{"after"}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		if p != "after" {
			t.Fatalf("received %q", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing received after the reconnect")
	}
	cancel()
	<-done
}

// TestListenHearsOnlyItsSchema: servers on two schemas of one database (as
// the tests run) do not hear each other's notifications.
func TestListenHearsOnlyItsSchema(t *testing.T) {
	one, two := dbtest.Open(t, db.Postgres), dbtest.Open(t, db.Postgres)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	connected := make(chan struct{}, 2)
	got := make(chan string, 4)
	var wg sync.WaitGroup
	for _, d := range []*db.DB{one, two} {
		wg.Go(func() {
			d.Listen(ctx, "ctalk_test_scope", func() { connected <- struct{}{} }, func(p string) {
				if d == one {
					got <- "one heard " + p
				}
			}, slog.Default())
		})
	}
	<-connected
	<-connected
	if err := two.Notify(ctx, "ctalk_test_scope", []string{"two's"}); err != nil {
		t.Fatal(err)
	}
	if err := one.Notify(ctx, "ctalk_test_scope", []string{"its own"}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		if p != "one heard its own" {
			t.Fatalf("%s; want only its own schema's notification", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing heard")
	}
	cancel()
	wg.Wait()
}
