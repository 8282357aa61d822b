package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestScriptTimesAndShortcuts: the app's script shows times relative to
// now with the absolute time in the person's own time zone on hover, and
// j, k and ? work on a page of items. Items and a time are added to a
// page (the script loaded again to see the time), so that the test does
// not depend on which section renders them.
func TestScriptTimesAndShortcuts(t *testing.T) {
	t.Parallel()
	chromium := testkit.Browser(t)
	s := start(t, db.SQLite)
	s.org(t, "acme")
	ctx := browser(t, chromium)
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"})
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
	signIn(t, ctx, s.URL, "acme", "bob")
	// Shortcuts: j and k move between the items the page has when pressed,
	// ? shows their list.
	err = chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("main").insertAdjacentHTML("beforeend",
		'<div class="item" id="one">one</div><div class="item" id="two">two</div><div class="item" id="three">three</div>')`))
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ key, want string }{{"j", "one"}, {"j", "two"}, {"j", "three"}, {"j", "three"}, {"k", "two"}} {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(step.key)); err != nil {
			t.Fatal(err)
		}
		focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`))
		if err != nil || focused != step.want {
			t.Fatalf("after %s, focus is on %q (%v), want %q", step.key, focused, err, step.want)
		}
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("?")); err != nil {
		t.Fatal(err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.querySelector(".shortcuts").hidden`))
	if err != nil || !shown {
		t.Fatalf("after ?, the shortcuts are shown: %v (%v)", shown, err)
	}

	// Times: loaded again to see a time added to the page.
	at := time.Now().Add(-3*time.Hour - 5*time.Minute).UTC().Truncate(time.Minute)
	// A session idle for two hours, just used, expires "in 2 hours".
	expires := time.Now().Add(2*time.Hour - 2*time.Minute).UTC().Truncate(time.Second)
	add := fmt.Sprintf(`(() => {
		document.querySelector("main").insertAdjacentHTML("beforeend", '<time datetime="%s">server text</time><time id="expires" datetime="%s">server text</time>');
		const again = document.createElement("script");
		again.src = "/static/app.js?again";
		document.head.appendChild(again);
	})()`, at.Format(time.RFC3339), expires.Format(time.RFC3339))
	err = chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](add),
		chromedp.Poll[chromedp.Void](`document.querySelector("main time").textContent !== "server text"`, chromedp.WithPollingTimeout(10*time.Second)),
	)
	if err != nil {
		t.Fatal(err)
	}
	// The absolute time is made when the time is pointed at.
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const t = document.querySelector("main time");
		t.dispatchEvent(new PointerEvent("pointerover", { bubbles: true }));
		return [t.textContent, t.title];
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	tokyo := at.In(time.FixedZone("JST", 9*3600))
	if got[0] != "3 hours ago" || !strings.Contains(got[1], "GMT+9") ||
		!strings.Contains(got[1], tokyo.Format("3:04")) && !strings.Contains(got[1], tokyo.Format("15:04")) {
		t.Fatalf("time shown as %q with title %q, want \"3 hours ago\" and %s in Tokyo", got[0], got[1], tokyo.Format("15:04 MST"))
	}
	future, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("expires").textContent`))
	if err != nil || future != "in 2 hours" {
		t.Errorf("a time 1 h 58 min ahead is shown as %q (%v), want \"in 2 hours\"", future, err)
	}
}
