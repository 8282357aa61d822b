package faults_test

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestSIGTERMUnderLoad sends SIGTERM while agents ask, read the inbox and
// wait, and checks that every call ends promptly with a tool result or, once
// the server stops taking requests, a plain connection error (refused, reset
// or closed): never a hang, a tool error or an HTTP error. Every wait that
// was waiting returns a result telling its agent to call again, the process
// exits 0, and every acknowledged ask is stored exactly once.
func TestSIGTERMUnderLoad(t *testing.T) {
	eachEngine(t, testSIGTERM)
}

func testSIGTERM(t *testing.T, e db.Engine) {
	const (
		askers  = 6
		readers = 2
		waiters = 24
	)
	d := newDatabase(t, e)
	s := startServer(t, "first", d)
	o := setupOrg(t, s.base, askers)

	l := newLedger()
	ctx, cancel := context.WithTimeout(dbtest.Operator(), 60*time.Second)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		others   []outcome // every call but the asks, which l keeps
		waitsEnd []outcome // the waits that were waiting at SIGTERM
	)
	// Once the server has gone, any call fails at once: stop there.
	gone := func(r outcome) bool { return r.err != nil }
	for i := range askers {
		cs := mustConnect(t, s.base, o.tokens[i], eraOf(i), nil)
		wg.Go(func() { askLoop(ctx, cs, i, l, 30*time.Second, 0, gone) })
	}
	loop := func(era, tool string, args map[string]any) {
		cs := mustConnect(t, s.base, o.bossToken, era, nil)
		wg.Go(func() {
			for ctx.Err() == nil {
				r := call(ctx, cs, 30*time.Second, tool, args)
				mu.Lock()
				others = append(others, r)
				mu.Unlock()
				if gone(r) {
					return
				}
			}
		})
	}
	for i := range readers {
		loop(eraOf(i), "check_inbox", map[string]any{"limit": 5})
	}
	// The askers' waits for replies never end by themselves: nobody answers.
	var waiting sync.WaitGroup
	for i := range waiters {
		waiting.Add(1)
		cs := mustConnect(t, s.base, o.tokens[i%askers], eraOf(i), nil)
		wg.Go(func() {
			waiting.Done()
			r := call(ctx, cs, 60*time.Second, "wait_for_reply", map[string]any{"timeout_s": 110})
			mu.Lock()
			waitsEnd = append(waitsEnd, r)
			mu.Unlock()
		})
	}
	waiting.Wait()
	// SIGTERM must find every wait subscribed in the server. The count is
	// taken before the recipient's own waiter starts: that one comes and
	// goes, and counted here it could stand in for a wait not yet arrived.
	s.waitForWaiting(waiters, 15*time.Second)
	// The recipient's own waiter returns each time a question arrives.
	loop(eraStateless, "wait_for_inbox", map[string]any{"timeout_s": 20})

	// Let the load build up, then signal.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, acked := l.counts()
		if acked >= 100 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	signalled := time.Now()
	if err := s.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("calls in flight did not end within 20 s of SIGTERM: a call hangs")
	}
	ended := time.Since(signalled)
	if err := s.wait(30 * time.Second); err != nil {
		t.Fatalf("the process did not exit 0 after SIGTERM: %v", err)
	}
	exited := time.Since(signalled)

	// Every call ended with a tool result or, once the server had closed
	// its listener, a connection error. A tool error is a fault.
	all := append(append(others, waitsEnd...), l.outcomes...)
	var ok, refused, inFlight int
	refusals := map[string]int{}
	for _, r := range all {
		switch {
		case r.toolError():
			t.Errorf("a %s call ended with a tool error around shutdown: %v", r.tool, r)
		case r.ok():
			ok++
			if r.start.Before(signalled) && r.end.After(signalled) {
				inFlight++
			}
		default:
			refused++
			kind := refusal(r.err)
			refusals[kind]++
			if strings.HasPrefix(kind, "other") {
				t.Errorf("a %s call ended with %v; want a tool result or a plain connection error", r.tool, r)
			}
		}
	}
	if inFlight == 0 {
		t.Error("no call was in flight at SIGTERM and finished; the test proves less than it claims")
	}
	if len(waitsEnd) != waiters {
		t.Fatalf("%d of %d waits returned", len(waitsEnd), waiters)
	}
	for _, r := range waitsEnd {
		if !r.ok() {
			t.Errorf("a wait in progress at SIGTERM did not return a result: %v", r)
			continue
		}
		if next, _ := r.structured()["next_step"].(string); !strings.Contains(next, "restarting") {
			t.Errorf("a wait ended by shutdown says %q; it should tell the agent to call again", next)
		}
	}
	t.Logf("refusals after SIGTERM: %v", refusals)
	t.Logf("SIGTERM with %d asks acknowledged and %d waits waiting: %d calls finished across the signal, %d later calls were refused; all calls ended %s and the process exited 0 %s after the signal",
		len(l.acked), waiters, inFlight, refused, ended.Round(time.Millisecond), exited.Round(time.Millisecond))

	s2 := startServer(t, "restarted", d)
	checkNothingLost(t, d, s2, o, l)
}

// refusal names the kind of a connection error, without addresses.
func refusal(err error) string {
	switch msg := err.Error(); {
	case strings.Contains(msg, "connection refused"):
		return "connection refused"
	case strings.Contains(msg, "EOF"):
		return "connection closed (EOF)"
	case strings.Contains(msg, "connection reset"), strings.Contains(msg, "broken pipe"):
		return "connection reset"
	case strings.Contains(msg, "server closed idle connection"):
		return "idle connection closed by the server"
	default:
		return "other: " + truncate(msg, 120)
	}
}
