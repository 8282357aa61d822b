package web_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/orgs"
)

// xss is text a hostile member writes wherever the app lets them: it
// closes attributes with either quote, opens a script and an element with
// a handler, and starts like a javascript: URL.
const xss = `javascript:alert(1)//"'><script>alert(2)</script><img src=x onerror=alert(3)>`

// Another person's markup that a browser would run: script, a javascript:
// link, or an event handler. Handlers are looked for outside quoted
// attribute values: html/template writes a quote inside a value as &#34;,
// so a value holding another person's markup (the topic in a form's input,
// say) is one inert string.
var (
	unescaped   = regexp.MustCompile(`(?i)<script>alert|<img src=x|(href|src|action|formaction)\s*=\s*["']?\s*javascript:`)
	handler     = regexp.MustCompile(`(?i)<[a-z][^<>]*\son[a-z]+\s*=\s*alert`)
	quotedValue = regexp.MustCompile(`="[^"]*"`)
)

// runnable returns the first runnable markup of another person in body.
func runnable(body string) string {
	if m := unescaped.FindString(body); m != "" {
		return m
	}
	return handler.FindString(quotedValue.ReplaceAllString(body, `=""`))
}

// TestOthersWordsAreEscapedOnEveryPage: a member whose name, ownership,
// notes, questions, drafts, notes on drafts, reasons, answers, token label,
// OAuth client name and channel messages are all markup sees none of it
// run on any page of the app (every GET route, read from the app's own
// routes), whoever looks.
func TestOthersWordsAreEscapedOnEveryPage(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		ctx := dbtest.Operator()
		if _, err := s.Orgs.Register(ctx, orgs.NewOrg{ID: "acme", Name: xss, AdminPassword: adminPW}); err != nil {
			t.Fatal(err)
		}
		for _, u := range []struct{ id, role string }{{"alice", orgs.RoleAdmin}, {"mallory", orgs.RoleMember}} {
			if _, err := s.Orgs.AddUser(ctx, "acme", orgs.NewUser{ID: u.id, Name: xss, Password: userPW, Role: u.role,
				Ownership: []string{xss, "ok-repo"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Orgs.SetNotes(ctx, acme(u.id), xss); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Orgs.SetProfileNotes(ctx, "acme", u.id, xss); err != nil {
				t.Fatal(err)
			}
		}
		// Questions each way, in every state a page shows.
		ask := func(from, to string) string {
			q, err := s.Inbox.Ask(ctx, acme(from), inbox.Ask{To: to, Text: xss})
			if err != nil {
				t.Fatal(err)
			}
			return q.ID
		}
		pending := ask("mallory", "alice")
		for _, text := range []string{xss, xss + " v2"} {
			if _, _, err := s.Inbox.Propose(ctx, acme("alice"), pending, text); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Inbox.Reject(ctx, acme("alice"), pending, 2, xss); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Inbox.Decline(ctx, acme("alice"), ask("mallory", "alice"), xss); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Inbox.AnswerDirectly(ctx, acme("mallory"), ask("alice", "mallory"), xss); err != nil {
			t.Fatal(err)
		}
		ask("alice", "mallory")
		if _, _, err := s.Auth.CreatePersonalToken(ctx, &auth.Session{OrgID: "acme", UserID: "alice", Role: orgs.RoleAdmin}, xss, 30); err != nil {
			t.Fatal(err)
		}
		mallory := s.agent(t, "acme", "mallory")
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{"create_channel", map[string]any{"channel": "dev", "members": []string{"alice"}, "topic": xss, "description": xss}},
			{"post_message", map[string]any{"channel": "dev", "text": xss}},
		} {
			if !tryTool(t, mallory, call.tool, call.args) {
				// Channels may refuse some of it; the rest is still shown.
				t.Logf("%s refused its markup", call.tool)
			}
		}
		s.oauthAccessToken(t, s.newClient(t, "acme", "alice"), xss)

		params := map[string]string{"message_id": pending, "id": pending, "user_id": "mallory", "*": "ctalk.css", "channel": "dev", "name": "dev"}
		var pages int
		for _, who := range []string{"alice", "mallory"} {
			role := orgs.RoleMember
			if who == "alice" {
				role = orgs.RoleAdmin
			}
			c := sessionFor(t, s, "acme", who, role)
			for _, path := range webRoutes(t, s, http.MethodGet) {
				u := fillPath(path, params)
				resp, body := c.do(http.MethodGet, u, nil)
				if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
					continue
				}
				pages++
				if m := runnable(body); m != "" {
					i := strings.Index(body, m)
					t.Errorf("GET %s as %s: markup of another person runs: …%s…", u, who, body[max(0, i-80):min(len(body), i+80)])
				}
			}
		}
		if pages < 10 {
			t.Fatalf("only %d pages checked", pages)
		}
	})
}

// tryTool calls a tool and says whether it succeeded.
func tryTool(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(dbtest.Operator(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return !res.IsError
}
