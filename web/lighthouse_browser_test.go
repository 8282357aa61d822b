package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/web"
)

// lighthouseBinary is the Lighthouse command line: $LIGHTHOUSE (which
// .ci/run sets to the pinned version it installs), else one installed with
// npm in the module's node_modules. Without either the test skips, saying so.
func lighthouseBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LIGHTHOUSE"); p != "" {
		return p
	}
	if p, err := filepath.Abs("../node_modules/.bin/lighthouse"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("Lighthouse is not installed: set LIGHTHOUSE to its command line (bash .ci/run installs the pinned version), or npm install lighthouse")
	return ""
}

// lighthouseTargets are the scores every page must reach (0 to 1).
// Performance is in part a measure of time (blocking time on a busy
// machine), so it is held only when LIGHTHOUSE_PERFORMANCE=1 asks, on a
// quiet machine; otherwise it is logged.
func lighthouseTargets() map[string]float64 {
	t := map[string]float64{"accessibility": 1, "best-practices": 1}
	if lighthousePerformance() {
		t["performance"] = 0.95
	}
	return t
}

// lighthousePerformance says whether LIGHTHOUSE_PERFORMANCE=1 asks for the
// performance category. Without it the category is not run at all: its
// trace and simulated load were most of each run's CPU, for a score no
// check held on a busy machine.
func lighthousePerformance() bool {
	return os.Getenv("LIGHTHOUSE_PERFORMANCE") == "1"
}

// lighthouseRun is one page in one theme.
type lighthouseRun struct{ path, scheme string }

// TestLighthouseScores runs Lighthouse (on the Chromium the other browser
// tests use) on the app's pages: accessibility and best practices 100, and,
// with LIGHTHOUSE_PERFORMANCE=1, performance at least 95 (Lighthouse's
// desktop preset), in the light and the dark theme. To stay within
// CI's time, each page is measured in one theme, the themes alternating
// down the list, two pages at a time; LIGHTHOUSE_ALL=1 measures every page
// in both themes.
func TestLighthouseScores(t *testing.T) {
	t.Parallel()
	bin := lighthouseBinary(t)
	chromium := testkit.ChromiumPath(t)
	s := start(t, db.SQLite)
	q := a11yFixture(t, s)
	raw, err := s.Auth.StartWebSession(dbtest.Operator(), &auth.Session{OrgID: "acme", UserID: "alice", Role: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	// At localhost, where browsers allow passkeys over http, as at a real
	// site's https name, so that the sign-in page offers a passkey (at a
	// bare IP address it offers none).
	base := strings.Replace(s.URL, "127.0.0.1", "localhost", 1)
	signedOut := map[string]bool{"/": true, "/signin": true, "/signup": true, "/forgot": true}
	pages := []string{"/", "/signin", "/signup", "/forgot", "/inbox", "/inbox/" + q, "/asked", "/channels", "/channels/general", "/people", "/knowledge",
		"/profile", "/profile/notifications", "/tokens", "/admin", "/admin/overview", "/admin/audit"}
	var runs []lighthouseRun
	for i, p := range pages {
		schemes := []string{"light", "dark"}
		if os.Getenv("LIGHTHOUSE_ALL") == "" {
			schemes = schemes[i%2 : i%2+1]
		}
		for _, sc := range schemes {
			runs = append(runs, lighthouseRun{p, sc})
		}
	}
	// One Chromium per theme and per signed in or out, which Lighthouse
	// drives through its debugging port: the signed-in ones hold alice's
	// session cookie, as a browser does for every request of the page.
	var mu sync.Mutex
	browsers := map[string]*lighthouseChrome{}
	chrome := func(scheme string, signedIn bool) *lighthouseChrome {
		mu.Lock()
		defer mu.Unlock()
		key := fmt.Sprint(scheme, signedIn)
		if browsers[key] == nil {
			cookie := ""
			if signedIn {
				cookie = raw
			}
			browsers[key] = startLighthouseChrome(t, chromium, scheme, base, cookie)
		}
		return browsers[key]
	}
	work := make(chan lighthouseRun)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				scores, failing, err := chrome(r.scheme, !signedOut[r.path]).lighthouse(t, bin, base+r.path)
				if err != nil {
					t.Errorf("%s (%s): %v", r.path, r.scheme, err)
					continue
				}
				t.Logf("%s (%s): accessibility %.0f, best practices %.0f", r.path, r.scheme,
					100*scores["accessibility"], 100*scores["best-practices"])
				if lighthousePerformance() {
					t.Logf("%s (%s): performance %.0f", r.path, r.scheme, 100*scores["performance"])
				}
				for cat, want := range lighthouseTargets() {
					if scores[cat] < want {
						t.Errorf("%s (%s): %s %.0f, want at least %.0f; failing audits: %s", r.path, r.scheme, cat, 100*scores[cat], 100*want, failing)
					}
				}
			}
		}()
	}
	for _, r := range runs {
		work <- r
	}
	close(work)
	wg.Wait()
}

