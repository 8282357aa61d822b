package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readOnly makes path unwritable even for root: immutable with chattr, or,
// for another user, without write permission. It skips the test, saying
// why, where neither can be done, and undoes itself at the end.
func readOnly(t *testing.T, path string) {
	t.Helper()
	if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err == nil {
		t.Cleanup(func() { exec.Command("chattr", "-i", path).Run() })
		return
	} else if os.Geteuid() == 0 {
		t.Skipf("cannot make %s read-only: running as root, where permission bits do not stop writes, and chattr +i failed: %v %s", path, err, out)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, fi.Mode().Perm()&^0o222); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(path, fi.Mode().Perm()) })
}

// TestSQLitePathErrorsSayWhatToDo: a SQLite database that cannot be written
// is refused at start with the file, what is wrong with it, and the
// variable that moves it, by migrate and serve alike.
func TestSQLitePathErrorsSayWhatToDo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dir string) string
		want  string
	}{
		{"under a regular file", func(t *testing.T, dir string) string {
			if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, "file", "ctalk.db")
		}, "is not a directory"},
		{"missing directory", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "nope", "ctalk.db")
		}, "does not exist; create it"},
		{"unwritable directory", func(t *testing.T, dir string) string {
			sub := filepath.Join(dir, "ro")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			readOnly(t, sub)
			return filepath.Join(sub, "ctalk.db")
		}, "is not writable"},
		{"read-only file", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "ctalk.db")
			env := testEnviron(t)
			env["RELAY_DB_PATH"] = path
			if err := run(context.Background(), []string{"migrate", "up"}, env.get, io.Discard, io.Discard, nil); err != nil {
				t.Fatal(err)
			}
			readOnly(t, path)
			return path
		}, "file %s is not writable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := c.setup(t, t.TempDir())
			want := strings.ReplaceAll(c.want, "%s", path)
			env := testEnviron(t)
			env["RELAY_DB_PATH"] = path
			for _, args := range [][]string{{"migrate", "up"}, {"serve"}} {
				listened := false
				err := run(context.Background(), args, env.get, io.Discard, io.Discard, func(string) { listened = true })
				if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "set RELAY_DB_PATH to") {
					t.Errorf("%s: %v; want an error naming %s, saying %q and naming RELAY_DB_PATH", args[0], err, path, want)
				}
				if listened {
					t.Errorf("%s listened", args[0])
				}
			}
		})
	}
}
