package tools_test

import (
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/knowledge"
)

// TestFindAnswersNamesTheAdminWhoEdited: find_answers gives edited_by, the
// admin who edited a shared answer, so that an agent does not take the
// admin's words for its answerer's.
func TestFindAnswersNamesTheAdminWhoEdited(t *testing.T) {
	for _, engine := range dbtest.Engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			e := start(t, engine)
			u := e.Org(t, eras[0], "acme")
			id := answer(t, u["bob"], u["carol"], "carol", "Where do the deploy logs go?", "To the ops bucket.", true)
			found := ok(t, u["bob"], "find_answers", map[string]any{"query": "deploy logs"})["answers"].([]any)
			if len(found) != 1 || found[0].(map[string]any)["edited_by"] != nil {
				t.Fatalf("as shared: %v, want no edited_by", found)
			}
			admin := ctalk.Caller{OrgID: "acme", UserID: "alice", Admin: true}
			if err := knowledge.NewService(e.DB, e.Orgs).Edit(ctalk.WithOrg(dbtest.Operator(), "acme"), admin, id, "To the ops bucket, kept 30 days."); err != nil {
				t.Fatal(err)
			}
			found = ok(t, u["bob"], "find_answers", map[string]any{"query": "deploy logs"})["answers"].([]any)
			if a := found[0].(map[string]any); a["edited_by"] != "alice" || a["answered_by"] != "carol" {
				t.Fatalf("after alice's edit: %v, want edited_by alice beside answered_by carol", a)
			}
		})
	}
}
