package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

// TestSCIMPage: an admin makes a SCIM token on /admin/scim, shown on that
// response only, which the identity provider's calls then carry; revoking
// it refuses them. A member cannot reach the page, and where the org asks
// for passkeys no token is made without a fresh verification.
func TestSCIMPage(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		alice, bob := s.newClient(t, "acme", "alice"), s.newClient(t, "acme", "bob")
		if _, body := alice.get("/admin/scim"); !strings.Contains(body, s.URL+"/scim/v2") || !strings.Contains(body, "No SCIM token") {
			t.Fatalf("the page: %s", body)
		}
		if _, body := alice.get("/admin"); !strings.Contains(body, `href="/admin/scim"`) {
			t.Error("the admin page does not link to /admin/scim")
		}
		for _, path := range []string{"/admin/scim", "/admin/scim/revoke"} {
			if code, _ := bob.post(path, url.Values{"label": {"mine"}, "days": {"90"}}); code != http.StatusForbidden {
				t.Errorf("a member's POST %s: %d, want 403", path, code)
			}
		}
		if code, body := alice.post("/admin/scim", url.Values{"label": {"Okta"}, "days": {"7"}}); code != http.StatusBadRequest || !strings.Contains(body, "[30 90 365]") || !strings.Contains(body, `aria-describedby="scim-error"`) {
			t.Errorf("a lifetime not offered: %d", code)
		}
		code, body := alice.post("/admin/scim", url.Values{"label": {"Okta"}, "days": {"90"}})
		raw := regexp.MustCompile(`ctalk_[A-Za-z0-9_-]{43}`).FindString(body)
		if code != http.StatusOK || raw == "" {
			t.Fatalf("making a token: %d %s", code, body)
		}
		if _, page := alice.get("/admin/scim"); strings.Contains(page, raw) || !strings.Contains(page, "Okta") {
			t.Error("the page shows the token again, or not its label")
		}
		if n := apitest.CountRows(t, s.DB, `SELECT COUNT(*) FROM scim_tokens WHERE hash = $1`, auth.HashToken(raw)); n != 1 {
			t.Error("the token is not stored as its SHA-256")
		}
		if n := apitest.CountRows(t, s.DB, `SELECT COUNT(*) FROM scim_tokens WHERE hash = $1 OR id = $1 OR label = $1`, raw); n != 0 {
			t.Error("the token is stored as it is")
		}
		s.waitAuditEvent(t, "acme", "alice", "web:create_scim_token", "ok", "")
		if code := scimStatus(t, s.URL, raw); code != http.StatusOK {
			t.Fatalf("the new token at /scim/v2/Users: %d", code)
		}
		tokens, err := s.SCIM.Tokens(dbtest.Operator(), "acme")
		if err != nil || len(tokens) != 1 {
			t.Fatalf("tokens %v %v", tokens, err)
		}
		if code, _ := alice.post("/admin/scim/revoke", url.Values{"id": {tokens[0].ID}}); code != http.StatusOK {
			t.Fatalf("revoking: %d", code)
		}
		if code := scimStatus(t, s.URL, raw); code != http.StatusUnauthorized {
			t.Errorf("a revoked token at /scim/v2/Users: %d, want 401", code)
		}
		if code, body := alice.post("/admin/scim/revoke", url.Values{"id": {tokens[0].ID}}); code != http.StatusNotFound || !strings.Contains(body, "no live SCIM token") {
			t.Errorf("revoking twice: %d", code)
		}

		if _, err := s.Orgs.SetSettings(dbtest.Operator(), "acme", orgs.Settings{ApprovalFactor: orgs.FactorPasskey}); err != nil {
			t.Fatal(err)
		}
		if code, body := alice.post("/admin/scim", url.Values{"label": {"Entra"}, "days": {"90"}}); code != http.StatusUnauthorized || !strings.Contains(body, "Verify it is you") || strings.Contains(body, "ctalk_") {
			t.Errorf("a token without a passkey where the org asks for one: %d", code)
		}
		if tokens, _ := s.SCIM.Tokens(dbtest.Operator(), "acme"); len(tokens) != 0 {
			t.Errorf("a token was made without the passkey: %v", tokens)
		}
	})
}

// scimStatus is the status of a SCIM list of users with token.
func scimStatus(t *testing.T, base, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/scim/v2/Users", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
