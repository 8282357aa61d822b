package main

import (
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestScreenshots runs the command as the README says to, so that it keeps
// working as the pages change: every page it finds becomes a PNG of the
// promised size, the live one shows the announcement (take fails
// otherwise), the demo's notification mail is among them (serve fails
// when the demo sends none), and so is the decision card with its
// questions (take fails otherwise).
func TestScreenshots(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("skipping: no chromium on PATH (apt-get install -y chromium)")
	}
	out := t.TempDir()
	if err := run(out, chromium); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"home", "signin", "inbox", "inbox-dark", "inbox-phone", "question-phone", "inbox-live", "notification-mail", "card"} {
		f, err := os.Open(filepath.Join(out, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := wideW
		if name == "inbox-phone" || name == "question-phone" {
			want = phoneW * 2
		}
		if cfg.Width != want {
			t.Errorf("%s is %d px wide, want %d", name, cfg.Width, want)
		}
	}
}
