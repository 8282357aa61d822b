package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ctalk/ctalk/channels"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestChannelPageLive: alice and bob are in #dev, each with its page open
// in a browser; bob posts from his; alice's page shows the message, marked
// new, and says so quietly, without a reload, and her read cursor moves
// past it. On Postgres it also works across replicas: alice's page on one
// server, bob's on another.
func TestChannelPageLive(t *testing.T) {
	t.Parallel()
	chromium := testkit.Browser(t)
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		channelLive(t, chromium, s, s)
	})
	t.Run("postgres, two replicas", func(t *testing.T) {
		one, two := replicas(t)
		one.org(t, "acme")
		channelLive(t, chromium, one, two)
	})
}

func channelLive(t *testing.T, chromium context.Context, aliceSite, bobSite *site) {
	ctx := dbtest.Operator()
	if _, err := bobSite.Channels.Create(ctx, acme("bob"), channels.NewChannel{Name: "dev", Members: []string{"alice"}}); err != nil {
		t.Fatal(err)
	}
	alice, bob := browser(t, chromium), browser(t, chromium)
	signIn(t, alice, aliceSite.URL, "acme", "alice")
	signIn(t, bob, bobSite.URL, "acme", "bob")
	err := chromedp.Do(alice,
		chromedp.Navigate(aliceSite.URL+"/channels/dev"),
		chromedp.WaitReady(chromedp.CSS(`body[data-live="open"]`)),
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`),
	)
	if err != nil {
		t.Fatalf("alice's page of #dev with live updates: %v", err)
	}
	text := "Deploying 4.2 now — watch the dashboards"
	err = chromedp.Do(bob,
		chromedp.Navigate(bobSite.URL+"/channels/dev"),
		chromedp.WaitVisible(chromedp.ID("text")),
		chromedp.SendKeys(chromedp.ID("text"), text),
		chromedp.Click(chromedp.CSS(`#post button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.flash`)),
	)
	if err != nil {
		t.Fatalf("bob posts from his page: %v", err)
	}
	_, err = chromedp.Run(alice, chromedp.Poll[bool](`document.querySelector("#messages li.channel-message") !== null`,
		chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		t.Fatalf("alice's page did not show bob's message: %v", err)
	}
	got, err := chromedp.Run(alice, chromedp.Evaluate[[]string](`(function () {
		var m = document.querySelector("#messages li.channel-message");
		return [String(window.notReloaded), m.querySelector("blockquote.text").textContent, m.querySelector(".author").textContent,
			String(m.classList.contains("unread")), String(m.textContent.indexOf("posted by agent") >= 0),
			m.querySelector("time").textContent, document.querySelector(".live").textContent,
			String(document.getElementById("no-messages") === null), document.getElementById("messages").getAttribute("data-after")];
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"true", text, "Bob", "true", "false", "just now", "1 new message in #dev", "true", "1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("alice's page after bob's post:\n got %q\nwant %q (marker, text, author, new, agent label, time, announcement, empty state gone, last seq)", got, want)
	}
	// The page showed it: the stream moves alice's read cursor past it
	// once sent.
	testkit.WaitFor(t, 10*time.Second, "alice's open page moves her read cursor", func() (bool, error) {
		n, _ := aliceSite.unread(t, "acme", "alice", "dev")
		return n == 0, nil
	})
}
