package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
)

// TestLocalSignInOnlyOnALocalStore: the password-less sign-in link of
// ctalk serve --local does not exist on any other server, whatever the
// token.
func TestLocalSignInOnlyOnALocalStore(t *testing.T) {
	t.Parallel()
	s := start(t, db.SQLite)
	s.org(t, "acme")
	for _, token := range []string{"anything", "ctalk_x", ""} {
		if code, body := s.anonymous(t).get("/local/signin/" + token); code != http.StatusNotFound || strings.Contains(body, `action="/signout"`) {
			t.Errorf("/local/signin/%s on a server: %d", token, code)
		}
	}
}
