package web_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/oauth"
)

// TestClientNamesShowTheirHiddenCharacters: the name an OAuth client gives
// itself at registration is its own words, and the person approves the
// client by it: on the sign-in and consent pages of an authorization, a
// direction-changing or invisible character in it is made visible, so a
// client cannot pass for another ("Trusted App" written backwards after
// U+202E).
func TestClientNamesShowTheirHiddenCharacters(t *testing.T) {
	t.Parallel()
	s := start(t, db.SQLite)
	s.org(t, "acme")
	const name = "Good\u200bApp \u202eppA detsurT"
	authorize := authorization(t, s, name)
	for who, c := range map[string]*client{"signed out (sign-in page)": s.anonymous(t), "signed in (consent page)": s.newClient(t, "acme", "alice")} {
		code, page := c.get(authorize)
		if code != http.StatusOK || !strings.Contains(page, "asks to act as you") {
			t.Fatalf("%s: %d\n%s", who, code, page)
		}
		if strings.ContainsAny(page, "\u200b\u202e") {
			t.Errorf("%s: the client's name carries its hidden characters as they are", who)
		}
		if !strings.Contains(page, "Good") || !strings.Contains(page, "ppA detsurT") {
			t.Errorf("%s: the client's name is not shown", who)
		}
	}
}

// authorization registers a public OAuth client named name and returns
// the path of an authorization it asks for: the sign-in page that names
// it, or its consent page for someone signed in.
func authorization(t *testing.T, s *site, name string) string {
	t.Helper()
	reg, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": []string{"http://127.0.0.1:9/cb"},
		"grant_types": []string{"authorization_code"}, "response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
	resp, err := http.Post(s.URL+oauth.RegisterPath, "application/json", strings.NewReader(string(reg)))
	if err != nil {
		t.Fatal(err)
	}
	var registered struct {
		ID string `json:"client_id"`
	}
	json.NewDecoder(resp.Body).Decode(&registered)
	resp.Body.Close()
	sum := sha256.Sum256([]byte(strings.Repeat("v", 50)))
	q := url.Values{"response_type": {"code"}, "client_id": {registered.ID}, "redirect_uri": {"http://127.0.0.1:9/cb"}, "state": {"s"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {s.URL + "/mcp"}}
	return oauth.AuthorizePath + "?" + q.Encode()
}
