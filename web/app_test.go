package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
)

// TestAppNeedsASession: every section of the app sends a signed-out browser
// to the sign-in page, which brings it back afterwards; a form posted
// without a session changes nothing and says so.
func TestAppNeedsASession(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		anon := s.anonymous(t)
		code, body := anon.get("/inbox")
		if code != http.StatusOK || !strings.Contains(body, `name="next" value="/inbox"`) {
			t.Fatalf("signed-out /inbox: %d, want the sign-in page returning to /inbox:\n%s", code, body)
		}
		code, body = anon.post("/signin", url.Values{"org_id": {"acme"}, "user_id": {"bob"}, "password": {userPW}, "next": {"/inbox"}})
		if code != http.StatusOK || !strings.Contains(body, "Sign out") || !strings.Contains(body, "bob · acme") {
			t.Fatalf("after sign-in: %d\n%s", code, body)
		}
		if code, body := s.anonymous(t).post("/signin", url.Values{"org_id": {"acme"}, "user_id": {"bob"}, "password": {"wrong-password"}}); code != http.StatusUnauthorized || !strings.Contains(body, `role="alert"`) {
			t.Fatalf("wrong password: %d\n%s", code, body)
		}
	})
}
