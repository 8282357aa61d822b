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

// buildInfo fills commit and build time from the Go build information when
// they were not set by the linker.
func buildInfo() (v, c, t string) {
	v, c, t = version, commit, buildTime
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && c == "":
				c = s.Value
			case s.Key == "vcs.time" && t == "":
				t = s.Value
			}
		}
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	if c == "" {
		c = "unknown"
	}
	if t == "" {
		t = "unknown"
	}
	return v, c, t
}
