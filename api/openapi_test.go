package api_test

import (
	"encoding/json"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
)

// TestOpenAPIMatchesRoutes fails when the REST mirror serves a route that
// its OpenAPI document does not describe, or the document describes one it
// does not serve.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	assembly, err := app.Assemble(dbtest.Open(t, db.SQLite), app.Wiring{API: api.Config{Logger: slog.New(slog.DiscardHandler)}, Auth: auth.DefaultConfig(), Inbox: inbox.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { assembly.Close(t.Context()) })
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	var documented, served []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	param := regexp.MustCompile(`:([a-z_]+)`)
	for _, r := range assembly.Routes() {
		if strings.HasPrefix(r.Path, "/api/") {
			served = append(served, r.Method+" "+param.ReplaceAllString(r.Path, "{$1}"))
		}
	}
	slices.Sort(documented)
	slices.Sort(served)
	if len(served) == 0 || !slices.Equal(documented, served) {
		t.Fatalf("openapi.json describes\n%s\nbut the server serves\n%s", strings.Join(documented, "\n"), strings.Join(served, "\n"))
	}
}
