package api_test

import (
	"strings"
	"testing"
)

func TestOwnershipJunkOverMCP(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		anon := e.Connect(t, era, "")
		ok(t, anon, "register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": adminPW})
		user := func(id string, own any) map[string]any {
			return map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": id, "name": id, "password": userPW, "ownership": own}
		}
		fail(t, anon, "register_user", user("junk", make([]string, 10000)), "ownership has 10000 entries, 10000 of them empty; at most 50")
		fail(t, anon, "register_user", user("junk", strings.Repeat(",", 60)), "ownership has 61 entries, 61 of them empty; at most 50")
		fail(t, anon, "register_user", user("junk", []string{"ok", strings.Repeat("o", 201)}), "at most 200 characters; entry 2 has 201")
		u := ok(t, anon, "register_user", user("umar", []string{" alpha ", "", "  ", "beta"}))
		if got := mustJSON(u["ownership"]); got != `["alpha","beta"]` {
			t.Errorf("ownership = %s, want trimmed, without empties", got)
		}
		if got := mustJSON(ok(t, anon, "register_user", user("vera", " gamma, ,delta, "))["ownership"]); got != `["gamma","delta"]` {
			t.Errorf("ownership = %s, want trimmed, without empties", got)
		}
	})
}
