package main

import (
	"testing"

	"github.com/ctalk/ctalk/db"
)

// previousMigration returns the highest migration version of engine below
// top: versions are not consecutive when changes take numbers of their own.
func previousMigration(t *testing.T, engine string, top int) int {
	t.Helper()
	all, err := db.Migrations(db.Engine(engine))
	if err != nil || len(all) == 0 {
		t.Fatalf("no %s migrations: %v", engine, err)
	}
	prev := 0
	for _, v := range all {
		if int(v) < top {
			prev = int(v)
		}
	}
	return prev
}
