package main

import (
	"runtime/debug"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=... -X main.buildTime=...".
var (
	version   = "dev"
	commit    = ""
	buildTime = ""
)

// build is what a binary knows of where it came from.
type build struct {
	Version string
	// Commit is the git commit, empty when unknown.
	Commit string
	// Modified is set when the checkout had uncommitted changes.
	Modified bool
	// Time is the build time given to the linker or, when only Go's record
	// of the checkout is there, the commit's time (Committed set).
	Time      string
	Committed bool
}

// unknownCommit is what "ctalk version" adds when the commit is unknown.
const unknownCommit = `The commit is unknown: this binary was built without git information (go run,
-buildvcs=false, a git worktree, or a copy of the source without .git). Build
it with "go build ./cmd/ctalk" in a git clone, or give -ldflags "-X main.commit=...".`

// buildInfo is this binary's build: what the linker set, else what Go
// recorded of the git checkout it was built in.
func buildInfo() build {
	bi, _ := debug.ReadBuildInfo()
	return buildFrom(version, commit, buildTime, bi)
}

// buildFrom fills the commit, its state and time from bi's vcs settings
// when the linker did not set them. bi may be nil.
func buildFrom(v, c, t string, bi *debug.BuildInfo) build {
	b := build{Version: v, Commit: c, Time: t}
	if bi == nil {
		return b
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	if b.Commit == "" && vcs["vcs.revision"] != "" {
		b.Commit, b.Modified = vcs["vcs.revision"], vcs["vcs.modified"] == "true"
		if b.Time == "" && vcs["vcs.time"] != "" {
			b.Time, b.Committed = vcs["vcs.time"], true
		}
	}
	if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	return b
}

// commit is the commit for people: unknown, or the hash, marked when the
// checkout had changes.
func (b build) commit() string {
	switch {
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
