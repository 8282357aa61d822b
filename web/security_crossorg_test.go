package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/orgs"
)

// TestOtherOrgsIDsAreNotFound: every route of the app that takes an id in
// its path (read from the app's routes, so a new one is covered without a
// change here), given the ids of another organization's questions and
// member, answers an admin 404 whatever the method, and changes nothing
// there. The other org has people of the same user ids, so only the org
// tells them apart.
func TestOtherOrgsIDsAreNotFound(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.org(t, "globex")
		ctx := dbtest.Operator()
		if _, err := s.Orgs.AddUser(ctx, "globex", orgs.NewUser{ID: "dave", Name: "Dave", Password: userPW, Role: orgs.RoleMember}); err != nil {
			t.Fatal(err)
		}
		toAlice, err := s.Inbox.Ask(ctx, ctalk.Caller{OrgID: "globex", UserID: "dave"}, inbox.Ask{To: "alice", Text: "For globex's alice"})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Inbox.Propose(ctx, ctalk.Caller{OrgID: "globex", UserID: "alice"}, toAlice.ID, "draft"); err != nil {
			t.Fatal(err)
		}
		byAlice, err := s.Inbox.Ask(ctx, ctalk.Caller{OrgID: "globex", UserID: "alice"}, inbox.Ask{To: "dave", Text: "From globex's alice"})
		if err != nil {
			t.Fatal(err)
		}
		// Each id param gets another org's id: a question sent to (or asked
		// by) the other org's alice, and a member only the other org has.
		params := map[string]string{"message_id": toAlice.ID, "id": byAlice.ID, "user_id": "dave"}
		alice := sessionFor(t, s, "acme", "alice", "admin")
		form := url.Values{"csrf": {alice.cookies["ctalk_csrf"].Value}, "version": {"1"}, "text": {"x"}, "note": {"x"}, "reason": {"x"}, "information": {"x"}, "request": {"x"},
			"profile_notes": {"x"}, "role": {"admin"}, "new_password": {userPW + "2"}, "confirm": {userPW + "2"}}
		n := requestRoutes(t, s, alice, params, form, http.StatusNotFound, "with another org's ids", func(path string) bool {
			return strings.Contains(path, "/:")
		})
		if n < 10 {
			t.Fatalf("only %d routes with ids", n)
		}
		for _, id := range []string{toAlice.ID, byAlice.ID} {
			if q, err := s.Inbox.Review(ctx, ctalk.Caller{OrgID: "globex", UserID: "alice"}, id); err == nil && q.Status != inbox.StatusPending {
				t.Errorf("globex's question %s is %s", id, q.Status)
			}
		}
		if r, _ := s.Inbox.Review(ctx, ctalk.Caller{OrgID: "globex", UserID: "alice"}, toAlice.ID); r == nil || r.DraftCount != 1 || r.Latest().Approved || r.Latest().Rejected {
			t.Errorf("globex's draft changed: %+v", r)
		}
		if u, err := s.Orgs.User(ctx, "globex", "dave"); err != nil || u.Role != orgs.RoleMember || u.ProfileNotes != "" {
			t.Errorf("globex's dave changed: %+v %v", u, err)
		}
		if _, err := s.Auth.CheckPassword(ctx, "globex", "dave", userPW, "127.0.0.2"); err != nil {
			t.Errorf("globex's dave's password changed: %v", err)
		}
	})
}
