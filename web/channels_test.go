package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/scim"
)

// unread returns a person's unread count in a channel as the service counts
// it, and whether they are a member.
func (s *site) unread(t testing.TB, orgID, userID, name string) (int64, bool) {
	t.Helper()
	ch, err := s.Channels.Channel(dbtest.Operator(), ctalk.Caller{OrgID: orgID, UserID: userID}, name)
	if err != nil {
		t.Fatalf("channel %s as %s: %v", name, userID, err)
	}
	return ch.UnreadCount, ch.IsMember
}

// channelNames returns the names of the channels a person sees.
func (s *site) channelNames(t testing.TB, orgID, userID string) []string {
	t.Helper()
	chs, err := s.Channels.List(dbtest.Operator(), ctalk.Caller{OrgID: orgID, UserID: userID}, true)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ch := range chs {
		out = append(out, ch.Name)
	}
	return out
}

// wantStatus fails unless code is want.
func wantStatus(t testing.TB, what string, code, want int, body string) {
	t.Helper()
	if code != want {
		t.Fatalf("%s: status %d, want %d\n%s", what, code, want, body)
	}
}

// TestChannelsCreateAndList: a person creates public and private channels
// from the list (errors next to the field they concern), sees theirs with
// member counts, and another person sees the public one among those to
// join, never the private one.
func TestChannelsCreateAndList(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		bob, carol := s.newClient(t, "acme", "bob"), s.newClient(t, "acme", "carol")

		code, page := bob.get("/channels")
		wantStatus(t, "empty list", code, http.StatusOK, page)
		mustShow(t, "empty list", page, `<a href="/channels" aria-current="page">Channels</a>`, "You are in no channel yet", `<details class="ask" id="create" open>`)

		code, page = bob.post("/channels", url.Values{"name": {"Release-42"}, "visibility": {"public"}, "topic": {"Shipping 4.2"}})
		wantStatus(t, "create", code, http.StatusOK, page)
		mustShow(t, "created channel", page, "<h1>#release-42</h1>", "The channel is created", "Shipping 4.2", `<span class="tag">public</span>`, "No messages yet")
		bob.post("/channels", url.Values{"name": {"secret"}, "visibility": {"private"}})

		for _, tc := range []struct {
			name, field, text string
			form              url.Values
			status            int
		}{
			{"bad name", "name-error", "The name has the character &#39; &#39;", url.Values{"name": {"no spaces"}}, http.StatusBadRequest},
			{"no name", "name-error", "The name is required", url.Values{"name": {""}}, http.StatusBadRequest},
			{"taken name", "name-error", "exists already", url.Values{"name": {"release-42"}}, http.StatusConflict},
			{"long topic", "topic-error", "The topic is 251 characters", url.Values{"name": {"fine"}, "topic": {strings.Repeat("t", channels.MaxTopicLen+1)}}, http.StatusBadRequest},
			// A visibility the form does not offer is refused, never taken for public.
			{"unknown visibility", "create-error", "must be public or private, not &#34;secret&#34;", url.Values{"name": {"hidden"}, "visibility": {"secret"}}, http.StatusBadRequest},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, page := bob.post("/channels", tc.form)
				wantStatus(t, tc.name, code, tc.status, page)
				invalid := `aria-invalid="true"`
				if tc.field == "create-error" {
					invalid = `role="alert"`
				}
				mustShow(t, tc.name, page, `id="`+tc.field+`"`, tc.text, invalid, `value="`+tc.form.Get("name")+`"`)
			})
		}
		if got := s.channelNames(t, "acme", "bob"); strings.Join(got, ",") != "release-42,secret" {
			t.Fatalf("channels after the refused forms: %q", got)
		}

		_, page = bob.get("/channels")
		mustShow(t, "bob's list", page, `<a href="/channels/release-42">#release-42</a>`, `<a href="/channels/secret">#secret</a> <span class="tag">private</span>`, "1 member ·")
		mustNotShow(t, "bob's list", page, "Public channels you can join")
		_, page = carol.get("/channels")
		mustShow(t, "carol's list", page, "Public channels you can join", `action="/channels/release-42/join"`, "You are in no channel yet")
		mustNotShow(t, "carol's list", page, "secret")
	})
}

