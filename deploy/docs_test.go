package deploy

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README and the pages of docs/ must stay true of the code: these tests
// fail, saying what to write, when a variable, command, route or tool
// changes. They run
// with the rest of the suite: documentation that no longer matches the code
// is a failure like any other.

// readmeSection returns the text of a Markdown document from the heading
// that starts with start up to the next heading of the same or a higher
// level.
func readmeSection(t *testing.T, readme, start string) string {
	t.Helper()
	readme = "\n" + readme
	i := strings.Index(readme, "\n"+start)
	if i < 0 {
		t.Fatalf("no heading %q", start)
	}
	level := strings.Index(start, " ")
	rest := readme[i+1+len(start):]
	for _, line := range strings.SplitAfter(rest, "\n") {
		if strings.HasPrefix(line, "#") {
			if l := strings.Index(line, " "); l > 0 && l <= level {
				return rest[:strings.Index(rest, line)]
			}
		}
	}
	return rest
}

func TestReadmeConfiguration(t *testing.T) {
	r := loadRepo(t)
	table := readmeSection(t, readRepo(t, "docs/configuration.md"), "# Configuration")
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z][A-Z0-9_]*)` \\|").FindAllStringSubmatch(table, -1) {
		rows[m[1]] = true
	}
	for _, name := range sortedKeys(r.envNames) {
		if !rows[name] {
			t.Errorf("cmd/ctalk/config.go reads %s, but docs/configuration.md's table has no row for it", name)
		}
	}
	for _, name := range sortedKeys(rows) {
		if !r.envNames[name] {
			t.Errorf("docs/configuration.md's table describes %s, which cmd/ctalk/config.go does not read", name)
		}
	}
}

func TestReadmeCommands(t *testing.T) {
	main := readRepo(t, "cmd/ctalk/main.go")
	usage := regexp.MustCompile("(?s)const usage = `(.*?)`").FindStringSubmatch(main)
	if usage == nil {
		t.Fatal("no usage text in cmd/ctalk/main.go")
	}
	table := readmeSection(t, readRepo(t, "docs/configuration.md"), "## Commands")
	var n int
	for _, m := range regexp.MustCompile(`(?m)^\s+(ctalk(?: [a-z]+| N)*)\s{2,}`).FindAllStringSubmatch(usage[1], -1) {
		n++
		if !strings.Contains(table, "| `"+m[1]+"` |") {
			t.Errorf("the usage text lists %q, but docs/configuration.md's Commands table has no row for it", m[1])
		}
	}
	if n < 3 {
		t.Fatalf("found only %d commands in the usage text", n)
	}
}

func TestReadmeEndpoints(t *testing.T) {
	table := readmeSection(t, readRepo(t, "docs/http.md"), "# HTTP endpoints")
	for _, rt := range routes(t) {
		path := regexp.MustCompile(`:([a-z_]+)`).ReplaceAllString(rt[1], "{$1}")
		if !strings.Contains(table, "| `"+path+"` |") {
			t.Errorf("the server serves %s, but docs/http.md's table has no row for it", path)
		}
	}
}

func TestReadmeTools(t *testing.T) {
	section := readmeSection(t, readRepo(t, "docs/tools.md"), "# Tool reference")
	files, err := filepath.Glob(filepath.Join("..", "tools", "*_tools.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("found no tools/*_tools.go files (%v)", err)
	}
	tools := map[string]bool{}
	for _, f := range files {
		src := readRepo(t, filepath.Join("tools", filepath.Base(f)))
		// Each tool's options run from its NewTool to the next one.
		starts := regexp.MustCompile(`mcp\.NewTool\("([a-z_]+)"`).FindAllStringSubmatchIndex(src, -1)
		for i, st := range starts {
			name := src[st[2]:st[3]]
			tools[name] = true
			end := len(src)
			if i+1 < len(starts) {
				end = starts[i+1][0]
			}
			doc := readmeSection(t, section, "### `"+name+"`")
			opts := src[st[0]:end]
			args := regexp.MustCompile(`mcp\.With(?:String|Number|Boolean|Any|Array|Object)\("([a-z_]+)"`).FindAllStringSubmatch(opts, -1)
			for param, arg := range map[string]string{"authTokenParam": "auth_token", "messageIDParam": "message_id", "adminPasswordParam": "admin_password"} {
				if strings.Contains(opts, param) {
					args = append(args, []string{"", arg})
				}
			}
			for _, a := range args {
				if !strings.Contains(doc, "`"+a[1]+"`") {
					t.Errorf("tool %s takes argument %s, but its entry in docs/tools.md does not mention it", name, a[1])
				}
			}
		}
	}
	for _, m := range regexp.MustCompile("(?m)^### `([a-z_]+)`").FindAllStringSubmatch(section, -1) {
		if !tools[m[1]] {
			t.Errorf("docs/tools.md describes the tool %s, which no tools/*_tools.go file registers", m[1])
		}
	}
}

// TestCIFuzzesEveryTarget: .ci/run's suite skips the fuzz targets
// (-skip '^Fuzz'), whose seed corpora its fuzzing steps run, so every fuzz
// target of the repository must have a fuzzing step of its own there.
func TestCIFuzzesEveryTarget(t *testing.T) {
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	step := regexp.MustCompile(`(?m)^fuzz (\S+) (Fuzz\w+) \d+$`)
	fuzzed := map[string]bool{}
	for _, m := range step.FindAllStringSubmatch(string(ci), -1) {
		fuzzed[filepath.Clean(m[1])+" "+m[2]] = true
	}
	target := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)`)
	var targets int
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pkg, _ := filepath.Rel("..", filepath.Dir(path))
		for _, m := range target.FindAllStringSubmatch(string(src), -1) {
			targets++
			if !fuzzed[pkg+" "+m[1]] {
				t.Errorf("%s (%s) has no fuzzing step in .ci/run, whose suite skips fuzz targets: add \"fuzz ./%s %s 10\"", m[1], path, pkg, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if targets == 0 || len(fuzzed) == 0 {
		t.Fatalf("found %d fuzz targets and %d fuzzing steps; the patterns no longer match", targets, len(fuzzed))
	}
}
