package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ctalk/ctalk/api/apitest"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestLiveUpdateReachesAnOpenPage: bob has his inbox open; alice's agent
// asks him; the page's title and nav count show the question and a quiet
// announcement offers to show it, without a reload. On Postgres it also
// works across replicas: the page on one server, the ask on another. Once
// bob's sessions end, the page stops listening and tells him.
func TestLiveUpdateReachesAnOpenPage(t *testing.T) {
	t.Parallel()
	chromium := testkit.Browser(t)
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		liveUpdate(t, browser(t, chromium), s, s)
	})
	t.Run("postgres, two replicas", func(t *testing.T) {
		page, asked := replicas(t)
		page.org(t, "acme")
		liveUpdate(t, browser(t, chromium), page, asked)
	})
}

// liveUpdate opens bob's inbox on the page site and asks him through the
// asked site.
func liveUpdate(t *testing.T, ctx context.Context, page, asked *site) {
	signIn(t, ctx, page.URL, "acme", "bob")
	// The marker lives as long as the page: a reload would lose it.
	err := chromedp.Do(ctx,
		chromedp.WaitReady(chromedp.CSS(`body[data-live="open"]`)),
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`),
	)
	if err != nil {
		t.Fatalf("bob's inbox with live updates: %v", err)
	}
	if title, _ := chromedp.Run(ctx, chromedp.Title()); title != "Inbox · ctalk" {
		t.Fatalf("title before the ask = %q", title)
	}
	alice := asked.agent(t, "acme", "alice")
	testkit.OK(t, alice, "ask_person", map[string]any{"to_user_id": "bob", "question": "What is the retry logic?"})
	askedAt := time.Now()
	// A wake-up takes milliseconds; only the stream's 25 s re-check would
	// deliver it without one, so this bound tells the two apart.
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.title === "(1) Inbox · ctalk" && document.querySelector(".live a") !== null`,
		chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		title, _ := chromedp.Run(ctx, chromedp.Title())
		t.Fatalf("the page did not show the question (title %q): %v", title, err)
	}
	t.Logf("the page showed the question %v after the ask returned", time.Since(askedAt).Round(time.Millisecond))
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[String(window.notReloaded), document.getElementById("waiting-count").textContent,
		document.querySelector(".live").textContent, document.querySelector(".live").getAttribute("aria-live"), document.querySelector(".live a").getAttribute("href")]`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"true", "1", "1 new question — show", "polite", "/inbox"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after the ask: %q, want %q (marker, nav count, announcement, aria-live, link)", got, want)
		}
	}

	// bob's sessions end elsewhere: the page stops listening and says so.
	if _, err := asked.Auth.RevokeUserTokens(dbtest.Operator(), "acme", "bob"); err != nil {
		t.Fatal(err)
	}
	testkit.OK(t, alice, "ask_person", map[string]any{"to_user_id": "bob", "question": "And the backoff?"})
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector(".live").textContent.startsWith("Live updates stopped")`,
		chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".live").textContent`))
		t.Fatalf("after bob's sessions ended, the page says %q: %v", text, err)
	}
	if title, _ := chromedp.Run(ctx, chromedp.Title()); title != "(1) Inbox · ctalk" {
		t.Fatalf("title after the session ended = %q: the second question must not reach it", title)
	}
}

// replicas runs two ctalk servers, each with its own connection pool and
// broker, on one Postgres database, as two replicas behind a load balancer.
func replicas(t *testing.T) (one, two *site) {
	t.Helper()
	cfg := dbtest.Config(t, db.Postgres)
	return replica(t, cfg), replica(t, cfg)
}

func replica(t *testing.T, cfg db.Config) *site {
	t.Helper()
	d, err := db.Open(dbtest.Operator(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	s := apitest.Start(t, d)
	return &site{URL: s.URL, DB: d, Assembly: s.Assembly, logs: s.Logs}
}

// TestLiveHeldPostAnnounced: bob has his inbox open when his agent posts to a
// channel of an org that holds agents' posts; the page says, without a
// reload, that a channel post waits for his approval, and links to it.
func TestLiveHeldPostAnnounced(t *testing.T) {
	t.Parallel()
	chromium := testkit.Browser(t)
	s, bob := heldPostSite(t, db.SQLite)
	ctx := browser(t, chromium)
	signIn(t, ctx, s.URL, "acme", "bob")
	err := chromedp.Do(ctx,
		chromedp.WaitReady(chromedp.CSS(`body[data-live="open"]`)),
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`),
	)
	if err != nil {
		t.Fatalf("bob's inbox with live updates: %v", err)
	}
	heldPost(t, s, bob, "we ship on friday")
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`window.notReloaded === true && document.querySelector(".live a") !== null`,
		chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		t.Fatalf("the page did not announce the held post: %v", err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[document.querySelector(".live").textContent, document.querySelector(".live a").getAttribute("href")]`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"1 channel post to approve — show", "/inbox"}; got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("announcement %q, want %q", got, want)
	}
}
