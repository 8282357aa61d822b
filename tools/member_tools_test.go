package tools_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/orgs"
)

// The tools that shut someone off or change a password.
var memberTools = []string{"remove_user", "revoke_user_tokens", "change_password", "reset_user_password", "change_admin_password"}

func TestRemoveUserOverMCP(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		alice, bob, carol := u["alice"], u["bob"], u["carol"]
		id := ok(t, bob, "ask_person", map[string]any{"to_user_id": "alice", "question": "where is the runbook?"})["message_id"].(string)
		toBob := ok(t, carol, "ask_person", map[string]any{"to_user_id": "bob", "question": "is the deploy frozen?"})["message_id"].(string)

		fail(t, carol, "remove_user", map[string]any{"org_id": "acme", "user_id": "bob"}, "only org admins")
		res := ok(t, alice, "remove_user", map[string]any{"org_id": "acme", "user_id": "bob"})
		if res["user_id"] != "bob" || res["tokens_revoked"] != float64(1) || res["removed_at"] == nil || res["questions_declined"] != float64(1) {
			t.Fatalf("remove_user = %v", res)
		}

		// Carol's question to bob is declined to her at once.
		r := ok(t, carol, "check_replies", nil)["replies"].([]any)
		if len(r) != 1 || r[0].(map[string]any)["message_id"] != toBob || r[0].(map[string]any)["status"] != "declined" || r[0].(map[string]any)["decline_reason"] != inbox.DepartedReason {
			t.Fatalf("carol's replies after bob's removal = %v", r)
		}

		// Refused on the very next call, whatever the call.
		refused(t, bob, "whoami")
		refused(t, bob, "check_inbox")

		// Bob's question stays readable by alice, from a former member.
		qs := ok(t, alice, "check_inbox", nil)["questions"].([]any)
		if len(qs) != 1 {
			t.Fatalf("alice's inbox = %v, want bob's question", qs)
		}
		q := qs[0].(map[string]any)
		sender := q["sender"].(map[string]any)
		if q["message_id"] != id || q["question"] != "where is the runbook?" || sender["user_id"] != "bob" || sender["former_member"] != true {
			t.Fatalf("bob's question = %v, want it marked from a former member", q)
		}
		if c := ok(t, carol, "check_inbox", nil)["questions"].([]any); len(c) != 0 {
			t.Fatalf("carol sees %v", c)
		}

		// Gone for every new action.
		for _, u := range ok(t, alice, "list_users", nil)["users"].([]any) {
			if u.(map[string]any)["user_id"] == "bob" {
				t.Fatalf("list_users still lists bob")
			}
		}
		fail(t, alice, "ask_person", map[string]any{"to_user_id": "bob", "question": "still there?"}, `user "bob" not found`)
		fail(t, alice, "get_user_profile", map[string]any{"user_id": "bob"}, `user "bob" not found`)
		fail(t, alice, "update_user_profile_notes", map[string]any{"org_id": "acme", "user_id": "bob", "profile_notes": "x"}, `user "bob" not found`)
		fail(t, alice, "remove_user", map[string]any{"org_id": "acme", "user_id": "bob"}, `user "bob" not found`)
		fail(t, alice, "revoke_user_tokens", map[string]any{"org_id": "acme", "user_id": "bob"}, `user "bob" not found`)
		fail(t, alice, "reset_user_password", map[string]any{"org_id": "acme", "user_id": "bob", "new_password": "a fresh start"}, `user "bob" not found`)
		anon := e.Connect(t, era, "")
		fail(t, anon, "login", map[string]any{"org_id": "acme", "user_id": "bob", "password": userPW}, "login failed")
		fail(t, alice, "register_user", map[string]any{"org_id": "acme", "user_id": "bob", "name": "New Bob", "password": userPW, "ownership": "x"}, "former member")

		// The last admin stays.
		fail(t, alice, "remove_user", map[string]any{"org_id": "acme", "user_id": "alice"}, "last admin")
		ok(t, alice, "whoami", nil)
	})
}

func TestMemberToolsAcrossOrgs(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		a := e.Org(t, era, "acme")
		b := e.Org(t, era, "other")
		mole := b["alice"]
		for _, tool := range []string{"remove_user", "revoke_user_tokens", "reset_user_password"} {
			args := map[string]any{"org_id": "acme", "user_id": "bob"}
			if tool == "reset_user_password" {
				args["new_password"] = "taken over now"
			}
			// Another org's admin: its token, with or without acme's password.
			fail(t, mole, tool, args, `organization "acme" not found`)
			args["admin_password"] = adminPW
			fail(t, mole, tool, args, `organization "acme" not found`)
			// Acme's admin naming a user of another org.
			args = map[string]any{"org_id": "acme", "user_id": "dave"}
			if tool == "reset_user_password" {
				args["new_password"] = "taken over now"
			}
			fail(t, a["alice"], tool, args, `user "dave" not found`)
		}
		fail(t, mole, "change_admin_password", map[string]any{"org_id": "acme", "new_admin_password": "taken over for good"}, `organization "acme" not found`)
		ok(t, a["bob"], "whoami", nil)
		anon := e.Connect(t, era, "")
		ok(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "dan", "name": "Dan", "password": userPW, "ownership": "x"})
	})
}

