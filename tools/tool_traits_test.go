package tools_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db/dbtest"
)

// TestLoginFailuresCountEveryAdminTool refuses a wrong admin password on
// every admin tool (one whose admin_password may be left out for an
// admin's token), and expects each refusal among the login
// failures: the metric follows the tools' declared traits, so an admin tool
// added later is counted without a list to update.
func TestLoginFailuresCountEveryAdminTool(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite")
	e.Org(t, eraStateless, "acme")
	anon := e.Connect(t, eraStateless, "")

	list, err := anon.ListTools(dbtest.Operator(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var admin []string
	for _, tool := range list.Tools {
		var schema struct {
			Properties map[string]struct {
				Type string `json:"type"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		b, _ := json.Marshal(tool.InputSchema)
		if err := json.Unmarshal(b, &schema); err != nil {
			t.Fatalf("%s: input schema %s: %v", tool.Name, b, err)
		}
		// An admin tool's admin_password is optional: an admin's token
		// serves too. register_organization's sets the password instead.
		if _, ok := schema.Properties["admin_password"]; !ok || slices.Contains(schema.Required, "admin_password") {
			continue
		}
		admin = append(admin, tool.Name)
		args := map[string]any{"org_id": "acme", "admin_password": adminPW + "-wrong"}
		for _, name := range schema.Required {
			if _, set := args[name]; !set {
				args[name] = "bob"
			}
		}
		fail(t, anon, tool.Name, args, "unauthorized")
	}
	if len(admin) < 8 {
		t.Fatalf("tools taking admin_password: %v; want at least the 8 admin tools", admin)
	}

	req, _ := http.NewRequest("GET", e.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+testMetricsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	want := fmt.Sprintf(`ctalk_login_failures_total{reason="unauthorized"} %d`, len(admin))
	if !strings.Contains(string(body), want) {
		t.Errorf("/metrics lacks %s after refusing %v; its login failures:\n%s", want, admin, grepLines(string(body), "ctalk_login_failures_total"))
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
