package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/web"
)

// eventWait bounds the wait for one event. A wake-up arrives in
// milliseconds; without one, only the keep-alive re-check (25 s) would
// send it, so this bound tells the two apart.
const eventWait = 10 * time.Second

// event is one Server-Sent Event.
type event struct{ name, data string }

// stream is an open /events stream of a client.
type stream struct {
	resp   *http.Response
	events chan event
	cancel context.CancelFunc
	// reading starts the reader of events at the first that is asked for.
	reading sync.Once
}

// evs returns the stream's events, read in the background.
func (st *stream) evs() <-chan event {
	st.reading.Do(func() { go st.read() })
	return st.events
}

// openStream opens /events with the client's cookies and returns the
// response, whatever its status.
func (c *client) openStream(t *testing.T) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(dbtest.Operator())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/events", nil)
	// No client timeout: it would cut the stream.
	hc := &http.Client{Jar: c.http.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	st := &stream{resp: resp, events: make(chan event, 100), cancel: cancel}
	t.Cleanup(st.close)
	return st
}

func (st *stream) close() { st.cancel(); st.resp.Body.Close() }

// body reads a response that should end by itself, failing if it does not.
func (st *stream) body(t *testing.T) string {
	t.Helper()
	stop := time.AfterFunc(eventWait, st.close)
	defer stop.Stop()
	b, err := io.ReadAll(st.resp.Body)
	if err != nil {
		t.Fatalf("the response did not end within %v: %v", eventWait, err)
	}
	return string(b)
}

func (st *stream) read() {
	defer close(st.events)
	sc := bufio.NewScanner(st.resp.Body)
	var ev event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.name != "" {
				st.events <- ev
			}
			ev = event{}
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// next returns the next event, failing when the stream ends or none comes.
func (st *stream) next(t *testing.T) event {
	t.Helper()
	select {
	case ev, ok := <-st.evs():
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(eventWait):
		t.Fatalf("no event within %v", eventWait)
	}
	return event{}
}

// counts returns the next event, which must be counts.
func (st *stream) counts(t *testing.T) inbox.Counts {
	t.Helper()
	ev := st.next(t)
	var c inbox.Counts
	if ev.name != "counts" || json.Unmarshal([]byte(ev.data), &c) != nil {
		t.Fatalf("event %s %s, want counts", ev.name, ev.data)
	}
	return c
}

// ended waits for the stream to end, returning the events sent before.
func (st *stream) ended(t *testing.T) []event {
	t.Helper()
	var got []event
	for {
		select {
		case ev, ok := <-st.evs():
			if !ok {
				return got
			}
			got = append(got, ev)
		case <-time.After(eventWait):
			t.Fatalf("the stream did not end within %v; events: %v", eventWait, got)
		}
	}
}

// TestEventsStreamCounts: /events needs a session, is an event stream with
// the pages' security headers, and sends a person's counts at once and
// again when a question, a draft and an answer arrive, from agents on MCP.
// Once the person signs out, it ends instead of telling anything more.
func TestEventsStreamCounts(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		anon := s.anonymous(t).openStream(t)
		if b := anon.body(t); anon.resp.StatusCode != http.StatusUnauthorized || !strings.Contains(b, "Sign in") {
			t.Fatalf("signed-out /events: %d %s, want 401 saying to sign in", anon.resp.StatusCode, b)
		}

		bobWeb, aliceWeb := s.newClient(t, "acme", "bob"), s.newClient(t, "acme", "alice")
		bob, alice := bobWeb.openStream(t), aliceWeb.openStream(t)
		h := bob.resp.Header
		for name, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-store",
			"X-Accel-Buffering": "no", "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY"} {
			if got := h.Get(name); got != want {
				t.Errorf("%s = %q, want %q", name, got, want)
			}
		}
		if bob.resp.StatusCode != http.StatusOK || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Fatalf("bob's /events: %d, CSP %q", bob.resp.StatusCode, h.Get("Content-Security-Policy"))
		}
		if got := bob.counts(t); got != (inbox.Counts{}) {
			t.Fatalf("first counts = %+v, want zeros", got)
		}
		if got := alice.counts(t); got != (inbox.Counts{}) {
			t.Fatalf("alice's first counts = %+v, want zeros", got)
		}
		if n := s.Broker.Waiting(); n != 0 {
			t.Fatalf("%d agents counted as waiting with two pages open, want 0: pages are not agents", n)
		}

		aliceAgent, bobAgent := s.agent(t, "acme", "alice"), s.agent(t, "acme", "bob")
		id := testkit.OK(t, aliceAgent, "ask_person", map[string]any{"to_user_id": "bob", "question": "Retry logic?"})["message_id"].(string)
		if got := bob.counts(t); got != (inbox.Counts{Waiting: 1}) {
			t.Fatalf("after the ask: %+v, want one waiting", got)
		}
		testkit.OK(t, bobAgent, "propose_response", map[string]any{"message_id": id, "draft_text": "Three tries."})
		if got := bob.counts(t); got != (inbox.Counts{Waiting: 1, Drafts: 1}) {
			t.Fatalf("after the draft: %+v, want one waiting with one draft", got)
		}
		testkit.OK(t, bobAgent, "send_response", map[string]any{"message_id": id, "final_text": "Three tries."})
		if got := bob.counts(t); got != (inbox.Counts{}) {
			t.Fatalf("bob after the answer: %+v, want zeros", got)
		}
		if got := alice.counts(t); got != (inbox.Counts{Replies: 1}) {
			t.Fatalf("alice after the answer: %+v, want one reply", got)
		}

		if code, body := bobWeb.post("/signout", url.Values{}); code != http.StatusOK {
			t.Fatalf("sign out: %d %s", code, body)
		}
		testkit.OK(t, aliceAgent, "ask_person", map[string]any{"to_user_id": "bob", "question": "Still there?"})
		evs := bob.ended(t)
		if len(evs) != 1 || evs[0].name != "error" || !strings.Contains(evs[0].data, "unauthorized") {
			t.Fatalf("after sign-out the stream sent %v, want only an unauthorized error", evs)
		}
	})
}

