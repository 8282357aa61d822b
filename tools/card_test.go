package tools_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// The MCP Apps extension as a client that renders its HTML declares it.
const (
	uiExtension = "io.modelcontextprotocol/ui"
	appMIME     = "text/html;profile=mcp-app"
	cardURI     = "ui://ctalk/decision-card"
)

// connectRendering connects with token as a client that renders MCP Apps
// (a chat client's host), through the official Go SDK.
func connectRendering(t testing.TB, base, era, token string) *mcp.ClientSession {
	t.Helper()
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension(uiExtension, map[string]any{"mimeTypes": []string{appMIME}})
	client := mcp.NewClient(&mcp.Implementation{Name: "apps-host", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
	return connectClient(t, base, era, token, client)
}

// toolsOf returns the tools offered to cs, by name.
func toolsOf(t testing.TB, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(dbtest.Operator(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

// uiMeta is a listed tool's _meta.ui, or nil.
func uiMeta(tool *mcp.Tool) map[string]any {
	if tool == nil || tool.Meta == nil {
		return nil
	}
	ui, _ := tool.Meta["ui"].(map[string]any)
	return ui
}

// TestDecisionCardIsOfferedOnlyToClientsThatRenderIt: a client that
// declares the MCP Apps extension is offered check_inbox and
// propose_response with the card named in their _meta, the card's own tool
// hidden from the model, and the card itself as an HTML resource; any
// other client sees the list as before.
func TestDecisionCardIsOfferedOnlyToClientsThatRenderIt(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		tokens := e.Tokens(t, era, "acme")
		plain := toolsOf(t, e.Connect(t, era, tokens["bob"]))
		if _, ok := plain["decide_in_chat"]; ok {
			t.Error("decide_in_chat offered to a client that does not render MCP Apps")
		}
		for _, name := range []string{"check_inbox", "propose_response"} {
			if ui := uiMeta(plain[name]); ui != nil {
				t.Errorf("%s carries _meta.ui %v for a client that does not render MCP Apps", name, ui)
			}
		}

		host := connectRendering(t, e.URL, era, tokens["bob"])
		rendering := toolsOf(t, host)
		for _, name := range []string{"check_inbox", "propose_response"} {
			if ui := uiMeta(rendering[name]); ui["resourceUri"] != cardURI {
				t.Errorf("%s: _meta.ui = %v, want resourceUri %s", name, ui, cardURI)
			}
		}
		ui := uiMeta(rendering["decide_in_chat"])
		if ui["resourceUri"] != cardURI || mustJSON(ui["visibility"]) != `["app"]` {
			t.Errorf("decide_in_chat: _meta.ui = %v, want the card, visible to the app only", ui)
		}
		if len(rendering) != len(plain)+1 {
			t.Errorf("%d tools for the rendering client, want %d (the same and decide_in_chat)", len(rendering), len(plain)+1)
		}

		res, err := host.ReadResource(dbtest.Operator(), &mcp.ReadResourceParams{URI: cardURI})
		if err != nil {
			t.Fatal(err)
		}
		c := res.Contents[0]
		if c.MIMEType != appMIME || !strings.HasPrefix(c.Text, "<!DOCTYPE html>") || !strings.Contains(c.Text, "ui/initialize") ||
			strings.Contains(c.Text, "https://") {
			t.Errorf("card resource: %s, %d bytes (want self-contained HTML that starts the app)", c.MIMEType, len(c.Text))
		}
		if ui, _ := c.Meta["ui"].(map[string]any); ui == nil || mustJSON(ui["csp"]) != `{}` {
			t.Errorf("card resource _meta = %v, want ui.csp with no domain", c.Meta)
		}
	})
}

// TestDecisionCardDecides: in agent approval mode the card approves or
// edits and the answer goes at once, recorded as decided in the chat
// client; in human mode it cannot, and says where the person approves; a
// question not sent to the caller is not found; a card's approval racing
// its agent's send_response sends exactly one answer.
func TestDecisionCardDecides(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		alice := u["alice"]
		card := connectRendering(t, e.URL, era, e.Login(t, e.Connect(t, era, ""), "acme", "bob"))
		ask := func(q, draft string) string {
			id := ok(t, alice, "ask_person", map[string]any{"to_user_id": "bob", "question": q})["message_id"].(string)
			ok(t, u["bob"], "propose_response", map[string]any{"message_id": id, "draft_text": draft})
			return id
		}

		id := ask("Is prod frozen?", "yes, until Monday")
		v := ok(t, card, "decide_in_chat", map[string]any{"message_id": id, "action": "view"})
		if v["decide_here"] != true || v["asker"] != "Alice" || v["question"] != "Is prod frozen?" || v["approval_mode"] != "agent" ||
			field(v["latest_draft"], "draft_text") != "yes, until Monday" || v["open_url"] != e.URL+"/inbox/"+id+"#v1" {
			t.Fatalf("view = %v", v)
		}
		sent := ok(t, card, "decide_in_chat", map[string]any{"message_id": id, "action": "approve", "version": 1})
		if sent["sent"] != true || sent["status"] != "answered" || sent["answer"] != "yes, until Monday" {
			t.Fatalf("approve = %v", sent)
		}
		replies := list(ok(t, alice, "check_replies", map[string]any{}), "replies")
		if len(replies) != 1 || field(replies[0], "answer") != "yes, until Monday" {
			t.Fatalf("alice's replies = %v", replies)
		}
		again := ok(t, card, "decide_in_chat", map[string]any{"message_id": id, "action": "approve", "version": 1})
		if again["sent"] == true {
			t.Errorf("a second approval sent again: %v", again)
		}

		id2 := ask("And staging?", "no")
		edited := ok(t, card, "decide_in_chat", map[string]any{"message_id": id2, "action": "edit", "version": 1, "text": "no, staging is open"})
		if edited["sent"] != true || edited["answer"] != "no, staging is open" {
			t.Fatalf("edit = %v", edited)
		}
		testkit.WaitFor(t, 10*time.Second, "the card's decisions in the audit log", func() (bool, error) {
			n := countRows(t, e.DB, `SELECT COUNT(*) FROM audit_events WHERE org_id = 'acme' AND user_id = 'bob' AND tool = 'decide_in_chat' AND outcome = 'ok' AND ids LIKE '%`+id2+`%'`)
			return n >= 1, nil
		})

		// Someone else's question, and bad input.
		id3 := ask("Deploy today?", "not today")
		fail(t, connectRendering(t, e.URL, era, e.Login(t, e.Connect(t, era, ""), "acme", "carol")), "decide_in_chat",
			map[string]any{"message_id": id3, "action": "approve", "version": 1}, "not found")
		fail(t, card, "decide_in_chat", map[string]any{"message_id": id3, "action": "approve"}, "version")
		fail(t, card, "decide_in_chat", map[string]any{"message_id": id3, "action": "approve", "version": 7}, "version")
		fail(t, card, "decide_in_chat", map[string]any{"message_id": id3, "action": "send"}, "action")

		// The card's approval races its agent's send: one answer.
		var wg sync.WaitGroup
		var mu sync.Mutex
		sends := 0
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var out map[string]any
				var err error
				if i%2 == 0 {
					out, err = testkit.CallTool(dbtest.Operator(), card, "decide_in_chat", map[string]any{"message_id": id3, "action": "approve", "version": 1})
				} else {
					out, err = testkit.CallTool(dbtest.Operator(), u["bob"], "send_response", map[string]any{"message_id": id3, "final_text": "not today"})
				}
				if err != nil {
					t.Errorf("concurrent decision: %v", err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if out["sent"] == true || (out["next_step"] != nil && strings.HasPrefix(out["next_step"].(string), "sent")) {
					sends++
				}
			}()
		}
		wg.Wait()
		if sends != 1 {
			t.Errorf("%d of the concurrent decisions sent the answer, want exactly 1", sends)
		}

		// Human mode: the card shows the draft and where to approve it.
		ok(t, alice, "update_org_settings", map[string]any{"org_id": "acme", "approval_mode": "human"})
		id4 := ask("Friday release?", "yes")
		v = ok(t, card, "decide_in_chat", map[string]any{"message_id": id4, "action": "view"})
		if v["decide_here"] != false || v["approval_mode"] != "human" {
			t.Fatalf("human-mode view = %v", v)
		}
		fail(t, card, "decide_in_chat", map[string]any{"message_id": id4, "action": "approve", "version": 1}, "/inbox/"+id4+"#v1")
		if n := countRows(t, e.DB, `SELECT COUNT(*) FROM questions WHERE id = '`+id4+`' AND status = 'pending'`); n != 1 {
			t.Errorf("the human-mode question is not pending after the card's refused approval")
		}
	})
}