// TestChannelsPostReadJoinLeave: members post as themselves (an agent's
// post is labelled), others' posts count as unread until the channel page
// is opened, which moves the read cursor as get_messages does; joining and
// leaving work from the forms; the creator and admins edit the topic.
func TestChannelsPostReadJoinLeave(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		bob, carol, alice := s.newClient(t, "acme", "bob"), s.newClient(t, "acme", "carol"), s.newClient(t, "acme", "alice")
		bob.post("/channels", url.Values{"name": {"dev"}})

		// carol joins from the channel page.
		_, page := carol.get("/channels/dev")
		mustShow(t, "dev before joining", page, "Join to read and post", `action="/channels/dev/join"`)
		mustNotShow(t, "dev before joining", page, `id="messages"`, `action="/channels/dev/messages"`)
		code, page := carol.post("/channels/dev/join", url.Values{})
		wantStatus(t, "join", code, http.StatusOK, page)
		mustShow(t, "dev after joining", page, "You joined the channel", `id="messages"`, `action="/channels/dev/messages"`, `href="/people/carol">Carol</a>`)

		// bob posts as himself, with a label and a priority.
		code, page = bob.post("/channels/dev/messages", url.Values{"text": {"Deploy at 5, @carol"}, "type": {"status"}, "priority": {"urgent"}})
		wantStatus(t, "post", code, http.StatusOK, page)
		mustShow(t, "after posting", page, "Your message is posted", "Deploy at 5, @carol", `<span class="tag priority-urgent">urgent</span>`, `<span class="tag">status</span>`)
		mustNotShow(t, "bob's own post", page, "posted by agent", `<strong class="tag">new</strong>`)
		// bob's agent posts for him: labelled.
		testkit.OK(t, s.agent(t, "acme", "bob"), "post_message", map[string]any{"channel": "dev", "text": "Build 4521 is green"})

		if n, _ := s.unread(t, "acme", "carol", "dev"); n != 2 {
			t.Fatalf("carol has %d unread, want 2", n)
		}
		_, page = carol.get("/channels")
		mustShow(t, "carol's list", page, `<li class="item unread">`, `<strong class="unread-count">2 unread</strong>`)
		_, page = carol.get("/channels/dev")
		mustShow(t, "carol reads dev", page, "Deploy at 5, @carol", "Build 4521 is green", `<span class="tag">posted by agent</span>`,
			`<span class="tag">mentions you</span>`, `<strong class="tag">new</strong>`, `<li class="item channel-message unread"`)
		if n, _ := s.unread(t, "acme", "carol", "dev"); n != 0 {
			t.Fatalf("after opening the page carol has %d unread, want 0", n)
		}
		_, page = carol.get("/channels")
		mustNotShow(t, "carol's list after reading", page, "unread-count", `<li class="item unread">`)
		_, page = carol.get("/channels/dev")
		mustNotShow(t, "dev read again", page, `<strong class="tag">new</strong>`)

		// A reply names the message it answers.
		first := regexp.MustCompile(`id="(m_[0-9a-f]{24})"`).FindStringSubmatch(page)[1]
		_, page = carol.get("/channels/dev?message=" + first + "&reply_to=" + first)
		mustShow(t, "reply form", page, `name="reply_to" value="`+first+`"`, "In reply to Bob's message")
		code, page = carol.post("/channels/dev/messages", url.Values{"text": {"On it"}, "reply_to": {first}})
		wantStatus(t, "reply", code, http.StatusOK, page)
		mustShow(t, "reply", page, "In reply to <a href=\"/channels/dev?message="+first+"#"+first+"\">")

		// Refused posts keep what was typed, with the reason next to the field.
		for _, tc := range []struct {
			name, field string
			form        url.Values
			status      int
		}{
			{"empty", "text-error", url.Values{"text": {"  "}}, http.StatusBadRequest},
			{"bad priority", "priority-error", url.Values{"text": {"kept words"}, "priority": {"meh"}}, http.StatusBadRequest},
			{"long label", "type-error", url.Values{"text": {"kept words"}, "type": {strings.Repeat("x", channels.MaxTypeLen+1)}}, http.StatusBadRequest},
			{"reply elsewhere", "reply_to", url.Values{"text": {"kept words"}, "reply_to": {"m_000000000000000000000000"}}, http.StatusNotFound},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, page := carol.post("/channels/dev/messages", tc.form)
				wantStatus(t, tc.name, code, tc.status, page)
				mustShow(t, tc.name, page, `class="error"`, ">"+tc.form.Get("text")+"</textarea>")
				if tc.field != "reply_to" {
					mustShow(t, tc.name, page, `id="`+tc.field+`"`)
				}
			})
		}

		// The topic: carol may not, bob (its creator) and alice (an admin) may.
		code, page = carol.post("/channels/dev/topic", url.Values{"topic": {"carol's"}})
		wantStatus(t, "carol sets the topic", code, http.StatusForbidden, page)
		mustNotShow(t, "carol's page", page, `action="/channels/dev/topic"`)
		_, page = bob.post("/channels/dev/topic", url.Values{"topic": {"Release train"}})
		mustShow(t, "bob sets the topic", page, "The topic is saved", "Release train")
		alice.post("/channels/dev/join", url.Values{})
		_, page = alice.post("/channels/dev/topic", url.Values{"topic": {"Release train, by an admin"}})
		mustShow(t, "alice sets the topic", page, "The topic is saved", "Release train, by an admin")

		// Each action is audited with the channel, never the text.
		s.waitAuditEvent(t, "acme", "bob", "web:create_channel", "ok", "dev")
		s.waitAuditEvent(t, "acme", "bob", "web:post_message", "ok", "dev")
		s.waitAuditEvent(t, "acme", "carol", "web:join_channel", "ok", "dev")
		s.waitAuditEvent(t, "acme", "carol", "web:update_channel", "forbidden", "dev")
		s.waitAuditEvent(t, "acme", "carol", "web:post_message", "invalid", "")

		// carol leaves.
		code, page = carol.post("/channels/dev/leave", url.Values{})
		wantStatus(t, "leave", code, http.StatusOK, page)
		mustShow(t, "after leaving", page, "You left the channel", "Public channels you can join")
		if _, member := s.unread(t, "acme", "carol", "dev"); member {
			t.Fatal("carol is still a member after leaving")
		}
		code, page = carol.post("/channels/dev/leave", url.Values{})
		wantStatus(t, "leave twice", code, http.StatusConflict, page)
		mustShow(t, "leave twice", page, "you are not a member of #dev")
		code, page = carol.post("/channels/dev/messages", url.Values{"text": {"still here?"}})
		wantStatus(t, "post after leaving", code, http.StatusForbidden, page)
		mustShow(t, "post after leaving", page, "Only members post here: join the channel first", `action="/channels/dev/join"`)
		s.waitAuditEvent(t, "acme", "carol", "web:leave_channel", "ok", "dev")

		// An archived channel reads, and refuses posts in words.
		if _, err := s.Channels.Archive(dbtest.Operator(), ctalk.Caller{OrgID: "acme", UserID: "alice", Admin: true}, "dev"); err != nil {
			t.Fatal(err)
		}
		_, page = bob.get("/channels/dev")
		mustShow(t, "archived", page, `<strong class="tag">archived</strong>: read-only`, "Deploy at 5, @carol")
		mustNotShow(t, "archived", page, `action="/channels/dev/messages"`, `action="/channels/dev/topic"`)
		code, page = bob.post("/channels/dev/messages", url.Values{"text": {"late"}})
		wantStatus(t, "post to an archived channel", code, http.StatusConflict, page)
		mustShow(t, "post to an archived channel", page, "#dev is archived: it is read-only")
	})
}