// TestRemoveLastTwoAdminsOverMCP removes the last two admins of an org at the
// same moment, with the admin password, in several orgs: one must stay.
func TestRemoveLastTwoAdminsOverMCP(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		anon := []*mcp.ClientSession{e.Connect(t, era, ""), e.Connect(t, era, "")}
		for round := range 5 {
			org := fmt.Sprintf("org%d", round)
			ok(t, anon[0], "register_organization", map[string]any{"org_id": org, "name": org, "admin_password": adminPW})
			admins := []string{"ann", "ben"}
			// An agent makes the first admin only; a person makes the
			// second in the web app.
			ok(t, anon[0], "register_user", map[string]any{"org_id": org, "admin_password": adminPW, "user_id": "ann", "name": "ann", "password": userPW, "ownership": "x", "role": "admin"})
			ok(t, anon[0], "register_user", map[string]any{"org_id": org, "admin_password": adminPW, "user_id": "ben", "name": "ben", "password": userPW, "ownership": "x"})
			if _, err := e.Orgs.SetRole(dbtest.Operator(), org, "ben", orgs.RoleAdmin); err != nil {
				t.Fatal(err)
			}
			results := make([]*mcp.CallToolResult, 2)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i, id := range admins {
				wg.Go(func() {
					<-start
					results[i] = call(t, anon[i], "remove_user", map[string]any{"org_id": org, "admin_password": adminPW, "user_id": id})
				})
			}
			close(start)
			wg.Wait()
			removed := 0
			for _, r := range results {
				switch {
				case !r.IsError:
					removed++
				case !strings.Contains(text(r), "last admin"):
					t.Fatalf("%s: remove_user failed: %s", org, text(r))
				}
			}
			var left int
			if err := e.DB.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM users WHERE org_id = $1 AND role = 'admin' AND removed_at IS NULL`, org).Scan(&left); err != nil {
				t.Fatal(err)
			}
			if removed != 1 || left != 1 {
				t.Fatalf("%s: %d removals succeeded and %d admins are left; want 1 and 1", org, removed, left)
			}
		}
	})
}

func TestPasswordToolsOverMCP(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		u := e.Org(t, era, "acme")
		alice, carol := u["alice"], u["carol"]
		anon := e.Connect(t, era, "")
		bob2 := e.Connect(t, era, e.Login(t, anon, "acme", "bob"))
		const bobPW, resetPW, newAdminPW = "bob's new secret", "reset by alice", "a new admin secret"

		// change_password: the calling token stays, the other one dies.
		for _, r := range []struct {
			args map[string]any
			want string
		}{
			{map[string]any{"current_password": "not it at all", "new_password": bobPW}, "current_password is wrong"},
			{map[string]any{"current_password": userPW, "new_password": "short"}, "new_password must be at least 8"},
			{map[string]any{"current_password": userPW, "new_password": strings.Repeat("p", 73)}, "at most 72 bytes"},
		} {
			msg := fail(t, u["bob"], "change_password", r.args, r.want)
			if strings.Contains(msg, "not it at all") || strings.Contains(msg, bobPW) || strings.Contains(msg, "ppppppppp") {
				t.Fatalf("change_password echoes a password: %s", msg)
			}
		}
		res := ok(t, u["bob"], "change_password", map[string]any{"current_password": userPW, "new_password": bobPW})
		if res["changed"] != true || res["other_tokens_revoked"] != float64(1) || strings.Contains(mustJSON(res), bobPW) {
			t.Fatalf("change_password = %v", res)
		}
		ok(t, u["bob"], "whoami", nil)
		refused(t, bob2, "whoami")
		fail(t, anon, "login", map[string]any{"org_id": "acme", "user_id": "bob", "password": userPW}, "login failed")
		bob3 := e.Connect(t, era, ok(t, anon, "login", map[string]any{"org_id": "acme", "user_id": "bob", "password": bobPW})["auth_token"].(string))

		// reset_user_password is refused to agents; the reset a person
		// makes in the web app ends every token of bob.
		fail(t, carol, "reset_user_password", map[string]any{"org_id": "acme", "user_id": "bob", "new_password": resetPW}, "only org admins")
		if msg := fail(t, alice, "reset_user_password", map[string]any{"org_id": "acme", "user_id": "bob", "new_password": resetPW}, "is for a person"); strings.Contains(msg, resetPW) {
			t.Fatalf("reset_user_password echoes the password: %s", msg)
		}
		ok(t, u["bob"], "whoami", nil)
		if n, err := e.Auth.ResetPassword(dbtest.Operator(), "acme", "bob", resetPW); err != nil || n != 2 {
			t.Fatalf("reset bob's password in the web app's service: %d, %v", n, err)
		}
		refused(t, u["bob"], "whoami")
		refused(t, bob3, "whoami")
		ok(t, anon, "login", map[string]any{"org_id": "acme", "user_id": "bob", "password": resetPW})

		// revoke_user_tokens: carol's token dies, her password stays.
		res = ok(t, anon, "revoke_user_tokens", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "carol"})
		if res["tokens_revoked"] != float64(1) {
			t.Fatalf("revoke_user_tokens = %v", res)
		}
		refused(t, carol, "whoami")
		e.Login(t, anon, "acme", "carol")

		// change_admin_password is refused to agents, with the current
		// one or as an admin; the person changes it in the web app.
		fail(t, anon, "change_admin_password", map[string]any{"org_id": "acme", "admin_password": adminPW + "x", "new_admin_password": newAdminPW}, "wrong")
		fail(t, anon, "change_admin_password", map[string]any{"org_id": "acme", "admin_password": adminPW, "new_admin_password": newAdminPW}, "is for a person")
		fail(t, alice, "change_admin_password", map[string]any{"org_id": "acme", "new_admin_password": newAdminPW}, "is for a person")
		ok(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "dan", "name": "Dan", "password": userPW, "ownership": "x"})
		if err := e.Auth.ChangeAdminPassword(dbtest.Operator(), "acme", newAdminPW); err != nil {
			t.Fatal(err)
		}
		fail(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "eve", "name": "Eve", "password": userPW, "ownership": "x"}, "wrong")
		ok(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": newAdminPW, "user_id": "eve", "name": "Eve", "password": userPW, "ownership": "x"})

		// The audit log names the tools and users, never a password.
		events := auditEvents(t, alice, "acme", map[string]any{"tool": "reset_user_password", "outcome": "forbidden", "user_id": "alice"}, 1)
		if len(events) != 1 || mustJSON(events[0]["ids"]) != `["bob"]` || events[0]["user_id"] != "alice" || events[0]["factor"] != "login_token" {
			t.Fatalf("reset_user_password events = %v", events)
		}
		// A wrong admin password is filed in the attacked org's log, as
		// the caller admin-password; the refusals under their callers.
		ev := auditEvents(t, alice, "acme", map[string]any{"tool": "change_admin_password"}, 3)
		var outcomes []string
		for _, e := range ev {
			outcomes = append(outcomes, fmt.Sprint(e["outcome"], "/", e["user_id"]))
		}
		if got, want := strings.Join(outcomes, " "), "forbidden/alice forbidden/admin-password unauthorized/admin-password"; got != want {
			t.Fatalf("change_admin_password events, newest first = %s, want %s", got, want)
		}
		var dump strings.Builder
		rows, err := e.DB.Query(dbtest.Operator(), `SELECT tool, ids FROM audit_events`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var tool, ids string
			rows.Scan(&tool, &ids)
			dump.WriteString(tool + " " + ids + "\n")
		}
		rows.Close()
		for _, pw := range []string{bobPW, resetPW, newAdminPW, adminPW, userPW} {
			if strings.Contains(dump.String(), pw) {
				t.Fatalf("the audit log holds the password %q:\n%s", pw, dump.String())
			}
		}
	})
}

func TestMemberToolsAreMarkedDestructive(t *testing.T) {
	t.Parallel()
	e := start(t, dbtest.Engines[0])
	res, err := e.Connect(t, eraStateless, "").ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tool := range res.Tools {
		seen[tool.Name] = true
		for _, name := range memberTools {
			if tool.Name == name && (tool.Annotations == nil || tool.Annotations.DestructiveHint == nil || !*tool.Annotations.DestructiveHint || tool.Annotations.ReadOnlyHint) {
				t.Errorf("%s is not annotated as destructive: %+v", name, tool.Annotations)
			}
		}
	}
	for _, name := range memberTools {
		if !seen[name] {
			t.Errorf("tool %s is not listed", name)
		}
	}
}

// TestConcurrentRegisterUser: 20 register_user calls at once with the right
// admin password, from one address, all succeed: admin-password checks
// still running are not failures.
func TestConcurrentRegisterUser(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine)
			anon := e.Connect(t, eraStateless, "")
			ok(t, anon, "register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": adminPW})
			const n = 20
			clients := make([]*mcp.ClientSession, n)
			for i := range clients {
				clients[i] = e.Connect(t, eraStateless, "")
			}
			results := make([]*mcp.CallToolResult, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					results[i] = call(t, clients[i], "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW,
						"user_id": fmt.Sprintf("u%d", i), "name": fmt.Sprintf("User %d", i), "password": userPW, "ownership": []string{}})
				})
			}
			close(start)
			wg.Wait()
			for i, r := range results {
				if r.IsError {
					t.Errorf("register_user %d of %d at once: %s", i+1, n, text(r))
				}
			}
		})
	}
}
