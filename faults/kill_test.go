package faults_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestKill9DuringAsks kills the server with SIGKILL while eight agents ask
// as fast as they can, restarts it on the same database, and checks that
// every acknowledged ask is stored exactly once and that retrying the rest
// with their keys stores each exactly once.
func TestKill9DuringAsks(t *testing.T) {
	eachEngine(t, testKill9)
}

func testKill9(t *testing.T, e db.Engine) {
	const askers = 8
	d := newDatabase(t, e)
	s := startServer(t, "first", d)
	o := setupOrg(t, s.base, askers)

	l := newLedger()
	ctx, cancel := context.WithTimeout(dbtest.Operator(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	cut := make(chan struct{}, askers) // one per asker whose call failed
	for i := range askers {
		cs := mustConnect(t, s.base, o.tokens[i], eraOf(i), nil)
		wg.Go(func() {
			askLoop(ctx, cs, i, l, 10*time.Second, 0, func(r outcome) bool {
				if r.ok() {
					return false
				}
				if r.toolError() {
					t.Errorf("asker %d before the kill: %v", i, r)
				}
				cut <- struct{}{}
				return true
			})
		})
	}

	// Let the agents get going, then kill the server mid-flight.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, acked := l.counts()
		if acked >= 100 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	killed := time.Now()
	s.kill()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the agents did not notice the kill within 15 s: a call hangs")
	}
	inFlight := 0
	for _, r := range l.outcomes {
		if !r.ok() && r.start.Before(killed) {
			inFlight++
		}
	}
	// Which of these the server had received when it died, the client
	// cannot know; the storage check below covers every case.
	t.Logf("killed after %d acknowledged asks, with %d asks sent before the kill and unanswered; every agent's call failed within %s of the kill",
		len(l.acked), inFlight, time.Since(killed).Round(time.Millisecond))
	if len(cut) != askers {
		t.Fatalf("%d of %d agents saw their call fail", len(cut), askers)
	}
	if _, acked := l.counts(); acked == 0 {
		t.Fatal("no ask was acknowledged before the kill; the test proves nothing")
	}

	s2 := startServer(t, "restarted", d)
	checkNothingLost(t, d, s2, o, l)
}