// TestChannelsPages: a long channel opens on its newest messages, with a
// link to earlier ones; a search result's link opens the page holding it.
func TestChannelsPages(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		bob := s.newClient(t, "acme", "bob")
		bob.post("/channels", url.Values{"name": {"log"}})
		ctx, who := dbtest.Operator(), acme("alice")
		if _, err := s.Channels.Join(ctx, who, "log"); err != nil {
			t.Fatal(err)
		}
		var third string
		for i := 1; i <= 60; i++ {
			m, err := s.Channels.Post(ctx, who, channels.Post{Channel: "log", Text: fmt.Sprintf("entry number %d.", i)})
			if err != nil {
				t.Fatal(err)
			}
			if i == 3 {
				third = m.ID
			}
		}
		_, page := bob.get("/channels/log")
		mustShow(t, "newest page", page, "entry number 11.", "entry number 60.", `href="/channels/log?before=11"`, `data-after="60"`)
		mustNotShow(t, "newest page", page, "entry number 10.", "Later messages")
		_, page = bob.get("/channels/log?before=11")
		mustShow(t, "earlier page", page, "entry number 1.", "entry number 10.", `<a href="/channels/log">Later messages</a>`)
		mustNotShow(t, "earlier page", page, "entry number 11.", "Earlier messages", "data-after")

		_, page = bob.get("/channels?q=number+3")
		link := `/channels/log?message=` + third + `#` + third
		mustShow(t, "search", page, `<a href="`+link+`">#log</a>`)
		_, page = bob.get(strings.Split(link, "#")[0])
		mustShow(t, "the result's page", page, `id="`+third+`"`, "entry number 3.")
	})
}

