package api_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/outbound"
	"github.com/ctalk/ctalk/oauth"
)

// Registration bodies real clients send.
const (
	claudeCodeRegistration = `{"client_name":"Claude Code (ctalk)","redirect_uris":["http://localhost:53219/callback"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none","application_type":"native"}`
	cursorRegistration     = `{"client_name":"Cursor","redirect_uris":["cursor://anysphere.cursor-retrieval/oauth/user-ctalk/callback","https://cursor.com/oauth/callback","http://localhost:8787/callback"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`
	vscodeRegistration     = `{"client_name":"Visual Studio Code","client_uri":"https://code.visualstudio.com","redirect_uris":["http://127.0.0.1:33418","https://vscode.dev/redirect"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none","scope":""}`
)

// register posts a registration body and returns the status and answer.
func register(t *testing.T, base, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(base+oauth.RegisterPath, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("registration answer is not JSON: %v", err)
	}
	return resp.StatusCode, m
}

// pkce returns a verifier and its S256 challenge.
func pkce(seed string) (verifier, challenge string) {
	verifier = strings.Repeat(seed, 50)[:50]
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorizeURL builds an authorization request; params override the
// defaults (resource = the server's /mcp, S256).
func authorizeURL(base, clientID, redirect, challenge string, params map[string]string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "state": {"st-1"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "resource": {base + "/mcp"}}
	for k, v := range params {
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
	}
	return base + oauth.AuthorizePath + "?" + q.Encode()
}

// tokens exchanges or refreshes and returns the status and answer.
func tokens(t *testing.T, base string, form url.Values) (int, map[string]any) {
	t.Helper()
	status, body := postForm(t, base+oauth.TokenPath, form)
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("token answer %q is not JSON", body)
	}
	return status, m
}

