package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/internal/demo"
	"github.com/ctalk/ctalk/orgs"
	"github.com/ctalk/ctalk/slackapp"
	"github.com/ctalk/ctalk/web"
)

// slackPath is where the screenshots' server shows the Slack DM that
// ctalk posts for a draft waiting for its person, drawn from the Block Kit
// blocks it posted to slackAPIPath, the server's stand-in for Slack's Web
// API: Slack itself is not reachable from here.
const (
	slackPath    = "/demo-slack"
	slackAPIPath = "/demo-slack-api/"
)

// slackDemo is the page at slackPath. It is built on the first request
// (see lazy): it switches the demo organization to human approval, which
// the other pages would show, so the DM is taken last.
type slackDemo struct {
	a    *app.Assembly
	base string
	api  slackAPI
	org  atomic.Pointer[demo.Org]
}

// open connects the demo organization's Slack app to the stand-in, links
// the demo person's Slack account as a person does (the DM's link, then
// its confirmation), has their agent draft an answer that waits for their
// approval, and draws the DM that the notifications' worker posts for it.
func (s *slackDemo) open(ctx context.Context) (http.Handler, error) {
	d := s.org.Load()
	if d == nil {
		return nil, fmt.Errorf("the demo organization is not seeded yet")
	}
	person := ctalk.Caller{OrgID: d.OrgID, UserID: d.UserID, Admin: true}
	if err := s.a.Slack.Connect(ctx, person, "xoxb-T0DEMO-screenshots", "screenshots-signing-secret"); err != nil {
		return nil, fmt.Errorf("connect the demo's Slack app: %w", err)
	}
	if err := s.a.Slack.StartLink(ctx, person, "U0DEMO"); err != nil {
		return nil, fmt.Errorf("link the demo person's Slack account: %w", err)
	}
	linked, err := s.api.await(ctx, func(p slackPost) bool { return strings.Contains(p.Text, slackapp.ConfirmPath) })
	if err != nil {
		return nil, err
	}
	_, raw, _ := strings.Cut(linked.Text, slackapp.ConfirmPath)
	if err := s.a.Slack.ConfirmLink(ctx, person, strings.Fields(raw)[0]); err != nil {
		return nil, fmt.Errorf("confirm the demo person's Slack link: %w", err)
	}
	if _, err := s.a.Orgs.SetApprovalMode(ctx, d.OrgID, orgs.ApprovalHuman); err != nil {
		return nil, err
	}
	id, err := d.Draft(ctx)
	if err != nil {
		return nil, fmt.Errorf("draft the demo's answer: %w", err)
	}
	dm, err := s.api.await(ctx, func(p slackPost) bool { return strings.Contains(p.Blocks, id) })
	if err != nil {
		return nil, err
	}
	page, err := drawSlack(dm, s.base)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	}), nil
}

// slackAPI is a stand-in for the methods of Slack's Web API that ctalk's
// Slack door calls to connect an app and post a DM; it keeps the
// messages posted.
type slackAPI struct {
	mu    sync.Mutex
	posts []slackPost
}

// slackPost is a message posted: its text and its blocks, as posted.
type slackPost struct {
	Text, Blocks string
	At           time.Time
}

