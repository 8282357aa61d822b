package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/testkit"
)

// layoutProbe measures, in CSS pixels, what a person sees of a page: the
// height of the header and of the whole page, and whether anything scrolls
// inside the page (an element that scrolls its content vertically; a
// table's sideways scroller aside).
const layoutProbe = `(() => {
	const header = document.querySelector("header.top");
	const inner = [...document.querySelectorAll("main *:not(textarea)")].filter(e => {
		const s = getComputedStyle(e);
		return /(auto|scroll)/.test(s.overflowY) && !e.matches(".table-wrap");
	}).map(e => e.tagName + "." + e.className);
	const hidden = [...document.querySelectorAll("header.top nav a")].filter(a => {
		const r = a.getBoundingClientRect();
		return r.left < 0 || r.right > innerWidth;
	}).map(a => a.textContent.trim());
	return {header: header ? header.getBoundingClientRect().height : 0, page: document.documentElement.scrollHeight,
		inner: inner, wide: document.documentElement.scrollWidth > innerWidth, hidden: hidden};
})()`

type layout struct {
	Header float64  `json:"header"`
	Page   float64  `json:"page"`
	Inner  []string `json:"inner"`
	Wide   bool     `json:"wide"`
	// Hidden are the sections whose links are not wholly on the screen.
	Hidden []string `json:"hidden"`
}

// TestLayoutOnAPhoneAndALaptop: on a phone's width (390 px) the header
// shows every section (wrapped into at most two rows; the page does not
// scroll sideways, nor do the tokens and notification settings), a
// channel's messages are on the page with nothing
// scrolling inside it, the inbox with two questions fits in under two
// screens, and Label and priority is a disclosure with its marker; at a
// laptop's 1280 px the audit log keeps each time and duration on one line.
func TestLayoutOnAPhoneAndALaptop(t *testing.T) {
	t.Parallel()
	chromium := testkit.Browser(t)
	s := start(t, db.SQLite)
	a11yFixture(t, s)
	// An action of a long user id that touched many ids: long columns,
	// which squeeze the short ones of the audit log.
	ids := []string{}
	for range 12 {
		ids = append(ids, s.ask(t, "carol", "bob", "Another question?"))
	}
	const long = "alexandra_konstantinopoulou_platform_ops"
	s.Audit.Record(audit.Event{At: time.Now().UTC(), OrgID: "acme", UserID: long, Tool: "web:approve_draft", Outcome: "conflict", DurationMS: 11, IDs: ids})
	s.waitAuditEvent(t, "acme", long, "web:approve_draft", "conflict", ids[11])
	ctx := browser(t, chromium)
	signIn(t, ctx, s.URL, "acme", "alice")
	at := func(w, h int64) func(string) layout {
		return func(path string) layout {
			t.Helper()
			run(t, ctx, chromedp.EmulateViewport(w, h), chromedp.Navigate(s.URL+path), chromedp.WaitReady(chromedp.CSS("main")))
			got, err := chromedp.Run(ctx, chromedp.Evaluate[layout](layoutProbe))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s at %d px: header %.0f px, page %.0f px, scrolling inside: %v", path, w, got.Header, got.Page, got.Inner)
			return got
		}
	}
	phone := at(390, 760)
	for _, path := range []string{"/inbox", "/channels/general", "/admin/audit", "/people", "/tokens", "/profile/notifications"} {
		got := phone(path)
		// Every section in sight, in at most two rows of 44 px targets.
		if got.Header > 2*44+16 {
			t.Errorf("%s on a phone: the header is %.0f px high, want at most two rows", path, got.Header)
		}
		if len(got.Hidden) > 0 {
			t.Errorf("%s on a phone: the sections %v are off the screen", path, got.Hidden)
		}
		if got.Wide {
			t.Errorf("%s on a phone: the page scrolls sideways", path)
		}
		if len(got.Inner) > 0 {
			t.Errorf("%s on a phone: these scroll inside the page: %v", path, got.Inner)
		}
	}
	// Two questions, one of them waiting for its asker's information with
	// the steps of its way: under two and a quarter screens below the
	// header, whose second row of sections keeps them all in sight (they
	// took 1,870 px with one plain question's four open-ended disclosures).
	if got, most := phone("/inbox"), 2.25*760+44; got.Page > most {
		t.Errorf("the inbox with two questions is %.0f px long on a phone, want under %.0f px", got.Page, most)
	}
	// The notification settings fold what is changed least (hours,
	// webhooks, push once on, the delivery log, the org's; the kinds
	// fewer people set): 4,360 px before, about 1,900 after.
	if got, most := phone("/profile/notifications"), 2.6*760+44; got.Page > most {
		t.Errorf("the notification settings are %.0f px long on a phone, want under %.0f px", got.Page, most)
	}
	phone("/channels/general")
	marker, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector(".channel-post summary")).display`))
	if err != nil || marker != "list-item" {
		t.Errorf("Label and priority: its summary is display %q (%v), want list-item, which shows the disclosure marker", marker, err)
	}

	at(1280, 800)("/admin/audit")
	// A cell's text on one line has its pieces all at one height.
	lines, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.audit tbody tr")].flatMap(tr =>
		[tr.cells[0], tr.cells[4]].filter(td => {
			const r = document.createRange(); r.selectNodeContents(td);
			return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1;
		}).map(td => td.textContent))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) > 0 {
		t.Errorf("the audit log wraps at 1280 px: %q", lines)
	}
	// However wide the other columns grow, those two do not wrap.
	kept, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.audit tbody tr")].flatMap(tr =>
		[tr.cells[0], tr.cells[4]].map(td => getComputedStyle(td).whiteSpace))`))
	if err != nil || len(kept) == 0 {
		t.Fatalf("the audit log's cells: %v (%v)", kept, err)
	}
	for _, ws := range kept {
		if ws != "nowrap" {
			t.Errorf("an audit log's time or duration may wrap: white-space %q, want nowrap", ws)
			break
		}
	}
}