func TestOAuthRefusals(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e, clk := startOAuth(t, engine, nil)
			registerPerson(t, e, "acme", "alice")
			registerPerson(t, e, "other", "bob")
			const redirect = "http://localhost:53219/callback"
			status, reg := register(t, e.URL, claudeCodeRegistration)
			if status != http.StatusCreated {
				t.Fatalf("register: %d %v", status, reg)
			}
			clientID := reg["client_id"].(string)

			// code signs alice in (or orgID/userID) and returns a code for verifier.
			code := func(t *testing.T, verifier string, who ...string) string {
				t.Helper()
				_, challenge := pkce(verifier)
				org, user := "acme", "alice"
				if len(who) == 2 {
					org, user = who[0], who[1]
				}
				loc, page := signIn(t, browser(t), authorizeURL(e.URL, clientID, redirect, challenge, nil), org, user, userPW)
				if loc == nil || loc.Query().Get("code") == "" {
					t.Fatalf("no code: %v %.300s", loc, page)
				}
				if got := loc.Query().Get("iss"); got != e.URL {
					t.Fatalf("iss = %q, want %q", got, e.URL)
				}
				if got := loc.Query().Get("state"); got != "st-1" {
					t.Fatalf("state = %q, want st-1", got)
				}
				return loc.Query().Get("code")
			}
			exchange := func(code, verifier string) (int, map[string]any) {
				return tokens(t, e.URL, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
					"client_id": {clientID}, "redirect_uri": {redirect}, "resource": {e.URL + "/mcp"}})
			}
			refresh := func(rt string) (int, map[string]any) {
				return tokens(t, e.URL, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {clientID}})
			}
			// authorizeError opens an authorization URL and returns the
			// error the browser is sent back with.
			authorizeError := func(t *testing.T, u string) string {
				t.Helper()
				loc, page := signIn(t, browser(t), u, "acme", "alice", userPW)
				if loc == nil {
					t.Fatalf("no redirect: %.300s", page)
				}
				return loc.Query().Get("error")
			}

			t.Run("plain PKCE", func(t *testing.T) {
				if got := authorizeError(t, authorizeURL(e.URL, clientID, redirect, strings.Repeat("a", 43), map[string]string{"code_challenge_method": "plain"})); got != "invalid_request" {
					t.Errorf("error = %q, want invalid_request", got)
				}
			})
			t.Run("missing PKCE", func(t *testing.T) {
				if got := authorizeError(t, authorizeURL(e.URL, clientID, redirect, "", map[string]string{"code_challenge_method": ""})); got != "invalid_request" {
					t.Errorf("error = %q, want invalid_request", got)
				}
			})
			t.Run("missing resource", func(t *testing.T) {
				_, ch := pkce("m")
				if got := authorizeError(t, authorizeURL(e.URL, clientID, redirect, ch, map[string]string{"resource": ""})); got != "invalid_target" {
					t.Errorf("error = %q, want invalid_target", got)
				}
			})
			t.Run("wrong resource", func(t *testing.T) {
				_, ch := pkce("w")
				if got := authorizeError(t, authorizeURL(e.URL, clientID, redirect, ch, map[string]string{"resource": "https://elsewhere.example/mcp"})); got != "invalid_target" {
					t.Errorf("error = %q, want invalid_target", got)
				}
			})
			t.Run("wrong verifier", func(t *testing.T) {
				c := code(t, "right")
				wrong, _ := pkce("wrong")
				if status, m := exchange(c, wrong); status != http.StatusBadRequest || m["error"] != "invalid_grant" {
					t.Errorf("exchange with the wrong verifier: %d %v", status, m)
				}
			})
			t.Run("reused code", func(t *testing.T) {
				v, _ := pkce("reuse")
				c := code(t, "reuse")
				status, first := exchange(c, v)
				if status != http.StatusOK {
					t.Fatalf("first exchange: %d %v", status, first)
				}
				if status, m := exchange(c, v); status != http.StatusBadRequest || m["error"] != "invalid_grant" {
					t.Errorf("second exchange: %d %v, want invalid_grant", status, m)
				}
				if status, _ := mcpStatus(t, e.URL, first["access_token"].(string)); status != http.StatusUnauthorized {
					t.Errorf("the first exchange's access token after the code's reuse: %d, want 401", status)
				}
			})
			t.Run("unregistered redirect", func(t *testing.T) {
				_, ch := pkce("u")
				loc, page := signIn(t, browser(t), authorizeURL(e.URL, clientID, "http://localhost:53219/elsewhere", ch, nil), "acme", "alice", userPW)
				if loc != nil || !strings.Contains(page, "is not registered") {
					t.Errorf("unregistered redirect: sent to %v, page %.200q", loc, page)
				}
				loc, _ = signIn(t, browser(t), authorizeURL(e.URL, clientID, "https://attacker.example/callback", ch, nil), "acme", "alice", userPW)
				if loc != nil {
					t.Errorf("unregistered https redirect: sent to %v", loc)
				}
			})
			t.Run("loopback redirect on another port", func(t *testing.T) {
				_, ch := pkce("p")
				loc, page := signIn(t, browser(t), authorizeURL(e.URL, clientID, "http://localhost:61000/callback", ch, nil), "acme", "alice", userPW)
				if loc == nil || loc.Port() != "61000" || loc.Query().Get("code") == "" {
					t.Errorf("loopback on another port: sent to %v, page %.200q", loc, page)
				}
			})
			t.Run("non-loopback http redirect", func(t *testing.T) {
				for _, r := range []string{"http://example.com/callback", "javascript:alert(1)", "data:text/html,hi", "https://example.com/cb#frag"} {
					if status, m := register(t, e.URL, `{"client_name":"x","redirect_uris":["`+r+`"]}`); status != http.StatusBadRequest || m["error"] != "invalid_redirect_uri" {
						t.Errorf("register %s: %d %v, want invalid_redirect_uri", r, status, m)
					}
				}
			})
			t.Run("client registration bodies", func(t *testing.T) {
				for name, body := range map[string]string{"Claude Code": claudeCodeRegistration, "Cursor": cursorRegistration, "VS Code": vscodeRegistration} {
					if status, m := register(t, e.URL, body); status != http.StatusCreated || m["token_endpoint_auth_method"] != "none" {
						t.Errorf("%s registration: %d %v", name, status, m)
					}
				}
			})
			t.Run("expired access token", func(t *testing.T) {
				v, _ := pkce("exp")
				_, tok := exchange(code(t, "exp"), v)
				ok(t, e.Connect(t, eraStateless, tok["access_token"].(string)), "whoami", nil)
				clk.advance(oauth.DefaultConfig().AccessTTL + time.Second)
				if status, _ := mcpStatus(t, e.URL, tok["access_token"].(string)); status != http.StatusUnauthorized {
					t.Errorf("expired access token: %d, want 401", status)
				}
				if status, m := refresh(tok["refresh_token"].(string)); status != http.StatusOK {
					t.Errorf("refresh of an expired access token's grant: %d %v", status, m)
				}
			})
			t.Run("member's credentials revoked by an admin", func(t *testing.T) {
				v, _ := pkce("revoked")
				_, tok := exchange(code(t, "revoked"), v)
				ok(t, e.Connect(t, eraStateless, tok["access_token"].(string)), "whoami", nil)
				if _, err := e.Auth.RevokeUserTokens(dbtest.Operator(), "acme", "alice"); err != nil {
					t.Fatal(err)
				}
				if status, _ := mcpStatus(t, e.URL, tok["access_token"].(string)); status != http.StatusUnauthorized {
					t.Errorf("access token after revoke_user_tokens: %d, want 401", status)
				}
				if status, m := refresh(tok["refresh_token"].(string)); status != http.StatusBadRequest {
					t.Errorf("refresh after revoke_user_tokens: %d %v, want 400", status, m)
				}
			})
			t.Run("refresh retried within the grace", func(t *testing.T) {
				v, _ := pkce("grace")
				_, t1 := exchange(code(t, "grace"), v)
				if status, m := refresh(t1["refresh_token"].(string)); status != http.StatusOK {
					t.Fatalf("first refresh: %d %v", status, m)
				}
				if status, m := refresh(t1["refresh_token"].(string)); status != http.StatusOK {
					t.Errorf("retried refresh within the grace: %d %v", status, m)
				}
			})
			t.Run("refreshed-away refresh token", func(t *testing.T) {
				v, _ := pkce("away")
				_, t1 := exchange(code(t, "away"), v)
				_, t2 := refresh(t1["refresh_token"].(string))
				status, t3 := refresh(t2["refresh_token"].(string))
				if status != http.StatusOK {
					t.Fatalf("second refresh: %d %v", status, t3)
				}
				// Within the grace: its successor was used, so this is
				// reuse, not a retry.
				if status, m := refresh(t1["refresh_token"].(string)); status != http.StatusBadRequest || m["error"] != "invalid_grant" {
					t.Errorf("refreshed-away token after its successor was used: %d %v, want invalid_grant", status, m)
				}
				if status, m := refresh(t3["refresh_token"].(string)); status != http.StatusBadRequest {
					t.Errorf("newest refresh token after a reuse was detected: %d %v, want the grant revoked", status, m)
				}
				if status, _ := mcpStatus(t, e.URL, t3["access_token"].(string)); status != http.StatusUnauthorized {
					t.Errorf("newest access token after a reuse was detected: %d, want 401", status)
				}
			})
			t.Run("retry after the grace", func(t *testing.T) {
				v, _ := pkce("late")
				_, t1 := exchange(code(t, "late"), v)
				_, t2 := refresh(t1["refresh_token"].(string))
				clk.advance(oauth.DefaultConfig().RefreshGrace + time.Second)
				if status, m := refresh(t1["refresh_token"].(string)); status != http.StatusBadRequest || m["error"] != "invalid_grant" {
					t.Errorf("replaced token after the grace: %d %v, want invalid_grant", status, m)
				}
				if status, _ := mcpStatus(t, e.URL, t2["access_token"].(string)); status != http.StatusUnauthorized {
					t.Errorf("successor's access token after a reuse was detected: %d, want 401", status)
				}
			})
			t.Run("token of another org", func(t *testing.T) {
				v, _ := pkce("org")
				_, tok := exchange(code(t, "org", "other", "bob"), v)
				cs := e.Connect(t, eraStateless, tok["access_token"].(string))
				who := ok(t, cs, "whoami", nil)
				if u := who["user"].(map[string]any); u["org_id"] != "other" || u["user_id"] != "bob" {
					t.Errorf("whoami = %v, want other/bob", u)
				}
				fail(t, cs, "get_user_profile", map[string]any{"user_id": "alice"}, "not found")
			})
			t.Run("token for another resource", func(t *testing.T) {
				v, _ := pkce("aud")
				_, tok := exchange(code(t, "aud"), v)
				req, _ := http.NewRequest(http.MethodPost, e.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`))
				req.Host = "other-host.example"
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("MCP-Protocol-Version", eraStateless)
				req.Header.Set("Authorization", "Bearer "+tok["access_token"].(string))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "issued for") {
					t.Errorf("token at another resource: %d %s, want 401", resp.StatusCode, b)
				}
			})
			t.Run("revocation endpoint", func(t *testing.T) {
				v, _ := pkce("revoke")
				_, tok := exchange(code(t, "revoke"), v)
				if status, body := postForm(t, e.URL+oauth.RevokePath, url.Values{"token": {tok["refresh_token"].(string)}}); status != http.StatusOK {
					t.Fatalf("revoke: %d %s", status, body)
				}
				if status, _ := mcpStatus(t, e.URL, tok["access_token"].(string)); status != http.StatusUnauthorized {
					t.Errorf("access token after its refresh token was revoked: %d, want 401", status)
				}
			})
			t.Run("unused registration expires", func(t *testing.T) {
				_, m := register(t, e.URL, claudeCodeRegistration)
				clk.advance(oauth.DefaultConfig().RegistrationTTL + time.Second)
				_, ch := pkce("old")
				loc, page := signIn(t, browser(t), authorizeURL(e.URL, m["client_id"].(string), redirect, ch, nil), "acme", "alice", userPW)
				if loc != nil || !strings.Contains(page, "expired") {
					t.Errorf("expired registration: sent to %v, page %.200q", loc, page)
				}
				// A registration that was used to sign in does not expire.
				code(t, "still")
			})
			t.Run("metadata document on a private address", func(t *testing.T) {
				doc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Write([]byte(`{}`))
				}))
				defer doc.Close()
				_, ch := pkce("cimd")
				id := doc.URL + "/client.json"
				loc, page := signIn(t, browser(t), authorizeURL(e.URL, id, redirect, ch, nil), "acme", "alice", userPW)
				if loc != nil || !strings.Contains(page, outbound.Unreachable) {
					t.Errorf("metadata document on loopback: sent to %v, page %.300q", loc, page)
				}
			})
		})
	}
}

// TestOAuthRegistrationLimit checks that registrations from one address are
// rate-limited, with a JSON answer that says when to retry.
func TestOAuthRegistrationLimit(t *testing.T) {
	t.Parallel()
	e, _ := startOAuth(t, db.SQLite, func(c *oauth.Config) { c.RegisterRate, c.RegisterBurst = 0.001, 2 })
	for i := range 3 {
		status, m := register(t, e.URL, claudeCodeRegistration)
		if want := http.StatusCreated; i == 2 {
			if status != http.StatusTooManyRequests || m["error"] != "too_many_requests" {
				t.Errorf("registration past the limit: %d %v", status, m)
			}
		} else if status != want {
			t.Fatalf("registration %d: %d %v", i, status, m)
		}
	}
}

// TestOAuthMetadataDocumentClient checks Client ID Metadata Documents: a
// document whose client_id is its own URL is used, with its loopback
// redirect matching on any port; one naming another client_id, or over the
// size cap, is refused.
// The server fetches without the address guard here, since the test's
// document server is on loopback.
func TestOAuthMetadataDocumentClient(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			var docURL string
			doc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				id := docURL + "/good.json"
				if r.URL.Path == "/big.json" {
					w.Write([]byte(`{"client_name":"` + strings.Repeat("x", 70<<10) + `"}`))
					return
				}
				if r.URL.Path == "/missing.json" {
					http.NotFound(w, r)
					return
				}
				if r.URL.Path == "/bad.json" {
					id = "https://claude.ai/oauth/claude-code-client-metadata"
				}
				json.NewEncoder(w).Encode(map[string]any{"client_id": id, "client_name": "Doc Client",
					"redirect_uris": []string{"http://localhost/callback", "http://127.0.0.1/callback"}, "token_endpoint_auth_method": "none"})
			}))
			defer doc.Close()
			docURL = doc.URL
			e, _ := startOAuth(t, engine, func(c *oauth.Config) { c.MetadataFetch = doc.Client() })
			registerPerson(t, e, "acme", "alice")
			v, ch := pkce("doc")

			loc, page := signIn(t, browser(t), authorizeURL(e.URL, doc.URL+"/bad.json", "http://localhost:5000/callback", ch, nil), "acme", "alice", userPW)
			if loc != nil || !strings.Contains(page, "not its own URL") {
				t.Errorf("document with another client_id: sent to %v, page %.300q", loc, page)
			}

			loc, page = signIn(t, browser(t), authorizeURL(e.URL, doc.URL+"/big.json", "http://localhost:5000/callback", ch, nil), "acme", "alice", userPW)
			if loc != nil || !strings.Contains(page, "is over 65536 bytes") {
				t.Errorf("oversized document: sent to %v, page %.300q", loc, page)
			}

			// A document the server cannot fetch, as Claude Code's on a
			// server without outbound internet: the page says how to
			// register a client here and connect with its id.
			loc, page = signIn(t, browser(t), authorizeURL(e.URL, doc.URL+"/missing.json", "http://localhost:5000/callback", ch, nil), "acme", "alice", userPW)
			for _, want := range []string{"answered HTTP 404", "curl -s " + e.URL + "/oauth/register", "claude mcp add --transport http --client-id ctalk_client_… ctalk " + e.URL + "/mcp"} {
				if loc != nil || !strings.Contains(html.UnescapeString(page), want) {
					t.Errorf("unfetchable document: sent to %v, page lacks %q: %.600q", loc, want, page)
				}
			}

			id := doc.URL + "/good.json"
			loc, page = signIn(t, browser(t), authorizeURL(e.URL, id, "http://localhost:5000/callback", ch, nil), "acme", "alice", userPW)
			if loc == nil || loc.Query().Get("code") == "" {
				t.Fatalf("metadata document client: sent to %v, page %.300q", loc, page)
			}
			status, m := tokens(t, e.URL, url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "code_verifier": {v},
				"client_id": {id}, "redirect_uri": {"http://localhost:5000/callback"}, "resource": {e.URL + "/mcp"}})
			if status != http.StatusOK {
				t.Fatalf("exchange: %d %v", status, m)
			}
		})
	}
}
