package web_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
)

// TestStaticFilesAreKeptByTheirHash: every page names its stylesheet,
// icon and scripts with the hash of their content (the passkey and push
// scripts only on the pages that use them), which a browser may
// keep for a year (immutable), gzipped when it accepts that; the same file
// without its hash, or with another, is served to be asked again
// (no-cache); and the pages themselves are never compressed, as each holds
// the CSRF token.
func TestStaticFilesAreKeptByTheirHash(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		fetch := func(path string) *http.Response {
			req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
			req.Header.Set("Accept-Encoding", "gzip")
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { resp.Body.Close() })
			return resp
		}
		resp := fetch("/signin")
		page, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		assets := regexp.MustCompile(`(?:href|src)="(/static/[a-z.-]+)\?v=([0-9a-f]{12})"`).FindAllStringSubmatch(string(page), -1)
		if resp.StatusCode != http.StatusOK || len(assets) != 4 || resp.Header.Get("Content-Encoding") != "" {
			t.Fatalf("/signin: %d, %q, assets %v; want uncompressed, naming the stylesheet, icon, app.js and passkey.js by hash",
				resp.StatusCode, resp.Header.Get("Content-Encoding"), assets)
		}
		signup, err := io.ReadAll(fetch("/signup").Body)
		if err != nil || !strings.Contains(string(signup), "/static/app.js?v=") || strings.Contains(string(signup), "passkey.js") || strings.Contains(string(signup), "push.js") {
			t.Errorf("/signup (%v) loads the passkey or push script, or not app.js", err)
		}
		for _, a := range assets {
			resp := fetch(a[1] + "?v=" + a[2])
			if cc := resp.Header.Get("Cache-Control"); resp.StatusCode != http.StatusOK || cc != "public, max-age=31536000, immutable" {
				t.Errorf("%s by its hash: %d, Cache-Control %q; want kept for a year", a[1], resp.StatusCode, cc)
			}
			if strings.HasSuffix(a[1], ".css") || strings.HasSuffix(a[1], "app.js") {
				if resp.Header.Get("Content-Encoding") != "gzip" {
					t.Errorf("%s is not gzipped", a[1])
				} else if zr, err := gzip.NewReader(resp.Body); err != nil {
					t.Errorf("%s: %v", a[1], err)
				} else if b, _ := io.ReadAll(zr); len(b) < 1024 {
					t.Errorf("%s unzips to %d bytes", a[1], len(b))
				}
			}
			for _, other := range []string{a[1], a[1] + "?v=000000000000"} {
				if cc := fetch(other).Header.Get("Cache-Control"); cc != "no-cache" {
					t.Errorf("%s: Cache-Control %q, want no-cache", other, cc)
				}
			}
		}
	})
}
