package main

import (
	"regexp"
	"runtime/debug"
	"time"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=... -X main.buildTime=...",
// as a release (.goreleaser.yaml) and the container image do.
var (
	version   = "dev"
	commit    = ""
	buildTime = ""
)

// build is what a binary knows of where it came from.
type build struct {
	Version string
	// Commit is the git commit, empty when unknown; from a pseudo-version
	// it is the 12-character prefix Go keeps.
	Commit string
	// Modified is set when the checkout had uncommitted changes.
	Modified bool
	// Time is the build time given to the linker or, when only Go's record
	// of the checkout or the module's pseudo-version is there, the commit's
	// time (Committed set).
	Time      string
	Committed bool
	// Tag is set when the binary was built from the module at a tagged
	// version ("go install github.com/ctalk/ctalk/cmd/ctalk@v1.2.0"), which
	// names the commit although the binary does not record it.
	Tag string
}

// unknownCommit is what "ctalk version" adds when the commit is unknown.
const unknownCommit = `The commit is unknown: this binary was built without git information (go run,
-buildvcs=false, a git worktree, or a copy of the source without .git). Build
it with "go build ./cmd/ctalk" in a git clone, or give -ldflags "-X main.commit=...".`

// buildInfo is this binary's build: what the linker set, else what Go
// recorded of the git checkout or the module version it was built from.
func buildInfo() build {
	bi, _ := debug.ReadBuildInfo()
	return buildFrom(version, commit, buildTime, bi)
}

// buildFrom fills the version, the commit, its state and time from bi when
// the linker did not set them: from the vcs settings of a build in a git
// checkout, else from the main module's version, which "go install
// ...@version" records and which names a tag or, as a pseudo-version, a
// commit. bi may be nil.
func buildFrom(v, c, t string, bi *debug.BuildInfo) build {
	b := build{Version: v, Commit: c, Time: t}
	if bi == nil {
		return b
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	mod := bi.Main.Version
	if mod == "(devel)" {
		mod = ""
	}
	if b.Version == "dev" && mod != "" {
		b.Version = mod
	}
	if b.Commit != "" {
		return b
	}
	if vcs["vcs.revision"] != "" {
		b.Commit, b.Modified = vcs["vcs.revision"], vcs["vcs.modified"] == "true"
		if b.Time == "" && vcs["vcs.time"] != "" {
			b.Time, b.Committed = vcs["vcs.time"], true
		}
		return b
	}
	if vcs["vcs"] != "" || mod == "" {
		return b
	}
	// No checkout: the binary was built from the module's source as the
	// module proxy serves it.
	if rev, at, ok := pseudoVersion(mod); ok {
		b.Commit = rev
		if b.Time == "" {
			b.Time, b.Committed = at, true
		}
		return b
	}
	b.Tag = mod
	return b
}

// pseudo matches a Go pseudo-version's commit time and revision, in each
// of its three forms (vX.0.0-TIME-REV, vX.Y.Z-pre.0.TIME-REV,
// vX.Y.Z-0.TIME-REV), before any +build suffix.
var pseudo = regexp.MustCompile(`^v\d+\.\d+\.\d+-(?:[^+]*[.-])?(\d{14})-([0-9a-f]{12})(?:\+.*)?$`)

// pseudoVersion returns the commit prefix and the commit's time (RFC 3339,
// UTC) that the pseudo-version v names; ok is false when v is not one.
func pseudoVersion(v string) (rev, at string, ok bool) {
	m := pseudo.FindStringSubmatch(v)
	if m == nil {
		return "", "", false
	}
	tm, err := time.Parse("20060102150405", m[1])
	if err != nil {
		return "", "", false
	}
	return m[2], tm.UTC().Format(time.RFC3339), true
}

// commit is the commit for people: unknown, the hash, marked when the
// checkout had changes, or the tag that names it.
func (b build) commit() string {
	switch {
	case b.Commit == "" && b.Tag != "":
		return "tagged " + b.Tag
	case b.Commit == "":
		return "unknown"
	case b.Modified:
		return b.Commit + " with uncommitted changes"
	}
	return b.Commit
}

// time is the build time for people, or the commit's time when that is all
// there is.
func (b build) time() string {
	if b.Time == "" {
		return "unknown"
	}
	return b.Time
}

// String is what the home page and "ctalk version" show besides the version,
// such as "commit 879cf31..., built 2026-11-30T23:36:09Z".
func (b build) String() string {
	if b.Committed {
		return "commit " + b.commit() + ", committed " + b.time()
	}
	return "commit " + b.commit() + ", built " + b.time()
}
