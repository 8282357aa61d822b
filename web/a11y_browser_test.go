package web_test

import (
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/knowledge"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/sso"
)

// axeSource is axe-core (testdata/axe.min.js, MPL-2.0, its licence beside
// it), the accessibility checker the page tests run in Chromium.
//
//go:embed testdata/axe.min.js
var axeSource string

// axeRules are the rule sets the pages must pass: WCAG 2.0, 2.1 and 2.2 A
// and AA, and axe's best practices (unique landmarks among them).
const axeRules = `["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]`

// axeViolation is one rule a page breaks, with where.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// TestPagesAccessibleInBothThemes runs axe-core on every page of the app,
// an OAuth client's sign-in and consent pages among them, signed out and
// signed in as an admin with questions, drafts, a channel,
// a held post and tokens to show, in the light and the dark theme (the
// browser's prefers-color-scheme, emulated): no page may break any rule,
// whatever its impact: neither a serious one (contrast, a region that
// scrolls but cannot be reached by keyboard) nor a moderate one (landmarks
// that are not unique).
//
// The themes differ only in colours (ctalk.css's dark block sets colour
// properties, and the overview's charts are pictures with a dark source),
// so each page is loaded once: every rule runs in the light theme, then the
// colour rules again in the dark one.
func TestPagesAccessibleInBothThemes(t *testing.T) {
	t.Parallel()
	chromium := testkit.Browser(t)
	s := startSSO(t, db.SQLite, withMail(mailtest.Start(t)))
	q := a11yFixture(t, s)
	a11ySSO(t, s)
	authorize := authorization(t, s, "Claude Code")
	invite, reset := accessLinks(t, s)
	signedOut := []string{"/", "/signin", "/signup", authorize, "/forgot", invite, reset, passkeyLink(t, s)}
	signedIn := []string{authorize, "/inbox", "/inbox/" + q, "/inbox/posts", "/inbox/unknown", "/asked", "/channels", "/channels/general",
		"/people", "/people?topic=backoff", "/people?topic=the", "/knowledge", "/knowledge?q=new+backoff", "/people/bob", "/profile", "/profile/notifications", "/verify", "/tokens", "/admin", "/admin/members/bob", "/admin/members/bob/remove", "/admin/audit", "/admin/audit/verify", "/admin/overview", "/admin/glossary", "/admin/slack", "/admin/sso", "/profile/slack", "/admin/scim"}
	ctx := browser(t, chromium)
	for _, path := range signedOut {
		checkPage(t, ctx, s.URL, path)
	}
	signIn(t, ctx, s.URL, "acme", "alice")
	for _, path := range signedIn {
		checkPage(t, ctx, s.URL, path)
	}
}

