package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/ctalk/ctalk/db"
)

// chartImage is what the browser made of one chart on the overview.
type chartImage struct {
	Src   string `json:"src"`
	Width int    `json:"width"`
	Alt   string `json:"alt"`
}

// TestOverviewInBrowser: in Chromium (on SQLite, see inChromium) and in both themes,
// every chart of the overview loads as an image in the theme the browser
// prefers, says what it shows, and its table opens from the keyboard.
func TestOverviewInBrowser(t *testing.T) {
	t.Parallel()
	inChromium(t, func(t *testing.T, chromium context.Context, engine db.Engine) {
		s := start(t, engine)
		a11yFixture(t, s)
		for _, scheme := range []string{"light", "dark"} {
			ctx := browser(t, chromium)
			run(t, ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
					Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
				return err
			}))
			signIn(t, ctx, s.URL, "acme", "alice")
			run(t, ctx, chromedp.Navigate(s.URL+"/admin/overview?days=30"), chromedp.WaitReady(chromedp.CSS("figure.chart")))
			imgs, err := chromedp.Run(ctx, chromedp.Evaluate[[]chartImage](`Promise.all([...document.querySelectorAll("figure.chart img")].map(i =>
				(i.scrollIntoView(), i.decode().catch(() => null)).then(() => ({src: i.currentSrc, width: i.naturalWidth, alt: i.alt}))))`, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatal(err)
			}
			if len(imgs) < 6 {
				t.Fatalf("%s: %d charts, want one per section's chart", scheme, len(imgs))
			}
			for _, img := range imgs {
				if img.Width == 0 || strings.Contains(img.Src, "theme=dark") != (scheme == "dark") || !strings.HasPrefix(img.Alt, "Chart: ") {
					t.Errorf("%s: chart %+v did not load in its theme, or says nothing", scheme, img)
				}
			}
			run(t, ctx, chromedp.Focus(chromedp.CSS("#ov-questions ~ details > summary")), chromedp.KeyEvent("\r"))
			rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelector("#ov-questions ~ details[open]")?.querySelectorAll("tbody tr").length ?? 0`))
			if err != nil || rows != 30 {
				t.Errorf("%s: the questions' table shows %d rows (%v), want one per day of the 30", scheme, rows, err)
			}
		}
	})
}
