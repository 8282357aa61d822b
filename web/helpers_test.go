package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/syncbuf"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/orgs"
)

// site is one ctalk server on a real port over a fresh database, with the
// services behind it.
type site struct {
	URL string
	DB  *db.DB
	*app.Assembly
	logs *syncbuf.Buffer
	// clock is the database's "now", which a test may move forward.
	clock *offsetClock
	// dns is where the org's email domains are proven, for the sites that
	// startSSO starts.
	dns *testkit.DNSServer
}

// offsetClock is the time now, moved forward by what a test added.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) now() time.Time {
	return time.Now().UTC().Truncate(time.Microsecond).Add(time.Duration(c.offset.Load()))
}

// advance moves the clock forward by d.
func (c *offsetClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// Fixture passwords.
const (
	adminPW = apitest.AdminPW
	userPW  = apitest.UserPW
)

// start runs a ctalk server on a fresh database of the engine, on
// 127.0.0.1:0; adjust, when given, changes its configuration first.
func start(t testing.TB, engine db.Engine, adjust ...func(*app.Wiring)) *site {
	t.Helper()
	d := dbtest.Open(t, engine)
	clock := &offsetClock{}
	d.Now = clock.now
	s := apitest.Start(t, d, adjust...)
	return &site{URL: s.URL, DB: s.DB, Assembly: s.Assembly, logs: s.Logs, clock: clock}
}

// withMail has the server send its mail to m, with links to itself.
func withMail(m *mailtest.Server) func(*app.Wiring) {
	return func(w *app.Wiring) {
		w.Mail = m.Config()
		w.API.PublicURL = apitest.SelfURL
	}
}

// org creates an organization with alice (admin), bob and carol (members),
// each with the password userPW.
func (s *site) org(t testing.TB, orgID string) {
	t.Helper()
	ctx := ctalk.WithOrg(dbtest.Operator(), orgID)
	if _, err := s.Orgs.Register(ctx, orgs.NewOrg{ID: orgID, Name: "Org " + orgID, AdminPassword: adminPW}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct{ id, role string }{{"alice", orgs.RoleAdmin}, {"bob", orgs.RoleMember}, {"carol", orgs.RoleMember}} {
		name := strings.ToUpper(u.id[:1]) + u.id[1:]
		if _, err := s.Orgs.AddUser(ctx, orgID, orgs.NewUser{ID: u.id, Name: name, Password: userPW, Role: u.role,
			Ownership: []string{u.id + "-repo"}}); err != nil {
			t.Fatal(err)
		}
	}
}

// each runs fn on both engines.
func each(t *testing.T, fn func(t *testing.T, engine db.Engine)) {
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) { fn(t, engine) })
	}
}

// agent connects a user's agent over MCP with a login token, through the
// official Go SDK client in the sessions era.
func (s *site) agent(t testing.TB, orgID, userID string) *mcp.ClientSession {
	t.Helper()
	tok, _, err := s.Auth.Login(ctalk.WithOrg(dbtest.Operator(), orgID), orgID, userID, userPW, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return testkit.Connect(t, s.URL, testkit.EraSessions, tok)
}

// browser is a signed-out browser tab of its own (its own cookies) on the
// test's Chromium.
func browser(t testing.TB, chromium context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(chromium, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	return ctx
}

// signIn signs a person in on the app's sign-in page with the keyboard, and
// waits for the page it lands on.
func signIn(t testing.TB, ctx context.Context, base, orgID, userID string) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/signin"),
		chromedp.WaitVisible(chromedp.ID("org_id")),
		chromedp.SendKeys(chromedp.ID("org_id"), orgID),
		chromedp.KeyEvent(kb.Tab),
		chromedp.KeyEvent(userID),
		chromedp.KeyEvent(kb.Tab),
		chromedp.KeyEvent(userPW),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS("header.top")),
	)
	if err != nil {
		t.Fatalf("sign in as %s/%s: %v", orgID, userID, err)
	}
}

// client is a browser without a browser: a cookie jar that signs in
// through the app's forms and posts forms with their CSRF token, for tests
// of what the server does with a form.
type client struct {
	t    testing.TB
	base string
	http *http.Client
}

// newClient signs a person in and returns their client.
func (s *site) newClient(t testing.TB, orgID, userID string) *client {
	t.Helper()
	return s.newClientAt(t, s.URL, orgID, userID)
}

// newClientAt is newClient at base, another name of the site (localhost).
func (s *site) newClientAt(t testing.TB, base, orgID, userID string) *client {
	t.Helper()
	c := s.anonymous(t)
	c.base = base
	if code, body := c.post("/signin", url.Values{"org_id": {orgID}, "user_id": {userID}, "password": {userPW}}); code != http.StatusOK {
		t.Fatalf("sign in as %s/%s: %d %s", orgID, userID, code, body)
	}
	return c
}

// anonymous is a client with no one signed in.
func (s *site) anonymous(t testing.TB) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: s.URL, http: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// get fetches a page, following redirects, and returns the final status and
// body.
func (c *client) get(path string) (int, string) {
	c.t.Helper()
	resp, err := c.http.Get(c.base + path)
	if err != nil {
		c.t.Fatal(err)
	}
	return read(c.t, resp)
}

// post sends a form with the CSRF token of this client's cookie (fetching
// the sign-in page first when it has none), following redirects.
func (c *client) post(path string, form url.Values) (int, string) {
	c.t.Helper()
	if c.csrf() == "" {
		c.get("/signin")
	}
	form.Set("csrf", c.csrf())
	return c.postRaw(path, form)
}

// postRaw sends a form as it is, without adding a CSRF token.
func (c *client) postRaw(path string, form url.Values) (int, string) {
	c.t.Helper()
	resp, err := c.http.PostForm(c.base+path, form)
	if err != nil {
		c.t.Fatal(err)
	}
	return read(c.t, resp)
}

func (c *client) csrf() string { return c.cookie("ctalk_csrf") }

// cookie is the value of the cookie name this client holds for the site,
// "" for none.
func (c *client) cookie(name string) string {
	u, _ := url.Parse(c.base)
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

func read(t testing.TB, resp *http.Response) (int, string) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// acme is user id of org acme, calling.
func acme(id string) ctalk.Caller { return ctalk.Caller{OrgID: "acme", UserID: id} }

// inChromium runs fn, a test that drives the pages in a browser, on SQLite
// alone, with a Chromium of its own; where CTALK_TEST_ENGINES leaves SQLite
// out it skips, saying so, before Chromium starts. What such a test adds to
// the tests of the same pages' forms and handlers, which run on both
// engines, is the browser's part: markup, script, focus and keys, cookies,
// WebAuthn, push, all above the database and alike on either engine; run
// on both, it started a second Chromium for each, and in CI's race pass
// drove it against a server under the detector. The pages whose live
// updates take Postgres's LISTEN path keep a browser test on each engine
// (TestLiveUpdateReachesAnOpenPage, TestChannelPageLive).
func inChromium(t *testing.T, fn func(t *testing.T, chromium context.Context, engine db.Engine)) {
	t.Helper()
	t.Run(string(db.SQLite), func(t *testing.T) {
		if !slices.Contains(dbtest.Engines, db.SQLite) {
			t.Skipf("skipping the browser test: it runs on SQLite, which CTALK_TEST_ENGINES=%s leaves out", os.Getenv("CTALK_TEST_ENGINES"))
		}
		fn(t, testkit.Browser(t), db.SQLite)
	})
}
