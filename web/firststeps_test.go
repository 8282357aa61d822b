package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
)

// stepRE finds each first step of the inbox with whether it is done.
var stepRE = regexp.MustCompile(`<span class="step-state">(Done|To do):</span> ([^<]+)</h3>`)

// steps is what the inbox's first steps say: each step's title with Done or
// To do, or nil when the inbox shows none.
func steps(t *testing.T, c *client) map[string]string {
	t.Helper()
	code, body := c.get("/inbox")
	if code != http.StatusOK {
		t.Fatalf("GET /inbox: %d", code)
	}
	if !strings.Contains(body, `id="first-steps"`) {
		return nil
	}
	out := map[string]string{}
	for _, m := range stepRE.FindAllStringSubmatch(body, -1) {
		out[m[2]] = m[1]
	}
	return out
}

// TestFirstStepsLeadTheNewAdmin: after signing up, the new admin's inbox
// leads them through connecting their agent (with this server's exact
// command, whole), bringing in coworkers and choosing how answers are
// approved; each step turns done from what the org holds once it is done,
// and the steps leave the inbox once all are. A member is led only to
// connect their agent.
func TestFirstStepsLeadTheNewAdmin(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		t.Parallel()
		s := start(t, engine)
		dana := s.anonymous(t)
		code, body := dana.post("/signup", url.Values{"org_id": {"newco"}, "org_name": {"New Co"}, "admin_password": {adminPW}, "approval_mode": {"agent"},
			"user_id": {"dana"}, "name": {"Dana"}, "password": {userPW}})
		if code != http.StatusOK || !strings.Contains(body, `id="first-steps"`) {
			t.Fatalf("sign-up lands on %d without the first steps:\n%s", code, body)
		}
		if want := "claude mcp add --transport http ctalk " + s.URL + "/mcp</pre>"; !strings.Contains(body, want) {
			t.Errorf("the first steps do not show the command %q whole", want)
		}
		check := func(when string, want map[string]string) {
			t.Helper()
			got := steps(t, dana)
			if len(got) != len(want) {
				t.Errorf("%s: the steps are %v, want %v", when, got, want)
				return
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: step %q is %q, want %q (all: %v)", when, k, got[k], v, got)
				}
			}
		}
		agent, coworkers, approval := "Connect your agent", "Add or invite your coworkers", "Choose how answers are approved"
		check("after sign-up", map[string]string{agent: "To do", coworkers: "To do", approval: "To do"})
		if code, _ := dana.post("/tokens", url.Values{"label": {"laptop"}, "days": {"30"}}); code != http.StatusOK {
			t.Fatalf("personal token: %d", code)
		}
		check("with a personal token", map[string]string{agent: "Done", coworkers: "To do", approval: "To do"})
		if code, _ := dana.post("/admin/members", url.Values{"user_id": {"erin"}, "name": {"Erin"}, "password": {userPW}}); code != http.StatusOK {
			t.Fatalf("add a member: %d", code)
		}
		check("with a coworker", map[string]string{agent: "Done", coworkers: "Done", approval: "To do"})
		if code, _ := dana.post("/admin/settings", url.Values{"approval_mode": {"agent"}}); code != http.StatusOK {
			t.Fatalf("save the settings: %d", code)
		}
		if got := steps(t, dana); got != nil {
			t.Errorf("with every step done the inbox still shows the first steps: %v", got)
		}

		erin := s.newClient(t, "newco", "erin")
		if got := steps(t, erin); len(got) != 1 || got[agent] != "To do" {
			t.Errorf("a member's first steps are %v, want only %q to do", got, agent)
		}
	})
}