func (s *slackAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	answer := map[string]any{"ok": true}
	switch strings.TrimPrefix(r.URL.Path, slackAPIPath) {
	case "auth.test":
		answer["team_id"], answer["user_id"] = "T0DEMO", "U0CTALK"
	case "conversations.open":
		answer["channel"] = map[string]any{"id": "D0DEMO"}
	case "chat.postMessage":
		s.mu.Lock()
		s.posts = append(s.posts, slackPost{Text: r.Form.Get("text"), Blocks: r.Form.Get("blocks"), At: time.Now()})
		answer["ts"] = fmt.Sprintf("%d.%06d", time.Now().Unix(), len(s.posts))
		s.mu.Unlock()
		answer["channel"] = r.Form.Get("channel")
	case "chat.update":
		answer["channel"], answer["ts"] = r.Form.Get("channel"), r.Form.Get("ts")
	default:
		answer = map[string]any{"ok": false, "error": "unknown_method"}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(answer)
}

// await returns the latest message posted that satisfies ok, waiting up
// to 30 s for it.
func (s *slackAPI) await(ctx context.Context, ok func(slackPost) bool) (slackPost, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		s.mu.Lock()
		posts := s.posts
		s.mu.Unlock()
		for i := len(posts) - 1; i >= 0; i-- {
			if ok(posts[i]) {
				return posts[i], nil
			}
		}
		select {
		case <-ctx.Done():
			return slackPost{}, fmt.Errorf("ctalk posted no such Slack message within 30 s")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

//go:embed slack.html
var slackHTML string

var slackPage = template.Must(template.New("slack").Parse(slackHTML))

// The parts of Block Kit that the drawing knows; any other block fails it
// rather than be left out.
type (
	slackBlock struct {
		Type     string            `json:"type"`
		Text     *slackText        `json:"text"`
		Fields   []slackText       `json:"fields"`
		Elements []json.RawMessage `json:"elements"`
	}
	slackText struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	slackButton struct {
		Type  string    `json:"type"`
		Text  slackText `json:"text"`
		Style string    `json:"style"`
		URL   string    `json:"url"`
	}
)

// drawnBlock is a block as the page draws it: texts, or a row of buttons.
type drawnBlock struct {
	Type    string
	Texts   []template.HTML
	Buttons []slackButton
}

// drawSlack is the page that draws the DM p as Slack lays it out, under
// the name of the app whose manifest ctalk gives for a server at base.
func drawSlack(p slackPost, base string) ([]byte, error) {
	var blocks []slackBlock
	if err := json.Unmarshal([]byte(p.Blocks), &blocks); err != nil {
		return nil, fmt.Errorf("read the DM's blocks: %w", err)
	}
	var drawn []drawnBlock
	for _, b := range blocks {
		d := drawnBlock{Type: b.Type}
		switch b.Type {
		case "header", "section":
			texts := b.Fields
			if b.Text != nil {
				texts = append([]slackText{*b.Text}, texts...)
			}
			for _, t := range texts {
				d.Texts = append(d.Texts, drawText(t))
			}
		case "context":
			for _, raw := range b.Elements {
				var t slackText
				if err := json.Unmarshal(raw, &t); err != nil || (t.Type != "mrkdwn" && t.Type != "plain_text") {
					return nil, fmt.Errorf("a context element the drawing does not know: %s", raw)
				}
				d.Texts = append(d.Texts, drawText(t))
			}
		case "actions":
			for _, raw := range b.Elements {
				var el slackButton
				if err := json.Unmarshal(raw, &el); err != nil || el.Type != "button" {
					return nil, fmt.Errorf("an action the drawing does not know: %s", raw)
				}
				d.Buttons = append(d.Buttons, el)
			}
		case "divider":
		default:
			return nil, fmt.Errorf("a block the drawing does not know: %s", b.Type)
		}
		drawn = append(drawn, d)
	}
	var manifest struct {
		Features struct {
			Bot struct {
				Name string `json:"display_name"`
			} `json:"bot_user"`
		} `json:"features"`
	}
	if err := json.Unmarshal([]byte(slackapp.Manifest(base)), &manifest); err != nil {
		return nil, fmt.Errorf("read the Slack app's manifest: %w", err)
	}
	var out bytes.Buffer
	err := slackPage.Execute(&out, map[string]any{
		"App":    manifest.Features.Bot.Name,
		"Icon":   template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(web.Icon())),
		"Time":   p.At.Format("3:04 PM"),
		"Blocks": drawn,
	})
	return out.Bytes(), err
}

// drawText is t as HTML: plain text as it is, mrkdwn with its formatting.
func drawText(t slackText) template.HTML {
	if t.Type != "mrkdwn" {
		return template.HTML(html.EscapeString(t.Text))
	}
	lines := strings.Split(t.Text, "\n")
	for i, line := range lines {
		quote := strings.HasPrefix(line, "&gt;") || strings.HasPrefix(line, ">")
		if quote {
			line = strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(line, "&gt;"), ">"), " ")
		}
		line = drawMrkdwnLine(line)
		if quote {
			line = "<blockquote>" + line + "</blockquote>"
		}
		lines[i] = line
	}
	return template.HTML(strings.Join(lines, "\n"))
}

var (
	// mrkdwnSpecial is a link, a mention or a date: <target|label>.
	mrkdwnSpecial = regexp.MustCompile(`<([^<>|]*)(?:\|([^<>]*))?>`)
	mrkdwnStyles  = []struct {
		re  *regexp.Regexp
		tag string
	}{
		{regexp.MustCompile("`([^`]+)`"), "code"},
		{regexp.MustCompile(`\*([^*]+)\*`), "b"},
		{regexp.MustCompile(`\b_([^_]+)_\b`), "i"},
		{regexp.MustCompile(`~([^~]+)~`), "s"},
	}
)

// drawMrkdwnLine is one line of mrkdwn as HTML: bold, italic, struck and
// code spans, links, and the label Slack shows for a mention or a date.
func drawMrkdwnLine(line string) string {
	var out strings.Builder
	for {
		m := mrkdwnSpecial.FindStringSubmatchIndex(line)
		if m == nil {
			return out.String() + styled(line)
		}
		out.WriteString(styled(line[:m[0]]))
		target, label := line[m[2]:m[3]], ""
		if m[4] >= 0 {
			label = line[m[4]:m[5]]
		}
		switch {
		case strings.HasPrefix(target, "http"):
			if label == "" {
				label = target
			}
			out.WriteString(`<a href="` + html.EscapeString(target) + `">` + styled(label) + "</a>")
		case label != "":
			out.WriteString(styled(label))
		default:
			out.WriteString(`<span class="mention">` + html.EscapeString(strings.TrimLeft(target, "@#!")) + "</span>")
		}
		line = line[m[1]:]
	}
}

// styled is plain mrkdwn, unescaped as Slack does and escaped for HTML,
// with its spans.
func styled(s string) string {
	s = html.EscapeString(strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s))
	for _, st := range mrkdwnStyles {
		s = st.re.ReplaceAllString(s, "<"+st.tag+">$1</"+st.tag+">")
	}
	return s
}
