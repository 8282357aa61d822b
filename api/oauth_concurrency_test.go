package api_test

import (
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestOAuthConcurrentUse presents one code, then one refresh token, from
// several requests at once: exactly one exchange wins, and however the
// refreshes interleave the token ends with exactly one live successor, so
// the grant's chain of refresh tokens never forks.
func TestOAuthConcurrentUse(t *testing.T) {
	t.Parallel()
	const n = 8
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e, _ := startOAuth(t, engine, nil)
			registerPerson(t, e, "acme", "alice")
			const redirect = "http://localhost:53219/callback"
			_, reg := register(t, e.URL, claudeCodeRegistration)
			clientID := reg["client_id"].(string)
			v, ch := pkce("race")
			loc, page := signIn(t, browser(t), authorizeURL(e.URL, clientID, redirect, ch, nil), "acme", "alice", userPW)
			if loc == nil {
				t.Fatalf("sign-in: %.300s", page)
			}
			form := url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "code_verifier": {v},
				"client_id": {clientID}, "redirect_uri": {redirect}, "resource": {e.URL + "/mcp"}}

			statuses := make([]int, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					statuses[i], _ = tokens(t, e.URL, form)
				})
			}
			wg.Wait()
			var won int
			var rt string
			for _, s := range statuses {
				if s == http.StatusOK {
					won++
				}
			}
			if won != 1 {
				t.Fatalf("%d of %d concurrent exchanges of one code succeeded (%v), want 1", won, n, statuses)
			}
			// The code's other uses revoked that grant, as a replayed code
			// must; the refreshes run on a grant of their own.
			v, ch = pkce("race2")
			loc, _ = signIn(t, browser(t), authorizeURL(e.URL, clientID, redirect, ch, nil), "acme", "alice", userPW)
			form.Set("code", loc.Query().Get("code"))
			form.Set("code_verifier", v)
			status, m := tokens(t, e.URL, form)
			if status != http.StatusOK {
				t.Fatalf("exchange: %d %v", status, m)
			}
			rt = m["refresh_token"].(string)

			for i := range n {
				wg.Go(func() {
					statuses[i], _ = tokens(t, e.URL, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
				})
			}
			wg.Wait()
			for _, s := range statuses {
				if s != http.StatusOK && s != http.StatusServiceUnavailable {
					t.Errorf("concurrent refresh answered %d (%v)", s, statuses)
				}
			}
			var live int
			err := e.DB.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM oauth_tokens t JOIN oauth_tokens o ON o.grant_id = t.grant_id
				WHERE o.hash = $1 AND t.kind = 'refresh' AND t.rotated_at IS NULL`, auth.HashToken(rt)).Scan(&live)
			if err != nil {
				t.Fatal(err)
			}
			if live != 1 {
				t.Errorf("after %d concurrent refreshes the grant has %d live refresh tokens, want 1", n, live)
			}
		})
	}
}
