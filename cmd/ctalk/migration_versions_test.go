package main

import (
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/migrations"
)

// previousMigration returns the highest migration version of engine below
// top: versions are not consecutive when changes take numbers of their own.
func previousMigration(t *testing.T, engine string, top int) int {
	t.Helper()
	ups, err := fs.Glob(migrations.FS, engine+"/*.up.sql")
	if err != nil || len(ups) == 0 {
		t.Fatalf("no %s migrations: %v", engine, err)
	}
	prev := 0
	for _, p := range ups {
		name := p[strings.LastIndex(p, "/")+1:]
		v, err := strconv.Atoi(name[:strings.IndexByte(name, '_')])
		if err != nil {
			t.Fatalf("migration %s has no version number", p)
		}
		if v < top && v > prev {
			prev = v
		}
	}
	return prev
}
