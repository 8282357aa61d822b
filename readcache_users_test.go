package ctalk_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// namedFile is a Go file named in backquotes, as `inbox/pagecache.go`.
var namedFile = regexp.MustCompile("`([a-z0-9_/]+\\.go)`")

// readcacheImporters returns the packages under root whose production code
// imports internal/readcache, by their folder.
func readcacheImporters(t *testing.T, root string) []string {
	t.Helper()
	const path = "github.com/ctalk/ctalk/internal/readcache"
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err := productionGo(root, func(p string) error {
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if v, _ := strconv.Unquote(imp.Path.Value); v == path {
				seen[filepath.ToSlash(filepath.Dir(p))] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for pkg := range seen {
		out = append(out, pkg)
	}
	sort.Strings(out)
	return out
}

// TestReadcacheUsersListed holds CONTRIBUTING.md's row of internal/readcache,
// the one place that lists what shares the cache, to the packages that
// import it: each must be named there by one of its files.
func TestReadcacheUsersListed(t *testing.T) {
	b, err := os.ReadFile("CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `internal/readcache` |") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("CONTRIBUTING.md has no row for `internal/readcache` in its layout table")
	}
	users := readcacheImporters(t, ".")
	if len(users) == 0 {
		t.Fatal("no package imports internal/readcache: the scan is broken")
	}
	for _, m := range namedFile.FindAllStringSubmatch(row, -1) {
		if _, err := os.Stat(m[1]); err != nil {
			t.Errorf("CONTRIBUTING.md's row of internal/readcache names %s, which does not exist; name the file that keeps the cache", m[1])
		}
	}
	for _, pkg := range users {
		if !strings.Contains(row, "`"+pkg+"/") {
			t.Errorf("%s uses internal/readcache, but CONTRIBUTING.md's row of internal/readcache names none of its files; add the file that keeps the cache, as `%s/<file>.go`", pkg, pkg)
		}
	}
}