// lighthouseChrome is a Chromium that Lighthouse drives, one page at a time.
type lighthouseChrome struct {
	port int
	mu   sync.Mutex
}

// startLighthouseChrome starts a headless Chromium in scheme (dark through
// the operating system's setting it is told to force), holding the session
// cookie for base when one is given.
func startLighthouseChrome(t *testing.T, chromium, scheme, base, cookie string) *lighthouseChrome {
	t.Helper()
	port := testkit.FreePort(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, remote.WebSocket,
		chromedp.Flag("remote-debugging-port", strconv.Itoa(port)), chromedp.Flag("disable-dev-shm-usage", true))
	if scheme == "dark" {
		opts = append(opts, chromedp.Flag("force-dark-mode", true))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(dbtest.Operator(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if cookie == "" {
			return nil
		}
		_, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: web.SessionCookie, Value: cookie, URL: base})
		return err
	}))
	if err != nil {
		t.Fatalf("start Chromium for Lighthouse: %v", err)
	}
	return &lighthouseChrome{port: port}
}

// lighthouse runs Lighthouse on url in this Chromium, keeping its cookies,
// and returns the scores of its categories and the audits that lost points.
func (lc *lighthouseChrome) lighthouse(t *testing.T, bin, url string) (map[string]float64, string, error) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	out := filepath.Join(t.TempDir(), "report.json")
	categories := "accessibility,best-practices"
	if lighthousePerformance() {
		categories = "performance," + categories
	}
	cmd := exec.Command(bin, url, "--quiet", "--output=json", "--output-path="+out, "--port="+strconv.Itoa(lc.port),
		"--only-categories="+categories, "--preset=desktop", "--disable-full-page-screenshot", "--disable-storage-reset")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("lighthouse: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, "", err
	}
	var rep struct {
		FinalURL   string `json:"finalDisplayedUrl"`
		Categories map[string]struct {
			Score float64 `json:"score"`
			Refs  []struct {
				ID     string  `json:"id"`
				Weight float64 `json:"weight"`
			} `json:"auditRefs"`
		} `json:"categories"`
		Audits map[string]struct {
			Score   *float64        `json:"score"`
			Details json.RawMessage `json:"details"`
		} `json:"audits"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, "", err
	}
	if rep.FinalURL != url {
		return nil, "", fmt.Errorf("Lighthouse ended at %s, not the page (signed out?)", rep.FinalURL)
	}
	scores, failing := map[string]float64{}, []string{}
	for name, c := range rep.Categories {
		scores[name] = c.Score
		for _, r := range c.Refs {
			if a := rep.Audits[r.ID]; r.Weight > 0 && a.Score != nil && *a.Score < 1 {
				failing = append(failing, fmt.Sprintf("%s %.2f", r.ID, *a.Score))
				if r.ID == "errors-in-console" {
					failing = append(failing, consoleErrors(a.Details))
				}
			}
		}
	}
	return scores, strings.Join(failing, ", "), nil
}

// consoleErrors says what errors-in-console found: each error's address and
// words.
func consoleErrors(details json.RawMessage) string {
	var d struct {
		Items []struct {
			Description string `json:"description"`
			Source      struct {
				URL string `json:"url"`
			} `json:"sourceLocation"`
		} `json:"items"`
	}
	_ = json.Unmarshal(details, &d)
	var out []string
	for _, it := range d.Items {
		out = append(out, it.Source.URL+": "+it.Description)
	}
	return "(" + strings.Join(out, "; ") + ")"
}
