package tools_test

import (
	"strings"
	"testing"
)

func TestAccountFlow(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		anon := e.Connect(t, era, "")
		org := ok(t, anon, "register_organization", map[string]any{"org_id": "  Acme ", "name": "Acme Inc", "admin_password": adminPW})
		if org["org_id"] != "acme" || org["name"] != "Acme Inc" {
			t.Fatalf("register_organization = %v", org)
		}
		if strings.Contains(mustJSON(org), adminPW) {
			t.Fatal("register_organization returned the admin password")
		}
		fail(t, anon, "register_organization", map[string]any{"org_id": "acme", "name": "Again", "admin_password": adminPW}, "taken")

		u := ok(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "Umar", "name": "Umar", "password": userPW, "ownership": "alpha-repo, beta-repo", "notes": "backend"})
		if u["user_id"] != "umar" || u["role"] != "member" || mustJSON(u["ownership"]) != `["alpha-repo","beta-repo"]` {
			t.Fatalf("register_user = %v", u)
		}
		ok(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "john", "name": "John", "password": userPW, "ownership": []string{"alpha-repo"}, "role": "admin"})

		login := ok(t, anon, "login", map[string]any{"org_id": "acme", "user_id": "umar", "password": userPW})
		token := login["auth_token"].(string)
		if login["expires_at"] == "" || login["user"].(map[string]any)["user_id"] != "umar" {
			t.Fatalf("login = %v", login)
		}
		umar := e.Connect(t, era, token)
		who := ok(t, umar, "whoami", nil)
		if who["user"].(map[string]any)["user_id"] != "umar" || who["org"].(map[string]any)["org_id"] != "acme" {
			t.Fatalf("whoami = %v", who)
		}
		// The same token also works as an argument when no header is sent.
		ok(t, anon, "whoami", map[string]any{"auth_token": token})

		users := ok(t, umar, "list_users", nil)["users"].([]any)
		if len(users) != 2 {
			t.Fatalf("list_users = %v", users)
		}
		ok(t, umar, "update_my_notes", map[string]any{"notes": "I own the retry logic"})

		johnTok := e.Login(t, anon, "acme", "john")
		john := e.Connect(t, era, johnTok)
		// An admin token may add users and write profile notes without the password.
		ok(t, john, "register_user", map[string]any{"org_id": "acme", "user_id": "zed", "name": "Zed", "password": userPW, "ownership": []string{}})
		ok(t, john, "update_user_profile_notes", map[string]any{"org_id": "acme", "user_id": "umar", "profile_notes": "on call this week"})
		// A member may not.
		fail(t, umar, "register_user", map[string]any{"org_id": "acme", "user_id": "eve", "name": "Eve", "password": userPW, "ownership": "x"}, "only org admins")
		fail(t, umar, "update_user_profile_notes", map[string]any{"org_id": "acme", "user_id": "umar", "profile_notes": "x"}, "only org admins")

		prof := ok(t, john, "get_user_profile", map[string]any{"user_id": "umar"})
		pu := prof["user"].(map[string]any)
		if pu["notes"] != "I own the retry logic" || pu["profile_notes"] != "on call this week" {
			t.Fatalf("get_user_profile = %v", prof)
		}
		if _, ok := prof["interaction_with_you"].(map[string]any); !ok {
			t.Fatalf("get_user_profile has no interaction data: %v", prof)
		}

		ok(t, umar, "logout", nil)
		fail(t, anon, "whoami", map[string]any{"auth_token": token}, "revoked")
	})
}

func TestToolsListHasSchemasAndAnnotations(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		cs := e.Connect(t, era, "")
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		readOnly := map[string]bool{"whoami": true, "list_users": true, "get_user_profile": true, "get_audit_log": true, "export_org": true, "list_channels": true, "get_channel": true, "search_messages": true, "get_notification_settings": true, "find_answers": true, "find_expert": true}
		seen := map[string]bool{}
		for _, tool := range res.Tools {
			seen[tool.Name] = true
			if tool.OutputSchema == nil {
				t.Errorf("%s has no output schema", tool.Name)
			}
			if tool.Annotations == nil {
				t.Errorf("%s has no annotations", tool.Name)
				continue
			}
			if tool.Annotations.ReadOnlyHint != readOnly[tool.Name] {
				t.Errorf("%s: readOnlyHint %v, want %v", tool.Name, tool.Annotations.ReadOnlyHint, readOnly[tool.Name])
			}
		}
		for _, name := range []string{"register_organization", "register_user", "login", "logout", "whoami", "list_users", "get_user_profile", "update_my_notes", "update_user_profile_notes",
			"ask_person", "check_inbox", "propose_response", "send_response", "check_replies", "decline_question", "withdraw_question", "wait_for_inbox", "wait_for_reply", "update_org_settings", "get_audit_log", "get_notification_settings", "find_answers", "find_expert", "unshare_answer", "forward_question", "request_info", "provide_info"} {
			if !seen[name] {
				t.Errorf("tool %s is not listed", name)
			}
		}
	})
}