// a11ySSO gives acme single sign-on by SAML, with its signing key rolled,
// a domain verified and one pending, so that /admin/sso shows every
// section.
func a11ySSO(t *testing.T, s *site) {
	t.Helper()
	ctx := dbtest.Operator()
	alice := ctalk.Caller{OrgID: "acme", UserID: "alice", Admin: true}
	if _, err := s.SSO.Configure(ctx, alice, sso.Settings{Kind: sso.KindSAML, Metadata: testkit.NewSAMLProvider(t).Metadata(t)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SSO.RollKey(ctx, alice); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"acme.test", "acme-labs.test"} {
		dom, err := s.SSO.AddDomain(ctx, alice, name)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			s.dns.SetTXT(dom.RecordName(), dom.RecordValue())
			if _, err := s.SSO.VerifyDomain(ctx, alice, dom.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// axeColourRules are the rules whose outcome depends on colours alone: all
// a page's theme changes.
const axeColourRules = `["color-contrast", "link-in-text-block"]`

// checkPage opens path and fails the test on every violation axe finds
// there: of any rule in the light theme, of a colour rule in the dark one.
func checkPage(t *testing.T, ctx context.Context, base, path string) {
	t.Helper()
	setScheme(t, ctx, "light")
	run(t, ctx, chromedp.Navigate(base+path), chromedp.WaitReady(chromedp.CSS("main")))
	axeCheck(t, ctx, path, "light", axeSource+";\n", `{runOnly: {type: "tag", values: `+axeRules+`}, resultTypes: ["violations"]}`)
	setScheme(t, ctx, "dark")
	axeCheck(t, ctx, path, "dark", "", `{runOnly: {type: "rule", values: `+axeColourRules+`}, resultTypes: ["violations"]}`)
}

// setScheme emulates the browser's prefers-color-scheme.
func setScheme(t *testing.T, ctx context.Context, scheme string) {
	t.Helper()
	run(t, ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	}))
}

// axeCheck runs axe on the page, after the script load (axe's source, or
// "" once the page has it), with options, in scheme, and fails the test on
// each violation it finds.
func axeCheck(t *testing.T, ctx context.Context, path, scheme, load, options string) {
	t.Helper()
	dark, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`matchMedia("(prefers-color-scheme: dark)").matches`))
	if err != nil || dark != (scheme == "dark") {
		t.Fatalf("%s: the page's scheme is dark=%v (%v), want %s", path, dark, err, scheme)
	}
	found, err := chromedp.Run(ctx, chromedp.Evaluate[[]axeViolation](load+`axe.run(document, `+options+`).then(r =>
			r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
				nodes: v.nodes.map(n => n.target.join(" ") + ": " + n.failureSummary.replace(/\s+/g, " "))})))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s (%s): axe: %v", path, scheme, err)
	}
	for _, v := range found {
		msg := fmt.Sprintf("%s (%s, %s): %s: %s", path, scheme, v.Impact, v.ID, v.Help)
		for _, n := range v.Nodes {
			msg += "\n\t" + n
		}
		t.Error(msg)
	}
}

// a11yFixture fills acme's pages for alice: two questions waiting for her
// (one with two drafts), one she asked that was answered, a channel with
// messages, a post of her agent's held for her approval and an agent's
// login token, and a passkey. It returns the question with two drafts.
func a11yFixture(t *testing.T, s *site) string {
	t.Helper()
	ctx := dbtest.Operator()
	s.org(t, "acme")
	if _, err := s.Orgs.SetSettings(ctx, "acme", orgs.Settings{ChannelPostMode: orgs.ChannelPostHuman}); err != nil {
		t.Fatal(err)
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	q1, err := s.Inbox.Ask(ctx, acme("bob"), inbox.Ask{To: "alice", Text: "Where is the runbook for the payments service?"})
	must(q1, err)
	_, _, err = s.Inbox.Propose(ctx, acme("alice"), q1.ID, "In the wiki.")
	must(nil, err)
	_, _, err = s.Inbox.Propose(ctx, acme("alice"), q1.ID, "In docs/runbook.md of payments-service, with the on-call rota.")
	must(nil, err)
	q2, err := s.Inbox.Ask(ctx, acme("carol"), inbox.Ask{To: "alice", Text: "Can I deploy billing on Friday?"})
	must(q2, err)
	_, _, err = s.Inbox.Propose(ctx, acme("alice"), q2.ID, "Yes, before 3 pm.")
	must(nil, err)
	q3, err := s.Inbox.Ask(ctx, acme("alice"), inbox.Ask{To: "bob", Text: "Which branch has the new backoff?"})
	must(q3, err)
	_, _, err = s.Inbox.Propose(ctx, acme("bob"), q3.ID, "release/2.4")
	must(nil, err)
	sent, err := s.Inbox.Send(ctx, acme("bob"), q3.ID, "release/2.4")
	must(sent, err)
	yes := true
	_, err = s.Knowledge.Publish(ctx, acme("bob"), knowledge.Answered{MessageID: sent.ID, AskerID: "alice", AnswererID: "bob",
		Question: sent.Text, Answer: sent.Answer, AnsweredAt: *sent.ResolvedAt}, &yes, nil)
	must(nil, err)
	// A question on its way: carol asks for more on q2; alice's question
	// to bob went on to carol, who wants more too; a follow-up of q3; and
	// bob is away.
	must(s.Inbox.RequestInfo(ctx, acme("alice"), q2.ID, "Which billing release?"))
	q4, err := s.Inbox.Ask(ctx, acme("alice"), inbox.Ask{To: "bob", Text: "Who approves the invoicing change?"})
	must(q4, err)
	must(s.Inbox.Forward(ctx, acme("bob"), q4.ID, "carol", "Carol owns invoicing."))
	must(s.Inbox.RequestInfo(ctx, acme("carol"), q4.ID, "Which change?"))
	must(s.Inbox.Ask(ctx, acme("alice"), inbox.Ask{To: "bob", Text: "Is it merged yet?", FollowUpOf: q3.ID}))
	must(s.Orgs.SetAway(ctx, acme("bob"), orgs.Away{Until: time.Now().Add(72 * time.Hour), Delegate: "carol", Note: "At the offsite."}))
	alice := acme("alice")
	must(s.Channels.Create(ctx, alice, channels.NewChannel{Name: "general", Topic: "Everything", Members: []string{"bob", "carol"}}))
	must(s.Channels.Post(ctx, alice, channels.Post{Channel: "general", Text: "Deploy freeze from Friday 3 pm.", Priority: "urgent"}))
	must(s.Channels.Post(ctx, acme("bob"), channels.Post{Channel: "general", Text: "@alice noted, thanks."}))
	agent := s.agent(t, "acme", "alice")
	res := testkit.OK(t, agent, "post_message", map[string]any{"channel": "general", "text": "Status: billing 3.2 is on staging."})
	if res["status"] != "pending_approval" {
		t.Fatalf("post_message = %v, want it held", res)
	}
	// A passkey of alice's for her profile's list and the step-up page
	// (only its name and times are shown; it verifies nothing).
	must(nil, s.DB.Write(ctx, func(q db.Querier) error {
		_, err := q.Exec(ctx, `INSERT INTO passkeys (id, org_id, user_id, user_handle, name, credential, created_at) VALUES ('a11y', 'acme', 'alice', 'aGFuZGxl', 'Work laptop', '{}', $1)`, time.Now().UTC())
		return err
	}))
	return q1.ID
}

// passkeyLink is the path of the page that confirms a passkey bob added
// and that waits for his mailed link.
func passkeyLink(t *testing.T, s *site) string {
	t.Helper()
	raw, _ := auth.NewToken()
	err := s.DB.Write(dbtest.Operator(), func(q db.Querier) error {
		_, err := q.Exec(dbtest.Operator(), `INSERT INTO passkeys (id, org_id, user_id, user_handle, name, credential, created_at, confirm_hash, confirm_expires_at)
			VALUES ('a11y-pending', 'acme', 'bob', 'Ym9i', 'Phone', '{}', $1, $2, $3)`, time.Now().UTC(), auth.HashToken(raw), time.Now().UTC().Add(time.Hour))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	path := "/passkeys/confirm/" + raw
	if code, body := s.anonymous(t).get(path); code != http.StatusOK || !strings.Contains(body, "Phone") {
		t.Fatalf("the passkey's confirmation page: %d\n%s", code, body)
	}
	return path
}

// accessLinks are the paths of a pending invite's page and of bob's
// password reset page, for the pages that mailed links open.
func accessLinks(t *testing.T, s *site) (invite, reset string) {
	t.Helper()
	ctx := dbtest.Operator()
	_, raw, err := s.Orgs.Invite(ctx, acme("alice"), orgs.NewInvite{Email: "dan@example.com", UserID: "dan", Name: "Dan"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Orgs.SetEmail(ctx, "acme", "bob", "bob@example.com"); err != nil {
		t.Fatal(err)
	}
	req, err := s.Auth.RequestReset(ctx, "acme", "bob")
	if err != nil || req.Token == "" {
		t.Fatalf("reset link: %+v, %v", req, err)
	}
	return "/invite/" + raw, "/reset/" + req.Token
}
