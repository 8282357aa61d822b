package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk/db/dbtest"
)

// TestOAuthMCPGoClient signs in with mcp-go's client OAuth, a second client
// written independently of the official SDK: its first request is
// refused as needing authorization (mcp-go refuses itself before sending
// anything when it holds no token), it registers, the person signs in on
// the page, it exchanges the code, and its calls then act as the person.
func TestOAuthMCPGoClient(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			e, _ := startOAuth(t, engine, nil)
			registerPerson(t, e, "acme", "alice")
			ctx, cancel := context.WithTimeout(dbtest.Operator(), 30*time.Second)
			defer cancel()

			const redirect = "http://localhost:8977/callback"
			c, err := client.NewOAuthStreamableHttpClient(e.URL+"/mcp", client.OAuthConfig{
				RedirectURI: redirect, PKCEEnabled: true, TokenStore: transport.NewMemoryTokenStore(),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
			init.Params.ClientInfo = mcp.Implementation{Name: "mcp-go-oauth-test", Version: "1"}
			// mcp-go asks for authorization before its first request when it
			// holds no token, so the flow starts at initialize; it finds the
			// authorization server from the well-known metadata.
			_, err = c.Initialize(ctx, init)
			if !client.IsOAuthAuthorizationRequiredError(err) {
				t.Fatalf("initialize without a token: %v; want an OAuth authorization-required error", err)
			}
			h := client.GetOAuthHandler(err)
			if err := h.RegisterClient(ctx, "mcp-go test agent"); err != nil {
				t.Fatalf("register: %v", err)
			}
			verifier, err := transport.GenerateCodeVerifier()
			if err != nil {
				t.Fatal(err)
			}
			state, _ := transport.GenerateState()
			authURL, err := h.GetAuthorizationURL(ctx, state, transport.GenerateCodeChallenge(verifier))
			if err != nil {
				t.Fatal(err)
			}
			loc, page := signIn(t, browser(t), authURL, "acme", "alice", userPW)
			if loc == nil || loc.Query().Get("code") == "" {
				t.Fatalf("sign-in: %v %.300s", loc, page)
			}
			if err := h.ProcessAuthorizationResponse(ctx, loc.Query().Get("code"), loc.Query().Get("state"), verifier); err != nil {
				t.Fatalf("exchange: %v", err)
			}
			if _, err := c.Initialize(ctx, init); err != nil {
				t.Fatalf("initialize after sign-in: %v", err)
			}
			whoami := mcp.CallToolRequest{}
			whoami.Params.Name = "whoami"
			res, err := c.CallTool(ctx, whoami)
			if err != nil || res.IsError {
				t.Fatalf("whoami after sign-in: %v %+v", err, res)
			}
			user, _ := res.StructuredContent.(map[string]any)["user"].(map[string]any)
			if user["user_id"] != "alice" || user["org_id"] != "acme" {
				t.Errorf("whoami = %v, want acme/alice", res.StructuredContent)
			}
		})
	}
}
