package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/oauth"
)

func getJSON(t *testing.T, u string) (int, http.Header, map[string]any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("GET %s: the answer is not JSON: %v", u, err)
	}
	return resp.StatusCode, resp.Header, m
}

// TestOAuthMetadata checks the discovery documents clients read first, and
// that they, the registration and the token endpoint answer browsers (CORS)
// and answer errors in JSON.
func TestOAuthMetadata(t *testing.T) {
	t.Parallel()
	e := start(t, db.SQLite)
	for _, path := range []string{oauth.RootResourceMetadata, oauth.ResourceMetadataPath} {
		status, h, m := getJSON(t, e.URL+path)
		if status != http.StatusOK || m["resource"] != e.URL+"/mcp" || mustJSON(m["authorization_servers"]) != `["`+e.URL+`"]` {
			t.Errorf("%s: %d %v", path, status, m)
		}
		if h.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: no CORS", path)
		}
	}
	status, _, m := getJSON(t, e.URL+oauth.AuthServerMetadataPath)
	want := map[string]string{
		"issuer": `"` + e.URL + `"`, "code_challenge_methods_supported": `["S256"]`, "response_types_supported": `["code"]`,
		"token_endpoint_auth_methods_supported": `["none"]`, "registration_endpoint": `"` + e.URL + oauth.RegisterPath + `"`,
		"client_id_metadata_document_supported": "true", "authorization_response_iss_parameter_supported": "true",
		"authorization_endpoint": `"` + e.URL + oauth.AuthorizePath + `"`, "token_endpoint": `"` + e.URL + oauth.TokenPath + `"`,
	}
	if status != http.StatusOK {
		t.Fatalf("authorization server metadata: %d", status)
	}
	for k, v := range want {
		if got := mustJSON(m[k]); got != v {
			t.Errorf("authorization server metadata %s = %s, want %s", k, got, v)
		}
	}
	if _, ok := m["jwks_uri"]; ok {
		t.Error("authorization server metadata has a jwks_uri; strict clients refuse an empty one")
	}

	for _, path := range []string{oauth.TokenPath, oauth.RegisterPath} {
		req, _ := http.NewRequest(http.MethodOptions, e.URL+path, nil)
		req.Header.Set("Origin", "http://localhost:6274")
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
			t.Errorf("preflight %s: %d %v", path, resp.StatusCode, resp.Header)
		}
	}
	if status, _, m := getJSON(t, e.URL+"/.well-known/oauth-protected-resource/elsewhere"); status != http.StatusNotFound || m["error"] == nil {
		t.Errorf("unknown well-known path: %d %v, want a JSON 404", status, m)
	}
	if status, body := postForm(t, e.URL+oauth.TokenPath, nil); status != http.StatusBadRequest || errorCode(body) != "invalid_request" {
		t.Errorf("empty token request: %d %s, want a JSON invalid_request", status, body)
	}
}

// TestOAuthIssuerIsOrigin checks that with PUBLIC_URL set the issuer is its
// bare origin and the resource its /mcp, whatever Host a request carries.
func TestOAuthIssuerIsOrigin(t *testing.T) {
	t.Parallel()
	e := start(t, db.SQLite, options{API: func(c *api.Config) { c.PublicURL = "https://ctalk.example.com" }})
	_, _, m := getJSON(t, e.URL+oauth.AuthServerMetadataPath)
	if m["issuer"] != "https://ctalk.example.com" || m["token_endpoint"] != "https://ctalk.example.com"+oauth.TokenPath {
		t.Errorf("metadata = %v", m)
	}
	_, _, m = getJSON(t, e.URL+oauth.ResourceMetadataPath)
	if m["resource"] != "https://ctalk.example.com/mcp" {
		t.Errorf("resource = %v", m["resource"])
	}
}

// TestAnonymousChallenge checks which calls need identity: with no
// credential at all, initialize, tools/list and the account tools that take
// passwords work, and a tool that acts as the person gets 401 with the
// challenge that starts the browser sign-in.
func TestAnonymousChallenge(t *testing.T) {
	each(t, func(t *testing.T, e *env, era string) {
		anon := e.Connect(t, era, "")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := anon.ListTools(ctx, &mcp.ListToolsParams{}); err != nil {
			t.Fatalf("tools/list without a token: %v", err)
		}
		ok(t, anon, "register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": adminPW})
		ok(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "alice",
			"name": "Alice", "password": userPW, "ownership": []string{"a"}})
		tok := e.Login(t, anon, "acme", "alice")
		ok(t, anon, "whoami", map[string]any{"auth_token": tok})
		fail(t, anon, "whoami", map[string]any{"auth_token": "garbage"}, "not a ctalk token")
		refused(t, anon, "whoami")

		status, challenge := mcpStatus(t, e.URL, "")
		want := `Bearer resource_metadata="` + e.URL + oauth.ResourceMetadataPath + `", scope="` + oauth.Scope + `"`
		if status != http.StatusUnauthorized || challenge != want {
			t.Errorf("whoami without a credential: %d, challenge %q; want 401 with %q", status, challenge, want)
		}
		if status, challenge := mcpStatus(t, e.URL, "ctalk_at_"+strings.Repeat("A", 43)); status != http.StatusUnauthorized ||
			!strings.Contains(challenge, `error="invalid_token"`) || !strings.Contains(challenge, "resource_metadata=") {
			t.Errorf("unknown access token: %d, challenge %q", status, challenge)
		}
	})
}
