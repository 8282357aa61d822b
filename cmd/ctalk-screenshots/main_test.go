package main

import (
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestScreenshots runs the command as the README says to, so that it keeps
// working as the pages change: every page it finds becomes a PNG of the
// promised size, the live one shows the announcement (take fails
// otherwise), the demo's notification mail is among them (serve fails
// when the demo sends none), and so is the decision card with its
// questions (take fails otherwise), and the Slack DM (its page fails when
// ctalk posts none, or blocks it cannot draw).
func TestScreenshots(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("skipping: no chromium on PATH (apt-get install -y chromium)")
	}
	out := t.TempDir()
	if err := run(out, chromium); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"home", "signin", "inbox", "inbox-dark", "inbox-phone", "question-phone", "inbox-live", "notification-mail", "card", "slack", "sso-signin", "sso-admin"} {
		f, err := os.Open(filepath.Join(out, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := wideW
		if name == "inbox-phone" || name == "question-phone" {
			want = phoneW * 2
		}
		if cfg.Width != want {
			t.Errorf("%s is %d px wide, want %d", name, cfg.Width, want)
		}
	}
}

// TestDrawSlack: the Slack page draws mrkdwn as Slack shows it (bold, a
// quote, a link, a date's fallback, text that only looks like markup), a
// row of buttons in their styles, and fails on a block it cannot draw
// rather than leave it out.
func TestDrawSlack(t *testing.T) {
	blocks := `[{"type":"section","text":{"type":"mrkdwn","text":"✓ *Approved and sent* in Slack, <!date^1700000000^{date_short_pretty}|14 Nov 2023>.\n&gt; quoted &amp; <https://ctalk.example/inbox|the page>"}},
		{"type":"section","text":{"type":"plain_text","text":"a <b> & *not bold*"}},
		{"type":"actions","elements":[{"type":"button","text":{"type":"plain_text","text":"Approve and send"},"style":"primary"},{"type":"button","text":{"type":"plain_text","text":"Decline"},"style":"danger"}]}]`
	page, err := drawSlack(slackPost{Blocks: blocks}, "http://ctalk.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<b>Approved and sent</b> in Slack, 14 Nov 2023.`,
		`<blockquote>quoted &amp; <a href="https://ctalk.example/inbox">the page</a></blockquote>`,
		`a &lt;b&gt; &amp; *not bold*`,
		`<span class="button primary">Approve and send</span><span class="button danger">Decline</span>`,
		`<span class="name">ctalk</span>`,
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %s:\n%s", want, page)
		}
	}
	if _, err := drawSlack(slackPost{Blocks: `[{"type":"input"}]`}, "http://ctalk.example"); err == nil {
		t.Error("a block the drawing does not know was drawn")
	}
}
