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

// member reads a member as the services see them.
func (s *site) member(t testing.TB, orgID, userID string) *orgs.User {
	t.Helper()
	u, err := s.Orgs.User(dbtest.Operator(), orgID, userID)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestPeopleDirectoryAndProfiles: the directory lists the org's current
// members with what they own and their notes; a profile shows our history
// both ways; another org's member and a former member are not found.
func TestPeopleDirectoryAndProfiles(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.org(t, "zeta")
		ctx := dbtest.Operator()
		if _, err := s.Orgs.AddUser(ctx, "zeta", orgs.NewUser{ID: "dave", Name: "Dave Zeta", Password: userPW, Ownership: []string{"zeta-secrets"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Orgs.SetNotes(ctx, ctalk.Caller{OrgID: "zeta", UserID: "alice"}, "zeta's alice: private plans"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Orgs.SetNotes(ctx, acme("alice"), "Ask me about \u202egnitsop\u202c retries."); err != nil {
			t.Fatal(err)
		}
		bob := s.newClient(t, "acme", "bob")

		code, page := bob.get("/people")
		if code != http.StatusOK {
			t.Fatalf("/people: %d", code)
		}
		mustShow(t, "directory", page, `href="/people/alice">Alice</a>`, "alice-repo", "carol-repo", "admin",
			`href="/profile">Bob</a>`, "Hidden characters shown", "⟦U&#43;202E⟧")
		mustNotShow(t, "directory", page, "Dave", "zeta-secrets", "private plans", "\u202e")

		// History both ways: bob asked alice (answered), alice asked bob.
		q, err := s.Inbox.Ask(ctx, acme("bob"), inbox.Ask{To: "alice", Text: "Where are the retry settings?"})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Inbox.Propose(ctx, acme("alice"), q.ID, "In retry.yaml."); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Inbox.Send(ctx, acme("alice"), q.ID, "In retry.yaml."); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Inbox.Ask(ctx, acme("alice"), inbox.Ask{To: "bob", Text: "Can you review my change?"}); err != nil {
			t.Fatal(err)
		}
		code, page = bob.get("/people/alice")
		if code != http.StatusOK {
			t.Fatalf("/people/alice: %d", code)
		}
		mustShow(t, "alice's profile", page, "<h1>Alice</h1>", "alice-repo", "You asked Alice 1 question; Alice asked you 1.",
			"Where are the retry settings?", "In retry.yaml.", "Their answer", "Alice asked you", "Can you review my change?",
			"waiting for an answer", `href="/asked?to=alice#ask"`)
		mustNotShow(t, "a member's view of a profile", page, `action="/people/alice/profile-notes"`)

		for _, path := range []string{"/people/dave", "/people/nobody", "/people/Not%20an%20id"} {
			if code, page := bob.get(path); code != http.StatusNotFound || strings.Contains(page, "Dave Zeta") {
				t.Errorf("%s: %d, want 404", path, code)
			}
		}
		if code, page := bob.get("/people/bob"); code != http.StatusOK || !strings.Contains(page, "Your profile") {
			t.Errorf("/people/bob, bob's own: %d, want their profile page", code)
		}

		// A removed member leaves the directory and their profile is gone,
		// as get_user_profile says.
		if _, err := s.Orgs.RemoveUser(ctx, "acme", "carol"); err != nil {
			t.Fatal(err)
		}
		_, page = bob.get("/people")
		mustNotShow(t, "directory after carol left", page, "Carol", "carol-repo")
		if code, _ := bob.get("/people/carol"); code != http.StatusNotFound {
			t.Errorf("a former member's profile: %d, want 404", code)
		}

		// zeta's people see only zeta.
		_, page = s.newClient(t, "zeta", "dave").get("/people")
		mustShow(t, "zeta's directory", page, "private plans", "Carol")
		mustNotShow(t, "zeta's directory", page, "gnitsop")
	})
}

// TestNotesFromTheWeb: I edit my own notes under update_my_notes' limits;
// an admin edits any member's profile notes, a member no one's, and no one
// another org's member's; a form without its CSRF token changes nothing.
func TestNotesFromTheWeb(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		s.org(t, "zeta")
		bob := s.newClient(t, "acme", "bob")
		alice := s.newClient(t, "acme", "alice")

		code, page := bob.post("/profile/notes", url.Values{"notes": {"  I run the billing service.  "}})
		if code != http.StatusOK {
			t.Fatalf("my notes: %d\n%s", code, page)
		}
		mustShow(t, "after saving my notes", page, "Your notes are saved", ">I run the billing service.</textarea>")
		if got := s.member(t, "acme", "bob").Notes; got != "I run the billing service." {
			t.Fatalf("bob's notes = %q", got)
		}
		long := strings.Repeat("n", orgs.MaxNotesLen+1)
		code, page = bob.post("/profile/notes", url.Values{"notes": {long}})
		if code != http.StatusBadRequest {
			t.Fatalf("notes too long: %d, want 400", code)
		}
		mustShow(t, "notes too long", page, `id="notes-error"`, "at most 10000", ">"+long+"</textarea>")
		if code, _ := bob.postRaw("/profile/notes", url.Values{"notes": {"no token"}}); code != http.StatusForbidden {
			t.Errorf("my notes without CSRF: %d, want 403", code)
		}
		if got := s.member(t, "acme", "bob").Notes; got != "I run the billing service." {
			t.Fatalf("refused forms changed bob's notes to %q", got)
		}

		// Profile notes: a member is refused, on anyone.
		for _, who := range []string{"carol", "bob"} {
			code, page := bob.post("/people/"+who+"/profile-notes", url.Values{"profile_notes": {"bob was here"}})
			if code != http.StatusForbidden || !strings.Contains(page, "Only an admin") {
				t.Errorf("member bob on %s's profile notes: %d, want 403", who, code)
			}
			if got := s.member(t, "acme", who).ProfileNotes; got != "" {
				t.Errorf("%s's profile notes = %q after a member's form", who, got)
			}
		}
		_, page = alice.get("/people/bob")
		mustShow(t, "an admin's view of a profile", page, `action="/people/bob/profile-notes"`)
		code, page = alice.post("/people/bob/profile-notes", url.Values{"profile_notes": {"Owns billing since May."}})
		if code != http.StatusOK {
			t.Fatalf("admin's profile notes: %d\n%s", code, page)
		}
		mustShow(t, "after saving profile notes", page, "The profile notes are saved", "<h1>Bob</h1>", ">Owns billing since May.</textarea>")
		if got := s.member(t, "acme", "bob").ProfileNotes; got != "Owns billing since May." {
			t.Fatalf("bob's profile notes = %q", got)
		}
		// An admin writes their own profile notes from their profile.
		_, page = alice.get("/profile")
		mustShow(t, "alice's own profile", page, `action="/people/alice/profile-notes"`)
		if code, page := alice.post("/people/alice/profile-notes", url.Values{"profile_notes": {"Founder."}}); code != http.StatusOK || !strings.Contains(page, "Your profile") {
			t.Errorf("alice's own profile notes: %d, want back on her profile", code)
		}
		if got := s.member(t, "acme", "alice").ProfileNotes; got != "Founder." {
			t.Errorf("alice's profile notes = %q", got)
		}
		_, page = bob.get("/profile")
		mustShow(t, "bob sees the admin's notes", page, "Owns billing since May.")
		mustNotShow(t, "bob sees the admin's notes", page, `action="/people/bob/profile-notes"`)

		code, page = alice.post("/people/bob/profile-notes", url.Values{"profile_notes": {long}})
		if code != http.StatusBadRequest {
			t.Fatalf("profile notes too long: %d, want 400", code)
		}
		mustShow(t, "profile notes too long", page, `id="profile_notes-error"`, ">"+long+"</textarea>")
		if code, _ := alice.postRaw("/people/bob/profile-notes", url.Values{"profile_notes": {"no token"}}); code != http.StatusForbidden {
			t.Errorf("profile notes without CSRF: %d, want 403", code)
		}
		// zeta's admin cannot reach erin, who is only in acme: not found.
		if _, err := s.Orgs.AddUser(dbtest.Operator(), "acme", orgs.NewUser{ID: "erin", Name: "Erin", Password: userPW}); err != nil {
			t.Fatal(err)
		}
		zetaAdmin := s.newClient(t, "zeta", "alice")
		if code, page := zetaAdmin.post("/people/erin/profile-notes", url.Values{"profile_notes": {"from zeta"}}); code != http.StatusNotFound || strings.Contains(page, "Erin") {
			t.Errorf("another org's admin on erin: %d, want 404", code)
		}
		if code, _ := zetaAdmin.get("/people/erin"); code != http.StatusNotFound {
			t.Errorf("another org's admin opening erin: %d, want 404", code)
		}
		if got := s.member(t, "acme", "erin").ProfileNotes; got != "" {
			t.Fatalf("another org's admin changed acme's erin: %q", got)
		}
	})
}

// TestPeoplePagesNeedASession: a signed-out browser is sent to sign in and
// brought back; a form posted without a session changes nothing.
func TestPeoplePagesNeedASession(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, engine db.Engine) {
		s := start(t, engine)
		s.org(t, "acme")
		anon := s.anonymous(t)
		for _, path := range []string{"/asked", "/people", "/people/alice", "/profile"} {
			code, page := anon.get(path)
			if code != http.StatusOK || !strings.Contains(page, `name="next" value="`+path+`"`) {
				t.Errorf("signed-out %s: %d, want the sign-in page returning there", path, code)
			}
		}
		for path, form := range map[string]url.Values{
			"/asked":                    {"to": {"alice"}, "text": {"hi"}},
			"/profile/notes":            {"notes": {"anonymous"}},
			"/people/bob/profile-notes": {"profile_notes": {"anonymous"}},
			"/profile/password":         {"current_password": {userPW}, "new_password": {"anonymous-pw"}},
			"/asked/q_000000000000000000000000/withdraw": {},
		} {
			if code, _ := anon.post(path, form); code != http.StatusUnauthorized {
				t.Errorf("signed-out POST %s: %d, want 401", path, code)
			}
		}
		if u := s.member(t, "acme", "bob"); u.Notes != "" || u.ProfileNotes != "" {
			t.Errorf("signed-out forms changed bob: %+v", u)
		}
	})
}
