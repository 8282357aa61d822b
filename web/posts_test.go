package web_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/orgs"
)

// heldPostSite starts a server whose org acme holds agents' channel posts,
// with a channel dev of bob and carol.
func heldPostSite(t *testing.T, engine db.Engine) (*site, *mcp.ClientSession) {
	t.Helper()
	s := start(t, engine)
	s.org(t, "acme")
	if _, err := s.Orgs.SetSettings(dbtest.Operator(), "acme", orgs.Settings{ChannelPostMode: orgs.ChannelPostHuman}); err != nil {
		t.Fatal(err)
	}
	bob := s.agent(t, "acme", "bob")
	testkit.OK(t, bob, "create_channel", map[string]any{"channel": "dev", "members": []string{"carol"}})
	return s, bob
}

// heldPost posts text through bob's agent, which must be held, and returns
// the post's id.
func heldPost(t *testing.T, s *site, bob *mcp.ClientSession, text string) string {
	t.Helper()
	res := testkit.OK(t, bob, "post_message", map[string]any{"channel": "dev", "text": text})
	id, _ := res["post_id"].(string)
	if res["status"] != "pending_approval" || res["approval_url"] != s.URL+"/inbox/posts#"+id {
		t.Fatalf("post_message = %v, want it held", res)
	}
	return id
}

// TestHeldPostApprovedByItsPerson: bob's agent posts in human mode; carol's
// agent, waiting in wait_for_message, gets nothing until bob, signed in,
// approves the post on /inbox/posts; then it gets exactly that text, marked
// posted by bob's agent and approved by him, and bob's agent is told.
func TestHeldPostApprovedByItsPerson(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s, bob := heldPostSite(t, engine)
		carol := s.agent(t, "acme", "carol")
		got := make(chan *mcp.CallToolResult, 1)
		ctx, cancel := context.WithCancel(dbtest.Operator())
		t.Cleanup(cancel)
		go func() {
			res, err := carol.CallTool(ctx, &mcp.CallToolParams{Name: "wait_for_message",
				Arguments: map[string]any{"channel": "dev", "timeout_s": 60}})
			if err != nil && ctx.Err() == nil {
				t.Error(err)
			}
			got <- res
		}()
		text := "release 2.3 is tagged; <b>notes</b> follow @carol"
		id := heldPost(t, s, bob, text)
		select {
		case res := <-got:
			t.Fatalf("carol's agent got a held post: %s", testkit.Text(res))
		case <-time.After(300 * time.Millisecond):
		}

		web := s.newClient(t, "acme", "bob")
		if code, page := web.get("/inbox"); code != http.StatusOK || !strings.Contains(page, "Channel posts waiting for you: 1") {
			t.Fatalf("the inbox: %d\n%s", code, page)
		}
		code, page := web.get("/inbox/posts")
		if code != http.StatusOK || !strings.Contains(page, `id="`+id+`"`) || !strings.Contains(page, html.EscapeString(text)) {
			t.Fatalf("/inbox/posts: %d\n%s", code, page)
		}
		if code, page := web.post("/inbox/posts/"+id+"/approve", url.Values{}); code != http.StatusOK || !strings.Contains(page, "Approved.") {
			t.Fatalf("bob approves: %d\n%s", code, page)
		}
		res := <-got
		m, err := testkit.Structured("wait_for_message", res)
		if err != nil || res.IsError {
			t.Fatalf("carol's wait: %v %s", err, testkit.Text(res))
		}
		msgs, _ := m["messages"].([]any)
		if len(msgs) != 1 {
			t.Fatalf("carol's agent got %v", m)
		}
		msg := msgs[0].(map[string]any)
		if msg["text"] != text || msg["from_user_id"] != "bob" || msg["posted_by_agent"] != true || msg["approved_by_person"] != true || msg["mentions_you"] != true {
			t.Fatalf("carol's agent got %v", msg)
		}
		events := testkit.OK(t, bob, "wait_for_inbox", map[string]any{"timeout_s": 5})["channel_events"].([]any)
		if len(events) != 1 {
			t.Fatalf("bob's agent is told %v", events)
		}
		if ev := events[0].(map[string]any); ev["reason"] != "post_approved" || ev["post_id"] != id || ev["message_id"] != msg["message_id"] {
			t.Fatalf("bob's agent is told %v", ev)
		}
		if code, page := web.get("/inbox/posts"); code != http.StatusOK || strings.Contains(page, `id="`+id+`"`) {
			t.Fatalf("the approved post is still listed: %d", code)
		}
	})
}

