package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// openFeed opens /events?<query> with the client's cookies and, when given,
// a Last-Event-ID header, as a reconnecting browser sends it.
func (c *client) openFeed(t *testing.T, query, lastEventID string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(dbtest.Operator())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/events?"+query, nil)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
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

// post returns the next event, which must be a post.
func (st *stream) post(t *testing.T) (seq int64, html string) {
	t.Helper()
	ev := st.next(t)
	var p struct {
		Seq  int64  `json:"seq"`
		ID   string `json:"id"`
		HTML string `json:"html"`
	}
	if ev.name != "post" || json.Unmarshal([]byte(ev.data), &p) != nil || !strings.Contains(p.HTML, `id="`+p.ID+`"`) {
		t.Fatalf("event %s %s, want a post", ev.name, ev.data)
	}
	return p.Seq, p.HTML
}

// TestChannelFeed: a channel page's stream carries the channel's new
// messages, rendered and escaped as the page renders them, moves the read
// cursor past what it sent, resumes after Last-Event-ID, refuses those who
// may not read the channel, and ends when the person leaves it or signs out.
func TestChannelFeed(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		ctx, alice := dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: "alice", Admin: true}
		if _, err := s.Channels.Create(ctx, alice, channels.NewChannel{Name: "dev", Members: []string{"bob"}}); err != nil {
			t.Fatal(err)
		}
		say := func(text string) {
			t.Helper()
			if _, err := s.Channels.Post(ctx, alice, channels.Post{Channel: "dev", Text: text}); err != nil {
				t.Fatal(err)
			}
		}
		bob, carol := s.newClient(t, "acme", "bob"), s.newClient(t, "acme", "carol")

		for _, tc := range []struct {
			who    *client
			query  string
			status int
		}{
			{carol, "channel=dev", http.StatusForbidden},
			{carol, "channel=nope", http.StatusNotFound},
			{bob, "channel=dev&after=-1", http.StatusBadRequest},
			{bob, "channel=dev&after=x", http.StatusBadRequest},
		} {
			st := tc.who.openFeed(t, tc.query, "")
			if st.resp.StatusCode != tc.status {
				t.Fatalf("%s: %d, want %d", tc.query, st.resp.StatusCode, tc.status)
			}
			st.close()
		}

		st := bob.openFeed(t, "channel=dev&after=0", "")
		st.counts(t)
		say("first <script>alert(1)</script>")
		say("second")
		seq, html := st.post(t)
		if seq != 1 || !strings.Contains(html, "first &lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(html, `channel-message unread`) {
			t.Fatalf("first post: %d\n%s", seq, html)
		}
		if seq, _ = st.post(t); seq != 2 {
			t.Fatalf("second post: seq %d", seq)
		}
		testkit.WaitFor(t, eventWait, "the stream moves bob's read cursor", func() (bool, error) {
			n, _ := s.unread(t, "acme", "bob", "dev")
			return n == 0, nil
		})
		st.close()

		// A browser reconnecting says what it got last; ?after= is the page's.
		say("third")
		st = bob.openFeed(t, "channel=dev&after=0", "2")
		st.counts(t)
		if seq, html = st.post(t); seq != 3 || !strings.Contains(html, "third") {
			t.Fatalf("after Last-Event-ID 2: seq %d\n%s", seq, html)
		}
		// bob's own post is not marked new for him.
		bob.post("/channels/dev/messages", url.Values{"text": {"mine"}})
		if seq, html = st.post(t); seq != 4 || strings.Contains(html, "unread") {
			t.Fatalf("bob's own post: seq %d\n%s", seq, html)
		}

		// Leaving elsewhere ends the stream.
		other := s.newClient(t, "acme", "bob")
		other.post("/channels/dev/leave", url.Values{})
		if evs := st.ended(t); len(evs) != 1 || evs[0].name != "error" || !strings.Contains(evs[0].data, "forbidden") {
			t.Fatalf("after leaving, the stream sent %v, want only a forbidden error", evs)
		}

		// Signing out ends it before anything posted afterwards is sent.
		other.post("/channels/dev/join", url.Values{})
		st = bob.openFeed(t, "channel=dev", "")
		st.counts(t)
		bob.post("/signout", url.Values{})
		say("after the sign-out")
		if evs := st.ended(t); len(evs) != 1 || evs[0].name != "error" || !strings.Contains(evs[0].data, "unauthorized") {
			t.Fatalf("after sign-out the stream sent %v, want only an unauthorized error", evs)
		}
	})
}
