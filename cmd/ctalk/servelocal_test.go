package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/internal/syncbuf"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestServeLocal: "ctalk serve --local" serves the web app on the store the
// agents' processes share: its printed link signs a browser in as the
// person, who sees the question an agent asked them through its own
// process; a made-up link signs nobody in; any HOST but a loopback one is
// refused.
func TestServeLocal(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	store := filepath.Join(t.TempDir(), "local.db")
	agent := startLocal(t, store, "builder")
	out := &syncbuf.Buffer{}
	p := startProgram(t, environ{"PORT": "0", "DATABASE_URL": "postgres://postgres@127.0.0.1:1/not_this?sslmode=disable"},
		[]string{"serve", "--local", "--as", "me", "--store", store}, out)
	testkit.OK(t, agent.cs, "ask_person", map[string]any{"to_user_id": "me", "question": "May I merge the release branch tonight?"})

	link := regexp.MustCompile(`http://\S+/local/signin/\S+`).FindString(out.String())
	if link == "" {
		t.Fatalf("no sign-in link printed:\n%s", out)
	}
	path := link[strings.Index(link, "/local/"):]
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(p.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasSuffix(resp.Request.URL.Path, "/inbox") {
		t.Fatalf("the printed link: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	if code, body := getWith(t, browser, p.URL+"/inbox"); code != http.StatusOK || !strings.Contains(body, "May I merge the release branch tonight?") {
		t.Errorf("the person's inbox: %d\n%s", code, body)
	}
	if code, _ := getWith(t, &http.Client{}, p.URL+"/local/signin/"+strings.Repeat("x", 52)); code != http.StatusNotFound {
		t.Errorf("a made-up link: %d, want 404", code)
	}

	err = run(t.Context(), []string{"serve", "--local", "--store", store}, environ{"PORT": "0", "HOST": "0.0.0.0"}.get, &syncbuf.Buffer{}, &syncbuf.Buffer{}, nil)
	if err == nil || !strings.Contains(err.Error(), "only on this machine") {
		t.Errorf("serve --local on 0.0.0.0: %v", err)
	}
}

// getWith GETs url with client and returns the status and body.
func getWith(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
