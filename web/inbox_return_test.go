package web_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/testkit"
)

var (
	formRE   = regexp.MustCompile(`(?s)<form method="post" action="([^"]+)">(.*?)</form>`)
	hiddenRE = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)
)

// pageForm is the form of a page that posts to action, with its hidden
// fields as the page filled them in.
func pageForm(t *testing.T, body, action string) url.Values {
	t.Helper()
	for _, m := range formRE.FindAllStringSubmatch(body, -1) {
		if html.UnescapeString(m[1]) != action {
			continue
		}
		f := url.Values{}
		for _, h := range hiddenRE.FindAllStringSubmatch(m[2], -1) {
			f.Set(h[1], html.UnescapeString(h[2]))
		}
		return f
	}
	t.Fatalf("the page has no form posting to %s", action)
	return nil
}

// submit gets page as c, fills the form that posts to action with more,
// posts it and returns where it redirects.
func submit(t *testing.T, c *rawClient, page, action string, more url.Values) string {
	t.Helper()
	_, body := c.do(http.MethodGet, page, nil)
	f := pageForm(t, body, action)
	for k, v := range more {
		f[k] = v
	}
	resp := post(t, c, action, f, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST %s: %d, want 303", action, resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

// TestInboxDecisionsReturnToTheItem: a decision taken in the inbox's list
// returns the person to where they were in it, not its top: to the
// question itself while it is still listed (rejected), to the one after it
// once it has left the list (approved or edited, which sent the answer;
// declined, answered), to the one before when it was the last; on a later
// page of the list, to that page. On the question's own page, it returns
// there.
func TestInboxDecisionsReturnToTheItem(t *testing.T) {
	t.Parallel()
	// More than a page of questions, more than the loop guard lets one
	// pair ask at once.
	s := start(t, db.SQLite, func(w *app.Wiring) { w.Inbox.LoopMax = 100 })
	s.org(t, "acme")
	var ids []string
	for i := range 5 {
		id := s.ask(t, "alice", "bob", "Question "+strconv.Itoa(i))
		s.propose(t, id, "Draft "+strconv.Itoa(i))
		ids = append(ids, id)
	}
	bob := sessionFor(t, s, "acme", "bob", "member")
	for _, c := range []struct {
		what, page, action string
		more               url.Values
		want               string
	}{
		{"approve the second", "/inbox", "/inbox/" + ids[1] + "/approve", nil, "/inbox?done=approved#" + ids[2]},
		{"edit the first", "/inbox", "/inbox/" + ids[0] + "/edit", url.Values{"text": {"Mine."}}, "/inbox?done=edited#" + ids[2]},
		{"reject the third", "/inbox", "/inbox/" + ids[2] + "/reject", url.Values{"note": {"No."}}, "/inbox?done=rejected#" + ids[2]},
		{"decline the third", "/inbox", "/inbox/" + ids[2] + "/decline", url.Values{"reason": {"Not mine."}}, "/inbox?done=declined#" + ids[3]},
		{"answer the last", "/inbox", "/inbox/" + ids[4] + "/answer", url.Values{"text": {"Here."}}, "/inbox?done=answered#" + ids[3]},
		{"edit on its own page", "/inbox/" + ids[3], "/inbox/" + ids[3] + "/edit", url.Values{"text": {"Mine again."}}, "/inbox/" + ids[3] + "?done=edited"},
	} {
		if got := submit(t, bob, c.page, c.action, c.more); got != c.want {
			t.Errorf("%s: back to %q, want %q", c.what, got, c.want)
		}
	}

	// A later page of the list: the form returns to that page.
	for i := range 21 {
		s.ask(t, "carol", "bob", "More "+strconv.Itoa(i))
	}
	_, body := bob.do(http.MethodGet, "/inbox", nil)
	next := regexp.MustCompile(`href="(/inbox\?after=[^"]+)"`).FindStringSubmatch(body)
	if next == nil {
		t.Fatal("the inbox has no later page")
	}
	later := html.UnescapeString(next[1])
	_, body = bob.do(http.MethodGet, later, nil)
	action := regexp.MustCompile(`action="(/inbox/[a-z0-9_]+/decline)"`).FindStringSubmatch(body)
	if action == nil {
		t.Fatalf("the later page %s has no question to decline", later)
	}
	got := submit(t, bob, later, action[1], url.Values{"reason": {"Later."}})
	if u, err := url.Parse(got); err != nil || u.Path != "/inbox" || u.Query().Get("after") == "" || u.Query().Get("after") != mustQuery(t, later).Get("after") {
		t.Errorf("a decision on a later page returns to %q, want that page, %s", got, later)
	}
}

func mustQuery(t *testing.T, path string) url.Values {
	t.Helper()
	u, err := url.Parse(path)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// TestHeldPostDecisionsReturnToTheNext: a decision on a held post returns
// to the list at the post after it (or before it, when it was the last),
// since a decided post leaves the list.
func TestHeldPostDecisionsReturnToTheNext(t *testing.T) {
	t.Parallel()
	s, agent := heldPostSite(t, db.SQLite)
	var ids []string
	for i := range 3 {
		ids = append(ids, heldPost(t, s, agent, "Post "+strconv.Itoa(i)))
	}
	bob := sessionFor(t, s, "acme", "bob", "member")
	for _, c := range []struct {
		what, action string
		more         url.Values
		want         string
	}{
		{"approve the second", "/inbox/posts/" + ids[1] + "/approve", nil, "/inbox/posts?done=post-approved#" + ids[2]},
		{"reject the last", "/inbox/posts/" + ids[2] + "/reject", url.Values{"note": {"No."}}, "/inbox/posts?done=post-rejected#" + ids[0]},
		{"edit the only one", "/inbox/posts/" + ids[0] + "/edit", url.Values{"text": {"Mine."}}, "/inbox/posts?done=post-edited"},
	} {
		if got := submit(t, bob, "/inbox/posts", c.action, c.more); got != c.want {
			t.Errorf("%s: back to %q, want %q", c.what, got, c.want)
		}
	}
}

// TestInboxApprovalLandsAtTheItem: in Chromium, approving a question far
// down the inbox's list, which sends its answer and so takes it off the
// list, lands the person at the question after it, in view and marked,
// with what the approval did in view above it.
func TestInboxApprovalLandsAtTheItem(t *testing.T) {
	t.Parallel()
	chromium := testkit.Browser(t)
	s := start(t, db.SQLite)
	s.org(t, "acme")
	var ids []string
	for i := range 8 {
		ids = append(ids, s.ask(t, "alice", "bob", "Question "+strconv.Itoa(i)))
		s.propose(t, ids[i], "Draft "+strconv.Itoa(i))
	}
	last, next := ids[5], ids[6]
	ctx := browser(t, chromium)
	signIn(t, ctx, s.URL, "acme", "bob")
	run(t, ctx, chromedp.EmulateViewport(1000, 700), chromedp.Navigate(s.URL+"/inbox"),
		chromedp.WaitVisible(chromedp.ID("approve-"+last)),
		chromedp.Focus(chromedp.ID("approve-"+last)), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`.flash[role="status"]`)),
		// Under load the flash can be found before the list after it is.
		chromedp.WaitVisible(chromedp.ID(next)))
	got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => {
		const item = document.getElementById(`+strconv.Quote(next)+`), flash = document.querySelector('.flash[role="status"]');
		const r = item.getBoundingClientRect(), f = flash.getBoundingClientRect();
		return {target: item.matches(":target"), scrolled: scrollY > 0, itemInView: r.top >= 0 && r.top < innerHeight,
			flashInView: f.top >= 0 && f.bottom <= r.top + 1, flash: flash.textContent};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"target", "scrolled", "itemInView", "flashInView"} {
		if got[k] != true {
			t.Errorf("after approving a question far down the list: %s is %v (%v)", k, got[k], got)
		}
	}
}
