package tools_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/appshost"
	"github.com/ctalk/ctalk/internal/testkit"
)

// cardState is what the card in the host page shows, read through its
// frame, which shares the host page's origin.
type cardState struct {
	Heading    string   `json:"heading"`
	Question   string   `json:"question"`
	Draft      string   `json:"draft"`
	Bold       int      `json:"bold"`
	Background string   `json:"background"`
	Buttons    []string `json:"buttons"`
	Done       string   `json:"done"`
}

const readCard = `(() => {
	const d = document.getElementById("card").contentDocument;
	const text = sel => { const e = d.querySelector(sel); return e ? e.textContent : ""; };
	const quotes = d.querySelectorAll("article blockquote");
	return {heading: text("article h2"), question: quotes[0] ? quotes[0].textContent : "", draft: quotes[1] ? quotes[1].textContent : "",
		bold: d.querySelectorAll("article b").length, background: d.defaultView.getComputedStyle(d.body).backgroundColor,
		buttons: Array.from(d.querySelectorAll("button")).map(b => b.textContent), done: text("p.done")};
})()`

// card waits until the card in the host page satisfies cond (a script
// over its document d) and returns what it shows.
func card(t *testing.T, ctx context.Context, cond string) cardState {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => { const f = document.getElementById("card"); const d = f && f.contentDocument; return !!d && !!(`+cond+`); })()`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the card never showed %s: %v", cond, err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[cardState](readCard))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// axeRules are the rule sets the card must pass, as the web app's pages
// do (web/a11y_browser_test.go): WCAG 2.0, 2.1 and 2.2 A and AA, and
// axe's best practices.
const axeRules = `["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]`

// checkCardA11y runs axe-core (the web app's copy) in the card's frame and
// fails the test on every violation.
func checkCardA11y(t *testing.T, ctx context.Context, when string) {
	t.Helper()
	axe, err := os.ReadFile(filepath.Join("..", "web", "testdata", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	type violation struct {
		ID    string   `json:"id"`
		Help  string   `json:"help"`
		Nodes []string `json:"nodes"`
	}
	found, err := chromedp.Run(ctx, chromedp.Evaluate[[]violation](`(() => {
		const w = document.getElementById("card").contentWindow;
		w.eval(`+mustJSON(string(axe))+`);
		return w.axe.run(w.document, {runOnly: {type: "tag", values: `+axeRules+`}, resultTypes: ["violations"]}).then(r =>
			r.violations.map(v => ({id: v.id, help: v.help, nodes: v.nodes.map(n => n.target.join(" ") + ": " + n.failureSummary.replace(/\s+/g, " "))})));
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe in the card: %v", err)
	}
	for _, v := range found {
		t.Errorf("the card %s: %s: %s\n\t%s", when, v.ID, v.Help, strings.Join(v.Nodes, "\n\t"))
	}
}

// press clicks the card's button labelled label.
func press(t *testing.T, ctx context.Context, label string) {
	t.Helper()
	js := `Array.from(document.getElementById("card").contentDocument.querySelectorAll("button")).find(b => b.textContent === ` + mustJSON(label) + `).click()`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](js)); err != nil {
		t.Fatalf("press %s: %v", label, err)
	}
}

// TestDecisionCardInABrowser renders the card in Chromium inside a host
// that speaks the MCP Apps protocol (appshost): it shows Alice's question
// as text (her markup is not markup), the draft, the host's theme, and in agent
// mode "Approve and send" sends the answer to Alice at once; in human mode
// it offers only "Open in ctalk to approve", which asks the host to open
// the question's page. axe finds nothing in either mode, in the host's dark
// theme and then in its light one. On SQLite alone: what it adds to the
// tools' tests on both engines is the card's markup and script in a
// browser, above the database (as web's browser tests, inChromium).
func TestDecisionCardInABrowser(t *testing.T) {
	t.Parallel()
	if !slices.Contains(dbtest.Engines, db.SQLite) {
		t.Skipf("skipping the browser test: it runs on SQLite, which CTALK_TEST_ENGINES=%s leaves out", os.Getenv("CTALK_TEST_ENGINES"))
	}
	browser := testkit.Browser(t)
	for _, engine := range dbtest.Engines {
		if engine != db.SQLite {
			continue
		}
		t.Run(string(engine), func(t *testing.T) {
			e := start(t, engine)
			u := e.Org(t, eraStateless, "acme")
			host := connectRendering(t, e.URL, eraStateless, e.Login(t, e.Connect(t, eraStateless, ""), "acme", "bob"))
			id := ok(t, u["alice"], "ask_person", map[string]any{"to_user_id": "bob", "question": "Is prod <b>frozen</b>?"})["message_id"].(string)
			ok(t, u["bob"], "propose_response", map[string]any{"message_id": id, "draft_text": "yes, until Monday"})
			inbox, err := host.CallTool(dbtest.Operator(), &mcp.CallToolParams{Name: "check_inbox", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			h, err := appshost.New(dbtest.Operator(), host, cardURI, inbox, "decide_in_chat")
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()

			ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
			defer cancel()
			if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
				t.Fatal(err)
			}
			got := card(t, ctx, `d.querySelector("article h2")`)
			if got.Heading != "Alice asks" || got.Question != "Is prod <b>frozen</b>?" || got.Bold != 0 || got.Draft != "yes, until Monday" {
				t.Fatalf("card shows %+v, want Alice's question as text and the draft", got)
			}
			if got.Background != "rgb(16, 16, 16)" {
				t.Errorf("card background %q, want the host's rgb(16, 16, 16)", got.Background)
			}
			if !slices.Equal(got.Buttons, []string{"Approve and send", "Edit"}) {
				t.Errorf("card buttons %q in agent mode", got.Buttons)
			}
			checkCardA11y(t, ctx, "in agent mode, dark")
			press(t, ctx, "Approve and send")
			if got = card(t, ctx, `d.querySelector("p.done")`); !strings.HasPrefix(got.Done, "Sent to Alice") {
				t.Errorf("after Approve and send the card says %q", got.Done)
			}
			replies := list(ok(t, u["alice"], "check_replies", map[string]any{}), "replies")
			if len(replies) != 1 || field(replies[0], "answer") != "yes, until Monday" {
				t.Fatalf("alice's replies = %v", replies)
			}

			// Human mode: no approval in the card, only the way to ctalk.
			ok(t, u["alice"], "update_org_settings", map[string]any{"org_id": "acme", "approval_mode": "human"})
			id2 := ok(t, u["alice"], "ask_person", map[string]any{"to_user_id": "bob", "question": "Friday release?"})["message_id"].(string)
			proposed, err := host.CallTool(dbtest.Operator(), &mcp.CallToolParams{Name: "propose_response",
				Arguments: map[string]any{"message_id": id2, "draft_text": "yes"}})
			if err != nil {
				t.Fatal(err)
			}
			js, _ := json.Marshal(proposed)
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`pushResult(`+string(js)+`)`)); err != nil {
				t.Fatal(err)
			}
			got = card(t, ctx, `Array.from(d.querySelectorAll("button")).some(b => b.textContent === "Open in ctalk to approve")`)
			if !slices.Equal(got.Buttons, []string{"Open in ctalk to approve"}) {
				t.Errorf("card buttons %q in human mode, want only Open in ctalk to approve", got.Buttons)
			}
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`lightTheme()`)); err != nil {
				t.Fatal(err)
			}
			if got = card(t, ctx, `d.defaultView.getComputedStyle(d.body).backgroundColor === "rgb(250, 250, 250)"`); got.Background != "rgb(250, 250, 250)" {
				t.Errorf("after the host turned light the card's background is %q", got.Background)
			}
			checkCardA11y(t, ctx, "in human mode, light")
			press(t, ctx, "Open in ctalk to approve")
			testkit.WaitFor(t, 10*time.Second, "the host asked to open the question's page", func() (bool, error) {
				links := h.Opened()
				return len(links) == 1 && links[0] == e.URL+"/inbox/"+id2+"#v1", nil
			})
		})
	}
}