// TestHeldPostsInLiveCounts: a person's open pages learn at once, through
// /events, that their agent's channel post waits for them, and that it no
// longer does once they decided on it in another tab; nobody else's count
// moves.
func TestHeldPostsInLiveCounts(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s, bob := heldPostSite(t, engine)
		bobWeb := s.newClient(t, "acme", "bob")
		bobPage, carolPage := bobWeb.openStream(t), s.newClient(t, "acme", "carol").openStream(t)
		posts := func(st *stream) int {
			t.Helper()
			ev := st.next(t)
			var c struct{ Waiting, Posts int }
			if ev.name != "counts" || json.Unmarshal([]byte(ev.data), &c) != nil {
				t.Fatalf("event %s %s, want counts", ev.name, ev.data)
			}
			return c.Posts
		}
		if n, m := posts(bobPage), posts(carolPage); n != 0 || m != 0 {
			t.Fatalf("first counts: bob %d, carol %d posts, want none", n, m)
		}
		id := heldPost(t, s, bob, "we ship on friday")
		// Only a wake-up sends counts within eventWait; the stream's
		// re-check comes every 25 s.
		if n := posts(bobPage); n != 1 {
			t.Fatalf("after the held post bob's page counts %d, want 1", n)
		}
		if code, page := bobWeb.post("/inbox/posts/"+id+"/approve", url.Values{}); code != http.StatusOK || !strings.Contains(page, "Approved.") {
			t.Fatalf("bob approves: %d\n%s", code, page)
		}
		if n := posts(bobPage); n != 0 {
			t.Fatalf("after the approval bob's page counts %d, want 0", n)
		}
		select {
		case ev := <-carolPage.evs():
			if ev.name == "counts" {
				t.Fatalf("carol's page was sent %s: bob's post is not hers to approve", ev.data)
			}
		case <-time.After(200 * time.Millisecond):
		}
	})
}

// TestHeldPostRejectedWithANote: the person rejects the post with a note;
// nothing is posted, and the agent waiting on its inbox reads the note.
func TestHeldPostRejectedWithANote(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s, bob := heldPostSite(t, engine)
		id := heldPost(t, s, bob, "we ship on friday")
		got := make(chan *mcp.CallToolResult, 1)
		ctx, cancel := context.WithCancel(dbtest.Operator())
		t.Cleanup(cancel)
		go func() {
			res, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "wait_for_inbox", Arguments: map[string]any{"timeout_s": 60}})
			if err != nil && ctx.Err() == nil {
				t.Error(err)
			}
			got <- res
		}()
		web := s.newClient(t, "acme", "bob")
		if code, page := web.post("/inbox/posts/"+id+"/reject", url.Values{"note": {"not during the freeze"}}); code != http.StatusOK || !strings.Contains(page, "Rejected.") {
			t.Fatalf("bob rejects: %d\n%s", code, page)
		}
		m, err := testkit.Structured("wait_for_inbox", <-got)
		if err != nil {
			t.Fatal(err)
		}
		events, _ := m["channel_events"].([]any)
		if len(events) != 1 {
			t.Fatalf("bob's agent is told %v", m)
		}
		if ev := events[0].(map[string]any); ev["reason"] != "post_rejected" || ev["note"] != "not during the freeze" || ev["post_id"] != id {
			t.Fatalf("bob's agent is told %v", ev)
		}
		if step, _ := m["next_step"].(string); !strings.Contains(step, "post_rejected posted nothing") {
			t.Fatalf("next_step = %q", step)
		}
		if msgs := testkit.OK(t, bob, "get_messages", map[string]any{"channel": "dev"})["messages"].([]any); len(msgs) != 0 {
			t.Fatalf("a rejected post is in the channel: %v", msgs)
		}
	})
}

