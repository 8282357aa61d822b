package mcpclient_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoProgramImportsTestCode: no command of the module, the server, the
// load harness and the screenshots command included, is built with the
// testing package or the test kit; they share this package instead.
func TestNoProgramImportsTestCode(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the programs' imports with")
	}
	out, err := exec.Command(gobin, "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}:{{join .Deps " "}}{{end}}`, "github.com/ctalk/ctalk/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	programs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		program, deps, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		programs++
		for _, dep := range strings.Fields(deps) {
			if dep == "testing" || dep == "github.com/ctalk/ctalk/internal/testkit" {
				t.Errorf("%s is built with %s, test code", program, dep)
			}
		}
	}
	if programs < 3 {
		t.Fatalf("found %d programs, want ctalk, ctalk-bench and ctalk-screenshots:\n%s", programs, out)
	}
}
