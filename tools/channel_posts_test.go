package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

// TestChannelPostMode: an admin sets channel_post_mode with
// update_org_settings (the other setting stays); in human mode post_message
// and the REST mirror hold an agent's post, returning pending_approval and
// an approval_url into the web app, and no member sees it; back in agent
// mode (which only a person sets, in the web app), posts go out at once.
func TestChannelPostMode(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		tok := e.Tokens(t, era, "acme")
		alice, bob := e.Connect(t, era, tok["alice"]), e.Connect(t, era, tok["bob"])
		ok(t, alice, "create_channel", map[string]any{"channel": "dev", "members": []string{"bob"}})

		fail(t, bob, "update_org_settings", map[string]any{"org_id": "acme", "channel_post_mode": "human"}, "only org admins")
		fail(t, alice, "update_org_settings", map[string]any{"org_id": "acme"}, "give approval_mode, channel_post_mode, agent_password_login, approval_factor, require_passkey, knowledge_sharing")
		fail(t, alice, "update_org_settings", map[string]any{"org_id": "acme", "channel_post_mode": "robot"}, "channel_post_mode")
		set := ok(t, alice, "update_org_settings", map[string]any{"org_id": "acme", "channel_post_mode": "human"})
		if set["channel_post_mode"] != "human" || set["approval_mode"] != "agent" {
			t.Fatalf("update_org_settings = %v", set)
		}

		res := ok(t, bob, "post_message", map[string]any{"channel": "dev", "text": "held for bob @alice", "priority": "urgent"})
		id, _ := res["post_id"].(string)
		if res["status"] != "pending_approval" || !strings.HasPrefix(id, "p_") || res["message_id"] != "" || res["seq"] != 0.0 || res["from_name"] != "Bob" ||
			res["approval_url"] != e.URL+"/inbox/posts#"+id {
			t.Fatalf("post_message in human mode = %v", res)
		}
		code, m := e.REST(t, tok["bob"], "POST", "/api/v1/channels/dev/messages", `{"text": "held from a script"}`)
		if restID, _ := m["post_id"].(string); code != 202 || m["status"] != "pending_approval" || m["approval_url"] != e.URL+"/inbox/posts#"+restID {
			t.Fatalf("REST post in human mode: %d %v", code, m)
		}
		for _, who := range []string{"alice", "bob"} {
			cs := e.Connect(t, era, tok[who])
			if msgs := ok(t, cs, "get_messages", map[string]any{"channel": "dev"})["messages"].([]any); len(msgs) != 0 {
				t.Fatalf("%s reads %v", who, msgs)
			}
			if ev := ok(t, cs, "check_inbox", map[string]any{})["channel_events"].([]any); len(ev) != 0 {
				t.Fatalf("%s is told %v", who, ev)
			}
			if found := ok(t, cs, "search_messages", map[string]any{"query": "held"})["messages"].([]any); len(found) != 0 {
				t.Fatalf("%s finds %v", who, found)
			}
			if u := ok(t, cs, "get_unread", map[string]any{}); len(u["messages"].([]any)) != 0 || u["unread_left"] != 0.0 {
				t.Fatalf("%s has unread %v", who, u)
			}
			read, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ctalk://channels/dev"})
			if err != nil || len(read.Contents) != 1 {
				t.Fatalf("%s reads the channel's resource: %+v, %v", who, read, err)
			}
			var content struct{ Messages []map[string]any }
			if err := json.Unmarshal([]byte(read.Contents[0].Text), &content); err != nil || len(content.Messages) != 0 {
				t.Fatalf("%s reads the channel's resource: %s, %v", who, read.Contents[0].Text, err)
			}
		}

		// Back to agent mode is the person's, in the web app.
		fail(t, alice, "update_org_settings", map[string]any{"org_id": "acme", "channel_post_mode": "agent"}, "is for a person")
		if _, err := e.Orgs.SetSettings(dbtest.Operator(), "acme", orgs.Settings{ChannelPostMode: orgs.ChannelPostAgent}); err != nil {
			t.Fatal(err)
		}
		res = ok(t, bob, "post_message", map[string]any{"channel": "dev", "text": "at once"})
		if res["status"] != "published" || res["seq"] != 1.0 || res["posted_by_agent"] != true || res["post_id"] != nil {
			t.Fatalf("post_message in agent mode = %v", res)
		}
	})
}
