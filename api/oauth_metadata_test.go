package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/mcpclient"
	"github.com/ctalk/ctalk/internal/testkit"
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
// credential at all, on a connection opted in to anonymous set-up,
// initialize, tools/list and the account tools that take passwords work,
// and a tool that acts as the person gets 401 with the challenge that
// starts the browser sign-in.
func TestAnonymousChallenge(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		anon := e.Connect(t, era, "")
		ctx, cancel := context.WithTimeout(dbtest.Operator(), 10*time.Second)
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

// anonymousPost posts a JSON-RPC request of method with params to path on
// base in era, with no credential and the headers hdr, and returns the
// status, the WWW-Authenticate challenge and the body. In the stateless era
// params carry the protocol version, as that era asks.
func anonymousPost(t *testing.T, base, path, era, method, params string, hdr map[string]string) (int, string, string) {
	t.Helper()
	if era == eraStateless {
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + eraStateless + `","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
		if params == "{}" {
			params = "{" + meta + "}"
		} else {
			params = strings.TrimSuffix(params, "}") + "," + meta + "}"
		}
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", era)
	if era == eraStateless {
		req.Header.Set("Mcp-Method", method)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

// TestAnonymousConnectionIsChallenged: a connection made with no credential
// is refused with 401 and the OAuth challenge, so that an OAuth client
// (Claude Code) starts the sign-in as soon as it connects: initialize in the
// 2025-11-25 era, every request but a tool call in the stateless one. The
// client that opts in to anonymous set-up, by /mcp?setup=1 or by the header
// X-Ctalk-Setup, connects as before and is offered the set-up tools; a
// signed-in client is unaffected.
func TestAnonymousConnectionIsChallenged(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		want := `Bearer resource_metadata="` + e.URL + oauth.ResourceMetadataPath + `", scope="` + oauth.Scope + `"`
		challenged := func(t *testing.T, what string, status int, challenge, body string) {
			t.Helper()
			if status != http.StatusUnauthorized || challenge != want || !strings.Contains(body, e.URL+"/mcp?setup=1") {
				t.Errorf("%s without a credential: %d, challenge %q, %s; want 401 with %q and a message naming /mcp?setup=1", what, status, challenge, body, want)
			}
		}
		ctx, cancel := context.WithTimeout(dbtest.Operator(), 30*time.Second)
		defer cancel()

		// The official SDK, with no credential and no opt-in, cannot connect.
		if cs, err := testkit.Dial(ctx, e.URL, era, testkit.Transport{}); err == nil {
			cs.Close()
			t.Fatal("connected without a credential or the opt-in to set-up")
		} else if !strings.Contains(err.Error(), "Unauthorized") {
			t.Fatalf("connect without a credential: %v; want 401 Unauthorized", err)
		}
		opening := []string{"initialize"}
		if era == eraStateless {
			opening = []string{"server/discover", "tools/list", "ping", "resources/list"}
		}
		for _, method := range opening {
			params := "{}"
			if method == "initialize" {
				params = `{"protocolVersion":"` + era + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`
			}
			status, challenge, body := anonymousPost(t, e.URL, "/mcp", era, method, params, nil)
			challenged(t, method, status, challenge, body)
			status, challenge, body = anonymousPost(t, e.URL, "/mcp?setup=1", era, method, params, map[string]string{"X-Ctalk-Setup": "0"})
			challenged(t, method+" with the header saying 0 over the parameter", status, challenge, body)
			status, _, body = anonymousPost(t, e.URL, "/mcp?setup=maybe", era, method, params, nil)
			if status != http.StatusBadRequest || !strings.Contains(body, `setup \"maybe\" is neither 1 nor 0`) {
				t.Errorf("%s with setup=maybe: %d %s; want 400 saying what setup takes", method, status, body)
			}
		}

		// Opted in, by the header or by the URL's parameter: a connection
		// offered the set-up tools, as before.
		for how, cs := range map[string]*mcp.ClientSession{
			"the header":    e.Connect(t, era, ""),
			"the parameter": sdkConnect(t, ctx, e.URL+"/mcp?setup=1", era),
		} {
			if era == eraSessions && cs.ID() == "" {
				t.Errorf("opted in by %s: no session id", how)
			}
			res, err := cs.ListTools(ctx, &mcp.ListToolsParams{})
			if err != nil {
				t.Fatalf("opted in by %s: tools/list: %v", how, err)
			}
			offered := map[string]bool{}
			for _, tool := range res.Tools {
				offered[tool.Name] = true
			}
			for _, name := range []string{"register_organization", "register_user", "login"} {
				if !offered[name] {
					t.Errorf("opted in by %s: %s not offered", how, name)
				}
			}
			// The opt-in lets no one act as a member.
			refused(t, cs, "whoami")
		}
		anon := e.Connect(t, era, "")
		ok(t, anon, "register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": adminPW})
		ok(t, anon, "register_user", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": "alice",
			"name": "Alice", "password": userPW, "ownership": []string{"a"}})
		tok := e.Login(t, anon, "acme", "alice")

		if era == eraStateless {
			// A stateless call of a set-up tool carries its own password:
			// it needs no opt-in, as before.
			status, _, body := anonymousPost(t, e.URL, "/mcp", era, "tools/call",
				`{"name":"login","arguments":{"org_id":"acme","user_id":"alice","password":"`+userPW+`"}}`, map[string]string{"Mcp-Name": "login"})
			if status != http.StatusOK || !strings.Contains(body, "ctalk_") {
				t.Errorf("login without the opt-in: %d %.300s; want 200 with a token", status, body)
			}
		}

		// A signed-in client connects and works as before, opt-in or not.
		for _, path := range []string{"/mcp", "/mcp?setup=1"} {
			cs := sdkConnectWith(t, ctx, e.URL+path, era, testkit.Bearer(tok))
			if got := ok(t, cs, "whoami", nil)["user"].(map[string]any)["user_id"]; got != "alice" {
				t.Errorf("signed in at %s: whoami is %v, want alice", path, got)
			}
		}
	})
}

// sdkConnect opens an official-SDK session to endpoint in era, with no
// credential and no header of its own, closed with the test.
func sdkConnect(t *testing.T, ctx context.Context, endpoint, era string) *mcp.ClientSession {
	t.Helper()
	return sdkConnectWith(t, ctx, endpoint, era, testkit.Transport{})
}

// sdkConnectWith is sdkConnect through the transport rt.
func sdkConnectWith(t *testing.T, ctx context.Context, endpoint, era string, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	cs, err := mcpclient.Open(ctx, endpoint, mcpclient.Options{HTTP: &http.Client{Transport: rt}, Era: era})
	if err != nil {
		t.Fatalf("connect to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
