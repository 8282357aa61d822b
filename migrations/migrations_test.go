package migrations

import (
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// engineSpecific marks a statement that only one engine has, such as a
// full-text index of its own kind. The comment must say why, after the colon.
const engineSpecific = "-- engine-specific:"

// typeNames are the known differences between the engines' spelling of one
// schema: SQLite's spelling, and Postgres's.
var typeNames = []struct {
	sqlite   *regexp.Regexp
	postgres string
}{
	{regexp.MustCompile(`\bTIMESTAMP\b`), "TIMESTAMPTZ"},
	{regexp.MustCompile(`\bINTEGER PRIMARY KEY AUTOINCREMENT\b`), "BIGSERIAL PRIMARY KEY"},
}

var (
	lineComment = regexp.MustCompile(`--[^\n]*`)
	space       = regexp.MustCompile(`\s+`)
	spaceInside = regexp.MustCompile(`\s*([(),])\s*`)
)

// statements returns the statements of one migration file, each with its
// comments dropped, its white space collapsed and the engine's type names
// written as Postgres writes them. Statements marked engineSpecific are left
// out, and returned apart.
func statements(src string, sqlite bool) (common, own []string) {
	for _, stmt := range strings.Split(src, ";") {
		marked := strings.Contains(stmt, engineSpecific)
		stmt = lineComment.ReplaceAllString(stmt, "")
		stmt = strings.TrimSpace(space.ReplaceAllString(stmt, " "))
		stmt = spaceInside.ReplaceAllString(stmt, "$1")
		if stmt == "" {
			continue
		}
		if sqlite {
			for _, tn := range typeNames {
				stmt = tn.sqlite.ReplaceAllLiteralString(stmt, tn.postgres)
			}
		}
		if marked {
			own = append(own, stmt)
		} else {
			common = append(common, stmt)
		}
	}
	return common, own
}

func files(t *testing.T, engine string) []string {
	t.Helper()
	names, err := fs.Glob(FS, engine+"/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		names[i] = strings.TrimPrefix(n, engine+"/")
	}
	return names
}

// TestEnginesInStep fails when the two folders stop describing one schema:
// a step missing from one engine, or a statement that differs other than in
// the known type names and is not marked engine-specific.
func TestEnginesInStep(t *testing.T) {
	pg, lite := files(t, "postgres"), files(t, "sqlite")
	if len(pg) < 2 {
		t.Fatalf("found only %d Postgres migrations", len(pg))
	}
	for _, name := range pg {
		if !slices.Contains(lite, name) {
			t.Errorf("postgres/%s has no sqlite/%s: every step needs both engines", name, name)
		}
	}
	for _, name := range lite {
		if !slices.Contains(pg, name) {
			t.Errorf("sqlite/%s has no postgres/%s: every step needs both engines", name, name)
		}
	}
	for _, name := range pg {
		if !slices.Contains(lite, name) {
			continue
		}
		pgSrc, _ := fs.ReadFile(FS, "postgres/"+name)
		liteSrc, _ := fs.ReadFile(FS, "sqlite/"+name)
		for _, d := range drift(name, string(pgSrc), string(liteSrc)) {
			t.Error(d)
		}
	}
}

// drift returns every way one step's two files differ beyond the known type
// names and the statements marked engine-specific.
func drift(name, pgSrc, liteSrc string) []string {
	a, _ := statements(pgSrc, false)
	b, _ := statements(liteSrc, true)
	var out []string
	for i := range max(len(a), len(b)) {
		switch {
		case i >= len(a):
			out = append(out, fmt.Sprintf("%s: only sqlite has statement %d: %s\n(mark it %q with the reason if it belongs to SQLite alone)", name, i+1, b[i], engineSpecific))
		case i >= len(b):
			out = append(out, fmt.Sprintf("%s: only postgres has statement %d: %s\n(mark it %q with the reason if it belongs to Postgres alone)", name, i+1, a[i], engineSpecific))
		case a[i] != b[i]:
			out = append(out, fmt.Sprintf("%s: statement %d differs beyond the known type names:\npostgres: %s\nsqlite:   %s", name, i+1, a[i], b[i]))
		}
	}
	return out
}

// TestEnginesInStepCatchesDrift shows that the comparison fails on the
// drifts it exists for, and accepts the known differences.
func TestEnginesInStepCatchesDrift(t *testing.T) {
	pg := "CREATE TABLE x (\n  id BIGSERIAL PRIMARY KEY,\n  at TIMESTAMPTZ NOT NULL -- when\n);\nCREATE INDEX x_at ON x (at);"
	same := "CREATE TABLE x (id INTEGER PRIMARY KEY AUTOINCREMENT, at TIMESTAMP NOT NULL);\n-- a comment\nCREATE INDEX x_at ON x(at);"
	tests := []struct {
		name   string
		sqlite string
		fails  bool
	}{
		{"known differences", same, false},
		{"a column missing", strings.Replace(same, ", at TIMESTAMP NOT NULL", "", 1), true},
		{"nullable on one engine", strings.Replace(same, "at TIMESTAMP NOT NULL", "at TIMESTAMP", 1), true},
		{"an index missing", strings.Replace(same, "CREATE INDEX x_at ON x(at);", "", 1), true},
		{"another type", strings.Replace(same, "at TIMESTAMP", "at TEXT", 1), true},
		{"a marked statement of its own", same + "\n-- engine-specific: SQLite's full-text table\nCREATE VIRTUAL TABLE f USING fts5(body);", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := drift("x.sql", pg, tt.sqlite)
			if (len(got) > 0) != tt.fails {
				t.Errorf("drift = %q, want a failure: %v", got, tt.fails)
			}
		})
	}
}
