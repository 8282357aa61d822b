package ctalk_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// write is one statement in the source that writes a table: the package
// whose production code holds it, the table, and the columns it sets (nil
// for a DELETE, or when they cannot be read from the literal).
type write struct {
	pkg, table, where string
	columns           []string
	known             bool
}

var (
	writeSQL = regexp.MustCompile(`\b(INSERT INTO|UPDATE|DELETE FROM)\s+([a-z_][a-z0-9_]*)`)
	// A write keyword that ends its literal: the table follows in code.
	danglingSQL = regexp.MustCompile(`\b(INSERT INTO|UPDATE|DELETE FROM)\s*$`)
	setClause   = regexp.MustCompile(`(?s)^\s*(?:[a-z_]+\s+)?SET\s+(.*?)(?:\bWHERE\b|\bFROM\b|\bRETURNING\b|$)`)
	insertCols  = regexp.MustCompile(`^\s*\(([^)]*)\)`)
	assignment  = regexp.MustCompile(`(?:^|,)\s*([a-z_][a-z0-9_]*)\s*=`)
	// An assignment whose column is built in code.
	danglingSet = regexp.MustCompile(`SET\s*$|,\s*$`)
	// Row locks, which write nothing.
	rowLock = regexp.MustCompile(`\bFOR (NO KEY )?UPDATE\b`)
)

// productionGo calls fn with the path of every Go file of production code
// under root: not tests, testdata or hidden folders.
func productionGo(root string, fn func(path string) error) error {
	return filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		return fn(path)
	})
}

// catalogWriters are the files whose statements name their tables from
// the database's catalog on purpose: db/purge.go deletes an organization's
// rows from every table with an org_id column, so that a table added
// later is never left behind when an org is deleted (CONTRIBUTING.md).
var catalogWriters = map[string]bool{"db/purge.go": true}

// writes returns every write in the production Go code under root, found
// in its string literals, and the statements whose table it cannot read.
func writes(root string) (out []write, unread []string, err error) {
	fset := token.NewFileSet()
	err = productionGo(root, func(path string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			s = rowLock.ReplaceAllString(s, "FOR LOCK")
			where := fset.Position(lit.Pos()).String()
			if danglingSQL.MatchString(s) && !catalogWriters[filepath.ToSlash(path)] {
				unread = append(unread, where+": a statement's table is built in code; spell it out, so that its writer can be read from the source")
			}
			for _, m := range writeSQL.FindAllStringSubmatchIndex(s, -1) {
				w := write{pkg: pkg, table: s[m[4]:m[5]], where: where}
				w.columns, w.known = columnsOf(s[m[5]:], s[m[2]:m[3]])
				out = append(out, w)
			}
			return true
		})
		return nil
	})
	return out, unread, err
}

// columnsOf returns the columns a statement of kind sets, read from rest
// (the statement after its table), and whether all of them could be read.
func columnsOf(rest, kind string) ([]string, bool) {
	switch kind {
	case "DELETE FROM":
		return nil, true
	case "INSERT INTO":
		m := insertCols.FindStringSubmatch(rest)
		if m == nil {
			return nil, false
		}
		var cols []string
		for _, c := range strings.Split(m[1], ",") {
			cols = append(cols, strings.TrimSpace(c))
		}
		return cols, true
	}
	m := setClause.FindStringSubmatch(rest)
	if m == nil || danglingSet.MatchString(m[1]) {
		return nil, false
	}
	var cols []string
	for _, a := range assignment.FindAllStringSubmatch(m[1], -1) {
		cols = append(cols, a[1])
	}
	return cols, len(cols) > 0
}

// ownership is CONTRIBUTING.md's table: each table's owner, and the
// columns that belong to another package than their table's.
type ownership struct {
	tables  map[string]string
	columns map[string]string // "table.column" -> owner
}

