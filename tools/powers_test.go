package tools_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

// personOnly is what every refusal of a power only a person holds says.
const personOnly = "is for a person, not an agent"

// TestAgentsCannotUndoOversight plays the attacks of an agent that holds
// only what agents are given (its admin's login token, a personal token,
// the org's admin password): each power that would let it approve its own
// drafts or switch approval off is refused, names the web app's page where
// the person uses it, and changes nothing; strengthening stays open; each
// refusal is in the audit log with the credential it was tried with.
func TestAgentsCannotUndoOversight(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		alice, bob := u["alice"], u["bob"]
		anon := e.Connect(t, era, "")
		ctx := ctalk.WithOrg(dbtest.Operator(), "acme")
		_, sess, err := e.Auth.Login(ctx, "acme", "alice", userPW, "")
		if err != nil {
			t.Fatal(err)
		}
		raw, _, err := e.Auth.CreatePersonalToken(ctx, sess, "laptop", 30)
		if err != nil {
			t.Fatal(err)
		}
		personal := e.Connect(t, era, raw)
		byPassword := map[string]any{"org_id": "acme", "admin_password": adminPW}
		with := func(base map[string]any, more map[string]any) map[string]any {
			out := map[string]any{}
			for k, v := range base {
				out[k] = v
			}
			for k, v := range more {
				out[k] = v
			}
			return out
		}
		byToken := map[string]any{"org_id": "acme"}
		callers := []struct {
			name string
			cs   *mcp.ClientSession
			args map[string]any
		}{{"login token", alice, byToken}, {"personal token", personal, byToken}, {"admin password", anon, byPassword}}

		// Strengthening is open to an agent.
		set := ok(t, alice, "update_org_settings", map[string]any{"org_id": "acme", "approval_mode": "human", "channel_post_mode": "human",
			"approval_factor": "passkey", "require_passkey": true})
		if set["approval_mode"] != "human" || set["channel_post_mode"] != "human" || set["approval_factor"] != "passkey" || set["require_passkey"] != true {
			t.Fatalf("update_org_settings = %v", set)
		}
		for _, c := range callers {
			for _, weaken := range []map[string]any{{"approval_mode": "agent"}, {"channel_post_mode": "agent"},
				{"approval_mode": "human", "channel_post_mode": "agent"}, {"agent_password_login": "allowed"},
				{"approval_factor": "session"}, {"require_passkey": false}, {"knowledge_sharing": "on"}} {
				msg := fail(t, c.cs, "update_org_settings", with(c.args, weaken), personOnly)
				if !strings.Contains(msg, e.URL+"/admin") {
					t.Errorf("%s, %v: the refusal names no page of the web app: %s", c.name, weaken, msg)
				}
			}
			// Attack: reset the password of the agent's own person, or of
			// anyone, then sign in as them and approve.
			for _, target := range []string{"alice", "bob"} {
				msg := fail(t, c.cs, "reset_user_password", with(c.args, map[string]any{"user_id": target, "new_password": "taken-over-pw"}), personOnly)
				if !strings.Contains(msg, e.URL+"/admin/members/"+target) {
					t.Errorf("%s: the reset refusal names no member page: %s", c.name, msg)
				}
			}
			fail(t, c.cs, "change_admin_password", with(c.args, map[string]any{"new_admin_password": "taken over for good"}), personOnly)
			fail(t, c.cs, "register_user", with(c.args, map[string]any{"user_id": "mole-" + strings.ReplaceAll(c.name, " ", "-"), "name": "Mole",
				"password": userPW, "ownership": "x", "role": "admin"}), "making someone an admin "+personOnly)
			// An invite to an address the agent reads would make an admin too.
			fail(t, c.cs, "invite_user", with(c.args, map[string]any{"user_id": "mole-invite", "name": "Mole",
				"email": "mole@example.com", "role": "admin"}), "inviting an admin "+personOnly)
		}
		// Nothing changed.
		org, err := e.Orgs.Org(ctx, "acme")
		if err != nil || org.ApprovalMode != orgs.ApprovalHuman || org.ChannelPostMode != orgs.ChannelPostHuman || org.ApprovalFactor != orgs.FactorPasskey || !org.RequirePasskey {
			t.Fatalf("after the refusals the org reads %+v, %v", org, err)
		}
		for _, id := range []string{"alice", "bob"} {
			if _, _, err := e.Auth.Login(ctx, "acme", id, "taken-over-pw", ""); err == nil {
				t.Errorf("%s's password was reset", id)
			}
		}
		if err := e.Auth.VerifyAdminPassword(auth.WithClientAddr(ctx, "127.0.0.1"), "acme", adminPW); err != nil {
			t.Errorf("the admin password changed: %v", err)
		}
		users, _ := e.Orgs.Users(ctx, "acme")
		if len(users) != 3 {
			t.Errorf("members after the refusals: %d, want 3", len(users))
		}
		ok(t, bob, "whoami", nil)

		// No tool creates a personal token.
		tools, err := alice.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools.Tools {
			if strings.Contains(tool.Name, "token") && tool.Name != "revoke_user_tokens" {
				t.Errorf("tool %s may make tokens", tool.Name)
			}
		}

		// Each refusal is recorded with the factor it was tried with.
		events := auditEvents(t, alice, "acme", map[string]any{"tool": "reset_user_password", "outcome": "forbidden"}, 6)
		factors := map[string]int{}
		for _, ev := range events {
			factors[ev["factor"].(string)]++
		}
		if factors["login_token"] != 2 || factors["personal_token"] != 2 || factors["admin_password"] != 2 {
			t.Errorf("factors of the refused resets: %v", factors)
		}
		for _, ev := range auditEvents(t, alice, "acme", map[string]any{"tool": "update_org_settings"}, 13) {
			if ev["factor"] == "" || ev["factor"] == nil {
				t.Errorf("an update_org_settings event has no factor: %v", ev)
			}
		}
		if strings.Contains(e.Logs.String(), "taken-over-pw") || strings.Contains(e.Logs.String(), raw) {
			t.Error("the server's log holds a secret")
		}
	})
}