// TestChannelsTenancy: a private channel I am not in, and a channel of
// another org, are "not found" on every route; search never returns a
// message of a channel I cannot read; forms without their CSRF token change
// nothing.
func TestChannelsTenancy(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.org(t, "zeta")
		bob, carol, zed := s.newClient(t, "acme", "bob"), s.newClient(t, "acme", "carol"), s.newClient(t, "zeta", "bob")
		bob.post("/channels", url.Values{"name": {"secret"}, "visibility": {"private"}})
		bob.post("/channels/secret/messages", url.Values{"text": {"launch codes are in the vault"}})
		bob.post("/channels", url.Values{"name": {"open"}})
		bob.post("/channels/open/messages", url.Values{"text": {"the vault opens at noon"}})
		zed.post("/channels", url.Values{"name": {"zeta-only"}, "topic": {"zeta's"}})
		zed.post("/channels/zeta-only/messages", url.Values{"text": {"zeta vault"}})

		for _, tc := range []struct {
			who     *client
			channel string
		}{{carol, "secret"}, {carol, "zeta-only"}, {zed, "secret"}, {zed, "open"}, {carol, "no-such"}, {carol, "Bad%20Name"}} {
			t.Run(tc.channel, func(t *testing.T) {
				code, page := tc.who.get("/channels/" + tc.channel)
				wantStatus(t, "page", code, http.StatusNotFound, page)
				mustShow(t, "page", page, "Channel not found")
				for _, action := range []string{"join", "leave", "messages", "topic"} {
					code, page := tc.who.post("/channels/"+tc.channel+"/"+action, url.Values{"text": {"hello"}, "topic": {"mine"}})
					wantStatus(t, action, code, http.StatusNotFound, page)
				}
				code, page = tc.who.get("/events?channel=" + tc.channel)
				wantStatus(t, "events", code, http.StatusNotFound, page)
			})
		}
		if n, _ := s.unread(t, "zeta", "bob", "zeta-only"); n != 0 {
			t.Fatalf("zeta-only got posts from outside: %d unread", n)
		}

		// Search: bob finds both of his; carol finds only what she joined;
		// zeta's bob only zeta's.
		_, page := bob.get("/channels?q=vault")
		mustShow(t, "bob's search", page, "launch codes are in the vault", "the vault opens at noon")
		mustNotShow(t, "bob's search", page, "zeta vault")
		_, page = carol.get("/channels?q=vault")
		mustShow(t, "carol's search before joining", page, "No message of your channels matches")
		mustNotShow(t, "carol's search before joining", page, "launch codes", "the vault opens", "zeta vault")
		carol.post("/channels/open/join", url.Values{})
		_, page = carol.get("/channels?q=vault")
		mustShow(t, "carol's search", page, "the vault opens at noon")
		mustNotShow(t, "carol's search", page, "launch codes", "zeta vault")
		_, page = zed.get("/channels?q=vault")
		mustShow(t, "zeta's search", page, "zeta vault")
		mustNotShow(t, "zeta's search", page, "launch codes", "the vault opens")
		code, page := carol.get("/channels?q=" + url.QueryEscape(strings.Repeat("q", channels.MaxQueryLen+1)))
		wantStatus(t, "long search", code, http.StatusBadRequest, page)
		mustShow(t, "long search", page, `id="q-error"`, "The search is")

		// Without the CSRF token nothing changes.
		for _, tc := range []struct{ path string }{{"/channels"}, {"/channels/open/messages"}, {"/channels/open/leave"}, {"/channels/open/topic"}} {
			code, _ := bob.postRaw(tc.path, url.Values{"name": {"forged"}, "text": {"forged post"}, "topic": {"forged"}})
			if code != http.StatusForbidden {
				t.Fatalf("%s without CSRF: %d, want 403", tc.path, code)
			}
		}
		if code, _ := carol.postRaw("/channels/secret/join", url.Values{}); code != http.StatusForbidden {
			t.Fatalf("join without CSRF: %d, want 403", code)
		}
		_, page = bob.get("/channels/open")
		mustNotShow(t, "after forged forms", page, "forged")
		if _, member := s.unread(t, "acme", "bob", "open"); !member {
			t.Fatal("a forged leave made bob leave")
		}
		if got := s.channelNames(t, "acme", "bob"); strings.Join(got, ",") != "open,secret" {
			t.Fatalf("channels after forged forms: %q", got)
		}
	})
}

// TestProvidedChannelPage: the channel of a group the identity provider
// pushed says so, where another names the member who created it.
func TestProvidedChannelPage(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		if _, err := s.SCIM.CreateGroup(dbtest.Operator(), "acme", scim.GroupAttrs{DisplayName: "Designers", Members: []string{"carol"}}); err != nil {
			t.Fatal(err)
		}
		_, page := s.newClient(t, "acme", "carol").get("/channels/designers")
		mustShow(t, "the group's channel", page, "created by the identity provider")
	})
}
