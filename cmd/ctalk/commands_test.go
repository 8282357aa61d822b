package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// TestEveryCommandAnswersHelp: every command and subcommand prints its usage
// for --help or -h and returns nil, without listening or creating the
// database.
func TestEveryCommandAnswersHelp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "ctalk migrate up"},
		{[]string{"-h"}, "ctalk migrate up"},
		{[]string{"help"}, "ctalk migrate up"},
		{[]string{"serve", "--help"}, "ctalk serve:"},
		{[]string{"serve", "-h"}, "ctalk serve:"},
		{[]string{"migrate", "--help"}, "ctalk migrate:"},
		{[]string{"migrate", "-h"}, "ctalk migrate:"},
		{[]string{"migrate", "up", "--help"}, "ctalk migrate:"},
		{[]string{"migrate", "down", "-h"}, "ctalk migrate:"},
		{[]string{"migrate", "down", "2", "--help"}, "ctalk migrate:"},
		{[]string{"migrate", "version", "--help"}, "ctalk migrate:"},
		{[]string{"version", "--help"}, "ctalk version:"},
		{[]string{"version", "-h"}, "ctalk version:"},
		{[]string{"stdio", "--help"}, "ctalk stdio:"},
		{[]string{"stdio", "-h"}, "ctalk stdio:"},
		{[]string{"passkeys", "--help"}, "ctalk passkeys:"},
		{[]string{"passkeys", "confirm", "-h"}, "ctalk passkeys:"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			env := testEnviron(t)
			var stdout bytes.Buffer
			listened := false
			err := run(context.Background(), c.args, env.get, &stdout, io.Discard, func(string) { listened = true })
			if err != nil {
				t.Fatalf("run = %v, want nil", err)
			}
			if !strings.Contains(stdout.String(), c.want) || !strings.Contains(stdout.String(), "Usage:") {
				t.Errorf("printed %q, want the usage with %q", stdout.String(), c.want)
			}
			if listened {
				t.Error("help listened")
			}
			if _, err := os.Stat(env["RELAY_DB_PATH"]); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("help created the database file (%v)", err)
			}
		})
	}
}

// TestBadCommandLinesTouchNothing: arguments a command does not take are
// refused, with a pointer to its help, before the database is opened.
func TestBadCommandLinesTouchNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--port", "9000"}, `serve takes no arguments, not "--port"`},
		{[]string{"migrate"}, "migrate needs one of: up, down N, version"},
		{[]string{"migrate", "sideways"}, `unknown migrate command "sideways"`},
		{[]string{"migrate", "down"}, "migrate down needs the number of migrations to revert"},
		{[]string{"migrate", "down", "x"}, `"x" is not a positive number`},
		{[]string{"migrate", "down", "0"}, `"0" is not a positive number`},
		{[]string{"migrate", "up", "now"}, `migrate up: unexpected argument "now"`},
		{[]string{"migrate", "down", "1", "2"}, `migrate down: unexpected argument "2"`},
		{[]string{"version", "now"}, `version takes no arguments, not "now"`},
		{[]string{"passkeys"}, "passkeys needs one of: waiting, confirm ID"},
		{[]string{"passkeys", "approve", "x"}, `unknown passkeys command "approve"`},
		{[]string{"passkeys", "confirm"}, "passkeys confirm needs the id"},
		{[]string{"passkeys", "confirm", "a", "b"}, `passkeys confirm: unexpected argument "b"`},
		{[]string{"passkeys", "waiting", "x"}, `passkeys waiting: unexpected argument "x"`},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			env := testEnviron(t)
			err := run(context.Background(), c.args, env.get, io.Discard, io.Discard, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("run = %v, want an error with %q", err, c.want)
			}
			if _, err := os.Stat(env["RELAY_DB_PATH"]); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the database file was created (%v)", err)
			}
		})
	}
}

// TestPortInUseFoundBeforeDatabase: a taken port is reported, naming the
// address and the variable, before the database is created or migrated.
func TestPortInUseFoundBeforeDatabase(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	env := testEnviron(t)
	env["PORT"] = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	err = run(context.Background(), nil, env.get, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "PORT") {
		t.Fatalf("run = %v, want an error naming %s and PORT", err, ln.Addr())
	}
	if _, err := os.Stat(env["RELAY_DB_PATH"]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the database file was created although the port is taken (%v)", err)
	}
}