// TestAgentPasswordLoginDisabled: once an agent disabled password logins
// (the one way it may change the setting), login answers how to connect
// instead and checks no password; tokens already issued keep working; only
// the web app allows passwords again.
func TestAgentPasswordLoginDisabled(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		alice := u["alice"]
		anon := e.Connect(t, era, "")
		if set := ok(t, alice, "update_org_settings", map[string]any{"org_id": "acme", "agent_password_login": "disabled"}); set["agent_password_login"] != "disabled" {
			t.Fatalf("update_org_settings = %v", set)
		}
		for _, pw := range []string{userPW, "a wrong password"} {
			msg := fail(t, anon, "login", map[string]any{"org_id": "acme", "user_id": "bob", "password": pw}, "does not let agents log in with a password")
			for _, want := range []string{"browser sign-in", e.URL + "/tokens", "personal token"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the refusal does not say %q: %s", want, msg)
				}
			}
		}
		ok(t, u["bob"], "whoami", nil)
		fail(t, alice, "update_org_settings", map[string]any{"org_id": "acme", "agent_password_login": "allowed"}, personOnly)
		// Another org is not affected.
		e.Org(t, era, "globex")
		if _, err := e.Orgs.SetSettings(dbtest.Operator(), "acme", orgs.Settings{AgentPasswordLogin: orgs.AgentLoginAllowed}); err != nil {
			t.Fatal(err)
		}
		ok(t, anon, "login", map[string]any{"org_id": "acme", "user_id": "bob", "password": userPW})
		auditEvents(t, alice, "acme", map[string]any{"tool": "login", "outcome": "forbidden", "user_id": "bob"}, 2)
	})
}

// TestFirstAdminOverMCP: the sign-up flow over MCP keeps working (an org
// made by an agent gets its first admin), and no second admin is made by
// an agent, by admin password or by the admin's token.
func TestFirstAdminOverMCP(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		anon := e.Connect(t, era, "")
		ok(t, anon, "register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": adminPW})
		ok(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "bob", "name": "Bob", "password": userPW, "ownership": "x"})
		first := ok(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "alice", "name": "Alice", "password": userPW, "ownership": "x", "role": "admin"})
		if first["role"] != "admin" {
			t.Fatalf("the first admin = %v", first)
		}
		alice := e.Connect(t, era, e.Login(t, anon, "acme", "alice"))
		fail(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "mole", "name": "Mole", "password": userPW, "ownership": "x", "role": "admin"}, personOnly)
		msg := fail(t, alice, "register_user", map[string]any{"org_id": "acme", "user_id": "mole", "name": "Mole", "password": userPW, "ownership": "x", "role": "admin"}, personOnly)
		if !strings.Contains(msg, e.URL+"/admin") {
			t.Errorf("the refusal names no page: %s", msg)
		}
		if m := ok(t, alice, "register_user", map[string]any{"org_id": "acme", "user_id": "mole", "name": "Mole", "password": userPW, "ownership": "x"}); m["role"] != "member" {
			t.Errorf("a member added by an admin's agent = %v", m)
		}
	})
}
