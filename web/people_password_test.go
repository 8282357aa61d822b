package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestChangePasswordFromProfile: a wrong current password or a short new
// one changes nothing and says so next to its field; the right one
// revokes my agents' tokens and my other browser sessions, and keeps this
// browser signed in; a form without its CSRF token is refused.
func TestChangePasswordFromProfile(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		ctx := dbtest.Operator()
		agentToken, _, err := s.Auth.Login(ctx, "acme", "bob", userPW, "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		carolToken, _, err := s.Auth.Login(ctx, "acme", "carol", userPW, "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		bob := s.newClient(t, "acme", "bob")
		otherBrowser := s.newClient(t, "acme", "bob")

		const newPW = "a-much-longer-secret"
		code, page := bob.post("/profile/password", url.Values{"current_password": {"not-my-password"}, "new_password": {newPW}})
		if code != http.StatusUnauthorized {
			t.Fatalf("wrong current password: %d, want 401", code)
		}
		mustShow(t, "wrong current password", page, `id="current_password-error"`, "not your current password")
		code, page = bob.post("/profile/password", url.Values{"current_password": {userPW}, "new_password": {"short"}})
		if code != http.StatusBadRequest {
			t.Fatalf("short new password: %d, want 400", code)
		}
		mustShow(t, "short new password", page, `id="new_password-error"`, "at least 8")
		if code, _ := bob.postRaw("/profile/password", url.Values{"current_password": {userPW}, "new_password": {newPW}}); code != http.StatusForbidden {
			t.Errorf("without CSRF: %d, want 403", code)
		}
		if _, err := s.Auth.Authenticate(ctx, agentToken); err != nil {
			t.Fatalf("a refused change revoked the agent's token: %v", err)
		}
		if _, err := s.Auth.CheckPassword(ctx, "acme", "bob", userPW, "127.0.0.1"); err != nil {
			t.Fatalf("a refused change changed the password: %v", err)
		}

		_, page = bob.get("/profile")
		mustShow(t, "the password form", page, "Change password and sign out my agents and other browsers", "This browser stays signed in")
		code, page = bob.post("/profile/password", url.Values{"current_password": {userPW}, "new_password": {newPW}})
		if code != http.StatusOK {
			t.Fatalf("change: %d\n%s", code, page)
		}
		mustShow(t, "after the change", page, "Your password is changed", "this browser stays signed in", "bob · acme")
		if code, page := bob.get("/asked"); code != http.StatusOK || !strings.Contains(page, "Sign out") {
			t.Errorf("this browser after the change: %d, want still signed in", code)
		}
		if _, page := otherBrowser.get("/asked"); !strings.Contains(page, `name="next" value="/asked"`) {
			t.Errorf("the other browser after the change is still signed in")
		}
		if _, err := s.Auth.Authenticate(ctx, agentToken); ctalk.ErrorCode(err) != ctalk.EUnauthorized {
			t.Errorf("the agent's token after the change: %v, want unauthorized", err)
		}
		if _, err := s.Auth.Authenticate(ctx, carolToken); err != nil {
			t.Errorf("carol's token after bob's change: %v", err)
		}
		if _, err := s.Auth.CheckPassword(ctx, "acme", "bob", newPW, "127.0.0.1"); err != nil {
			t.Errorf("the new password: %v", err)
		}
	})
}
