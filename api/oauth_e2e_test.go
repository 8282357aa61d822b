package api_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/oauth"
)

// startOAuth runs a server whose OAuth settings are adjusted by fn, with a
// database clock the test can move forward.
func startOAuth(t *testing.T, engine db.Engine, fn func(*oauth.Config)) (*env, *clock) {
	t.Helper()
	cfg := oauth.DefaultConfig()
	if fn != nil {
		fn(&cfg)
	}
	// The clock is set before the server starts: its background work
	// reads it from then on.
	clk := &clock{}
	d := dbtest.Open(t, engine)
	d.Now = clk.now
	e := start(t, engine, options{SharedWith: &env{DB: d}, API: func(c *api.Config) {
		c.OAuth = &cfg
		// A second name the server answers to, so that a token presented
		// there passes the host check and meets the audience check.
		c.AllowedOrigins = []string{"http://other-host.example"}
	}})
	return e, clk
}

// clock is the real time plus an offset a test moves forward.
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time {
	return time.Now().UTC().Add(time.Duration(c.offset.Load())).Truncate(time.Microsecond)
}
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// registerPerson registers org orgID on e with one user.
func registerPerson(t *testing.T, e *env, orgID, userID string) {
	t.Helper()
	anon := e.Connect(t, eraSessions, "")
	ok(t, anon, "register_organization", map[string]any{"org_id": orgID, "name": "Org " + orgID, "admin_password": adminPW})
	ok(t, anon, "register_user", map[string]any{"org_id": orgID, "admin_password": adminPW, "user_id": userID,
		"name": userID, "password": userPW, "ownership": []string{userID + "-repo"}})
}

