package tools_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// listed returns the names of the tools offered to cs, and the bytes of
// their names, descriptions and input schemas: what a client puts in its
// model's context.
func listed(t *testing.T, cs *mcp.ClientSession) ([]string, int) {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	size := 0
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		schema, _ := json.Marshal(tool.InputSchema)
		size += len(tool.Name) + len(tool.Description) + len(schema)
	}
	return names, size
}

// TestToolListSizedToCaller: a session without identity is offered every
// tool; an identified one none of the account set-up tools, and only an
// admin the admin tools; a client can leave out the optional toolsets by
// header; a tool not offered still answers a call with its own refusal.
func TestToolListSizedToCaller(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		tokens := e.Tokens(t, era, "acme")
		anon, anonSize := listed(t, e.Connect(t, era, ""))
		admin, adminSize := listed(t, e.Connect(t, era, tokens["alice"]))
		bobSession := e.Connect(t, era, tokens["bob"])
		member, memberSize := listed(t, bobSession)
		t.Logf("%s: offered %d tools (%d bytes, about %d tokens) without identity, %d (%d, %d) to an admin, %d (%d, %d) to a member",
			era, len(anon), anonSize, anonSize/4, len(admin), adminSize, adminSize/4, len(member), memberSize, memberSize/4)
		for _, c := range []struct {
			who    string
			names  []string
			offers []string
			hides  []string
		}{
			{"anonymous", anon, []string{"register_organization", "login", "register_user", "ask_person", "remove_user", "post_message", "find_answers"}, nil},
			{"admin", admin, []string{"ask_person", "remove_user", "update_org_settings", "post_message", "find_answers", "whoami"}, []string{"register_organization", "login", "register_user"}},
			{"member", member, []string{"ask_person", "check_inbox", "send_response", "post_message", "find_answers", "whoami"}, []string{"register_organization", "login", "register_user", "remove_user", "update_org_settings", "get_audit_log"}},
		} {
			for _, n := range c.offers {
				if !slices.Contains(c.names, n) {
					t.Errorf("%s is not offered %s", c.who, n)
				}
			}
			for _, n := range c.hides {
				if slices.Contains(c.names, n) {
					t.Errorf("%s is offered %s", c.who, n)
				}
			}
		}
		// The targets: 5,000 tokens (bytes / 4) for a member, 7,000 for an
		// admin (BENCHMARKS.md has the figures).
		if memberSize > 4*5000 || adminSize > 4*7000 {
			t.Errorf("the lists grew past their targets: member %d bytes, admin %d; keep descriptions short, long explanations go in docs/tools.md", memberSize, adminSize)
		}
		if !(memberSize < adminSize && adminSize < anonSize) {
			t.Errorf("list sizes: member %d, admin %d, anonymous %d; want each smaller than the next", memberSize, adminSize, anonSize)
		}
		// Not offered is not locked: the tool's own rule answers.
		fail(t, bobSession, "remove_user", map[string]any{"org_id": "acme", "user_id": "carol"}, "admin")

		withSets := func(sets string) []string {
			cs := testkit.ConnectWith(t, e.URL, era, testkit.Transport{Token: tokens["bob"], Header: map[string]string{"X-MCP-Toolsets": sets}})
			names, _ := listed(t, cs)
			return names
		}
		if names := withSets("none"); slices.Contains(names, "post_message") || slices.Contains(names, "find_answers") || !slices.Contains(names, "ask_person") {
			t.Errorf("toolsets none offers %v", names)
		}
		if names := withSets("channels"); !slices.Contains(names, "post_message") || slices.Contains(names, "find_answers") {
			t.Errorf("toolsets channels offers %v", names)
		}
	})
}

// TestToolsetsRefusesUnknown: a toolset that does not exist is refused
// with the names that do, by header or parameter.
func TestToolsetsRefusesUnknown(t *testing.T) {
	t.Parallel()
	e := start(t, dbtest.Engines[0])
	code, _, body := rawPost(t, e.URL, strings.NewReader(initializeBody), map[string]string{"X-MCP-Toolsets": "inbox,knowledge"})
	if code != http.StatusBadRequest || !strings.Contains(body, "channels, knowledge") {
		t.Errorf("header inbox,knowledge: %d %s", code, body)
	}
	resp, err := http.Post(e.URL+"/mcp?toolsets=chanels", "application/json", strings.NewReader(initializeBody))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `\"chanels\" is not a toolset`) {
		t.Errorf("?toolsets=chanels: %d %s", resp.StatusCode, b)
	}
}
