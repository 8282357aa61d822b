package db_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestSharedFileCarriesNotifications: two handles on one SQLite file, as
// two processes of ctalk stdio --local hold, hear each other's
// notifications on their channel, in commit order, and nothing of
// another channel; a file that is not shared carries none.
func TestSharedFileCarriesNotifications(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "shared.db")
	open := func(shared bool) *db.DB {
		d, err := db.Open(ctx, db.Config{Path: path, Shared: shared})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	a, b := open(true), open(true)
	if !a.Notifies() || open(false).Notifies() {
		t.Fatal("Notifies: want true for a shared file alone")
	}
	var (
		mu   sync.Mutex
		got  []string
		told = make(chan struct{}, 1)
	)
	go b.Listen(ctx, "wake", func() { told <- struct{}{} }, func(p string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p)
	}, slog.Default())
	select {
	case <-told:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener never started")
	}
	var want []string
	for i := range 20 {
		p := fmt.Sprintf("acme/u%d", i)
		want = append(want, p)
		if err := a.Notify(ctx, "wake", []string{p}); err != nil {
			t.Fatal(err)
		}
		if err := a.Notify(ctx, "other", []string{"not for wake"}); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "the other handle's notifications", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= len(want), nil
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("heard %v, want %v", got, want)
	}
}

// BenchmarkSharedWake measures how long a notification takes from one
// handle of a shared SQLite file to another's listener: what a waiting
// agent of ctalk stdio --local waits beyond the write that wakes it.
func BenchmarkSharedWake(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(b.TempDir(), "shared.db")
	var handles []*db.DB
	for range 2 {
		d, err := db.Open(ctx, db.Config{Path: path, Shared: true})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		handles = append(handles, d)
	}
	heard, ready := make(chan string, 1), make(chan struct{})
	go handles[1].Listen(ctx, "wake", func() { close(ready) }, func(p string) { heard <- p }, slog.Default())
	<-ready
	for i := 0; b.Loop(); i++ {
		p := fmt.Sprint(i)
		if err := handles[0].Notify(ctx, "wake", []string{p}); err != nil {
			b.Fatal(err)
		}
		for got := <-heard; got != p; got = <-heard {
		}
	}
}