// browser is a person's browser: a cookie jar that does not follow
// redirects, so that the test sees where the sign-in sends it.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// formFields returns the hidden fields of the first form of a page.
func formFields(page string) url.Values {
	if i := strings.Index(page, "</form>"); i >= 0 {
		page = page[:i]
	}
	v := url.Values{}
	for _, m := range hiddenInput.FindAllStringSubmatch(page, -1) {
		v.Add(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
	}
	return v
}

// signIn opens an authorization URL in b, signs in on the page as
// orgID/userID with password, and returns where the server sends the
// browser next, and the page when it sends it nowhere.
func signIn(t *testing.T, b *http.Client, authURL, orgID, userID, password string) (*url.URL, string) {
	t.Helper()
	resp, err := b.Get(authURL)
	if err != nil {
		t.Fatalf("open sign-in page: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusFound {
		loc, _ := url.Parse(resp.Header.Get("Location"))
		return loc, ""
	}
	if resp.StatusCode != http.StatusOK {
		return nil, string(body)
	}
	form := formFields(string(body))
	form.Set("org_id", orgID)
	form.Set("user_id", userID)
	form.Set("password", password)
	form.Set("action", "signin")
	resp, err = b.PostForm(strings.SplitN(authURL, "?", 2)[0], form)
	if err != nil {
		t.Fatalf("post sign-in form: %v", err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return nil, string(body)
	}
	loc, _ := url.Parse(resp.Header.Get("Location"))
	return loc, ""
}

// recordingSource remembers the last token a token source returned.
type recordingSource struct {
	ts   oauth2.TokenSource
	mu   sync.Mutex
	last *oauth2.Token
}

func (r *recordingSource) Token() (*oauth2.Token, error) {
	tok, err := r.ts.Token()
	if err == nil {
		r.mu.Lock()
		r.last = tok
		r.mu.Unlock()
	}
	return tok, err
}

func (r *recordingSource) lastToken() *oauth2.Token {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// TestOAuthSDKClientEndToEnd is the whole browser sign-in as the official Go
// SDK's OAuth client does it: it connects without a credential, is refused
// with a 401 challenge at once (initialize, or server/discover in the
// stateless era), discovers the authorization server from it, registers, has the person sign in on the
// page, exchanges the code, calls tools as the person, refreshes (access
// tokens here live one second, so every call refreshes), and after logout is
// refused with its access and its refresh token.
func TestOAuthSDKClientEndToEnd(t *testing.T) {
	t.Parallel()
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			for _, era := range eras {
				t.Run(era, func(t *testing.T) {
					e, _ := startOAuth(t, engine, func(c *oauth.Config) { c.AccessTTL = time.Second })
					registerPerson(t, e, "acme", "alice")

					var signIns atomic.Int32
					b := browser(t)
					fetcher := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
						signIns.Add(1)
						loc, page := signIn(t, b, args.URL, "acme", "alice", userPW)
						if loc == nil {
							return nil, fmt.Errorf("sign-in did not redirect: %.300s", page)
						}
						q := loc.Query()
						if q.Get("error") != "" {
							return nil, fmt.Errorf("authorization refused: %s: %s", q.Get("error"), q.Get("error_description"))
						}
						return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
					}
					rec := &recordingSource{}
					h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
						DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
							ClientName: "SDK test agent", RedirectURIs: []string{"http://localhost:8976/callback"},
							GrantTypes: []string{"authorization_code", "refresh_token"}, TokenEndpointAuthMethod: "none",
						}},
						AuthorizationCodeFetcher: fetcher,
						NewTokenSource: func(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
							rec.ts = cfg.TokenSource(ctx, tok)
							return rec, nil
						},
					})
					if err != nil {
						t.Fatal(err)
					}
					client := mcp.NewClient(&mcp.Implementation{Name: "sdk-oauth-test", Version: "1"}, nil)
					ctx, cancel := context.WithTimeout(dbtest.Operator(), 30*time.Second)
					defer cancel()
					cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp", OAuthHandler: h,
						DisableStandaloneSSE: true, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: era})
					if err != nil {
						t.Fatalf("connect: %v", err)
					}
					defer cs.Close()
					if n := signIns.Load(); n != 1 {
						t.Fatalf("connecting asked for sign-in %d times, want once: a connection without a credential is refused with the challenge", n)
					}

					who := ok(t, cs, "whoami", nil)
					if got := who["user"].(map[string]any)["user_id"]; got != "alice" {
						t.Fatalf("whoami after sign-in = %v, want alice", got)
					}
					if n := signIns.Load(); n != 1 {
						t.Fatalf("signed in %d times, want 1", n)
					}
					ok(t, cs, "list_users", nil)
					var rotated int
					e.DB.QueryRow(dbtest.Operator(), `SELECT COUNT(*) FROM oauth_tokens WHERE kind = 'refresh' AND rotated_at IS NOT NULL`).Scan(&rotated)
					if rotated == 0 {
						t.Fatal("no refresh token was rotated: the client never refreshed")
					}
					if n := signIns.Load(); n != 1 {
						t.Fatalf("refreshing asked for sign-in again (%d sign-ins)", n)
					}

					ok(t, cs, "logout", nil)
					last := rec.lastToken()
					if status, challenge := mcpStatus(t, e.URL, last.AccessToken); status != http.StatusUnauthorized || !strings.Contains(challenge, "resource_metadata=") {
						t.Errorf("access token after logout: status %d, challenge %q; want 401 with resource_metadata", status, challenge)
					}
					if code := tokenError(t, e.URL, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {last.RefreshToken}}); code != "invalid_grant" {
						t.Errorf("refresh token after logout: %q, want invalid_grant", code)
					}
				})
			}
		})
	}
}

// mcpStatus calls whoami over plain HTTP with an access token and returns
// the status and the WWW-Authenticate challenge.
func mcpStatus(t *testing.T, base, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", eraStateless)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// tokenError posts a token request that must fail and returns its error
// code.
func tokenError(t *testing.T, base string, form url.Values) string {
	t.Helper()
	status, body := postForm(t, base+oauth.TokenPath, form)
	if status == http.StatusOK {
		t.Fatalf("token request succeeded: %s", body)
	}
	return errorCode(body)
}

var errorField = regexp.MustCompile(`"error":"([^"]*)"`)

func errorCode(body string) string {
	m := errorField.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}