// TestHeldPostRefusals: only the author, signed in, with the form's CSRF
// token, decides on a held post: another member, a member of another org
// and a signed-out browser change nothing; a refused edit keeps what was
// typed; a second decision is refused.
func TestHeldPostRefusals(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s, bob := heldPostSite(t, engine)
		s.org(t, "other")
		id := heldPost(t, s, bob, "held text")
		stillHeld := func(what string) {
			t.Helper()
			if msgs := testkit.OK(t, bob, "get_messages", map[string]any{"channel": "dev"})["messages"].([]any); len(msgs) != 0 {
				t.Fatalf("%s published the post", what)
			}
		}
		for _, who := range []struct{ org, user string }{{"acme", "carol"}, {"acme", "alice"}, {"other", "bob"}} {
			c := s.newClient(t, who.org, who.user)
			if code, page := c.get("/inbox/posts"); code != http.StatusOK || strings.Contains(page, id) {
				t.Fatalf("%s/%s lists bob's post: %d", who.org, who.user, code)
			}
			for _, action := range []string{"approve", "edit", "reject"} {
				if code, _ := c.post("/inbox/posts/"+id+"/"+action, url.Values{"text": {"x"}, "note": {"x"}}); code != http.StatusNotFound {
					t.Fatalf("%s/%s %ss: %d, want 404", who.org, who.user, action, code)
				}
			}
		}
		stillHeld("another member")
		web := s.newClient(t, "acme", "bob")
		if code, _ := web.postRaw("/inbox/posts/"+id+"/approve", url.Values{}); code != http.StatusForbidden {
			t.Fatalf("without the CSRF token: %d, want 403", code)
		}
		if code, _ := s.anonymous(t).post("/inbox/posts/"+id+"/approve", url.Values{}); code != http.StatusUnauthorized {
			t.Fatalf("signed out: %d, want 401", code)
		}
		stillHeld("a form without a session or token")
		code, page := web.post("/inbox/posts/"+id+"/edit", url.Values{"text": {"   "}})
		if code != http.StatusBadRequest || !strings.Contains(page, `aria-invalid="true"`) {
			t.Fatalf("an empty edit: %d\n%s", code, page)
		}
		stillHeld("an empty edit")
		if code, page := web.post("/inbox/posts/"+id+"/edit", url.Values{"text": {"bob's own words"}}); code != http.StatusOK || !strings.Contains(page, "Posted.") {
			t.Fatalf("bob edits: %d\n%s", code, page)
		}
		code, page = web.post("/inbox/posts/"+id+"/approve", url.Values{})
		if code != http.StatusConflict || !strings.Contains(page, "edited already") {
			t.Fatalf("a second decision: %d\n%s", code, page)
		}
		msgs := testkit.OK(t, bob, "get_messages", map[string]any{"channel": "dev"})["messages"].([]any)
		if len(msgs) != 1 || msgs[0].(map[string]any)["text"] != "bob's own words" || msgs[0].(map[string]any)["posted_by_agent"] != false {
			t.Fatalf("the channel has %v", msgs)
		}
	})
}

// TestAdminSetsChannelPostMode: the admin settings form sets
// channel_post_mode and leaves approval_mode as it is; a member's form is
// refused.
func TestAdminSetsChannelPostMode(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		mode := func() (string, string) {
			t.Helper()
			o, err := s.Orgs.Org(dbtest.Operator(), "acme")
			if err != nil {
				t.Fatal(err)
			}
			return o.ApprovalMode, o.ChannelPostMode
		}
		if code, _ := s.newClient(t, "acme", "bob").post("/admin/settings", url.Values{"channel_post_mode": {"human"}}); code != http.StatusForbidden {
			t.Fatalf("a member sets it: %d, want 403", code)
		}
		alice := s.newClient(t, "acme", "alice")
		if code, page := alice.get("/admin"); code != http.StatusOK || !strings.Contains(page, `name="channel_post_mode" value="agent" checked`) {
			t.Fatalf("the admin page: %d\n%s", code, page)
		}
		if code, page := alice.post("/admin/settings", url.Values{"channel_post_mode": {"robot"}}); code != http.StatusBadRequest || !strings.Contains(page, "channel_post_mode is not valid") {
			t.Fatalf("a bad mode: %d\n%s", code, page)
		}
		if code, page := alice.post("/admin/settings", url.Values{"channel_post_mode": {"human"}}); code != http.StatusOK || !strings.Contains(page, "Settings saved.") {
			t.Fatalf("alice sets it: %d\n%s", code, page)
		}
		if a, c := mode(); a != orgs.ApprovalAgent || c != orgs.ChannelPostHuman {
			t.Fatalf("approval_mode %q, channel_post_mode %q", a, c)
		}
		if code, page := alice.get("/admin"); code != http.StatusOK || !strings.Contains(page, `name="channel_post_mode" value="human" checked`) {
			t.Fatalf("the admin page after: %d", code)
		}
	})
}
