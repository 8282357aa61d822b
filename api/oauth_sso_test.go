package api_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/outbound"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/oauth"
	"github.com/ctalk/ctalk/sso"
)

// TestOAuthSignInThroughSSO: an MCP client (the official SDK's OAuth
// client) connects to a server whose org signs in through its OpenID
// Connect provider; the person chooses "Sign in with your organization's
// SSO" on the authorization page, signs in at the provider, allows the
// client, and the agent then calls tools as that person.
func TestOAuthSignInThroughSSO(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			ctx := ctalk.WithOrg(dbtest.Operator(), "acme")
			op := testkit.NewOpenIDProvider(t, "ctalk-acme", "client-secret-0123456789")
			dns := testkit.NewDNSServer(t)
			ssoCfg := sso.Config{HTTP: outbound.Client(outbound.Options{AllowLoopback: true}), AllowHTTP: true, Resolver: dns.Resolver()}
			e := start(t, engine, options{Wiring: func(w *app.Wiring) { w.SSO = ssoCfg }})
			registerPerson(t, e, "acme", "alice")
			if _, err := e.Orgs.SetEmail(ctx, "acme", "alice", "alice@acme.test"); err != nil {
				t.Fatal(err)
			}
			admin := ctalk.Caller{OrgID: "acme", UserID: "alice", Admin: true}
			ss := sso.New(e.DB, ssoCfg, e.Orgs)
			if _, err := ss.Configure(ctx, admin, sso.Settings{Issuer: op.URL, ClientID: op.ClientID,
				ClientSecret: op.ClientSecret, LinkByEmail: true}); err != nil {
				t.Fatal(err)
			}
			dom, err := ss.AddDomain(ctx, admin, "acme.test")
			if err != nil {
				t.Fatal(err)
			}
			dns.SetTXT(dom.RecordName(), dom.RecordValue())
			if _, err := ss.VerifyDomain(ctx, admin, dom.ID); err != nil {
				t.Fatal(err)
			}
			op.SetUser(testkit.OIDCUser{Subject: "idp-alice", Email: "alice@acme.test", EmailVerified: true})

			b := browser(t)
			fetcher := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
				loc, err := signInBySSO(b, args.URL)
				if err != nil {
					return nil, err
				}
				q := loc.Query()
				return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
			}
			h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
				DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
					ClientName: "SSO test agent", RedirectURIs: []string{"http://localhost:8976/callback"},
					GrantTypes: []string{"authorization_code", "refresh_token"}, TokenEndpointAuthMethod: "none",
				}},
				AuthorizationCodeFetcher: fetcher,
			})
			if err != nil {
				t.Fatal(err)
			}
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "sso-oauth-test", Version: "1"}, nil).Connect(cctx,
				&mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp", OAuthHandler: h, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			who := ok(t, cs, "whoami", nil)
			if got := who["user"].(map[string]any)["user_id"]; got != "alice" {
				t.Fatalf("whoami after SSO = %v, want alice", got)
			}
			if op.Tokens() != 1 {
				t.Errorf("the provider issued %d ID tokens, want 1", op.Tokens())
			}
		})
	}
}

var (
	ssoForm      = regexp.MustCompile(`(?s)<form method="post" action="/sso/start">(.*?)</form>`)
	continueHref = regexp.MustCompile(`href="([^"]+)" id="sso-continue"`)
)

// signInBySSO opens an authorization URL in b, takes the page's single
// sign-on, follows the provider back, allows the client on the consent
// page, and returns where the server sends the browser: the client's
// redirect URI with the code.
func signInBySSO(b *http.Client, authURL string) (*url.URL, error) {
	step := func(resp *http.Response, err error) (int, string, string, error) {
		if err != nil {
			return 0, "", "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.Header.Get("Location"), nil
	}
	base := strings.SplitN(authURL, oauth.AuthorizePath, 2)[0]
	_, page, _, err := step(b.Get(authURL))
	if err != nil {
		return nil, err
	}
	m := ssoForm.FindStringSubmatch(page)
	if m == nil {
		return nil, fmt.Errorf("the authorization page offers no single sign-on: %.300s", page)
	}
	form := formFields(m[1])
	form.Set("org", "acme")
	_, page, _, err = step(b.PostForm(base+"/sso/start", form))
	if err != nil {
		return nil, err
	}
	c := continueHref.FindStringSubmatch(page)
	if c == nil {
		return nil, fmt.Errorf("no way on to the provider: %.300s", page)
	}
	loc := html.UnescapeString(c[1])
	// The provider, the callback, and back to the authorization's consent
	// page.
	for i := 0; ; i++ {
		code, body, next, err := step(b.Get(loc))
		if err != nil {
			return nil, err
		}
		if code == http.StatusOK && strings.Contains(body, `value="allow"`) {
			page = body
			break
		}
		if i == 3 || code != http.StatusFound && code != http.StatusSeeOther {
			return nil, fmt.Errorf("%s: %d %.300s", loc, code, body)
		}
		if strings.HasPrefix(next, "/") {
			next = base + next
		}
		loc = next
	}
	form = formFields(page)
	form.Set("action", "allow")
	code, body, next, err := step(b.PostForm(base+oauth.AuthorizePath, form))
	if err != nil {
		return nil, err
	}
	if code != http.StatusFound {
		return nil, fmt.Errorf("consent: %d %.300s", code, body)
	}
	return url.Parse(next)
}
