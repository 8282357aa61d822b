package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/oauth"
)

// tokensRevokeForm matches a revoke form of the tokens page: its kind and id.
var tokensRevokeForm = regexp.MustCompile(`name="kind" value="([a-z]+)">\s*<input type="hidden" name="id" value="([^"]+)">`)

// tokensListed returns the kind and id of every credential on a tokens page.
func tokensListed(page string) [][2]string {
	var out [][2]string
	for _, m := range tokensRevokeForm.FindAllStringSubmatch(page, -1) {
		out = append(out, [2]string{m[1], html.UnescapeString(m[2])})
	}
	return out
}

// tokenIDOf returns the id of the only credential of kind on a tokens page.
func tokenIDOf(t *testing.T, page, kind string) string {
	t.Helper()
	var ids []string
	for _, kv := range tokensListed(page) {
		if kv[0] == kind {
			ids = append(ids, kv[1])
		}
	}
	if len(ids) != 1 {
		t.Fatalf("the tokens page lists %d credentials of kind %s, want 1:\n%s", len(ids), kind, page)
	}
	return ids[0]
}

// agentWorks calls whoami as an agent and reports whether it was let through.
func agentWorks(cs *mcp.ClientSession) bool {
	ctx, cancel := context.WithTimeout(dbtest.Operator(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	return err == nil && !res.IsError
}

var tokensHiddenField = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// oauthAccessToken connects a client named name as the person signed in on c,
// through the OAuth code flow with PKCE, and returns its access token.
func (s *site) oauthAccessToken(t *testing.T, c *client, name string) string {
	t.Helper()
	reg, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": []string{"http://127.0.0.1:9/cb"},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
	resp, err := http.Post(s.URL+oauth.RegisterPath, "application/json", strings.NewReader(string(reg)))
	if err != nil {
		t.Fatal(err)
	}
	var client struct {
		ID string `json:"client_id"`
	}
	json.NewDecoder(resp.Body).Decode(&client)
	resp.Body.Close()
	verifier := strings.Repeat("v", 50)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {client.ID}, "redirect_uri": {"http://127.0.0.1:9/cb"}, "state": {"s"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {s.URL + "/mcp"}}
	code, page := c.get(oauth.AuthorizePath + "?" + q.Encode())
	if code != http.StatusOK {
		t.Fatalf("consent page: %d\n%s", code, page)
	}
	form := url.Values{}
	for _, m := range tokensHiddenField.FindAllStringSubmatch(page[:strings.Index(page, "</form>")], -1) {
		if m[1] != "csrf" {
			form.Add(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
		}
	}
	form.Set("action", "allow")
	form.Set("csrf", c.csrf())
	noFollow := *c.http
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err = noFollow.PostForm(s.URL+oauth.AuthorizePath, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("consent answered %d to %q, want a redirect with a code", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, err = http.PostForm(s.URL+oauth.TokenPath, url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"code_verifier": {verifier}, "redirect_uri": {"http://127.0.0.1:9/cb"}, "client_id": {client.ID}, "resource": {s.URL + "/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		Access string `json:"access_token"`
	}
	json.NewDecoder(resp.Body).Decode(&tok)
	if tok.Access == "" {
		t.Fatalf("token exchange: %d", resp.StatusCode)
	}
	return tok.Access
}

// newPersonalToken makes a personal token on the tokens page and returns
// it and the page that showed it.
func newPersonalToken(t *testing.T, c *client, label string) (string, string) {
	t.Helper()
	code, page := c.post("/tokens", url.Values{"label": {label}, "days": {"30"}})
	m := regexp.MustCompile(`id="token-value" readonly value="(ctalk_[A-Za-z0-9_-]+)"`).FindStringSubmatch(page)
	if code != http.StatusOK || m == nil {
		t.Fatalf("create personal token: %d\n%s", code, page)
	}
	return m[1], page
}

// TestTokensPage: the page lists my OAuth clients, login and personal
// tokens and browser sessions (this one marked), and revoking each kind
// refuses it at once: agents on /mcp from their next call, a browser from
// its next page.
func TestTokensPage(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		bob := s.newClient(t, "acme", "bob")
		other := s.newClient(t, "acme", "bob")
		viaOAuth := testkit.Connect(t, s.URL, testkit.EraSessions, s.oauthAccessToken(t, bob, "Test Agent"))
		viaLogin := s.agent(t, "acme", "bob")
		personal, _ := newPersonalToken(t, bob, "build server")
		viaPersonal := testkit.Connect(t, s.URL, testkit.EraSessions, personal)
		s.agent(t, "acme", "carol")
		for name, cs := range map[string]*mcp.ClientSession{"oauth": viaOAuth, "login": viaLogin, "personal": viaPersonal} {
			if !agentWorks(cs) {
				t.Fatalf("the %s agent is refused before any revocation", name)
			}
		}
		_, page := bob.get("/tokens")
		for _, want := range []string{"Test Agent", "Login token", "Personal token “build server”", "This browser", "Another browser"} {
			if !strings.Contains(page, want) {
				t.Errorf("the tokens page does not show %q", want)
			}
		}
		if got := len(tokensListed(page)); got != 5 {
			t.Fatalf("listed %d credentials, want 5 (carol's are not bob's):\n%s", got, page)
		}
		for _, c := range []struct {
			kind string
			cs   *mcp.ClientSession
		}{{"oauth", viaOAuth}, {"login", viaLogin}, {"personal", viaPersonal}} {
			code, body := bob.post("/tokens/revoke", url.Values{"kind": {c.kind}, "id": {tokenIDOf(t, page, c.kind)}})
			if code != http.StatusOK || !strings.Contains(body, "Revoked.") {
				t.Fatalf("revoke %s: %d\n%s", c.kind, code, body)
			}
			if agentWorks(c.cs) {
				t.Errorf("the %s agent still works after its revocation", c.kind)
			}
		}
		// The other browser's session: its next page is the sign-in.
		var otherID string
		for _, kv := range tokensListed(page) {
			if kv[0] == "session" && kv[1] != tokensThisBrowser(t, page) {
				otherID = kv[1]
			}
		}
		if code, _ := bob.post("/tokens/revoke", url.Values{"kind": {"session"}, "id": {otherID}}); code != http.StatusOK {
			t.Fatalf("revoke the other browser: %d", code)
		}
		if _, body := other.get("/tokens"); !strings.Contains(body, `id="org_id"`) {
			t.Fatalf("the revoked browser still sees the app:\n%s", body)
		}
		_, page = bob.get("/tokens")
		if got := tokensListed(page); len(got) != 1 || got[0][0] != "session" {
			t.Fatalf("after revoking, listed %v, want only this browser", got)
		}
		code, body := bob.post("/tokens/revoke", url.Values{"kind": {"session"}, "id": {tokensThisBrowser(t, page)}})
		if code != http.StatusOK || !strings.Contains(body, `id="org_id"`) {
			t.Fatalf("signing this browser out: %d\n%s", code, body)
		}
		if _, body := bob.get("/tokens"); !strings.Contains(body, `id="org_id"`) {
			t.Fatal("this browser is still signed in after revoking its session")
		}
	})
}

// tokensThisBrowser returns the id of the session a tokens page was asked from.
func tokensThisBrowser(t *testing.T, page string) string {
	t.Helper()
	m := regexp.MustCompile(`name="id" value="([^"]+)">\s*<button type="submit" class="danger">Sign out this browser`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no session is marked as this browser:\n%s", page)
	}
	return m[1]
}

// TestPersonalTokenShownOnce: a personal token is shown on the response to
// the form that made it and nowhere else (not on the page afterwards, not in
// the server's log, not in the audit log), with the command that connects
// Claude Code; it works on /mcp and the REST mirror.
func TestPersonalTokenShownOnce(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		bob := s.newClient(t, "acme", "bob")
		raw, page := newPersonalToken(t, bob, "ci")
		if want := `claude mcp add --transport http ctalk ` + s.URL + `/mcp --header "Authorization: Bearer ` + raw + `"`; !strings.Contains(page, want) {
			t.Errorf("the page does not show the command %q", want)
		}
		if _, page := bob.get("/tokens"); strings.Contains(page, raw) || !strings.Contains(page, "Personal token “ci”") {
			t.Errorf("the tokens page shows the token again, or does not list it")
		}
		cs := testkit.Connect(t, s.URL, testkit.EraSessions, raw)
		who := testkit.OK(t, cs, "whoami", nil)
		if u := who["user"].(map[string]any); u["user_id"] != "bob" {
			t.Fatalf("whoami with the personal token: %v", who)
		}
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/v1/channels", nil)
		req.Header.Set("Authorization", "Bearer "+raw)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("REST mirror with the personal token: %d", resp.StatusCode)
		}
		// Wait for the creation's audit event, then look for the token in
		// every audit row and log line.
		testkit.WaitFor(t, 10*time.Second, "the audit event of the token's creation", func() (bool, error) {
			var n int
			err := s.DB.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM audit_events WHERE tool = 'web:create_personal_token' AND user_id = 'bob'`).Scan(&n)
			return n == 1, err
		})
		rows, err := s.DB.Query(dbtest.Operator(), `SELECT tool, outcome, ids, request_id, user_id FROM audit_events`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var a, b, c, d, e string
			rows.Scan(&a, &b, &c, &d, &e)
			if strings.Contains(a+b+c+d+e, raw) || strings.Contains(a+b+c+d+e, raw[6:20]) {
				t.Errorf("an audit row holds the token: %s %s %s", a, b, c)
			}
		}
		if strings.Contains(s.logs.String(), raw[6:20]) {
			t.Error("the server's log holds the token")
		}
	})
}

// TestTokensOfOthers: an id of another person's credential, in my org or
// another, is not found, and nothing is revoked; bad input is refused.
func TestTokensOfOthers(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.org(t, "globex")
		bob := s.newClient(t, "acme", "bob")
		carol := s.newClient(t, "acme", "carol")
		stranger := s.newClient(t, "globex", "bob")
		carolAgent := testkit.Connect(t, s.URL, testkit.EraSessions, s.oauthAccessToken(t, carol, "Carol's agent"))
		strangerToken, _ := newPersonalToken(t, stranger, "theirs")
		strangerAgent := testkit.Connect(t, s.URL, testkit.EraSessions, strangerToken)
		_, carolPage := carol.get("/tokens")
		_, strangerPage := stranger.get("/tokens")
		for _, kv := range append(tokensListed(carolPage), tokensListed(strangerPage)...) {
			code, body := bob.post("/tokens/revoke", url.Values{"kind": {kv[0]}, "id": {kv[1]}})
			if code != http.StatusNotFound || !strings.Contains(body, "not found among yours") {
				t.Errorf("revoking another's %s: %d, want 404", kv[0], code)
			}
		}
		if !agentWorks(carolAgent) || !agentWorks(strangerAgent) {
			t.Error("another person's agent was revoked")
		}
		if _, body := carol.get("/tokens"); !strings.Contains(body, "This browser") {
			t.Error("carol's browser was signed out")
		}
		if code, _ := bob.post("/tokens/revoke", url.Values{"kind": {"password"}, "id": {"x"}}); code != http.StatusBadRequest {
			t.Errorf("unknown kind: %d, want 400", code)
		}
		if code, body := bob.post("/tokens", url.Values{"label": {""}, "days": {"30"}}); code != http.StatusBadRequest || !strings.Contains(body, "label is required") {
			t.Errorf("empty label: %d", code)
		}
		if code, body := bob.post("/tokens", url.Values{"label": {"x"}, "days": {"1000"}}); code != http.StatusBadRequest || !strings.Contains(body, "choose one of") {
			t.Errorf("bad lifetime: %d", code)
		}
	})
}

// TestLoginTokenNamedByItsClient: a login token made by the login tool is
// listed with the name the MCP client gave itself, as text, so that the
// person can tell their login tokens apart.
func TestLoginTokenNamedByItsClient(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		bob := s.newClient(t, "acme", "bob")
		s.agent(t, "acme", "bob") // a login with no client's name
		named := testkit.Connect(t, s.URL, testkit.EraSessions, "")
		testkit.OK(t, named, "login", map[string]any{"org_id": "acme", "user_id": "bob", "password": userPW})
		_, page := bob.get("/tokens")
		for _, want := range []string{"<td>Login token</td>", "<td>Login token of ctalk-test 1</td>"} {
			if !strings.Contains(page, want) {
				t.Errorf("the tokens page does not show %q:\n%s", want, page)
			}
		}
	})
}