// TestEventsStreamCap: a person may hold MaxStreams streams open; one more
// is refused in words, others are not affected, and a closed one frees
// its place.
func TestEventsStreamCap(t *testing.T) {
	t.Parallel()
	s := start(t, db.SQLite)
	s.org(t, "acme")
	bob := s.newClient(t, "acme", "bob")
	var open []*stream
	for range web.MaxStreams {
		st := bob.openStream(t)
		st.counts(t)
		open = append(open, st)
	}
	over := bob.openStream(t)
	b := over.body(t)
	if over.resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(b, "close some of those tabs") {
		t.Fatalf("stream %d: %d %s, want 429 saying what to do", web.MaxStreams+1, over.resp.StatusCode, b)
	}
	carol := s.newClient(t, "acme", "carol").openStream(t)
	if carol.resp.StatusCode != http.StatusOK {
		t.Fatalf("carol's stream: %d, want 200: the cap is per person", carol.resp.StatusCode)
	}
	open[0].close()
	testkit.WaitFor(t, eventWait, "a closed stream to free its place", func() (bool, error) {
		st := bob.openStream(t)
		defer st.close()
		return st.resp.StatusCode == http.StatusOK, nil
	})
}

// TestEventsStreamEndsOnDrain: draining the server ends open streams and
// tells new ones to come back later, with a 200 the browser reconnects
// after (an event source gives up on any other status).
func TestEventsStreamEndsOnDrain(t *testing.T) {
	t.Parallel()
	s := start(t, db.SQLite)
	s.org(t, "acme")
	bob := s.newClient(t, "acme", "bob")
	st := bob.openStream(t)
	st.counts(t)
	s.Drain()
	st.ended(t)
	late := bob.openStream(t)
	b := late.body(t)
	if late.resp.StatusCode != http.StatusOK || !strings.HasPrefix(b, "retry: ") || strings.Contains(b, "event:") {
		t.Fatalf("stream opened while draining: %d %q, want only a retry", late.resp.StatusCode, b)
	}
}
