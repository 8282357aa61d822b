package testkit

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser returns a headless Chromium for the test, or skips the test
// saying why when none is installed (Debian: apt-get install chromium).
// Tests that need their own cookies open a browser context of their own on
// it with chromedp.NewContext(ctx, chromedp.WithNewBrowserContext()):
// starting Chromium is the slow part, so one serves a whole test.
func Browser(t testing.TB) context.Context {
	t.Helper()
	path := ChromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("no-first-run", true),
		chromedp.WindowSize(1200, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	// A bound on a hung browser, not on speed: the longest test (axe on
	// every page, in two themes) took 121 s on a loaded machine.
	ctx, cancelTimeout := context.WithTimeout(ctx, 300*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Skipf("skipping browser test: chromium does not start: %v", err)
	}
	return ctx
}

// ChromiumPath is the Chromium binary on PATH, for tools that start their
// own (Lighthouse); without one it skips the test saying why.
func ChromiumPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("skipping browser test: no chromium on PATH (apt-get install -y chromium)")
	return ""
}