// TestBuildFromGoRecord: without linker flags, the commit, whether the
// checkout had changes and the commit's time come from Go's build record;
// linker flags win.
func TestBuildFromGoRecord(t *testing.T) {
	t.Parallel()
	record := &debug.BuildInfo{
		Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "879cf31ebd4b06455bb007a9bcf3b93095dc399b"},
			{Key: "vcs.time", Value: "2026-11-30T23:36:09Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	clean := &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261130233609-879cf31ebd4b"}, Settings: record.Settings[:3]}
	for _, c := range []struct {
		name             string
		v, commit, built string
		bi               *debug.BuildInfo
		version, want    string
	}{
		{"go record, modified", "dev", "", "", record, "dev", "commit 879cf31ebd4b06455bb007a9bcf3b93095dc399b with uncommitted changes, committed 2026-11-30T23:36:09Z"},
		{"go record, clean", "dev", "", "", clean, "v0.0.0-20261130233609-879cf31ebd4b", "commit 879cf31ebd4b06455bb007a9bcf3b93095dc399b, committed 2026-11-30T23:36:09Z"},
		{"linker flags", "1.2.0", "abc123", "2026-12-01T10:00:00Z", record, "1.2.0", "commit abc123, built 2026-12-01T10:00:00Z"},
		{"linker commit only", "dev", "abc123", "", record, "dev", "commit abc123, built unknown"},
		{"no record", "dev", "", "", nil, "dev", "commit unknown, built unknown"},
		{"record without git", "dev", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev", "commit unknown, built unknown"},
		{"release", "v1.2.0", "879cf31ebd4b06455bb007a9bcf3b93095dc399b", "2026-12-01T10:00:00Z", installed("v1.2.0"), "v1.2.0", "commit 879cf31ebd4b06455bb007a9bcf3b93095dc399b, built 2026-12-01T10:00:00Z"},
		{"go install at a tag", "dev", "", "", installed("v1.2.0"), "v1.2.0", "commit tagged v1.2.0, built unknown"},
		{"go install at a commit", "dev", "", "", installed("v0.0.0-20261130233609-879cf31ebd4b"), "v0.0.0-20261130233609-879cf31ebd4b", "commit 879cf31ebd4b, committed 2026-11-30T23:36:09Z"},
		{"go install after a tag", "dev", "", "", installed("v1.2.1-0.20261130233609-879cf31ebd4b"), "v1.2.1-0.20261130233609-879cf31ebd4b", "commit 879cf31ebd4b, committed 2026-11-30T23:36:09Z"},
		{"go install after a pre-release", "dev", "", "", installed("v1.3.0-rc.1.0.20261130233609-879cf31ebd4b"), "v1.3.0-rc.1.0.20261130233609-879cf31ebd4b", "commit 879cf31ebd4b, committed 2026-11-30T23:36:09Z"},
		{"go install at a pre-release tag", "dev", "", "", installed("v1.3.0-rc.1"), "v1.3.0-rc.1", "commit tagged v1.3.0-rc.1, built unknown"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := buildFrom(c.v, c.commit, c.built, c.bi)
			if b.Version != c.version || b.String() != c.want {
				t.Errorf("build = %s (%s), want %s (%s)", b.Version, b, c.version, c.want)
			}
		})
	}
}

// TestReleaseSetsBuildVariables: the linker flags of a release
// (.goreleaser.yaml) and of the container image (deploy/Dockerfile) set
// this package's build variables. A -X naming a variable that was renamed
// sets nothing and fails no build, so only this test would notice.
func TestReleaseSetsBuildVariables(t *testing.T) {
	t.Parallel()
	vars := map[string]*string{"main.version": &version, "main.commit": &commit, "main.buildTime": &buildTime}
	x := regexp.MustCompile(`-X\s+([\w.]+)=`)
	for _, file := range []string{".goreleaser.yaml", "deploy/Dockerfile"} {
		b, err := os.ReadFile(filepath.Join("..", "..", file))
		if err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		for _, m := range x.FindAllStringSubmatch(string(b), -1) {
			if vars[m[1]] == nil {
				t.Errorf("%s sets %s, which is not one of ctalk's build variables", file, m[1])
			}
			set[m[1]] = true
		}
		for name := range vars {
			if !set[name] {
				t.Errorf("%s does not set %s with -X", file, name)
			}
		}
	}
}

// installed is the record Go writes into a binary that "go install
// github.com/ctalk/ctalk/cmd/ctalk@..." built from the module at version v:
// the module's version and the build's flags, and no vcs settings.
func installed(v string) *debug.BuildInfo {
	return &debug.BuildInfo{
		Path: "github.com/ctalk/ctalk/cmd/ctalk",
		Main: debug.Module{Path: "github.com/ctalk/ctalk", Version: v},
		Settings: []debug.BuildSetting{
			{Key: "-buildmode", Value: "exe"},
			{Key: "CGO_ENABLED", Value: "0"},
			{Key: "GOOS", Value: "linux"},
		},
	}
}

// TestVersionSaysWhyCommitUnknown: a test binary carries no git record, so
// "ctalk version" must say how to get one.
func TestVersionSaysWhyCommitUnknown(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, environ{}.get, &out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if buildInfo().Commit == "" && !strings.Contains(out.String(), `"go build ./cmd/ctalk" in a git clone`) {
		t.Errorf("version printed %q without saying how to record the commit", out.String())
	}
}
