package web_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/testkit"
)

// commandsShown reports, for each command of the page, its text and
// whether it is shown whole: wrapped, with nothing to scroll sideways to.
const commandsShown = `Array.from(document.querySelectorAll(".command > pre")).map(pre => ({
	text: pre.textContent,
	whole: getComputedStyle(pre).whiteSpace === "pre-wrap" && pre.scrollWidth <= pre.clientWidth && getComputedStyle(pre).userSelect !== "none",
}))`

type shownCommand struct {
	Text  string `json:"text"`
	Whole bool   `json:"whole"`
}

// TestHomeCommandsWholeAndCopied: on a phone's width, the home page shows
// each command a newcomer copies whole (wrapped, never cut off in a box
// that scrolls sideways), with a copy button that puts exactly the command
// on the clipboard and says so; without the script the commands are shown
// and selectable all the same, with no button.
func TestHomeCommandsWholeAndCopied(t *testing.T) {
	t.Parallel()
	chromium := testkit.Browser(t)
	s := start(t, db.SQLite)
	want := []string{
		"claude mcp add --transport http ctalk " + s.URL + "/mcp",
		"claude mcp add --transport http ctalk " + s.URL + "/mcp --header \"Authorization: Bearer <token>\"",
	}
	check := func(t *testing.T, ctx context.Context) {
		t.Helper()
		run(t, ctx, chromedp.EmulateViewport(390, 760), chromedp.Navigate(s.URL+"/"), chromedp.WaitReady(chromedp.CSS("main")))
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]shownCommand](commandsShown))
		if err != nil || len(got) != len(want) {
			t.Fatalf("commands %+v (%v), want %d", got, err, len(want))
		}
		for i, c := range got {
			if c.Text != want[i] || !c.Whole {
				t.Errorf("command %d = %+v, want %q shown whole", i, c, want[i])
			}
		}
	}

	t.Run("copied", func(t *testing.T) {
		// The default browser context, whose clipboard permissions the
		// test can grant.
		ctx, cancel := chromedp.NewContext(chromium)
		t.Cleanup(cancel)
		run(t, ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			for _, name := range []string{"clipboard-read", "clipboard-write"} {
				if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
					Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted, Origin: s.URL}); err != nil {
					return err
				}
			}
			return nil
		}))
		check(t, ctx)
		for i, command := range want {
			run(t, ctx,
				chromedp.Evaluate[chromedp.Void](`navigator.clipboard.writeText("")`, chromedp.EvalAwaitPromise),
				chromedp.Evaluate[chromedp.Void](`document.querySelectorAll(".command > button.copy")[`+strconv.Itoa(i)+`].click()`),
				chromedp.Poll[chromedp.Void](`document.querySelectorAll(".command > .copied")[`+strconv.Itoa(i)+`].textContent === "Copied."`,
					chromedp.WithPollingTimeout(10*time.Second)),
			)
			copied, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
			if err != nil || copied != command {
				t.Errorf("copy button %d put %q on the clipboard (%v), want %q", i, copied, err, command)
			}
		}
	})

	t.Run("without the script", func(t *testing.T) {
		ctx := browser(t, chromium)
		run(t, ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		}))
		check(t, ctx)
		buttons, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("button.copy").length`))
		if err != nil || buttons != 0 {
			t.Errorf("%d copy buttons without the script (%v), want none", buttons, err)
		}
		selected, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
			const r = document.createRange();
			r.selectNodeContents(document.querySelector(".command > pre"));
			getSelection().removeAllRanges();
			getSelection().addRange(r);
			return getSelection().toString();
		})()`))
		if err != nil || selected != want[0] {
			t.Errorf("selecting the first command gives %q (%v), want %q", selected, err, want[0])
		}
	})
}