func readOwnership(t *testing.T) ownership {
	t.Helper()
	b, err := os.ReadFile("CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "## Who owns which table")
	if i < 0 {
		t.Fatal(`CONTRIBUTING.md has no section "## Who owns which table"`)
	}
	doc = doc[i:]
	if j := strings.Index(doc[3:], "\n## "); j >= 0 {
		doc = doc[:j+3]
	}
	o := ownership{tables: map[string]string{}, columns: map[string]string{}}
	names := regexp.MustCompile("`([a-z_./]+)`")
	for _, line := range strings.Split(doc, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 4 || strings.Contains(cells[1], "---") || strings.TrimSpace(cells[1]) == "Tables" {
			continue
		}
		owner := names.FindStringSubmatch(cells[2])
		if owner == nil {
			t.Fatalf("CONTRIBUTING.md: the row %q names no owner package", line)
		}
		for _, m := range names.FindAllStringSubmatch(cells[1], -1) {
			if strings.Contains(m[1], ".") {
				o.columns[m[1]] = owner[1]
			} else {
				o.tables[m[1]] = owner[1]
			}
		}
	}
	if len(o.tables) == 0 {
		t.Fatal("CONTRIBUTING.md's ownership table lists no tables")
	}
	return o
}

// violations holds the writes in the source to the ownership documented:
// every table written is listed, only its owner writes it, a column given
// to another package is written by that package alone, and every owner
// listed writes what it is given.
func (o ownership) violations(ws []write) []string {
	var out []string
	written := map[string]bool{}
	for _, w := range ws {
		owner, ok := o.tables[w.table]
		if !ok {
			out = append(out, w.where+": table "+w.table+", written by "+w.pkg+", is missing from CONTRIBUTING.md's ownership table; add it with its owner")
			continue
		}
		var foreign []string // columns of w.table that belong to another package
		for tc, colOwner := range o.columns {
			if table, col, _ := strings.Cut(tc, "."); table == w.table && colOwner != owner {
				foreign = append(foreign, col)
				if w.pkg == colOwner && slices.Contains(w.columns, col) {
					written[tc] = true
				}
			}
		}
		switch {
		case w.pkg == owner:
			written[w.table] = true
			for _, col := range foreign {
				if slices.Contains(w.columns, col) {
					out = append(out, w.where+": "+w.pkg+" writes "+w.table+"."+col+", which CONTRIBUTING.md gives to "+o.columns[w.table+"."+col]+"; call that package")
				}
			}
			if !w.known && len(foreign) > 0 {
				out = append(out, w.where+": "+w.pkg+" writes columns of "+w.table+" built in code, and some of that table's columns belong to another package; spell them out")
			}
		case w.known && len(w.columns) > 0 && allIn(w.columns, w.pkg, w.table, o.columns):
			// A package's own columns in another's table.
		default:
			out = append(out, w.where+": "+w.pkg+" writes "+w.table+" "+strings.Join(w.columns, ", ")+", which CONTRIBUTING.md gives to "+owner+"; call that package, or correct the table")
		}
	}
	var missing []string
	for table, owner := range o.tables {
		if !written[table] {
			missing = append(missing, "CONTRIBUTING.md gives table "+table+" to "+owner+", which never writes it; correct the table")
		}
	}
	for tc, owner := range o.columns {
		if !written[tc] {
			missing = append(missing, "CONTRIBUTING.md gives column "+tc+" to "+owner+", which never writes it; correct the table")
		}
	}
	sort.Strings(missing)
	return append(out, missing...)
}

// allIn reports whether every column in cols of table is given to pkg.
func allIn(cols []string, pkg, table string, owners map[string]string) bool {
	for _, c := range cols {
		if owners[table+"."+c] != pkg {
			return false
		}
	}
	return true
}

// TestTableOwnership derives each table's writers from the SQL in the
// source and holds CONTRIBUTING.md's ownership table to them.
func TestTableOwnership(t *testing.T) {
	ws, unread, err := writes(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range append(unread, readOwnership(t).violations(ws)...) {
		t.Error(v)
	}
}

// TestTableOwnershipCatches shows that the check fails on each way the
// source can contradict the table, and passes the source that agrees.
func TestTableOwnershipCatches(t *testing.T) {
	o := ownership{tables: map[string]string{"users": "orgs", "tokens": "auth"}, columns: map[string]string{"users.password_hash": "auth"}}
	agree := []write{
		{pkg: "orgs", table: "users", columns: []string{"id", "name"}, known: true},
		{pkg: "auth", table: "users", columns: []string{"password_hash"}, known: true},
		{pkg: "auth", table: "tokens", known: true},
	}
	for _, tc := range []struct {
		name  string
		extra write
		drop  int // index of agree to leave out, or -1
		want  string
	}{
		{"agreeing", write{}, -1, ""},
		{"a table not listed", write{pkg: "orgs", table: "presence_waits", known: true}, -1, "missing from CONTRIBUTING.md"},
		{"a second writer", write{pkg: "oauth", table: "tokens", known: true}, -1, "gives to auth"},
		{"a second writer of a column", write{pkg: "orgs", table: "users", columns: []string{"removed_at", "password_hash"}, known: true}, -1, "users.password_hash, which CONTRIBUTING.md gives to auth"},
		{"a column's owner writing another column", write{pkg: "auth", table: "users", columns: []string{"password_hash", "role"}, known: true}, -1, "gives to orgs"},
		{"columns built in code", write{pkg: "orgs", table: "users", known: false}, -1, "built in code"},
		{"an owner that writes nothing", write{}, 2, "table tokens to auth, which never writes it"},
		{"a column's owner that writes nothing", write{}, 1, "column users.password_hash to auth, which never writes it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ws []write
			for i, w := range agree {
				if i != tc.drop {
					ws = append(ws, w)
				}
			}
			if tc.extra.table != "" {
				ws = append(ws, tc.extra)
			}
			got := strings.Join(o.violations(ws), "\n")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("violations:\n%s\nwant one containing %q", got, tc.want)
			}
		})
	}
	t.Run("a statement's table built in code", func(t *testing.T) {
		dir := t.TempDir()
		src := "package x\n\nconst q = `UPDATE ` + \"t\"\nconst lock = `SELECT 1 FROM t FOR NO KEY UPDATE`\n"
		if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		ws, unread, err := writes(dir)
		if err != nil || len(ws) != 0 || len(unread) != 1 {
			t.Errorf("writes = %v, unread = %v, %v: want the UPDATE without its table reported, and the row lock ignored", ws, unread, err)
		}
	})
}
