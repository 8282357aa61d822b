package tools_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestToolsServeNoHTTP holds the cut between api and tools: the tools import
// neither echo nor net/http nor a database driver, so that HTTP stays in api
// and SQL in the domain packages.
func TestToolsServeNoHTTP(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the tools' imports with")
	}
	out, err := exec.Command(gobin, "list", "-f", `{{join .Imports " "}}`, "github.com/ctalk/ctalk/tools").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, imp := range strings.Fields(string(out)) {
		switch {
		case imp == "net/http", imp == "database/sql", strings.HasPrefix(imp, "github.com/labstack/echo"), imp == "github.com/ctalk/ctalk/db":
			t.Errorf("tools imports %s", imp)
		}
	}
}
