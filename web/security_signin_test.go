package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestSignInIsThrottledAsLoginIs: the web sign-in counts failed passwords
// with the MCP login tool, on the same counters: after the most failures
// an account may have, a right password is refused by both, whichever of
// the two the failures came through; and an account not locked still
// signs in.
func TestSignInIsThrottledAsLoginIs(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		max := auth.DefaultConfig().MaxFailures
		c := s.anonymous(t)
		signIn := func(user, pw string) (int, string) {
			return c.post("/signin", url.Values{"org_id": {"acme"}, "user_id": {user}, "password": {pw}})
		}
		anon := testkit.Connect(t, s.URL, testkit.EraSessions, "")
		login := func(user, pw string) string {
			res := testkit.Call(t, anon, "login", map[string]any{"org_id": "acme", "user_id": user, "password": pw})
			if !res.IsError {
				return "ok"
			}
			return testkit.Text(res)
		}
		// Failures on the web lock the MCP login too...
		for range max {
			if code, _ := signIn("bob", "wrong-password"); code != http.StatusUnauthorized {
				t.Fatalf("wrong password on the web: %d", code)
			}
		}
		if code, body := signIn("bob", userPW); code != http.StatusTooManyRequests || !strings.Contains(body, "retry after") {
			t.Errorf("web sign-in after %d failures: %d, want 429", max, code)
		}
		if got := login("bob", userPW); !strings.Contains(got, "rate limited") {
			t.Errorf("MCP login after %d failures on the web: %s", max, got)
		}
		// ...and failures through MCP lock the web sign-in.
		for range max {
			if got := login("carol", "wrong-password"); !strings.Contains(got, "unauthorized") {
				t.Fatalf("wrong password through MCP: %s", got)
			}
		}
		if code, _ := signIn("carol", userPW); code != http.StatusTooManyRequests {
			t.Errorf("web sign-in after %d failures through MCP: %d, want 429", max, code)
		}
		if code, _ := signIn("alice", userPW); code != http.StatusOK {
			t.Errorf("alice, not locked: %d", code)
		}
	})
}
